// The archive scanner's CUDA device (see scan_gpu.hpp): device memory from
// the device's default memory pool (cudaMallocAsync and cudaFreeAsync on the
// call's stream; the pool keeps what a call frees for the next one), the
// result's from cudaMalloc; transfers and launches on the caller's stream;
// one launch per list of a dispatch: inflate_async, lz4_decompress_async,
// then the copy kernel (scan_gpu_body.hpp, a thread block per descriptor,
// grid-stride), the CRC-32 and the layer kernels. A dispatch packs all its
// descriptors into one upload, launches, and brings the sizes, statuses and
// checks back in one download.
//
// Transfers of pageable host memory go through pinned memory kept across
// calls (a StagePool lease: two halves and a buffer for descriptors), in
// pieces of a half: the host's copy into one half overlaps the DMA out of the
// other, and pieces bound for adjacent device bytes go in one DMA. Memory the
// device reaches already (pinned, registered, device, managed) is copied
// directly.
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <tuple>
#include <vector>

#include "common/thread_pool.hpp"
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

// A warp a piece (scan_crc32_warp), grid-stride.
__global__ void scan_crc_kernel(ScanCrcPiece* pieces, std::size_t n) {
  __shared__ std::uint32_t table[256];
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) table[i] = scan_crc32_table_entry(i);
  __syncthreads();
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * (blockDim.x / 32);
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x / 32) + threadIdx.x / 32; i < n; i += warps) {
    const std::uint32_t crc = scan_crc32_warp(simt::Warp{}, table, pieces[i].data, pieces[i].size);
    if ((threadIdx.x & 31) == 0) pieces[i].crc = crc;
  }
}

// A thread an output (scan_layer_of), grid-stride.
__global__ void scan_layer_kernel(ScanLayerJob* jobs, std::size_t n) {
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += threads) {
    jobs[i].layer = scan_layer_of(jobs[i].data, jobs[i].size);
  }
}

// Host arrays laid out back to back for one upload, in pinned memory (the
// stage's, which the DMA reads and the results' download writes, with no
// copy through pageable memory), each 256-aligned.
class Staging {
 public:
  // At most this much padding a put or reserve adds before its array.
  static constexpr std::size_t kAlign = 256;
  void attach(std::uint8_t* base, std::size_t capacity) {
    base_ = base;
    capacity_ = capacity;
    size_ = 0;
  }
  template <class T>
  std::size_t put(const T* p, std::size_t n) {
    const std::size_t at = reserve(n * sizeof(T));
    if (n) std::memcpy(base_ + at, p, n * sizeof(T));
    return at;
  }
  // n bytes, zeroed (what a result array holds until the device writes it).
  std::size_t reserve(std::size_t n) {
    const std::size_t at = (size_ + kAlign - 1) / kAlign * kAlign;
    if (at + n > capacity_) std::abort();  // the caller's bound was wrong: a bug, never input
    if (n) std::memset(base_ + at, 0, n);
    size_ = at + n;
    return at;
  }
  std::uint8_t* data() const { return base_; }
  std::size_t size() const { return size_; }
  // The i-th T of the array staged at `offset` (after a fetch: the device's).
  template <class T>
  T at(std::size_t offset, std::size_t i) const {
    T v;
    std::memcpy(&v, base_ + offset + i * sizeof(T), sizeof v);
    return v;
  }

 private:
  std::uint8_t* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
};

