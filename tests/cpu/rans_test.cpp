// tandem's rANS format on the CPU (cpu/rans_cpu.hpp), which runs the warp
// bodies the GPU kernels run (gpu/rans_body.hpp) through the warp emulation:
// round trips of random, constant, skewed, text-like and Silesia data at
// chunk sizes of 1 to 64 KiB, every scale and several lane counts; the edge
// cases (empty stream, one byte, one symbol, a stream shorter than a chunk,
// chunk boundaries, many chunks, a header claiming the largest chunk
// count); the body's pieces (exact division, normalisation, the table code);
// an independent decoder written from docs/formats/rans.md that must agree
// with the encoder; lanes emulated in reverse order giving the same bytes;
// and malformed streams, each with its exact error and status code, then
// random corruptions that must never crash or write past the output.
#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/rans_cpu.hpp"
#include "gpu/rans_body.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

using rans::Error;
using rans::Params;
using test::Bytes;
namespace body = gpu::ransk;

Bytes skewed_bytes(std::size_t n, std::uint64_t seed) {
  // Geometric: symbol k with probability about 2^-(k+1); a few rare symbols.
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (auto& x : b) {
    const std::uint64_t r = rng();
    x = r % 1000 == 0 ? static_cast<std::uint8_t>(r >> 20) : static_cast<std::uint8_t>(std::countr_one(r) % 20);
  }
  return b;
}

Bytes encode_ok(const Bytes& in, const Params& p) {
  Bytes out;
  const Status s = rans::encode(in, p, &out);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_LE(out.size(), rans::max_encoded_size(in.size(), p));
  return out;
}

void expect_round_trip(const Bytes& in, const Params& p) {
  SCOPED_TRACE(::testing::Message() << "n=" << in.size() << " chunk=" << p.chunk_kib << "KiB scale=" << p.scale_bits
                                    << " lanes=" << p.lanes);
  const Bytes enc = encode_ok(in, p);
  // Guard bytes after the output catch a write past its end.
  Bytes out(in.size() + 64, 0xEE);
  std::size_t size = 0;
  Error e = Error::invalid_item;
  const Status s = rans::decode(enc, std::span<std::uint8_t>(out.data(), in.size()), &size, &e);
  ASSERT_TRUE(s.ok()) << s.to_string() << " (" << rans::error_name(e) << ")";
  ASSERT_EQ(size, in.size());
  EXPECT_TRUE(std::equal(in.begin(), in.end(), out.begin()));
  EXPECT_TRUE(std::all_of(out.begin() + static_cast<std::ptrdiff_t>(in.size()), out.end(),
                          [](std::uint8_t b) { return b == 0xEE; }));
}

// ------------------------------------------------------------ pieces ----

// make_enc_sym takes the reciprocal in two 32-bit divisions (the device's
// 64-bit division is a long routine): the same as the 64-bit quotient
// floor(2^32 (2^s - f) / f) + 1 for every frequency, so the same bytes.
TEST(RansBody, ReciprocalMatchesTheWideQuotient) {
  for (std::uint32_t f = 1; f <= 65536; ++f) {
    const std::uint32_t s = body::ceil_log2(f);
    const std::uint64_t want = ((std::uint64_t{1} << 32) * ((std::uint64_t{1} << s) - f)) / f + 1;
    ASSERT_EQ(body::scaled_quotient((1u << s) - f, f) + std::uint64_t{1}, want) << "f=" << f;
    if (f <= (1u << rans::kMaxScaleBits)) {
      ASSERT_EQ(body::make_enc_sym(f, 0, rans::kMaxScaleBits).rcp, static_cast<std::uint32_t>(want)) << "f=" << f;
    }
  }
}

