// The rANS stream format's working parts (docs/formats/rans.md), written once
// as host/device code over a warp (gpu/simt.hpp): the CPU reference
// (cpu/rans_cpu.cpp) runs them through the warp emulation, the CUDA kernels
// (gpu/rans_gpu.cu) on the device. So the CPU encoder and the GPU encoder
// write the same bytes, and the tests and fuzzers that run on the CPU check
// the code the GPU runs.
//
// A chunk of n bytes with K lanes: symbol i belongs to lane i % K. Decoding
// goes in steps; at step t each lane with a coded symbol left decodes symbol
// l + t*K, then, if its state fell below 2^16, takes the next 16-bit word;
// within a step the lanes that take words take them in lane order (a ballot
// and a population count give each its place). Encoding runs the same steps
// backwards, lanes in reverse order, writing words from the end of its
// buffer, so the decoder reads them front to back. A lane's last (up to) two
// symbols are not coded: they are the low bytes of the state its encoder
// starts from, 2^16 | b0 | b1 << 8, which the decoder ends in.
//
// Division by a frequency uses a reciprocal (Granlund and Montgomery's
// round-up method for 32-bit dividends), exact for every state, so the
// device needs no integer division.
//
// Every length, count and state read from a stream is checked: a function
// here returns an Error and never reads or writes outside the spans it was
// given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "format/rans_format.hpp"
#include "gpu/simt.hpp"

