// The inflate body (gpu/inflate_body.hpp) and its Huffman tables
// (gpu/huffman_decode.hpp) on the CPU:
// - raw deflate from zlib (levels 0-9, every strategy) and libdeflate
//   (levels 1-12) of random, constant, text-like, mixed and Silesia data,
//   sizes 0 and up, inflates to the data and stops on the final block;
// - tandem's indexed streams (zlib, a full flush per chunk, then 03 00) at
//   several chunk sizes: each chunk inflates alone to its bytes and stops at
//   its input's end; the whole stream inflates to the data;
// - the Huffman builder's verdicts on complete, over-subscribed, incomplete,
//   single-code and empty sets, and its decode against the canonical codes;
// - hand-built malformed streams, one per error class, each with its exact
//   status, and valid edge cases (a single-code distance set, an empty one,
//   bytes after the final block, a stored block at the output's capacity);
// - cut and corrupted streams never read or write out of bounds, and agree
//   with zlib whenever zlib inflates them;
// - the batched kernel's emulation (the body's warp form) gives the bytes,
//   sizes and statuses of the one-thread form on a batch of chunks and bad
//   items, and the device call says no_device in a build without CUDA.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "cpu/inflate_test_streams.hpp"
#include "gpu/huffman_decode.hpp"
#include "gpu/inflate_body.hpp"
#include "gpu/inflate_gpu.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

using gpu::inflate::CodeKind;
using gpu::inflate::HuffmanStatus;
using gpu::inflate::InflateEnd;
using gpu::inflate::InflateResult;
using gpu::inflate::InflateStatus;
using gpu::inflate::InflateTables;
using test::Bytes;
namespace is = test::inflate_streams;

constexpr std::size_t kGuard = 64;

struct Inflated {
  InflateResult result;
  Bytes out;
};

// Inflates `in` from an allocation of exactly its size into `capacity` bytes
// followed by guard bytes that must survive.
Inflated inflate(const Bytes& in, std::size_t capacity) {
  std::unique_ptr<std::uint8_t[]> src(new std::uint8_t[in.size() + 1]);
  if (!in.empty()) std::memcpy(src.get(), in.data(), in.size());
  Bytes out(capacity + kGuard, 0xA5);
  auto tables = std::make_unique<InflateTables>();
  Inflated r;
  r.result = gpu::inflate::inflate_stream(src.get(), in.size(), out.data(), capacity, *tables);
  EXPECT_TRUE(std::all_of(out.begin() + static_cast<std::ptrdiff_t>(capacity), out.end(),
                          [](std::uint8_t b) { return b == 0xA5; }))
      << "write past the output capacity";
  EXPECT_LE(r.result.out_size, capacity);
  EXPECT_LE(r.result.in_used, in.size());
  out.resize(r.result.out_size);
  r.out = std::move(out);
  return r;
}

void expect_whole(const Bytes& stream, const Bytes& data) {
  const Inflated r = inflate(stream, data.size());
  ASSERT_EQ(r.result.status, InflateStatus::ok) << inflate_status_name(r.result.status);
  EXPECT_EQ(r.result.end, InflateEnd::final_block);
  EXPECT_EQ(r.result.in_used, stream.size());
  EXPECT_TRUE(r.out == data);
}

std::vector<Bytes> sample_data() {
  std::vector<Bytes> v;
  for (std::size_t n : {0, 1, 2, 3, 100, 4096, 65535, 65536, 65537, 300000}) {
    v.push_back(test::random_bytes(n, n + 1));
    v.push_back(test::constant_bytes(n, 'x'));
    v.push_back(test::text_like_bytes(n, n + 2));
    v.push_back(test::mixed_bytes(n, n + 3));
  }
  return v;
}

TEST(InflateBody, ZlibStreamsAllLevelsAndStrategies) {
  const std::vector<Bytes> data = sample_data();
  for (int level : {0, 1, 6, 9}) {
    for (int strategy : {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED}) {
      for (const Bytes& d : data) {
        SCOPED_TRACE(::testing::Message() << "level " << level << " strategy " << strategy << " size " << d.size());
        expect_whole(is::zlib_raw(d, level, strategy), d);
      }
    }
  }
}

