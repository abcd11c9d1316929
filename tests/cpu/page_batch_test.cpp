// Page batches on the CPU: every kind round-trips, the records are what the
// GPU's steps give (through their emulation), every LZ4 page decodes with
// liblz4, real pages (Silesia, this process's own memory) round-trip, and
// corrupt records give bad_data for their page alone.
#include <lz4.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/pages_gpu_emulate.hpp"
#include "pages/page_codec.hpp"
#include "support/test_support.hpp"
#include "tandem/pages.hpp"

namespace tandem {
namespace {

using test::Bytes;

// A 16-byte aligned buffer of n bytes.
struct Aligned {
  explicit Aligned(std::size_t n) : v(n + 16) {}
  std::uint8_t* data() {
    return v.data() + ((16 - reinterpret_cast<std::uintptr_t>(v.data()) % 16) % 16);
  }
  std::vector<std::uint8_t> v;
};

// Pages of every kind: zeros, a repeated byte, a repeated 8-byte word,
// random (stored raw), text (lz4), and near misses of the fills.
Bytes mixed_pages(std::size_t count, std::size_t p, std::uint64_t seed) {
  Bytes out;
  out.reserve(count * p);
  for (std::size_t i = 0; i < count; ++i) {
    Bytes page;
    switch ((i + seed) % 7) {
      case 0: page.assign(p, 0); break;
      case 1: page.assign(p, static_cast<std::uint8_t>(0x5a + i)); break;
      case 2: {
        const std::uint64_t w = 0x0123456789abcdefull * (i + 1);
        page.resize(p);
        for (std::size_t k = 0; k < p; k += 8) std::memcpy(page.data() + k, &w, 8);
        break;
      }
      case 3: page = test::random_bytes(p, seed * 1000 + i); break;
      case 4: page = test::text_like_bytes(p, seed * 1000 + i); break;
      case 5:  // zeros but for the last byte
        page.assign(p, 0);
        page[p - 1] = 1;
        break;
      default: page = test::mixed_bytes(p, seed * 1000 + i); break;
    }
    out.insert(out.end(), page.begin(), page.end());
  }
  return out;
}

struct Compressed {
  std::vector<PageRecord> records;
  Bytes slots;
};

Compressed compress_cpu(const Bytes& pages, std::size_t p, int threads = 0) {
  Compressed c;
  const std::size_t n = pages.size() / p;
  c.records.resize(n);
  c.slots.resize(n * p);
  PageOptions o;
  o.backend = Backend::cpu;
  o.threads = threads;
  Backend ran = Backend::automatic;
  EXPECT_TRUE(compress_pages({pages.data(), n, p}, {c.slots.data(), c.slots.size()}, c.records, o, &ran).ok());
  EXPECT_EQ(ran, Backend::cpu);
  return c;
}

Bytes decompress_cpu(const Compressed& c, std::size_t p, std::vector<Status>* statuses = nullptr) {
  Bytes out(c.records.size() * p, 0xee);
  std::vector<Status> st(c.records.size());
  PageOptions o;
  o.backend = Backend::cpu;
  (void)decompress_pages(c.records, {c.slots.data(), c.slots.size()}, p, {out.data(), out.size()}, st, o);
  if (statuses) *statuses = st;
  return out;
}

void expect_round_trip(const Bytes& pages, std::size_t p) {
  const Compressed c = compress_cpu(pages, p);
  std::vector<Status> st;
  const Bytes back = decompress_cpu(c, p, &st);
  for (std::size_t i = 0; i < st.size(); ++i) ASSERT_TRUE(st[i].ok()) << "page " << i << ": " << st[i].to_string();
  ASSERT_TRUE(back == pages);
  for (std::size_t i = 0; i < c.records.size(); ++i) {
    const PageRecord& r = c.records[i];
    const std::uint8_t* page = pages.data() + i * p;
    switch (r.kind) {
      case PageKind::zero:
        EXPECT_EQ(r.length, 0u);
        EXPECT_TRUE(std::all_of(page, page + p, [](std::uint8_t b) { return b == 0; }));
        break;
      case PageKind::same_fill: {
        EXPECT_EQ(r.length, 0u);
        EXPECT_NE(r.fill, 0u);
        std::uint64_t w;
        std::memcpy(&w, page, 8);
        EXPECT_EQ(w, r.fill);
        break;
      }
      case PageKind::stored:
        EXPECT_EQ(r.length, p);
        EXPECT_EQ(0, std::memcmp(c.slots.data() + i * p, page, p));
        break;
      case PageKind::lz4: {
        ASSERT_GT(r.length, 0u);
        ASSERT_LE(r.length, page_max_compressed(p));
        // liblz4 reads every LZ4 page.
        Bytes dec(p);
        const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(c.slots.data() + i * p),
                                            reinterpret_cast<char*>(dec.data()), static_cast<int>(r.length),
                                            static_cast<int>(p));
        ASSERT_EQ(got, static_cast<int>(p)) << "page " << i;
        EXPECT_EQ(0, std::memcmp(dec.data(), page, p));
        break;
      }
      default: ADD_FAILURE() << "unknown kind";
    }
  }
}

TEST(PageBatch, EveryKindRoundTrips) {
  for (const std::size_t p : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}}) {
    SCOPED_TRACE(p);
    const std::size_t count = p == 65536 ? 21 : 70;
    const Bytes pages = mixed_pages(count, p, 3);
    expect_round_trip(pages, p);
    const Compressed c = compress_cpu(pages, p);
    std::size_t kinds[4] = {};
    for (const PageRecord& r : c.records) ++kinds[static_cast<int>(r.kind)];
    EXPECT_GT(kinds[0], 0u);
    EXPECT_GT(kinds[1], 0u);
    EXPECT_GT(kinds[2], 0u);
    EXPECT_GT(kinds[3], 0u);
  }
}

