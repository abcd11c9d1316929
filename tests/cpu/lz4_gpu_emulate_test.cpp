// The GPU LZ4 block kernels' logic, run on the CPU through their emulation
// (src/gpu/lz4_gpu_emulate.hpp, byte for byte what the device writes), so CI
// checks it without a GPU: the emulated encoder against liblz4's decoder,
// liblz4's fast and HC encoders against the emulated decoder, the compression
// ratio against liblz4, determinism, capacities that are too small, hand-built
// malformed blocks with their exact statuses, random and mutated blocks, and
// every truncation of valid blocks. Outputs carry guard bytes after their
// capacity, so a write past it is caught even without ASan.
#include <lz4.h>
#include <lz4hc.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "gpu/lz4_gpu_decode.hpp"
#include "gpu/lz4_gpu_emulate.hpp"
#include "gpu/lz4_gpu_encode.hpp"
#include "support/lz4_block_cases.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::gpu::ItemStatus;
using tandem::test::Bytes;
using tandem::test::GuardedBuffer;
using tandem::test::PageEndCopy;

// A heap copy of exactly n bytes (never null), so that ASan builds catch a
// read past the input's end.
class ExactCopy {
 public:
  ExactCopy(const std::uint8_t* p, std::size_t n) : mem_(new std::uint8_t[n ? n : 1]) {
    if (n) std::memcpy(mem_.get(), p, n);
  }
  explicit ExactCopy(const Bytes& b) : ExactCopy(b.data(), b.size()) {}
  const std::uint8_t* get() const { return mem_.get(); }

 private:
  std::unique_ptr<std::uint8_t[]> mem_;
};

constexpr std::size_t kBound = std::numeric_limits<std::size_t>::max();

struct Encoded {
  ItemStatus status;
  Bytes block;  // empty unless status is ok or incompressible
};

// The emulated encoder into `capacity` bytes (kBound: lz4_max_compressed_size)
// of a buffer first filled with `fill`.
Encoded encode(const Bytes& in, std::size_t capacity = kBound, std::uint8_t fill = 0xCD) {
  const std::size_t cap = capacity == kBound ? tandem::gpu::lz4_max_compressed_size(in.size()) : capacity;
  const ExactCopy src(in);
  GuardedBuffer out(cap, fill);
  std::size_t size = kBound;
  const ItemStatus st = tandem::gpu::lz4_encode_block_emulated(src.get(), in.size(), out.data(), cap, &size);
  EXPECT_TRUE(out.guard_intact()) << "the encoder wrote past its capacity of " << cap;
  Encoded e{st, {}};
  if (st == ItemStatus::ok || st == ItemStatus::incompressible) {
    EXPECT_LE(size, cap);
    e.block = out.prefix(std::min(size, cap));
  }
  return e;
}

struct Decoded {
  ItemStatus status;
  Bytes out;  // empty unless status is ok
};

// The emulated decoder into `capacity` bytes; checks the guard bytes, and that
// every other shape, its lanes run in either order, gives the same status,
// size and bytes (also those written before a failure).
Decoded decode(const std::uint8_t* block, std::size_t n, std::size_t capacity, std::uint8_t fill = 0xCD) {
  using tandem::gpu::DecodeShape;
  using tandem::gpu::LaneOrder;
  const ExactCopy src(block, n);
  GuardedBuffer out(capacity, fill);
  std::size_t size = kBound;
  const ItemStatus st = tandem::gpu::lz4_decode_block_emulated(src.get(), n, out.data(), capacity, &size);
  EXPECT_TRUE(out.guard_intact()) << "the decoder wrote past its capacity of " << capacity;
  for (const DecodeShape shape : tandem::gpu::kDecodeShapes) {
    for (const LaneOrder order : {LaneOrder::up, LaneOrder::down}) {
      if (shape == DecodeShape::wide && order == LaneOrder::up) continue;
      GuardedBuffer other(capacity, fill);
      std::size_t other_size = kBound;
      const ItemStatus other_st =
          tandem::gpu::lz4_decode_block_emulated(src.get(), n, other.data(), capacity, &other_size, shape, order);
      const std::string which = "decoder shape " + std::to_string(static_cast<int>(shape)) +
                                (order == LaneOrder::down ? ", lanes 31 to 0," : "");
      EXPECT_EQ(st, other_st) << which << " disagrees";
      EXPECT_EQ(size, other_size) << which << " disagrees";
      EXPECT_TRUE(out.prefix(capacity) == other.prefix(capacity)) << which << " disagrees";
      EXPECT_TRUE(other.guard_intact()) << which << " wrote past its capacity of " << capacity;
    }
  }
  EXPECT_TRUE(tandem::test::is_decoder_status(st)) << "status " << static_cast<int>(st);
  Decoded d{st, {}};
  if (st == ItemStatus::ok) {
    EXPECT_LE(size, capacity);
    d.out = out.prefix(std::min(size, capacity));
  }
  return d;
}
Decoded decode(const Bytes& block, std::size_t capacity) { return decode(block.data(), block.size(), capacity); }

