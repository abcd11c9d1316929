// The host-resident LZ4 engine of lz4_gpu_engine.hpp on CUDA.
//
// A call checks its items on the host (a null buffer or an oversized item gets
// its status there and never reaches the device), cuts the rest into
// sub-batches of bounded size, and runs each sub-batch through one of two
// slots (a stream with its own device and pinned buffers):
//   launch  the worker pool copies the inputs into the slot's pinned staging,
//           behind the arrays of device pointers and sizes that describe them;
//           one H2D copy takes all of it; the LZ4 kernel runs; a scan gives
//           every output that will be kept its place in a packed area and a
//           gather packs it there; sizes, statuses and places come back.
//   finish  once those arrived, one D2H copy of the packed outputs, then the
//           pool copies each into the caller's outputs[i].
// Sub-batch k + 1 is launched before k is finished, so the host's packing and
// unpacking, the copies both ways and the kernels of neighbouring sub-batches
// overlap. Every offset in device memory is a multiple of 16 so that the
// gather moves 16-byte words.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cub/block/block_scan.cuh>
#include <string>
#include <vector>

#include "common/thread_pool.hpp"
#include "gpu/gpu_memory.cuh"
#include "gpu/lz4_gpu_engine.hpp"

namespace tandem::gpu {

namespace {

constexpr std::size_t kAlign = 16;
__host__ __device__ constexpr std::size_t align_up(std::size_t n, std::size_t a = kAlign) {
  return (n + a - 1) / a * a;
}

// Sub-batches. The decoders give each item one warp (or thread block), the
// encoder one warp per 16 KiB of it, so the device is full only with thousands
// of items, and an item takes as long whatever else runs:
// cutting a call of few large items would only serialise them. So a call is
// cut into up to kSubBatches sub-batches (whose copies and kernels overlap)
// only while each keeps kFillItems items, and besides wherever a sub-batch
// would weigh (input plus output bytes) more than kMaxSubBatchBytes, which
// bounds the staging.
constexpr std::size_t kSubBatches = 4;
constexpr std::size_t kFillItems = 2048;
constexpr std::size_t kMinSubBatchBytes = std::size_t{16} << 20;
constexpr std::size_t kMaxSubBatchBytes = std::size_t{640} << 20;
constexpr std::size_t kMaxSubBatchItems = std::size_t{1} << 16;
// No valid LZ4 block decodes to more than 255 bytes per input byte (a match
// of 4 + 15 + 255k bytes costs at least 3 + k bytes), so a decoder's output
// capacity is clamped to that: a caller's generous capacity costs no device
// memory.
constexpr std::size_t kMaxExpansion = 255;


// -------------------------------------------------- packing the outputs ----

// An output comes back when its item succeeded and it fits both the device
// slot and the caller's buffer.
__host__ __device__ inline bool kept(ItemStatus status, std::size_t size, std::size_t out_cap,
                                     std::size_t keep_cap) {
  return (status == ItemStatus::ok || status == ItemStatus::incompressible) && size <= out_cap && size <= keep_cap;
}

constexpr int kPlaceThreads = 256;

// places[j] = where output j goes in the packed area (16-byte aligned);
// places[m] = the area's size. One block scans all items, a tile at a time.
__global__ void __launch_bounds__(kPlaceThreads)
    place_outputs(std::size_t m, const std::size_t* sizes, const ItemStatus* statuses, const std::size_t* out_caps,
                  const std::size_t* keep_caps, std::size_t* places) {
  using Scan = cub::BlockScan<std::size_t, kPlaceThreads>;
  __shared__ typename Scan::TempStorage scan;
  std::size_t carry = 0;  // the same in every thread
  for (std::size_t base = 0; base < m; base += kPlaceThreads) {
    const std::size_t j = base + threadIdx.x;
    std::size_t bytes = 0;
    if (j < m && kept(statuses[j], sizes[j], out_caps[j], keep_caps[j])) bytes = align_up(sizes[j]);
    std::size_t before = 0, tile = 0;
    Scan(scan).ExclusiveSum(bytes, before, tile);
    if (j < m) places[j] = carry + before;
    carry += tile;
    __syncthreads();  // the scan storage is reused by the next tile
  }
  if (threadIdx.x == 0) places[m] = carry;
}

constexpr int kGatherThreads = 256;
constexpr unsigned kMaxGatherBlocks = 8192;

// Copies every kept output into its place, a block per item.
__global__ void __launch_bounds__(kGatherThreads)
    gather_outputs(std::size_t m, void* const* out_ptrs, const std::size_t* sizes, const ItemStatus* statuses,
                   const std::size_t* out_caps, const std::size_t* keep_caps, const std::size_t* places,
                   std::uint8_t* packed) {
  for (std::size_t j = blockIdx.x; j < m; j += gridDim.x) {
    const std::size_t size = sizes[j];
    if (!kept(statuses[j], size, out_caps[j], keep_caps[j])) continue;
    const std::uint8_t* src = static_cast<const std::uint8_t*>(out_ptrs[j]);
    std::uint8_t* dst = packed + places[j];
    // Both ends are 16-byte aligned: words first, then the tail byte by byte,
    // so that no byte beyond what the kernel wrote is read.
    const std::size_t words = size / 16;
    const uint4* src4 = reinterpret_cast<const uint4*>(src);
    uint4* dst4 = reinterpret_cast<uint4*>(dst);
    for (std::size_t k = threadIdx.x; k < words; k += blockDim.x) dst4[k] = src4[k];
    for (std::size_t k = words * 16 + threadIdx.x; k < size; k += blockDim.x) dst[k] = src[k];
  }
}

// ------------------------------------------------------------- engine ----

enum class Mode { compress, decompress };

struct Call {
  Mode mode;
  std::span<const ConstBuffer> inputs;
  std::span<const MutableBuffer> outputs;
  std::span<ItemResult> results;
  std::span<ItemStatus> statuses;
};

// An item that goes to the device.
struct Item {
  std::size_t index = 0;     // in the call
  std::size_t in_size = 0;
  std::size_t out_cap = 0;   // device output capacity
  std::size_t keep_cap = 0;  // the caller's capacity
  std::size_t in_offset = 0, out_offset = 0;  // in the slot's input data and output area
};

struct Range {
  std::size_t first = 0, count = 0;  // in the call's device items
};

// A stream with its buffers; holds one sub-batch from launch to finish.
struct Slot {
  cudaStream_t stream = nullptr;
  DeviceBuffer d_in;      // item arrays, then input data (the H2D copy of h_in)
  DeviceBuffer d_out;     // one output area per item
  DeviceBuffer d_packed;  // the kept outputs, packed
  DeviceBuffer d_result;  // sizes [m], places [m + 1], statuses [m]
  DeviceBuffer d_temp;    // the kernels' temporary storage
  PinnedBuffer h_in, h_result, h_out;
  Range range;
  std::size_t packed_bound = 0;  // the packed area's size at most
  bool busy = false;
};

// Views of a result region (device or host) of m items.
struct ResultView {
  std::size_t* sizes;
  std::size_t* places;
  ItemStatus* statuses;
  static std::size_t bytes(std::size_t m) { return (2 * m + 1) * sizeof(std::size_t) + m * sizeof(ItemStatus); }
  ResultView(std::uint8_t* base, std::size_t m)
      : sizes(reinterpret_cast<std::size_t*>(base)),
        places(sizes + m),
        statuses(reinterpret_cast<ItemStatus*>(places + m + 1)) {}
};

// The item arrays at the front of a slot's input region, for m items.
struct ItemArrays {
  const void** in_ptrs;
  std::size_t* in_sizes;
  void** out_ptrs;
  std::size_t* out_caps;
  std::size_t* keep_caps;
  static std::size_t bytes(std::size_t m) { return align_up(5 * m * sizeof(std::uint64_t), 256); }
  ItemArrays(std::uint8_t* base, std::size_t m)
      : in_ptrs(reinterpret_cast<const void**>(base)),
        in_sizes(reinterpret_cast<std::size_t*>(base) + m),
        out_ptrs(reinterpret_cast<void**>(base) + 2 * m),
        out_caps(reinterpret_cast<std::size_t*>(base) + 3 * m),
        keep_caps(reinterpret_cast<std::size_t*>(base) + 4 * m) {}
};

class CudaLz4Engine final : public Lz4HostEngine {
 public:
  CudaLz4Engine() = default;
  ~CudaLz4Engine() override {
    destroy_streams(slots_);
  }