TEST(InflateBody, LibdeflateStreamsAllLevels) {
  const std::vector<Bytes> data = sample_data();
  for (int level : {1, 3, 6, 9, 12}) {
    for (const Bytes& d : data) {
      SCOPED_TRACE(::testing::Message() << "level " << level << " size " << d.size());
      expect_whole(is::libdeflate_raw(d, level), d);
    }
  }
}

TEST(InflateBody, SilesiaFiles) {
  const auto dir = test::silesia_dir();
  if (dir.empty()) GTEST_SKIP() << "Silesia corpus not available";
  for (const std::string& name : test::silesia_names()) {
    SCOPED_TRACE(name);
    Bytes data = test::read_file(dir / name);
    data.resize(std::min<std::size_t>(data.size(), 2u << 20));
    expect_whole(is::libdeflate_raw(data, 6), data);
    expect_whole(is::zlib_raw(data, 1), data);
    const is::Chunked c = is::zlib_chunked(data, 64 * 1024, 6);
    expect_whole(c.stream, data);
  }
}

TEST(InflateBody, ChunkedStreamsInflateChunkByChunk) {
  const Bytes text = test::text_like_bytes(700000, 7);
  const Bytes mixed = test::mixed_bytes(300001, 8);
  const Bytes noise = test::random_bytes(200000, 9);
  for (const Bytes* d : {&text, &mixed, &noise}) {
    for (std::size_t chunk : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}, std::size_t{131072}}) {
      for (int level : {1, 6, 9}) {
        SCOPED_TRACE(::testing::Message() << "size " << d->size() << " chunk " << chunk << " level " << level);
        const is::Chunked c = is::zlib_chunked(*d, chunk, level);
        expect_whole(c.stream, *d);
        for (std::size_t i = 0; i < c.offsets.size(); ++i) {
          const Bytes part(c.stream.begin() + static_cast<std::ptrdiff_t>(c.offsets[i]),
                           c.stream.begin() + static_cast<std::ptrdiff_t>(c.offsets[i] + c.compressed_sizes[i]));
          const std::size_t n = std::min(chunk, d->size() - i * chunk);
          const Inflated r = inflate(part, chunk);
          ASSERT_EQ(r.result.status, InflateStatus::ok) << "chunk " << i;
          EXPECT_EQ(r.result.end, InflateEnd::input_end);
          EXPECT_EQ(r.result.in_used, part.size());
          ASSERT_EQ(r.out.size(), n);
          EXPECT_TRUE(std::equal(r.out.begin(), r.out.end(), d->begin() + static_cast<std::ptrdiff_t>(i * chunk)));
        }
      }
    }
  }
}

TEST(InflateBody, EmptyInputAndTheFinalTail) {
  Inflated r = inflate({}, 0);
  EXPECT_EQ(r.result.status, InflateStatus::ok);
  EXPECT_EQ(r.result.end, InflateEnd::input_end);
  EXPECT_EQ(r.result.out_size, 0u);
  r = inflate({0x03, 0x00}, 0);
  EXPECT_EQ(r.result.status, InflateStatus::ok);
  EXPECT_EQ(r.result.end, InflateEnd::final_block);
  EXPECT_EQ(r.result.in_used, 2u);
  // The empty stored block a flush writes, alone.
  r = inflate({0x00, 0x00, 0x00, 0xff, 0xff}, 0);
  EXPECT_EQ(r.result.status, InflateStatus::ok);
  EXPECT_EQ(r.result.end, InflateEnd::input_end);
  EXPECT_EQ(r.result.in_used, 5u);
}

TEST(InflateBody, BytesAfterTheFinalBlockAreNotRead) {
  const Bytes d = test::text_like_bytes(5000, 3);
  Bytes s = is::zlib_raw(d, 6);
  const std::size_t n = s.size();
  s.insert(s.end(), {1, 2, 3, 4, 5});
  const Inflated r = inflate(s, d.size());
  EXPECT_EQ(r.result.status, InflateStatus::ok);
  EXPECT_EQ(r.result.end, InflateEnd::final_block);
  EXPECT_EQ(r.result.in_used, n);
  EXPECT_TRUE(r.out == d);
}

