// LZ4 frame header parsing and writing (see lz4_frame_format.hpp).
#include "format/lz4_frame_format.hpp"

#include <xxhash.h>

namespace tandem::lz4f {

int block_size_id(std::size_t block_size) {
  switch (block_size) {
    case 64u << 10: return 4;
    case 256u << 10: return 5;
    case 1u << 20: return 6;
    case 4u << 20: return 7;
    default: return 0;
  }
}

std::size_t block_size_from_id(int id) {
  if (id < 4 || id > 7) return 0;
  return std::size_t{1} << (8 + 2 * id);
}

namespace {

// FLG bits.
constexpr std::uint8_t kVersionMask = 0xC0, kVersion01 = 0x40;
constexpr std::uint8_t kBlockIndependent = 0x20, kBlockChecksum = 0x10, kContentSize = 0x08,
                       kContentChecksum = 0x04, kFlgReserved = 0x02, kDictId = 0x01;
// BD bits.
constexpr std::uint8_t kBdReserved = 0x8F;

std::uint8_t header_checksum(const std::uint8_t* descriptor, std::size_t n) {
  return static_cast<std::uint8_t>((XXH32(descriptor, n, 0) >> 8) & 0xFF);
}

}  // namespace

Status parse_frame_header(const std::uint8_t* p, std::size_t size, FrameHeader* h, std::size_t* needed) {
  auto need = [&](std::size_t n) -> Status {
    if (needed) *needed = n;
    return {StatusCode::truncated, "frame header is incomplete"};
  };
  if (size < 4) return need(kMinHeaderSize);
  if (read_le32(p) != kFrameMagic) return {StatusCode::bad_data, "not an LZ4 frame"};
  if (size < 5) return need(kMinHeaderSize);
  const std::uint8_t flg = p[4];
  // FLG tells the header's full size.
  const std::size_t total = kMinHeaderSize + ((flg & kContentSize) ? 8 : 0) + ((flg & kDictId) ? 4 : 0);
  if (size < total) return need(total);
  const std::uint8_t bd = p[5];
  if ((flg & kVersionMask) != kVersion01) return {StatusCode::unsupported, "LZ4 frame version is not 01"};
  if (flg & kFlgReserved) return {StatusCode::bad_data, "reserved bit set in the frame descriptor"};
  if (bd & kBdReserved) return {StatusCode::bad_data, "reserved bit set in the block descriptor"};
  const std::size_t block_max = block_size_from_id((bd >> 4) & 0x7);
  if (block_max == 0) return {StatusCode::bad_data, "invalid block maximum size"};

  FrameHeader out;
  out.block_max = block_max;
  out.independent_blocks = (flg & kBlockIndependent) != 0;
  out.block_checksum = (flg & kBlockChecksum) != 0;
  out.content_checksum = (flg & kContentChecksum) != 0;
  out.has_content_size = (flg & kContentSize) != 0;
  out.has_dict_id = (flg & kDictId) != 0;
  std::size_t at = 6;
  if (out.has_content_size) {
    out.content_size = read_le64(p + at);
    at += 8;
  }
  if (out.has_dict_id) {
    out.dict_id = read_le32(p + at);
    at += 4;
  }
  if (header_checksum(p + 4, at - 4) != p[at]) return {StatusCode::checksum_mismatch, "frame header checksum"};
  if (out.has_dict_id) return {StatusCode::unsupported, "LZ4 frames with a dictionary are not supported"};
  out.header_size = at + 1;
  *h = out;
  return {};
}

std::size_t write_frame_header(const FrameHeader& h, std::uint8_t* out) {
  write_le32(out, kFrameMagic);
  std::uint8_t flg = kVersion01;
  if (h.independent_blocks) flg |= kBlockIndependent;
  if (h.block_checksum) flg |= kBlockChecksum;
  if (h.has_content_size) flg |= kContentSize;
  if (h.content_checksum) flg |= kContentChecksum;
  if (h.has_dict_id) flg |= kDictId;
  out[4] = flg;
  out[5] = static_cast<std::uint8_t>(block_size_id(h.block_max) << 4);
  std::size_t at = 6;
  if (h.has_content_size) {
    write_le64(out + at, h.content_size);
    at += 8;
  }
  if (h.has_dict_id) {
    write_le32(out + at, h.dict_id);
    at += 4;
  }
  out[at] = header_checksum(out + 4, at - 4);
  return at + 1;
}

}  // namespace tandem::lz4f
