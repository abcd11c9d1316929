// The per-page steps that the GPU runs around its LZ4 kernels when it
// compresses and decompresses page batches (pages_gpu.cu), as host/device
// functions over a warp, so that the CPU emulation runs the same code.
//
// Compression: a warp checks its page for one repeated 8-byte word, 512
// bytes a step, stopping at the first step with a difference (most pages
// differ within their first bytes); a fill page is done there, the others
// go to the LZ4 encoder with a capacity of page_max_compressed; after it, a
// page whose block did not fit is copied raw into its slot.
// Decompression: a warp checks its record; a fill page is written, a stored
// page copied; an LZ4 page goes to the LZ4 decoder, which must give exactly
// one page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gpu/simt.hpp"
#include "tandem/pages.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu::pagek {

using simt::Warp;

// page_max_compressed, for device code.
TANDEM_HD std::uint32_t max_block(std::uint32_t page_size) { return page_size - page_size / 8; }

// The check of pages::check_record, for device code.
TANDEM_HD bool record_valid(const PageRecord& r, std::uint32_t page_size) {
  switch (r.kind) {
    case PageKind::zero: return r.length == 0 && r.fill == 0;
    case PageKind::same_fill: return r.length == 0;
    case PageKind::stored: return r.length == page_size;
    case PageKind::lz4: return r.length > 0 && r.length <= max_block(page_size);
  }
  return false;
}

TANDEM_HD PageRecord make_record(PageKind kind, std::uint32_t length, std::uint64_t fill) {
  PageRecord r;
  r.kind = kind;
  r.length = length;
  r.fill = fill;
  return r;
}

TANDEM_HD std::uint64_t load_u64(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const std::uint64_t*>(p);
#else
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
#endif
}

// Whether page (16-byte aligned, page_size a multiple of 512) is one 8-byte
// word repeated; *fill gets the word.
TANDEM_HD bool warp_page_fill(const Warp& w, const std::uint8_t* page, std::uint32_t page_size, std::uint64_t* fill) {
  const std::uint64_t first = load_u64(page);
  for (std::uint32_t at = 0; at < page_size; at += 512) {
    const std::uint32_t differ = w.ballot(w.map([&](int l) {
      const std::uint8_t* q = page + at + 16 * static_cast<std::uint32_t>(l);
      return load_u64(q) != first || load_u64(q + 8) != first;
    }));
    if (differ) return false;
  }
  *fill = first;
  return true;
}

TANDEM_HD PageRecord fill_record(std::uint64_t fill) {
  return make_record(fill == 0 ? PageKind::zero : PageKind::same_fill, 0, fill);
}

// Writes zeros over bytes [from, page_size) of slot (16-byte aligned), the
// warp together: the first bytes up to a 16-byte boundary one a lane, then
// 16-byte words.
TANDEM_HD void warp_zero_tail(const Warp& w, std::uint8_t* slot, std::uint32_t from, std::uint32_t page_size) {
  const std::uint32_t aligned = (from + 15) / 16 * 16;
  const std::uint32_t zero[4] = {0, 0, 0, 0};
  w.each([&](int l) {
    const std::uint32_t x = from + static_cast<std::uint32_t>(l);
    if (x < aligned && x < page_size) slot[x] = 0;
    for (std::uint32_t k = aligned / 16 + static_cast<std::uint32_t>(l); k < page_size / 16; k += simt::kWarpSize) {
      simt::store_aligned_u128(slot + 16 * k, zero);
    }
  });
}

// After the encoder wrote page's block into slot with status and size:
// the page's record, with the page copied raw into slot when its block did
// not fit (slot and page 16-byte aligned). The slot's bytes past the data
// are zeroed, so that a slot never carries bytes of an earlier call.
TANDEM_HD PageRecord finish_compress(const Warp& w, const std::uint8_t* page, std::uint32_t page_size,
                                     std::uint8_t* slot, ItemStatus status, std::size_t size) {
  if (status == ItemStatus::ok && size > 0 && size <= max_block(page_size)) {
    warp_zero_tail(w, slot, static_cast<std::uint32_t>(size), page_size);
    return make_record(PageKind::lz4, static_cast<std::uint32_t>(size), 0);
  }
  simt::warp_copy_phased(w, slot, page, page_size);
  return make_record(PageKind::stored, page_size, 0);
}

// Writes fill through page (16-byte aligned).
TANDEM_HD void warp_write_fill(const Warp& w, std::uint64_t fill, std::uint32_t page_size, std::uint8_t* page) {
  const std::uint32_t word[4] = {static_cast<std::uint32_t>(fill), static_cast<std::uint32_t>(fill >> 32),
                                 static_cast<std::uint32_t>(fill), static_cast<std::uint32_t>(fill >> 32)};
  w.each([&](int l) {
    for (std::uint32_t k = static_cast<std::uint32_t>(l); k < page_size / 16; k += simt::kWarpSize) {
      simt::store_aligned_u128(page + 16 * k, word);
    }
  });
}

// Before the decoder: writes a valid fill or stored page; true when the
// record is a valid LZ4 page, for the decoder.
TANDEM_HD bool prepare_decompress(const Warp& w, const PageRecord& r, const std::uint8_t* slot,
                                  std::uint32_t page_size, std::uint8_t* page) {
  if (!record_valid(r, page_size)) return false;
  switch (r.kind) {
    case PageKind::zero:
    case PageKind::same_fill: warp_write_fill(w, r.fill, page_size, page); return false;
    case PageKind::stored: simt::warp_copy_phased(w, page, slot, page_size); return false;
    default: return true;
  }
}

// After the decoder: the page's status. status and size are the decoder's
// for an LZ4 page and ignored for the others.
TANDEM_HD ItemStatus finish_decompress(const PageRecord& r, std::uint32_t page_size, ItemStatus status,
                                       std::size_t size) {
  if (!record_valid(r, page_size)) return ItemStatus::bad_record;
  if (r.kind != PageKind::lz4) return ItemStatus::ok;
  if (status != ItemStatus::ok) return status;
  return size == page_size ? ItemStatus::ok : ItemStatus::bad_record;
}

// The same, and a page that failed is zeroed (never stale bytes or half a
// decode).
TANDEM_HD ItemStatus finish_decompress_page(const Warp& w, const PageRecord& r, std::uint32_t page_size,
                                            ItemStatus status, std::size_t size, std::uint8_t* page) {
  const ItemStatus s = finish_decompress(r, page_size, status, size);
  if (s != ItemStatus::ok) {
    w.sync();  // the decoder's last writes land before the zeros
    warp_write_fill(w, 0, page_size, page);
  }
  return s;
}

}  // namespace tandem::gpu::pagek