  Status init() { return create_streams(slots_); }

  Status compress(std::span<const ConstBuffer> inputs, std::span<const MutableBuffer> outputs,
                  std::span<ItemResult> results, std::span<ItemStatus> statuses, const ItemsDone& done) override {
    return run({Mode::compress, inputs, outputs, results, statuses}, done);
  }

  Status decompress(std::span<const ConstBuffer> inputs, std::span<const MutableBuffer> outputs,
                    std::span<ItemResult> results, std::span<ItemStatus> statuses, const ItemsDone& done) override {
    return run({Mode::decompress, inputs, outputs, results, statuses}, done);
  }

 private:
  Status run(const Call& c, const ItemsDone& done);
  void plan(const Call& c);
  Status launch(Slot& slot, const Call& c, Range range);
  Status finish(Slot& slot, const Call& c);
  void drain() { drain_streams(slots_); }

  Slot slots_[2];
  // Per call, kept to reuse their memory.
  std::vector<Item> items_;
  std::vector<Range> ranges_;
  std::vector<detail::Copy> copies_;
  std::vector<std::size_t> pieces_;
};

Status first_failure(std::span<const ItemResult> results) {
  for (const ItemResult& r : results) {
    if (!r.status) return r.status;
  }
  return {};
}

void CudaLz4Engine::plan(const Call& c) {
  items_.clear();
  ranges_.clear();
  std::size_t total = 0;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const ConstBuffer in = c.inputs[i];
    const MutableBuffer out = c.outputs[i];
    c.results[i] = {};
    if (!c.statuses.empty()) c.statuses[i] = ItemStatus::ok;
    if ((!in.data && in.size) || (!out.data && out.size)) {
      c.results[i].status = {StatusCode::invalid_argument, "null buffer"};
      if (!c.statuses.empty()) c.statuses[i] = ItemStatus::invalid_item;
      continue;
    }
    if (in.size > kMaxItemSize) {
      c.results[i].status = {StatusCode::unsupported, "item larger than the GPU backend accepts (1 GiB)"};
      if (!c.statuses.empty()) c.statuses[i] = ItemStatus::invalid_item;
      continue;
    }
    Item it;
    it.index = i;
    it.in_size = in.size;
    it.keep_cap = out.size;
    it.out_cap = c.mode == Mode::compress ? lz4_max_compressed_size(in.size)
                                          : std::min({out.size, kMaxItemSize, kMaxExpansion * in.size + 64});
    total += align_up(it.in_size) + align_up(it.out_cap);
    items_.push_back(it);
  }
  const std::size_t parts = std::clamp<std::size_t>(items_.size() / kFillItems, 1, kSubBatches);
  const std::size_t limit = std::clamp((total + parts - 1) / parts, kMinSubBatchBytes, kMaxSubBatchBytes);
  Range r;
  std::size_t weight = 0;
  for (std::size_t j = 0; j < items_.size(); ++j) {
    const std::size_t w = align_up(items_[j].in_size) + align_up(items_[j].out_cap);
    if (r.count > 0 && (weight + w > limit || r.count == kMaxSubBatchItems)) {
      ranges_.push_back(r);
      r = {j, 0};
      weight = 0;
    }
    ++r.count;
    weight += w;
  }
  if (r.count > 0) ranges_.push_back(r);
}

Status CudaLz4Engine::run(const Call& c, const ItemsDone& done) {
  const std::size_t n = c.inputs.size();
  if (c.outputs.size() != n || c.results.size() != n || (!c.statuses.empty() && c.statuses.size() != n)) {
    return {StatusCode::invalid_argument, "inputs, outputs, results and statuses differ in length"};
  }
  drain();  // a call that threw (from `done` or an allocation) may have left work behind
  plan(c);
  const std::size_t k_end = ranges_.size();
  Status s;
  if (k_end > 0) {
    if (const cudaError_t e = cudaSetDevice(0); e != cudaSuccess) s = cuda_failure(e, "cudaSetDevice");
  }
  // Items of ranges [0, finished) are final.
  std::size_t finished = 0;
  auto notify = [&] {
    if (done) done(finished < k_end ? items_[ranges_[finished].first].index : n);
  };
  // Launch k, then finish k - 1 while k runs.
  for (std::size_t k = 0; s && k <= k_end; ++k) {
    if (k < k_end) s = launch(slots_[k % 2], c, ranges_[k]);
    if (s && k > 0) {
      s = finish(slots_[(k - 1) % 2], c);
      if (s) {
        ++finished;
        notify();
      }
    }
  }
  if (k_end == 0) notify();
  if (!s) {
    drain();
    for (std::size_t j = finished < k_end ? ranges_[finished].first : items_.size(); j < items_.size(); ++j) {
      c.results[items_[j].index] = {s, 0};
    }
    return s;
  }
  return first_failure(c.results);
}

Status CudaLz4Engine::launch(Slot& slot, const Call& c, Range range) {
  const std::size_t m = range.count;
  std::size_t in_bytes = 0, out_bytes = 0, packed_bound = 0, max_in = 0, max_out = 0;
  for (std::size_t j = range.first; j < range.first + m; ++j) {
    Item& it = items_[j];
    it.in_offset = in_bytes;
    it.out_offset = out_bytes;
    in_bytes += align_up(it.in_size);
    out_bytes += align_up(it.out_cap);
    packed_bound += align_up(std::min(it.out_cap, it.keep_cap));
    max_in = std::max(max_in, it.in_size);
    max_out = std::max(max_out, it.out_cap);
  }
  const std::size_t arrays = ItemArrays::bytes(m);
  const std::size_t result_bytes = ResultView::bytes(m);
  std::size_t temp_bytes = 0;
  if (Status s = c.mode == Mode::compress ? lz4_compress_temp_size(m, max_in, &temp_bytes)
                                          : lz4_decompress_temp_size(m, max_out, &temp_bytes);
      !s) {
    return s;
  }
  for (Status s : {slot.d_in.reserve(arrays + in_bytes), slot.h_in.reserve(arrays + in_bytes),
                   slot.d_out.reserve(out_bytes), slot.d_packed.reserve(packed_bound),
                   slot.h_out.reserve(packed_bound), slot.d_result.reserve(result_bytes),
                   slot.h_result.reserve(result_bytes), slot.d_temp.reserve(temp_bytes)}) {
    if (!s) return s;
  }

  // The item arrays hold device addresses; the host writes them into the staging.
  const ItemArrays h(slot.h_in.data(), m);
  std::uint8_t* const d_data = slot.d_in.data() + arrays;
  copies_.clear();
  for (std::size_t j = 0; j < m; ++j) {
    const Item& it = items_[range.first + j];
    h.in_ptrs[j] = d_data + it.in_offset;
    h.in_sizes[j] = it.in_size;
    h.out_ptrs[j] = slot.d_out.data() + it.out_offset;
    h.out_caps[j] = it.out_cap;
    h.keep_caps[j] = it.keep_cap;
    if (it.in_size) copies_.push_back({slot.h_in.data() + arrays + it.in_offset, c.inputs[it.index].data, it.in_size});
  }
  detail::parallel_copy(copies_, &pieces_);

  const cudaStream_t stream = slot.stream;
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(slot.d_in.data(), slot.h_in.data(), arrays + in_bytes, cudaMemcpyHostToDevice,
                                    stream),
                    "cudaMemcpyAsync (inputs to the device)");
  const ItemArrays d(slot.d_in.data(), m);
  const ResultView r(slot.d_result.data(), m);
  const Status kernel =
      c.mode == Mode::compress
          ? lz4_compress_async(d.in_ptrs, d.in_sizes, max_in, m, slot.d_temp.data(), temp_bytes, d.out_ptrs,
                               nullptr, r.sizes, r.statuses, stream)
          : lz4_decompress_async(d.in_ptrs, d.in_sizes, max_out, m, slot.d_temp.data(), temp_bytes, d.out_ptrs,
                                 d.out_caps, r.sizes, r.statuses, stream);
  slot.busy = true;  // from the first enqueued work on
  // A launch the kernels refuse is the device path failing, whatever its code.
  if (!kernel) return {StatusCode::device_error, kernel.reason};
  place_outputs<<<1, kPlaceThreads, 0, stream>>>(m, r.sizes, r.statuses, d.out_caps, d.keep_caps, r.places);
  TANDEM_CUDA_CHECK(cudaPeekAtLastError(), "place_outputs launch");
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(m, kMaxGatherBlocks));
  gather_outputs<<<blocks, kGatherThreads, 0, stream>>>(m, d.out_ptrs, r.sizes, r.statuses, d.out_caps, d.keep_caps,
                                                        r.places, slot.d_packed.data());
  TANDEM_CUDA_CHECK(cudaPeekAtLastError(), "gather_outputs launch");
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(slot.h_result.data(), slot.d_result.data(), result_bytes, cudaMemcpyDeviceToHost,
                                    stream),
                    "cudaMemcpyAsync (statuses to the host)");
  slot.range = range;
  slot.packed_bound = packed_bound;
  return {};
}

