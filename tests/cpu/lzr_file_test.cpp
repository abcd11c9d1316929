// .lzr files (tandem/lzr_file.hpp, docs/formats/lzr.md "Files"): round trips
// at 0, 1, block - 1, block, block + 1 and several blocks of random,
// constant, text-like and mixed data, through memory and through a source
// that hands out only what was asked for, on one and several threads; each
// coded block is the lzr frame tandem::lzr::encode writes for its content;
// raw blocks for incompressible data; concatenated members; the output
// limit; and malformed files with their exact statuses: another kind of
// block file, truncations, a lying block header, a corrupted frame, a
// corrupted raw block (checksum), data after the end.
#include <algorithm>
#include <cstring>
#include <vector>

#include "format/block_file_format.hpp"
#include "support/test_support.hpp"
#include "tandem/lzr_file.hpp"
#include "tandem/rans_file.hpp"

namespace tandem {
namespace {

using test::Bytes;
namespace bf = block_file;

// Small blocks keep the CPU encoder (the GPU's bodies, emulated) quick.
constexpr std::size_t kBlock = std::size_t{64} << 10;

LzrFileOptions small_blocks(int threads = 0) {
  LzrFileOptions o;
  o.block_size = kBlock;
  o.threads = threads;
  return o;
}

Bytes compress_ok(const Bytes& in, const LzrFileOptions& o = small_blocks()) {
  Bytes out;
  const Status s = lzr_file_compress({in.data(), in.size()}, &out, o);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_LE(out.size(), lzr_file_max_compressed_size(in.size(), o));
  return out;
}

Status decompress(const Bytes& file, Bytes* out, const LzrFileDecodeOptions& o = {}, LzrFileStats* stats = nullptr) {
  return lzr_file_decompress({file.data(), file.size()}, out, o, stats);
}

std::uint32_t le32(const Bytes& b, std::size_t at) {
  return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | std::uint32_t{b[at + 3]} << 24;
}

// The offsets of each block header of a one-member file, and of its end marker last.
std::vector<std::size_t> block_offsets(const Bytes& file) {
  std::vector<std::size_t> at;
  std::size_t p = bf::kHeaderBytes;
  for (;;) {
    at.push_back(p);
    if (le32(file, p) == 0) return at;
    p += bf::kBlockHeaderBytes + (le32(file, p + 4) & ~bf::kRawBit);
  }
}

void expect_round_trip(const Bytes& in, const LzrFileOptions& o = small_blocks()) {
  SCOPED_TRACE(::testing::Message() << "n=" << in.size() << " block=" << o.block_size << " threads=" << o.threads);
  const Bytes file = compress_ok(in, o);
  ASSERT_TRUE(lzr_file_magic(file.data(), file.size()));
  Bytes back;
  LzrFileStats stats;
  LzrFileDecodeOptions d;
  d.threads = o.threads;
  ASSERT_STATUS(decompress(file, &back, d, &stats), StatusCode::ok);
  EXPECT_TRUE(back == in);
  EXPECT_EQ(stats.members, 1u);
  EXPECT_EQ(stats.blocks, (in.size() + o.block_size - 1) / o.block_size);
  test::StingySource src(file);
  Bytes streamed;
  auto sink = vector_sink(&streamed);
  ASSERT_STATUS(lzr_file_decompress_stream(src, *sink, d), StatusCode::ok);
  ASSERT_TRUE(sink->flush().ok());
  EXPECT_EQ(src.violations, 0);
  EXPECT_TRUE(streamed == in);
}

TEST(LzrFile, RoundTripsAtBlockEdges) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, kBlock - 1, kBlock, kBlock + 1,
                              3 * kBlock + 12345}) {
    expect_round_trip(test::text_like_bytes(n, n));
    expect_round_trip(test::constant_bytes(n, 'a'));
    expect_round_trip(test::random_bytes(n, n + 1));
    expect_round_trip(test::mixed_bytes(n, n + 2));
  }
}

