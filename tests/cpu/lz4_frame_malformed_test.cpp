// The LZ4 frame decoder against hostile input: hand-built frames with one
// fault each must fail with the exact status code of the decoder's contract,
// and random bytes, byte flips and truncations must give a status, never a
// crash (run this file under the TANDEM_SANITIZE build as well).
//
// Frames are written by hand here (headers with the right HC from XXH32,
// blocks from liblz4) so that a fault in our own encoder cannot hide a fault
// in the decoder. Every decode goes through three paths that must agree: the
// vector variant, the caller-buffer variant and the streaming API fed by a
// source that hands out exactly the bytes asked for, in fresh allocations.
#include <lz4.h>
#include <xxhash.h>

#include <cstring>
#include <memory>
#include <optional>
#include <random>

#include "format/lz4_frame_format.hpp"
#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::ConstBuffer;
using tandem::Lz4DecodeOptions;
using tandem::MutableBuffer;
using tandem::Status;
using tandem::StatusCode;
using tandem::test::Bytes;
using tandem::test::StingySource;
namespace lz4f = tandem::lz4f;

// ------------------------------------------------------------ builders ----

void put32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put64(Bytes& b, std::uint64_t v) {
  put32(b, static_cast<std::uint32_t>(v));
  put32(b, static_cast<std::uint32_t>(v >> 32));
}
void append(Bytes& b, const Bytes& more) { b.insert(b.end(), more.begin(), more.end()); }

// A frame descriptor, bit by bit, so that a test can set any field to any value.
struct Desc {
  int version = 1;  // FLG bits 7-6
  bool independent = true;
  bool block_checksum = false;
  bool content_size = false;
  bool content_checksum = false;
  bool reserved_flg = false;  // FLG bit 1
  bool dict_id = false;       // FLG bit 0
  int bsid = 4;               // BD bits 6-4
  std::uint8_t bd_reserved = 0;  // ORed into BD (bits 7 and 3-0 are reserved)
  std::uint64_t size = 0;     // content size field
  std::uint32_t dict = 0;
};

std::size_t block_max_of(const Desc& d) { return std::size_t{1} << (8 + 2 * d.bsid); }

// Magic, descriptor and HC. hc_xor != 0 corrupts HC.
Bytes header(const Desc& d, std::uint8_t hc_xor = 0) {
  Bytes b;
  put32(b, lz4f::kFrameMagic);
  const std::uint8_t flg = static_cast<std::uint8_t>(
      (d.version & 3) << 6 | d.independent << 5 | d.block_checksum << 4 | d.content_size << 3 |
      d.content_checksum << 2 | d.reserved_flg << 1 | static_cast<int>(d.dict_id));
  const std::uint8_t bd = static_cast<std::uint8_t>((d.bsid & 7) << 4 | d.bd_reserved);
  b.push_back(flg);
  b.push_back(bd);
  if (d.content_size) put64(b, d.size);
  if (d.dict_id) put32(b, d.dict);
  const std::uint8_t hc = static_cast<std::uint8_t>(XXH32(b.data() + 4, b.size() - 4, 0) >> 8);
  b.push_back(hc ^ hc_xor);
  return b;
}

Bytes lz4_block(const std::uint8_t* data, std::size_t n) {
  Bytes out(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(n))));
  const int got = LZ4_compress_default(reinterpret_cast<const char*>(data),
                                       reinterpret_cast<char*>(out.data()), static_cast<int>(n),
                                       static_cast<int>(out.size()));
  EXPECT_GT(got, 0);
  out.resize(static_cast<std::size_t>(got));
  return out;
}
Bytes lz4_block(const Bytes& data) { return lz4_block(data.data(), data.size()); }

// A block: word, payload, and XXH32 of the payload when the frame has block checksums.
void add_block(Bytes& f, const Desc& d, const Bytes& payload, bool raw, std::uint32_t checksum_xor = 0) {
  put32(f, static_cast<std::uint32_t>(payload.size()) | (raw ? lz4f::kUncompressedBit : 0));
  append(f, payload);
  if (d.block_checksum) put32(f, XXH32(payload.data(), payload.size(), 0) ^ checksum_xor);
}

void add_end(Bytes& f, const Desc& d, const Bytes& content, std::uint32_t checksum_xor = 0) {
  put32(f, 0);
  if (d.content_checksum) put32(f, XXH32(content.data(), content.size(), 0) ^ checksum_xor);
}

// A whole frame of `content` cut into blocks of `chunk` bytes (at most the
// block maximum); blocks that do not shrink are stored raw, as lz4 does.
Bytes frame(Desc d, const Bytes& content, std::size_t chunk = 0) {
  if (chunk == 0) chunk = block_max_of(d);
  if (d.content_size && d.size == 0) d.size = content.size();
  Bytes f = header(d);
  for (std::size_t at = 0; at < content.size(); at += chunk) {
    const std::size_t n = std::min(chunk, content.size() - at);
    Bytes c = lz4_block(content.data() + at, n);
    if (c.size() >= n) add_block(f, d, Bytes(content.begin() + at, content.begin() + at + n), true);
    else add_block(f, d, c, false);
  }
  add_end(f, d, content);
  return f;
}

