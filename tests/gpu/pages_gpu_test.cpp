// Page batches on a device: the device-resident calls of tandem_gpu.hpp
// (pages_compress_async, pages_decompress_async) with the test's own device
// buffers and streams, and the host-resident calls of pages.hpp with
// Backend::gpu.
//
// Compression must give, page for page, the CPU backend's record and the
// same first `length` bytes in the slot, for pages of every kind (zeros, a
// repeated byte, a repeated word, random, text, and near misses of the fill
// check and of the 7/8 limit), pages of 4, 16 and 64 KiB, batches of 1 to
// 20,000 pages; every LZ4 page is decoded by liblz4 as a control. On the
// device, every slot's bytes past its record's length are zero afterwards
// (the slots held 0xEE before). Decompression gives the pages back. Corrupt
// records (each of the ways a record can lie, then random mutations) get,
// page by page, the status of the GPU steps' CPU emulation
// (gpu::page_decompress_emulated), and its bytes where accepted (the device
// leaves a refused page as its decoder did). They leave every other page right; host-resident, each page gets the CPU
// backend's verdict and bytes. Every device buffer sits between guard bytes
// that are checked after each call.
//
// Skips without a CUDA device, and compiles to a skip in a build without CUDA.
#include <lz4.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/pages_gpu_emulate.hpp"
#include "support/gpu_support.hpp"
#include "support/lz4_block_cases.hpp"
#include "support/test_support.hpp"
#include "tandem/pages.hpp"
#include "tandem/tandem_gpu.hpp"

#if TANDEM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace tandem {
namespace {

using gpu::ItemStatus;
using test::Bytes;

#if TANDEM_HAVE_CUDA

using test::DeviceBuffer;
using test::download;
using test::StreamHandle;
using test::upload;

// ------------------------------------------------------------- pages ----

// A page of r random bytes, then zeros: its block grows with r, so that some
// r puts it just under page_max_compressed and r + 1 just over.
Bytes prefix_page(std::size_t p, std::size_t r, std::uint64_t seed) {
  Bytes page = test::random_bytes(r, seed);
  page.resize(p, 0);
  return page;
}

PageKind cpu_kind(const Bytes& page) {
  Bytes out(page.size());
  PageRecord r;
  if (!compress_page(page.data(), page.size(), out.data(), &r).ok()) throw std::runtime_error("compress_page failed");
  return r.kind;
}

// The smallest r whose prefix_page is stored raw (found on the CPU backend).
std::size_t stored_threshold(std::size_t p) {
  static std::map<std::size_t, std::size_t> cache;
  if (const auto it = cache.find(p); it != cache.end()) return it->second;
  std::size_t lo = 1, hi = p;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (cpu_kind(prefix_page(p, mid, 77)) == PageKind::stored) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return cache[p] = lo;
}

// The shapes of test pages; shape_name says what each is.
constexpr int kPageShapes = 14;

const char* shape_name(int shape) {
  static const char* const names[kPageShapes] = {
      "zeros",
      "one byte repeated",
      "one 8-byte word repeated",
      "random (stored)",
      "text (lz4)",
      "zeros but the last byte",
      "a word repeated but the last byte",
      "a word repeated but one byte of the last 512",
      "one byte repeated but the first",
      "runs, text and noise",
      "records",
      "a 4-byte pattern repeated (a word fill)",
      "two words alternating",
      "random bytes then zeros, about the 7/8 limit",
  };
  return names[shape];
}

Bytes shaped_page(int shape, std::size_t p, std::uint64_t seed) {
  Bytes page(p, 0);
  const std::uint64_t word = 0x0123456789abcdefull * (seed | 1);
  const auto fill_words = [&](std::uint64_t w0, std::uint64_t w1) {
    for (std::size_t k = 0; k < p; k += 16) {
      std::memcpy(page.data() + k, &w0, 8);
      std::memcpy(page.data() + k + 8, &w1, 8);
    }
  };
  switch (shape) {
    case 0: break;
    case 1: std::fill(page.begin(), page.end(), static_cast<std::uint8_t>(1 + seed % 255)); break;
    case 2: fill_words(word, word); break;
    case 3: page = test::random_bytes(p, seed); break;
    case 4: page = test::text_like_bytes(p, seed); break;
    case 5: page[p - 1] = 1; break;
    case 6:
      fill_words(word, word);
      page[p - 1] ^= 0x40;
      break;
    case 7:
      // The GPU's check reads 16 bytes a lane, 512 a warp step: the difference
      // sits in the second 8 bytes of one lane, in the last step.
      fill_words(word, word);
      page[p - 512 + 16 * (seed % 32) + 8 + seed % 8] ^= 1;
      break;
    case 8:
      std::fill(page.begin(), page.end(), std::uint8_t{0x33});
      page[0] = 0x34;
      break;
    case 9: page = test::mixed_bytes(p, seed); break;
    case 10: page = test::record_bytes(p, seed); break;
    case 11:
      for (std::size_t k = 0; k < p; ++k) page[k] = static_cast<std::uint8_t>("tand"[k % 4]);
      break;
    case 12: fill_words(word, ~word); break;
    default: page = prefix_page(p, stored_threshold(p) - 4 + seed % 8, 77); break;
  }
  return page;
}

// count pages of p bytes, page i of shape (i + seed) % kPageShapes.
Bytes mixed_pages(std::size_t count, std::size_t p, std::uint64_t seed) {
  Bytes out;
  out.reserve(count * p);
  for (std::size_t i = 0; i < count; ++i) {
    const Bytes page = shaped_page(static_cast<int>((i + seed) % kPageShapes), p, seed * 100003 + i);
    out.insert(out.end(), page.begin(), page.end());
  }
  return out;
}

struct Compressed {
  std::vector<PageRecord> records;
  Bytes slots;  // count * page size
};

Compressed compress_host(const Bytes& pages, std::size_t p, Backend backend) {
  Compressed c;
  const std::size_t n = pages.size() / p;
  c.records.resize(n);
  c.slots.assign(n * p, 0xCD);
  PageOptions o;
  o.backend = backend;
  Backend ran = Backend::automatic;
  const Status s = compress_pages({pages.data(), n, p}, {c.slots.data(), c.slots.size()}, c.records, o, &ran);
  if (!s.ok()) throw std::runtime_error("compress_pages failed: " + s.to_string());
  EXPECT_EQ(ran, backend);
  return c;
}

// Page i of `got` has the record of `want` and the same first `length` bytes
// in its slot.
void expect_same_compression(const Compressed& want, const Compressed& got, std::size_t p) {
  ASSERT_EQ(got.records.size(), want.records.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.records.size(); ++i) {
    const PageRecord& w = want.records[i];
    const PageRecord& g = got.records[i];
    const bool same_record = std::memcmp(&w, &g, sizeof w) == 0;
    const bool same_bytes =
        same_record && w.length <= p && std::memcmp(want.slots.data() + i * p, got.slots.data() + i * p, w.length) == 0;
    if (same_record && same_bytes) continue;
    if (++differ <= 5) {
      ADD_FAILURE() << "page " << i << ": kind " << page_kind_name(g.kind) << " length " << g.length << " fill "
                    << g.fill << ", the CPU's: kind " << page_kind_name(w.kind) << " length " << w.length << " fill "
                    << w.fill << (same_record ? " (other bytes)" : "");
    }
  }
  EXPECT_EQ(differ, 0u) << "pages whose record or bytes differ from the CPU backend's";
}

// Every page of c decodes with liblz4 (lz4), or is what its record says.
void expect_records_describe(const Compressed& c, const Bytes& pages, std::size_t p) {
  std::size_t bad = 0;
  Bytes dec(p);
  for (std::size_t i = 0; i < c.records.size(); ++i) {
    const PageRecord& r = c.records[i];
    const std::uint8_t* page = pages.data() + i * p;
    const std::uint8_t* slot = c.slots.data() + i * p;
    bool ok = false;
    switch (r.kind) {
      case PageKind::zero:
        ok = r.length == 0 && r.fill == 0 && std::all_of(page, page + p, [](std::uint8_t b) { return b == 0; });
        break;
      case PageKind::same_fill: {
        ok = r.length == 0 && r.fill != 0;
        for (std::size_t k = 0; ok && k < p; k += 8) {
          for (std::size_t j = 0; j < 8; ++j) ok = ok && page[k + j] == static_cast<std::uint8_t>(r.fill >> (8 * j));
        }
        break;
      }
      case PageKind::stored: ok = r.length == p && std::memcmp(slot, page, p) == 0; break;
      case PageKind::lz4: {
        if (r.length == 0 || r.length > page_max_compressed(p)) break;
        const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(slot), reinterpret_cast<char*>(dec.data()),
                                            static_cast<int>(r.length), static_cast<int>(p));
        ok = got == static_cast<int>(p) && std::memcmp(dec.data(), page, p) == 0;
        break;
      }
    }
    if (!ok && ++bad <= 5) ADD_FAILURE() << "page " << i << " (" << page_kind_name(r.kind) << ") is not its page";
  }
  EXPECT_EQ(bad, 0u) << "records that do not describe their page (LZ4 pages decoded by liblz4)";
}

