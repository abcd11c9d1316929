// The deflate encoder that the GPU runs, as bodies that the CPU emulation
// runs too (same code, same bytes).
//
// An item is one chunk of tandem's indexed deflate stream
// (docs/formats/deflate.md): its compressed data starts on a byte boundary,
// no match reaches before its first byte, every block has BFINAL = 0, and it
// ends with an empty stored block, so that it ends byte-aligned and inflates
// alone. The item is cut into the LZ4 encoder's segments (lz4k::kSegmentSize
// bytes); the passes:
//
//  0. prime, 1. find: the LZ4 encoder's own steps (gpu/lz4_gpu_encode.hpp,
//     called as they are): a warp per segment finds matches with a hash
//     table in shared memory primed from the 24 KiB before the segment, 32
//     positions at a time, and records the segment's sequences (literal
//     count, match length, offset). Its offsets stay below 32 KiB (the
//     prime reach plus a segment), inside deflate's window; its matches lie
//     inside their segment and are at least 4 bytes.
//  2. tokenize (a warp per segment): the records become deflate tokens (a
//     literal or a match each; a match cut at every multiple of kStartBytes
//     it crosses, each part longer than 258 bytes in pieces of at most 258
//     and at least 3, a part under 3 bytes as literals), and the segment's
//     literal/length and distance histograms. Each segment's tokens cover
//     its own bytes, so a segment's trailing literals are its own, not
//     carried into the next.
//  3. plan (a warp per item): the item's histograms summed, the used
//     symbols sorted by the lanes together, length-limited Huffman codes
//     built by one lane in shared memory (huffman_encode.hpp), the dynamic
//     block's header written, and the exact size of a dynamic, a fixed and
//     a stored coding compared; the smallest is the item's mode. Each
//     segment's bits are its histogram times the code's lengths, so the
//     warp also places every segment's bits after the header and the
//     segments before it (no pass over the tokens, no scan over segments).
//  4. pack (a warp per segment): 32 tokens at a time, each lane a token's
//     codes, a warp prefix sum for their bit offsets, OR-ed into a staging
//     area in shared memory; the words completed go out as plain stores,
//     except the segment's first and last, which a neighbour may share
//     (atomic OR into the item's zeroed words); the bit of the token at
//     each multiple of kStartBytes is the start the decoder takes.
//  5. finish (a thread block per item): the header, the end-of-block code
//     and the empty stored block added, then the bytes copied out; or the
//     stored coding written straight from the input.
//
// Every pass is a function of the item alone: the same item gives the same
// bytes in any batch, on the GPU and in the emulation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gpu/huffman_encode.hpp"
#include "gpu/lz4_gpu_encode.hpp"
#include "gpu/simt.hpp"