TEST(RansBody, DivisionByReciprocalIsExact) {
  std::mt19937 rng(7);
  const std::uint32_t edges[] = {0u, 1u, 2u, 0xFFFFu, 0x10000u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  for (std::uint32_t f = 1; f <= 4096; ++f) {
    const body::EncSym e = body::make_enc_sym(f, 0, rans::kMaxScaleBits);
    for (std::uint32_t x : edges) ASSERT_EQ(body::divide(x, e), x / f) << "x=" << x << " f=" << f;
    for (std::uint32_t m = 1; m <= 8; ++m) {  // around multiples of f near the top
      const std::uint64_t top = (0xFFFFFFFFull / f - m) * f;
      for (std::uint64_t x : {top - 1, top, top + 1}) {
        ASSERT_EQ(body::divide(static_cast<std::uint32_t>(x), e), static_cast<std::uint32_t>(x) / f);
      }
    }
    for (int i = 0; i < 200; ++i) {
      const std::uint32_t x = rng();
      ASSERT_EQ(body::divide(x, e), x / f) << "x=" << x << " f=" << f;
    }
  }
}

TEST(RansBody, NormalizedFrequenciesSumToTheScale) {
  std::mt19937 rng(11);
  for (int round = 0; round < 400; ++round) {
    std::uint32_t counts[256] = {};
    const int kind = round % 4;
    std::uint32_t total = 0;
    for (int s = 0; s < 256; ++s) {
      std::uint32_t c = 0;
      switch (kind) {
        case 0: c = rng() % 1000; break;                                    // dense
        case 1: c = rng() % 8 == 0 ? rng() % 100000 : 0; break;             // sparse
        case 2: c = s == 0 ? 1000000 : (rng() % 3 == 0 ? 1 : 0); break;     // one giant, many singletons
        case 3: c = 1; break;                                              // all symbols once
      }
      counts[s] = c;
      total += c;
    }
    if (total == 0) continue;
    for (std::uint32_t scale = rans::kMinScaleBits; scale <= rans::kMaxScaleBits; ++scale) {
      std::uint32_t freq[256];
      body::normalize(gpu::simt::Warp{}, counts, total, scale, freq);
      std::uint32_t sum = 0;
      for (int s = 0; s < 256; ++s) {
        ASSERT_EQ(freq[s] > 0, counts[s] > 0) << "symbol " << s;
        sum += freq[s];
      }
      ASSERT_EQ(sum, 1u << scale);
    }
  }
}

// The format's frequency rule, step by step as docs/formats/rans.md states
// it: the body computes the excess's part in one go, which must give the
// same frequencies (they fix the stream's bytes).
void format_frequencies(const std::uint32_t* counts, std::uint32_t total, std::uint32_t scale_bits,
                        std::uint32_t* freq) {
  const std::uint32_t M = 1u << scale_bits;
  std::uint32_t sum = 0;
  for (int s = 0; s < 256; ++s) {
    freq[s] = 0;
    if (counts[s]) {
      freq[s] = static_cast<std::uint32_t>((std::uint64_t{counts[s]} * M + total / 2) / total);
      if (freq[s] == 0) freq[s] = 1;
    }
    sum += freq[s];
  }
  if (sum < M) {
    int top = 0;
    for (int s = 1; s < 256; ++s) top = counts[s] > counts[top] ? s : top;
    freq[top] += M - sum;
  }
  for (; sum > M; --sum) {
    int top = 0;
    for (int s = 1; s < 256; ++s) top = freq[s] > freq[top] ? s : top;
    freq[top] -= 1;
  }
}

TEST(RansBody, NormalizationFollowsTheFormat) {
  std::mt19937 rng(17);
  for (int round = 0; round < 3000; ++round) {
    std::uint32_t counts[256] = {};
    std::uint32_t total = 0;
    const int kind = round % 5;
    for (int s = 0; s < 256; ++s) {
      std::uint32_t c = 0;
      switch (kind) {
        case 0: c = rng() % 8 == 0 ? rng() % 100000 : 0; break;                   // sparse
        case 1: c = s < 4 ? 20000 + rng() % 50000 : (rng() % 2 ? 1 + rng() % 20 : 0); break;  // a few large, many rare
        case 2: c = rng() % 3 == 0 ? 1 : 0; break;                                // singletons
        case 3: c = 1 + rng() % (1u << (rng() % 14)); break;                      // all present, any size
        case 4: c = s % 16 == 0 ? 5000 : (rng() % 4 == 0 ? 1 : 0); break;        // ties at the top
      }
      counts[s] = c;
      total += c;
    }
    if (total == 0) continue;
    for (std::uint32_t scale = rans::kMinScaleBits; scale <= rans::kMaxScaleBits; ++scale) {
      std::uint32_t got[256], want[256];
      body::normalize(gpu::simt::Warp{}, counts, total, scale, got);
      format_frequencies(counts, total, scale, want);
      for (int s = 0; s < 256; ++s) ASSERT_EQ(got[s], want[s]) << "round " << round << " scale " << scale << " symbol " << s;
    }
  }
}

TEST(RansBody, TableCodeRoundTrips) {
  std::mt19937 rng(5);
  for (int round = 0; round < 300; ++round) {
    const std::uint32_t scale = rans::kMinScaleBits + round % 5;
    std::uint32_t counts[256] = {};
    std::uint32_t total = 0;
    const int present = 1 + static_cast<int>(rng() % 256);
    for (int i = 0; i < present; ++i) {
      const std::uint32_t c = 1 + rng() % (1u << (rng() % 16));
      counts[rng() % 256] += c;
      total += c;
    }
    std::uint32_t freq[256];
    body::normalize(gpu::simt::Warp{}, counts, total, scale, freq);
    // The chosen order codes the table in the fewest bits, the lowest of equals.
    const body::TableCode code = body::best_table_code(gpu::simt::Warp{}, freq);
    ASSERT_EQ(code.bytes, body::table_bytes(freq, code.order));
    for (std::uint32_t k = 0; k <= rans::kMaxCodeOrder; ++k) {
      const std::uint32_t bits = body::table_code_bits(freq, k), best = body::table_code_bits(freq, code.order);
      ASSERT_TRUE(bits > best || (bits == best && k >= code.order)) << "order " << k << " against " << code.order;
    }
    for (std::uint32_t k = 0; k <= rans::kMaxCodeOrder; ++k) {
      Bytes t(body::table_bytes(freq, k));
      std::uint32_t scratch[body::kTableScratchWords];
      body::write_table(gpu::simt::Warp{}, freq, k, scratch, t.data());
      std::uint32_t back[256];
      ASSERT_EQ(body::parse_table(t.data(), static_cast<std::uint32_t>(t.size()), scale, back), Error::ok);
      ASSERT_TRUE(std::equal(freq, freq + 256, back));
    }
  }
}

// The decoders fill their slots by a search and a walk, a warp a quarter
// on the GPU: the slots must be those of the definition (slot j to the
// symbol whose range holds it), in both layouts, whatever the table's gaps.
TEST(RansBody, SlotFillFollowsTheDefinition) {
  std::mt19937 rng(13);
  for (int round = 0; round < 200; ++round) {
    const std::uint32_t scale = rans::kMinScaleBits + round % 5;
    std::uint32_t counts[256] = {};
    std::uint32_t total = 0;
    const int present = round % 7 == 0 ? 1 : 1 + static_cast<int>(rng() % 256);
    for (int i = 0; i < present; ++i) {
      const std::uint32_t c = 1 + rng() % (1u << (rng() % 16));
      counts[rng() % 256] += c;
      total += c;
    }
    std::uint32_t freq[256], fc[256];
    body::normalize(gpu::simt::Warp{}, counts, total, scale, freq);
    for (std::uint32_t s = 0, cum = 0; s < 256; ++s) {
      fc[s] = freq[s] | (cum << 16);
      cum += freq[s];
    }
    const std::uint32_t M = 1u << scale;
    std::vector<std::uint32_t> want(M);
    for (std::uint32_t s = 0, cum = 0; s < 256; cum += freq[s], ++s) {
      for (std::uint32_t j = 0; j < freq[s]; ++j) want[cum + j] = body::slot_entry(s, freq[s], j);
    }
    for (std::uint32_t parts : {1u, 4u}) {
      std::vector<std::uint32_t> narrow(M, 0xDEADBEEFu);
      std::vector<body::WideSlot> wide(M, body::WideSlot{0xDEADBEEFu, 0xDEADBEEFu});
      for (std::uint32_t p = 0; p < parts; ++p) {
        body::fill_slots(gpu::simt::Warp{}, fc, p * (M / parts), M / parts, narrow.data());
        body::fill_slots(gpu::simt::Warp{}, fc, p * (M / parts), M / parts, wide.data());
      }
      for (std::uint32_t j = 0; j < M; ++j) {
        ASSERT_EQ(narrow[j], want[j]) << "slot " << j << " scale " << scale;
        const std::uint32_t s = want[j] & 0xFFu, f = ((want[j] >> 8) & 0xFFFu) + 1, off = want[j] >> 20;
        ASSERT_EQ(wide[j].f, f) << "slot " << j;
        ASSERT_EQ(wide[j].symbol_offset, s | (off << 8)) << "slot " << j;
      }
    }
  }
}

// -------------------------------------------------------- round trips ----

TEST(RansRoundTrip, ChunkSizesAndDataKinds) {
  for (std::uint32_t kib : {1u, 4u, 8u, 16u}) {
    const std::size_t cs = std::size_t{kib} * 1024;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{33}, cs - 1, cs,
                          cs + 1, 3 * cs + 17, std::size_t{100000}}) {
      Params p;
      p.chunk_kib = kib;
      expect_round_trip(test::random_bytes(n, n + kib), p);
      expect_round_trip(test::constant_bytes(n, 0x5A), p);
      expect_round_trip(skewed_bytes(n, n * 3 + kib), p);
      expect_round_trip(test::text_like_bytes(n, n + 1), p);
    }
  }
}