// ------------------------------------------------------ device batches ----

// Guard bytes before every device buffer of pages or slots (256, so that the
// buffer keeps cudaMalloc's alignment, plus the batch's skew).
constexpr std::size_t kLead = 256;
const ItemStatus kUnwrittenStatus = static_cast<ItemStatus>(0x7F7F7F7F);

// One batch of n pages of p bytes in device memory: the pages and the slots,
// each kLead + skew guard bytes after its allocation's start and followed by
// kGuardBytes guard bytes; the records; the statuses.
class DeviceBatch {
 public:
  DeviceBatch(std::size_t n, std::size_t p, std::size_t skew, cudaStream_t s)
      : n_(n),
        p_(p),
        skew_(skew),
        s_(s),
        pages_(area()),
        slots_(area()),
        records_(n * sizeof(PageRecord)),
        statuses_(n * sizeof(ItemStatus)) {}

  std::uint8_t* d_pages() const { return pages_.get<std::uint8_t>() + kLead + skew_; }
  std::uint8_t* d_slots() const { return slots_.get<std::uint8_t>() + kLead + skew_; }
  PageRecord* d_records() const { return records_.get<PageRecord>(); }
  ItemStatus* d_statuses() const { return statuses_.get<ItemStatus>(); }
  std::size_t count() const { return n_; }

  void put_pages(const Bytes& pages) const { put_area(pages_, pages.data()); }
  // The pages' area filled with `fill`, ready to be decoded into.
  void clear_pages(std::uint8_t fill) const {
    const Bytes b(n_ * p_, fill);
    put_area(pages_, b.data());
  }
  void put_compressed(const Compressed& c) const {
    put_area(slots_, c.slots.data());
    upload(d_records(), c.records.data(), n_ * sizeof(PageRecord), s_);
  }

  // Compresses the pages into the slots and records (the slots filled with
  // 0xEE first unless reuse_slots, the records with 0x7F: an unknown kind).
  Status compress(bool reuse_slots = false) const {
    if (!reuse_slots) {
      const Bytes slots(n_ * p_, 0xEE);
      put_area(slots_, slots.data());
    }
    CUDA_CHECK(cudaMemsetAsync(d_records(), 0x7F, n_ * sizeof(PageRecord), s_));
    std::size_t temp_bytes = 0;
    if (Status st = gpu::pages_compress_temp_size(n_, p_, &temp_bytes); !st.ok()) return st;
    const DeviceBuffer d_temp(temp_bytes);
    const Status st =
        gpu::pages_compress_async(d_pages(), n_, p_, d_temp.get(), temp_bytes, d_slots(), d_records(), s_);
    CUDA_CHECK(cudaStreamSynchronize(s_));  // d_temp is freed on return
    return st;
  }

