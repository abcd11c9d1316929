// An allocator of size classes for compressed pages, the memory behind
// PageStore (the idea of the kernel's zsmalloc, in our own shape).
//
// A compressed page needs anything from a few bytes to a whole page. Rounding
// each one up to a page would give back the memory compression saved, and a
// general-purpose heap pays a header and alignment per object and fragments
// under the churn of a swap device. Here sizes up to max_size fall into
// kClasses classes spaced max_size / 64 apart (64 bytes for 4 KiB pages, so a
// page wastes at most 63 bytes and 32 on average: under 1% of the page it
// stands for). Each class carves slabs into equal slots. A slab is the fewest
// whole 4 KiB pages that its slots fill to within 1/64 (one page for a class
// of 64-byte slots, 31 for 3,968-byte slots): small slabs, because memory a
// class holds but does not use is mostly its last, partly used slab, and
// the tail no slot fits stays under 1.6%. (64 KiB slabs tried first held
// 7% of Silesia's 4 KiB pages and 20% of its 64 KiB pages in such slack.)
//
// A handle names the class, slab and slot, and remembers the size asked for,
// so that free() needs nothing but the handle and the accounting stays exact.
// data(handle) takes no lock: slabs are found through a directory of slab
// headers whose entries never move, and a slab is not released while one of
// its slots is live.
//
// Each class has its own mutex; allocations of different classes never
// contend. A slab keeps its free slots in a list threaded through the free
// slots themselves, and hands out never-used slots by bumping a counter, so a
// new slab is not touched (nor committed by the OS) until it is used. A class
// keeps at most one empty slab in reserve and gives any other empty slab back
// to the heap at once, so erasing pages returns their memory.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>

#include "tandem/tandem.hpp"

namespace tandem::detail {

// Memory of a PageAllocator.
struct PageAllocStats {
  std::uint64_t allocated_bytes = 0;  // slab memory held, used or free
  std::uint64_t used_bytes = 0;       // bytes of the live slots (their class sizes)
  std::uint64_t requested_bytes = 0;  // bytes asked for by the live allocations
  std::uint64_t slabs = 0;            // slabs held
  std::uint64_t slots = 0;            // live allocations
};

class PageAllocator {
 public:
  // 0 is no handle; allocate() never returns it.
  using Handle = std::uint64_t;
  static constexpr Handle kNoHandle = 0;

  static constexpr std::size_t kClasses = 64;
  // The OS page: slabs are whole pages of it.
  static constexpr std::size_t kSlabUnit = 4096;
  // A slab's tail that no slot fits is at most this share of it.
  static constexpr std::size_t kTailShare = 64;
  // The handle keeps the slot in 12 bits.
  static constexpr std::size_t kMaxSlabSlots = 4096;
  static constexpr std::size_t kMaxSize = std::size_t{1} << 16;
  // Slabs an allocator may hold: what its directory reaches (below), under
  // the 2^29 a handle names. 2 TiB of the smallest slabs.
  static constexpr std::size_t kMaxSlabs = 4096 * ((std::size_t{1} << 17) - 1);

  // max_size: the largest allocation, a multiple of 64 from 1 KiB to 64 KiB
  // (a page size). limit_bytes caps the slab memory held (out_of_memory past
  // it): PageStoreOptions::memory_limit.
  explicit PageAllocator(std::size_t max_size,
                         std::uint64_t limit_bytes = std::numeric_limits<std::uint64_t>::max());
  // Frees every slab; handles still live are lost with it.
  ~PageAllocator();
  PageAllocator(const PageAllocator&) = delete;
  PageAllocator& operator=(const PageAllocator&) = delete;

  // A slot of at least `size` bytes (1..max_size), 64-byte aligned when the
  // class spacing is a multiple of 64 (it is for every page size), in
  // *handle. invalid_argument for a size of 0 or above max_size;
  // out_of_memory when a new slab is needed and cannot be had (*handle is
  // then kNoHandle). Never throws.
  Status allocate(std::size_t size, Handle* handle);
  // Gives the slot back. handle must be live (from allocate, not freed);
  // kNoHandle is ignored.
  void free(Handle handle);
  // The slot's memory, slot_size(handle) bytes. Lock-free; valid until the
  // handle is freed. The caller must have got the handle in a way ordered
  // after allocate() returned it (through a mutex, say), as any use of a
  // pointer handed between threads.
  void* data(Handle handle) const;

  // What the handle's allocate() asked for, and what its slot holds.
  static std::size_t requested_size(Handle handle) { return static_cast<std::size_t>(handle & 0xFFFF) + 1; }
  std::size_t slot_size(Handle handle) const { return class_size(class_of_handle(handle)); }

  // Gives back the empty slab every class keeps in reserve.
  void trim();