// liblz4's safe decoder, the reference for the block format; nullopt when it refuses.
std::optional<Bytes> lz4_decode(const Bytes& block, std::size_t capacity) {
  const ExactCopy src(block);
  Bytes out(capacity ? capacity : 1);
  const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(src.get()), reinterpret_cast<char*>(out.data()),
                                    static_cast<int>(block.size()), static_cast<int>(capacity));
  if (r < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(r));
  return out;
}

// liblz4's encoders: fast at an acceleration, or HC at a level.
struct RefEncoder {
  const char* name;
  int acceleration;  // fast when > 0
  int hc_level;
};
constexpr RefEncoder kRefEncoders[] = {{"fast", 1, 0}, {"fast acceleration 8", 8, 0}, {"hc 3", 0, 3},
                                       {"hc 9", 0, 9}, {"hc 12", 0, 12}};

Bytes lz4_encode(const RefEncoder& e, const Bytes& in) {
  Bytes out(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(in.size()))) + 1);
  const ExactCopy copy(in);  // never null: liblz4's HC encoder reads through a null pointer for empty input
  const char* src = reinterpret_cast<const char*>(copy.get());
  char* dst = reinterpret_cast<char*>(out.data());
  const int n = static_cast<int>(in.size()), cap = static_cast<int>(out.size());
  const int r = e.acceleration > 0 ? LZ4_compress_fast(src, dst, n, cap, e.acceleration)
                                   : LZ4_compress_HC(src, dst, n, cap, e.hc_level);
  EXPECT_GT(r, 0) << "liblz4 " << e.name << " failed";
  out.resize(static_cast<std::size_t>(std::max(r, 0)));
  return out;
}

// The emulated encoder's block decodes to the input with liblz4 and with the
// emulated decoder; its status says whether it is smaller than the input.
void expect_round_trip(const Bytes& in) {
  const Encoded e = encode(in);
  ASSERT_TRUE(e.status == ItemStatus::ok || e.status == ItemStatus::incompressible) << e.status;
  ASSERT_FALSE(e.block.empty());
  ASSERT_LE(e.block.size(), tandem::gpu::lz4_max_compressed_size(in.size()));
  if (e.status == ItemStatus::ok) EXPECT_LT(e.block.size(), in.size());
  else EXPECT_GE(e.block.size(), in.size());
  const std::optional<Bytes> ref = lz4_decode(e.block, in.size());
  ASSERT_TRUE(ref.has_value()) << "liblz4 refuses the block";
  EXPECT_TRUE(*ref == in) << "liblz4 decodes other bytes";
  const Decoded d = decode(e.block, in.size());
  EXPECT_EQ(d.status, ItemStatus::ok);
  EXPECT_TRUE(d.out == in) << "the emulated decoder gives other bytes";
}

// Silesia files cut into chunks: the first `bytes_per_file` of each file in
// pieces of `chunk` bytes (the last one shorter). Empty without the corpus.
std::vector<Bytes> silesia_chunks(std::size_t chunk, std::size_t bytes_per_file) {
  std::vector<Bytes> chunks;
  const std::filesystem::path dir = tandem::test::silesia_dir();
  if (dir.empty()) return chunks;
  for (const std::string& name : tandem::test::silesia_names()) {
    const Bytes file = tandem::test::read_file(dir / name);
    const std::size_t end = std::min(file.size(), bytes_per_file);
    for (std::size_t at = 0; at < end; at += chunk) {
      const auto first = file.begin() + static_cast<std::ptrdiff_t>(at);
      chunks.emplace_back(first, first + static_cast<std::ptrdiff_t>(std::min(chunk, end - at)));
    }
  }
  return chunks;
}

// ------------------------------------------------- encoder -> liblz4 ----

TEST(EmulatedLz4, EncoderRoundTripsEverySizeAndKind) {
  for (std::size_t n : tandem::test::lz4_edge_sizes()) {
    for (int kind = 0; kind < tandem::test::kLz4DataKinds; ++kind) {
      SCOPED_TRACE(std::string(tandem::test::lz4_data_kind_name(kind)) + " data of " + std::to_string(n) + " bytes");
      expect_round_trip(tandem::test::lz4_test_data(kind, n, 1000 + n));
    }
  }
  SCOPED_TRACE("4 MiB of mixed data");
  expect_round_trip(tandem::test::mixed_bytes(4u << 20, 77));
}

TEST(EmulatedLz4, EncoderRoundTripsSilesiaChunks) {
  if (tandem::test::silesia_dir().empty()) GTEST_SKIP() << "the Silesia corpus is not available (set TANDEM_CORPUS)";
  // The first 256 KiB of each file: a few MB in all, enough for every kind of content.
  for (std::size_t chunk : {std::size_t{4} << 10, std::size_t{16} << 10, std::size_t{64} << 10}) {
    const std::vector<Bytes> chunks = silesia_chunks(chunk, 256u << 10);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      SCOPED_TRACE("chunk " + std::to_string(i) + " of " + std::to_string(chunk) + " bytes");
      expect_round_trip(chunks[i]);
    }
  }
}

