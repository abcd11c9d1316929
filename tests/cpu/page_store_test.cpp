// The compressed page store: a million random puts, gets and erases (single
// and batched) on four threads over pages of every kind, each thread checking
// every get against its own plain map; threads fighting over shared ids, where
// every page read must be one whole page that some put wrote; the store's
// figures against ones computed independently from the reference; memory
// given back when the pages go. And the edges: ids not held, page sizes
// refused, 16 and 64 KiB pages, a repeated id in a batch, Silesia's memory
// figures.
//
// TANDEM_PAGE_STORE_OPS overrides the million operations (for runs under
// ThreadSanitizer, which is some 20 times slower).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pages/page_alloc.hpp"
#include "support/test_support.hpp"
#include "tandem/page_store.hpp"

namespace tandem {
namespace {

using test::Bytes;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::unique_ptr<PageStore> make_store(std::size_t page_size) {
  PageStoreOptions o;
  o.page_size = page_size;
  o.batch.backend = Backend::cpu;
  std::unique_ptr<PageStore> store;
  EXPECT_TRUE(PageStore::create(o, &store).ok());
  return store;
}

// What an allocator with nothing live may still hold: one reserve slab a class.
std::uint64_t empty_store_bound(std::size_t page_size) {
  const detail::PageAllocator a(page_size);
  std::uint64_t bytes = 0;
  for (std::size_t c = 0; c < a.class_count(); ++c) bytes += a.slab_bytes(c);
  return bytes;
}

// Sources for pages: windows of these give text that LZ4 takes to a third
// and noise it cannot take at all, without generating 4 KiB per page.
const Bytes& text_pool() {
  static const Bytes pool = test::text_like_bytes(1 << 18, 11);
  return pool;
}
const Bytes& noise_pool() {
  static const Bytes pool = test::random_bytes(1 << 18, 12);
  return pool;
}

void fill_word(std::uint8_t* page, std::size_t p, std::uint64_t word) {
  for (std::size_t i = 0; i < p; i += 8) std::memcpy(page + i, &word, 8);
}

// A page of one of six shapes, from one random number: zeros, a repeated
// byte, a repeated word, noise (kept raw), text (LZ4), and a noise prefix of
// any length before zeros (LZ4 blocks of every length, raw past 7/8).
void make_page(std::uint8_t* page, std::size_t p, std::uint64_t r) {
  const std::uint64_t s = mix(r);
  switch (r % 10) {
    case 0: std::memset(page, 0, p); break;
    case 1: std::memset(page, static_cast<int>(1 + s % 255), p); break;
    case 2: fill_word(page, p, s | 1); break;
    case 3:
    case 4: std::memcpy(page, noise_pool().data() + s % (noise_pool().size() - p), p); break;
    case 5:
    case 6:
    case 7: std::memcpy(page, text_pool().data() + s % (text_pool().size() - p), p); break;
    default: {
      const std::size_t prefix = s % p;
      std::memcpy(page, noise_pool().data() + (s >> 20) % (noise_pool().size() - p), prefix);
      std::memset(page + prefix, 0, p - prefix);
      break;
    }
  }
  // Noise and text pages carry r, so that no two are alike.
  if (r % 10 >= 3 && r % 10 <= 7) std::memcpy(page + (s >> 40) % (p - 8), &r, 8);
}

// A thread's failures: how many, and what the first one was.
struct Failures {
  std::uint64_t count = 0;
  std::string first;
  void add(const std::string& what) {
    if (count++ == 0) first = what;
  }
};

// ---- pages that say which put wrote them (the shared-id phase) ----
//
// Page (id, v) has a shape chosen by v: zero; a repeated word holding id and
// v; or 16 bytes of v and id followed by text, noise, or a noise prefix and
// zeros, all chosen by v. A reader recognises v from the page and regenerates
// the whole page to compare: a page torn between two puts cannot pass.
int version_shape(std::uint64_t v) { return static_cast<int>(mix(v ^ 0x5151) % 5); }
std::uint64_t version_word(PageId id, std::uint64_t v) { return ((id & 0xFFFFFF) << 40) | (v & 0xFFFFFFFFFFull); }

void make_version(std::uint8_t* page, std::size_t p, PageId id, std::uint64_t v) {
  const int shape = version_shape(v);
  if (shape == 0) {
    std::memset(page, 0, p);
    return;
  }
  if (shape == 1) {
    fill_word(page, p, version_word(id, v));
    return;
  }
  const std::uint64_t s = mix(v * 31 + id);
  if (shape == 2) std::memcpy(page, text_pool().data() + s % (text_pool().size() - p), p);
  if (shape == 3) std::memcpy(page, noise_pool().data() + s % (noise_pool().size() - p), p);
  if (shape == 4) {
    const std::size_t prefix = s % p;
    std::memcpy(page, noise_pool().data() + (s >> 20) % (noise_pool().size() - p), prefix);
    std::memset(page + prefix, 0, p - prefix);
  }
  std::memcpy(page, &v, 8);
  std::memcpy(page + 8, &id, 8);
}

// Whether page is (id, v) for some v; scratch is a page of room.
bool is_whole_version(const std::uint8_t* page, std::size_t p, PageId id, std::uint8_t* scratch) {
  std::uint64_t first;
  std::memcpy(&first, page, 8);
  bool repeated = true;
  for (std::size_t i = 8; i < p && repeated; i += 8) repeated = std::memcmp(page + i, &first, 8) == 0;
  if (repeated) {
    if (first == 0) return true;  // shape 0
    const std::uint64_t v = first & 0xFFFFFFFFFFull;
    return version_shape(v) == 1 && first == version_word(id, v);
  }
  std::uint64_t written_id;
  std::memcpy(&written_id, page + 8, 8);
  if (written_id != id || version_shape(first) < 2) return false;
  make_version(scratch, p, id, first);
  return std::memcmp(scratch, page, p) == 0;
}

std::uint64_t ops_wanted() {
  const char* env = std::getenv("TANDEM_PAGE_STORE_OPS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 1000000;
}

// THE store test. Four threads, each with its own ids and its own reference
// map, run a million operations between them: puts and gets and erases,
// single and in batches of 1..300 ids (repeats allowed), every get checked.
// Then the threads share 8 ids and check that every page they read is whole
// (so few that a put often replaces a page while another thread decodes it:
// a get that decoded outside its shard's lock failed here three runs in three).
// Then the store's figures are checked against the reference, and erasing
// everything gives the memory back.
TEST(PageStore, MillionRandomOpsOnFourThreads) {
  constexpr std::size_t p = 4096;
  constexpr int kThreads = 4;
  constexpr std::uint64_t kIdsPerThread = 2048;
  constexpr std::size_t kMaxBatch = 300;
  const std::uint64_t total_ops = ops_wanted();
  std::unique_ptr<PageStore> store = make_store(p);
  ASSERT_TRUE(store);

  using Reference = std::unordered_map<PageId, std::vector<std::uint8_t>>;
  std::vector<Reference> refs(kThreads);
  std::vector<Failures> failures(kThreads);
  std::vector<std::uint64_t> gets_checked(kThreads, 0), pages_moved(kThreads, 0);

  const auto worker = [&](int t) {
    Reference& ref = refs[t];
    Failures& fail = failures[t];
    std::mt19937_64 rng(1000 + t);
    const PageId base = static_cast<PageId>(t + 1) << 32;
    const auto pick_id = [&] { return base + rng() % kIdsPerThread; };
    std::vector<std::uint8_t> page(p), got(p), batch(kMaxBatch * p);
    std::vector<PageId> ids(kMaxBatch);
    std::vector<Status> statuses(kMaxBatch);
    const std::uint64_t ops = total_ops / kThreads + (static_cast<std::uint64_t>(t) < total_ops % kThreads ? 1 : 0);
    for (std::uint64_t op = 0; op < ops; ++op) {
      // Per 10,000: 10 put_batch, 10 get_batch, 10 erase_batch (150 pages
      // on average), 3,500 put, 4,500 get, 1,500 erase, 470 contains and
      // record. Puts outrun erases, so some 60% of the ids are held.
      const std::uint64_t dice = rng() % 10000;
      if (dice < 30) {
        // A batch: 1..300 ids of this thread (and for get_batch, some never held).
        const std::size_t n = 1 + rng() % kMaxBatch;
        for (std::size_t i = 0; i < n; ++i) ids[i] = dice >= 10 && dice < 20 && rng() % 8 == 0 ? base + kIdsPerThread + i : pick_id();
        const std::span<const PageId> span(ids.data(), n);
        pages_moved[t] += n;
        if (dice < 10) {
          for (std::size_t i = 0; i < n; ++i) make_page(batch.data() + i * p, p, rng());
          if (Status s = store->put_batch(span, batch.data()); !s) fail.add("put_batch: " + s.to_string());
          for (std::size_t i = 0; i < n; ++i) ref[ids[i]].assign(batch.data() + i * p, batch.data() + (i + 1) * p);
        } else if (dice < 20) {
          const Status s = store->get_batch(span, batch.data(), std::span<Status>(statuses.data(), n));
          bool all = true;
          for (std::size_t i = 0; i < n; ++i) {
            const auto it = ref.find(ids[i]);
            all = all && it != ref.end();
            if (it == ref.end()) {
              if (statuses[i].code != StatusCode::not_found) fail.add("get_batch found an id never put");
            } else if (!statuses[i] || std::memcmp(batch.data() + i * p, it->second.data(), p) != 0) {
              fail.add("get_batch page differs from the reference");
            }
          }
          if (s.ok() != all) fail.add("get_batch's status disagrees with its items");
          gets_checked[t] += n;
        } else {
          std::size_t held = 0;
          for (std::size_t i = 0; i < n; ++i) held += ref.erase(ids[i]);
          if (store->erase_batch(span) != held) fail.add("erase_batch count differs");
        }
      } else if (dice < 3530) {
        const PageId id = pick_id();
        make_page(page.data(), p, rng());
        if (Status s = store->put(id, page.data()); !s) fail.add("put: " + s.to_string());
        ref[id].assign(page.begin(), page.end());
        ++pages_moved[t];
      } else if (dice < 8030) {
        const PageId id = pick_id();
        const Status s = store->get(id, got.data());
        const auto it = ref.find(id);
        if (it == ref.end()) {
          if (s.code != StatusCode::not_found) fail.add("get of an id not held: " + s.to_string());
        } else if (!s || std::memcmp(got.data(), it->second.data(), p) != 0) {
          fail.add("get differs from the reference: " + s.to_string());
        }
        ++gets_checked[t];
        ++pages_moved[t];
      } else if (dice < 9530) {
        const PageId id = pick_id();
        if (store->erase(id) != (ref.erase(id) == 1)) fail.add("erase disagrees with the reference");
      } else {
        const PageId id = pick_id();
        PageRecord r;
        const bool held = ref.count(id) != 0;
        if (store->contains(id) != held) fail.add("contains disagrees with the reference");
        if (store->record(id, &r).ok() != held) fail.add("record disagrees with the reference");
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (std::thread& th : threads) th.join();
  threads.clear();

  std::uint64_t checked = 0, moved = 0;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t].count, 0u) << "thread " << t << ", first: " << failures[t].first;
    checked += gets_checked[t];
    moved += pages_moved[t];
  }
  ASSERT_GT(checked, total_ops / 3) << "most gets must have been checked";
  std::printf("[ info ] %llu operations, %llu pages moved, %llu gets checked, 0 mismatches\n",
              static_cast<unsigned long long>(total_ops), static_cast<unsigned long long>(moved),
              static_cast<unsigned long long>(checked));

  // ---- shared ids: every page read is one whole page some put wrote ----
  constexpr PageId kShared = PageId{1} << 48;
  constexpr std::uint64_t kSharedIds = 8;
  std::vector<std::uint64_t> whole_reads(kThreads, 0);
  const auto fighter = [&](int t) {
    Failures& fail = failures[t];
    std::mt19937_64 rng(2000 + t);
    std::vector<std::uint8_t> page(p), scratch(p), batch(16 * p);
    std::vector<PageId> ids(16);
    std::vector<Status> statuses(16);
    std::uint64_t version = 0;
    const auto next_version = [&] { return (++version << 3) | static_cast<std::uint64_t>(t); };
    const std::uint64_t ops = std::max<std::uint64_t>(total_ops / 10 / kThreads, 100);
    for (std::uint64_t op = 0; op < ops; ++op) {
      const PageId id = kShared + rng() % kSharedIds;
      const std::uint64_t dice = rng() % 100;
      if (dice < 40) {
        make_version(page.data(), p, id, next_version());
        if (!store->put(id, page.data())) fail.add("shared put failed");
      } else if (dice < 85) {
        const Status s = store->get(id, page.data());
        if (s.ok()) {
          if (!is_whole_version(page.data(), p, id, scratch.data())) fail.add("a torn page");
          ++whole_reads[t];
        } else if (s.code != StatusCode::not_found) {
          fail.add("shared get: " + s.to_string());
        }
      } else if (dice < 92) {
        store->erase(id);
      } else {
        const std::size_t n = 1 + rng() % 16;
        for (std::size_t i = 0; i < n; ++i) ids[i] = kShared + rng() % kSharedIds;
        const std::span<const PageId> span(ids.data(), n);
        if (dice < 96) {
          for (std::size_t i = 0; i < n; ++i) make_version(batch.data() + i * p, p, ids[i], next_version());
          if (!store->put_batch(span, batch.data())) fail.add("shared put_batch failed");
        } else {
          (void)store->get_batch(span, batch.data(), std::span<Status>(statuses.data(), n));
          for (std::size_t i = 0; i < n; ++i) {
            if (statuses[i].ok()) {
              if (!is_whole_version(batch.data() + i * p, p, ids[i], scratch.data())) fail.add("a torn batch page");
              ++whole_reads[t];
            } else if (statuses[i].code != StatusCode::not_found) {
              fail.add("shared get_batch: " + statuses[i].to_string());
            }
          }
        }
      }
    }
  };
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(fighter, t);
  for (std::thread& th : threads) th.join();
  std::uint64_t whole = 0;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t].count, 0u) << "thread " << t << ", first: " << failures[t].first;
    whole += whole_reads[t];
  }
  EXPECT_GT(whole, 0u);
  std::vector<PageId> shared(kSharedIds);
  for (std::uint64_t i = 0; i < kSharedIds; ++i) shared[i] = kShared + i;
  store->erase_batch(shared);
  for (const PageId id : shared) EXPECT_FALSE(store->contains(id));

