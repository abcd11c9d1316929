// The host-resident page engine of pages_gpu_engine.hpp on CUDA.
//
// A call runs chunk k through slot k % kSlots: launch(k) waits until the
// slot's previous chunk is finished, stages the chunk's input (pageable
// callers only), and enqueues the upload, the device-resident call and the
// download on the slot's stream; finish(k) waits for them and unstages the
// output (pageable callers only). Chunk k is finished after chunk k +
// kSlots - 1 is launched, so up to kSlots chunks are on the device at once.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/thread_pool.hpp"
#include "gpu/gpu_memory.cuh"
#include "gpu/pages_gpu_engine.hpp"

namespace tandem::gpu {

namespace {

constexpr int kSlots = 3;
// Pages per chunk: a quarter of the batch, so that four chunks overlap,
// between these bounds in bytes (the device needs thousands of pages a call
// to be efficient: 1,000 pages of 4 KiB compress at a third of the rate of
// 10,000 there).
constexpr std::size_t kMinChunkBytes = std::size_t{8} << 20;
constexpr std::size_t kMaxChunkBytes = std::size_t{32} << 20;

bool is_pinned(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

struct Slot {
  cudaStream_t stream = nullptr;
  DeviceBuffer d_in, d_out, d_records, d_statuses, d_temp;
  PinnedBuffer h_in, h_out, h_records;  // staging: pageable callers only
  std::size_t first = 0, count = 0;    // the chunk it holds
  bool busy = false;
};

// What one call moves, and where.
struct Call {
  bool compress;
  std::size_t page_size, count;
  // compress: pages in, slots and records out
  const std::uint8_t* pages = nullptr;
  std::uint8_t* slots = nullptr;
  PageRecord* records_out = nullptr;
  // decompress: records and data in, pages and statuses out
  std::span<const PageRecord> records_in;
  std::span<const void* const> data;
  const std::uint8_t* data_base = nullptr;  // non-null when data[i] == data_base + i * page_size
  std::uint8_t* pages_out = nullptr;
  ItemStatus* statuses = nullptr;
  bool direct_in = false, direct_out = false;  // the caller's buffers are pinned
};

class CudaPagesEngine final : public PagesHostEngine {
 public:
  ~CudaPagesEngine() override {
    destroy_streams(slots_);
  }

  Status init() { return create_streams(slots_); }

  Status compress(const std::uint8_t* pages, std::size_t count, std::size_t page_size, std::uint8_t* slots,
                  PageRecord* records) override {
    Call c{};
    c.compress = true;
    c.page_size = page_size;
    c.count = count;
    c.pages = pages;
    c.slots = slots;
    c.records_out = records;
    c.direct_in = is_pinned(pages);
    c.direct_out = is_pinned(slots);
    return run(c);
  }

  Status decompress(std::span<const PageRecord> records, std::span<const void* const> data, std::size_t page_size,
                    std::uint8_t* pages, ItemStatus* statuses) override {
    Call c{};
    c.compress = false;
    c.page_size = page_size;
    c.count = records.size();
    c.records_in = records;
    c.data = data;
    c.pages_out = pages;
    c.statuses = statuses;
    const auto* base = static_cast<const std::uint8_t*>(data.empty() ? nullptr : data[0]);
    bool slotted = base != nullptr;
    for (std::size_t i = 0; slotted && i < data.size(); ++i) slotted = data[i] == base + i * page_size;
    c.data_base = slotted ? base : nullptr;
    c.direct_in = slotted && is_pinned(base);
    c.direct_out = is_pinned(pages);
    return run(c);
  }

 private:
  Status run(const Call& c);
  Status launch(Slot& s, const Call& c, std::size_t first, std::size_t count);
  Status finish(Slot& s, const Call& c);
  void drain() { drain_streams(slots_); }

  Slot slots_[kSlots];
};

Status CudaPagesEngine::run(const Call& c) {
  if (c.count == 0) return {};
  drain();
  TANDEM_CUDA_CHECK(cudaSetDevice(0), "cudaSetDevice");
  const std::size_t p = c.page_size;
  const std::size_t quarter = (c.count + 3) / 4;
  const std::size_t chunk = std::clamp(quarter, std::max<std::size_t>(1, kMinChunkBytes / p), kMaxChunkBytes / p);
  const std::size_t chunks = (c.count + chunk - 1) / chunk;
  Status s;
  for (std::size_t k = 0; s && k < chunks + kSlots - 1; ++k) {
    if (k < chunks) s = launch(slots_[k % kSlots], c, k * chunk, std::min(chunk, c.count - k * chunk));
    if (s && k + 1 >= kSlots && k + 1 - kSlots < chunks) s = finish(slots_[(k + 1 - kSlots) % kSlots], c);
  }
  if (!s) drain();
  return s;
}

Status CudaPagesEngine::launch(Slot& s, const Call& c, std::size_t first, std::size_t count) {
  const std::size_t p = c.page_size;
  const std::size_t bytes = count * p;
  std::size_t temp = 0;
  const Status ts = c.compress ? pages_compress_temp_size(count, p, &temp) : pages_decompress_temp_size(count, p, &temp);
  if (!ts) return ts;
  if (Status r = s.d_in.reserve(bytes); !r) return r;
  if (Status r = s.d_out.reserve(bytes); !r) return r;
  if (Status r = s.d_records.reserve(count * sizeof(PageRecord)); !r) return r;
  if (Status r = s.d_statuses.reserve(count * sizeof(ItemStatus)); !r) return r;
  if (Status r = s.d_temp.reserve(temp); !r) return r;
  auto* d_records = reinterpret_cast<PageRecord*>(s.d_records.data());
  s.first = first;
  s.count = count;
  const cudaStream_t st = s.stream;
  // In: the pages (compress), or the records and the slots of data (decompress).
  const std::uint8_t* src = nullptr;
  if (c.compress) {
    src = c.pages + first * p;
    if (!c.direct_in) {
      if (Status r = s.h_in.reserve(bytes); !r) return r;
      detail::parallel_copy(s.h_in.data(), src, bytes);
      src = s.h_in.data();
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_in.data(), src, bytes, cudaMemcpyHostToDevice, st), "upload of pages");
    if (Status r = pages_compress_async(s.d_in.data(), count, p, s.d_temp.data(), temp, s.d_out.data(), d_records, st);
        !r) {
      return r;
    }
    // The records through staging (small); the slots straight to pinned ones.
    if (Status r = s.h_records.reserve(count * sizeof(PageRecord)); !r) return r;
    std::uint8_t* slots_out = c.slots + first * p;
    if (!c.direct_out) {
      if (Status r = s.h_out.reserve(bytes); !r) return r;
      slots_out = s.h_out.data();
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(slots_out, s.d_out.data(), bytes, cudaMemcpyDeviceToHost, st),
                       "download of slots");
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.h_records.data(), d_records, count * sizeof(PageRecord),
                                       cudaMemcpyDeviceToHost, st),
                       "download of records");
  } else {
    const PageRecord* records = c.records_in.data() + first;
    const std::uint8_t* data = nullptr;
    if (Status r = s.h_records.reserve(count * sizeof(PageRecord) + count * sizeof(ItemStatus)); !r) return r;
    std::memcpy(s.h_records.data(), records, count * sizeof(PageRecord));
    records = reinterpret_cast<const PageRecord*>(s.h_records.data());
    if (c.direct_in) {
      data = c.data_base + first * p;
    } else {
      if (Status r = s.h_in.reserve(bytes); !r) return r;
      // Each page's data into its slot (only what its record says it has:
      // a lying length is the device's to reject, within the slot).
      detail::parallel_for((count + 255) / 256, 0, [&](std::size_t g) {
        for (std::size_t i = g * 256; i < std::min(count, g * 256 + 256); ++i) {
          const PageRecord& r = c.records_in[first + i];
          const std::size_t n = r.length <= p ? r.length : p;
          if (c.data[first + i] && n > 0) std::memcpy(s.h_in.data() + i * p, c.data[first + i], n);
        }
      });
      data = s.h_in.data();
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_records, records, count * sizeof(PageRecord), cudaMemcpyHostToDevice, st),
                       "upload of records");
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_in.data(), data, bytes, cudaMemcpyHostToDevice, st), "upload of data");
    auto* d_statuses = reinterpret_cast<ItemStatus*>(s.d_statuses.data());
    if (Status r = pages_decompress_async(d_records, s.d_in.data(), count, p, s.d_temp.data(), temp, s.d_out.data(),
                                          d_statuses, st);
        !r) {
      return r;
    }
    // The statuses through staging (small); the pages straight to pinned ones.
    std::uint8_t* out = c.pages_out + first * p;
    auto* statuses = reinterpret_cast<ItemStatus*>(s.h_records.data() + count * sizeof(PageRecord));
    if (!c.direct_out) {
      if (Status r = s.h_out.reserve(bytes); !r) return r;
      out = s.h_out.data();
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(out, s.d_out.data(), bytes, cudaMemcpyDeviceToHost, st), "download of pages");
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(statuses, d_statuses, count * sizeof(ItemStatus), cudaMemcpyDeviceToHost, st),
                       "download of statuses");
  }
  s.busy = true;
  return {};
}