  // Decompresses the records and slots into the pages (filled with 0xEE
  // first); the statuses (0x7F7F7F7F first) when with_statuses.
  Status decompress(bool with_statuses = true) const {
    clear_pages(0xEE);
    CUDA_CHECK(cudaMemsetAsync(d_statuses(), 0x7F, n_ * sizeof(ItemStatus), s_));
    std::size_t temp_bytes = 0;
    if (Status st = gpu::pages_decompress_temp_size(n_, p_, &temp_bytes); !st.ok()) return st;
    const DeviceBuffer d_temp(temp_bytes);
    const Status st = gpu::pages_decompress_async(d_records(), d_slots(), n_, p_, d_temp.get(), temp_bytes,
                                                  d_pages(), with_statuses ? d_statuses() : nullptr, s_);
    CUDA_CHECK(cudaStreamSynchronize(s_));
    return st;
  }

  // The records and slots; *guard_intact: nothing was written around the slots.
  Compressed get_compressed(bool* guard_intact) const {
    Compressed c;
    c.records = download<PageRecord>(d_records(), n_, s_);
    c.slots = get_area(slots_, guard_intact);
    return c;
  }
  Bytes get_pages(bool* guard_intact) const { return get_area(pages_, guard_intact); }
  std::vector<ItemStatus> get_statuses() const { return download<ItemStatus>(d_statuses(), n_, s_); }

 private:
  std::size_t area() const { return kLead + skew_ + n_ * p_ + test::kGuardBytes; }

  // Writes the guard bytes and n * p bytes of data between them.
  void put_area(const DeviceBuffer& d, const std::uint8_t* data) const {
    Bytes image(area(), test::kGuardValue);
    std::memcpy(image.data() + kLead + skew_, data, n_ * p_);
    upload(d.get(), image.data(), image.size(), s_);
    CUDA_CHECK(cudaStreamSynchronize(s_));  // image is freed on return
  }
  Bytes get_area(const DeviceBuffer& d, bool* guard_intact) const {
    const Bytes image = download<std::uint8_t>(d.get(), area(), s_);
    const auto begin = image.begin() + static_cast<std::ptrdiff_t>(kLead + skew_);
    const auto end = begin + static_cast<std::ptrdiff_t>(n_ * p_);
    const auto is_guard = [](std::uint8_t b) { return b == test::kGuardValue; };
    *guard_intact = std::all_of(image.begin(), begin, is_guard) && std::all_of(end, image.end(), is_guard);
    return Bytes(begin, end);
  }

  std::size_t n_, p_, skew_;
  cudaStream_t s_;
  DeviceBuffer pages_, slots_, records_, statuses_;
};

// What the GPU steps' emulation says of one record: its status and its page
// (all zeros when refused).
struct Emulated {
  ItemStatus status;
  Bytes page;
};

struct alignas(16) Chunk {
  std::uint8_t b[16];
};

Emulated emulate_decode(const PageRecord& r, const std::uint8_t* slot, std::size_t p) {
  // 16-byte aligned copies, as the emulation wants.
  std::vector<Chunk> slot_copy(p / 16), page_copy(p / 16);
  std::memcpy(slot_copy.data(), slot, p);
  auto* out = reinterpret_cast<std::uint8_t*>(page_copy.data());
  std::memset(out, 0xEE, p);
  const ItemStatus st =
      gpu::page_decompress_emulated(r, reinterpret_cast<const std::uint8_t*>(slot_copy.data()), p, out);
  return {st, Bytes(out, out + p)};
}

bool all_zero(const std::uint8_t* b, std::size_t n) {
  return std::all_of(b, b + n, [](std::uint8_t x) { return x == 0; });
}

// Decodes c on the device (into pages of 0xEE): every page's status must be
// the emulation's, and an accepted page's bytes too, every page not marked
// corrupted must decode ok to its page of `pages`, and nothing may be written
// around the pages. Returns the device's statuses.
std::vector<ItemStatus> expect_device_decode_as_emulated(const Compressed& c, const Bytes& pages, std::size_t p,
                                                         const std::vector<bool>& corrupted, cudaStream_t s) {
  const std::size_t n = c.records.size();
  const DeviceBatch d(n, p, 0, s);
  d.put_compressed(c);
  EXPECT_TRUE(d.decompress().ok());
  bool guard = false;
  const Bytes back = d.get_pages(&guard);
  const std::vector<ItemStatus> st = d.get_statuses();
  EXPECT_TRUE(guard) << "written outside the pages";
  for (std::size_t i = 0; i < n; ++i) {
    SCOPED_TRACE("page " + std::to_string(i) + " (" + page_kind_name(c.records[i].kind) + ", length " +
                 std::to_string(c.records[i].length) + ")");
    EXPECT_NE(st[i], kUnwrittenStatus) << "no status";
    const Emulated e = emulate_decode(c.records[i], c.slots.data() + i * p, p);
    EXPECT_EQ(st[i], e.status);
    // The device leaves a refused page as its decoder left it (the host
    // calls zero it); an accepted one is the emulation's byte for byte.
    if (st[i] == ItemStatus::ok) {
      EXPECT_EQ(0, std::memcmp(back.data() + i * p, e.page.data(), p)) << "other bytes than the emulation's";
    }
    if (e.status != ItemStatus::ok) {
      EXPECT_TRUE(all_zero(e.page.data(), p)) << "a page the emulation refused that is not zeros";
    }
    if (!corrupted[i]) {
      EXPECT_EQ(st[i], ItemStatus::ok);
      EXPECT_EQ(0, std::memcmp(back.data() + i * p, pages.data() + i * p, p)) << "not the page";
    }
  }
  return st;
}

class PagesGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (backend_info().gpu_count == 0) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped";
    stream_ = std::make_unique<StreamHandle>();
  }
  cudaStream_t stream() const { return stream_->get(); }
  std::unique_ptr<StreamHandle> stream_;
};

constexpr std::size_t kPageSizes[] = {4096, 16384, 65536};

// After device compression, every slot's bytes past its record's length are
// zero: an lz4 slot's after its block, a fill page's whole slot.
void expect_slot_tails_zero(const Compressed& c, std::size_t p) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.records.size(); ++i) {
    const std::size_t length = std::min<std::size_t>(c.records[i].length, p);
    if (all_zero(c.slots.data() + i * p + length, p - length)) continue;
    if (++bad <= 5) {
      ADD_FAILURE() << "page " << i << " (" << page_kind_name(c.records[i].kind) << ", length " << length
                    << "): slot bytes past the length are not zeros";
    }
  }
  EXPECT_EQ(bad, 0u) << "slots with other bytes than zeros past their record's length";
}

// Compresses `pages` on the device (into slots of 0xEE) and checks the result
// against the CPU backend and liblz4, and that every slot is zeros past its
// record's length; decompresses it there (the records and slots never leave
// the device) and checks the pages, with and without statuses.
void expect_device_round_trip(const Bytes& pages, std::size_t p, std::size_t skew, cudaStream_t s) {
  const std::size_t n = pages.size() / p;
  const Compressed want = compress_host(pages, p, Backend::cpu);
  const DeviceBatch d(n, p, skew, s);
  d.put_pages(pages);
  ASSERT_TRUE(d.compress().ok());
  bool guard = false;
  const Compressed got = d.get_compressed(&guard);
  EXPECT_TRUE(guard) << "written outside the slots";
  expect_same_compression(want, got, p);
  expect_records_describe(got, pages, p);
  expect_slot_tails_zero(got, p);

  ASSERT_TRUE(d.decompress().ok());
  const Bytes back = d.get_pages(&guard);
  EXPECT_TRUE(guard) << "written outside the pages";
  const std::vector<ItemStatus> st = d.get_statuses();
  EXPECT_EQ(std::count(st.begin(), st.end(), ItemStatus::ok), static_cast<std::ptrdiff_t>(n))
      << "pages whose status is not ok";
  EXPECT_TRUE(back == pages) << "pages not given back";

  // The statuses are optional.
  ASSERT_TRUE(d.decompress(false).ok());
  EXPECT_TRUE(d.get_pages(&guard) == pages);
  EXPECT_TRUE(guard);
  const std::vector<ItemStatus> untouched = d.get_statuses();
  EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](ItemStatus x) { return x == kUnwrittenStatus; }))
      << "statuses written though none were asked for";
}

// ------------------------------------------------------------ tests ----

TEST_F(PagesGpu, OnePageOfEveryShapeOnTheDevice) {
  for (const std::size_t p : kPageSizes) {
    for (int shape = 0; shape < kPageShapes; ++shape) {
      SCOPED_TRACE(std::to_string(p) + "-byte page: " + shape_name(shape));
      expect_device_round_trip(shaped_page(shape, p, 40 + static_cast<std::uint64_t>(shape)), p, 0, stream());
    }
  }
}

// Batches of 7 (with the pages and slots 16 bytes off cudaMalloc's
// alignment, on the legacy default stream) and of 1000 pages of each size.
TEST_F(PagesGpu, MixedBatchesOnTheDeviceAreTheCpuBackends) {
  for (const std::size_t p : kPageSizes) {
    for (const std::size_t count : {std::size_t{7}, std::size_t{1000}}) {
      SCOPED_TRACE(std::to_string(count) + " pages of " + std::to_string(p) + " bytes");
      const Bytes pages = mixed_pages(count, p, count + p);
      if (count == 7) {
        expect_device_round_trip(pages, p, 16, nullptr);
      } else {
        expect_device_round_trip(pages, p, 0, stream());
        // Every kind is there.
        const Compressed c = compress_host(pages, p, Backend::cpu);
        for (const PageKind k : {PageKind::zero, PageKind::same_fill, PageKind::stored, PageKind::lz4}) {
          EXPECT_TRUE(std::any_of(c.records.begin(), c.records.end(), [&](const PageRecord& r) { return r.kind == k; }))
              << "no " << page_kind_name(k) << " page";
        }
      }
    }
  }
}

TEST_F(PagesGpu, TwentyThousandPagesOnTheDevice) {
  expect_device_round_trip(mixed_pages(20000, 4096, 11), 4096, 0, stream());
}

// Slots used again: random pages (stored, whole slots of noise) compressed
// first, then pages of every shape into the same slots. No slot keeps bytes
// of the first call past its new record's length.
TEST_F(PagesGpu, SlotsCarryNoBytesOfAnEarlierCall) {
  for (const std::size_t p : kPageSizes) {
    SCOPED_TRACE(p);
    const std::size_t count = 3 * kPageShapes;
    Bytes noise;
    for (std::size_t i = 0; i < count; ++i) {
      const Bytes page = shaped_page(3, p, 900 + i);
      noise.insert(noise.end(), page.begin(), page.end());
    }
    const Bytes pages = mixed_pages(count, p, 13);
    const DeviceBatch d(count, p, 0, stream());
    d.put_pages(noise);
    ASSERT_TRUE(d.compress().ok());
    d.put_pages(pages);
    ASSERT_TRUE(d.compress(true).ok());
    bool guard = false;
    const Compressed got = d.get_compressed(&guard);
    EXPECT_TRUE(guard) << "written outside the slots";
    expect_same_compression(compress_host(pages, p, Backend::cpu), got, p);
    expect_slot_tails_zero(got, p);
  }
}