// Blocks that end just past a segment of the encoder (kSegmentSize), where
// the segment before the last is hashed for the last one's prime table up
// to positions near the block's end: the input ends at an unreadable page,
// so a read past it faults.
TEST(EmulatedLz4, EncoderReadsNothingPastTheInputAtSegmentEdges) {
  constexpr std::size_t kSeg = tandem::gpu::lz4k::kSegmentSize;
  for (std::size_t segs : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                           std::size_t{17}}) {
    for (std::size_t extra : {0, 1, 2, 3, 4, 5, 12, 13}) {
      const std::size_t n = segs * kSeg + extra;
      for (int kind = 0; kind < tandem::test::kLz4DataKinds; ++kind) {
        SCOPED_TRACE(std::string(tandem::test::lz4_data_kind_name(kind)) + " data of " + std::to_string(n) + " bytes");
        const Bytes in = tandem::test::lz4_test_data(kind, n, 3000 + n);
        const PageEndCopy src(in);
        const std::size_t cap = tandem::gpu::lz4_max_compressed_size(n);
        GuardedBuffer out(cap);
        std::size_t size = 0;
        const ItemStatus st = tandem::gpu::lz4_encode_block_emulated(src.get(), n, out.data(), cap, &size);
        ASSERT_TRUE(st == ItemStatus::ok || st == ItemStatus::incompressible) << st;
        const std::optional<Bytes> back = lz4_decode(out.prefix(size), n);
        ASSERT_TRUE(back.has_value()) << "liblz4 refuses the block";
        EXPECT_TRUE(*back == in);
      }
    }
  }
}

// The prime table of each segment but the first, as the thread blocks of
// the prime step write it, group by group (several groups, and a lead-in
// before each but the first): for each hash, the newest of every
// kPrimeStride-th position (from each segment's start) of the kPrimeBytes
// before the segment, as a position after their start; 0 where none has
// the hash.
TEST(EmulatedLz4, PrimeTablesHoldTheNewestPositionOfEachHashBeforeTheirSegment) {
  namespace k = tandem::gpu::lz4k;
  constexpr std::uint32_t kSeg = k::kSegmentSize;
  for (std::uint32_t n : {2 * kSeg + 1, 8 * kSeg, 9 * kSeg + 2, 20 * kSeg + 5, 3 * kSeg + 2}) {
    for (int kind = 0; kind < tandem::test::kLz4DataKinds; ++kind) {
      SCOPED_TRACE(std::string(tandem::test::lz4_data_kind_name(kind)) + " data of " + std::to_string(n) + " bytes");
      const Bytes in = tandem::test::lz4_test_data(kind, n, 5000 + n);
      const std::uint32_t segments = static_cast<std::uint32_t>(k::segment_count(n));
      std::vector<std::uint16_t> primes(static_cast<std::size_t>(segments) * k::kPrimeEntries, 0xabcd);
      std::vector<std::uint32_t> running(k::kPrimeEntries, 0x12345678);  // whatever was there before
      for (std::uint32_t g = 0; g < k::prime_group_count(segments); ++g)
        k::prime_group(tandem::gpu::simt::Block<k::kPrimeWarps>{}, in.data(), n, g, running.data(), primes.data());
      for (std::uint32_t seg = 1; seg < segments; ++seg) {
        const std::uint32_t start = seg * kSeg;
        const std::uint32_t base = start > k::kPrimeBytes ? start - k::kPrimeBytes : 0;
        std::vector<std::uint16_t> want(k::kPrimeEntries, 0);
        // Every kPrimeStride-th position from each segment's start whose 4
        // bytes lie inside the block.
        for (std::uint32_t from = base; from < start; from += kSeg) {
          for (std::uint32_t q = from; q < from + kSeg && q + 4 <= n; q += k::kPrimeStride) {
            std::uint32_t v;
            std::memcpy(&v, in.data() + q, sizeof v);
            want[k::hash4<k::kLargeHashLog>(v)] = static_cast<std::uint16_t>(q - base);
          }
        }
        const std::uint16_t* got = primes.data() + static_cast<std::size_t>(seg) * k::kPrimeEntries;
        std::size_t wrong = 0;
        for (std::uint32_t h = 0; h < k::kPrimeEntries; ++h) wrong += got[h] != want[h];
        EXPECT_EQ(wrong, 0u) << "entries of segment " << seg << "'s prime table";
      }
    }
  }
}

// ------------------------------------------------- liblz4 -> decoder ----

