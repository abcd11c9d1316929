// The batched lzr calls of tandem/lzr.hpp on the device: every step on the
// caller's stream, one after another, with no host round trip (but for the
// rANS batches, which run at once on side streams that the caller's stream
// then waits for; fan_out). The warp bodies are gpu/lzr_body.hpp's and the LZ4 encoder's (prime, find), which
// the CPU codec runs through the emulation; rANS is gpu/rans_gpu.hpp's.
//
// Compression, for B-byte blocks (each item cut into blocks, every item
// given ceil(max_item_size / B) block slots; slots past an item's end are
// empty):
//   prime      lz4k::prime_group, a thread block per group of 16 segments;
//              the first group's block sets its slot up (its streams'
//              buffers; a setup kernel does this for blocks of one segment)
//   find       a warp per unit, taken from a counter: first each segment's
//              lz4k::find_segment and count_segment, then each segment's
//              scatter_segment (once its block is found: the warps left
//              without segments scatter while the last ones are found)
//   rANS       rans_compress_async on the literal streams and, beside it,
//              on the short streams in kShortParts batches, each batch on a
//              stream of its own
//   plan       a warp per item: raw or coded per stream, block sizes, a
//              prefix sum over its blocks, the frame's size; the header and
//              directory when it fits
//   copy       a warp per block: its header and streams in place
// Decompression:
//   frame      a warp per item: the header, the directory and its sums
//   blocks     a thread a block slot: the block's header, its coded streams
//              handed to the rANS decoder
//   rANS       rans_decompress_async on the literal streams (on a side
//              stream) beside the others
//   rebuild    a warp per block: stream checks, then reconstruct_block
//   finish     a warp per item: the first failing block's error, the sizes
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "format/rans_format.hpp"
#include "gpu/gpu_memory.cuh"
#include "gpu/lzr_body.hpp"
#include "gpu/rans_gpu.hpp"
#include "tandem/lzr.hpp"

