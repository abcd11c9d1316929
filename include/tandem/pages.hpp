// tandem - memory pages, compressed the way compressed swap and compressed
// memory (zram, zswap) do, but thousands at a time.
//
// A batch is N pages of one size (4 KiB by default; 16 and 64 KiB too). Each
// page comes out as a record: a kind (a page of zeros, a page filled with one
// repeated 8-byte word, a page stored raw because it does not compress, or an
// LZ4 block), a length, and its bytes. Every LZ4 page is a standard LZ4 block
// that liblz4's LZ4_decompress_safe reads. The CPU backend (threads) and the
// GPU backend use the same parse, so they give the same kinds, lengths and
// bytes for every page.
//
// PageStore keeps compressed pages by id, with memory accounting and an
// allocator of size classes, as zram keeps swapped-out pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "tandem/tandem.hpp"

namespace tandem {

// What a page became. Values are permanent (they may be stored).
enum class PageKind : std::uint8_t {
  zero = 0,       // every byte 0; no data
  same_fill = 1,  // one 8-byte word repeated through the page (PageRecord::fill); no data
  stored = 2,     // the page itself, page_size bytes: it did not compress enough
  lz4 = 3,        // one LZ4 block that decodes to exactly page_size bytes
};
// "zero", "same_fill", "stored", "lz4"; "unknown" for any other value.
const char* page_kind_name(PageKind kind);

// One page's outcome. 16 bytes, no padding to leak.
struct PageRecord {
  PageKind kind = PageKind::zero;
  std::uint8_t reserved[3] = {0, 0, 0};  // 0
  std::uint32_t length = 0;  // bytes of data: 0 (zero, same_fill), page_size (stored), the block's (lz4)
  std::uint64_t fill = 0;    // same_fill: the word, as read little-endian from the page's first 8 bytes; else 0
};
static_assert(sizeof(PageRecord) == 16, "PageRecord is 16 bytes");

inline constexpr std::size_t kDefaultPageSize = 4096;
// 4 KiB, 16 KiB or 64 KiB.
bool valid_page_size(std::size_t page_size);
// The longest LZ4 block a page keeps: 7/8 of the page (3,584 bytes of 4 KiB).
// A page whose block is longer is stored raw: it would save under an eighth
// of its memory and cost a decode on every read.
constexpr std::size_t page_max_compressed(std::size_t page_size) { return page_size - page_size / 8; }

// N pages of page_size bytes, one after another: N * page_size bytes.
struct PageBatch {
  const void* pages = nullptr;
  std::size_t count = 0;
  std::size_t page_size = kDefaultPageSize;
};

struct PageOptions {
  // cpu: the thread pool. gpu: the device (pages are copied there and back).
  // automatic: the GPU for batches large enough that it outruns the CPU's
  // threads (page_batch_prefers_gpu), when the build and machine have one;
  // else, or when the device fails, the CPU.
  Backend backend = Backend::automatic;
  int threads = 0;  // 0 = all hardware threads
};

// Where a batch of `count` pages of page_size bytes runs with
// Backend::automatic on a machine with a GPU and `threads` CPU threads (the
// crossover tandem measured; see docs/benchmarks).
bool page_batch_prefers_gpu(bool compress, std::size_t count, std::size_t page_size, int threads);

// Compresses every page of `batch`. Page i's data goes to slots + i *
// page_size (slots: count * page_size bytes of host memory), its record to
// records[i] (records.size() == count). *ran_on, when given, receives the
// backend that did the work. Returns invalid_argument for a bad page size,
// short buffers or null pointers; no_device when gpu was asked for and there
// is none; else ok (every page has a record).
Status compress_pages(const PageBatch& batch, MutableBuffer slots, std::span<PageRecord> records,
                      const PageOptions& options = {}, Backend* ran_on = nullptr);

// Decompresses records[i] with its data at data[i] (records[i].length bytes;
// may be null for zero and same_fill pages) into pages + i * page_size
// (pages: records.size() * page_size bytes). Records are untrusted: an
// unknown kind, a length that does not fit the kind, or an LZ4 block that is
// malformed or does not decode to exactly one page gives that page bad_data
// in statuses[i] (statuses may be empty) and leaves the rest of the batch
// alone. Returns ok when every page decoded, else the first page's failure,
// or invalid_argument for bad arguments.
Status decompress_pages(std::span<const PageRecord> records, std::span<const void* const> data,
                        std::size_t page_size, MutableBuffer pages, std::span<Status> statuses = {},
                        const PageOptions& options = {}, Backend* ran_on = nullptr);
// The same, with page i's data at slots + i * page_size (compress_pages' layout).
Status decompress_pages(std::span<const PageRecord> records, ConstBuffer slots, std::size_t page_size,
                        MutableBuffer pages, std::span<Status> statuses = {}, const PageOptions& options = {},
                        Backend* ran_on = nullptr);

// One page on the calling thread, as the CPU backend does it: page is
// page_size bytes; out receives the data, at most page_size bytes (so give it
// page_size bytes); *record the record.
Status compress_page(const void* page, std::size_t page_size, void* out, PageRecord* record);
// Decodes one record into page (page_size bytes); bad_data as decompress_pages.
Status decompress_page(const PageRecord& record, const void* data, std::size_t page_size, void* page);

}  // namespace tandem