  // ---- the figures, against the reference ----
  PageStoreStats want;
  std::vector<std::uint8_t> out(p), got(p);
  std::uint64_t mismatches = 0, record_mismatches = 0;
  for (const Reference& ref : refs) {
    for (const auto& [id, bytes] : ref) {
      PageRecord r;
      ASSERT_TRUE(compress_page(bytes.data(), p, out.data(), &r).ok());
      ++want.pages;
      want.stored_bytes += r.length;
      switch (r.kind) {
        case PageKind::zero: ++want.zero_pages; break;
        case PageKind::same_fill: ++want.same_fill_pages; break;
        case PageKind::stored: ++want.stored_pages; break;
        case PageKind::lz4: ++want.lz4_pages; break;
      }
      PageRecord held;
      if (!store->record(id, &held).ok() || held.kind != r.kind || held.length != r.length || held.fill != r.fill) {
        ++record_mismatches;
      }
      if (!store->get(id, got.data()).ok() || got != bytes) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(record_mismatches, 0u);
  const PageStoreStats s = store->stats();
  EXPECT_EQ(s.pages, want.pages);
  EXPECT_EQ(s.original_bytes, want.pages * p);
  EXPECT_EQ(s.zero_pages, want.zero_pages);
  EXPECT_EQ(s.same_fill_pages, want.same_fill_pages);
  EXPECT_EQ(s.stored_pages, want.stored_pages);
  EXPECT_EQ(s.lz4_pages, want.lz4_pages);
  EXPECT_EQ(s.stored_bytes, want.stored_bytes);
  EXPECT_GE(s.allocated_bytes, s.stored_bytes);
  EXPECT_EQ(s.overhead_bytes, s.allocated_bytes - s.stored_bytes);
  EXPECT_GT(s.index_bytes, 0u);
  // Every kind took part.
  EXPECT_GT(s.zero_pages, 0u);
  EXPECT_GT(s.same_fill_pages, 0u);
  EXPECT_GT(s.stored_pages, 0u);
  EXPECT_GT(s.lz4_pages, 0u);
  std::printf("[ info ] %llu pages: %llu zero, %llu same_fill, %llu stored, %llu lz4; stored %llu B, "
              "allocated %llu B (overhead %.1f%%), index ~%llu B; ratio %.2f, memory ratio %.2f\n",
              static_cast<unsigned long long>(s.pages), static_cast<unsigned long long>(s.zero_pages),
              static_cast<unsigned long long>(s.same_fill_pages), static_cast<unsigned long long>(s.stored_pages),
              static_cast<unsigned long long>(s.lz4_pages), static_cast<unsigned long long>(s.stored_bytes),
              static_cast<unsigned long long>(s.allocated_bytes),
              100.0 * static_cast<double>(s.overhead_bytes) / static_cast<double>(s.stored_bytes),
              static_cast<unsigned long long>(s.index_bytes), s.ratio(), s.memory_ratio());

  // ---- erasing everything gives the memory back ----
  std::size_t erased = 0;
  for (const Reference& ref : refs) {
    std::vector<PageId> ids;
    for (const auto& kv : ref) ids.push_back(kv.first);
    const std::size_t half = ids.size() / 2;
    erased += store->erase_batch(std::span<const PageId>(ids.data(), half));
    for (std::size_t i = half; i < ids.size(); ++i) erased += store->erase(ids[i]) ? 1 : 0;
  }
  EXPECT_EQ(erased, want.pages);
  const PageStoreStats e = store->stats();
  EXPECT_EQ(e.pages, 0u);
  EXPECT_EQ(e.stored_bytes, 0u);
  EXPECT_EQ(e.original_bytes, 0u);
  EXPECT_LE(e.allocated_bytes, empty_store_bound(p)) << "at most one empty slab a class is kept";
  EXPECT_LT(e.allocated_bytes, s.allocated_bytes);
}

TEST(PageStore, IdsNotHeld) {
  std::unique_ptr<PageStore> store = make_store(4096);
  ASSERT_TRUE(store);
  std::vector<std::uint8_t> page(4096, 0xAB);
  EXPECT_STATUS(store->get(7, page.data()), StatusCode::not_found);
  EXPECT_EQ(page[0], 0xAB) << "a failed get leaves the page alone";
  PageRecord r;
  EXPECT_STATUS(store->record(7, &r), StatusCode::not_found);
  EXPECT_FALSE(store->contains(7));
  EXPECT_FALSE(store->erase(7));
  ASSERT_TRUE(store->put(7, page.data()).ok());
  EXPECT_TRUE(store->contains(7));
  EXPECT_TRUE(store->erase(7));
  EXPECT_FALSE(store->erase(7)) << "erased once";
  EXPECT_STATUS(store->get(7, page.data()), StatusCode::not_found);

  // get_batch: the ids held decode, the others say not_found, and the call
  // reports the first failure.
  const std::vector<PageId> put_ids = {1, 3};
  std::vector<std::uint8_t> two(2 * 4096);
  std::memset(two.data(), 0x11, 4096);
  std::memcpy(two.data() + 4096, test::text_like_bytes(4096, 5).data(), 4096);
  ASSERT_TRUE(store->put_batch(put_ids, two.data()).ok());
  const std::vector<PageId> ids = {1, 2, 3, 4};
  std::vector<std::uint8_t> out(4 * 4096);
  std::vector<Status> st(4);
  EXPECT_STATUS(store->get_batch(ids, out.data(), st), StatusCode::not_found);
  EXPECT_TRUE(st[0].ok());
  EXPECT_EQ(st[1].code, StatusCode::not_found);
  EXPECT_TRUE(st[2].ok());
  EXPECT_EQ(st[3].code, StatusCode::not_found);
  EXPECT_EQ(std::memcmp(out.data(), two.data(), 4096), 0);
  EXPECT_EQ(std::memcmp(out.data() + 2 * 4096, two.data() + 4096, 4096), 0);
  EXPECT_STATUS(store->get_batch(ids, out.data()), StatusCode::not_found) << "without statuses too";
  EXPECT_TRUE(store->get_batch(put_ids, out.data()).ok());
  EXPECT_EQ(store->erase_batch(ids), 2u);
  EXPECT_EQ(store->stats().pages, 0u);
}

TEST(PageStore, BadArguments) {
  for (const std::size_t size : {std::size_t{0}, std::size_t{512}, std::size_t{4095}, std::size_t{8192},
                                 std::size_t{32768}, std::size_t{131072}}) {
    PageStoreOptions o;
    o.page_size = size;
    std::unique_ptr<PageStore> store = make_store(4096);
    EXPECT_STATUS(PageStore::create(o, &store), StatusCode::invalid_argument) << size;
    EXPECT_FALSE(store) << "a refused create leaves no store";
  }
  EXPECT_STATUS(PageStore::create({}, nullptr), StatusCode::invalid_argument);
  std::unique_ptr<PageStore> store = make_store(4096);
  ASSERT_TRUE(store);
  EXPECT_STATUS(store->put(1, nullptr), StatusCode::invalid_argument);
  EXPECT_STATUS(store->get(1, nullptr), StatusCode::invalid_argument);
  EXPECT_STATUS(store->record(1, nullptr), StatusCode::invalid_argument);
  const std::vector<PageId> ids = {1, 2};
  std::vector<std::uint8_t> pages(2 * 4096);
  std::vector<Status> st(3);
  EXPECT_STATUS(store->get_batch(ids, pages.data(), st), StatusCode::invalid_argument) << "3 statuses for 2 ids";
  EXPECT_STATUS(store->put_batch(ids, nullptr), StatusCode::invalid_argument);
  EXPECT_STATUS(store->get_batch(ids, nullptr), StatusCode::invalid_argument);
  EXPECT_TRUE(store->put_batch({}, nullptr).ok()) << "an empty batch is nothing to do";
  EXPECT_EQ(store->stats().pages, 0u);
}

// Every shape at 4, 16 and 64 KiB, single and batched, with the kinds and
// figures it should give.
TEST(PageStore, EveryPageSizeRoundTrips) {
  for (const std::size_t p : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}}) {
    std::unique_ptr<PageStore> store = make_store(p);
    ASSERT_TRUE(store);
    EXPECT_EQ(store->page_size(), p);
    constexpr std::size_t n = 40;
    std::vector<std::uint8_t> pages(n * p), got(n * p);
    std::vector<PageId> ids(n);
    for (std::size_t i = 0; i < n; ++i) {
      make_page(pages.data() + i * p, p, i);  // i % 10 walks every shape
      ids[i] = 1000 * i + 7;
    }
    for (std::size_t i = 0; i < n / 2; ++i) ASSERT_TRUE(store->put(ids[i], pages.data() + i * p).ok());
    ASSERT_TRUE(store->put_batch(std::span<const PageId>(ids).subspan(n / 2), pages.data() + n / 2 * p).ok());
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(store->get(ids[i], got.data()).ok());
      EXPECT_EQ(std::memcmp(got.data(), pages.data() + i * p, p), 0) << "page " << i << " of " << p;
    }
    std::fill(got.begin(), got.end(), 0xEE);
    ASSERT_TRUE(store->get_batch(ids, got.data()).ok());
    EXPECT_EQ(got, pages);
    PageRecord r;
    ASSERT_TRUE(store->record(ids[0], &r).ok());
    EXPECT_EQ(r.kind, PageKind::zero);
    ASSERT_TRUE(store->record(ids[1], &r).ok());
    EXPECT_EQ(r.kind, PageKind::same_fill);
    ASSERT_TRUE(store->record(ids[3], &r).ok());
    EXPECT_EQ(r.kind, PageKind::stored);
    EXPECT_EQ(r.length, p);
    ASSERT_TRUE(store->record(ids[5], &r).ok());
    EXPECT_EQ(r.kind, PageKind::lz4);
    EXPECT_LT(r.length, p / 2);
    const PageStoreStats s = store->stats();
    EXPECT_EQ(s.pages, n);
    EXPECT_EQ(s.original_bytes, n * p);
    EXPECT_EQ(s.zero_pages, n / 10);
    EXPECT_EQ(s.same_fill_pages, 2 * n / 10);
    EXPECT_GE(s.allocated_bytes, s.stored_bytes);
    EXPECT_GT(s.ratio(), 1.0);
    EXPECT_EQ(store->erase_batch(ids), n);
    EXPECT_LE(store->stats().allocated_bytes, empty_store_bound(p));
  }
}

