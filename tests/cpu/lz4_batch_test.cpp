// LZ4 block batches on the CPU backend: per-item results, items that fail
// beside items that succeed, argument checks, the size bound, and blocks that
// liblz4 writes or reads (raw LZ4 blocks are a standard format too).
#include <lz4.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>
#include <thread>

#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::BatchOptions;
using tandem::Codec;
using tandem::ConstBuffer;
using tandem::ItemResult;
using tandem::MutableBuffer;
using tandem::StatusCode;
using tandem::test::Bytes;

BatchOptions cpu(int level = 0, int threads = 0) {
  BatchOptions o;
  o.backend = tandem::Backend::cpu;
  o.level = level;
  o.threads = threads;
  return o;
}

// A batch of inputs with the buffers for both directions.
struct Batch {
  std::vector<Bytes> inputs;
  std::vector<Bytes> compressed;
  std::vector<Bytes> decompressed;

  std::vector<ConstBuffer> in_views() const {
    std::vector<ConstBuffer> v;
    for (const auto& b : inputs) v.push_back({b.data(), b.size()});
    return v;
  }
};

Batch make_batch(std::uint64_t seed) {
  Batch b;
  std::mt19937_64 rng(seed);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{4096}, std::size_t{65536},
                        std::size_t{100000}, std::size_t{(1u << 20) + 3}}) {
    switch (rng() % 4) {
      case 0: b.inputs.push_back(tandem::test::random_bytes(n, rng())); break;
      case 1: b.inputs.push_back(tandem::test::constant_bytes(n, static_cast<std::uint8_t>(rng()))); break;
      case 2: b.inputs.push_back(tandem::test::text_like_bytes(n, rng())); break;
      default: b.inputs.push_back(tandem::test::mixed_bytes(n, rng())); break;
    }
  }
  for (int i = 0; i < 40; ++i) b.inputs.push_back(tandem::test::mixed_bytes(rng() % 20000, rng()));
  return b;
}

// Compresses b.inputs into b.compressed, checking every result.
void compress_all(Batch& b, const BatchOptions& o) {
  const std::size_t n = b.inputs.size();
  b.compressed.assign(n, {});
  std::vector<MutableBuffer> outs(n);
  for (std::size_t i = 0; i < n; ++i) {
    b.compressed[i].resize(tandem::max_compressed_size(Codec::lz4, b.inputs[i].size()));
    outs[i] = {b.compressed[i].data(), b.compressed[i].size()};
  }
  std::vector<ItemResult> results(n);
  const auto ins = b.in_views();
  ASSERT_STATUS(tandem::compress_batch(Codec::lz4, ins, outs, results, o), StatusCode::ok);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_STATUS(results[i].status, StatusCode::ok) << "item " << i;
    ASSERT_GT(results[i].size, 0u) << "an LZ4 block is never empty (item " << i << ")";
    ASSERT_LE(results[i].size, b.compressed[i].size());
    b.compressed[i].resize(results[i].size);
  }
}

void decompress_all_and_check(Batch& b, const BatchOptions& o) {
  const std::size_t n = b.inputs.size();
  b.decompressed.assign(n, {});
  std::vector<ConstBuffer> ins(n);
  std::vector<MutableBuffer> outs(n);
  for (std::size_t i = 0; i < n; ++i) {
    ins[i] = {b.compressed[i].data(), b.compressed[i].size()};
    b.decompressed[i].assign(b.inputs[i].size(), 0xCD);
    outs[i] = {b.decompressed[i].data(), b.decompressed[i].size()};
  }
  std::vector<ItemResult> results(n);
  ASSERT_STATUS(tandem::decompress_batch(Codec::lz4, ins, outs, results, o), StatusCode::ok);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_STATUS(results[i].status, StatusCode::ok) << "item " << i;
    EXPECT_EQ(results[i].size, b.inputs[i].size()) << "item " << i;
    EXPECT_TRUE(b.decompressed[i] == b.inputs[i]) << "item " << i;
  }
}

TEST(Lz4Batch, RoundTripAtEveryLevelAndThreadCount) {
  for (int level : {-5, 0, 1, 3, 9, 12}) {
    for (int threads : {1, 2, 4}) {
      SCOPED_TRACE(testing::Message() << "level " << level << " threads " << threads);
      Batch b = make_batch(static_cast<std::uint64_t>(level + 100 * threads));
      compress_all(b, cpu(level, threads));
      decompress_all_and_check(b, cpu(0, threads));
    }
  }
}

