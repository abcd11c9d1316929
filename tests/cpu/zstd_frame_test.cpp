// The zstd frame parser (format/zstd_frame.hpp) against frames that libzstd
// and the zstd tool write, and against frames written here byte by byte
// (every header field size, dictionary ids, raw and RLE blocks): the fields
// are what the writer set, the records account for every input byte, raw and
// RLE blocks decode to what libzstd decodes them to; and each kind of
// malformed input gets its status.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "format/zstd_frame.hpp"
#include "support/test_support.hpp"

#if TANDEM_TEST_HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader, the buffer-less decoder
#include <zstd.h>
#endif

namespace {

using tandem::Status;
using tandem::StatusCode;
using tandem::test::Bytes;
namespace zf = tandem::zstd_frame;

void put_le(Bytes& b, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// A frame written here. The header fields are taken as given, so that a test
// may write what a compressor never would.
struct Spec {
  int content_size_flag = 0;  // FHD bits 7-6
  bool single_segment = true;
  bool checksum = false;
  int dict_flag = 0;          // FHD bits 1-0
  std::uint8_t window_descriptor = 0;
  std::uint64_t content_size = 0;
  std::uint32_t dict_id = 0;
};
struct SpecBlock {
  zf::BlockType type;
  std::uint32_t size;  // Block_Size
  std::uint8_t fill;   // the RLE byte, or the first raw byte (then counting up)
};

void put_block(Bytes& b, const SpecBlock& blk, bool last) {
  put_le(b, (last ? 1u : 0u) | static_cast<std::uint32_t>(blk.type) << 1 | blk.size << 3, 3);
  if (blk.type == zf::BlockType::rle) {
    b.push_back(blk.fill);
  } else {
    for (std::uint32_t i = 0; i < blk.size; ++i) b.push_back(static_cast<std::uint8_t>(blk.fill + i));
  }
}

Bytes content_of(const std::vector<SpecBlock>& blocks) {
  Bytes c;
  for (const SpecBlock& blk : blocks) {
    for (std::uint32_t i = 0; i < blk.size; ++i) {
      c.push_back(blk.type == zf::BlockType::rle ? blk.fill : static_cast<std::uint8_t>(blk.fill + i));
    }
  }
  return c;
}

Bytes write_frame(const Spec& s, const std::vector<SpecBlock>& blocks) {
  Bytes b;
  put_le(b, zf::kMagic, 4);
  b.push_back(static_cast<std::uint8_t>(s.content_size_flag << 6 | (s.single_segment ? 0x20 : 0) |
                                        (s.checksum ? 0x04 : 0) | s.dict_flag));
  if (!s.single_segment) b.push_back(s.window_descriptor);
  static const int kDictBytes[4] = {0, 1, 2, 4};
  put_le(b, s.dict_id, kDictBytes[s.dict_flag]);
  static const int kContentBytes[4] = {0, 2, 4, 8};
  const int fcs = s.content_size_flag == 0 && s.single_segment ? 1 : kContentBytes[s.content_size_flag];
  put_le(b, fcs == 2 ? s.content_size - 256 : s.content_size, fcs);
  for (std::size_t i = 0; i < blocks.size(); ++i) put_block(b, blocks[i], i + 1 == blocks.size());
  if (s.checksum) put_le(b, zf::content_checksum(content_of(blocks)), 4);
  return b;
}

Bytes skippable(std::uint32_t nibble, std::size_t n) {
  Bytes b;
  put_le(b, zf::kSkippableMagicMin | nibble, 4);
  put_le(b, n, 4);
  for (std::size_t i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(i * 7));
  return b;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes b;
  for (const Bytes& p : parts) b.insert(b.end(), p.begin(), p.end());
  return b;
}

Status parse(const Bytes& in, zf::Parsed* p, const zf::Limits& limits = {}) {
  return zf::parse({in.data(), in.size()}, limits, p);
}

// The records of a successful parse lie end to end and cover the input:
// frames back to back; in a zstd frame the header, each block's header and
// payload, then the checksum.
void expect_accounts_for_every_byte(const Bytes& in, const zf::Parsed& p) {
  std::uint64_t at = 0;
  for (const zf::Frame& f : p.frames) {
    ASSERT_EQ(f.offset, at);
    if (f.kind == zf::FrameKind::skippable) {
      at += f.size;
      continue;
    }
    std::uint64_t pos = f.offset + f.header.header_size;
    std::uint64_t known = 0;
    std::size_t compressed = 0;
    const auto blocks = p.blocks_of(f);
    ASSERT_GE(blocks.size(), 1u);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const zf::Block& b = blocks[i];
      EXPECT_EQ(b.header_offset, pos);
      EXPECT_EQ(b.payload_offset, pos + 3);
      EXPECT_EQ(b.last, i + 1 == blocks.size());
      EXPECT_LE(b.payload_size, f.header.block_max);
      switch (b.type) {
        case zf::BlockType::raw: EXPECT_EQ(b.payload_size, b.decoded_size); break;
        case zf::BlockType::rle: EXPECT_EQ(b.payload_size, 1u); break;
        case zf::BlockType::compressed: EXPECT_EQ(b.decoded_size, 0u); break;
        default: ADD_FAILURE() << "reserved block recorded";
      }
      EXPECT_LE(b.decoded_size, f.header.block_max);
      if (b.decoded_size_known()) known += b.decoded_size; else ++compressed;
      pos = b.payload_offset + b.payload_size;
    }
    EXPECT_EQ(known, f.known_content);
    EXPECT_EQ(compressed, f.compressed_blocks);
    if (f.header.has_checksum) {
      EXPECT_EQ(f.checksum_offset, pos);
      pos += 4;
    }
    EXPECT_EQ(pos, f.offset + f.size);
    at += f.size;
  }
  EXPECT_EQ(at, in.size());
  EXPECT_EQ(p.end_offset, in.size());
  std::size_t blocks = 0;
  for (const zf::Frame& f : p.frames) {
    if (f.kind == zf::FrameKind::zstd) EXPECT_EQ(f.first_block, blocks);
    blocks += f.block_count;
  }
  EXPECT_EQ(blocks, p.blocks.size());
}

// The content of a frame none of whose blocks is compressed.
Bytes decode_known(const Bytes& in, const zf::Parsed& p, const zf::Frame& f) {
  Bytes out(f.known_content);
  std::size_t done = 0, written = 0;
  EXPECT_TRUE(zf::decode_known_blocks({in.data(), in.size()}, p.blocks_of(f), {out.data(), out.size()}, &done,
                                      &written).ok());
  EXPECT_EQ(done, f.compressed_blocks ? done : f.block_count);
  out.resize(written);
  return out;
}

// ------------------------------------------------------- frames written here

TEST(ZstdFrame, HandWrittenHeadersEveryFieldSize) {
  const std::vector<SpecBlock> blocks = {{zf::BlockType::raw, 300, 1}, {zf::BlockType::rle, 1000, 'x'},
                                         {zf::BlockType::raw, 0, 0}, {zf::BlockType::rle, 7, 'y'}};
  const Bytes content = content_of(blocks);
  struct Case {
    Spec spec;
    std::uint8_t header_size;
  };
  std::vector<Case> cases;
  for (int dict = 0; dict < 4; ++dict) {
    const std::uint32_t ids[4] = {0, 0xAB, 0xABCD, 0x89ABCDEF};
    // Windowed: no content size, or 2 (+256), 4 or 8 bytes of it.
    for (int fcs = 0; fcs < 4; ++fcs) {
      Spec s;
      s.single_segment = false;
      s.content_size_flag = fcs;
      s.content_size = content.size();
      s.window_descriptor = static_cast<std::uint8_t>(1 << 3 | 5);  // 2^11 + 5 * 2^8
      s.dict_flag = dict;
      s.dict_id = ids[dict];
      s.checksum = (dict + fcs) % 2 == 0;
      const int fcs_bytes[4] = {0, 2, 4, 8}, dict_bytes[4] = {0, 1, 2, 4};
      cases.push_back({s, static_cast<std::uint8_t>(6 + fcs_bytes[fcs] + dict_bytes[dict])});
    }
    // Single segment: 1, 2, 4 or 8 bytes of content size and no window descriptor.
    for (int fcs = 0; fcs < 4; ++fcs) {
      Spec s;
      s.single_segment = true;
      s.content_size_flag = fcs;
      s.content_size = content.size();
      s.dict_flag = dict;
      s.dict_id = ids[dict];
      s.checksum = (dict + fcs) % 2 == 1;
      const int fcs_bytes[4] = {1, 2, 4, 8}, dict_bytes[4] = {0, 1, 2, 4};
      cases.push_back({s, static_cast<std::uint8_t>(5 + fcs_bytes[fcs] + dict_bytes[dict])});
    }
  }
  // content.size() is 1307: a 1-byte content size cannot hold it.
  for (Case& c : cases) {
    if (c.spec.single_segment && c.spec.content_size_flag == 0) {
      c.spec.content_size = 255;
    }
  }
  for (const Case& c : cases) {
    const Spec& s = c.spec;
    SCOPED_TRACE("fcs flag " + std::to_string(s.content_size_flag) + " single " + std::to_string(s.single_segment) +
                 " dict flag " + std::to_string(s.dict_flag));
    // 255 bytes of content for the 1-byte content size.
    const std::vector<SpecBlock> use =
        s.content_size == 255 ? std::vector<SpecBlock>{{zf::BlockType::rle, 200, 'a'}, {zf::BlockType::raw, 55, 9}}
                              : blocks;
    const Bytes frame = write_frame(s, use);
    zf::Parsed p;
    ASSERT_TRUE(parse(frame, &p).ok());
    ASSERT_EQ(p.frames.size(), 1u);
    const zf::Frame& f = p.frames[0];
    EXPECT_EQ(f.kind, zf::FrameKind::zstd);
    EXPECT_EQ(f.size, frame.size());
    EXPECT_EQ(f.header.header_size, c.header_size);
    EXPECT_EQ(f.header.single_segment, s.single_segment);
    EXPECT_EQ(f.header.has_checksum, s.checksum);
    EXPECT_EQ(f.header.dict_id, s.dict_id);
    EXPECT_EQ(f.header.has_content_size, s.single_segment || s.content_size_flag != 0);
    if (f.header.has_content_size) EXPECT_EQ(f.header.content_size, s.content_size);
    const std::uint64_t window = s.single_segment ? s.content_size : 2048 + 5 * 256;
    EXPECT_EQ(f.header.window_size, window);
    EXPECT_EQ(f.header.block_max, window);
    EXPECT_EQ(f.block_count, use.size());
    EXPECT_EQ(f.compressed_blocks, 0u);
    expect_accounts_for_every_byte(frame, p);
    const Bytes content_here = content_of(use);
    EXPECT_EQ(decode_known(frame, p, f), content_here);
    if (s.checksum) EXPECT_EQ(f.checksum, zf::content_checksum({content_here.data(), content_here.size()}));
#if TANDEM_TEST_HAVE_ZSTD
    ZSTD_frameHeader zh;
    ASSERT_EQ(ZSTD_getFrameHeader(&zh, frame.data(), frame.size()), 0u);
    EXPECT_EQ(zh.frameType, ZSTD_frame);
    EXPECT_EQ(zh.headerSize, f.header.header_size);
    EXPECT_EQ(zh.dictID, f.header.dict_id);
    EXPECT_EQ(zh.checksumFlag != 0, f.header.has_checksum);
    EXPECT_EQ(zh.windowSize, f.header.window_size);
    EXPECT_EQ(zh.blockSizeMax, f.header.block_max);
    EXPECT_EQ(zh.frameContentSize, f.header.has_content_size ? f.header.content_size : ZSTD_CONTENTSIZE_UNKNOWN);
    EXPECT_EQ(ZSTD_findFrameCompressedSize(frame.data(), frame.size()), frame.size());
    if (s.dict_id == 0) {  // libzstd wants the dictionary a frame names
      Bytes out(content_here.size() + 1);
      const std::size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
      ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
      out.resize(n);
      EXPECT_EQ(out, content_here);
    }
#endif
  }
}

TEST(ZstdFrame, SkippableAndConcatenatedFrames) {
  Spec s;
  s.checksum = true;
  const std::vector<SpecBlock> a = {{zf::BlockType::raw, 5, 'a'}};
  const std::vector<SpecBlock> b = {{zf::BlockType::rle, 100, 'b'}, {zf::BlockType::raw, 3, 'c'}};
  s.content_size = 5;
  const Bytes fa = write_frame(s, a);
  s.content_size = 103;
  const Bytes fb = write_frame(s, b);
  const Bytes in = cat({skippable(0, 0), fa, skippable(0xF, 17), skippable(3, 1), fb, skippable(9, 4)});
  zf::Parsed p;
  ASSERT_TRUE(parse(in, &p).ok());
  ASSERT_EQ(p.frames.size(), 6u);
  const zf::FrameKind kinds[6] = {zf::FrameKind::skippable, zf::FrameKind::zstd, zf::FrameKind::skippable,
                                  zf::FrameKind::skippable, zf::FrameKind::zstd, zf::FrameKind::skippable};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.frames[i].kind, kinds[i]) << i;
  EXPECT_EQ(p.frames[0].skippable_size(), 0u);
  EXPECT_EQ(p.frames[2].magic, 0x184D2A5Fu);
  EXPECT_EQ(p.frames[2].skippable_offset(), 8 + fa.size() + 8);
  EXPECT_EQ(p.frames[2].skippable_size(), 17u);
  EXPECT_EQ(p.frames[3].skippable_size(), 1u);
  EXPECT_EQ(p.frames[5].skippable_size(), 4u);
  EXPECT_EQ(p.frames[1].block_count, 1u);
  EXPECT_EQ(p.frames[4].block_count, 2u);
  EXPECT_EQ(p.frames[4].first_block, 1u);
  expect_accounts_for_every_byte(in, p);
  EXPECT_EQ(decode_known(in, p, p.frames[4]), content_of(b));
#if TANDEM_TEST_HAVE_ZSTD
  for (const zf::Frame& f : p.frames) {
    EXPECT_EQ(ZSTD_findFrameCompressedSize(in.data() + f.offset, in.size() - f.offset), f.size);
  }
  Bytes out(200);
  const std::size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(n);
  EXPECT_EQ(out, cat({content_of(a), content_of(b)}));
#endif
  // Only skippable frames: ok, no zstd frame.
  const Bytes only = cat({skippable(1, 2), skippable(2, 0)});
  ASSERT_TRUE(parse(only, &p).ok());
  EXPECT_EQ(p.frames.size(), 2u);
  EXPECT_TRUE(p.blocks.empty());
}

