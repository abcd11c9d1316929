// Canonical Huffman decoding tables of deflate (RFC 1951 3.2.2), built from a
// list of code lengths, for the inflate body (gpu/inflate_body.hpp) on the
// host and on the device.
//
// A table is fixed in size (no allocation; it fits shared memory or a
// thread's stack): a primary lookup indexed by the next kBits input bits
// (deflate packs codes most significant bit first into a least significant
// bit first stream, so the index is the code reversed) gives the symbol and
// the code's length of every code of at most kBits bits. Longer codes (rare:
// the primary covers 10 bits for literals/lengths) are marked in the primary
// and decoded from the canonical description (count of codes per length,
// first code per length, symbols sorted by code) one further bit at a time.
//
// The builder refuses lengths over 15, over-subscribed sets, and incomplete
// sets, except what deflate decoders accept: a set with a single code, of
// length 1 (for literal/length and distance codes; decoding its unused code
// is an error), and an empty distance set (a block of literals only).
#pragma once

#include <cstdint>

#include "gpu/simt.hpp"

namespace tandem::gpu::inflate {

inline constexpr int kMaxCodeLength = 15;

// What the builder made of a set of lengths. Values are permanent.
enum class HuffmanStatus : std::int32_t {
  ok = 0,
  length_too_long = 1,  // a length over 15, or more symbols than the table holds
  oversubscribed = 2,   // the lengths ask for more codes than exist
  incomplete = 3,       // codes left unused, and the set is not one deflate allows
  empty = 4,            // no code at all, where the set must have one
};

// Which incomplete sets a table accepts.
enum class CodeKind : std::int32_t {
  precode = 0,   // the code length code: complete only
  litlen = 1,    // complete, or a single code of length 1
  distance = 2,  // complete, a single code of length 1, or empty
};

// The low n bits of v in reverse order (n <= 16).
TANDEM_HD std::uint32_t reverse_bits(std::uint32_t v, int n) {
#if defined(__CUDA_ARCH__)
  return n == 0 ? 0u : (__brev(v) >> (32 - n));
#else
  std::uint32_t r = 0;
  for (int i = 0; i < n; ++i) {
    r = (r << 1) | (v & 1u);
    v >>= 1;
  }
  return r;
#endif
}

// A decoded symbol and its code's length in bits; length 0 means no symbol
// has this code (the unused half of a one-code set, or not enough bits).
struct Decoded {
  std::uint32_t symbol;
  std::uint32_t length;
};

template <int kSymbols, int kBits>
struct HuffmanTable {
  static_assert(kBits >= 1 && kBits <= kMaxCodeLength && kSymbols <= 512);

  // Primary entries: 0 for no code; kLong for a code longer than kBits;
  // otherwise (length << 9) | symbol.
  static constexpr std::uint16_t kLong = 0x8000;
  static constexpr std::uint32_t kMask = (1u << kBits) - 1u;

  std::uint16_t primary[1u << kBits];
  std::uint16_t count[kMaxCodeLength + 1];   // codes of each length
  std::uint16_t first[kMaxCodeLength + 1];   // the first (canonical) code of each length
  std::uint16_t offset[kMaxCodeLength + 1];  // index in `sorted` of that first code
  std::uint16_t sorted[kSymbols];            // symbols ordered by (length, symbol)