Bytes skippable(std::uint32_t nibble, const Bytes& payload) {
  Bytes b;
  put32(b, lz4f::kSkippableMagicMin | (nibble & 0xF));
  put32(b, static_cast<std::uint32_t>(payload.size()));
  append(b, payload);
  return b;
}

Bytes legacy(const Bytes& content, std::size_t chunk = lz4f::kLegacyBlockSize) {
  Bytes b;
  put32(b, lz4f::kLegacyMagic);
  for (std::size_t at = 0; at < content.size(); at += chunk) {
    const Bytes c = lz4_block(content.data() + at, std::min(chunk, content.size() - at));
    put32(b, static_cast<std::uint32_t>(c.size()));
    append(b, c);
  }
  return b;
}

// The small frame used for exhaustive flips and truncations: 3 blocks
// (compressed, raw, compressed), block checksums, content size and checksum.
Bytes small_content() {
  Bytes c = tandem::test::text_like_bytes(180, 11);
  append(c, tandem::test::random_bytes(60, 12));
  append(c, tandem::test::constant_bytes(90, 'z'));
  return c;
}
Desc small_desc() {
  Desc d;
  d.block_checksum = true;
  d.content_checksum = true;
  d.content_size = true;
  return d;
}
Bytes small_frame() {
  const Bytes c = small_content();
  Desc d = small_desc();
  d.size = c.size();
  Bytes f = header(d);
  add_block(f, d, lz4_block(c.data(), 180), false);
  add_block(f, d, Bytes(c.begin() + 180, c.begin() + 240), true);
  add_block(f, d, lz4_block(c.data() + 240, 90), false);
  add_end(f, d, c);
  return f;
}

// ------------------------------------------------------------- decoding ----

struct Decoded {
  Status status;
  Bytes out;
};

Lz4DecodeOptions cpu_options() {
  Lz4DecodeOptions o;
  o.backend = tandem::Backend::cpu;
  return o;
}

// Decodes through all three paths; they must agree on the status code and,
// when it is ok, on the output.
Decoded decode(const Bytes& in, Lz4DecodeOptions o = cpu_options(), bool* agree = nullptr) {
  Decoded a;
  const ConstBuffer input{in.empty() ? nullptr : in.data(), in.size()};
  a.status = tandem::lz4_frame_decompress(input, &a.out, o);

  Bytes buf(1u << 20);
  std::size_t got = 0;
  const Status b = tandem::lz4_frame_decompress(input, MutableBuffer{buf.data(), buf.size()}, &got, o);

  Bytes streamed;
  StingySource src(in);
  auto sink = tandem::vector_sink(&streamed);
  const Status c = tandem::lz4_decompress_stream(src, *sink, o);
  sink.reset();  // a vector_sink may keep reserved room in the vector while it lives
  EXPECT_EQ(src.violations, 0) << "consume past what ensure() made available";

  bool same = true;
  // Within the buffer's capacity the buffer variant must say the same thing,
  // except that it may see early (from a content size field) that the buffer
  // is too small for a frame that fails anyway.
  const bool early_too_small = !a.status.ok() && b.code == StatusCode::output_too_small;
  if (a.out.size() <= buf.size() && !early_too_small) {
    EXPECT_EQ(static_cast<int>(b.code), static_cast<int>(a.status.code))
        << "buffer variant: " << b.to_string() << " vs vector variant: " << a.status.to_string();
    same = same && b.code == a.status.code;
    if (b.ok() && a.status.ok()) {
      EXPECT_EQ(got, a.out.size());
      EXPECT_TRUE(std::equal(a.out.begin(), a.out.end(), buf.begin()));
    }
  }
  EXPECT_LE(got, buf.size());
  EXPECT_EQ(static_cast<int>(c.code), static_cast<int>(a.status.code))
      << "stream: " << c.to_string() << " vs vector variant: " << a.status.to_string();
  same = same && c.code == a.status.code;
  if (c.ok() && a.status.ok()) EXPECT_EQ(streamed, a.out);
  if (agree) *agree = same;
  return a;
}

Status status_of(const Bytes& in, Lz4DecodeOptions o = cpu_options()) { return decode(in, o).status; }

// ----------------------------------------------------- sanity of builders ----

TEST(Lz4FrameMalformed, HandBuiltFramesAreValid) {
  // The control: every builder above makes frames that decode, so the faults
  // below are the only reason for their failures.
  const Bytes c = small_content();
  Decoded d = decode(small_frame());
  ASSERT_STATUS(d.status, StatusCode::ok);
  EXPECT_EQ(d.out, c);

  Desc plain;
  d = decode(frame(plain, c));
  ASSERT_STATUS(d.status, StatusCode::ok);
  EXPECT_EQ(d.out, c);

  d = decode(legacy(c));
  ASSERT_STATUS(d.status, StatusCode::ok);
  EXPECT_EQ(d.out, c);

  for (int bsid = 4; bsid <= 7; ++bsid) {
    Desc x;
    x.bsid = bsid;
    x.content_checksum = true;
    d = decode(frame(x, c));
    ASSERT_STATUS(d.status, StatusCode::ok) << "bsid " << bsid;
    EXPECT_EQ(d.out, c);
  }
}

