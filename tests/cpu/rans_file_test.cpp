// .rans files (tandem/rans_file.hpp, docs/formats/rans.md "Files"): round
// trips at 0, 1, block - 1, block, block + 1 and many blocks of random,
// constant, text-like and mixed data and of the Silesia files, through memory
// and through a source that hands out only what was asked for, on one and
// several threads; raw blocks for incompressible data; concatenated members;
// the output limit and caller buffers; and malformed files, each with its
// exact status: every truncation, each header field, lying block sizes, a
// stream that disagrees with its block header, corrupted content, data after
// the end.
#include <algorithm>
#include <cstring>
#include <vector>

#include "format/block_file_format.hpp"
#include "support/test_support.hpp"
#include "tandem/rans_file.hpp"

namespace tandem {
namespace {

using test::Bytes;
namespace rf = block_file;

constexpr std::size_t kBlock = std::size_t{64} << 10;

Bytes compress_ok(const Bytes& in, const RansFileOptions& o = {}) {
  Bytes out;
  const Status s = rans_file_compress({in.data(), in.size()}, &out, o);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_LE(out.size(), rans_file_max_compressed_size(in.size(), o));
  return out;
}

Status decompress(const Bytes& file, Bytes* out, const RansFileDecodeOptions& o = {}, RansFileStats* stats = nullptr) {
  return rans_file_decompress({file.data(), file.size()}, out, o, stats);
}

void expect_round_trip(const Bytes& in, const RansFileOptions& o = {}) {
  SCOPED_TRACE(::testing::Message() << "n=" << in.size() << " block=" << o.block_size << " threads=" << o.threads);
  const Bytes file = compress_ok(in, o);
  Bytes back;
  RansFileStats stats;
  RansFileDecodeOptions d;
  d.threads = o.threads;
  ASSERT_STATUS(decompress(file, &back, d, &stats), StatusCode::ok);
  EXPECT_TRUE(back == in);
  EXPECT_EQ(stats.members, 1u);
  EXPECT_EQ(stats.blocks, (in.size() + o.block_size - 1) / o.block_size);
  // The same through a source that hands out only what is asked for.
  test::StingySource src(file);
  Bytes streamed;
  auto sink = vector_sink(&streamed);
  ASSERT_STATUS(rans_file_decompress_stream(src, *sink, d), StatusCode::ok);
  ASSERT_TRUE(sink->flush().ok());
  EXPECT_EQ(src.violations, 0);
  EXPECT_TRUE(streamed == in);
}

// The offsets of each block header of a one-member file, and of its end marker last.
std::vector<std::size_t> block_offsets(const Bytes& file) {
  std::vector<std::size_t> at;
  std::size_t p = rf::kHeaderBytes;
  for (;;) {
    at.push_back(p);
    const std::uint32_t decoded = file[p] | file[p + 1] << 8 | file[p + 2] << 16 | std::uint32_t{file[p + 3]} << 24;
    const std::uint32_t stored = file[p + 4] | file[p + 5] << 8 | file[p + 6] << 16 | std::uint32_t{file[p + 7]} << 24;
    if (decoded == 0) return at;
    p += rf::kBlockHeaderBytes + (stored & ~rf::kRawBit);
  }
}

void put_le32(Bytes* b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) (*b)[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

TEST(RansFile, RoundTripsAtBlockEdges) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, kBlock - 1, kBlock, kBlock + 1,
                              5 * kBlock + 12345}) {
    expect_round_trip(test::text_like_bytes(n, n));
    expect_round_trip(test::constant_bytes(n, 'a'));
    expect_round_trip(test::random_bytes(n, n + 1));
    expect_round_trip(test::mixed_bytes(n, n + 2));
  }
}