TEST(PageBatch, OneThreadAndAllThreadsAgree) {
  const Bytes pages = mixed_pages(200, 4096, 9);
  const Compressed a = compress_cpu(pages, 4096, 1);
  const Compressed b = compress_cpu(pages, 4096, 0);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(&a.records[i], &b.records[i], sizeof(PageRecord)));
    EXPECT_EQ(0, std::memcmp(a.slots.data() + i * 4096, b.slots.data() + i * 4096, a.records[i].length));
  }
}

// The GPU's page steps (emulated) give the CPU backend's records and bytes,
// and decode them.
void expect_gpu_steps_agree(const Bytes& pages, std::size_t p) {
  const Compressed c = compress_cpu(pages, p);
  Aligned page(p), slot(p), back(p);
  for (std::size_t i = 0; i < c.records.size(); ++i) {
    std::memcpy(page.data(), pages.data() + i * p, p);
    const PageRecord r = gpu::page_compress_emulated(page.data(), p, slot.data());
    ASSERT_EQ(0, std::memcmp(&r, &c.records[i], sizeof r)) << "page " << i << ": kinds " << page_kind_name(r.kind)
                                                         << " / " << page_kind_name(c.records[i].kind);
    ASSERT_EQ(0, std::memcmp(slot.data(), c.slots.data() + i * p, r.length)) << "page " << i;
    std::memset(back.data(), 0xee, p);
    ASSERT_EQ(gpu::page_decompress_emulated(r, slot.data(), p, back.data()), gpu::ItemStatus::ok);
    ASSERT_EQ(0, std::memcmp(back.data(), page.data(), p)) << "page " << i;
  }
}

TEST(PageBatch, GpuStepsGiveTheCpuRecords) {
  expect_gpu_steps_agree(mixed_pages(35, 4096, 5), 4096);
  expect_gpu_steps_agree(mixed_pages(7, 16384, 6), 16384);
  expect_gpu_steps_agree(mixed_pages(7, 65536, 7), 65536);
}

TEST(PageBatch, SilesiaPagesRoundTripAndAgreeWithGpuSteps) {
  if (test::silesia_dir().empty()) GTEST_SKIP() << "the Silesia corpus is not available (set TANDEM_CORPUS)";
  test::for_each_silesia_file_in_pages(4096, [](const Bytes& data) {
    expect_round_trip(data, 4096);
    // The emulation is slow: a sample of pages from across the file.
    Bytes sample;
    const std::size_t n = data.size() / 4096;
    for (std::size_t k = 0; k < 24; ++k) {
      const std::size_t i = k * (n / 24);
      sample.insert(sample.end(), data.begin() + i * 4096, data.begin() + (i + 1) * 4096);
    }
    expect_gpu_steps_agree(sample, 4096);
  });
}

