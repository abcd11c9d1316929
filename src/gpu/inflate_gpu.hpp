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

// Temporary device storage that inflate_async needs: 0 (the call uses none;
// the query exists so that callers need not change when that changes).
Status inflate_temp_size(std::size_t num_items, std::size_t max_output_size, std::size_t* temp_bytes);

// Inflates item i, d_in_ptrs[i] of d_in_sizes[i] bytes, into d_out_ptrs[i],
// writing at most d_out_capacities[i] bytes, for every i < num_items. Items
// are untrusted: nothing is read or written outside the given buffers, and a
// malformed item gets its status (the other items are not affected).
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   d_temp, temp_bytes       device, at least inflate_temp_size; may be null when that is 0
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items]
//   d_out_sizes              device array [num_items]: bytes written (on failure, those
//                            written before it was found)
//   d_statuses               device array [num_items], or null
//   d_ends                   device array [num_items], or null: where an ok item stopped
//                            (final_block, or input_end: a chunk of an indexed stream)
//   d_in_used                device array [num_items], or null: input bytes read
// An item over kMaxItemSize either way, or with a null pointer where its size
// is not 0, gets invalid_item.
Status inflate_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t num_items,
                     void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                     const std::size_t* d_out_capacities, std::size_t* d_out_sizes, InflateStatus* d_statuses,
                     InflateEnd* d_ends, std::size_t* d_in_used, Stream stream);

// The same over host arrays and buffers, on this thread, through the warp
// form of the body as the kernel runs it: the bytes and statuses the GPU gives.
// d_statuses, d_ends and d_in_used may be null here too.
void inflate_emulated(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                      void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                      InflateStatus* statuses, InflateEnd* ends, std::size_t* in_used);

// The library-wide code for an item's status: ok, truncated, output_too_small,
// invalid_argument, or bad_data.
Status inflate_status_to_status(InflateStatus status);

}  // namespace tandem::gpu
