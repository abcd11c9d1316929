// The GPU measurement of `tandem bench` in a CUDA build; see bench_gpu.hpp.
//
// Layout of one buffer set, for n chunks of the input:
//   in      the input, chunk i at i * chunk
//   slots   n slots of `stride` bytes: lz4_compress_async writes block i to slot i
//   packed  the blocks end to end, block i at offsets[i] (an exclusive scan of
//           the block sizes): what a caller stores or sends, and what the
//           decoder reads
//   out     the decoder's output, chunk i at i * chunk
// plus the item arrays (pointers, sizes, statuses) of both calls. The sets are
// copies of each other; the timed runs rotate through them, compressing set r
// and decoding set r + sets/2 in round r, so that a run does not find the data
// it reads in the 50 MB L2 cache because the run before it (or the untimed
// packing and checking between runs) just touched it. There are enough sets
// that one pass over them touches at least three times the L2 size.
//
// Every decompression's output is scrambled first (each byte the complement
// of the input's) and compared with the input on the GPU afterwards, both
// untimed; so is every item's status and size, and the compressed total. The
// first round trip of each set is also downloaded and checked on the host:
// XXH3-64 of the output, and every block decoded by liblz4.
#include "bench/bench_gpu.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <lz4.h>
#include <xxhash.h>

#include <cub/device/device_scan.cuh>

#include "bench/bench_cuda.cuh"
#include "tandem/tandem_gpu.hpp"

namespace tandem::bench {

bool gpu_bench_compiled() { return true; }

namespace {

using gpu::ItemStatus;

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// What check_kernel found wrong, as bits.
enum CheckFlag : unsigned {
  kBytesDiffer = 1,         // an output byte differs from the input's
  kDecodeStatus = 2,        // a decoder status other than ok
  kDecodeSize = 4,          // an item decoded to a size other than its chunk's
  kEncodeStatus = 8,        // a compression status other than ok or incompressible
  kCompressedTotal = 16,    // the blocks add up to another size than in the warm-up
};

std::string describe_flags(unsigned flags) {
  std::string text;
  const auto add = [&](unsigned bit, const char* what) {
    if (!(flags & bit)) return;
    if (!text.empty()) text += "; ";
    text += what;
  };
  add(kBytesDiffer, "decompressed bytes differ from the input");
  add(kDecodeStatus, "a block decoded with a status other than ok");
  add(kDecodeSize, "a block decoded to a size other than its chunk's");
  add(kEncodeStatus, "a chunk compressed with a status other than ok or incompressible");
  add(kCompressedTotal, "the compressed size differs from the warm-up's");
  return text;
}

// Makes every byte the decoder fails to write differ from the input.
__global__ void scramble_kernel(const std::uint8_t* in, std::uint8_t* out, std::size_t size) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < size; i += stride)
    out[i] = static_cast<std::uint8_t>(~in[i]);
}

__global__ void check_kernel(const std::uint8_t* in, const std::uint8_t* out, std::size_t size,
                             const std::size_t* item_sizes, const std::size_t* decoded_sizes,
                             const ItemStatus* decode_statuses, const ItemStatus* encode_statuses,
                             std::size_t items, const std::size_t* total, std::size_t expected_total,
                             unsigned* flags) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t first = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  unsigned found = 0;
  for (std::size_t i = first; i < size; i += stride)
    if (in[i] != out[i]) found |= kBytesDiffer;
  for (std::size_t i = first; i < items; i += stride) {
    if (decode_statuses[i] != ItemStatus::ok) found |= kDecodeStatus;
    if (decoded_sizes[i] != item_sizes[i]) found |= kDecodeSize;
    if (encode_statuses[i] != ItemStatus::ok && encode_statuses[i] != ItemStatus::incompressible)
      found |= kEncodeStatus;
  }
  if (first == 0 && total && *total != expected_total) found |= kCompressedTotal;
  if (found) atomicOr(flags, found);
}

// Moves block i from its slot to packed + offsets[i] and records that address
// as the decoder's input pointer. A block that would not fit (a size past its
// slot or past the packed buffer: a compressor bug) is not copied and gets a
// null pointer, which the decoder reports as invalid_item.
__global__ void pack_kernel(const std::uint8_t* slots, std::size_t stride, const std::size_t* sizes,
                            const std::size_t* offsets, std::size_t items, std::uint8_t* packed,
                            std::size_t packed_capacity, const void** packed_ptrs) {
  for (std::size_t i = blockIdx.x; i < items; i += gridDim.x) {
    const std::size_t size = sizes[i];
    const std::size_t offset = offsets[i];
    const bool fits = size <= stride && offset <= packed_capacity && size <= packed_capacity - offset;
    if (fits) {
      const std::uint8_t* src = slots + i * stride;
      std::uint8_t* dst = packed + offset;
      for (std::size_t j = threadIdx.x; j < size; j += blockDim.x) dst[j] = src[j];
    }
    if (threadIdx.x == 0) packed_ptrs[i] = fits ? packed + offset : nullptr;
  }
}