namespace tandem::gpu {

namespace {

using lzr::Error;
namespace body = lzrk;

constexpr int kWarpThreads = 32;
constexpr int kItemWarps = 4;  // warps per thread block of the warp-per-item and warp-per-block kernels
constexpr int kItemThreads = kItemWarps * kWarpThreads;
// The find kernel's thread blocks: kFindWarps warps, each with its 8 KiB
// table in dynamic shared memory. The warps a multiprocessor keeps are
// limited by the tables: 14 a block (112 KiB, plus the 1 KiB the device
// keeps for each block) lets two blocks fill the 228 KiB of an H100's or
// H200's multiprocessor, 28 warps, where 3 a block kept 27. On the H200,
// silesia7 in 128 KiB blocks, three rounds (us a call, with lzr's early
// loads): segments from the counter with 3 warps a block 1805 / 1801 /
// 1798, 7 warps 1691 / 1689 / 1684, 14 warps 1678 / 1677 / 1673, 28 warps
// 1678 / 1670 / 1663 (one block an SM, 225 KiB: more than some devices
// allow a block); before, without the early loads, a warp a segment in a
// grid of 3-warp blocks, 1787 / 1779 / 1772. Fewer warps leave more of the
// multiprocessor's memory to its L1 cache, but that pays less than the
// warps do: later, 10 warps a block (20 an SM) 1678 / 1666 / 1668, 12 (24)
// 1598 / 1580 / 1591, 13 (26) 1626 / 1608 / 1622, 14 (28) 1542 / 1519 /
// 1532, 28 (28) 1517 / 1536 / 1528.
constexpr int kFindWarps = 14;
constexpr std::size_t kFindShared = kFindWarps * body::kTableBytes;
constexpr std::size_t kAlign = 256;
constexpr std::uint32_t kShort = lzr::kStreams - 1;  // the streams after the literals
constexpr std::size_t kMaxGrid = 0x7fffffff;

__device__ __forceinline__ std::size_t warp_index() {
  return (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpThreads;
}
__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & 31; }

std::size_t blocks_for(std::size_t threads, int per_block) {
  return (threads + static_cast<std::size_t>(per_block) - 1) / static_cast<std::size_t>(per_block);
}

// The short streams' rANS batch in this many parts, each a batch of its
// own on its own stream (beside the literals' on another). On the H200,
// silesia7 in 128 KiB blocks, four rounds (us a call): 1 part 1538 / 1539
// / 1546 / 1543, 2 parts 1527 / 1520 / 1539 / 1527, 3 parts 1540 / 1542 /
// 1548 / 1544, 4 parts 1514 / 1513 / 1531 / 1521. Later (with the scatter
// in the find kernel), four rounds: 3 parts 1468 / 1470 / 1462 / 1464,
// 4 parts 1470 / 1465 / 1462 / 1460.
constexpr std::size_t kShortParts = 4;
// The literal streams' batch in this many parts, the same way. On the
// H200, silesia7 in 128 KiB blocks (us a call, with the short streams in
// four parts): 1 part 1492 / 1468 / 1483, 2 parts 1490 / 1485 / 1485.
constexpr std::size_t kLitParts = 1;
constexpr int kSideStreams = static_cast<int>(kShortParts + kLitParts) - 1;  // every part but one

// Side stream `index` of the current device's, for work beside a caller's
// stream, made on first use and never destroyed (the runtime may be gone at
// exit). Calls on several streams share them: what each puts there is
// ordered by its own events (stream_waits_for), so sharing only queues them.
Status side_stream(int index, cudaStream_t* out) {
  constexpr int kDevices = 64;
  static std::mutex mutex;
  static cudaStream_t streams[kDevices][kSideStreams] = {};
  int device = 0;
  TANDEM_CUDA_CHECK(cudaGetDevice(&device), "cudaGetDevice");
  if (device < 0 || device >= kDevices) return {StatusCode::device_error, "device number out of range"};
  const std::lock_guard<std::mutex> lock(mutex);
  cudaStream_t& stream = streams[device][index];
  if (!stream) TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate (lzr)");
  *out = stream;
  return {};
}

// Runs work(0, s), work(1, side 0), ..., work(n - 1, side n - 2) at once
// (n - 1 <= kSideStreams): each side stream starts after what s holds so
// far, and s goes on after all of them (whatever they did). Once a work
// fails, the rest do not run.
template <class Work>
Status fan_out(cudaStream_t s, int n, Work&& work) {
  cudaStream_t on[kSideStreams + 1] = {s};
  for (int i = 1; i < n; ++i) {
    if (Status st = side_stream(i - 1, &on[i]); !st) return st;
    if (Status st = stream_waits_for(on[i], s, "lzr side stream"); !st) return st;
  }
  Status done;
  for (int i = n - 1; i >= 0 && done; --i) done = work(i, on[i]);
  for (int i = 1; i < n; ++i) {
    if (Status st = stream_waits_for(s, on[i], "lzr side stream"); !st) return st;
  }
  return done;
}

// ------------------------------------------------------------ compress ----

struct CompressLayout {
  std::uint32_t block_log = 0;
  std::uint32_t block_size = 0;
  std::uint32_t segs = 0;         // segments a block
  std::uint32_t short_cap = 0;    // each short stream's capacity
  std::size_t per_item = 0;       // block slots an item
  std::size_t blocks = 0;         // block slots
  std::size_t lit_out_cap = 0, short_out_cap = 0;  // rANS output room per stream
  std::size_t records = 0, sums = 0, counts = 0, primes = 0, streams = 0, lengths = 0, ptrs = 0, sizes = 0,
              rans_out = 0, rans_sizes = 0, rans_errors = 0, offsets = 0, item_ok = 0, found = 0, next_segment = 0, lit_temp = 0,
              short_temp = 0;
  // Each rANS batch's own, as they run at once (each part's: kLitParts
  // of them from lit_temp, kShortParts from short_temp).
  std::size_t lit_temp_bytes = 0, short_temp_bytes = 0;
  std::size_t total = 0;
};

// Part p of a batch of n short streams (the first parts take the rest).
struct Part {
  std::size_t first, count;
};
template <std::size_t kParts>
Part part_of(std::size_t n, std::size_t p) {
  const std::size_t base = n / kParts, rest = n % kParts;
  return {p * base + (p < rest ? p : rest), base + (p < rest ? 1 : 0)};
}

std::size_t block_stream_bytes(const CompressLayout& l) { return l.block_size + std::size_t{kShort} * l.short_cap; }

Status compress_layout(std::size_t n, std::size_t max_item_size, const lzr::Params& p, CompressLayout* l) {
  if (!lzr::params_valid(p)) return {StatusCode::invalid_argument, "lzr block size out of range"};
  if (max_item_size > kMaxItemSize) return {StatusCode::invalid_argument, "max_item_size over kMaxItemSize"};
  l->block_log = p.block_log;
  l->block_size = 1u << p.block_log;
  l->segs = l->block_size / body::kSegmentSize;
  l->short_cap = lzr::short_stream_capacity(l->block_size);
  l->per_item = static_cast<std::size_t>(lzr::block_count(max_item_size, p.block_log));
  l->blocks = n * l->per_item;
  if (n != 0 && l->per_item != 0 && l->blocks / l->per_item != n) return {StatusCode::invalid_argument, "too many items"};
  const rans::Params rp{};
  l->lit_out_cap = rans::max_encoded_size(l->block_size, rp);
  l->short_out_cap = rans::max_encoded_size(l->short_cap, rp);
  if (l->blocks > 0) {
    if (Status s = rans_compress_temp_size(part_of<kLitParts>(l->blocks, 0).count, l->block_size, rp,
                                           &l->lit_temp_bytes);
        !s) {
      return s;
    }
    if (Status s = rans_compress_temp_size(part_of<kShortParts>(l->blocks * kShort, 0).count, l->short_cap, rp,
                                           &l->short_temp_bytes);
        !s) {
      return s;
    }
    // each part's aligned
    l->lit_temp_bytes = (l->lit_temp_bytes + kAlign - 1) / kAlign * kAlign;
    l->short_temp_bytes = (l->short_temp_bytes + kAlign - 1) / kAlign * kAlign;
  }
  const std::size_t seg_slots = l->blocks * l->segs;
  TempCarver carve(kAlign);
  l->records = carve.take(seg_slots * body::kMaxSegmentRecords * sizeof(lz4k::SeqRecord));
  l->sums = carve.take(seg_slots * sizeof(lz4k::SegmentSummary));
  l->counts = carve.take(seg_slots * sizeof(body::SegmentCounts));
  l->primes = carve.take(seg_slots * body::kPrimeEntries * sizeof(std::uint16_t));
  l->streams = carve.take(l->blocks * block_stream_bytes(*l));
  l->lengths = carve.take(l->blocks * lzr::kStreams * sizeof(std::uint32_t));
  l->ptrs = carve.take(l->blocks * lzr::kStreams * 2 * sizeof(void*));  // inputs, then outputs, of the rANS items
  l->sizes = carve.take(l->blocks * lzr::kStreams * sizeof(std::size_t));
  l->rans_out = carve.take(l->blocks * (l->lit_out_cap + kShort * l->short_out_cap));
  l->rans_sizes = carve.take(l->blocks * lzr::kStreams * sizeof(std::size_t));
  l->rans_errors = carve.take(l->blocks * lzr::kStreams * sizeof(rans::Error));
  l->offsets = carve.take(l->blocks * sizeof(std::uint64_t));
  l->item_ok = carve.take(n * sizeof(std::uint32_t));
  l->found = carve.take(l->blocks * sizeof(std::uint32_t));
  l->next_segment = carve.take(sizeof(unsigned long long));
  l->lit_temp = carve.take(kLitParts * l->lit_temp_bytes);
  l->short_temp = carve.take(kShortParts * l->short_temp_bytes);
  l->total = carve.size();
  return {};
}

struct CompressArgs {
  const void* const* in_ptrs;
  const std::size_t* in_sizes;
  void* const* out_ptrs;
  const std::size_t* out_caps;  // may be null
  std::size_t* out_sizes;
  Error* errors;                // may be null
  std::size_t n;
  std::size_t max_item_size;
  std::uint32_t block_log, block_size, segs, short_cap;
  std::size_t per_item, blocks;
  std::size_t lit_out_cap, short_out_cap;
  lz4k::SeqRecord* records;
  lz4k::SegmentSummary* sums;
  body::SegmentCounts* counts;
  std::uint16_t* primes;
  std::uint8_t* streams;
  std::uint32_t* lengths;        // [blocks][kStreams]
  const void** lit_in;           // [blocks]: the literal streams, rANS item i = block i
  const void** short_in;         // [blocks * kShort]: item i * kShort + k - 1 = block i's stream k
  void** lit_out;                // [blocks]
  void** short_out;              // [blocks * kShort]
  std::size_t* lit_sizes;        // [blocks]
  std::size_t* short_sizes;      // [blocks * kShort]
  std::uint8_t* rans_out;
  std::size_t* lit_coded;        // [blocks]
  std::size_t* short_coded;      // [blocks * kShort]
  rans::Error* lit_errors;
  rans::Error* short_errors;
  std::uint64_t* offsets;        // [blocks]: where each block goes in its frame
  std::uint32_t* item_ok;        // [n]: 1 when the item's frame is written
  std::uint32_t* found;          // [blocks]: the block's segments the find kernel is done with (zeroed by setup)
  unsigned long long* next_segment;  // the find kernel's counter (zeroed by setup_slot)
};

__device__ __forceinline__ bool item_valid(const CompressArgs& a, std::size_t item) {
  const std::size_t size = a.in_sizes[item];
  return size <= a.max_item_size && (size == 0 || a.in_ptrs[item]) && a.out_ptrs[item];
}

// The length of block slot b (0 for a slot past its item's end or of an invalid item).
__device__ __forceinline__ std::uint32_t slot_length(const CompressArgs& a, std::size_t b) {
  const std::size_t item = b / a.per_item;
  if (!item_valid(a, item)) return 0;
  const std::uint64_t start = static_cast<std::uint64_t>(b % a.per_item) << a.block_log;
  const std::uint64_t size = a.in_sizes[item];
  if (start >= size) return 0;
  return static_cast<std::uint32_t>(size - start < a.block_size ? size - start : a.block_size);
}

__device__ __forceinline__ const std::uint8_t* slot_input(const CompressArgs& a, std::size_t b) {
  return static_cast<const std::uint8_t*>(a.in_ptrs[b / a.per_item]) + ((b % a.per_item) << a.block_log);
}

__device__ __forceinline__ std::uint8_t* slot_stream(const CompressArgs& a, std::size_t b, std::uint32_t k) {
  std::uint8_t* base = a.streams + b * (a.block_size + std::size_t{kShort} * a.short_cap);
  return k == lzr::kLiterals ? base : base + a.block_size + std::size_t{k - 1} * a.short_cap;
}

// Block slot b's facts for the later steps: its find count cleared, its
// streams' places; slot 0 clears the find kernel's counter too.
__device__ __forceinline__ void setup_slot(const CompressArgs& a, std::size_t b) {
  if (b == 0) *a.next_segment = 0;
  a.found[b] = 0;
  a.lit_in[b] = slot_stream(a, b, lzr::kLiterals);
  a.lit_out[b] = a.rans_out + b * (a.lit_out_cap + kShort * a.short_out_cap);
  a.lit_sizes[b] = 0;
  for (std::uint32_t k = 1; k < lzr::kStreams; ++k) {
    const std::size_t i = b * kShort + k - 1;
    a.short_in[i] = slot_stream(a, b, k);
    a.short_out[i] = a.rans_out + b * (a.lit_out_cap + kShort * a.short_out_cap) + a.lit_out_cap +
                     (k - 1) * a.short_out_cap;
    a.short_sizes[i] = 0;
  }
}

// A thread a block slot: setup_slot (for batches whose blocks are of one
// segment; the prime kernel does it otherwise).
__global__ void __launch_bounds__(256) lzr_setup_kernel(CompressArgs a) {
  const std::size_t b = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < a.blocks) setup_slot(a, b);
}

// Groups of LzrFind::kPrimeGroup segments per block slot.
__global__ void __launch_bounds__(body::LzrFind::kPrimeWarps * 32) lzr_prime_kernel(CompressArgs a, std::uint32_t groups) {
  __shared__ std::uint32_t running[body::kPrimeEntries];
  const std::size_t b = blockIdx.x / groups;
  const std::uint32_t group = blockIdx.x % groups;
  // The slot's setup, in place of a kernel of its own: nothing reads what
  // it writes before the find kernel.
  if (group == 0 && threadIdx.x == 0) setup_slot(a, b);
  const std::uint32_t n = slot_length(a, b);
  const std::uint32_t segments = static_cast<std::uint32_t>(lz4k::segment_count(n));
  if (segments <= 1 || group >= lz4k::prime_group_count<body::LzrFind>(segments)) return;  // the same for the whole block
  lz4k::prime_group<body::LzrFind>(simt::Block<body::LzrFind::kPrimeWarps>{}, slot_input(a, b), n, group, running,
                                   a.primes + b * a.segs * body::kPrimeEntries);
}

// Step 3 for segment slot `slot`, by one warp, once every segment of its
// block has been found: the segment's share of the block's streams, and the
// block's stream lengths from its last segment.
__device__ __forceinline__ void scatter_slot(const CompressArgs& a, std::size_t slot) {
  const std::size_t b = slot / a.segs;
  const std::uint32_t s = static_cast<std::uint32_t>(slot % a.segs);
  const std::uint32_t n = slot_length(a, b);
  const std::uint32_t segments = static_cast<std::uint32_t>(lz4k::segment_count(n));
  if (s >= segments) return;
  body::StreamOut out;
  for (std::uint32_t k = 0; k < lzr::kStreams; ++k) out.at[k] = slot_stream(a, b, k);
  const std::size_t first = b * a.segs;
  std::uint32_t* lengths = a.lengths + b * lzr::kStreams;
  body::scatter_segment(simt::Warp{}, slot_input(a, b), n, a.records + first * body::kMaxSegmentRecords,
                        a.sums + first, a.counts + first, segments, s, out, lengths);
  if (s + 1 == segments) {
    const int l = lane_id();
    if (l == 0) a.lit_sizes[b] = lengths[0];
    if (l >= 1 && l < static_cast<int>(lzr::kStreams)) a.short_sizes[b * kShort + l - 1] = lengths[l];
  }
}

// As many warps as the device keeps resident; each takes the next unit from
// the counter when it is done with one (as the LZ4 encoder's find kernel),
// so that no thread block holds its shared memory for one slow warp. The
// units are every segment slot's find step, in block order, then every
// segment slot's scatter step: the warps that run out of segments to find
// scatter the blocks found long before, while the last segments are still
// being found, instead of leaving their multiprocessors idle until the
// kernel ends. A scatter unit waits until its block's segments are all
// found (a.found, counted by the find units); every find unit was taken
// before any scatter unit, by a warp that waits on nothing, so the wait
// ends.
//
// A warp finds some 2.7 segments, each taking 320 us on average (500 at
// most; H200, silesia7 in 128 KiB blocks): the last segments are taken 660
// us into the kernel and found 410 us later, and the scatter fills that
// time. Three rounds (us a call): a scatter kernel of its own after this
// one 1522 / 1531 / 1510, the scatter in this kernel 1474 / 1456 / 1462.
// (Taking the segments longest first, in an order measured in an earlier
// call, moved the end of the kernel by 8 us: not worth predicting.)
__global__ void __launch_bounds__(kFindWarps * 32, 2) lzr_find_kernel(CompressArgs a) {
  // 16-byte aligned: the find step clears its table 16 bytes at a time.
  extern __shared__ uint4 find_tables[];
  auto* table = reinterpret_cast<std::uint16_t*>(reinterpret_cast<std::uint8_t*>(find_tables) +
                                                 threadIdx.x / 32 * body::kTableBytes);
  const std::size_t slots = a.blocks * a.segs;
  const simt::Warp w;
  const int lane = lane_id();
  for (;;) {
    unsigned long long taken = 0;
    if (lane == 0) taken = atomicAdd(a.next_segment, 1ull);
    const std::size_t unit = __shfl_sync(0xffffffffu, taken, 0);
    const bool scatter = unit >= slots;
    if (unit >= 2 * slots) return;
    const std::size_t slot = scatter ? unit - slots : unit;
    const std::size_t b = slot / a.segs;
    const std::uint32_t s = static_cast<std::uint32_t>(slot % a.segs);
    const std::uint32_t n = slot_length(a, b);
    const std::uint32_t segments = static_cast<std::uint32_t>(lz4k::segment_count(n));
    if (s >= segments) continue;
    if (scatter) {
      if (lane == 0) {
        while (atomicAdd(a.found + b, 0u) < segments) __nanosleep(256);
        __threadfence();  // the block's records, summaries and counts are seen after the count
      }
      __syncwarp();
      scatter_slot(a, slot);
      continue;
    }
    lz4k::SeqRecord* recs = a.records + slot * body::kMaxSegmentRecords;
    lz4k::find_segment<body::LzrFind>(w, slot_input(a, b), n, s, a.primes + b * a.segs * body::kPrimeEntries, table,
                                      recs, a.sums + slot);
    body::count_segment(w, recs, a.sums[slot].count, a.counts + slot);
    __syncwarp();
    if (lane == 0) {
      __threadfence();  // the segment's records, summary and counts are seen before the count
      atomicAdd(a.found + b, 1u);
    }
  }
}

// Stream k of block slot b: its raw bytes, its rANS coding, and which is stored.
struct StreamChoice {
  const std::uint8_t* src;
  std::uint32_t stored;
  bool coded;
};
__device__ __forceinline__ StreamChoice choose(const CompressArgs& a, std::size_t b, std::uint32_t k) {
  const std::size_t i = b * kShort + k - 1;
  const std::uint32_t raw = static_cast<std::uint32_t>(k == 0 ? a.lit_sizes[b] : a.short_sizes[i]);
  const std::size_t coded = k == 0 ? a.lit_coded[b] : a.short_coded[i];
  const bool ok = (k == 0 ? a.lit_errors[b] : a.short_errors[i]) == rans::Error::ok;
  StreamChoice c;
  c.coded = body::store_coded(raw, coded, ok);
  c.stored = c.coded ? static_cast<std::uint32_t>(coded) : raw;
  c.src = c.coded ? static_cast<const std::uint8_t*>(k == 0 ? a.lit_out[b] : a.short_out[i]) : slot_stream(a, b, k);
  return c;
}

// A warp per item: block sizes, their prefix sum, the frame's size; the
// header and directory when the frame fits.
__global__ void __launch_bounds__(kItemThreads) lzr_plan_kernel(CompressArgs a) {
  const std::size_t item = warp_index();
  if (item >= a.n) return;
  const simt::Warp w;
  const int lane = lane_id();
  const bool valid = item_valid(a, item);
  const std::uint64_t size = valid ? a.in_sizes[item] : 0;
  const std::uint32_t count = static_cast<std::uint32_t>(lzr::block_count(size, a.block_log));
  std::uint64_t at = lzr::kFrameHeaderBytes + std::uint64_t{count} * lzr::kDirEntryBytes;
  for (std::uint32_t first = 0; first < count; first += 32) {
    const std::uint32_t i = first + static_cast<std::uint32_t>(lane);
    std::uint64_t bytes = 0;
    if (i < count) {
      bytes = lzr::kBlockHeaderBytes;
      for (std::uint32_t k = 0; k < lzr::kStreams; ++k) bytes += choose(a, item * a.per_item + i, k).stored;
    }
    const simt::Lanes<std::uint64_t> mine = w.map([&](int) { return bytes; });
    const simt::Lanes<std::uint64_t> before = body::exclusive_sum64(w, mine);
    if (i < count) a.offsets[item * a.per_item + i] = at + before[lane];
    at += body::sum64(w, mine);
  }
  const std::uint64_t cap_given = a.out_caps ? a.out_caps[item] : lzr::frame_bound(size, a.block_log);
  const bool fits = valid && at <= cap_given;
  auto* out = static_cast<std::uint8_t*>(valid ? a.out_ptrs[item] : nullptr);
  if (fits) {
    if (lane == 0) {
      body::FrameHeader h;
      h.block_log = a.block_log;
      h.length = size;
      h.block_count = count;
      body::write_frame_header(out, h);
    }
    for (std::uint32_t i = static_cast<std::uint32_t>(lane); i < count; i += 32) {
      const std::size_t b = item * a.per_item + i;
      const std::uint64_t next = i + 1 < count ? a.offsets[b + 1] : at;
      body::store_u32le(out + lzr::kFrameHeaderBytes + lzr::kDirEntryBytes * i,
                        static_cast<std::uint32_t>(next - a.offsets[b]));
    }
  }
  if (lane == 0) {
    a.item_ok[item] = fits ? 1u : 0u;
    a.out_sizes[item] = fits ? at : 0;
    if (a.errors) a.errors[item] = !valid ? Error::invalid_item : (fits ? Error::ok : Error::output_too_small);
  }
}

// A thread block per block slot: the block's header and streams at its
// place, each stream copied by the whole block, 8 words a thread in flight
// (a warp a slot, a word at a time, left the device waiting on memory: a
// frame's few hundred slots are too few warps to hide it).
constexpr int kCopyThreads = 256;
__global__ void __launch_bounds__(kCopyThreads) lzr_copy_kernel(CompressArgs a) {
  const std::size_t b = blockIdx.x;
  if (b >= a.blocks) return;
  const std::size_t item = b / a.per_item;
  const std::uint32_t n = slot_length(a, b);
  if (n == 0 || !a.item_ok[item]) return;
  std::uint8_t* out = static_cast<std::uint8_t*>(a.out_ptrs[item]) + a.offsets[b];
  // Where the streams may lie: the rANS outputs or the raw streams of all slots.
  const std::uint8_t* coded_hi = a.rans_out + a.blocks * (a.lit_out_cap + kShort * a.short_out_cap);
  const std::uint8_t* raw_hi = a.streams + a.blocks * (a.block_size + std::size_t{kShort} * a.short_cap);
  std::uint32_t stored[lzr::kStreams];
  bool coded[lzr::kStreams];
  std::uint8_t* p = out + lzr::kBlockHeaderBytes;
  for (std::uint32_t k = 0; k < lzr::kStreams; ++k) {
    const StreamChoice c = choose(a, b, k);
    stored[k] = c.stored;
    coded[k] = c.coded;
    simt::copy_words_share<8>(p, c.src, c.stored, c.coded ? a.rans_out : a.streams, c.coded ? coded_hi : raw_hi,
                              threadIdx.x, kCopyThreads);
    p += c.stored;
  }
  if (threadIdx.x == 0) body::write_block_header(out, a.lengths[b * lzr::kStreams + lzr::kMatchLengths], stored, coded);
}

// ---------------------------------------------------------- decompress ----

struct ItemInfo {
  std::uint64_t length;
  std::uint32_t block_log;
  std::uint32_t block_count;
  std::int32_t error;
};

struct BlockInfo {
  std::uint64_t at;   // where the block starts in its frame
  std::uint32_t size;
  std::uint32_t n;
  std::int32_t error;
  body::BlockLayout layout;
};

struct DecompressLayout {
  std::size_t per_item = 0, blocks = 0;
  std::size_t slot_bytes = 0;  // decoded-stream room per block slot
  std::size_t items = 0, infos = 0, ptrs = 0, caps = 0, sizes = 0, decoded_sizes = 0, errors = 0, decoded = 0,
              lit_temp = 0, short_temp = 0, total = 0;
  std::size_t lit_temp_bytes = 0, short_temp_bytes = 0;  // each rANS batch's own: the two run at once
};

constexpr std::uint32_t kSlotBlock = 1u << lzr::kMinBlockLog;
constexpr std::uint32_t kMaxBlock = 1u << lzr::kMaxBlockLog;

Status decompress_layout(std::size_t n, std::size_t max_output_size, DecompressLayout* l) {
  if (max_output_size > kMaxItemSize) return {StatusCode::invalid_argument, "max_output_size over kMaxItemSize"};
  l->per_item = static_cast<std::size_t>(lzr::block_count(max_output_size, lzr::kMinBlockLog));
  l->blocks = n * l->per_item;
  l->slot_bytes = kSlotBlock + std::size_t{kShort} * lzr::short_stream_capacity(kSlotBlock);
  const std::size_t lit_max = max_output_size < kMaxBlock ? max_output_size : kMaxBlock;
  if (l->blocks > 0) {
    if (Status s = rans_decompress_temp_size(l->blocks, lit_max, &l->lit_temp_bytes); !s) return s;
    if (Status s = rans_decompress_temp_size(l->blocks * kShort, lzr::short_stream_capacity(static_cast<std::uint32_t>(lit_max)),
                                             &l->short_temp_bytes);
        !s) {
      return s;
    }
  }
  TempCarver carve(kAlign);
  l->items = carve.take(n * sizeof(ItemInfo));
  l->infos = carve.take(l->blocks * sizeof(BlockInfo));
  l->ptrs = carve.take(l->blocks * lzr::kStreams * 2 * sizeof(void*));
  l->caps = carve.take(l->blocks * lzr::kStreams * sizeof(std::size_t));
  l->sizes = carve.take(l->blocks * lzr::kStreams * sizeof(std::size_t));
  l->decoded_sizes = carve.take(l->blocks * lzr::kStreams * sizeof(std::size_t));
  l->errors = carve.take(l->blocks * lzr::kStreams * sizeof(rans::Error));
  l->decoded = carve.take(l->blocks * l->slot_bytes);
  l->lit_temp = carve.take(l->lit_temp_bytes);
  l->short_temp = carve.take(l->short_temp_bytes);
  l->total = carve.size();
  return {};
}

struct DecompressArgs {
  const void* const* in_ptrs;
  const std::size_t* in_sizes;
  void* const* out_ptrs;
  const std::size_t* out_caps;
  std::size_t* out_sizes;
  Error* errors;  // may be null
  std::size_t n, max_output_size, per_item, blocks, slot_bytes;
  ItemInfo* items;
  BlockInfo* infos;
  const void** in;       // [blocks * kStreams]: the rANS items, literals first ([blocks]), then the others
  void** out;            // the same order
  std::size_t* caps;
  std::size_t* sizes;
  std::size_t* decoded_sizes;
  rans::Error* rans_errors;
  std::uint8_t* decoded;
};

// rANS item of stream k of block slot b: the literal streams first, then the others.
__device__ __forceinline__ std::size_t rans_item(const DecompressArgs& a, std::size_t b, std::uint32_t k) {
  return k == 0 ? b : a.blocks + b * kShort + k - 1;
}

__global__ void __launch_bounds__(kItemThreads) lzr_frame_kernel(DecompressArgs a) {
  const std::size_t item = warp_index();
  if (item >= a.n) return;
  const simt::Warp w;
  const int lane = lane_id();
  const auto* in = static_cast<const std::uint8_t*>(a.in_ptrs[item]);
  const std::size_t size = a.in_sizes[item];
  const std::size_t cap = a.out_caps[item] < a.max_output_size ? a.out_caps[item] : a.max_output_size;
  body::FrameHeader h;
  Error e = Error::ok;
  if ((size > 0 && !in) || (cap > 0 && !a.out_ptrs[item])) {
    e = Error::invalid_item;
  } else {
    e = body::parse_frame_header(in, size, &h);
    if (e == Error::ok && h.length > cap) e = Error::output_too_small;
  }
  if (e == Error::ok) {
    const std::uint8_t* dir = in + lzr::kFrameHeaderBytes;
    const std::uint64_t start = lzr::kFrameHeaderBytes + std::uint64_t{h.block_count} * lzr::kDirEntryBytes;
    std::uint64_t at = start;
    for (std::uint32_t first = 0; first < h.block_count; first += 32) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(lane);
      const std::uint64_t bytes = i < h.block_count ? body::load_u32le(dir + lzr::kDirEntryBytes * i) : 0;
      const simt::Lanes<std::uint64_t> mine = w.map([&](int) { return bytes; });
      const simt::Lanes<std::uint64_t> before = body::exclusive_sum64(w, mine);
      if (i < h.block_count) {
        BlockInfo& info = a.infos[item * a.per_item + i];
        info.at = at + before[lane];
        info.size = static_cast<std::uint32_t>(bytes);
        info.n = body::block_length(h, i);
      }
      at += body::sum64(w, mine);
    }
    if (at < size) e = Error::trailing_bytes;
    if (at > size) e = Error::truncated;
  }
  if (lane == 0) a.items[item] = ItemInfo{h.length, h.block_log, e == Error::ok ? h.block_count : 0u,
                                          static_cast<std::int32_t>(e)};
}

