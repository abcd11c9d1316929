// The LZ4 pipeline of lz4_gpu_pipeline.hpp on CUDA.
//
// kPipelineDepth slots, each a stream with its own device buffers, pinned
// buffers and events, hold the batches in flight, so that one batch's
// host-to-device copy, another's kernels and a third's copy back overlap. A
// batch goes:
//
//   submit    the host plans the batch (compression: every chunk's blocks are
//             the items; decompression: every chunk's frame blocks, parsed on
//             the host, which fails a hostile chunk without the device) and
//             writes the item arrays into the slot's pinned staging, with the
//             chunks that are not in pinned memory behind them; one H2D copy
//             takes that, one more per run of pinned chunks that follow each
//             other in memory; then the kernels, and the batch's small
//             results (sizes, places, statuses) come back.
//   complete  once those arrived, the host knows how many bytes to fetch:
//             compression: the frame blocks, packed on the device in input
//             order (frame_sizes, a CUB scan, write_frames), straight into
//             the caller's output when it gives their place (PlaceFn), else
//             into a pool buffer; decompression: each chunk's decoded bytes,
//             straight into `direct` when it is pinned. Checksums are
//             computed (compression) or verified (decompression) on the host.
//
// While complete() waits for the oldest batch's bytes, it queues the copy
// back of each later batch as soon as that batch's results arrive, so that
// the copy engine goes from batch to batch without waiting for the host.
// Pool outputs are handed out behind a shared_ptr whose deleter puts the
// buffer back, so that the caller may hold a batch's outputs while later
// batches run. Buffers grow to the largest batch and are kept: a warm run
// allocates nothing.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/thread_pool.hpp"
#include "format/lz4_frame_format.hpp"
#include "gpu/gpu_memory.cuh"
#include "gpu/lz4_gpu_fault.hpp"
#include "gpu/lz4_gpu_pipeline.hpp"
#include "gpu/lz4_gpu_pipeline_host.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

namespace {

constexpr std::size_t kAlign = 16;
constexpr std::size_t align_up(std::size_t n, std::size_t a = kAlign) { return (n + a - 1) / a * a; }

// Pinned output buffers: a batch's outputs hold one until the caller lets
// go. The hybrid scheduler writes in order, so while a CPU worker spends a few
// milliseconds on an older chunk the GPU's later batches wait to be written:
// 16 buffers (some 200 MB of compressed 32 MiB batches) let the GPU go on
// meanwhile.
constexpr int kPoolBuffers = 16;

// ------------------------------------------------------------- kernels ----

constexpr int kThreads = 256;
constexpr unsigned kMaxGridBlocks = 8192;

unsigned grid_for(std::size_t items, std::size_t per_block = 1) {
  const std::size_t blocks = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, kMaxGridBlocks));
}

// Whether compressed block j is kept compressed (else it is stored raw).
__device__ inline bool packed_block(ItemStatus status, std::size_t size, std::size_t in_size) {
  return status == ItemStatus::ok && size > 0 && size < in_size;
}

// sizes[j] = the frame bytes of block j (word, payload, checksum gap) for
// j < m, and sizes[m] = 0, so that an exclusive scan of m + 1 ends in the total.
__global__ void __launch_bounds__(kThreads)
    frame_sizes(std::size_t m, const std::size_t* in_sizes, const std::size_t* lz4_sizes, const ItemStatus* statuses,
                std::size_t tail, std::size_t* sizes) {
  for (std::size_t j = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; j <= m;
       j += std::size_t{gridDim.x} * blockDim.x) {
    if (j == m) {
      sizes[j] = 0;
    } else {
      const std::size_t n = in_sizes[j];
      sizes[j] = 4 + (packed_block(statuses[j], lz4_sizes[j], n) ? lz4_sizes[j] : n) + tail;
    }
  }
}

// Copies `size` bytes with the threads of a thread block; dst need not be
// aligned.
__device__ inline void block_copy(std::uint8_t* dst, const std::uint8_t* src, std::size_t size) {
  // Aligned 4-byte loads (the blocks of a block size that is a multiple of
  // 4, and every LZ4 output), byte stores.
  const std::size_t words = reinterpret_cast<std::uintptr_t>(src) % 4 == 0 ? size / 4 : 0;
  const auto* src4 = reinterpret_cast<const std::uint32_t*>(src);
  for (std::size_t k = threadIdx.x; k < words; k += blockDim.x) {
    const std::uint32_t v = src4[k];
    std::uint8_t* d = dst + 4 * k;
    d[0] = static_cast<std::uint8_t>(v);
    d[1] = static_cast<std::uint8_t>(v >> 8);
    d[2] = static_cast<std::uint8_t>(v >> 16);
    d[3] = static_cast<std::uint8_t>(v >> 24);
  }
  for (std::size_t k = words * 4 + threadIdx.x; k < size; k += blockDim.x) dst[k] = src[k];
}

