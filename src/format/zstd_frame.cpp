// zstd frame, block and skippable-frame parsing; see zstd_frame.hpp.
//
// Lengths read from the input are compared with what is left of it
// (`in.size() - pos`, never `pos + length`), so no sum can wrap.
#include "format/zstd_frame.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace tandem::zstd_frame {

namespace {

// Frame_Header_Descriptor bits (RFC 8878 3.1.1.1.1).
constexpr std::uint8_t kSingleSegment = 0x20;
constexpr std::uint8_t kReservedBit = 0x08;
constexpr std::uint8_t kChecksumFlag = 0x04;

// The reasons, spelled once: a Status keeps a pointer to static storage.
constexpr const char* kMagicShort = "zstd input cut short (magic number)";
constexpr const char* kBadMagic = "not a zstd frame (bad magic)";
constexpr const char* kTrailing = "data after a frame that starts no zstd or skippable frame";
constexpr const char* kEmpty = "empty input (no zstd frame)";
constexpr const char* kHeaderShort = "zstd frame cut short (frame header)";
constexpr const char* kReserved = "zstd frame header with its reserved bit set";
constexpr const char* kWindowTooLarge = "zstd window size over the reader's limit";
constexpr const char* kBlockHeaderShort = "zstd frame cut short (block header)";
constexpr const char* kPayloadShort = "zstd frame cut short (block payload)";
constexpr const char* kChecksumShort = "zstd frame cut short (content checksum)";
constexpr const char* kReservedType = "zstd block of the reserved type";
constexpr const char* kBlockTooLarge = "zstd block size over the frame's block maximum";
constexpr const char* kMoreThanContent = "zstd blocks decode to more than the frame content size";
constexpr const char* kLessThanContent = "zstd blocks cannot decode to the frame content size";
constexpr const char* kTooManyBlocks = "more zstd blocks than the reader's limit";
constexpr const char* kTooManyFrames = "more zstd frames than the reader's limit";
constexpr const char* kSkippableShort = "skippable frame cut short";
constexpr const char* kBadRecord = "zstd block record outside the input";

// Little-endian, n <= 8 bytes.
std::uint64_t read_le(const std::uint8_t* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

// True when p[0, n), n < 4, may be the start of a zstd or skippable magic.
bool starts_a_magic(const std::uint8_t* p, std::size_t n) {
  std::uint8_t zstd[4], skip[4];
  for (int i = 0; i < 4; ++i) {
    zstd[i] = static_cast<std::uint8_t>(kMagic >> (8 * i));
    skip[i] = static_cast<std::uint8_t>(kSkippableMagicMin >> (8 * i));
  }
  if (std::memcmp(p, zstd, n) == 0) return true;
  if (n == 0) return true;
  return (p[0] & 0xF0) == skip[0] && std::memcmp(p + 1, skip + 1, n - 1) == 0;
}

}  // namespace

const char* block_type_name(BlockType type) {
  switch (type) {
    case BlockType::raw: return "raw";
    case BlockType::rle: return "rle";
    case BlockType::compressed: return "compressed";
    default: return "reserved";
  }
}

Status parse_frame_header(std::span<const std::uint8_t> in, const Limits& limits, FrameHeader* header) {
  if (in.size() < 4) return {StatusCode::truncated, kHeaderShort};
  if (read_le(in.data(), 4) != kMagic) return {StatusCode::bad_data, kBadMagic};
  if (in.size() < 5) return {StatusCode::truncated, kHeaderShort};
  const std::uint8_t fhd = in[4];
  if (fhd & kReservedBit) return {StatusCode::bad_data, kReserved};

  FrameHeader h;
  h.single_segment = (fhd & kSingleSegment) != 0;
  h.has_checksum = (fhd & kChecksumFlag) != 0;
  static constexpr std::uint8_t kDictBytes[4] = {0, 1, 2, 4};
  static constexpr std::uint8_t kContentBytes[4] = {0, 2, 4, 8};
  h.dict_id_bytes = kDictBytes[fhd & 0x03];
  h.content_size_bytes = kContentBytes[fhd >> 6];
  if (h.content_size_bytes == 0 && h.single_segment) h.content_size_bytes = 1;
  h.has_content_size = h.content_size_bytes != 0;
  const std::size_t total = 5 + (h.single_segment ? 0 : 1) + h.dict_id_bytes + h.content_size_bytes;
  if (in.size() < total) return {StatusCode::truncated, kHeaderShort};

  std::size_t pos = 5;
  if (!h.single_segment) {
    // Window_Descriptor: 2^(10 + exponent) plus mantissa eighths of it; at
    // most 2^41 + 7 * 2^38, which a uint64 holds.
    const std::uint8_t wd = in[pos++];
    const std::uint64_t base = std::uint64_t{1} << (10 + (wd >> 3));
    h.window_size = base + (base / 8) * (wd & 0x07);
  }
  h.dict_id = static_cast<std::uint32_t>(read_le(in.data() + pos, h.dict_id_bytes));
  pos += h.dict_id_bytes;
  h.content_size = read_le(in.data() + pos, h.content_size_bytes);
  if (h.content_size_bytes == 2) h.content_size += 256;
  pos += h.content_size_bytes;
  if (h.single_segment) h.window_size = h.content_size;
  if (h.window_size > limits.max_window_size) return {StatusCode::unsupported, kWindowTooLarge};
  h.block_max = static_cast<std::uint32_t>(std::min<std::uint64_t>(h.window_size, kBlockSizeMax));
  h.header_size = static_cast<std::uint8_t>(pos);
  *header = h;
  return {};
}

Status parse_frame(std::span<const std::uint8_t> in, std::size_t offset, const Limits& limits, Frame* frame,
                   std::vector<Block>* blocks) {
  if (offset > in.size()) offset = in.size();
  const std::span<const std::uint8_t> rest = in.subspan(offset);
  if (rest.size() < 4) return {StatusCode::truncated, kMagicShort};
  const std::uint32_t magic = static_cast<std::uint32_t>(read_le(rest.data(), 4));

  Frame f;
  f.magic = magic;
  f.offset = offset;
  f.first_block = blocks->size();
  if (is_skippable_magic(magic)) {
    if (rest.size() < kSkippableHeaderBytes) return {StatusCode::truncated, kSkippableShort};
    const std::uint64_t user = read_le(rest.data() + 4, 4);
    if (user > rest.size() - kSkippableHeaderBytes) return {StatusCode::truncated, kSkippableShort};
    f.kind = FrameKind::skippable;
    f.size = kSkippableHeaderBytes + user;
    *frame = f;
    return {};
  }

  if (Status s = parse_frame_header(rest, limits, &f.header); !s) return s;
  const FrameHeader& h = f.header;
  std::size_t pos = h.header_size;
  for (;;) {
    if (rest.size() - pos < kBlockHeaderBytes) return {StatusCode::truncated, kBlockHeaderShort};
    const std::uint32_t word = static_cast<std::uint32_t>(read_le(rest.data() + pos, kBlockHeaderBytes));
    Block b;
    b.last = (word & 1) != 0;
    b.type = static_cast<BlockType>((word >> 1) & 3);
    const std::uint32_t size = word >> 3;
    if (b.type == BlockType::reserved) return {StatusCode::bad_data, kReservedType};
    // RFC 8878 3.1.1.2.3 limits Block_Size by Block_Maximum_Size whatever
    // the type: the content of a raw or RLE block, the payload of a
    // compressed one (whose content is no larger either).
    if (size > h.block_max) return {StatusCode::bad_data, kBlockTooLarge};
    b.payload_size = b.type == BlockType::rle ? 1 : size;
    b.decoded_size = b.type == BlockType::compressed ? 0 : size;
    b.header_offset = offset + pos;
    b.payload_offset = b.header_offset + kBlockHeaderBytes;
    if (rest.size() - pos - kBlockHeaderBytes < b.payload_size) return {StatusCode::truncated, kPayloadShort};
    if (blocks->size() >= limits.max_blocks) return {StatusCode::unsupported, kTooManyBlocks};
    blocks->push_back(b);
    pos += kBlockHeaderBytes + b.payload_size;
    if (b.type == BlockType::compressed) {
      ++f.compressed_blocks;
    } else {
      f.known_content += b.decoded_size;
    }
    if (b.last) break;
  }
  f.block_count = blocks->size() - f.first_block;
  if (h.has_checksum) {
    if (rest.size() - pos < kChecksumBytes) return {StatusCode::truncated, kChecksumShort};
    f.checksum_offset = offset + pos;
    f.checksum = static_cast<std::uint32_t>(read_le(rest.data() + pos, kChecksumBytes));
    pos += kChecksumBytes;
  }
  if (h.has_content_size) {
    // Raw and RLE blocks decode to exactly their size, compressed ones to at
    // most block_max: a content size outside [known, known + compressed *
    // block_max] cannot be right. (The product stays far below 2^64: at
    // most one block per 3 input bytes, times 2^17.)
    if (f.known_content > h.content_size) return {StatusCode::bad_data, kMoreThanContent};
    if (h.content_size - f.known_content > std::uint64_t{f.compressed_blocks} * h.block_max) {
      return {StatusCode::bad_data, kLessThanContent};
    }
  }
  f.size = pos;
  *frame = f;
  return {};
}

Status parse(std::span<const std::uint8_t> in, const Limits& limits, Parsed* out) {
  out->frames.clear();
  out->blocks.clear();
  out->end_offset = 0;
  if (in.empty()) return {StatusCode::truncated, kEmpty};
  std::size_t pos = 0;
  while (pos < in.size()) {
    out->end_offset = pos;
    const std::size_t left = in.size() - pos;
    const std::uint8_t* p = in.data() + pos;
    const char* bad_magic = pos == 0 ? kBadMagic : kTrailing;
    if (left < 4) {
      if (starts_a_magic(p, left)) return {StatusCode::truncated, kMagicShort};
      return {StatusCode::bad_data, bad_magic};
    }
    const std::uint32_t magic = static_cast<std::uint32_t>(read_le(p, 4));
    if (magic != kMagic && !is_skippable_magic(magic)) return {StatusCode::bad_data, bad_magic};
    if (out->frames.size() >= limits.max_frames) return {StatusCode::unsupported, kTooManyFrames};
    const std::size_t blocks_before = out->blocks.size();
    Frame f;
    if (Status s = parse_frame(in, pos, limits, &f, &out->blocks); !s) {
      out->blocks.resize(blocks_before);
      return s;
    }
    out->frames.push_back(f);
    pos += f.size;
  }
  out->end_offset = in.size();
  return {};
}

std::uint32_t content_checksum(std::span<const std::uint8_t> content) {
  return static_cast<std::uint32_t>(XXH64(content.data(), content.size(), 0));
}

Status decode_known_blocks(std::span<const std::uint8_t> in, std::span<const Block> blocks,
                           std::span<std::uint8_t> out, std::size_t* done, std::size_t* written) {
  *done = 0;
  *written = 0;
  std::size_t n = 0, at = 0;
  for (const Block& b : blocks) {
    if (b.type == BlockType::compressed) break;
    const bool fits = b.payload_offset <= in.size() && b.payload_size <= in.size() - b.payload_offset;
    const bool sane = (b.type == BlockType::raw && b.payload_size == b.decoded_size) ||
                      (b.type == BlockType::rle && b.payload_size == 1);
    if (!fits || !sane || b.decoded_size > kBlockSizeMax) return {StatusCode::bad_data, kBadRecord};
    if (b.decoded_size > out.size() - at) return {StatusCode::output_too_small, "zstd block content over the output"};
    if (b.decoded_size > 0) {
      if (b.type == BlockType::raw) {
        std::memcpy(out.data() + at, in.data() + b.payload_offset, b.decoded_size);
      } else {
        std::memset(out.data() + at, in[b.payload_offset], b.decoded_size);
      }
    }
    at += b.decoded_size;
    ++n;
    *done = n;
    *written = at;
  }
  return {};
}

}  // namespace tandem::zstd_frame
