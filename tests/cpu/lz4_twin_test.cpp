// The CPU twin of the GPU LZ4 encoder (src/cpu/lz4_twin.hpp) against the
// GPU encoder's emulation (byte for byte what the device writes): the same
// status, size and bytes for every kind of data, sizes on both sides of every
// segment and table edge, and capacities from none to the bound, with guard
// bytes after each output; every block decodes with liblz4 to its input.
// The emulation is slow (tens of MB/s), so the data here is a few tens of
// MB in all.
#include "cpu/lz4_twin.hpp"

#include <lz4.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpu/lz4_gpu_emulate.hpp"
#include "gpu/lz4_gpu_encode.hpp"
#include "support/lz4_block_cases.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::gpu::ItemStatus;
using tandem::test::Bytes;
using tandem::test::GuardedBuffer;
using tandem::test::PageEndCopy;

constexpr std::size_t kSeg = tandem::gpu::lz4k::kSegmentSize;

// ---- data ----

// Runs of one byte, 1 to 300 long.
Bytes run_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b;
  b.reserve(n);
  while (b.size() < n) {
    const auto v = static_cast<std::uint8_t>(rng());
    const std::size_t len = std::min<std::size_t>(n - b.size(), 1 + rng() % 300);
    b.insert(b.end(), len, v);
  }
  return b;
}

// Letters drawn from the first `letters` of the alphabet: many short
// matches, and many positions of each hash.
Bytes alphabet_bytes(std::size_t n, int letters, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (auto& c : b) c = static_cast<std::uint8_t>('a' + rng() % static_cast<unsigned>(letters));
  return b;
}

// Words of a small vocabulary: text that repeats, with long and short matches.
Bytes word_bytes(std::size_t n, std::uint64_t seed) {
  static const char* const words[] = {"aa ", "ab ", "ba ", "abba ", "baab ", "aab\n", "bab "};
  std::mt19937_64 rng(seed);
  Bytes b;
  b.reserve(n + 8);
  while (b.size() < n) {
    for (const char* w = words[rng() % 7]; *w; ++w) b.push_back(static_cast<std::uint8_t>(*w));
  }
  b.resize(n);
  return b;
}

// A random pattern of `period` bytes repeated, a byte changed now and then:
// matches that run across segments, at offsets near and far.
Bytes periodic_bytes(std::size_t n, std::size_t period, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = i < period ? static_cast<std::uint8_t>(rng()) : b[i - period];
  for (std::size_t k = n / 997; k > 0; --k) b[rng() % n] ^= static_cast<std::uint8_t>(1 + rng() % 255);
  return b;
}

constexpr int kKinds = 9;
const char* kind_name(int kind) {
  static const char* const names[kKinds] = {"random", "zeros",    "runs",      "two letters", "four letters",
                                            "words",  "periodic", "text-like", "records"};
  return names[kind];
}
Bytes make_data(int kind, std::size_t n, std::uint64_t seed) {
  switch (kind) {
    case 0: return tandem::test::random_bytes(n, seed);
    case 1: return tandem::test::constant_bytes(n, 0);
    case 2: return run_bytes(n, seed);
    case 3: return alphabet_bytes(n, 2, seed);
    case 4: return alphabet_bytes(n, 4, seed);
    case 5: return word_bytes(n, seed);
    case 6: return periodic_bytes(n, 1 + seed % 5000, seed);
    case 7: return tandem::test::text_like_bytes(n, seed);
    default: return tandem::test::record_bytes(n, seed);
  }
}

// ---- checks ----

struct Result {
  ItemStatus status;
  std::size_t size;
  Bytes bytes;  // the block, when it is one
};

bool is_block(ItemStatus s) { return s == ItemStatus::ok || s == ItemStatus::incompressible; }

template <class Encode>
Result run_encoder(Encode&& encode, const std::uint8_t* in, std::size_t n, std::size_t cap, const char* who) {
  GuardedBuffer out(cap);
  std::size_t size = 12345;
  const ItemStatus st = encode(in, n, out.data(), cap, &size);
  EXPECT_TRUE(out.guard_intact()) << who << " wrote past its capacity of " << cap;
  Result r{st, size, {}};
  if (is_block(st) && size <= cap) r.bytes = out.prefix(size);
  return r;
}