// Block j's word and payload (its LZ4 block, or itself when stored raw) at
// frames + places[j], a thread block per block; the checksum gap after the
// payload is the host's to fill.
__global__ void __launch_bounds__(kThreads)
    write_frames(std::size_t m, const void* const* in_ptrs, const std::size_t* in_sizes, void* const* out_ptrs,
                 const std::size_t* lz4_sizes, const ItemStatus* statuses, const std::size_t* places,
                 std::uint8_t* frames) {
  for (std::size_t j = blockIdx.x; j < m; j += gridDim.x) {
    const std::size_t n = in_sizes[j];
    const bool packed = packed_block(statuses[j], lz4_sizes[j], n);
    const std::size_t size = packed ? lz4_sizes[j] : n;
    const std::uint32_t word = static_cast<std::uint32_t>(size) | (packed ? 0u : lz4f::kUncompressedBit);
    std::uint8_t* dst = frames + places[j];
    if (threadIdx.x < 4) dst[threadIdx.x] = static_cast<std::uint8_t>(word >> (8 * threadIdx.x));
    block_copy(dst + 4, static_cast<const std::uint8_t*>(packed ? out_ptrs[j] : in_ptrs[j]), size);
  }
}

// Raw frame blocks of decompression: their payloads to their places.
__global__ void __launch_bounds__(kThreads)
    copy_raw_blocks(std::size_t r, const void* const* src_ptrs, void* const* dst_ptrs, const std::size_t* sizes) {
  for (std::size_t j = blockIdx.x; j < r; j += gridDim.x) {
    // A payload starts anywhere in its chunk: bytes both sides.
    const auto* src = static_cast<const std::uint8_t*>(src_ptrs[j]);
    auto* dst = static_cast<std::uint8_t*>(dst_ptrs[j]);
    for (std::size_t k = threadIdx.x; k < sizes[j]; k += blockDim.x) dst[k] = src[k];
  }
}

// ------------------------------------------------------- output buffers ----

// The pool of pinned output buffers. take() hands one out behind a
// shared_ptr whose deleter (on whatever thread drops the last reference)
// puts it back and wakes a waiting take().
class OutputPool {
 public:
  using Handle = std::shared_ptr<PinnedBuffer>;

