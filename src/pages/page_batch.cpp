// Page batches (pages.hpp) on the CPU and, host-resident, on the GPU.
//
// A page is looked at before it is compressed: if every byte equals the byte
// 8 places after it, the page is one 8-byte word repeated (zero or
// same_fill), and that check stops at the first byte that differs, so it
// costs next to nothing for pages that are not. The rest are compressed with
// the GPU encoder's parse: on the GPU by the batched kernels (through the
// shared host engine, which overlaps copies and kernels), on the CPU by its
// scalar twin, which gives the same block byte for byte. A block longer than
// page_max_compressed makes the page stored raw. So both backends give every
// page the same record and bytes.
//
// Decoding checks each record against its kind before it touches the page:
// a lying length or an unknown kind is bad_data for that page alone.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/thread_pool.hpp"
#include "cpu/lz4_block_cpu.hpp"
#include "cpu/lz4_twin.hpp"
#include "gpu/lz4_gpu_emulate.hpp"
#include "gpu/pages_gpu_engine.hpp"
#include "pages/page_codec.hpp"
#include "tandem/pages.hpp"

namespace tandem {

namespace {

// The LZ4 block of a page's bytes into out[0, capacity), as the GPU encoder
// writes it (its scalar twin); 0 when the block does not fit.
std::size_t encode_page_block(const std::uint8_t* in, std::size_t n, std::uint8_t* out, std::size_t capacity) {
  std::size_t size = 0;
  const gpu::ItemStatus s = cpu::lz4_twin_compress(in, n, out, capacity, &size);
  return s == gpu::ItemStatus::ok ? size : 0;
}

Status check_page_size(std::size_t page_size) {
  if (!valid_page_size(page_size)) return {StatusCode::invalid_argument, "page size must be 4, 16 or 64 KiB"};
  return {};
}

bool fits(std::size_t count, std::size_t page_size, std::size_t have) {
  return count <= have / page_size;
}

}  // namespace

const char* page_kind_name(PageKind kind) {
  switch (kind) {
    case PageKind::zero: return "zero";
    case PageKind::same_fill: return "same_fill";
    case PageKind::stored: return "stored";
    case PageKind::lz4: return "lz4";
  }
  return "unknown";
}

bool valid_page_size(std::size_t page_size) {
  return page_size == 4096 || page_size == 16384 || page_size == 65536;
}

namespace pages {

bool page_fill(const std::uint8_t* page, std::size_t page_size, std::uint64_t* fill) {
  if (std::memcmp(page, page + 8, page_size - 8) != 0) return false;
  std::uint64_t w;
  std::memcpy(&w, page, 8);
  *fill = w;
  return true;
}

PageRecord fill_record(std::uint64_t fill) {
  PageRecord r;
  r.kind = fill == 0 ? PageKind::zero : PageKind::same_fill;
  r.fill = fill;
  return r;
}

PageRecord block_record(const std::uint8_t* page, std::size_t page_size, std::size_t block_size,
                        std::uint8_t* out) {
  PageRecord r;
  if (block_size > 0 && block_size <= page_max_compressed(page_size)) {
    r.kind = PageKind::lz4;
    r.length = static_cast<std::uint32_t>(block_size);
  } else {
    r.kind = PageKind::stored;
    r.length = static_cast<std::uint32_t>(page_size);
    std::memcpy(out, page, page_size);
  }
  return r;
}

Status check_record(const PageRecord& r, const void* data, std::size_t page_size) {
  switch (r.kind) {
    case PageKind::zero:
      if (r.length != 0 || r.fill != 0) return {StatusCode::bad_data, "zero page record with a length or a fill"};
      return {};
    case PageKind::same_fill:
      if (r.length != 0) return {StatusCode::bad_data, "same-fill page record with a length"};
      return {};
    case PageKind::stored:
      if (r.length != page_size) return {StatusCode::bad_data, "stored page record whose length is not the page size"};
      break;
    case PageKind::lz4:
      if (r.length == 0 || r.length > page_max_compressed(page_size)) {
        return {StatusCode::bad_data, "LZ4 page record with an impossible length"};
      }
      break;
    default: return {StatusCode::bad_data, "page record of an unknown kind"};
  }
  if (!data) return {StatusCode::invalid_argument, "null data for a page with data"};
  return {};
}

void write_fill(std::uint64_t fill, std::size_t page_size, std::uint8_t* page) {
  if (fill == 0) {
    std::memset(page, 0, page_size);
    return;
  }
  for (std::size_t i = 0; i < page_size; i += 8) std::memcpy(page + i, &fill, 8);
}

}  // namespace pages

Status compress_page(const void* page, std::size_t page_size, void* out, PageRecord* record) {
  if (Status s = check_page_size(page_size); !s) return s;
  if (!page || !out || !record) return {StatusCode::invalid_argument, "null pointer"};
  const auto* in = static_cast<const std::uint8_t*>(page);
  auto* o = static_cast<std::uint8_t*>(out);
  std::uint64_t fill = 0;
  if (pages::page_fill(in, page_size, &fill)) {
    *record = pages::fill_record(fill);
    return {};
  }
  const std::size_t block = encode_page_block(in, page_size, o, page_max_compressed(page_size));
  *record = pages::block_record(in, page_size, block, o);
  return {};
}

namespace {

// A valid LZ4 record's page status from the GPU decoder's verdict on its
// block (the device's, or its CPU emulation's): bad_record there is a block
// that decodes to less than a page.
Status lz4_page_status(gpu::ItemStatus s) {
  switch (s) {
    case gpu::ItemStatus::ok: return {};
    case gpu::ItemStatus::bad_record: return {StatusCode::bad_data, "LZ4 page decodes to less than a page"};
    case gpu::ItemStatus::output_overflow:
    case gpu::ItemStatus::match_past_output_end: return {StatusCode::bad_data, "LZ4 page decodes to more than a page"};
    default: return {StatusCode::bad_data, "malformed LZ4 page"};
  }
}

// The LZ4 page into out, as the GPU's decoder would: ok only for a block
// that decodes to exactly one page. liblz4 decodes the blocks that tandem
// writes; it differs from the GPU's decoder only on blocks no encoder
// writes (it takes a match offset of 0, and refuses blocks that break the
// format's end rules: the last 5 bytes literals, no match starting in the
// last 12), so such blocks, and any it refuses, are decided by the GPU's
// own decoder run on the CPU. Both backends then agree on every page.
Status decode_lz4_page(const std::uint8_t* data, std::size_t length, std::size_t page_size, std::uint8_t* out) {
  std::uint64_t decoded = 0;
  std::size_t size = 0;
  if (cpu::lz4_validate_block(data, length, 0, &decoded) && decoded == page_size &&
      cpu::lz4_decompress_block(data, length, out, page_size, &size).ok() && size == page_size) {
    return {};
  }
  gpu::ItemStatus s = gpu::lz4_decode_block_emulated(data, length, out, page_size, &size, gpu::DecodeShape::lanes);
  if (s == gpu::ItemStatus::ok && size != page_size) s = gpu::ItemStatus::bad_record;
  return lz4_page_status(s);
}

}  // namespace

Status decompress_page(const PageRecord& record, const void* data, std::size_t page_size, void* page) {
  if (Status s = check_page_size(page_size); !s) return s;
  if (!page) return {StatusCode::invalid_argument, "null page"};
  auto* out = static_cast<std::uint8_t*>(page);
  Status s = pages::check_record(record, data, page_size);
  if (s) {
    switch (record.kind) {
      case PageKind::zero:
      case PageKind::same_fill: pages::write_fill(record.fill, page_size, out); return {};
      case PageKind::stored: std::memcpy(out, data, page_size); return {};
      default: s = decode_lz4_page(static_cast<const std::uint8_t*>(data), record.length, page_size, out); break;
    }
  }
  // A page that fails is zeros, never what was there or half a decode (the GPU does the same).
  if (!s) std::memset(out, 0, page_size);
  return s;
}

bool page_batch_prefers_gpu(bool compress, std::size_t count, std::size_t page_size, int threads) {
  const std::size_t per_thread = compress ? pages::kGpuCompressPagesPerThread : pages::kGpuDecompressPagesPerThread;
  return count * page_size >= per_thread * 4096 * static_cast<std::size_t>(threads > 0 ? threads : 1);
}

namespace {

// The backend a batch of count pages runs on: the GPU when asked for, or
// when automatic and the batch is large enough (and the device is there).
Status pick_backend(bool compress, std::size_t count, std::size_t page_size, const PageOptions& options,
                    bool* gpu) {
  Backend resolved;
  if (Status s = resolve_backend(Codec::lz4, options.backend, &resolved); !s) return s;
  *gpu = resolved == Backend::gpu &&
         (options.backend == Backend::gpu ||
          page_batch_prefers_gpu(compress, count, page_size, detail::effective_threads(options.threads)));
  return {};
}

// Host-resident compression on the shared GPU page engine. *fallback is set
// when the device failed and automatic may run the batch on the CPU instead.
Status compress_on_gpu(const PageBatch& batch, std::uint8_t* slots, std::span<PageRecord> records,
                       const PageOptions& options, bool* fallback) {
  gpu::PagesHostEngine* engine = nullptr;
  Status s = gpu::PagesHostEngine::shared(&engine);
  if (s) {
    const auto lock = engine->lock();
    s = engine->compress(static_cast<const std::uint8_t*>(batch.pages), batch.count, batch.page_size, slots,
                         records.data());
  }
  *fallback = !s && options.backend != Backend::gpu;
  return s;
}

Status decompress_on_gpu(std::span<const PageRecord> records, std::span<const void* const> data, std::size_t p,
                         std::uint8_t* out, std::span<Status> statuses, const PageOptions& options,
                         bool* fallback) {
  const std::size_t n = records.size();
  // A page with data but a null pointer fails alone, as on the CPU: the
  // device gets a record it refuses (and zeroes the page).
  std::vector<PageRecord> patched;
  std::vector<std::size_t> null_data;
  for (std::size_t i = 0; i < n; ++i) {
    const PageKind k = records[i].kind;
    if (!data[i] && (k == PageKind::stored || k == PageKind::lz4)) null_data.push_back(i);
  }
  std::span<const PageRecord> sent = records;
  if (!null_data.empty()) {
    patched.assign(records.begin(), records.end());
    for (const std::size_t i : null_data) patched[i].kind = static_cast<PageKind>(0xff);
    sent = patched;
  }
  std::vector<gpu::ItemStatus> item(n);
  gpu::PagesHostEngine* engine = nullptr;
  Status s = gpu::PagesHostEngine::shared(&engine);
  if (s) {
    const auto lock = engine->lock();
    s = engine->decompress(sent, data, p, out, item.data());
  }
  if (!s) {
    *fallback = options.backend != Backend::gpu;
    return s;
  }
  Status first;
  for (std::size_t i = 0; i < n; ++i) {
    // bad_record is the record's own check's failure, or a short block.
    Status st = item[i] == gpu::ItemStatus::bad_record ? pages::check_record(records[i], data[i], p) : Status{};
    if (st) st = lz4_page_status(item[i]);
    if (!statuses.empty()) statuses[i] = st;
    if (!st && first) first = st;
  }
  return first;
}

}  // namespace

Status compress_pages(const PageBatch& batch, MutableBuffer slots, std::span<PageRecord> records,
                      const PageOptions& options, Backend* ran_on) {
  if (Status s = check_page_size(batch.page_size); !s) return s;
  const std::size_t n = batch.count, p = batch.page_size;
  if (records.size() != n) return {StatusCode::invalid_argument, "records and pages differ in count"};
  if (n == 0) {
    if (ran_on) *ran_on = Backend::cpu;
    return {};
  }
  if (!batch.pages || !slots.data) return {StatusCode::invalid_argument, "null pages or slots"};
  if (!fits(n, p, slots.size)) return {StatusCode::output_too_small, "slots hold fewer than count pages"};
  auto* out = static_cast<std::uint8_t*>(slots.data);
  bool gpu = false;
  if (Status s = pick_backend(true, n, p, options, &gpu); !s) return s;
  if (gpu) {
    bool fallback = false;
    const Status s = compress_on_gpu(batch, out, records, options, &fallback);
    if (s || !fallback) {
      if (ran_on) *ran_on = Backend::gpu;
      return s;
    }
  }
  const auto* in = static_cast<const std::uint8_t*>(batch.pages);
  detail::parallel_for(n, options.threads, [&](std::size_t i) {
    (void)compress_page(in + i * p, p, out + i * p, &records[i]);
  });
  if (ran_on) *ran_on = Backend::cpu;
  return {};
}

Status decompress_pages(std::span<const PageRecord> records, std::span<const void* const> data, std::size_t page_size,
                        MutableBuffer pages, std::span<Status> statuses, const PageOptions& options,
                        Backend* ran_on) {
  if (Status s = check_page_size(page_size); !s) return s;
  const std::size_t n = records.size();
  if (data.size() != n || (!statuses.empty() && statuses.size() != n)) {
    return {StatusCode::invalid_argument, "records, data and statuses differ in count"};
  }
  if (n == 0) {
    if (ran_on) *ran_on = Backend::cpu;
    return {};
  }
  if (!pages.data) return {StatusCode::invalid_argument, "null pages"};
  if (!fits(n, page_size, pages.size)) return {StatusCode::output_too_small, "pages hold fewer than count pages"};
  auto* out = static_cast<std::uint8_t*>(pages.data);
  bool gpu = false;
  if (Status s = pick_backend(false, n, page_size, options, &gpu); !s) return s;
  if (gpu) {
    bool fallback = false;
    const Status s = decompress_on_gpu(records, data, page_size, out, statuses, options, &fallback);
    if (s || !fallback) {
      if (ran_on) *ran_on = Backend::gpu;
      return s;
    }
  }
  std::vector<Status> local;
  std::span<Status> st = statuses;
  if (st.empty()) {
    local.resize(n);
    st = local;
  }
  detail::parallel_for(n, options.threads, [&](std::size_t i) {
    st[i] = decompress_page(records[i], data[i], page_size, out + i * page_size);
  });
  if (ran_on) *ran_on = Backend::cpu;
  for (const Status& s : st) {
    if (!s) return s;
  }
  return {};
}

Status decompress_pages(std::span<const PageRecord> records, ConstBuffer slots, std::size_t page_size,
                        MutableBuffer pages, std::span<Status> statuses, const PageOptions& options,
                        Backend* ran_on) {
  if (Status s = check_page_size(page_size); !s) return s;
  const std::size_t n = records.size();
  if (n > 0 && !slots.data) return {StatusCode::invalid_argument, "null slots"};
  if (!fits(n, page_size, slots.size)) return {StatusCode::invalid_argument, "slots hold fewer than count pages"};
  std::vector<const void*> data(n);
  const auto* base = static_cast<const std::uint8_t*>(slots.data);
  for (std::size_t i = 0; i < n; ++i) data[i] = base + i * page_size;
  return decompress_pages(records, data, page_size, pages, statuses, options, ran_on);
}

}  // namespace tandem