__global__ void __launch_bounds__(256) lzr_blocks_kernel(DecompressArgs a) {
  const std::size_t b = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= a.blocks) return;
  const std::size_t item = b / a.per_item;
  const std::uint32_t i = static_cast<std::uint32_t>(b % a.per_item);
  const ItemInfo it = a.items[item];
  for (std::uint32_t k = 0; k < lzr::kStreams; ++k) {
    const std::size_t r = rans_item(a, b, k);
    a.in[r] = nullptr;
    a.sizes[r] = 0;
    a.out[r] = nullptr;
    a.caps[r] = 0;
  }
  if (it.error != 0 || i >= it.block_count) return;
  BlockInfo& info = a.infos[b];
  const auto* block = static_cast<const std::uint8_t*>(a.in_ptrs[item]) + info.at;
  info.error = static_cast<std::int32_t>(body::parse_block(block, info.size, info.n, &info.layout));
  if (info.error != 0) return;
  // Block i of blocks of 2^block_log bytes: its decoded streams from slot
  // i * 2^(block_log - kMinBlockLog) of its item's slots on.
  std::uint8_t* room = a.decoded + (item * a.per_item + (std::size_t{i} << (it.block_log - lzr::kMinBlockLog))) *
                                       a.slot_bytes;
  const std::uint32_t short_cap = lzr::short_stream_capacity(info.n);
  for (std::uint32_t k = 0; k < lzr::kStreams; ++k) {
    if (!info.layout.coded[k]) continue;
    const std::size_t r = rans_item(a, b, k);
    bool exact = false;
    a.in[r] = block + info.layout.at[k];
    a.sizes[r] = info.layout.stored[k];
    a.out[r] = k == 0 ? room : room + info.n + std::size_t{k - 1} * short_cap;
    a.caps[r] = body::stream_capacity(k, info.layout.seqs, info.n, &exact);
  }
}

