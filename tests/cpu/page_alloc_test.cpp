// The size-class allocator behind PageStore: its geometry, every size from 1
// to the page, slots that keep their bytes through random churn, accounting
// that equals the live allocations, empty slabs going back to the heap, the
// memory limit, and threads allocating and freeing at once.
#include <algorithm>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "pages/page_alloc.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::StatusCode;
using tandem::detail::PageAllocator;
using Handle = PageAllocator::Handle;

// A live allocation and the seed of the bytes written into it.
struct Live {
  Handle handle;
  std::size_t size;
  std::uint64_t seed;
};

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void fill(void* p, std::size_t n, std::uint64_t seed) {
  auto* b = static_cast<std::uint8_t*>(p);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t v = mix(seed + i);
    std::memcpy(b + i, &v, std::min<std::size_t>(8, n - i));
  }
}

bool holds(const void* p, std::size_t n, std::uint64_t seed) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t v = mix(seed + i);
    if (std::memcmp(b + i, &v, std::min<std::size_t>(8, n - i)) != 0) return false;
  }
  return true;
}

// The most memory an allocator with nothing live may hold: one reserve slab a class.
std::uint64_t reserve_bound(const PageAllocator& a) {
  std::uint64_t bytes = 0;
  for (std::size_t c = 0; c < a.class_count(); ++c) bytes += a.slab_bytes(c);
  return bytes;
}

// Checks the allocator's figures against the live allocations.
void expect_accounting(const PageAllocator& a, const std::vector<Live>& live) {
  std::uint64_t requested = 0, used = 0;
  for (const Live& l : live) {
    requested += l.size;
    used += a.slot_size(l.handle);
  }
  const tandem::detail::PageAllocStats s = a.stats();
  EXPECT_EQ(s.slots, live.size());
  EXPECT_EQ(s.requested_bytes, requested);
  EXPECT_EQ(s.used_bytes, used);
  EXPECT_GE(s.allocated_bytes, s.used_bytes);
  EXPECT_EQ(a.allocated_bytes(), s.allocated_bytes) << "the lock-free figure agrees when nothing runs";
}

TEST(PageAlloc, Geometry) {
  for (const std::size_t page : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}}) {
    const PageAllocator a(page);
    std::size_t reserve = 0;
    ASSERT_EQ(a.class_count(), PageAllocator::kClasses);
    EXPECT_EQ(a.class_step(), page / 64);
    EXPECT_EQ(a.class_size(a.class_count() - 1), page);
    for (std::size_t c = 0; c < a.class_count(); ++c) {
      const std::size_t slab = a.slab_bytes(c), slot = a.class_size(c);
      EXPECT_EQ(slot, (c + 1) * a.class_step());
      EXPECT_EQ(slab % PageAllocator::kSlabUnit, 0u);
      EXPECT_GE(slab, slot);
      EXPECT_LE(slab / slot, PageAllocator::kMaxSlabSlots);
      // The tail no slot fits is at most 1/64 of the slab, and the slab is
      // the fewest OS pages for which it is.
      EXPECT_LE((slab % slot) * PageAllocator::kTailShare, slab) << "page " << page << " class " << c;
      for (std::size_t fewer = slab - PageAllocator::kSlabUnit; fewer >= slot; fewer -= PageAllocator::kSlabUnit) {
        EXPECT_GT((fewer % slot) * PageAllocator::kTailShare, fewer) << "page " << page << " class " << c;
      }
      reserve += slab;
    }
    // What a class may hold unused is about a slab: 1.5 MiB over all the
    // classes of 4 KiB pages, 5 MiB for 64 KiB pages.
    EXPECT_LE(reserve, page == 4096 ? (1600u << 10) : page == 16384 ? (3100u << 10) : (5100u << 10)) << page;
    // Every size goes to the smallest class that holds it.
    for (std::size_t size = 1; size <= page; ++size) {
      const std::size_t c = a.class_for(size);
      ASSERT_LT(c, a.class_count());
      ASSERT_GE(a.class_size(c), size);
      if (c > 0) {
        ASSERT_LT(a.class_size(c - 1), size);
      }
    }
  }
}

TEST(PageAlloc, InvalidSizes) {
  PageAllocator a(4096);
  Handle h = 123;
  EXPECT_STATUS(a.allocate(0, &h), StatusCode::invalid_argument);
  EXPECT_EQ(h, PageAllocator::kNoHandle);
  EXPECT_STATUS(a.allocate(4097, &h), StatusCode::invalid_argument);
  EXPECT_EQ(a.stats().allocated_bytes, 0u);
  a.free(PageAllocator::kNoHandle);  // ignored
  EXPECT_EQ(a.stats().slots, 0u);
}

