// The lzr frame format (docs/formats/lzr.md): its constants, the length
// codes and the size bounds, as plain constants and small functions that
// host code, the shared warp bodies (gpu/lzr_body.hpp) and the CUDA kernels
// all read.
//
// A frame: a 20-byte header, a directory of block sizes, then the blocks.
// A block: a sequence count, nine stream entries, then the nine streams
// (literals, literal-length codes, match-length codes, offset high bytes,
// offset low bytes in four streams by the high byte's class, length
// extension bytes), each stored raw or as a tandem rANS stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/lzr.hpp"

#if defined(__CUDACC__)
#define TANDEM_LZR_HD __host__ __device__
#else
#define TANDEM_LZR_HD
#endif

namespace tandem::lzr {

inline constexpr std::uint8_t kMagic0 = 'T', kMagic1 = 'L', kMagic2 = 'Z', kMagic3 = 'R';
inline constexpr std::uint8_t kVersion = 1;

// magic[4] version block_log reserved:u16 length:u64 block_count:u32
inline constexpr std::size_t kFrameHeaderBytes = 20;
// A directory entry: the block's stored size, u32.
inline constexpr std::size_t kDirEntryBytes = 4;

// The streams of a block, in their order in the block.
enum StreamId : std::uint32_t {
  kLiterals = 0,
  kLitLengths = 1,
  kMatchLengths = 2,
  kOffsetHigh = 3,
  kOffsetLow = 4,  // kOffsetLow + c for class c = offset_class(high byte), c < kOffsetClasses
  kExtensions = 8,
};
inline constexpr std::uint32_t kOffsetClasses = 4;
inline constexpr std::uint32_t kStreams = 9;
// An offset's low byte goes to the stream of its high byte's class (0; 1-3;
// 4-15; 16-255): order-0 coding of each sees the low bytes of near offsets
// apart from those of far ones, whose low bytes are nearly uniform.
TANDEM_LZR_HD inline constexpr std::uint32_t offset_class(std::uint32_t high) {
  return high == 0 ? 0u : (high < 4 ? 1u : (high < 16 ? 2u : 3u));
}
// seq_count:u32, then per stream a u32: stored bytes, bit 31 set when rANS-coded.
inline constexpr std::size_t kBlockHeaderBytes = 4 + 4 * kStreams;
inline constexpr std::uint32_t kRansFlag = 1u << 31;

// Matches are at least this long; a match-length code holds length - kMinMatch.
inline constexpr std::uint32_t kMinMatch = 4;
// Length codes: a value v < kDirectCodes is its own code; larger values are
// code kDirectCodes + k - 1 followed by v - kDirectCodes in k = 1..3
// little-endian extension bytes (k the fewest that hold it).
inline constexpr std::uint32_t kDirectCodes = 240;
inline constexpr std::uint32_t kMaxCode = kDirectCodes + 2;

TANDEM_LZR_HD inline constexpr std::uint32_t extension_bytes(std::uint32_t v) {
  return v < kDirectCodes ? 0u : (v - kDirectCodes < 256u ? 1u : (v - kDirectCodes < 65536u ? 2u : 3u));
}
TANDEM_LZR_HD inline constexpr std::uint32_t length_code(std::uint32_t v) {
  return v < kDirectCodes ? v : kDirectCodes + extension_bytes(v) - 1;
}

TANDEM_LZR_HD inline constexpr bool params_valid(const Params& p) {
  return p.block_log >= kMinBlockLog && p.block_log <= kMaxBlockLog;
}

// Bounds on the streams of a block of n bytes with s sequences (s <= n / 4):
// the literal-length codes are s + 1, the others s, the literals at most n,
// the extension bytes at most n / 64 + 8 (a value needs extension bytes only
// from 240 up, and every such value stands for at least 240 bytes of the
// block; 3 bytes for each 240 is below 1 for each 64).
TANDEM_LZR_HD inline constexpr std::uint32_t max_sequences(std::uint32_t n) { return n / kMinMatch; }
TANDEM_LZR_HD inline constexpr std::uint32_t max_extension_bytes(std::uint32_t n) { return n / 64 + 8; }
// A capacity that holds any of the five short streams of a block of n bytes.
TANDEM_LZR_HD inline constexpr std::uint32_t short_stream_capacity(std::uint32_t n) {
  return max_sequences(n) + 1 > max_extension_bytes(n) ? max_sequences(n) + 1 : max_extension_bytes(n);
}

TANDEM_LZR_HD inline constexpr std::uint64_t block_count(std::uint64_t length, std::uint32_t block_log) {
  return (length + (std::uint64_t{1} << block_log) - 1) >> block_log;
}

// The bytes of a block of n bytes stored with every stream raw: the most an
// encoder writes (it stores a stream raw unless rANS makes it smaller). The
// literals and the matches cover the block, and each match of at least 4
// bytes has 4 code bytes, so the raw streams but the extensions take at most
// n + 1 bytes.
TANDEM_LZR_HD inline constexpr std::uint64_t max_block_bytes(std::uint32_t n) {
  return kBlockHeaderBytes + std::uint64_t{n} + 1 + max_extension_bytes(n);
}

// The most bytes a frame of n input bytes takes with blocks of 2^block_log
// (lzr::max_encoded_size, for device code too).
TANDEM_LZR_HD inline constexpr std::uint64_t frame_bound(std::uint64_t n, std::uint32_t block_log) {
  const std::uint64_t b = std::uint64_t{1} << block_log;
  const std::uint64_t rest = n & (b - 1);
  return kFrameHeaderBytes + block_count(n, block_log) * kDirEntryBytes +
         (n >> block_log) * max_block_bytes(static_cast<std::uint32_t>(b)) +
         (rest ? max_block_bytes(static_cast<std::uint32_t>(rest)) : 0);
}

}  // namespace tandem::lzr