TEST(EmulatedLz4, DecodesLiblz4FastAndHcBlocks) {
  std::vector<Bytes> inputs;
  for (std::size_t n : tandem::test::lz4_edge_sizes())
    for (int kind = 0; kind < tandem::test::kLz4DataKinds; ++kind)
      inputs.push_back(tandem::test::lz4_test_data(kind, n, 2000 + n));
  for (Bytes& c : silesia_chunks(64u << 10, 128u << 10)) inputs.push_back(std::move(c));
  for (const RefEncoder& enc : kRefEncoders) {
    for (const Bytes& in : inputs) {
      SCOPED_TRACE(std::string("liblz4 ") + enc.name + ", " + std::to_string(in.size()) + " bytes");
      const Bytes block = lz4_encode(enc, in);
      const Decoded exact = decode(block, in.size());
      EXPECT_EQ(exact.status, ItemStatus::ok);
      EXPECT_TRUE(exact.out == in);
      const Decoded roomy = decode(block, in.size() + 100);  // room to spare changes nothing
      EXPECT_EQ(roomy.status, ItemStatus::ok);
      EXPECT_TRUE(roomy.out == in);
    }
  }
}

// ------------------------------------------------- ratio, determinism ----

// tandem's target for the GPU encoder: on real data in 64 KiB chunks, its
// output is at most 5% larger than liblz4's default (acceleration 1).
TEST(EmulatedLz4, RatioWithinFivePercentOfLiblz4) {
  std::vector<Bytes> chunks = silesia_chunks(64u << 10, 1u << 20);
  const char* source = "Silesia, the first MiB of each file";
  if (chunks.empty()) {
    source = "generated text-like and mixed data (no Silesia corpus)";
    for (std::uint64_t i = 0; i < 64; ++i)
      chunks.push_back(i % 2 ? tandem::test::text_like_bytes(64u << 10, i) : tandem::test::mixed_bytes(64u << 10, i));
  }
  std::size_t ours = 0, theirs = 0, input = 0;
  for (const Bytes& c : chunks) {
    const Encoded e = encode(c);
    ASSERT_TRUE(e.status == ItemStatus::ok || e.status == ItemStatus::incompressible) << e.status;
    ours += e.block.size();
    theirs += lz4_encode(kRefEncoders[0], c).size();
    input += c.size();
  }
  std::printf("ratio on %s: %zu bytes -> emulated GPU encoder %zu, liblz4 default %zu (%.3fx)\n", source, input, ours,
              theirs, static_cast<double>(ours) / static_cast<double>(theirs));
  EXPECT_LE(static_cast<double>(ours), 1.05 * static_cast<double>(theirs)) << "on " << source;
}

TEST(EmulatedLz4, EncoderIsDeterministic) {
  for (int kind = 0; kind < tandem::test::kLz4DataKinds; ++kind) {
    for (std::size_t n : {std::size_t{17}, std::size_t{4096}, std::size_t{65537}, std::size_t{262144}}) {
      SCOPED_TRACE(std::string(tandem::test::lz4_data_kind_name(kind)) + " data of " + std::to_string(n) + " bytes");
      const Bytes in = tandem::test::lz4_test_data(kind, n, 3000 + n);
      // Different previous contents of the output buffer must not show through.
      const Encoded a = encode(in, kBound, 0x00);
      const Encoded b = encode(in, kBound, 0xFF);
      EXPECT_EQ(a.status, b.status);
      EXPECT_TRUE(a.block == b.block);
    }
  }
}

TEST(EmulatedLz4, RandomDataIsIncompressibleButStillAValidBlock) {
  for (std::size_t n : {std::size_t{1}, std::size_t{64}, std::size_t{4096}, std::size_t{65536}, std::size_t{262144}}) {
    SCOPED_TRACE(std::to_string(n) + " random bytes");
    const Bytes in = tandem::test::random_bytes(n, 4000 + n);
    const Encoded e = encode(in);
    EXPECT_EQ(e.status, ItemStatus::incompressible);
    EXPECT_GE(e.block.size(), n);
    const std::optional<Bytes> ref = lz4_decode(e.block, n);
    ASSERT_TRUE(ref.has_value());
    EXPECT_TRUE(*ref == in);
  }
}

// ------------------------------------------------- capacities ----

// Too little room: output_overflow, nothing written past the capacity; exactly
// enough room: the same block as with the full bound.
TEST(EmulatedLz4, EncoderRespectsItsCapacity) {
  std::vector<Bytes> inputs = {Bytes{}, Bytes{'x'}, tandem::test::text_like_bytes(300, 1),
                               tandem::test::random_bytes(300, 2), tandem::test::constant_bytes(65536, 'c'),
                               tandem::test::text_like_bytes(65537, 3), tandem::test::random_bytes(70000, 4),
                               tandem::test::mixed_bytes(262144, 5)};
  for (const Bytes& in : inputs) {
    SCOPED_TRACE(std::to_string(in.size()) + " bytes");
    const Encoded full = encode(in);
    ASSERT_FALSE(full.block.empty());
    const std::size_t c = full.block.size();
    const Encoded exact = encode(in, c);
    EXPECT_EQ(exact.status, full.status);
    EXPECT_TRUE(exact.block == full.block);
    // Every smaller capacity for small blocks, a sample for large ones.
    std::vector<std::size_t> caps;
    if (c <= 400) {
      for (std::size_t k = 0; k < c; ++k) caps.push_back(k);
    } else {
      caps = {0, 1, 15, c / 2, c - 16, c - 2, c - 1};
    }
    for (std::size_t cap : caps) {
      SCOPED_TRACE("capacity " + std::to_string(cap) + " for a block of " + std::to_string(c));
      EXPECT_EQ(encode(in, cap).status, ItemStatus::output_overflow);
    }
  }
}