// Pages whose block is just under page_max_compressed and just over it
// (random bytes, then zeros with a few lone bytes in them): the device stores
// raw exactly those that the CPU does.
TEST_F(PagesGpu, PagesAboutTheSevenEighthsLimitAreStoredAsOnTheCpu) {
  for (const std::size_t p : kPageSizes) {
    SCOPED_TRACE(p);
    const std::size_t t = stored_threshold(p);
    Bytes pages;
    for (std::size_t r = t - 48; r < t + 16; ++r) {
      for (std::size_t q = 0; q < 3; ++q) {
        Bytes page = prefix_page(p, r, 77 + q);
        for (std::size_t k = 0; k < 3 * q; ++k) page[r + 64 + 40 * k] = 1;
        pages.insert(pages.end(), page.begin(), page.end());
      }
    }
    const Compressed c = compress_host(pages, p, Backend::cpu);
    for (const PageKind k : {PageKind::stored, PageKind::lz4}) {
      EXPECT_TRUE(std::any_of(c.records.begin(), c.records.end(), [&](const PageRecord& r) { return r.kind == k; }))
          << "no " << page_kind_name(k) << " page";
    }
    expect_device_round_trip(pages, p, 0, stream());
  }
}

// One corruption of one page's record or data.
struct Corruption {
  const char* what;
  PageKind target;  // the kind of page it is applied to
  std::function<void(PageRecord&, std::uint8_t* slot, std::size_t p)> apply;
  bool refused;  // every reader refuses the record (else every reader accepts it)
};

void put_length(Bytes& b, std::size_t v) {
  for (; v >= 255; v -= 255) b.push_back(255);
  b.push_back(static_cast<std::uint8_t>(v));
}

// An LZ4 block of one literal 'a' and a match at offset `offset` of
// match_length bytes, then `last` literals 'z'.
Bytes run_block(std::uint16_t offset, std::size_t match_length, std::size_t last) {
  Bytes b{static_cast<std::uint8_t>(0x10 | std::min<std::size_t>(match_length - 4, 15)), 'a',
          static_cast<std::uint8_t>(offset), static_cast<std::uint8_t>(offset >> 8)};
  if (match_length - 4 >= 15) put_length(b, match_length - 4 - 15);
  b.push_back(static_cast<std::uint8_t>(std::min<std::size_t>(last, 15) << 4));
  if (last >= 15) put_length(b, last - 15);
  b.insert(b.end(), last, 'z');
  return b;
}

void set_block(PageRecord& r, std::uint8_t* slot, const Bytes& block) {
  std::memcpy(slot, block.data(), block.size());
  r.length = static_cast<std::uint32_t>(block.size());
}

std::vector<Corruption> corruptions() {
  using R = PageRecord&;
  using S = std::uint8_t*;
  using P = std::size_t;
  return {
      {"unknown kind 4", PageKind::lz4, [](R r, S, P) { r.kind = static_cast<PageKind>(4); }, true},
      {"unknown kind 0xFF", PageKind::stored, [](R r, S, P) { r.kind = static_cast<PageKind>(0xFF); }, true},
      {"lz4 length 0", PageKind::lz4, [](R r, S, P) { r.length = 0; }, true},
      {"lz4 length one past the 7/8 limit", PageKind::lz4,
       [](R r, S, P p) { r.length = static_cast<std::uint32_t>(page_max_compressed(p) + 1); }, true},
      {"lz4 length 0xFFFFFFFF", PageKind::lz4, [](R r, S, P) { r.length = 0xFFFFFFFFu; }, true},
      {"lz4 block truncated by one", PageKind::lz4, [](R r, S, P) { r.length -= 1; }, true},
      {"lz4 block of 0xFF bytes", PageKind::lz4, [](R r, S s, P) { std::memset(s, 0xFF, r.length); }, true},
      {"lz4 block of zero bytes", PageKind::lz4, [](R r, S s, P) { std::memset(s, 0, r.length); }, true},
      {"lz4 block that decodes to 5 bytes", PageKind::lz4,
       [](R r, S s, P) { set_block(r, s, {0x50, 'a', 'b', 'c', 'd', 'e'}); }, true},
      {"lz4 block one byte short of a page", PageKind::lz4,
       [](R r, S s, P p) { set_block(r, s, run_block(1, p - 7, 5)); }, true},
      {"lz4 block one byte past a page", PageKind::lz4,
       [](R r, S s, P p) { set_block(r, s, run_block(1, p - 5, 5)); }, true},
      {"lz4 block with offset 0", PageKind::lz4, [](R r, S s, P p) { set_block(r, s, run_block(0, p - 6, 5)); },
       true},
      {"lz4 block with an offset before the page", PageKind::lz4,
       [](R r, S s, P p) { set_block(r, s, run_block(2, p - 6, 5)); }, true},
      // A whole page, but its last bytes come from a match (the LZ4 format
      // wants the last 5 to be literals): accepted by every reader, which
      // does not check the end-of-block rules (docs/formats/pages.md).
      {"lz4 block whose match ends the page", PageKind::lz4,
       [](R r, S s, P p) { set_block(r, s, run_block(1, p - 1, 0)); }, false},
      {"stored with length 100", PageKind::stored, [](R r, S, P) { r.length = 100; }, true},
      {"stored with length page - 1", PageKind::stored,
       [](R r, S, P p) { r.length = static_cast<std::uint32_t>(p - 1); }, true},
      {"stored with length page + 1", PageKind::stored,
       [](R r, S, P p) { r.length = static_cast<std::uint32_t>(p + 1); }, true},
      {"zero with a length", PageKind::zero, [](R r, S, P) { r.length = 8; }, true},
      {"zero with a fill", PageKind::zero, [](R r, S, P) { r.fill = 1; }, true},
      {"zero with a page's length", PageKind::zero, [](R r, S, P p) { r.length = static_cast<std::uint32_t>(p); },
       true},
      {"same_fill with a length", PageKind::same_fill, [](R r, S, P) { r.length = 1; }, true},
      {"a stored page as zero", PageKind::stored,
       [](R r, S, P) {
         r.kind = PageKind::zero;
         r.length = 8;
       },
       true},
      // The reserved bytes are not checked: accepted.
      {"reserved bytes set", PageKind::lz4, [](R r, S, P) { r.reserved[0] = r.reserved[2] = 0xFF; }, false},
  };
}

