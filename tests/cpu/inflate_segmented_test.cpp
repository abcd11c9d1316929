// The segmented inflate (gpu/inflate_body.hpp's inflate_segmented, through
// the batched kernel's emulation) on the CPU:
// - chunks written by the GPU deflate encoder (its emulation), with the
//   segment starts it reports, inflate to their data at every segment edge
//   (sizes 1 .. 65 segments, random, constant, text-like, mixed, record and
//   Silesia data), in either lane order, with the result of the warp form
//   without starts;
// - lying starts (moved by a bit or a byte, swapped, zero, past the input,
//   another segment size, a capacity above or below the item's size) never
//   change a status, a size or a byte: the item is inflated from its start;
// - streams corrupted under true starts, and chunks from zlib under made-up
//   starts, give the statuses, sizes and bytes of the warp form without
//   starts, and never write past the capacity.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gpu/deflate_gpu.hpp"
#include "gpu/inflate_gpu.hpp"
#include "support/test_support.hpp"
#include "cpu/inflate_test_streams.hpp"

namespace tandem {
namespace {

using gpu::InflateEnd;
using gpu::InflateStatus;
using test::Bytes;

constexpr std::uint32_t kSeg = gpu::kDeflateSegmentBytes;
constexpr std::size_t kGuard = 64;

struct Chunk {
  Bytes stream;
  std::vector<std::uint32_t> starts;
};

Chunk encode(const Bytes& data) {
  Chunk c;
  const Status s = gpu::deflate_compress_emulated(data.data(), data.size(), &c.stream, &c.starts);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return c;
}

struct Result {
  InflateStatus status = InflateStatus::ok;
  InflateEnd end = InflateEnd::input_end;
  std::size_t size = 0;
  std::size_t used = 0;
  Bytes out;  // the first `size` bytes
};

// One item through inflate_emulated, with starts (per_item entries, of
// segments of segment_bytes) or without (starts empty), into `capacity`
// bytes followed by guard bytes that must survive.
Result run(const Bytes& in, std::size_t capacity, const std::vector<std::uint32_t>& starts,
           std::uint32_t segment_bytes = kSeg) {
  Bytes src(in);
  Bytes out(capacity + kGuard, 0x5A);
  const void* in_ptr = src.data();
  void* out_ptr = out.data();
  const std::size_t in_size = src.size();
  Result r;
  gpu::InflateSegments seg;
  if (!starts.empty()) {
    seg.d_starts = starts.data();
    seg.per_item = starts.size();
    seg.segment_bytes = segment_bytes;
  }
  gpu::inflate_emulated(&in_ptr, &in_size, 1, &out_ptr, &capacity, &r.size, &r.status, &r.end, &r.used, seg);
  EXPECT_TRUE(std::all_of(out.begin() + static_cast<std::ptrdiff_t>(capacity), out.end(),
                          [](std::uint8_t b) { return b == 0x5A; }))
      << "write past the capacity";
  EXPECT_LE(r.size, capacity);
  out.resize(std::min(r.size, capacity));
  r.out = std::move(out);
  return r;
}

void expect_same(const Result& a, const Result& b) {
  EXPECT_EQ(a.status, b.status) << inflate_status_name(a.status) << " vs " << inflate_status_name(b.status);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.used, b.used);
  if (a.status == InflateStatus::ok && b.status == InflateStatus::ok) EXPECT_EQ(a.end, b.end);
  EXPECT_TRUE(a.out == b.out) << "the bytes differ";
}

// inflate_segmented itself: whether it took the segments.
bool by_segments(const Bytes& in, std::size_t capacity, const std::vector<std::uint32_t>& starts,
                 std::uint32_t segment_bytes = kSeg) {
  Bytes out(capacity);
  auto tables = std::make_unique<gpu::inflate::InflateTables>();
  std::vector<gpu::SegmentMatch> recs(gpu::inflate::segment_records(capacity));
  const gpu::inflate::SegmentStarts seg{starts.data(), static_cast<std::uint32_t>(starts.size()), segment_bytes};
  auto shared = std::make_unique<gpu::inflate::SegmentShared>();
  return gpu::inflate::inflate_segmented(gpu::simt::Team<gpu::inflate::kSegmentWarps>{0, 1}, 0, in.data(), in.size(),
                                         out.data(), capacity, *tables, seg, recs.data(), *shared)
      .by_segments;
}

void expect_round_trip(const Bytes& data) {
  const Chunk c = encode(data);
  ASSERT_EQ(c.starts.size(), gpu::deflate_segments_per_item(data.size()));
  const Result with = run(c.stream, data.size(), c.starts);
  ASSERT_EQ(with.status, InflateStatus::ok) << inflate_status_name(with.status);
  EXPECT_EQ(with.end, InflateEnd::input_end);
  EXPECT_EQ(with.used, c.stream.size());
  EXPECT_TRUE(with.out == data);
  expect_same(with, run(c.stream, data.size(), {}));
  // Every Huffman-coded chunk of 2 to kMaxSegments segments is taken by segments.
  const bool huffman = c.starts[0] != 0;
  const bool fits = c.starts.size() >= 2 && c.starts.size() <= gpu::inflate::kMaxSegments;
  EXPECT_EQ(by_segments(c.stream, data.size(), c.starts), huffman && fits);
}

std::vector<std::size_t> edge_sizes() {
  return {1,           100,         kSeg - 1,        kSeg,           kSeg + 1,      2 * kSeg - 1, 2 * kSeg,
          2 * kSeg + 1, 3 * kSeg + 7, 65535,         65536,          65537,         100000,       32 * kSeg,
          33 * kSeg,   64 * kSeg,   65 * kSeg};
}

TEST(InflateSegmented, GpuEncoderChunksAtSegmentEdges) {
  for (const std::size_t n : edge_sizes()) {
    SCOPED_TRACE(n);
    expect_round_trip(test::text_like_bytes(n, n));
    expect_round_trip(test::mixed_bytes(n, n + 1));
    expect_round_trip(test::record_bytes(n, n + 2));
    expect_round_trip(test::constant_bytes(n, 7));
  }
}

TEST(InflateSegmented, StoredAndRandomChunks) {
  // Random data is coded stored (starts all 0): inflated as any item.
  for (const std::size_t n : {std::size_t{kSeg} + 1, std::size_t{65536}}) {
    const Bytes data = test::random_bytes(n, 3);
    const Chunk c = encode(data);
    EXPECT_TRUE(std::all_of(c.starts.begin(), c.starts.end(), [](std::uint32_t s) { return s == 0; }));
    const Result r = run(c.stream, n, c.starts);
    ASSERT_EQ(r.status, InflateStatus::ok);
    EXPECT_TRUE(r.out == data);
  }
  // Half random, half text: a Huffman block whose segments differ a lot.
  Bytes data = test::random_bytes(32768, 4);
  const Bytes text = test::text_like_bytes(32768, 5);
  data.insert(data.end(), text.begin(), text.end());
  expect_round_trip(data);
}

TEST(InflateSegmented, EitherLaneOrder) {
  const Bytes data = test::mixed_bytes(65536, 11);
  const Chunk c = encode(data);
  const Result forward = run(c.stream, data.size(), c.starts);
  gpu::simt::host_lanes_reversed() = true;
  const Result reversed = run(c.stream, data.size(), c.starts);
  gpu::simt::host_lanes_reversed() = false;
  ASSERT_EQ(forward.status, InflateStatus::ok);
  EXPECT_TRUE(forward.out == data);
  expect_same(forward, reversed);
}

TEST(InflateSegmented, SilesiaChunks) {
  if (test::silesia_dir().empty()) GTEST_SKIP() << "Silesia corpus not available";
  for (const std::string& name : test::silesia_names()) {
    SCOPED_TRACE(name);
    Bytes data = test::read_file(test::silesia_dir() / name);
    data.resize(std::min<std::size_t>(data.size(), 256u << 10));
    for (std::size_t at = 0; at < data.size(); at += 65536) {
      const Bytes chunk(data.begin() + static_cast<std::ptrdiff_t>(at),
                        data.begin() + static_cast<std::ptrdiff_t>(std::min(at + 65536, data.size())));
      expect_round_trip(chunk);
    }
  }
}

TEST(InflateSegmented, LyingStartsChangeNothing) {
  const Bytes data = test::text_like_bytes(65536, 21);
  const Chunk c = encode(data);
  const Result truth = run(c.stream, data.size(), {});
  ASSERT_EQ(truth.status, InflateStatus::ok);
  std::vector<std::vector<std::uint32_t>> lies;
  for (std::size_t k = 0; k < c.starts.size(); ++k) {
    for (const int delta : {-8, -1, 1, 8}) {
      auto s = c.starts;
      s[k] = static_cast<std::uint32_t>(static_cast<std::int64_t>(s[k]) + delta);
      lies.push_back(s);
    }
    auto z = c.starts;
    z[k] = 0;
    lies.push_back(z);
    auto far = c.starts;
    far[k] = 0xffffffffu;
    lies.push_back(far);
  }
  auto swapped = c.starts;
  std::swap(swapped[2], swapped[3]);
  lies.push_back(swapped);
  ASSERT_TRUE(by_segments(c.stream, data.size(), c.starts));
  for (std::size_t i = 0; i < lies.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same(run(c.stream, data.size(), lies[i]), truth);
    EXPECT_FALSE(by_segments(c.stream, data.size(), lies[i]));
  }
  EXPECT_FALSE(by_segments(c.stream, data.size(), c.starts, kSeg * 2));
  // Another segment size, and capacities other than the item's size.
  expect_same(run(c.stream, data.size(), c.starts, kSeg / 2), truth);
  expect_same(run(c.stream, data.size(), c.starts, kSeg * 2), truth);
  expect_same(run(c.stream, data.size(), c.starts, 1000), truth);  // below the smallest segment taken
  // (Room for a ninth segment, so that a larger capacity is taken at its word.)
  auto padded = c.starts;
  padded.push_back(c.starts.back());
  for (const std::size_t cap : {data.size() + 1, data.size() + kSeg, data.size() - 1, data.size() - kSeg}) {
    SCOPED_TRACE(cap);
    const Result want = run(c.stream, cap, {});
    expect_same(run(c.stream, cap, c.starts), want);
    expect_same(run(c.stream, cap, padded), want);
  }
}

TEST(InflateSegmented, CorruptedStreamsAgreeWithTheWarpForm) {
  const Bytes data = test::mixed_bytes(65536, 31);
  const Chunk c = encode(data);
  std::mt19937_64 rng(5);
  int differed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE(trial);
    Bytes bad = c.stream;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    if (trial % 10 == 0) bad.resize(rng() % bad.size());
    const Result with = run(bad, data.size(), c.starts);
    const Result without = run(bad, data.size(), {});
    expect_same(with, without);
    differed += without.status != InflateStatus::ok || without.out != data ? 1 : 0;
  }
  EXPECT_GT(differed, 100);  // the edits reached the decoder
}

TEST(InflateSegmented, ZlibChunksUnderMadeUpStarts) {
  const Bytes data = test::text_like_bytes(65536, 41);
  const Bytes stream = test::inflate_streams::zlib_raw(data, 6);
  const Result truth = run(stream, data.size(), {});
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::uint32_t> starts(8);
    std::uint32_t at = static_cast<std::uint32_t>(rng() % 2000);
    for (auto& s : starts) {
      s = at;
      at += static_cast<std::uint32_t>(rng() % 40000);
    }
    expect_same(run(stream, data.size(), starts), truth);
  }
}

}  // namespace
}  // namespace tandem