namespace tandem::gpu::deflate_enc {

using simt::Lanes;
using simt::Warp;

inline constexpr std::uint32_t kMinMatch = 3;
inline constexpr std::uint32_t kMaxMatch = 258;
inline constexpr std::uint32_t kWindow = 32768;
inline constexpr int kLitLenSymbols = 286;
inline constexpr int kDistSymbols = 30;
inline constexpr int kCLSymbols = 19;
inline constexpr int kEndOfBlock = 256;
inline constexpr int kHistSize = kLitLenSymbols + kDistSymbols;  // per segment: literal/length, then distance
inline constexpr std::uint32_t kMaxStoredBlock = 65535;

// The match finder is the LZ4 encoder's: its segments, and its offsets
// inside deflate's window. Measured on silesia7 in 64 KiB chunks
// (libdeflate level 1 on the same chunks writes 23,120,356 bytes; the GPU
// writes the emulation's bytes):
//   8 KiB segments primed with 24 KiB every 3rd position, 2^12-entry
//   tables (lz4k's shape): 24,863,943 bytes (1.075x), 29.4 GB/s
//   device-resident on the H100 (256 KiB chunks: 24,427,777, 29.8 GB/s;
//   16 KiB: 26,898,349, 16.9 GB/s); with the matches cut at every 1 KiB
//   (the decoder's starts), 24,964,377 bytes (1.080x), 39.6 GB/s on the
//   H100 (docs/benchmarks/2026-11-28-h100-deflate-team.md)
// Other shapes of lz4k's finder, measured in the emulation only (they would
// change the LZ4 encoder's output, or need it to take them as parameters):
// every position primed 24,679,449 (1.067x; the prime step hashes 3 times
// as many); 2^13-entry tables 24,550,515 (1.062x; half the find warps
// resident); both 24,279,662 (1.050x). Turning 4-byte matches more than 16
// KiB back into literals made the output larger (24,870,014).
// The hash-chain finder before it (a thread per 4 KiB segment, chains of
// depth 16 in global memory, lazy matching) wrote 22,017,913 bytes at
// 0.84 GB/s.
inline constexpr std::uint32_t kSegmentSize = lz4k::kSegmentSize;
inline constexpr std::uint32_t kMaxSegmentRecords = lz4k::kMaxSegmentRecords;
static_assert(lz4k::kPrimeBytes + lz4k::kSegmentSize <= kWindow, "every offset lz4k finds is inside the window");
static_assert(lz4k::kEncMinMatch >= kMinMatch, "every match lz4k finds is one deflate can code");

// Segments of an item of n bytes (none for an empty one).
TANDEM_HD constexpr std::size_t segment_count(std::size_t n) { return lz4k::segment_count(n); }

// Bytes the stored coding of n bytes takes, with the closing empty stored
// block: an upper bound of every item's output (the encoder never writes more).
TANDEM_HD constexpr std::size_t max_compressed_size(std::size_t n) {
  return n + 5 * ((n + kMaxStoredBlock - 1) / kMaxStoredBlock) + 5;
}

// ---------------------------------------------------------------- tokens ----
// A token is a literal byte (bit 31 clear) or a match: bit 31, length - 3 in
// bits 0-7, distance - 1 in bits 8-22.
TANDEM_HD std::uint32_t match_token(std::uint32_t len, std::uint32_t dist) {
  return 0x80000000u | (len - kMinMatch) | ((dist - 1) << 8);
}
TANDEM_HD bool is_match(std::uint32_t t) { return (t & 0x80000000u) != 0; }
TANDEM_HD std::uint32_t token_length(std::uint32_t t) { return (t & 0xffu) + kMinMatch; }
TANDEM_HD std::uint32_t token_distance(std::uint32_t t) { return ((t >> 8) & 0x7fffu) + 1; }

TANDEM_HD int floor_log2(std::uint32_t v) { return simt::last_set(v); }

// RFC 1951 3.2.5: the length symbol of a match length (3..258), its extra bits
// and their value.
struct SymbolExtra {
  int symbol;
  int bits;
  std::uint32_t value;
};
TANDEM_HD SymbolExtra length_symbol(std::uint32_t len) {
  if (len < 11) return {static_cast<int>(254 + len), 0, 0};
  if (len == 258) return {285, 0, 0};
  const std::uint32_t l = len - 3;
  const int nb = floor_log2(l) - 2;
  return {257 + 4 * (nb + 1) + static_cast<int>((l >> nb) - 4), nb, l & ((1u << nb) - 1)};
}
TANDEM_HD SymbolExtra distance_symbol(std::uint32_t dist) {
  const std::uint32_t d = dist - 1;
  if (d < 4) return {static_cast<int>(d), 0, 0};
  const int nb = floor_log2(d) - 1;
  return {2 * (nb + 1) + static_cast<int>((d >> nb) - 2), nb, d & ((1u << nb) - 1)};
}
// Extra bits of a literal/length symbol and of a distance symbol.
TANDEM_HD int length_extra_bits(int sym) {
  if (sym < 265 || sym == 285) return 0;
  return (sym - 261) / 4;
}
TANDEM_HD int distance_extra_bits(int sym) { return sym < 4 ? 0 : sym / 2 - 1; }

// The length of piece k of a match of ml bytes cut into match_pieces(ml)
// pieces: 258 bytes each, but that the next-to-last gives up what the last
// needs to reach 3 bytes.
TANDEM_HD std::uint32_t match_pieces(std::uint32_t ml) { return (ml + kMaxMatch - 1) / kMaxMatch; }
TANDEM_HD std::uint32_t piece_length(std::uint32_t ml, std::uint32_t k) {
  const std::uint32_t pieces = match_pieces(ml);
  const std::uint32_t rest = ml - kMaxMatch * (pieces - 1);  // the last piece's share, 1..258
  const std::uint32_t short_by = rest < kMinMatch ? kMinMatch - rest : 0u;
  if (k + 1 == pieces) return rest + short_by;
  return k + 2 == pieces ? kMaxMatch - short_by : kMaxMatch;
}

// Where an inflate may start: the tokens never cross a multiple of
// kStartBytes of the item's input, so that each such place begins a token,
// and the pack pass reports that token's first bit (d_segment_starts). With
// them a decoder takes an item's 1 KiB pieces at once, a lane each.
inline constexpr std::uint32_t kStartBytes = 1024;
static_assert(kSegmentSize % kStartBytes == 0, "every segment begins at a start");
inline constexpr std::uint32_t kStartsPerSegment = kSegmentSize / kStartBytes;

// Starts of an item of n bytes: one at each multiple of kStartBytes below n.
TANDEM_HD constexpr std::size_t start_count(std::size_t n) { return (n + kStartBytes - 1) / kStartBytes; }

// A match of ml bytes at input byte `at` is cut at the multiples of
// kStartBytes it crosses into parts; a part of 3 bytes or more is coded as
// match_pieces of it, a shorter one as its bytes, literals.
TANDEM_HD std::uint32_t part_tokens(std::uint32_t part) { return part < kMinMatch ? part : match_pieces(part); }
TANDEM_HD std::uint32_t part_length(std::uint32_t at, std::uint32_t left) {
  const std::uint32_t room = kStartBytes - at % kStartBytes;
  return left < room ? left : room;
}

// The tokens of that match (none for ml = 0).
TANDEM_HD std::uint32_t match_tokens(std::uint32_t at, std::uint32_t ml) {
  std::uint32_t tokens = 0;
  for (std::uint32_t done = 0; done < ml;) {
    const std::uint32_t part = part_length(at + done, ml - done);
    tokens += part_tokens(part);
    done += part;
  }
  return tokens;
}

// Its token k: a match piece of `length` bytes, or (length 0) the literal
// byte `literal` bytes into the match.
struct MatchToken {
  std::uint32_t length;
  std::uint32_t literal;
};
TANDEM_HD MatchToken match_token_at(std::uint32_t at, std::uint32_t ml, std::uint32_t k) {
  std::uint32_t done = 0;
  for (;;) {
    const std::uint32_t part = part_length(at + done, ml - done);
    const std::uint32_t n = part_tokens(part);
    if (k < n) return part < kMinMatch ? MatchToken{0, done + k} : MatchToken{piece_length(part, k), 0};
    k -= n;
    done += part;
  }
}

// ------------------------------------------------------ 2. tokenize ----

// Pass 2 for segment seg of the item in[0, n), whose lz4k find step left the
// records recs and the summary sum: writes the segment's tokens (at most
// kSegmentSize; one per literal, one per match piece, in input order) and
// their count, and its histogram (kHistSize counters) to seg_hist. hist:
// kHistSize words of the warp's shared memory.
//
// The warp takes 32 records at a time, a record per lane (after the last
// record a lane stands for the segment's trailing literals), sums up where
// each record's tokens and literals start, then makes those tokens 32 at a
// time, a token per lane: each lane finds its record by a binary search
// over the lanes' first tokens (shuffles), and writes its token in place.
TANDEM_HD void tokenize_segment(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t seg,
                                const lz4k::SeqRecord* recs, const lz4k::SegmentSummary& sum, std::uint32_t* hist,
                                std::uint32_t* tokens, std::uint32_t* count, std::uint32_t* seg_hist) {
  w.each([&](int l) {
    for (int k = l; k < kHistSize; k += simt::kWarpSize) hist[k] = 0;
  });
  w.sync();
  const std::uint32_t seg_start = seg * kSegmentSize;
  const std::uint32_t seg_end = n - seg_start < kSegmentSize ? n : seg_start + kSegmentSize;
  const std::uint32_t records = sum.count;
  std::uint32_t pos = seg_start;  // where the group's first record's literals start
  std::uint32_t made = 0;         // tokens so far
  for (std::uint32_t g = 0; g <= records; g += simt::kWarpSize) {
    // Record g + l, or at g + l == records the trailing literals (no match).
    const Lanes<std::uint32_t> lens = w.map([&](int l) -> std::uint32_t {
      const std::uint32_t r = g + static_cast<std::uint32_t>(l);
      return r < records ? recs[r].lens : 0u;
    });
    const Lanes<std::uint32_t> offset = w.map([&](int l) -> std::uint32_t {
      const std::uint32_t r = g + static_cast<std::uint32_t>(l);
      return r < records ? recs[r].offset : 0u;
    });
    const Lanes<std::uint32_t> span = w.map([&](int l) { return (lens[l] & 0xffffu) + (lens[l] >> 16); });
    const Lanes<std::uint32_t> from = w.exclusive_sum(span);  // after pos
    const Lanes<std::uint32_t> lit = w.map([&](int l) -> std::uint32_t {
      const std::uint32_t r = g + static_cast<std::uint32_t>(l);
      if (r < records) return lens[l] & 0xffffu;
      // The records lie inside the segment, so the trailing literals are
      // what they leave of it (never negative; 0 if it were).
      return r == records && pos + from[l] < seg_end ? seg_end - pos - from[l] : 0u;
    });
    const Lanes<std::uint32_t> ml = w.map([&](int l) { return lens[l] >> 16; });
    const Lanes<std::uint32_t> ntok =
        w.map([&](int l) { return lit[l] + match_tokens(pos + from[l] + lit[l], ml[l]); });
    const Lanes<std::uint32_t> first = w.exclusive_sum(ntok);
    // (Tokens never outnumber the segment's bytes: each covers one or more.)
    const std::uint32_t total = w.sum(ntok);
    for (std::uint32_t k = 0; k < total; k += simt::kWarpSize) {
      // Each lane's record: the last lane whose first token is at or before
      // the lane's token (lanes without tokens have first == total).
      const Lanes<std::uint32_t> t = w.map([&](int l) { return k + static_cast<std::uint32_t>(l); });
      Lanes<int> owner = w.map([](int) { return 0; });
      TANDEM_UNROLL
      for (int step = simt::kWarpSize / 2; step >= 1; step /= 2) {
        const Lanes<int> probe = w.map([&](int l) { return owner[l] + step; });
        const Lanes<std::uint32_t> at = w.shfl(first, probe);
        w.each([&](int l) {
          if (at[l] <= t[l]) owner[l] = probe[l];
        });
      }
      const Lanes<std::uint32_t> o_first = w.shfl(first, owner);
      const Lanes<std::uint32_t> o_lit = w.shfl(lit, owner);
      const Lanes<std::uint32_t> o_from = w.shfl(from, owner);
      const Lanes<std::uint32_t> o_ml = w.shfl(ml, owner);
      const Lanes<std::uint32_t> o_offset = w.shfl(offset, owner);
      w.each([&](int l) {
        if (t[l] >= total) return;
        const std::uint32_t j = t[l] - o_first[l];
        std::uint32_t token;
        if (j < o_lit[l]) {
          const std::uint8_t b = in[pos + o_from[l] + j];
          token = b;
          simt::atomic_add_block(&hist[b], 1u);
        } else {
          const std::uint32_t at = pos + o_from[l] + o_lit[l];
          const MatchToken mt = match_token_at(at, o_ml[l], j - o_lit[l]);
          if (mt.length == 0) {
            const std::uint8_t b = in[at + mt.literal];
            token = b;
            simt::atomic_add_block(&hist[b], 1u);
          } else {
            token = match_token(mt.length, o_offset[l]);
            simt::atomic_add_block(&hist[length_symbol(mt.length).symbol], 1u);
            simt::atomic_add_block(&hist[kLitLenSymbols + distance_symbol(o_offset[l]).symbol], 1u);
          }
        }
        tokens[made + t[l]] = token;
      });
    }
    made += total;
    pos += w.sum(span);
  }
  w.sync();  // every lane's counts are in before they are copied
  w.each([&](int l) {
    for (int k = l; k < kHistSize; k += simt::kWarpSize) seg_hist[k] = hist[k];
    if (l == 0) *count = made;
  });
  w.sync();
}

// ---------------------------------------------------------- 3. plan ----

enum class Mode : std::uint32_t { stored = 0, fixed = 1, dynamic = 2 };

// The dynamic block's header is at most 3 + 14 + 19 * 3 + 316 * 14 bits.
inline constexpr int kHeaderBytes = 576;

// An item's coding, as the plan pass leaves it for the others.
struct Plan {
  Mode mode;
  std::uint32_t header_bits;  // block header (and dynamic header) before the first token
  std::uint64_t data_bits;    // the tokens' bits, end-of-block code not included
  std::uint64_t out_bytes;    // the item's compressed size
  // 288 entries: the fixed code's lengths of symbols 286 and 287 shape its
  // canonical codes, though no token uses them.
  std::uint8_t lit_len[kMaxSymbols];
  std::uint8_t dist_len[kDistSymbols];
  std::uint16_t lit_code[kMaxSymbols];
  std::uint16_t dist_code[kDistSymbols];
  std::uint8_t header[kHeaderBytes];  // the header's bits, low bit first
};

// A bit writer into a byte array of known room, low bit first.
struct ByteBits {
  std::uint8_t* out;
  std::uint32_t bit;
  TANDEM_HD void put(std::uint32_t v, int nbits) {
    // Up to a byte's free bits at a time.
    while (nbits > 0) {
      const int room = 8 - static_cast<int>(bit & 7);
      const int take = nbits < room ? nbits : room;
      out[bit >> 3] |= static_cast<std::uint8_t>((v & ((1u << take) - 1u)) << (bit & 7));
      v >>= take;
      nbits -= take;
      bit += static_cast<std::uint32_t>(take);
    }
  }
};

// The order of the code-length code's lengths in the header (RFC 1951 3.2.7):
// 16 17 18 0 8 7 9 6 10 5 11 4 | 12 3 13 2 14 1 15, 5 bits each in two
// constants (no table in a thread's local memory).
TANDEM_HD int cl_order(int i) {
  constexpr std::uint64_t kFirst = 16ull | 17ull << 5 | 18ull << 10 | 0ull << 15 | 8ull << 20 | 7ull << 25 | 9ull << 30 |
                                   6ull << 35 | 10ull << 40 | 5ull << 45 | 11ull << 50 | 4ull << 55;
  constexpr std::uint64_t kRest = 12ull | 3ull << 5 | 13ull << 10 | 2ull << 15 | 14ull << 20 | 1ull << 25 | 15ull << 30;
  return static_cast<int>((i < 12 ? kFirst >> (5 * i) : kRest >> (5 * (i - 12))) & 31u);
}

// The fixed code's lengths (RFC 1951 3.2.6).
TANDEM_HD int fixed_lit_length(int s) { return s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8; }

// The run-length items of a sequence of code lengths (RFC 1951 3.2.7): each
// item is symbol | extra value << 8. Returns the item count (<= count).
TANDEM_HD int rle_lengths(const std::uint8_t* lens, int count, std::uint16_t* items) {
  int k = 0;
  for (int i = 0; i < count;) {
    const std::uint8_t v = lens[i];
    int run = 1;
    while (i + run < count && lens[i + run] == v) ++run;
    int left = run;
    if (v == 0) {
      while (left >= 11) {
        const int r = left < 138 ? left : 138;
        items[k++] = static_cast<std::uint16_t>(18 | ((r - 11) << 8));
        left -= r;
      }
      if (left >= 3) {
        items[k++] = static_cast<std::uint16_t>(17 | ((left - 3) << 8));
        left = 0;
      }
    } else {
      items[k++] = v;
      --left;
      while (left >= 3) {
        const int r = left < 6 ? left : 6;
        items[k++] = static_cast<std::uint16_t>(16 | ((r - 3) << 8));
        left -= r;
      }
    }
    while (left-- > 0) items[k++] = v;
    i += run;
  }
  return k;
}

TANDEM_HD int cl_extra_bits(int sym) { return sym == 16 ? 2 : sym == 17 ? 3 : sym == 18 ? 7 : 0; }

// The bits of the tokens counted in hist under the given lengths (extra bits
// included, end-of-block code not).
TANDEM_HD std::uint64_t coded_bits(const std::uint32_t* hist, const std::uint8_t* lit_len, const std::uint8_t* dist_len) {
  std::uint64_t bits = 0;
  for (int s = 0; s < kLitLenSymbols; ++s)
    bits += std::uint64_t{hist[s]} * static_cast<std::uint64_t>(lit_len[s] + (s > 256 ? length_extra_bits(s) : 0));
  for (int s = 0; s < kDistSymbols; ++s)
    bits += std::uint64_t{hist[kLitLenSymbols + s]} * static_cast<std::uint64_t>(dist_len[s] + distance_extra_bits(s));
  return bits;
}

// Bytes of a Huffman block of `bits` bits (header, tokens, end-of-block)
// followed by the empty stored block.
TANDEM_HD std::uint64_t huffman_out_bytes(std::uint64_t bits) { return (bits + 3 + 7) / 8 + 4; }

// The arrays plan_item works in (shared memory on the device, for the
// reason HuffmanScratch gives).
struct PlanScratch {
  HuffmanScratch huff;
  std::uint8_t lit_len[kLitLenSymbols];
  std::uint8_t dist_len[kDistSymbols];
  std::uint8_t all[kLitLenSymbols + kDistSymbols];
  std::uint16_t items[kLitLenSymbols + kDistSymbols];
  std::uint32_t cl_freq[kCLSymbols];
  std::uint8_t cl_len[kCLSymbols];
  std::uint16_t cl_code[kCLSymbols];
  std::uint8_t fix_lit[kMaxSymbols];
  std::uint8_t fix_dist[kDistSymbols];
};

// The item's coding for an item of n bytes whose histogram (summed over its
// segments, the end-of-block symbol counted once) is hist[kHistSize];
// lit_sym and dist_sym: the used literal/length and distance symbols sorted
// by (frequency, symbol), as sort_symbols leaves them; x: scratch.
TANDEM_HD void plan_item(std::uint32_t n, const std::uint32_t* hist, const std::uint16_t* lit_sym,
                         const std::uint16_t* dist_sym, PlanScratch& x, Plan* plan) {
  const std::uint64_t stored = max_compressed_size(n);
  plan->mode = Mode::stored;
  plan->header_bits = 0;
  plan->data_bits = 0;
  plan->out_bytes = stored;
  for (int i = 0; i < kHeaderBytes; ++i) plan->header[i] = 0;
  if (n == 0) return;

  // Dynamic: the item's own codes.
  std::uint8_t* const lit_len = x.lit_len;
  std::uint8_t* const dist_len = x.dist_len;
  int lit_used = 0;
  for (int s = 0; s < kLitLenSymbols; ++s) lit_used += hist[s] != 0 ? 1 : 0;
  int dist_used = 0;
  for (int s = 0; s < kDistSymbols; ++s) dist_used += hist[kLitLenSymbols + s] != 0 ? 1 : 0;
  build_code_lengths_sorted(hist, kLitLenSymbols, kMaxCodeLength, lit_sym, lit_used, lit_len, x.huff);
  build_code_lengths_sorted(hist + kLitLenSymbols, kDistSymbols, kMaxCodeLength, dist_sym, dist_used, dist_len,
                            x.huff);
  int hlit = kLitLenSymbols;
  while (hlit > 257 && lit_len[hlit - 1] == 0) --hlit;
  int hdist = kDistSymbols;
  while (hdist > 1 && dist_len[hdist - 1] == 0) --hdist;
  std::uint8_t* const all = x.all;
  for (int s = 0; s < hlit; ++s) all[s] = lit_len[s];
  for (int s = 0; s < hdist; ++s) all[hlit + s] = dist_len[s];
  std::uint16_t* const items = x.items;
  const int nitems = rle_lengths(all, hlit + hdist, items);
  std::uint32_t* const cl_freq = x.cl_freq;
  for (int s = 0; s < kCLSymbols; ++s) cl_freq[s] = 0;
  for (int i = 0; i < nitems; ++i) ++cl_freq[items[i] & 0xff];
  std::uint8_t* const cl_len = x.cl_len;
  build_code_lengths(cl_freq, kCLSymbols, kMaxCodeLengthCL, cl_len, x.huff);
  std::uint16_t* const cl_code = x.cl_code;
  canonical_codes(cl_len, kCLSymbols, cl_code, x.huff.count);
  int hclen = kCLSymbols;
  while (hclen > 4 && cl_len[cl_order(hclen - 1)] == 0) --hclen;
  std::uint64_t header_bits = 3 + 5 + 5 + 4 + 3 * static_cast<std::uint64_t>(hclen);
  for (int i = 0; i < nitems; ++i) {
    const int s = items[i] & 0xff;
    header_bits += static_cast<std::uint64_t>(cl_len[s] + cl_extra_bits(s));
  }
  const std::uint64_t dyn_data = coded_bits(hist, lit_len, dist_len) - lit_len[kEndOfBlock];
  const std::uint64_t dyn_bytes = huffman_out_bytes(header_bits + dyn_data + lit_len[kEndOfBlock]);

  // Fixed: RFC 1951's codes.
  std::uint8_t* const fix_lit = x.fix_lit;
  std::uint8_t* const fix_dist = x.fix_dist;
  for (int s = 0; s < kMaxSymbols; ++s) fix_lit[s] = static_cast<std::uint8_t>(fixed_lit_length(s));
  for (int s = 0; s < kDistSymbols; ++s) fix_dist[s] = 5;
  const std::uint64_t fix_data = coded_bits(hist, fix_lit, fix_dist) - fix_lit[kEndOfBlock];
  const std::uint64_t fix_bytes = huffman_out_bytes(3 + fix_data + fix_lit[kEndOfBlock]);

  if (dyn_bytes >= stored && fix_bytes >= stored) return;
  const bool dynamic = dyn_bytes <= fix_bytes;
  const std::uint8_t* ll = dynamic ? lit_len : fix_lit;
  const std::uint8_t* dl = dynamic ? dist_len : fix_dist;
  for (int s = 0; s < kMaxSymbols; ++s) plan->lit_len[s] = s < kLitLenSymbols || !dynamic ? ll[s] : 0;
  for (int s = 0; s < kDistSymbols; ++s) plan->dist_len[s] = dl[s];
  canonical_codes(plan->lit_len, kMaxSymbols, plan->lit_code, x.huff.count);
  canonical_codes(plan->dist_len, kDistSymbols, plan->dist_code, x.huff.count);
  ByteBits w{plan->header, 0};
  if (!dynamic) {
    plan->mode = Mode::fixed;
    w.put(2, 3);  // BFINAL 0, BTYPE 01
    plan->data_bits = fix_data;
    plan->out_bytes = fix_bytes;
  } else {
    plan->mode = Mode::dynamic;
    w.put(4, 3);  // BFINAL 0, BTYPE 10
    w.put(static_cast<std::uint32_t>(hlit - 257), 5);
    w.put(static_cast<std::uint32_t>(hdist - 1), 5);
    w.put(static_cast<std::uint32_t>(hclen - 4), 4);
    for (int i = 0; i < hclen; ++i) w.put(cl_len[cl_order(i)], 3);
    for (int i = 0; i < nitems; ++i) {
      const int s = items[i] & 0xff;
      w.put(cl_code[s], cl_len[s]);
      w.put(static_cast<std::uint32_t>(items[i] >> 8), cl_extra_bits(s));
    }
    plan->data_bits = dyn_data;
    plan->out_bytes = dyn_bytes;
  }
  plan->header_bits = w.bit;
}

// The bits of a segment's tokens, counted in its histogram, under the plan's
// code (0 for a stored item): what pack_segment writes for them.
TANDEM_HD std::uint64_t segment_bits(const Plan& plan, const std::uint32_t* seg_hist) {
  if (plan.mode == Mode::stored) return 0;
  return coded_bits(seg_hist, plan.lit_len, plan.dist_len);
}

// Warps of a plan block. Its long part is one thread's, so an item gets one
// warp: more items fit the GPU at once.
inline constexpr int kPlanWarps = 1;

// What a plan block keeps in shared memory: the plan is built there (one
// thread's long chain of dependent reads and writes waits on shared memory,
// not on global), then copied out by the block.
struct PlanShared {
  Plan plan;
  PlanScratch scratch;
  std::uint32_t hist[kHistSize];
  std::uint16_t lit_sym[kLitLenSymbols];
  std::uint16_t dist_sym[kDistSymbols];
};
static_assert(sizeof(Plan) % sizeof(std::uint32_t) == 0, "a plan is copied a word at a time");

// Pass 3 for an item of n bytes cut into `segments` segments whose
// histograms are seg_hists[s * kHistSize, ...): the item's plan, and in
// seg_at[s] where segment s's bits start (after the header and the segments
// before it). The block sums the histograms a symbol a thread, a warp sorts
// the used symbols (sort_symbols), the block sizes the segments a segment a
// thread; one thread builds the codes and the header, and adds up the
// segments' places.
template <int W>
TANDEM_HD void plan_item_block(const simt::Block<W>& b, PlanShared& sh, std::uint32_t n, const std::uint32_t* seg_hists,
                               std::uint32_t segments, Plan* plan, std::uint64_t* seg_at) {
  constexpr std::uint32_t kThreads = W * simt::kWarpSize;
  simt::block_threads(b, [&](std::uint32_t t) {
    for (std::uint32_t k = t; k < static_cast<std::uint32_t>(kHistSize); k += kThreads) {
      std::uint32_t sum = 0;
      for (std::uint32_t s = 0; s < segments; ++s) sum += seg_hists[static_cast<std::size_t>(s) * kHistSize + k];
      sh.hist[k] = k == static_cast<std::uint32_t>(kEndOfBlock) ? 1u : sum;
    }
  });
  b.sync();
  b.warps([&](const Warp& w, int warp) {
    if (warp != 0) return;
    sort_symbols<(kLitLenSymbols + simt::kWarpSize - 1) / simt::kWarpSize>(w, sh.hist, kLitLenSymbols, sh.lit_sym);
    sort_symbols<1>(w, sh.hist + kLitLenSymbols, kDistSymbols, sh.dist_sym);
  });
  b.sync();
  simt::block_threads(b, [&](std::uint32_t t) {
    if (t == 0) plan_item(n, sh.hist, sh.lit_sym, sh.dist_sym, sh.scratch, &sh.plan);
  });
  b.sync();
  simt::block_threads(b, [&](std::uint32_t t) {
#if defined(__CUDA_ARCH__)
    const auto* from = reinterpret_cast<const std::uint32_t*>(&sh.plan);
    auto* to = reinterpret_cast<std::uint32_t*>(plan);
    for (std::uint32_t k = t; k < sizeof(Plan) / sizeof(std::uint32_t); k += kThreads) to[k] = from[k];
#else
    if (t == 0) std::memcpy(static_cast<void*>(plan), &sh.plan, sizeof(Plan));
#endif
    for (std::uint32_t s = t; s < segments; s += kThreads)
      seg_at[s] = segment_bits(sh.plan, seg_hists + static_cast<std::size_t>(s) * kHistSize);
  });
  b.sync();
  simt::block_threads(b, [&](std::uint32_t t) {
    if (t != 0) return;
    std::uint64_t at = sh.plan.header_bits;
    for (std::uint32_t s = 0; s < segments; ++s) {
      const std::uint64_t bits = seg_at[s];
      seg_at[s] = at;
      at += bits;
    }
  });
  b.sync();
}

// --------------------------------------------------------- 4. pack ----

// ORs v into *p: atomically on the device (a neighbouring segment may share
// the word), plainly on the host.
TANDEM_HD void or_word(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  if (v) atomicOr(p, v);
#else
  *p |= v;
#endif
}

// A bit writer into zeroed 32-bit words from a given bit on, low bit first.
struct WordBits {
  std::uint32_t* words;
  std::uint64_t word;  // the next word to OR into
  std::uint64_t acc;   // bits not yet written, low first
  int have;            // how many

