// The CPU codec of the lzr format (docs/formats/lzr.md), behind the host
// calls of tandem/lzr.hpp. It runs the GPU's warp bodies (gpu/lzr_body.hpp,
// and the LZ4 encoder's prime and find steps) through the warp emulation, so
// its frames are the GPU encoder's byte for byte and its verdicts the GPU
// decoder's. One thread per call; calls are independent.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "format/lzr_format.hpp"
#include "tandem/lzr.hpp"

namespace tandem::lzr {

// Where a frame's bytes go, stream by stream, summed over its blocks: for
// measurements of the format's layout.
struct StreamSizes {
  std::array<std::uint64_t, kStreams> raw{};     // bytes before coding
  std::array<std::uint64_t, kStreams> stored{};  // bytes in the frame
  std::uint64_t headers = 0;                     // frame header, directory and block headers
  std::uint64_t sequences = 0;
};
// Encodes `in` as encode() does, summing up its streams.
Status measure(std::span<const std::uint8_t> in, const Params& params, StreamSizes* sizes);

}  // namespace tandem::lzr
