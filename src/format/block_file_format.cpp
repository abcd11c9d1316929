// Member and block headers of tandem's block files; see block_file_format.hpp.
#include "format/block_file_format.hpp"

#include <algorithm>
#include <cstring>

namespace tandem::block_file {

namespace {

std::uint32_t read_le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

void write_le32(std::uint32_t v, std::uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

bool has_magic(const Kind& kind, const std::uint8_t* p, std::size_t n) {
  return n >= sizeof kind.magic && std::memcmp(p, kind.magic, sizeof kind.magic) == 0;
}

void write_header(const Kind& kind, const Header& h, std::uint8_t* out) {
  std::memcpy(out, kind.magic, sizeof kind.magic);
  out[4] = kVersion;
  out[5] = static_cast<std::uint8_t>(h.block_log2);
  out[6] = 0;
  out[7] = 0;
}

Status parse_header(const Kind& kind, const std::uint8_t* p, std::size_t n, Header* h) {
  if (n > 0 && std::memcmp(p, kind.magic, std::min(n, sizeof kind.magic)) != 0) {  // p may be null when n is 0
    return {StatusCode::bad_data, kind.bad_magic};
  }
  if (n < kHeaderBytes) return {StatusCode::truncated, kind.header_short};
  if (p[4] != kVersion) return {StatusCode::unsupported, kind.bad_version};
  if (p[6] != 0 || p[7] != 0) return {StatusCode::unsupported, kind.bad_flags};
  if (p[5] < kMinBlockLog2 || p[5] > kMaxBlockLog2) return {StatusCode::bad_data, kind.bad_block_size};
  h->block_log2 = p[5];
  return {};
}

void write_block_header(const BlockHeader& b, std::uint8_t* out) {
  write_le32(b.decoded, out);
  write_le32(b.payload | (b.raw ? kRawBit : 0), out + 4);
}

Status parse_block_header(const Kind& kind, const std::uint8_t* p, const Header& h, BlockHeader* b) {
  const std::uint32_t stored = read_le32(p + 4);
  b->decoded = read_le32(p);
  b->payload = stored & ~kRawBit;
  b->raw = (stored & kRawBit) != 0;
  if (b->decoded == 0) {
    if (stored != 0) return {StatusCode::bad_data, kind.end_with_payload};
    return {};
  }
  if (b->decoded > (std::uint32_t{1} << h.block_log2)) {
    return {StatusCode::bad_data, kind.block_too_large};
  }
  if (b->raw && b->payload != b->decoded) {
    return {StatusCode::bad_data, kind.raw_size};
  }
  if (!b->raw && b->payload >= b->decoded) {
    return {StatusCode::bad_data, kind.not_smaller};
  }
  return {};
}

std::uint64_t read_le64(const std::uint8_t* p) {
  return std::uint64_t{read_le32(p)} | std::uint64_t{read_le32(p + 4)} << 32;
}

void write_le64(std::uint64_t v, std::uint8_t* out) {
  write_le32(static_cast<std::uint32_t>(v), out);
  write_le32(static_cast<std::uint32_t>(v >> 32), out + 4);
}

}  // namespace tandem::block_file
