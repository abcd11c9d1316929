// Frame blocks (word, payload, optional checksum) as the LZ4 frame writer and
// the hybrid scheduler's CPU and GPU workers write them.
#pragma once

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "format/lz4_frame_format.hpp"

namespace tandem::lz4f {

// A block's slot: word, payload (at most the block itself), block checksum.
inline constexpr std::size_t kSlotOverhead = 8;

// Completes the frame block in `slot` for the n input bytes at `in`, whose
// payload (at slot + 4) already holds `size` < n compressed bytes, or which is
// stored raw when `size` is 0: word, payload and, when asked, its checksum.
// Returns the bytes used.
inline std::size_t frame_block(const std::uint8_t* in, std::size_t n, std::uint8_t* slot, std::size_t size,
                               bool block_checksum) {
  std::uint8_t* payload = slot + 4;
  if (size == 0) {
    std::memcpy(payload, in, n);
    size = n;
    write_le32(slot, static_cast<std::uint32_t>(n) | kUncompressedBit);
  } else {
    write_le32(slot, static_cast<std::uint32_t>(size));
  }
  std::size_t used = 4 + size;
  if (block_checksum) {
    write_le32(slot + used, XXH32(payload, size, 0));
    used += 4;
  }
  return used;
}

// Writes the block at `in` (n bytes) into `slot` as a frame block, compressed
// when that makes it smaller.
template <class CompressFn>
std::size_t emit_block(const std::uint8_t* in, std::size_t n, std::uint8_t* slot, bool block_checksum,
                       CompressFn&& compress) {
  // A capacity of n - 1 makes liblz4 give up early on incompressible data.
  return frame_block(in, n, slot, n > 1 ? compress(in, n, slot + 4, n - 1) : 0, block_checksum);
}

}  // namespace tandem::lz4f