// -------------------------------------------------------- malformed inputs

struct Bad {
  std::string name;
  Bytes in;
  StatusCode code;
  const char* reason_part;  // a part of the reason
  // libzstd (1.5.4 at least) decodes it: its one-shot decoder copies raw and
  // RLE blocks over the block maximum that RFC 8878 sets; tandem follows the
  // RFC.
  bool libzstd_accepts = false;
};

void expect_status(const Bad& c, const zf::Limits& limits = {}) {
  zf::Parsed p;
  const Status s = parse(c.in, &p, limits);
  EXPECT_STATUS(s, c.code) << c.name;
  ASSERT_NE(s.reason, nullptr) << c.name;
  EXPECT_NE(std::string(s.reason).find(c.reason_part), std::string::npos) << c.name << ": " << s.reason;
  EXPECT_LE(p.end_offset, c.in.size());
}

Bytes valid_frame() {
  Spec s;
  s.single_segment = false;
  s.window_descriptor = 0x08;  // 2 KiB
  s.content_size_flag = 1;
  s.content_size = 2000 + 3 + 1500;
  s.checksum = true;
  return write_frame(s, {{zf::BlockType::raw, 2000, 0}, {zf::BlockType::raw, 3, 1}, {zf::BlockType::rle, 1500, 'z'}});
}

