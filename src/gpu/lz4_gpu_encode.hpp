// The LZ4 block encoder that the GPU runs: one warp per block.
//
// The warp walks the block 32 positions at a time. For all 32 at once it hashes
// the next 4 bytes, takes the newest earlier position with the same hash (from
// the warp's hash table in shared memory, or from a lower lane of the same step
// through a match-any), and verifies the candidate's bytes. A ballot then gives
// the parse its next match start: the lowest verified position not inside the
// previous match. The match is extended forwards and backwards 32 bytes per
// step, and the sequence is emitted by the warp. The parse is greedy like
// liblz4's, but tests every position instead of skipping ahead on misses, so
// its output is close to liblz4's default level in size.
//
// Output is a standard LZ4 block: the last match starts at least 12 bytes
// before the end and ends at least 5 bytes before it; offsets are below 64 KiB.
// It is a function of the input alone: the same item gives the same bytes on
// the GPU and in the CPU emulation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/simt.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu::lz4k {

using simt::Lanes;
using simt::Warp;

inline constexpr std::uint32_t kEncMinMatch = 4;
inline constexpr std::uint32_t kLastLiterals = 5;
inline constexpr std::uint32_t kMfLimit = 12;
inline constexpr std::uint32_t kMaxOffset = 65535;
// Hash tables: 2^12 entries for blocks up to 16 KiB, 2^13 above (as liblz4
// uses for blocks under 64 KiB): more entries keep more candidates, fewer keep
// more warps resident per multiprocessor.
inline constexpr int kMaxHashLog = 13;
// The table shape follows each block's own size, never the batch's, so that a
// block compresses to the same bytes in any batch: class 0 (up to 16 KiB)
// 2^12 16-bit entries, class 1 (up to 64 KiB) 2^13 16-bit, class 2 2^13 32-bit.
TANDEM_HD constexpr int table_class(std::size_t n) { return n <= 16384 ? 0 : n <= 65536 ? 1 : 2; }
TANDEM_HD constexpr std::size_t table_bytes(int table_class) {
  return table_class == 0 ? 8192 : table_class == 1 ? 16384 : 32768;
}

// lz4_max_compressed_size, for device code.
TANDEM_HD std::size_t max_block_size(std::size_t n) { return n + n / 255 + 16; }

template <int HashLog>
TANDEM_HD std::uint32_t hash4(std::uint32_t seq) {
  return (seq * 2654435761u) >> (32 - HashLog);
}

// Bytes that equal in[a + k] == in[b + k] for k = 0.. while a + k < limit (b < a).
TANDEM_HD std::uint32_t extend_forward(const Warp& w, const std::uint8_t* in, std::uint32_t a, std::uint32_t b,
                                       std::uint32_t limit) {
  for (std::uint32_t k = 0;; k += 32) {
    const std::uint32_t stop = w.ballot(w.map([&](int l) {
      const std::uint32_t x = a + k + static_cast<std::uint32_t>(l);
      return x >= limit || in[x] != in[b + k + static_cast<std::uint32_t>(l)];
    }));
    if (stop) return k + static_cast<std::uint32_t>(simt::first_set(stop));
  }
}

// Bytes that equal in[a - j] == in[b - j] for j = 1..most (b < a).
TANDEM_HD std::uint32_t extend_backward(const Warp& w, const std::uint8_t* in, std::uint32_t a, std::uint32_t b,
                                        std::uint32_t most) {
  if (most == 0 || in[a - 1] != in[b - 1]) return 0;
  for (std::uint32_t k = 0;; k += 32) {
    const std::uint32_t stop = w.ballot(w.map([&](int l) {
      const std::uint32_t j = k + static_cast<std::uint32_t>(l) + 1;
      return j > most || in[a - j] != in[b - j];
    }));
    if (stop) return k + static_cast<std::uint32_t>(simt::first_set(stop));
  }
}

