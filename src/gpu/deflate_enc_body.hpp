// The deflate encoder that the GPU runs, as thread bodies that the CPU
// emulation runs too (same code, same bytes).
//
// An item is one chunk of tandem's indexed deflate stream
// (docs/formats/deflate.md): its compressed data starts on a byte boundary,
// no match reaches before its first byte, every block has BFINAL = 0, and it
// ends with an empty stored block, so that it ends byte-aligned and inflates
// alone. The item is cut into segments of kParams.segment_size bytes; the passes:
//
//  1. find (a thread per segment): hash-chain match finding with lazy
//     evaluation (a match is put off while the next position has a longer
//     one) over the segment, its chains primed with the
//     kParams.prime_bytes before it (inside the item), matches ending inside the
//     segment. It writes the segment's tokens (a literal or a match each) to
//     the segment's slot, their count, and the segment's literal/length and
//     distance histograms.
//  2. plan (a thread per item): the item's histograms summed, length-limited
//     Huffman codes built (huffman_encode.hpp), the dynamic block's header
//     written, and the exact size of a dynamic, a fixed and a stored coding
//     compared; the smallest is the item's mode.
//  3. size (a thread per segment): the bits of the segment's tokens in the
//     chosen code; a prefix sum over segments (CUB on the device) places
//     each segment's bits after the header and the segments before it.
//  4. pack (a thread per segment): the segment's codes OR-ed into the item's
//     zeroed word buffer at that bit offset (only a segment's first and last
//     word are shared with a neighbour).
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
#include "gpu/simt.hpp"

namespace tandem::gpu::deflate_enc {

inline constexpr std::uint32_t kMinMatch = 3;
inline constexpr std::uint32_t kMaxMatch = 258;
inline constexpr std::uint32_t kWindow = 32768;
inline constexpr int kLitLenSymbols = 286;
inline constexpr int kDistSymbols = 30;
inline constexpr int kCLSymbols = 19;
inline constexpr int kEndOfBlock = 256;
inline constexpr int kHistSize = kLitLenSymbols + kDistSymbols;  // per segment: literal/length, then distance
inline constexpr std::uint32_t kMaxStoredBlock = 65535;

// The match finder's shape. Each segment primes its chains with the
// prime_bytes before it; chain positions are 16-bit offsets from the start of
// that stretch (0: none), so prime_bytes + segment_size < 65536.
struct MatchParams {
  std::uint32_t segment_size;  // a power of two
  std::uint32_t prime_bytes;
  int hash_log;
  int chain_depth;             // candidates looked at per position
  std::uint32_t nice_length;   // a match this long ends the search and the lazy step
  bool lazy;
};
// Measured on silesia7 in 64 KiB chunks (CPU emulation; libdeflate level 1
// on the same chunks writes 23,120,356 bytes, on the whole files 22.0 MB):
//   segment  prime  hash  depth  nice  lazy   bytes
//   8192     16384  13    24     64    yes    21,789,411
//   4096     16384  13    16     64    yes    22,017,913  (this one)
//   4096     16384  12     4     32    yes    22,816,113
//   2048     16384  12    16     64    yes    22,127,733
//   2048      8192  12     8     32    yes    23,553,937
//   4096     12288  12     8     32    no     23,193,749
// Smaller segments give the GPU more threads, each priming its chains with
// more bytes than it parses.
inline constexpr MatchParams kParams{4096, 16384, 13, 16, 64, true};
static_assert(kParams.prime_bytes + kParams.segment_size < 65536, "chain positions are 16 bits");
static_assert(kParams.prime_bytes <= kWindow, "deflate's window is 32 KiB");

// Whether a shape is one the encoder takes: segment size a power of two from
// 256 to 32 KiB, prime + segment < 65536, prime within the window, hash_log in
// [8, 16], chain_depth >= 1.
TANDEM_HD constexpr bool params_valid(const MatchParams& p) {
  return p.segment_size >= 256 && p.segment_size <= 32768 && (p.segment_size & (p.segment_size - 1)) == 0 &&
         p.prime_bytes + p.segment_size < 65536 && p.prime_bytes <= kWindow && p.hash_log >= 8 && p.hash_log <= 16 &&
         p.chain_depth >= 1;
}
static_assert(params_valid(kParams));

TANDEM_HD constexpr std::size_t segment_count(std::size_t n, const MatchParams& p = kParams) {
  return n == 0 ? 1 : (n + p.segment_size - 1) / p.segment_size;
}

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

// ---------------------------------------------------------- 1. find ----

TANDEM_HD std::uint32_t hash4(const std::uint8_t* p, int hash_log) {
  const std::uint32_t v = p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
  return (v * 2654435761u) >> (32 - hash_log);
}

struct Match {
  std::uint32_t len;
  std::uint32_t dist;
};

// The chains of one segment: head[2^hash_log] and prev[prime_bytes +
// segment_size] hold positions as offsets from base, plus one (0: none).
struct Chains {
  const std::uint8_t* in;
  std::uint32_t n;
  std::uint32_t base;
  std::uint16_t* head;
  std::uint16_t* prev;
  int hash_log;
  std::uint32_t next;  // the first position not yet inserted