TEST(ZstdFrame, EveryTruncationIsTruncated) {
  std::vector<Bytes> frames = {valid_frame(), cat({skippable(5, 10), valid_frame()})};
  Spec dict;
  dict.dict_flag = 3;
  dict.dict_id = 77;
  dict.content_size_flag = 3;
  dict.content_size = 10;
  frames.push_back(write_frame(dict, {{zf::BlockType::rle, 10, 1}}));
  for (const Bytes& full : frames) {
    zf::Parsed p;
    ASSERT_TRUE(parse(full, &p).ok());
    std::vector<std::uint64_t> boundaries;
    for (const zf::Frame& f : p.frames) boundaries.push_back(f.offset + f.size);
    for (std::size_t n = 0; n < full.size(); ++n) {
      const Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
      bool boundary = false;
      for (const std::uint64_t b : boundaries) boundary = boundary || b == n;
      const Status s = parse(cut, &p);
      if (boundary) {
        EXPECT_TRUE(s.ok()) << n;
      } else {
        EXPECT_STATUS(s, StatusCode::truncated) << "cut at " << n;
      }
#if TANDEM_TEST_HAVE_ZSTD
      if (!boundary && n > 0) {  // libzstd agrees that the cut frame is not whole
        std::size_t at = 0;
        bool error = false;
        while (at < cut.size() && !error) {
          const std::size_t fs = ZSTD_findFrameCompressedSize(cut.data() + at, cut.size() - at);
          error = ZSTD_isError(fs);
          if (!error) at += fs;
        }
        EXPECT_TRUE(error) << "cut at " << n;
      }
#endif
    }
  }
}

