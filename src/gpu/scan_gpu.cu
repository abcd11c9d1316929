// The archive scanner's CUDA device (see scan_gpu.hpp): device memory from
// cudaMalloc, transfers and launches on the caller's stream, and one launch
// per dispatch: inflate_async, lz4_decompress_async, or the copy kernel
// (scan_gpu_body.hpp, a thread block per descriptor, grid-stride). Each
// dispatch packs its descriptors into one upload, launches, and brings the
// sizes and statuses back in one download.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu/gpu_memory.cuh"
#include "gpu/inflate_gpu.hpp"
#include "gpu/scan_gpu.hpp"

namespace tandem::gpu {

namespace {

__global__ void scan_copy_kernel(const ScanCopyItem* items, std::size_t n, ScanCopyStatus* statuses) {
  for (std::size_t i = blockIdx.x; i < n; i += gridDim.x) {
    const ScanCopyItem item = items[i];
    const ScanCopyStatus st = scan_copy_status(item);
    if (threadIdx.x == 0) statuses[i] = st;
    if (st == ScanCopyStatus::ok) scan_copy_part(item, threadIdx.x, blockDim.x);
  }
}

__global__ void scan_crc_kernel(ScanCrcPiece* pieces, std::size_t n) {
  __shared__ std::uint32_t table[256];
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) table[i] = scan_crc32_table_entry(i);
  __syncthreads();
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    pieces[i].crc = scan_crc32(table, pieces[i].data, pieces[i].size);
  }
}

// Host arrays laid out back to back for one upload, and the device copy.
class Staging {
 public:
  template <class T>
  std::size_t put(const T* p, std::size_t n) {
    const std::size_t at = (bytes_.size() + 255) / 256 * 256;
    bytes_.resize(at + n * sizeof(T));
    if (n) std::memcpy(bytes_.data() + at, p, n * sizeof(T));
    return at;
  }
  std::size_t reserve(std::size_t n) {
    const std::size_t at = (bytes_.size() + 255) / 256 * 256;
    bytes_.resize(at + n);
    return at;
  }
  std::vector<std::uint8_t>& bytes() { return bytes_; }
  // The i-th T of the array staged at `offset` (after a fetch: the device's).
  template <class T>
  T at(std::size_t offset, std::size_t i) const {
    T v;
    std::memcpy(&v, bytes_.data() + offset + i * sizeof(T), sizeof v);
    return v;
  }

 private:
  std::vector<std::uint8_t> bytes_;
};

// A decoder dispatch's item arrays (inputs, their sizes, outputs, their
// capacities), staged from its jobs: where each lies, and the largest
// capacity.
struct StagedJobs {
  std::size_t in = 0, sizes = 0, out = 0, caps = 0;
  std::size_t max_cap = 0;
};
StagedJobs stage_jobs(Staging& st, std::span<const ScanDecodeJob> jobs) {
  const std::size_t n = jobs.size();
  std::vector<const void*> in(n);
  std::vector<std::size_t> in_sizes(n), caps(n);
  std::vector<void*> out(n);
  StagedJobs s;
  for (std::size_t i = 0; i < n; ++i) {
    in[i] = jobs[i].in;
    in_sizes[i] = jobs[i].in_size;
    out[i] = jobs[i].out;
    caps[i] = jobs[i].capacity;
    s.max_cap = std::max(s.max_cap, caps[i]);
  }
  s.in = st.put(in.data(), n);
  s.sizes = st.put(in_sizes.data(), n);
  s.out = st.put(out.data(), n);
  s.caps = st.put(caps.data(), n);
  return s;
}

class CudaScanDevice final : public ScanDevice {
 public:
  explicit CudaScanDevice(Stream stream) : stream_(reinterpret_cast<cudaStream_t>(stream)) {}
  ~CudaScanDevice() override {
    if (scratch_) cudaFree(scratch_);
  }

  bool emulated() const override { return false; }

  Status alloc(std::size_t bytes, void** ptr) override {
    TANDEM_CUDA_CHECK(cudaMalloc(ptr, std::max<std::size_t>(bytes, 1)), "cudaMalloc (scan)");
    return {};
  }
  void free(void* ptr) override {
    if (ptr) cudaFree(ptr);
  }