TEST(Lz4FrameMalformed, FrameWithNoBlocksIsEmpty) {
  Desc d;
  d.content_checksum = true;
  d.content_size = true;
  Decoded r = decode(frame(d, {}));
  EXPECT_STATUS(r.status, StatusCode::ok);
  EXPECT_TRUE(r.out.empty());
}

// ------------------------------------------------------------- truncated ----

TEST(Lz4FrameMalformed, EmptyInputIsTruncated) {
  EXPECT_STATUS(status_of({}), StatusCode::truncated);
  // A non-null pointer with size 0 too.
  const std::uint8_t byte = 0x04;
  Bytes out;
  EXPECT_STATUS(tandem::lz4_frame_decompress(ConstBuffer{&byte, 0}, &out, cpu_options()),
                StatusCode::truncated);
}

TEST(Lz4FrameMalformed, EveryStrictPrefixOfASmallFrameIsTruncated) {
  // Ends inside the magic, the descriptor, a block word, block data, a block
  // checksum, the end mark and the content checksum.
  const Bytes f = small_frame();
  for (std::size_t n = 1; n < f.size(); ++n) {
    EXPECT_STATUS(status_of(Bytes(f.begin(), f.begin() + n)), StatusCode::truncated)
        << "prefix of " << n << " of " << f.size() << " bytes";
  }
}

TEST(Lz4FrameMalformed, PrefixesOfAnEncodedMultiBlockFrameAreTruncated) {
  const Bytes data = tandem::test::mixed_bytes(300000, 5);
  tandem::Lz4FrameOptions o;
  o.block_size = 64 << 10;
  o.block_checksum = true;
  o.content_checksum = true;
  o.threads = 1;
  Bytes f;
  ASSERT_STATUS(tandem::lz4_frame_compress({data.data(), data.size()}, &f, o), StatusCode::ok);
  std::vector<std::size_t> cuts;
  for (std::size_t n = 1; n < 40; ++n) cuts.push_back(n);
  for (std::size_t n = 40; n < f.size(); n += 4093) cuts.push_back(n);
  for (std::size_t n = f.size() - 20; n < f.size(); ++n) cuts.push_back(n);
  // Just before and inside each block word: walk the blocks.
  lz4f::FrameHeader h;
  ASSERT_STATUS(lz4f::parse_frame_header(f.data(), f.size(), &h), StatusCode::ok);
  std::size_t at = h.header_size;
  while (at + 4 <= f.size()) {
    const std::uint32_t word = lz4f::read_le32(&f[at]);
    if (word == 0) break;
    for (std::size_t k = 0; k <= 5; ++k) cuts.push_back(at + k);
    at += 4 + (word & ~lz4f::kUncompressedBit) + (h.block_checksum ? 4 : 0);
    cuts.push_back(at - 1);
  }
  for (std::size_t n : cuts) {
    if (n == 0 || n >= f.size()) continue;
    Lz4DecodeOptions o = cpu_options();
    o.threads = 2;
    EXPECT_STATUS(status_of(Bytes(f.begin(), f.begin() + n), o), StatusCode::truncated)
        << "prefix of " << n << " of " << f.size();
  }
}

TEST(Lz4FrameMalformed, TruncatedLegacyFrame) {
  const Bytes c = tandem::test::text_like_bytes(5000, 3);
  const Bytes f = legacy(c);
  // Inside the magic, inside the first block size, inside the block.
  for (std::size_t n : {std::size_t{2}, std::size_t{5}, std::size_t{7}, std::size_t{20}, f.size() - 1}) {
    EXPECT_STATUS(status_of(Bytes(f.begin(), f.begin() + n)), StatusCode::truncated) << "prefix " << n;
  }
}

TEST(Lz4FrameMalformed, SkippableFramePastTheEndIsTruncated) {
  Bytes s = skippable(0, Bytes(100, 7));
  EXPECT_STATUS(status_of(Bytes(s.begin(), s.end() - 1)), StatusCode::truncated);
  EXPECT_STATUS(status_of(Bytes(s.begin(), s.begin() + 6)), StatusCode::truncated)
      << "size field cut";
  // After a valid frame, too.
  Bytes f = small_frame();
  append(f, Bytes(s.begin(), s.end() - 50));
  EXPECT_STATUS(status_of(f), StatusCode::truncated);
  // A size field that promises 4 GiB.
  Bytes huge;
  put32(huge, lz4f::kSkippableMagicMin + 3);
  put32(huge, 0xFFFFFFFFu);
  append(huge, Bytes(16, 1));
  EXPECT_STATUS(status_of(huge), StatusCode::truncated);
}

// ----------------------------------------------------------------- magic ----