// ---------------------------------------------------------------- tables ----

TEST(HuffmanDecode, BuilderVerdicts) {
  gpu::inflate::LitLenTable t;
  auto build = [&](std::vector<std::uint8_t> l, CodeKind k) { return t.build(l.data(), static_cast<int>(l.size()), k); };
  EXPECT_EQ(build({1, 1}, CodeKind::precode), HuffmanStatus::ok);
  EXPECT_EQ(build({1, 2, 2}, CodeKind::precode), HuffmanStatus::ok);
  EXPECT_EQ(build({1, 1, 1}, CodeKind::litlen), HuffmanStatus::oversubscribed);
  EXPECT_EQ(build({1, 2}, CodeKind::litlen), HuffmanStatus::incomplete);
  EXPECT_EQ(build({2, 2, 2}, CodeKind::distance), HuffmanStatus::incomplete);
  EXPECT_EQ(build({0, 1, 0}, CodeKind::precode), HuffmanStatus::incomplete);
  EXPECT_EQ(build({0, 1, 0}, CodeKind::litlen), HuffmanStatus::ok);
  EXPECT_EQ(build({0, 1, 0}, CodeKind::distance), HuffmanStatus::ok);
  EXPECT_EQ(build({0, 2, 0}, CodeKind::distance), HuffmanStatus::incomplete);
  EXPECT_EQ(build({0, 0, 0}, CodeKind::distance), HuffmanStatus::ok);
  EXPECT_EQ(build({0, 0, 0}, CodeKind::litlen), HuffmanStatus::empty);
  EXPECT_EQ(build({0, 0, 0}, CodeKind::precode), HuffmanStatus::empty);
  EXPECT_EQ(build({16, 1}, CodeKind::litlen), HuffmanStatus::length_too_long);
  // 15-bit codes: 1 of each length 1..14, then two of 15.
  std::vector<std::uint8_t> deep;
  for (int l = 1; l <= 15; ++l) deep.push_back(static_cast<std::uint8_t>(l));
  deep.push_back(15);
  EXPECT_EQ(build(deep, CodeKind::litlen), HuffmanStatus::ok);
  deep.push_back(15);
  EXPECT_EQ(build(deep, CodeKind::litlen), HuffmanStatus::oversubscribed);
}

// Every code of random complete sets decodes to its symbol and length, with
// any bits after it.
TEST(HuffmanDecode, DecodesEveryCanonicalCode) {
  std::mt19937_64 rng(11);
  int built = 0;
  for (int round = 0; round < 400; ++round) {
    // Random complete set: split codes starting from two of length 1.
    std::vector<int> lens = {1, 1};
    const int target = 2 + static_cast<int>(rng() % 286);
    while (static_cast<int>(lens.size()) < target) {
      const std::size_t i = rng() % lens.size();
      if (lens[i] >= 15) {
        bool any = false;
        for (int l : lens) any = any || l < 15;
        if (!any) break;
        continue;
      }
      ++lens[i];
      lens.push_back(lens[i]);
    }
    std::shuffle(lens.begin(), lens.end(), rng);
    std::vector<std::uint8_t> l8(lens.begin(), lens.end());
    gpu::inflate::LitLenTable t;
    std::memset(&t, 0x5a, sizeof t);
    ASSERT_EQ(t.build(l8.data(), static_cast<int>(l8.size()), CodeKind::litlen), HuffmanStatus::ok);
    ++built;
    // Built by 32 lanes in turn (as a warp splits it), the table is the same.
    auto split = std::make_unique<gpu::inflate::LitLenTable>();
    std::memset(split.get(), 0x5a, sizeof *split);
    for (std::uint32_t lane = 0; lane < 32; ++lane)
      ASSERT_EQ(split->build(l8.data(), static_cast<int>(l8.size()), CodeKind::litlen, lane, 32), HuffmanStatus::ok);
    ASSERT_EQ(std::memcmp(split.get(), &t, sizeof t), 0);
    const std::vector<std::uint32_t> codes = is::canonical_codes(lens);
    for (std::size_t s = 0; s < lens.size(); ++s) {
      const std::uint32_t rev = gpu::inflate::reverse_bits(codes[s], lens[s]);
      const std::uint32_t bits = rev | (static_cast<std::uint32_t>(rng()) << lens[s]);
      const gpu::inflate::Decoded d = t.decode(bits & 0x7fff);
      ASSERT_EQ(d.symbol, s);
      ASSERT_EQ(d.length, static_cast<std::uint32_t>(lens[s]));
    }
  }
  EXPECT_EQ(built, 400);
}