  // A buffer of at least n bytes in *out; when none is free, waits for one
  // (wait) or leaves *out null. The current device must be the pipeline's
  // (a buffer may grow).
  Status take(std::size_t n, bool wait, Handle* out) {
    out->reset();
    std::unique_ptr<PinnedBuffer> b;
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      if (state_->free.empty() && state_->made < kPoolBuffers) {
        state_->free.push_back(std::make_unique<PinnedBuffer>());
        ++state_->made;
      }
      if (state_->free.empty()) {
        if (!wait) return {};
        state_->returned.wait(lock, [&] { return !state_->free.empty(); });
      }
      b = std::move(state_->free.back());
      state_->free.pop_back();
    }
    const Status s = b->reserve(n);
    std::shared_ptr<State> state = state_;
    *out = Handle(b.release(), [state](PinnedBuffer* p) {
      {
        const std::lock_guard<std::mutex> lock(state->mutex);
        state->free.emplace_back(p);
      }
      state->returned.notify_one();
    });
    if (!s) out->reset();
    return s;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable returned;
    std::vector<std::unique_ptr<PinnedBuffer>> free;
    int made = 0;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// ---------------------------------------------------------------- slots ----

bool is_pinned(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // pageable memory on older runtimes: not an error of ours
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

struct ChunkPlan {
  std::span<const std::uint8_t> data;
  bool pinned = false;
  std::size_t dev_offset = 0;  // of its data in the slot's device data region
  // Compression: its blocks, [first, first + count) of the batch's.
  // Decompression: its frame blocks, [first, first + count) of Slot::frames.
  std::size_t first = 0, count = 0;
  // Decompression.
  std::size_t area = 0;  // its output area in Slot::d_work
  std::uint8_t* direct = nullptr;
  std::size_t direct_capacity = 0;
  bool direct_pinned = false;
  Status status;              // set on the host: a bad chunk never reaches the device
  std::size_t out_size = 0;   // decoded bytes
  bool via_pool = false;      // its bytes come back into the pool buffer...
  std::size_t pool_offset = 0;  // ...here
};

// The item arrays at the front of a slot's input region: compression's m
// blocks, or decompression's m LZ4 blocks and r raw blocks.
struct ItemArrays {
  const void** in_ptrs;
  std::size_t* in_sizes;
  void** out_ptrs;
  std::size_t* out_caps;
  const void** raw_src;
  void** raw_dst;
  std::size_t* raw_sizes;
  static std::size_t bytes(std::size_t m, std::size_t r) { return align_up((4 * m + 3 * r) * 8, 256); }
  ItemArrays(std::uint8_t* base, std::size_t m, std::size_t r) {
    auto* w = reinterpret_cast<std::uint64_t*>(base);
    in_ptrs = reinterpret_cast<const void**>(w);
    in_sizes = reinterpret_cast<std::size_t*>(w + m);
    out_ptrs = reinterpret_cast<void**>(w + 2 * m);
    out_caps = reinterpret_cast<std::size_t*>(w + 3 * m);
    raw_src = reinterpret_cast<const void**>(w + 4 * m);
    raw_dst = reinterpret_cast<void**>(w + 4 * m + r);
    raw_sizes = reinterpret_cast<std::size_t*>(w + 4 * m + 2 * r);
  }
};

// The results region (device and host). Compression: places [m + 1] (these
// come back), frame sizes [m + 1], LZ4 sizes [m], statuses [m].
// Decompression: LZ4 sizes [m], statuses [m] (all come back).
struct Results {
  std::size_t* places;
  std::size_t* frame_sizes;
  std::size_t* sizes;
  ItemStatus* statuses;
  static std::size_t bytes(PipelineMode mode, std::size_t m) {
    return mode == PipelineMode::compress ? (3 * m + 2) * 8 + 4 * m : 12 * m;
  }
  static std::size_t returned(PipelineMode mode, std::size_t m) {
    return mode == PipelineMode::compress ? (m + 1) * 8 : 12 * m;
  }
  Results(PipelineMode mode, std::uint8_t* base, std::size_t m) {
    auto* w = reinterpret_cast<std::size_t*>(base);
    if (mode == PipelineMode::compress) {
      places = w;
      frame_sizes = w + m + 1;
      sizes = w + 2 * m + 2;
      statuses = reinterpret_cast<ItemStatus*>(w + 3 * m + 2);
    } else {
      places = frame_sizes = nullptr;
      sizes = w;
      statuses = reinterpret_cast<ItemStatus*>(w + m);
    }
  }
};

struct Slot {
  cudaStream_t stream = nullptr;
  // h2d: [h2d_start, h2d_end); kernels: [h2d_end, kernel_end); d2h:
  // [kernel_end, results_ready) and [d2h_start, d2h_end).
  cudaEvent_t h2d_start = nullptr, h2d_end = nullptr, kernel_end = nullptr, results_ready = nullptr,
              d2h_start = nullptr, d2h_end = nullptr;
  DeviceBuffer d_in;      // item arrays, then the chunks' data
  DeviceBuffer d_work;    // compression: the LZ4 blocks; decompression: the output areas
  DeviceBuffer d_frames;  // compression: the packed frame blocks
  DeviceBuffer d_result;
  DeviceBuffer d_temp;
  PinnedBuffer h_in;      // item arrays, then the chunks not in pinned memory
  PinnedBuffer h_result;

  PipelineMode mode = PipelineMode::compress;
  std::vector<ChunkPlan> chunks;
  std::vector<FrameBlock> frames;   // decompression
  std::vector<std::size_t> items;   // decompression: each frame block's LZ4 item or raw item
  std::size_t m = 0;                // compression: blocks; decompression: LZ4 blocks
  std::size_t r = 0;                // decompression: raw blocks
  std::size_t frames_bound = 0;     // compression: bytes of d_frames that may be used
  OutputPool::Handle out;           // where the bytes come back...
  PlaceFn place;                    // compression: the caller's room, asked for when the size is known
  std::uint8_t* placed = nullptr;   // ...or here, the room place() gave
  bool busy = false;                // has work on its stream
  bool output_queued = false;       // its copy back is queued

  // Forgets its batch, once the stream is idle: the slot takes the next.
  void let_go() {
    if (busy) (void)cudaStreamSynchronize(stream);
    busy = false;
    output_queued = false;
    out.reset();
    place = nullptr;
    placed = nullptr;
  }
};

class CudaPipeline final : public Lz4Pipeline {
 public:
  explicit CudaPipeline(int gpu) : gpu_(gpu) {}
  ~CudaPipeline() override {
    if (cudaSetDevice(gpu_) != cudaSuccess) return;
    abandon();
    for (Slot& s : slots_) {
      for (cudaEvent_t e : {s.h2d_start, s.h2d_end, s.kernel_end, s.results_ready, s.d2h_start, s.d2h_end}) {
        if (e) (void)cudaEventDestroy(e);
      }
      if (s.stream) (void)cudaStreamDestroy(s.stream);
    }
    if (epoch_) (void)cudaEventDestroy(epoch_);
  }

  Status init() {
    TANDEM_CUDA_CHECK(cudaSetDevice(gpu_), "cudaSetDevice");
    for (Slot& s : slots_) {
      TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
      for (cudaEvent_t* e : {&s.h2d_start, &s.h2d_end, &s.kernel_end, &s.results_ready, &s.d2h_start, &s.d2h_end}) {
        TANDEM_CUDA_CHECK(cudaEventCreate(e), "cudaEventCreate");
      }
    }
    return {};
  }

  Status begin(const Lz4PipelineOptions& options) override {
    abandon();
    begun_ = false;
    if (fault_fires(Fault::no_device)) return injected_fault(Fault::no_device);
    if (Status s = check_pipeline_options(options); !s) return s;
    TANDEM_CUDA_CHECK(cudaSetDevice(gpu_), "cudaSetDevice");
    // The device's clock against the host's: an event on an idle stream,
    // and the host's time once it has passed.
    if (!epoch_) TANDEM_CUDA_CHECK(cudaEventCreate(&epoch_), "cudaEventCreate");
    TANDEM_CUDA_CHECK(cudaEventRecord(epoch_, slots_[0].stream), "cudaEventRecord");
    TANDEM_CUDA_CHECK(cudaEventSynchronize(epoch_), "cudaEventSynchronize");
    epoch_host_ = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    options_ = options;
    begun_ = true;
    return {};
  }

  int depth() const override { return kPipelineDepth; }
  std::size_t batch_bytes() const override { return kPipelineBatchBytes; }
  Status submit(std::span<const PipelineIn> chunks, PlaceFn place) override;
  bool placeable(const void* p, std::size_t n) const override {
    if (!p) return n == 0;
    return n == 0 || (is_pinned(p) && is_pinned(static_cast<const std::uint8_t*>(p) + n - 1));
  }
  Status complete(std::vector<PipelineOut>* outs, BatchTimes* times) override;

  void abandon() override {
    (void)cudaSetDevice(gpu_);
    for (Slot& s : slots_) s.let_go();
    (void)cudaGetLastError();
    head_ = 0;
    count_ = 0;
  }

  int in_flight() const override { return count_; }

 private:
  void plan_compress(Slot& slot, std::span<const PipelineIn> chunks, std::size_t* staged, std::size_t* pinned);
  void plan_decompress(Slot& slot, std::span<const PipelineIn> chunks, std::size_t* staged, std::size_t* pinned);
  Status launch(Slot& slot, std::size_t staged, std::size_t pinned);
  Status queue_output(Slot& slot, bool wait);
  void finish(Slot& slot, std::vector<PipelineOut>* outs);
  // Lets go of the oldest batch once its stream is idle.
  void pop() {
    slots_[head_].let_go();
    head_ = (head_ + 1) % kPipelineDepth;
    --count_;
  }

  const int gpu_;
  Slot slots_[kPipelineDepth];
  cudaEvent_t epoch_ = nullptr;  // recorded by begin()...
  double epoch_host_ = 0;        // ...when the host's steady clock read this
  int head_ = 0;   // the oldest batch's slot
  int count_ = 0;  // batches in flight
  Lz4PipelineOptions options_;
  bool begun_ = false;
  OutputPool pool_;
  // Scratch, kept to reuse its memory.
  std::vector<FrameBlock> parsed_;
  std::vector<detail::Copy> copies_;
  std::vector<std::size_t> pieces_;
};

// Chunks not in pinned memory go first in the device data region (behind the
// item arrays, as they are in the staging, so that one copy takes them all);
// pinned chunks follow, each copied from where it is.
//
// A pinned chunk that starts where the previous pinned chunk of the batch
// ended, in host memory, follows it on the device too (when that keeps it
// aligned), so that one copy takes both: a batch of consecutive chunks of
// one buffer goes over in one copy.
void place_chunk(ChunkPlan& c, const ChunkPlan* last_pinned, std::size_t* staged, std::size_t* pinned) {
  c.pinned = !c.data.empty() && is_pinned(c.data.data());
  if (c.pinned && last_pinned) {
    const std::size_t end = last_pinned->dev_offset + last_pinned->data.size();
    if (last_pinned->data.data() + last_pinned->data.size() == c.data.data() && end % kAlign == 0) {
      c.dev_offset = end;
      *pinned = align_up(end + c.data.size());
      return;
    }
  }
  std::size_t* end = c.pinned ? pinned : staged;
  c.dev_offset = *end;
  *end += align_up(c.data.size());
}

// The pinned chunk placed last in the slot, or null.
const ChunkPlan* last_pinned_chunk(const Slot& slot) {
  for (auto it = slot.chunks.rbegin(); it != slot.chunks.rend(); ++it) {
    if (it->pinned) return &*it;
  }
  return nullptr;
}

void CudaPipeline::plan_compress(Slot& slot, std::span<const PipelineIn> chunks, std::size_t* staged,
                                 std::size_t* pinned) {
  const std::size_t bs = options_.block_size;
  const std::size_t tail = options_.block_checksum ? 4 : 0;
  slot.m = 0;
  slot.r = 0;
  slot.frames_bound = 0;
  for (const PipelineIn& in : chunks) {
    const ChunkPlan* last = last_pinned_chunk(slot);
    ChunkPlan& c = slot.chunks.emplace_back();
    c.data = in.data;
    place_chunk(c, last, staged, pinned);
    c.first = slot.m;
    c.count = pipeline_block_count(c.data.size(), bs);
    slot.m += c.count;
    slot.frames_bound += c.data.size() + c.count * (4 + tail);
  }
}

void CudaPipeline::plan_decompress(Slot& slot, std::span<const PipelineIn> chunks, std::size_t* staged,
                                   std::size_t* pinned) {
  const std::size_t bs = options_.block_size;
  slot.m = 0;
  slot.r = 0;
  slot.frames.clear();
  slot.items.clear();
  std::size_t area = 0;
  std::vector<FrameBlock>& parsed = parsed_;
  for (const PipelineIn& in : chunks) {
    ChunkPlan& c = slot.chunks.emplace_back();
    c.data = in.data;
    c.direct = in.direct;
    c.direct_capacity = in.direct ? in.direct_capacity : 0;
    c.status = parse_frame_blocks(in.data, bs, options_.block_checksum, &parsed);
    if (!c.status) continue;
    const std::size_t need = align_up(frame_blocks_area(parsed, bs));
    if (need > kPipelineMaxBatchOutput - area) {
      c.status = {StatusCode::output_too_small, "chunk decodes to more than a pipeline batch holds"};
      continue;
    }
    c.area = area;
    area += need;
    c.direct_pinned = c.direct && is_pinned(c.direct);
    place_chunk(c, last_pinned_chunk(slot), staged, pinned);
    c.first = slot.frames.size();
    c.count = parsed.size();
    for (const FrameBlock& b : parsed) {
      slot.frames.push_back(b);
      slot.items.push_back(b.raw ? slot.r++ : slot.m++);
    }
  }
  slot.frames_bound = area;  // the output area
}

Status CudaPipeline::submit(std::span<const PipelineIn> chunks, PlaceFn place) {
  if (!begun_) return {StatusCode::invalid_argument, "submit before begin"};
  if (count_ >= kPipelineDepth) return {StatusCode::invalid_argument, "submit beyond the pipeline's depth"};
  TANDEM_CUDA_CHECK(cudaSetDevice(gpu_), "cudaSetDevice");
  Slot& slot = slots_[(head_ + count_) % kPipelineDepth];
  slot.let_go();  // idle already: not in flight
  slot.mode = options_.mode;
  slot.chunks.clear();
  if (options_.mode == PipelineMode::compress) slot.place = std::move(place);
  std::size_t staged = 0, pinned = 0;
  if (options_.mode == PipelineMode::compress) {
    plan_compress(slot, chunks, &staged, &pinned);
  } else {
    plan_decompress(slot, chunks, &staged, &pinned);
  }
  if (Status s = launch(slot, staged, pinned); !s) return s;
  ++count_;
  return {};
}

Status CudaPipeline::launch(Slot& slot, std::size_t staged, std::size_t pinned) {
  const bool compress = slot.mode == PipelineMode::compress;
  const std::size_t bs = options_.block_size;
  const std::size_t m = slot.m, r = slot.r;
  const std::size_t arrays = ItemArrays::bytes(m, r);
  const std::size_t result_bytes = Results::bytes(slot.mode, m);

  std::size_t max_in = 0;
  for (const ChunkPlan& c : slot.chunks) max_in = std::max(max_in, std::min(bs, c.data.size()));
  std::size_t temp_bytes = 0;
  if (m > 0) {
    if (Status s = compress ? lz4_compress_temp_size(m, max_in, &temp_bytes) : lz4_decompress_temp_size(m, bs, &temp_bytes);
        !s) {
      return s;
    }
  }
  if (compress) {
    std::size_t scan_bytes = 0;
    TANDEM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<const std::size_t*>(nullptr),
                                                    static_cast<std::size_t*>(nullptr), static_cast<int>(m + 1)),
                      "cub::DeviceScan::ExclusiveSum (temporary size)");
    temp_bytes = std::max(temp_bytes, scan_bytes);
  }
  const std::size_t work_bytes = compress ? m * align_up(bs) : slot.frames_bound;

