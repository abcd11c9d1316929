// The batched rANS calls of gpu/rans_gpu.hpp on CUDA. Everything runs on the
// caller's stream, in the caller's temporary storage.
//
// Compression, per batch:
//   setup      one thread block, a thread per item: checks it, counts its
//              histogram tiles and chunk groups (or marks it as one
//              chunk), and the counts' prefix sums: the work lists the
//              next kernels walk
//   histogram  thread blocks over (item, 64 KiB tile): shared-memory counts
//              in a column per lane, the tile's 256 counts stored (the table
//              kernel adds up an item's tiles, so nothing is cleared); with
//              chunks of at most kHistWarpMaxChunk, the items of one chunk
//              come after the tiles instead, kHistWarps a unit, a warp each
//              (rans_body.hpp's count_bytes)
//   table      a warp per item: normalised frequencies, the header and the
//              table written to the output, the encoding table
//   encode     thread blocks over (item, group of W chunks; W is
//              kEncWarps, or kWideEncWarps for batches of five to eight
//              chunks an item): the item's encoding table in shared memory,
//              a warp per chunk coding into fixed-size scratch (states,
//              words), its bytes staged through a shared-memory ring
//              (rans_body.hpp); an item of at most W chunks (one group)
//              then has its payloads copied to their place in the output by
//              the same block; items of one chunk go W to a block, a warp
//              and a table each
//   place      a warp per item: a scan of the chunks' payload sizes gives
//              their offsets; the directory, the stream's size, its error
//   copy       thread blocks over the same groups: each chunk's states and
//              words to their place in the output, for the items of more
//              than one group (none when W is kWideEncWarps)
// Decompression:
//   prepare    a warp per item: the whole stream checked (header, capacity,
//              table, directory: rans_body.hpp's prepare_stream), payload
//              offsets and the cumulative table to scratch, chunk groups counted
//   units      one thread block: the chunk groups' prefix sums (the work list)
//   decode     thread blocks over (item, group of kDecWarps chunks): the
//              decoding slots built in shared memory, a warp per chunk, its
//              words staged through a shared-memory ring
//   finish     a warp per item: the first failed chunk's error, the size
// The work-list kernels run as many thread blocks as the device holds and
// loop over their units, so an uneven batch launches no idle blocks.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cub/block/block_scan.cuh>

#include "gpu/gpu_memory.cuh"
#include "gpu/rans_body.hpp"
#include "gpu/rans_gpu.hpp"