TEST(RansFile, RoundTripsOnOneAndManyThreadsAndOtherShapes) {
  const Bytes in = test::mixed_bytes(3 * (std::size_t{1} << 20) + 77, 9);
  for (const int threads : {1, 4}) {
    RansFileOptions o;
    o.threads = threads;
    expect_round_trip(in, o);
    o.block_size = std::size_t{1} << 20;
    expect_round_trip(in, o);
    o.block_size = std::size_t{16} << 20;  // the largest: one block
    expect_round_trip(in, o);
  }
  RansFileOptions o;
  o.chunk_kib = 1;
  o.scale_bits = 8;
  o.lanes = 5;
  expect_round_trip(in, o);
  // Files of every thread count are the same bytes.
  RansFileOptions one;
  one.threads = 1;
  EXPECT_TRUE(compress_ok(in, one) == compress_ok(in));
}

TEST(RansFile, IncompressibleBlocksAreStoredRaw) {
  Bytes in = test::random_bytes(3 * kBlock, 4);
  const Bytes text = test::text_like_bytes(kBlock, 5);
  in.insert(in.begin() + kBlock, text.begin(), text.end());  // random, text, random, random
  const Bytes file = compress_ok(in);
  Bytes back;
  RansFileStats stats;
  ASSERT_STATUS(decompress(file, &back, {}, &stats), StatusCode::ok);
  EXPECT_TRUE(back == in);
  EXPECT_EQ(stats.blocks, 4u);
  EXPECT_EQ(stats.raw_blocks, 3u);
  EXPECT_LT(file.size(), in.size() - text.size() / 4);
  EXPECT_LE(file.size(), rans_file_max_compressed_size(in.size()));
  // One byte and empty content.
  EXPECT_EQ(compress_ok(Bytes{}).size(), rf::kHeaderBytes + rf::kBlockHeaderBytes + rf::kTrailerBytes);
  EXPECT_EQ(compress_ok(Bytes{42}).size(), rf::kHeaderBytes + 2 * rf::kBlockHeaderBytes + 1 + rf::kTrailerBytes);
}

TEST(RansFile, SilesiaRoundTrips) {
  if (test::silesia_dir().empty()) GTEST_SKIP() << "the Silesia corpus is not available";
  std::uint64_t total = 0, packed = 0;
  for (const std::string& name : test::silesia_names()) {
    SCOPED_TRACE(name);
    const Bytes in = test::read_file(test::silesia_dir() / name);
    const Bytes file = compress_ok(in);
    Bytes back;
    ASSERT_STATUS(decompress(file, &back), StatusCode::ok);
    ASSERT_TRUE(back == in);
    total += in.size();
    packed += file.size();
  }
  // Order-0 coding of silesia7 in 64 KiB blocks: 1.989 measured.
  EXPECT_GT(static_cast<double>(total) / static_cast<double>(packed), 1.95);
}

TEST(RansFile, ConcatenatedFilesDecodeToTheirConcatenation) {
  const Bytes a = test::text_like_bytes(100000, 1), b = test::mixed_bytes(70000, 2);
  Bytes file = compress_ok(a);
  const Bytes second = compress_ok(b), empty = compress_ok({});
  file.insert(file.end(), empty.begin(), empty.end());
  file.insert(file.end(), second.begin(), second.end());
  Bytes back;
  RansFileStats stats;
  ASSERT_STATUS(decompress(file, &back, {}, &stats), StatusCode::ok);
  Bytes want = a;
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_TRUE(back == want);
  EXPECT_EQ(stats.members, 3u);
}

