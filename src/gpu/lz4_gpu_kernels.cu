// The batched LZ4 calls of tandem_gpu.hpp, the bodies in lz4_gpu_encode.hpp
// and lz4_gpu_decode.hpp.
#include <cuda_runtime.h>

#include "gpu/gpu_memory.cuh"
#include "gpu/lz4_gpu_decode.hpp"
#include "gpu/lz4_gpu_encode.hpp"
#include "gpu/lz4_gpu_gather.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

namespace {

// Warps per block of the find kernel, each with its own hash table of
// 2^HashLog entries. Its warps wait on memory much of the time, so the more
// a multiprocessor holds, the faster; shared memory (the tables, and 1 KiB
// a block that the GPU keeps) sets how many. On the H100, 2^12-entry tables
// (8 KiB): 3 warps a block give 27 warps a multiprocessor, 4 give 24;
// silesia7 in 64 KiB blocks compressed at 38.8 GB/s against 35.1 (7 warps,
// 28 a multiprocessor: 38.5). 2^11 entries: 4 a block, 52 a multiprocessor.
__host__ __device__ constexpr int find_warps(int hash_log) { return hash_log == lz4k::kLargeHashLog ? 3 : 4; }
constexpr int kEmitWarps = 8;   // warps per block of the emit kernel; a warp per segment

__device__ __forceinline__ void finish_item(std::size_t item, std::uint32_t size, ItemStatus status,
                                            std::size_t* out_sizes, ItemStatus* statuses) {
  if ((threadIdx.x & 31) == 0) {
    out_sizes[item] = status == ItemStatus::ok || status == ItemStatus::incompressible ? size : 0;
    if (statuses) statuses[item] = status;
  }
}

// An item of a compression launch: false when it cannot be compressed
// (oversized for the launch, or null buffers). Both kernels decide alike.
__device__ __forceinline__ bool encode_item_valid(const void* in, std::size_t n, const void* out,
                                                  std::size_t segments_per_item) {
  return n <= kMaxItemSize && lz4k::segment_count(n) <= segments_per_item && (in || !n) && out;
}

// Step 1: segments_per_item segments per item, each found by one warp. The
// launch holds only as many warps as the GPU keeps resident; each takes the
// next segment from *next (zero at the launch) when it is done with one, so
// that segments that take longer do not leave the GPU idle at the end of a
// wave. HashLog: the largest table (lz4k::hash_log_for) the launch has room
// for. Measured on the H100, silesia7 (GB/s, a warp per segment in a grid
// of them against segments taken from the counter): 4K 75.8 / 76.6, 16K
// 53.9 / 54.6, 64K 47.4 / 47.3; with 2 and 4 warps a thread block rather
// than 3, 64K 46.6 and 42.9. Two steps of 32 positions at once in each
// warp, their loads together, gained nothing (64K 47.2) and hashed
// positions inside matches, for 0.2% more output.
template <int HashLog>
__global__ void __launch_bounds__(find_warps(HashLog) * 32)
    lz4_find_kernel(const void* const* in_ptrs, const std::size_t* in_sizes, void* const* out_ptrs,
                    std::size_t num_items, std::size_t segments_per_item, const std::uint16_t* primes,
                    lz4k::SeqRecord* records, lz4k::SegmentSummary* summaries, unsigned long long* next) {
  extern __shared__ uint4 shared[];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const std::size_t segments = num_items * segments_per_item;
  auto* table = reinterpret_cast<std::uint16_t*>(reinterpret_cast<std::uint8_t*>(shared) +
                                                 static_cast<std::size_t>(warp) * lz4k::table_bytes(HashLog));
  for (;;) {
    unsigned long long taken = 0;
    if ((threadIdx.x & 31) == 0) taken = atomicAdd(next, 1ull);
    const std::size_t index = __shfl_sync(0xffffffffu, taken, 0);
    if (index >= segments) return;
    const std::size_t item = index / segments_per_item;
    const std::size_t seg = index % segments_per_item;
    const std::uint8_t* in = static_cast<const std::uint8_t*>(in_ptrs[item]);
    const std::size_t n = in_sizes[item];
    if (!encode_item_valid(in, n, out_ptrs[item], segments_per_item) || seg >= lz4k::segment_count(n) ||
        lz4k::hash_log_for(n) > HashLog) {
      continue;
    }
    lz4k::find_segment(simt::Warp{}, in, static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(seg),
                       primes + item * segments_per_item * lz4k::kPrimeEntries, table,
                       records + index * lz4k::kMaxSegmentRecords, summaries + index);
  }
}

// Step 0: a thread block per group of lz4k::kPrimeGroup segments of the
// items of more than one segment, writing their prime tables
// (lz4k::prime_group). A kernel of its own: with the per-segment seed
// tables that came before the prime tables, seeding inside the find kernel
// (each warp seeding its segment, then waiting on flags for the seeds it
// merged) measured slower on the H100 (silesia7 64K, 52.3 GB/s against
// 53.7).
__global__ void __launch_bounds__(lz4k::kPrimeWarps * 32)
    lz4_prime_kernel(const void* const* in_ptrs, const std::size_t* in_sizes, void* const* out_ptrs,
                     std::size_t num_items, std::size_t segments_per_item, std::uint16_t* primes) {
  __shared__ std::uint32_t running[lz4k::kPrimeEntries];
  const std::size_t groups = lz4k::prime_group_count(segments_per_item);
  const std::size_t item = blockIdx.x / groups;
  const std::uint32_t group = static_cast<std::uint32_t>(blockIdx.x % groups);
  if (item >= num_items) return;
  const std::uint8_t* in = static_cast<const std::uint8_t*>(in_ptrs[item]);
  const std::size_t n = in_sizes[item];
  // (The whole block: every thread sees the same item.)
  if (!encode_item_valid(in, n, out_ptrs[item], segments_per_item) || lz4k::segment_count(n) <= 1 ||
      group >= lz4k::prime_group_count(lz4k::segment_count(n))) {
    return;
  }
  lz4k::prime_group(simt::Block<lz4k::kPrimeWarps>{}, in, static_cast<std::uint32_t>(n), group, running,
                    primes + item * segments_per_item * lz4k::kPrimeEntries);
}

// Step 2: a warp per segment, max(segments_per_item, 1) warps per item (a
// block without segments, an empty one, still gets a warp); the warp of an
// item's last segment writes its size and status. Its registers are
// capped so that 5 thread blocks (40 warps) fit a multiprocessor
// rather than 4 (ptxas's own choice, 66 registers): a few spills, more warps
// to wait on memory. On the H100, silesia7 compression (GB/s, own / capped):
// 4K 81.2 / 83.8, 16K 58.8 / 59.8, 64K 50.6 / 51.3.
constexpr int kEmitMinBlocks = 5;
__global__ void __launch_bounds__(kEmitWarps * 32, kEmitMinBlocks)
    lz4_emit_kernel(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                    void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                    ItemStatus* statuses, std::size_t segments_per_item, int max_hash_log,
                    const lz4k::SeqRecord* records, const lz4k::SegmentSummary* summaries) {
  const std::size_t warps_per_item = segments_per_item > 0 ? segments_per_item : 1;
  const std::size_t index = static_cast<std::size_t>(blockIdx.x) * kEmitWarps + threadIdx.x / 32;
  const std::size_t item = index / warps_per_item;
  const std::uint32_t seg = static_cast<std::uint32_t>(index % warps_per_item);
  if (item >= num_items) return;
  const std::uint8_t* in = static_cast<const std::uint8_t*>(in_ptrs[item]);
  std::uint8_t* out = static_cast<std::uint8_t*>(out_ptrs[item]);
  const std::size_t n = in_sizes[item];
  if (!encode_item_valid(in, n, out, segments_per_item) || lz4k::hash_log_for(n) > max_hash_log) {
    if (seg == 0) finish_item(item, 0, ItemStatus::invalid_item, out_sizes, statuses);
    return;
  }
  const std::uint32_t segments = static_cast<std::uint32_t>(lz4k::segment_count(n));
  const std::uint32_t last = segments > 0 ? segments - 1 : 0;
  if (seg > last) return;
  const std::size_t bound = lz4k::max_block_size(n);
  std::size_t cap = out_capacities ? out_capacities[item] : bound;
  if (cap > bound) cap = bound;
  const std::size_t first = item * segments_per_item;
  std::uint32_t size = 0;
  const ItemStatus status = lz4k::emit_segment(simt::Warp{}, in, static_cast<std::uint32_t>(n), out,
                                               static_cast<std::uint32_t>(cap),
                                               records + first * lz4k::kMaxSegmentRecords, summaries + first,
                                               segments, seg, &size);
  if (seg == last) finish_item(item, size, status, out_sizes, statuses);
}

// An item of a decode launch, its checks done the same way for every shape.
struct DecodeItem {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::uint32_t n;
  std::uint32_t cap;
};

__device__ __forceinline__ bool decode_item(std::size_t item, const void* const* in_ptrs, const std::size_t* in_sizes,
                                            void* const* out_ptrs, const std::size_t* out_capacities,
                                            DecodeItem* d) {
  d->in = static_cast<const std::uint8_t*>(in_ptrs[item]);
  d->out = static_cast<std::uint8_t*>(out_ptrs[item]);
  const std::size_t n = in_sizes[item];
  std::size_t cap = out_capacities[item];
  if (cap > kMaxItemSize) cap = kMaxItemSize;
  d->n = static_cast<std::uint32_t>(n);
  d->cap = static_cast<std::uint32_t>(cap);
  return n <= kMaxItemSize && (d->in || !n) && (d->out || !cap);
}

// A thread block's Shared in (static) shared memory; its members start
// uninitialized, whatever their initializers say.
template <class Shared>
__device__ __forceinline__ Shared& static_shared() {
  __shared__ Shared shared;
  return shared;
}

// One thread block per item: its warps decode the item together, with
// decode(shared, item, &size), `shared` in shared memory.
template <class Shared, class Decode>
__device__ __forceinline__ void decode_block_item(Shared& shared, const void* const* in_ptrs,
                                                  const std::size_t* in_sizes, std::size_t num_items,
                                                  void* const* out_ptrs, const std::size_t* out_capacities,
                                                  std::size_t* out_sizes, ItemStatus* statuses, Decode decode) {
  const std::size_t item = blockIdx.x;
  if (item >= num_items) return;
  const bool first_thread = threadIdx.x == 0;
  DecodeItem d;
  if (!decode_item(item, in_ptrs, in_sizes, out_ptrs, out_capacities, &d)) {
    if (first_thread) finish_item(item, 0, ItemStatus::invalid_item, out_sizes, statuses);
    return;  // the whole block: every thread sees the same item
  }
  std::uint32_t size = 0;
  const ItemStatus status = decode(shared, d, &size);
  if (first_thread) finish_item(item, size, status, out_sizes, statuses);
}

__device__ __forceinline__ void decode_wide_item(const void* const* in_ptrs, const std::size_t* in_sizes,
                                                 std::size_t num_items, void* const* out_ptrs,
                                                 const std::size_t* out_capacities, std::size_t* out_sizes,
                                                 ItemStatus* statuses) {
  using Shared = lz4k::WideShared<lz4k::kWideWarps>;
  decode_block_item(static_shared<Shared>(), in_ptrs, in_sizes, num_items, out_ptrs, out_capacities, out_sizes,
                    statuses, [](Shared& shared, const DecodeItem& d, std::uint32_t* size) {
                      return lz4k::decode_block_wide(simt::Block<lz4k::kWideWarps>{}, shared, d.in, d.n, d.out, d.cap,
                                                     size);
                    });
}

// The wide decoder in three register budgets. A batch with fewer items than
// the GPU holds at once runs in one wave, its time the slowest item's, so
// registers pay (fewer spills); a larger batch runs in waves, so the number
// of thread blocks a multiprocessor holds pays. wide_launch picks the
// largest budget under which the whole batch fits at once, else the
// smallest. On the H100 (registers a thread and thread blocks a
// multiprocessor): roomy 72 and 7, ptxas's own choice 48 and 10, dense 40
// and 12. Measured on silesia7 (GB/s, roomy / own / dense): 32K, 2,501
// items, 78.3 / 90.5 / 100.5; 64K, 1,251 items, 62.8 / 73.4 / 72.3; 256K,
// 313 items, 25.0 / 24.4 / 24.2.
__global__ void __launch_bounds__(lz4k::kWideWarps * 32)
    lz4_decode_wide_kernel(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                           void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                           ItemStatus* statuses) {
  decode_wide_item(in_ptrs, in_sizes, num_items, out_ptrs, out_capacities, out_sizes, statuses);
}

// MinBlocks: thread blocks a multiprocessor must hold, which caps registers.
template <int MinBlocks>
__global__ void __launch_bounds__(lz4k::kWideWarps * 32, MinBlocks)
    lz4_decode_wide_kernel_bounded(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                                   void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                                   ItemStatus* statuses) {
  decode_wide_item(in_ptrs, in_sizes, num_items, out_ptrs, out_capacities, out_sizes, statuses);
}
// One thread block per item, the window decoder: for the largest items.
__global__ void __launch_bounds__(lz4k::kWindowWarps * 32)
    lz4_decode_window_kernel(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                             void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                             ItemStatus* statuses) {
  using Shared = lz4k::WindowShared<lz4k::kWindowWarps>;
  decode_block_item(static_shared<Shared>(), in_ptrs, in_sizes, num_items, out_ptrs, out_capacities, out_sizes,
                    statuses, [](Shared& shared, const DecodeItem& d, std::uint32_t* size) {
                      return lz4k::decode_block_window(simt::Block<lz4k::kWindowWarps>{}, shared, d.in, d.n, d.out,
                                                       d.cap, size);
                    });
}

// One thread block of 1024 threads per item, the gather decoder: for items
// of up to 64 KiB, its shared memory (dynamic: more than 48 KiB) one
// thread block a multiprocessor.
__global__ void __launch_bounds__(lz4k::kGatherThreads, 1)
    lz4_decode_gather_kernel(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                             void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                             ItemStatus* statuses) {
  extern __shared__ uint4 gather_shared[];
  decode_block_item(*reinterpret_cast<lz4k::GatherShared*>(gather_shared), in_ptrs, in_sizes, num_items, out_ptrs,
                    out_capacities, out_sizes, statuses,
                    [](lz4k::GatherShared& shared, const DecodeItem& d, std::uint32_t* size) {
                      return lz4k::decode_block_gather(simt::Block<lz4k::kGatherWarps>{}, shared, d.in, d.n, d.out,
                                                       d.cap, size);
                    });
}

constexpr int kWideRoomy = 1;    // no cap: no spills
constexpr int kWideDense = 12;

// Blocks per thread block of the lane decoder. A thread block's warps stay
// resident until its last block is decoded, and with 8 KiB staged a warp,
// shared memory limits how many fit a multiprocessor; two a thread block
// leave less idle. Measured (GB/s, 4 against 2 blocks a thread block): 4K
// 206 against 207.6, 8K 157.0 against 176.3, 16K 148.2 against 147.2; one
// a thread block: 4K 203.5, 16K 128.4.
constexpr int kLanesPerBlock = 2;

// One warp per item, kLanesPerBlock items per thread block, for batches of
// small items; with StageBytes, each warp stages its item in
// kLaneStageBytes<StageBytes> of dynamic shared memory.
template <std::uint32_t StageBytes>
__device__ __forceinline__ void decode_lanes_item(const void* const* in_ptrs, const std::size_t* in_sizes,
                                                  std::size_t num_items, void* const* out_ptrs,
                                                  const std::size_t* out_capacities, std::size_t* out_sizes,
                                                  ItemStatus* statuses) {
  extern __shared__ uint4 lanes_shared[];
  const std::size_t item = static_cast<std::size_t>(blockIdx.x) * kLanesPerBlock + threadIdx.x / 32;
  if (item >= num_items) return;
  DecodeItem d;
  if (!decode_item(item, in_ptrs, in_sizes, out_ptrs, out_capacities, &d)) {
    finish_item(item, 0, ItemStatus::invalid_item, out_sizes, statuses);
    return;
  }
  std::uint32_t size = 0;
  ItemStatus status;
  if constexpr (StageBytes == 0) {
    status = lz4k::decode_block_lanes(simt::Warp{}, d.in, d.n, d.out, d.cap, &size);
  } else {
    std::uint8_t* stage =
        reinterpret_cast<std::uint8_t*>(lanes_shared) + (threadIdx.x / 32) * lz4k::kLaneStageBytes<StageBytes>;
    status = lz4k::decode_block_lanes_staged<StageBytes>(simt::Warp{}, stage, d.in, d.n, d.out, d.cap, &size);
  }
  finish_item(item, size, status, out_sizes, statuses);
}

template <std::uint32_t StageBytes>
__global__ void __launch_bounds__(kLanesPerBlock * 32)
    lz4_decode_lanes_kernel(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                            void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                            ItemStatus* statuses) {
  decode_lanes_item<StageBytes>(in_ptrs, in_sizes, num_items, out_ptrs, out_capacities, out_sizes, statuses);
}

// Up to 4 KiB staged, registers rather than shared memory limit how many
// thread blocks a multiprocessor holds (ptxas's own choice, 56 registers:
// 18); a cap at 48 lets 20 in. Measured on silesia7 at 4K (H100, GB/s):
// 202.3 against 200.6; capped at 40 (24 thread blocks, more spills): 158.3.
constexpr int kLanes4KMinBlocks = 20;
__global__ void __launch_bounds__(kLanesPerBlock * 32, kLanes4KMinBlocks)
    lz4_decode_lanes_4k_kernel(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                               void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                               ItemStatus* statuses) {
  decode_lanes_item<lz4k::kStageBytes>(in_ptrs, in_sizes, num_items, out_ptrs, out_capacities, out_sizes, statuses);
}

template <int HashLog>
Status launch_find(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, void* const* d_out_ptrs,
                   std::size_t num_items, std::size_t segments_per_item, const std::uint16_t* primes,
                   lz4k::SeqRecord* records, lz4k::SegmentSummary* summaries, unsigned long long* next,
                   Stream stream) {
  constexpr int kWarps = find_warps(HashLog);
  constexpr std::size_t kSharedBytes = kWarps * lz4k::table_bytes(HashLog);
  if (const cudaError_t e = allow_dynamic_shared<lz4_find_kernel<HashLog>, kSharedBytes>(); e != cudaSuccess) {
    return {StatusCode::device_error, cudaGetErrorString(e)};
  }
  const std::size_t segments = num_items * segments_per_item;
  std::size_t blocks = (segments + kWarps - 1) / kWarps;
  const std::size_t fit = resident_blocks<lz4_find_kernel<HashLog>, kWarps * 32, kSharedBytes>();
  if (fit > 0 && blocks > fit) blocks = fit;
  const cudaError_t zero = cudaMemsetAsync(next, 0, sizeof *next, static_cast<cudaStream_t>(stream));
  if (zero != cudaSuccess) return {StatusCode::device_error, cudaGetErrorString(zero)};
  lz4_find_kernel<HashLog><<<static_cast<unsigned>(blocks), kWarps * 32, kSharedBytes, stream>>>(
      d_in_ptrs, d_in_sizes, d_out_ptrs, num_items, segments_per_item, primes, records, summaries, next);
  return launch_status();
}

// How many items the current device decodes at once with the roomy and the
// ptxas-chosen wide kernels (thread blocks a multiprocessor times
// multiprocessors); asked once per device.
struct WideFit {
  std::size_t roomy = 0;
  std::size_t own = 0;
  bool known = false;
};

WideFit wide_fit() {
  constexpr int kThreads = lz4k::kWideWarps * 32;
  WideFit fit;
  fit.roomy = resident_blocks<lz4_decode_wide_kernel_bounded<kWideRoomy>, kThreads, 0>();
  fit.own = resident_blocks<lz4_decode_wide_kernel, kThreads, 0>();
  fit.known = fit.roomy > 0 && fit.own > 0;
  return fit;
}

constexpr std::size_t kMaxBlocks = 0x7fffffff;
// Batches whose blocks decode to at most this many bytes run a warp per
// block (the lane decoder): there are enough of them to fill the GPU. Above
// it, a thread block per block (the wide decoder). Measured on silesia7 in
// liblz4's blocks (H100, GB/s, lanes against wide): 16K 148.4 against
// 105.8, 32K 90.5 against 93.9.
constexpr std::size_t kDecodeLanesMax = 16 * 1024;
// Batches whose blocks decode to more than this, up to 64 KiB, run the
// gather decoder, whose 1024 threads parse and gather a whole block at once:
// it needs most of a multiprocessor's shared memory, so where blocks are
// many and light the wide decoder's many thread blocks a multiprocessor
// win. Measured on silesia7 (H100, GB/s, wide against gather): 32K 107.0
// against 73.2, 64K 79.1 against 99.3 (107.2 since).
constexpr std::size_t kDecodeWideMax = 32 * 1024;
// Batches whose blocks decode to more than this run the window decoder,
// whose parse spreads over several warps: there are fewer blocks than the
// GPU holds at once, and each block's own time is what counts. Measured on
// silesia7 (H100, GB/s, wide against window): 64K 80.1 against 67.4, 128K
// 49.9 against 54.5, 256K 28.1 against 38.0, 1M 7.2 against 11.5, 4M 1.83
// against 3.11.
constexpr std::size_t kDecodeGatherMax = lz4k::kGatherMaxOut;
// Batches of smaller blocks, over 8 KiB, run the gather decoder too when
// they are few: at most kGatherFewWaves times as many as the GPU holds at
// once (one a multiprocessor). There the lane and wide decoders leave the
// GPU waiting on each block's chain of tokens. Measured on the H100, each
// Silesia file alone (GB/s, lanes or wide against gather; blocks in the
// batch):
//   16K: dickens 33.3 / 56.9 (623), ooffice 19.6 / 39.9 (376), osdb 42.3 /
//        45.2 (616), xml 21.2 / 46.6 (327); nci 129.7 / 64.6 (2,048)
//   32K: dickens 27.4 / 72.1 (312), xml 18.8 / 53.7 (164); nci 125.1 / 94.4
//        (1,024), silesia7 111.3 / 90.7 (2,501)
//    8K: the lane decoder, at every batch measured (xml: 41.7 / 30.2, 653).
constexpr std::size_t kDecodeGatherFewMin = 8 * 1024;
constexpr std::size_t kGatherFewWaves = 5;

// The gather kernel's shared memory, above the default limit, allowed once.
cudaError_t gather_attribute() { return allow_dynamic_shared<lz4_decode_gather_kernel, sizeof(lz4k::GatherShared)>(); }

// Whether a batch of num_items blocks of up to max_output_size bytes runs
// the gather decoder.
bool decode_by_gather(std::size_t max_output_size, std::size_t num_items) {
  if (max_output_size > kDecodeWideMax && max_output_size <= kDecodeGatherMax) return true;
  if (max_output_size <= kDecodeGatherFewMin || max_output_size > kDecodeWideMax) return false;
  if (gather_attribute() != cudaSuccess) return false;
  const std::size_t fit = resident_blocks<lz4_decode_gather_kernel, lz4k::kGatherThreads, sizeof(lz4k::GatherShared)>();
  return fit > 0 && num_items <= kGatherFewWaves * fit;
}
}  // namespace