__global__ void __launch_bounds__(kItemThreads) lzr_rebuild_kernel(DecompressArgs a) {
  __shared__ body::RebuildStage stages[kItemWarps];
  const std::size_t b = warp_index();
  if (b >= a.blocks) return;
  const std::size_t item = b / a.per_item;
  const std::uint32_t i = static_cast<std::uint32_t>(b % a.per_item);
  const ItemInfo it = a.items[item];
  if (it.error != 0 || i >= it.block_count) return;
  BlockInfo& info = a.infos[b];
  if (info.error != 0) return;
  const auto* block = static_cast<const std::uint8_t*>(a.in_ptrs[item]) + info.at;
  body::StreamIn streams;
  Error e = Error::ok;
  for (std::uint32_t k = 0; k < lzr::kStreams && e == Error::ok; ++k) {
    const std::size_t r = rans_item(a, b, k);
    const bool coded = info.layout.coded[k];
    const std::uint64_t length = coded ? a.decoded_sizes[r] : info.layout.stored[k];
    e = body::check_stream(k, info.layout.seqs, info.n, !coded || a.rans_errors[r] == rans::Error::ok, length);
    streams.at[k] = coded ? static_cast<const std::uint8_t*>(a.out[r]) : block + info.layout.at[k];
    streams.length[k] = static_cast<std::uint32_t>(length);
  }
  if (e == Error::ok) {
    auto* out = static_cast<std::uint8_t*>(a.out_ptrs[item]) + (std::size_t{i} << it.block_log);
    e = body::reconstruct_block(simt::Warp{}, streams, info.layout.seqs, out, info.n, &stages[threadIdx.x / 32]);
  }
  if (lane_id() == 0) info.error = static_cast<std::int32_t>(e);
}

