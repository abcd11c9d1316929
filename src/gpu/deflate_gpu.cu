// The batched deflate compression of gpu/deflate_gpu.hpp on CUDA: the passes
// of gpu/deflate_enc_body.hpp as kernels on the caller's stream, in the
// caller's temporary storage.
//   find     a thread per segment (every segment of every item): match
//            finding, the segment's tokens, their count and histograms
//   plan     a thread per item: histograms summed, Huffman codes, the mode
//   size     a thread per segment: its bits in the item's code
//   scan     cub::DeviceScan over all segments' bits: each segment's place
//   pack     a thread per segment: its codes into the item's zeroed words
//   finish   a thread block per item: header, end of block, the closing
//            empty stored block, capacity check, bytes out, size and status
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cub/device/device_scan.cuh>

#include "gpu/deflate_enc_body.hpp"
#include "gpu/deflate_gpu.hpp"
#include "gpu/gpu_memory.cuh"

namespace tandem::gpu {

namespace {

namespace enc = deflate_enc;

constexpr int kSegmentThreads = 64;
constexpr int kItemThreads = 128;
constexpr std::size_t kAlign = 256;

// Where each array lies in the caller's temporary storage.
struct Layout {
  std::size_t spi;  // segments per item
  std::size_t words_per_item;
  std::size_t tokens, counts, hists, heads, prevs, bits, offsets, plans, words, scan;
  std::size_t scan_bytes;
  std::size_t total;
};

Status layout_for(std::size_t n, std::size_t max_item_size, const enc::MatchParams& p, Layout* l) {
  if (max_item_size > kMaxDeflateItem) return {StatusCode::invalid_argument, "max_item_size over kMaxDeflateItem"};
  if (!enc::params_valid(p)) return {StatusCode::invalid_argument, "match finder parameters out of range"};
  l->spi = enc::segment_count(max_item_size, p);
  l->words_per_item = enc::item_words(max_item_size);
  // Per item: far below 2^40 bytes for items of at most 16 MiB.
  const std::size_t per_item = l->spi * (p.segment_size * 4 + 4 + enc::kHistSize * 4 + (std::size_t{2} << p.hash_log) +
                                         2 * (p.prime_bytes + p.segment_size) + 16) +
                               sizeof(enc::Plan) + l->words_per_item * 4 + 8 * kAlign;
  if (n > (std::size_t{1} << 62) / per_item) return {StatusCode::invalid_argument, "batch too large"};
  const std::size_t g = n * l->spi;
  if (g > 0x7fffffffu) return {StatusCode::invalid_argument, "batch too large"};
  l->scan_bytes = 0;
  TANDEM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, l->scan_bytes, static_cast<const std::uint64_t*>(nullptr),
                                                  static_cast<std::uint64_t*>(nullptr), static_cast<int>(g)),
                    "cub::DeviceScan::ExclusiveSum (temporary size)");
  TempCarver carve(kAlign);
  const auto take = [&](std::size_t bytes) { return carve.take(bytes); };
  l->tokens = take(g * p.segment_size * sizeof(std::uint32_t));
  l->counts = take(g * sizeof(std::uint32_t));
  l->hists = take(g * enc::kHistSize * sizeof(std::uint32_t));
  l->heads = take(g * (std::size_t{1} << p.hash_log) * sizeof(std::uint16_t));
  l->prevs = take(g * (p.prime_bytes + p.segment_size) * sizeof(std::uint16_t));
  l->bits = take(g * sizeof(std::uint64_t));
  l->offsets = take(g * sizeof(std::uint64_t));
  l->plans = take(n * sizeof(enc::Plan));
  l->words = take(n * l->words_per_item * sizeof(std::uint32_t));
  l->scan = take(l->scan_bytes);
  l->total = carve.size();
  return {};
}

// What every kernel of one call sees.
struct Args {
  enc::MatchParams params;
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
  std::uint32_t* tokens;
  std::uint32_t* counts;
  std::uint32_t* hists;
  std::uint16_t* heads;
  std::uint16_t* prevs;
  std::uint64_t* bits;
  std::uint64_t* offsets;
  enc::Plan* plans;
  std::uint32_t* words;
};

// The item's bytes and size; size 0 and false for an item the call refuses.
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

__global__ void deflate_find_kernel(Args a) {
  const std::size_t g = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= a.num_items * a.spi) return;
  const enc::MatchParams& p = a.params;
  const std::size_t i = g / a.spi;
  const std::uint32_t s = static_cast<std::uint32_t>(g % a.spi);
  const std::uint8_t* in;
  std::uint32_t n;
  item_input(a, i, &in, &n);
  const std::uint32_t begin = s * p.segment_size;
  const std::uint32_t end = begin < n ? min(n, begin + p.segment_size) : begin;
  a.counts[g] = enc::find_segment(in, n, begin, end, p, a.heads + g * (std::size_t{1} << p.hash_log),
                                  a.prevs + g * (p.prime_bytes + p.segment_size), a.tokens + g * p.segment_size,
                                  a.hists + g * enc::kHistSize);
}

