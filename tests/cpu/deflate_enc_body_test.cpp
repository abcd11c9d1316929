// The GPU deflate encoder's bodies (gpu/deflate_enc_body.hpp) run on the CPU
// through deflate_compress_emulated: every chunk it writes inflates with zlib
// (raw deflate) to its input, alone (stopping cleanly at the end of its
// bytes, on a block boundary) and joined with others into one stream that
// 03 00 ends; on random, constant, text-like, mixed and record data at the
// edge sizes of the segments and stored blocks, and on Silesia files in
// 64 KiB chunks. The pieces: the tokenize pass on hand-made records, long
// matches cut into pieces of 3 to 258 bytes, length and distance symbols
// against RFC 1951's tables, the Huffman builder's length limits and exact Kraft sums on
// skewed, flat, tiny and random histograms, the stored fallback's bound, the
// chunk's closing empty stored block, and determinism.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/deflate_enc_body.hpp"
#include "gpu/deflate_gpu.hpp"
#include "gpu/huffman_encode.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

using test::Bytes;
namespace enc = gpu::deflate_enc;

// Inflates raw deflate data with zlib into at most `limit` bytes. *ended:
// whether a final block was seen; *used: input bytes consumed. False on a
// zlib error.
bool zlib_inflate(const Bytes& in, std::size_t limit, Bytes* out, bool* ended, std::size_t* used) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) return false;
  out->assign(limit + 1, 0);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out->data();
  z.avail_out = static_cast<uInt>(out->size());
  const int r = inflate(&z, Z_SYNC_FLUSH);
  *ended = r == Z_STREAM_END;
  *used = in.size() - z.avail_in;
  out->resize(out->size() - z.avail_out);
  inflateEnd(&z);
  return r == Z_OK || r == Z_STREAM_END || (r == Z_BUF_ERROR && z.avail_in == 0);
}