Status lz4_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                          std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                          const std::size_t* d_out_capacities, std::size_t* d_out_sizes, ItemStatus* d_statuses,
                          Stream stream) {
  if (max_item_size > kMaxItemSize) return {StatusCode::invalid_argument, "max_item_size exceeds kMaxItemSize"};
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_sizes) {
    return {StatusCode::invalid_argument, "null device array"};
  }
  lz4k::EncodeTemp layout;
  if (!lz4k::encode_temp_layout(num_items, max_item_size, &layout)) return {StatusCode::invalid_argument, "too many items"};
  if (temp_bytes < layout.total_bytes || (!d_temp && layout.total_bytes)) {
    return {StatusCode::invalid_argument, "temporary storage smaller than lz4_compress_temp_size"};
  }
  const std::size_t segments = num_items * layout.segments_per_item;
  const std::size_t per_item = layout.segments_per_item;  // 0 when every item is empty
  const std::size_t emit_warps = num_items * (per_item > 0 ? per_item : 1);
  const int max_hash_log = lz4k::hash_log_for(max_item_size);
  if (segments / find_warps(max_hash_log) >= kMaxBlocks || emit_warps / kEmitWarps >= kMaxBlocks ||
      num_items * lz4k::prime_group_count(per_item) >= kMaxBlocks) {
    return {StatusCode::invalid_argument, "too many items"};
  }
  auto* records = static_cast<lz4k::SeqRecord*>(d_temp);
  auto* summaries =
      reinterpret_cast<lz4k::SegmentSummary*>(static_cast<std::uint8_t*>(d_temp) + layout.records_bytes);
  auto* next = reinterpret_cast<unsigned long long*>(static_cast<std::uint8_t*>(d_temp) + layout.counter_at);
  auto* primes = reinterpret_cast<std::uint16_t*>(static_cast<std::uint8_t*>(d_temp) + layout.primes_at);
  if (per_item > 1) {
    const std::size_t prime_blocks = num_items * lz4k::prime_group_count(per_item);
    lz4_prime_kernel<<<static_cast<unsigned>(prime_blocks), lz4k::kPrimeWarps * 32, 0, stream>>>(
        d_in_ptrs, d_in_sizes, d_out_ptrs, num_items, per_item, primes);
    const Status s = launch_status();
    if (!s) return s;
  }
  if (segments > 0) {
    const Status s = max_hash_log == lz4k::kSmallHashLog
                         ? launch_find<lz4k::kSmallHashLog>(d_in_ptrs, d_in_sizes, d_out_ptrs, num_items, per_item,
                                                            primes, records, summaries, next, stream)
                         : launch_find<lz4k::kLargeHashLog>(d_in_ptrs, d_in_sizes, d_out_ptrs, num_items, per_item,
                                                            primes, records, summaries, next, stream);
    if (!s) return s;
  }
  const std::size_t emit_blocks = (emit_warps + kEmitWarps - 1) / kEmitWarps;
  lz4_emit_kernel<<<static_cast<unsigned>(emit_blocks), kEmitWarps * 32, 0, stream>>>(
      d_in_ptrs, d_in_sizes, num_items, d_out_ptrs, d_out_capacities, d_out_sizes, d_statuses, per_item, max_hash_log,
      records, summaries);
  return launch_status();
}

