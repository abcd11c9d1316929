// Page batches of host memory on the GPU: the host-resident path of
// compress_pages and decompress_pages with Backend::gpu.
//
// A batch is cut into chunks of pages that go through a ring of slots (a
// CUDA stream with its device buffers and pinned staging each): the pages
// go up, the device-resident calls of tandem_gpu.hpp run, records and slots
// (or pages) come down, and the next chunks' copies overlap this one's
// kernels. Where the caller's buffers are pinned (cudaMallocHost,
// cudaHostRegister) the copies go straight between them and the device;
// pageable buffers pass through the slots' pinned staging, copied by the
// worker pool. Nothing is allocated per batch once the buffers have grown to
// the largest chunk seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>

#include "tandem/pages.hpp"
#include "tandem/tandem.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

class PagesHostEngine {
 public:
  // The process-wide engine on device 0 (created on first use, never
  // destroyed); no_device when this build or machine has no GPU.
  static Status shared(PagesHostEngine** engine);
  virtual ~PagesHostEngine() = default;

  // One call at a time: callers hold this lock for the duration of a call.
  [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }

  // As compress_pages: count pages of page_size bytes at pages; page i's
  // record to records[i], its data to slots + i * page_size. device_error
  // when the device fails (the call may then be repeated on the CPU).
  virtual Status compress(const std::uint8_t* pages, std::size_t count, std::size_t page_size, std::uint8_t* slots,
                          PageRecord* records) = 0;
  // As decompress_pages: record i with its data at data[i] into pages + i *
  // page_size, its status to statuses[i].
  virtual Status decompress(std::span<const PageRecord> records, std::span<const void* const> data,
                            std::size_t page_size, std::uint8_t* pages, ItemStatus* statuses) = 0;

 private:
  std::mutex mutex_;
};

}  // namespace tandem::gpu