namespace tandem::gpu::ransk {

using rans::Error;
using simt::Lanes;
using simt::Warp;

inline constexpr int kSymbols = 256;
inline constexpr int kSymbolsPerLane = kSymbols / simt::kWarpSize;  // lane l owns symbols 8l .. 8l + 7

// ------------------------------------------------------------- bytes ----

TANDEM_HD std::uint32_t load_u16le(const std::uint8_t* p) { return p[0] | (std::uint32_t{p[1]} << 8); }
TANDEM_HD std::uint32_t load_u32le(const std::uint8_t* p) {
  return p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
TANDEM_HD void store_u16le(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
TANDEM_HD void store_u32le(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

TANDEM_HD std::uint32_t mulhi(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(a) * b) >> 32);
#endif
}

// ------------------------------------------------------------ header ----

struct Header {
  std::uint32_t scale_bits = 0;
  std::uint32_t chunk_size = 0;  // bytes
  std::uint32_t lanes = 0;       // most lanes a chunk may have
  std::uint32_t length = 0;      // bytes the stream decodes to
  std::uint32_t chunk_count = 0;
  std::uint32_t table_bytes = 0;
};

TANDEM_HD std::size_t directory_at(const Header& h) { return rans::kHeaderBytes + h.table_bytes; }
TANDEM_HD std::size_t payloads_at(const Header& h) {
  return directory_at(h) + rans::kDirEntryBytes * static_cast<std::size_t>(h.chunk_count);
}
// Bytes of chunk i (< chunk_count): chunk_size, the last one what is left.
TANDEM_HD std::uint32_t chunk_length(const Header& h, std::uint32_t i) {
  return i + 1 < h.chunk_count ? h.chunk_size : h.length - (h.chunk_count - 1) * h.chunk_size;
}
TANDEM_HD std::uint32_t chunks_for(std::uint32_t length, std::uint32_t chunk_size) {
  return length / chunk_size + (length % chunk_size != 0 ? 1u : 0u);
}

// A chunk's directory entry.
struct Entry {
  std::uint32_t lanes;
  std::uint32_t state_bytes;
  std::uint32_t words;
};
TANDEM_HD Entry read_entry(const std::uint8_t* dir, std::uint32_t i) {
  const std::uint8_t* p = dir + rans::kDirEntryBytes * static_cast<std::size_t>(i);
  return {p[0], p[1], load_u16le(p + 2)};
}
TANDEM_HD void write_entry(std::uint8_t* dir, std::uint32_t i, const Entry& e) {
  std::uint8_t* p = dir + rans::kDirEntryBytes * static_cast<std::size_t>(i);
  p[0] = static_cast<std::uint8_t>(e.lanes);
  p[1] = static_cast<std::uint8_t>(e.state_bytes);
  store_u16le(p + 2, e.words);
}

TANDEM_HD void write_header(std::uint8_t* out, const Header& h) {
  out[0] = rans::kMagic0;
  out[1] = rans::kMagic1;
  out[2] = rans::kMagic2;
  out[3] = rans::kMagic3;
  out[4] = rans::kVersion;
  out[5] = static_cast<std::uint8_t>(h.scale_bits);
  out[6] = static_cast<std::uint8_t>(h.chunk_size / 1024);
  out[7] = static_cast<std::uint8_t>(h.lanes);
  store_u32le(out + 8, h.length);
  store_u32le(out + 12, h.chunk_count);
  store_u16le(out + 16, h.table_bytes);
}

// Reads and checks the fixed header of the stream in[0, n): everything but
// the table's contents and the directory. On ok the table and the directory
// lie inside the input.
TANDEM_HD Error parse_header(const std::uint8_t* in, std::size_t n, Header* h) {
  const std::uint8_t magic[4] = {rans::kMagic0, rans::kMagic1, rans::kMagic2, rans::kMagic3};
  for (std::size_t i = 0; i < 4 && i < n; ++i) {
    if (in[i] != magic[i]) return Error::bad_magic;
  }
  if (n < rans::kHeaderBytes) return Error::truncated;
  if (in[4] != rans::kVersion) return Error::unsupported_version;
  const rans::Params p{in[6], in[5], in[7]};
  if (!rans::params_valid(p)) return Error::bad_params;
  h->scale_bits = p.scale_bits;
  h->chunk_size = p.chunk_kib * 1024;
  h->lanes = p.lanes;
  h->length = load_u32le(in + 8);
  h->chunk_count = load_u32le(in + 12);
  h->table_bytes = load_u16le(in + 16);
  if (h->chunk_count != chunks_for(h->length, h->chunk_size)) return Error::bad_chunk_count;
  if (h->length == 0) {
    if (h->table_bytes != 0) return Error::bad_table;
    return n > rans::kHeaderBytes ? Error::trailing_bytes : Error::ok;
  }
  if (h->table_bytes < rans::kTableHeadBytes || h->table_bytes > rans::kMaxTableBytes) return Error::bad_table;
  if (payloads_at(*h) > n) return Error::truncated;
  return Error::ok;
}

// ------------------------------------------------------------- table ----
//
// Frequencies are arrays of 256 (0: the symbol is absent). The table on the
// wire: the code order k, a presence bit per symbol, then for each present
// symbol in increasing order f - 1 as an exp-Golomb code of order k, bits
// taken from each byte's lowest first.

// Bits of the order-k code of v.
TANDEM_HD std::uint32_t code_bits(std::uint32_t v, std::uint32_t k) {
  const std::uint32_t nb = static_cast<std::uint32_t>(simt::last_set(v + (1u << k)));
  return 2 * nb + 1 - k;
}

// Bits of freq's codes at order k.
TANDEM_HD std::uint32_t table_code_bits(const std::uint32_t* freq, std::uint32_t k) {
  std::uint32_t bits = 0;
  for (int s = 0; s < kSymbols; ++s) {
    if (freq[s]) bits += code_bits(freq[s] - 1, k);
  }
  return bits;
}

TANDEM_HD std::uint32_t table_bytes(const std::uint32_t* freq, std::uint32_t k) {
  return static_cast<std::uint32_t>(rans::kTableHeadBytes) + (table_code_bits(freq, k) + 7) / 8;
}

// A lane's symbols' frequencies (lane l: symbols 8l .. 8l + 7), in registers
// on the device.
struct LaneFreqs {
  std::uint32_t f[kSymbolsPerLane];
};
TANDEM_HD Lanes<LaneFreqs> lane_freqs(const Warp& w, const std::uint32_t* freq) {
  return w.map([&](int l) {
    LaneFreqs m;
    for (int j = 0; j < kSymbolsPerLane; ++j) m.f[j] = freq[l * kSymbolsPerLane + j];
    return m;
  });
}
// Bits of a lane's symbols' codes at order k.
TANDEM_HD std::uint32_t lane_code_bits(const LaneFreqs& m, std::uint32_t k) {
  std::uint32_t bits = 0;
  for (int j = 0; j < kSymbolsPerLane; ++j) {
    if (m.f[j]) bits += code_bits(m.f[j] - 1, k);
  }
  return bits;
}

// How a table is coded: the order that codes freq in the fewest bits (the
// lowest of equals) and the table's size in bytes at that order.
struct TableCode {
  std::uint32_t order;
  std::uint32_t bytes;
};

// freq: 256 entries in memory the warp shares. Each lane sums the code
// lengths of its own symbols at every order; a warp sum per order.
TANDEM_HD TableCode best_table_code(const Warp& w, const std::uint32_t* freq) {
  const Lanes<LaneFreqs> mine = lane_freqs(w, freq);
  std::uint32_t best = 0, best_bits = 0;
  for (std::uint32_t k = 0; k <= rans::kMaxCodeOrder; ++k) {
    const std::uint32_t bits = w.sum(w.map([&](int l) { return lane_code_bits(mine[l], k); }));
    if (k == 0 || bits < best_bits) {
      best = k;
      best_bits = bits;
    }
  }
  return {best, static_cast<std::uint32_t>(rans::kTableHeadBytes) + (best_bits + 7) / 8};
}

// Words of scratch write_table needs: the codes of the largest table.
inline constexpr std::uint32_t kTableScratchWords =
    static_cast<std::uint32_t>((rans::kMaxTableBytes - rans::kTableHeadBytes + 3) / 4);

// Writes the table at order k (table_bytes(freq, k) bytes) to out, each
// byte once, the warp together: each lane places its symbols' codes at its
// place among the bits (a prefix sum of the lanes' code lengths) in
// scratch, kTableScratchWords words the warp shares, then the warp copies
// the bytes out. freq: 256 entries in memory the warp shares.
TANDEM_HD void write_table(const Warp& w, const std::uint32_t* freq, std::uint32_t k, std::uint32_t* scratch,
                           std::uint8_t* out) {
  const Lanes<LaneFreqs> mine = lane_freqs(w, freq);
  const Lanes<std::uint32_t> bits = w.map([&](int l) { return lane_code_bits(mine[l], k); });
  const Lanes<std::uint32_t> first = w.exclusive_sum(bits);
  const std::uint32_t total = w.sum(bits);
  const std::uint32_t nbytes = (total + 7) / 8;
  w.each([&](int l) {
    for (std::uint32_t j = static_cast<std::uint32_t>(l); j < (total + 31) / 32; j += simt::kWarpSize) scratch[j] = 0;
  });
  w.sync();
  w.each([&](int l) {
    std::uint32_t at = first[l];
    for (int j = 0; j < kSymbolsPerLane; ++j) {
      if (!mine[l].f[j]) continue;
      // nb - k zeros, a one, the low nb bits of u: (u << 1 | 1) << (nb - k)
      // keeps u's top bit out of the code (at most 25 bits).
      const std::uint32_t u = mine[l].f[j] - 1 + (1u << k);
      const std::uint32_t nb = static_cast<std::uint32_t>(simt::last_set(u));
      const std::uint32_t code = (((u & ((1u << nb) - 1u)) << 1) | 1u) << (nb - k);
      const std::uint32_t len = 2 * nb + 1 - k;
      const std::uint32_t shift = at % 32;
      simt::atomic_or_block(&scratch[at / 32], code << shift);
      if (shift + len > 32) simt::atomic_or_block(&scratch[at / 32 + 1], code >> (32 - shift));
      at += len;
    }
  });
  w.sync();
  w.each([&](int l) {
    if (l == 0) out[0] = static_cast<std::uint8_t>(k);
    std::uint32_t present = 0;
    for (int j = 0; j < kSymbolsPerLane; ++j) present |= (mine[l].f[j] ? 1u : 0u) << j;
    out[1 + l] = static_cast<std::uint8_t>(present);
    for (std::uint32_t j = static_cast<std::uint32_t>(l); j < nbytes; j += simt::kWarpSize) {
      out[rans::kTableHeadBytes + j] = static_cast<std::uint8_t>(scratch[j / 4] >> (8 * (j % 4)));
    }
  });
}

// A stream's head as parse_codes reads it: its first bytes (at most
// kStagedBytes: the header and the largest table) as little-endian 4-byte
// words, then zero words (a read of 32 bits at any bit of the head takes the
// word after its own). kStageWords words in all.
inline constexpr std::uint32_t kStagedBytes = static_cast<std::uint32_t>(rans::kHeaderBytes + rans::kMaxTableBytes);
inline constexpr std::uint32_t kStageWords = (kStagedBytes + 3) / 4 + 1;

// The warp copies in[0, min(n, kStagedBytes)) into words as above, each lane
// its own words, all its loads issued before any is used (a byte at a time:
// nothing outside in[0, n) is read). The caller syncs the warp before
// anyone reads them.
TANDEM_HD void stage_head(const Warp& w, const std::uint8_t* in, std::size_t n, std::uint32_t* words) {
  const std::uint32_t len = n < kStagedBytes ? static_cast<std::uint32_t>(n) : kStagedBytes;
  constexpr std::uint32_t kRounds = (kStageWords + simt::kWarpSize - 1) / simt::kWarpSize;
  w.each([&](int l) {
    std::uint8_t b[kRounds][4];
    TANDEM_UNROLL
    for (std::uint32_t r = 0; r < kRounds; ++r) {
      TANDEM_UNROLL
      for (std::uint32_t i = 0; i < 4; ++i) {
        const std::uint32_t at = 4 * (static_cast<std::uint32_t>(l) + simt::kWarpSize * r) + i;
        b[r][i] = at < len ? in[at] : std::uint8_t{0};
      }
    }
    TANDEM_UNROLL
    for (std::uint32_t r = 0; r < kRounds; ++r) {
      const std::uint32_t j = static_cast<std::uint32_t>(l) + simt::kWarpSize * r;
      if (j < kStageWords) {
        words[j] = b[r][0] | std::uint32_t{b[r][1]} << 8 | std::uint32_t{b[r][2]} << 16 | std::uint32_t{b[r][3]} << 24;
      }
    }
  });
}

// The staged bytes as a byte array.
TANDEM_HD const std::uint8_t* staged_bytes(const std::uint32_t* words) {
  return reinterpret_cast<const std::uint8_t*>(words);
}

// Scratch of parse_codes: three times a byte per bit of the largest
// table's codes and one more (the length of one, two and four codes in a
// row that would start there), then each code's first bit and each code's
// symbol.
inline constexpr std::uint32_t kCodeBits = 8 * static_cast<std::uint32_t>(rans::kMaxTableBytes - rans::kTableHeadBytes);
inline constexpr std::uint32_t kLengthBytes = (kCodeBits + 1 + 3) / 4 * 4;
inline constexpr std::uint32_t kParseScratchBytes = 3 * kLengthBytes + kSymbols * 2 + kSymbols;

// Reads the table of tb bytes (kTableHeadBytes <= tb <= kMaxTableBytes) that
// starts at byte kHeaderBytes of the head staged in words, into freq, the
// warp together. scratch: kParseScratchBytes, 4-aligned. freq and scratch
// are in memory the warp shares.
//
// A code's place depends on every code before it; its length depends only
// on the bits where it starts. So the lanes first take, for every bit of
// the codes, the length of a code starting there (0 where none could: more
// than 12 + k bits, or past the table's end), and of two and four codes in
// a row, all at once; then the chain of code starts is one load and one
// add every four codes (every lane walks it, the same loads); then each
// lane reads the frequencies of every 32nd code. A malformed table gives bad_table,
// as a code-by-code reading would.
TANDEM_HD Error parse_codes(const Warp& w, const std::uint32_t* words, std::uint32_t tb, std::uint32_t scale_bits,
                            std::uint8_t* scratch, std::uint32_t* freq) {
  // Bits [pos, pos + 32) of the head.
  const auto window = [&](std::uint32_t pos) {
    const std::uint64_t pair = (static_cast<std::uint64_t>(words[pos / 32 + 1]) << 32) | words[pos / 32];
    return static_cast<std::uint32_t>(pair >> (pos % 32));
  };
  constexpr std::uint32_t kTableAt = 8 * static_cast<std::uint32_t>(rans::kHeaderBytes);
  constexpr std::uint32_t kCodesAt = kTableAt + 8 * static_cast<std::uint32_t>(rans::kTableHeadBytes);
  const std::uint32_t k = window(kTableAt) & 0xFFu;
  if (k > rans::kMaxCodeOrder) return Error::bad_table;
  const std::uint32_t end = kTableAt + 8 * tb;  // the codes are bits [kCodesAt, end)
  const std::uint32_t span = end - kCodesAt;
  // [bit - kCodesAt] for bits [kCodesAt, end]; end itself holds 0.
  std::uint8_t* const one = scratch;
  std::uint8_t* const two = scratch + kLengthBytes;
  std::uint8_t* const four = scratch + 2 * kLengthBytes;
  auto* const starts = reinterpret_cast<std::uint16_t*>(scratch + 3 * kLengthBytes);
  std::uint8_t* const symbols = scratch + 3 * kLengthBytes + 2 * kSymbols;
  w.each([&](int l) {
    for (std::uint32_t at = static_cast<std::uint32_t>(l); at <= span; at += simt::kWarpSize) {
      // A code: zeros, a one, zeros + k more bits; at most 12 + 1 + 12.
      const auto zeros = static_cast<std::uint32_t>(simt::first_set(window(kCodesAt + at)));  // 32 when no one bit
      const std::uint32_t len = 2 * zeros + 1 + k;
      one[at] = static_cast<std::uint8_t>(zeros + k > rans::kMaxScaleBits || len > span - at ? 0u : len);
    }
  });
  // n codes in a row from two runs of n / 2: a length is 0 when either is.
  const auto join = [&](const std::uint8_t* half, std::uint8_t* whole) {
    w.sync();
    w.each([&](int l) {
      for (std::uint32_t at = static_cast<std::uint32_t>(l); at <= span; at += simt::kWarpSize) {
        const std::uint32_t first = half[at];
        const std::uint32_t second = first ? half[at + first] : 0u;  // at + first <= span
        whole[at] = static_cast<std::uint8_t>(second ? first + second : 0u);
      }
    });
  };
  join(one, two);
  join(two, four);
  // The present symbols in order: lane l's (8l .. 8l + 7) after those of
  // the lanes before it.
  const Lanes<std::uint32_t> mine = w.map([&](int l) {
    return (window(kTableAt + 8 + 8 * static_cast<std::uint32_t>(l)) & 0xFFu);
  });
  const Lanes<std::uint32_t> rank = w.exclusive_sum(w.map([&](int l) {
    return static_cast<std::uint32_t>(simt::popcount(mine[l]));
  }));
  const std::uint32_t present = w.sum(w.map([&](int l) { return static_cast<std::uint32_t>(simt::popcount(mine[l])); }));
  w.each([&](int l) {
    std::uint32_t r = rank[l];
    for (std::uint32_t m = mine[l]; m; m &= m - 1) {
      symbols[r++] = static_cast<std::uint8_t>(8 * l + simt::first_set(m));
    }
    for (int j = 0; j < kSymbolsPerLane; ++j) freq[l * kSymbolsPerLane + j] = 0;
  });
  w.sync();
  // The chain of codes: one per present symbol, each valid; four a step.
  std::uint32_t at = 0;  // bits from kCodesAt; at most span
  std::uint32_t i = 0;
  for (; i + 4 <= present; i += 4) {
    const std::uint32_t len = four[at];
    if (len == 0) return Error::bad_table;  // also: the table ends first
    const std::uint32_t second = at + one[at], third = at + two[at];
    const std::uint32_t fourth = third + one[third];
    w.each([&](int) {  // the same values from every lane
      starts[i] = static_cast<std::uint16_t>(at);
      starts[i + 1] = static_cast<std::uint16_t>(second);
      starts[i + 2] = static_cast<std::uint16_t>(third);
      starts[i + 3] = static_cast<std::uint16_t>(fourth);
    });
    at += len;
  }
  for (; i < present; ++i) {
    const std::uint32_t len = one[at];
    if (len == 0) return Error::bad_table;
    w.each([&](int) { starts[i] = static_cast<std::uint16_t>(at); });
    at += len;
  }
  const std::uint32_t pos = kCodesAt + at;
  // At least one symbol; the table ends in the byte that holds its last
  // bit, padded with zeros.
  if (present == 0 || end - pos >= 8 || (window(pos) & ((1u << (end - pos)) - 1u)) != 0) return Error::bad_table;
  w.sync();
  const Lanes<std::uint32_t> sums = w.map([&](int l) {
    std::uint32_t sum = 0;
    for (std::uint32_t i = static_cast<std::uint32_t>(l); i < present; i += simt::kWarpSize) {
      const std::uint32_t bits = window(kCodesAt + starts[i]);
      const auto zeros = static_cast<std::uint32_t>(simt::first_set(bits));
      const std::uint32_t nb = zeros + k;  // at most 12: the code is valid
      const std::uint32_t f = ((bits >> (zeros + 1)) & ((1u << nb) - 1u)) + (1u << nb) - (1u << k) + 1;
      freq[symbols[i]] = f;
      sum += f;
    }
    return sum;
  });
  if (w.sum(sums) != 1u << scale_bits) return Error::bad_table;  // at most 256 * 2^13: no overflow
  return Error::ok;
}

// Reads the table t[0, tb) (kTableHeadBytes <= tb <= kMaxTableBytes) into
// freq, on the host.
inline Error parse_table(const std::uint8_t* t, std::uint32_t tb, std::uint32_t scale_bits, std::uint32_t* freq) {
  std::uint8_t head[kStagedBytes] = {};
  for (std::uint32_t i = 0; i < tb; ++i) head[rans::kHeaderBytes + i] = t[i];
  std::uint32_t words[kStageWords];
  alignas(4) std::uint8_t scratch[kParseScratchBytes];
  const Warp w;
  stage_head(w, head, rans::kHeaderBytes + tb, words);
  return parse_codes(w, words, tb, scale_bits, scratch, freq);
}

// ------------------------------------------------------- histogram ----

// A warp's byte histogram (the GPU encoder's counts of an item of one
// chunk): kHistColumns counter columns, symbol s's at hist[s * kHistColumns
// + c], lane l counting into column l % kHistColumns through shared-memory
// atomics. Eight lanes share a column, so constant data serialises a warp's
// increments eight deep (the thread-block histogram's column per lane
// avoids that, but takes 32 KiB cleared and summed an item); the warp's 4
// KiB are cleared and summed in 16-byte words, a row a word.
inline constexpr std::uint32_t kHistColumns = 4;
inline constexpr std::uint32_t kHistWords = kSymbols * kHistColumns;
inline constexpr std::uint32_t kHistLoads = 4;  // 16-byte loads a lane has in flight
static_assert(kHistColumns == 4, "a row is one 16-byte word");

// The 16 bytes at 16-aligned p as four little-endian words (one load on the
// device).
TANDEM_HD void load_aligned_u128(const void* p, std::uint32_t (&v)[4]) {
#if defined(__CUDA_ARCH__)
  const uint4 q = *static_cast<const uint4*>(p);
  v[0] = q.x;
  v[1] = q.y;
  v[2] = q.z;
  v[3] = q.w;
#else
  std::memcpy(v, p, sizeof v);
#endif
}

// counts[s] = how many bytes of in[0, n) equal s, for all 256 s (every
// entry written), by the whole warp. hist: kHistWords words, 16-aligned,
// that only this warp uses (shared memory on the device). Bytes before in's
// first 16-byte boundary and after its last go one a lane; the rest as
// 16-byte words, kHistLoads of them in flight a lane before their counts.
TANDEM_HD void count_bytes(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t* hist,
                           std::uint32_t* counts) {
  constexpr std::uint32_t kLanes = simt::kWarpSize;
  w.sync();  // the warp's last reads of hist (a previous call) are done
  w.each([&](int l) {
    const std::uint32_t zero[4] = {0, 0, 0, 0};
    for (std::uint32_t k = static_cast<std::uint32_t>(l); k < kHistWords / 4; k += kLanes) {
      simt::store_aligned_u128(hist + 4 * k, zero);
    }
  });
  w.sync();
  const auto addr = reinterpret_cast<std::uintptr_t>(in);
  const std::uint32_t to_aligned = static_cast<std::uint32_t>((16 - (addr & 15)) & 15);
  const std::uint32_t head = n < to_aligned ? n : to_aligned;
  const std::uint32_t vecs = (n - head) / 16;
  const std::uint32_t tail = head + vecs * 16;  // n - tail < 16
  const std::uint8_t* v = in + head;            // 16-aligned
  w.each([&](int l) {
    const std::uint32_t lane = static_cast<std::uint32_t>(l);
    std::uint32_t* col = hist + lane % kHistColumns;
    if (lane < head) simt::atomic_add_block(&col[in[lane] * kHistColumns], 1u);
    if (lane < n - tail) simt::atomic_add_block(&col[in[tail + lane] * kHistColumns], 1u);
    const auto count = [&](const std::uint32_t (&q)[4]) {
      TANDEM_UNROLL
      for (int j = 0; j < 4; ++j) {
        TANDEM_UNROLL
        for (int b = 0; b < 4; ++b) simt::atomic_add_block(&col[((q[j] >> (8 * b)) & 0xFFu) * kHistColumns], 1u);
      }
    };
    std::uint32_t k = lane;
    for (; k + (kHistLoads - 1) * kLanes < vecs; k += kHistLoads * kLanes) {
      std::uint32_t q[kHistLoads][4];
      TANDEM_UNROLL
      for (std::uint32_t j = 0; j < kHistLoads; ++j) load_aligned_u128(v + 16 * (k + j * kLanes), q[j]);
      TANDEM_UNROLL
      for (std::uint32_t j = 0; j < kHistLoads; ++j) count(q[j]);
    }
    for (; k < vecs; k += kLanes) {
      std::uint32_t q[4];
      load_aligned_u128(v + 16 * k, q);
      count(q);
    }
  });
  w.sync();
  // Lane l sums the rows of symbols l, l + 32, ...: a warp's row loads read
  // 512 consecutive bytes, its stores 128.
  w.each([&](int l) {
    for (std::uint32_t j = 0; j < kSymbols / kLanes; ++j) {
      const std::uint32_t s = j * kLanes + static_cast<std::uint32_t>(l);
      std::uint32_t r[4];
      load_aligned_u128(hist + s * kHistColumns, r);
      counts[s] = r[0] + r[1] + r[2] + r[3];
    }
  });
}

// ---------------------------------------------------- normalisation ----

// The frequencies (summing to 2^scale_bits) of a stream of `total` (> 0)
// bytes with the symbol counts `counts`: each present symbol gets its share
// rounded to nearest, at least 1; a sum short of the scale goes to the most
// frequent symbol (the lowest of equals); an excess is taken one at a time
// from the symbol with the largest frequency (the lowest of equals).
// counts and freq: 256 entries in memory the warp shares.
TANDEM_HD void normalize(const Warp& w, const std::uint32_t* counts, std::uint32_t total, std::uint32_t scale_bits,
                         std::uint32_t* freq) {
  const std::uint32_t scale = 1u << scale_bits;
  const Lanes<std::uint32_t> part = w.map([&](int l) {
    std::uint32_t sum = 0;
    for (int j = 0; j < kSymbolsPerLane; ++j) {
      const int s = l * kSymbolsPerLane + j;
      const std::uint64_t c = counts[s];
      std::uint32_t f = 0;
      if (c) {
        f = static_cast<std::uint32_t>((c * scale + total / 2) / total);
        if (f == 0) f = 1;
      }
      freq[s] = f;
      sum += f;
    }
    return sum;
  });
  w.sync();
  std::uint32_t sum = w.sum(part);
  // The lowest symbol whose value in `of` is the warp's largest.
  const auto argmax = [&](const std::uint32_t* of) {
    const std::uint32_t top = w.max(w.map([&](int l) {
      std::uint32_t m = 0;
      for (int j = 0; j < kSymbolsPerLane; ++j) m = of[l * kSymbolsPerLane + j] > m ? of[l * kSymbolsPerLane + j] : m;
      return m;
    }));
    return static_cast<int>(w.min(w.map([&](int l) {
      for (int j = 0; j < kSymbolsPerLane; ++j) {
        if (of[l * kSymbolsPerLane + j] == top) return static_cast<std::uint32_t>(l * kSymbolsPerLane + j);
      }
      return static_cast<std::uint32_t>(kSymbols);
    })));
  };
  if (sum < scale) {
    const int s = argmax(counts);
    w.each([&](int l) {
      if (l == s / kSymbolsPerLane) freq[s] += scale - sum;
    });
    w.sync();
  }
  // Taking 1 at a time from the largest frequency (the lowest of equals)
  // flattens the top. With D(L) = the sum of max(0, f - L), the first D(L)
  // decrements bring every frequency above L down to L without touching
  // those at L or below; the next ones take 1 from each symbol at L in
  // increasing order. So with L the lowest level where D(L) <= excess and
  // r = excess - D(L) (fewer than the symbols at L, since D(L - 1) >
  // excess), the result is: f = min(f, L), then 1 less for the r lowest
  // symbols that were at L or above. A binary search for L (13 rounds of a
  // warp sum) replaces up to a few hundred rounds of a warp argmax. L >= 1:
  // D(1) = sum - (present symbols) >= sum - scale, as 256 symbols of 1 fit
  // any scale, so no frequency reaches 0.
  if (sum > scale) {
    const std::uint32_t excess = sum - scale;
    const auto above = [&](std::uint32_t level) {
      return w.sum(w.map([&](int l) {
        std::uint32_t d = 0;
        for (int j = 0; j < kSymbolsPerLane; ++j) {
          const std::uint32_t f = freq[l * kSymbolsPerLane + j];
          d += f > level ? f - level : 0u;
        }
        return d;
      }));
    };
    std::uint32_t lo = 1, hi = scale;  // above(hi) = 0 <= excess; the level is in [lo, hi]
    while (lo < hi) {
      const std::uint32_t mid = (lo + hi) / 2;
      if (above(mid) <= excess) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    const std::uint32_t level = lo;
    const std::uint32_t rest = excess - above(level);
    const Lanes<std::uint32_t> at_level = w.map([&](int l) {
      std::uint32_t c = 0;
      for (int j = 0; j < kSymbolsPerLane; ++j) c += freq[l * kSymbolsPerLane + j] >= level ? 1u : 0u;
      return c;
    });
    const Lanes<std::uint32_t> before = w.exclusive_sum(at_level);
    w.each([&](int l) {
      std::uint32_t rank = before[l];
      for (int j = 0; j < kSymbolsPerLane; ++j) {
        std::uint32_t& f = freq[l * kSymbolsPerLane + j];
        if (f >= level) {
          f = rank < rest ? level - 1 : level;
          ++rank;
        }
      }
    });
    w.sync();
  }
}

// ------------------------------------------------------ coding tables ----

// A symbol's encoding entry, 16 bytes so that a step takes it in one
// shared-memory load on the device, with everything a step needs ready to
// use (no bit field to extract but one, no logarithm per step):
//   rcp   the reciprocal that divides by f (Granlund and Montgomery's
//         round-up method for 32-bit dividends): floor(2^32 (2^s - f) / f) + 1,
//         s = ceil(log2 f)
//   emit  f * 2^(32 - scale_bits) - 1: a state above it gives a word first
//         (the format's floor(x / 2^(32 - scale_bits)) >= f, one compare)
//   cum   the cumulative frequency
//   sc    s | (M - f) << 16: the step writes x + cum + floor(x / f) (M - f),
//         which is floor(x / f) M + cum + x mod f in two operations
// An absent symbol's entry is all zero (it is never coded).
struct alignas(16) EncSym {
  std::uint32_t rcp;
  std::uint32_t emit;
  std::uint32_t cum;
  std::uint32_t sc;
};

TANDEM_HD std::uint32_t ceil_log2(std::uint32_t f) {
  return f > 1 ? static_cast<std::uint32_t>(simt::last_set(f - 1)) + 1 : 0u;
}

// floor(2^32 m / f) for m < f <= 2^16: long division in base 2^16, two
// 32-bit divisions (each dividend below 2^32, the quotient below 2^32 as m
// < f) where the 64-bit quotient takes the device's 64-bit division
// routine (its dividend is at least 2^32, so never its 32-bit shortcut).
TANDEM_HD std::uint32_t scaled_quotient(std::uint32_t m, std::uint32_t f) {
  const std::uint32_t hi = m << 16;
  const std::uint32_t q1 = hi / f, r1 = hi - q1 * f;
  return (q1 << 16) + (r1 << 16) / f;
}

TANDEM_HD EncSym make_enc_sym(std::uint32_t f, std::uint32_t cum, std::uint32_t scale_bits) {
  if (f == 0) return {0, 0, 0, 0};
  const std::uint32_t s = ceil_log2(f);
  // f <= 2^scale_bits <= 2^12; 2^s - f < f (s = ceil(log2 f)).
  const std::uint64_t rcp = std::uint64_t{scaled_quotient((1u << s) - f, f)} + 1;
  const std::uint64_t emit = (static_cast<std::uint64_t>(f) << (32 - scale_bits)) - 1;
  return {static_cast<std::uint32_t>(rcp), static_cast<std::uint32_t>(emit), cum,
          s | (((1u << scale_bits) - f) << 16)};
}

// floor(x / f) for any 32-bit x: with t = floor(x rcp / 2^32) <= x, it is
// floor((t + x) / 2^s), the sum taken in 33 bits (an add with carry and a
// funnel shift on the device; the shift uses sc's low 5 bits, which hold s).
TANDEM_HD std::uint32_t divide(std::uint32_t x, const EncSym& e) {
  const std::uint64_t sum = std::uint64_t{mulhi(x, e.rcp)} + x;
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(static_cast<std::uint32_t>(sum), static_cast<std::uint32_t>(sum >> 32), e.sc);
#else
  return static_cast<std::uint32_t>(sum >> (e.sc & 31u));
#endif
}

// The state before coding the symbol of e into state x (x at most e.emit).
TANDEM_HD std::uint32_t encode_step(std::uint32_t x, const EncSym& e) {
  return x + e.cum + divide(x, e) * (e.sc >> 16);
}

// The encoding table of freq (summing to 2^scale_bits): 256 entries.
TANDEM_HD void build_enc_table(const Warp& w, const std::uint32_t* freq, std::uint32_t scale_bits, EncSym* table) {
  const Lanes<std::uint32_t> part = w.map([&](int l) {
    std::uint32_t sum = 0;
    for (int j = 0; j < kSymbolsPerLane; ++j) sum += freq[l * kSymbolsPerLane + j];
    return sum;
  });
  const Lanes<std::uint32_t> base = w.exclusive_sum(part);
  w.each([&](int l) {
    std::uint32_t cum = base[l];
    for (int j = 0; j < kSymbolsPerLane; ++j) {
      const int s = l * kSymbolsPerLane + j;
      table[s] = make_enc_sym(freq[s], cum, scale_bits);
      cum += freq[s];
    }
  });
}

// Decoding slots: slot j (0 <= j < 2^scale_bits) of the symbol s whose
// range [cum, cum + f) holds j tells the step s, f and j - cum. Two layouts
// of the same size for the largest table of each (16 KiB: a thread block
// keeps one in shared memory):
//  - a word, s | (f - 1) << 8 | (j - cum) << 20, for any scale (up to 12
//    bits; f - 1 because f = 4096 needs 13 bits);
//  - a WideSlot of two words, f and s | (j - cum) << 8, for scales up to
//    kMaxWideScaleBits: the step's new state is then one multiply-add of
//    ready fields and a shift, where the word costs three more operations
//    to take its fields apart.
// slot_step gives the state after the slot's step and returns a word whose
// low byte is the symbol.
TANDEM_HD std::uint32_t slot_entry(std::uint32_t symbol, std::uint32_t f, std::uint32_t offset) {
  return symbol | ((f - 1) << 8) | (offset << 20);
}
struct alignas(8) WideSlot {
  std::uint32_t f;
  std::uint32_t symbol_offset;
};
inline constexpr std::uint32_t kMaxWideScaleBits = 11;
TANDEM_HD WideSlot wide_slot_entry(std::uint32_t symbol, std::uint32_t f, std::uint32_t offset) {
  return {f, symbol | (offset << 8)};
}
TANDEM_HD void set_slot(std::uint32_t* slot, std::uint32_t symbol, std::uint32_t f, std::uint32_t offset) {
  *slot = slot_entry(symbol, f, offset);
}
TANDEM_HD void set_slot(WideSlot* slot, std::uint32_t symbol, std::uint32_t f, std::uint32_t offset) {
  *slot = wide_slot_entry(symbol, f, offset);
}

// Fills slots [first, first + span) (span a multiple of 32) from fc, a
// valid table's 256 entries f | cum << 16. Slot j belongs to the last
// symbol whose cum is <= j (absent symbols share the next one's and are
// passed over). The warp fills 32 slots at a time: each lane finds the
// symbol of its first slot by a binary search, then walks up the symbols
// as its slots go up by 32 (a step or two where a search takes eight). The
// walk ends: j < 2^scale_bits, the last symbol's cum + f.
template <class Slot>
TANDEM_HD void fill_slots(const Warp& w, const std::uint32_t* fc, std::uint32_t first, std::uint32_t span, Slot* slots) {
  w.each([&](int l) {
    const std::uint32_t j0 = first + static_cast<std::uint32_t>(l);
    std::uint32_t lo = 0, hi = kSymbols;  // the first symbol whose cum exceeds j0: in (lo, hi]
    while (lo < hi) {
      const std::uint32_t mid = (lo + hi) / 2;
      if ((fc[mid] >> 16) <= j0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    std::uint32_t s = lo - 1;
    std::uint32_t e = fc[s];
    for (std::uint32_t j = j0; j < first + span; j += simt::kWarpSize) {
      while (j >= (e >> 16) + (e & 0xFFFFu)) e = fc[++s];
      set_slot(slots + j, s, e & 0xFFFFu, j - (e >> 16));
    }
  });
}

TANDEM_HD std::uint32_t slot_step(std::uint32_t e, std::uint32_t scale_bits, std::uint32_t* x) {
  *x = (((e >> 8) & 0xFFFu) + 1) * (*x >> scale_bits) + (e >> 20);
  return e;
}
TANDEM_HD std::uint32_t slot_step(const WideSlot& e, std::uint32_t scale_bits, std::uint32_t* x) {
  *x = e.f * (*x >> scale_bits) + (e.symbol_offset >> 8);
  return e.symbol_offset;
}

// ------------------------------------------------------------- chunks ----

// ---------------------------------------------------------- staging ----
//
// The chunk coders read their input (the encoder a chunk's bytes, the
// decoder its words) through a per-warp ring of kRingBytes in memory the
// warp shares (shared memory on the device), filled kRingHalf bytes at a
// time by coalesced aligned 4-byte loads. A step then waits on a
// shared-memory load instead of a global one, and the global loads are
// issued a whole half at a time, well ahead of the steps that use them.
//
// Positions are relative to the 4-byte boundary at or below the source's
// first byte: the source's byte j is at position j + align, align =
// source address % 4, and position r lives at ring[r % kRingBytes]. A half
// covers positions [p, p + kRingHalf), p a multiple of kRingHalf.
inline constexpr std::uint32_t kRingBytes = 1024;
inline constexpr std::uint32_t kRingHalf = kRingBytes / 2;
inline constexpr std::uint32_t kRingLoads = kRingHalf / (4 * simt::kWarpSize);  // 4-byte loads per lane per half

// Steps the chunk coders run as one unrolled group where every lane codes a
// symbol: the ring's refill test, the loop's test and the address
// arithmetic are paid once a group instead of once a step. A group takes at
// most kUnroll * 32 words or bytes of the ring, within a half
// (the refill arguments below need kUnroll * 32 <= kRingHalf / 2).
inline constexpr std::uint32_t kUnroll = 8;
static_assert(kUnroll * simt::kWarpSize * 2 <= kRingHalf, "a group's words fit half a ring");

// The encoder's ring repeats its last kRingMirror bytes just below its
// start, so that a lane reads a group's bytes (32 apart, going down) at
// constant offsets from one address even where they wrap around the ring.
// Its storage: kEncRingBytes, the ring proper at offset kRingMirror.
inline constexpr std::uint32_t kRingMirror = kUnroll * simt::kWarpSize;
inline constexpr std::uint32_t kEncRingBytes = kRingMirror + kRingBytes;

TANDEM_HD std::uint32_t ring_align(const std::uint8_t* src) {
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(src) & 3u);
}

// A half's 4-byte loads (kRingLoads a lane), taken by ring_load and put
// into the ring by ring_store: a coder issues the loads of its next half
// right after a refill and stores them at the next one, so the loads are
// in flight while it codes, and a refill waits on none.
struct RingLoads {
  std::uint32_t v[kRingLoads];
};

// Loads the half at position p of the source src[0, len) (align =
// ring_align(src)) for the encoder's ring; positions outside the source
// read as zero. Reads nothing outside src[0, len).
TANDEM_HD Lanes<RingLoads> ring_load(const Warp& w, const std::uint8_t* src, std::uint32_t len, std::uint32_t align,
                                     std::uint32_t p) {
  const std::uint32_t end = align + len;  // positions of the source: [align, end)
  return w.map([&](int l) {
    RingLoads r;
    if (p >= align && p + kRingHalf <= end) {  // the whole half lies in the source (the same in every lane)
      TANDEM_UNROLL
      for (std::uint32_t j = 0; j < kRingLoads; ++j) {
        r.v[j] = simt::load_aligned_u32(src + (p + 4 * (static_cast<std::uint32_t>(l) + simt::kWarpSize * j) - align));
      }
      return r;
    }
    TANDEM_UNROLL
    for (std::uint32_t j = 0; j < kRingLoads; ++j) {
      const std::uint32_t q = p + 4 * (static_cast<std::uint32_t>(l) + simt::kWarpSize * j);
      if (q >= align && q + 4 <= end) {
        r.v[j] = simt::load_aligned_u32(src + (q - align));
      } else {
        r.v[j] = 0;
        for (std::uint32_t b = 0; b < 4; ++b) {
          if (q + b >= align && q + b < end) r.v[j] |= std::uint32_t{src[q + b - align]} << (8 * b);
        }
      }
    }
    return r;
  });
}

// Puts the loads of the half at position p into the encoder's ring (ring:
// the ring proper, with kRingMirror bytes of storage below it, which get
// their mirror copy). The caller syncs the warp before (the half's old
// bytes are read) and after (each lane writes its own words).
TANDEM_HD void ring_store(const Warp& w, const Lanes<RingLoads>& loads, std::uint32_t p, std::uint8_t* ring) {
  w.each([&](int l) {
    TANDEM_UNROLL
    for (std::uint32_t j = 0; j < kRingLoads; ++j) {
      const std::uint32_t q = p + 4 * (static_cast<std::uint32_t>(l) + simt::kWarpSize * j);
      const std::uint32_t r = q & (kRingBytes - 1);
      simt::store_aligned_u32(ring + r, loads[l].v[j]);
      if (r >= kRingBytes - kRingMirror) simt::store_aligned_u32(ring - (kRingBytes - r), loads[l].v[j]);
    }
  });
}

TANDEM_HD std::uint32_t ring_byte(const std::uint8_t* ring, std::uint32_t r) { return ring[r & (kRingBytes - 1)]; }

// The decoder's words go through the ring by word index instead: word k of
// the source at ring bytes 2k mod kRingBytes, whatever the source's
// alignment, so that taking a word is one aligned 2-byte shared load (not
// two byte loads and a shift). The ring holds kRingWords words.
inline constexpr std::uint32_t kRingWords = kRingBytes / 2;
inline constexpr std::uint32_t kRingHalfWords = kRingHalf / 2;
// The ring repeats its first 32 words after its end, so that the words a
// step takes (at most 32 from the first unused one) lie at one address plus
// each lane's rank, wrap or not. The decoder's ring storage: kDecRingBytes.
inline constexpr std::uint32_t kRingTailWords = simt::kWarpSize;
inline constexpr std::uint32_t kDecRingBytes = kRingBytes + 2 * kRingTailWords;

// A half of words as loaded, joined into the ring's 4-byte words only when
// stored (so that loading waits on nothing). Where the whole half lies in
// the source, v[j] is the aligned 4-byte load at or below the lane's j-th
// 4 bytes; those bytes are then (next load : v[j]) >> 8 * align, the next
// load being the next lane's v[j] (lane 31: lane 0's v[j + 1], or its own
// `after` for the last j). Elsewhere (`joined`) v[j] holds the bytes.
struct WordLoads {
  std::uint32_t v[kRingLoads];
  std::uint32_t after;
  bool joined;
};

// Loads words [k, k + kRingHalfWords) (k a multiple of kRingHalfWords) of
// src[0, len); bytes at len and past it read as zero. Reads nothing
// outside src[0, len): where the half does not lie in it whole, each 4
// bytes are read byte by byte.
TANDEM_HD Lanes<WordLoads> word_ring_load(const Warp& w, const std::uint8_t* src, std::uint32_t len,
                                          std::uint32_t k) {
  const std::uint32_t align = ring_align(src);
  const std::uint32_t span = align ? 8u : 4u;  // bytes the aligned loads of 4 bytes cover
  // The same in every lane.
  const bool whole = 2 * k >= align && 2 * k + kRingHalf - align + (span - 4) <= len;
  return w.map([&](int l) {
    WordLoads r;
    r.joined = !whole;
    r.after = 0;
    TANDEM_UNROLL
    for (std::uint32_t j = 0; j < kRingLoads; ++j) {
      const std::uint32_t q = 2 * k + 4 * (static_cast<std::uint32_t>(l) + simt::kWarpSize * j);  // src[q, q + 4)
      if (whole) {
        r.v[j] = simt::load_aligned_u32(src + (q - align));
      } else {
        std::uint32_t v = 0;
        for (std::uint32_t b = 0; b < 4; ++b) {
          if (q + b < len) v |= std::uint32_t{src[q + b]} << (8 * b);
        }
        r.v[j] = v;
      }
    }
    if (whole && align && l == simt::kWarpSize - 1) {
      r.after = simt::load_aligned_u32(src + (2 * k + kRingHalf - align));
    }
    return r;
  });
}

// Puts the loads of words [k, k + kRingHalfWords) into the ring. The
// caller syncs the warp before and after, as for ring_store.
TANDEM_HD void word_ring_store(const Warp& w, const Lanes<WordLoads>& loads, const std::uint8_t* src,
                               std::uint32_t k, std::uint8_t* ring) {
  const std::uint32_t align = ring_align(src);
  const bool join = align != 0 && !loads[0].joined;  // the same in every lane
  const Lanes<int> next_lane = w.map([](int l) { return (l + 1) & (simt::kWarpSize - 1); });
  TANDEM_UNROLL
  for (std::uint32_t j = 0; j < kRingLoads; ++j) {
    const Lanes<std::uint32_t> v = w.map([&](int l) { return loads[l].v[j]; });
    Lanes<std::uint32_t> hi{};
    if (join) {
      const Lanes<std::uint32_t> right = w.shfl(v, next_lane);
      const Lanes<std::uint32_t> wrap =
          w.map([&](int l) { return j + 1 < kRingLoads ? loads[l].v[j + 1] : loads[l].after; });
      // Lane 31 takes lane 0's v[j + 1]; for the last j its own `after`.
      const std::uint32_t first = w.shfl(wrap, 0);
      hi = w.map([&](int l) {
        if (l < simt::kWarpSize - 1) return right[l];
        return j + 1 < kRingLoads ? first : loads[l].after;
      });
    }
    w.each([&](int l) {
      const std::uint32_t q = 2 * k + 4 * (static_cast<std::uint32_t>(l) + simt::kWarpSize * j);
      const std::uint32_t r = q & (kRingBytes - 1);
      const std::uint32_t word = join ? simt::funnel(v[l], hi[l], align) : v[l];
      simt::store_aligned_u32(ring + r, word);
      if (r < 2 * kRingTailWords) simt::store_aligned_u32(ring + kRingBytes + r, word);
    });
  }
}

// Word k + rank (rank < kRingTailWords) from `at`, ring_at(ring, k).
TANDEM_HD const std::uint8_t* ring_at(const std::uint8_t* ring, std::uint32_t k) {
  return ring + 2 * (k & (kRingWords - 1));
}
TANDEM_HD std::uint32_t ring_word(const std::uint8_t* at, std::uint32_t rank) {
  return simt::load_aligned<std::uint16_t>(at + 2 * rank);
}

// Lane l's symbols in a chunk of n bytes with K lanes (0 for l >= K).
TANDEM_HD std::uint32_t lane_symbols(std::uint32_t l, std::uint32_t n, std::uint32_t K) {
  return l < K ? (n - l + K - 1) / K : 0u;
}
TANDEM_HD std::uint32_t raw_symbols(std::uint32_t count) {
  return count < rans::kRawSymbols ? count : rans::kRawSymbols;
}

// Encodes the chunk in[0, n) (n >= 1) with K lanes (1 <= K <= min(32, n)):
// lane l's final state (>= 2^16) to states[l], the words to words_end[-W, 0)
// (room: words_end[-n, 0)). Returns
// W (at most one word per coded symbol). table: encode entries of 256 symbols.
// ring: kEncRingBytes, 4-aligned, the warp's own, for staging the chunk's bytes.
TANDEM_HD std::uint32_t encode_chunk(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t K,
                                     std::uint32_t scale_bits, const EncSym* table, std::uint32_t* states,
                                     std::uint16_t* words_end, std::uint8_t* ring_storage) {
  (void)scale_bits;  // in the table's entries
  std::uint8_t* const ring = ring_storage + kRingMirror;
  const Lanes<std::uint32_t> coded = w.map([&](int l) {
    const std::uint32_t c = lane_symbols(static_cast<std::uint32_t>(l), n, K);
    return c - raw_symbols(c);
  });
  Lanes<std::uint32_t> x = w.map([&](int l) {
    const std::uint32_t lane = static_cast<std::uint32_t>(l);
    const std::uint32_t raw = raw_symbols(lane_symbols(lane, n, K));
    std::uint32_t v = rans::kStateLow;
    for (std::uint32_t i = 0; i < raw; ++i) v |= std::uint32_t{in[lane + (coded[l] + i) * K]} << (8 * i);
    return v;
  });
  const std::uint32_t steps = w.max(coded);
  // Steps below `full` code a symbol in each of 32 lanes: all of a whole
  // chunk's but its top one when n % 32 != 0. They skip the per-lane tests.
  const std::uint32_t full = K == simt::kWarpSize ? w.min(coded) : 0u;
  // Steps go down through the chunk: step t reads positions [align + tK,
  // align + tK + K), and the ring holds [low, low + kRingBytes). Once a step
  // reaches below low, nothing above low + kRingHalf is read again (K <=
  // 32), so that half takes the one below. A group of kUnroll steps tests
  // its lowest position once: when it is below low, the group's highest is
  // below low + kUnroll * 32 <= low + kRingHalf (the steps before it read
  // down to low), and its lowest at least low - kUnroll * 32, inside the
  // one refill.
  const std::uint32_t align = ring_align(in);
  std::uint32_t low = 0;
  Lanes<RingLoads> next_half{};  // the half below low, loaded ahead
  const auto load_next = [&] {
    if (low >= kRingHalf) next_half = ring_load(w, in, n, align, low - kRingHalf);
  };
  if (steps > 0) {
    const std::uint32_t top = (align + steps * K + kRingHalf - 1) / kRingHalf * kRingHalf;
    ring_store(w, ring_load(w, in, n, align, top - kRingHalf), top - kRingHalf, ring);
    low = top >= kRingBytes ? top - kRingBytes : 0;
    if (top >= kRingBytes) ring_store(w, ring_load(w, in, n, align, low), low, ring);
    w.sync();
    load_next();
  }
  const auto refill_below = [&](std::uint32_t lowest) {
    if (lowest < low) {
      w.sync();
      low -= kRingHalf;
      ring_store(w, next_half, low, ring);
      w.sync();
      load_next();
    }
  };
  // The words written so far: base[pos, n), where base = words_end - n (a
  // chunk writes at most a word a symbol). A step moves pos down by its
  // count of words (the same in every lane), and each emitting lane writes
  // at pos plus its rank among them: a 32-bit sum and one wide product for
  // the address; the store and the state's shift are predicated.
  std::uint16_t* const base = simt::opaque(words_end - n);
  std::uint32_t pos = n;
  const Lanes<std::uint32_t> below = w.map([](int l) { return (1u << l) - 1u; });  // the lanes below l
  // Step t, lane l's symbol symbol_at(l). `checked`: some lanes may have no
  // symbol at t (tested per lane); otherwise K = 32 and every lane codes one.
  // An absent lane's entry is all zero, with which encode_step keeps x.
  const auto step = [&](std::uint32_t t, auto checked, auto symbol_at) {
    constexpr bool kChecked = decltype(checked)::value;
    const auto active = [&](int l) { return !kChecked || t < coded[l]; };
    const Lanes<EncSym> e = w.map([&](int l) { return active(l) ? table[symbol_at(l)] : EncSym{0, 0, 0, 0}; });
    const Lanes<bool> emit = w.map([&](int l) { return active(l) && x[l] > e[l].emit; });
    const std::uint32_t mask = w.ballot(emit);
    pos -= static_cast<std::uint32_t>(simt::popcount(mask));
    w.each([&](int l) {
      const std::uint32_t v = x[l];
      if (emit[l]) {
        simt::store_global_u16(base + (pos + static_cast<std::uint32_t>(simt::popcount(mask & below[l]))),
                               static_cast<std::uint16_t>(v));
      }
      x[l] = encode_step(emit[l] ? v >> 16 : v, e[l]);
    });
  };
  const auto at_position = [&](std::uint32_t t) {
    return [&, t](int l) { return ring_byte(ring, align + static_cast<std::uint32_t>(l) + t * K); };
  };
  std::uint32_t t = steps;
  for (; t > full; --t) {
    refill_below(align + (t - 1) * K);
    step(t - 1, std::true_type{}, at_position(t - 1));
  }
  for (; t >= kUnroll; t -= kUnroll) {
    refill_below(align + (t - kUnroll) * K);
    // Lane l's byte of step t - 1; those of the group's later steps lie 32,
    // 64, ... bytes below it (the mirror covers a wrap).
    const Lanes<const std::uint8_t*> top = w.map([&](int l) -> const std::uint8_t* {
      return ring + ((align + static_cast<std::uint32_t>(l) + (t - 1) * simt::kWarpSize) & (kRingBytes - 1));
    });
    TANDEM_UNROLL
    for (std::uint32_t j = 0; j < kUnroll; ++j) {
      step(t - 1 - j, std::false_type{}, [&](int l) { return *(top[l] - j * simt::kWarpSize); });
    }
  }
  for (; t > 0; --t) {
    refill_below(align + (t - 1) * K);
    step(t - 1, std::false_type{}, at_position(t - 1));
  }
  w.each([&](int l) {
    if (static_cast<std::uint32_t>(l) < K) states[l] = x[l];
  });
  return n - pos;
}

// A chunk's states on the wire: a nibble per lane (low nibble first) of
// b - 16, where b (16..31) is the number of bits below the state's top bit;
// then those b bits of each state, lanes in order, lowest bit first, padded
// with zeros to a byte. states: K states, each >= 2^16.
TANDEM_HD std::uint32_t state_bytes(const std::uint32_t* states, std::uint32_t K) {
  std::uint32_t bits = 0;
  for (std::uint32_t l = 0; l < K; ++l) bits += static_cast<std::uint32_t>(simt::last_set(states[l]));
  return (K + 1) / 2 + (bits + 7) / 8;
}
// The same from state_at(l), lane l's state (called for l < K only, in an
// order that does not depend on the states: on the device every lane of a
// warp may run this with a shuffle for state_at); the bytes go to out only
// when `store`.
template <class StateAt>
TANDEM_HD void pack_states_with(StateAt state_at, std::uint32_t K, std::uint8_t* out, bool store) {
  const auto nibble = [&](std::uint32_t l) {
    return l < K ? static_cast<std::uint32_t>(simt::last_set(state_at(l))) - 16 : 0u;
  };
  for (std::uint32_t b = 0; b < (K + 1) / 2; ++b) {
    const auto v = static_cast<std::uint8_t>(nibble(2 * b) | (nibble(2 * b + 1) << 4));
    if (store) *out = v;
    ++out;
  }
  std::uint64_t acc = 0;
  std::uint32_t held = 0;
  for (std::uint32_t l = 0; l < K; ++l) {
    const std::uint32_t x = state_at(l);
    const std::uint32_t nb = static_cast<std::uint32_t>(simt::last_set(x));
    acc |= static_cast<std::uint64_t>(x & ((1u << nb) - 1u)) << held;
    held += nb;
    while (held >= 8) {
      if (store) *out = static_cast<std::uint8_t>(acc);
      ++out;
      acc >>= 8;
      held -= 8;
    }
  }
  if (held && store) *out = static_cast<std::uint8_t>(acc);
}
TANDEM_HD void pack_states(const std::uint32_t* states, std::uint32_t K, std::uint8_t* out) {
  pack_states_with([&](std::uint32_t l) { return states[l]; }, K, out, true);
}

// Decodes a chunk of n bytes with K lanes (1 <= K <= min(32, n)) from its
// payload: S bytes of states, then W words (2 bytes each), all of it
// readable. slots: 2^scale_bits decoding slots (Slot: std::uint32_t, or
// WideSlot when scale_bits <= kMaxWideScaleBits). ring: kDecRingBytes, 4-aligned,
// the warp's own, for staging the words. Writes out[0, n) and nothing else
// (on failure some of it).
template <class Slot>
TANDEM_HD Error decode_chunk(const Warp& w, const std::uint8_t* payload, std::uint32_t K, std::uint32_t S,
                             std::uint32_t W, std::uint32_t n, std::uint32_t scale_bits, const Slot* slots,
                             std::uint8_t* out, std::uint8_t* ring) {
  // The states: their lengths, each lane's place among their bits, checked
  // against S and for zero padding.
  const std::uint32_t nibble_bytes = (K + 1) / 2;
  if ((K & 1) && (payload[K / 2] >> 4) != 0) return Error::bad_states;
  const Lanes<std::uint32_t> nbits = w.map([&](int l) {
    const auto lane = static_cast<std::uint32_t>(l);
    return lane < K ? ((payload[lane / 2] >> (4 * (lane % 2))) & 15u) + 16 : 0u;
  });
  const std::uint32_t total_bits = w.sum(nbits);
  if (nibble_bytes + (total_bits + 7) / 8 != S) return Error::bad_states;
  const std::uint8_t* bits = payload + nibble_bytes;
  if ((total_bits & 7) && (bits[total_bits / 8] >> (total_bits & 7)) != 0) return Error::bad_states;
  const Lanes<std::uint32_t> first_bit = w.exclusive_sum(nbits);
  Lanes<std::uint32_t> x = w.map([&](int l) {
    if (static_cast<std::uint32_t>(l) >= K) return rans::kStateLow;
    const std::uint32_t at = first_bit[l] / 8, end = (total_bits + 7) / 8;
    std::uint64_t v = 0;
    for (std::uint32_t i = 0; i < 5 && at + i < end; ++i) v |= static_cast<std::uint64_t>(bits[at + i]) << (8 * i);
    const std::uint32_t nb = nbits[l];
    return (1u << nb) | (static_cast<std::uint32_t>(v >> (first_bit[l] & 7)) & ((1u << nb) - 1u));
  });
  const std::uint8_t* words = payload + S;
  const Lanes<std::uint32_t> count =
      w.map([&](int l) { return lane_symbols(static_cast<std::uint32_t>(l), n, K); });
  const Lanes<std::uint32_t> coded = w.map([&](int l) { return count[l] - raw_symbols(count[l]); });
  const std::uint32_t steps = w.max(coded);
  // Steps below `full` decode a symbol in each of 32 lanes: all of a whole
  // chunk's but its last one when n % 32 != 0. They skip the per-lane tests.
  const std::uint32_t full = K == simt::kWarpSize ? w.min(coded) : 0u;
  const std::uint32_t slot_mask = (1u << scale_bits) - 1;
  // The ring holds words [filled - kRingWords, filled). A step takes at
  // most 32 words, a group of kUnroll steps kUnroll * 32, tested once
  // before it: when the group could reach past `filled`, the words before
  // filled - kRingHalfWords (below `used`: kUnroll * 32 <= kRingHalfWords)
  // are done with, and one refill covers the group (used <= filled).
  //
  // The steps do not test the words' count: past the W words the ring
  // holds zeros, and `used` only grows, so "used > W at the end" is exactly
  // "some step took more words than were left", which the format calls
  // words_exhausted, as a test at every step would (nothing else can fail
  // before the end). Decoding stays bounded: n steps whatever the data.
  const std::uint32_t word_bytes = 2 * W;
  word_ring_store(w, word_ring_load(w, words, word_bytes, 0), words, 0, ring);
  word_ring_store(w, word_ring_load(w, words, word_bytes, kRingHalfWords), words, kRingHalfWords, ring);
  std::uint32_t filled = kRingWords;
  w.sync();
  // Words [filled, filled + kRingHalfWords), loaded ahead.
  Lanes<WordLoads> next_half = word_ring_load(w, words, word_bytes, filled);
  std::uint32_t used = 0;
  const Lanes<std::uint32_t> below = w.map([](int l) { return (1u << l) - 1u; });  // the lanes below l
  const auto refill_for = [&](std::uint32_t most) {
    if (used + most > filled) {
      w.sync();
      word_ring_store(w, next_half, words, filled, ring);
      filled += kRingHalfWords;
      w.sync();
      next_half = word_ring_load(w, words, word_bytes, filled);
    }
  };
  // Step t, its output byte in lane l at dst(l). `checked`: some lanes may
  // have no symbol at t (tested per lane); otherwise K = 32 and every lane
  // decodes one.
  const auto step = [&](std::uint32_t t, auto checked, auto dst) {
    constexpr bool kChecked = decltype(checked)::value;
    const auto active = [&](int l) { return !kChecked || t < coded[l]; };
    w.each([&](int l) {
      if (active(l)) {
        *dst(l) = static_cast<std::uint8_t>(slot_step(slots[x[l] & slot_mask], scale_bits, &x[l]));
      }
    });
    const Lanes<bool> need = w.map([&](int l) { return active(l) && x[l] < rans::kStateLow; });
    const std::uint8_t* const at = ring_at(ring, used);  // ready before the ballot
    const std::uint32_t mask = w.ballot(need);
    // Every lane reads the word at its rank (inside the ring and its tail
    // whatever the rank); those that need one take it: no branch.
    w.each([&](int l) {
      const std::uint32_t word =
          simt::computed(ring_word(at, static_cast<std::uint32_t>(simt::popcount(mask & below[l]))));
      x[l] = need[l] ? (x[l] << 16) | word : x[l];
    });
    used += static_cast<std::uint32_t>(simt::popcount(mask));
  };
  std::uint32_t t = 0;
  for (; t + kUnroll <= full; t += kUnroll) {
    refill_for(kUnroll * simt::kWarpSize);
    // One pointer a lane for the group; its steps' bytes at constant
    // offsets from it (no 64-bit address arithmetic per step).
    const Lanes<std::uint8_t*> o = w.map([&](int l) { return out + t * simt::kWarpSize + static_cast<std::uint32_t>(l); });
    TANDEM_UNROLL
    for (std::uint32_t j = 0; j < kUnroll; ++j) {
      step(t + j, std::false_type{}, [&](int l) { return o[l] + j * simt::kWarpSize; });
    }
  }
  for (; t < full; ++t) {
    refill_for(simt::kWarpSize);
    step(t, std::false_type{}, [&](int l) { return out + (static_cast<std::uint32_t>(l) + t * simt::kWarpSize); });
  }
  for (; t < steps; ++t) {
    refill_for(simt::kWarpSize);
    step(t, std::true_type{}, [&](int l) { return out + (static_cast<std::uint32_t>(l) + t * K); });
  }
  if (used > W) return Error::words_exhausted;
  if (used != W) return Error::words_left_over;
  const Lanes<bool> bad = w.map([&](int l) {
    const std::uint32_t raw = raw_symbols(count[l]);
    return static_cast<std::uint32_t>(l) < K && ((x[l] >> 16) != 1u || ((x[l] & 0xFFFFu) >> (8 * raw)) != 0);
  });
  if (w.ballot(bad)) return Error::bad_final_state;
  w.each([&](int l) {
    const std::uint32_t raw = raw_symbols(count[l]);
    for (std::uint32_t i = 0; i < raw; ++i) {
      out[static_cast<std::uint32_t>(l) + (coded[l] + i) * K] = static_cast<std::uint8_t>(x[l] >> (8 * i));
    }
  });
  return Error::ok;
}

// ---------------------------------------------------------- directory ----

// Checks every chunk's entry and puts chunk i's payload offset (from the
// stream's start) in offsets[i]; checks that the last payload ends the
// stream in[0, n). h: a header parse_header accepted for this stream.
TANDEM_HD Error read_directory(const Warp& w, const std::uint8_t* in, std::size_t n, const Header& h,
                               std::uint64_t* offsets) {
  const std::uint8_t* dir = in + directory_at(h);
  std::uint64_t base = payloads_at(h);
  for (std::uint32_t first = 0; first < h.chunk_count; first += simt::kWarpSize) {
    const Lanes<bool> bad = w.map([&](int l) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      if (i >= h.chunk_count) return false;
      const Entry e = read_entry(dir, i);
      const std::uint32_t len = chunk_length(h, i);
      return e.lanes < 1 || e.lanes > h.lanes || e.lanes > len || e.words > len ||
             e.state_bytes < rans::min_state_bytes(e.lanes) || e.state_bytes > rans::max_state_bytes(e.lanes);
    });
    if (w.ballot(bad)) return Error::bad_directory;
    const Lanes<std::uint32_t> size = w.map([&](int l) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      if (i >= h.chunk_count) return 0u;
      const Entry e = read_entry(dir, i);
      return e.state_bytes + 2u * e.words;
    });
    const Lanes<std::uint32_t> before = w.exclusive_sum(size);
    w.each([&](int l) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      if (i < h.chunk_count) offsets[i] = base + before[l];
    });
    base += w.sum(size);
  }
  if (base > n) return Error::truncated;
  if (base < n) return Error::trailing_bytes;
  return Error::ok;
}

// A whole stream's checks before its chunks decode: header, output
// capacity, table (into freq, 256 entries; the header and the table are
// read through head_words, kStageWords, with scratch, kParseScratchBytes;
// all three in memory the warp shares) and
// directory (into offsets, chunk_count entries, which the caller sizes from
// the header: parse it first, or bound it by the capacity).
TANDEM_HD Error prepare_stream(const Warp& w, const std::uint8_t* in, std::size_t n, std::size_t capacity,
                               Header* h, std::uint32_t* freq, std::uint32_t* head_words, std::uint8_t* scratch,
                               std::uint64_t* offsets) {
  stage_head(w, in, n, head_words);
  w.sync();
  Error e = parse_header(staged_bytes(head_words), n, h);
  if (e != Error::ok) return e;
  if (h->length > capacity) return Error::output_too_small;
  if (h->length == 0) return Error::ok;
  e = parse_codes(w, head_words, h->table_bytes, h->scale_bits, scratch, freq);
  if (e != Error::ok) return e;
  return read_directory(w, in, n, *h, offsets);
}

}  // namespace tandem::gpu::ransk