Status lz4_decompress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_output_size,
                            std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                            const std::size_t* d_out_capacities, std::size_t* d_out_sizes, ItemStatus* d_statuses,
                            Stream stream) {
  (void)d_temp;
  (void)temp_bytes;
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_capacities || !d_out_sizes) {
    return {StatusCode::invalid_argument, "null device array"};
  }
  if (num_items > kMaxBlocks) return {StatusCode::invalid_argument, "too many items"};
  const bool gather = decode_by_gather(max_output_size, num_items);
  if (max_output_size <= kDecodeLanesMax && !gather) {
    const std::size_t blocks = (num_items + kLanesPerBlock - 1) / kLanesPerBlock;
    const auto launch = [&](auto kernel, std::size_t per_warp) {
      kernel<<<static_cast<unsigned>(blocks), kLanesPerBlock * 32, kLanesPerBlock * per_warp, stream>>>(
          d_in_ptrs, d_in_sizes, num_items, d_out_ptrs, d_out_capacities, d_out_sizes, d_statuses);
    };
    // Up to 4 KiB and 8 KiB, the lane decoder stages each block's output in
    // shared memory and sizes its lanes' copies (decode_block_lanes_staged):
    // there the warps issue nearly all they can, so fewer instructions and
    // faster match reads pay. Measured on silesia7 (H100, GB/s, in place
    // against staged): 4K 148.9 against 176.0, 8K 110.0 against 120.4; at 16K
    // (16 KiB of shared memory a warp, 12 warps a multiprocessor) 75.1
    // against 69.1, so 16K decodes in place.
    constexpr std::uint32_t k4 = lz4k::kStageBytes;
    constexpr std::uint32_t k8 = 2 * lz4k::kStageBytes;
    if (max_output_size <= k4) {
      launch(lz4_decode_lanes_4k_kernel, lz4k::kLaneStageBytes<k4>);
    } else if (max_output_size <= k8) {
      launch(lz4_decode_lanes_kernel<k8>, lz4k::kLaneStageBytes<k8>);
    } else {
      launch(lz4_decode_lanes_kernel<0>, 0);
    }
  } else if (gather) {
    const cudaError_t attribute = gather_attribute();
    if (attribute != cudaSuccess) return {StatusCode::device_error, cudaGetErrorString(attribute)};
    lz4_decode_gather_kernel<<<static_cast<unsigned>(num_items), lz4k::kGatherThreads, sizeof(lz4k::GatherShared),
                               stream>>>(d_in_ptrs, d_in_sizes, num_items, d_out_ptrs, d_out_capacities, d_out_sizes,
                                         d_statuses);
  } else if (max_output_size > kDecodeGatherMax) {
    lz4_decode_window_kernel<<<static_cast<unsigned>(num_items), lz4k::kWindowWarps * 32, 0, stream>>>(
        d_in_ptrs, d_in_sizes, num_items, d_out_ptrs, d_out_capacities, d_out_sizes, d_statuses);
  } else {
    const auto launch = [&](auto kernel) {
      kernel<<<static_cast<unsigned>(num_items), lz4k::kWideWarps * 32, 0, stream>>>(
          d_in_ptrs, d_in_sizes, num_items, d_out_ptrs, d_out_capacities, d_out_sizes, d_statuses);
    };
    const WideFit fit = wide_fit();
    if (num_items <= fit.roomy) {
      launch(lz4_decode_wide_kernel_bounded<kWideRoomy>);
    } else if (num_items <= fit.own || !fit.known) {
      launch(lz4_decode_wide_kernel);
    } else {
      launch(lz4_decode_wide_kernel_bounded<kWideDense>);
    }
  }
  return launch_status();
}

}  // namespace tandem::gpu
