// The GPU's page steps (pages_gpu_body.hpp) around the emulated LZ4 kernels,
// one page at a time on the CPU: what pages_compress_async and
// pages_decompress_async do to each page.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/pages.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

// page and slot: page_size bytes, 16-byte aligned.
PageRecord page_compress_emulated(const std::uint8_t* page, std::size_t page_size, std::uint8_t* slot);
ItemStatus page_decompress_emulated(const PageRecord& record, const std::uint8_t* slot, std::size_t page_size,
                                    std::uint8_t* page);

}  // namespace tandem::gpu