constexpr int kThreads = 256;

// Host mode: the batch goes through the GPU in up to this many slices of
// whole chunks, each on its own stream.
constexpr std::size_t kHostSlices = 8;

class CudaTrial final : public GpuTrial {
 public:
  CudaTrial(std::span<const std::uint8_t> input, std::uint64_t xxh3, std::size_t chunk, GpuMode mode)
      : input_(input), xxh3_(xxh3), chunk_(chunk), mode_(mode), items_((input.size() + chunk - 1) / chunk) {}
  // A trial that failed may leave work queued on buffers about to be freed.
  ~CudaTrial() override {
    if (stream_) (void)cudaStreamSynchronize(stream_.get());
    for (Slice& slice : slices_)
      if (slice.stream) (void)cudaStreamSynchronize(slice.stream.get());
  }
  CudaTrial(const CudaTrial&) = delete;
  CudaTrial& operator=(const CudaTrial&) = delete;

  // Allocates everything, then one verified round trip through every set.
  bool setup();

  bool compress(double* seconds) override {
    Set& set = sets_[compress_round_++ % sets_.size()];
    if (!compress_on(set, seconds)) return false;
    // Host mode has the total on the host already; device mode's is checked
    // on the GPU when this set is decoded next.
    if (mode_ == GpuMode::host && *host_total_ != compressed_size_)
      return fail("the compressed size differs from the warm-up's");
    return true;
  }

  bool decompress(double* seconds) override {
    Set& set = sets_[(decompress_round_++ + sets_.size() / 2) % sets_.size()];
    return decompress_on(set, seconds);
  }

  bool finish() override {
    for (Set& set : sets_)
      if (!decompress_on(set, nullptr)) return false;
    if (mode_ == GpuMode::host) {
      if (XXH3_64bits(host_out_.get(), input_.size()) != xxh3_)
        return fail("the downloaded output differs from the input (XXH3-64)");
      if (XXH3_64bits(host_packed_.get(), compressed_size_) != packed_xxh3_)
        return fail("the blocks downloaded by the last timed run differ from the warm-up's (XXH3-64)");
    }
    return true;
  }

  std::uint64_t compressed_size() const override { return compressed_size_; }
  std::uint64_t items() const override { return items_; }
  std::uint64_t incompressible() const override { return incompressible_; }
  int buffer_sets() const override { return static_cast<int>(sets_.size()); }

 private:
  struct Set {
    DevicePtr<std::uint8_t> in, slots, packed, out;
    DevicePtr<std::size_t> block_sizes;  // items + 1: the last stays 0, so the scan's last entry is the total
    DevicePtr<std::size_t> offsets;      // items + 1
    DevicePtr<std::size_t> decoded_sizes;
    DevicePtr<ItemStatus> encode_statuses, decode_statuses;
    DevicePtr<const void*> in_ptrs, packed_ptrs;
    DevicePtr<void*> slot_ptrs, out_ptrs;
    // Host mode: the decoder's input pointers into this set's packed blocks,
    // uploaded with the blocks as a caller holding them in host memory would.
    PinnedPtr<const void*> host_packed_ptrs;
    // Host mode: each slice's block offsets, items + 1 of them from
    // slice_offsets + first + slice (the last one its total).
    DevicePtr<std::size_t> slice_offsets;
  };

  // Host mode: chunks [first, first + count) on their own stream, with their
  // own temporary storage; `base` is where their blocks start in the
  // device's packed buffer (the worst case of the chunks before them).
  struct Slice {
    std::size_t first = 0;
    std::size_t count = 0;
    std::size_t base = 0;
    std::unique_ptr<CUstream_st, CudaStreamDestroy> stream;
    std::unique_ptr<CUevent_st, CudaEventDestroy> packed;  // the slice's total is on the host
    std::unique_ptr<CUevent_st, CudaEventDestroy> done;    // all of the slice's work is done
    DevicePtr<std::uint8_t> temp;
    DevicePtr<std::uint8_t> scan_temp;
    std::size_t scan_temp_bytes = 0;
  };
  // Where a slice's chunks lie in the input (and in the decoder's output).
  std::size_t slice_at(const Slice& slice) const { return slice.first * chunk_; }
  std::size_t slice_bytes(const Slice& slice) const {
    return std::min(slice.count * chunk_, input_.size() - slice_at(slice));
  }