TEST(Lz4Batch, BlocksAreReadableByLiblz4) {
  Batch b = make_batch(1);
  compress_all(b, cpu(0, 2));
  for (std::size_t i = 0; i < b.inputs.size(); ++i) {
    Bytes out(b.inputs[i].size() + 1);
    const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(b.compressed[i].data()),
                                        reinterpret_cast<char*>(out.data()), static_cast<int>(b.compressed[i].size()),
                                        static_cast<int>(out.size()));
    ASSERT_EQ(got, static_cast<int>(b.inputs[i].size())) << "item " << i;
    out.resize(static_cast<std::size_t>(got));
    EXPECT_TRUE(out == b.inputs[i]) << "item " << i;
  }
}

TEST(Lz4Batch, ReadsBlocksWrittenByLiblz4) {
  Batch b = make_batch(2);
  b.compressed.clear();
  for (const auto& in : b.inputs) {
    Bytes c(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(in.size()))));
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(c.data()),
                                       static_cast<int>(in.size()), static_cast<int>(c.size()));
    ASSERT_GT(n, 0);
    c.resize(static_cast<std::size_t>(n));
    b.compressed.push_back(std::move(c));
  }
  decompress_all_and_check(b, cpu(0, 2));
}

TEST(Lz4Batch, HigherLevelsAreSmaller) {
  Batch b;
  b.inputs.push_back(tandem::test::text_like_bytes(1u << 20, 3));
  compress_all(b, cpu(0, 1));
  const std::size_t fast = b.compressed[0].size();
  compress_all(b, cpu(9, 1));
  const std::size_t hc = b.compressed[0].size();
  compress_all(b, cpu(-20, 1));
  const std::size_t faster = b.compressed[0].size();
  EXPECT_LT(hc, fast);
  EXPECT_GT(faster, fast);
}

TEST(Lz4Batch, EmptyBatchIsOk) {
  EXPECT_STATUS(tandem::compress_batch(Codec::lz4, {}, {}, {}, cpu()), StatusCode::ok);
  EXPECT_STATUS(tandem::decompress_batch(Codec::lz4, {}, {}, {}, cpu()), StatusCode::ok);
}

TEST(Lz4Batch, TooSmallOutputFailsOnlyThatItem) {
  Batch b = make_batch(4);
  const std::size_t n = b.inputs.size();
  const std::size_t victim = 3;  // 4096 bytes
  ASSERT_EQ(b.inputs[victim].size(), 4096u);
  b.inputs[victim] = tandem::test::random_bytes(4096, 5);  // incompressible
  std::vector<Bytes> outs(n);
  std::vector<MutableBuffer> views(n);
  for (std::size_t i = 0; i < n; ++i) {
    outs[i].resize(i == victim ? 100 : tandem::max_compressed_size(Codec::lz4, b.inputs[i].size()));
    views[i] = {outs[i].data(), outs[i].size()};
  }
  std::vector<ItemResult> results(n);
  EXPECT_STATUS(tandem::compress_batch(Codec::lz4, b.in_views(), views, results, cpu(0, 2)),
                StatusCode::output_too_small);
  for (std::size_t i = 0; i < n; ++i) {
    if (i == victim) {
      EXPECT_STATUS(results[i].status, StatusCode::output_too_small);
      continue;
    }
    ASSERT_STATUS(results[i].status, StatusCode::ok) << "item " << i;
    Bytes back(b.inputs[i].size() + 1);
    EXPECT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(outs[i].data()), reinterpret_cast<char*>(back.data()),
                                  static_cast<int>(results[i].size), static_cast<int>(back.size())),
              static_cast<int>(b.inputs[i].size()));
  }

  // Decompression: one item gets a buffer one byte short.
  compress_all(b, cpu(0, 2));
  std::vector<ConstBuffer> ins(n);
  std::vector<Bytes> dec(n);
  std::vector<MutableBuffer> dviews(n);
  for (std::size_t i = 0; i < n; ++i) {
    ins[i] = {b.compressed[i].data(), b.compressed[i].size()};
    dec[i].resize(i == victim ? b.inputs[i].size() - 1 : b.inputs[i].size());
    dviews[i] = {dec[i].data(), dec[i].size()};
  }
  const tandem::Status st = tandem::decompress_batch(Codec::lz4, ins, dviews, results, cpu(0, 2));
  EXPECT_FALSE(st.ok());
  // A raw LZ4 block does not say its decoded size, so running out of room
  // may also read as bad data; either way this item alone fails.
  EXPECT_TRUE(results[victim].status.code == StatusCode::output_too_small ||
              results[victim].status.code == StatusCode::bad_data)
      << results[victim].status.to_string();
  EXPECT_EQ(st.code, results[victim].status.code) << "the batch reports its first failed item";
  for (std::size_t i = 0; i < n; ++i) {
    if (i == victim) continue;
    EXPECT_STATUS(results[i].status, StatusCode::ok) << "item " << i;
    EXPECT_TRUE(dec[i] == b.inputs[i]) << "item " << i;
  }
}