__global__ void __launch_bounds__(kItemThreads) lzr_finish_kernel(DecompressArgs a) {
  const std::size_t item = warp_index();
  if (item >= a.n) return;
  const simt::Warp w;
  const int lane = lane_id();
  const ItemInfo it = a.items[item];
  std::int32_t e = it.error;
  for (std::uint32_t first = 0; e == 0 && first < it.block_count; first += 32) {
    const std::uint32_t i = first + static_cast<std::uint32_t>(lane);
    const std::int32_t mine = i < it.block_count ? a.infos[item * a.per_item + i].error : 0;
    const std::uint32_t failing = w.ballot(w.map([&](int) { return mine != 0; }));
    if (failing) e = w.shfl(w.map([&](int) { return mine; }), simt::first_set(failing));
  }
  if (lane == 0) {
    a.out_sizes[item] = e == 0 ? static_cast<std::size_t>(it.length) : 0;
    if (a.errors) a.errors[item] = static_cast<Error>(e);
  }
}

}  // namespace

Status lzr_compress_temp_size(std::size_t num_items, std::size_t max_item_size, const lzr::Params& params,
                              std::size_t* temp_bytes) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  CompressLayout l;
  if (Status s = compress_layout(num_items, max_item_size, params, &l); !s) return s;
  *temp_bytes = l.total;
  return {};
}