Bytes compress_chunk(const std::uint8_t* p, std::size_t n) {
  Bytes out;
  const Status s = gpu::deflate_compress_emulated(p, n, &out);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

// The chunk inflates alone to exactly its input, using all its bytes and
// seeing no final block, and ends with the empty stored block.
void expect_chunk_inflates(const std::uint8_t* p, std::size_t n, const Bytes& chunk) {
  ASSERT_GE(chunk.size(), 5u);
  EXPECT_LE(chunk.size(), gpu::deflate_max_compressed_size(n));
  EXPECT_EQ(0, std::memcmp(chunk.data() + chunk.size() - 4, "\x00\x00\xff\xff", 4));
  Bytes out;
  bool ended = true;
  std::size_t used = 0;
  ASSERT_TRUE(zlib_inflate(chunk, n, &out, &ended, &used));
  EXPECT_FALSE(ended);
  EXPECT_EQ(used, chunk.size());
  ASSERT_EQ(out.size(), n);
  EXPECT_TRUE(n == 0 || std::memcmp(out.data(), p, n) == 0);
}

// Cuts data into chunks of `chunk` bytes, checks each alone, then the joined
// stream ended by 03 00.
void expect_stream_round_trip(const Bytes& data, std::size_t chunk) {
  Bytes stream;
  for (std::size_t at = 0; at < data.size() || (at == 0 && data.empty()); at += chunk) {
    const std::size_t n = std::min(chunk, data.size() - at);
    const Bytes c = compress_chunk(data.data() + at, n);
    expect_chunk_inflates(data.data() + at, n, c);
    stream.insert(stream.end(), c.begin(), c.end());
    if (data.empty()) break;
  }
  stream.push_back(0x03);
  stream.push_back(0x00);
  Bytes out;
  bool ended = false;
  std::size_t used = 0;
  ASSERT_TRUE(zlib_inflate(stream, data.size(), &out, &ended, &used));
  EXPECT_TRUE(ended);
  EXPECT_EQ(used, stream.size());
  EXPECT_TRUE(out == data);
}

TEST(DeflateEncBody, EmptyChunkIsTheEmptyStoredBlock) {
  const Bytes c = compress_chunk(nullptr, 0);
  EXPECT_EQ(c, (Bytes{0x00, 0x00, 0x00, 0xff, 0xff}));
  expect_stream_round_trip({}, 65536);
}

TEST(DeflateEncBody, TinyInputs) {
  for (std::size_t n = 1; n <= 40; ++n) {
    SCOPED_TRACE(n);
    expect_stream_round_trip(test::text_like_bytes(n, n), 65536);
    expect_stream_round_trip(test::constant_bytes(n, 'a'), 65536);
    expect_stream_round_trip(test::random_bytes(n, n), 65536);
  }
}

TEST(DeflateEncBody, SegmentAndBlockEdges) {
  const std::size_t seg = enc::kSegmentSize;
  for (std::size_t n : {seg - 1, seg, seg + 1, 2 * seg + 3, std::size_t{65535}, std::size_t{65536}}) {
    SCOPED_TRACE(n);
    expect_stream_round_trip(test::text_like_bytes(n, 1), n);
    expect_stream_round_trip(test::mixed_bytes(n, 2), n);
    expect_stream_round_trip(test::record_bytes(n, 3), n);
    expect_stream_round_trip(test::constant_bytes(n, 0), n);
    expect_stream_round_trip(test::random_bytes(n, 4), n);
  }
}

TEST(DeflateEncBody, ChunkSizesFromOneKiBToOneMiB) {
  const Bytes data = test::mixed_bytes(3 << 20, 7);
  for (std::size_t chunk : {std::size_t{1} << 10, std::size_t{1} << 14, std::size_t{1} << 16, std::size_t{1} << 20}) {
    SCOPED_TRACE(chunk);
    expect_stream_round_trip(data, chunk);
  }
}

TEST(DeflateEncBody, RandomDataFallsBackToStoredBlocks) {
  for (std::size_t n : {std::size_t{65535}, std::size_t{65536}, std::size_t{200000}}) {
    const Bytes data = test::random_bytes(n, 11);
    const Bytes c = compress_chunk(data.data(), n);
    EXPECT_EQ(c.size(), gpu::deflate_max_compressed_size(n));
    expect_chunk_inflates(data.data(), n, c);
  }
}

TEST(DeflateEncBody, CompressibleDataShrinks) {
  const Bytes text = test::text_like_bytes(65536, 5);
  EXPECT_LT(compress_chunk(text.data(), text.size()).size(), text.size() / 2);
  const Bytes zeros = test::constant_bytes(65536, 0);
  EXPECT_LT(compress_chunk(zeros.data(), zeros.size()).size(), 200u);
}

TEST(DeflateEncBody, Deterministic) {
  const Bytes data = test::mixed_bytes(300000, 9);
  EXPECT_EQ(compress_chunk(data.data(), data.size()), compress_chunk(data.data(), data.size()));
}

TEST(DeflateEncBody, SilesiaIn64KiBChunks) {
  if (test::silesia_dir().empty()) GTEST_SKIP() << "Silesia corpus not available";
  for (const std::string& name : test::silesia_names()) {
    SCOPED_TRACE(name);
    Bytes data = test::read_file(test::silesia_dir() / name);
    data.resize(std::min<std::size_t>(data.size(), 1u << 20));  // the first MiB of each
    expect_stream_round_trip(data, 65536);
  }
}

TEST(DeflateEncBody, RejectsNullAndOversizedItems) {
  Bytes out;
  EXPECT_PRED_FORMAT2(test::StatusIs, gpu::deflate_compress_emulated(nullptr, 0, nullptr), StatusCode::invalid_argument);
  EXPECT_PRED_FORMAT2(test::StatusIs, gpu::deflate_compress_emulated(nullptr, 10, &out), StatusCode::invalid_argument);
  const std::uint8_t byte = 0;
  EXPECT_PRED_FORMAT2(test::StatusIs, gpu::deflate_compress_emulated(&byte, gpu::kMaxDeflateItem + 1, &out),
                      StatusCode::invalid_argument);
}

// Every match length the finder can give (4 up to a segment) cut into
// deflate's pieces: each of 3 to 258 bytes, together the match.
TEST(DeflateEncBody, LongMatchesSplitIntoPiecesOfThreeTo258Bytes) {
  for (std::uint32_t ml = 4; ml <= enc::kSegmentSize; ++ml) {
    const std::uint32_t pieces = enc::match_pieces(ml);
    std::uint32_t sum = 0;
    for (std::uint32_t k = 0; k < pieces; ++k) {
      const std::uint32_t len = enc::piece_length(ml, k);
      ASSERT_GE(len, enc::kMinMatch) << ml << " piece " << k;
      ASSERT_LE(len, enc::kMaxMatch) << ml << " piece " << k;
      sum += len;
    }
    ASSERT_EQ(sum, ml);
  }
}

// Runs of one byte of lengths around the 258-byte pieces and the segment
// size (matches cut into pieces, whole segments of matches), between random
// stretches, in chunks that cut them anywhere.
TEST(DeflateEncBody, RunsAroundThePieceLengthsRoundTrip) {
  Bytes data;
  std::uint64_t seed = 17;
  for (std::uint32_t run : {4u, 258u, 259u, 260u, 261u, 516u, 517u, 518u, 1000u, 8191u, 8192u, 8193u, 20000u}) {
    const Bytes noise = test::random_bytes(37, seed++);
    data.insert(data.end(), noise.begin(), noise.end());
    data.insert(data.end(), run + 1, static_cast<std::uint8_t>(run));
  }
  for (std::size_t chunk : {data.size(), std::size_t{65536}, std::size_t{8192}, std::size_t{8193}}) {
    SCOPED_TRACE(chunk);
    expect_stream_round_trip(data, chunk);
  }
}

// The tokenize pass alone on hand-made records: literals, a match split in
// pieces, the segment's trailing literals, and the histogram that counts
// them.
TEST(DeflateEncBody, TokenizeCoversTheSegmentInOrder) {
  const Bytes data = test::text_like_bytes(enc::kSegmentSize * 2, 31);
  const std::uint32_t n = static_cast<std::uint32_t>(data.size());
  // Segment 1: 5 literals, a match of 600 at offset 1000, 0 literals, a
  // match of 4 at offset 32767 (offsets need not be real matches here).
  const gpu::lz4k::SeqRecord recs[2] = {{5u | (600u << 16), 1000u}, {0u | (4u << 16), 32767u}};
  const gpu::lz4k::SegmentSummary sum{2, enc::kSegmentSize + 609, 0};
  std::vector<std::uint32_t> tokens(enc::kSegmentSize), hist(enc::kHistSize), seg_hist(enc::kHistSize);
  std::uint32_t count = 0;
  enc::tokenize_segment(gpu::simt::Warp{}, data.data(), n, 1, recs, sum, hist.data(), tokens.data(), &count, seg_hist.data());
  const std::uint32_t trailing = enc::kSegmentSize - 609;
  ASSERT_EQ(count, 5 + 3 + 1 + trailing);
  std::vector<std::uint32_t> want(enc::kHistSize, 0);
  for (std::uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(tokens[i], data[enc::kSegmentSize + i]);
    ++want[data[enc::kSegmentSize + i]];
  }
  const std::uint32_t lens[4] = {258, 258, 84, 4};
  const std::uint32_t dists[4] = {1000, 1000, 1000, 32767};
  for (std::uint32_t k = 0; k < 4; ++k) {
    const std::uint32_t t = tokens[5 + k];
    ASSERT_TRUE(enc::is_match(t));
    EXPECT_EQ(enc::token_length(t), lens[k]);
    EXPECT_EQ(enc::token_distance(t), dists[k]);
    ++want[enc::length_symbol(lens[k]).symbol];
    ++want[enc::kLitLenSymbols + enc::distance_symbol(dists[k]).symbol];
  }
  for (std::uint32_t i = 0; i < trailing; ++i) {
    ASSERT_EQ(tokens[9 + i], data[enc::kSegmentSize + 609 + i]) << i;
    ++want[data[enc::kSegmentSize + 609 + i]];
  }
  EXPECT_EQ(seg_hist, want);
}

// RFC 1951 3.2.5's tables, entry by entry.
TEST(DeflateEncBody, LengthAndDistanceSymbols) {
  const int len_base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  const int len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  for (int k = 0; k < 29; ++k) {
    const int end = k == 28 ? 259 : (k == 27 ? 258 : len_base[k + 1]);
    for (int len = len_base[k]; len < end; ++len) {
      const enc::SymbolExtra s = enc::length_symbol(static_cast<std::uint32_t>(len));
      ASSERT_EQ(s.symbol, 257 + k) << len;
      ASSERT_EQ(s.bits, len_extra[k]) << len;
      ASSERT_EQ(s.value, static_cast<std::uint32_t>(len - len_base[k])) << len;
      ASSERT_EQ(enc::length_extra_bits(s.symbol), len_extra[k]);
    }
  }
  int base = 1;
  for (int k = 0; k < 30; ++k) {
    const int extra = k < 4 ? 0 : k / 2 - 1;
    for (int d = base; d < base + (1 << extra); ++d) {
      const enc::SymbolExtra s = enc::distance_symbol(static_cast<std::uint32_t>(d));
      ASSERT_EQ(s.symbol, k) << d;
      ASSERT_EQ(s.bits, extra) << d;
      ASSERT_EQ(s.value, static_cast<std::uint32_t>(d - base)) << d;
    }
    EXPECT_EQ(enc::distance_extra_bits(k), extra);
    base += 1 << extra;
  }
  EXPECT_EQ(base, 32769);
}

// Checks the limit and an exact Kraft sum; returns the symbols with a length.
int expect_valid_lengths(const std::vector<std::uint32_t>& freq, int max_len) {
  std::vector<std::uint8_t> len(freq.size());
  enc::build_code_lengths(freq.data(), static_cast<int>(freq.size()), max_len, len.data());
  std::uint64_t kraft = 0;
  int used = 0;
  for (std::size_t s = 0; s < freq.size(); ++s) {
    EXPECT_LE(len[s], max_len);
    if (freq[s] != 0) EXPECT_GT(len[s], 0) << "a used symbol without a code: " << s;
    if (len[s] != 0) {
      kraft += std::uint64_t{1} << (max_len - len[s]);
      ++used;
    }
  }
  EXPECT_EQ(kraft, std::uint64_t{1} << max_len);
  EXPECT_GE(used, 2);
  return used;
}

TEST(HuffmanEncode, FibonacciFrequenciesStayWithinTheLimit) {
  // Fibonacci weights make the deepest unlimited tree: n - 1 levels.
  for (int n : {19, 30, 40, 286}) {
    std::vector<std::uint32_t> freq(static_cast<std::size_t>(n));
    std::uint32_t a = 1, b = 1;
    for (auto& f : freq) {
      f = a;
      const std::uint32_t c = a + b > 100000000u ? 100000000u : a + b;
      a = b;
      b = c;
    }
    expect_valid_lengths(freq, 15);
    if (n <= 128) expect_valid_lengths(freq, 7);
  }
}

TEST(HuffmanEncode, SkewedAndRandomHistograms) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 300; ++round) {
    const int n = round % 3 == 0 ? 19 : round % 3 == 1 ? 30 : 286;
    std::vector<std::uint32_t> freq(static_cast<std::size_t>(n));
    for (auto& f : freq) {
      const int kind = static_cast<int>(rng() % 4);
      f = kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? static_cast<std::uint32_t>(rng() % 100) : static_cast<std::uint32_t>(1u << (rng() % 24));
    }
    expect_valid_lengths(freq, n == 19 ? 7 : 15);
  }
}