TEST(Lz4Batch, FirstFailedItemIsReported) {
  // Items 2 and 5 fail in different ways; the batch returns item 2's code.
  const Bytes good = tandem::test::text_like_bytes(5000, 1);
  Bytes block(tandem::max_compressed_size(Codec::lz4, good.size()));
  const int n = LZ4_compress_default(reinterpret_cast<const char*>(good.data()), reinterpret_cast<char*>(block.data()),
                                     static_cast<int>(good.size()), static_cast<int>(block.size()));
  ASSERT_GT(n, 0);
  block.resize(static_cast<std::size_t>(n));
  const Bytes bad{0x10, 'a', 0x10, 0x00, 0xC0, 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm'};
  std::vector<ConstBuffer> ins;
  std::vector<Bytes> outs(7, Bytes(good.size()));
  std::vector<MutableBuffer> views;
  for (int i = 0; i < 7; ++i) {
    if (i == 2) ins.push_back({bad.data(), bad.size()});
    else if (i == 5) ins.push_back({block.data(), block.size() - 3});  // cut short
    else ins.push_back({block.data(), block.size()});
    views.push_back({outs[i].data(), outs[i].size()});
  }
  std::vector<ItemResult> results(7);
  EXPECT_STATUS(tandem::decompress_batch(Codec::lz4, ins, views, results, cpu(0, 3)), StatusCode::bad_data);
  EXPECT_STATUS(results[2].status, StatusCode::bad_data);
  EXPECT_FALSE(results[5].status.ok());
  for (int i : {0, 1, 3, 4, 6}) {
    EXPECT_STATUS(results[i].status, StatusCode::ok) << "item " << i;
    EXPECT_EQ(results[i].size, good.size());
    EXPECT_TRUE(outs[i] == good) << "item " << i;
  }
}

TEST(Lz4Batch, MismatchedSpansAreInvalidArgument) {
  Batch b = make_batch(6);
  b.inputs.resize(3);
  std::vector<Bytes> outs(3, Bytes(1u << 21));
  std::vector<MutableBuffer> views;
  for (auto& o : outs) views.push_back({o.data(), o.size()});
  std::vector<ItemResult> results(3);
  const auto ins = b.in_views();
  std::span<const ConstBuffer> in3(ins);
  std::span<const MutableBuffer> out3(views);
  std::span<ItemResult> res3(results);
  EXPECT_STATUS(tandem::compress_batch(Codec::lz4, in3.first(2), out3, res3, cpu()), StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::compress_batch(Codec::lz4, in3, out3.first(2), res3, cpu()), StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::compress_batch(Codec::lz4, in3, out3, res3.first(2), cpu()), StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::decompress_batch(Codec::lz4, in3.first(2), out3, res3, cpu()), StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::decompress_batch(Codec::lz4, in3, out3.first(1), res3, cpu()), StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::decompress_batch(Codec::lz4, in3, out3, res3.first(0), cpu()), StatusCode::invalid_argument);
  // And the same spans, matched, are fine.
  EXPECT_STATUS(tandem::compress_batch(Codec::lz4, in3, out3, res3, cpu()), StatusCode::ok);
}

TEST(Lz4Batch, MaxCompressedSize) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{65536},
                        std::size_t{1u << 20}, std::size_t{0x7E000000}}) {
    EXPECT_GE(tandem::max_compressed_size(Codec::lz4, n), static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(n))))
        << n;
    EXPECT_EQ(tandem::max_compressed_size(Codec::lz4, n), tandem_lz4_max_compressed_size(n)) << n;
  }
  EXPECT_EQ(tandem::max_compressed_size(Codec::lz4, std::size_t{0x7F000001}), 0u);
  EXPECT_EQ(tandem::max_compressed_size(Codec::lz4, SIZE_MAX), 0u);
  EXPECT_EQ(tandem_lz4_max_compressed_size(SIZE_MAX), 0u);
  // The bound holds for incompressible data at every level.
  const Bytes data = tandem::test::random_bytes(70000, 7);
  for (int level : {-5, 0, 9, 12}) {
    Bytes out(tandem::max_compressed_size(Codec::lz4, data.size()));
    ConstBuffer in{data.data(), data.size()};
    MutableBuffer o{out.data(), out.size()};
    ItemResult r;
    EXPECT_STATUS(tandem::compress_batch(Codec::lz4, {&in, 1}, {&o, 1}, {&r, 1}, cpu(level)), StatusCode::ok);
  }
}