TEST(LzrFile, RoundTripsOnOneAndManyThreadsAndTheDefaults) {
  const Bytes in = test::mixed_bytes((std::size_t{5} << 20) + 77, 9);
  expect_round_trip(in, small_blocks(1));
  expect_round_trip(in, small_blocks(4));
  LzrFileOptions large;  // 4 MiB blocks: one full, one partial
  expect_round_trip(in, large);
  LzrFileOptions other = small_blocks();
  other.params.block_log = lzr::kMinBlockLog;
  expect_round_trip(in, other);
  // Files of every thread count are the same bytes.
  EXPECT_TRUE(compress_ok(in, small_blocks(1)) == compress_ok(in, small_blocks(3)));
}

TEST(LzrFile, CodedBlocksAreTheFramesOfTheirContent) {
  Bytes in = test::text_like_bytes(2 * kBlock + 999, 21);
  const Bytes noise = test::random_bytes(kBlock, 22);
  in.insert(in.begin() + kBlock, noise.begin(), noise.end());  // text, random, text, text
  const Bytes file = compress_ok(in);
  const std::vector<std::size_t> at = block_offsets(file);
  ASSERT_EQ(at.size(), 5u);
  LzrFileStats stats;
  Bytes back;
  ASSERT_STATUS(decompress(file, &back, {}, &stats), StatusCode::ok);
  EXPECT_EQ(stats.raw_blocks, 1u);
  for (std::size_t i = 0; i + 1 < at.size(); ++i) {
    SCOPED_TRACE(i);
    const std::size_t n = le32(file, at[i]);
    const std::uint32_t stored = le32(file, at[i] + 4);
    const Bytes content(in.begin() + static_cast<std::ptrdiff_t>(i * kBlock),
                        in.begin() + static_cast<std::ptrdiff_t>(i * kBlock + n));
    const Bytes payload(file.begin() + static_cast<std::ptrdiff_t>(at[i] + bf::kBlockHeaderBytes),
                        file.begin() + static_cast<std::ptrdiff_t>(at[i + 1]));
    if (stored & bf::kRawBit) {
      EXPECT_TRUE(payload == content) << "a raw block holds its content";
      continue;
    }
    Bytes frame;
    ASSERT_TRUE(lzr::encode({content.data(), content.size()}, lzr::Params{}, &frame).ok());
    EXPECT_TRUE(payload == frame);
  }
}

TEST(LzrFile, ConcatenatedMembersAndTheOutputLimit) {
  const Bytes a = test::text_like_bytes(100000, 31), b = test::mixed_bytes(70000, 32);
  Bytes file = compress_ok(a);
  const Bytes second = compress_ok(b);
  file.insert(file.end(), second.begin(), second.end());
  Bytes back;
  LzrFileStats stats;
  ASSERT_STATUS(decompress(file, &back, {}, &stats), StatusCode::ok);
  Bytes both = a;
  both.insert(both.end(), b.begin(), b.end());
  EXPECT_TRUE(back == both);
  EXPECT_EQ(stats.members, 2u);
  LzrFileDecodeOptions capped;
  capped.max_output = a.size() + 10;
  EXPECT_STATUS(decompress(file, &back, capped), StatusCode::output_limit);
  EXPECT_TRUE(back.empty());
}

TEST(LzrFile, BadOptions) {
  Bytes out;
  LzrFileOptions o;
  o.block_size = 3 << 20;
  EXPECT_STATUS(lzr_file_compress({nullptr, 0}, &out, o), StatusCode::invalid_argument);
  EXPECT_EQ(lzr_file_max_compressed_size(10, o), 0u);
  o = LzrFileOptions{};
  o.params.block_log = 20;
  EXPECT_STATUS(lzr_file_compress({nullptr, 0}, &out, o), StatusCode::invalid_argument);
}