namespace tandem::gpu {

namespace {

using rans::Error;
namespace body = ransk;

constexpr int kWarpThreads = 32;
constexpr int kItemWarps = 4;  // warps per block of the warp-per-item kernels
constexpr int kItemThreads = kItemWarps * kWarpThreads;
// The prepare kernel's blocks are smaller: each warp's table reader takes
// some 22 KiB of shared memory.
constexpr int kPrepareWarps = 2;
constexpr int kPrepareThreads = kPrepareWarps * kWarpThreads;
constexpr int kHistThreads = 256;
constexpr std::uint32_t kHistTile = 64 * 1024;
constexpr int kHistLoads = 4;  // 16-byte loads a histogram thread has in flight
constexpr int kHistWarps = kHistThreads / kWarpThreads;
// Items of one chunk of at most this many bytes get their histogram from a
// warp each (a unit of the histogram kernel holds kHistWarps of them), not
// from a thread block each: the block clears and sums 32 KiB of columns an
// item (and adds 256 counters to global memory by atomics), more work than
// counting the few KiB of a short stream; a warp clears and sums 4 KiB and
// stores its counts. Larger chunks keep the block path, whose 256 threads
// a unit keep more loads in flight for a long item.
constexpr std::uint32_t kHistWarpMaxChunk = 16 * 1024;
// Encode blocks: kEncWarps warps, or kWideEncWarps for batches whose items
// have five to eight chunks (CompressArgs::enc_warps), so that such an item
// is one unit whose block places its payloads itself, with no copy kernel
// after (lzr's literal streams: 128 KiB in 16 KiB chunks). Either way an SM
// holds 40 encode warps. On the H200, silesia7 in 64 KiB segments of 8 KiB
// chunks, encode went from 302.2 to 329.1 GB/s; lzr's literals (Nsight
// Compute, us): encode 64.9 and copy 19.9 before, encode 75.2 after.
constexpr int kEncWarps = 4;
constexpr int kWideEncWarps = 8;
constexpr int kDecWarps = 4;
// Decode blocks an SM should hold: ten (as its shared memory allows) keep
// the registers at 48 a thread; at 56 only nine fit, and a batch of 64 KiB
// items (a block each) on a 132-SM device would need a second round.
constexpr int kDecBlocksPerSm = 10;
// The same for the encode blocks: at ten an SM (48 registers a thread) the
// 1,251 blocks of a batch of 80 MB in 64 KiB items take one round.
constexpr int kEncBlocksPerSm = 10;
constexpr int kCopyBatch = 8;  // 4-byte words per lane per round of a payload copy
constexpr std::size_t kAlign = 256;
// Bytes past the last chunk's words that copy_payload's aligned loads may
// read (they stay in the scratch).
constexpr std::size_t kCopyOverread = 8;

// What the kernels of one call know of an item.
struct ItemInfo {
  std::uint32_t length;
  std::uint32_t chunk_count;
  std::uint32_t head;         // compression: bytes of header, table and directory
  std::uint32_t scale_bits;   // decompression: the stream's parameters
  std::uint32_t chunk_size;
  std::int32_t error;
};

// Decompression: an item of one chunk whose slots fit in words in half the
// decode blocks' slot memory goes two to a block (rans_decode_kernel).
constexpr std::uint32_t kSingleScaleBits = 11;
// Batches whose items decode to at most this many bytes each take the
// decode kernel with pairs of one-chunk items (rans_decode_kernel<true>).
constexpr std::size_t kPairsMaxOutput = 32 * 1024;
__device__ __forceinline__ bool is_single(const ItemInfo& info) {
  return info.chunk_count == 1 && info.scale_bits <= kSingleScaleBits;
}

// The item whose units [prefix[i], prefix[i + 1]) hold unit u (u < prefix[n]).
__device__ std::size_t item_of_unit(const std::uint32_t* prefix, std::size_t n, std::uint32_t u) {
  std::size_t lo = 0, hi = n;  // prefix[lo] <= u < prefix[hi]
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (prefix[mid] <= u) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The work lists' prefix sums are taken by one thread block of
// kScanThreads, an entry a thread, kScanThreads entries a round: the lists
// are short (an entry per item), and a device-wide scan would cost two
// launches. (Four entries a thread measured slower: the loads of a thread's
// entries wait in line.)
constexpr int kScanThreads = 1024;
using UnitScan = cub::BlockScan<std::uint32_t, kScanThreads>;

// One round: this thread's count v (entry first + threadIdx.x of the n
// entries of the list); writes carry + the counts before it to out[entry];
// returns the carry for the next round.
__device__ std::uint32_t scan_round(UnitScan::TempStorage& storage, std::uint32_t v, std::uint32_t carry,
                                    std::size_t first, std::size_t n, std::uint32_t* out) {
  std::uint32_t before = 0, total = 0;
  UnitScan(storage).ExclusiveSum(v, before, total);
  const std::size_t e = first + threadIdx.x;
  if (e < n) out[e] = carry + before;
  __syncthreads();  // the storage is used again
  return carry + total;
}

// For each list (counts2 may be null): counts[n + 1, 2n + 2) = the
// exclusive prefix sums of counts[0, n + 1).
__global__ void __launch_bounds__(kScanThreads) unit_scan_kernel(std::uint32_t* counts, std::uint32_t* counts2,
                                                                 std::size_t n) {
  __shared__ UnitScan::TempStorage scan_storage;
  std::uint32_t carry = 0, carry2 = 0;
  for (std::size_t first = 0; first < n + 1; first += kScanThreads) {
    const std::size_t e = first + threadIdx.x;
    carry = scan_round(scan_storage, e < n + 1 ? counts[e] : 0u, carry, first, n + 1, counts + n + 1);
    if (counts2) carry2 = scan_round(scan_storage, e < n + 1 ? counts2[e] : 0u, carry2, first, n + 1, counts2 + n + 1);
  }
}

__device__ __forceinline__ std::size_t warp_index() {
  return (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpThreads;
}
__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & 31; }

std::uint32_t chunks_per_item(std::size_t max_size, std::uint32_t chunk_size) {
  return static_cast<std::uint32_t>(std::max<std::size_t>(1, (max_size + chunk_size - 1) / chunk_size));
}

// --------------------------------------------------------- compression ----

// Histogram tiles an item of up to max_size bytes has at most (one at least).
std::size_t hist_tiles(std::size_t max_size) { return std::max<std::size_t>(1, (max_size + kHistTile - 1) / kHistTile); }

struct CompressLayout {
  std::uint32_t max_chunks = 0;
  std::size_t counts = 0, tile_counts = 0, enc = 0, info = 0, hist_units = 0, chunk_units = 0, single_items = 0,
              meta = 0, offsets = 0, states = 0, words = 0, total = 0;
};

Status compress_layout(std::size_t n, std::size_t max_item_size, const rans::Params& p, CompressLayout* l) {
  if (!rans::params_valid(p)) return {StatusCode::invalid_argument, "rANS parameters out of range"};
  if (max_item_size > kMaxItemSize) return {StatusCode::invalid_argument, "max_item_size over kMaxItemSize"};
  const std::uint32_t cs = p.chunk_kib * 1024;
  l->max_chunks = chunks_per_item(max_item_size, cs);
  const std::size_t slots = n * l->max_chunks;
  TempCarver carve(kAlign);
  const auto take = [&](std::size_t bytes) { return carve.take(bytes); };
  l->counts = take(n * 256 * sizeof(std::uint32_t));
  l->tile_counts = take(n * hist_tiles(max_item_size) * 256 * sizeof(std::uint32_t));
  l->enc = take(n * 256 * sizeof(body::EncSym));
  l->info = take(n * sizeof(ItemInfo));
  l->hist_units = take(2 * (n + 1) * sizeof(std::uint32_t));  // counts, then their prefix
  l->chunk_units = take(2 * (n + 1) * sizeof(std::uint32_t));
  l->single_items = take(2 * (n + 1) * sizeof(std::uint32_t));
  l->meta = take(slots * sizeof(uint2));
  l->offsets = take(slots * sizeof(std::uint32_t));
  l->states = take(slots * rans::kMaxLanes * sizeof(std::uint32_t));
  l->words = take(slots * cs * sizeof(std::uint16_t) + kCopyOverread);
  l->total = carve.size();
  return {};
}

struct CompressArgs {
  const void* const* in_ptrs;
  const std::size_t* in_sizes;
  void* const* out_ptrs;
  const std::size_t* out_caps;  // may be null
  std::size_t* out_sizes;
  Error* errors;  // may be null
  std::size_t n;
  std::size_t max_item_size;
  std::uint32_t scale_bits, chunk_size, lanes, max_chunks;
  bool hist_by_warp;  // the items of one chunk take the histogram's warp path (chunk_size <= kHistWarpMaxChunk)
  std::uint32_t enc_warps;  // the encode kernel's warps a block: chunks a unit, single items a unit
  std::uint32_t* counts;        // per item of the histogram's warp path: its 256 counts
  std::uint32_t* tile_counts;   // per tile (the histogram's units before the warp path's): its 256 counts
  body::EncSym* enc;
  ItemInfo* info;
  std::uint32_t* hist_units;   // [n + 1], then its prefix [n + 1] (none for the items of the warp path)
  std::uint32_t* chunk_units;  // the same for groups of kEncWarps chunks (items of two chunks or more)
  std::uint32_t* single_items; // the same for items of one chunk (1 each): kEncWarps of them a unit
  uint2* meta;                 // per chunk slot: lanes | state bytes << 8, words
  std::uint32_t* offsets;      // per chunk slot: payload offset in the stream
  std::uint32_t* states;       // per chunk slot: kMaxLanes states
  std::uint16_t* words;        // per chunk slot: chunk_size words
};

__device__ std::size_t capacity_of(const CompressArgs& a, std::size_t i) {
  const std::size_t bound =
      rans::max_encoded_size(a.in_sizes[i], rans::Params{a.chunk_size / 1024, a.scale_bits, a.lanes});
  return a.out_caps ? a.out_caps[i] : bound;
}

// One thread block, an item a thread a round: every item's facts and unit
// counts, and the counts' prefix sums (a call's first kernel, in place of a
// setup kernel and two device-wide scans).
__global__ void __launch_bounds__(kScanThreads) rans_compress_setup_kernel(CompressArgs a) {
  __shared__ UnitScan::TempStorage scan_storage;
  const std::size_t n1 = a.n + 1;
  std::uint32_t hist_carry = 0, chunk_carry = 0, single_carry = 0;
  for (std::size_t first = 0; first < n1; first += kScanThreads) {
    const std::size_t i = first + threadIdx.x;
    std::uint32_t hist_units = 0, chunk_units = 0, single = 0;
    if (i < a.n) {
      // The item's three loads issued together (the test's || would make
      // each wait for the one before).
      const std::size_t size = a.in_sizes[i];
      const void* const in_ptr = a.in_ptrs[i];
      const void* const out_ptr = a.out_ptrs[i];
      ItemInfo info{};
      info.error = static_cast<std::int32_t>(Error::ok);
      if (size > a.max_item_size || size > rans::kMaxLength || (size > 0 && !in_ptr) || !out_ptr) {
        info.error = static_cast<std::int32_t>(Error::invalid_item);
      }
      info.length = static_cast<std::uint32_t>(size);
      info.chunk_count = body::chunks_for(info.length, a.chunk_size);
      const bool ok = info.error == static_cast<std::int32_t>(Error::ok);
      a.info[i] = info;
      const bool by_warp = a.hist_by_warp && info.chunk_count == 1;  // counted as a single item
      hist_units = ok && !by_warp ? (info.length + kHistTile - 1) / kHistTile : 0;
      chunk_units = ok && info.chunk_count > 1 ? (info.chunk_count + a.enc_warps - 1) / a.enc_warps : 0;
      single = ok && info.chunk_count == 1 ? 1 : 0;
    }
    if (i < n1) {
      a.hist_units[i] = hist_units;
      a.chunk_units[i] = chunk_units;
      a.single_items[i] = single;
    }
    hist_carry = scan_round(scan_storage, hist_units, hist_carry, first, n1, a.hist_units + n1);
    chunk_carry = scan_round(scan_storage, chunk_units, chunk_carry, first, n1, a.chunk_units + n1);
    single_carry = scan_round(scan_storage, single, single_carry, first, n1, a.single_items + n1);
  }
}

// Counts go to a column per lane: symbol s, lane l at hist[s * 32 + l],
// which lies in bank l. So a warp's 32 increments never meet at one address
// (constant data would otherwise serialise them 32 deep) nor in one bank;
// the block's warps share the columns through shared-memory atomics.
// Units: the tiles, then (with a.hist_by_warp) the items of one chunk,
// kHistWarps a unit, each warp counting one item alone in its share of the
// same shared memory.
__global__ void __launch_bounds__(kHistThreads) rans_histogram_kernel(CompressArgs a) {
  static_assert(kHistThreads == 256, "a thread per symbol sums the columns");
  static_assert(kHistWarps * body::kHistWords <= 256 * kWarpThreads, "the warps' histograms share the columns' memory");
  __shared__ __align__(16) std::uint32_t hist[256 * kWarpThreads];
  const std::uint32_t* prefix = a.hist_units + a.n + 1;
  const std::uint32_t* single_prefix = a.single_items + a.n + 1;
  const std::uint32_t tiles = prefix[a.n];
  const std::uint32_t singles = a.hist_by_warp ? single_prefix[a.n] : 0u;
  const std::uint32_t total = tiles + (singles + kHistWarps - 1) / kHistWarps;
  const std::uint32_t lane = static_cast<std::uint32_t>(lane_id());
  const std::uint32_t warp = threadIdx.x / kWarpThreads;
  for (std::uint32_t u = blockIdx.x; u < total; u += gridDim.x) {
    if (u >= tiles) {  // the same in every thread; units only go up, so no tile follows
      const std::uint32_t k = (u - tiles) * kHistWarps + warp;
      if (k < singles) {
        const std::size_t i = item_of_unit(single_prefix, a.n, k);
        body::count_bytes(simt::Warp{}, static_cast<const std::uint8_t*>(a.in_ptrs[i]), a.info[i].length,
                          hist + warp * body::kHistWords, a.counts + i * 256);
      }
      continue;
    }
    const std::size_t i = item_of_unit(prefix, a.n, u);
    const std::uint32_t tile = u - prefix[i];
    const auto* in = static_cast<const std::uint8_t*>(a.in_ptrs[i]);
    const std::uint32_t begin = tile * kHistTile;
    const std::uint32_t end = min(a.info[i].length, begin + kHistTile);
    for (int k = static_cast<int>(threadIdx.x); k < 256 * kWarpThreads / 4; k += kHistThreads) {
      reinterpret_cast<uint4*>(hist)[k] = make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
    // Bytes before the first 16-byte boundary and after the last one go one
    // at a time; the rest as 16-byte words.
    const auto addr = reinterpret_cast<std::uintptr_t>(in + begin);
    const std::uint32_t head = min(end - begin, static_cast<std::uint32_t>((16 - (addr & 15)) & 15));
    const std::uint32_t vecs = (end - begin - head) / 16;
    const std::uint32_t tail = begin + head + vecs * 16;
    for (std::uint32_t k = threadIdx.x; k < head; k += kHistThreads) {
      atomicAdd_block(&hist[in[begin + k] * kWarpThreads + lane], 1u);
    }
    for (std::uint32_t k = tail + threadIdx.x; k < end; k += kHistThreads) {
      atomicAdd_block(&hist[in[k] * kWarpThreads + lane], 1u);
    }
    const auto* v = reinterpret_cast<const uint4*>(in + begin + head);
    const auto count = [&](const uint4& q) {
      const std::uint32_t w4[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int b = 0; b < 4; ++b) atomicAdd_block(&hist[((w4[j] >> (8 * b)) & 0xFF) * kWarpThreads + lane], 1u);
      }
    };
    // kHistLoads loads in flight a thread before their counts.
    std::uint32_t k = threadIdx.x;
    for (; k + (kHistLoads - 1) * kHistThreads < vecs; k += kHistLoads * kHistThreads) {
      uint4 q[kHistLoads];
#pragma unroll
      for (int j = 0; j < kHistLoads; ++j) q[j] = v[k + j * kHistThreads];
#pragma unroll
      for (int j = 0; j < kHistLoads; ++j) count(q[j]);
    }
    for (; k < vecs; k += kHistThreads) count(v[k]);
    __syncthreads();
    {
      // Thread s sums row s starting at column s % 32: the warp's reads fall
      // in 32 different banks.
      const std::uint32_t s = threadIdx.x;
      std::uint32_t c = 0;
#pragma unroll 8
      for (std::uint32_t j = 0; j < kWarpThreads; ++j) c += hist[s * kWarpThreads + ((j + s) & (kWarpThreads - 1))];
      a.tile_counts[static_cast<std::size_t>(u) * 256 + s] = c;
    }
    __syncthreads();
  }
}


__global__ void __launch_bounds__(kItemThreads) rans_table_kernel(CompressArgs a) {
  __shared__ std::uint32_t freq_all[kItemWarps][256];
  __shared__ std::uint32_t sum_all[kItemWarps][256];
  __shared__ std::uint32_t scratch_all[kItemWarps][body::kTableScratchWords];
  const std::size_t i = warp_index();
  if (i >= a.n) return;
  std::uint32_t* freq = freq_all[threadIdx.x / kWarpThreads];
  ItemInfo info = a.info[i];
  if (info.error != static_cast<std::int32_t>(Error::ok)) return;
  const simt::Warp w;
  auto* out = static_cast<std::uint8_t*>(a.out_ptrs[i]);
  const std::size_t cap = capacity_of(a, i);
  body::Header h;
  h.scale_bits = a.scale_bits;
  h.chunk_size = a.chunk_size;
  h.lanes = a.lanes;
  h.length = info.length;
  h.chunk_count = info.chunk_count;
  h.table_bytes = 0;
  if (info.length == 0) {
    if (cap < rans::kHeaderBytes) {
      info.error = static_cast<std::int32_t>(Error::output_too_small);
    } else if (lane_id() == 0) {
      body::write_header(out, h);
    }
    info.head = rans::kHeaderBytes;
  } else {
    // The item's counts: its tiles' added up, or the warp path's.
    const std::uint32_t* prefix = a.hist_units + a.n + 1;
    const std::uint32_t* counts = a.counts + i * 256;
    if (prefix[i + 1] > prefix[i]) {
      std::uint32_t* sum = sum_all[threadIdx.x / kWarpThreads];
      for (std::uint32_t s = static_cast<std::uint32_t>(lane_id()); s < 256; s += kWarpThreads) {
        std::uint32_t c = 0;
        for (std::uint32_t u = prefix[i]; u < prefix[i + 1]; ++u) c += a.tile_counts[static_cast<std::size_t>(u) * 256 + s];
        sum[s] = c;
      }
      __syncwarp();
      counts = sum;
    }
    body::normalize(w, counts, info.length, a.scale_bits, freq);
    __syncwarp();
    const body::TableCode code = body::best_table_code(w, freq);
    h.table_bytes = code.bytes;
    info.head = static_cast<std::uint32_t>(body::payloads_at(h));
    if (info.head > cap) {
      info.error = static_cast<std::int32_t>(Error::output_too_small);
    } else {
      if (lane_id() == 0) body::write_header(out, h);
      body::write_table(w, freq, code.order, scratch_all[threadIdx.x / kWarpThreads], out + rans::kHeaderBytes);
    }
    body::build_enc_table(w, freq, a.scale_bits, a.enc + i * 256);
  }
  if (lane_id() == 0) a.info[i] = info;
}

// Copies chunk slot's payload (its states packed, then its words; the
// chunk holds len bytes) to out, the whole warp together.
__device__ __forceinline__ void copy_payload(const CompressArgs& a, std::size_t slot, std::uint32_t len, std::uint8_t* out) {
  const uint2 m = a.meta[slot];
  const std::uint32_t lanes = m.x & 0xFFu, sb = m.x >> 8;
  const std::uint32_t lane = static_cast<std::uint32_t>(lane_id());
  // Each lane loads its state; the warp runs the packing in step, taking
  // the states by shuffles (no load on its path), and lane 0 writes.
  const std::uint32_t mine = lane < lanes ? a.states[slot * rans::kMaxLanes + lane] : 0u;
  body::pack_states_with([&](std::uint32_t l) { return __shfl_sync(simt::kFullMask, mine, static_cast<int>(l)); },
                         lanes, out, lane == 0);
  // The words after them, as bytes, the warp together (8 words a lane in
  // flight); the scratch has room past the last chunk's words for the
  // aligned reads that reach past a chunk's.
  const auto* src = reinterpret_cast<const std::uint8_t*>(a.words + slot * a.chunk_size + len - m.y);
  const auto* words_lo = reinterpret_cast<const std::uint8_t*>(a.words);
  const std::uint8_t* words_hi = words_lo + a.n * a.max_chunks * a.chunk_size * sizeof(std::uint16_t) + kCopyOverread;
  simt::copy_words_share<kCopyBatch>(out + sb, src, 2 * m.y, words_lo, words_hi, lane, kWarpThreads);
}

// Items whose chunks the encode kernel placed itself (all in one unit).
__device__ __forceinline__ bool placed_by_encoder(const CompressArgs& a, const ItemInfo& info) {
  return info.chunk_count <= a.enc_warps;
}

// Item i of one chunk, by one warp: its own table and ring, its payload
// copied to its place right after (the place kernel writes the directory).
__device__ __forceinline__ void encode_single(const CompressArgs& a, std::size_t i, body::EncSym* table,
                                              std::uint8_t* ring) {
  const ItemInfo info = a.info[i];
  if (info.error != static_cast<std::int32_t>(Error::ok)) return;  // the table kernel may have failed it
  const std::uint32_t lane = static_cast<std::uint32_t>(lane_id());
  for (std::uint32_t s = lane; s < 256; s += kWarpThreads) table[s] = a.enc[i * 256 + s];
  __syncwarp();
  const std::uint32_t len = info.length;
  const std::uint32_t lanes = rans::chunk_lanes(len, a.lanes);
  const std::size_t slot = i * a.max_chunks;
  const std::uint32_t count =
      body::encode_chunk(simt::Warp{}, static_cast<const std::uint8_t*>(a.in_ptrs[i]), len, lanes, a.scale_bits, table,
                         a.states + slot * rans::kMaxLanes, a.words + slot * a.chunk_size + len, ring);
  __syncwarp();  // the lanes' states, written by each, read by all
  const std::uint32_t sb = body::state_bytes(a.states + slot * rans::kMaxLanes, lanes);
  if (lane == 0) a.meta[slot] = make_uint2(lanes | (sb << 8), count);
  __syncwarp();  // the chunk's facts, read by copy_payload
  if (std::uint64_t{info.head} + sb + 2 * count <= capacity_of(a, i)) {
    copy_payload(a, slot, len, static_cast<std::uint8_t*>(a.out_ptrs[i]) + info.head);
  }
}

// Units: first the groups of kEncWarps chunks of the items of two chunks or
// more (a block's warps share the item's table), then the items of one
// chunk, kEncWarps a unit (a warp each, each with its own table): a batch
// of small items keeps every warp coding.
template <int kWarps>
__global__ void __launch_bounds__(kWarps * kWarpThreads, kEncBlocksPerSm * kEncWarps / kWarps)
    rans_encode_kernel(CompressArgs a) {
  __shared__ body::EncSym tables[kWarps][256];
  __shared__ __align__(16) std::uint8_t rings[kWarps][body::kEncRingBytes];
  body::EncSym* const table = tables[0];
  const std::uint32_t* prefix = a.chunk_units + a.n + 1;
  const std::uint32_t* single_prefix = a.single_items + a.n + 1;
  const std::uint32_t groups = prefix[a.n];
  const std::uint32_t total = groups + (single_prefix[a.n] + kWarps - 1) / kWarps;
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  for (std::uint32_t u = blockIdx.x; u < total; u += gridDim.x) {
    if (u >= groups) {  // the same in every thread; units only go up, so no group follows
      const std::uint32_t k = (u - groups) * kWarps + static_cast<std::uint32_t>(warp);
      if (k < single_prefix[a.n]) encode_single(a, item_of_unit(single_prefix, a.n, k), tables[warp], rings[warp]);
      continue;
    }
    const std::size_t i = item_of_unit(prefix, a.n, u);
    const ItemInfo info = a.info[i];
    const bool ok = info.error == static_cast<std::int32_t>(Error::ok);  // the same in every thread
    if (ok) {
      for (int s = static_cast<int>(threadIdx.x); s < 256; s += kWarps * kWarpThreads) table[s] = a.enc[i * 256 + s];
    }
    __syncthreads();
    const std::uint32_t c = (u - prefix[i]) * kWarps + static_cast<std::uint32_t>(warp);
    if (ok && c < info.chunk_count) {
      const std::uint32_t len = c + 1 < info.chunk_count ? a.chunk_size : info.length - c * a.chunk_size;
      const std::uint32_t lanes = rans::chunk_lanes(len, a.lanes);
      const std::size_t slot = i * a.max_chunks + c;
      const auto* in = static_cast<const std::uint8_t*>(a.in_ptrs[i]) + static_cast<std::size_t>(c) * a.chunk_size;
      const std::uint32_t count = body::encode_chunk(simt::Warp{}, in, len, lanes, a.scale_bits, table,
                                                     a.states + slot * rans::kMaxLanes,
                                                     a.words + slot * a.chunk_size + len, rings[warp]);
      __syncwarp();  // the lanes' states, written by each, read by all
      const std::uint32_t sb = body::state_bytes(a.states + slot * rans::kMaxLanes, lanes);
      if (lane_id() == 0) a.meta[slot] = make_uint2(lanes | (sb << 8), count);
    }
    __syncthreads();
    // An item whose chunks are all in this unit (up to kEncWarps chunks: a
    // 64 KiB item of 16 KiB chunks) gets its payloads copied here, from
    // words just written (in L2), while other blocks keep the SMs coding,
    // instead of in a pass of the copy kernel of its own. Each warp finds
    // its chunk's offset from the sizes of the chunks before it, as the
    // place kernel does after this kernel (which also writes the directory
    // and the status; an item that does not fit the output is not copied).
    // (The item's facts are loaded again rather than kept in registers
    // through the coding loop, whose registers set the kernel's occupancy.)
    const std::size_t item = item_of_unit(prefix, a.n, u);
    const ItemInfo now = a.info[item];  // after the barrier: loaded again
    const std::uint32_t mine = (u - prefix[item]) * kWarps + static_cast<std::uint32_t>(warp);
    if (now.error == static_cast<std::int32_t>(Error::ok) && placed_by_encoder(a, now) && mine < now.chunk_count) {
      std::uint64_t at = now.head, end = now.head;
      for (std::uint32_t k = 0; k < now.chunk_count; ++k) {
        const uint2 m = a.meta[item * a.max_chunks + k];
        const std::uint32_t size = (m.x >> 8) + 2 * m.y;
        if (k < mine) at += size;
        end += size;
      }
      if (end <= capacity_of(a, item)) {
        const std::uint32_t len = mine + 1 < now.chunk_count ? a.chunk_size : now.length - mine * a.chunk_size;
        copy_payload(a, item * a.max_chunks + mine, len, static_cast<std::uint8_t*>(a.out_ptrs[item]) + at);
      }
    }
  }
}

__global__ void __launch_bounds__(kItemThreads) rans_place_kernel(CompressArgs a) {
  const std::size_t i = warp_index();
  if (i >= a.n) return;
  const simt::Warp w;
  ItemInfo info = a.info[i];
  std::uint64_t end = info.head;
  if (info.error == static_cast<std::int32_t>(Error::ok) && info.length > 0) {
    auto* out = static_cast<std::uint8_t*>(a.out_ptrs[i]);
    std::uint8_t* dir = out + (info.head - rans::kDirEntryBytes * info.chunk_count);
    for (std::uint32_t first = 0; first < info.chunk_count; first += kWarpThreads) {
      const std::uint32_t c = first + static_cast<std::uint32_t>(lane_id());
      const std::size_t slot = i * a.max_chunks + c;
      const uint2 m = c < info.chunk_count ? a.meta[slot] : make_uint2(0, 0);
      const simt::Lanes<std::uint32_t> size{(m.x >> 8) + 2 * m.y};
      const simt::Lanes<std::uint32_t> before = w.exclusive_sum(size);
      if (c < info.chunk_count) {
        a.offsets[slot] = static_cast<std::uint32_t>(end + before[lane_id()]);
        body::write_entry(dir, c, {m.x & 0xFFu, m.x >> 8, m.y});
      }
      end += w.sum(size);
    }
    if (end > capacity_of(a, i)) info.error = static_cast<std::int32_t>(Error::output_too_small);
  }
  if (lane_id() == 0) {
    const bool ok = info.error == static_cast<std::int32_t>(Error::ok);
    a.info[i].error = info.error;
    a.out_sizes[i] = ok ? static_cast<std::size_t>(end) : 0;
    if (a.errors) a.errors[i] = static_cast<Error>(info.error);
  }
}

__global__ void __launch_bounds__(kEncWarps * kWarpThreads) rans_copy_kernel(CompressArgs a) {
  const std::uint32_t* prefix = a.chunk_units + a.n + 1;
  const std::uint32_t total = prefix[a.n];
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  for (std::uint32_t u = blockIdx.x; u < total; u += gridDim.x) {
    const std::size_t i = item_of_unit(prefix, a.n, u);
    const ItemInfo info = a.info[i];
    const std::uint32_t c = (u - prefix[i]) * kEncWarps + static_cast<std::uint32_t>(warp);
    if (info.error != static_cast<std::int32_t>(Error::ok) || c >= info.chunk_count || placed_by_encoder(a, info)) continue;
    const std::size_t slot = i * a.max_chunks + c;
    const std::uint32_t len = c + 1 < info.chunk_count ? a.chunk_size : info.length - c * a.chunk_size;
    copy_payload(a, slot, len, static_cast<std::uint8_t*>(a.out_ptrs[i]) + a.offsets[slot]);
  }
}

// ------------------------------------------------------- decompression ----

struct DecompressLayout {
  std::uint32_t max_chunks = 0;
  std::size_t tables = 0, info = 0, units = 0, singles = 0, offsets = 0, chunk_errors = 0, total = 0;
};

Status decompress_layout(std::size_t n, std::size_t max_output_size, DecompressLayout* l) {
  if (max_output_size > kMaxItemSize) return {StatusCode::invalid_argument, "max_output_size over kMaxItemSize"};
  l->max_chunks = chunks_per_item(max_output_size, rans::kMinChunkKiB * 1024);
  const std::size_t slots = n * l->max_chunks;
  TempCarver carve(kAlign);
  const auto take = [&](std::size_t bytes) { return carve.take(bytes); };
  l->tables = take(n * 256 * sizeof(std::uint32_t));
  l->info = take(n * sizeof(ItemInfo));
  l->units = take(2 * (n + 1) * sizeof(std::uint32_t));
  l->singles = take(2 * (n + 1) * sizeof(std::uint32_t));
  l->offsets = take(slots * sizeof(std::uint64_t));
  l->chunk_errors = take(slots * sizeof(std::int32_t));
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
  std::size_t n;
  std::size_t max_output_size;
  std::uint32_t max_chunks;
  std::uint32_t* tables;  // per item: 256 entries f | cum << 16
  ItemInfo* info;
  std::uint32_t* units;   // [n + 1] groups of kDecWarps chunks, then their prefix
  std::uint32_t* singles; // [n + 1] items decoded as one of a pair (pairs and is_single), then their prefix
  bool pairs;             // rans_decode_kernel<true>: small items
  std::uint64_t* offsets;
  std::int32_t* chunk_errors;
};

__global__ void __launch_bounds__(kPrepareThreads) rans_prepare_kernel(DecompressArgs a) {
  __shared__ std::uint32_t freq_all[kPrepareWarps][256];
  __shared__ std::uint32_t head_words[kPrepareWarps][body::kStageWords];
  __shared__ __align__(4) std::uint8_t parse_scratch[kPrepareWarps][body::kParseScratchBytes];
  const std::size_t i = warp_index();
  if (i > a.n) return;
  if (i == a.n) {
    if (lane_id() == 0) a.units[a.n] = a.singles[a.n] = 0;
    return;
  }
  std::uint32_t* freq = freq_all[threadIdx.x / kWarpThreads];
  const simt::Warp w;
  const auto* in = static_cast<const std::uint8_t*>(a.in_ptrs[i]);
  const std::size_t size = a.in_sizes[i];
  const std::size_t cap = min(a.out_caps[i], a.max_output_size);
  ItemInfo info{};
  Error e = Error::ok;
  if (size > kMaxItemSize || (size > 0 && !in) || (cap > 0 && !a.out_ptrs[i])) {
    e = Error::invalid_item;
  } else {
    body::Header h;
    // The capacity bounds the chunk count (chunks of 1 KiB at least) by
    // max_chunks before the directory is read into the offsets.
    e = body::prepare_stream(w, in, size, cap, &h, freq, head_words[threadIdx.x / kWarpThreads],
                             parse_scratch[threadIdx.x / kWarpThreads],
                             a.offsets + i * a.max_chunks);
    info.length = h.length;
    info.chunk_count = h.chunk_count;
    info.scale_bits = h.scale_bits;
    info.chunk_size = h.chunk_size;
  }
  __syncwarp();
  info.error = static_cast<std::int32_t>(e);
  const bool work = e == Error::ok && info.length > 0;
  if (work) {
    // The cumulative frequencies: lane l owns symbols 8l .. 8l + 7.
    const int l = lane_id();
    std::uint32_t part = 0;
    for (int j = 0; j < body::kSymbolsPerLane; ++j) part += freq[l * body::kSymbolsPerLane + j];
    std::uint32_t cum = w.exclusive_sum(simt::Lanes<std::uint32_t>{part})[l];
    for (int j = 0; j < body::kSymbolsPerLane; ++j) {
      const int s = l * body::kSymbolsPerLane + j;
      a.tables[i * 256 + s] = freq[s] | (cum << 16);
      cum += freq[s];
    }
  }
  if (lane_id() == 0) {
    a.info[i] = info;
    const bool single = a.pairs && work && is_single(info);
    a.units[i] = work && !single ? (info.chunk_count + kDecWarps - 1) / kDecWarps : 0;
    a.singles[i] = single ? 1u : 0u;
  }
}

// What decoding chunk c of item i (prepared) needs: its payload, its
// directory entry, where its bytes go and how many.
struct ChunkJob {
  const std::uint8_t* payload;
  body::Entry entry;
  std::uint8_t* out;
  std::uint32_t n;
};
__device__ __forceinline__ ChunkJob chunk_job(const DecompressArgs& a, std::size_t i, const ItemInfo& info,
                                              std::uint32_t c) {
  const auto* in = static_cast<const std::uint8_t*>(a.in_ptrs[i]);
  body::Header h;
  h.chunk_count = info.chunk_count;
  h.chunk_size = info.chunk_size;
  h.length = info.length;
  // The directory ends where the first payload starts.
  const std::uint8_t* dir = in + a.offsets[i * a.max_chunks] - rans::kDirEntryBytes * std::size_t{info.chunk_count};
  return {in + a.offsets[i * a.max_chunks + c], body::read_entry(dir, c),
          static_cast<std::uint8_t*>(a.out_ptrs[i]) + static_cast<std::size_t>(c) * info.chunk_size,
          body::chunk_length(h, c)};
}

// The chunk decoded with wide slots or with slots in words, its error to
// its place.
__device__ __forceinline__ void decode_job(const DecompressArgs& a, std::size_t i, std::uint32_t c,
                                           std::uint32_t scale_bits, const ChunkJob& j, bool wide,
                                           const body::WideSlot* wide_slots, const std::uint32_t* slots,
                                           std::uint8_t* ring) {
  const Error e = wide ? body::decode_chunk(simt::Warp{}, j.payload, j.entry.lanes, j.entry.state_bytes, j.entry.words,
                                            j.n, scale_bits, wide_slots, j.out, ring)
                       : body::decode_chunk(simt::Warp{}, j.payload, j.entry.lanes, j.entry.state_bytes, j.entry.words,
                                            j.n, scale_bits, slots, j.out, ring);
  if (lane_id() == 0) a.chunk_errors[i * a.max_chunks + c] = static_cast<std::int32_t>(e);
}

// Units: the groups of kDecWarps chunks of the items (the block's warps
// share the item's slots). With kPairs (a.pairs: batches of small items),
// the items of one chunk (is_single) come after the groups instead, two a
// unit: each takes half the slot memory for its slots in words, two warps
// fill them, one decodes; such a batch so keeps two warps of a block
// decoding where it kept one. (kPairs costs registers: batches of larger
// items run without it.)
template <bool kPairs>
__global__ void __launch_bounds__(kDecWarps * kWarpThreads, kDecBlocksPerSm) rans_decode_kernel(DecompressArgs a) {
  __shared__ std::uint32_t table[256];
  // The slots, in the layout of the stream's scale (rans_body.hpp): 2^12
  // words, or up to 2^11 WideSlots, in the same 16 KiB; or two items' 2^11
  // words each.
  __shared__ __align__(16) std::uint8_t slot_mem[sizeof(std::uint32_t) << rans::kMaxScaleBits];
  static_assert(sizeof(body::WideSlot) << body::kMaxWideScaleBits <= sizeof slot_mem, "wide slots fit");
  static_assert(2 * (sizeof(std::uint32_t) << kSingleScaleBits) <= sizeof slot_mem, "two items' slots fit");
  static_assert(kDecWarps == 4, "two warps an item of a pair");
  __shared__ __align__(16) std::uint8_t rings[kDecWarps][body::kDecRingBytes];
  const std::uint32_t* prefix = a.units + a.n + 1;
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  auto* slots = reinterpret_cast<std::uint32_t*>(slot_mem);
  auto* wide_slots = reinterpret_cast<body::WideSlot*>(slot_mem);
  // Unit u of the groups: item i's table to shared memory, each warp a
  // quarter of its slots; whether they are wide.
  const auto fill_group = [&](std::size_t i, const ItemInfo& info) {
    for (int s = static_cast<int>(threadIdx.x); s < 256; s += kDecWarps * kWarpThreads) table[s] = a.tables[i * 256 + s];
    __syncthreads();
    const std::uint32_t scale = 1u << info.scale_bits;
    const bool wide = info.scale_bits <= body::kMaxWideScaleBits;  // the same in every thread
    static_assert((256 / kDecWarps) % kWarpThreads == 0, "every scale's slots split into rounds of 32 a warp");
    const std::uint32_t span = scale / kDecWarps;
    if (wide) {
      body::fill_slots(simt::Warp{}, table, static_cast<std::uint32_t>(warp) * span, span, wide_slots);
    } else {
      body::fill_slots(simt::Warp{}, table, static_cast<std::uint32_t>(warp) * span, span, slots);
    }
    return wide;
  };
  if constexpr (!kPairs) {
    const std::uint32_t total = prefix[a.n];
    for (std::uint32_t u = blockIdx.x; u < total; u += gridDim.x) {
      const std::size_t i = item_of_unit(prefix, a.n, u);
      const ItemInfo info = a.info[i];
      const bool wide = fill_group(i, info);
      __syncthreads();
      const std::uint32_t c = (u - prefix[i]) * kDecWarps + static_cast<std::uint32_t>(warp);
      if (c < info.chunk_count) {
        decode_job(a, i, c, info.scale_bits, chunk_job(a, i, info, c), wide, wide_slots, slots, rings[warp]);
      }
      __syncthreads();
    }
  } else {
    const std::uint32_t* single_prefix = a.singles + a.n + 1;
    const std::uint32_t groups = prefix[a.n];
    const std::uint32_t singles = single_prefix[a.n];
    const std::uint32_t total = groups + (singles + 1) / 2;
    for (std::uint32_t u = blockIdx.x; u < total; u += gridDim.x) {
      // This warp's chunk (if any) and the slots it decodes with: one call
      // for both kinds of unit.
      std::size_t i = 0;
      ItemInfo info{};
      std::uint32_t c = 0;
      bool decodes = false;
      bool wide = false;
      std::uint32_t* narrow = slots;
      if (u >= groups) {  // the same in every thread
        // Warps 0 and 2 fill the first item's slots, 1 and 3 the second's;
        // warps 0 and 1 decode.
        const std::uint32_t pair = static_cast<std::uint32_t>(warp) & 1u;
        const std::uint32_t k = (u - groups) * 2 + pair;
        const bool have = k < singles;
        if (have) {
          i = item_of_unit(single_prefix, a.n, k);
          info = a.info[i];
          narrow += pair << kSingleScaleBits;
          const std::uint32_t span = (1u << info.scale_bits) / 2;
          body::fill_slots(simt::Warp{}, a.tables + i * 256, (static_cast<std::uint32_t>(warp) >> 1) * span, span,
                           narrow);
        }
        decodes = have && warp < 2;
      } else {
        i = item_of_unit(prefix, a.n, u);
        info = a.info[i];
        wide = fill_group(i, info);
        c = (u - prefix[i]) * kDecWarps + static_cast<std::uint32_t>(warp);
        decodes = c < info.chunk_count;
      }
      __syncthreads();
      if (decodes) decode_job(a, i, c, info.scale_bits, chunk_job(a, i, info, c), wide, wide_slots, narrow, rings[warp]);
      __syncthreads();
    }
  }
}

__global__ void __launch_bounds__(kItemThreads) rans_finish_kernel(DecompressArgs a) {
  const std::size_t i = warp_index();
  if (i >= a.n) return;
  const simt::Warp w;
  const ItemInfo info = a.info[i];
  std::int32_t e = info.error;
  if (e == static_cast<std::int32_t>(Error::ok)) {
    for (std::uint32_t first = 0; first < info.chunk_count; first += kWarpThreads) {
      const std::uint32_t c = first + static_cast<std::uint32_t>(lane_id());
      const std::int32_t ce = c < info.chunk_count ? a.chunk_errors[i * a.max_chunks + c] : 0;
      const std::uint32_t failed = w.ballot(simt::Lanes<bool>{ce != 0});
      if (failed) {
        e = __shfl_sync(simt::kFullMask, ce, simt::first_set(failed));
        break;
      }
    }
  }
  if (lane_id() == 0) {
    a.out_sizes[i] = e == 0 ? info.length : 0;
    if (a.errors) a.errors[i] = static_cast<Error>(e);
  }
}

// Thread blocks of a work-list kernel: as many as the device holds, no more
// than there can be units.
template <auto Kernel, int Threads>
unsigned list_blocks(std::size_t max_units) {
  std::size_t fits = resident_blocks<Kernel, Threads, 0>();
  if (fits == 0) fits = 1024;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(fits, max_units)));
}

unsigned blocks_for(std::size_t threads_needed, int per_block) {
  return static_cast<unsigned>((threads_needed + per_block - 1) / per_block);
}

// The encode kernel of kWarps-warp blocks over `groups` units, with the
// shared-memory carveout its blocks need.
template <int kWarps>
Status launch_encode(const CompressArgs& a, std::size_t groups, cudaStream_t s) {
  TANDEM_CUDA_CHECK(cudaFuncSetAttribute(rans_encode_kernel<kWarps>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared),
                    "cudaFuncSetAttribute");
  rans_encode_kernel<kWarps><<<list_blocks<rans_encode_kernel<kWarps>, kWarps * kWarpThreads>(groups),
                               kWarps * kWarpThreads, 0, s>>>(a);
  return {};
}

}  // namespace

