// Batched inflate on the GPU, device-resident: many independent deflate
// streams (whole raw deflate streams, or the chunks of tandem's indexed
// deflate streams) in device memory in, their bytes in device memory out. The
// call takes the shape of tandem_gpu.hpp's: a size query, then an
// asynchronous call on the caller's stream and temporary storage that writes
// a size and a status per item to device memory; no allocation, no host
// synchronisation.
//
// Each item is inflated by one warp running the body of gpu/inflate_body.hpp
// (the warp form: all lanes parse together, the writes are shared), with its
// Huffman tables in shared memory. inflate_emulated runs that same body over
// a batch in host memory, so tests without a GPU check what the GPU runs.
//
// Every pointer named d_* is device memory. The host Status covers what the
// call can see without the device (bad arguments, no CUDA, a failed launch);
// each item's outcome is in d_statuses once the stream reaches that point.
// Without CUDA in the build, the device calls return no_device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/inflate_body.hpp"
#include "tandem/tandem.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

using inflate::InflateEnd;
using inflate::InflateStatus;

using inflate::SegmentMatch;

// Where the segments of each item's first block start, as tandem's GPU
// deflate encoder reports them (deflate_compress_async's d_segment_starts):
// with them a team of warps decodes an item's segments at once, a lane each
// (see inflate_body.hpp's segmented form). The starts are untrusted: an item whose
// starts do not hold up is inflated from its first byte, with the same
// result. Item i has ceil(d_out_capacities[i] / segment_bytes) segments (so
// its capacity must be its exact size), and is inflated without its starts
// when that is below 2 or above min(per_item, inflate::kMaxSegments), or its
// capacity is over max_capacity.
struct InflateSegments {
  const std::uint32_t* d_starts = nullptr;  // device [num_items * per_item]: item i's from i * per_item on; null: none
  std::size_t per_item = 0;
  std::uint32_t segment_bytes = 0;  // at least inflate::kMinSegmentBytes
  std::size_t max_capacity = 0;     // the temporary storage's size per item is for this
};

// Temporary device storage that inflate_async needs for items of at most
// max_output_size bytes: the matches that wait while the segments are
// decoded, about 2.7 bytes per output byte. Only calls with segment starts
// use it; without them d_temp may be null.
Status inflate_temp_size(std::size_t num_items, std::size_t max_output_size, std::size_t* temp_bytes);

// Inflates item i, d_in_ptrs[i] of d_in_sizes[i] bytes, into d_out_ptrs[i],
// writing at most d_out_capacities[i] bytes, for every i < num_items. Items
// are untrusted: nothing is read or written outside the given buffers, and a
// malformed item gets its status (the other items are not affected).
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   d_temp, temp_bytes       device, at least inflate_temp_size(num_items, segments.max_capacity)
//                            when segments.d_starts is set; else unused, may be null
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items]
//   d_out_sizes              device array [num_items]: bytes written (on failure, those
//                            written before it was found)
//   d_statuses               device array [num_items], or null
//   d_ends                   device array [num_items], or null: where an ok item stopped
//                            (final_block, or input_end: a chunk of an indexed stream)
//   d_in_used                device array [num_items], or null: input bytes read
//   segments                 where the items' segments start, or none (the default)
// An item over kMaxItemSize either way, or with a null pointer where its size
// is not 0, gets invalid_item.
Status inflate_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t num_items,
                     void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                     const std::size_t* d_out_capacities, std::size_t* d_out_sizes, InflateStatus* d_statuses,
                     InflateEnd* d_ends, std::size_t* d_in_used, Stream stream, const InflateSegments& segments = {});

// The same over host arrays and buffers, on this thread, through the warp
// form of the body as the kernel runs it: the bytes and statuses the GPU gives.
// d_statuses, d_ends and d_in_used may be null here too.
// segments.d_starts is a host array here (max_capacity is not used).
void inflate_emulated(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                      void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                      InflateStatus* statuses, InflateEnd* ends, std::size_t* in_used,
                      const InflateSegments& segments = {});

// The segments of an item of `capacity` bytes under `segments` (0: the item
// is inflated without them): the rule above, for the kernel and the emulation.
TANDEM_HD std::uint32_t inflate_segment_count(const InflateSegments& segments, std::size_t capacity) {
  if (segments.d_starts == nullptr || segments.segment_bytes < inflate::kMinSegmentBytes ||
      capacity > segments.max_capacity)
    return 0;
  const std::size_t k = (capacity + segments.segment_bytes - 1) / segments.segment_bytes;
  if (k < 2 || k > segments.per_item || k > inflate::kMaxSegments) return 0;
  return static_cast<std::uint32_t>(k);
}

// The library-wide code for an item's status: ok, truncated, output_too_small,
// invalid_argument, or bad_data.
Status inflate_status_to_status(InflateStatus status);

}  // namespace tandem::gpu