// Too little room for the content: output_overflow (a literal run does not
// fit) or match_past_output_end (a match does not), never a write past it.
TEST(EmulatedLz4, DecoderRespectsItsCapacity) {
  std::vector<Bytes> inputs = {tandem::test::text_like_bytes(200, 1), tandem::test::random_bytes(200, 2),
                               tandem::test::constant_bytes(5000, 'c'), tandem::test::mixed_bytes(70000, 3)};
  for (const Bytes& in : inputs) {
    for (const Bytes& block : {encode(in).block, lz4_encode(kRefEncoders[3], in)}) {
      const std::size_t n = in.size();
      std::vector<std::size_t> caps;
      if (n <= 200) {
        for (std::size_t k = 0; k < n; ++k) caps.push_back(k);
      } else {
        caps = {0, 1, 4, 5, 100, n / 2, n - 5, n - 2, n - 1};
      }
      for (std::size_t cap : caps) {
        SCOPED_TRACE("a block of " + std::to_string(n) + " bytes into " + std::to_string(cap));
        const ItemStatus st = decode(block, cap).status;
        EXPECT_TRUE(st == ItemStatus::output_overflow || st == ItemStatus::match_past_output_end) << st;
      }
    }
  }
}

// ------------------------------------------------- match forwarding ----

// A batch of 32 sequences, each `lit` literals then a match of `ml` bytes
// `offset` back, after 64 bytes of earlier output.
tandem::gpu::lz4k::LaneBatch uniform_batch(std::uint32_t lit, std::uint32_t ml, std::uint32_t offset) {
  tandem::gpu::lz4k::LaneBatch b;
  for (int l = 0; l < tandem::gpu::simt::kWarpSize; ++l) {
    const auto i = static_cast<std::uint32_t>(l);
    b.src[l] = 0;
    b.at[l] = 64 + i * (lit + ml);
    b.lit[l] = lit;
    b.ml[l] = ml;
    b.offset[l] = offset;
  }
  return b;
}

// Records of 6 bytes with one changed: each match (1 literal, then 5 bytes
// from 6 back) copies the output of the match before it, so it is forwarded
// to that match's source, and on down the chain: match i reads from 6 * (i + 1)
// back, before the batch, and the batch's matches copy in one wave.
TEST(EmulatedLz4, MatchesThatCopyEarlierMatchesAreForwardedToTheirSources) {
  using namespace tandem::gpu;
  const simt::Warp w;
  const lz4k::LaneBatch chain = uniform_batch(1, 5, 6);
  const lz4k::LaneMatches m = lz4k::lane_matches(w, chain);
  for (int l = 0; l < simt::kWarpSize; ++l) {
    const auto i = static_cast<std::uint32_t>(l);
    EXPECT_EQ(m.offset[l], 6 * (i + 1)) << "lane " << l;
    EXPECT_EQ(m.need[l], 64u) << "lane " << l;  // every source lies before the batch
  }
  // 2 literals and 4 bytes from 7 back: each source takes the last literal
  // of the sequence before and 3 bytes of its match, so is not inside one
  // match, and nothing is forwarded.
  const lz4k::LaneBatch straddling = uniform_batch(2, 4, 7);
  const lz4k::LaneMatches s = lz4k::lane_matches(w, straddling);
  for (int l = 0; l < simt::kWarpSize; ++l) EXPECT_EQ(s.offset[l], 7u) << "lane " << l;
  // Matches that overlap themselves (offset 2, 8 bytes) are not forwarded,
  // and the match after one reads its output where it was written.
  const lz4k::LaneMatches o = lz4k::lane_matches(w, uniform_batch(1, 8, 2));
  for (int l = 0; l < simt::kWarpSize; ++l) EXPECT_EQ(o.offset[l], 2u) << "lane " << l;
}

// The same records through the whole decoder, every shape and lane order:
// chains of forwarded matches give the bytes liblz4 gives.
TEST(EmulatedLz4, DecodesChainsOfMatchesCopyingMatches) {
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const Bytes in = tandem::test::record_bytes(std::size_t{5000} + seed * 997, seed);
    SCOPED_TRACE("records, seed " + std::to_string(seed));
    for (const RefEncoder& enc : kRefEncoders) {
      const Bytes block = lz4_encode(enc, in);
      const Decoded d = decode(block, in.size());
      EXPECT_EQ(d.status, ItemStatus::ok);
      EXPECT_TRUE(d.out == in);
    }
  }
}