TEST(RansRoundTrip, EveryScaleAndLaneCount) {
  const Bytes data = test::mixed_bytes(70000, 3);
  for (std::uint32_t scale = rans::kMinScaleBits; scale <= rans::kMaxScaleBits; ++scale) {
    for (std::uint32_t lanes : {1u, 2u, 7u, 31u, 32u}) {
      for (std::uint32_t kib : {1u, 64u}) expect_round_trip(data, Params{kib, scale, lanes});
    }
  }
}

TEST(RansRoundTrip, AllSymbolsAtTheSmallestScale) {
  // 256 symbols with scale 8: every frequency is 1.
  Bytes data(5000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7);
  data[0] = 0;
  for (int i = 0; i < 200; ++i) data[i] = 0;  // one frequent symbol beside rare ones
  expect_round_trip(data, Params{1, 8, 32});
  expect_round_trip(data, Params{4, 12, 32});
}

TEST(RansRoundTrip, EmptyStreamIsItsHeader) {
  const Bytes enc = encode_ok({}, Params{});
  EXPECT_EQ(enc.size(), rans::kHeaderBytes);
  Bytes out;
  EXPECT_TRUE(rans::decode(enc, &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(RansRoundTrip, OneSymbolNeedsNoWords) {
  // A single symbol has the whole scale: coding it costs nothing, so the
  // stream is its header, table, directory and states.
  const Bytes data(40000, 'a');
  const Bytes enc = encode_ok(data, Params{16, 11, 32});
  body::Header h;
  ASSERT_EQ(body::parse_header(enc.data(), enc.size(), &h), Error::ok);
  std::size_t states = 0;
  for (std::uint32_t i = 0; i < h.chunk_count; ++i) {
    const body::Entry e = body::read_entry(enc.data() + body::directory_at(h), i);
    EXPECT_EQ(e.words, 0u);
    // Each state is 2^16 plus its two raw bytes: a nibble and 16 bits.
    EXPECT_EQ(e.state_bytes, rans::min_state_bytes(e.lanes));
    states += e.state_bytes;
  }
  EXPECT_EQ(enc.size(), body::payloads_at(h) + states);
  expect_round_trip(data, Params{16, 11, 32});
  expect_round_trip(Bytes{42}, Params{});
}

TEST(RansRoundTrip, ShortStreamUsesFewLanes) {
  // A stream shorter than a chunk: one chunk, ceil(n / 64) lanes.
  const Bytes data = test::text_like_bytes(300, 9);
  const Bytes enc = encode_ok(data, Params{});
  body::Header h;
  ASSERT_EQ(body::parse_header(enc.data(), enc.size(), &h), Error::ok);
  EXPECT_EQ(h.chunk_count, 1u);
  EXPECT_EQ(enc[body::directory_at(h)], 5u);
  expect_round_trip(data, Params{});
}

TEST(RansRoundTrip, ManyChunks) {
  const Bytes data = test::mixed_bytes(std::size_t{8} << 20, 21);
  const Params p{1, 11, 32};
  const Bytes enc = encode_ok(data, p);
  rans::StreamInfo info;
  ASSERT_TRUE(rans::read_info(enc, &info).ok());
  EXPECT_EQ(info.chunk_count, 8192u);
  expect_round_trip(data, p);
}

TEST(RansRoundTrip, EncoderIsDeterministicAndLaneOrderFree) {
  const Bytes data = test::mixed_bytes(200000, 4);
  const Bytes a = encode_ok(data, Params{});
  bool& reversed = gpu::simt::host_lanes_reversed();
  reversed = true;
  const Bytes b = encode_ok(data, Params{});
  Bytes out;
  const Status s = rans::decode(a, &out);
  reversed = false;
  EXPECT_EQ(a, b);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(out, data);
}

// The coders stage their input through a ring filled by aligned 4-byte
// loads; a chunk or a payload at any address must code the same bytes.
TEST(RansRoundTrip, UnalignedBuffersGiveTheSameBytes) {
  const Bytes mixed = test::mixed_bytes(70001, 12);
  const Bytes random = test::random_bytes(9000, 13);
  for (const Params& p : {Params{}, Params{1, 11, 7}, Params{4, 12, 32}, Params{64, 10, 31}, Params{2, 8, 1}}) {
    for (const Bytes* data : {&mixed, &random}) {
      const Bytes want = encode_ok(*data, p);
      for (std::size_t at = 1; at < 4; ++at) {
        SCOPED_TRACE(::testing::Message() << "chunk=" << p.chunk_kib << " lanes=" << p.lanes << " offset=" << at);
        Bytes in(data->size() + at);
        std::copy(data->begin(), data->end(), in.begin() + static_cast<std::ptrdiff_t>(at));
        Bytes out(rans::max_encoded_size(data->size(), p));
        std::size_t size = 0;
        ASSERT_TRUE(rans::encode(std::span<const std::uint8_t>(in).subspan(at), p, out, &size).ok());
        out.resize(size);
        EXPECT_EQ(out, want);
        Bytes stream(want.size() + at);
        std::copy(want.begin(), want.end(), stream.begin() + static_cast<std::ptrdiff_t>(at));
        Bytes back(data->size());
        ASSERT_TRUE(rans::decode(std::span<const std::uint8_t>(stream).subspan(at), back, &size).ok());
        EXPECT_EQ(back, *data);
      }
    }
  }
}

TEST(RansRoundTrip, Silesia) {
  if (test::silesia_dir().empty()) GTEST_SKIP() << "the Silesia corpus is not available";
  std::size_t in_bytes = 0, out_bytes = 0;
  for (const std::string& name : test::silesia_names()) {
    SCOPED_TRACE(name);
    const Bytes file = test::read_file(test::silesia_dir() / name);
    // The whole file in 64 KiB streams, and a 2 MiB window of it as one.
    const std::size_t window = std::min<std::size_t>(file.size(), std::size_t{2} << 20);
    for (std::size_t at = 0; at < file.size(); at += 65536) {
      const Bytes stream(file.begin() + static_cast<std::ptrdiff_t>(at),
                         file.begin() + static_cast<std::ptrdiff_t>(std::min(file.size(), at + 65536)));
      const Bytes enc = encode_ok(stream, Params{});
      Bytes out;
      ASSERT_TRUE(rans::decode(enc, &out).ok());
      ASSERT_EQ(out, stream);
      in_bytes += stream.size();
      out_bytes += enc.size();
    }
    expect_round_trip(Bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(window)), Params{4, 12, 32});
  }
  // Order-0 entropy coding of the corpus in 64 KiB streams: at least the
  // ratio the format was designed for (docs/formats/rans.md; 1.990 measured).
  if (in_bytes) EXPECT_GT(static_cast<double>(in_bytes) / static_cast<double>(out_bytes), 1.86);
}

// ----------------------------------------------- an independent decoder ----
//
// Written from docs/formats/rans.md alone, one symbol at a time: no warp, no
// shared code. Assumes a valid stream.
Bytes reference_decode(const Bytes& s) {
  const auto u16 = [&](std::size_t at) { return static_cast<std::uint32_t>(s[at] | (s[at + 1] << 8)); };
  const auto u32 = [&](std::size_t at) { return u16(at) | (u16(at + 2) << 16); };
  const std::uint32_t scale = s[5], cs = s[6] * 1024u, length = u32(8), chunks = u32(12), tb = u16(16);
  Bytes out(length);
  if (length == 0) return out;
  std::uint32_t freq[256] = {}, cum[257] = {};
  const std::uint32_t k = s[18];
  std::size_t bit = (18 + 33) * 8;
  const auto next = [&] { const std::uint32_t b = (s[bit / 8] >> (bit % 8)) & 1; ++bit; return b; };
  for (int sym = 0; sym < 256; ++sym) {
    if (!((s[19 + sym / 8] >> (sym % 8)) & 1)) continue;
    std::uint32_t nb = k;
    while (!next()) ++nb;
    std::uint32_t u = 1u << nb;
    for (std::uint32_t i = 0; i < nb; ++i) u |= next() << i;
    freq[sym] = u - (1u << k) + 1;
  }
  for (int sym = 0; sym < 256; ++sym) cum[sym + 1] = cum[sym] + freq[sym];
  std::size_t dir = 18 + tb, at = dir + 4 * std::size_t{chunks};
  for (std::uint32_t c = 0; c < chunks; ++c) {
    const std::uint32_t lanes = s[dir + 4 * c], state_bytes = s[dir + 4 * c + 1], words = u16(dir + 4 * c + 2);
    const std::uint32_t n = c + 1 < chunks ? cs : length - c * cs;
    std::uint32_t x[32], left[32];
    const std::size_t bits = at + (lanes + 1) / 2;
    std::uint32_t bit_at = 0;
    for (std::uint32_t l = 0; l < lanes; ++l) {
      // A nibble per lane: the bits below the state's top bit, less 16.
      const std::uint32_t below = ((s[at + l / 2] >> (4 * (l % 2))) & 15) + 16;
      std::uint32_t v = 0;
      for (std::uint32_t i = 0; i < below; ++i, ++bit_at) v |= ((s[bits + bit_at / 8] >> (bit_at % 8)) & 1u) << i;
      x[l] = (1u << below) | v;
      const std::uint32_t count = (n - l + lanes - 1) / lanes;
      left[l] = count - std::min(count, 2u);
    }
    std::size_t w = at + state_bytes;
    std::uint8_t* o = out.data() + std::size_t{c} * cs;
    for (std::uint32_t t = 0; t < n; ++t) {
      for (std::uint32_t l = 0; l < lanes; ++l) {
        if (t >= left[l]) continue;
        const std::uint32_t slot = x[l] & ((1u << scale) - 1);
        int sym = 0;
        while (cum[sym + 1] <= slot) ++sym;
        o[l + t * lanes] = static_cast<std::uint8_t>(sym);
        x[l] = freq[sym] * (x[l] >> scale) + slot - cum[sym];
        if (x[l] < 65536) {
          x[l] = (x[l] << 16) | u16(w);
          w += 2;
        }
      }
    }
    for (std::uint32_t l = 0; l < lanes; ++l) {
      const std::uint32_t count = (n - l + lanes - 1) / lanes;
      for (std::uint32_t i = 0; i < std::min(count, 2u); ++i) {
        o[l + (left[l] + i) * lanes] = static_cast<std::uint8_t>(x[l] >> (8 * i));
      }
    }
    EXPECT_EQ(w, at + state_bytes + 2 * std::size_t{words});
    EXPECT_EQ(state_bytes, (lanes + 1) / 2 + (bit_at + 7) / 8);
    at += state_bytes + 2 * std::size_t{words};
  }
  return out;
}

TEST(RansRoundTrip, IndependentDecoderAgrees) {
  for (const Params& p : {Params{}, Params{1, 8, 32}, Params{4, 12, 5}, Params{64, 10, 1}}) {
    for (const Bytes& data : {test::mixed_bytes(150000, 8), skewed_bytes(33333, 2), test::text_like_bytes(100, 1),
                              test::random_bytes(5, 3)}) {
      EXPECT_EQ(reference_decode(encode_ok(data, p)), data);
    }
  }
}

// --------------------------------------------------------- malformed ----

struct Verdict {
  Status status;
  Error error;
};

Verdict decode_verdict(const Bytes& stream, std::size_t capacity) {
  Bytes out(capacity + 64, 0xEE);
  std::size_t size = 0;
  Error e = Error::invalid_item;
  const Status s = rans::decode(stream, std::span<std::uint8_t>(out.data(), capacity), &size, &e);
  EXPECT_TRUE(std::all_of(out.begin() + static_cast<std::ptrdiff_t>(capacity), out.end(),
                          [](std::uint8_t b) { return b == 0xEE; }))
      << "write past the output";
  if (s.ok()) EXPECT_LE(size, capacity);
  return {s, e};
}

#define EXPECT_VERDICT(stream, capacity, err, code)               \
  do {                                                            \
    const Verdict v_ = decode_verdict(stream, capacity);          \
    EXPECT_EQ(rans::error_name(v_.error), rans::error_name(err)); \
    EXPECT_STATUS(v_.status, code);                               \
  } while (0)

class RansMalformed : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = test::text_like_bytes(40000, 17);
    stream_ = encode_ok(data_, Params{16, 11, 32});
    ASSERT_EQ(body::parse_header(stream_.data(), stream_.size(), &h_), Error::ok);
  }
  // The stream with a new table (freq as given), everything else kept.
  Bytes with_table(const std::uint32_t* freq) const {
    const body::TableCode code = body::best_table_code(gpu::simt::Warp{}, freq);
    const std::uint32_t k = code.order;
    const std::size_t tb = code.bytes;
    const std::size_t rest = stream_.size() - body::directory_at(h_);
    Bytes s(rans::kHeaderBytes + tb + rest);
    std::memcpy(s.data(), stream_.data(), rans::kHeaderBytes);
    std::uint32_t scratch[body::kTableScratchWords];
    body::write_table(gpu::simt::Warp{}, freq, k, scratch, s.data() + rans::kHeaderBytes);
    std::memcpy(s.data() + rans::kHeaderBytes + tb, stream_.data() + body::directory_at(h_), rest);
    body::store_u16le(s.data() + 16, static_cast<std::uint32_t>(tb));
    return s;
  }
  std::uint32_t* stream_freq(std::uint32_t* freq) const {
    EXPECT_EQ(body::parse_table(stream_.data() + rans::kHeaderBytes, h_.table_bytes, h_.scale_bits, freq), Error::ok);
    return freq;
  }
  std::size_t entry(std::uint32_t i) const { return body::directory_at(h_) + 4 * i; }
  std::size_t payload(std::uint32_t i) const {
    std::size_t at = body::payloads_at(h_);
    for (std::uint32_t j = 0; j < i; ++j) at += stream_[entry(j) + 1] + 2 * body::load_u16le(&stream_[entry(j) + 2]);
    return at;
  }

  Bytes data_, stream_;
  body::Header h_;
};