// A decoder dispatch's item arrays (inputs, their sizes, outputs, their
// capacities), staged from its jobs: where each lies, and the largest
// capacity. The jobs go in launch order, the largest inputs first (by the
// bit length of their compressed size): a warp decodes an item alone, so a
// batch's longest items started last would leave the device idle around
// them, and a thread block of items of like sizes is not held by one long
// item while its other warps wait. order[k]: the job launched as item k.
struct StagedJobs {
  std::size_t in = 0, sizes = 0, out = 0, caps = 0;
  std::vector<std::uint32_t> order;
};
StagedJobs stage_jobs(Staging& st, std::span<const ScanDecodeJob> jobs) {
  const std::size_t n = jobs.size();
  StagedJobs s;
  // A counting sort on the bit length, stable, largest class first.
  constexpr int kClasses = 65;
  const auto bit_class = [](std::size_t v) { return kClasses - 1 - static_cast<int>(std::bit_width(v)); };
  std::size_t start[kClasses + 1] = {};
  for (const ScanDecodeJob& j : jobs) ++start[bit_class(j.in_size) + 1];
  for (int c = 0; c < kClasses; ++c) start[c + 1] += start[c];
  s.order.resize(n);
  for (std::size_t i = 0; i < n; ++i) s.order[start[bit_class(jobs[i].in_size)]++] = static_cast<std::uint32_t>(i);
  s.in = st.reserve(n * sizeof(const void*));
  s.sizes = st.reserve(n * sizeof(std::size_t));
  s.out = st.reserve(n * sizeof(void*));
  s.caps = st.reserve(n * sizeof(std::size_t));
  for (std::size_t k = 0; k < n; ++k) {
    const ScanDecodeJob& j = jobs[s.order[k]];
    std::memcpy(st.data() + s.in + k * sizeof(const void*), &j.in, sizeof(const void*));
    std::memcpy(st.data() + s.sizes + k * sizeof(std::size_t), &j.in_size, sizeof(std::size_t));
    std::memcpy(st.data() + s.out + k * sizeof(void*), &j.out, sizeof(void*));
    std::memcpy(st.data() + s.caps + k * sizeof(std::size_t), &j.capacity, sizeof(std::size_t));
  }
  return s;
}
// The bytes stage_jobs takes for n jobs (without padding).
constexpr std::size_t staged_job_bytes(std::size_t n) {
  return n * (2 * sizeof(void*) + 2 * sizeof(std::size_t));
}

// Pinned host memory for one call's transfers: two halves that pageable
// bytes pass through in turn, an event per half recorded after its last DMA,
// and a buffer for a dispatch's descriptors and results.
constexpr std::size_t kStageHalf = std::size_t{4} << 20;
// A half's host copy is spread over the worker pool in slices of this size
// (a half of fewer bytes is copied on the calling thread).
constexpr std::size_t kStageSlice = std::size_t{256} << 10;

struct PinnedStage {
  PinnedStage() = default;
  PinnedStage(const PinnedStage&) = delete;
  PinnedStage& operator=(const PinnedStage&) = delete;
  ~PinnedStage() {
    for (cudaEvent_t e : done) {
      if (e) (void)cudaEventDestroy(e);
    }
    if (half[0]) (void)cudaFreeHost(half[0]);
  }

  int device = 0;                 // the events' device
  std::uint8_t* half[2] = {};
  cudaEvent_t done[2] = {};
  PinnedBuffer small;
};

// The stages that no call holds, per device, kept for the next calls and
// freed at exit (the pool is made after the CUDA runtime starts, so it goes
// before the runtime does).
class StagePool {
 public:
  static StagePool& instance() {
    static StagePool pool;
    return pool;
  }

  // A stage for the current device: a kept one, else a new one.
  Status take(std::unique_ptr<PinnedStage>* stage) {
    int device = 0;
    TANDEM_CUDA_CHECK(cudaGetDevice(&device), "cudaGetDevice");
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if ((*it)->device != device) continue;
        *stage = std::move(*it);
        free_.erase(it);
        return {};
      }
    }
    auto made = std::make_unique<PinnedStage>();
    made->device = device;
    void* p = nullptr;
    TANDEM_CUDA_CHECK(cudaHostAlloc(&p, 2 * kStageHalf, cudaHostAllocPortable), "cudaHostAlloc (scan staging)");
    made->half[0] = static_cast<std::uint8_t*>(p);
    made->half[1] = made->half[0] + kStageHalf;
    for (cudaEvent_t& e : made->done) {
      TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate (scan staging)");
    }
    *stage = std::move(made);
    return {};
  }

  // Back to the pool: no transfer of the stage may still be in flight.
  void give(std::unique_ptr<PinnedStage> stage) {
    if (!stage) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(stage));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<PinnedStage>> free_;
};

