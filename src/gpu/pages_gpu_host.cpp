// The page batch calls' sizes, and their GPU steps run on the CPU (the
// emulation that tests compare with the CPU backend).
#include "gpu/lz4_gpu_emulate.hpp"
#include "gpu/pages_gpu_body.hpp"
#include "gpu/pages_gpu_emulate.hpp"
#include "gpu/pages_gpu_layout.hpp"

namespace tandem::gpu {

namespace {
Status page_temp_size(bool compress, std::size_t num_pages, std::size_t page_size, std::size_t* temp_bytes) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  if (!valid_page_size(page_size)) return {StatusCode::invalid_argument, "page size must be 4, 16 or 64 KiB"};
  pagek::PageTemp t;
  if (!pagek::page_temp_layout(compress, num_pages, page_size, &t)) {
    return {StatusCode::invalid_argument, "too many pages"};
  }
  *temp_bytes = t.total;
  return {};
}
}  // namespace

Status pages_compress_temp_size(std::size_t num_pages, std::size_t page_size, std::size_t* temp_bytes) {
  return page_temp_size(true, num_pages, page_size, temp_bytes);
}

Status pages_decompress_temp_size(std::size_t num_pages, std::size_t page_size, std::size_t* temp_bytes) {
  return page_temp_size(false, num_pages, page_size, temp_bytes);
}

PageRecord page_compress_emulated(const std::uint8_t* page, std::size_t page_size, std::uint8_t* slot) {
  const simt::Warp w{};
  const auto p = static_cast<std::uint32_t>(page_size);
  std::uint64_t fill = 0;
  if (pagek::warp_page_fill(w, page, p, &fill)) {
    pagek::warp_zero_tail(w, slot, 0, p);
    return pagek::fill_record(fill);
  }
  std::size_t size = 0;
  const ItemStatus s = lz4_encode_block_emulated(page, page_size, slot, page_max_compressed(page_size), &size);
  return pagek::finish_compress(w, page, p, slot, s, size);
}

ItemStatus page_decompress_emulated(const PageRecord& record, const std::uint8_t* slot, std::size_t page_size,
                                    std::uint8_t* page) {
  const simt::Warp w{};
  const auto p = static_cast<std::uint32_t>(page_size);
  std::size_t size = 0;
  ItemStatus s = ItemStatus::ok;
  if (pagek::prepare_decompress(w, record, slot, p, page)) {
    s = lz4_decode_block_emulated(slot, record.length, page, page_size, &size, DecodeShape::staged);
  }
  return pagek::finish_decompress_page(w, record, p, s, size, page);
}

}  // namespace tandem::gpu