TEST_F(RansMalformed, ControlDecodes) { EXPECT_VERDICT(stream_, data_.size(), Error::ok, StatusCode::ok); }

TEST_F(RansMalformed, EveryPrefixIsTruncated) {
  for (std::size_t n = 0; n < stream_.size(); n += (n < 300 ? 1 : 97)) {
    SCOPED_TRACE(n);
    EXPECT_VERDICT(Bytes(stream_.begin(), stream_.begin() + static_cast<std::ptrdiff_t>(n)), data_.size(),
                   Error::truncated, StatusCode::truncated);
  }
  const Bytes empty = encode_ok({}, Params{});
  EXPECT_VERDICT(Bytes(empty.begin(), empty.end() - 1), 0, Error::truncated, StatusCode::truncated);
}

TEST_F(RansMalformed, HeaderFields) {
  Bytes s = stream_;
  s[0] = 'X';
  EXPECT_VERDICT(s, data_.size(), Error::bad_magic, StatusCode::bad_data);
  EXPECT_VERDICT((Bytes{'T', 'N', 'X'}), 10, Error::bad_magic, StatusCode::bad_data);
  s = stream_;
  s[4] = 2;
  EXPECT_VERDICT(s, data_.size(), Error::unsupported_version, StatusCode::unsupported);
  for (auto [at, value] : {std::pair{5, 7}, {5, 13}, {6, 0}, {6, 65}, {7, 0}, {7, 33}}) {
    s = stream_;
    s[at] = static_cast<std::uint8_t>(value);
    EXPECT_VERDICT(s, data_.size(), Error::bad_params, StatusCode::bad_data);
  }
}