TEST(ZstdFrame, MalformedFramesGetTheirStatus) {
  const Bytes good = valid_frame();
  std::vector<Bad> cases;
  {
    Bytes b = good;
    b[4] |= 0x08;
    cases.push_back({"reserved bit", b, StatusCode::bad_data, "reserved bit"});
  }
  {
    Bytes b = good;
    b[4] |= 0x10;  // the unused bit: ignored
    zf::Parsed p;
    EXPECT_TRUE(parse(b, &p).ok());
  }
  const std::size_t first_block = 4 + 1 + 1 + 2;  // magic, FHD, window, 2-byte content size
  {
    Bytes b = good;
    b[first_block] |= 0x06;
    cases.push_back({"reserved block type", b, StatusCode::bad_data, "reserved type"});
  }
  {
    Spec s;
    s.single_segment = false;
    s.window_descriptor = 0;  // 1 KiB: blocks of at most 1 KiB
    cases.push_back({"block over the window", write_frame(s, {{zf::BlockType::raw, 1025, 0}}), StatusCode::bad_data,
                     "block maximum", true});
    cases.push_back({"RLE block over the window", write_frame(s, {{zf::BlockType::rle, 1025, 0}}),
                     StatusCode::bad_data, "block maximum", true});
    s.window_descriptor = 10 << 3;  // 1 MiB: blocks of at most 128 KiB
    cases.push_back({"block over 128 KiB", write_frame(s, {{zf::BlockType::raw, (128 << 10) + 1, 0}}),
                     StatusCode::bad_data, "block maximum", true});
    // Its one block (at 6: magic, FHD, window) made compressed, of size 2^21 - 1.
    Bytes b = write_frame(s, {{zf::BlockType::raw, 0, 0}});
    ASSERT_EQ(b.size(), 9u);
    b[6] = 0xFD;  // last, type 2, the low 5 bits of the size
    b[7] = b[8] = 0xFF;
    b.push_back(0);
    cases.push_back({"compressed block over 128 KiB", b, StatusCode::bad_data, "block maximum"});
  }
  {
    Spec s;
    s.content_size = 100;
    cases.push_back({"block over a single segment's content", write_frame(s, {{zf::BlockType::raw, 101, 0}}),
                     StatusCode::bad_data, "block maximum"});
    s.content_size = 10;
    s.single_segment = false;
    s.window_descriptor = 0;
    s.content_size_flag = 2;
    cases.push_back({"raw blocks larger than the content size", write_frame(s, {{zf::BlockType::raw, 11, 0}}),
                     StatusCode::bad_data, "more than the frame content size"});
    s.content_size = 1024 + 6;
    cases.push_back({"blocks smaller than the content size",
                     write_frame(s, {{zf::BlockType::raw, 5, 0}, {zf::BlockType::compressed, 1, 0}}),
                     StatusCode::bad_data, "cannot decode to the frame content size"});
  }
  {
    Spec s;
    s.single_segment = false;
    s.window_descriptor = 18 << 3 | 1;  // 2^28 + 2^25: over the default 128 MiB
    cases.push_back({"window over the limit", write_frame(s, {{zf::BlockType::raw, 1, 0}}), StatusCode::unsupported,
                     "window size"});
    s.single_segment = true;
    s.content_size_flag = 2;
    s.content_size = (128u << 20) + 1;
    cases.push_back({"single segment over the limit", write_frame(s, {{zf::BlockType::raw, 1, 0}}),
                     StatusCode::unsupported, "window size"});
  }
  cases.push_back({"bad magic", cat({{0x28, 0xB5, 0x2F, 0xFE}, Bytes(good.begin() + 4, good.end())}),
                   StatusCode::bad_data, "bad magic"});
  cases.push_back({"an LZ4 frame", {0x04, 0x22, 0x4D, 0x18, 0x64, 0x40, 0xA7, 0, 0, 0, 0}, StatusCode::bad_data,
                   "bad magic"});
  cases.push_back({"empty", {}, StatusCode::truncated, "empty"});
  cases.push_back({"trailing bytes", cat({good, {'h', 'e', 'l', 'l', 'o'}}), StatusCode::bad_data, "data after"});
  cases.push_back({"trailing zeros", cat({good, {0, 0}}), StatusCode::bad_data, "data after"});
  cases.push_back({"trailing magic start", cat({good, {0x28, 0xB5, 0x2F}}), StatusCode::truncated, "magic"});
  cases.push_back({"trailing skippable magic start", cat({good, {0x5C, 0x2A}}), StatusCode::truncated, "magic"});
  {
    Bytes sk = skippable(0, 10);
    sk.pop_back();
    cases.push_back({"skippable cut short", cat({good, sk}), StatusCode::truncated, "skippable"});
  }
  {
    Bytes sk = skippable(0, 0);
    sk[4] = sk[5] = sk[6] = sk[7] = 0xFF;  // 4 GiB - 1 of user data
    cases.push_back({"skippable size over the input", sk, StatusCode::truncated, "skippable"});
  }
  for (const Bad& c : cases) expect_status(c);

  // The same frames under a larger window limit: the windowed one is whole,
  // the single-segment one's block is too small for its content size.
  zf::Limits big;
  big.max_window_size = std::uint64_t{1} << 30;
  zf::Parsed p;
  auto named = [&](const std::string& name) -> const Bytes& {
    for (const Bad& c : cases) {
      if (c.name == name) return c.in;
    }
    ADD_FAILURE() << "no case " << name;
    return cases[0].in;
  };
  EXPECT_TRUE(parse(named("window over the limit"), &p, big).ok());
  EXPECT_STATUS(parse(named("single segment over the limit"), &p, big), StatusCode::bad_data);
  zf::Limits few;
  few.max_blocks = 2;
  expect_status({"too many blocks", good, StatusCode::unsupported, "blocks"}, few);
  few.max_blocks = 3;
  EXPECT_TRUE(parse(good, &p, few).ok());
  expect_status({"too many blocks over frames", cat({good, good}), StatusCode::unsupported, "blocks"}, few);
  EXPECT_EQ(p.frames.size(), 1u);
  few.max_frames = 2;
  few.max_blocks = 100;
  expect_status({"too many frames", cat({good, skippable(0, 0), good}), StatusCode::unsupported, "frames"}, few);

  // A failed parse says where: the frame that failed, after the good ones.
  const Status s = parse(cat({good, skippable(1, 1), good, {'x', 'y', 'z', 'w'}}), &p);
  EXPECT_STATUS(s, StatusCode::bad_data);
  EXPECT_EQ(p.frames.size(), 3u);
  EXPECT_EQ(p.blocks.size(), 6u);
  EXPECT_EQ(p.end_offset, 2 * good.size() + 9);
  Bytes cut = cat({good, good});
  cut.pop_back();
  EXPECT_STATUS(parse(cut, &p), StatusCode::truncated);
  EXPECT_EQ(p.frames.size(), 1u);
  EXPECT_EQ(p.blocks.size(), 3u);
  EXPECT_EQ(p.end_offset, good.size());

#if TANDEM_TEST_HAVE_ZSTD
  // libzstd refuses the frames that are bad by the format too.
  for (const Bad& c : cases) {
    if (c.code == StatusCode::unsupported || c.in.empty() || c.libzstd_accepts) continue;
    Bytes out(1 << 20);
    const std::size_t n = ZSTD_decompress(out.data(), out.size(), c.in.data(), c.in.size());
    EXPECT_TRUE(ZSTD_isError(n)) << c.name;
  }
#endif
}

