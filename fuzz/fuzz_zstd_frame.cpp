// Fuzz target: the zstd frame parser (format/zstd_frame.hpp), on inputs taken
// as they are and on valid inputs written here with edits.
//
// Input: a first byte; bit 0 picks the mode, bits 1-2 small record limits.
//   raw:     the rest of the input is parsed.
//   edited:  the next bytes pick up to three frames, each zstd (every header
//            field size, a window, raw, RLE and compressed blocks, a
//            checksum) or skippable; the input they make must parse to what
//            was written; then byte edits (position, xor) and an optional cut
//            apply.
// The input sits in an allocation of exactly its size (ASan sees a read past
// it).
//
// Properties: no crash; every status is ok, truncated, bad_data or
// unsupported, with a reason; the frames of a parse lie end to end from the
// start of the input, each block inside its frame and the input, no larger
// than its frame's block maximum; an ok parse covers every byte; the raw and
// RLE blocks' content is copied out within the size the parse says; parsing
// again gives the same records.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "format/zstd_frame.hpp"
#include "fuzz_check.hpp"

namespace {

using tandem::StatusCode;
namespace zf = tandem::zstd_frame;
using Bytes = std::vector<std::uint8_t>;

void put_le(Bytes& b, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

struct Written {
  bool skippable = false;
  std::size_t blocks = 0;
  std::uint64_t known = 0;
};

// Appends one valid frame chosen by the input to *out.
Written write_frame(fuzz::Reader& in, Bytes* out) {
  Written w;
  const std::uint8_t pick = in.byte();
  if (pick % 5 == 0) {
    const std::uint32_t n = in.byte();
    put_le(*out, zf::kSkippableMagicMin | (pick >> 4), 4);
    put_le(*out, n, 4);
    for (std::uint32_t i = 0; i < n; ++i) out->push_back(static_cast<std::uint8_t>(i));
    w.skippable = true;
    return w;
  }
  const bool single = (pick & 0x02) != 0;
  const bool checksum = (pick & 0x04) != 0;
  const int dict_flag = (pick >> 3) & 3;
  int fcs_flag = (pick >> 5) & 3;
  // The blocks first: their sizes decide the content size and, for a
  // single-segment frame, the window.
  struct B {
    zf::BlockType type;
    std::uint32_t size, decoded;
  };
  std::vector<B> blocks;
  const std::uint8_t wd = static_cast<std::uint8_t>(in.byte() % 64);  // windows of 1 KiB .. 240 KiB
  const std::uint64_t wbase = std::uint64_t{1} << (10 + (wd >> 3));
  const std::uint64_t window = wbase + wbase / 8 * (wd & 7);
  const std::uint32_t cap = single ? 3000 : static_cast<std::uint32_t>(std::min<std::uint64_t>(window, 3000));
  std::uint64_t content = 0;
  for (int n = 1 + in.byte() % 6; n > 0; --n) {
    const std::uint8_t t = in.byte();
    B b;
    b.type = static_cast<zf::BlockType>(t % 3);
    b.size = static_cast<std::uint32_t>(in.le(2) % (cap + 1));
    b.decoded = b.size;
    if (b.type == zf::BlockType::compressed) {
      // A compressed block decodes to between 1 and block_max bytes; its
      // payload is not looked at.
      b.size = std::max<std::uint32_t>(b.size, 1);
      b.decoded = std::max(b.size, static_cast<std::uint32_t>(in.le(2) % (cap + 1)));
    }
    content += b.decoded;
    blocks.push_back(b);
  }
  // The content size is what the blocks decode to, so that it lies in
  // [known, known + compressed * block_max]; for a single-segment frame it
  // is the window too, no smaller than any block. The field must hold it.
  if (single && fcs_flag == 0 && content > 255) fcs_flag = 1;
  if (fcs_flag == 1 && content < 256) fcs_flag = 2;

  put_le(*out, zf::kMagic, 4);
  out->push_back(static_cast<std::uint8_t>(fcs_flag << 6 | (single ? 0x20 : 0) | (checksum ? 0x04 : 0) | dict_flag));
  if (!single) out->push_back(wd);
  static const int kDictBytes[4] = {0, 1, 2, 4};
  put_le(*out, in.le(4), kDictBytes[dict_flag]);
  static const int kContentBytes[4] = {0, 2, 4, 8};
  const int fcs = single && fcs_flag == 0 ? 1 : kContentBytes[fcs_flag];
  put_le(*out, fcs == 2 ? content - 256 : content, fcs);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const B& b = blocks[i];
    const bool last = i + 1 == blocks.size();
    put_le(*out, (last ? 1u : 0u) | static_cast<std::uint32_t>(b.type) << 1 | b.size << 3, 3);
    const std::uint32_t payload = b.type == zf::BlockType::rle ? 1 : b.size;
    for (std::uint32_t k = 0; k < payload; ++k) out->push_back(static_cast<std::uint8_t>(k * 31 + i));
    if (b.type != zf::BlockType::compressed) w.known += b.decoded;
  }
  if (checksum) put_le(*out, in.le(4), 4);
  w.blocks = blocks.size();
  return w;
}

// The properties of one parse of `in`.
void check(const Bytes& bytes, const zf::Limits& limits, const std::vector<Written>* written) {
  std::unique_ptr<std::uint8_t[]> buf(new std::uint8_t[bytes.empty() ? 1 : bytes.size()]);
  if (!bytes.empty()) std::memcpy(buf.get(), bytes.data(), bytes.size());
  const std::span<const std::uint8_t> in(buf.get(), bytes.size());

  zf::Parsed p;
  const tandem::Status s = zf::parse(in, limits, &p);
  switch (s.code) {
    case StatusCode::ok: break;
    case StatusCode::truncated:
    case StatusCode::bad_data:
    case StatusCode::unsupported: FUZZ_ASSERT(s.reason != nullptr); break;
    default: FUZZ_ASSERT(false);
  }
  FUZZ_ASSERT(p.end_offset <= in.size());
  FUZZ_ASSERT(p.frames.size() <= limits.max_frames);
  FUZZ_ASSERT(p.blocks.size() <= limits.max_blocks);

  std::uint64_t at = 0;
  std::size_t block_index = 0;
  for (const zf::Frame& f : p.frames) {
    FUZZ_ASSERT(f.offset == at);
    FUZZ_ASSERT(f.size <= in.size() - f.offset);
    if (f.kind == zf::FrameKind::skippable) {
      FUZZ_ASSERT(zf::is_skippable_magic(f.magic));
      FUZZ_ASSERT(f.size >= zf::kSkippableHeaderBytes);
      FUZZ_ASSERT(f.block_count == 0);
    } else {
      FUZZ_ASSERT(f.magic == zf::kMagic);
      FUZZ_ASSERT(f.first_block == block_index);
      FUZZ_ASSERT(f.block_count >= 1);
      FUZZ_ASSERT(f.header.window_size <= limits.max_window_size);
      FUZZ_ASSERT(f.header.block_max <= zf::kBlockSizeMax);
      std::uint64_t pos = f.offset + f.header.header_size;
      std::uint64_t known = 0;
      for (const zf::Block& b : p.blocks_of(f)) {
        FUZZ_ASSERT(b.header_offset == pos);
        FUZZ_ASSERT(b.payload_offset == pos + zf::kBlockHeaderBytes);
        FUZZ_ASSERT(b.payload_offset <= in.size() && b.payload_size <= in.size() - b.payload_offset);
        FUZZ_ASSERT(b.payload_size <= f.header.block_max || b.type == zf::BlockType::rle);
        FUZZ_ASSERT(b.decoded_size <= f.header.block_max);
        FUZZ_ASSERT(b.type != zf::BlockType::reserved);
        known += b.decoded_size;
        pos = b.payload_offset + b.payload_size;
      }
      FUZZ_ASSERT(known == f.known_content);
      if (f.header.has_checksum) {
        FUZZ_ASSERT(f.checksum_offset == pos);
        pos += zf::kChecksumBytes;
      }
      FUZZ_ASSERT(pos == f.offset + f.size);
      if (f.header.has_content_size) FUZZ_ASSERT(f.known_content <= f.header.content_size);

      // The known blocks' content, into an output of exactly its size.
      std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[f.known_content + 1]);
      std::size_t done = 0, wrote = 0;
      const tandem::Status d =
          zf::decode_known_blocks(in, p.blocks_of(f), {out.get(), static_cast<std::size_t>(f.known_content)}, &done, &wrote);
      FUZZ_ASSERT(d.ok());
      FUZZ_ASSERT(wrote <= f.known_content);
      FUZZ_ASSERT(done <= f.block_count);
      if (f.compressed_blocks == 0) FUZZ_ASSERT(done == f.block_count && wrote == f.known_content);
    }
    block_index += f.block_count;
    at += f.size;
  }
  FUZZ_ASSERT(block_index == p.blocks.size());
  if (s.ok()) {
    FUZZ_ASSERT(at == in.size());
    FUZZ_ASSERT(p.end_offset == in.size());
  } else {
    FUZZ_ASSERT(p.end_offset == at);
  }

