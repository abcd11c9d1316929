// The batched deflate compression of gpu/deflate_gpu.hpp on CUDA: the passes
// of gpu/deflate_enc_body.hpp (the first two the LZ4 encoder's, from
// gpu/lz4_gpu_encode.hpp) as kernels on the caller's stream, in the caller's
// temporary storage.
//   clear     one memset: the find kernel's counter and the items' words
//   prime     a thread block per 8 segments of items of more than one:
//             each segment's prime table (lz4k::prime_group)
//   find      a warp per segment, taken from a counter by as many warps as
//             the GPU holds: the segment's match records (lz4k::find_segment)
//   tokenize  a warp per segment: its tokens, their count, its histogram
//   plan      a thread block per item: Huffman codes, the mode, the header,
//             each segment's bit offset
//   pack      a warp per segment: its codes into the item's zeroed words
//   finish    a thread block per item: header, end of block, the closing
//             empty stored block, capacity check, bytes out, size and status
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "gpu/deflate_enc_body.hpp"
#include "gpu/deflate_gpu.hpp"
#include "gpu/gpu_memory.cuh"

namespace tandem::gpu {

namespace {

namespace enc = deflate_enc;

constexpr int kTokenizeWarps = 4;  // warps per block of the tokenize kernel, a warp per segment
constexpr int kPackWarps = 4;      // the same for the pack kernel
constexpr int kItemThreads = 128;
constexpr std::size_t kAlign = 256;
constexpr std::size_t kMaxBlocks = 0x7fffffff;

// Warps per block of the find kernel, each with its own hash table of
// 2^HashLog entries: as the LZ4 encoder's find kernel has them (3 with
// 2^12-entry tables, 27 warps a multiprocessor on the H100; 4 with 2^11).
__host__ __device__ constexpr int find_warps(int hash_log) { return hash_log == lz4k::kLargeHashLog ? 3 : 4; }

// Where each array lies in the caller's temporary storage.
struct Layout {
  std::size_t spi;  // segments per item
  std::size_t words_per_item;
  std::size_t records, summaries, primes, tokens, counts, hists, seg_at, plans, zeroed;
  std::size_t zeroed_bytes;  // the counter, then the words
  std::size_t total;
};
constexpr std::size_t kCounterBytes = kAlign;  // the find kernel's counter, before the words

Status layout_for(std::size_t n, std::size_t max_item_size, Layout* l) {
  if (max_item_size > kMaxDeflateItem) return {StatusCode::invalid_argument, "max_item_size over kMaxDeflateItem"};
  l->spi = enc::segment_count(max_item_size);
  l->words_per_item = enc::item_words(max_item_size);
  const std::size_t prime_entries = l->spi > 1 ? lz4k::kPrimeEntries : 0;
  // Per item: far below 2^40 bytes for items of at most 16 MiB.
  const std::size_t per_item =
      l->spi * (enc::kMaxSegmentRecords * sizeof(lz4k::SeqRecord) + sizeof(lz4k::SegmentSummary) +
                prime_entries * sizeof(std::uint16_t) + enc::kSegmentSize * 4 + 4 + enc::kHistSize * 4 + 8) +
      sizeof(enc::Plan) + l->words_per_item * 4 + 16 * kAlign;
  if (n > (std::size_t{1} << 62) / per_item) return {StatusCode::invalid_argument, "batch too large"};
  const std::size_t g = n * l->spi;
  if (g > 0x7fffffffu || n > 0x7fffffffu) return {StatusCode::invalid_argument, "batch too large"};
  TempCarver carve(kAlign);
  l->records = carve.take(g * enc::kMaxSegmentRecords * sizeof(lz4k::SeqRecord));
  l->summaries = carve.take(g * sizeof(lz4k::SegmentSummary));
  l->primes = carve.take(g * prime_entries * sizeof(std::uint16_t));
  l->tokens = carve.take(g * enc::kSegmentSize * sizeof(std::uint32_t));
  l->counts = carve.take(g * sizeof(std::uint32_t));
  l->hists = carve.take(g * enc::kHistSize * sizeof(std::uint32_t));
  l->seg_at = carve.take(g * sizeof(std::uint64_t));
  l->plans = carve.take(n * sizeof(enc::Plan));
  l->zeroed_bytes = kCounterBytes + n * l->words_per_item * sizeof(std::uint32_t);
  l->zeroed = carve.take(l->zeroed_bytes);
  l->total = carve.size();
  return {};
}

// What every kernel of one call sees.
struct Args {
  const void* const* in_ptrs;
  const std::size_t* in_sizes;
  std::size_t max_item_size;
  std::size_t num_items;
  std::uint32_t spi;
  std::size_t words_per_item;
  void* const* out_ptrs;
  const std::size_t* out_capacities;
  std::size_t* out_sizes;
  ItemStatus* statuses;
  lz4k::SeqRecord* records;
  lz4k::SegmentSummary* summaries;
  std::uint16_t* primes;
  std::uint32_t* tokens;
  std::uint32_t* counts;
  std::uint32_t* hists;
  std::uint64_t* seg_at;
  enc::Plan* plans;
  unsigned long long* next;  // the find kernel's counter (zeroed)
  std::uint32_t* words;      // zeroed
  std::uint32_t* segment_starts;  // or null
  std::uint32_t starts_per_item;  // enc::start_count(max_item_size)
};

// The item's bytes and size; size 0 and false for an item the call refuses
// (every kernel decides alike, so a refused item has no segments).
__device__ bool item_input(const Args& a, std::size_t i, const std::uint8_t** in, std::uint32_t* n) {
  const std::size_t size = a.in_sizes[i];
  const auto* p = static_cast<const std::uint8_t*>(a.in_ptrs[i]);
  if (size > a.max_item_size || (p == nullptr && size != 0)) {
    *in = nullptr;
    *n = 0;
    return false;
  }
  *in = p;
  *n = static_cast<std::uint32_t>(size);
  return true;
}

// Pass 0: a thread block per group of lz4k::kPrimeGroup segments of the
// items of more than one segment.
__global__ void __launch_bounds__(lz4k::kPrimeWarps * 32) deflate_prime_kernel(Args a) {
  __shared__ std::uint32_t running[lz4k::kPrimeEntries];
  const std::size_t groups = lz4k::prime_group_count(a.spi);
  const std::size_t item = blockIdx.x / groups;
  const std::uint32_t group = static_cast<std::uint32_t>(blockIdx.x % groups);
  if (item >= a.num_items) return;
  const std::uint8_t* in;
  std::uint32_t n;
  item_input(a, item, &in, &n);
  // (The whole block: every thread sees the same item.)
  const std::size_t segments = lz4k::segment_count(n);
  if (segments <= 1 || group >= lz4k::prime_group_count(segments)) return;
  lz4k::prime_group(simt::Block<lz4k::kPrimeWarps>{}, in, n, group, running,
                    a.primes + item * a.spi * lz4k::kPrimeEntries);
}

// Pass 1: as the LZ4 encoder's find kernel, each warp takes the next segment
// from the counter until none is left (the launch holds only as many warps
// as the GPU keeps resident). HashLog: the largest table the batch needs.
template <int HashLog>
__global__ void __launch_bounds__(find_warps(HashLog) * 32) deflate_find_kernel(Args a) {
  extern __shared__ uint4 shared[];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const std::size_t segments = a.num_items * a.spi;
  auto* table = reinterpret_cast<std::uint16_t*>(reinterpret_cast<std::uint8_t*>(shared) +
                                                 static_cast<std::size_t>(warp) * lz4k::table_bytes(HashLog));
  for (;;) {
    unsigned long long taken = 0;
    if ((threadIdx.x & 31) == 0) taken = atomicAdd(a.next, 1ull);
    const std::size_t index = __shfl_sync(0xffffffffu, taken, 0);
    if (index >= segments) return;
    const std::size_t item = index / a.spi;
    const std::uint32_t seg = static_cast<std::uint32_t>(index % a.spi);
    const std::uint8_t* in;
    std::uint32_t n;
    item_input(a, item, &in, &n);
    if (seg >= lz4k::segment_count(n)) continue;
    lz4k::find_segment(simt::Warp{}, in, n, seg, a.primes + item * a.spi * lz4k::kPrimeEntries, table,
                       a.records + index * enc::kMaxSegmentRecords, a.summaries + index);
  }
}

// Pass 2: a warp per segment.
__global__ void __launch_bounds__(kTokenizeWarps * 32) deflate_tokenize_kernel(Args a) {
  __shared__ std::uint32_t hists[kTokenizeWarps][enc::kHistSize];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const std::size_t g = static_cast<std::size_t>(blockIdx.x) * kTokenizeWarps + static_cast<std::size_t>(warp);
  if (g >= a.num_items * a.spi) return;
  const std::size_t item = g / a.spi;
  const std::uint32_t seg = static_cast<std::uint32_t>(g % a.spi);
  const std::uint8_t* in;
  std::uint32_t n;
  item_input(a, item, &in, &n);
  if (seg >= lz4k::segment_count(n)) return;
  enc::tokenize_segment(simt::Warp{}, in, n, seg, a.records + g * enc::kMaxSegmentRecords, a.summaries[g], hists[warp],
                        a.tokens + g * enc::kSegmentSize, a.counts + g, a.hists + g * enc::kHistSize);
}

// Pass 3: a thread block per item.
__global__ void __launch_bounds__(enc::kPlanWarps * 32) deflate_plan_kernel(Args a) {
  __shared__ enc::PlanShared shared;
  const std::size_t i = blockIdx.x;
  const std::uint8_t* in;
  std::uint32_t n;
  item_input(a, i, &in, &n);
  enc::plan_item_block(simt::Block<enc::kPlanWarps>{}, shared, n, a.hists + i * a.spi * enc::kHistSize,
                       static_cast<std::uint32_t>(lz4k::segment_count(n)), &a.plans[i], a.seg_at + i * a.spi);
}

// Pass 4: a warp per segment.
__global__ void __launch_bounds__(kPackWarps * 32) deflate_pack_kernel(Args a) {
  __shared__ std::uint32_t stages[kPackWarps][enc::kStageWords];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const std::size_t g = static_cast<std::size_t>(blockIdx.x) * kPackWarps + static_cast<std::size_t>(warp);
  if (g >= a.num_items * a.spi) return;
  const std::size_t item = g / a.spi;
  const std::uint32_t seg = static_cast<std::uint32_t>(g % a.spi);
  const std::uint8_t* in;
  std::uint32_t n;
  item_input(a, item, &in, &n);
  if (seg >= lz4k::segment_count(n)) return;
  std::uint32_t* starts = a.segment_starts ? a.segment_starts + item * a.starts_per_item +
                                                  static_cast<std::size_t>(seg) * enc::kStartsPerSegment
                                            : nullptr;
  enc::pack_segment(simt::Warp{}, a.plans[item], a.tokens + g * enc::kSegmentSize, a.counts[g],
                    a.words + item * a.words_per_item, a.seg_at[g], stages[warp], starts);
}

// Pass 5: a thread block per item.
__global__ void __launch_bounds__(kItemThreads) deflate_finish_kernel(Args a) {
  const std::size_t i = blockIdx.x;
  __shared__ int status;
  __shared__ std::uint64_t out_bytes;
  const enc::Plan& plan = a.plans[i];
  std::uint32_t* words = a.words + i * a.words_per_item;
  const std::uint8_t* in;
  std::uint32_t n;
  const bool valid = item_input(a, i, &in, &n);
  auto* out = static_cast<std::uint8_t*>(a.out_ptrs[i]);
  if (threadIdx.x == 0) {
    status = static_cast<int>(ItemStatus::ok);
    out_bytes = plan.out_bytes;
    const std::size_t cap = a.out_capacities ? a.out_capacities[i] : enc::max_compressed_size(n);
    if (!valid || out == nullptr) {
      status = static_cast<int>(ItemStatus::invalid_item);
    } else if (plan.out_bytes > cap) {
      status = static_cast<int>(ItemStatus::output_overflow);
    } else {
      enc::finish_words(plan, words);
    }
    if (status != static_cast<int>(ItemStatus::ok)) out_bytes = 0;
    a.out_sizes[i] = out_bytes;
    if (a.statuses) a.statuses[i] = static_cast<ItemStatus>(status);
  }
  __syncthreads();
  if (a.segment_starts) {
    // The pack pass set the starts of a Huffman-coded item; the others' are 0.
    const bool coded = status == static_cast<int>(ItemStatus::ok) && plan.mode != enc::Mode::stored;
    const std::uint32_t starts = coded ? static_cast<std::uint32_t>(enc::start_count(n)) : 0u;
    for (std::uint32_t s = starts + threadIdx.x; s < a.starts_per_item; s += blockDim.x)
      a.segment_starts[i * a.starts_per_item + s] = 0u;
  }
  const std::uint64_t total = out_bytes;
  if (plan.mode == enc::Mode::stored || total < 8) {
    for (std::uint64_t k = threadIdx.x; k < total; k += blockDim.x) out[k] = enc::output_byte(plan, in, n, words, k);
    return;
  }
  // A Huffman coding's bytes are its words': 4-byte stores from where out
  // is aligned, each from two words (the buffer has a word past the last
  // one used), the bytes before and after alone.
  const std::uint32_t head = static_cast<std::uint32_t>((4 - (reinterpret_cast<std::uintptr_t>(out) & 3)) & 3);
  const std::uint64_t body = (total - head) / 4;
  const std::uint64_t tail = head + 4 * body;
  if (threadIdx.x < head) out[threadIdx.x] = enc::output_byte(plan, in, n, words, threadIdx.x);
  if (threadIdx.x < total - tail) out[tail + threadIdx.x] = enc::output_byte(plan, in, n, words, tail + threadIdx.x);
  for (std::uint64_t j = threadIdx.x; j < body; j += blockDim.x) {
    const std::uint64_t k = head + 4 * j;
    const std::uint32_t lo = words[k / 4];
    const std::uint32_t hi = words[k / 4 + 1];
    *reinterpret_cast<std::uint32_t*>(out + k) = __funnelshift_r(lo, hi, 8 * head);
  }
}

unsigned blocks_for(std::size_t units, int per_block) {
  return static_cast<unsigned>((units + per_block - 1) / per_block);
}

template <int HashLog>
Status launch_find(const Args& a, std::size_t segments, cudaStream_t s) {
  constexpr int kWarps = find_warps(HashLog);
  constexpr std::size_t kSharedBytes = kWarps * lz4k::table_bytes(HashLog);
  static_assert(kSharedBytes <= 48 * 1024, "within the default dynamic shared memory");
  std::size_t blocks = (segments + kWarps - 1) / kWarps;
  const std::size_t fit = resident_blocks<deflate_find_kernel<HashLog>, kWarps * 32, kSharedBytes>();
  if (fit > 0 && blocks > fit) blocks = fit;
  deflate_find_kernel<HashLog><<<static_cast<unsigned>(blocks), kWarps * 32, kSharedBytes, s>>>(a);
  return launch_status();
}

}  // namespace

Status deflate_compress_temp_size(std::size_t num_items, std::size_t max_item_size, std::size_t* temp_bytes) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  Layout l;
  if (Status s = layout_for(num_items, max_item_size, &l); !s) return s;
  *temp_bytes = l.total;
  return {};
}