Status CudaPagesEngine::finish(Slot& s, const Call& c) {
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "page batch on the device");
  s.busy = false;
  const std::size_t p = c.page_size;
  if (c.compress) {
    const auto* records = reinterpret_cast<const PageRecord*>(s.h_records.data());
    std::memcpy(c.records_out + s.first, records, s.count * sizeof(PageRecord));
    if (c.direct_out) return {};
    detail::parallel_for((s.count + 255) / 256, 0, [&](std::size_t g) {
      for (std::size_t i = g * 256; i < std::min(s.count, g * 256 + 256); ++i) {
        std::memcpy(c.slots + (s.first + i) * p, s.h_out.data() + i * p, records[i].length);
      }
    });
    return {};
  }
  const auto* statuses = reinterpret_cast<const ItemStatus*>(s.h_records.data() + s.count * sizeof(PageRecord));
  std::memcpy(c.statuses + s.first, statuses, s.count * sizeof(ItemStatus));
  std::uint8_t* pages = c.pages_out + s.first * p;
  if (!c.direct_out) detail::parallel_copy(pages, s.h_out.data(), s.count * p);
  // A refused page is zeros here, as on the CPU: the device leaves it as
  // its decoder did, over device memory that earlier calls (of any caller of
  // this shared engine) wrote.
  for (std::size_t i = 0; i < s.count; ++i) {
    if (statuses[i] != ItemStatus::ok) std::memset(pages + i * p, 0, p);
  }
  return {};
}

}  // namespace

Status PagesHostEngine::shared(PagesHostEngine** engine) {
  return shared_engine<PagesHostEngine>(engine, &create_engine<PagesHostEngine, CudaPagesEngine>);
}

}  // namespace tandem::gpu
