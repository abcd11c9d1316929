// LZ4 frame round trips through tandem's in-memory API: sizes around every
// block size, every kind of data, the whole options matrix. Every frame is also
// decoded by liblz4's own frame decoder (LZ4F, or a small legacy reader), so a
// frame that only tandem can read fails here, and the header is checked
// against the options that asked for it.
#include <lz4.h>
#include <lz4frame.h>

#include <optional>
#include <sstream>
#include <thread>

#include "format/lz4_frame_format.hpp"
#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::ConstBuffer;
using tandem::Lz4DecodeOptions;
using tandem::Lz4FrameOptions;
using tandem::StatusCode;
using tandem::test::Bytes;
namespace lz4f = tandem::lz4f;

ConstBuffer cb(const Bytes& b) { return {b.data(), b.size()}; }

// liblz4's frame decoder over a whole buffer (concatenated and skippable frames too).
std::optional<Bytes> lz4f_decode(const Bytes& frame) {
  LZ4F_dctx* dctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) return std::nullopt;
  Bytes out, buf(1u << 16);
  std::size_t pos = 0;
  bool ok = true;
  for (;;) {
    std::size_t src = frame.size() - pos, dst = buf.size();
    const std::size_t r = LZ4F_decompress(dctx, buf.data(), &dst, frame.data() + pos, &src, nullptr);
    if (LZ4F_isError(r)) {
      ok = false;
      break;
    }
    out.insert(out.end(), buf.begin(), buf.begin() + dst);
    pos += src;
    if (r == 0 && pos == frame.size()) break;
    if (src == 0 && dst == 0) {
      ok = false;  // wants more input than there is
      break;
    }
  }
  LZ4F_freeDecompressionContext(dctx);
  if (!ok) return std::nullopt;
  return out;
}

// A minimal legacy-format reader on liblz4's block decoder.
std::optional<Bytes> legacy_decode(const Bytes& f) {
  if (f.size() < 4 || lz4f::read_le32(f.data()) != lz4f::kLegacyMagic) return std::nullopt;
  Bytes out, buf(lz4f::kLegacyBlockSize);
  std::size_t pos = 4;
  while (pos < f.size()) {
    if (f.size() - pos < 4) return std::nullopt;
    const std::uint32_t n = lz4f::read_le32(&f[pos]);
    pos += 4;
    if (n > f.size() - pos) return std::nullopt;
    const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(&f[pos]), reinterpret_cast<char*>(buf.data()),
                                        static_cast<int>(n), static_cast<int>(buf.size()));
    if (got < 0) return std::nullopt;
    out.insert(out.end(), buf.begin(), buf.begin() + got);
    pos += n;
  }
  return out;
}

enum class Kind { random, constant, text, mixed };
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::random: return "random";
    case Kind::constant: return "constant";
    case Kind::text: return "text";
    default: return "mixed";
  }
}
Bytes make_data(Kind k, std::size_t n, std::uint64_t seed) {
  switch (k) {
    case Kind::random: return tandem::test::random_bytes(n, seed);
    case Kind::constant: return tandem::test::constant_bytes(n, static_cast<std::uint8_t>(seed));
    case Kind::text: return tandem::test::text_like_bytes(n, seed);
    default: return tandem::test::mixed_bytes(n, seed);
  }
}