// Pinned host blocks for outputs the CPU writes (ScanDevice::host_alloc),
// kept across calls: a cudaHostAlloc of tens of MiB takes milliseconds.
// Sizes go up to whole kGrain so that calls alike reuse each other's
// blocks; at most kKeepBytes are kept, the rest freed.
class PinnedBlocks {
 public:
  static PinnedBlocks& instance() {
    static PinnedBlocks* blocks = new PinnedBlocks();  // never destroyed: calls may run at exit
    return *blocks;
  }

  // The smallest kept block of at least n bytes, else a new one; *p null
  // when pinned memory cannot be had.
  void take(std::size_t n, std::uint8_t** p, std::size_t* size) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      std::size_t best = blocks_.size();
      for (std::size_t i = 0; i < blocks_.size(); ++i) {
        if (blocks_[i].second >= n && (best == blocks_.size() || blocks_[i].second < blocks_[best].second)) best = i;
      }
      if (best != blocks_.size()) {
        std::tie(*p, *size) = blocks_[best];
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
        kept_ -= *size;
        return;
      }
    }
    *size = (std::max<std::size_t>(n, 1) + kGrain - 1) / kGrain * kGrain;
    void* v = nullptr;
    if (cudaHostAlloc(&v, *size, cudaHostAllocPortable) != cudaSuccess) {
      (void)cudaGetLastError();
      v = nullptr;
      *size = 0;
    }
    *p = static_cast<std::uint8_t*>(v);
  }

  void give(std::uint8_t* p, std::size_t size) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (kept_ + size <= kKeepBytes) {
        kept_ += size;
        blocks_.emplace_back(p, size);
        return;
      }
    }
    if (cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
  }

 private:
  static constexpr std::size_t kGrain = std::size_t{8} << 20;
  static constexpr std::size_t kKeepBytes = std::size_t{256} << 20;
  std::mutex mutex_;
  std::vector<std::pair<std::uint8_t*, std::size_t>> blocks_;
  std::size_t kept_ = 0;
};

// Whether the device reaches `p` without staging: pinned or registered host
// memory, device or managed memory.
bool device_reaches(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type != cudaMemoryTypeUnregistered;
}

// The host copies of one half: on the pool when there are enough bytes.
void host_copies(const std::vector<detail::Copy>& copies, std::size_t bytes, std::vector<std::size_t>* scratch) {
  if (bytes <= kStageSlice) {
    for (const detail::Copy& c : copies) std::memcpy(c.dst, c.src, c.size);
    return;
  }
  detail::parallel_copy(copies, scratch);
}

// Appends a host copy in slices of at most kStageSlice bytes.
void add_copy(std::vector<detail::Copy>* copies, void* dst, const void* src, std::size_t n) {
  for (std::size_t at = 0; at < n; at += kStageSlice) {
    copies->push_back({static_cast<std::uint8_t*>(dst) + at, static_cast<const std::uint8_t*>(src) + at,
                       std::min(kStageSlice, n - at)});
  }
}

// The current device's default memory pool keeps at least this share of the
// device's memory when streams synchronise (by default it gives back all it
// does not hold), so that a call's allocations reuse the last call's memory.
constexpr std::size_t kPoolKeepShare = 8;  // an eighth

// Whether the current device has memory pools; the first time for a device,
// raises its default pool's release threshold (never lowers it).
bool stream_ordered_memory() {
  constexpr int kDevices = 64;
  static std::mutex mutex;
  static signed char known[kDevices];  // 0: not asked yet, 1: pools, -1: none
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) {
    (void)cudaGetLastError();
    return false;
  }
  const std::lock_guard<std::mutex> lock(mutex);
  if (known[device] == 0) {
    known[device] = -1;
    int pools = 0;
    cudaMemPool_t pool = nullptr;
    cudaDeviceProp prop{};
    std::uint64_t threshold = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) == cudaSuccess && pools &&
        cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
        cudaGetDeviceProperties(&prop, device) == cudaSuccess &&
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) == cudaSuccess) {
      std::uint64_t keep = prop.totalGlobalMem / kPoolKeepShare;
      if (threshold >= keep || cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess) {
        known[device] = 1;
      }
    }
    (void)cudaGetLastError();
  }
  return known[device] == 1;
}