TEST(ZstdFrame, FrameHeaderOnItsOwn) {
  zf::FrameHeader h;
  const Bytes good = valid_frame();
  ASSERT_TRUE(zf::parse_frame_header({good.data(), good.size()}, {}, &h).ok());
  EXPECT_EQ(h.header_size, 8u);
  EXPECT_EQ(h.window_size, 2048u);
  EXPECT_EQ(h.content_size, 3503u);
  EXPECT_EQ(h.content_size_bytes, 2u);
  const Bytes sk = skippable(0, 0);
  EXPECT_STATUS(zf::parse_frame_header({sk.data(), sk.size()}, {}, &h), StatusCode::bad_data);
  for (std::size_t n = 0; n < 8; ++n) {
    EXPECT_STATUS(zf::parse_frame_header({good.data(), n}, {}, &h), StatusCode::truncated) << n;
  }
  // The largest window descriptor: 2^41 + 7 * 2^38.
  Spec s;
  s.single_segment = false;
  s.window_descriptor = 0xFF;
  const Bytes huge = write_frame(s, {{zf::BlockType::raw, 0, 0}});
  zf::Limits any;
  any.max_window_size = ~std::uint64_t{0};
  ASSERT_TRUE(zf::parse_frame_header({huge.data(), huge.size()}, any, &h).ok());
  EXPECT_EQ(h.window_size, (std::uint64_t{1} << 41) + 7 * (std::uint64_t{1} << 38));
  EXPECT_EQ(h.block_max, 128u << 10);
}