// Compresses with `o`, checks the frame against the options, decodes it with
// tandem and with liblz4, and returns the frame.
Bytes check_round_trip(const Bytes& data, const Lz4FrameOptions& o) {
  Bytes frame;
  EXPECT_STATUS(tandem::lz4_frame_compress(cb(data), &frame, o), StatusCode::ok);
  EXPECT_LE(frame.size(), tandem::lz4_frame_max_compressed_size(data.size(), o));

  if (o.legacy) {
    EXPECT_GE(frame.size(), 4u);
    if (frame.size() >= 4) EXPECT_EQ(lz4f::read_le32(frame.data()), lz4f::kLegacyMagic);
    const auto ref = legacy_decode(frame);
    EXPECT_TRUE(ref.has_value()) << "liblz4 cannot read the legacy frame";
    if (ref) EXPECT_TRUE(*ref == data) << "liblz4 decodes other bytes";
  } else {
    lz4f::FrameHeader h;
    EXPECT_STATUS(lz4f::parse_frame_header(frame.data(), frame.size(), &h), StatusCode::ok);
    EXPECT_EQ(h.block_max, o.block_size);
    EXPECT_EQ(h.independent_blocks, !o.linked_blocks);
    EXPECT_EQ(h.block_checksum, o.block_checksum);
    EXPECT_EQ(h.content_checksum, o.content_checksum);
    EXPECT_EQ(h.has_content_size, o.content_size) << "a memory input knows its size";
    if (h.has_content_size) EXPECT_EQ(h.content_size, data.size());
    EXPECT_FALSE(h.has_dict_id);
    const auto ref = lz4f_decode(frame);
    EXPECT_TRUE(ref.has_value()) << "liblz4 cannot read the frame";
    if (ref) EXPECT_TRUE(*ref == data) << "liblz4 decodes other bytes";
  }

  Lz4DecodeOptions d;
  d.backend = tandem::Backend::cpu;
  d.threads = o.threads;
  Bytes back;
  EXPECT_STATUS(tandem::lz4_frame_decompress(cb(frame), &back, d), StatusCode::ok);
  EXPECT_EQ(back.size(), data.size());
  EXPECT_TRUE(back == data) << "tandem decodes other bytes";
  return frame;
}

// ------------------------------------------------ sizes x block sizes ----

struct SizeCase {
  std::size_t block;
  int delta;  // -2: size 0, -3: size 1, else block + delta
  Kind kind;
};

std::size_t size_of(const SizeCase& c) {
  if (c.delta == -2) return 0;
  if (c.delta == -3) return 1;
  return c.block + c.delta;
}

void PrintTo(const SizeCase& c, std::ostream* os) {
  *os << "block " << c.block << ", size " << size_of(c) << ", " << kind_name(c.kind) << " data";
}

class FrameSizes : public ::testing::TestWithParam<SizeCase> {};

TEST_P(FrameSizes, RoundTrip) {
  const SizeCase c = GetParam();
  const Bytes data = make_data(c.kind, size_of(c), 1000 + c.block + c.delta);
  Lz4FrameOptions o;
  o.block_size = c.block;
  o.backend = tandem::Backend::cpu;
  o.threads = 2;
  check_round_trip(data, o);
}

std::vector<SizeCase> size_cases() {
  std::vector<SizeCase> v;
  for (std::size_t b : {64u << 10, 256u << 10, 1u << 20, 4u << 20})
    for (int delta : {-2, -3, -1, 0, 1})
      for (Kind k : {Kind::random, Kind::constant, Kind::text, Kind::mixed}) v.push_back({b, delta, k});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Lz4Frame, FrameSizes, ::testing::ValuesIn(size_cases()),
                         [](const ::testing::TestParamInfo<SizeCase>& info) {
                           std::ostringstream s;
                           s << "block" << (info.param.block >> 10) << "K_size";
                           if (info.param.delta == -2) s << "0";
                           else if (info.param.delta == -3) s << "1";
                           else if (info.param.delta < 0) s << "blockMinus1";
                           else if (info.param.delta == 0) s << "block";
                           else s << "blockPlus1";
                           s << "_" << kind_name(info.param.kind);
                           return s.str();
                         });

// ------------------------------------------------------- options matrix ----

struct OptCase {
  int level = 0;
  bool linked = false, content_checksum = true, block_checksum = false, content_size = true, legacy = false;
  int threads = 1;
};