Status rans_compress_temp_size(std::size_t num_items, std::size_t max_item_size, const rans::Params& params,
                               std::size_t* temp_bytes) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  CompressLayout l;
  if (Status s = compress_layout(num_items, max_item_size, params, &l); !s) return s;
  *temp_bytes = l.total;
  return {};
}

Status rans_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                           std::size_t num_items, const rans::Params& params, void* d_temp, std::size_t temp_bytes,
                           void* const* d_out_ptrs, const std::size_t* d_out_capacities, std::size_t* d_out_sizes,
                           rans::Error* d_errors, Stream stream) {
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_sizes || !d_temp) {
    return {StatusCode::invalid_argument, "null device array"};
  }
  if (num_items >= (std::size_t{1} << 31)) return {StatusCode::invalid_argument, "too many items"};
  CompressLayout l;
  if (Status s = compress_layout(num_items, max_item_size, params, &l); !s) return s;
  if (temp_bytes < l.total) return {StatusCode::invalid_argument, "temporary storage smaller than rans_compress_temp_size"};
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
  a.scale_bits = params.scale_bits;
  a.chunk_size = params.chunk_kib * 1024;
  a.lanes = params.lanes;
  a.max_chunks = l.max_chunks;
  a.hist_by_warp = a.chunk_size <= kHistWarpMaxChunk;
  a.enc_warps = l.max_chunks > static_cast<std::uint32_t>(kEncWarps) && l.max_chunks <= static_cast<std::uint32_t>(kWideEncWarps)
                    ? kWideEncWarps
                    : kEncWarps;
  a.counts = reinterpret_cast<std::uint32_t*>(t + l.counts);
  a.tile_counts = reinterpret_cast<std::uint32_t*>(t + l.tile_counts);
  a.enc = reinterpret_cast<body::EncSym*>(t + l.enc);
  a.info = reinterpret_cast<ItemInfo*>(t + l.info);
  a.hist_units = reinterpret_cast<std::uint32_t*>(t + l.hist_units);
  a.chunk_units = reinterpret_cast<std::uint32_t*>(t + l.chunk_units);
  a.single_items = reinterpret_cast<std::uint32_t*>(t + l.single_items);
  a.meta = reinterpret_cast<uint2*>(t + l.meta);
  a.offsets = reinterpret_cast<std::uint32_t*>(t + l.offsets);
  a.states = reinterpret_cast<std::uint32_t*>(t + l.states);
  a.words = reinterpret_cast<std::uint16_t*>(t + l.words);
  const auto s = static_cast<cudaStream_t>(stream);

  // Every tile stores its counts and every item of the warp path its own:
  // nothing to clear. (Before, the tiles added to their item's counters,
  // cleared by a memset of every item's ahead of the setup kernel: lzr's
  // call, five batches on silesia7 in 128 KiB blocks on the H200, took
  // 1470-1476 us with it against 1456-1466 without.)
  const bool all_by_warp = a.hist_by_warp && l.max_chunks == 1;
  rans_compress_setup_kernel<<<1, kScanThreads, 0, s>>>(a);
  const std::size_t tiles = num_items * hist_tiles(max_item_size);
  // Units of the histogram: no more than the tiles (an item of the warp
  // path had one); (num_items + kHistWarps - 1) / kHistWarps when every item
  // takes the warp path.
  const std::size_t hist_units = all_by_warp ? (num_items + kHistWarps - 1) / kHistWarps : tiles;
  const std::size_t groups = num_items * ((l.max_chunks + a.enc_warps - 1) / a.enc_warps);
  // The histogram's columns (32 KiB a block) fit six blocks an SM with the
  // largest carveout.
  TANDEM_CUDA_CHECK(cudaFuncSetAttribute(rans_histogram_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared),
                    "cudaFuncSetAttribute");
  rans_histogram_kernel<<<list_blocks<rans_histogram_kernel, kHistThreads>(hist_units), kHistThreads, 0, s>>>(a);
  rans_table_kernel<<<blocks_for(num_items * kWarpThreads, kItemThreads), kItemThreads, 0, s>>>(a);
  // The encode blocks' tables and rings (21.5 KiB, 43 KiB for the wide
  // blocks) fit ten blocks an SM (five wide) with the largest carveout.
  if (Status st = a.enc_warps == static_cast<std::uint32_t>(kWideEncWarps) ? launch_encode<kWideEncWarps>(a, groups, s)
                                                                           : launch_encode<kEncWarps>(a, groups, s);
      !st) {
    return st;
  }
  rans_place_kernel<<<blocks_for(num_items * kWarpThreads, kItemThreads), kItemThreads, 0, s>>>(a);
  // Items of at most enc_warps chunks had their payloads copied by the
  // encode kernel: a batch of only such items needs no copy kernel.
  if (l.max_chunks > a.enc_warps) {
    rans_copy_kernel<<<list_blocks<rans_copy_kernel, kEncWarps * kWarpThreads>(groups), kEncWarps * kWarpThreads, 0,
                       s>>>(a);
  }
  return launch_status();
}