TEST(ZstdFrame, DecodeKnownBlocksStopsAtCompressedAndChecksRoom) {
  Spec s;
  s.single_segment = false;
  s.window_descriptor = 10 << 3;
  Bytes frame = write_frame(s, {{zf::BlockType::raw, 4, 1}, {zf::BlockType::rle, 6, 'q'},
                                {zf::BlockType::compressed, 2, 0}, {zf::BlockType::raw, 3, 0}});
  zf::Parsed p;
  ASSERT_TRUE(parse(frame, &p).ok());
  const auto blocks = p.blocks_of(p.frames[0]);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(p.frames[0].compressed_blocks, 1u);
  EXPECT_EQ(p.frames[0].known_content, 13u);
  Bytes out(100, 0xEE);
  std::size_t done = 9, written = 9;
  ASSERT_TRUE(zf::decode_known_blocks({frame.data(), frame.size()}, blocks, {out.data(), out.size()}, &done, &written)
                  .ok());
  EXPECT_EQ(done, 2u);
  EXPECT_EQ(written, 10u);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + 10), Bytes({1, 2, 3, 4, 'q', 'q', 'q', 'q', 'q', 'q'}));
  EXPECT_EQ(out[10], 0xEE);
  // The blocks after the compressed one, on their own.
  ASSERT_TRUE(
      zf::decode_known_blocks({frame.data(), frame.size()}, blocks.subspan(3), {out.data(), out.size()}, &done, &written)
          .ok());
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(written, 3u);
  // No room for the RLE block: the raw one is written, and says so.
  EXPECT_STATUS(zf::decode_known_blocks({frame.data(), frame.size()}, blocks, {out.data(), 9}, &done, &written),
                StatusCode::output_too_small);
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(written, 4u);
  // A record that is not of this input.
  std::vector<zf::Block> lying(blocks.begin(), blocks.end());
  lying[0].payload_offset = frame.size() - 1;
  EXPECT_STATUS(zf::decode_known_blocks({frame.data(), frame.size()}, lying, {out.data(), out.size()}, &done, &written),
                StatusCode::bad_data);
  lying[0].payload_offset = ~std::uint64_t{0};
  EXPECT_STATUS(zf::decode_known_blocks({frame.data(), frame.size()}, lying, {out.data(), out.size()}, &done, &written),
                StatusCode::bad_data);
}

// ------------------------------------------------- frames written by libzstd

#if TANDEM_TEST_HAVE_ZSTD

struct Written {
  int level = 3;
  bool checksum = false;
  bool content_size = true;
  int window_log = 0;  // 0: the level's
};

Bytes zstd_compress(const Bytes& in, const Written& w) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, w.level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, w.checksum ? 1 : 0);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, w.content_size ? 1 : 0);
  if (w.window_log) ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, w.window_log);
  Bytes out(ZSTD_compressBound(in.size()));
  const std::size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
  ZSTD_freeCCtx(c);
  EXPECT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// What each block of the frame at in[at] decodes to, by libzstd's buffer-less
// decoder, which takes a frame block by block (an empty block has no stage
// of its own: it stays 0).
std::vector<std::size_t> libzstd_block_sizes(const Bytes& in, std::size_t at, std::size_t content) {
  std::vector<std::size_t> sizes;
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_decompressBegin(d);
  Bytes out(content + 1);
  std::size_t written = 0;
  for (;;) {
    const std::size_t n = ZSTD_nextSrcSizeToDecompress(d);
    if (n == 0) break;
    const ZSTD_nextInputType_e type = ZSTD_nextInputType(d);
    const std::size_t r = ZSTD_decompressContinue(d, out.data() + written, out.size() - written, in.data() + at, n);
    if (ZSTD_isError(r)) {
      ADD_FAILURE() << ZSTD_getErrorName(r);
      break;
    }
    at += n;
    if (type == ZSTDnit_blockHeader) sizes.push_back(0);
    if (type == ZSTDnit_block || type == ZSTDnit_lastBlock) sizes.back() = r;
    written += r;
  }
  ZSTD_freeDCtx(d);
  return sizes;
}

struct Seen {
  int raw = 0, rle = 0, compressed = 0, single = 0, windowed = 0, checksum = 0, multi = 0;
};