  // Buffers grow here, and only here.
  if (fault_fires(Fault::out_of_memory)) return injected_fault(Fault::out_of_memory);
  for (Status s : {slot.d_in.reserve(arrays + staged + pinned), slot.h_in.reserve(arrays + staged),
                   slot.d_work.reserve(work_bytes), slot.d_frames.reserve(compress ? slot.frames_bound : 0),
                   slot.d_result.reserve(result_bytes), slot.h_result.reserve(result_bytes),
                   slot.d_temp.reserve(temp_bytes)}) {
    if (!s) return s;
  }

  // The item arrays hold device addresses; the host writes them into the staging.
  std::uint8_t* const d_data = slot.d_in.data() + arrays;
  std::uint8_t* const d_pinned = d_data + staged;
  auto d_chunk = [&](const ChunkPlan& c) { return (c.pinned ? d_pinned : d_data) + c.dev_offset; };
  const ItemArrays h(slot.h_in.data(), m, r);
  copies_.clear();
  for (const ChunkPlan& c : slot.chunks) {
    if (!c.status || c.data.empty()) continue;
    if (!c.pinned) copies_.push_back({slot.h_in.data() + arrays + c.dev_offset, c.data.data(), c.data.size()});
    const std::uint8_t* const dev = d_chunk(c);
    if (compress) {
      for (std::size_t k = 0; k < c.count; ++k) {
        const std::size_t j = c.first + k;
        const std::size_t n = std::min(bs, c.data.size() - k * bs);
        h.in_ptrs[j] = dev + k * bs;
        h.in_sizes[j] = n;
        h.out_ptrs[j] = slot.d_work.data() + j * align_up(bs);
        h.out_caps[j] = n - 1;  // a block that does not shrink fails, and is stored raw
      }
    } else {
      for (std::size_t k = 0; k < c.count; ++k) {
        const FrameBlock& b = slot.frames[c.first + k];
        const std::size_t j = slot.items[c.first + k];
        std::uint8_t* const out = slot.d_work.data() + c.area + k * bs;
        if (b.raw) {
          h.raw_src[j] = dev + b.payload;
          h.raw_dst[j] = out;
          h.raw_sizes[j] = b.size;
        } else {
          h.in_ptrs[j] = dev + b.payload;
          h.in_sizes[j] = b.size;
          h.out_ptrs[j] = out;
          h.out_caps[j] = bs;
        }
      }
    }
  }
  detail::parallel_copy(copies_, &pieces_);