  // Inserts every position before `upto` that has 4 bytes to hash.
  TANDEM_HD void insert_to(std::uint32_t upto) {
    const std::uint32_t last = n >= 4 ? n - 3 : 0;  // positions < last have 4 bytes
    const std::uint32_t stop = upto < last ? upto : last;
    for (; next < stop; ++next) {
      const std::uint32_t h = hash4(in + next, hash_log);
      prev[next - base] = head[h];
      head[h] = static_cast<std::uint16_t>(next - base + 1);
    }
    if (next < upto) next = upto;
  }

  // The longest match at p (positions before p inserted, p not), at most
  // max_len bytes; len 0 when none is worth coding.
  TANDEM_HD Match best(std::uint32_t p, std::uint32_t max_len, int depth, std::uint32_t nice) const {
    Match m{0, 0};
    if (max_len < kMinMatch || p + 4 > n) return m;
    std::uint32_t best_len = kMinMatch - 1;
    std::uint32_t cand = head[hash4(in + p, hash_log)];
    const std::uint8_t* const cur = in + p;
    while (cand != 0 && depth-- > 0) {
      const std::uint32_t q = base + cand - 1;
      const std::uint32_t dist = p - q;
      if (dist > kWindow) break;
      const std::uint8_t* const c = in + q;
      if (c[best_len] == cur[best_len] && c[0] == cur[0] && c[1] == cur[1]) {
        std::uint32_t l = 2;
        while (l < max_len && c[l] == cur[l]) ++l;
        // A 3-byte match pays only when it is near.
        if (l > best_len && (l > kMinMatch || dist <= 4096)) {
          best_len = l;
          m = {l, dist};
          if (l >= nice || l >= max_len) break;
        }
      }
      cand = prev[q - base];
    }
    return m;
  }
};

// Adds one token to the segment's tokens and histogram (hist: kHistSize
// counters, literal/length then distance).
TANDEM_HD void put_literal(std::uint32_t* tokens, std::uint32_t* count, std::uint32_t* hist, std::uint8_t b) {
  tokens[(*count)++] = b;
  ++hist[b];
}
TANDEM_HD void put_match(std::uint32_t* tokens, std::uint32_t* count, std::uint32_t* hist, Match m) {
  tokens[(*count)++] = match_token(m.len, m.dist);
  ++hist[length_symbol(m.len).symbol];
  ++hist[kLitLenSymbols + distance_symbol(m.dist).symbol];
}

// Pass 1 for the segment [begin, end) of the item in[0, n): writes its tokens
// (at most end - begin) and its histogram; returns the token count. head and
// prev are the segment's own scratch (see Chains).
TANDEM_HD std::uint32_t find_segment(const std::uint8_t* in, std::uint32_t n, std::uint32_t begin, std::uint32_t end,
                                     const MatchParams& params, std::uint16_t* head, std::uint16_t* prev,
                                     std::uint32_t* tokens, std::uint32_t* hist) {
  for (int i = 0; i < kHistSize; ++i) hist[i] = 0;
  std::uint32_t count = 0;
  if (begin >= end) return 0;
  const std::uint32_t hash_size = 1u << params.hash_log;
#if defined(__CUDA_ARCH__)
  if ((reinterpret_cast<std::uintptr_t>(head) & 15) == 0) {
    uint4* h = reinterpret_cast<uint4*>(head);
    for (std::uint32_t i = 0; i < hash_size / 8; ++i) h[i] = make_uint4(0, 0, 0, 0);
  } else {
    for (std::uint32_t i = 0; i < hash_size; ++i) head[i] = 0;
  }
#else
  std::memset(head, 0, hash_size * sizeof(std::uint16_t));
#endif
  const std::uint32_t base = begin > params.prime_bytes ? begin - params.prime_bytes : 0;
  Chains ch{in, n, base, head, prev, params.hash_log, base};
  std::uint32_t p = begin;
  while (p < end) {
    ch.insert_to(p);
    const std::uint32_t room = end - p < kMaxMatch ? end - p : kMaxMatch;
    Match m = ch.best(p, room, params.chain_depth, params.nice_length);
    if (m.len == 0) {
      put_literal(tokens, &count, hist, in[p]);
      ++p;
      continue;
    }
    // Lazy evaluation: while the next position has a longer match, the
    // current byte goes out as a literal.
    while (params.lazy && m.len < params.nice_length && p + 1 < end) {
      ch.insert_to(p + 1);
      const std::uint32_t room1 = end - p - 1 < kMaxMatch ? end - p - 1 : kMaxMatch;
      const Match next = ch.best(p + 1, room1, params.chain_depth / 2 + 1, params.nice_length);
      if (next.len <= m.len) break;
      put_literal(tokens, &count, hist, in[p]);
      ++p;
      m = next;
    }
    put_match(tokens, &count, hist, m);
    p += m.len;
  }
  return count;
}

// ---------------------------------------------------------- 2. plan ----

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
    for (int i = 0; i < nbits; ++i, ++bit) {
      if ((v >> i) & 1u) out[bit >> 3] |= static_cast<std::uint8_t>(1u << (bit & 7));
    }
  }
};