  // Each class's figures are from one moment (its mutex held), but the
  // classes are read one after another: exact when no allocate() or free()
  // runs at the same time.
  PageAllocStats stats() const;
  // The slab memory held, lock-free: every slab that holds a live slot is in
  // it (a slab is counted from just before it is made until it is freed).
  std::uint64_t allocated_bytes() const { return held_bytes_.load(std::memory_order_relaxed); }

  // The geometry, for tests and reports.
  std::size_t max_size() const { return max_size_; }
  std::size_t class_step() const { return step_; }
  std::size_t class_count() const { return kClasses; }
  std::size_t class_size(std::size_t c) const { return classes_[c].slot_size; }
  std::size_t slab_bytes(std::size_t c) const { return classes_[c].slab_bytes; }
  std::size_t class_for(std::size_t size) const { return (size - 1) / step_; }

 private:
  // A slab's header. Its slots are memory + slot * slot_size; slots below
  // `bumped` have been handed out at least once, and those of them that are
  // free form a list through their first 4 bytes from free_head.
  struct Slab {
    std::byte* memory = nullptr;  // null while the header is spare
    std::uint32_t id = 0;
    std::uint32_t used = 0;
    std::uint32_t bumped = 0;
    std::uint32_t free_head = 0;
    Slab* prev = nullptr;  // in the class's list of partly used slabs, or the spare headers
    Slab* next = nullptr;
  };
  // Everything below the mutex is guarded by it; the geometry is fixed.
  struct alignas(64) SizeClass {
    std::uint32_t slot_size = 0;
    std::uint32_t slots_per_slab = 0;
    std::size_t slab_bytes = 0;
    mutable std::mutex mutex;
    // Slabs with free and used slots. A slab that a free() makes non-full
    // goes to the front, so allocations fill nearly full slabs first and the
    // slabs at the back drain towards empty, and back to the heap.
    Slab* partial = nullptr;
    Slab* empty = nullptr;  // the one empty slab kept in reserve, or null
    std::uint64_t slabs = 0;
    std::uint64_t used_slots = 0;
    std::uint64_t requested_bytes = 0;
  };

  // A handle, from the low bits: the size asked for minus one (16 bits), the
  // slot (12), the class plus one (7; so no live handle is 0), the slab (29).
  static Handle make_handle(std::size_t size, std::uint32_t slot, std::size_t c, std::uint32_t slab) {
    return static_cast<Handle>(size - 1) | (Handle{slot} << 16) | (static_cast<Handle>(c + 1) << 28) |
           (Handle{slab} << 35);
  }
  static std::size_t class_of_handle(Handle h) { return static_cast<std::size_t>((h >> 28) & 0x7F) - 1; }
  static std::uint32_t slot_of_handle(Handle h) { return static_cast<std::uint32_t>((h >> 16) & 0xFFF); }
  static std::uint32_t slab_of_handle(Handle h) { return static_cast<std::uint32_t>(h >> 35); }
  Slab* slab_at(std::uint32_t id) const;

  Slab* new_slab(SizeClass& cls);                 // cls.mutex held
  void release_slab(SizeClass& cls, Slab* slab);  // cls.mutex held

  // The directory: slab id -> header, in chunks that are never moved or
  // freed before the allocator, so data() reads it without a lock. Chunk k
  // holds kChunkBase << k ids, so a small store pays for one chunk of 32 KiB
  // and 17 chunks reach kMaxSlabs.
  static constexpr std::size_t kChunkBaseBits = 12;
  static constexpr std::size_t kChunkBase = std::size_t{1} << kChunkBaseBits;
  static constexpr std::size_t kChunks = 17;
  // Where slab id's entry is: its chunk, and its place in the chunk.
  static std::size_t chunk_of(std::uint32_t id) {
    return static_cast<std::size_t>(std::bit_width(std::size_t{id} + kChunkBase)) - (kChunkBaseBits + 1);
  }
  static std::size_t place_of(std::uint32_t id, std::size_t chunk) {
    return std::size_t{id} + kChunkBase - (kChunkBase << chunk);
  }
  static_assert(kChunkBase * ((std::size_t{1} << kChunks) - 1) == kMaxSlabs);
  std::array<std::atomic<std::atomic<Slab*>*>, kChunks> chunks_{};
  std::mutex directory_mutex_;     // next_id_, chunk creation, spare_headers_
  std::uint32_t next_id_ = 0;
  Slab* spare_headers_ = nullptr;  // headers of released slabs, kept with their ids for reuse

  const std::size_t max_size_;
  const std::size_t step_;
  const std::uint64_t limit_bytes_;
  std::atomic<std::uint64_t> held_bytes_{0};  // slab memory, checked against limit_bytes_
  std::array<SizeClass, kClasses> classes_;
};

}  // namespace tandem::detail