  if (fault_fires(Fault::copy)) return injected_fault(Fault::copy);
  const cudaStream_t stream = slot.stream;
  slot.busy = true;  // from the first enqueued work on
  TANDEM_CUDA_CHECK(cudaEventRecord(slot.h2d_start, stream), "cudaEventRecord");
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(slot.d_in.data(), slot.h_in.data(), arrays + staged, cudaMemcpyHostToDevice,
                                    stream),
                    "cudaMemcpyAsync (batch to the device)");
  // Pinned chunks, runs of consecutive ones in one copy each.
  const std::uint8_t* run_host = nullptr;
  std::uint8_t* run_dev = nullptr;
  std::size_t run_bytes = 0;
  auto copy_run = [&]() -> Status {
    if (run_bytes > 0) {
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(run_dev, run_host, run_bytes, cudaMemcpyHostToDevice, stream),
                        "cudaMemcpyAsync (pinned chunks to the device)");
    }
    run_bytes = 0;
    return {};
  };
  for (const ChunkPlan& c : slot.chunks) {
    if (!c.status || !c.pinned) continue;
    if (run_bytes > 0 && run_host + run_bytes == c.data.data() && run_dev + run_bytes == d_chunk(c)) {
      run_bytes += c.data.size();
      continue;
    }
    if (Status s = copy_run(); !s) return s;
    run_host = c.data.data();
    run_dev = d_chunk(c);
    run_bytes = c.data.size();
  }
  if (Status s = copy_run(); !s) return s;
  TANDEM_CUDA_CHECK(cudaEventRecord(slot.h2d_end, stream), "cudaEventRecord");

  const ItemArrays d(slot.d_in.data(), m, r);
  const Results res(slot.mode, slot.d_result.data(), m);
  if (m > 0) {
    const Status kernel =
        compress ? lz4_compress_async(d.in_ptrs, d.in_sizes, max_in, m, slot.d_temp.data(), temp_bytes, d.out_ptrs,
                                      d.out_caps, res.sizes, res.statuses, stream)
                 : lz4_decompress_async(d.in_ptrs, d.in_sizes, bs, m, slot.d_temp.data(), temp_bytes, d.out_ptrs,
                                        d.out_caps, res.sizes, res.statuses, stream);
    // A launch the kernels refuse is the device path failing, whatever its code.
    if (!kernel) return {StatusCode::device_error, kernel.reason};
  }
  if (compress) {
    frame_sizes<<<grid_for(m + 1, kThreads), kThreads, 0, stream>>>(m, d.in_sizes, res.sizes, res.statuses,
                                                                      options_.block_checksum ? 4 : 0,
                                                                      res.frame_sizes);
    TANDEM_CUDA_CHECK(cudaPeekAtLastError(), "frame_sizes launch");
    std::size_t scan_bytes = temp_bytes;
    TANDEM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(slot.d_temp.data(), scan_bytes,
                                                    static_cast<const std::size_t*>(res.frame_sizes), res.places,
                                                    static_cast<int>(m + 1), stream),
                      "cub::DeviceScan::ExclusiveSum");
    if (m > 0) {
      write_frames<<<grid_for(m), kThreads, 0, stream>>>(m, d.in_ptrs, d.in_sizes, d.out_ptrs, res.sizes,
                                                          res.statuses, res.places, slot.d_frames.data());
      TANDEM_CUDA_CHECK(cudaPeekAtLastError(), "write_frames launch");
    }
  } else if (r > 0) {
    copy_raw_blocks<<<grid_for(r), kThreads, 0, stream>>>(r, d.raw_src, d.raw_dst, d.raw_sizes);
    TANDEM_CUDA_CHECK(cudaPeekAtLastError(), "copy_raw_blocks launch");
  }
  TANDEM_CUDA_CHECK(cudaEventRecord(slot.kernel_end, stream), "cudaEventRecord");
  if (const std::size_t back = Results::returned(slot.mode, m); back > 0) {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(slot.h_result.data(), slot.d_result.data(), back, cudaMemcpyDeviceToHost, stream),
                      "cudaMemcpyAsync (results to the host)");
  }
  TANDEM_CUDA_CHECK(cudaEventRecord(slot.results_ready, stream), "cudaEventRecord");
  return {};
}

