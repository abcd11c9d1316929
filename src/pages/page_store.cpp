// PageStore (page_store.hpp): compressed pages by id, in the slots of a
// size-class allocator (page_alloc.hpp).
//
// The index is 64 shards, each an unordered_map from id to the page's record
// and slot handle under its own mutex, so threads working on different ids
// rarely meet. Ids go to shards by a multiplicative hash, so that runs of
// consecutive ids (swap slots, say) spread over all of them. Each shard keeps
// its own counts and bytes, changed under its mutex with the map, so that
// stats() is the exact sum of them.
//
// put compresses on the calling thread into a per-thread page buffer, copies
// the data into a slot of exactly its class, and only then takes the shard's
// mutex to swap the entry in: the lock covers the map, never the compression.
// get decodes straight from the slot into the caller's page while it holds
// the shard's mutex, so that no put or erase of the same id can free the slot
// under it; the decode of one page is short and another id's get only waits
// when it falls in the same shard. A slot that a put or erase replaced is
// freed after the mutex is released: the index no longer names it, so nobody
// else can reach it.
//
// The batched forms compress or decompress the whole batch with
// compress_pages / decompress_pages (on the thread pool or the GPU) in
// buffers of one page per id, allocated per call; get_batch first copies each
// page's data out of its slot under its shard's mutex, so the decode needs no
// lock. No path holds a shard's mutex and an allocator's at once.
#include "tandem/page_store.hpp"

#include <array>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "pages/page_alloc.hpp"

namespace tandem {

double PageStoreStats::ratio() const {
  return stored_bytes == 0 ? 0.0 : static_cast<double>(original_bytes) / static_cast<double>(stored_bytes);
}

double PageStoreStats::memory_ratio() const {
  const std::uint64_t held = allocated_bytes + index_bytes;
  return held == 0 ? 0.0 : static_cast<double>(original_bytes) / static_cast<double>(held);
}

namespace {

using detail::PageAllocator;
using Handle = PageAllocator::Handle;

constexpr std::size_t kShardBits = 6;
constexpr std::size_t kShards = std::size_t{1} << kShardBits;

struct Entry {
  PageRecord record;
  Handle handle = PageAllocator::kNoHandle;  // kNoHandle for zero and same_fill pages
};

// An estimate of one map node: the next pointer, the key and the entry, and
// malloc's 8-byte header, rounded up to malloc's 16-byte granule.
constexpr std::size_t kNodeBytes = (sizeof(void*) + sizeof(std::pair<const PageId, Entry>) + 8 + 15) / 16 * 16;

struct alignas(64) Shard {
  mutable std::mutex mutex;
  std::unordered_map<PageId, Entry> map;
  std::array<std::uint64_t, 4> kind_pages{};  // by PageKind
  std::uint64_t stored_bytes = 0;

  void count(const PageRecord& r) {
    ++kind_pages[static_cast<std::size_t>(r.kind)];
    stored_bytes += r.length;
  }
  void uncount(const PageRecord& r) {
    --kind_pages[static_cast<std::size_t>(r.kind)];
    stored_bytes -= r.length;
  }
  // Makes (r, h) the entry of id and returns the handle it replaced
  // (kNoHandle when id was new). The mutex is held. Throws std::bad_alloc
  // when the map cannot grow, leaving the shard as it was.
  Handle install(PageId id, const PageRecord& r, Handle h) {
    const auto [it, inserted] = map.try_emplace(id, Entry{r, h});
    Handle old = PageAllocator::kNoHandle;
    if (!inserted) {
      old = it->second.handle;
      uncount(it->second.record);
      it->second = Entry{r, h};
    }
    count(r);
    return old;
  }
};

// Fibonacci hashing: the top bits of id times 2^64 / phi.
std::size_t shard_of(PageId id) { return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> (64 - kShardBits)); }

// The calling thread's buffer for put's compressed page: page_size bytes, or
// more when a store of larger pages used it first. Null when it cannot be had.
std::uint8_t* put_buffer(std::size_t page_size) {
  thread_local std::unique_ptr<std::uint8_t[]> buffer;
  thread_local std::size_t size = 0;
  if (size < page_size) {
    buffer.reset(new (std::nothrow) std::uint8_t[page_size]);
    size = buffer ? page_size : 0;
  }
  return buffer.get();
}

class Store final : public PageStore {
 public:
  explicit Store(const PageStoreOptions& options)
      : options_(options), alloc_(options.page_size, options.memory_limit) {}

  ~Store() override = default;  // the allocator frees every slab at once

  std::size_t page_size() const override { return options_.page_size; }