// The plan block's warp sorts the symbols by their ranks, lanes apart: the
// same order, and so the same lengths, as the insertion sort.
TEST(HuffmanEncode, RanksSortLikeTheInsertionSort) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    const int n = round % 2 == 0 ? 30 : 286;
    std::vector<std::uint32_t> freq(static_cast<std::size_t>(n));
    for (auto& f : freq) f = rng() % 3 == 0 ? 0 : static_cast<std::uint32_t>(rng() % 8);  // many ties
    std::vector<std::uint16_t> sorted(static_cast<std::size_t>(n), 0xffff), by_warp(static_cast<std::size_t>(n), 0xffff);
    int m = 0;
    for (int s = 0; s < n; ++s) {
      if (freq[s] == 0) continue;
      ++m;
      sorted[static_cast<std::size_t>(enc::symbol_rank(freq.data(), n, s))] = static_cast<std::uint16_t>(s);
    }
    ASSERT_EQ(enc::sort_symbols<9>(gpu::simt::Warp{}, freq.data(), n, by_warp.data()), m);
    ASSERT_EQ(by_warp, sorted);
    for (int i = 0; i + 1 < m; ++i) {
      const auto a = sorted[i], b = sorted[i + 1];
      ASSERT_TRUE(freq[a] < freq[b] || (freq[a] == freq[b] && a < b)) << i;
    }
    std::vector<std::uint8_t> by_rank(n), by_insertion(n);
    enc::HuffmanScratch scratch;
    enc::build_code_lengths_sorted(freq.data(), n, 15, sorted.data(), m, by_rank.data(), scratch);
    enc::build_code_lengths(freq.data(), n, 15, by_insertion.data());
    ASSERT_EQ(by_rank, by_insertion);
  }
}