  // Builds the table from lengths[0 .. n) (0 means the symbol is unused).
  // `lanes` threads (a power of two, at most 32) may build one table
  // together, each calling build with its `lane`; all get the same status.
  // Lane k alone writes the primary entries i with i % lanes == k, zeroing
  // and filling them, so no lane overwrites another's; the other fields each
  // lane writes alike, from values it computed itself. The caller
  // synchronises the lanes before the table is read.
  TANDEM_HD HuffmanStatus build(const std::uint8_t* lengths, int n, CodeKind kind, std::uint32_t lane = 0,
                                std::uint32_t lanes = 1) {
    if (n < 0 || n > kSymbols) return HuffmanStatus::length_too_long;
    std::uint32_t cnt[kMaxCodeLength + 1];
    for (int l = 0; l <= kMaxCodeLength; ++l) cnt[l] = 0;
    for (int s = 0; s < n; ++s) {
      if (lengths[s] > kMaxCodeLength) return HuffmanStatus::length_too_long;
      ++cnt[lengths[s]];
    }
    cnt[0] = 0;
    // Kraft: `left` codes of the current length are still free.
    std::int32_t left = 1;
    std::uint32_t used = 0;
    for (int l = 1; l <= kMaxCodeLength; ++l) {
      left = 2 * left - static_cast<std::int32_t>(cnt[l]);
      if (left < 0) return HuffmanStatus::oversubscribed;
      used += cnt[l];
    }
    if (used == 0) {
      if (kind != CodeKind::distance) return HuffmanStatus::empty;
    } else if (left != 0) {
      const bool single = used == 1 && cnt[1] == 1;
      if (kind == CodeKind::precode || !single) return HuffmanStatus::incomplete;
    }
    std::uint32_t fst[kMaxCodeLength + 1], off[kMaxCodeLength + 1], next[kMaxCodeLength + 1];
    std::uint32_t code = 0;
    std::uint32_t index = 0;
    fst[0] = off[0] = next[0] = 0;
    for (int l = 1; l <= kMaxCodeLength; ++l) {
      code = (code + cnt[l - 1]) << 1;
      fst[l] = code;
      off[l] = index;
      next[l] = 0;
      index += cnt[l];
    }
    for (int l = 0; l <= kMaxCodeLength; ++l) {
      count[l] = static_cast<std::uint16_t>(cnt[l]);
      first[l] = static_cast<std::uint16_t>(fst[l]);
      offset[l] = static_cast<std::uint16_t>(off[l]);
    }
    for (std::uint32_t i = lane; i <= kMask; i += lanes) primary[i] = 0;
    // Symbols in canonical order: by length, then by symbol.
    for (int s = 0; s < n; ++s) {
      const int l = lengths[s];
      if (l == 0) continue;
      const std::uint32_t rank = next[l]++;
      sorted[off[l] + rank] = static_cast<std::uint16_t>(s);
      const std::uint32_t c = fst[l] + rank;
      if (l <= kBits) {
        // The entries r, r + step, ... (every index whose low l bits are r).
        const std::uint16_t entry = static_cast<std::uint16_t>((l << 9) | s);
        const std::uint32_t r = reverse_bits(c, l);
        const std::uint32_t step = 1u << l;
        if (step >= lanes) {
          if ((r & (lanes - 1)) == lane)
            for (std::uint32_t i = r; i <= kMask; i += step) primary[i] = entry;
        } else if ((lane & (step - 1)) == r) {
          for (std::uint32_t i = lane; i <= kMask; i += lanes) primary[i] = entry;
        }
      } else {
        const std::uint32_t i = reverse_bits(c >> (l - kBits), kBits);
        if ((i & (lanes - 1)) == lane) primary[i] = kLong;
      }
    }
    return HuffmanStatus::ok;
  }

  // Decodes the code at the start of `bits` (the next input bits, first bit
  // lowest; bits past the input's end given as 0). A length of 0: no code.
  TANDEM_HD Decoded decode(std::uint32_t bits) const {
    const std::uint16_t e = primary[bits & kMask];
    if (e != kLong) return {static_cast<std::uint32_t>(e & 0x1ffu), static_cast<std::uint32_t>(e >> 9)};
    std::uint32_t code = reverse_bits(bits & kMask, kBits);
    for (int l = kBits + 1; l <= kMaxCodeLength; ++l) {
      code = (code << 1) | ((bits >> (l - 1)) & 1u);
      const std::uint32_t k = code - first[l];  // wraps above count when code < first
      if (k < count[l]) return {sorted[offset[l] + k], static_cast<std::uint32_t>(l)};
    }
    return {0, 0};
  }
};

// The tables of the three deflate codes: literal/length (288 symbols, so that
// the fixed code's 286 and 287 decode, to be refused), distance (32, the same),
// and the code length code (19).
using LitLenTable = HuffmanTable<288, 10>;
using DistanceTable = HuffmanTable<32, 8>;
using PrecodeTable = HuffmanTable<19, 7>;

}  // namespace tandem::gpu::inflate
