// The archive scanner's copy kernel, written once for the GPU and its CPU
// emulation: one descriptor per piece of output that needs no decoder.
//   copy         size bytes from src to dst (stored ZIP entries, LZ4 blocks
//                stored raw, zstd raw blocks, the final gather of entries)
//   fill         size bytes of the value src[0] (zstd RLE blocks)
//   unsupported  nothing: a block this kernel cannot decode (a zstd
//                compressed block), reported as such so the host hands it
//                to the CPU
// A descriptor's status is a function of the descriptor alone, so every
// thread that works on it agrees; the bytes are split over `step` workers,
// worker `first` taking bytes first, first + step, ... in 16-byte pieces when
// both ends share their alignment, else in 4-byte words of the destination.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/simt.hpp"
#include "gpu/tar_body.hpp"

namespace tandem::gpu {

enum class ScanCopyMode : std::uint32_t { copy = 0, fill = 1, unsupported = 2 };

enum class ScanCopyStatus : std::int32_t {
  ok = 0,
  unsupported_on_gpu = 1,  // the host decodes this block on the CPU
  invalid_item = 2,        // null pointers with a size, or an unknown mode
};

struct ScanCopyItem {
  const std::uint8_t* src = nullptr;  // device; copy: size bytes, fill: 1 byte
  std::uint8_t* dst = nullptr;        // device; size bytes
  std::uint64_t size = 0;
  ScanCopyMode mode = ScanCopyMode::copy;
};

TANDEM_HD ScanCopyStatus scan_copy_status(const ScanCopyItem& item) {
  if (item.mode == ScanCopyMode::unsupported) return ScanCopyStatus::unsupported_on_gpu;
  if (item.mode != ScanCopyMode::copy && item.mode != ScanCopyMode::fill) return ScanCopyStatus::invalid_item;
  if (item.size != 0 && (item.src == nullptr || item.dst == nullptr)) return ScanCopyStatus::invalid_item;
  return ScanCopyStatus::ok;
}

// Worker `first` of `step` writes its share of the item's bytes. Call only
// for an item whose status is ok.
TANDEM_HD void scan_copy_part(const ScanCopyItem& item, std::uint64_t first, std::uint64_t step) {
  std::uint8_t* const d = item.dst;
  const std::uint64_t n = item.size;
  if (item.mode == ScanCopyMode::fill) {
    const std::uint8_t v = item.src[0];
    for (std::uint64_t i = first; i < n; i += step) d[i] = v;
    return;
  }
  const std::uint8_t* const s = item.src;
  // 16-byte pieces when source and destination share their alignment.
  const std::uintptr_t sa = reinterpret_cast<std::uintptr_t>(s), da = reinterpret_cast<std::uintptr_t>(d);
  if (((sa ^ da) & 15) == 0 && n >= 64) {
    const std::uint64_t head = (16 - (da & 15)) & 15;
    for (std::uint64_t i = first; i < head; i += step) d[i] = s[i];
    const std::uint64_t words = (n - head) / 16;
    struct alignas(16) Piece {
      std::uint64_t a, b;
    };
    const Piece* ws = reinterpret_cast<const Piece*>(s + head);
    Piece* wd = reinterpret_cast<Piece*>(d + head);
    for (std::uint64_t i = first; i < words; i += step) wd[i] = ws[i];
    for (std::uint64_t i = head + words * 16 + first; i < n; i += step) d[i] = s[i];
    return;
  }
  // Otherwise whole aligned words of d, each joined from the two aligned
  // words of s that hold its bytes (a byte at a time, each a load and a
  // store, the final gather of entries ran at about 65 GB/s on the H200),
  // in pieces that fit 32 bits. The share takes at least 4 threads (each
  // of the first 3 copies a byte of the head and of the tail): fewer
  // workers run 4 threads' shares between them.
  const std::uint64_t threads = step < 4 ? step * ((4 + step - 1) / step) : step;
  constexpr std::uint64_t kPiece = std::uint64_t{1} << 30;
  for (std::uint64_t at = 0; at < n; at += kPiece) {
    const auto len = static_cast<std::uint32_t>(n - at < kPiece ? n - at : kPiece);
    for (std::uint64_t t = first; t < threads; t += step) {
      simt::copy_words_share<4>(d + at, s + at, len, s + at, s + at + len, static_cast<std::uint32_t>(t),
                                static_cast<std::uint32_t>(threads));
    }
  }
}

// CRC-32 (the gzip and ZIP polynomial, reflected 0xEDB88320) of pieces of
// the decoded bytes, so that files checked against a CRC need not come back
// to the host: the host joins the pieces' CRCs (zlib's crc32_combine_op).
inline constexpr std::uint32_t kScanCrcPiece = 16u << 10;

struct ScanCrcPiece {
  const std::uint8_t* data = nullptr;  // device; size bytes
  std::uint32_t size = 0;              // at most kScanCrcPiece
  std::uint32_t crc = 0;               // written by the dispatch
};

// Entry i of the byte-at-a-time table.
TANDEM_HD std::uint32_t scan_crc32_table_entry(std::uint32_t i) {
  std::uint32_t c = i;
  for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  return c;
}

// a(x) b(x) modulo the CRC-32 polynomial, both reflected (bit 31 holds x^0),
// as zlib's multmodp.
TANDEM_HD std::uint32_t crc32_multmodp(std::uint32_t a, std::uint32_t b) {
  std::uint32_t p = 0;
  for (std::uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) p ^= b;
    b = (b & 1) ? 0xEDB88320u ^ (b >> 1) : b >> 1;
  }
  return p;
}