Status lzr_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                          std::size_t num_items, const lzr::Params& params, void* d_temp, std::size_t temp_bytes,
                          void* const* d_out_ptrs, const std::size_t* d_out_capacities, std::size_t* d_out_sizes,
                          lzr::Error* d_errors, Stream stream) {
  CompressLayout l;
  if (Status s = compress_layout(num_items, max_item_size, params, &l); !s) return s;
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_sizes) return {StatusCode::invalid_argument, "null device array"};
  if (temp_bytes < l.total || (!d_temp && l.total)) {
    return {StatusCode::invalid_argument, "temporary storage smaller than lzr_compress_temp_size"};
  }
  if (l.blocks * l.segs / kFindWarps >= kMaxGrid || l.blocks >= kMaxGrid / 8 ||
      l.blocks * l.segs >= (std::size_t{1} << 62)) {
    return {StatusCode::invalid_argument, "too many items"};
  }
  auto* t = static_cast<std::uint8_t*>(d_temp);
  CompressArgs a{};
  a.in_ptrs = d_in_ptrs;
  a.in_sizes = d_in_sizes;
  a.out_ptrs = d_out_ptrs;
  a.out_caps = d_out_capacities;
  a.out_sizes = d_out_sizes;
  a.errors = d_errors;
  a.n = num_items;
  a.max_item_size = max_item_size;
  a.block_log = l.block_log;
  a.block_size = l.block_size;
  a.segs = l.segs;
  a.short_cap = l.short_cap;
  a.per_item = l.per_item;
  a.blocks = l.blocks;
  a.lit_out_cap = l.lit_out_cap;
  a.short_out_cap = l.short_out_cap;
  a.records = reinterpret_cast<lz4k::SeqRecord*>(t + l.records);
  a.sums = reinterpret_cast<lz4k::SegmentSummary*>(t + l.sums);
  a.counts = reinterpret_cast<body::SegmentCounts*>(t + l.counts);
  a.primes = reinterpret_cast<std::uint16_t*>(t + l.primes);
  a.streams = t + l.streams;
  a.lengths = reinterpret_cast<std::uint32_t*>(t + l.lengths);
  auto** ptrs = reinterpret_cast<void**>(t + l.ptrs);
  a.lit_in = const_cast<const void**>(ptrs);
  a.short_in = const_cast<const void**>(ptrs + l.blocks);
  a.lit_out = ptrs + l.blocks * lzr::kStreams;
  a.short_out = a.lit_out + l.blocks;
  a.lit_sizes = reinterpret_cast<std::size_t*>(t + l.sizes);
  a.short_sizes = a.lit_sizes + l.blocks;
  a.rans_out = t + l.rans_out;
  a.lit_coded = reinterpret_cast<std::size_t*>(t + l.rans_sizes);
  a.short_coded = a.lit_coded + l.blocks;
  a.lit_errors = reinterpret_cast<rans::Error*>(t + l.rans_errors);
  a.short_errors = a.lit_errors + l.blocks;
  a.offsets = reinterpret_cast<std::uint64_t*>(t + l.offsets);
  a.item_ok = reinterpret_cast<std::uint32_t*>(t + l.item_ok);
  a.found = reinterpret_cast<std::uint32_t*>(t + l.found);
  a.next_segment = reinterpret_cast<unsigned long long*>(t + l.next_segment);
  const auto s = static_cast<cudaStream_t>(stream);

  if (l.blocks > 0) {
    if (l.segs <= 1) {
      lzr_setup_kernel<<<static_cast<unsigned>(blocks_for(l.blocks, 256)), 256, 0, s>>>(a);
    } else {
      const std::uint32_t groups = lz4k::prime_group_count<body::LzrFind>(l.segs);
      lzr_prime_kernel<<<static_cast<unsigned>(l.blocks * groups), body::LzrFind::kPrimeWarps * 32, 0, s>>>(a, groups);
    }
    const std::size_t seg_slots = l.blocks * l.segs;
    if (const cudaError_t e = allow_dynamic_shared<lzr_find_kernel, kFindShared>(); e != cudaSuccess) {
      return {StatusCode::device_error, cudaGetErrorString(e)};
    }
    std::size_t find_blocks = blocks_for(seg_slots, kFindWarps);
    const std::size_t fit = resident_blocks<lzr_find_kernel, kFindWarps * 32, kFindShared>();
    if (fit > 0 && find_blocks > fit) find_blocks = fit;
    lzr_find_kernel<<<static_cast<unsigned>(find_blocks), kFindWarps * 32, kFindShared, s>>>(a);
    if (Status st = launch_status(); !st) return st;
    // The rANS batches need only the scatter's streams, not each other:
    // the literals' runs on a side stream beside the short streams' (in
    // kShortParts batches, on the caller's stream and more side streams),
    // each in its own temporary storage, their small kernels filling each
    // other's gaps. On the H200, silesia7 in 128 KiB blocks,
    // four rounds (us a call), one after the other (with prime blocks of 8
    // segments) 1641 / 1652 / 1647 / 1654, side by side (and prime blocks
    // of 16, which alone gave some 20 us) 1555 / 1545 / 1553 / 1548;
    // decompression 2314 / 2322 / 2316 / 2313 against 2260 / 2235 / 2236 /
    // 2243.
    const rans::Params rp{};
    // The rANS items of a part: [first, first + count) of the literal
    // streams' items followed by the short streams' (each array of them
    // holds the literals' blocks entries, then the short streams').
    const auto part = [&](std::size_t first, std::size_t count, std::uint32_t max_size, std::uint8_t* temp,
                          std::size_t temp_bytes, cudaStream_t on) -> Status {
      if (count == 0) return {};
      return rans_compress_async(reinterpret_cast<const void* const*>(a.lit_in + first), a.lit_sizes + first,
                                 max_size, count, rp, temp, temp_bytes, reinterpret_cast<void* const*>(a.lit_out + first),
                                 nullptr, a.lit_coded + first, a.lit_errors + first, on);
    };
    const auto batch = [&](int i, cudaStream_t on) -> Status {
      if (i >= static_cast<int>(kShortParts)) {
        const std::size_t k = static_cast<std::size_t>(i) - kShortParts;
        const Part p = part_of<kLitParts>(l.blocks, k);
        return part(p.first, p.count, l.block_size, t + l.lit_temp + k * l.lit_temp_bytes, l.lit_temp_bytes, on);
      }
      const Part p = part_of<kShortParts>(l.blocks * kShort, static_cast<std::size_t>(i));
      return part(l.blocks + p.first, p.count, l.short_cap, t + l.short_temp + i * l.short_temp_bytes,
                  l.short_temp_bytes, on);
    };
    if (Status st = fan_out(s, static_cast<int>(kShortParts + kLitParts), batch); !st) return st;
  }
  lzr_plan_kernel<<<static_cast<unsigned>(blocks_for(num_items, kItemWarps)), kItemThreads, 0, s>>>(a);
  if (l.blocks > 0) lzr_copy_kernel<<<static_cast<unsigned>(l.blocks), kCopyThreads, 0, s>>>(a);
  return launch_status();
}