// -------------------------------------------------------------- malformed ----

using is::BitWriter;

InflateStatus status_of(const Bytes& s, std::size_t capacity = 1000) { return inflate(s, capacity).result.status; }

TEST(InflateMalformed, ReservedBlockType) {
  EXPECT_EQ(status_of({0x07, 0x00}), InflateStatus::reserved_block_type);
  EXPECT_EQ(status_of({0x06, 0x00}), InflateStatus::reserved_block_type);
}

TEST(InflateMalformed, StoredBlocks) {
  EXPECT_EQ(status_of({0x01, 0x05, 0x00, 0xfa, 0xfe, 'a', 'b', 'c', 'd', 'e'}), InflateStatus::stored_length_mismatch);
  EXPECT_EQ(status_of({0x01, 0x05, 0x00, 0xfa, 0xff, 'a', 'b', 'c'}), InflateStatus::truncated);
  EXPECT_EQ(status_of({0x01, 0x05, 0x00, 0xfa}), InflateStatus::truncated);
  const Bytes ok = {0x01, 0x05, 0x00, 0xfa, 0xff, 'a', 'b', 'c', 'd', 'e'};
  EXPECT_EQ(status_of(ok, 5), InflateStatus::ok);
  EXPECT_EQ(status_of(ok, 4), InflateStatus::output_overflow);
}

TEST(InflateMalformed, TooManyCodes) {
  BitWriter w;
  is::put_dynamic_header(w, true, 287, 1, is::full_precode_lengths(), {});
  EXPECT_EQ(status_of(w.bytes()), InflateStatus::too_many_codes);
  BitWriter w2;
  is::put_dynamic_header(w2, true, 257, 31, is::full_precode_lengths(), {});
  EXPECT_EQ(status_of(w2.bytes()), InflateStatus::too_many_codes);
}

TEST(InflateMalformed, BadPrecode) {
  std::vector<int> over(19, 0);
  over[16] = over[17] = over[18] = 1;
  BitWriter w;
  is::put_dynamic_header(w, true, 257, 1, over, {}, 4);
  EXPECT_EQ(status_of(w.bytes()), InflateStatus::bad_precode);
  std::vector<int> single(19, 0);
  single[0] = 1;
  BitWriter w2;
  is::put_dynamic_header(w2, true, 257, 1, single, {}, 4);
  EXPECT_EQ(status_of(w2.bytes()), InflateStatus::bad_precode);
  BitWriter w3;
  is::put_dynamic_header(w3, true, 257, 1, std::vector<int>(19, 0), {});
  EXPECT_EQ(status_of(w3.bytes()), InflateStatus::bad_precode);
}

TEST(InflateMalformed, RepeatCodes) {
  // A repeat of the previous length with none before it.
  BitWriter w;
  is::put_dynamic_header(w, true, 257, 1, is::full_precode_lengths(), {{16, 0}});
  EXPECT_EQ(status_of(w.bytes()), InflateStatus::bad_code_lengths);
  // 138 + 138 zeros overrun 257 + 1 lengths.
  BitWriter w2;
  is::put_dynamic_header(w2, true, 257, 1, is::full_precode_lengths(), {{18, 127}, {18, 127}});
  EXPECT_EQ(status_of(w2.bytes()), InflateStatus::bad_code_lengths);
  // A repeat of 6 when 2 lengths are left.
  std::vector<is::LengthOp> ops(256, is::LengthOp{8, 0});
  ops.push_back({16, 3});
  BitWriter w3;
  is::put_dynamic_header(w3, true, 257, 1, is::full_precode_lengths(), ops);
  EXPECT_EQ(status_of(w3.bytes()), InflateStatus::bad_code_lengths);
  // 3 zeros (17) when 2 are left.
  std::vector<is::LengthOp> ops4(256, is::LengthOp{8, 0});
  ops4.push_back({17, 0});
  BitWriter w4;
  is::put_dynamic_header(w4, true, 257, 1, is::full_precode_lengths(), ops4);
  EXPECT_EQ(status_of(w4.bytes()), InflateStatus::bad_code_lengths);
}