// An LZ4 block written sequence by sequence.
struct BlockWriter {
  Bytes block;
  Bytes output;  // what it decodes to
  void length(std::size_t extra) {
    for (; extra >= 255; extra -= 255) block.push_back(255);
    block.push_back(static_cast<std::uint8_t>(extra));
  }
  // Literals, then a match of ml bytes from `offset` back (ml 0: the last
  // sequence, literals only).
  void sequence(const Bytes& literals, std::size_t offset, std::size_t ml) {
    const std::size_t lit = literals.size();
    const std::size_t m = ml ? ml - 4 : 0;
    block.push_back(static_cast<std::uint8_t>((std::min<std::size_t>(lit, 15) << 4) | std::min<std::size_t>(m, 15)));
    if (lit >= 15) length(lit - 15);
    block.insert(block.end(), literals.begin(), literals.end());
    output.insert(output.end(), literals.begin(), literals.end());
    if (!ml) return;
    block.push_back(static_cast<std::uint8_t>(offset & 0xff));
    block.push_back(static_cast<std::uint8_t>(offset >> 8));
    if (m >= 15) length(m - 15);
    for (std::size_t k = 0; k < ml; ++k) output.push_back(output[output.size() - offset]);
  }
};

// Blocks of up to 64 KiB at the gather decoder's edges (its 64-byte
// segments, its 16-bit sources, the runs it resolves a word of bits at a
// time), decoded by every shape: the bytes written, the same as liblz4's
// where the block keeps liblz4's end-of-block rules, and into one byte too
// few, the same status from every shape.
TEST(EmulatedLz4, BlocksAtTheGatherDecodersEdges) {
  std::vector<std::pair<std::string, BlockWriter>> blocks;
  const Bytes last(12, 'z');  // the end-of-block rules: 12 bytes after the last match
  // Inputs of 65,536 bytes, the most, and of 32,768 and 32,769, where its
  // segments go from 32 to 64 bytes; the last byte an empty last sequence's
  // token.
  for (const std::size_t size : {std::size_t{65536}, std::size_t{32768}, std::size_t{32769}}) {
    BlockWriter b;
    b.sequence(tandem::test::lz4_test_data(0, size - 536, 1), 1, 4);
    while (b.block.size() + 3 + 7 <= size - 1) b.sequence({}, 1 + b.block.size() % 7, 4);
    // 3 to 9 bytes left: a sequence of 3 bytes and 0 to 6 literals.
    b.sequence(Bytes(size - 1 - b.block.size() - 3, 'q'), 3, 4);
    b.sequence({}, 0, 0);
    EXPECT_EQ(b.block.size(), size);
    blocks.emplace_back("input of " + std::to_string(size) + " bytes ending in an empty literal run", b);
  }
  {
    BlockWriter b;  // one byte repeated: a run of 65,529 bytes, offset 1
    b.sequence({'a'}, 1, 65529);
    b.sequence(Bytes(last.begin(), last.begin() + 6), 0, 0);
    blocks.emplace_back("64 KiB of one byte", b);
  }
  for (const std::size_t period : {2u, 3u, 7u, 31u, 32u, 33u, 100u, 1000u, 4096u}) {
    BlockWriter b;  // matches that overlap themselves, long and short, and copies of them
    b.sequence(tandem::test::lz4_test_data(0, period, period), period, 5000);
    for (std::size_t k = 0; b.output.size() + 300 < 60000; ++k) {
      b.sequence(tandem::test::lz4_test_data(0, k % 20, k), 1 + (k * 7919) % b.output.size(), 4 + k % 200);
    }
    b.sequence(last, 0, 0);
    blocks.emplace_back("period " + std::to_string(period), b);
  }
  {
    // The last 256 bytes of 64 KiB, where a byte's source can be at 0xff00
    // or past it: short literal runs and matches that copy them and each
    // other, a few bytes back.
    BlockWriter b;
    b.sequence(tandem::test::lz4_test_data(0, 1000, 2), 1000, 64000);
    for (std::size_t k = 0; b.output.size() + 30 < 65536; ++k) {
      const std::size_t back = b.output.size() > 65280 ? b.output.size() - 65280 : 300;
      b.sequence(tandem::test::lz4_test_data(0, k % 5, k), 1 + (k * 37) % back, 4 + k % 9);
    }
    b.sequence(Bytes(65536 - b.output.size(), 'y'), 0, 0);
    blocks.emplace_back("matches within the last 256 bytes of 64 KiB", b);
  }
  for (auto& [name, b] : blocks) {
    SCOPED_TRACE(name);
    ASSERT_LE(b.output.size(), std::size_t{65536});
    if (name.rfind("input of", 0) != 0) {  // those end with a match 3 bytes before their end
      const std::optional<Bytes> ref = lz4_decode(b.block, b.output.size());
      ASSERT_TRUE(ref.has_value());
      ASSERT_TRUE(*ref == b.output);
    }
    const Decoded d = decode(b.block, b.output.size());
    EXPECT_EQ(d.status, ItemStatus::ok);
    EXPECT_TRUE(d.out == b.output);
    const Decoded short_of_one = decode(b.block, b.output.size() - 1);
    EXPECT_NE(short_of_one.status, ItemStatus::ok);
  }
}