// A frame that libzstd wrote from `data`: the parse says what libzstd says.
void check_libzstd_frame(const Bytes& frame, const Bytes& data, const Written& w, Seen* seen) {
  zf::Parsed p;
  ASSERT_TRUE(parse(frame, &p).ok());
  ASSERT_EQ(p.frames.size(), 1u);
  const zf::Frame& f = p.frames[0];
  expect_accounts_for_every_byte(frame, p);
  EXPECT_EQ(ZSTD_findFrameCompressedSize(frame.data(), frame.size()), f.size);
  ZSTD_frameHeader zh;
  ASSERT_EQ(ZSTD_getFrameHeader(&zh, frame.data(), frame.size()), 0u);
  EXPECT_EQ(zh.headerSize, f.header.header_size);
  EXPECT_EQ(zh.windowSize, f.header.window_size);
  EXPECT_EQ(zh.blockSizeMax, f.header.block_max);
  EXPECT_EQ(zh.dictID, 0u);
  EXPECT_EQ(f.header.dict_id_bytes, 0u);
  EXPECT_EQ(zh.checksumFlag != 0, f.header.has_checksum);
  EXPECT_EQ(f.header.has_checksum, w.checksum);
  EXPECT_EQ(f.header.has_content_size, w.content_size);
  EXPECT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()),
            f.header.has_content_size ? f.header.content_size : ZSTD_CONTENTSIZE_UNKNOWN);
  if (f.header.has_content_size) EXPECT_EQ(f.header.content_size, data.size());
  if (f.header.has_checksum) EXPECT_EQ(f.checksum, zf::content_checksum({data.data(), data.size()}));

  const std::vector<std::size_t> sizes = libzstd_block_sizes(frame, 0, data.size());
  const auto blocks = p.blocks_of(f);
  ASSERT_EQ(sizes.size(), blocks.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const zf::Block& b = blocks[i];
    if (b.decoded_size_known()) {
      EXPECT_EQ(b.decoded_size, sizes[i]) << "block " << i;
      // Its content where libzstd puts it.
      Bytes one(b.decoded_size);
      std::size_t done = 0, written = 0;
      ASSERT_TRUE(zf::decode_known_blocks({frame.data(), frame.size()}, blocks.subspan(i, 1), {one.data(), one.size()},
                                          &done, &written)
                      .ok());
      EXPECT_EQ(written, b.decoded_size);
      EXPECT_TRUE(std::equal(one.begin(), one.end(), data.begin() + static_cast<std::ptrdiff_t>(at))) << "block " << i;
    } else {
      EXPECT_LE(sizes[i], f.header.block_max);
    }
    at += sizes[i];
    seen->raw += b.type == zf::BlockType::raw;
    seen->rle += b.type == zf::BlockType::rle;
    seen->compressed += b.type == zf::BlockType::compressed;
  }
  EXPECT_EQ(at, data.size());
  if (f.content_known()) EXPECT_EQ(decode_known(frame, p, f), data);
  seen->single += f.header.single_segment;
  seen->windowed += !f.header.single_segment;
  seen->checksum += f.header.has_checksum;
  seen->multi += blocks.size() > 1;
}

std::vector<std::pair<std::string, Bytes>> sample_inputs() {
  using namespace tandem::test;
  return {{"empty", {}},
          {"one byte", {42}},
          {"random 128 KiB", random_bytes(128 << 10, 1)},
          {"random 128 KiB + 1", random_bytes((128 << 10) + 1, 2)},
          {"random 300 KiB", random_bytes(300 << 10, 3)},
          {"text 300 KiB", text_like_bytes(300 << 10, 4)},
          {"mixed 200 KiB", mixed_bytes(200 << 10, 5)},
          {"constant 600 KiB", constant_bytes(600 << 10, 'c')},
          {"random then a run", cat({random_bytes(128 << 10, 6), constant_bytes(400 << 10, 0)})}};
}

TEST(ZstdFrame, FramesWrittenByLibzstd) {
  Seen seen;
  for (const auto& [name, data] : sample_inputs()) {
    for (const int level : {-5, 1, 3, 9, 19}) {
      for (int shape = 0; shape < 4; ++shape) {
        Written w;
        w.level = level;
        w.checksum = shape & 1;
        w.content_size = (shape & 2) == 0;
        if (level == 19 && data.size() > 1000) w.window_log = 10 + shape;  // windowed, blocks of 1-8 KiB
        SCOPED_TRACE(name + " level " + std::to_string(level) + " shape " + std::to_string(shape));
        const Bytes frame = zstd_compress(data, w);
        ASSERT_FALSE(frame.empty());
        check_libzstd_frame(frame, data, w, &seen);
      }
    }
  }
  // The inputs reach every kind of block and header.
  EXPECT_GT(seen.raw, 0);
  EXPECT_GT(seen.rle, 0);
  EXPECT_GT(seen.compressed, 0);
  EXPECT_GT(seen.single, 0);
  EXPECT_GT(seen.windowed, 0);
  EXPECT_GT(seen.checksum, 0);
  EXPECT_GT(seen.multi, 0);
}