void PrintTo(const OptCase& c, std::ostream* os) {
  *os << "level " << c.level << ", threads " << c.threads << ", linked " << c.linked << ", content checksum "
      << c.content_checksum << ", block checksum " << c.block_checksum << ", content size " << c.content_size
      << ", legacy " << c.legacy;
}

class FrameOptions : public ::testing::TestWithParam<OptCase> {};

TEST_P(FrameOptions, RoundTrip) {
  const OptCase c = GetParam();
  Lz4FrameOptions o;
  o.level = c.level;
  o.block_size = 64u << 10;
  o.linked_blocks = c.linked;
  o.content_checksum = c.content_checksum;
  o.block_checksum = c.block_checksum;
  o.content_size = c.content_size;
  o.legacy = c.legacy;
  o.threads = c.threads;
  o.backend = tandem::Backend::cpu;
  // Several blocks of each kind of data.
  Bytes data = tandem::test::mixed_bytes(200000, 42);
  const Bytes text = tandem::test::text_like_bytes(150000, 43);
  data.insert(data.end(), text.begin(), text.end());
  const Bytes frame = check_round_trip(data, o);
  // The same frame again: the encoder is deterministic.
  Bytes again;
  ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &again, o), StatusCode::ok);
  EXPECT_TRUE(again == frame) << "two compressions with the same options differ";
}

std::vector<OptCase> option_cases() {
  std::vector<OptCase> v;
  for (int bits = 0; bits < 16; ++bits)
    for (int level : {0, 9})
      for (int threads : {1, 2, 4}) {
        OptCase c;
        c.level = level;
        c.linked = bits & 1;
        c.content_checksum = bits & 2;
        c.block_checksum = bits & 4;
        c.content_size = bits & 8;
        c.threads = threads;
        v.push_back(c);
      }
  for (int level : {-5, 0, 1, 3, 9, 12})
    for (int threads : {1, 2, 4})
      for (int shape = 0; shape < 3; ++shape) {
        OptCase c;
        c.level = level;
        c.threads = threads;
        c.linked = shape == 1;
        c.legacy = shape == 2;
        v.push_back(c);
      }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Lz4Frame, FrameOptions, ::testing::ValuesIn(option_cases()),
                         [](const ::testing::TestParamInfo<OptCase>& info) {
                           const OptCase& c = info.param;
                           std::ostringstream s;
                           s << "level" << (c.level < 0 ? "Minus" : "") << std::abs(c.level) << "_t" << c.threads;
                           if (c.legacy) s << "_legacy";
                           if (c.linked) s << "_linked";
                           if (c.content_checksum && !c.legacy) s << "_cchk";
                           if (c.block_checksum) s << "_bchk";
                           if (c.content_size && !c.legacy) s << "_csize";
                           s << "_" << info.index;
                           return s.str();
                         });

// --------------------------------------------------- options that matter ----

std::size_t frame_size(const Bytes& data, Lz4FrameOptions o) {
  o.backend = tandem::Backend::cpu;
  Bytes f;
  EXPECT_STATUS(tandem::lz4_frame_compress(cb(data), &f, o), StatusCode::ok);
  return f.size();
}

TEST(Lz4FrameOptionsEffect, LevelsChangeTheOutput) {
  const Bytes data = tandem::test::text_like_bytes(1u << 20, 5);
  Lz4FrameOptions o;
  o.level = 0;
  const std::size_t fast = frame_size(data, o);
  o.level = -5;
  const std::size_t faster = frame_size(data, o);
  o.level = 9;
  const std::size_t hc9 = frame_size(data, o);
  o.level = 12;
  const std::size_t hc12 = frame_size(data, o);
  EXPECT_GT(faster, fast) << "level -5 (acceleration 5) should compress less than level 0";
  EXPECT_LT(hc9, fast) << "level 9 (HC) should compress more than level 0";
  EXPECT_LE(hc12, hc9);
  o.level = 1;
  EXPECT_EQ(frame_size(data, o), fast) << "levels 0..2 are the same fast mode";
}