// The order of the code-length code's lengths in the header (RFC 1951 3.2.7).
TANDEM_HD int cl_order(int i) {
  constexpr std::uint8_t kOrder[kCLSymbols] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  return kOrder[i];
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

// Pass 2 for an item of n bytes whose histogram (summed over its segments)
// is hist[kHistSize]. hist is changed: the end-of-block symbol is counted.
TANDEM_HD void plan_item(std::uint32_t n, std::uint32_t* hist, Plan* plan) {
  hist[kEndOfBlock] = 1;
  const std::uint64_t stored = max_compressed_size(n);
  plan->mode = Mode::stored;
  plan->header_bits = 0;
  plan->data_bits = 0;
  plan->out_bytes = stored;
  for (int i = 0; i < kHeaderBytes; ++i) plan->header[i] = 0;
  if (n == 0) return;

  // Dynamic: the item's own codes.
  std::uint8_t lit_len[kLitLenSymbols];
  std::uint8_t dist_len[kDistSymbols];
  build_code_lengths(hist, kLitLenSymbols, kMaxCodeLength, lit_len);
  build_code_lengths(hist + kLitLenSymbols, kDistSymbols, kMaxCodeLength, dist_len);
  int hlit = kLitLenSymbols;
  while (hlit > 257 && lit_len[hlit - 1] == 0) --hlit;
  int hdist = kDistSymbols;
  while (hdist > 1 && dist_len[hdist - 1] == 0) --hdist;
  std::uint8_t all[kLitLenSymbols + kDistSymbols];
  for (int s = 0; s < hlit; ++s) all[s] = lit_len[s];
  for (int s = 0; s < hdist; ++s) all[hlit + s] = dist_len[s];
  std::uint16_t items[kLitLenSymbols + kDistSymbols];
  const int nitems = rle_lengths(all, hlit + hdist, items);
  std::uint32_t cl_freq[kCLSymbols] = {};
  for (int i = 0; i < nitems; ++i) ++cl_freq[items[i] & 0xff];
  std::uint8_t cl_len[kCLSymbols];
  build_code_lengths(cl_freq, kCLSymbols, kMaxCodeLengthCL, cl_len);
  std::uint16_t cl_code[kCLSymbols];
  canonical_codes(cl_len, kCLSymbols, cl_code);
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
  std::uint8_t fix_lit[kMaxSymbols];
  std::uint8_t fix_dist[kDistSymbols];
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
  canonical_codes(plan->lit_len, kMaxSymbols, plan->lit_code);
  canonical_codes(plan->dist_len, kDistSymbols, plan->dist_code);
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

// ------------------------------------------------- 3. size, 4. pack ----

// Pass 3: the bits of a segment's tokens in the plan's code.
TANDEM_HD std::uint64_t segment_bits(const Plan& plan, const std::uint32_t* tokens, std::uint32_t count) {
  if (plan.mode == Mode::stored) return 0;
  std::uint64_t bits = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t t = tokens[i];
    if (!is_match(t)) {
      bits += plan.lit_len[t];
    } else {
      const SymbolExtra l = length_symbol(token_length(t));
      const SymbolExtra d = distance_symbol(token_distance(t));
      bits += static_cast<std::uint64_t>(plan.lit_len[l.symbol] + l.bits + plan.dist_len[d.symbol] + d.bits);
    }
  }
  return bits;
}

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

// Pass 4: a segment's codes OR-ed into the item's words from bit `at` on.
TANDEM_HD void pack_segment(const Plan& plan, const std::uint32_t* tokens, std::uint32_t count, std::uint32_t* words,
                            std::uint64_t at) {
  if (plan.mode == Mode::stored || count == 0) return;
  WordBits w(words, at);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t t = tokens[i];
    if (!is_match(t)) {
      w.put(plan.lit_code[t], plan.lit_len[t]);
    } else {
      const SymbolExtra l = length_symbol(token_length(t));
      const SymbolExtra d = distance_symbol(token_distance(t));
      w.put(plan.lit_code[l.symbol], plan.lit_len[l.symbol]);
      w.put(l.value, l.bits);
      w.put(plan.dist_code[d.symbol], plan.dist_len[d.symbol]);
      w.put(d.value, d.bits);
    }
  }
  w.flush();
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