TEST_F(RansMalformed, LyingCountsAndLengths) {
  Bytes s = stream_;
  body::store_u32le(s.data() + 12, h_.chunk_count + 1);
  EXPECT_VERDICT(s, data_.size(), Error::bad_chunk_count, StatusCode::bad_data);
  s = stream_;
  body::store_u32le(s.data() + 12, h_.chunk_count - 1);
  EXPECT_VERDICT(s, data_.size(), Error::bad_chunk_count, StatusCode::bad_data);
  // The largest chunk count a header can claim, over an input that cannot
  // hold its directory: refused before anything is sized by it.
  s = stream_;
  s[6] = 1;
  body::store_u32le(s.data() + 8, 0xFFFFFFFFu);
  body::store_u32le(s.data() + 12, 0x400000u);
  EXPECT_VERDICT(s, data_.size(), Error::truncated, StatusCode::truncated);
  {
    Bytes out;
    EXPECT_STATUS(rans::decode(s, &out), StatusCode::truncated);
    EXPECT_TRUE(out.empty());
  }
  // A length one longer, same chunk count: the last chunk's lanes disagree.
  s = stream_;
  body::store_u32le(s.data() + 8, h_.length + 1);
  const Verdict longer = decode_verdict(s, data_.size() + 1);
  EXPECT_STATUS(longer.status, StatusCode::bad_data);
  // A length the output cannot hold.
  EXPECT_VERDICT(stream_, data_.size() - 1, Error::output_too_small, StatusCode::output_too_small);
  Bytes out;
  EXPECT_STATUS(rans::decode(stream_, &out, data_.size() - 1), StatusCode::output_limit);
}

