// The device-resident pages measurement in a CUDA build; see pages_bench_gpu.hpp.
//
// The whole work buffer is uploaded once; each batch b compresses the pages
// [starts[b], starts[b] + batch) into the slots and records of those same
// pages, and decompresses them into the same pages of an output buffer, so
// a run over every batch reads the input once (for batches of 256 pages and
// more, the whole input: more than the 50 MB L2 cache for Silesia).
#include "bench/pages_bench_gpu.hpp"

#include <cuda_runtime.h>

#include <cstring>

#include "bench/bench_cuda.cuh"
#include "tandem/tandem_gpu.hpp"

namespace tandem::bench {

namespace {

template <class T>
bool device_alloc(std::size_t bytes, DevicePtr<T>* p, std::string* error) {
  void* raw = nullptr;
  const cudaError_t e = cudaMalloc(&raw, bytes > 0 ? bytes : 16);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *error = std::string("cudaMalloc: ") + cudaGetErrorString(e);
    return false;
  }
  p->reset(static_cast<T*>(raw));
  return true;
}

class CudaPagesTrial final : public PagesDeviceTrial {
 public:
  ~CudaPagesTrial() override {
    if (start_) (void)cudaEventDestroy(start_);
    if (stop_) (void)cudaEventDestroy(stop_);
    if (stream_) (void)cudaStreamDestroy(stream_);
  }

  bool init(std::span<const std::uint8_t> work, std::size_t page_size, std::size_t batch,
            const std::vector<std::size_t>& starts, std::string* error) {
    work_ = work;
    page_size_ = page_size;
    batch_ = batch;
    starts_ = starts;
    pages_ = work.size() / page_size;
    if (!cuda(cudaSetDevice(0), "cudaSetDevice", error) ||
        !cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate", error) ||
        !cuda(cudaEventCreate(&start_), "cudaEventCreate", error) ||
        !cuda(cudaEventCreate(&stop_), "cudaEventCreate", error)) {
      return false;
    }
    std::size_t ct = 0, dt = 0;
    if (!gpu::pages_compress_temp_size(batch, page_size, &ct).ok() ||
        !gpu::pages_decompress_temp_size(batch, page_size, &dt).ok()) {
      *error = "pages temp size";
      return false;
    }
    temp_bytes_ = ct > dt ? ct : dt;
    if (!device_alloc(work.size(), &d_in_, error) || !device_alloc(work.size(), &d_slots_, error) ||
        !device_alloc(work.size(), &d_out_, error) || !device_alloc(pages_ * sizeof(PageRecord), &d_records_, error) ||
        !device_alloc(pages_ * sizeof(gpu::ItemStatus), &d_statuses_, error) ||
        !device_alloc(temp_bytes_, &d_temp_, error)) {
      return false;
    }
    return cuda(cudaMemcpy(d_in_.get(), work.data(), work.size(), cudaMemcpyHostToDevice), "upload", error);
  }

  bool compress(double* seconds) override { return timed(true, seconds); }
  bool decompress(double* seconds) override { return timed(false, seconds); }

  bool check(std::span<const PageRecord> want_records, std::span<const std::uint8_t> want_slots) override {
    std::vector<PageRecord> records(pages_);
    std::vector<std::uint8_t> slots(work_.size()), out(work_.size());
    std::vector<gpu::ItemStatus> statuses(pages_);
    if (!cuda(cudaMemcpy(records.data(), d_records_.get(), pages_ * sizeof(PageRecord), cudaMemcpyDeviceToHost),
              "download", &error_) ||
        !cuda(cudaMemcpy(slots.data(), d_slots_.get(), slots.size(), cudaMemcpyDeviceToHost), "download", &error_) ||
        !cuda(cudaMemcpy(out.data(), d_out_.get(), out.size(), cudaMemcpyDeviceToHost), "download", &error_) ||
        !cuda(cudaMemcpy(statuses.data(), d_statuses_.get(), pages_ * sizeof(gpu::ItemStatus),
                         cudaMemcpyDeviceToHost),
              "download", &error_)) {
      return false;
    }
    for (const std::size_t s : starts_) {
      for (std::size_t i = s; i < s + batch_; ++i) {
        const PageRecord& r = records[i];
        if (std::memcmp(&r, &want_records[i], sizeof r) != 0 ||
            std::memcmp(slots.data() + i * page_size_, want_slots.data() + i * page_size_, r.length) != 0) {
          error_ = "page " + std::to_string(i) + ": the GPU's record or data differs from the CPU backend's";
          return false;
        }
        if (statuses[i] != gpu::ItemStatus::ok ||
            std::memcmp(out.data() + i * page_size_, work_.data() + i * page_size_, page_size_) != 0) {
          error_ = "page " + std::to_string(i) + ": the GPU did not decompress it to the input (" +
                   gpu::item_status_name(statuses[i]) + ")";
          return false;
        }
      }
    }
    return true;
  }

 private:
  bool cuda(cudaError_t e, const char* what, std::string* error) {
    if (e == cudaSuccess) return true;
    (void)cudaGetLastError();
    *error = std::string(what) + ": " + cudaGetErrorString(e);
    return false;
  }

  bool timed(bool compress, double* seconds) {
    if (!cuda(cudaEventRecord(start_, stream_), "cudaEventRecord", &error_)) return false;
    for (const std::size_t s : starts_) {
      const std::size_t at = s * page_size_;
      const Status st =
          compress ? gpu::pages_compress_async(d_in_.get() + at, batch_, page_size_, d_temp_.get(), temp_bytes_,
                                               d_slots_.get() + at, d_records_.get() + s, stream_)
                   : gpu::pages_decompress_async(d_records_.get() + s, d_slots_.get() + at, batch_, page_size_,
                                                 d_temp_.get(), temp_bytes_, d_out_.get() + at, d_statuses_.get() + s,
                                                 stream_);
      if (!st) {
        error_ = st.to_string();
        return false;
      }
    }
    float ms = 0;
    if (!cuda(cudaEventRecord(stop_, stream_), "cudaEventRecord", &error_) ||
        !cuda(cudaEventSynchronize(stop_), "cudaEventSynchronize", &error_) ||
        !cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime", &error_)) {
      return false;
    }
    *seconds = ms / 1000.0;
    return true;
  }

  std::span<const std::uint8_t> work_;
  std::size_t page_size_ = 0, batch_ = 0, pages_ = 0, temp_bytes_ = 0;
  std::vector<std::size_t> starts_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  DevicePtr<std::uint8_t> d_in_, d_slots_, d_out_, d_temp_;
  DevicePtr<PageRecord> d_records_;
  DevicePtr<gpu::ItemStatus> d_statuses_;
};

}  // namespace

std::shared_ptr<std::uint8_t> pinned_bytes(std::size_t n) {
  void* p = nullptr;
  if (cudaMallocHost(&p, n > 0 ? n : 16) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return std::shared_ptr<std::uint8_t>(static_cast<std::uint8_t*>(p), CudaFreeHost{});
}

std::unique_ptr<PagesDeviceTrial> make_pages_device_trial(std::span<const std::uint8_t> work, std::size_t page_size,
                                                          std::size_t batch, const std::vector<std::size_t>& starts,
                                                          std::string* error) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();
    *error = "no CUDA device";
    return nullptr;
  }
  auto trial = std::make_unique<CudaPagesTrial>();
  if (!trial->init(work, page_size, batch, starts, error)) return nullptr;
  return trial;
}

}  // namespace tandem::bench
