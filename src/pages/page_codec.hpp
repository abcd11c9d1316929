// The pieces of page compression that the batch calls, the store and the
// benchmark share: the fill check, the record of a page, and the checks a
// record must pass before it is decoded.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/pages.hpp"

namespace tandem::pages {

// True when the page is one 8-byte word repeated (every byte equals the one
// 8 places on); *fill gets the word. Stops at the first byte that differs.
bool page_fill(const std::uint8_t* page, std::size_t page_size, std::uint64_t* fill);
// The record of a page that is `fill` repeated: zero or same_fill.
PageRecord fill_record(std::uint64_t fill);
// The record of a page whose LZ4 block (at out) is block_size bytes (0: it
// did not fit page_max_compressed): lz4, or stored, copying the page to out.
PageRecord block_record(const std::uint8_t* page, std::size_t page_size, std::size_t block_size,
                        std::uint8_t* out);
// ok when the record can be decoded: a known kind, the length that kind
// allows, data where the kind has data.
Status check_record(const PageRecord& record, const void* data, std::size_t page_size);
// Writes the 8-byte word fill through page.
void write_fill(std::uint64_t fill, std::size_t page_size, std::uint8_t* page);

// page_batch_prefers_gpu: Backend::automatic sends a batch to the GPU when it
// has at least
// this many pages of 4 KiB (or the same bytes in larger pages) per CPU
// thread. Measured on an H100 host with 16 threads, silesia7 in 4 KiB pages,
// ordinary (pageable) host memory, GB/s of the CPU backend against the GPU
// (docs/benchmarks/2026-11-24-h100-pages.md):
//   compress    256 pages 3.24 / 2.07, 1,000 4.02 / 4.15, 10,000 3.80 / 15.32
//   decompress  1,000 12.01 / 4.77, 10,000 13.44 / 16.52, 100,000 12.91 / 17.87
// so the GPU pays from about 1,000 pages (64 a thread) to compress and
// about 7,000 (512 a thread: 8,192) to decompress. From pinned memory it
// pays from about 1,000 both ways (12.69 and 16.53 GB/s at 1,000 pages).
inline constexpr std::size_t kGpuCompressPagesPerThread = 64;
inline constexpr std::size_t kGpuDecompressPagesPerThread = 512;

}  // namespace tandem::pages