Status rans_decompress_temp_size(std::size_t num_items, std::size_t max_output_size, std::size_t* temp_bytes) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  DecompressLayout l;
  if (Status s = decompress_layout(num_items, max_output_size, &l); !s) return s;
  *temp_bytes = l.total;
  return {};
}

Status rans_decompress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_output_size,
                             std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                             const std::size_t* d_out_capacities, std::size_t* d_out_sizes, rans::Error* d_errors,
                             Stream stream) {
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_capacities || !d_out_sizes || !d_temp) {
    return {StatusCode::invalid_argument, "null device array"};
  }
  if (num_items >= (std::size_t{1} << 31)) return {StatusCode::invalid_argument, "too many items"};
  DecompressLayout l;
  if (Status s = decompress_layout(num_items, max_output_size, &l); !s) return s;
  if (temp_bytes < l.total) {
    return {StatusCode::invalid_argument, "temporary storage smaller than rans_decompress_temp_size"};
  }
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
  a.max_chunks = l.max_chunks;
  a.tables = reinterpret_cast<std::uint32_t*>(t + l.tables);
  a.info = reinterpret_cast<ItemInfo*>(t + l.info);
  a.units = reinterpret_cast<std::uint32_t*>(t + l.units);
  a.singles = reinterpret_cast<std::uint32_t*>(t + l.singles);
  a.offsets = reinterpret_cast<std::uint64_t*>(t + l.offsets);
  a.chunk_errors = reinterpret_cast<std::int32_t*>(t + l.chunk_errors);
  const auto s = static_cast<cudaStream_t>(stream);

  // The prepare blocks' shared memory (the staged heads and the table
  // readers' scratch, some 44 KiB) lets the 626 blocks of a batch of 80 MB
  // in 64 KiB items be resident at once only with the largest carveout.
  TANDEM_CUDA_CHECK(cudaFuncSetAttribute(rans_prepare_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared),
                    "cudaFuncSetAttribute");
  a.pairs = max_output_size <= kPairsMaxOutput;
  rans_prepare_kernel<<<blocks_for((num_items + 1) * kWarpThreads, kPrepareThreads), kPrepareThreads, 0, s>>>(a);
  unit_scan_kernel<<<1, kScanThreads, 0, s>>>(a.units, a.pairs ? a.singles : nullptr, num_items);
  const std::size_t groups = num_items * ((l.max_chunks + kDecWarps - 1) / kDecWarps);
  // The decode blocks' shared memory (slots and word rings, some 21 KiB)
  // lets ten share an SM only with the largest carveout.
  const auto launch = [&](auto kernel) -> Status {
    TANDEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                           cudaSharedmemCarveoutMaxShared),
                      "cudaFuncSetAttribute");
    return {};
  };
  if (a.pairs) {
    if (Status st = launch(rans_decode_kernel<true>); !st) return st;
    rans_decode_kernel<true><<<list_blocks<rans_decode_kernel<true>, kDecWarps * kWarpThreads>(groups),
                               kDecWarps * kWarpThreads, 0, s>>>(a);
  } else {
    if (Status st = launch(rans_decode_kernel<false>); !st) return st;
    rans_decode_kernel<false><<<list_blocks<rans_decode_kernel<false>, kDecWarps * kWarpThreads>(groups),
                                kDecWarps * kWarpThreads, 0, s>>>(a);
  }
  rans_finish_kernel<<<blocks_for(num_items * kWarpThreads, kItemThreads), kItemThreads, 0, s>>>(a);
  return launch_status();
}

}  // namespace tandem::gpu