__global__ void deflate_plan_kernel(Args a) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.num_items) return;
  const std::uint8_t* in;
  std::uint32_t n;
  item_input(a, i, &in, &n);
  std::uint32_t hist[enc::kHistSize];
  for (int k = 0; k < enc::kHistSize; ++k) hist[k] = 0;
  for (std::uint32_t s = 0; s < a.spi; ++s) {
    const std::uint32_t* h = a.hists + (i * a.spi + s) * enc::kHistSize;
    for (int k = 0; k < enc::kHistSize; ++k) hist[k] += h[k];
  }
  enc::plan_item(n, hist, &a.plans[i]);
}

__global__ void deflate_size_kernel(Args a) {
  const std::size_t g = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= a.num_items * a.spi) return;
  a.bits[g] = enc::segment_bits(a.plans[g / a.spi], a.tokens + g * a.params.segment_size, a.counts[g]);
}

__global__ void deflate_pack_kernel(Args a) {
  const std::size_t g = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= a.num_items * a.spi) return;
  const std::size_t i = g / a.spi;
  const enc::Plan& plan = a.plans[i];
  const std::uint64_t at = plan.header_bits + a.offsets[g] - a.offsets[i * a.spi];
  enc::pack_segment(plan, a.tokens + g * a.params.segment_size, a.counts[g], a.words + i * a.words_per_item, at);
}

__global__ void deflate_finish_kernel(Args a) {
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
  const std::uint64_t total = out_bytes;
  for (std::uint64_t k = threadIdx.x; k < total; k += blockDim.x) out[k] = enc::output_byte(plan, in, n, words, k);
}

unsigned blocks_for(std::size_t threads, int per_block) {
  return static_cast<unsigned>((threads + per_block - 1) / per_block);
}

}  // namespace

Status deflate_compress_temp_size(std::size_t num_items, std::size_t max_item_size, std::size_t* temp_bytes,
                                  const enc::MatchParams& params) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  Layout l;
  if (Status s = layout_for(num_items, max_item_size, params, &l); !s) return s;
  *temp_bytes = l.total;
  return {};
}

Status deflate_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                              std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                              const std::size_t* d_out_capacities, std::size_t* d_out_sizes, ItemStatus* d_statuses,
                              Stream stream, const enc::MatchParams& params) {
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_sizes)
    return {StatusCode::invalid_argument, "null device array"};
  Layout l;
  if (Status s = layout_for(num_items, max_item_size, params, &l); !s) return s;
  if (!d_temp || temp_bytes < l.total) return {StatusCode::invalid_argument, "temporary storage too small"};
  auto* t = static_cast<std::uint8_t*>(d_temp);
  Args a;
  a.params = params;
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
  a.tokens = reinterpret_cast<std::uint32_t*>(t + l.tokens);
  a.counts = reinterpret_cast<std::uint32_t*>(t + l.counts);
  a.hists = reinterpret_cast<std::uint32_t*>(t + l.hists);
  a.heads = reinterpret_cast<std::uint16_t*>(t + l.heads);
  a.prevs = reinterpret_cast<std::uint16_t*>(t + l.prevs);
  a.bits = reinterpret_cast<std::uint64_t*>(t + l.bits);
  a.offsets = reinterpret_cast<std::uint64_t*>(t + l.offsets);
  a.plans = reinterpret_cast<enc::Plan*>(t + l.plans);
  a.words = reinterpret_cast<std::uint32_t*>(t + l.words);
  const auto s = static_cast<cudaStream_t>(stream);
  const std::size_t g = num_items * l.spi;

  deflate_find_kernel<<<blocks_for(g, kSegmentThreads), kSegmentThreads, 0, s>>>(a);
  deflate_plan_kernel<<<blocks_for(num_items, kSegmentThreads), kSegmentThreads, 0, s>>>(a);
  deflate_size_kernel<<<blocks_for(g, kSegmentThreads), kSegmentThreads, 0, s>>>(a);
  TANDEM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(t + l.scan, l.scan_bytes, a.bits, a.offsets, static_cast<int>(g), s),
                    "cub::DeviceScan::ExclusiveSum");
  TANDEM_CUDA_CHECK(cudaMemsetAsync(a.words, 0, num_items * l.words_per_item * sizeof(std::uint32_t), s),
                    "cudaMemsetAsync");
  deflate_pack_kernel<<<blocks_for(g, kSegmentThreads), kSegmentThreads, 0, s>>>(a);
  deflate_finish_kernel<<<static_cast<unsigned>(num_items), kItemThreads, 0, s>>>(a);
  return launch_status();
}

}  // namespace tandem::gpu
