// The device-resident measurement of `tandem pages bench`: page batches
// already in GPU memory, pages_compress_async and pages_decompress_async
// between two CUDA events. The interface names no CUDA type, so that
// pages_bench.cpp compiles without CUDA (pages_bench_gpu_none.cpp then says
// there is no GPU measurement).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tandem/pages.hpp"

namespace tandem::bench {

class PagesDeviceTrial {
 public:
  virtual ~PagesDeviceTrial() = default;
  // Every batch once, back to back on one stream; *seconds between events.
  virtual bool compress(double* seconds) = 0;
  virtual bool decompress(double* seconds) = 0;
  // Downloads the last compression's records and slots and the last
  // decompression's pages and statuses: records[i] and the first length
  // bytes of slot i must equal want_records / want_slots for every page of
  // every batch, statuses all ok, and the pages the input.
  virtual bool check(std::span<const PageRecord> want_records, std::span<const std::uint8_t> want_slots) = 0;
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

// n bytes of pinned host memory (cudaMallocHost), which the GPU reads and
// writes directly; null where there is no CUDA.
std::shared_ptr<std::uint8_t> pinned_bytes(std::size_t n);

// A trial over `work` (pages of page_size bytes, which must outlive it),
// in batches of `batch` pages starting at the pages in `starts`. Null with
// *error when this build or machine has no GPU or allocation fails.
std::unique_ptr<PagesDeviceTrial> make_pages_device_trial(std::span<const std::uint8_t> work, std::size_t page_size,
                                                          std::size_t batch, const std::vector<std::size_t>& starts,
                                                          std::string* error);

}  // namespace tandem::bench