// Queues the copy back of a batch whose results have arrived. Without
// `wait`, leaves it unqueued when no pool buffer is free.
Status CudaPipeline::queue_output(Slot& slot, bool wait) {
  const cudaStream_t stream = slot.stream;
  const std::size_t bs = options_.block_size;
  if (slot.mode == PipelineMode::compress) {
    const Results res(slot.mode, slot.h_result.data(), slot.m);
    const std::size_t total = res.places[slot.m];
    if (total > slot.frames_bound) return {StatusCode::device_error, "GPU frame blocks larger than their bound"};
    // The caller's room when it has it now (every earlier chunk's place is
    // known), else a pool buffer; a later batch (not `wait`) waits for its
    // room rather than take a pool buffer, while there may be one.
    slot.placed = slot.place && total > 0 ? slot.place(total, wait) : nullptr;
    if (total > 0 && !slot.placed && slot.place && !wait) return {};
    if (total > 0 && !slot.placed) {
      if (Status s = pool_.take(total, wait, &slot.out); !s || !slot.out) return s;
    }
    TANDEM_CUDA_CHECK(cudaEventRecord(slot.d2h_start, stream), "cudaEventRecord");
    if (total > 0) {
      std::uint8_t* const dst = slot.placed ? slot.placed : slot.out->data();
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(dst, slot.d_frames.data(), total, cudaMemcpyDeviceToHost, stream),
                        "cudaMemcpyAsync (frame blocks to the host)");
    }
  } else {
    const Results res(slot.mode, slot.h_result.data(), slot.m);
    std::size_t pool_bytes = 0;
    for (ChunkPlan& c : slot.chunks) {
      if (!c.status) continue;
      std::size_t total = 0;
      for (std::size_t k = 0; k < c.count && c.status; ++k) {
        const FrameBlock& b = slot.frames[c.first + k];
        const std::size_t j = slot.items[c.first + k];
        if (b.raw) {
          total += b.size;
        } else if (res.statuses[j] != ItemStatus::ok || res.sizes[j] > bs) {
          c.status = {StatusCode::bad_data, "LZ4 block does not decode to at most the block size"};
        } else {
          total += res.sizes[j];
        }
      }
      if (!c.status) continue;
      c.out_size = total;
      if (c.direct && total > c.direct_capacity) {
        c.status = {StatusCode::output_too_small, "decoded chunk does not fit its direct output"};
        continue;
      }
      c.via_pool = !(c.direct && c.direct_pinned);
      if (c.via_pool) {
        c.pool_offset = pool_bytes;
        pool_bytes += align_up(total);
      }
    }
    if (pool_bytes > 0) {
      if (Status s = pool_.take(pool_bytes, wait, &slot.out); !s || !slot.out) return s;
    }
    TANDEM_CUDA_CHECK(cudaEventRecord(slot.d2h_start, stream), "cudaEventRecord");
    for (const ChunkPlan& c : slot.chunks) {
      if (!c.status || c.out_size == 0) continue;
      std::uint8_t* const dst = c.via_pool ? slot.out->data() + c.pool_offset : c.direct;
      const std::uint8_t* const area = slot.d_work.data() + c.area;
      // Every block but the last full: the bytes are contiguous in the area.
      bool contiguous = true;
      for (std::size_t k = 0; k + 1 < c.count; ++k) {
        const FrameBlock& b = slot.frames[c.first + k];
        contiguous = contiguous && (b.raw ? b.size : res.sizes[slot.items[c.first + k]]) == bs;
      }
      if (contiguous) {
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(dst, area, c.out_size, cudaMemcpyDeviceToHost, stream),
                          "cudaMemcpyAsync (decoded chunk to the host)");
        continue;
      }
      // Short blocks inside the chunk: each block to its place after the last.
      std::size_t pos = 0;
      for (std::size_t k = 0; k < c.count; ++k) {
        const FrameBlock& b = slot.frames[c.first + k];
        const std::size_t size = b.raw ? b.size : res.sizes[slot.items[c.first + k]];
        if (size > 0) {
          TANDEM_CUDA_CHECK(cudaMemcpyAsync(dst + pos, area + k * bs, size, cudaMemcpyDeviceToHost, stream),
                            "cudaMemcpyAsync (decoded block to the host)");
        }
        pos += size;
      }
    }
  }
  TANDEM_CUDA_CHECK(cudaEventRecord(slot.d2h_end, stream), "cudaEventRecord");
  slot.output_queued = true;
  return {};
}

