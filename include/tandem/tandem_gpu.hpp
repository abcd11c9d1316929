// tandem's batched GPU calls, in the shape of CUB and nvcomp: size queries, then
// an asynchronous call over device arrays of pointers and sizes that uses the
// caller's temporary storage and stream, and writes a size and a status per item
// to device memory. No call allocates, and none waits for the device.
//
// Every pointer named d_* is device memory. The calls return a host Status for
// what they can see without touching the device (bad arguments, a build or
// machine without CUDA, a failed launch); what happened to each item is in
// d_statuses once the stream reaches that point.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/pages.hpp"
#include "tandem/tandem.hpp"

struct CUstream_st;

namespace tandem::gpu {

// A cudaStream_t. Null is the legacy default stream.
using Stream = CUstream_st*;

// The status of one item, written to device memory. Values are permanent.
enum class ItemStatus : std::int32_t {
  ok = 0,
  // Compression: a valid block, but not smaller than its input; store it raw.
  incompressible = 1,
  // A sequence header is malformed: a length that runs out of input, a
  // missing offset, or a block that ends with a match instead of literals.
  corrupt_token = 2,
  // A match offset of zero, or one that reaches before the start of the block.
  offset_out_of_range = 3,
  // A literal run, or a compressed block, would not fit the output capacity.
  output_overflow = 4,
  // A literal run goes past the end of the input.
  literal_past_input_end = 5,
  // A match would write past the output capacity.
  match_past_output_end = 6,
  // The item is larger than the call accepts, or its pointers are null.
  invalid_item = 7,
  // Pages: a record whose kind is unknown or whose length does not fit its
  // kind, or an LZ4 page that decodes to less than a whole page.
  bad_record = 8,
};

// "ok", "incompressible", "corrupt_token", ...
const char* item_status_name(ItemStatus status);
// The library-wide code for an item status: ok, bad_data, output_too_small,
// invalid_argument (incompressible maps to ok: the block is valid).
Status item_status_to_status(ItemStatus status);

// Items may be up to this many bytes, both ways (LZ4 blocks are smaller still).
inline constexpr std::size_t kMaxItemSize = std::size_t{1} << 30;

// -------------------------------------------------------------------- LZ4 ----

// Bytes an LZ4 block of `input_size` bytes may need in the worst case (the
// same bound as liblz4's LZ4_compressBound); 0 when input_size > kMaxItemSize.
std::size_t lz4_max_compressed_size(std::size_t input_size);

// Temporary device storage that lz4_compress_async needs for `num_items` items
// of at most `max_item_size` bytes: about 2 bytes per byte of num_items *
// max_item_size (the matches the encoder finds wait there to be written out),
// so give max_item_size as the real largest item, not a loose bound.
Status lz4_compress_temp_size(std::size_t num_items, std::size_t max_item_size, std::size_t* temp_bytes);

// Compresses item i, d_in_ptrs[i] of d_in_sizes[i] bytes, into one standard
// LZ4 block at d_out_ptrs[i] for every i < num_items.
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   max_item_size            host: no d_in_sizes[i] is larger (it shapes the launch)
//   d_temp, temp_bytes       device, at least lz4_compress_temp_size (else invalid_argument)
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items], or null: lz4_max_compressed_size of each input
//   d_out_sizes              device array [num_items]: bytes written (0 on failure)
//   d_statuses               device array [num_items], or null when the caller does not want them
// Output is deterministic: the same item always gives the same bytes.
Status lz4_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                          std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                          const std::size_t* d_out_capacities, std::size_t* d_out_sizes, ItemStatus* d_statuses,
                          Stream stream);

// Temporary device storage that lz4_decompress_async needs. May be 0.
Status lz4_decompress_temp_size(std::size_t num_items, std::size_t max_output_size, std::size_t* temp_bytes);

// Decodes the LZ4 block d_in_ptrs[i] of d_in_sizes[i] bytes into d_out_ptrs[i],
// writing at most d_out_capacities[i] bytes, for every i < num_items. Input is
// untrusted: a block that is not valid LZ4 gets a status, and nothing is read
// or written outside the given buffers.
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   max_output_size          the largest of d_out_capacities: it picks the kernels'
//                            shape (a warp per block for small blocks, a thread block
//                            per block for large); any value decodes correctly
//   d_temp, temp_bytes       device, at least lz4_decompress_temp_size; may be null when that is 0
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items]
//   d_out_sizes              device array [num_items]: bytes decoded (0 on failure)
//   d_statuses               device array [num_items], or null
Status lz4_decompress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_output_size,
                            std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                            const std::size_t* d_out_capacities, std::size_t* d_out_sizes, ItemStatus* d_statuses,
                            Stream stream);

// ------------------------------------------------------------------ pages ----
//
// Page batches (pages.hpp) in device memory: num_pages pages of page_size
// bytes (4, 16 or 64 KiB) one after another at d_pages, and a slot of
// page_size bytes per page at d_slots for its data (page i's at d_slots + i *
// page_size). d_pages and d_slots must be 16-byte aligned (cudaMalloc's are).
// The records and bytes are those the CPU backend gives.

// Temporary device storage of pages_compress_async: about 2 bytes per page byte.
Status pages_compress_temp_size(std::size_t num_pages, std::size_t page_size, std::size_t* temp_bytes);

// Compresses every page: its record to d_records[i] (device array
// [num_pages]), its data to its slot.
Status pages_compress_async(const void* d_pages, std::size_t num_pages, std::size_t page_size, void* d_temp,
                            std::size_t temp_bytes, void* d_slots, PageRecord* d_records, Stream stream);

// Temporary device storage of pages_decompress_async.
Status pages_decompress_temp_size(std::size_t num_pages, std::size_t page_size, std::size_t* temp_bytes);

// Decompresses d_records[i] with its data in slot i into page i of d_pages,
// for every i < num_pages, and writes its status to d_statuses[i] (device
// array [num_pages], or null): ok, bad_record (an unknown kind, a length that
// does not fit the kind, an LZ4 page that decodes to less than a page), or
// the LZ4 decoder's status. Records are untrusted; nothing is written outside
// page i for record i. A refused page holds what it held or part of its
// decode (the host calls zero it). After pages_compress_async, each slot's
// bytes past its record's length are zero.
Status pages_decompress_async(const PageRecord* d_records, const void* d_slots, std::size_t num_pages,
                              std::size_t page_size, void* d_temp, std::size_t temp_bytes, void* d_pages,
                              ItemStatus* d_statuses, Stream stream);

}  // namespace tandem::gpu
