// tandem's block files (docs/formats/rans.md, "Files"): the bytes around
// tandem's own coded blocks that let a file hold any amount of data. .rans
// files hold rANS streams; .lzr files hold lzr frames (docs/formats/lzr.md);
// both have this one layout, told apart by their magic numbers.
//
// A file is one or more members; a member is a header, blocks, an end
// marker and a checksum. Each block codes up to 2^block_log2 bytes of the
// content on its own, as one coded payload or stored raw when that is
// smaller, and its header gives both sizes, so that a reader finds every
// block's end without decoding it and decodes a batch of blocks in parallel.
//
// Parsers take a fixed number of bytes and answer ok, bad_data or
// unsupported; they never read past what they were given.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/tandem.hpp"

namespace tandem::block_file {

// A kind of block file: its magic number and its messages (a Status keeps
// a reason of static storage, so each kind spells its own out).
struct Kind {
  std::uint8_t magic[4];
  const char* bad_magic;         // not this kind of file
  const char* header_short;      // the member header is cut short
  const char* bad_version;       // a version this reader does not know
  const char* bad_flags;         // flags this reader does not know
  const char* bad_block_size;    // the header's block size is out of range
  const char* end_with_payload;  // an end marker with a payload
  const char* block_too_large;   // a block's content over the block size
  const char* raw_size;          // a raw block whose payload is not its content's size
  const char* not_smaller;       // a coded payload not smaller than its content
  const char* cut_block_header;  // the file ends inside a block header
  const char* cut_payload;       // ... inside a block's payload
  const char* cut_checksum;      // ... inside the checksum
  const char* checksum;          // the content's checksum does not match
  const char* trailing;          // bytes after a member that start no member
  const char* decodes_more;      // a payload decodes to more than its block header says
  const char* decodes_less;      // ... to less
  const char* bad_option;        // a block size that is no power of two in range
  const char* buffer;            // what failed to be allocated
};

#define TANDEM_BLOCK_FILE_KIND(NAME, M0, M1, M2, M3)                                                              \
  Kind {                                                                                                       \
    {M0, M1, M2, M3}, "not a tandem " NAME " (bad magic)", NAME " header cut short", NAME " of an unknown version", \
        NAME " with unknown flags", NAME " block size out of range", NAME " end marker with a payload",            \
        NAME " block larger than the file's block size", NAME " raw block whose size is not its content's",       \
        NAME " block whose payload is not smaller than its content", NAME " cut short (block header)",            \
        NAME " cut short (block payload)", NAME " cut short (checksum)",                                          \
        NAME " content checksum (XXH3-64) mismatch", "data after the end of the " NAME,                           \
        NAME " block decodes to more than its header says", NAME " block decodes to less than its header says",    \
        NAME " block size not a power of two in 64 KiB .. 16 MiB", NAME " block buffer"                           \
  }
// "TNRF" and "TNLF": distinct from a rANS stream's "TNDR", an lzr frame's
// "TLZR" and what decompress recognises otherwise (gzip, zlib, LZ4).
inline constexpr Kind kRans = TANDEM_BLOCK_FILE_KIND("rANS file", 0x54, 0x4E, 0x52, 0x46);
inline constexpr Kind kLzr = TANDEM_BLOCK_FILE_KIND("lzr file", 0x54, 0x4E, 0x4C, 0x46);
#undef TANDEM_BLOCK_FILE_KIND
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

struct Header {
  std::uint32_t block_log2 = kMinBlockLog2;
};

// A block's header. decoded == 0 marks the end of the member (its stored
// field is then 0 too).
struct BlockHeader {
  std::uint32_t decoded = 0;  // bytes of content the block holds
  std::uint32_t payload = 0;  // bytes that follow the block header
  bool raw = false;           // the payload is the content itself
  bool end() const { return decoded == 0; }
};

// True when p[0, n) starts with the kind's magic (n >= 4).
bool has_magic(const Kind& kind, const std::uint8_t* p, std::size_t n);

void write_header(const Kind& kind, const Header& h, std::uint8_t* out);  // kHeaderBytes
// Checks a member header in p[0, n): bad_data when the first min(4, n) bytes
// are not the magic; truncated when n < kHeaderBytes; unsupported for
// another version or a flag; bad_data for a block size out of range.
Status parse_header(const Kind& kind, const std::uint8_t* p, std::size_t n, Header* h);

void write_block_header(const BlockHeader& b, std::uint8_t* out);  // kBlockHeaderBytes
// Checks the kBlockHeaderBytes bytes at p against the member's header:
// bad_data for an end marker with a payload, content over the block size,
// a raw payload whose size is not the content's, or a coded payload not
// smaller than its content (an encoder stores such a block raw).
Status parse_block_header(const Kind& kind, const std::uint8_t* p, const Header& h, BlockHeader* b);

std::uint64_t read_le64(const std::uint8_t* p);
void write_le64(std::uint64_t v, std::uint8_t* out);

}  // namespace tandem::block_file