  Status put(PageId id, const void* page) override {
    if (page == nullptr) return {StatusCode::invalid_argument, "null page"};
    std::uint8_t* const out = put_buffer(options_.page_size);
    if (out == nullptr) return {StatusCode::out_of_memory, "no memory for the compression buffer"};
    PageRecord record;
    if (Status s = compress_page(page, options_.page_size, out, &record); !s) return s;
    Handle handle;
    if (Status s = keep(record, out, &handle); !s) return s;
    Shard& shard = shards_[shard_of(id)];
    Handle old;
    try {
      const std::lock_guard<std::mutex> lock(shard.mutex);
      old = shard.install(id, record, handle);
    } catch (const std::bad_alloc&) {
      alloc_.free(handle);
      return {StatusCode::out_of_memory, "no memory for the index"};
    }
    alloc_.free(old);
    return {};
  }

  Status get(PageId id, void* page) const override {
    if (page == nullptr) return {StatusCode::invalid_argument, "null page"};
    const Shard& shard = shards_[shard_of(id)];
    const std::lock_guard<std::mutex> lock(shard.mutex);
    const auto it = shard.map.find(id);
    if (it == shard.map.end()) return {StatusCode::not_found, "no page with this id"};
    const Entry& e = it->second;
    return decompress_page(e.record, slot(e.handle), options_.page_size, page);
  }

  bool erase(PageId id) override {
    const Handle handle = remove(id);
    if (handle == kAbsent) return false;
    alloc_.free(handle);
    return true;
  }

  bool contains(PageId id) const override {
    const Shard& shard = shards_[shard_of(id)];
    const std::lock_guard<std::mutex> lock(shard.mutex);
    return shard.map.count(id) != 0;
  }

  Status record(PageId id, PageRecord* record) const override {
    if (record == nullptr) return {StatusCode::invalid_argument, "null record"};
    const Shard& shard = shards_[shard_of(id)];
    const std::lock_guard<std::mutex> lock(shard.mutex);
    const auto it = shard.map.find(id);
    if (it == shard.map.end()) return {StatusCode::not_found, "no page with this id"};
    *record = it->second.record;
    return {};
  }

  Status put_batch(std::span<const PageId> ids, const void* pages) override {
    const std::size_t n = ids.size(), p = options_.page_size;
    if (n == 0) return {};
    if (pages == nullptr) return {StatusCode::invalid_argument, "null pages"};
    std::vector<std::uint8_t> slots;
    std::vector<PageRecord> records;
    std::vector<Handle> handles;
    try {
      slots.resize(n * p);
      records.resize(n);
      handles.assign(n, PageAllocator::kNoHandle);
    } catch (const std::bad_alloc&) {
      return {StatusCode::out_of_memory, "no memory for the batch"};
    }
    if (Status s = compress_pages(PageBatch{pages, n, p}, {slots.data(), slots.size()}, records, options_.batch); !s) {
      return s;
    }
    // Every slot first, so that running out of memory changes nothing.
    for (std::size_t i = 0; i < n; ++i) {
      if (Status s = keep(records[i], slots.data() + i * p, &handles[i]); !s) {
        for (std::size_t j = 0; j < i; ++j) alloc_.free(handles[j]);
        return s;
      }
    }
    // In order, so a repeated id keeps its last page. Each handle is swapped
    // for the one its install replaced; then all of them are freed at once,
    // outside the shard mutexes.
    Status result;
    try {
      for (std::size_t i = 0; i < n; ++i) {
        Shard& shard = shards_[shard_of(ids[i])];
        const std::lock_guard<std::mutex> lock(shard.mutex);
        handles[i] = shard.install(ids[i], records[i], handles[i]);
      }
    } catch (const std::bad_alloc&) {
      // The pages before the one the index had no room for are in; the
      // slots of the rest are freed with the replaced ones.
      result = {StatusCode::out_of_memory, "no memory for the index"};
    }
    for (const Handle h : handles) alloc_.free(h);
    return result;
  }

  Status get_batch(std::span<const PageId> ids, void* pages, std::span<Status> statuses) const override {
    const std::size_t n = ids.size(), p = options_.page_size;
    if (!statuses.empty() && statuses.size() != n) {
      return {StatusCode::invalid_argument, "statuses and ids differ in count"};
    }
    if (n == 0) return {};
    if (pages == nullptr) return {StatusCode::invalid_argument, "null pages"};
    std::vector<std::uint8_t> staging;
    std::vector<PageRecord> records;
    std::vector<const void*> data;
    std::vector<std::uint8_t> found;
    std::vector<Status> local;
    try {
      staging.resize(n * p);
      records.resize(n);
      data.assign(n, nullptr);
      found.assign(n, 0);
      if (statuses.empty()) local.resize(n);
    } catch (const std::bad_alloc&) {
      return {StatusCode::out_of_memory, "no memory for the batch"};
    }
    const std::span<Status> st = statuses.empty() ? std::span<Status>(local) : statuses;
    // A page not held decodes as a zero page (records[i] stays zero) and
    // then reports not_found.
    for (std::size_t i = 0; i < n; ++i) {
      const Shard& shard = shards_[shard_of(ids[i])];
      const std::lock_guard<std::mutex> lock(shard.mutex);
      const auto it = shard.map.find(ids[i]);
      if (it == shard.map.end()) continue;
      found[i] = 1;
      records[i] = it->second.record;
      if (records[i].length != 0) {
        std::uint8_t* const copy = staging.data() + i * p;
        std::memcpy(copy, slot(it->second.handle), records[i].length);
        data[i] = copy;
      }
    }
    const Status decoded = decompress_pages(records, data, p, {pages, n * p}, st, options_.batch);
    if (!decoded && decoded.code != StatusCode::bad_data) {
      // The batch as a whole failed (no device, say): so did every id.
      for (Status& s : st) s = decoded;
      return decoded;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!found[i]) st[i] = {StatusCode::not_found, "no page with this id"};
    }
    for (const Status& s : st) {
      if (!s) return s;
    }
    return decoded;
  }