// A put replaces the page and its slot; a repeated id in put_batch keeps its
// last page; the figures follow.
TEST(PageStore, ReplacingKeepsTheLastPage) {
  constexpr std::size_t p = 4096;
  std::unique_ptr<PageStore> store = make_store(p);
  ASSERT_TRUE(store);
  std::vector<std::uint8_t> noise(p), zeros(p, 0), text(p), got(p);
  make_page(noise.data(), p, 3);
  make_page(text.data(), p, 5);
  ASSERT_TRUE(store->put(9, noise.data()).ok());
  EXPECT_EQ(store->stats().stored_bytes, p);
  ASSERT_TRUE(store->put(9, zeros.data()).ok());
  PageStoreStats s = store->stats();
  EXPECT_EQ(s.pages, 1u);
  EXPECT_EQ(s.zero_pages, 1u);
  EXPECT_EQ(s.stored_pages, 0u);
  EXPECT_EQ(s.stored_bytes, 0u);
  EXPECT_EQ(s.ratio(), 0.0) << "nothing stored reads as 0";

  const std::vector<PageId> ids = {4, 9, 4, 4};
  std::vector<std::uint8_t> batch(4 * p);
  std::memcpy(batch.data(), noise.data(), p);
  std::memcpy(batch.data() + p, text.data(), p);
  std::memcpy(batch.data() + 2 * p, zeros.data(), p);
  std::memcpy(batch.data() + 3 * p, text.data(), p);
  ASSERT_TRUE(store->put_batch(ids, batch.data()).ok());
  ASSERT_TRUE(store->get(4, got.data()).ok());
  EXPECT_EQ(got, text) << "the last of id 4's pages";
  s = store->stats();
  EXPECT_EQ(s.pages, 2u);
  EXPECT_EQ(s.lz4_pages, 2u);
  PageRecord r;
  ASSERT_TRUE(store->record(4, &r).ok());
  EXPECT_EQ(s.stored_bytes, 2u * r.length);
  EXPECT_GT(s.memory_ratio(), 0.0);
  EXPECT_EQ(store->erase_batch(ids), 2u) << "4 once, 9 once";
  EXPECT_EQ(store->stats().stored_bytes, 0u);
}