  TANDEM_HD WordBits(std::uint32_t* w, std::uint64_t bit) : words(w), word(bit / 32), acc(0), have(static_cast<int>(bit % 32)) {}
  TANDEM_HD void put(std::uint32_t v, int nbits) {
    acc |= std::uint64_t{v} << have;
    have += nbits;
    if (have >= 32) {
      or_word(words + word++, static_cast<std::uint32_t>(acc));
      acc >>= 32;
      have -= 32;
    }
  }
  TANDEM_HD void flush() {
    if (have > 0) or_word(words + word, static_cast<std::uint32_t>(acc));
  }
};

// A token's codes in the plan's code, low bit first: at most 15 + 5 + 15 +
// 13 = 48 bits.
struct TokenBits {
  std::uint64_t value;
  std::uint32_t count;
};
TANDEM_HD TokenBits token_bits(const Plan& plan, std::uint32_t t) {
  if (!is_match(t)) return {plan.lit_code[t], plan.lit_len[t]};
  const SymbolExtra l = length_symbol(token_length(t));
  const SymbolExtra d = distance_symbol(token_distance(t));
  std::uint64_t v = plan.lit_code[l.symbol];
  std::uint32_t at = plan.lit_len[l.symbol];
  v |= std::uint64_t{l.value} << at;
  at += static_cast<std::uint32_t>(l.bits);
  v |= std::uint64_t{plan.dist_code[d.symbol]} << at;
  at += plan.dist_len[d.symbol];
  v |= std::uint64_t{d.value} << at;
  return {v, at + static_cast<std::uint32_t>(d.bits)};
}

// A pack warp's staging words: 32 tokens of at most 48 bits after up to 31
// bits carried over span at most 49 words.
inline constexpr std::uint32_t kStageWords = 64;

// Pass 4: a segment's count tokens coded into the item's zeroed words from
// bit `at` on. stage: kStageWords words of the warp's shared memory. Each
// step codes 32 tokens, a token per lane, into the stage (a shared-memory
// atomic OR per word a token touches); the words it completes go out, the
// one the segment shares with what comes before it by an atomic OR, the
// others by plain stores; the last, partial word stays in the stage for the
// next step, and is OR-ed out at the end. starts (or null): the segment's
// kStartsPerSegment starts, each set to the bit (from the item's first byte)
// of the token at its multiple of kStartBytes (a start past the item's end
// is left alone).
TANDEM_HD void pack_segment(const Warp& w, const Plan& plan, const std::uint32_t* tokens, std::uint32_t count,
                            std::uint32_t* words, std::uint64_t at, std::uint32_t* stage, std::uint32_t* starts) {
  if (plan.mode == Mode::stored || count == 0) return;
  const std::uint64_t first_word = at / 32;
  std::uint64_t base = first_word;                     // the word stage[0] stands for
  std::uint32_t bit = static_cast<std::uint32_t>(at % 32);  // the next bit in the stage
  std::uint32_t in_at = 0;                             // the next token's input byte in the segment
  w.each([&](int l) {
    for (std::uint32_t k = static_cast<std::uint32_t>(l); k < kStageWords; k += simt::kWarpSize) stage[k] = 0;
  });
  w.sync();
  for (std::uint32_t k = 0; k < count; k += simt::kWarpSize) {
    const Lanes<std::uint32_t> token = w.map([&](int l) -> std::uint32_t {
      const std::uint32_t i = k + static_cast<std::uint32_t>(l);
      return i < count ? tokens[i] : 0u;
    });
    const Lanes<TokenBits> tb = w.map([&](int l) -> TokenBits {
      return k + static_cast<std::uint32_t>(l) < count ? token_bits(plan, token[l]) : TokenBits{0, 0};
    });
    const Lanes<std::uint32_t> nbits = w.map([&](int l) { return tb[l].count; });
    const Lanes<std::uint32_t> from = w.exclusive_sum(nbits);
    const std::uint32_t end = bit + w.sum(nbits);
    if (starts != nullptr) {
      const Lanes<std::uint32_t> span = w.map([&](int l) -> std::uint32_t {
        if (k + static_cast<std::uint32_t>(l) >= count) return 0u;
        return is_match(token[l]) ? token_length(token[l]) : 1u;
      });
      const Lanes<std::uint32_t> in_from = w.exclusive_sum(span);
      w.each([&](int l) {
        const std::uint32_t b = in_at + in_from[l];
        if (span[l] != 0 && b % kStartBytes == 0)
          starts[b / kStartBytes] = static_cast<std::uint32_t>(base * 32 + bit + from[l]);
      });
      in_at += w.sum(span);
    }
    w.each([&](int l) {
      if (tb[l].count == 0) return;
      const std::uint32_t p = bit + from[l];
      const std::uint32_t s = p % 32;
      std::uint32_t* q = stage + p / 32;
      simt::atomic_or_block(q, static_cast<std::uint32_t>(tb[l].value << s));
      const std::uint64_t high = s ? tb[l].value >> (32 - s) : tb[l].value >> 32;
      if (s + tb[l].count > 32) simt::atomic_or_block(q + 1, static_cast<std::uint32_t>(high));
      if (s + tb[l].count > 64) simt::atomic_or_block(q + 2, static_cast<std::uint32_t>(high >> 32));
    });
    w.sync();
    const std::uint32_t full = end / 32;  // words completed
    w.each([&](int l) {
      for (std::uint32_t i = static_cast<std::uint32_t>(l); i < full; i += simt::kWarpSize) {
        if (base + i == first_word) {
          or_word(words + base + i, stage[i]);
        } else {
          words[base + i] = stage[i];
        }
      }
    });
    const std::uint32_t carry = stage[full];
    w.sync();  // every lane has read the stage before it is cleared
    w.each([&](int l) {
      for (std::uint32_t i = static_cast<std::uint32_t>(l); i <= full; i += simt::kWarpSize) stage[i] = i == 0 ? carry : 0u;
    });
    w.sync();
    base += full;
    bit = end % 32;
  }
  w.each([&](int l) {
    if (l == 0 && bit > 0) or_word(words + base, stage[0]);
  });
  w.sync();
}

// --------------------------------------------------------- 5. finish ----

// Words an item's buffer needs (the largest Huffman coding is smaller than
// the stored one).
TANDEM_HD constexpr std::size_t item_words(std::size_t n) { return (max_compressed_size(n) + 3) / 4 + 1; }

// Pass 5a (one thread, after pack): the header, the end-of-block code and the
// closing empty stored block's header bits into the item's words.
TANDEM_HD void finish_words(const Plan& plan, std::uint32_t* words) {
  if (plan.mode == Mode::stored) return;
  WordBits w(words, 0);
  for (std::uint32_t b = 0; b < plan.header_bits; b += 8) {
    const std::uint32_t left = plan.header_bits - b;
    w.put(plan.header[b / 8], left < 8 ? static_cast<int>(left) : 8);
  }
  w.flush();
  // The closing block's 3 zero bits and padding need nothing: the words were
  // zeroed. Its LEN and NLEN: 00 00 FF FF in the last 4 bytes.
  WordBits e(words, plan.header_bits + plan.data_bits);
  e.put(plan.lit_code[kEndOfBlock], plan.lit_len[kEndOfBlock]);
  e.flush();
  const std::uint64_t at = (plan.out_bytes - 2) * 8;
  WordBits f(words, at);
  f.put(0xffff, 16);
  f.flush();
}

// Pass 5b: byte k (< plan.out_bytes) of the item's output. Stored: a block
// of up to 65535 bytes at a time, each a zero byte (BFINAL 0, BTYPE 00,
// padding), LEN and NLEN, the bytes; then the empty stored block.
TANDEM_HD std::uint8_t output_byte(const Plan& plan, const std::uint8_t* in, std::uint32_t n, const std::uint32_t* words,
                                   std::uint64_t k) {
  if (plan.mode != Mode::stored) return static_cast<std::uint8_t>(words[k / 4] >> (8 * (k % 4)));
  const std::uint64_t blocks = (std::uint64_t{n} + kMaxStoredBlock - 1) / kMaxStoredBlock;
  const std::uint64_t tail = n + 5 * blocks;  // where the empty stored block starts
  if (k >= tail) return k - tail >= 3 ? 0xff : 0;
  const std::uint64_t per = kMaxStoredBlock + 5;
  const std::uint64_t at = k % per;
  const std::uint64_t start = k / per * kMaxStoredBlock;
  if (at >= 5) return in[start + at - 5];
  const std::uint64_t len = n - start < kMaxStoredBlock ? n - start : kMaxStoredBlock;
  const std::uint32_t field = at >= 3 ? static_cast<std::uint32_t>(~len & 0xffff) : static_cast<std::uint32_t>(len);
  if (at == 0) return 0;
  return static_cast<std::uint8_t>(at == 1 || at == 3 ? field : field >> 8);
}

}  // namespace tandem::gpu::deflate_enc