  std::size_t erase_batch(std::span<const PageId> ids) override {
    std::size_t erased = 0;
    for (const PageId id : ids) {
      const Handle handle = remove(id);
      if (handle == kAbsent) continue;
      alloc_.free(handle);
      ++erased;
    }
    return erased;
  }

  PageStoreStats stats() const override {
    // Every shard at once, so the figures belong to one moment.
    std::array<std::unique_lock<std::mutex>, kShards> locks;
    for (std::size_t i = 0; i < kShards; ++i) locks[i] = std::unique_lock<std::mutex>(shards_[i].mutex);
    PageStoreStats s;
    std::uint64_t buckets = 0;
    for (const Shard& shard : shards_) {
      s.zero_pages += shard.kind_pages[static_cast<std::size_t>(PageKind::zero)];
      s.same_fill_pages += shard.kind_pages[static_cast<std::size_t>(PageKind::same_fill)];
      s.stored_pages += shard.kind_pages[static_cast<std::size_t>(PageKind::stored)];
      s.lz4_pages += shard.kind_pages[static_cast<std::size_t>(PageKind::lz4)];
      s.stored_bytes += shard.stored_bytes;
      buckets += shard.map.bucket_count();
    }
    s.pages = s.zero_pages + s.same_fill_pages + s.stored_pages + s.lz4_pages;
    s.original_bytes = s.pages * options_.page_size;
    // Read with the shards held, so every page counted has its slot in a
    // slab counted: allocated_bytes >= stored_bytes. (A put between its
    // allocation and its install shows in allocated_bytes only.) The
    // allocator's lock-free figure, because the 64 shard mutexes are all a
    // thread should hold at once (ThreadSanitizer's limit, too).
    s.allocated_bytes = alloc_.allocated_bytes();
    s.overhead_bytes = s.allocated_bytes - s.stored_bytes;
    s.index_bytes = sizeof(shards_) + buckets * sizeof(void*) + s.pages * kNodeBytes;
    return s;
  }

 private:
  // What remove() returns for an id not held (no live handle is all ones:
  // the slab field would be past kMaxSlabs).
  static constexpr Handle kAbsent = ~Handle{0};

  // A slot holding the record's data, or kNoHandle for a kind without data.
  Status keep(const PageRecord& record, const std::uint8_t* data, Handle* handle) {
    *handle = PageAllocator::kNoHandle;
    if (record.length == 0) return {};
    if (Status s = alloc_.allocate(record.length, handle); !s) return s;
    std::memcpy(alloc_.data(*handle), data, record.length);
    return {};
  }

  const void* slot(Handle handle) const {
    return handle == PageAllocator::kNoHandle ? nullptr : alloc_.data(handle);
  }

  // Takes id out of the index; returns its handle (to free), or kAbsent.
  Handle remove(PageId id) {
    Shard& shard = shards_[shard_of(id)];
    const std::lock_guard<std::mutex> lock(shard.mutex);
    const auto it = shard.map.find(id);
    if (it == shard.map.end()) return kAbsent;
    const Handle handle = it->second.handle;
    shard.uncount(it->second.record);
    shard.map.erase(it);
    return handle;
  }

  const PageStoreOptions options_;
  PageAllocator alloc_;
  std::array<Shard, kShards> shards_;
};

}  // namespace

Status PageStore::create(const PageStoreOptions& options, std::unique_ptr<PageStore>* store) {
  if (store == nullptr) return {StatusCode::invalid_argument, "null store"};
  store->reset();
  if (!valid_page_size(options.page_size)) {
    return {StatusCode::invalid_argument, "page size must be 4, 16 or 64 KiB"};
  }
  try {
    *store = std::make_unique<Store>(options);
  } catch (const std::bad_alloc&) {
    return {StatusCode::out_of_memory, "no memory for the store"};
  }
  return {};
}

}  // namespace tandem