TEST_F(RansMalformed, TableHeader) {
  Bytes s = stream_;
  body::store_u16le(s.data() + 16, 10);  // shorter than its fixed part
  EXPECT_VERDICT(s, data_.size(), Error::bad_table, StatusCode::bad_data);
  s = stream_;
  s[rans::kHeaderBytes] = rans::kMaxCodeOrder + 1;
  EXPECT_VERDICT(s, data_.size(), Error::bad_table, StatusCode::bad_data);
  // Table size one byte longer or shorter: the codes or the directory move.
  s = stream_;
  body::store_u16le(s.data() + 16, h_.table_bytes - 1);
  EXPECT_EQ(decode_verdict(s, data_.size()).status.code, StatusCode::bad_data);
  // An empty stream with a table.
  Bytes e = encode_ok({}, Params{});
  body::store_u16le(e.data() + 16, 40);
  EXPECT_VERDICT(e, 0, Error::bad_table, StatusCode::bad_data);
  e = encode_ok({}, Params{});
  e.push_back(0);
  EXPECT_VERDICT(e, 0, Error::trailing_bytes, StatusCode::bad_data);
}

TEST_F(RansMalformed, FrequenciesNotSummingToTheScale) {
  std::uint32_t freq[256];
  stream_freq(freq);
  int top = 0;
  for (int s = 0; s < 256; ++s) top = freq[s] > freq[top] ? s : top;
  freq[top] += 1;
  EXPECT_VERDICT(with_table(freq), data_.size(), Error::bad_table, StatusCode::bad_data);
  freq[top] -= 2;
  EXPECT_VERDICT(with_table(freq), data_.size(), Error::bad_table, StatusCode::bad_data);
  // A symbol above the whole scale.
  std::uint32_t one[256] = {};
  one[7] = 4096;
  EXPECT_VERDICT(with_table(one), data_.size(), Error::bad_table, StatusCode::bad_data);
  // No symbol at all.
  std::uint32_t none[256] = {};
  EXPECT_VERDICT(with_table(none), data_.size(), Error::bad_table, StatusCode::bad_data);
}

