// Fuzz target: decoding page records (pages.hpp), on the CPU backend and
// through the GPU's page steps (their CPU emulation, the same source as the
// kernels), from records built out of the input.
//
// Input: a first byte picks the page size (bits 0-1: 4, 4, 16 or 64 KiB) and
// the number of pages (bits 2-4, plus one); then each page's record, in one
// of two ways (missing bytes read as zero):
//   raw:        a mode byte with bit 0 clear, then the 16 bytes of a record
//               (kind, reserved, length, fill; any values) and its data
//   compressed: a mode byte with bit 0 set, then a page built from a few
//               input bytes (a pattern tiled over the page, salted), which
//               compress_page turns into a record; then byte edits of its
//               data, and optionally a new length, kind, fill or reserved
//               bytes, so that records come near valid ones as well as far.
// Each page's data sits in its own exact-size allocation (ASan catches a
// read past it); the decoded pages lie between guard bytes.
//
// Properties: no crash; the guards stay intact; decoding twice into
// differently filled pages gives the same statuses and bytes; every status
// is one a decoder may give; per page, the CPU backend's status is ok
// exactly when the GPU steps' is, and the two pages are equal byte for byte
// whatever the verdict (a page that fails is all zeros on both: see
// docs/formats/pages.md); a record that compress_page wrote and nothing
// changed decodes to its page.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_guard.hpp"
#include "gpu/pages_gpu_emulate.hpp"
#include "tandem/pages.hpp"
#include "tandem/tandem_gpu.hpp"

