// Length-limited canonical Huffman codes for deflate's encoder (RFC 1951,
// 3.2.2), written once for the host and the device: one thread builds one
// code, in fixed arrays, with no allocation; the sort of the symbols that
// comes first may be spread over a thread block (symbol_rank).
//
// build_code_lengths makes a Huffman tree from the symbols' frequencies (the
// two-queue method over the used symbols sorted by frequency, ties broken by
// symbol so the result is a function of the frequencies alone), clamps
// lengths to the limit and then restores an exact Kraft sum: while the sum is
// over 1, a leaf moves from the deepest level above the limit one level down;
// while it is under 1, a leaf moves from the deepest level one level up. The
// most frequent symbols get the shortest lengths. Every code it returns is
// complete (Kraft sum exactly 1) and has at least two symbols, as zlib's
// encoder does for the same reason: some inflaters reject a code of one
// symbol, and a distance code that no match uses still needs one.
//
// canonical_codes assigns the codes of RFC 1951 3.2.2 and stores them bit
// reversed, ready for a writer that fills bytes from their low bit.
#pragma once

#include <cstdint>

#include "gpu/simt.hpp"

namespace tandem::gpu::deflate_enc {

// Deflate's largest alphabet: 288 literal/length symbols (286 are used).
inline constexpr int kMaxSymbols = 288;
inline constexpr int kMaxCodeLength = 15;    // literal/length and distance codes
inline constexpr int kMaxCodeLengthCL = 7;   // the code-length code

// Where symbol s (freq[s] != 0) comes among the used symbols of freq[0, n)
// sorted by (frequency, symbol), ascending. Each symbol's rank depends on
// the frequencies alone, so the lanes of a warp can place the symbols
// independently (sym[symbol_rank(freq, n, s)] = s).
TANDEM_HD int symbol_rank(const std::uint32_t* freq, int n, int s) {
  int rank = 0;
  const std::uint32_t f = freq[s];
  for (int t = 0; t < n; ++t) rank += freq[t] != 0 && (freq[t] < f || (freq[t] == f && t < s)) ? 1 : 0;
  return rank;
}

// The used symbols of freq[0, n) (n <= 32 * PerLane) into sym in that order,
// by the warp: lane l ranks symbols l, l + 32, ... at once, each as the key
// frequency << 9 | symbol held in a register, against every used symbol's
// key read once (the same word for every lane). Returns how many are used.
template <int PerLane>
TANDEM_HD int sort_symbols(const simt::Warp& w, const std::uint32_t* freq, int n, std::uint16_t* sym) {
  constexpr std::uint64_t kNone = ~std::uint64_t{0};
  const simt::Lanes<std::uint32_t> used = w.map([&](int l) {
    std::uint64_t key[PerLane];
    std::uint32_t rank[PerLane];
    std::uint32_t mine = 0;
    TANDEM_UNROLL
    for (int j = 0; j < PerLane; ++j) {
      const int s = l + simt::kWarpSize * j;
      key[j] = s < n && freq[s] != 0 ? std::uint64_t{freq[s]} << 9 | static_cast<std::uint64_t>(s) : kNone;
      rank[j] = 0;
      mine += key[j] != kNone ? 1u : 0u;
    }
    for (int u = 0; u < n; ++u) {
      const std::uint32_t f = freq[u];
      if (f == 0) continue;
      const std::uint64_t k = std::uint64_t{f} << 9 | static_cast<std::uint64_t>(u);
      TANDEM_UNROLL
      for (int j = 0; j < PerLane; ++j) rank[j] += k < key[j] ? 1u : 0u;
    }
    TANDEM_UNROLL
    for (int j = 0; j < PerLane; ++j) {
      if (key[j] != kNone) sym[rank[j]] = static_cast<std::uint16_t>(l + simt::kWarpSize * j);
    }
    return mine;
  });
  return static_cast<int>(w.sum(used));
}

// The arrays a code's construction works in. On the device they belong in
// shared memory: one thread walks them, and a thread's own local memory is
// spread a word per cache line (it misses in L1 as soon as a few blocks do
// that).
struct HuffmanScratch {
  std::uint32_t weight[2 * kMaxSymbols];
  std::uint16_t parent[2 * kMaxSymbols];
  std::uint16_t sym[kMaxSymbols];
  std::uint32_t count[kMaxCodeLength + 2];
};

// Code lengths for the n <= kMaxSymbols symbols with frequencies freq[0, n),
// each in [0, max_len] (max_len <= 15, 2^max_len >= n); len[s] = 0 for
// unused symbols. At least two symbols get a length (unused ones join when
// fewer than two are used), and sum over s of 2^-len[s] is exactly 1.
// sorted: the m used symbols (freq[s] != 0) by (frequency, symbol),
// ascending, as symbol_rank places them (it may be x.sym).
TANDEM_HD void build_code_lengths_sorted(const std::uint32_t* freq, int n, int max_len, const std::uint16_t* sorted,
                                         int m, std::uint8_t* len, HuffmanScratch& x) {
  for (int s = 0; s < n; ++s) len[s] = 0;
  if (m < 2) {
    // One or no symbol in use: two codes of one bit, the used one and the
    // lowest other.
    const int a = m == 1 ? sorted[0] : 0;
    const int b = a == 0 ? 1 : 0;
    len[a] = 1;
    len[b] = 1;
    return;
  }
  const std::uint16_t* const sym = sorted;
  // Two queues: leaves 0..m-1 in sorted order, internal nodes m..2m-2 in the
  // order they are made (their weights never decrease). A tie prefers the leaf.
  std::uint32_t* const weight = x.weight;
  std::uint16_t* const parent = x.parent;
  for (int i = 0; i < m; ++i) weight[i] = freq[sym[i]];
  int leaf = 0;
  int node = m;
  for (int k = m; k < 2 * m - 1; ++k) {
    int pick[2];
    for (int t = 0; t < 2; ++t) {
      if (leaf < m && (node >= k || weight[leaf] <= weight[node])) {
        pick[t] = leaf++;
      } else {
        pick[t] = node++;
      }
    }
    weight[k] = weight[pick[0]] + weight[pick[1]];
    parent[pick[0]] = static_cast<std::uint16_t>(k);
    parent[pick[1]] = static_cast<std::uint16_t>(k);
  }
  // Depths, from the root down (a parent's index is above its children's);
  // weight[] is reused for them.
  const int root = 2 * m - 2;
  weight[root] = 0;
  for (int k = root - 1; k >= 0; --k) weight[k] = weight[parent[k]] + 1;
  // Leaves per length, clamped to max_len.
  std::uint32_t* const count = x.count;
  for (int l = 0; l < kMaxCodeLength + 2; ++l) count[l] = 0;
  for (int i = 0; i < m; ++i) {
    const std::uint32_t d = weight[i];
    ++count[d > static_cast<std::uint32_t>(max_len) ? max_len : static_cast<int>(d)];
  }
  // Kraft sum in units of 2^-max_len.
  const std::uint32_t target = 1u << max_len;
  std::uint32_t kraft = 0;
  for (int l = 1; l <= max_len; ++l) kraft += count[l] << (max_len - l);
  while (kraft > target) {
    int l = max_len - 1;
    while (l > 0 && count[l] == 0) --l;
    if (l == 0) break;  // cannot happen: 2^max_len >= m
    --count[l];
    ++count[l + 1];
    kraft -= 1u << (max_len - l - 1);
  }
  while (kraft < target) {
    const std::uint32_t room = target - kraft;
    int l = max_len;
    while (l > 1 && (count[l] == 0 || (1u << (max_len - l)) > room)) --l;
    if (l == 1) break;  // cannot happen: the deficit is a multiple of the deepest level's unit
    --count[l];
    ++count[l - 1];
    kraft += 1u << (max_len - l);
  }
  // The least frequent symbols take the longest lengths.
  int i = 0;
  for (int l = max_len; l >= 1; --l) {
    for (std::uint32_t c = 0; c < count[l]; ++c) len[sym[i++]] = static_cast<std::uint8_t>(l);
  }
}

// The same, the used symbols sorted here (insertion sort; m <= 288).
TANDEM_HD void build_code_lengths(const std::uint32_t* freq, int n, int max_len, std::uint8_t* len, HuffmanScratch& x) {
  std::uint16_t* const sym = x.sym;
  int m = 0;
  for (int s = 0; s < n; ++s) {
    if (freq[s] != 0) sym[m++] = static_cast<std::uint16_t>(s);
  }
  for (int i = 1; i < m; ++i) {
    const std::uint16_t s = sym[i];
    int j = i;
    while (j > 0 && (freq[sym[j - 1]] > freq[s] || (freq[sym[j - 1]] == freq[s] && sym[j - 1] > s))) {
      sym[j] = sym[j - 1];
      --j;
    }
    sym[j] = s;
  }
  build_code_lengths_sorted(freq, n, max_len, sym, m, len, x);
}
TANDEM_HD void build_code_lengths(const std::uint32_t* freq, int n, int max_len, std::uint8_t* len) {
  HuffmanScratch x;
  build_code_lengths(freq, n, max_len, len, x);
}

// Reverses the low n bits of v.
TANDEM_HD std::uint32_t reverse_bits(std::uint32_t v, int n) {
#if defined(__CUDA_ARCH__)
  return n == 0 ? 0u : __brev(v) >> (32 - n);
#else
  std::uint32_t r = 0;
  for (int i = 0; i < n; ++i) {
    r = (r << 1) | (v & 1u);
    v >>= 1;
  }
  return r;
#endif
}

// The canonical code of each symbol with a length (RFC 1951 3.2.2), bit
// reversed; code[s] = 0 where len[s] = 0. next: kMaxCodeLength + 2 words of
// scratch.
TANDEM_HD void canonical_codes(const std::uint8_t* len, int n, std::uint16_t* code, std::uint32_t* next) {
  for (int l = 0; l < kMaxCodeLength + 2; ++l) next[l] = 0;
  for (int s = 0; s < n; ++s) ++next[len[s]];  // counts first
  std::uint32_t c = 0;
  std::uint32_t below = 0;  // codes of the length below (none of length 0)
  for (int l = 1; l <= kMaxCodeLength; ++l) {
    const std::uint32_t here = next[l];
    c = (c + below) << 1;
    next[l] = c;
    below = here;
  }
  for (int s = 0; s < n; ++s) {
    const int l = len[s];
    code[s] = l ? static_cast<std::uint16_t>(reverse_bits(next[l]++, l)) : 0;
  }
}
TANDEM_HD void canonical_codes(const std::uint8_t* len, int n, std::uint16_t* code) {
  std::uint32_t next[kMaxCodeLength + 2];
  canonical_codes(len, n, code, next);
}

}  // namespace tandem::gpu::deflate_enc