TEST_F(RansMalformed, UsedSymbolMissingFromTheTable) {
  // The data's symbols coded with a table that lacks one of them (its share
  // given to another): a symbol the table does not have cannot come out, so
  // the chunks fail their end checks.
  std::uint32_t freq[256];
  stream_freq(freq);
  int used = 0, other = 0;
  for (int s = 0; s < 256; ++s) {
    if (freq[s] && !used) used = s;
    if (freq[s] > freq[other]) other = s;
  }
  freq[other] += freq[used];
  freq[used] = 0;
  EXPECT_STATUS(decode_verdict(with_table(freq), data_.size()).status, StatusCode::bad_data);
}

TEST_F(RansMalformed, TablePaddingAndTrailingBytes) {
  Bytes s = stream_;
  // The table's last byte holds its last code bits and zero padding; a set
  // padding bit, if there is padding, or else a changed code, is refused.
  const std::size_t last = rans::kHeaderBytes + h_.table_bytes - 1;
  s[last] |= 0x80;
  if (s[last] != stream_[last]) EXPECT_EQ(decode_verdict(s, data_.size()).status.code, StatusCode::bad_data);
  s = stream_;
  s.push_back(0);
  EXPECT_VERDICT(s, data_.size(), Error::trailing_bytes, StatusCode::bad_data);
}

TEST_F(RansMalformed, DirectoryEntries) {
  ASSERT_GE(h_.chunk_count, 3u);
  Bytes s = stream_;
  s[entry(1)] = 0;
  EXPECT_VERDICT(s, data_.size(), Error::bad_directory, StatusCode::bad_data);
  s = stream_;
  s[entry(1)] = 33;
  EXPECT_VERDICT(s, data_.size(), Error::bad_directory, StatusCode::bad_data);
  s = stream_;
  s[7] = 16;  // fewer lanes allowed than the chunks have
  EXPECT_VERDICT(s, data_.size(), Error::bad_directory, StatusCode::bad_data);
  s = stream_;
  body::store_u16le(s.data() + entry(0) + 2, 16385);  // more words than symbols
  EXPECT_VERDICT(s, data_.size(), Error::bad_directory, StatusCode::bad_data);
  s = stream_;
  body::store_u16le(s.data() + entry(0) + 2, body::load_u16le(s.data() + entry(0) + 2) + 1);
  EXPECT_VERDICT(s, data_.size(), Error::truncated, StatusCode::truncated);
}

TEST_F(RansMalformed, LyingWordCounts) {
  const std::uint32_t last = h_.chunk_count - 1;
  const std::uint32_t words = body::load_u16le(&stream_[entry(last) + 2]);
  ASSERT_GT(words, 0u);
  // One word fewer, the last one gone: the chunk runs out of words.
  Bytes s = stream_;
  body::store_u16le(s.data() + entry(last) + 2, words - 1);
  s.resize(s.size() - 2);
  EXPECT_VERDICT(s, data_.size(), Error::words_exhausted, StatusCode::bad_data);
  // One word more, appended: the chunk leaves it.
  s = stream_;
  body::store_u16le(s.data() + entry(last) + 2, words + 1);
  s.push_back(0);
  s.push_back(0);
  EXPECT_VERDICT(s, data_.size(), Error::words_left_over, StatusCode::bad_data);
  // A chunk that claims a word fewer and so moves its neighbours' payloads.
  s = stream_;
  body::store_u16le(s.data() + entry(0) + 2, body::load_u16le(&s[entry(0) + 2]) - 1);
  EXPECT_VERDICT(s, data_.size(), Error::trailing_bytes, StatusCode::bad_data);
}

