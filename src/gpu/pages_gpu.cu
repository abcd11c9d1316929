// The page batch calls of tandem_gpu.hpp: a warp per page before and after
// the batched LZ4 kernels (bodies in pages_gpu_body.hpp).
//
// Compression: prepare (fill check; the LZ4 item arrays, a fill page given
// an empty item), lz4_compress_async with every page's capacity at
// page_max_compressed, finish (the record; a raw copy where the block did not
// fit). Decompression: prepare (fill and stored pages written; the item
// arrays, an empty item for all but valid LZ4 pages), lz4_decompress_async,
// finish (each page's status). All on the caller's stream; nothing is
// allocated and nothing waits.
#include <cuda_runtime.h>

#include "gpu/gpu_memory.cuh"
#include "gpu/lz4_gpu_decode.hpp"
#include "gpu/pages_gpu_body.hpp"
#include "gpu/pages_gpu_layout.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

namespace {

constexpr int kPageWarps = 8;  // warps per thread block of the page kernels

struct Arrays {
  const void** in_ptrs;
  std::size_t* in_sizes;
  void** out_ptrs;
  std::size_t* out_caps;
  std::size_t* out_sizes;
  ItemStatus* statuses;
  void* codec;
};

Arrays arrays(void* d_temp, const pagek::PageTemp& t) {
  auto* b = static_cast<std::uint8_t*>(d_temp);
  return {reinterpret_cast<const void**>(b + t.in_ptrs), reinterpret_cast<std::size_t*>(b + t.in_sizes),
          reinterpret_cast<void**>(b + t.out_ptrs),      reinterpret_cast<std::size_t*>(b + t.out_caps),
          reinterpret_cast<std::size_t*>(b + t.out_sizes), reinterpret_cast<ItemStatus*>(b + t.statuses),
          b + t.codec};
}

__device__ __forceinline__ std::size_t page_of_warp() {
  return (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
}

__global__ void __launch_bounds__(kPageWarps * 32)
    pages_prepare_compress_kernel(const std::uint8_t* pages, std::size_t num_pages, std::uint32_t page_size,
                                  std::uint8_t* slots, PageRecord* records, Arrays a) {
  const std::size_t i = page_of_warp();
  if (i >= num_pages) return;
  const std::uint8_t* page = pages + i * page_size;
  std::uint64_t fill = 0;
  const bool is_fill = pagek::warp_page_fill(simt::Warp{}, page, page_size, &fill);
  if ((threadIdx.x & 31) == 0) {
    a.in_ptrs[i] = page;
    a.in_sizes[i] = is_fill ? 0 : page_size;
    a.out_ptrs[i] = slots + i * page_size;
    a.out_caps[i] = pagek::max_block(page_size);
    if (is_fill) records[i] = pagek::fill_record(fill);
  }
}

__global__ void __launch_bounds__(kPageWarps * 32)
    pages_finish_compress_kernel(const std::uint8_t* pages, std::size_t num_pages, std::uint32_t page_size,
                                 std::uint8_t* slots, PageRecord* records, Arrays a) {
  const std::size_t i = page_of_warp();
  if (i >= num_pages) return;
  if (a.in_sizes[i] == 0) {  // a fill page has its record; its slot is zeroed
    pagek::warp_zero_tail(simt::Warp{}, slots + i * page_size, 0, page_size);
    return;
  }
  const PageRecord r = pagek::finish_compress(simt::Warp{}, pages + i * page_size, page_size, slots + i * page_size,
                                              a.statuses[i], a.out_sizes[i]);
  if ((threadIdx.x & 31) == 0) records[i] = r;
}

__global__ void __launch_bounds__(kPageWarps * 32)
    pages_prepare_decompress_kernel(const PageRecord* records, const std::uint8_t* slots, std::size_t num_pages,
                                    std::uint32_t page_size, std::uint8_t* pages, Arrays a) {
  const std::size_t i = page_of_warp();
  if (i >= num_pages) return;
  const PageRecord r = records[i];
  std::uint8_t* page = pages + i * page_size;
  const std::uint8_t* slot = slots + i * page_size;
  const bool lz4 = pagek::prepare_decompress(simt::Warp{}, r, slot, page_size, page);
  if ((threadIdx.x & 31) == 0) {
    a.in_ptrs[i] = slot;
    a.in_sizes[i] = lz4 ? r.length : 0;
    a.out_ptrs[i] = page;
    a.out_caps[i] = lz4 ? page_size : 0;
  }
}

// A thread per page.
__global__ void pages_finish_decompress_kernel(const PageRecord* records, std::size_t num_pages,
                                               std::uint32_t page_size, Arrays a, ItemStatus* statuses) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= num_pages) return;
  statuses[i] = pagek::finish_decompress(records[i], page_size, a.statuses[i], a.out_sizes[i]);
}