// Literal/length lengths: 256 literals of 8 bits would fill the code; with
// EOB the set must shrink one literal. `lit` gives them, then the distance
// lengths.
Bytes dynamic_block(const std::vector<int>& litlen, const std::vector<int>& dist, bool final_block,
                    const std::function<void(BitWriter&, const std::vector<std::uint32_t>&,
                                             const std::vector<std::uint32_t>&)>& body) {
  BitWriter w;
  std::vector<int> all = litlen;
  all.insert(all.end(), dist.begin(), dist.end());
  is::put_dynamic_header(w, final_block, static_cast<int>(litlen.size()), static_cast<int>(dist.size()),
                         is::full_precode_lengths(), is::plain_ops(all));
  body(w, is::canonical_codes(litlen), is::canonical_codes(dist));
  return w.bytes();
}

TEST(InflateMalformed, LiteralLengthCode) {
  // No end-of-block code.
  std::vector<int> noeob(257, 8);
  noeob[256] = 0;
  EXPECT_EQ(status_of(dynamic_block(noeob, {1, 1}, true, [](auto&, auto&, auto&) {})),
            InflateStatus::bad_litlen_code);
  // Over-subscribed: 257 codes of 8 bits.
  EXPECT_EQ(status_of(dynamic_block(std::vector<int>(257, 8), {1, 1}, true, [](auto&, auto&, auto&) {})),
            InflateStatus::bad_litlen_code);
  // Incomplete: 256 of 9 bits and EOB of 9 bits.
  EXPECT_EQ(status_of(dynamic_block(std::vector<int>(257, 9), {1, 1}, true, [](auto&, auto&, auto&) {})),
            InflateStatus::bad_litlen_code);
}

// 254 literals of 8 bits, literals 254, 255, EOB and length 257 of 9 bits:
// 254/256 + 4/512 = 1.
std::vector<int> litlen_258() {
  std::vector<int> l(258, 8);
  l[254] = l[255] = l[256] = l[257] = 9;
  return l;
}

TEST(InflateMalformed, DistanceCode) {
  EXPECT_EQ(status_of(dynamic_block(litlen_258(), {1, 1, 1}, true, [](auto&, auto&, auto&) {})),
            InflateStatus::bad_distance_code);
  EXPECT_EQ(status_of(dynamic_block(litlen_258(), {2, 2, 2}, true, [](auto&, auto&, auto&) {})),
            InflateStatus::bad_distance_code);
}

TEST(InflateValid, SingleAndEmptyDistanceCodes) {
  const std::vector<int> ll = litlen_258();
  // 'a', 'b', then a match of 3 at distance 1 (the single distance code,
  // symbol 0 of 1 bit: code 0), then EOB.
  auto body = [&](BitWriter& w, const std::vector<std::uint32_t>& lc, const std::vector<std::uint32_t>& dc) {
    w.put_code(lc['a'], ll['a']);
    w.put_code(lc['b'], ll['b']);
    w.put_code(lc[257], ll[257]);
    w.put_code(dc[0], 1);
    w.put_code(lc[256], ll[256]);
  };
  Inflated r = inflate(dynamic_block(ll, {1}, true, body), 100);
  ASSERT_EQ(r.result.status, InflateStatus::ok);
  EXPECT_EQ(r.out, (Bytes{'a', 'b', 'b', 'b', 'b'}));
  // The unused code of the one-code distance set.
  auto unused = [&](BitWriter& w, const std::vector<std::uint32_t>& lc, const std::vector<std::uint32_t>&) {
    w.put_code(lc['a'], ll['a']);
    w.put_code(lc[257], ll[257]);
    w.put_code(1, 1);
    w.put_code(lc[256], ll[256]);
  };
  EXPECT_EQ(status_of(dynamic_block(ll, {1}, true, unused)), InflateStatus::invalid_symbol);
  // An empty distance set (one zero length): literals only.
  auto lits = [&](BitWriter& w, const std::vector<std::uint32_t>& lc, const std::vector<std::uint32_t>&) {
    w.put_code(lc['z'], ll['z']);
    w.put_code(lc[256], ll[256]);
  };
  r = inflate(dynamic_block(ll, {0}, true, lits), 100);
  ASSERT_EQ(r.result.status, InflateStatus::ok);
  EXPECT_EQ(r.out, (Bytes{'z'}));
  // ... and a length code with it: no distance can be decoded.
  EXPECT_EQ(status_of(dynamic_block(ll, {0}, true, unused)), InflateStatus::invalid_symbol);
  // zlib agrees on the valid ones.
  EXPECT_EQ(is::zlib_inflate(dynamic_block(ll, {1}, true, body), 100), (Bytes{'a', 'b', 'b', 'b', 'b'}));
  EXPECT_EQ(is::zlib_inflate(dynamic_block(ll, {0}, true, lits), 100), (Bytes{'z'}));
}