TEST(Lz4FrameOptionsEffect, LinkedBlocksAreSmaller) {
  const Bytes data = tandem::test::text_like_bytes(1u << 20, 6);
  Lz4FrameOptions o;
  o.block_size = 64u << 10;
  const std::size_t independent = frame_size(data, o);
  o.linked_blocks = true;
  const std::size_t linked = frame_size(data, o);
  EXPECT_LT(linked, independent) << "linked blocks should use the previous block as a dictionary";
}

TEST(Lz4FrameOptionsEffect, OutputDoesNotDependOnThreads) {
  const Bytes data = tandem::test::mixed_bytes(3u << 20, 7);
  for (bool linked : {false, true}) {
    Lz4FrameOptions o;
    o.block_size = 256u << 10;
    o.linked_blocks = linked;
    o.block_checksum = true;
    o.threads = 1;
    Bytes one, four;
    ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &one, o), StatusCode::ok);
    o.threads = 4;
    ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &four, o), StatusCode::ok);
    EXPECT_TRUE(one == four) << "threads 1 and 4 give different frames, linked=" << linked;
  }
}

TEST(Lz4FrameOptionsEffect, DefaultsWriteWhatLz4Writes) {
  const Bytes data = tandem::test::mixed_bytes(100000, 8);
  Bytes f;
  ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &f), StatusCode::ok);
  lz4f::FrameHeader h;
  ASSERT_STATUS(lz4f::parse_frame_header(f.data(), f.size(), &h), StatusCode::ok);
  EXPECT_EQ(h.block_max, 4u << 20);
  EXPECT_TRUE(h.independent_blocks);
  EXPECT_TRUE(h.content_checksum);
  EXPECT_FALSE(h.block_checksum);
  EXPECT_TRUE(h.has_content_size);
  EXPECT_EQ(h.content_size, data.size());
  Bytes back;
  ASSERT_STATUS(tandem::lz4_frame_decompress(cb(f), &back), StatusCode::ok);
  EXPECT_TRUE(back == data);
  const auto ref = lz4f_decode(f);
  ASSERT_TRUE(ref.has_value());
  EXPECT_TRUE(*ref == data);
}

TEST(Lz4FrameOptionsEffect, IncompressibleBlocksAreStoredRaw) {
  // Random data must not grow by more than the block words and checksums.
  const Bytes data = tandem::test::random_bytes(1u << 20, 9);
  Lz4FrameOptions o;
  o.block_size = 64u << 10;
  const std::size_t n = frame_size(data, o);
  EXPECT_LE(n, data.size() + 15 + 16 * 4 + 8) << "incompressible blocks should be stored raw";
}

TEST(Lz4FrameOptionsEffect, LegacyFramesOver8MiB) {
  const Bytes data = tandem::test::mixed_bytes((8u << 20) + 12345, 10);
  Lz4FrameOptions o;
  o.legacy = true;
  o.threads = 2;
  const Bytes f = check_round_trip(data, o);
  // The first block holds exactly 8 MiB.
  ASSERT_GE(f.size(), 8u);
  const std::uint32_t first = lz4f::read_le32(&f[4]);
  Bytes block(lz4f::kLegacyBlockSize + 1);
  ASSERT_LE(first + 8u, f.size());
  EXPECT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(&f[8]), reinterpret_cast<char*>(block.data()),
                                static_cast<int>(first), static_cast<int>(block.size())),
            static_cast<int>(lz4f::kLegacyBlockSize));
}

TEST(Lz4FrameOptionsEffect, InvalidBlockSizeIsInvalidArgument) {
  const Bytes data = tandem::test::text_like_bytes(1000, 1);
  for (std::size_t b : {std::size_t{0}, std::size_t{1000}, std::size_t{128u << 10}, std::size_t{8u << 20}}) {
    Lz4FrameOptions o;
    o.block_size = b;
    Bytes f;
    EXPECT_STATUS(tandem::lz4_frame_compress(cb(data), &f, o), StatusCode::invalid_argument) << b;
  }
}