TEST(PageStore, EmptyStoreFigures) {
  std::unique_ptr<PageStore> store = make_store(16384);
  ASSERT_TRUE(store);
  const PageStoreStats s = store->stats();
  EXPECT_EQ(s.pages, 0u);
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.ratio(), 0.0);
  EXPECT_EQ(s.memory_ratio(), 0.0) << "nothing stored, nothing saved";
  PageStoreStats by_hand;
  by_hand.original_bytes = 1000;
  by_hand.stored_bytes = 250;
  by_hand.allocated_bytes = 400;
  by_hand.index_bytes = 100;
  EXPECT_DOUBLE_EQ(by_hand.ratio(), 4.0);
  EXPECT_DOUBLE_EQ(by_hand.memory_ratio(), 2.0);
}

// Silesia's files as 4 KiB pages: what the store needs against what it holds.
TEST(PageStore, SilesiaMemoryFigures) {
  const std::filesystem::path dir = test::silesia_dir();
  if (dir.empty()) GTEST_SKIP() << "Silesia corpus not available";
  for (const std::size_t p : {std::size_t{4096}, std::size_t{65536}}) {
    std::unique_ptr<PageStore> store = make_store(p);
    ASSERT_TRUE(store);
    PageId next = 0;
    for (const std::string& name : test::silesia_names()) {
      const Bytes data = test::read_file(dir / name);
      const std::size_t n = data.size() / p;
      std::vector<PageId> ids(n);
      for (std::size_t i = 0; i < n; ++i) ids[i] = next++;
      ASSERT_TRUE(store->put_batch(ids, data.data()).ok()) << name;
    }
    const PageStoreStats s = store->stats();
    EXPECT_GE(s.allocated_bytes, s.stored_bytes);
    // Pages only went in, so every class has at most one slab not full. The
    // overhead is then at most: rounding up to a class (under a 64th of a
    // page a page), slab tails no slot fits (under a 64th of the slabs), and
    // one slab a class.
    const std::uint64_t bound = s.pages * (p / 64) + s.allocated_bytes / 64 + empty_store_bound(p);
    EXPECT_LE(s.overhead_bytes, bound);
    std::printf("[ info ] Silesia in %zu KiB pages: %llu pages (%llu lz4, %llu stored, %llu fill), original %llu B, "
                "stored %llu B (ratio %.2f), allocated %llu B (overhead %.2f%%, bound %.2f%%), index ~%llu B, "
                "memory ratio %.2f\n",
                p / 1024, static_cast<unsigned long long>(s.pages), static_cast<unsigned long long>(s.lz4_pages),
                static_cast<unsigned long long>(s.stored_pages),
                static_cast<unsigned long long>(s.zero_pages + s.same_fill_pages),
                static_cast<unsigned long long>(s.original_bytes), static_cast<unsigned long long>(s.stored_bytes),
                s.ratio(), static_cast<unsigned long long>(s.allocated_bytes),
                100.0 * static_cast<double>(s.overhead_bytes) / static_cast<double>(s.stored_bytes),
                100.0 * static_cast<double>(bound) / static_cast<double>(s.stored_bytes),
                static_cast<unsigned long long>(s.index_bytes), s.memory_ratio());
  }
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// memory_limit: puts that need more memory fail with out_of_memory and change
// nothing; pages without data still go in; erasing makes room again.
TEST(PageStore, MemoryLimitRefusesPutsAndChangesNothing) {
  constexpr std::size_t p = 4096;
  PageStoreOptions o;
  o.page_size = p;
  o.memory_limit = 64 * 1024;
  std::unique_ptr<PageStore> store;
  ASSERT_TRUE(PageStore::create(o, &store).ok());
  std::vector<std::uint8_t> page(p), got(p);
  PageId id = 0;
  Status s;
  for (; id < 1000; ++id) {
    make_page(page.data(), p, 10 * id + 3);  // noise: kept raw, a page of memory each
    s = store->put(id, page.data());
    if (!s) break;
  }
  ASSERT_LT(id, 1000u) << "the limit never bit";
  EXPECT_PRED_FORMAT2(test::StatusIs, s, StatusCode::out_of_memory);
  EXPECT_FALSE(store->contains(id));
  const PageStoreStats full = store->stats();
  EXPECT_EQ(full.pages, id);
  EXPECT_LE(full.allocated_bytes, o.memory_limit);
  // Replacing a held page with one that needs memory fails too and keeps the old page.
  make_page(page.data(), p, 10 * 7 + 3);
  std::vector<std::uint8_t> other(p);
  make_page(other.data(), p, 10 * 5000 + 3);
  if (id > 7) {
    const Status r = store->put(7, other.data());
    if (!r) {
      ASSERT_TRUE(store->get(7, got.data()).ok());
      EXPECT_EQ(got, page);
    }
  }
  // Zero pages need no memory.
  std::vector<std::uint8_t> zeros(p, 0);
  EXPECT_TRUE(store->put(5000, zeros.data()).ok());
  // Erasing makes room.
  for (PageId k = 0; k < id; ++k) EXPECT_TRUE(store->erase(k));
  make_page(page.data(), p, 10 * id + 3);
  EXPECT_TRUE(store->put(id, page.data()).ok());
  ASSERT_TRUE(store->get(id, got.data()).ok());
  EXPECT_EQ(got, page);
}

}  // namespace
}  // namespace tandem