TEST(InflateMalformed, FixedCodeSymbolsAndDistances) {
  // Literal/length symbol 286.
  BitWriter w;
  w.put(1, 1);
  w.put(1, 2);
  is::put_fixed_litlen(w, 286);
  is::put_fixed_litlen(w, 256);
  EXPECT_EQ(status_of(w.bytes()), InflateStatus::invalid_symbol);
  // Distance symbol 30 after 'a' and a length of 3.
  BitWriter w2;
  w2.put(1, 1);
  w2.put(1, 2);
  is::put_fixed_litlen(w2, 'a');
  is::put_fixed_litlen(w2, 257);
  w2.put_code(30, 5);
  is::put_fixed_litlen(w2, 256);
  EXPECT_EQ(status_of(w2.bytes()), InflateStatus::invalid_symbol);
  // Distance 2 after one byte.
  BitWriter w3;
  w3.put(1, 1);
  w3.put(1, 2);
  is::put_fixed_litlen(w3, 'a');
  is::put_fixed_litlen(w3, 257);
  w3.put_code(1, 5);
  is::put_fixed_litlen(w3, 256);
  EXPECT_EQ(status_of(w3.bytes()), InflateStatus::distance_too_far);
  // Distance 1 after one byte: fine; with capacity 3 the match of 3 overflows.
  BitWriter w4;
  w4.put(1, 1);
  w4.put(1, 2);
  is::put_fixed_litlen(w4, 'a');
  is::put_fixed_litlen(w4, 257);
  w4.put_code(0, 5);
  is::put_fixed_litlen(w4, 256);
  EXPECT_EQ(inflate(w4.bytes(), 4).out, (Bytes{'a', 'a', 'a', 'a'}));
  EXPECT_EQ(status_of(w4.bytes(), 3), InflateStatus::output_overflow);
  // A literal past the capacity.
  EXPECT_EQ(status_of(w4.bytes(), 0), InflateStatus::output_overflow);
}

TEST(InflateMalformed, InvalidItem) {
  Bytes out(4);
  InflateTables t;
  EXPECT_EQ(gpu::inflate::inflate_stream(nullptr, 3, out.data(), 4, t).status, InflateStatus::invalid_item);
  const Bytes in = {0x03, 0x00};
  EXPECT_EQ(gpu::inflate::inflate_stream(in.data(), 2, nullptr, 4, t).status, InflateStatus::invalid_item);
}