// The twin and the emulation on in (read from a copy that ends at an
// unreadable page) into cap bytes: the same status, size and bytes, and a
// block that liblz4 decodes to in. Returns the twin's result.
Result expect_same(const Bytes& in, const PageEndCopy& src, std::size_t cap) {
  SCOPED_TRACE("capacity " + std::to_string(cap));
  const Result twin = run_encoder(tandem::cpu::lz4_twin_compress, src.get(), in.size(), cap, "the twin");
  const Result gpu = run_encoder(tandem::gpu::lz4_encode_block_emulated, src.get(), in.size(), cap, "the emulation");
  EXPECT_EQ(twin.status, gpu.status);
  EXPECT_EQ(twin.size, gpu.size);
  if (twin.bytes != gpu.bytes) {
    std::size_t at = 0;
    while (at < twin.bytes.size() && at < gpu.bytes.size() && twin.bytes[at] == gpu.bytes[at]) ++at;
    ADD_FAILURE() << "the blocks differ from byte " << at << " (sizes " << twin.bytes.size() << " and "
                  << gpu.bytes.size() << ")";
  }
  if (is_block(twin.status)) {
    EXPECT_EQ(twin.status == ItemStatus::ok, twin.size < in.size());
    Bytes back(in.size() + 1);
    const int r =
        LZ4_decompress_safe(reinterpret_cast<const char*>(twin.bytes.data()), reinterpret_cast<char*>(back.data()),
                            static_cast<int>(twin.bytes.size()), static_cast<int>(back.size()));
    EXPECT_EQ(r, static_cast<int>(in.size())) << "liblz4 does not decode the block to its input";
    if (r == static_cast<int>(in.size())) EXPECT_TRUE(std::equal(in.begin(), in.end(), back.begin()));
  } else {
    EXPECT_EQ(twin.size, 0u);
  }
  return twin;
}

// Every capacity that matters: the bound, exactly the block, one byte less,
// none, the input's size and one byte less, and the room a compressed page
// has (7/8 of the page).
void expect_same_all_capacities(const Bytes& in) {
  const PageEndCopy src(in);
  const std::size_t n = in.size();
  const Result full = expect_same(in, src, tandem::gpu::lz4_max_compressed_size(n));
  EXPECT_TRUE(is_block(full.status)) << "status " << static_cast<int>(full.status) << " with the bound as capacity";
  if (!is_block(full.status)) return;
  for (const std::size_t cap : {full.size, full.size - 1, std::size_t{0}, n, n ? n - 1 : 0, n - n / 8}) {
    expect_same(in, src, cap);
  }
}

// As expect_same_all_capacities, but the emulation only with the bound: the
// twin's answer for the other capacities follows from its size (for the
// larger data, where the emulation's time counts).
void expect_same_derived_capacities(const Bytes& in) {
  const PageEndCopy src(in);
  const std::size_t bound = tandem::gpu::lz4_max_compressed_size(in.size());
  const Result full = expect_same(in, src, bound);
  ASSERT_TRUE(is_block(full.status));
  const std::size_t n = in.size();
  for (const std::size_t cap : {full.size, full.size - 1, std::size_t{0}, n, n - 1, n - n / 8, bound + 100}) {
    const Result r = run_encoder(tandem::cpu::lz4_twin_compress, src.get(), in.size(), cap, "the twin");
    if (cap >= full.size) {
      EXPECT_EQ(r.status, full.status) << "capacity " << cap;
      EXPECT_TRUE(r.bytes == full.bytes) << "capacity " << cap;
    } else {
      EXPECT_EQ(r.status, ItemStatus::output_overflow) << "capacity " << cap;
      EXPECT_EQ(r.size, 0u) << "capacity " << cap;
    }
  }
}

const std::vector<std::size_t>& edge_sizes() {
  static const std::vector<std::size_t> sizes = {0,    1,    5,    12,    13,    4095,      4096, 4097,
                                                 8191, 8192, 8193, 16384, 24576, 32768 + 1, 65536};
  return sizes;
}

TEST(Lz4Twin, MatchesTheGpuEncoderAtEdgeSizes) {
  for (const std::size_t n : edge_sizes()) {
    for (int kind = 0; kind < kKinds; ++kind) {
      SCOPED_TRACE(std::string(kind_name(kind)) + " data of " + std::to_string(n) + " bytes");
      expect_same_all_capacities(make_data(kind, n, 100 + n + static_cast<std::uint64_t>(kind)));
    }
  }
}

TEST(Lz4Twin, MatchesTheGpuEncoderAtRandomSizes) {
  std::mt19937_64 rng(20250611);
  for (int i = 0; i < 300; ++i) {
    // Half of them small (a page or less), half up to 70000 bytes.
    const std::size_t n = i % 2 ? rng() % 4200 : rng() % 70001;
    const int kind = i % kKinds;
    SCOPED_TRACE(std::string(kind_name(kind)) + " data of " + std::to_string(n) + " bytes");
    expect_same_all_capacities(make_data(kind, n, 5000 + static_cast<std::uint64_t>(i)));
  }
}

// Blocks that end at and just past a segment's end, where the last segment
// is too short to parse or to be hashed whole into the prime table before it.
TEST(Lz4Twin, MatchesTheGpuEncoderAroundSegmentEnds) {
  for (const std::size_t segs : {1, 2, 3, 4, 8, 9}) {
    for (const std::size_t extra : {0, 1, 2, 3, 4, 5, 12, 13, 17}) {
      const std::size_t n = segs * kSeg + extra;
      for (const int kind : {0, 3, 6, 7}) {
        SCOPED_TRACE(std::string(kind_name(kind)) + " data of " + std::to_string(n) + " bytes");
        expect_same_derived_capacities(make_data(kind, n, 7000 + n));
      }
    }
  }
}