// ------------------------------------------------- malformed input ----

TEST(EmulatedLz4, HandBuiltBlocksGetTheirExactStatus) {
  for (const tandem::test::Lz4BlockCase& c : tandem::test::lz4_block_cases()) {
    SCOPED_TRACE(c.name);
    const Decoded d = decode(c.block, c.capacity);
    EXPECT_EQ(d.status, c.want);
    if (c.want == ItemStatus::ok) {
      EXPECT_TRUE(d.out == c.output);
    }
  }
}

// Where liblz4 accepts a block, the emulated decoder must accept it too and
// give the same bytes (the converse does not hold: it is lenient about the
// end-of-block rules that liblz4 enforces). The exception: liblz4 1.9 lets a
// match offset of 0 through (it copies from the output's own end), which the
// format forbids and this decoder refuses.
void expect_safe_and_agreeing(const Bytes& block, std::size_t capacity) {
  const Decoded d = decode(block, capacity);
  if (const std::optional<Bytes> ref = lz4_decode(block, capacity)) {
    const std::vector<tandem::test::Lz4Sequence> seqs = tandem::test::lz4_sequences(block);
    if (std::any_of(seqs.begin(), seqs.end() - 1, [](const auto& s) { return s.offset == 0; })) {
      EXPECT_EQ(d.status, ItemStatus::offset_out_of_range) << "a block with a match offset of 0";
    } else {
      EXPECT_EQ(d.status, ItemStatus::ok) << "a block that liblz4 accepts";
      EXPECT_TRUE(d.out == *ref);
    }
  }
}

TEST(EmulatedLz4, RandomBytesNeverWritePastTheCapacity) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 10000; ++i) {
    Bytes b(i < 8000 ? rng() % 64 : rng() % 4096);
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    // Low literal counts make longer parses: sometimes clear the high nibbles.
    if (i % 3 == 0)
      for (auto& x : b) x &= 0x1F;
    const std::size_t cap = rng() % 3 == 0 ? rng() % 16 : rng() % 8192;
    SCOPED_TRACE("random block " + std::to_string(i));
    expect_safe_and_agreeing(b, cap);
    if (HasFailure()) return;
  }
}

TEST(EmulatedLz4, MutatedBlocksNeverWritePastTheCapacity) {
  std::vector<std::pair<Bytes, std::size_t>> bases;  // block, original size
  for (std::uint64_t s = 0; s < 3; ++s) {
    const Bytes in = s == 0 ? tandem::test::text_like_bytes(3000, s)
                            : tandem::test::mixed_bytes(s == 1 ? 8000 : 20000, s);
    bases.emplace_back(encode(in).block, in.size());
    bases.emplace_back(lz4_encode(kRefEncoders[4], in), in.size());
  }
  static const std::uint16_t kWords[] = {0, 1, 2, 0xFF, 0x100, 0xFFFF, 0x8000, 0xF0F0, 0x0F0F};
  std::mt19937_64 rng(12);
  for (int i = 0; i < 10000; ++i) {
    const auto& [base, original] = bases[static_cast<std::size_t>(i) % bases.size()];
    Bytes m = base;
    switch (rng() % 5) {
      case 0:  // a few flipped bytes
      case 1:
        for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) m[rng() % m.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        break;
      case 2: {  // a 16-bit word overwritten (offsets, lengths)
        const std::size_t at = rng() % (m.size() - 1);
        const std::uint16_t w = kWords[rng() % std::size(kWords)];
        m[at] = static_cast<std::uint8_t>(w);
        m[at + 1] = static_cast<std::uint8_t>(w >> 8);
        break;
      }
      case 3: {  // bytes removed
        const std::size_t at = rng() % m.size();
        m.erase(m.begin() + static_cast<std::ptrdiff_t>(at),
                m.begin() + static_cast<std::ptrdiff_t>(std::min(m.size(), at + 1 + rng() % 8)));
        break;
      }
      default: {  // random bytes inserted
        Bytes ins(1 + rng() % 8);
        for (auto& x : ins) x = static_cast<std::uint8_t>(rng());
        m.insert(m.begin() + static_cast<std::ptrdiff_t>(rng() % (m.size() + 1)), ins.begin(), ins.end());
      }
    }
    // The original size, a little less, or more.
    const std::size_t caps[] = {original, original - std::min<std::size_t>(original, rng() % 64), original + 4096};
    SCOPED_TRACE("mutation " + std::to_string(i));
    expect_safe_and_agreeing(m, caps[rng() % 3]);
    if (HasFailure()) return;
  }
}