Status lzr_decompress_temp_size(std::size_t num_items, std::size_t max_output_size, std::size_t* temp_bytes) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  DecompressLayout l;
  if (Status s = decompress_layout(num_items, max_output_size, &l); !s) return s;
  *temp_bytes = l.total;
  return {};
}

Status lzr_decompress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_output_size,
                            std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                            const std::size_t* d_out_capacities, std::size_t* d_out_sizes, lzr::Error* d_errors,
                            Stream stream) {
  DecompressLayout l;
  if (Status s = decompress_layout(num_items, max_output_size, &l); !s) return s;
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_capacities || !d_out_sizes) {
    return {StatusCode::invalid_argument, "null device array"};
  }
  if (temp_bytes < l.total || (!d_temp && l.total)) {
    return {StatusCode::invalid_argument, "temporary storage smaller than lzr_decompress_temp_size"};
  }
  if (l.blocks >= kMaxGrid / 8 || num_items >= kMaxGrid / 8) return {StatusCode::invalid_argument, "too many items"};
  auto* t = static_cast<std::uint8_t*>(d_temp);
  DecompressArgs a{};
  a.in_ptrs = d_in_ptrs;
  a.in_sizes = d_in_sizes;
  a.out_ptrs = d_out_ptrs;
  a.out_caps = d_out_capacities;
  a.out_sizes = d_out_sizes;
  a.errors = d_errors;
  a.n = num_items;
  a.max_output_size = max_output_size;
  a.per_item = l.per_item;
  a.blocks = l.blocks;
  a.slot_bytes = l.slot_bytes;
  a.items = reinterpret_cast<ItemInfo*>(t + l.items);
  a.infos = reinterpret_cast<BlockInfo*>(t + l.infos);
  auto** ptrs = reinterpret_cast<void**>(t + l.ptrs);
  a.in = const_cast<const void**>(ptrs);
  a.out = ptrs + l.blocks * lzr::kStreams;
  a.caps = reinterpret_cast<std::size_t*>(t + l.caps);
  a.sizes = reinterpret_cast<std::size_t*>(t + l.sizes);
  a.decoded_sizes = reinterpret_cast<std::size_t*>(t + l.decoded_sizes);
  a.rans_errors = reinterpret_cast<rans::Error*>(t + l.errors);
  a.decoded = t + l.decoded;
  const auto s = static_cast<cudaStream_t>(stream);

  lzr_frame_kernel<<<static_cast<unsigned>(blocks_for(num_items, kItemWarps)), kItemThreads, 0, s>>>(a);
  if (l.blocks > 0) {
    lzr_blocks_kernel<<<static_cast<unsigned>(blocks_for(l.blocks, 256)), 256, 0, s>>>(a);
    if (Status st = launch_status(); !st) return st;
    const std::size_t lit_max = max_output_size < kMaxBlock ? max_output_size : kMaxBlock;
    const std::size_t nb = l.blocks;
    // The literal streams on the side stream beside the others (as in compression).
    const auto batch = [&](int i, cudaStream_t on) -> Status {
      if (i == 1) {
        return rans_decompress_async(reinterpret_cast<const void* const*>(a.in), a.sizes, lit_max, l.blocks,
                                     t + l.lit_temp, l.lit_temp_bytes, a.out, a.caps, a.decoded_sizes, a.rans_errors,
                                     on);
      }
      return rans_decompress_async(reinterpret_cast<const void* const*>(a.in + nb), a.sizes + nb,
                                   lzr::short_stream_capacity(static_cast<std::uint32_t>(lit_max)), nb * kShort,
                                   t + l.short_temp, l.short_temp_bytes, a.out + nb, a.caps + nb,
                                   a.decoded_sizes + nb, a.rans_errors + nb, on);
    };
    if (Status st = fan_out(s, 2, batch); !st) return st;
    lzr_rebuild_kernel<<<static_cast<unsigned>(blocks_for(l.blocks, kItemWarps)), kItemThreads, 0, s>>>(a);
  }
  lzr_finish_kernel<<<static_cast<unsigned>(blocks_for(num_items, kItemWarps)), kItemThreads, 0, s>>>(a);
  return launch_status();
}

}  // namespace tandem::gpu