TEST(Lz4FrameOptionsEffect, MaxCompressedSizeIsAnUpperBound) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{65535}, std::size_t{65536},
                        std::size_t{65537}, std::size_t{300001}}) {
    const Bytes data = tandem::test::random_bytes(n, n);
    for (int bits = 0; bits < 32; ++bits) {
      Lz4FrameOptions o;
      o.block_size = 64u << 10;
      o.linked_blocks = bits & 1;
      o.content_checksum = bits & 2;
      o.block_checksum = bits & 4;
      o.content_size = bits & 8;
      o.legacy = bits & 16;
      Bytes f;
      ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &f, o), StatusCode::ok);
      EXPECT_LE(f.size(), tandem::lz4_frame_max_compressed_size(n, o)) << n << " bytes, options " << bits;
    }
  }
  Lz4FrameOptions o;
  EXPECT_LE(tandem::lz4_frame_max_compressed_size(1000, o), tandem::lz4_frame_max_compressed_size(100000, o));
}

TEST(Lz4FrameOptionsEffect, ProgressIsReported) {
  const Bytes data = tandem::test::mixed_bytes(2u << 20, 11);
  std::uint64_t last_in = 0, last_out = 0;
  int calls = 0;
  bool monotonic = true;
  Lz4FrameOptions o;
  o.block_size = 64u << 10;
  o.threads = 2;
  o.progress = [&](std::uint64_t in, std::uint64_t out) {
    if (in < last_in || out < last_out) monotonic = false;
    last_in = in;
    last_out = out;
    ++calls;
  };
  Bytes f;
  ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &f, o), StatusCode::ok);
  EXPECT_GT(calls, 0);
  EXPECT_TRUE(monotonic);
  EXPECT_LE(last_in, data.size());
  EXPECT_LE(last_out, f.size());
  EXPECT_GT(last_in, 0u);

  calls = 0;
  last_in = last_out = 0;
  monotonic = true;
  Lz4DecodeOptions d;
  d.threads = 2;
  d.progress = o.progress;
  Bytes back;
  ASSERT_STATUS(tandem::lz4_frame_decompress(cb(f), &back, d), StatusCode::ok);
  EXPECT_TRUE(back == data);
  EXPECT_GT(calls, 0);
  EXPECT_TRUE(monotonic);
  EXPECT_LE(last_in, f.size());
  EXPECT_LE(last_out, data.size());
  EXPECT_GT(last_out, 0u);
}

TEST(Lz4FrameOptionsEffect, DefaultBackendRoundTrip) {
  // Backend::automatic on whatever this machine has (CPU-only in CI).
  const Bytes data = tandem::test::mixed_bytes(5u << 20, 12);
  Bytes f, back;
  ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &f), StatusCode::ok);
  ASSERT_STATUS(tandem::lz4_frame_decompress(cb(f), &back), StatusCode::ok);
  EXPECT_TRUE(back == data);
}

TEST(Lz4FrameOptionsEffect, ConcurrentCallsFromManyThreads) {
  // The library shares one thread pool; callers on several threads at once
  // must each get their own correct result.
  std::vector<std::thread> threads;
  std::vector<int> good(6, 0);
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([t, &good] {
      const Bytes data = tandem::test::mixed_bytes(700000 + 1000 * t, 100 + t);
      Lz4FrameOptions o;
      o.block_size = 64u << 10;
      o.linked_blocks = t % 2;
      o.threads = 1 + t % 3;
      Bytes f, back;
      if (!tandem::lz4_frame_compress(cb(data), &f, o).ok()) return;
      Lz4DecodeOptions d;
      d.threads = 1 + (t + 1) % 3;
      if (!tandem::lz4_frame_decompress(cb(f), &back, d).ok()) return;
      good[t] = back == data;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 6; ++t) EXPECT_EQ(good[t], 1) << "thread " << t;
}

}  // namespace
