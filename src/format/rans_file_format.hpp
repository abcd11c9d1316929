// The .rans file format (docs/formats/rans.md, "Files"): the bytes around
// tandem's rANS streams that let a file hold any amount of data.
//
// A file is one or more members; a member is a header, blocks, an end
// marker and a checksum. Each block codes up to 2^block_log2 bytes of the
// content on its own, as one rANS stream or stored raw when that is smaller,
// and its header gives both sizes, so that a reader finds every block's end
// without decoding it and decodes a batch of blocks in parallel.
//
// Parsers take a fixed number of bytes and answer ok, bad_data or
// unsupported; they never read past what they were given.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/tandem.hpp"

namespace tandem::rans_file {

// "TNRF": distinct from a rANS stream's "TNDR" and from what decompress
// recognises otherwise (gzip, zlib and LZ4 headers).
inline constexpr std::uint8_t kMagic[4] = {0x54, 0x4E, 0x52, 0x46};
inline constexpr std::uint8_t kVersion = 1;

// magic[4] version:u8 block_log2:u8 flags:u16
inline constexpr std::size_t kHeaderBytes = 8;
// decoded:u32 stored:u32 (bit 31: raw; bits 0..30: the payload's size)
inline constexpr std::size_t kBlockHeaderBytes = 8;
// XXH3-64 (seed 0) of the member's content, after the end marker.
inline constexpr std::size_t kTrailerBytes = 8;
inline constexpr std::uint32_t kRawBit = 0x80000000u;

// Blocks of 64 KiB .. 16 MiB. The upper bound bounds what a reader stages
// for one block whatever the file says.
inline constexpr std::uint32_t kMinBlockLog2 = 16;
inline constexpr std::uint32_t kMaxBlockLog2 = 24;
// 64 KiB: each block adapts its own table, so smaller blocks compress
// better (docs/formats/rans.md gives the ratio at each size).
inline constexpr std::uint32_t kDefaultBlockLog2 = 16;

struct Header {
  std::uint32_t block_log2 = kDefaultBlockLog2;
};

// A block's header. decoded == 0 marks the end of the member (its stored
// field is then 0 too).
struct BlockHeader {
  std::uint32_t decoded = 0;  // bytes of content the block holds
  std::uint32_t payload = 0;  // bytes that follow the block header
  bool raw = false;           // the payload is the content itself
  bool end() const { return decoded == 0; }
};

// True when p[0, n) starts with the magic (n >= 4).
bool has_magic(const std::uint8_t* p, std::size_t n);

void write_header(const Header& h, std::uint8_t* out);  // kHeaderBytes
// Checks a member header in p[0, n): bad_data when the first min(4, n) bytes
// are not the magic; truncated when n < kHeaderBytes; unsupported for
// another version or a flag; bad_data for a block size out of range.
Status parse_header(const std::uint8_t* p, std::size_t n, Header* h);

void write_block_header(const BlockHeader& b, std::uint8_t* out);  // kBlockHeaderBytes
// Checks the kBlockHeaderBytes bytes at p against the member's header:
// bad_data for an end marker with a payload, content over the block size,
// a raw payload whose size is not the content's, or a rANS payload not
// smaller than its content (an encoder stores such a block raw).
Status parse_block_header(const std::uint8_t* p, const Header& h, BlockHeader* b);

std::uint64_t read_le64(const std::uint8_t* p);
void write_le64(std::uint64_t v, std::uint8_t* out);

}  // namespace tandem::rans_file
