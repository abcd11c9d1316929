// Deflate compression on the GPU, device-resident: a batch of chunks in
// device memory in, each chunk's raw deflate data in device memory out, in
// the shape of tandem_gpu.hpp's calls (size queries, then an asynchronous
// call on the caller's stream and temporary storage, a size and a status per
// item written to device memory; no allocation, no host synchronisation).
//
// Each item becomes one chunk of tandem's indexed deflate stream: it starts
// on a byte boundary with a fresh block, makes no match that reaches before
// its first byte, has BFINAL = 0 in every block and ends with an empty stored
// block (00 00 FF FF after the byte boundary), so it inflates alone and
// chunks join by concatenation; a stream ends with the two bytes 03 00 after
// its last chunk. The blocks are dynamic-Huffman, or fixed or stored where
// that is smaller. The passes are gpu/deflate_enc_body.hpp's.
//
// The output is a function of the item alone: the same item gives the same
// bytes in any batch, and the same bytes as deflate_compress_emulated, which
// runs the same bodies on the CPU.
//
// Every pointer named d_* is device memory. The host Status covers what the
// call can see without the device (bad arguments, no CUDA, a failed launch);
// each item's outcome is in d_statuses once the stream reaches that point.
// Without CUDA in the build the device calls return no_device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/deflate_enc_body.hpp"
#include "tandem/tandem.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

// Items may be up to this many bytes (tandem's chunks are 64 KiB by default).
inline constexpr std::size_t kMaxDeflateItem = std::size_t{16} << 20;

// Bytes the deflate data of an item of `input_size` bytes may take (its
// stored coding); 0 when input_size > kMaxDeflateItem.
inline std::size_t deflate_max_compressed_size(std::size_t input_size) {
  return input_size > kMaxDeflateItem ? 0 : deflate_enc::max_compressed_size(input_size);
}

// An item's Huffman block is coded in segments of kDeflateSegmentBytes input
// bytes (the last: what is left), no token crossing from one into the next;
// where each segment's bits start is what the segmented GPU inflate takes
// (inflate_gpu.hpp's InflateSegments).
inline constexpr std::uint32_t kDeflateSegmentBytes = deflate_enc::kStartBytes;

// Segments of an item of up to max_item_size bytes: the entries per item of
// deflate_compress_async's d_segment_starts.
inline std::size_t deflate_segments_per_item(std::size_t max_item_size) {
  return deflate_enc::start_count(max_item_size);
}

// Temporary device storage that deflate_compress_async needs for `num_items`
// items of at most `max_item_size` bytes: about 8.2 bytes per byte of
// num_items * max_item_size (each segment's match records, prime table,
// tokens and histograms, the packed bits; 524 KiB for a 64 KiB item),
// so give the real largest item. invalid_argument when max_item_size is over
// kMaxDeflateItem or the size does not fit a size_t.
Status deflate_compress_temp_size(std::size_t num_items, std::size_t max_item_size, std::size_t* temp_bytes);

// Compresses item i, d_in_ptrs[i] of d_in_sizes[i] bytes, into one chunk of
// raw deflate data at d_out_ptrs[i] for every i < num_items.
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   max_item_size            host: no d_in_sizes[i] is larger (a larger item gets invalid_item)
//   d_temp, temp_bytes       device, at least deflate_compress_temp_size (else invalid_argument)
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items], or null: deflate_max_compressed_size of each input
//   d_out_sizes              device array [num_items]: bytes written (0 on failure)
//   d_statuses               device array [num_items], or null: ok, invalid_item (null
//                            pointer, item too large) or output_overflow (the chunk
//                            does not fit its capacity; nothing is written)
//   d_segment_starts         device array [num_items * deflate_segments_per_item(max_item_size)],
//                            or null: item i's from i * deflate_segments_per_item(max_item_size) on,
//                            the bit (from the item's first byte) where each of its segments'
//                            codes start; all 0 for an item coded stored or refused
Status deflate_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                              std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                              const std::size_t* d_out_capacities, std::size_t* d_out_sizes, ItemStatus* d_statuses,
                              Stream stream, std::uint32_t* d_segment_starts = nullptr);

// The same encoder on the CPU, one item: replaces *out with the chunk's
// deflate data (the bytes the GPU writes for it) and, when segment_starts is
// not null, *segment_starts with its segments' starts (as d_segment_starts,
// one per segment). invalid_argument when n > kMaxDeflateItem or a buffer is
// null.
Status deflate_compress_emulated(const std::uint8_t* in, std::size_t n, std::vector<std::uint8_t>* out,
                                 std::vector<std::uint32_t>* segment_starts = nullptr);

}  // namespace tandem::gpu