// This process's own memory, read while the test runs: a memory image as
// compressed swap sees it (heap, stacks, libraries, zero pages).
Bytes own_memory_image(std::size_t limit) {
  Bytes image;
  std::ifstream maps("/proc/self/maps");
  std::ifstream mem("/proc/self/mem", std::ios::binary);
  std::string line;
  while (std::getline(maps, line) && image.size() < limit) {
    std::istringstream f(line);
    std::string range, perms;
    f >> range >> perms;
    if (perms.size() < 4 || perms[0] != 'r' || line.find("[vvar") != std::string::npos ||
        line.find("[vsyscall") != std::string::npos) {
      continue;
    }
    const std::size_t dash = range.find('-');
    const std::uint64_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const std::uint64_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(hi - lo, limit - image.size()));
    Bytes region(n / 4096 * 4096);
    mem.clear();
    mem.seekg(static_cast<std::streamoff>(lo));
    if (!mem.read(reinterpret_cast<char*>(region.data()), static_cast<std::streamsize>(region.size()))) continue;
    image.insert(image.end(), region.begin(), region.end());
  }
  return image;
}

TEST(PageBatch, OwnMemoryImageRoundTrips) {
  // Some zero pages for certain, whatever the allocator did.
  std::vector<std::uint8_t> zeros(64 * 4096, 0);
  const Bytes image = own_memory_image(std::size_t{48} << 20);
  if (image.size() < 64 * 4096) GTEST_SKIP() << "cannot read /proc/self/mem here";
  expect_round_trip(image, 4096);
  const Compressed c = compress_cpu(image, 4096);
  std::size_t zero = 0;
  for (const PageRecord& r : c.records) zero += r.kind == PageKind::zero;
  EXPECT_GT(zero, 0u);
  EXPECT_EQ(zeros[100], 0);
}

TEST(PageBatch, CorruptRecordsFailTheirPageAlone) {
  const std::size_t p = 4096;
  const Bytes pages = mixed_pages(14, p, 1);
  Compressed c = compress_cpu(pages, p);
  std::size_t lz4_page = c.records.size(), stored_page = c.records.size(), fill_page = c.records.size();
  for (std::size_t i = 0; i < c.records.size(); ++i) {
    if (c.records[i].kind == PageKind::lz4 && lz4_page == c.records.size()) lz4_page = i;
    if (c.records[i].kind == PageKind::stored) stored_page = i;
    if (c.records[i].kind == PageKind::same_fill) fill_page = i;
  }
  ASSERT_LT(lz4_page, c.records.size());
  ASSERT_LT(stored_page, c.records.size());
  ASSERT_LT(fill_page, c.records.size());

  struct Case {
    const char* what;
    std::size_t page;
    std::function<void(PageRecord&, std::uint8_t*)> corrupt;
  };
  const std::vector<Case> cases = {
      {"unknown kind", lz4_page, [](PageRecord& r, std::uint8_t*) { r.kind = static_cast<PageKind>(9); }},
      {"lz4 length 0", lz4_page, [](PageRecord& r, std::uint8_t*) { r.length = 0; }},
      {"lz4 length past the limit", lz4_page, [](PageRecord& r, std::uint8_t*) { r.length = 4000; }},
      {"lz4 length short by one", lz4_page, [](PageRecord& r, std::uint8_t*) { r.length -= 1; }},
      {"lz4 block garbage", lz4_page,
       [](PageRecord& r, std::uint8_t* d) { std::memset(d, 0xff, r.length); }},
      {"lz4 block with a short page", lz4_page,
       [](PageRecord& r, std::uint8_t* d) {
         d[0] = 0x50;  // 5 literals, no match: decodes to 5 bytes
         r.length = 6;
       }},
      {"stored with a short length", stored_page, [](PageRecord& r, std::uint8_t*) { r.length = 100; }},
      {"zero with a length", fill_page,
       [](PageRecord& r, std::uint8_t*) {
         r.kind = PageKind::zero;
         r.fill = 0;
         r.length = 8;
       }},
      {"same_fill with a length", fill_page, [](PageRecord& r, std::uint8_t*) { r.length = 1; }},
      {"zero with a fill", fill_page,
       [](PageRecord& r, std::uint8_t*) {
         r.kind = PageKind::zero;
         r.fill = 1;
       }},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Compressed bad = c;
    k.corrupt(bad.records[k.page], bad.slots.data() + k.page * p);
    std::vector<Status> st;
    const Bytes back = decompress_cpu(bad, p, &st);
    for (std::size_t i = 0; i < st.size(); ++i) {
      if (i == k.page) {
        EXPECT_PRED_FORMAT2(test::StatusIs, st[i], StatusCode::bad_data);
      } else {
        ASSERT_TRUE(st[i].ok()) << i;
        ASSERT_EQ(0, std::memcmp(back.data() + i * p, pages.data() + i * p, p)) << i;
      }
    }
    // The GPU's steps say the same.
    Aligned slot(p), page(p);
    std::memcpy(slot.data(), bad.slots.data() + k.page * p, p);
    EXPECT_NE(gpu::page_decompress_emulated(bad.records[k.page], slot.data(), p, page.data()), gpu::ItemStatus::ok);
  }
}

