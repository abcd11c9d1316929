// The size-class allocator behind PageStore (see page_alloc.hpp).
//
// Slab ids index a two-level directory of slab headers (page_alloc.hpp).
// A header, once made, is never freed before the allocator: when its slab
// goes back to the heap the header waits, with its id, for the next new slab
// of any class. So a directory entry, once set, always points to a header,
// and data() needs no lock.
//
// Lock order: a class's mutex, then the directory's. No path holds two class
// mutexes.
#include "pages/page_alloc.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <new>

namespace tandem::detail {
namespace {

constexpr std::uint32_t kNoSlot = 0xFFFFFFFFu;
constexpr std::align_val_t kSlabAlign{64};

// The slab of a class: the fewest whole `unit` pages, from the fewest that
// hold one slot, whose tail no slot fits is at most 1/tail_share of the slab
// and whose slots a handle can name; failing that within 64 sizes (it never
// does for the classes of a page size), the one of them with the smallest
// tail.
std::size_t pick_slab_bytes(std::size_t slot_size, std::size_t unit, std::size_t tail_share, std::size_t max_slots) {
  const std::size_t first = (slot_size + unit - 1) / unit * unit;
  std::size_t best = first;
  for (std::size_t bytes = first; bytes < first + 64 * unit; bytes += unit) {
    if (bytes / slot_size > max_slots) break;
    const std::size_t waste = bytes % slot_size;
    if (waste * tail_share <= bytes) return bytes;
    if (waste * best < (best % slot_size) * bytes) best = bytes;
  }
  return best;
}

}  // namespace

PageAllocator::PageAllocator(std::size_t max_size, std::uint64_t limit_bytes)
    : max_size_(max_size), step_(max_size / kClasses), limit_bytes_(limit_bytes) {
  assert(max_size % kClasses == 0 && max_size >= 1024 && max_size <= kMaxSize);
  for (std::size_t c = 0; c < kClasses; ++c) {
    SizeClass& cls = classes_[c];
    const std::size_t slot = (c + 1) * step_;
    cls.slot_size = static_cast<std::uint32_t>(slot);
    cls.slab_bytes = pick_slab_bytes(slot, kSlabUnit, kTailShare, kMaxSlabSlots);
    cls.slots_per_slab = static_cast<std::uint32_t>(cls.slab_bytes / slot);
  }
}

PageAllocator::~PageAllocator() {
  for (std::size_t chunk = 0; chunk < kChunks; ++chunk) {
    std::atomic<Slab*>* const entries = chunks_[chunk].load(std::memory_order_relaxed);
    if (entries == nullptr) break;  // chunks are made in order
    for (std::size_t i = 0; i < (kChunkBase << chunk); ++i) {
      Slab* const slab = entries[i].load(std::memory_order_relaxed);
      if (slab == nullptr) continue;
      if (slab->memory != nullptr) ::operator delete(slab->memory, kSlabAlign);
      delete slab;
    }
    delete[] entries;
  }
}

PageAllocator::Slab* PageAllocator::slab_at(std::uint32_t id) const {
  const std::size_t chunk = chunk_of(id);
  const std::atomic<Slab*>* const entries = chunks_[chunk].load(std::memory_order_acquire);
  return entries[place_of(id, chunk)].load(std::memory_order_acquire);
}

PageAllocator::Slab* PageAllocator::new_slab(SizeClass& cls) {
  const std::size_t bytes = cls.slab_bytes;
  if (held_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes > limit_bytes_) {
    held_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    return nullptr;
  }
  void* const memory = ::operator new(bytes, kSlabAlign, std::nothrow);
  if (memory == nullptr) {
    held_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    return nullptr;
  }
  Slab* slab = nullptr;
  {
    std::lock_guard<std::mutex> lock(directory_mutex_);
    if (spare_headers_ != nullptr) {
      slab = spare_headers_;
      spare_headers_ = slab->next;
    } else if (next_id_ < kMaxSlabs) {
      const std::size_t chunk = chunk_of(next_id_);
      std::atomic<Slab*>* entries = chunks_[chunk].load(std::memory_order_relaxed);
      if (entries == nullptr) {
        const std::size_t n = kChunkBase << chunk;
        entries = new (std::nothrow) std::atomic<Slab*>[n];
        if (entries != nullptr) {
          for (std::size_t i = 0; i < n; ++i) entries[i].store(nullptr, std::memory_order_relaxed);
          chunks_[chunk].store(entries, std::memory_order_release);
        }
      }
      if (entries != nullptr) slab = new (std::nothrow) Slab;
      if (slab != nullptr) {
        slab->id = next_id_++;
        entries[place_of(slab->id, chunk)].store(slab, std::memory_order_release);
      }
    }
  }
  if (slab == nullptr) {
    ::operator delete(memory, kSlabAlign);
    held_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    return nullptr;
  }
  slab->memory = static_cast<std::byte*>(memory);
  slab->used = 0;
  slab->bumped = 0;
  slab->free_head = kNoSlot;
  slab->prev = slab->next = nullptr;
  ++cls.slabs;
  return slab;
}

void PageAllocator::release_slab(SizeClass& cls, Slab* slab) {
  ::operator delete(slab->memory, kSlabAlign);
  slab->memory = nullptr;
  held_bytes_.fetch_sub(cls.slab_bytes, std::memory_order_relaxed);
  --cls.slabs;
  std::lock_guard<std::mutex> lock(directory_mutex_);
  slab->prev = nullptr;
  slab->next = spare_headers_;
  spare_headers_ = slab;
}

Status PageAllocator::allocate(std::size_t size, Handle* handle) {
  *handle = kNoHandle;
  if (size == 0 || size > max_size_) {
    return {StatusCode::invalid_argument, "allocation of 0 bytes or more than the largest class"};
  }
  const std::size_t c = class_for(size);
  SizeClass& cls = classes_[c];
  std::lock_guard<std::mutex> lock(cls.mutex);
  Slab* slab = cls.partial;
  if (slab == nullptr) {
    if (cls.empty != nullptr) {
      slab = cls.empty;
      cls.empty = nullptr;
    } else {
      slab = new_slab(cls);
      if (slab == nullptr) return {StatusCode::out_of_memory, "no memory for a new slab"};
    }
    slab->prev = nullptr;
    slab->next = nullptr;
    cls.partial = slab;
  }
  std::uint32_t slot;
  if (slab->free_head != kNoSlot) {
    slot = slab->free_head;
    std::memcpy(&slab->free_head, slab->memory + std::size_t{slot} * cls.slot_size, sizeof(slab->free_head));
  } else {
    slot = slab->bumped++;
  }
  if (++slab->used == cls.slots_per_slab) {
    // Full: off the list (it is at its head).
    cls.partial = slab->next;
    if (cls.partial != nullptr) cls.partial->prev = nullptr;
    slab->next = nullptr;
  }
  ++cls.used_slots;
  cls.requested_bytes += size;
  *handle = make_handle(size, slot, c, slab->id);
  return {};
}

void PageAllocator::free(Handle handle) {
  if (handle == kNoHandle) return;
  SizeClass& cls = classes_[class_of_handle(handle)];
  Slab* const slab = slab_at(slab_of_handle(handle));
  const std::uint32_t slot = slot_of_handle(handle);
  std::lock_guard<std::mutex> lock(cls.mutex);
  assert(slab->memory != nullptr && slot < slab->bumped && slab->used > 0);
  std::memcpy(slab->memory + std::size_t{slot} * cls.slot_size, &slab->free_head, sizeof(slab->free_head));
  slab->free_head = slot;
  const bool was_full = slab->used == cls.slots_per_slab;
  --slab->used;
  --cls.used_slots;
  cls.requested_bytes -= requested_size(handle);
  if (slab->used == 0) {
    // Off the partial list, unless it went from full to empty at once (a
    // slab of one slot), and so was on none.
    if (!was_full) {
      if (slab->prev != nullptr) slab->prev->next = slab->next;
      else cls.partial = slab->next;
      if (slab->next != nullptr) slab->next->prev = slab->prev;
    }
    slab->prev = slab->next = nullptr;
    if (cls.empty == nullptr) {
      // Kept as if new: the free list is forgotten, slots are bumped again.
      slab->bumped = 0;
      slab->free_head = kNoSlot;
      cls.empty = slab;
    } else {
      release_slab(cls, slab);
    }
  } else if (was_full) {
    slab->prev = nullptr;
    slab->next = cls.partial;
    if (cls.partial != nullptr) cls.partial->prev = slab;
    cls.partial = slab;
  }
}

void* PageAllocator::data(Handle handle) const {
  const Slab* const slab = slab_at(slab_of_handle(handle));
  return slab->memory + std::size_t{slot_of_handle(handle)} * classes_[class_of_handle(handle)].slot_size;
}

void PageAllocator::trim() {
  for (SizeClass& cls : classes_) {
    std::lock_guard<std::mutex> lock(cls.mutex);
    if (cls.empty != nullptr) {
      release_slab(cls, cls.empty);
      cls.empty = nullptr;
    }
  }
}

PageAllocStats PageAllocator::stats() const {
  PageAllocStats s;
  for (const SizeClass& cls : classes_) {
    const std::lock_guard<std::mutex> lock(cls.mutex);
    s.allocated_bytes += cls.slabs * cls.slab_bytes;
    s.used_bytes += cls.used_slots * cls.slot_size;
    s.requested_bytes += cls.requested_bytes;
    s.slabs += cls.slabs;
    s.slots += cls.used_slots;
  }
  return s;
}

}  // namespace tandem::detail