// Each corruption alone in a batch of valid pages, for every page size; then
// all of them at once in one batch of 4 KiB pages, each on a page of its own.
TEST_F(PagesGpu, CorruptRecordsGetTheEmulationsStatusAndSpareTheOtherPages) {
  const std::vector<Corruption> cases = corruptions();
  for (const std::size_t p : kPageSizes) {
    const std::size_t count = p == 65536 ? 2 * kPageShapes : 4 * kPageShapes;
    const Bytes pages = mixed_pages(count, p, 5);
    const Compressed c = compress_host(pages, p, Backend::cpu);
    for (const Corruption& k : cases) {
      SCOPED_TRACE(std::string(k.what) + ", " + std::to_string(p) + "-byte pages");
      const auto it = std::find_if(c.records.begin(), c.records.end(),
                                   [&](const PageRecord& r) { return r.kind == k.target; });
      ASSERT_NE(it, c.records.end()) << "no " << page_kind_name(k.target) << " page";
      const std::size_t i = static_cast<std::size_t>(it - c.records.begin());
      Compressed bad = c;
      k.apply(bad.records[i], bad.slots.data() + i * p, p);
      std::vector<bool> corrupted(count, false);
      corrupted[i] = true;
      const std::vector<ItemStatus> st = expect_device_decode_as_emulated(bad, pages, p, corrupted, stream());
      EXPECT_EQ(st[i] != ItemStatus::ok, k.refused) << st[i];
    }
  }

  const std::size_t p = 4096, count = 16 * kPageShapes;
  const Bytes pages = mixed_pages(count, p, 6);
  Compressed bad = compress_host(pages, p, Backend::cpu);
  std::vector<bool> corrupted(count, false);
  std::vector<std::size_t> where;
  for (const Corruption& k : cases) {
    std::size_t i = 0;
    while (i < count && (corrupted[i] || bad.records[i].kind != k.target)) ++i;
    ASSERT_LT(i, count) << "no " << page_kind_name(k.target) << " page left for " << k.what;
    corrupted[i] = true;
    where.push_back(i);
    k.apply(bad.records[i], bad.slots.data() + i * p, p);
  }
  const std::vector<ItemStatus> st = expect_device_decode_as_emulated(bad, pages, p, corrupted, stream());
  for (std::size_t k = 0; k < cases.size(); ++k) {
    EXPECT_EQ(st[where[k]] != ItemStatus::ok, cases[k].refused) << cases[k].what << ": " << st[where[k]];
  }
}

// Random corruptions of many records at once: flipped block bytes, lengths
// moved, kinds changed, fills set. No fault (compute-sanitizer checks the
// accesses), a status for every page, the emulation's status and bytes.
TEST_F(PagesGpu, MutatedRecordsGetTheEmulationsStatus) {
  std::mt19937_64 rng(23);
  for (const std::size_t p : kPageSizes) {
    SCOPED_TRACE(p);
    const std::size_t count = p == 65536 ? 60 : 400;
    const Bytes pages = mixed_pages(count, p, 8);
    Compressed c = compress_host(pages, p, Backend::cpu);
    std::vector<bool> corrupted(count, false);
    for (std::size_t i = 0; i < count; ++i) {
      if (rng() % 4 == 0) continue;  // some pages stay valid
      PageRecord& r = c.records[i];
      std::uint8_t* slot = c.slots.data() + i * p;
      corrupted[i] = true;
      switch (rng() % 6) {
        case 0:
        case 1:
        case 2:  // a few bytes of the data flipped
          if (r.length > 0 && r.length <= p) {
            for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k)
              slot[rng() % r.length] ^= static_cast<std::uint8_t>(1 + rng() % 255);
          }
          break;
        case 3: r.length = static_cast<std::uint32_t>(r.length + rng() % 17 - 8); break;
        case 4: r.kind = static_cast<PageKind>(rng() % 5); break;
        default: r.fill = rng(); break;
      }
    }
    (void)expect_device_decode_as_emulated(c, pages, p, corrupted, stream());
  }
}

// ----------------------------------------------------- host-resident ----

void expect_host_gpu_round_trip(const Bytes& pages, std::size_t p) {
  const std::size_t n = pages.size() / p;
  const Compressed want = compress_host(pages, p, Backend::cpu);
  const Compressed got = compress_host(pages, p, Backend::gpu);
  expect_same_compression(want, got, p);

  test::GuardedBuffer out(n * p, 0xEE);
  std::vector<Status> st(n);
  PageOptions o;
  o.backend = Backend::gpu;
  Backend ran = Backend::cpu;
  EXPECT_TRUE(decompress_pages(got.records, {got.slots.data(), got.slots.size()}, p, {out.data(), n * p}, st, o, &ran)
                  .ok());
  EXPECT_EQ(ran, Backend::gpu);
  EXPECT_TRUE(out.guard_intact());
  EXPECT_EQ(std::count_if(st.begin(), st.end(), [](const Status& s) { return s.ok(); }),
            static_cast<std::ptrdiff_t>(n));
  EXPECT_TRUE(out.prefix(n * p) == pages);
}