TEST(RansFile, OutputLimitAndCallerBuffers) {
  const Bytes in = test::mixed_bytes(3 * kBlock + 5, 3);
  const Bytes file = compress_ok(in);
  Bytes back;
  RansFileDecodeOptions o;
  o.max_output = in.size() - 1;
  EXPECT_STATUS(decompress(file, &back, o), StatusCode::output_limit);
  EXPECT_TRUE(back.empty());
  o.max_output = in.size();
  EXPECT_STATUS(decompress(file, &back, o), StatusCode::ok);
  EXPECT_TRUE(back == in);

  Bytes out(in.size());
  std::size_t size = 1;
  EXPECT_STATUS(rans_file_decompress({file.data(), file.size()}, {out.data(), out.size()}, &size), StatusCode::ok);
  EXPECT_EQ(size, in.size());
  EXPECT_TRUE(out == in);
  EXPECT_STATUS(rans_file_decompress({file.data(), file.size()}, {out.data(), out.size() - 1}, &size),
                StatusCode::output_too_small);
  EXPECT_EQ(size, 0u);

  Bytes packed(rans_file_max_compressed_size(in.size()));
  ASSERT_STATUS(rans_file_compress({in.data(), in.size()}, {packed.data(), packed.size()}, &size), StatusCode::ok);
  packed.resize(size);
  EXPECT_TRUE(packed == file);
  EXPECT_STATUS(rans_file_compress({in.data(), in.size()}, {packed.data(), size - 1}, &size),
                StatusCode::output_too_small);
}

TEST(RansFile, ProgressReportsEveryByte) {
  const Bytes in = test::mixed_bytes(20 * kBlock + 3, 10);
  std::uint64_t last_in = 0, last_out = 0, calls = 0;
  RansFileOptions o;
  o.progress = [&](std::uint64_t bytes_in, std::uint64_t bytes_out) {
    EXPECT_GE(bytes_in, last_in);
    EXPECT_GE(bytes_out, last_out);
    last_in = bytes_in;
    last_out = bytes_out;
    ++calls;
  };
  test::StingySource src(in);
  Bytes file;
  auto sink = vector_sink(&file);
  StreamStats stats;
  ASSERT_STATUS(rans_file_compress_stream(src, *sink, o, &stats), StatusCode::ok);
  ASSERT_TRUE(sink->flush().ok());
  EXPECT_GE(calls, 1u);
  EXPECT_EQ(last_in, in.size());
  EXPECT_EQ(stats.bytes_in, in.size());
  EXPECT_EQ(stats.bytes_out, file.size());
  RansFileDecodeOptions d;
  last_in = last_out = calls = 0;
  d.progress = [&](std::uint64_t bytes_in, std::uint64_t bytes_out) {
    EXPECT_GE(bytes_out, last_out);
    last_in = bytes_in;
    last_out = bytes_out;
    ++calls;
  };
  Bytes back;
  ASSERT_STATUS(decompress(file, &back, d), StatusCode::ok);
  EXPECT_GE(calls, 1u);
  EXPECT_EQ(last_out, in.size());
  EXPECT_TRUE(back == in);
}

TEST(RansFile, InvalidOptions) {
  Bytes out;
  const Bytes in(10, 1);
  for (const std::size_t b : {std::size_t{0}, std::size_t{32} << 10, (std::size_t{64} << 10) + 1,
                              std::size_t{32} << 20}) {
    RansFileOptions o;
    o.block_size = b;
    EXPECT_STATUS(rans_file_compress({in.data(), in.size()}, &out, o), StatusCode::invalid_argument);
    EXPECT_EQ(rans_file_max_compressed_size(10, o), 0u);
  }
  RansFileOptions o;
  o.lanes = 0;
  EXPECT_STATUS(rans_file_compress({in.data(), in.size()}, &out, o), StatusCode::invalid_argument);
  o = {};
  o.scale_bits = 13;
  EXPECT_STATUS(rans_file_compress({in.data(), in.size()}, &out, o), StatusCode::invalid_argument);
  EXPECT_STATUS(rans_file_compress({nullptr, 3}, &out), StatusCode::invalid_argument);
}

TEST(RansFile, MagicIsRecognised) {
  const Bytes file = compress_ok(Bytes{1, 2, 3});
  EXPECT_TRUE(rans_file_magic(file.data(), file.size()));
  EXPECT_FALSE(rans_file_magic(file.data(), 3));
  const Bytes stream = {'T', 'N', 'D', 'R'};  // a bare rANS stream is not a file
  EXPECT_FALSE(rans_file_magic(stream.data(), stream.size()));
}

