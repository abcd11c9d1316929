// LZ4 frame format: constants, header parsing and writing, block words.
//
// Pure host code with no I/O: the encoder and decoder in src/codec/ build on
// it. The layout follows the LZ4 Frame Format Description 1.6.x:
//
//   frame    := magic(4) descriptor blocks endmark(4) [content checksum(4)]
//   descriptor := FLG(1) BD(1) [content size(8)] [dict id(4)] HC(1)
//   block    := word(4) data [block checksum(4)]   word: bit 31 = stored raw
//   skippable := magic 0x184D2A5X(4) size(4) bytes
//   legacy   := magic 0x184C2102(4) { size(4) lz4-block }   blocks of 8 MiB
//
// All integers are little-endian. Every parser here takes its input as hostile.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/tandem.hpp"

namespace tandem::lz4f {

inline constexpr std::uint32_t kFrameMagic = 0x184D2204u;
inline constexpr std::uint32_t kLegacyMagic = 0x184C2102u;
inline constexpr std::uint32_t kSkippableMagicMin = 0x184D2A50u;
inline constexpr std::uint32_t kSkippableMagicMask = 0xFFFFFFF0u;
inline constexpr std::size_t kLegacyBlockSize = 8u << 20;
inline constexpr std::size_t kMinHeaderSize = 7;   // magic + FLG + BD + HC
inline constexpr std::size_t kMaxHeaderSize = 19;  // + content size + dict id
inline constexpr std::uint32_t kUncompressedBit = 0x80000000u;

inline std::uint32_t read_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}
inline std::uint64_t read_le64(const std::uint8_t* p) {
  return static_cast<std::uint64_t>(read_le32(p)) | static_cast<std::uint64_t>(read_le32(p + 4)) << 32;
}
inline void write_le32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
  p[2] = static_cast<std::uint8_t>(v >> 16);
  p[3] = static_cast<std::uint8_t>(v >> 24);
}
inline void write_le64(std::uint8_t* p, std::uint64_t v) {
  write_le32(p, static_cast<std::uint32_t>(v));
  write_le32(p + 4, static_cast<std::uint32_t>(v >> 32));
}

inline bool is_skippable_magic(std::uint32_t magic) {
  return (magic & kSkippableMagicMask) == kSkippableMagicMin;
}

// Block size id of the BD byte (4..7) for a block size, 0 when invalid.
int block_size_id(std::size_t block_size);
// Block size for an id 4..7, 0 when invalid.
std::size_t block_size_from_id(int id);

// What a frame descriptor says.
struct FrameHeader {
  std::size_t block_max = 0;     // maximum decoded size of a block
  bool independent_blocks = true;
  bool block_checksum = false;
  bool content_checksum = false;
  bool has_content_size = false;
  std::uint64_t content_size = 0;
  bool has_dict_id = false;
  std::uint32_t dict_id = 0;
  std::size_t header_size = 0;   // bytes from the magic to HC inclusive
};

// Parses a frame header that starts with kFrameMagic. `size` bytes are
// available at `p`. Returns truncated when more bytes are needed (then
// *needed, when not null, says how many in all), bad_data on reserved bits or
// an invalid block size, unsupported on a version other than 01 or a
// dictionary id, checksum_mismatch when HC is wrong.
Status parse_frame_header(const std::uint8_t* p, std::size_t size, FrameHeader* header,
                          std::size_t* needed = nullptr);

// Writes a frame header for `header` (header_size is ignored) into out, which
// has room for kMaxHeaderSize bytes; returns the bytes written.
std::size_t write_frame_header(const FrameHeader& header, std::uint8_t* out);

// Largest compressed payload that a stored block word may announce for a frame
// whose blocks decode to at most block_max bytes: a block can always be stored
// raw, so no valid block is larger than block_max.
inline std::size_t max_block_payload(std::size_t block_max) { return block_max; }

}  // namespace tandem::lz4f