TEST(HuffmanEncode, OneOrNoSymbolGetsTwoOneBitCodes) {
  std::vector<std::uint32_t> freq(30, 0);
  EXPECT_EQ(expect_valid_lengths(freq, 15), 2);
  freq[0] = 5;
  EXPECT_EQ(expect_valid_lengths(freq, 15), 2);
  freq[0] = 0;
  freq[29] = 5;
  EXPECT_EQ(expect_valid_lengths(freq, 15), 2);
}

TEST(HuffmanEncode, FlatHistogramGivesEqualLengths) {
  std::vector<std::uint32_t> freq(256, 7);
  std::vector<std::uint8_t> len(256);
  enc::build_code_lengths(freq.data(), 256, 15, len.data());
  for (auto l : len) EXPECT_EQ(l, 8);
}

TEST(HuffmanEncode, CanonicalCodesArePrefixFree) {
  const std::uint8_t len[6] = {2, 1, 3, 3, 0, 0};
  std::uint16_t code[6];
  enc::canonical_codes(len, 6, code);
  // RFC 1951 3.2.2: B=0, A=10, C=110, D=111; stored bit reversed.
  EXPECT_EQ(code[1], 0u);
  EXPECT_EQ(code[0], 0b01u);
  EXPECT_EQ(code[2], 0b011u);
  EXPECT_EQ(code[3], 0b111u);
}

}  // namespace
}  // namespace tandem