TEST(Lz4FrameMalformed, UnknownMagicIsBadData) {
  EXPECT_STATUS(status_of(Bytes{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'}), StatusCode::bad_data);
  Bytes zstd_magic;
  put32(zstd_magic, 0xFD2FB528u);
  append(zstd_magic, Bytes(16, 0));
  EXPECT_STATUS(status_of(zstd_magic), StatusCode::bad_data);
  // One off from the frame magic, and a skippable-looking magic one nibble out.
  Bytes near;
  put32(near, lz4f::kFrameMagic + 1);
  append(near, Bytes(16, 0));
  EXPECT_STATUS(status_of(near), StatusCode::bad_data);
  Bytes near_skip;
  put32(near_skip, lz4f::kSkippableMagicMin + 0x10);
  put32(near_skip, 0);
  EXPECT_STATUS(status_of(near_skip), StatusCode::bad_data);
}

TEST(Lz4FrameMalformed, TrailingGarbageAfterAValidFrameIsBadData) {
  for (const Bytes& garbage : {Bytes{'g', 'a', 'r', 'b', 'a', 'g', 'e', '!'}, Bytes(4, 0),
                               Bytes(64, 0xAB), tandem::test::random_bytes(1000, 77)}) {
    Bytes f = small_frame();
    append(f, garbage);
    EXPECT_STATUS(status_of(f), StatusCode::bad_data) << garbage.size() << " bytes of garbage";
  }
  Bytes l = legacy(tandem::test::text_like_bytes(1000, 1));
  Bytes f = small_frame();
  append(f, Bytes{'j', 'u', 'n', 'k', 'j', 'u', 'n', 'k'});
  append(l, f);  // legacy, frame, garbage
  EXPECT_STATUS(status_of(l), StatusCode::bad_data);
}

// ------------------------------------------------------------ descriptor ----

TEST(Lz4FrameMalformed, VersionOtherThan01IsUnsupported) {
  const Bytes c = small_content();
  for (int v : {0, 2, 3}) {
    Desc d;
    d.version = v;
    EXPECT_STATUS(status_of(frame(d, c)), StatusCode::unsupported) << "version " << v;
  }
}

TEST(Lz4FrameMalformed, DictionaryIdIsUnsupported) {
  Desc d;
  d.dict_id = true;
  d.dict = 0x12345678;
  EXPECT_STATUS(status_of(frame(d, small_content())), StatusCode::unsupported);
  d.content_size = true;
  EXPECT_STATUS(status_of(frame(d, small_content())), StatusCode::unsupported);
}

TEST(Lz4FrameMalformed, ReservedFlgBitIsBadData) {
  Desc d;
  d.reserved_flg = true;
  EXPECT_STATUS(status_of(frame(d, small_content())), StatusCode::bad_data);
}

TEST(Lz4FrameMalformed, ReservedBdBitsAreBadData) {
  for (std::uint8_t bit : {0x80, 0x08, 0x04, 0x02, 0x01}) {
    Desc d;
    d.bd_reserved = bit;
    EXPECT_STATUS(status_of(frame(d, small_content())), StatusCode::bad_data)
        << "BD bit 0x" << std::hex << int{bit};
  }
}

TEST(Lz4FrameMalformed, BlockSizeIds0To3AreBadData) {
  for (int id = 0; id <= 3; ++id) {
    Desc d;
    d.bsid = id;
    // No blocks, so the block size does not matter for the blocks themselves.
    Bytes f = header(d);
    add_end(f, d, {});
    EXPECT_STATUS(status_of(f), StatusCode::bad_data) << "block size id " << id;
  }
}

TEST(Lz4FrameMalformed, WrongHeaderChecksumIsChecksumMismatch) {
  for (std::uint8_t x : {0x01, 0x80, 0xFF}) {
    Desc d = small_desc();
    const Bytes c = small_content();
    d.size = c.size();
    Bytes f = header(d, x);
    add_block(f, d, lz4_block(c), false);
    add_end(f, d, c);
    EXPECT_STATUS(status_of(f), StatusCode::checksum_mismatch) << "HC xor " << int{x};
  }
}

// ------------------------------------------------------------- checksums ----

TEST(Lz4FrameMalformed, WrongBlockChecksumIsChecksumMismatch) {
  const Bytes c = small_content();
  for (bool raw : {false, true}) {
    Desc d;
    d.block_checksum = true;
    Bytes f = header(d);
    add_block(f, d, Bytes(c.begin(), c.begin() + 100), true);
    add_block(f, d, raw ? Bytes(c.begin() + 100, c.end()) : lz4_block(c.data() + 100, c.size() - 100),
              raw, 0x00010000u);
    add_end(f, d, c);
    EXPECT_STATUS(status_of(f), StatusCode::checksum_mismatch) << (raw ? "raw" : "compressed");
    Lz4DecodeOptions o = cpu_options();
    o.verify_checksums = false;
    Decoded r = decode(f, o);
    EXPECT_STATUS(r.status, StatusCode::ok) << "verify_checksums=false";
    EXPECT_EQ(r.out, c);
  }
}

TEST(Lz4FrameMalformed, WrongContentChecksumIsChecksumMismatch) {
  const Bytes c = small_content();
  Desc d;
  d.content_checksum = true;
  Bytes f = header(d);
  add_block(f, d, lz4_block(c), false);
  add_end(f, d, c, 0x80000000u);
  EXPECT_STATUS(status_of(f), StatusCode::checksum_mismatch);
  Lz4DecodeOptions o = cpu_options();
  o.verify_checksums = false;
  Decoded r = decode(f, o);
  EXPECT_STATUS(r.status, StatusCode::ok) << "verify_checksums=false";
  EXPECT_EQ(r.out, c);
}

TEST(Lz4FrameMalformed, ChecksumOfTheEmptyContent) {
  Desc d;
  d.content_checksum = true;
  Bytes f = header(d);
  add_end(f, d, {}, 1);
  EXPECT_STATUS(status_of(f), StatusCode::checksum_mismatch);
}

// ---------------------------------------------------------------- blocks ----

TEST(Lz4FrameMalformed, BlockAnnouncingMoreThanTheMaximumIsBadData) {
  for (bool raw : {true, false}) {
    Desc d;  // 64 KiB blocks
    const Bytes payload = tandem::test::random_bytes(65537, 9);
    Bytes f = header(d);
    add_block(f, d, payload, raw);
    add_end(f, d, {});
    EXPECT_STATUS(status_of(f), StatusCode::bad_data) << (raw ? "raw" : "compressed");
  }
  // A huge announcement with little behind it: the size check comes first.
  for (std::uint32_t word : {0x7FFFFFFFu, 0xFFFFFFFFu, 0x00400001u, 0x80400001u}) {
    Desc d;
    d.bsid = 7;
    Bytes f = header(d);
    put32(f, word);
    append(f, Bytes(32, 0x11));
    EXPECT_STATUS(status_of(f), StatusCode::bad_data) << "word 0x" << std::hex << word;
  }
}

TEST(Lz4FrameMalformed, RawBlockOfExactlyTheMaximumIsValid) {
  Desc d;
  const Bytes payload = tandem::test::random_bytes(65536, 10);
  Bytes f = header(d);
  add_block(f, d, payload, true);
  add_end(f, d, payload);
  Decoded r = decode(f);
  ASSERT_STATUS(r.status, StatusCode::ok);
  EXPECT_EQ(r.out, payload);
}

TEST(Lz4FrameMalformed, CompressedBlockDecodingPastTheMaximumIsBadData) {
  // 70000 zeros compress to a small block, but the frame allows 64 KiB.
  const Bytes zeros(70000, 0);
  Desc d;
  Bytes f = header(d);
  add_block(f, d, lz4_block(zeros), false);
  add_end(f, d, zeros);
  EXPECT_STATUS(status_of(f), StatusCode::bad_data);
}

TEST(Lz4FrameMalformed, CorruptBlockDataIsBadData) {
  // The blocks below keep the end-of-block rules of the LZ4 block format (the
  // last 12 bytes hold no match start, the last 5 are literals) so that only
  // the intended fault is present.
  const Bytes tail{0xC0, 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm'};
  auto with_tail = [&](Bytes head) {
    append(head, tail);
    return head;
  };
  // The control: 'a', a match of 4 at offset 1, then 12 literals.
  const Bytes good = with_tail({0x10, 'a', 0x01, 0x00});
  // A match of 4 at offset 16, before the start of the output.
  const Bytes bad_offset = with_tail({0x10, 'a', 0x10, 0x00});
  // Offset 65535 on the very first sequence.
  const Bytes far_offset = with_tail({0x10, 'a', 0xFF, 0xFF});
  // A literal run longer than the block.
  const Bytes long_literals{0xF0, 0xFF, 0xFF, 0x10, 'x', 'y'};
  // A match length whose extension bytes run off the end.
  const Bytes cut_match_length{0x1F, 'a', 0x01, 0x00, 0xFF, 0xFF};
  {
    Desc d;
    Bytes f = header(d);
    add_block(f, d, good, false);
    add_end(f, d, {});
    Decoded r = decode(f);
    ASSERT_STATUS(r.status, StatusCode::ok);
    EXPECT_EQ(std::string(r.out.begin(), r.out.end()), "aaaaabcdefghijklm");
  }
  int i = 0;
  for (const Bytes& blk : {bad_offset, far_offset, long_literals, cut_match_length}) {
    Desc d;
    Bytes f = header(d);
    add_block(f, d, blk, false);
    add_end(f, d, {});
    EXPECT_STATUS(status_of(f), StatusCode::bad_data) << "block " << i++;
  }
  // Corruption in a later block, after good ones.
  Desc d;
  Bytes f = header(d);
  add_block(f, d, good, false);
  add_block(f, d, good, false);
  add_block(f, d, bad_offset, false);
  add_end(f, d, {});
  EXPECT_STATUS(status_of(f), StatusCode::bad_data);
}

TEST(Lz4FrameMalformed, IndependentBlocksCannotReferToEarlierBlocks) {
  // Block 2 repeats block 1 and is compressed against it.
  const Bytes part = tandem::test::random_bytes(4000, 21);
  Bytes content = part;
  append(content, part);
  LZ4_stream_t* stream = LZ4_createStream();
  Bytes c1(LZ4_compressBound(4000)), c2(LZ4_compressBound(4000));
  const int n1 = LZ4_compress_fast_continue(stream, reinterpret_cast<const char*>(content.data()),
                                            reinterpret_cast<char*>(c1.data()), 4000, c1.size(), 1);
  const int n2 = LZ4_compress_fast_continue(stream, reinterpret_cast<const char*>(content.data() + 4000),
                                            reinterpret_cast<char*>(c2.data()), 4000, c2.size(), 1);
  LZ4_freeStream(stream);
  ASSERT_GT(n1, 0);
  ASSERT_GT(n2, 0);
  ASSERT_LT(n2, 100) << "block 2 should be one long match into block 1";
  c1.resize(n1);
  c2.resize(n2);
  for (bool independent : {false, true}) {
    Desc d;
    d.independent = independent;
    d.content_checksum = true;
    Bytes f = header(d);
    add_block(f, d, c1, false);
    add_block(f, d, c2, false);
    add_end(f, d, content);
    Decoded r = decode(f);
    if (independent) {
      EXPECT_STATUS(r.status, StatusCode::bad_data) << "independent blocks";
    } else {
      EXPECT_STATUS(r.status, StatusCode::ok) << "linked blocks";
      EXPECT_EQ(r.out, content);
    }
  }
}

TEST(Lz4FrameMalformed, LinkedBlocksReachBack64KiBAcrossSmallBlocks) {
  // Linked blocks of 1 KiB whose matches reach up to 64 KiB back, across many blocks.
  const Bytes base = tandem::test::random_bytes(60000, 31);
  Bytes content = base;
  append(content, base);
  Desc d;
  d.independent = false;
  d.content_checksum = true;
  Bytes f = header(d);
  LZ4_stream_t* stream = LZ4_createStream();
  for (std::size_t at = 0; at < content.size(); at += 1024) {
    const int n = static_cast<int>(std::min<std::size_t>(1024, content.size() - at));
    Bytes c(LZ4_compressBound(n));
    const int got = LZ4_compress_fast_continue(stream, reinterpret_cast<const char*>(content.data() + at),
                                               reinterpret_cast<char*>(c.data()), n, c.size(), 1);
    ASSERT_GT(got, 0);
    c.resize(got);
    add_block(f, d, c, false);
  }
  LZ4_freeStream(stream);
  add_end(f, d, content);
  ASSERT_LT(f.size(), content.size() * 3 / 4) << "the second half should be matches";
  Decoded r = decode(f);
  ASSERT_STATUS(r.status, StatusCode::ok);
  EXPECT_EQ(r.out, content);
}

// ---------------------------------------------------------- content size ----

TEST(Lz4FrameMalformed, LyingContentSizeIsBadData) {
  const Bytes c = tandem::test::text_like_bytes(200000, 4);
  for (std::int64_t delta : {-1, 1, -100000, 100000, -199999}) {
    for (bool checksum : {false, true}) {
      Desc d;
      d.content_size = true;
      d.content_checksum = checksum;
      d.size = static_cast<std::uint64_t>(static_cast<std::int64_t>(c.size()) + delta);
      EXPECT_STATUS(status_of(frame(d, c)), StatusCode::bad_data)
          << "content size off by " << delta << (checksum ? " with" : " without") << " checksum";
    }
  }
  // Says 0, has content; says something, has no blocks.
  Desc zero;
  zero.content_size = true;
  zero.size = 0;
  Bytes f = header(zero);
  add_block(f, zero, lz4_block(c.data(), 1000), false);
  add_end(f, zero, {});
  EXPECT_STATUS(status_of(f), StatusCode::bad_data) << "size 0 with a block";
  Desc some;
  some.content_size = true;
  some.size = 10;
  f = header(some);
  add_end(f, some, {});
  EXPECT_STATUS(status_of(f), StatusCode::bad_data) << "size 10 without blocks";
  // An absurd size (2^63) with a small content.
  Desc absurd;
  absurd.content_size = true;
  absurd.size = std::uint64_t{1} << 63;
  EXPECT_STATUS(status_of(frame(absurd, small_content())), StatusCode::bad_data);
}

TEST(Lz4FrameMalformed, ContentSizeZeroWithSeveralBlocks) {
  // Found by fuzz_lz4_frame (UBSan): a stated content size of 0 sized the
  // decoder's output room to 0 bytes, and the room of the second block was
  // computed as null + 65536 (undefined behaviour) before the lie was caught.
  const Bytes part = tandem::test::text_like_bytes(1000, 13);
  for (bool checksum : {false, true}) {
    Desc d;
    d.content_size = true;
    d.size = 0;
    d.block_checksum = checksum;
    Bytes f = header(d);
    add_block(f, d, lz4_block(part), false);
    add_block(f, d, lz4_block(part), false);
    add_block(f, d, part, true);
    add_end(f, d, {});
    EXPECT_STATUS(status_of(f), StatusCode::bad_data);
    // Into an empty caller buffer as well: the content does not fit, and the
    // frame lies, so either code is right; the point is no undefined behaviour.
    std::size_t got = 99;
    const Status st = tandem::lz4_frame_decompress({f.data(), f.size()}, MutableBuffer{nullptr, 0}, &got, cpu_options());
    EXPECT_TRUE(st.code == StatusCode::bad_data || st.code == StatusCode::output_too_small) << st.to_string();
    EXPECT_EQ(got, 0u);
  }
}

// ------------------------------------------- skippable and concatenated ----

TEST(Lz4FrameMalformed, SkippableFramesAreSkippedAnywhere) {
  const Bytes c1 = tandem::test::text_like_bytes(70000, 1);
  const Bytes c2 = tandem::test::random_bytes(3000, 2);
  Desc d;
  d.content_checksum = true;
  Bytes in;
  append(in, skippable(0, Bytes(10, 1)));
  append(in, skippable(0xF, {}));
  append(in, frame(d, c1));
  append(in, skippable(5, tandem::test::random_bytes(300, 3)));
  append(in, frame(d, c2));
  append(in, skippable(9, Bytes(1, 0)));
  Decoded r = decode(in);
  ASSERT_STATUS(r.status, StatusCode::ok);
  Bytes want = c1;
  append(want, c2);
  EXPECT_EQ(r.out, want);

  tandem::StreamStats stats;
  auto src = tandem::memory_source({in.data(), in.size()});
  Bytes out;
  auto sink = tandem::vector_sink(&out);
  ASSERT_STATUS(tandem::lz4_decompress_stream(*src, *sink, cpu_options(), &stats), StatusCode::ok);
  EXPECT_EQ(stats.frames, 2u) << "skippable frames are not counted";
  EXPECT_EQ(stats.bytes_in, in.size());
  EXPECT_EQ(stats.bytes_out, want.size());

  // Only skippable frames: an empty output.
  Bytes only = skippable(1, Bytes(5, 5));
  append(only, skippable(2, {}));
  r = decode(only);
  EXPECT_STATUS(r.status, StatusCode::ok);
  EXPECT_TRUE(r.out.empty());
}

TEST(Lz4FrameMalformed, ConcatenatedFramesDecodeToTheConcatenation) {
  const Bytes a = tandem::test::mixed_bytes(100000, 1);
  const Bytes b = tandem::test::text_like_bytes(5000, 2);
  const Bytes c = tandem::test::constant_bytes(70000, 0);
  Desc d1;
  Desc d2;
  d2.content_size = true;
  d2.block_checksum = true;
  d2.independent = false;
  Bytes in;
  append(in, frame(d1, a));
  append(in, legacy(b));
  append(in, frame(d2, c));
  append(in, frame(d1, {}));
  append(in, legacy(b));
  Bytes want = a;
  append(want, b);
  append(want, c);
  append(want, b);
  Decoded r = decode(in);
  ASSERT_STATUS(r.status, StatusCode::ok);
  EXPECT_EQ(r.out, want);
}

TEST(Lz4FrameMalformed, LegacyFrames) {
  // An empty legacy frame is just the magic (what `lz4 -l` writes for an empty file).
  Bytes magic_only;
  put32(magic_only, lz4f::kLegacyMagic);
  Decoded r = decode(magic_only);
  EXPECT_STATUS(r.status, StatusCode::ok);
  EXPECT_TRUE(r.out.empty());
  // Small blocks, several of them.
  const Bytes c = tandem::test::mixed_bytes(50000, 8);
  r = decode(legacy(c, 7000));
  ASSERT_STATUS(r.status, StatusCode::ok);
  EXPECT_EQ(r.out, c);
  // A corrupt legacy block.
  Bytes bad;
  put32(bad, lz4f::kLegacyMagic);
  put32(bad, 10);
  append(bad, Bytes{0x10, 'a', 0x10, 0x00, 0x50, 'b', 'c', 'd', 'e', 'f'});
  EXPECT_STATUS(status_of(bad), StatusCode::bad_data);
}

// --------------------------------------------------------- output limits ----

TEST(Lz4FrameMalformed, OutputLimits) {
  const Bytes c = tandem::test::text_like_bytes(100000, 6);
  Desc d;
  d.content_checksum = true;
  for (bool with_size : {false, true}) {
    d.content_size = with_size;
    d.size = 0;
    const Bytes f = frame(d, c);
    Lz4DecodeOptions o = cpu_options();
    o.max_output = c.size() - 1;
    Bytes out;
    EXPECT_STATUS(tandem::lz4_frame_decompress({f.data(), f.size()}, &out, o), StatusCode::output_limit);
    EXPECT_LE(out.size(), c.size() - 1);
    o.max_output = c.size();
    out.clear();
    EXPECT_STATUS(tandem::lz4_frame_decompress({f.data(), f.size()}, &out, o), StatusCode::ok);
    EXPECT_EQ(out, c);
    o.max_output = 0;
    out.clear();
    EXPECT_STATUS(tandem::lz4_frame_decompress({f.data(), f.size()}, &out, o), StatusCode::output_limit);

    // The buffer variant: too small a buffer.
    Bytes buf(c.size() - 1);
    std::size_t got = 12345;
    EXPECT_STATUS(tandem::lz4_frame_decompress({f.data(), f.size()}, MutableBuffer{buf.data(), buf.size()},
                                               &got, cpu_options()),
                  StatusCode::output_too_small);
    buf.resize(c.size());
    EXPECT_STATUS(tandem::lz4_frame_decompress({f.data(), f.size()}, MutableBuffer{buf.data(), buf.size()},
                                               &got, cpu_options()),
                  StatusCode::ok);
    EXPECT_EQ(got, c.size());
    EXPECT_EQ(buf, c);
  }
}

TEST(Lz4FrameMalformed, DecompressionBombIsStoppedByTheLimit) {
  // 64 MiB of zeros in 4 MiB blocks from a few hundred KiB of input.
  Desc d;
  d.bsid = 7;
  const Bytes block_zeros(4u << 20, 0);
  const Bytes blk = lz4_block(block_zeros);
  Bytes f = header(d);
  for (int i = 0; i < 16; ++i) add_block(f, d, blk, false);
  add_end(f, d, {});
  ASSERT_LT(f.size(), 1u << 20);
  Lz4DecodeOptions o = cpu_options();
  o.max_output = 1u << 20;
  Bytes out;
  EXPECT_STATUS(tandem::lz4_frame_decompress({f.data(), f.size()}, &out, o), StatusCode::output_limit);
  EXPECT_LE(out.size(), o.max_output);
  Bytes out2;
  auto src = tandem::memory_source({f.data(), f.size()});
  auto sink = tandem::vector_sink(&out2, 3u << 20);
  EXPECT_STATUS(tandem::lz4_decompress_stream(*src, *sink, cpu_options()), StatusCode::output_limit);
  EXPECT_LE(out2.size(), 3u << 20);
}

// ------------------------------------------------------- never a crash ----

// A single byte changed anywhere in a frame with block and content checksums
// (and a header checksum) must be detected: it is never ok.
TEST(Lz4FrameMalformed, EveryByteFlipOfASmallFrameIsDetected) {
  const Bytes f = small_frame();
  for (std::size_t i = 0; i < f.size(); ++i) {
    for (std::uint8_t x : {0x01, 0x10, 0x80, 0xFF}) {
      Bytes g = f;
      g[i] ^= x;
      bool agree = true;
      const Decoded r = decode(g, cpu_options(), &agree);
      EXPECT_FALSE(r.status.ok()) << "flip 0x" << std::hex << int{x} << " at " << std::dec << i
                                  << " decoded as ok";
      EXPECT_TRUE(agree) << "at " << i;
    }
  }
}

TEST(Lz4FrameMalformed, ByteFlipsWithoutChecksumsGiveAStatus) {
  // Without checksums a flip may decode to other bytes; it must still end in a
  // status with bounded output.
  const Bytes c = small_content();
  Desc d;
  Bytes f = header(d);
  add_block(f, d, lz4_block(c.data(), 180), false);
  add_block(f, d, lz4_block(c.data() + 180, c.size() - 180), false);
  add_end(f, d, c);
  for (std::size_t i = 0; i < f.size(); ++i) {
    for (int x = 1; x < 256; x += 37) {
      Bytes g = f;
      g[i] ^= static_cast<std::uint8_t>(x);
      Lz4DecodeOptions o = cpu_options();
      o.max_output = 1u << 20;
      const Decoded r = decode(g, o);
      if (r.status.ok()) EXPECT_LE(r.out.size(), 2u * 65536);
    }
  }
}

TEST(Lz4FrameMalformed, RandomBytesGiveAStatus) {
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 300; ++i) {
    const std::size_t n = rng() % 600;
    Bytes in = tandem::test::random_bytes(n, rng());
    // Half of them behind a valid header, to reach the block parser.
    if (i % 2 == 1) {
      Desc d;
      d.block_checksum = rng() % 2;
      d.content_checksum = rng() % 2;
      d.independent = rng() % 2;
      Bytes h = header(d);
      in.insert(in.begin(), h.begin(), h.end());
    } else if (i % 4 == 0) {
      Bytes h;
      put32(h, lz4f::kLegacyMagic);
      in.insert(in.begin(), h.begin(), h.end());
    }
    Lz4DecodeOptions o = cpu_options();
    o.max_output = 8u << 20;
    const Decoded r = decode(in, o);
    EXPECT_LE(r.out.size(), o.max_output);
  }
}

TEST(Lz4FrameMalformed, TruncationsAndFlipsOfEncodedFramesGiveAStatus) {
  // Our own encoder's frames in several shapes, cut and flipped at many places.
  std::mt19937_64 rng(99);
  const Bytes data = tandem::test::mixed_bytes(150000, 14);
  for (int shape = 0; shape < 6; ++shape) {
    tandem::Lz4FrameOptions o;
    o.block_size = 64 << 10;
    o.linked_blocks = shape & 1;
    o.block_checksum = shape & 2;
    o.content_checksum = shape != 4;
    o.legacy = shape == 5;
    o.threads = 1;
    Bytes f;
    ASSERT_STATUS(tandem::lz4_frame_compress({data.data(), data.size()}, &f, o), StatusCode::ok);
    for (int k = 0; k < 60; ++k) {
      Bytes g = f;
      if (k % 3 == 0) g.resize(rng() % g.size());
      else g[rng() % g.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
      Lz4DecodeOptions d = cpu_options();
      d.threads = 1 + static_cast<int>(rng() % 3);
      d.max_output = 1u << 20;
      const Decoded r = decode(g, d);
      EXPECT_LE(r.out.size(), d.max_output);
    }
  }
}

}  // namespace