Status CudaPipeline::complete(std::vector<PipelineOut>* outs, BatchTimes* times) {
  if (count_ == 0) return {StatusCode::invalid_argument, "complete with no batch in flight"};
  outs->clear();
  TANDEM_CUDA_CHECK(cudaSetDevice(gpu_), "cudaSetDevice");
  Slot& slot = slots_[head_];
  Status s;
  if (fault_fires(Fault::kernel)) {
    s = injected_fault(Fault::kernel);
  } else if (const cudaError_t e = cudaEventSynchronize(slot.results_ready); e != cudaSuccess) {
    s = cuda_failure(e, slot.mode == PipelineMode::compress ? "LZ4 compression on the GPU"
                                                           : "LZ4 decompression on the GPU");
  } else if (!slot.output_queued) {
    s = queue_output(slot, true);
  }
  // While the head's bytes come back, later batches whose results arrive
  // have their copies back queued, in order, so that the copy engine goes
  // from one batch's to the next without waiting for the host.
  while (s) {
    for (int k = 1; s && k < count_; ++k) {
      Slot& later = slots_[(head_ + k) % kPipelineDepth];
      if (later.output_queued) continue;
      if (cudaEventQuery(later.results_ready) != cudaSuccess) break;  // not yet (or failed: its complete() says)
      s = queue_output(later, false);
      if (!later.output_queued) break;
    }
    if (!s) break;
    // A later batch whose copy back is not queued yet: look again soon.
    const bool pending =
        std::any_of(slots_, slots_ + kPipelineDepth, [](const Slot& x) { return x.busy && !x.output_queued; });
    const cudaError_t e = pending ? cudaEventQuery(slot.d2h_end) : cudaEventSynchronize(slot.d2h_end);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) {
      s = cuda_failure(e, "cudaEventSynchronize (batch to the host)");
      break;
    }
    std::this_thread::yield();
  }
  if (!s) {
    pop();
    return s;
  }
  if (times) {
    float h2d = 0, kernel = 0, results = 0, data = 0;
    const bool timed = cudaEventElapsedTime(&h2d, slot.h2d_start, slot.h2d_end) == cudaSuccess &&
                       cudaEventElapsedTime(&kernel, slot.h2d_end, slot.kernel_end) == cudaSuccess &&
                       cudaEventElapsedTime(&results, slot.kernel_end, slot.results_ready) == cudaSuccess &&
                       cudaEventElapsedTime(&data, slot.d2h_start, slot.d2h_end) == cudaSuccess;
    // The same on the host's clock; the copy back spans the results' and
    // the bytes' copies, so it starts where the kernels end.
    float at[4] = {};
    const bool on_clock = timed && cudaEventElapsedTime(&at[0], epoch_, slot.h2d_start) == cudaSuccess &&
                          cudaEventElapsedTime(&at[1], epoch_, slot.h2d_end) == cudaSuccess &&
                          cudaEventElapsedTime(&at[2], epoch_, slot.kernel_end) == cudaSuccess &&
                          cudaEventElapsedTime(&at[3], epoch_, slot.d2h_end) == cudaSuccess;
    if (!timed || !on_clock) (void)cudaGetLastError();
    *times = timed ? BatchTimes{h2d, kernel, double{results} + data} : BatchTimes{};
    if (on_clock) {
      times->timed = true;
      times->h2d_start = epoch_host_ + at[0] / 1e3;
      times->h2d_end = epoch_host_ + at[1] / 1e3;
      times->kernel_end = epoch_host_ + at[2] / 1e3;
      times->d2h_start = times->kernel_end;
      times->d2h_end = epoch_host_ + at[3] / 1e3;
    }
  }
  slot.busy = false;
  finish(slot, outs);
  pop();
  return {};
}