// x^(8n) modulo the polynomial: what zlib's crc32_combine_op takes to put n
// bytes after the first CRC, crc(A B) = crc32_multmodp(op, crc(A)) ^ crc(B).
TANDEM_HD std::uint32_t crc32_shift_op(std::uint32_t n) {
  std::uint32_t op = 1u << 31;  // x^0
  std::uint32_t square = 1u << 23;  // x^8, then x^16, x^32, ...
  for (; n != 0; n >>= 1) {
    if (n & 1) op = crc32_multmodp(square, op);
    square = crc32_multmodp(square, square);
  }
  return op;
}

// The CRC-32 of n bytes at p (initial value and final xor 0xFFFFFFFF, as
// zlib's crc32(0, p, n)) by a warp, with the 256-entry table: lane 0 takes
// the first n - 31s bytes, each other lane the next s (a multiple of 4,
// about n / 32, so that every lane's CRC but the first covers the same
// length), then the lanes' CRCs are joined in five rounds, each with one
// operator for all its pairs. (A thread a piece, 16 KiB a byte at a time,
// took 695 us of a scan on the H200.)
TANDEM_HD std::uint32_t scan_crc32_warp(const simt::Warp& w, const std::uint32_t* table, const std::uint8_t* p,
                                        std::uint32_t n) {
  const std::uint32_t s = n / 128 * 4;
  const std::uint32_t r = n - 31 * s;
  simt::Lanes<std::uint32_t> crc = w.map([&](int l) {
    const std::uint32_t from = l == 0 ? 0 : r + static_cast<std::uint32_t>(l - 1) * s;
    const std::uint32_t len = l == 0 ? r : s;
    std::uint32_t c = 0xFFFFFFFFu;
    std::uint32_t i = 0;
    for (; i + 4 <= len; i += 4) {
      c ^= simt::load_u32(p, n, from + i);
      for (int k = 0; k < 4; ++k) c = table[c & 0xFFu] ^ (c >> 8);
    }
    for (; i < len; ++i) c = table[(c ^ p[from + i]) & 0xFFu] ^ (c >> 8);
    return ~c;
  });
  std::uint32_t op = crc32_shift_op(s);  // the lanes d to 2d - 1 after lane 0 of a pair: d * s bytes
  for (int d = 1; d < simt::kWarpSize; d *= 2) {
    const simt::Lanes<std::uint32_t> right = w.shfl(crc, w.map([&](int l) { return l + d < simt::kWarpSize ? l + d : l; }));
    crc = w.map([&](int l) { return l % (2 * d) == 0 ? crc32_multmodp(op, crc[l]) ^ right[l] : crc[l]; });
    op = crc32_multmodp(op, op);
  }
  return w.shfl(crc, 0);
}

// What bytes are, from their first 512 at most: a layer to open or a file.
// The host's scanner asks it of every input (scan_detail::Layer is this
// type); the device asks it of the outputs it decoded, so that only the
// layers come back to the host for their parse.
enum class ScanLayer : std::uint8_t { gzip, lz4, zstd, zip, tar, file };

TANDEM_HD ScanLayer scan_layer_of(const std::uint8_t* p, std::uint64_t n) {
  if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) return ScanLayer::gzip;
  if (n >= 4 && p[0] == 0x04 && p[1] == 0x22 && p[2] == 0x4d && p[3] == 0x18) return ScanLayer::lz4;
  if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd) return ScanLayer::zstd;
  if (n >= 4 && p[0] == 'P' && p[1] == 'K' && ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6))) {
    return ScanLayer::zip;
  }
  if (tar_body::looks_like_tar(p, n)) return ScanLayer::tar;
  return ScanLayer::file;
}

// One output of a check dispatch: its layer, written by the dispatch.
struct ScanLayerJob {
  const std::uint8_t* data = nullptr;  // device; size bytes
  std::uint64_t size = 0;
  ScanLayer layer = ScanLayer::file;
};

}  // namespace tandem::gpu
