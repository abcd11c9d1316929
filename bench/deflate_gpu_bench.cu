// The GPU part of the deflate benchmark (deflate_gpu_bench.hpp): device
// buffers made once, an untimed warm-up call, then timed calls between two
// CUDA events on one stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/bench_cuda.cuh"
#include "bench/deflate_gpu_bench.hpp"
#include "gpu/deflate_gpu.hpp"

namespace tandem::bench {

bool deflate_gpu_measure(const unsigned char* data, std::size_t n, std::size_t chunk, int runs, DeflateGpuResult* r,
                         std::string* error) {
  if (!device0_name(&r->device, error)) return false;
  const std::size_t items = std::max<std::size_t>(1, (n + chunk - 1) / chunk);
  std::vector<const void*> in_ptrs(items);
  std::vector<void*> out_ptrs(items);
  std::vector<std::size_t> in_sizes(items), caps(items), out_at(items);
  std::size_t out_total = 0;
  DeviceMem d_in, d_out, d_arrays, d_temp, d_starts;
  if (!cuda_ok(cudaMalloc(&d_in.p, n ? n : 1), "cudaMalloc", error)) return false;
  for (std::size_t i = 0; i < items; ++i) {
    in_sizes[i] = std::min(chunk, n - std::min(n, i * chunk));
    caps[i] = gpu::deflate_max_compressed_size(in_sizes[i]);
    out_at[i] = out_total;
    out_total += (caps[i] + 15) / 16 * 16;
  }
  if (!cuda_ok(cudaMalloc(&d_out.p, out_total), "cudaMalloc", error)) return false;
  const std::size_t arrays = items * (2 * sizeof(void*) + 3 * sizeof(std::size_t) + sizeof(gpu::ItemStatus));
  if (!cuda_ok(cudaMalloc(&d_arrays.p, arrays + 64), "cudaMalloc", error)) return false;
  auto* base = static_cast<unsigned char*>(d_arrays.p);
  auto** d_in_ptrs = reinterpret_cast<const void**>(base);
  auto** d_out_ptrs = reinterpret_cast<void**>(base + items * sizeof(void*));
  auto* d_in_sizes = reinterpret_cast<std::size_t*>(base + 2 * items * sizeof(void*));
  auto* d_caps = d_in_sizes + items;
  auto* d_out_sizes = d_caps + items;
  auto* d_statuses = reinterpret_cast<gpu::ItemStatus*>(d_out_sizes + items);
  for (std::size_t i = 0; i < items; ++i) {
    in_ptrs[i] = static_cast<unsigned char*>(d_in.p) + i * chunk;
    out_ptrs[i] = static_cast<unsigned char*>(d_out.p) + out_at[i];
  }
  std::size_t temp_bytes = 0;
  if (Status s = gpu::deflate_compress_temp_size(items, std::min(chunk, std::max<std::size_t>(n, 1)), &temp_bytes);
      !s) {
    *error = s.to_string();
    return false;
  }
  if (!cuda_ok(cudaMalloc(&d_temp.p, temp_bytes), "cudaMalloc (temporary storage)", error)) return false;
  cudaStream_t stream;
  if (!cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate", error)) return false;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  bool ok = cuda_ok(cudaMemcpy(d_in.p, data, n, cudaMemcpyHostToDevice), "cudaMemcpy", error) &&
            cuda_ok(cudaMemcpy(d_in_ptrs, in_ptrs.data(), items * sizeof(void*), cudaMemcpyHostToDevice), "cudaMemcpy", error) &&
            cuda_ok(cudaMemcpy(d_out_ptrs, out_ptrs.data(), items * sizeof(void*), cudaMemcpyHostToDevice), "cudaMemcpy", error) &&
            cuda_ok(cudaMemcpy(d_in_sizes, in_sizes.data(), items * sizeof(std::size_t), cudaMemcpyHostToDevice), "cudaMemcpy", error) &&
            cuda_ok(cudaMemcpy(d_caps, caps.data(), items * sizeof(std::size_t), cudaMemcpyHostToDevice), "cudaMemcpy", error);
  const std::size_t max_item = std::min(chunk, std::max<std::size_t>(n, 1));
  const std::size_t spi = gpu::deflate_segments_per_item(max_item);
  ok = ok && cuda_ok(cudaMalloc(&d_starts.p, std::max<std::size_t>(1, items * spi) * sizeof(std::uint32_t)),
                     "cudaMalloc", error);
  const auto call = [&]() {
    return gpu::deflate_compress_async(d_in_ptrs, d_in_sizes, max_item, items, d_temp.p, temp_bytes, d_out_ptrs, d_caps,
                                       d_out_sizes, d_statuses, stream, static_cast<std::uint32_t*>(d_starts.p));
  };
  std::vector<double> times;
  for (int k = -1; ok && k < runs; ++k) {  // k = -1: the untimed warm-up
    cudaEventRecord(start, stream);
    if (Status s = call(); !s) {
      *error = s.to_string();
      ok = false;
      break;
    }
    cudaEventRecord(stop, stream);
    ok = cuda_ok(cudaEventSynchronize(stop), "deflate_compress_async", error);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (k >= 0) times.push_back(ms / 1e3);
  }
  if (ok) {
    std::sort(times.begin(), times.end());
    r->seconds = times.empty() ? 0 : times[times.size() / 2];
    r->chunk_sizes.assign(items, 0);
    std::vector<gpu::ItemStatus> statuses(items);
    std::vector<unsigned char> out(out_total);
    ok = cuda_ok(cudaMemcpy(r->chunk_sizes.data(), d_out_sizes, items * sizeof(std::size_t), cudaMemcpyDeviceToHost), "cudaMemcpy", error) &&
         cuda_ok(cudaMemcpy(statuses.data(), d_statuses, items * sizeof(gpu::ItemStatus), cudaMemcpyDeviceToHost), "cudaMemcpy", error) &&
         cuda_ok(cudaMemcpy(out.data(), d_out.p, out_total, cudaMemcpyDeviceToHost), "cudaMemcpy", error);
    r->segments_per_item = spi;
    r->segment_starts.assign(items * spi, 0);
    ok = ok && cuda_ok(cudaMemcpy(r->segment_starts.data(), d_starts.p, items * spi * sizeof(std::uint32_t),
                                  cudaMemcpyDeviceToHost),
                       "cudaMemcpy", error);
    r->compressed = 0;
    r->chunks.clear();
    for (std::size_t i = 0; ok && i < items; ++i) {
      if (statuses[i] != gpu::ItemStatus::ok) {
        *error = "chunk " + std::to_string(i) + ": " + gpu::item_status_name(statuses[i]);
        ok = false;
        break;
      }
      r->compressed += r->chunk_sizes[i];
      r->chunks.insert(r->chunks.end(), out.begin() + out_at[i], out.begin() + out_at[i] + r->chunk_sizes[i]);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  return ok;
}

}  // namespace tandem::bench