class CudaScanDevice final : public ScanDevice {
 public:
  explicit CudaScanDevice(Stream stream)
      : stream_(reinterpret_cast<cudaStream_t>(stream)), pools_(stream_ordered_memory()) {
    int unified = 0;
    if (cudaGetDevice(&device_) != cudaSuccess ||
        cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, device_) != cudaSuccess) {
      (void)cudaGetLastError();
    }
    unified_ = unified == 1;
  }
  ~CudaScanDevice() override {
    free(scratch_);
    // Blocks the caller did not give back: once the stream is idle.
    if (!pinned_.empty()) {
      if (cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
      for (const auto& [p, size] : pinned_) PinnedBlocks::instance().give(p, size);
    }
    // Every transfer ends with a wait, but one that failed half way may not.
    if (stage_) {
      if (cudaStreamSynchronize(stream_) == cudaSuccess) {
        StagePool::instance().give(std::move(stage_));
      } else {
        (void)cudaGetLastError();
        stage_.reset();
      }
    }
    if (owns_stream_ && cudaStreamDestroy(stream_) != cudaSuccess) (void)cudaGetLastError();
  }

  bool emulated() const override { return false; }

  // Stream-ordered where the device has memory pools: the memory is the
  // stream's until the free, which the stream reaches after every use.
  Status alloc(std::size_t bytes, void** ptr) override {
    bytes = std::max<std::size_t>(bytes, 1);
    if (pools_) {
      TANDEM_CUDA_CHECK(cudaMallocAsync(ptr, bytes, stream_), "cudaMallocAsync (scan)");
    } else {
      TANDEM_CUDA_CHECK(cudaMalloc(ptr, bytes), "cudaMalloc (scan)");
    }
    return {};
  }
  void free(void* ptr) override {
    if (!ptr) return;
    const cudaError_t e = pools_ ? cudaFreeAsync(ptr, stream_) : cudaFree(ptr);
    if (e != cudaSuccess) (void)cudaGetLastError();
  }
  // Not from the pool: the result outlives the call and its stream, and
  // free_cuda_scan_memory frees it with cudaFree wherever it was made.
  Status alloc_result(std::size_t bytes, void** ptr) override {
    TANDEM_CUDA_CHECK(cudaSetDevice(device_), "cudaSetDevice (scan result)");  // (perhaps another thread)
    TANDEM_CUDA_CHECK(cudaMalloc(ptr, std::max<std::size_t>(bytes, 1)), "cudaMalloc (scan result)");
    return {};
  }

  Status host_alloc(std::size_t bytes, std::uint8_t** ptr) override {
    std::size_t size = 0;
    PinnedBlocks::instance().take(bytes, ptr, &size);
    if (*ptr) pinned_.emplace_back(*ptr, size);
    return {};
  }
  bool kernels_reach_host() const override { return unified_; }
  void host_free(std::uint8_t* ptr) override {
    // A queued upload may still read it.
    if (queued_) {
      if (cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
      queued_ = false;
    }
    for (auto it = pinned_.begin(); it != pinned_.end(); ++it) {
      if (it->first != ptr) continue;
      PinnedBlocks::instance().give(it->first, it->second);
      pinned_.erase(it);
      return;
    }
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
    if (Status s = lease(); !s) return s;
    // Half b's pieces are copied out once its DMAs are done, which is
    // waited for only when the half is wanted again (or at the end).
    std::vector<detail::Copy> outs[2];
    std::size_t out_bytes[2] = {0, 0};
    std::vector<ScanTransfer> dmas;
    int b = 0;
    std::size_t used = 0;
    const auto drain = [&](int h) -> Status {
      if (outs[h].empty()) return {};
      TANDEM_CUDA_CHECK(cudaEventSynchronize(stage_->done[h]), "scan download");
      host_copies(outs[h], out_bytes[h], &first_piece_);
      outs[h].clear();
      out_bytes[h] = 0;
      return {};
    };
    const auto flush = [&]() -> Status {
      if (dmas.empty()) return {};
      for (const ScanTransfer& d : dmas) {
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(d.dst, d.src, d.bytes, cudaMemcpyDeviceToHost, stream_), "scan download");
      }
      TANDEM_CUDA_CHECK(cudaEventRecord(stage_->done[b], stream_), "scan download");
      dmas.clear();
      used = 0;
      b ^= 1;
      return drain(b);
    };
    for (const ScanTransfer& t : transfers) {
      if (!t.bytes) continue;
      if (device_reaches(t.dst)) {
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyDefault, stream_), "scan download");
        continue;
      }
      for (std::size_t at = 0; at < t.bytes;) {
        if (used == kStageHalf) {
          if (Status s = flush(); !s) return s;
        }
        const std::size_t n = std::min(t.bytes - at, kStageHalf - used);
        std::uint8_t* const pinned = stage_->half[b] + used;
        dmas.push_back({pinned, static_cast<const std::uint8_t*>(t.src) + at, n});
        add_copy(&outs[b], static_cast<std::uint8_t*>(t.dst) + at, pinned, n);
        out_bytes[b] += n;
        used += n;
        at += n;
      }
    }
    if (Status s = flush(); !s) return s;
    if (Status s = drain(b ^ 1); !s) return s;
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_), "scan download");
    return {};
  }

  Status upload_many(std::span<const ScanUpload> uploads) override { return upload_staged(uploads, true); }
  Status upload_queued(std::span<const ScanUpload> uploads) override { return upload_staged(uploads, false); }

  // A queued upload's last DMAs may still read the stage's halves: the host
  // writes into a half only once they are done.
  Status upload_staged(std::span<const ScanUpload> uploads, bool wait) {
    if (owns_stream_) TANDEM_CUDA_CHECK(cudaSetDevice(device_), "cudaSetDevice (scan uploader)");
    if (Status s = lease(); !s) return s;
    for (cudaEvent_t e : stage_->done) TANDEM_CUDA_CHECK(cudaEventSynchronize(e), "scan upload");
    // Half b's pieces are copied in all at once, then go up; the other half
    // is refilled once its DMAs are done.
    std::vector<detail::Copy> ins;
    std::size_t in_bytes = 0;
    std::vector<ScanUpload> dmas;
    std::uint8_t* pad_end = nullptr;  // how far the last DMA may reach on the device (the caller's padding)
    int b = 0;
    std::size_t used = 0;
    const auto flush = [&]() -> Status {
      if (dmas.empty()) return {};
      // An uploader's thread copies alone: it runs beside the caller's own
      // parallel work (the archives' upload beside the first walk), which
      // the worker pool is better spent on.
      if (owns_stream_) {
        for (const detail::Copy& c : ins) std::memcpy(c.dst, c.src, c.size);
      } else {
        host_copies(ins, in_bytes, &first_piece_);
      }
      for (const ScanUpload& d : dmas) {
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(d.dst, d.src, d.bytes, cudaMemcpyHostToDevice, stream_), "scan upload");
      }
      TANDEM_CUDA_CHECK(cudaEventRecord(stage_->done[b], stream_), "scan upload");
      ins.clear();
      in_bytes = 0;
      dmas.clear();
      used = 0;
      b ^= 1;
      TANDEM_CUDA_CHECK(cudaEventSynchronize(stage_->done[b]), "scan upload");
      return {};
    };
    for (const ScanUpload& u : uploads) {
      if (!u.bytes) continue;
      if (device_reaches(u.src)) {
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(u.dst, u.src, u.bytes, cudaMemcpyDefault, stream_), "scan upload");
        continue;
      }
      for (std::size_t at = 0; at < u.bytes;) {
        if (used == kStageHalf) {
          if (Status s = flush(); !s) return s;
        }
        std::uint8_t* const dst = static_cast<std::uint8_t*>(u.dst) + at;
        // A piece that starts where the last DMA ends on the device, or
        // within the caller's padding after it, joins that DMA (the padding
        // gets whatever the half holds there). The last DMA's pinned bytes
        // always end at `used`.
        bool join = false;
        if (!dmas.empty()) {
          ScanUpload& last = dmas.back();
          std::uint8_t* const end = static_cast<std::uint8_t*>(last.dst) + last.bytes;
          if (dst >= end && dst <= pad_end && static_cast<std::size_t>(dst - end) < kStageHalf - used) {
            used += static_cast<std::size_t>(dst - end);
            last.bytes += static_cast<std::size_t>(dst - end);
            join = true;
          }
        }
        const std::size_t n = std::min(u.bytes - at, kStageHalf - used);
        std::uint8_t* const pinned = stage_->half[b] + used;
        if (join) {
          dmas.back().bytes += n;
        } else {
          dmas.push_back({dst, pinned, n});
        }
        add_copy(&ins, pinned, static_cast<const std::uint8_t*>(u.src) + at, n);
        in_bytes += n;
        used += n;
        at += n;
        pad_end = dst + n;
        if (u.padded && at == u.bytes) {
          pad_end = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(pad_end) + 255) / 256 * 256);
        }
      }
    }
    if (Status s = flush(); !s) return s;
    if (wait) {
      TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_), "scan upload");
    } else {
      queued_ = true;
    }
    return {};
  }

  // A stream of its own that waits (an event) for what this one's stream
  // holds so far; not blocking with the legacy default stream, so that its
  // copies overlap this one's work.
  Status uploader(std::unique_ptr<ScanDevice>* out) override {
    cudaStream_t side = nullptr;
    TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreate (scan uploader)");
    auto made = std::make_unique<CudaScanDevice>(reinterpret_cast<Stream>(side));
    made->owns_stream_ = true;
    made->device_ = device_;
    if (Status s = stream_waits_for(side, stream_, "scan uploader"); !s) return s;
    *out = std::move(made);
    return {};
  }

  Status decode_start(std::span<ScanDecodeJob> inflates, std::span<ScanDecodeJob> lz4s, std::span<ScanCopyJob> copies,
                      std::span<ScanCrcPiece> pieces, std::span<ScanLayerJob> layers) override {
    Decode& p = decode_;
    p = Decode{};
    p.inflates = inflates;
    p.lz4s = lz4s;
    p.copies = copies;
    p.pieces = pieces;
    p.layers = layers;
    const std::size_t ni = inflates.size(), nl = lz4s.size(), nc = copies.size(), np = pieces.size(),
                      nj = layers.size();
    if (!ni && !nl && !nc && !np && !nj) return {};
    // The arrays that only go up first, then those that come back (from
    // `back` on: the CRC pieces and layer jobs, which go both ways, and the
    // results), so that one download brings them all.
    Staging& st = p.st;
    // The largest LZ4 output: what the temporary storage and the launch are for.
    std::size_t lz4_cap = 0;
    for (const ScanDecodeJob& j : lz4s) lz4_cap = std::max(lz4_cap, j.capacity);
    // A thread block per copy item, so large copies go in pieces of
    // kCopyPiece bytes (whose statuses are the copy's: they depend on its
    // pointers and mode only). Pieces of 64 KiB: with 1 MiB ones the final
    // gather of the 520 package archives (20,577 copies, 80.7 MB) took
    // 0.30 ms on an H200, with 64 KiB 0.13 ms (Nsight Compute), the largest
    // entries' blocks no longer last.
    constexpr std::uint64_t kCopyPiece = 64u << 10;
    std::vector<ScanCopyItem> items;
    items.reserve(nc);
    std::vector<std::size_t>& first = p.first;
    first.resize(nc + 1);
    for (std::size_t i = 0; i < nc; ++i) {
      first[i] = items.size();
      const ScanCopyItem& it = copies[i].item;
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
    first[nc] = items.size();
    const std::size_t n_items = items.size();
    std::size_t temp = 0;
    if (nl) {
      if (Status s = lz4_decompress_temp_size(nl, lz4_cap, &temp); !s) return s;
    }
    // Every array below, and the padding before each (19 of them at most).
    const std::size_t bound =
        20 * Staging::kAlign + staged_job_bytes(ni) + staged_job_bytes(nl) + n_items * sizeof(ScanCopyItem) + temp +
        np * sizeof(ScanCrcPiece) + nj * sizeof(ScanLayerJob) +
        ni * (2 * sizeof(std::size_t) + sizeof(InflateStatus) + sizeof(InflateEnd)) +
        nl * (sizeof(std::size_t) + sizeof(ItemStatus)) + n_items * sizeof(ScanCopyStatus);
    if (Status s = lease(); !s) return s;
    if (Status s = stage_->small.reserve(bound); !s) return s;
    st.attach(stage_->small.data(), bound);
    p.ai = stage_jobs(st, inflates);
    p.al = stage_jobs(st, lz4s);
    const StagedJobs& ai = p.ai;
    const StagedJobs& al = p.al;
    const std::size_t c_items = st.put(items.data(), n_items);
    const std::size_t l_temp = st.reserve(temp);
    const std::size_t back = p.back = st.put(pieces.data(), np);
    const std::size_t j_layers = p.j_layers = st.put(layers.data(), nj);
    const std::size_t i_got = p.i_got = st.reserve(ni * sizeof(std::size_t)),
                      i_used = p.i_used = st.reserve(ni * sizeof(std::size_t)),
                      i_status = p.i_status = st.reserve(ni * sizeof(InflateStatus)),
                      i_end = p.i_end = st.reserve(ni * sizeof(InflateEnd));
    const std::size_t l_got = p.l_got = st.reserve(nl * sizeof(std::size_t)),
                      l_status = p.l_status = st.reserve(nl * sizeof(ItemStatus));
    const std::size_t c_status = p.c_status = st.reserve(n_items * sizeof(ScanCopyStatus));
    std::uint8_t*& d = p.d;
    if (Status s = stage(st, &d); !s) return s;
    if (ni) {
      if (Status s = inflate_async(reinterpret_cast<const void* const*>(d + ai.in),
                                   reinterpret_cast<const std::size_t*>(d + ai.sizes), ni, nullptr, 0,
                                   reinterpret_cast<void* const*>(d + ai.out),
                                   reinterpret_cast<const std::size_t*>(d + ai.caps),
                                   reinterpret_cast<std::size_t*>(d + i_got),
                                   reinterpret_cast<InflateStatus*>(d + i_status),
                                   reinterpret_cast<InflateEnd*>(d + i_end), reinterpret_cast<std::size_t*>(d + i_used),
                                   reinterpret_cast<Stream>(stream_));
          !s) {
        return s;
      }
    }
    if (nl) {
      if (Status s = lz4_decompress_async(reinterpret_cast<const void* const*>(d + al.in),
                                          reinterpret_cast<const std::size_t*>(d + al.sizes), lz4_cap, nl,
                                          temp ? d + l_temp : nullptr, temp, reinterpret_cast<void* const*>(d + al.out),
                                          reinterpret_cast<const std::size_t*>(d + al.caps),
                                          reinterpret_cast<std::size_t*>(d + l_got),
                                          reinterpret_cast<ItemStatus*>(d + l_status),
                                          reinterpret_cast<Stream>(stream_));
          !s) {
        return s;
      }
    }
    if (n_items) {
      const unsigned grid = static_cast<unsigned>(std::min<std::size_t>(n_items, 1u << 16));
      scan_copy_kernel<<<grid, 256, 0, stream_>>>(reinterpret_cast<const ScanCopyItem*>(d + c_items), n_items,
                                                   reinterpret_cast<ScanCopyStatus*>(d + c_status));
      if (Status s = launch_status(); !s) return s;
    }
    if (np) {
      const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((np + 3) / 4, 1u << 16));
      scan_crc_kernel<<<grid, 128, 0, stream_>>>(reinterpret_cast<ScanCrcPiece*>(d + back), np);
      if (Status s = launch_status(); !s) return s;
    }
    if (nj) {
      const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((nj + 127) / 128, 1u << 16));
      scan_layer_kernel<<<grid, 128, 0, stream_>>>(reinterpret_cast<ScanLayerJob*>(d + j_layers), nj);
      if (Status s = launch_status(); !s) return s;
    }
    p.launched = true;
    return {};
  }

  Status decode_finish() override {
    Decode& p = decode_;
    if (!p.launched) return {};
    p.launched = false;
    Staging& st = p.st;
    if (Status s = fetch(st, p.d, p.back); !s) return s;
    const StagedJobs& ai = p.ai;
    const StagedJobs& al = p.al;
    const std::size_t ni = p.inflates.size(), nl = p.lz4s.size(), nc = p.copies.size(), np = p.pieces.size(),
                      nj = p.layers.size();
    for (std::size_t k = 0; k < ni; ++k) {
      ScanDecodeJob& j = p.inflates[ai.order[k]];
      j.out_size = st.at<std::size_t>(p.i_got, k);
      j.in_used = st.at<std::size_t>(p.i_used, k);
      j.ok = st.at<InflateStatus>(p.i_status, k) == InflateStatus::ok &&
             st.at<InflateEnd>(p.i_end, k) == InflateEnd::final_block;
    }
    for (std::size_t k = 0; k < nl; ++k) {
      ScanDecodeJob& j = p.lz4s[al.order[k]];
      j.out_size = st.at<std::size_t>(p.l_got, k);
      j.ok = st.at<ItemStatus>(p.l_status, k) == ItemStatus::ok;
      j.in_used = j.in_size;
    }
    for (std::size_t i = 0; i < nc; ++i) p.copies[i].status = st.at<ScanCopyStatus>(p.c_status, p.first[i]);
    for (std::size_t i = 0; i < np; ++i) p.pieces[i].crc = st.at<ScanCrcPiece>(p.back, i).crc;
    for (std::size_t i = 0; i < nj; ++i) p.layers[i].layer = st.at<ScanLayerJob>(p.j_layers, i).layer;
    return {};
  }

 private:
  // This call's pinned stage, taken from the pool on first use.
  Status lease() {
    if (stage_) return {};
    return StagePool::instance().take(&stage_);
  }
  // Uploads the staged arrays (already in the stage's pinned buffer) into the
  // scratch allocation (grown as needed).
  Status stage(Staging& st, std::uint8_t** d) {
    const std::size_t bytes = std::max<std::size_t>(st.size(), 256);
    if (bytes > scratch_bytes_) {
      free(scratch_);
      scratch_ = nullptr;
      scratch_bytes_ = 0;
      if (Status s = alloc(bytes, &scratch_); !s) return s;
      scratch_bytes_ = bytes;
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(scratch_, st.data(), st.size(), cudaMemcpyHostToDevice, stream_),
                      "scan descriptors upload");
    *d = static_cast<std::uint8_t*>(scratch_);
    return {};
  }
  // Waits for the dispatch and brings back the staged results from `from` on.
  Status fetch(Staging& st, const std::uint8_t* d, std::size_t from) {
    const std::size_t n = st.size() - from;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(st.data() + from, d + from, n, cudaMemcpyDeviceToHost, stream_),
                      "scan results download");
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_), "scan dispatch");
    return {};
  }

  cudaStream_t stream_;
  bool pools_;
  int device_ = 0;            // the CUDA device current where the object was made
  bool owns_stream_ = false;  // an uploader's: its calls come from another thread (current device set)
  bool unified_ = false;      // kernels_reach_host()
  bool queued_ = false;       // an upload_queued since host_free last waited
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  std::unique_ptr<PinnedStage> stage_;
  std::vector<std::pair<std::uint8_t*, std::size_t>> pinned_;  // host_alloc's blocks not given back
  std::vector<std::size_t> first_piece_;  // parallel_copy's scratch
  // A decode between its start and its finish: the caller's spans, the
  // staged arrays and where the results lie in them.
  struct Decode {
    std::span<ScanDecodeJob> inflates, lz4s;
    std::span<ScanCopyJob> copies;
    std::span<ScanCrcPiece> pieces;
    std::span<ScanLayerJob> layers;
    Staging st;
    StagedJobs ai, al;
    std::vector<std::size_t> first;  // each copy's first item
    std::size_t back = 0, j_layers = 0, i_got = 0, i_used = 0, i_status = 0, i_end = 0, l_got = 0, l_status = 0,
                c_status = 0;
    std::uint8_t* d = nullptr;
    bool launched = false;
  };
  Decode decode_;
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