namespace {

using tandem::PageKind;
using tandem::PageRecord;
using tandem::gpu::ItemStatus;

using tandem::fuzz::guard_intact;
using tandem::fuzz::kGuard;
using tandem::fuzz::kGuardValue;

// Reads the input; past its end, zeros.
struct Reader {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
  std::uint64_t le(int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(byte()) << (8 * i);
    return v;
  }
};

struct Page {
  PageRecord record;
  std::unique_ptr<std::uint8_t[]> data;  // exactly data_size bytes (at least 1)
  std::size_t data_size = 0;
  std::vector<std::uint8_t> original;  // the page, when the record is compress_page's, untouched
};

// The bytes a reader may take from a record's data: page_size for stored,
// the length for lz4 (up to the page size), none for the others.
std::size_t data_bytes(const PageRecord& r, std::size_t p) {
  return std::min<std::size_t>(r.length, p);
}

void set_data(Page* page, const std::uint8_t* bytes, std::size_t n) {
  page->data_size = n;
  page->data.reset(new std::uint8_t[n ? n : 1]);
  if (n) std::memcpy(page->data.get(), bytes, n);
}

Page raw_page(Reader& in, std::size_t p) {
  Page page;
  PageRecord& r = page.record;
  r.kind = static_cast<PageKind>(in.byte());
  for (std::uint8_t& b : r.reserved) b = in.byte();
  r.length = static_cast<std::uint32_t>(in.le(4));
  r.fill = in.le(8);
  std::vector<std::uint8_t> bytes(data_bytes(r, p));
  for (std::uint8_t& b : bytes) b = in.byte();
  set_data(&page, bytes.data(), bytes.size());
  return page;
}

Page compressed_page(Reader& in, std::size_t p) {
  const std::size_t k = 1 + in.byte() % 64;
  std::vector<std::uint8_t> pattern(k);
  for (std::uint8_t& b : pattern) b = in.byte();
  const unsigned shift = 4 + in.byte() % 12;
  const std::uint8_t salt = in.byte();
  std::vector<std::uint8_t> image(p);
  for (std::size_t i = 0; i < p; ++i) {
    image[i] = static_cast<std::uint8_t>(pattern[i % k] ^ static_cast<std::uint8_t>((i >> shift) * salt));
  }
  Page page;
  std::vector<std::uint8_t> out(p);
  FUZZ_ASSERT(tandem::compress_page(image.data(), p, out.data(), &page.record).ok());
  PageRecord& r = page.record;
  // Byte edits of the data, then the record's fields.
  bool changed = false;
  for (int e = in.byte() % 4; e > 0; --e) {
    const std::size_t at = static_cast<std::size_t>(in.le(2));
    const std::uint8_t x = in.byte();
    if (r.length > 0 && r.length <= p) out[at % r.length] ^= x;
    changed = changed || x != 0;
  }
  const std::uint8_t flags = in.byte();
  if (flags & 1) r.length = static_cast<std::uint32_t>(r.length + static_cast<std::int8_t>(in.byte()));
  if (flags & 2) r.kind = static_cast<PageKind>(in.byte() % 6);
  if (flags & 4) r.fill = in.le(8);
  if (flags & 8) r.reserved[in.byte() % 3] = in.byte();
  changed = changed || (flags & 15) != 0;
  set_data(&page, out.data(), data_bytes(r, p));
  if (!changed) page.original = std::move(image);
  return page;
}

bool is_page_status(ItemStatus s) {
  switch (s) {
    case ItemStatus::ok:
    case ItemStatus::corrupt_token:
    case ItemStatus::offset_out_of_range:
    case ItemStatus::output_overflow:
    case ItemStatus::literal_past_input_end:
    case ItemStatus::match_past_output_end:
    case ItemStatus::bad_record: return true;
    default: return false;
  }
}

struct alignas(16) Chunk {
  std::uint8_t b[16];
};

// The GPU steps on one record: status, and the page (page_size bytes) filled
// with `fill` first. Slot and page are 16-byte aligned, as the steps want.
ItemStatus decode_emulated(const Page& page, std::size_t p, std::uint8_t fill, std::vector<std::uint8_t>* out) {
  std::vector<Chunk> slot(p / 16), buf((p + kGuard) / 16);
  std::memset(slot.data(), 0, p);
  std::memcpy(slot.data(), page.data.get(), page.data_size);
  auto* b = reinterpret_cast<std::uint8_t*>(buf.data());
  std::memset(b, fill, p);
  std::memset(b + p, kGuardValue, kGuard);
  const ItemStatus st =
      tandem::gpu::page_decompress_emulated(page.record, reinterpret_cast<const std::uint8_t*>(slot.data()), p, b);
  FUZZ_ASSERT(guard_intact(b + p, kGuard));
  out->assign(b, b + p);
  return st;
}

// The CPU backend on the batch: statuses, and the pages filled with `fill` first.
std::vector<tandem::Status> decode_cpu(const std::vector<Page>& pages, std::size_t p, std::uint8_t fill,
                                       std::vector<std::uint8_t>* out) {
  const std::size_t n = pages.size();
  std::vector<PageRecord> records(n);
  std::vector<const void*> data(n);
  for (std::size_t i = 0; i < n; ++i) {
    records[i] = pages[i].record;
    data[i] = pages[i].data.get();
  }
  std::vector<std::uint8_t> buf(kGuard + n * p + kGuard, kGuardValue);
  std::fill_n(buf.begin() + kGuard, n * p, fill);
  std::vector<tandem::Status> st(n);
  tandem::PageOptions o;
  o.backend = tandem::Backend::cpu;
  o.threads = 1;
  const tandem::Status all = tandem::decompress_pages(records, data, p, {buf.data() + kGuard, n * p}, st, o);
  FUZZ_ASSERT(guard_intact(buf.data(), kGuard));
  FUZZ_ASSERT(guard_intact(buf.data() + kGuard + n * p, kGuard));
  // The call's status is the first failed page's.
  const auto first = std::find_if(st.begin(), st.end(), [](const tandem::Status& s) { return !s.ok(); });
  FUZZ_ASSERT(all.ok() == (first == st.end()));
  if (first != st.end()) FUZZ_ASSERT(all.code == first->code);
  out->assign(buf.begin() + kGuard, buf.begin() + static_cast<std::ptrdiff_t>(kGuard + n * p));
  return st;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  Reader in{data, size};
  const std::uint8_t head = in.byte();
  static constexpr std::size_t kSizes[4] = {4096, 4096, 16384, 65536};
  const std::size_t p = kSizes[head & 3];
  const std::size_t n = 1 + ((head >> 2) & 7);
  std::vector<Page> pages;
  for (std::size_t i = 0; i < n; ++i) {
    pages.push_back(in.byte() & 1 ? compressed_page(in, p) : raw_page(in, p));
  }

  std::vector<std::uint8_t> cpu_a, cpu_b;
  const std::vector<tandem::Status> st_a = decode_cpu(pages, p, 0x00, &cpu_a);
  const std::vector<tandem::Status> st_b = decode_cpu(pages, p, 0xFF, &cpu_b);
  for (std::size_t i = 0; i < n; ++i) {
    const tandem::Status& cpu = st_a[i];
    FUZZ_ASSERT(cpu.code == st_b[i].code);
    FUZZ_ASSERT(cpu.ok() || cpu.code == tandem::StatusCode::bad_data);
    const std::uint8_t* cpu_page = cpu_a.data() + i * p;
    FUZZ_ASSERT(std::memcmp(cpu_page, cpu_b.data() + i * p, p) == 0);

    std::vector<std::uint8_t> gpu_a, gpu_b;
    const ItemStatus gpu = decode_emulated(pages[i], p, 0x00, &gpu_a);
    FUZZ_ASSERT(decode_emulated(pages[i], p, 0xFF, &gpu_b) == gpu);
    FUZZ_ASSERT(is_page_status(gpu));
    FUZZ_ASSERT(gpu_a == gpu_b);

    // One verdict and one page, a failed page zeros on both.
    FUZZ_ASSERT(cpu.ok() == (gpu == ItemStatus::ok));
    FUZZ_ASSERT(std::memcmp(cpu_page, gpu_a.data(), p) == 0);
    if (!cpu.ok()) FUZZ_ASSERT(std::all_of(cpu_page, cpu_page + p, [](std::uint8_t b) { return b == 0; }));
    if (!pages[i].original.empty()) {
      FUZZ_ASSERT(cpu.ok() && gpu == ItemStatus::ok);
      FUZZ_ASSERT(std::memcmp(cpu_page, pages[i].original.data(), p) == 0);
    }
  }
  return 0;
}