  Status upload(void* dst, const void* src, std::size_t bytes) override {
    const ScanUpload one{dst, src, bytes};
    return upload_many({&one, 1});
  }
  Status download(void* dst, const void* src, std::size_t bytes) override {
    const ScanTransfer one{dst, src, bytes};
    return download_many({&one, 1});
  }

  Status download_many(std::span<const ScanTransfer> transfers) override {
    return copy_all(transfers, cudaMemcpyDeviceToHost, "scan download");
  }
  Status upload_many(std::span<const ScanUpload> uploads) override {
    return copy_all(uploads, cudaMemcpyHostToDevice, "scan upload");
  }

  Status crc32(std::span<ScanCrcPiece> pieces) override {
    const std::size_t n = pieces.size();
    if (!n) return {};
    Staging st;
    const std::size_t a = st.put(pieces.data(), n);
    std::uint8_t* d = nullptr;
    if (Status s = stage(st, &d); !s) return s;
    const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((n + 127) / 128, 1u << 16));
    scan_crc_kernel<<<grid, 128, 0, stream_>>>(reinterpret_cast<ScanCrcPiece*>(d + a), n);
    if (Status s = launch_status(); !s) return s;
    if (Status s = fetch(st, d, a); !s) return s;
    for (std::size_t i = 0; i < n; ++i) pieces[i] = st.at<ScanCrcPiece>(a, i);
    return {};
  }

  Status inflate(std::span<ScanDecodeJob> jobs) override {
    const std::size_t n = jobs.size();
    if (!n) return {};
    Staging st;
    const StagedJobs a = stage_jobs(st, jobs);
    const std::size_t a_got = st.reserve(n * sizeof(std::size_t)), a_used = st.reserve(n * sizeof(std::size_t)),
                      a_status = st.reserve(n * sizeof(InflateStatus)), a_end = st.reserve(n * sizeof(InflateEnd));
    std::uint8_t* d = nullptr;
    if (Status s = stage(st, &d); !s) return s;
    if (Status s = inflate_async(reinterpret_cast<const void* const*>(d + a.in),
                                 reinterpret_cast<const std::size_t*>(d + a.sizes), n, nullptr, 0,
                                 reinterpret_cast<void* const*>(d + a.out),
                                 reinterpret_cast<const std::size_t*>(d + a.caps),
                                 reinterpret_cast<std::size_t*>(d + a_got),
                                 reinterpret_cast<InflateStatus*>(d + a_status), reinterpret_cast<InflateEnd*>(d + a_end),
                                 reinterpret_cast<std::size_t*>(d + a_used), reinterpret_cast<Stream>(stream_));
        !s) {
      return s;
    }
    if (Status s = fetch(st, d, a_got); !s) return s;
    for (std::size_t i = 0; i < n; ++i) {
      jobs[i].out_size = st.at<std::size_t>(a_got, i);
      jobs[i].in_used = st.at<std::size_t>(a_used, i);
      jobs[i].ok = st.at<InflateStatus>(a_status, i) == InflateStatus::ok &&
                   st.at<InflateEnd>(a_end, i) == InflateEnd::final_block;
    }
    return {};
  }

  Status lz4(std::span<ScanDecodeJob> jobs) override {
    const std::size_t n = jobs.size();
    if (!n) return {};
    Staging st;
    const StagedJobs a = stage_jobs(st, jobs);
    std::size_t temp = 0;
    if (Status s = lz4_decompress_temp_size(n, a.max_cap, &temp); !s) return s;
    const std::size_t a_temp = st.reserve(temp);  // before the results, which alone come back
    const std::size_t a_got = st.reserve(n * sizeof(std::size_t)), a_status = st.reserve(n * sizeof(ItemStatus));
    std::uint8_t* d = nullptr;
    if (Status s = stage(st, &d); !s) return s;
    if (Status s = lz4_decompress_async(reinterpret_cast<const void* const*>(d + a.in),
                                        reinterpret_cast<const std::size_t*>(d + a.sizes), a.max_cap, n,
                                        temp ? d + a_temp : nullptr, temp, reinterpret_cast<void* const*>(d + a.out),
                                        reinterpret_cast<const std::size_t*>(d + a.caps),
                                        reinterpret_cast<std::size_t*>(d + a_got),
                                        reinterpret_cast<ItemStatus*>(d + a_status), reinterpret_cast<Stream>(stream_));
        !s) {
      return s;
    }
    if (Status s = fetch(st, d, a_got); !s) return s;
    for (std::size_t i = 0; i < n; ++i) {
      jobs[i].out_size = st.at<std::size_t>(a_got, i);
      jobs[i].ok = st.at<ItemStatus>(a_status, i) == ItemStatus::ok;
      jobs[i].in_used = jobs[i].in_size;
    }
    return {};
  }

  Status copy(std::span<ScanCopyJob> jobs) override {
    if (jobs.empty()) return {};
    // A thread block per item, so large items go in pieces of kCopyPiece
    // bytes (whose statuses are the item's: they depend on its pointers and
    // mode only).
    constexpr std::uint64_t kCopyPiece = 1u << 20;
    std::vector<ScanCopyItem> items;
    std::vector<std::size_t> first(jobs.size() + 1);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      first[i] = items.size();
      const ScanCopyItem& it = jobs[i].item;
      if (it.size <= kCopyPiece || scan_copy_status(it) != ScanCopyStatus::ok) {
        items.push_back(it);
        continue;
      }
      for (std::uint64_t at = 0; at < it.size; at += kCopyPiece) {
        ScanCopyItem piece = it;
        piece.dst = it.dst + at;
        if (it.mode == ScanCopyMode::copy) piece.src = it.src + at;
        piece.size = std::min(kCopyPiece, it.size - at);
        items.push_back(piece);
      }
    }
    first[jobs.size()] = items.size();
    const std::size_t n = items.size();
    Staging st;
    const std::size_t a_items = st.put(items.data(), n);
    const std::size_t a_status = st.reserve(n * sizeof(ScanCopyStatus));
    std::uint8_t* d = nullptr;
    if (Status s = stage(st, &d); !s) return s;
    const unsigned grid = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 16));
    scan_copy_kernel<<<grid, 256, 0, stream_>>>(reinterpret_cast<const ScanCopyItem*>(d + a_items), n,
                                                 reinterpret_cast<ScanCopyStatus*>(d + a_status));
    if (Status s = launch_status(); !s) return s;
    if (Status s = fetch(st, d, a_status); !s) return s;
    for (std::size_t i = 0; i < jobs.size(); ++i) jobs[i].status = st.at<ScanCopyStatus>(a_status, first[i]);
    return {};
  }

 private:
  // Every copy of `copies` (ScanTransfer or ScanUpload), then one wait: a
  // copy from pageable memory returns once its source is staged, so the
  // copies need one wait at the end, not one each.
  template <class Copy>
  Status copy_all(std::span<const Copy> copies, cudaMemcpyKind kind, const char* what) {
    for (const Copy& c : copies) {
      if (!c.bytes) continue;
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(c.dst, c.src, c.bytes, kind, stream_), what);
    }
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_), what);
    return {};
  }

  // Uploads the staged arrays into the scratch allocation (grown as needed).
  Status stage(Staging& st, std::uint8_t** d) {
    const std::size_t bytes = std::max<std::size_t>(st.bytes().size(), 256);
    if (bytes > scratch_bytes_) {
      if (scratch_) cudaFree(scratch_);
      scratch_ = nullptr;
      scratch_bytes_ = 0;
      TANDEM_CUDA_CHECK(cudaMalloc(&scratch_, bytes), "cudaMalloc (scan descriptors)");
      scratch_bytes_ = bytes;
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(scratch_, st.bytes().data(), st.bytes().size(), cudaMemcpyHostToDevice, stream_),
                      "scan descriptors upload");
    *d = static_cast<std::uint8_t*>(scratch_);
    return {};
  }
  // Waits for the dispatch and brings back the staged results from `from` on.
  Status fetch(Staging& st, const std::uint8_t* d, std::size_t from) {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(st.bytes().data() + from, d + from, st.bytes().size() - from,
                                      cudaMemcpyDeviceToHost, stream_),
                      "scan results download");
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_), "scan dispatch");
    return {};
  }

  cudaStream_t stream_;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace

Status make_cuda_scan_device(Stream stream, std::unique_ptr<ScanDevice>* device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return {StatusCode::no_device, "no CUDA device"};
  }
  *device = std::make_unique<CudaScanDevice>(stream);
  return {};
}

void free_cuda_scan_memory(void* ptr) {
  if (ptr) cudaFree(ptr);
}

}  // namespace tandem::gpu