TEST_F(PagesGpu, HostResidentBatchesAreTheCpuBackends) {
  for (const std::size_t p : kPageSizes) {
    for (const std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
      SCOPED_TRACE(std::to_string(count) + " pages of " + std::to_string(p) + " bytes");
      expect_host_gpu_round_trip(mixed_pages(count, p, 3 * count + p), p);
    }
  }
}

// The host-resident call's statuses and pages for a batch on `backend` (the
// pages 0xEE first); *guard_intact: nothing was written around them.
Status decode_host(const Compressed& c, std::size_t p, Backend backend, std::vector<Status>* st, Bytes* out,
                   bool* guard_intact) {
  const std::size_t n = c.records.size();
  test::GuardedBuffer buf(n * p, 0xEE);
  st->assign(n, Status{});
  PageOptions o;
  o.backend = backend;
  Backend ran = Backend::automatic;
  const Status s = decompress_pages(c.records, {c.slots.data(), c.slots.size()}, p, {buf.data(), n * p}, *st, o, &ran);
  EXPECT_EQ(ran, backend);
  *guard_intact = buf.guard_intact();
  *out = buf.prefix(n * p);
  return s;
}

// Host-resident decoding of corrupt records: bad_data and a page of zeros for
// a record that every reader refuses, the page for one that every reader
// accepts, the other pages decoded; statuses and bytes as on the CPU backend.
TEST_F(PagesGpu, HostResidentCorruptRecordsFailTheirPageAlone) {
  const std::size_t p = 4096, count = 4 * kPageShapes;
  const Bytes pages = mixed_pages(count, p, 12);
  const Compressed c = compress_host(pages, p, Backend::cpu);
  for (const Corruption& k : corruptions()) {
    SCOPED_TRACE(k.what);
    const auto it =
        std::find_if(c.records.begin(), c.records.end(), [&](const PageRecord& r) { return r.kind == k.target; });
    ASSERT_NE(it, c.records.end());
    const std::size_t i = static_cast<std::size_t>(it - c.records.begin());
    Compressed bad = c;
    k.apply(bad.records[i], bad.slots.data() + i * p, p);
    std::vector<Status> st, cpu_st;
    Bytes out, cpu_out;
    bool guard = false, cpu_guard = false;
    const Status all = decode_host(bad, p, Backend::gpu, &st, &out, &guard);
    const Status cpu_all = decode_host(bad, p, Backend::cpu, &cpu_st, &cpu_out, &cpu_guard);
    EXPECT_TRUE(guard);
    EXPECT_TRUE(cpu_guard);
    if (k.refused) {
      EXPECT_STATUS(all, StatusCode::bad_data);
    } else {
      EXPECT_TRUE(all.ok()) << all.to_string();
    }
    EXPECT_EQ(all.code, cpu_all.code) << "the CPU backend's: " << cpu_all.to_string();
    for (std::size_t j = 0; j < count; ++j) {
      SCOPED_TRACE("page " + std::to_string(j));
      const std::uint8_t* page = out.data() + j * p;
      EXPECT_EQ(st[j].code, cpu_st[j].code) << st[j].to_string() << "; the CPU backend's: " << cpu_st[j].to_string();
      EXPECT_EQ(0, std::memcmp(page, cpu_out.data() + j * p, p)) << "other bytes than the CPU backend's";
      if (j == i && k.refused) {
        EXPECT_STATUS(st[j], StatusCode::bad_data);
        EXPECT_TRUE(all_zero(page, p)) << "a refused page that is not zeros";
      } else {
        EXPECT_TRUE(st[j].ok()) << st[j].to_string();
        if (j != i) EXPECT_EQ(0, std::memcmp(page, pages.data() + j * p, p)) << "not the page";
      }
    }
  }
}

// Silesia's files cut into 4 KiB pages, on the device and host-resident.
TEST_F(PagesGpu, SilesiaPagesAreTheCpuBackends) {
  if (test::silesia_dir().empty()) GTEST_SKIP() << "the Silesia corpus is not available (set TANDEM_CORPUS)";
  test::for_each_silesia_file_in_pages(4096, [&](const Bytes& data) {
    expect_device_round_trip(data, 4096, 0, stream());
    expect_host_gpu_round_trip(data, 4096);
  });
}

// ----------------------------------------------------------- arguments ----