  // Parsing again, the first frame on its own too, gives the same answers.
  zf::Parsed again;
  const tandem::Status s2 = zf::parse(in, limits, &again);
  FUZZ_ASSERT(s2.code == s.code && s2.reason == s.reason);
  FUZZ_ASSERT(again.frames.size() == p.frames.size() && again.blocks.size() == p.blocks.size());
  if (!p.frames.empty()) {
    zf::Frame f;
    std::vector<zf::Block> blocks;
    FUZZ_ASSERT(zf::parse_frame(in, 0, limits, &f, &blocks).ok());
    FUZZ_ASSERT(f.size == p.frames[0].size && blocks.size() == p.frames[0].block_count);
  }

  if (written) {  // unedited
    FUZZ_ASSERT(s.ok());
    FUZZ_ASSERT(p.frames.size() == written->size());
    for (std::size_t i = 0; i < written->size(); ++i) {
      const Written& w = (*written)[i];
      FUZZ_ASSERT(p.frames[i].kind == (w.skippable ? zf::FrameKind::skippable : zf::FrameKind::zstd));
      FUZZ_ASSERT(p.frames[i].block_count == w.blocks);
      FUZZ_ASSERT(p.frames[i].known_content == w.known);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Reader in{data, size};
  const std::uint8_t mode = in.byte();
  zf::Limits limits;
  switch ((mode >> 1) & 3) {
    case 1: limits.max_blocks = 3; break;
    case 2: limits.max_frames = 2; break;
    case 3: limits.max_window_size = 1u << 20; break;
    default: break;
  }
  if ((mode & 1) == 0) {
    check(Bytes(data + in.at, data + size), limits, nullptr);
    return 0;
  }
  Bytes input;
  std::vector<Written> written;
  for (int n = 1 + in.byte() % 3; n > 0; --n) written.push_back(write_frame(in, &input));
  // Limits that the written input passes.
  zf::Limits wide;
  wide.max_window_size = std::uint64_t{1} << 23;
  check(input, wide, &written);
  if (in.edit(&input)) check(input, limits, nullptr);
  if (const std::uint8_t c = in.byte(); c & 1) input.resize(in.le(3) % (input.size() + 1));
  check(input, limits, nullptr);
  return 0;
}
