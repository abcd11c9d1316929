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
// both ends allow it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/simt.hpp"

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
  for (std::uint64_t i = first; i < n; i += step) d[i] = s[i];
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

// The CRC-32 of n bytes at p (initial value and final xor 0xFFFFFFFF, as
// zlib's crc32(0, p, n)), with the 256-entry table.
TANDEM_HD std::uint32_t scan_crc32(const std::uint32_t* table, const std::uint8_t* p, std::uint32_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::uint32_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

}  // namespace tandem::gpu