TEST(PageBatch, BadArguments) {
  Bytes pages(4096 * 2), slots(4096 * 2), out(4096 * 2);
  std::vector<PageRecord> records(2);
  PageOptions o;
  o.backend = Backend::cpu;
  EXPECT_PRED_FORMAT2(test::StatusIs, compress_pages({pages.data(), 2, 4000}, {slots.data(), slots.size()}, records, o),
                      StatusCode::invalid_argument);
  EXPECT_PRED_FORMAT2(test::StatusIs, compress_pages({pages.data(), 2, 4096}, {slots.data(), 4096}, records, o),
                      StatusCode::output_too_small);
  EXPECT_PRED_FORMAT2(test::StatusIs, compress_pages({pages.data(), 3, 4096}, {slots.data(), slots.size()}, records, o),
                      StatusCode::invalid_argument);
  EXPECT_PRED_FORMAT2(test::StatusIs, compress_pages({nullptr, 2, 4096}, {slots.data(), slots.size()}, records, o),
                      StatusCode::invalid_argument);
  ASSERT_TRUE(compress_pages({pages.data(), 2, 4096}, {slots.data(), slots.size()}, records, o).ok());
  EXPECT_PRED_FORMAT2(test::StatusIs,
                      decompress_pages(records, {slots.data(), slots.size()}, 4096, {out.data(), 4096}, {}, o),
                      StatusCode::output_too_small);
  EXPECT_TRUE(decompress_pages(records, {slots.data(), slots.size()}, 4096, {out.data(), out.size()}, {}, o).ok());
  EXPECT_TRUE(out == pages);
}

TEST(PageBatch, GpuBackendWithoutDeviceSaysSo) {
  if (backend_info().gpu_count > 0) GTEST_SKIP() << "this machine has a GPU";
  Bytes pages(4096), slots(4096);
  std::vector<PageRecord> records(1);
  PageOptions o;
  o.backend = Backend::gpu;
  EXPECT_PRED_FORMAT2(test::StatusIs, compress_pages({pages.data(), 1, 4096}, {slots.data(), slots.size()}, records, o),
                      StatusCode::no_device);
  // automatic runs on the CPU.
  o.backend = Backend::automatic;
  Backend ran = Backend::gpu;
  EXPECT_TRUE(compress_pages({pages.data(), 1, 4096}, {slots.data(), slots.size()}, records, o, &ran).ok());
  EXPECT_EQ(ran, Backend::cpu);
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// Backend::automatic's crossover: the GPU only for batches large for the
// CPU's threads, never for one page, sooner for compression (the GPU's lead
// is larger there), at the same bytes whatever the page size.
TEST(PageBatch, AutoCrossoverGrowsWithThreads) {
  for (const bool compress : {true, false}) {
    SCOPED_TRACE(compress ? "compress" : "decompress");
    for (const int threads : {1, 2, 16, 64}) {
      EXPECT_FALSE(page_batch_prefers_gpu(compress, 1, 4096, threads));
      EXPECT_TRUE(page_batch_prefers_gpu(compress, 1000000, 4096, threads));
      std::size_t first = 1;  // the smallest batch that goes to the GPU
      while (!page_batch_prefers_gpu(compress, first, 4096, threads)) first *= 2;
      EXPECT_TRUE(page_batch_prefers_gpu(compress, first * 2, 4096, threads));
      EXPECT_FALSE(page_batch_prefers_gpu(compress, first / 2, 4096, 2 * threads));
      // The same bytes in 64 KiB pages.
      EXPECT_TRUE(page_batch_prefers_gpu(compress, (first + 15) / 16, 65536, threads));
    }
    EXPECT_LT(pages::kGpuCompressPagesPerThread, pages::kGpuDecompressPagesPerThread);
  }
}

}  // namespace
}  // namespace tandem