TEST(Lz4Batch, DecodedSizeIsWhatTheBlockHolds) {
  // A larger output buffer than needed: the result says the real size and
  // the bytes after it are left alone.
  const Bytes data = tandem::test::text_like_bytes(3000, 8);
  Bytes block(tandem::max_compressed_size(Codec::lz4, data.size()));
  ConstBuffer in{data.data(), data.size()};
  MutableBuffer out{block.data(), block.size()};
  ItemResult r;
  ASSERT_STATUS(tandem::compress_batch(Codec::lz4, {&in, 1}, {&out, 1}, {&r, 1}, cpu()), StatusCode::ok);
  block.resize(r.size);
  Bytes dec(10000, 0xAA);
  ConstBuffer cin{block.data(), block.size()};
  MutableBuffer dout{dec.data(), dec.size()};
  ASSERT_STATUS(tandem::decompress_batch(Codec::lz4, {&cin, 1}, {&dout, 1}, {&r, 1}, cpu()), StatusCode::ok);
  EXPECT_EQ(r.size, data.size());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), dec.begin()));
  for (std::size_t i = data.size(); i < dec.size(); ++i) ASSERT_EQ(dec[i], 0xAA) << "wrote past the block at " << i;
}

TEST(Lz4Batch, RandomBlocksGiveAStatus) {
  std::mt19937_64 rng(9);
  std::vector<Bytes> ins, outs;
  for (int i = 0; i < 500; ++i) {
    ins.push_back(tandem::test::random_bytes(rng() % 300, rng()));
    outs.push_back(Bytes(rng() % 3000));
  }
  std::vector<ConstBuffer> iv;
  std::vector<MutableBuffer> ov;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    iv.push_back({ins[i].data(), ins[i].size()});
    ov.push_back({outs[i].data(), outs[i].size()});
  }
  std::vector<ItemResult> results(ins.size());
  (void)tandem::decompress_batch(Codec::lz4, iv, ov, results, cpu(0, 2));
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (results[i].status.ok()) EXPECT_LE(results[i].size, outs[i].size());
  }
}

// Regression: the shared pool's parallel_for could deadlock when a helper
// thread finished the last item: the caller saw the job complete and, still
// holding the job's mutex, waited for the helper to leave, while the helper
// waited for that mutex to signal completion. Many small parallel calls hit
// the window; a watchdog turns the hang into a failure with a message.
TEST(Lz4Batch, ManySmallParallelCallsFinish) {
  const Bytes data = tandem::test::text_like_bytes(2000, 12);
  Bytes block(tandem::max_compressed_size(Codec::lz4, data.size()));
  const int n = LZ4_compress_default(reinterpret_cast<const char*>(data.data()), reinterpret_cast<char*>(block.data()),
                                     static_cast<int>(data.size()), static_cast<int>(block.size()));
  ASSERT_GT(n, 0);
  block.resize(static_cast<std::size_t>(n));
  auto work = std::async(std::launch::async, [&] {
    std::vector<Bytes> outs(3, Bytes(data.size()));
    std::vector<ConstBuffer> ins(3, ConstBuffer{block.data(), block.size()});
    std::vector<MutableBuffer> views;
    for (auto& o : outs) views.push_back({o.data(), o.size()});
    std::vector<ItemResult> results(3);
    int good = 0;
    for (int i = 0; i < 20000; ++i) {
      good += tandem::decompress_batch(Codec::lz4, ins, views, results, cpu(0, 2 + i % 3)).ok();
    }
    return good;
  });
  if (work.wait_for(std::chrono::seconds(90)) != std::future_status::ready) {
    // The worker is stuck for good; report and leave without joining it.
    std::fprintf(stderr, "Lz4Batch.ManySmallParallelCallsFinish: 20000 small decompress_batch calls did not "
                         "finish in 90 s: parallel_for is deadlocked\n");
    std::fflush(stderr);
    std::_Exit(1);
  }
  EXPECT_EQ(work.get(), 20000);
}

}  // namespace

