// The bytes around a deflate stream: tandem's chunk index, gzip member
// headers and trailers (RFC 1952), zlib headers and trailers (RFC 1950).
//
// Parsers take whatever bytes are at hand and answer ok (with the size they
// used), truncated (the bytes end inside the structure: read more and call
// again, or report truncation at the end of the input), bad_data or
// unsupported. They never read past `size` and bound every length they meet.
// docs/formats/deflate.md describes every byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::format {

// ---------------------------------------------------------- chunk index ----

// The chunk index of an indexed deflate stream: chunks of 2^chunk_log2
// uncompressed bytes (the last may be shorter), each compressed alone into
// compressed_sizes[i] bytes; the stream is their concatenation followed by
// the two bytes 03 00.
struct DeflateIndex {
  std::uint32_t chunk_log2 = 16;
  std::vector<std::uint64_t> compressed_sizes;
};

inline constexpr std::uint8_t kDeflateIndexVersion = 1;
inline constexpr std::uint32_t kDeflateMinChunkLog2 = 12;  // 4 KiB
inline constexpr std::uint32_t kDeflateMaxChunkLog2 = 26;  // 64 MiB
// The gzip subfield ID of the index, and the BGZF one.
inline constexpr std::uint8_t kIndexSi1 = 'T', kIndexSi2 = 'D';
inline constexpr std::uint8_t kBgzfSi1 = 'B', kBgzfSi2 = 'C';
// Bytes of the stream's end: an empty final fixed-Huffman block.
inline constexpr std::uint8_t kDeflateEnd[2] = {0x03, 0x00};
// The empty stored block every chunk ends with, after its 3 header bits
// and the padding to a byte boundary.
inline constexpr std::uint8_t kSyncMarker[4] = {0x00, 0x00, 0xff, 0xff};

// Size of the index's bytes (the subfield's data) and the bytes themselves.
std::size_t deflate_index_size(const DeflateIndex& index);
void write_deflate_index(const DeflateIndex& index, std::vector<std::uint8_t>* out);
// Parses exactly `size` bytes. bad_data on a malformed index (a count or a
// size that runs past the end, a varint over 10 bytes or 64 bits, bytes
// left over, a chunk size outside 4 KiB .. 64 MiB, a chunk whose compressed
// size is zero or exceeds what deflate may take for it); unsupported for
// another version.
Status parse_deflate_index(const std::uint8_t* data, std::size_t size, DeflateIndex* index);
// The largest compressed size an honest chunk of 2^chunk_log2 bytes can have
// (stored blocks and the sync marker), used to bound the parser's values.
std::uint64_t deflate_chunk_bound(std::uint32_t chunk_log2);

// LEB128: 7 bits a byte, low group first, high bit set on all but the last.
void put_varint(std::uint64_t value, std::vector<std::uint8_t>* out);
std::size_t varint_size(std::uint64_t value);

// ------------------------------------------------------------------ gzip ----

inline constexpr std::uint8_t kGzipId1 = 0x1f, kGzipId2 = 0x8b;
inline constexpr std::uint8_t kGzipFtext = 1, kGzipFhcrc = 2, kGzipFextra = 4, kGzipFname = 8,
                              kGzipFcomment = 16;
inline constexpr std::size_t kGzipTrailerSize = 8;
// A header longer than this (names and comments without their NUL) is refused.
inline constexpr std::size_t kGzipMaxHeader = std::size_t{1} << 20;

struct GzipHeader {
  std::uint8_t flags = 0;
  std::uint32_t mtime = 0;
  std::uint8_t xfl = 0;
  std::uint8_t os = 255;
  std::vector<std::uint8_t> extra;  // the FEXTRA field's bytes after XLEN
  std::string name;                 // FNAME without its NUL
  std::string comment;              // FCOMMENT without its NUL
  std::size_t size = 0;             // bytes of the header, FHCRC included
  // Found in well-formed FEXTRA subfields (a malformed FEXTRA is kept in
  // `extra` and otherwise ignored, as other readers do):
  bool has_index = false;
  DeflateIndex index;               // a 'TD' subfield that parsed
  bool has_bgzf = false;
  std::uint32_t bgzf_member_size = 0;  // BGZF 'BC': the whole member's size (BSIZE + 1)
};

// Parses the member header at data[0, size). ok: *header filled,
// header->size the bytes used. truncated: the bytes end inside the header.
// bad_data: not gzip, reserved flags set, a header over kGzipMaxHeader.
// unsupported: a compression method other than deflate. checksum_mismatch:
// FHCRC disagrees (only when verify_header_crc).
Status parse_gzip_header(const std::uint8_t* data, std::size_t size, GzipHeader* header,
                         bool verify_header_crc = true);

struct GzipHeaderFields {
  std::uint32_t mtime = 0;
  std::uint8_t xfl = 0;   // 2: slowest, smallest; 4: fastest
  std::uint8_t os = 3;    // Unix
  std::string name;       // FNAME when not empty
  const DeflateIndex* index = nullptr;  // the TD subfield when not null
  // When not 0: FEXTRA is exactly this many bytes, the index (if any)
  // followed by a 'T','P' subfield of zeros that fills the rest, so that a
  // header written before the index is known can be rewritten in place.
  std::size_t extra_size = 0;
};
inline constexpr std::uint8_t kPadSi1 = 'T', kPadSi2 = 'P';
// Bytes of the header write_gzip_header writes; 0 when the index does not fit
// in FEXTRA (65535 bytes with its subfield header).
std::size_t gzip_header_size(const GzipHeaderFields& fields);
// false (nothing written) when the index does not fit or the name holds a NUL.
bool write_gzip_header(const GzipHeaderFields& fields, std::vector<std::uint8_t>* out);
void write_gzip_trailer(std::uint32_t crc32, std::uint32_t isize, std::uint8_t out[kGzipTrailerSize]);
void read_gzip_trailer(const std::uint8_t in[kGzipTrailerSize], std::uint32_t* crc32, std::uint32_t* isize);

// ------------------------------------------------------------------ zlib ----

inline constexpr std::size_t kZlibHeaderSize = 2, kZlibTrailerSize = 4;
// True when b0 b1 form a zlib header of deflate (CM 8, CINFO <= 7, check bits).
bool is_zlib_header(std::uint8_t b0, std::uint8_t b1);
// ok (2 bytes), truncated, bad_data (CM, CINFO or check bits),
// unsupported (FDICT: a preset dictionary tandem does not have).
Status parse_zlib_header(const std::uint8_t* data, std::size_t size);
// The header for a libdeflate level (FLEVEL 0..3) and a 32 KiB window.
void write_zlib_header(int level, std::uint8_t out[kZlibHeaderSize]);
void write_be32(std::uint32_t value, std::uint8_t out[4]);
std::uint32_t read_be32(const std::uint8_t in[4]);

}  // namespace tandem::format