// Length-extension bytes for a length field holding v (the token keeps 15 of it).
TANDEM_HD std::uint32_t extension_size(std::uint32_t v) { return v >= 15 ? (v - 15) / 255 + 1 : 0; }

// Writes the e extension bytes of a field holding v at out: 255s, then the rest.
TANDEM_HD void write_extension(const Warp& w, std::uint8_t* out, std::uint32_t v, std::uint32_t e) {
  const std::uint8_t last = static_cast<std::uint8_t>((v - 15) % 255);
  w.each([&](int l) {
    for (std::uint32_t j = static_cast<std::uint32_t>(l); j < e; j += 32) out[j] = j + 1 < e ? 255 : last;
  });
}

// Appends one sequence at out[*op]: the literals in[anchor, anchor + lit) and,
// unless it is the last, a match of ml bytes at `offset`. False when it would
// not fit before cap.
TANDEM_HD bool emit_sequence(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                             std::uint32_t cap, std::uint32_t* op, std::uint32_t anchor, std::uint32_t lit,
                             std::uint32_t offset, std::uint32_t ml, bool last) {
  const std::uint32_t lit_ext = extension_size(lit);
  const std::uint32_t mcode = last ? 0 : ml - kEncMinMatch;
  const std::uint32_t match_ext = extension_size(mcode);
  const std::uint64_t need = 1ull + lit_ext + lit + (last ? 0 : 2 + match_ext);
  if (need > cap - *op) return false;
  std::uint8_t* o = out + *op;
  const std::uint32_t token = ((lit < 15 ? lit : 15) << 4) | (mcode < 15 ? mcode : 15);
  w.each([&](int l) {
    if (l == 0) o[0] = static_cast<std::uint8_t>(token);
    if (!last && l == 1) o[1 + lit_ext + lit] = static_cast<std::uint8_t>(offset);
    if (!last && l == 2) o[2 + lit_ext + lit] = static_cast<std::uint8_t>(offset >> 8);
  });
  if (lit_ext) write_extension(w, o + 1, lit, lit_ext);
  simt::warp_copy(w, o + 1 + lit_ext, in + anchor, lit, in, in + n);
  if (match_ext) write_extension(w, o + 3 + lit_ext + lit, mcode, match_ext);
  *op += static_cast<std::uint32_t>(need);
  return true;
}

// Sets the warp's hash table to zeros (position 0: a candidate like any other,
// verified before use).
template <class Pos, int HashLog>
TANDEM_HD void clear_table(const Warp& w, Pos* table) {
  constexpr std::uint32_t kTableEntries = 1u << HashLog;
#if defined(__CUDA_ARCH__)
  uint4* t = reinterpret_cast<uint4*>(table);
  constexpr std::uint32_t kVectors = kTableEntries * sizeof(Pos) / sizeof(uint4);
  w.each([&](int l) {
    for (std::uint32_t i = static_cast<std::uint32_t>(l); i < kVectors; i += 32) t[i] = make_uint4(0, 0, 0, 0);
  });
#else
  (void)w;
  std::memset(table, 0, kTableEntries * sizeof(Pos));
#endif
}