TEST_F(PagesGpu, ArgumentErrors) {
  const cudaStream_t s = stream();
  const std::size_t p = 4096, n = 2;
  const DeviceBuffer d_pages(n * p + 64), d_slots(n * p + 64), d_records(n * sizeof(PageRecord)),
      d_statuses(n * sizeof(ItemStatus));
  auto* pages = d_pages.get<std::uint8_t>();
  auto* slots = d_slots.get<std::uint8_t>();
  auto* records = d_records.get<PageRecord>();
  auto* statuses = d_statuses.get<ItemStatus>();
  CUDA_CHECK(cudaMemsetAsync(records, 0x7F, d_records.bytes(), s));
  CUDA_CHECK(cudaMemsetAsync(pages, 0x7F, d_pages.bytes(), s));
  std::size_t ctemp = 0, dtemp = 0, t = 0;
  ASSERT_TRUE(gpu::pages_compress_temp_size(n, p, &ctemp).ok());
  ASSERT_TRUE(gpu::pages_decompress_temp_size(n, p, &dtemp).ok());
  ASSERT_GT(ctemp, 0u);
  ASSERT_GT(dtemp, 0u);
  const DeviceBuffer d_ctemp(ctemp), d_dtemp(dtemp);
  void* const ct = d_ctemp.get();
  void* const dt = d_dtemp.get();
  using gpu::pages_compress_async;
  using gpu::pages_decompress_async;

  // No pages: nothing to do, even with null buffers.
  EXPECT_STATUS(pages_compress_async(nullptr, 0, p, nullptr, 0, nullptr, nullptr, s), StatusCode::ok);
  EXPECT_STATUS(pages_decompress_async(nullptr, nullptr, 0, p, nullptr, 0, nullptr, nullptr, s), StatusCode::ok);

  // Page sizes other than 4, 16 and 64 KiB.
  for (const std::size_t bad_size : {std::size_t{8192}, std::size_t{0}, std::size_t{4095}, std::size_t{131072}}) {
    SCOPED_TRACE(bad_size);
    EXPECT_STATUS(gpu::pages_compress_temp_size(n, bad_size, &t), StatusCode::invalid_argument);
    EXPECT_STATUS(gpu::pages_decompress_temp_size(n, bad_size, &t), StatusCode::invalid_argument);
    EXPECT_STATUS(pages_compress_async(pages, n, bad_size, ct, ctemp, slots, records, s),
                  StatusCode::invalid_argument);
    EXPECT_STATUS(pages_decompress_async(records, slots, n, bad_size, dt, dtemp, pages, statuses, s),
                  StatusCode::invalid_argument);
  }
  // Pages or slots off 16-byte alignment.
  for (const std::size_t off : {std::size_t{1}, std::size_t{4}, std::size_t{8}}) {
    SCOPED_TRACE(off);
    EXPECT_STATUS(pages_compress_async(pages + off, n, p, ct, ctemp, slots, records, s), StatusCode::invalid_argument);
    EXPECT_STATUS(pages_compress_async(pages, n, p, ct, ctemp, slots + off, records, s), StatusCode::invalid_argument);
    EXPECT_STATUS(pages_decompress_async(records, slots + off, n, p, dt, dtemp, pages, statuses, s),
                  StatusCode::invalid_argument);
    EXPECT_STATUS(pages_decompress_async(records, slots, n, p, dt, dtemp, pages + off, statuses, s),
                  StatusCode::invalid_argument);
  }
  // Less temporary storage than the size calls ask for, or none.
  EXPECT_STATUS(pages_compress_async(pages, n, p, ct, ctemp - 1, slots, records, s), StatusCode::invalid_argument);
  EXPECT_STATUS(pages_compress_async(pages, n, p, nullptr, ctemp, slots, records, s), StatusCode::invalid_argument);
  EXPECT_STATUS(pages_decompress_async(records, slots, n, p, dt, dtemp - 1, pages, statuses, s),
                StatusCode::invalid_argument);
  EXPECT_STATUS(pages_decompress_async(records, slots, n, p, nullptr, dtemp, pages, statuses, s),
                StatusCode::invalid_argument);
  // Null buffers the calls need.
  EXPECT_STATUS(pages_compress_async(nullptr, n, p, ct, ctemp, slots, records, s), StatusCode::invalid_argument);
  EXPECT_STATUS(pages_compress_async(pages, n, p, ct, ctemp, nullptr, records, s), StatusCode::invalid_argument);
  EXPECT_STATUS(pages_compress_async(pages, n, p, ct, ctemp, slots, nullptr, s), StatusCode::invalid_argument);
  EXPECT_STATUS(pages_decompress_async(nullptr, slots, n, p, dt, dtemp, pages, statuses, s),
                StatusCode::invalid_argument);
  EXPECT_STATUS(pages_decompress_async(records, slots, n, p, dt, dtemp, nullptr, statuses, s),
                StatusCode::invalid_argument);
  EXPECT_STATUS(gpu::pages_compress_temp_size(n, p, nullptr), StatusCode::invalid_argument);

  // None of them launched anything.
  const std::vector<std::uint8_t> r = download<std::uint8_t>(records, d_records.bytes(), s);
  const std::vector<std::uint8_t> pg = download<std::uint8_t>(pages, d_pages.bytes(), s);
  EXPECT_TRUE(std::all_of(r.begin(), r.end(), [](std::uint8_t b) { return b == 0x7F; })) << "records written";
  EXPECT_TRUE(std::all_of(pg.begin(), pg.end(), [](std::uint8_t b) { return b == 0x7F; })) << "pages written";

  // The host-resident calls with Backend::gpu: page size 8192.
  Bytes host(2 * 8192), host_slots(2 * 8192);
  std::vector<PageRecord> host_records(2);
  PageOptions o;
  o.backend = Backend::gpu;
  EXPECT_STATUS(compress_pages({host.data(), 2, 8192}, {host_slots.data(), host_slots.size()}, host_records, o),
                StatusCode::invalid_argument);
  EXPECT_STATUS(
      decompress_pages(host_records, {host_slots.data(), host_slots.size()}, 8192, {host.data(), host.size()}, {}, o),
      StatusCode::invalid_argument);
}

#else  // no CUDA in this build

TEST(PagesGpu, DeviceCalls) { GTEST_SKIP() << "built without CUDA"; }

// The calls exist and say why they cannot run.
TEST(PagesGpu, CallsSayNoDevice) {
  EXPECT_STATUS(gpu::pages_compress_async(nullptr, 1, 4096, nullptr, 0, nullptr, nullptr, nullptr),
                StatusCode::no_device);
  EXPECT_STATUS(gpu::pages_decompress_async(nullptr, nullptr, 1, 4096, nullptr, 0, nullptr, nullptr, nullptr),
                StatusCode::no_device);
}

#endif

}  // namespace
}  // namespace tandem
