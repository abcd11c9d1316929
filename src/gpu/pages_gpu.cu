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
  if (i >= num_pages || a.in_sizes[i] == 0) return;  // a fill page has its record
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

__global__ void pages_finish_decompress_kernel(const PageRecord* records, std::size_t num_pages,
                                               std::uint32_t page_size, Arrays a, ItemStatus* statuses) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= num_pages) return;
  statuses[i] = pagek::finish_decompress(records[i], page_size, a.statuses[i], a.out_sizes[i]);
}

Status launch_status() {
  const cudaError_t e = cudaPeekAtLastError();
  if (e == cudaSuccess) return {};
  (void)cudaGetLastError();
  return {StatusCode::device_error, cudaGetErrorString(e)};
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
  if (!pagek::page_temp_layout(compress, num_pages, page_size, t) || num_pages / kPageWarps >= 0x7fffffff) {
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
