// The temporary storage of the page batch calls (pages_gpu.cu): the item
// arrays that the LZ4 kernels take, one entry per page, then the LZ4
// kernels' own temporary storage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu::pagek {

struct PageTemp {
  std::size_t in_ptrs, in_sizes, out_ptrs, out_caps, out_sizes, statuses;  // byte offsets
  std::size_t counter;      // 8 bytes: the page counter of a kernel whose warps take pages
  std::size_t codec;        // where the LZ4 call's temporary storage starts
  std::size_t codec_bytes;  // its size
  std::size_t total;
};

// False when num_pages is too large to describe.
inline bool page_temp_layout(bool compress, std::size_t num_pages, std::size_t page_size, PageTemp* t) {
  if (num_pages > (std::size_t{1} << 40)) return false;
  const std::size_t words = num_pages * sizeof(std::uint64_t);
  const auto align = [](std::size_t n) { return (n + 255) / 256 * 256; };
  t->in_ptrs = 0;
  t->in_sizes = align(words);
  t->out_ptrs = t->in_sizes + align(words);
  t->out_caps = t->out_ptrs + align(words);
  t->out_sizes = t->out_caps + align(words);
  t->statuses = t->out_sizes + align(words);
  t->counter = t->statuses + align(num_pages * sizeof(ItemStatus));
  t->codec = t->counter + 256;
  const Status s = compress ? lz4_compress_temp_size(num_pages, page_size, &t->codec_bytes)
                            : lz4_decompress_temp_size(num_pages, page_size, &t->codec_bytes);
  if (!s) return false;
  t->total = t->codec + t->codec_bytes;
  return true;
}

}  // namespace tandem::gpu::pagek