// Pages of 4 KiB decode in one kernel: a warp per page does its record's
// checks, a fill or a copy, or the LZ4 decode (staged in shared memory, as
// lz4_decompress_async does blocks of up to 4 KiB), and writes its status.
// Only as many warps as the GPU holds at once are launched, and each takes
// the next page from a counter when it is done with one. A call ends with a
// tail of about half a page's decoding time in which the GPU empties; with
// fewer pages per call that tail weighs more. On the H100, silesia7 in
// batches of 10,000 and 100,000 pages (GB/s): the three kernels of the other
// page sizes 193.8 and 247.6; one kernel, a warp a page, 2 warps a thread
// block (the lane decoder's shape) capped for 20 of them a multiprocessor
// 192.8 and 238.4; warps taking pages from the counter 195.0 and 244.4; so
// with 16 thread blocks 200.8 and 248.9, with 24 187.8 and 250.2; 4 warps a
// thread block, 10 of them, 195.7 and 244.7; a warp a thread block (this
// one: 32 of them a multiprocessor, the most it holds, 64 registers), 204.5
// and 251.5. A refused page is left as the decoder left it (the host calls
// zero it): zeroing it here, though it never happens on good data, cost 3 to
// 4% (the zeros inline 194.0, out of line 193.9, in a kernel of their own
// after this one 198.3, none 201.0, on one H100).
constexpr int kDecodeWarps = 1;
constexpr int kDecodeMinBlocks = 32;
constexpr std::uint32_t kPage4K = 4096;
constexpr std::uint32_t kStage4K = lz4k::kLaneStageBytes<kPage4K>;

__device__ __forceinline__ void decode_page_4k(const simt::Warp& w, std::uint8_t* stage, const PageRecord* records,
                                               const std::uint8_t* slots, std::size_t i, std::uint8_t* pages,
                                               ItemStatus* statuses) {
  const PageRecord r = records[i];
  std::uint8_t* page = pages + i * kPage4K;
  const std::uint8_t* slot = slots + i * kPage4K;
  std::uint32_t size = 0;
  ItemStatus status = ItemStatus::ok;
  if (pagek::prepare_decompress(w, r, slot, kPage4K, page)) {
    status = lz4k::decode_block_lanes_staged<kPage4K>(w, stage, slot, r.length, page, kPage4K, &size);
  }
  status = pagek::finish_decompress(r, kPage4K, status, size);
  if ((threadIdx.x & 31) == 0 && statuses) statuses[i] = status;
  w.sync();  // the stage is free before the warp's next page
}

__global__ void __launch_bounds__(kDecodeWarps * 32, kDecodeMinBlocks)
    pages_decode_4k_kernel(const PageRecord* records, const std::uint8_t* slots, std::size_t num_pages,
                           std::uint8_t* pages, ItemStatus* statuses, unsigned long long* next) {
  extern __shared__ uint4 stage_shared[];
  const simt::Warp w{};
  std::uint8_t* stage = reinterpret_cast<std::uint8_t*>(stage_shared) + (threadIdx.x / 32) * kStage4K;
  for (;;) {
    unsigned long long taken = 0;
    if ((threadIdx.x & 31) == 0) taken = atomicAdd(next, 1ull);
    const std::size_t i = __shfl_sync(0xffffffffu, taken, 0);
    if (i >= num_pages) return;
    decode_page_4k(w, stage, records, slots, i, pages, statuses);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }

Status check_call(bool compress, const void* d_pages, const void* d_slots, const void* d_records,
                  std::size_t num_pages, std::size_t page_size, void* d_temp, std::size_t temp_bytes,
                  pagek::PageTemp* t) {
  if (!valid_page_size(page_size)) return {StatusCode::invalid_argument, "page size must be 4, 16 or 64 KiB"};
  if (!d_pages || !d_slots || !d_records) return {StatusCode::invalid_argument, "null device buffer"};
  if (!aligned16(d_pages) || !aligned16(d_slots)) {
    return {StatusCode::invalid_argument, "pages and slots must be 16-byte aligned"};
  }
  if (!pagek::page_temp_layout(compress, num_pages, page_size, t) || num_pages >= 0x7fffffff) {
    return {StatusCode::invalid_argument, "too many pages"};
  }
  if (!d_temp || temp_bytes < t->total) return {StatusCode::invalid_argument, "temporary storage too small"};
  return {};
}

unsigned page_blocks(std::size_t num_pages) {
  return static_cast<unsigned>((num_pages + kPageWarps - 1) / kPageWarps);
}

}  // namespace