// Every size 1..page at once (4 KiB pages), or every class edge and a spread
// of sizes between (16 and 64 KiB pages, where every size would be gigabytes).
TEST(PageAlloc, EverySizeHoldsItsBytes) {
  for (const std::size_t page : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}}) {
    PageAllocator a(page);
    std::vector<std::size_t> sizes;
    if (page == 4096) {
      for (std::size_t s = 1; s <= page; ++s) sizes.push_back(s);
    } else {
      for (std::size_t s = 1; s <= page; s += 97) sizes.push_back(s);
      for (std::size_t k = 1; k <= 64; ++k) {
        const std::size_t edge = k * a.class_step();
        for (const std::size_t s : {edge - 1, edge, edge + 1}) {
          if (s >= 1 && s <= page) sizes.push_back(s);
        }
      }
    }
    std::vector<Live> live;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      Handle h = PageAllocator::kNoHandle;
      ASSERT_TRUE(a.allocate(sizes[i], &h).ok()) << sizes[i];
      ASSERT_NE(h, PageAllocator::kNoHandle);
      EXPECT_EQ(PageAllocator::requested_size(h), sizes[i]);
      EXPECT_GE(a.slot_size(h), sizes[i]);
      // Slots start on cache lines (the class spacing is a multiple of 64).
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data(h)) % 64, 0u);
      fill(a.data(h), sizes[i], i);
      live.push_back({h, sizes[i], i});
    }
    for (const Live& l : live) ASSERT_TRUE(holds(a.data(l.handle), l.size, l.seed)) << "size " << l.size;
    expect_accounting(a, live);
    for (const Live& l : live) a.free(l.handle);
    const tandem::detail::PageAllocStats s = a.stats();
    EXPECT_EQ(s.slots, 0u);
    EXPECT_EQ(s.used_bytes, 0u);
    EXPECT_EQ(s.requested_bytes, 0u);
    EXPECT_LE(s.allocated_bytes, reserve_bound(a));
    a.trim();
    EXPECT_EQ(a.stats().allocated_bytes, 0u);
    EXPECT_EQ(a.stats().slabs, 0u);
  }
}

// Random allocations and frees, sizes skewed as compressed pages are (many
// small, a share of whole pages): every slot keeps its bytes until freed, and
// the figures match the live set throughout.
TEST(PageAlloc, RandomChurnKeepsBytesAndAccounts) {
  PageAllocator a(4096);
  std::mt19937_64 rng(7);
  std::vector<Live> live;
  std::uint64_t peak = 0;
  for (int op = 0; op < 300000; ++op) {
    // Grow for the first half, then shrink, so slabs fill and then drain.
    const bool grow = op < 150000 ? rng() % 10 < 6 : rng() % 10 < 4;
    if (grow || live.empty()) {
      std::size_t size;
      switch (rng() % 4) {
        case 0: size = 1 + rng() % 64; break;
        case 1: size = 4096; break;
        default: size = 1 + rng() % 4096; break;
      }
      Handle h;
      ASSERT_TRUE(a.allocate(size, &h).ok());
      const std::uint64_t seed = rng();
      fill(a.data(h), size, seed);
      live.push_back({h, size, seed});
    } else {
      const std::size_t i = rng() % live.size();
      ASSERT_TRUE(holds(a.data(live[i].handle), live[i].size, live[i].seed)) << "op " << op;
      a.free(live[i].handle);
      live[i] = live.back();
      live.pop_back();
    }
    if (op % 10000 == 0) {
      expect_accounting(a, live);
      peak = std::max(peak, a.stats().allocated_bytes);
    }
  }
  for (const Live& l : live) ASSERT_TRUE(holds(a.data(l.handle), l.size, l.seed));
  expect_accounting(a, live);
  // Memory follows the live set down: what is held beyond the slots in use
  // is bounded by the slabs partly used.
  for (const Live& l : live) a.free(l.handle);
  live.clear();
  expect_accounting(a, live);
  EXPECT_LE(a.stats().allocated_bytes, reserve_bound(a));
  EXPECT_LT(a.stats().allocated_bytes, peak);
}

// A class keeps one empty slab in reserve and gives back any other.
TEST(PageAlloc, EmptySlabsGoBack) {
  PageAllocator a(4096);
  const std::size_t size = 1000;
  const std::size_t c = a.class_for(size);
  const std::size_t per = a.slab_bytes(c) / a.class_size(c);
  const std::uint64_t slab = a.slab_bytes(c);
  std::vector<Handle> handles(3 * per);
  for (Handle& h : handles) ASSERT_TRUE(a.allocate(size, &h).ok());
  EXPECT_EQ(a.stats().slabs, 3u);
  EXPECT_EQ(a.stats().allocated_bytes, 3 * slab);
  // A fresh class fills one slab before it takes the next: slab k holds
  // handles [k * per, (k + 1) * per).
  for (std::size_t i = 0; i < per; ++i) a.free(handles[i]);
  EXPECT_EQ(a.stats().allocated_bytes, 3 * slab) << "the first empty slab is kept in reserve";
  for (std::size_t i = per; i < 2 * per; ++i) a.free(handles[i]);
  EXPECT_EQ(a.stats().allocated_bytes, 2 * slab) << "a second empty slab goes back";
  // The reserve serves the next slab's worth.
  for (std::size_t i = 0; i < per; ++i) ASSERT_TRUE(a.allocate(size, &handles[i]).ok());
  EXPECT_EQ(a.stats().allocated_bytes, 2 * slab);
  for (std::size_t i = 0; i < per; ++i) a.free(handles[i]);
  for (std::size_t i = 2 * per; i < 3 * per; ++i) a.free(handles[i]);
  EXPECT_EQ(a.stats().allocated_bytes, slab);
  a.trim();
  EXPECT_EQ(a.stats().allocated_bytes, 0u);
}