Status CudaLz4Engine::finish(Slot& slot, const Call& c) {
  const std::size_t m = slot.range.count;
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(slot.stream), c.mode == Mode::compress ? "LZ4 compression on the GPU"
                                                                                  : "LZ4 decompression on the GPU");
  const ResultView r(slot.h_result.data(), m);
  const std::size_t packed = r.places[m];
  if (packed > slot.packed_bound) return {StatusCode::device_error, "GPU outputs larger than their capacities"};
  if (packed > 0) {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(slot.h_out.data(), slot.d_packed.data(), packed, cudaMemcpyDeviceToHost,
                                      slot.stream),
                      "cudaMemcpyAsync (outputs to the host)");
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(slot.stream), "cudaStreamSynchronize (outputs to the host)");
  }
  slot.busy = false;
  copies_.clear();
  for (std::size_t j = 0; j < m; ++j) {
    const Item& it = items_[slot.range.first + j];
    const ItemStatus status = r.statuses[j];
    const std::size_t size = r.sizes[j];
    ItemResult& result = c.results[it.index];
    if (!c.statuses.empty()) c.statuses[it.index] = status;
    result = {item_status_to_status(status), 0};
    if (!result.status) continue;
    if (!kept(status, size, it.out_cap, it.keep_cap)) {
      // The kernels honour their capacity, so only the caller's can be short.
      result.status = size > it.out_cap ? Status{StatusCode::device_error, "GPU output larger than its capacity"}
                      : c.mode == Mode::compress
                          ? Status{StatusCode::output_too_small, "compressed item does not fit its output"}
                          : Status{StatusCode::output_too_small, "decompressed item does not fit its output"};
      continue;
    }
    if (r.places[j] + size > packed) {
      result.status = {StatusCode::device_error, "GPU output placed outside the packed area"};
      continue;
    }
    result.size = size;
    if (size) copies_.push_back({c.outputs[it.index].data, slot.h_out.data() + r.places[j], size});
  }
  detail::parallel_copy(copies_, &pieces_);
  return {};
}

}  // namespace

Status Lz4HostEngine::create(std::unique_ptr<Lz4HostEngine>* engine) {
  return create_engine<Lz4HostEngine, CudaLz4Engine>(engine);
}

Status Lz4HostEngine::shared(Lz4HostEngine** engine) { return shared_engine<Lz4HostEngine>(engine, &create); }

}  // namespace tandem::gpu