Status pages_compress_async(const void* d_pages, std::size_t num_pages, std::size_t page_size, void* d_temp,
                            std::size_t temp_bytes, void* d_slots, PageRecord* d_records, Stream stream) {
  if (num_pages == 0) return {};
  pagek::PageTemp t;
  if (Status s = check_call(true, d_pages, d_slots, d_records, num_pages, page_size, d_temp, temp_bytes, &t); !s) {
    return s;
  }
  const Arrays a = arrays(d_temp, t);
  const auto* pages = static_cast<const std::uint8_t*>(d_pages);
  auto* slots = static_cast<std::uint8_t*>(d_slots);
  const auto p = static_cast<std::uint32_t>(page_size);
  pages_prepare_compress_kernel<<<page_blocks(num_pages), kPageWarps * 32, 0, stream>>>(pages, num_pages, p, slots,
                                                                                        d_records, a);
  if (Status s = launch_status(); !s) return s;
  if (Status s = lz4_compress_async(a.in_ptrs, a.in_sizes, page_size, num_pages, a.codec, t.codec_bytes, a.out_ptrs,
                                    a.out_caps, a.out_sizes, a.statuses, stream);
      !s) {
    return s;
  }
  pages_finish_compress_kernel<<<page_blocks(num_pages), kPageWarps * 32, 0, stream>>>(pages, num_pages, p, slots,
                                                                                       d_records, a);
  return launch_status();
}

Status pages_decompress_async(const PageRecord* d_records, const void* d_slots, std::size_t num_pages,
                              std::size_t page_size, void* d_temp, std::size_t temp_bytes, void* d_pages,
                              ItemStatus* d_statuses, Stream stream) {
  if (num_pages == 0) return {};
  pagek::PageTemp t;
  if (Status s = check_call(false, d_pages, d_slots, d_records, num_pages, page_size, d_temp, temp_bytes, &t); !s) {
    return s;
  }
  const Arrays a = arrays(d_temp, t);
  const auto* slots = static_cast<const std::uint8_t*>(d_slots);
  auto* pages = static_cast<std::uint8_t*>(d_pages);
  const auto p = static_cast<std::uint32_t>(page_size);
  if (p == kPage4K) {
    std::size_t blocks = (num_pages + kDecodeWarps - 1) / kDecodeWarps;
    auto* next = reinterpret_cast<unsigned long long*>(static_cast<std::uint8_t*>(d_temp) + t.counter);
    const std::size_t fit = resident_blocks<pages_decode_4k_kernel, kDecodeWarps * 32, kDecodeWarps * kStage4K>();
    if (fit > 0 && blocks > fit) blocks = fit;
    if (const cudaError_t e = cudaMemsetAsync(next, 0, sizeof *next, stream); e != cudaSuccess) {
      (void)cudaGetLastError();
      return {StatusCode::device_error, cudaGetErrorString(e)};
    }
    pages_decode_4k_kernel<<<static_cast<unsigned>(blocks), kDecodeWarps * 32, kDecodeWarps * kStage4K, stream>>>(
        d_records, slots, num_pages, pages, d_statuses, next);
    return launch_status();
  }
  pages_prepare_decompress_kernel<<<page_blocks(num_pages), kPageWarps * 32, 0, stream>>>(d_records, slots, num_pages,
                                                                                          p, pages, a);
  if (Status s = launch_status(); !s) return s;
  if (Status s = lz4_decompress_async(a.in_ptrs, a.in_sizes, page_size, num_pages, a.codec, t.codec_bytes,
                                      a.out_ptrs, a.out_caps, a.out_sizes, a.statuses, stream);
      !s) {
    return s;
  }
  if (d_statuses) {
    constexpr int kThreads = 256;
    pages_finish_decompress_kernel<<<static_cast<unsigned>((num_pages + kThreads - 1) / kThreads), kThreads, 0,
                                     stream>>>(d_records, num_pages, p, a, d_statuses);
  }
  return launch_status();
}

}  // namespace tandem::gpu