Status deflate_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                              std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                              const std::size_t* d_out_capacities, std::size_t* d_out_sizes, ItemStatus* d_statuses,
                              Stream stream, std::uint32_t* d_segment_starts) {
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_sizes)
    return {StatusCode::invalid_argument, "null device array"};
  Layout l;
  if (Status s = layout_for(num_items, max_item_size, &l); !s) return s;
  if (!d_temp || temp_bytes < l.total) return {StatusCode::invalid_argument, "temporary storage too small"};
  const std::size_t g = num_items * l.spi;
  if (num_items * lz4k::prime_group_count(l.spi) >= kMaxBlocks) return {StatusCode::invalid_argument, "batch too large"};
  auto* t = static_cast<std::uint8_t*>(d_temp);
  Args a;
  a.in_ptrs = d_in_ptrs;
  a.in_sizes = d_in_sizes;
  a.max_item_size = max_item_size;
  a.num_items = num_items;
  a.spi = static_cast<std::uint32_t>(l.spi);
  a.words_per_item = l.words_per_item;
  a.out_ptrs = d_out_ptrs;
  a.out_capacities = d_out_capacities;
  a.out_sizes = d_out_sizes;
  a.statuses = d_statuses;
  a.records = reinterpret_cast<lz4k::SeqRecord*>(t + l.records);
  a.summaries = reinterpret_cast<lz4k::SegmentSummary*>(t + l.summaries);
  a.primes = reinterpret_cast<std::uint16_t*>(t + l.primes);
  a.tokens = reinterpret_cast<std::uint32_t*>(t + l.tokens);
  a.counts = reinterpret_cast<std::uint32_t*>(t + l.counts);
  a.hists = reinterpret_cast<std::uint32_t*>(t + l.hists);
  a.seg_at = reinterpret_cast<std::uint64_t*>(t + l.seg_at);
  a.plans = reinterpret_cast<enc::Plan*>(t + l.plans);
  a.next = reinterpret_cast<unsigned long long*>(t + l.zeroed);
  a.words = reinterpret_cast<std::uint32_t*>(t + l.zeroed + kCounterBytes);
  a.segment_starts = d_segment_starts;
  a.starts_per_item = static_cast<std::uint32_t>(enc::start_count(max_item_size));
  const auto s = static_cast<cudaStream_t>(stream);

  TANDEM_CUDA_CHECK(cudaMemsetAsync(t + l.zeroed, 0, l.zeroed_bytes, s), "cudaMemsetAsync");
  if (g > 0) {
    if (l.spi > 1) {
      deflate_prime_kernel<<<static_cast<unsigned>(num_items * lz4k::prime_group_count(l.spi)),
                             lz4k::kPrimeWarps * 32, 0, s>>>(a);
    }
    const Status found = lz4k::hash_log_for(max_item_size) == lz4k::kSmallHashLog
                             ? launch_find<lz4k::kSmallHashLog>(a, g, s)
                             : launch_find<lz4k::kLargeHashLog>(a, g, s);
    if (!found) return found;
    deflate_tokenize_kernel<<<blocks_for(g, kTokenizeWarps), kTokenizeWarps * 32, 0, s>>>(a);
  }
  deflate_plan_kernel<<<static_cast<unsigned>(num_items), enc::kPlanWarps * 32, 0, s>>>(a);
  if (g > 0) deflate_pack_kernel<<<blocks_for(g, kPackWarps), kPackWarps * 32, 0, s>>>(a);
  deflate_finish_kernel<<<static_cast<unsigned>(num_items), kItemThreads, 0, s>>>(a);
  return launch_status();
}

}  // namespace tandem::gpu