// Several prime groups (8 segments each) and offsets near 64 KiB.
TEST(Lz4Twin, MatchesTheGpuEncoderOnLargeBlocks) {
  for (const std::size_t n : {std::size_t{200000}, std::size_t{1} << 20}) {
    for (const int kind : {5, 6, 7, 8}) {
      SCOPED_TRACE(std::string(kind_name(kind)) + " data of " + std::to_string(n) + " bytes");
      expect_same_derived_capacities(make_data(kind, n, 9000 + static_cast<std::uint64_t>(kind)));
    }
  }
}

// Silesia: every file cut into 4 KiB pages (a sample of them, all
// capacities), and a few larger blocks of each.
TEST(Lz4Twin, MatchesTheGpuEncoderOnSilesia) {
  const auto dir = tandem::test::silesia_dir();
  if (dir.empty()) GTEST_SKIP() << "the Silesia corpus is not available (set TANDEM_CORPUS)";
  for (const auto& name : tandem::test::silesia_names()) {
    const Bytes file = tandem::test::read_file(dir / name);
    ASSERT_GE(file.size(), 1u << 20) << name;
    // 96 pages spread over the file, and a run of 32 consecutive ones.
    const std::size_t pages = file.size() / 4096;
    std::vector<std::size_t> picks;
    for (std::size_t i = 0; i < 96; ++i) picks.push_back(i * pages / 96);
    for (std::size_t i = 0; i < 32; ++i) picks.push_back(pages / 2 + i);
    for (const std::size_t p : picks) {
      SCOPED_TRACE(name + " page " + std::to_string(p));
      const Bytes page(file.begin() + static_cast<std::ptrdiff_t>(p * 4096),
                       file.begin() + static_cast<std::ptrdiff_t>((p + 1) * 4096));
      expect_same_all_capacities(page);
    }
    for (const std::size_t n : {std::size_t{8192}, std::size_t{65536}, std::size_t{300000}}) {
      SCOPED_TRACE(name + ", its first " + std::to_string(n) + " bytes");
      expect_same_derived_capacities(Bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n)));
    }
  }
}

TEST(Lz4Twin, RefusesWhatTheGpuEncoderRefuses) {
  std::uint8_t in[16] = {};
  std::uint8_t out[64];
  std::size_t size = 99;
  EXPECT_EQ(tandem::cpu::lz4_twin_compress(in, tandem::gpu::kMaxItemSize + 1, out, sizeof out, &size),
            ItemStatus::invalid_item);
  EXPECT_EQ(size, 0u);
  size = 99;
  EXPECT_EQ(tandem::cpu::lz4_twin_compress(nullptr, 5, out, sizeof out, &size), ItemStatus::invalid_item);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(tandem::cpu::lz4_twin_compress(in, 5, nullptr, 10, &size), ItemStatus::invalid_item);
  // Null pointers with nothing to read or write are fine, as for the GPU.
  for (const auto& [n, cap] : {std::pair<std::size_t, std::size_t>{0, 0}, {0, 1}, {5, 0}}) {
    const std::uint8_t* src = n ? in : nullptr;
    std::uint8_t* dst = cap ? out : nullptr;
    std::size_t twin_size = 99, gpu_size = 99;
    const ItemStatus twin = tandem::cpu::lz4_twin_compress(src, n, dst, cap, &twin_size);
    const ItemStatus gpu = tandem::gpu::lz4_encode_block_emulated(src, n, dst, cap, &gpu_size);
    EXPECT_EQ(twin, gpu) << n << " bytes into " << cap;
    EXPECT_EQ(twin_size, gpu_size) << n << " bytes into " << cap;
  }
}

// The tables are the thread's own: threads compressing at once get the
// blocks that one thread gets.
TEST(Lz4Twin, ThreadsGetTheSameBlocks) {
  std::vector<Bytes> inputs;
  std::vector<Bytes> want;
  for (int i = 0; i < 16; ++i) {
    inputs.push_back(
        make_data(3 + i % 6, 1000 + 5000 * static_cast<std::size_t>(i), 40 + static_cast<std::uint64_t>(i)));
    Bytes out(tandem::gpu::lz4_max_compressed_size(inputs.back().size()));
    std::size_t size = 0;
    tandem::cpu::lz4_twin_compress(inputs.back().data(), inputs.back().size(), out.data(), out.size(), &size);
    out.resize(size);
    want.push_back(std::move(out));
  }
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          const std::size_t k = (i + static_cast<std::size_t>(t) * 5 + static_cast<std::size_t>(round)) % inputs.size();
          Bytes out(tandem::gpu::lz4_max_compressed_size(inputs[k].size()));
          std::size_t size = 0;
          tandem::cpu::lz4_twin_compress(inputs[k].data(), inputs[k].size(), out.data(), out.size(), &size);
          out.resize(size);
          if (out != want[k]) ++wrong[static_cast<std::size_t>(t)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(wrong[static_cast<std::size_t>(t)], 0) << "thread " << t;
}

}  // namespace