// A valid block cut at every length: ok exactly where a literal run ends (a
// complete block, which decodes to a prefix of the data), literal_past_input_end
// inside a literal run, corrupt_token anywhere else.
TEST(EmulatedLz4, EveryTruncationOfAValidBlockGetsItsStatus) {
  // Literal runs of every length class (short, 15, extended past 255) and long
  // matches: mixed data has noise runs and constant runs.
  std::vector<std::pair<std::string, Bytes>> inputs = {
      {"text", tandem::test::text_like_bytes(2000, 21)},
      {"mixed", tandem::test::mixed_bytes(12000, 22)},
      {"constant", tandem::test::constant_bytes(3000, 'q')},
      {"random", tandem::test::random_bytes(600, 23)},
  };
  for (const auto& [name, in] : inputs) {
    for (int which = 0; which < 2; ++which) {
      const Bytes block = which == 0 ? encode(in).block : lz4_encode(kRefEncoders[2], in);
      const std::vector<tandem::test::Lz4Sequence> seqs = tandem::test::lz4_sequences(block);
      for (std::size_t cut = 0; cut < block.size(); ++cut) {
        SCOPED_TRACE(name + (which == 0 ? ", emulated encoder" : ", liblz4 hc 3") + ": the first " +
                     std::to_string(cut) + " of " + std::to_string(block.size()) + " bytes");
        std::size_t decoded = 0;
        const ItemStatus want = tandem::test::lz4_truncated_status(seqs, cut, &decoded);
        const Decoded d = decode(block.data(), cut, in.size());
        ASSERT_EQ(d.status, want);
        if (want == ItemStatus::ok) {
          ASSERT_EQ(d.out.size(), decoded);
          ASSERT_TRUE(std::equal(d.out.begin(), d.out.end(), in.begin())) << "not a prefix of the data";
        }
      }
    }
  }
}

// ------------------------------------------------- host-side API ----

// lz4_max_compressed_size is liblz4's LZ4_compressBound up to kMaxItemSize,
// and 0 past it; the temporary-size queries check their arguments.
TEST(GpuLz4Api, SizeQueries) {
  std::vector<std::size_t> sizes = tandem::test::lz4_edge_sizes();
  sizes.insert(sizes.end(), {std::size_t{4} << 20, std::size_t{123456789}, tandem::gpu::kMaxItemSize});
  for (std::size_t n : sizes)
    EXPECT_EQ(tandem::gpu::lz4_max_compressed_size(n), static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(n))))
        << n << " bytes";
  EXPECT_EQ(tandem::gpu::lz4_max_compressed_size(tandem::gpu::kMaxItemSize + 1), 0u);

  std::size_t temp = 1;
  EXPECT_STATUS(tandem::gpu::lz4_compress_temp_size(1000, tandem::gpu::kMaxItemSize, &temp), tandem::StatusCode::ok);
  EXPECT_STATUS(tandem::gpu::lz4_compress_temp_size(1, tandem::gpu::kMaxItemSize + 1, &temp),
                tandem::StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::gpu::lz4_compress_temp_size(1, 1, nullptr), tandem::StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::gpu::lz4_decompress_temp_size(1000, 1u << 20, &temp), tandem::StatusCode::ok);
  EXPECT_STATUS(tandem::gpu::lz4_decompress_temp_size(1, 1, nullptr), tandem::StatusCode::invalid_argument);
}

// Item statuses are permanent values with fixed names and library-wide codes.
TEST(GpuLz4Api, ItemStatusNamesAndCodes) {
  using tandem::StatusCode;
  const struct {
    ItemStatus status;
    int value;
    const char* name;
    StatusCode code;
  } table[] = {
      {ItemStatus::ok, 0, "ok", StatusCode::ok},
      {ItemStatus::incompressible, 1, "incompressible", StatusCode::ok},
      {ItemStatus::corrupt_token, 2, "corrupt_token", StatusCode::bad_data},
      {ItemStatus::offset_out_of_range, 3, "offset_out_of_range", StatusCode::bad_data},
      {ItemStatus::output_overflow, 4, "output_overflow", StatusCode::output_too_small},
      {ItemStatus::literal_past_input_end, 5, "literal_past_input_end", StatusCode::bad_data},
      {ItemStatus::match_past_output_end, 6, "match_past_output_end", StatusCode::output_too_small},
      {ItemStatus::invalid_item, 7, "invalid_item", StatusCode::invalid_argument},
  };
  for (const auto& t : table) {
    EXPECT_EQ(static_cast<int>(t.status), t.value);
    EXPECT_STREQ(tandem::gpu::item_status_name(t.status), t.name);
    EXPECT_STATUS(tandem::gpu::item_status_to_status(t.status), t.code);
  }
}

}  // namespace
