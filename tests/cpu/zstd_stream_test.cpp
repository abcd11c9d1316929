// zstd frames through tandem/zstd.hpp: round trips at every level, libzstd
// reading what tandem writes and tandem reading what libzstd writes,
// concatenated and skippable frames, and hostile input: every cut, a wrong
// checksum, the output limit, no input, a level out of range.
#include <zstd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "support/scan_cases.hpp"
#include "support/test_support.hpp"
#include "tandem/zstd.hpp"

namespace {

using tandem::StatusCode;
using tandem::StreamStats;
using tandem::ZstdDecodeOptions;
using tandem::ZstdOptions;
using tandem::test::Bytes;
namespace scan_cases = tandem::scan_cases;

Bytes compress(const Bytes& in, const ZstdOptions& o = {}, StreamStats* stats = nullptr) {
  Bytes out;
  auto src = tandem::memory_source({in.data(), in.size()});
  auto sink = tandem::vector_sink(&out);
  const tandem::Status s = tandem::zstd_compress_stream(*src, *sink, o, stats);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(sink->flush().ok());
  sink.reset();
  return out;
}

tandem::Status decompress(const Bytes& in, Bytes* out, const ZstdDecodeOptions& o = {}, StreamStats* stats = nullptr) {
  out->clear();
  auto src = tandem::memory_source({in.data(), in.size()});
  auto sink = tandem::vector_sink(out);
  tandem::Status s = tandem::zstd_decompress_stream(*src, *sink, o, stats);
  if (s.ok()) s = sink->flush();
  sink.reset();
  return s;
}

Bytes libzstd_decompress(const Bytes& frame) {
  Bytes out;
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  std::size_t hint = 1;
  while (in.pos < in.size || hint != 0) {
    Bytes room(ZSTD_DStreamOutSize());
    ZSTD_outBuffer o{room.data(), room.size(), 0};
    hint = ZSTD_decompressStream(d, &o, &in);
    EXPECT_FALSE(ZSTD_isError(hint)) << ZSTD_getErrorName(hint);
    if (ZSTD_isError(hint)) break;
    out.insert(out.end(), room.begin(), room.begin() + static_cast<std::ptrdiff_t>(o.pos));
    if (o.pos == 0 && in.pos == in.size) break;
  }
  ZSTD_freeDCtx(d);
  return out;
}

TEST(ZstdStream, EveryLevelRoundTripsAndLibzstdReadsIt) {
  const Bytes text = tandem::test::text_like_bytes(300000, 5);
  for (int level = 1; level <= 19; ++level) {
    ZstdOptions o;
    o.level = level;
    o.threads = level % 2 ? 1 : 2;
    StreamStats stats;
    const Bytes frame = compress(text, o, &stats);
    EXPECT_LT(frame.size(), text.size() / 2) << level;
    EXPECT_EQ(stats.bytes_in, text.size());
    EXPECT_EQ(stats.bytes_out, frame.size());
    EXPECT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), text.size()) << "the size is in the header";
    EXPECT_EQ(libzstd_decompress(frame), text) << level;
    Bytes back;
    ASSERT_TRUE(decompress(frame, &back).ok()) << level;
    EXPECT_EQ(back, text) << level;
  }
}

TEST(ZstdStream, ReadsWhatLibzstdWritesConcatenatedWithSkippableFrames) {
  const Bytes a = tandem::test::random_bytes(200000, 6), b = tandem::test::mixed_bytes(500000, 7);
  const Bytes fa = scan_cases::zstd(a, 1, true), fb = scan_cases::zstd(b, 19, false), fe = scan_cases::zstd({}, 3, true);
  Bytes skippable = {0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'};
  Bytes all = fa;
  all.insert(all.end(), skippable.begin(), skippable.end());
  all.insert(all.end(), fe.begin(), fe.end());
  all.insert(all.end(), fb.begin(), fb.end());
  Bytes back;
  StreamStats stats;
  ASSERT_TRUE(decompress(all, &back, {}, &stats).ok());
  Bytes want = a;
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(back, want);
  EXPECT_EQ(stats.frames, 3u) << "skippable frames are not counted";
  EXPECT_EQ(stats.bytes_in, all.size());
}

TEST(ZstdStream, EmptyContentAndNoInput) {
  Bytes back;
  const Bytes frame = compress({});
  ASSERT_TRUE(decompress(frame, &back).ok());
  EXPECT_TRUE(back.empty());
  EXPECT_EQ(decompress({}, &back).code, StatusCode::bad_data);
}

TEST(ZstdStream, EveryCutFailsWithAStatus) {
  const Bytes frame = compress(tandem::test::text_like_bytes(20000, 8));
  for (std::size_t cut = 1; cut < frame.size(); ++cut) {
    Bytes back;
    const tandem::Status s = decompress(Bytes(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(cut)), &back);
    EXPECT_EQ(s.code, StatusCode::truncated) << cut;
  }
  Bytes back;
  Bytes junk = frame;
  junk.push_back(0x28);  // a frame's first byte, then nothing
  EXPECT_EQ(decompress(junk, &back).code, StatusCode::truncated);
}

TEST(ZstdStream, CorruptionsGiveTheirStatus) {
  const Bytes text = tandem::test::text_like_bytes(100000, 9);
  const Bytes frame = compress(text);
  Bytes back;
  Bytes bad = frame;
  bad[bad.size() - 1] ^= 0x40;  // the content checksum
  EXPECT_EQ(decompress(bad, &back).code, StatusCode::checksum_mismatch);
  bad = frame;
  bad[0] ^= 0xff;  // the magic number
  EXPECT_EQ(decompress(bad, &back).code, StatusCode::bad_data);
  // Flips anywhere: a status or the right bytes (a flip in a raw block is
  // caught by the checksum), never a crash.
  for (std::size_t at = 4; at < frame.size(); at += 97) {
    bad = frame;
    bad[at] ^= 0x10;
    const tandem::Status s = decompress(bad, &back);
    if (s.ok()) EXPECT_EQ(back, text) << at;
  }
}

TEST(ZstdStream, OutputLimitAndLevels) {
  const Bytes text = tandem::test::constant_bytes(1u << 20, 'a');
  const Bytes frame = compress(text);
  Bytes back;
  ZstdDecodeOptions o;
  o.max_output = (1u << 20) - 1;
  EXPECT_EQ(decompress(frame, &back, o).code, StatusCode::output_limit);
  o.max_output = 1u << 20;
  const tandem::Status at_limit = decompress(frame, &back, o);
  EXPECT_TRUE(at_limit.ok()) << at_limit.to_string();
  EXPECT_EQ(back, text);
  for (int level : {0, 23, -1}) {
    ZstdOptions c;
    c.level = level;
    Bytes out;
    auto src = tandem::memory_source({text.data(), text.size()});
    auto sink = tandem::vector_sink(&out);
    EXPECT_EQ(tandem::zstd_compress_stream(*src, *sink, c).code, StatusCode::invalid_argument) << level;
  }
}

}  // namespace