TEST_F(RansMalformed, StateSizes) {
  // Lane 0's state 8 bits longer or shorter: the states no longer fit their size.
  Bytes s = stream_;
  s[payload(1)] = static_cast<std::uint8_t>(s[payload(1)] ^ 8);
  EXPECT_VERDICT(s, data_.size(), Error::bad_states, StatusCode::bad_data);
  // State bytes in the directory outside what the lane count allows.
  s = stream_;
  s[entry(1) + 1] = static_cast<std::uint8_t>(rans::min_state_bytes(32) - 1);
  EXPECT_VERDICT(s, data_.size(), Error::bad_directory, StatusCode::bad_data);
  s = stream_;
  s[entry(1) + 1] = static_cast<std::uint8_t>(rans::max_state_bytes(32) + 1);
  EXPECT_VERDICT(s, data_.size(), Error::bad_directory, StatusCode::bad_data);
  // An odd lane count's unused nibble, and padding after the state bits.
  const Bytes odd_data = test::text_like_bytes(5 * 64, 3);
  const Bytes odd = encode_ok(odd_data, Params{});
  body::Header h;
  ASSERT_EQ(body::parse_header(odd.data(), odd.size(), &h), Error::ok);
  const body::Entry e = body::read_entry(odd.data() + body::directory_at(h), 0);
  ASSERT_EQ(e.lanes, 5u);
  EXPECT_VERDICT(odd, odd_data.size(), Error::ok, StatusCode::ok);
  s = odd;
  s[body::payloads_at(h) + 2] |= 0x10;
  EXPECT_VERDICT(s, odd_data.size(), Error::bad_states, StatusCode::bad_data);
  std::uint32_t bits = 0;
  for (std::uint32_t l = 0; l < 5; ++l) bits += 16 + ((odd[body::payloads_at(h) + l / 2] >> (4 * (l % 2))) & 15);
  if (bits % 8) {
    s = odd;
    s[body::payloads_at(h) + 3 + bits / 8] |= 0x80;
    EXPECT_VERDICT(s, odd_data.size(), Error::bad_states, StatusCode::bad_data);
  }
}

TEST_F(RansMalformed, FinalStates) {
  // With one symbol, decoding leaves a state as it is: the stored state is
  // the final state, 2^16 | raw bytes (a zero nibble, then the two bytes).
  const Bytes data(5000, 'z');
  const Bytes good = encode_ok(data, Params{4, 11, 32});
  body::Header h;
  ASSERT_EQ(body::parse_header(good.data(), good.size(), &h), Error::ok);
  const std::size_t states = body::payloads_at(h);
  EXPECT_EQ(good[states], 0u);
  EXPECT_EQ(good[states + 16], 'z');
  EXPECT_EQ(good[states + 17], 'z');
  Bytes s;
  // A lane with one symbol must have zero in the second raw byte.
  const Bytes tiny = encode_ok(Bytes{'q'}, Params{});
  ASSERT_EQ(body::parse_header(tiny.data(), tiny.size(), &h), Error::ok);
  s = tiny;
  s[body::payloads_at(h) + 2] = 1;  // after the nibble byte and the raw byte
  EXPECT_VERDICT(s, 1, Error::bad_final_state, StatusCode::bad_data);
}

TEST_F(RansMalformed, RandomCorruptionNeverCrashes) {
  std::mt19937_64 rng(99);
  const Bytes sources[] = {stream_, encode_ok(skewed_bytes(9000, 1), Params{1, 9, 7}),
                           encode_ok(test::random_bytes(3000, 2), Params{2, 12, 32})};
  int failures = 0;
  for (int round = 0; round < 3000; ++round) {
    Bytes s = sources[round % 3];
    const int kind = round % 5;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % s.size();
      if (kind == 0) s[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      if (kind == 1) s[at] = static_cast<std::uint8_t>(rng());
      if (kind == 2) s[(at % 40)] = static_cast<std::uint8_t>(rng());  // header and table
      if (kind == 3) s.resize(at + 1);
      if (kind == 4) s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), static_cast<std::uint8_t>(rng()));
    }
    const Verdict v = decode_verdict(s, 50000);
    failures += !v.status.ok();
    EXPECT_TRUE(v.status.ok() || v.status.code == StatusCode::bad_data || v.status.code == StatusCode::truncated ||
                v.status.code == StatusCode::unsupported || v.status.code == StatusCode::output_too_small);
    EXPECT_EQ(v.status.ok(), v.error == Error::ok);
  }
  EXPECT_GT(failures, 2500);
}

TEST(RansApi, BadArguments) {
  Bytes out(100);
  std::size_t size = 0;
  EXPECT_STATUS(rans::encode(Bytes{1, 2}, Params{0, 11, 32}, out, &size), StatusCode::invalid_argument);
  EXPECT_STATUS(rans::encode(Bytes{1, 2}, Params{16, 13, 32}, out, &size), StatusCode::invalid_argument);
  EXPECT_STATUS(rans::encode(Bytes{1, 2}, Params{16, 11, 33}, out, &size), StatusCode::invalid_argument);
  EXPECT_EQ(rans::max_encoded_size(10, Params{16, 11, 0}), 0u);
  // Outputs too small, at every size below the stream's.
  const Bytes data = test::text_like_bytes(5000, 2);
  const Bytes enc = encode_ok(data, Params{1, 11, 32});
  for (std::size_t cap = 0; cap < enc.size(); cap += 7) {
    Bytes small(cap);
    EXPECT_STATUS(rans::encode(data, Params{1, 11, 32}, small, &size), StatusCode::output_too_small);
    EXPECT_EQ(size, 0u);
  }
  Bytes exact(enc.size());
  ASSERT_TRUE(rans::encode(data, Params{1, 11, 32}, exact, &size).ok());
  EXPECT_EQ(exact, enc);
}

}  // namespace
}  // namespace tandem