TEST(LzrFileMalformed, OtherFilesAndTruncations) {
  Bytes back;
  // A .rans file is not a .lzr file, nor the reverse.
  const Bytes text = test::text_like_bytes(5000, 41);
  Bytes rans;
  ASSERT_TRUE(rans_file_compress({text.data(), text.size()}, &rans).ok());
  const Status s = decompress(rans, &back);
  EXPECT_STATUS(s, StatusCode::bad_data);
  EXPECT_NE(s.to_string().find("not a tandem lzr file"), std::string::npos) << s.to_string();
  const Bytes file = compress_ok(test::text_like_bytes(2 * kBlock + 5, 42));
  EXPECT_FALSE(rans_file_decompress({file.data(), file.size()}, &back).ok());
  // Every cut is truncated.
  for (std::size_t cut = 0; cut < file.size(); cut += cut < 64 ? 1 : 997) {
    EXPECT_STATUS(decompress(Bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(cut)), &back),
                  StatusCode::truncated)
        << "cut at " << cut;
  }
  Bytes bad = file;
  bad[4] = 2;
  EXPECT_STATUS(decompress(bad, &back), StatusCode::unsupported);
  bad = file;
  bad[5] = 25;
  EXPECT_STATUS(decompress(bad, &back), StatusCode::bad_data);
}

TEST(LzrFileMalformed, LyingBlocksCorruptFramesAndChecksums) {
  Bytes in = test::text_like_bytes(kBlock, 51);
  const Bytes noise = test::random_bytes(5000, 52);
  in.insert(in.end(), noise.begin(), noise.end());  // a coded block, a raw one
  const Bytes file = compress_ok(in);
  const std::vector<std::size_t> at = block_offsets(file);
  ASSERT_EQ(at.size(), 3u);
  Bytes back;
  auto with = [&](std::size_t pos, std::uint32_t v) {
    Bytes b = file;
    for (int i = 0; i < 4; ++i) b[pos + i] = static_cast<std::uint8_t>(v >> (8 * i));
    return b;
  };
  // The frame decodes to another length than its block header says.
  EXPECT_STATUS(decompress(with(at[0], kBlock - 1), &back), StatusCode::bad_data);
  // A frame cut by its block header: the frame's own check.
  EXPECT_STATUS(decompress(with(at[0] + 4, le32(file, at[0] + 4) - 1), &back), StatusCode::truncated);
  // Content over the block size; a raw payload of another size.
  EXPECT_STATUS(decompress(with(at[0], kBlock + 1), &back), StatusCode::bad_data);
  EXPECT_STATUS(decompress(with(at[1] + 4, bf::kRawBit | 4999), &back), StatusCode::bad_data);
  // A raw block's content and the checksum.
  Bytes bad = file;
  bad[at[1] + bf::kBlockHeaderBytes + 10] ^= 0x01;
  EXPECT_STATUS(decompress(bad, &back), StatusCode::checksum_mismatch);
  bad = file;
  bad[bad.size() - 2] ^= 0x40;
  EXPECT_STATUS(decompress(bad, &back), StatusCode::checksum_mismatch);
  LzrFileDecodeOptions lax;
  lax.verify_checksum = false;
  EXPECT_STATUS(decompress(bad, &back, lax), StatusCode::ok);
  EXPECT_TRUE(back == in);
  // Flips in the coded block: an error, never a crash nor other content. (A
  // flip may also leave the content as it was, where a match's changed
  // offset finds the same bytes elsewhere; the checksum then agrees.)
  int failed = 0;
  for (std::size_t i = at[0]; i < at[1]; i += 13) {
    bad = file;
    bad[i] ^= 0x5A;
    const Status s = decompress(bad, &back);
    if (s.ok()) {
      EXPECT_TRUE(back == in) << "flip at " << i;
      continue;
    }
    ++failed;
    EXPECT_TRUE(s.code == StatusCode::bad_data || s.code == StatusCode::truncated ||
                s.code == StatusCode::checksum_mismatch || s.code == StatusCode::unsupported)
        << s.to_string();
  }
  EXPECT_GT(failed, static_cast<int>((at[1] - at[0]) / 13) * 9 / 10);
  // Data after the end.
  bad = file;
  bad.push_back(0);
  EXPECT_STATUS(decompress(bad, &back), StatusCode::bad_data);
  EXPECT_STATUS(decompress({}, &back), StatusCode::truncated);
}

}  // namespace
}  // namespace tandem