// ------------------------------------------------------------ malformed ----

TEST(RansFileMalformed, EveryTruncationIsTruncated) {
  const Bytes in = test::mixed_bytes(2 * kBlock + 100, 6);
  const Bytes file = compress_ok(in);
  Bytes back;
  // Every cut in the headers and trailer, and a stride through the payloads.
  for (std::size_t cut = 0; cut < file.size(); cut += (cut < 64 || cut + 64 > file.size()) ? 1 : 997) {
    const Bytes part(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_STATUS(decompress(part, &back), StatusCode::truncated) << "cut at " << cut;
    EXPECT_TRUE(back.empty());
  }
  for (const std::size_t at : block_offsets(file)) {
    for (std::size_t cut = at; cut < at + rf::kBlockHeaderBytes + 2; ++cut) {
      const Bytes part(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(cut));
      EXPECT_STATUS(decompress(part, &back), StatusCode::truncated) << "cut at " << cut;
    }
  }
}

TEST(RansFileMalformed, HeaderFields) {
  const Bytes file = compress_ok(test::text_like_bytes(1000, 1));
  Bytes back, bad = file;
  bad[0] = 'X';
  EXPECT_STATUS(decompress(bad, &back), StatusCode::bad_data);
  bad = file;
  bad[4] = 2;  // version
  EXPECT_STATUS(decompress(bad, &back), StatusCode::unsupported);
  for (const std::size_t flag : {6, 7}) {
    bad = file;
    bad[flag] = 1;
    EXPECT_STATUS(decompress(bad, &back), StatusCode::unsupported);
  }
  for (const std::uint8_t log2 : {0, 15, 25, 255}) {
    bad = file;
    bad[5] = log2;
    EXPECT_STATUS(decompress(bad, &back), StatusCode::bad_data) << int{log2};
  }
  // A larger block size than needed is fine.
  bad = file;
  bad[5] = 24;
  EXPECT_STATUS(decompress(bad, &back), StatusCode::ok);
}

TEST(RansFileMalformed, LyingBlockSizes) {
  Bytes in = test::text_like_bytes(2 * kBlock, 2);
  const Bytes noise = test::random_bytes(1000, 3);
  in.insert(in.end(), noise.begin(), noise.end());  // a raw last block
  const Bytes file = compress_ok(in);
  const std::vector<std::size_t> at = block_offsets(file);
  ASSERT_EQ(at.size(), 4u);
  ASSERT_EQ(file[at[2] + 7] & 0x80, 0x80) << "the last block is raw";
  Bytes back;
  auto with = [&](std::size_t pos, std::uint32_t v) {
    Bytes b = file;
    put_le32(&b, pos, v);
    return b;
  };
  const std::uint32_t stored0 = file[at[0] + 4] | file[at[0] + 5] << 8 | file[at[0] + 6] << 16;
  // Content over the block size.
  EXPECT_STATUS(decompress(with(at[0], kBlock + 1), &back), StatusCode::bad_data);
  EXPECT_STATUS(decompress(with(at[0], 0xFFFFFFFFu), &back), StatusCode::bad_data);
  // A rANS payload not smaller than its content.
  EXPECT_STATUS(decompress(with(at[0], stored0), &back), StatusCode::bad_data);
  // A raw payload whose size is not its content's.
  EXPECT_STATUS(decompress(with(at[2], 999), &back), StatusCode::bad_data);
  EXPECT_STATUS(decompress(with(at[2] + 4, rf::kRawBit | 1001), &back), StatusCode::bad_data);
  // A payload size that runs past the input.
  EXPECT_STATUS(decompress(with(at[1] + 4, static_cast<std::uint32_t>(file.size() - at[1] - 7)), &back),
                StatusCode::truncated);
  // A payload size short of the stream: the stream is cut (its own check).
  EXPECT_STATUS(decompress(with(at[0] + 4, stored0 - 1), &back), StatusCode::truncated);
  // A stream whose length disagrees with its block header.
  EXPECT_STATUS(decompress(with(at[0], kBlock - 1), &back), StatusCode::bad_data);
  EXPECT_STATUS(decompress(with(at[1], stored0 + 1), &back), StatusCode::bad_data);
  // An end marker with a payload.
  EXPECT_STATUS(decompress(with(at[3] + 4, 1), &back), StatusCode::bad_data);
  // A raw block marked as coded.
  EXPECT_STATUS(decompress(with(at[2] + 4, 999), &back), StatusCode::bad_data);
  EXPECT_TRUE(back.empty());
}

TEST(RansFileMalformed, CorruptedContentAndChecksum) {
  Bytes in = test::text_like_bytes(kBlock, 4);
  const Bytes noise = test::random_bytes(5000, 5);
  in.insert(in.end(), noise.begin(), noise.end());
  const Bytes file = compress_ok(in);
  const std::vector<std::size_t> at = block_offsets(file);
  Bytes back, bad = file;
  bad[bad.size() - 3] ^= 0x10;  // the checksum
  EXPECT_STATUS(decompress(bad, &back), StatusCode::checksum_mismatch);
  RansFileDecodeOptions lax;
  lax.verify_checksum = false;
  EXPECT_STATUS(decompress(bad, &back, lax), StatusCode::ok);
  EXPECT_TRUE(back == in);
  bad = file;
  bad[at[1] + rf::kBlockHeaderBytes + 100] ^= 0x01;  // a raw block's content
  EXPECT_STATUS(decompress(bad, &back), StatusCode::checksum_mismatch);
  // Swapped blocks of equal kind decode, but not to the content.
  const Bytes two = compress_ok(test::text_like_bytes(2 * kBlock, 7));
  const std::vector<std::size_t> t = block_offsets(two);
  Bytes swapped(two.begin(), two.begin() + static_cast<std::ptrdiff_t>(t[0]));
  swapped.insert(swapped.end(), two.begin() + static_cast<std::ptrdiff_t>(t[1]),
                 two.begin() + static_cast<std::ptrdiff_t>(t[2]));
  swapped.insert(swapped.end(), two.begin() + static_cast<std::ptrdiff_t>(t[0]),
                 two.begin() + static_cast<std::ptrdiff_t>(t[1]));
  swapped.insert(swapped.end(), two.begin() + static_cast<std::ptrdiff_t>(t[2]), two.end());
  EXPECT_STATUS(decompress(swapped, &back), StatusCode::checksum_mismatch);
  // Every single-byte flip in a coded block gives an error, never a crash
  // or success (the stream's checks or the checksum).
  for (std::size_t i = at[0]; i < at[1]; i += 7) {
    bad = file;
    bad[i] ^= 0x5A;
    const Status s = decompress(bad, &back);
    EXPECT_FALSE(s.ok()) << "flip at " << i;
    EXPECT_TRUE(s.code == StatusCode::bad_data || s.code == StatusCode::truncated ||
                s.code == StatusCode::checksum_mismatch || s.code == StatusCode::unsupported)
        << s.to_string();
  }
}

TEST(RansFileMalformed, DataAfterTheEnd) {
  const Bytes file = compress_ok(test::text_like_bytes(3000, 8));
  Bytes back, bad = file;
  bad.push_back(0);
  EXPECT_STATUS(decompress(bad, &back), StatusCode::bad_data);
  bad = file;
  bad.insert(bad.end(), {'T', 'N'});  // the start of another member
  EXPECT_STATUS(decompress(bad, &back), StatusCode::truncated);
  bad = file;
  bad.insert(bad.end(), {'T', 'N', 'D', 'R'});  // a rANS stream is not a member
  EXPECT_STATUS(decompress(bad, &back), StatusCode::bad_data);
  EXPECT_STATUS(decompress({}, &back), StatusCode::truncated);
}

}  // namespace
}  // namespace tandem