// The host's part once a batch's bytes are back: checksums, copies into
// pageable direct outputs, and the outs.
void CudaPipeline::finish(Slot& slot, std::vector<PipelineOut>* outs) {
  outs->resize(slot.chunks.size());
  const std::shared_ptr<PinnedBuffer>& buffer = slot.out;
  auto view = [&](std::size_t offset, std::size_t size, PipelineOut* o) {
    o->bytes = {buffer->data() + offset, size};
    o->keep = std::shared_ptr<const void>(buffer, buffer->data() + offset);
  };
  if (slot.mode == PipelineMode::compress) {
    const Results res(slot.mode, slot.h_result.data(), slot.m);
    // The places are relative to the packed area, which the room or the
    // buffer holds from 0.
    std::uint8_t* const base = slot.placed ? slot.placed : buffer ? buffer->data() : nullptr;
    if (options_.block_checksum && slot.m > 0) write_block_checksums(base, res.places, slot.m);
    for (std::size_t i = 0; i < slot.chunks.size(); ++i) {
      const ChunkPlan& c = slot.chunks[i];
      PipelineOut& o = (*outs)[i];
      o = {};
      const std::size_t begin = res.places[c.first], end = res.places[c.first + c.count];
      if (end <= begin) continue;
      if (slot.placed) {
        o.bytes = {slot.placed + begin, end - begin};
      } else {
        view(begin, end - begin, &o);
      }
    }
    return;
  }
  copies_.clear();
  for (std::size_t i = 0; i < slot.chunks.size(); ++i) {
    ChunkPlan& c = slot.chunks[i];
    PipelineOut& o = (*outs)[i];
    o = {};
    if (c.status && options_.verify_checksums && options_.block_checksum) {
      c.status = verify_block_checksums(c.data, std::span<const FrameBlock>(slot.frames).subspan(c.first, c.count));
    }
    o.status = c.status;
    if (!c.status) continue;
    if (c.direct) {
      if (c.via_pool && c.out_size > 0) copies_.push_back({c.direct, buffer->data() + c.pool_offset, c.out_size});
      o.bytes = {c.direct, c.out_size};
    } else if (c.out_size > 0) {
      view(c.pool_offset, c.out_size, &o);
    }
  }
  detail::parallel_copy(copies_, &pieces_);
}

}  // namespace

Status Lz4Pipeline::shared(int gpu, Lz4Pipeline** pipeline) {
  if (!pipeline) return {StatusCode::invalid_argument, "null pipeline"};
  *pipeline = nullptr;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return {StatusCode::no_device, "no CUDA device found"};
  }
  if (gpu < 0 || gpu >= count) return {StatusCode::no_device, "no CUDA device of that number"};
  static std::mutex mutex;
  static auto* made = new std::map<int, CudaPipeline*>();  // never destroyed: the CUDA runtime may be gone at exit
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = made->find(gpu);
  if (it == made->end()) {
    auto p = std::make_unique<CudaPipeline>(gpu);
    if (Status s = p->init(); !s) return s;
    it = made->emplace(gpu, p.release()).first;
  }
  *pipeline = it->second;
  return {};
}

}  // namespace tandem::gpu