// Compresses in[0, n) into out[0, cap). Pos is the hash table's position type:
// 16 bits for blocks up to 64 KiB, else 32. table has 2^HashLog entries,
// owned by this warp. *out_size is 0 unless the block fit.
template <class Pos, int HashLog>
TANDEM_HD ItemStatus encode_block(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                  std::uint32_t cap, Pos* table, std::uint32_t* out_size) {
  std::uint32_t op = 0;
  std::uint32_t anchor = 0;
  bool fits = true;
  if (n > kMfLimit) {
    clear_table<Pos, HashLog>(w, table);
    w.sync();
    const std::uint32_t last_start = n - kMfLimit;  // the last position a match may start at
    const std::uint32_t match_limit = n - kLastLiterals;
    std::uint32_t cur = 0;  // positions before this one are inside the last match
    std::uint32_t tile = 0;
    while (tile <= last_start && fits) {
      const Lanes<bool> valid = w.map([&](int l) { return tile + static_cast<std::uint32_t>(l) <= last_start; });
      const Lanes<std::uint32_t> seq = w.map([&](int l) -> std::uint32_t {
        return valid[l] ? simt::load_u32(in, n, tile + static_cast<std::uint32_t>(l)) : 0u;
      });
      // Lanes past the end get keys no hash can equal.
      const Lanes<std::uint32_t> key = w.map([&](int l) -> std::uint32_t {
        return valid[l] ? hash4<HashLog>(seq[l]) : 0x80000000u | static_cast<std::uint32_t>(l);
      });
      const Lanes<std::uint32_t> older = w.map([&](int l) -> std::uint32_t {
        return valid[l] ? static_cast<std::uint32_t>(table[key[l]]) : 0u;
      });
      const Lanes<std::uint32_t> peers = w.match_any(key);
      w.sync();  // every lane has read the table before any lane writes it
      w.each([&](int l) {
        // The newest position of each hash in this step goes into the table.
        if (valid[l] && (peers[l] >> l) == 1u) table[key[l]] = static_cast<Pos>(tile + static_cast<std::uint32_t>(l));
      });
      const Lanes<std::uint32_t> cand = w.map([&](int l) -> std::uint32_t {
        const std::uint32_t earlier = peers[l] & ((1u << l) - 1u);
        return earlier ? tile + static_cast<std::uint32_t>(simt::last_set(earlier)) : older[l];
      });
      const Lanes<bool> hit = w.map([&](int l) {
        const std::uint32_t q = tile + static_cast<std::uint32_t>(l);
        const std::uint32_t c = cand[l];
        return valid[l] && q >= cur && c < q && q - c <= kMaxOffset && simt::load_u32(in, n, c) == seq[l];
      });
      std::uint32_t starts = w.ballot(hit);
      while (starts) {
        const int f = simt::first_set(starts);
        std::uint32_t p = tile + static_cast<std::uint32_t>(f);
        std::uint32_t c = w.shfl(cand, f);
        std::uint32_t len = kEncMinMatch + extend_forward(w, in, p + kEncMinMatch, c + kEncMinMatch, match_limit);
        const std::uint32_t back = extend_backward(w, in, p, c, p - anchor < c ? p - anchor : c);
        p -= back;
        c -= back;
        len += back;
        if (!emit_sequence(w, in, n, out, cap, &op, anchor, p - anchor, p - c, len, false)) {
          fits = false;
          break;
        }
        anchor = cur = p + len;
        starts = cur - tile >= 32 ? 0u : starts & ~((1u << (cur - tile)) - 1u);
      }
      w.sync();  // table writes land before the next step reads
      tile = cur > tile + 32 ? cur : tile + 32;
    }
  }
  if (fits) fits = emit_sequence(w, in, n, out, cap, &op, anchor, n - anchor, 0, 0, true);
  w.sync();
  *out_size = fits ? op : 0;
  if (!fits) return ItemStatus::output_overflow;
  return op >= n ? ItemStatus::incompressible : ItemStatus::ok;
}

// encode_block with the table shape of the block's class; table has at least
// table_bytes(table_class(n)) bytes.
TANDEM_HD ItemStatus encode_block_any(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                      std::uint32_t cap, void* table, std::uint32_t* out_size) {
  switch (table_class(n)) {
    case 0: return encode_block<std::uint16_t, 12>(w, in, n, out, cap, static_cast<std::uint16_t*>(table), out_size);
    case 1: return encode_block<std::uint16_t, 13>(w, in, n, out, cap, static_cast<std::uint16_t*>(table), out_size);
    default: return encode_block<std::uint32_t, 13>(w, in, n, out, cap, static_cast<std::uint32_t*>(table), out_size);
  }
}

}  // namespace tandem::gpu::lz4k