// Frees that leave every slab partly used keep the slabs; freeing the rest
// of each one gives them back.
TEST(PageAlloc, PartlyUsedSlabsDrain) {
  PageAllocator a(4096);
  const std::size_t size = 300;
  const std::size_t c = a.class_for(size);
  const std::size_t per = a.slab_bytes(c) / a.class_size(c);
  std::vector<Handle> handles(8 * per);
  for (Handle& h : handles) ASSERT_TRUE(a.allocate(size, &h).ok());
  for (std::size_t i = 0; i < handles.size(); i += 2) a.free(handles[i]);
  EXPECT_EQ(a.stats().slabs, 8u);
  for (std::size_t i = 1; i < handles.size(); i += 2) a.free(handles[i]);
  EXPECT_EQ(a.stats().slabs, 1u);
}

TEST(PageAlloc, OutOfMemoryAtTheLimit) {
  PageAllocator probe(4096);
  const std::size_t size = 2000;
  const std::size_t c = probe.class_for(size);
  PageAllocator a(4096, probe.slab_bytes(c));
  const std::size_t per = a.slab_bytes(c) / a.class_size(c);
  std::vector<Handle> handles(per);
  for (Handle& h : handles) ASSERT_TRUE(a.allocate(size, &h).ok());
  Handle more = 99;
  EXPECT_STATUS(a.allocate(size, &more), StatusCode::out_of_memory);
  EXPECT_EQ(more, PageAllocator::kNoHandle);
  EXPECT_STATUS(a.allocate(10, &more), StatusCode::out_of_memory) << "another class needs a slab too";
  EXPECT_EQ(a.stats().slots, per);
  a.free(handles[0]);
  EXPECT_TRUE(a.allocate(size, &handles[0]).ok()) << "a freed slot is there again";
  for (const Handle h : handles) a.free(h);
  a.trim();
  EXPECT_TRUE(a.allocate(10, &more).ok()) << "memory given back can be had again";
  a.free(more);
}

// More slabs than the directory's first chunks hold (4,096 ids, then
// 8,192): each slot finds its own slab again, and released slabs' ids are
// taken again before new ones.
TEST(PageAlloc, DirectoryGrows) {
  PageAllocator a(4096);
  const std::size_t size = 4096;  // a slab of one page holds one
  ASSERT_EQ(a.slab_bytes(a.class_for(size)), 4096u);
  std::vector<Live> live;
  for (std::uint64_t i = 0; i < 13000; ++i) {
    Handle h;
    ASSERT_TRUE(a.allocate(size, &h).ok());
    fill(a.data(h), 64, i);
    live.push_back({h, 64, i});
  }
  EXPECT_EQ(a.stats().slabs, 13000u);
  for (const Live& l : live) ASSERT_TRUE(holds(a.data(l.handle), l.size, l.seed));
  for (std::size_t i = 0; i < live.size(); i += 2) a.free(live[i].handle);
  for (std::size_t i = 0; i < live.size(); i += 2) {
    ASSERT_TRUE(a.allocate(size, &live[i].handle).ok());
    fill(a.data(live[i].handle), 64, live[i].seed);
  }
  EXPECT_EQ(a.stats().slabs, 13000u);
  for (const Live& l : live) ASSERT_TRUE(holds(a.data(l.handle), l.size, l.seed));
  for (const Live& l : live) a.free(l.handle);
  a.trim();
  EXPECT_EQ(a.stats().allocated_bytes, 0u);
}

// Threads allocating and freeing in the same classes at once; each checks its
// own slots. (ThreadSanitizer runs this as well.)
TEST(PageAlloc, ThreadsShareClasses) {
  PageAllocator a(4096);
  constexpr int kThreads = 4;
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&a, &bad, t] {
      std::mt19937_64 rng(100 + t);
      std::vector<Live> live;
      for (int op = 0; op < 40000; ++op) {
        if (live.empty() || rng() % 2 == 0) {
          const std::size_t size = 1 + rng() % 4096;
          Handle h;
          if (!a.allocate(size, &h).ok()) {
            ++bad[t];
            continue;
          }
          const std::uint64_t seed = rng();
          fill(a.data(h), size, seed);
          live.push_back({h, size, seed});
        } else {
          const std::size_t i = rng() % live.size();
          if (!holds(a.data(live[i].handle), live[i].size, live[i].seed)) ++bad[t];
          a.free(live[i].handle);
          live[i] = live.back();
          live.pop_back();
        }
      }
      for (const Live& l : live) {
        if (!holds(a.data(l.handle), l.size, l.seed)) ++bad[t];
        a.free(l.handle);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  EXPECT_EQ(a.stats().slots, 0u);
  EXPECT_EQ(a.stats().requested_bytes, 0u);
  EXPECT_LE(a.stats().allocated_bytes, reserve_bound(a));
}

}  // namespace