TEST(InflateMalformed, EveryCutOfAStreamIsTruncatedOrABoundary) {
  const Bytes d = test::text_like_bytes(3000, 5);
  const Bytes s = is::zlib_raw(d, 6);
  for (std::size_t n = 1; n < s.size(); ++n) {
    const Bytes cut(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
    const Inflated r = inflate(cut, d.size());
    EXPECT_EQ(r.result.status, InflateStatus::truncated) << "cut at " << n;
    EXPECT_TRUE(std::equal(r.out.begin(), r.out.end(), d.begin())) << "cut at " << n;
  }
  // A chunked stream cut at a chunk's end stops there, ok.
  const Bytes big = test::text_like_bytes(50000, 6);
  const is::Chunked c = is::zlib_chunked(big, 16384, 6);
  const Bytes first(c.stream.begin(), c.stream.begin() + static_cast<std::ptrdiff_t>(c.compressed_sizes[0]));
  const Inflated r = inflate(first, 16384);
  EXPECT_EQ(r.result.status, InflateStatus::ok);
  EXPECT_EQ(r.result.end, InflateEnd::input_end);
  EXPECT_EQ(r.out.size(), 16384u);
}

// Random edits of valid streams: the body stays in bounds, and whenever zlib
// inflates an edited stream to its end, the body gives the same bytes.
TEST(InflateMalformed, CorruptionsAgreeWithZlib) {
  std::mt19937_64 rng(21);
  const Bytes d = test::mixed_bytes(20000, 4);
  const std::vector<Bytes> streams = {is::zlib_raw(d, 1), is::zlib_raw(d, 9), is::zlib_raw(d, 6, Z_FIXED),
                                      is::libdeflate_raw(d, 12)};
  int agreed = 0;
  for (int round = 0; round < 3000; ++round) {
    Bytes s = streams[round % streams.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) s[rng() % s.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    if (rng() % 4 == 0) s.resize(rng() % s.size());
    const std::size_t cap = d.size() + 1000;
    const Inflated r = inflate(s, cap);
    z_stream z{};
    ASSERT_EQ(inflateInit2(&z, -15), Z_OK);
    Bytes zout(cap);
    z.next_in = s.data();
    z.avail_in = static_cast<uInt>(s.size());
    z.next_out = zout.data();
    z.avail_out = static_cast<uInt>(zout.size());
    const int rc = ::inflate(&z, Z_FINISH);
    zout.resize(z.total_out);
    inflateEnd(&z);
    if (rc == Z_STREAM_END) {
      ASSERT_EQ(r.result.status, InflateStatus::ok) << "round " << round << ": "
                                                    << inflate_status_name(r.result.status);
      ASSERT_EQ(r.result.end, InflateEnd::final_block);
      ASSERT_TRUE(r.out == zout) << "round " << round;
      ++agreed;
    } else if (r.result.status == InflateStatus::ok && r.result.end == InflateEnd::final_block) {
      ADD_FAILURE() << "round " << round << ": the body accepts a stream zlib refuses (zlib " << rc << ")";
    }
  }
  EXPECT_GT(agreed, 0);
}

TEST(InflateBody, LengthAndDistanceBasesFollowTheRfc) {
  const std::uint32_t lbase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                   31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  const std::uint32_t lextra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  for (std::uint32_t i = 0; i < 29; ++i) {
    EXPECT_EQ(gpu::inflate::length_base(i), lbase[i]) << i;
    EXPECT_EQ(gpu::inflate::length_extra(i), lextra[i]) << i;
  }
  const std::uint32_t dbase[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,    65,    97,    129,
                                   193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
  for (std::uint32_t i = 0; i < 30; ++i) {
    EXPECT_EQ(gpu::inflate::distance_base(i), dbase[i]) << i;
    EXPECT_EQ(gpu::inflate::distance_extra(i), i < 4 ? 0u : i / 2 - 1) << i;
  }
}

// A batch of the chunks of a few indexed streams, whole streams, and bad
// items through the emulated kernel: each item as the one-thread body gives it.
TEST(InflateEmulated, BatchEqualsTheOneThreadBody) {
  std::vector<Bytes> inputs;
  std::vector<std::size_t> capacities;
  const Bytes text = test::text_like_bytes(300000, 31);
  const Bytes mixed = test::mixed_bytes(200000, 32);
  for (const Bytes* d : {&text, &mixed}) {
    const is::Chunked c = is::zlib_chunked(*d, 65536, 6);
    for (std::size_t i = 0; i < c.offsets.size(); ++i) {
      inputs.emplace_back(c.stream.begin() + static_cast<std::ptrdiff_t>(c.offsets[i]),
                          c.stream.begin() + static_cast<std::ptrdiff_t>(c.offsets[i] + c.compressed_sizes[i]));
      capacities.push_back(65536);
    }
    inputs.push_back(is::libdeflate_raw(*d, 9));
    capacities.push_back(d->size());
  }
  inputs.push_back({0x07, 0x00});  // reserved type
  capacities.push_back(10);
  inputs.push_back(is::zlib_raw(text, 1));  // too small an output
  capacities.push_back(1000);
  inputs.push_back({});  // empty
  capacities.push_back(0);
  Bytes cut = is::zlib_raw(mixed, 6);
  cut.resize(cut.size() / 2);
  inputs.push_back(cut);
  capacities.push_back(mixed.size());
  const std::size_t n = inputs.size();
  std::vector<Bytes> outs(n);
  std::vector<const void*> in_ptrs(n);
  std::vector<void*> out_ptrs(n);
  std::vector<std::size_t> in_sizes(n), out_sizes(n), used(n);
  std::vector<gpu::InflateStatus> statuses(n);
  std::vector<gpu::InflateEnd> ends(n);
  for (std::size_t i = 0; i < n; ++i) {
    outs[i].assign(capacities[i] + 1, 0);
    in_ptrs[i] = inputs[i].data();
    in_sizes[i] = inputs[i].size();
    out_ptrs[i] = outs[i].data();
  }
  gpu::inflate_emulated(in_ptrs.data(), in_sizes.data(), n, out_ptrs.data(), capacities.data(), out_sizes.data(),
                        statuses.data(), ends.data(), used.data());
  for (std::size_t i = 0; i < n; ++i) {
    SCOPED_TRACE(i);
    const Inflated r = inflate(inputs[i], capacities[i]);
    EXPECT_EQ(statuses[i], r.result.status);
    EXPECT_EQ(out_sizes[i], r.result.out_size);
    EXPECT_EQ(used[i], r.result.in_used);
    if (r.result.status == InflateStatus::ok) EXPECT_EQ(ends[i], r.result.end);
    EXPECT_TRUE(std::equal(r.out.begin(), r.out.end(), outs[i].begin()));
  }
  EXPECT_EQ(statuses[n - 4], InflateStatus::reserved_block_type);
  EXPECT_EQ(statuses[n - 3], InflateStatus::output_overflow);
  EXPECT_EQ(statuses[n - 2], InflateStatus::ok);
  EXPECT_EQ(statuses[n - 1], InflateStatus::truncated);
  // Null pointers where the sizes are not 0.
  std::vector<const void*> nulls(1, nullptr);
  std::vector<void*> null_out(1, nullptr);
  std::size_t one = 1, size = 99;
  gpu::InflateStatus st = gpu::InflateStatus::ok;
  gpu::inflate_emulated(nulls.data(), &one, 1, null_out.data(), &one, &size, &st, nullptr, nullptr);
  EXPECT_EQ(st, InflateStatus::invalid_item);
  EXPECT_EQ(size, 0u);
}

TEST(InflateEmulated, StatusMapping) {
  EXPECT_TRUE(gpu::inflate_status_to_status(InflateStatus::ok).ok());
  EXPECT_EQ(gpu::inflate_status_to_status(InflateStatus::truncated).code, StatusCode::truncated);
  EXPECT_EQ(gpu::inflate_status_to_status(InflateStatus::output_overflow).code, StatusCode::output_too_small);
  EXPECT_EQ(gpu::inflate_status_to_status(InflateStatus::invalid_item).code, StatusCode::invalid_argument);
  for (int s = 2; s < gpu::inflate::kInflateStatusCount; ++s) {
    const auto st = static_cast<InflateStatus>(s);
    if (st == InflateStatus::output_overflow || st == InflateStatus::invalid_item) continue;
    EXPECT_EQ(gpu::inflate_status_to_status(st).code, StatusCode::bad_data) << s;
  }
}

TEST(InflateEmulated, DeviceCallWithoutCudaSaysNoDevice) {
  if (backend_info().cuda_compiled) GTEST_SKIP() << "this build has CUDA";
  std::size_t temp = 0;
  EXPECT_EQ(gpu::inflate_temp_size(1, 1, &temp).code, StatusCode::no_device);
  EXPECT_EQ(gpu::inflate_async(nullptr, nullptr, 1, nullptr, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                               nullptr)
                .code,
            StatusCode::no_device);
}

}  // namespace
}  // namespace tandem