  bool fail(const std::string& what) {
    error_ = what;
    return false;
  }
  bool cuda_ok(cudaError_t e, const char* expr, const char* file, int line) {
    if (e == cudaSuccess) return true;
    return fail(std::string(base_name(file)) + ":" + std::to_string(line) + ": " + expr + ": " +
                cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
  bool tandem_ok(const Status& s, const char* expr, const char* file, int line) {
    if (s) return true;
    return fail(std::string(base_name(file)) + ":" + std::to_string(line) + ": " + expr + ": " + s.to_string());
  }

  template <class T>
  bool device_alloc(DevicePtr<T>* p, std::size_t count);
  template <class T>
  bool pinned_alloc(PinnedPtr<T>* p, std::size_t count);
  template <class T>
  bool upload(T* dst, const std::vector<T>& src);

  std::size_t item_size(std::size_t i) const { return std::min(chunk_, input_.size() - i * chunk_); }
  int grid_for(std::size_t work) const {
    const std::size_t blocks = (work + kThreads - 1) / kThreads;
    return static_cast<int>(std::clamp<std::size_t>(blocks, 1, std::size_t(sm_count_) * 8));
  }

  template <class Work>
  bool timed(const Work& work, double* seconds);
  bool encode(Set& set);
  bool pack(Set& set);
  bool decode(Set& set);
  bool check(Set& set);
  bool compress_on(Set& set, double* seconds);
  bool decompress_on(Set& set, double* seconds);
  bool setup_slices();
  bool compress_slices(Set& set);
  bool decompress_slices(Set& set);
  bool join_slices();
  bool download_blocks(Set& set);
  bool verify_blocks();

  std::span<const std::uint8_t> input_;
  std::uint64_t xxh3_;
  std::size_t chunk_;
  GpuMode mode_;
  std::size_t items_;
  std::size_t max_item_ = 0;          // largest chunk: min(chunk, input size)
  std::size_t stride_ = 0;            // slot size: the worst-case block, rounded up to 16 bytes
  std::size_t bound_ = 0;             // the worst-case block of a chunk
  std::size_t packed_capacity_ = 0;   // items * bound
  int sm_count_ = 1;

  std::unique_ptr<CUstream_st, CudaStreamDestroy> stream_;
  std::unique_ptr<CUevent_st, CudaEventDestroy> start_, stop_;
  DevicePtr<std::uint8_t> temp_;      // tandem's temporary storage (may stay null)
  std::size_t temp_bytes_ = 0;
  DevicePtr<std::uint8_t> scan_temp_;
  std::size_t scan_temp_bytes_ = 0;
  DevicePtr<std::size_t> item_sizes_;  // chunk sizes: the compressor's input sizes, the decoder's capacities
  DevicePtr<unsigned> flags_;
  std::vector<Set> sets_;
  std::vector<Slice> slices_;          // host mode
  std::size_t slice_temp_bytes_ = 0;
  std::vector<std::size_t> host_offsets_;  // items + 1: where each block starts in host_packed_
  PinnedPtr<std::size_t> host_slice_totals_;

  PinnedPtr<std::uint8_t> host_in_, host_packed_, host_out_;
  PinnedPtr<std::size_t> host_sizes_, host_total_;
  PinnedPtr<ItemStatus> host_statuses_, host_decode_statuses_;
  PinnedPtr<unsigned> host_flags_;

  std::uint64_t compressed_size_ = 0;
  std::uint64_t packed_xxh3_ = 0;
  std::uint64_t incompressible_ = 0;
  std::size_t compress_round_ = 0;
  std::size_t decompress_round_ = 0;
};

#define BENCH_CUDA(expr)                                              \
  do {                                                                \
    if (!cuda_ok((expr), #expr, __FILE__, __LINE__)) return false;    \
  } while (0)
#define BENCH_TANDEM(expr)                                            \
  do {                                                                \
    if (!tandem_ok((expr), #expr, __FILE__, __LINE__)) return false;  \
  } while (0)

template <class T>
bool CudaTrial::device_alloc(DevicePtr<T>* p, std::size_t count) {
  void* raw = nullptr;
  BENCH_CUDA(cudaMalloc(&raw, std::max<std::size_t>(count, 1) * sizeof(T)));
  p->reset(static_cast<T*>(raw));
  return true;
}

template <class T>
bool CudaTrial::pinned_alloc(PinnedPtr<T>* p, std::size_t count) {
  void* raw = nullptr;
  BENCH_CUDA(cudaMallocHost(&raw, std::max<std::size_t>(count, 1) * sizeof(T)));
  p->reset(static_cast<T*>(raw));
  std::memset(raw, 0, std::max<std::size_t>(count, 1) * sizeof(T));  // touch every page before timing
  return true;
}

template <class T>
bool CudaTrial::upload(T* dst, const std::vector<T>& src) {
  if (src.empty()) return true;
  BENCH_CUDA(cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, stream_.get()));
  return true;
}

bool CudaTrial::setup() {
  const std::size_t size = input_.size();
  max_item_ = std::min(chunk_, size);
  const std::size_t bound = gpu::lz4_max_compressed_size(chunk_);
  if (bound == 0) return fail("chunk larger than tandem::gpu::kMaxItemSize");
  if (items_ + 1 > std::size_t(INT_MAX)) return fail("too many chunks for one batch");
  stride_ = (bound + 15) / 16 * 16;
  bound_ = bound;
  packed_capacity_ = items_ * bound;

  int device = 0;
  BENCH_CUDA(cudaSetDevice(device));
  BENCH_CUDA(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
  int l2_bytes = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_.reset(stream);
  cudaEvent_t event = nullptr;
  BENCH_CUDA(cudaEventCreate(&event));
  start_.reset(event);
  BENCH_CUDA(cudaEventCreate(&event));
  stop_.reset(event);

  std::size_t compress_temp = 0;
  std::size_t decompress_temp = 0;
  BENCH_TANDEM(gpu::lz4_compress_temp_size(items_, max_item_, &compress_temp));
  BENCH_TANDEM(gpu::lz4_decompress_temp_size(items_, max_item_, &decompress_temp));
  temp_bytes_ = std::max(compress_temp, decompress_temp);  // one stream: the calls never overlap
  if (temp_bytes_ > 0 && !device_alloc(&temp_, temp_bytes_)) return false;
  BENCH_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, scan_temp_bytes_, static_cast<const std::size_t*>(nullptr),
                                           static_cast<std::size_t*>(nullptr), static_cast<int>(items_ + 1),
                                           stream_.get()));
  if (!device_alloc(&scan_temp_, scan_temp_bytes_) || !device_alloc(&item_sizes_, items_) ||
      !device_alloc(&flags_, 1))
    return false;
  std::vector<std::size_t> item_sizes(items_);
  for (std::size_t i = 0; i < items_; ++i) item_sizes[i] = item_size(i);
  if (!upload(item_sizes_.get(), item_sizes)) return false;

  const std::size_t footprint = 2 * size + items_ * (stride_ + bound);
  const std::size_t wanted = (3 * std::size_t(l2_bytes) + footprint - 1) / std::max<std::size_t>(footprint, 1);
  sets_.resize(std::clamp<std::size_t>(wanted, 2, 32));
  for (std::size_t k = 0; k < sets_.size(); ++k) {
    Set& s = sets_[k];
    if (!device_alloc(&s.in, size) || !device_alloc(&s.slots, items_ * stride_) ||
        !device_alloc(&s.packed, packed_capacity_) || !device_alloc(&s.out, size) ||
        !device_alloc(&s.block_sizes, items_ + 1) || !device_alloc(&s.offsets, items_ + 1) ||
        !device_alloc(&s.decoded_sizes, items_) || !device_alloc(&s.encode_statuses, items_) ||
        !device_alloc(&s.decode_statuses, items_) || !device_alloc(&s.in_ptrs, items_) ||
        !device_alloc(&s.packed_ptrs, items_) || !device_alloc(&s.slot_ptrs, items_) ||
        !device_alloc(&s.out_ptrs, items_))
      return false;
    // The slot after the last block size stays 0 (the compressor writes items_ of them).
    BENCH_CUDA(cudaMemsetAsync(s.block_sizes.get(), 0, (items_ + 1) * sizeof(std::size_t), stream_.get()));
    std::vector<const void*> in_ptrs(items_);
    std::vector<void*> slot_ptrs(items_), out_ptrs(items_);
    for (std::size_t i = 0; i < items_; ++i) {
      in_ptrs[i] = s.in.get() + i * chunk_;
      slot_ptrs[i] = s.slots.get() + i * stride_;
      out_ptrs[i] = s.out.get() + i * chunk_;
    }
    if (!upload(s.in_ptrs.get(), in_ptrs) || !upload(s.slot_ptrs.get(), slot_ptrs) ||
        !upload(s.out_ptrs.get(), out_ptrs))
      return false;
    if (mode_ == GpuMode::host &&
        (!pinned_alloc(&s.host_packed_ptrs, items_) || !device_alloc(&s.slice_offsets, items_ + kHostSlices)))
      return false;
    if (size > 0) {
      BENCH_CUDA(cudaMemcpyAsync(s.in.get(), input_.data(), size, cudaMemcpyHostToDevice, stream_.get()));
    }
    // The vectors above must outlive their (pageable, so staged) uploads.
    BENCH_CUDA(cudaStreamSynchronize(stream_.get()));
  }
  if (!pinned_alloc(&host_packed_, packed_capacity_) || !pinned_alloc(&host_out_, size) ||
      !pinned_alloc(&host_sizes_, items_) || !pinned_alloc(&host_total_, 1) ||
      !pinned_alloc(&host_statuses_, items_) || !pinned_alloc(&host_decode_statuses_, items_) ||
      !pinned_alloc(&host_flags_, 1))
    return false;
  if (mode_ == GpuMode::host) {
    if (!pinned_alloc(&host_in_, size)) return false;
    if (size > 0) std::memcpy(host_in_.get(), input_.data(), size);
    if (!setup_slices()) return false;
  }

  // Warm-up: one round trip per set (the first also loads the kernels).
  for (std::size_t k = 0; k < sets_.size(); ++k) {
    Set& set = sets_[k];
    if (!compress_on(set, nullptr)) return false;
    if (k == 0) {
      if (mode_ == GpuMode::device && !download_blocks(set)) return false;
      if (!verify_blocks()) return false;
    }
    if (!decompress_on(set, nullptr)) return false;
    if (mode_ == GpuMode::device && size > 0) {
      BENCH_CUDA(cudaMemcpyAsync(host_out_.get(), set.out.get(), size, cudaMemcpyDeviceToHost, stream_.get()));
      BENCH_CUDA(cudaStreamSynchronize(stream_.get()));
    }
    if (XXH3_64bits(host_out_.get(), size) != xxh3_)
      return fail("GPU round trip: the output differs from the input (XXH3-64)");
  }
  return true;
}

template <class Work>
bool CudaTrial::timed(const Work& work, double* seconds) {
  BENCH_CUDA(cudaEventRecord(start_.get(), stream_.get()));
  if (!work()) return false;
  BENCH_CUDA(cudaEventRecord(stop_.get(), stream_.get()));
  BENCH_CUDA(cudaEventSynchronize(stop_.get()));
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  if (seconds) *seconds = ms / 1e3;
  return true;
}

bool CudaTrial::encode(Set& set) {
  if (items_ == 0) return true;
  BENCH_TANDEM(gpu::lz4_compress_async(set.in_ptrs.get(), item_sizes_.get(),
                                       max_item_, items_, temp_.get(), temp_bytes_, set.slot_ptrs.get(),
                                       /*d_out_capacities=*/nullptr, set.block_sizes.get(),
                                       set.encode_statuses.get(), stream_.get()));
  return true;
}

bool CudaTrial::pack(Set& set) {
  BENCH_CUDA(cub::DeviceScan::ExclusiveSum(scan_temp_.get(), scan_temp_bytes_,
                                           static_cast<const std::size_t*>(set.block_sizes.get()),
                                           set.offsets.get(), static_cast<int>(items_ + 1), stream_.get()));
  if (items_ == 0) return true;
  const int blocks = static_cast<int>(std::min<std::size_t>(items_, std::size_t(sm_count_) * 16));
  pack_kernel<<<blocks, 128, 0, stream_.get()>>>(set.slots.get(), stride_, set.block_sizes.get(),
                                                  set.offsets.get(), items_, set.packed.get(), packed_capacity_,
                                                  set.packed_ptrs.get());
  BENCH_CUDA(cudaGetLastError());
  return true;
}

bool CudaTrial::decode(Set& set) {
  if (items_ == 0) return true;
  BENCH_TANDEM(gpu::lz4_decompress_async(set.packed_ptrs.get(),
                                         set.block_sizes.get(), max_item_, items_, temp_.get(), temp_bytes_,
                                         set.out_ptrs.get(), item_sizes_.get(), set.decoded_sizes.get(),
                                         set.decode_statuses.get(), stream_.get()));
  return true;
}

bool CudaTrial::check(Set& set) {
  BENCH_CUDA(cudaMemsetAsync(flags_.get(), 0, sizeof(unsigned), stream_.get()));
  check_kernel<<<grid_for(std::max(input_.size(), items_)), kThreads, 0, stream_.get()>>>(
      set.in.get(), set.out.get(), input_.size(), item_sizes_.get(), set.decoded_sizes.get(),
      set.decode_statuses.get(), set.encode_statuses.get(), items_,
      mode_ == GpuMode::device ? set.offsets.get() + items_ : nullptr, compressed_size_, flags_.get());
  BENCH_CUDA(cudaGetLastError());
  BENCH_CUDA(cudaMemcpyAsync(host_flags_.get(), flags_.get(), sizeof(unsigned), cudaMemcpyDeviceToHost,
                             stream_.get()));
  BENCH_CUDA(cudaStreamSynchronize(stream_.get()));
  if (*host_flags_) return fail("GPU round trip check failed: " + describe_flags(*host_flags_));
  return true;
}

// Device mode times the compressor alone and packs the blocks afterwards;
// host mode times the whole trip from pinned input to pinned blocks, slice by
// slice (compress_slices).
bool CudaTrial::compress_on(Set& set, double* seconds) {
  if (mode_ == GpuMode::device) return timed([&] { return encode(set); }, seconds) && pack(set);
  return timed([&] { return compress_slices(set); }, seconds);
}

// Host mode's slices: a stream, temporary storage and a scan's for each.
bool CudaTrial::setup_slices() {
  if (items_ == 0) return true;
  const std::size_t count = std::min(kHostSlices, items_);
  const std::size_t per = (items_ + count - 1) / count;
  std::size_t compress_temp = 0;
  std::size_t decompress_temp = 0;
  BENCH_TANDEM(gpu::lz4_compress_temp_size(per, max_item_, &compress_temp));
  BENCH_TANDEM(gpu::lz4_decompress_temp_size(per, max_item_, &decompress_temp));
  slice_temp_bytes_ = std::max(compress_temp, decompress_temp);
  if (!pinned_alloc(&host_slice_totals_, count)) return false;
  for (std::size_t first = 0; first < items_; first += per) {
    Slice& slice = slices_.emplace_back();
    slice.first = first;
    slice.count = std::min(per, items_ - first);
    slice.base = first * bound_;
    cudaStream_t stream = nullptr;
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    slice.stream.reset(stream);
    cudaEvent_t event = nullptr;
    BENCH_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    slice.packed.reset(event);
    BENCH_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    slice.done.reset(event);
    if (slice_temp_bytes_ > 0 && !device_alloc(&slice.temp, slice_temp_bytes_)) return false;
    BENCH_CUDA(cub::DeviceScan::InclusiveSum(nullptr, slice.scan_temp_bytes, static_cast<const std::size_t*>(nullptr),
                                             static_cast<std::size_t*>(nullptr), static_cast<int>(slice.count),
                                             stream));
    if (!device_alloc(&slice.scan_temp, slice.scan_temp_bytes)) return false;
  }
  return true;
}

// Makes the main stream wait for every slice's work.
bool CudaTrial::join_slices() {
  for (Slice& slice : slices_) {
    BENCH_CUDA(cudaEventRecord(slice.done.get(), slice.stream.get()));
    BENCH_CUDA(cudaStreamWaitEvent(stream_.get(), slice.done.get(), 0));
  }
  return true;
}

// Host mode compression, each slice on its stream: upload its chunks,
// compress them, pack its blocks end to end from the slice's base, download
// their sizes, statuses and total. Then, slice by slice in order, as soon as
// its total is on the host: download its blocks after the previous slice's in
// host_packed_. The main stream waits for all of it.
bool CudaTrial::compress_slices(Set& set) {
  for (std::size_t k = 0; k < slices_.size(); ++k) {
    Slice& slice = slices_[k];
    cudaStream_t stream = slice.stream.get();
    const std::size_t first = slice.first;
    const std::size_t count = slice.count;
    BENCH_CUDA(cudaStreamWaitEvent(stream, start_.get(), 0));
    const std::size_t at = slice_at(slice);
    BENCH_CUDA(cudaMemcpyAsync(set.in.get() + at, host_in_.get() + at, slice_bytes(slice), cudaMemcpyHostToDevice,
                               stream));
    BENCH_TANDEM(gpu::lz4_compress_async(set.in_ptrs.get() + first, item_sizes_.get() + first, max_item_, count,
                                         slice.temp.get(), slice_temp_bytes_, set.slot_ptrs.get() + first,
                                         /*d_out_capacities=*/nullptr, set.block_sizes.get() + first,
                                         set.encode_statuses.get() + first, stream));
    std::size_t* offsets = set.slice_offsets.get() + first + k;
    BENCH_CUDA(cudaMemsetAsync(offsets, 0, sizeof(std::size_t), stream));
    BENCH_CUDA(cub::DeviceScan::InclusiveSum(slice.scan_temp.get(), slice.scan_temp_bytes,
                                             static_cast<const std::size_t*>(set.block_sizes.get() + first),
                                             offsets + 1, static_cast<int>(count), stream));
    const int blocks = static_cast<int>(std::min<std::size_t>(count, std::size_t(sm_count_) * 16));
    pack_kernel<<<blocks, 128, 0, stream>>>(set.slots.get() + first * stride_, stride_,
                                             set.block_sizes.get() + first, offsets, count,
                                             set.packed.get() + slice.base, count * bound_,
                                             set.packed_ptrs.get() + first);
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaMemcpyAsync(host_sizes_.get() + first, set.block_sizes.get() + first,
                               count * sizeof(std::size_t), cudaMemcpyDeviceToHost, stream));
    BENCH_CUDA(cudaMemcpyAsync(host_statuses_.get() + first, set.encode_statuses.get() + first,
                               count * sizeof(ItemStatus), cudaMemcpyDeviceToHost, stream));
    BENCH_CUDA(cudaMemcpyAsync(host_slice_totals_.get() + k, offsets + count, sizeof(std::size_t),
                               cudaMemcpyDeviceToHost, stream));
    BENCH_CUDA(cudaEventRecord(slice.packed.get(), stream));
  }
  std::size_t total = 0;
  for (std::size_t k = 0; k < slices_.size(); ++k) {
    Slice& slice = slices_[k];
    BENCH_CUDA(cudaEventSynchronize(slice.packed.get()));
    const std::size_t bytes = host_slice_totals_.get()[k];
    if (bytes > slice.count * bound_) return fail("a slice's blocks add up to more than their worst-case size");
    if (bytes > 0) {
      BENCH_CUDA(cudaMemcpyAsync(host_packed_.get() + total, set.packed.get() + slice.base, bytes,
                                 cudaMemcpyDeviceToHost, slice.stream.get()));
    }
    total += bytes;
  }
  *host_total_ = total;
  return join_slices();
}

// Host mode decompression, each slice on its stream: upload its blocks (from
// where they lie in host_packed_), their sizes and the decoder's pointers to
// them, decode, download its output and statuses.
bool CudaTrial::decompress_slices(Set& set) {
  for (Slice& slice : slices_) {
    cudaStream_t stream = slice.stream.get();
    const std::size_t first = slice.first;
    const std::size_t count = slice.count;
    BENCH_CUDA(cudaStreamWaitEvent(stream, start_.get(), 0));
    const std::size_t from = host_offsets_[first];
    const std::size_t to = host_offsets_[first + count];
    if (to > from) {
      BENCH_CUDA(cudaMemcpyAsync(set.packed.get() + from, host_packed_.get() + from, to - from,
                                 cudaMemcpyHostToDevice, stream));
    }
    BENCH_CUDA(cudaMemcpyAsync(set.block_sizes.get() + first, host_sizes_.get() + first,
                               count * sizeof(std::size_t), cudaMemcpyHostToDevice, stream));
    BENCH_CUDA(cudaMemcpyAsync(set.packed_ptrs.get() + first, set.host_packed_ptrs.get() + first,
                               count * sizeof(void*), cudaMemcpyHostToDevice, stream));
    BENCH_TANDEM(gpu::lz4_decompress_async(set.packed_ptrs.get() + first, set.block_sizes.get() + first, max_item_,
                                           count, slice.temp.get(), slice_temp_bytes_, set.out_ptrs.get() + first,
                                           item_sizes_.get() + first, set.decoded_sizes.get() + first,
                                           set.decode_statuses.get() + first, stream));
    const std::size_t at = slice_at(slice);
    BENCH_CUDA(cudaMemcpyAsync(host_out_.get() + at, set.out.get() + at, slice_bytes(slice), cudaMemcpyDeviceToHost,
                               stream));
    BENCH_CUDA(cudaMemcpyAsync(host_decode_statuses_.get() + first, set.decode_statuses.get() + first,
                               count * sizeof(ItemStatus), cudaMemcpyDeviceToHost, stream));
  }
  return join_slices();
}

// Downloads the block sizes, statuses, total and the packed blocks of `set`.
bool CudaTrial::download_blocks(Set& set) {
  if (items_ > 0) {
    BENCH_CUDA(cudaMemcpyAsync(host_sizes_.get(), set.block_sizes.get(), items_ * sizeof(std::size_t),
                               cudaMemcpyDeviceToHost, stream_.get()));
    BENCH_CUDA(cudaMemcpyAsync(host_statuses_.get(), set.encode_statuses.get(), items_ * sizeof(ItemStatus),
                               cudaMemcpyDeviceToHost, stream_.get()));
  }
  BENCH_CUDA(cudaMemcpyAsync(host_total_.get(), set.offsets.get() + items_, sizeof(std::size_t),
                             cudaMemcpyDeviceToHost, stream_.get()));
  BENCH_CUDA(cudaStreamSynchronize(stream_.get()));
  const std::size_t total = *host_total_;
  if (total > packed_capacity_) return fail("the GPU's blocks add up to more than their worst-case size");
  if (total > 0) {
    BENCH_CUDA(cudaMemcpyAsync(host_packed_.get(), set.packed.get(), total, cudaMemcpyDeviceToHost, stream_.get()));
  }
  return true;
}

// The warm-up's blocks, on the host: every status is ok or incompressible,
// every block decodes with liblz4 to its chunk. Fixes the compressed size that
// every later run must reproduce and the host-mode decoder's input pointers.
bool CudaTrial::verify_blocks() {
  BENCH_CUDA(cudaStreamSynchronize(stream_.get()));
  const std::uint8_t* packed = host_packed_.get();
  std::vector<std::size_t> offsets(items_);
  std::vector<std::uint8_t> chunk(max_item_);
  std::size_t total = 0;
  for (std::size_t i = 0; i < items_; ++i) {
    const std::string block = "block " + std::to_string(i) + " of " + std::to_string(items_) + ": ";
    const ItemStatus status = host_statuses_.get()[i];
    if (status == ItemStatus::incompressible) {
      ++incompressible_;
    } else if (status != ItemStatus::ok) {
      return fail(block + "GPU compression status " + gpu::item_status_name(status));
    }
    const std::size_t size = host_sizes_.get()[i];
    if (size == 0 || size > gpu::lz4_max_compressed_size(item_size(i)))
      return fail(block + "GPU block size " + std::to_string(size) + " out of range");
    if (total + size > *host_total_) return fail(block + "block sizes add up to more than the scanned total");
    offsets[i] = total;
    const int n = static_cast<int>(item_size(i));
    const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(packed + total),
                                      reinterpret_cast<char*>(chunk.data()), static_cast<int>(size), n);
    if (r != n) return fail(block + "liblz4 LZ4_decompress_safe returned " + std::to_string(r) + ", expected " +
                            std::to_string(n));
    if (std::memcmp(chunk.data(), input_.data() + i * chunk_, static_cast<std::size_t>(n)) != 0)
      return fail(block + "liblz4 decodes the GPU block to other bytes than the input's");
    total += size;
  }
  if (total != *host_total_) return fail("block sizes do not add up to the scanned total");
  host_offsets_ = offsets;
  host_offsets_.push_back(total);
  compressed_size_ = total;
  packed_xxh3_ = XXH3_64bits(packed, total);
  if (mode_ == GpuMode::host) {
    for (Set& set : sets_)
      for (std::size_t i = 0; i < items_; ++i) set.host_packed_ptrs.get()[i] = set.packed.get() + offsets[i];
  }
  return true;
}

// Scrambles the output, decodes (timed), then checks the result on the GPU.
// Host mode uploads the blocks, their sizes and pointers, and downloads the
// output and the statuses inside the timed span.
bool CudaTrial::decompress_on(Set& set, double* seconds) {
  if (!input_.empty()) {
    scramble_kernel<<<grid_for(input_.size()), kThreads, 0, stream_.get()>>>(set.in.get(), set.out.get(),
                                                                              input_.size());
    BENCH_CUDA(cudaGetLastError());
  }
  bool ok = false;
  if (mode_ == GpuMode::device) {
    ok = timed([&] { return decode(set); }, seconds);
  } else {
    ok = timed([&] { return decompress_slices(set); }, seconds);
  }
  return ok && check(set);
}

}  // namespace

std::unique_ptr<GpuTrial> make_gpu_trial(std::span<const std::uint8_t> input, std::uint64_t xxh3,
                                         std::size_t chunk, GpuMode mode, std::string* error) {
  if (chunk == 0) {
    *error = "chunk size 0";
    return nullptr;
  }
  auto trial = std::make_unique<CudaTrial>(input, xxh3, chunk, mode);
  if (!trial->setup()) {
    *error = trial->error();
    return nullptr;
  }
  return trial;
}

}  // namespace tandem::bench