TEST(ZstdFrame, EmptyContentFrame) {
  Written w;
  w.checksum = true;
  const Bytes frame = zstd_compress({}, w);
  zf::Parsed p;
  ASSERT_TRUE(parse(frame, &p).ok());
  ASSERT_EQ(p.frames.size(), 1u);
  const zf::Frame& f = p.frames[0];
  EXPECT_TRUE(f.header.single_segment);
  EXPECT_TRUE(f.header.has_content_size);
  EXPECT_EQ(f.header.content_size, 0u);
  EXPECT_EQ(f.header.window_size, 0u);
  EXPECT_EQ(f.header.block_max, 0u);
  ASSERT_EQ(f.block_count, 1u);
  EXPECT_EQ(p.blocks[0].decoded_size, 0u);
  EXPECT_TRUE(p.blocks[0].last);
  EXPECT_EQ(f.checksum, zf::content_checksum({}));
  expect_accounts_for_every_byte(frame, p);
}

TEST(ZstdFrame, ConcatenatedLibzstdFramesWithSkippableOnes) {
  std::vector<Bytes> datas;
  std::vector<Bytes> frames;
  Bytes content;
  for (const auto& [name, data] : sample_inputs()) {
    Written w;
    w.level = static_cast<int>(datas.size() % 5) * 4 - 1;
    w.checksum = datas.size() % 2;
    w.content_size = datas.size() % 3 != 0;
    frames.push_back(zstd_compress(data, w));
    datas.push_back(data);
    content.insert(content.end(), data.begin(), data.end());
  }
  Bytes in = skippable(0, 3);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    in = cat({in, frames[i]});
    if (i % 3 == 1) in = cat({in, skippable(static_cast<std::uint32_t>(i), i * 10)});
  }
  in = cat({in, skippable(0xF, 1)});
  zf::Parsed p;
  ASSERT_TRUE(parse(in, &p).ok());
  expect_accounts_for_every_byte(in, p);
  std::size_t z = 0;
  for (const zf::Frame& f : p.frames) {
    EXPECT_EQ(ZSTD_findFrameCompressedSize(in.data() + f.offset, in.size() - f.offset), f.size);
    if (f.kind != zf::FrameKind::zstd) continue;
    ASSERT_LT(z, frames.size());
    EXPECT_EQ(f.size, frames[z].size());
    if (f.header.has_content_size) EXPECT_EQ(f.header.content_size, datas[z].size());
    ++z;
  }
  EXPECT_EQ(z, frames.size());
  // libzstd reads the same input to the concatenated content.
  Bytes out(content.size() + 1);
  const std::size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  EXPECT_EQ(n, content.size());
}

TEST(ZstdFrame, EveryTruncationOfALibzstdFrameIsTruncated) {
  using namespace tandem::test;
  // Raw, RLE and compressed blocks, and a checksum.
  const Bytes data = cat({random_bytes(128 << 10, 9), constant_bytes(128 << 10, 'k'), text_like_bytes(64 << 10, 10)});
  Written w;
  w.checksum = true;
  const Bytes frame = zstd_compress(data, w);
  zf::Parsed p;
  ASSERT_TRUE(parse(frame, &p).ok());
  bool types[3] = {};
  for (const zf::Block& b : p.blocks) types[static_cast<int>(b.type)] = true;
  EXPECT_TRUE(types[0] && types[1] && types[2]);
  for (std::size_t n = 0; n < frame.size(); ++n) {
    const Status s = zf::parse({frame.data(), n}, {}, &p);
    ASSERT_STATUS(s, StatusCode::truncated) << "cut at " << n;
  }
}

TEST(ZstdFrame, FramesWrittenByTheZstdTool) {
  if (!tandem::test::have_tool("zstd")) GTEST_SKIP() << "the zstd command is not installed";
  tandem::test::TempDir dir;
  const Bytes data = cat({tandem::test::text_like_bytes(400 << 10, 7), tandem::test::constant_bytes(300 << 10, 'r'),
                          tandem::test::random_bytes(200 << 10, 8)});
  tandem::test::write_file(dir / "in", data);
  const std::string in = tandem::test::sh_quote((dir / "in").string());
  const std::string out = tandem::test::sh_quote((dir / "out.zst").string());
  for (const std::string opts : {"-1", "-3 --no-check", "-19", "--fast=3", "-3 --no-content-size", "-6 --long=20"}) {
    SCOPED_TRACE(opts);
    // From a pipe: the tool does not know the content size.
    for (const bool piped : {false, true}) {
      const std::string cmd = piped ? "cat " + in + " | zstd -q -c " + opts + " > " + out
                                    : "zstd -q -f " + opts + " " + in + " -o " + out;
      ASSERT_EQ(tandem::test::run(cmd), 0) << cmd;
      const Bytes frame = tandem::test::read_file(dir / "out.zst");
      Written w;
      w.checksum = opts.find("--no-check") == std::string::npos;
      w.content_size = !piped && opts.find("--no-content-size") == std::string::npos;
      Seen seen;
      check_libzstd_frame(frame, data, w, &seen);
      EXPECT_GT(seen.multi, 0);
    }
  }
}

#else

TEST(ZstdFrame, FramesWrittenByLibzstd) { GTEST_SKIP() << "libzstd was not found when the tests were configured"; }

#endif

}  // namespace
