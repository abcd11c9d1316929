// tandem - a compressed page store: pages kept by id, compressed as
// compress_pages does (zero and same-fill pages take no data, incompressible
// pages are kept raw, the rest as LZ4 blocks), in memory that an allocator of
// size classes hands out, so that a 1,200-byte page does not hold a
// 4,096-byte allocation. The in-memory part of a compressed swap device.
//
// Thread safety: every member may be called from any number of threads at
// once. Operations on one id are atomic with respect to each other (a get
// sees a whole page from one put, never a mix).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "tandem/pages.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

using PageId = std::uint64_t;

struct PageStoreOptions {
  std::size_t page_size = kDefaultPageSize;  // 4, 16 or 64 KiB
  // How put_batch and get_batch compress and decompress (the single-page
  // forms always run on the calling thread).
  PageOptions batch;
  // The most memory the allocator may hold for page data (as zram's
  // mem_limit): a put that would need more fails with out_of_memory and
  // changes nothing. Zero and same-fill pages need none.
  std::uint64_t memory_limit = UINT64_MAX;
};

// Memory accounting, exact at the moment it is taken.
struct PageStoreStats {
  std::uint64_t pages = 0;            // pages held
  std::uint64_t zero_pages = 0;       // of which: kind zero
  std::uint64_t same_fill_pages = 0;  //           kind same_fill
  std::uint64_t stored_pages = 0;     //           kind stored (raw)
  std::uint64_t lz4_pages = 0;        //           kind lz4
  std::uint64_t original_bytes = 0;   // pages * page_size
  std::uint64_t stored_bytes = 0;     // the data the pages need: the sum of their record lengths
  std::uint64_t allocated_bytes = 0;  // memory the allocator holds for data (its slabs, used or free)
  std::uint64_t overhead_bytes = 0;   // allocated_bytes - stored_bytes: rounding up to classes, free slots
  std::uint64_t index_bytes = 0;      // an estimate of the memory of the id index
  // original_bytes / stored_bytes (0 when nothing is stored; infinite
  // compression of all-zero stores reads as 0 too).
  double ratio() const;
  // original_bytes / (allocated_bytes + index_bytes): what the store really saves.
  double memory_ratio() const;
};

class PageStore {
 public:
  // invalid_argument for a page size other than 4, 16 or 64 KiB.
  static Status create(const PageStoreOptions& options, std::unique_ptr<PageStore>* store);
  virtual ~PageStore() = default;

  virtual std::size_t page_size() const = 0;

  // Compresses page (page_size bytes) and keeps it as id, replacing what id
  // held. out_of_memory when the allocator cannot grow (nothing changes then).
  virtual Status put(PageId id, const void* page) = 0;
  // Decompresses id into page (page_size bytes); not_found when id is not held.
  virtual Status get(PageId id, void* page) const = 0;
  // Removes id; false when it was not held.
  virtual bool erase(PageId id) = 0;
  virtual bool contains(PageId id) const = 0;
  // The record id is kept with (kind, length, fill); not_found when not held.
  virtual Status record(PageId id, PageRecord* record) const = 0;

  // Batched forms: pages is ids.size() * page_size bytes; the pages are
  // compressed or decompressed together (options.batch), so a large batch
  // may go to the GPU. Each call allocates a buffer of ids.size() pages for
  // the compressed data (out_of_memory when it cannot). An id that appears
  // twice in a put_batch keeps its last page. put_batch takes every slot
  // before it changes anything, so out_of_memory from the allocator leaves
  // the store as it was (if the index itself cannot grow, the pages before
  // that id are in). get_batch sets statuses[i] (may be empty; else
  // ids.size() of them) per id and returns ok when every id was found and
  // decoded, else the first failure along ids; the page of an id not held
  // reads as zeros, with not_found.
  virtual Status put_batch(std::span<const PageId> ids, const void* pages) = 0;
  virtual Status get_batch(std::span<const PageId> ids, void* pages, std::span<Status> statuses = {}) const = 0;
  // Returns how many of the ids were held (and are now gone).
  virtual std::size_t erase_batch(std::span<const PageId> ids) = 0;

  virtual PageStoreStats stats() const = 0;
};

}  // namespace tandem
