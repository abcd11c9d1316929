// The GPU part of the inflate benchmark (inflate_bench.hpp): device buffers
// made once, an untimed warm-up call whose output is checked, then timed
// calls between two CUDA events on one stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_cuda.cuh"
#include "bench/inflate_bench.hpp"
#include "gpu/inflate_gpu.hpp"

namespace tandem::bench {

namespace {

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaStream_t stream = nullptr;
  ~Events() {
    if (start) (void)cudaEventDestroy(start);
    if (stop) (void)cudaEventDestroy(stop);
    if (stream) (void)cudaStreamDestroy(stream);
  }
};

}  // namespace

bool inflate_gpu_measure(const std::vector<unsigned char>& stream, const std::vector<std::size_t>& offsets,
                         const std::vector<std::size_t>& sizes, const std::vector<std::size_t>& out_sizes,
                         std::size_t chunk, const unsigned char* expect, std::size_t n, int runs,
                         InflateGpuResult* r, std::string* error, const InflateGpuStarts& starts) {
  if (!device0_name(&r->device, error)) return false;
  const std::size_t items = sizes.size();
  Events ev;
  if (!cuda_ok(cudaStreamCreateWithFlags(&ev.stream, cudaStreamNonBlocking), "cudaStreamCreate", error)) return false;
  if (!cuda_ok(cudaEventCreate(&ev.start), "cudaEventCreate", error)) return false;
  if (!cuda_ok(cudaEventCreate(&ev.stop), "cudaEventCreate", error)) return false;
  DeviceMem d_in, d_out, d_arrays, d_starts, d_temp;
  gpu::InflateSegments segments;
  std::size_t temp_bytes = 0;
  if (starts.starts != nullptr) {
    const std::size_t bytes = std::max<std::size_t>(1, starts.starts->size()) * sizeof(std::uint32_t);
    if (!cuda_ok(cudaMalloc(&d_starts.p, bytes), "cudaMalloc", error)) return false;
    if (!cuda_ok(cudaMemcpy(d_starts.p, starts.starts->data(), starts.starts->size() * sizeof(std::uint32_t),
                            cudaMemcpyHostToDevice),
                 "cudaMemcpy", error))
      return false;
    if (const Status s = gpu::inflate_temp_size(items, chunk, &temp_bytes); !s.ok()) {
      *error = "inflate_temp_size: " + s.to_string();
      return false;
    }
    if (!cuda_ok(cudaMalloc(&d_temp.p, std::max<std::size_t>(1, temp_bytes)), "cudaMalloc", error)) return false;
    segments.d_starts = static_cast<const std::uint32_t*>(d_starts.p);
    segments.per_item = starts.per_item;
    segments.segment_bytes = starts.segment_bytes;
    segments.max_capacity = chunk;
  }
  if (!cuda_ok(cudaMalloc(&d_in.p, stream.size() + 1), "cudaMalloc", error)) return false;
  if (!cuda_ok(cudaMalloc(&d_out.p, items * chunk + 1), "cudaMalloc", error)) return false;
  const std::size_t arrays = items * (2 * sizeof(void*) + 3 * sizeof(std::size_t) + sizeof(gpu::InflateStatus));
  if (!cuda_ok(cudaMalloc(&d_arrays.p, arrays + 64), "cudaMalloc", error)) return false;
  auto* base = static_cast<unsigned char*>(d_arrays.p);
  auto** d_in_ptrs = reinterpret_cast<const void**>(base);
  auto** d_out_ptrs = reinterpret_cast<void**>(base + items * sizeof(void*));
  auto* d_in_sizes = reinterpret_cast<std::size_t*>(base + 2 * items * sizeof(void*));
  auto* d_caps = d_in_sizes + items;
  auto* d_sizes = d_caps + items;
  auto* d_status = reinterpret_cast<gpu::InflateStatus*>(d_sizes + items);
  std::vector<const void*> in_ptrs(items);
  std::vector<void*> out_ptrs(items);
  std::vector<std::size_t> caps(out_sizes);  // exact: segment starts need it
  for (std::size_t i = 0; i < items; ++i) {
    in_ptrs[i] = static_cast<const unsigned char*>(d_in.p) + offsets[i];
    out_ptrs[i] = static_cast<unsigned char*>(d_out.p) + i * chunk;
  }
  if (!cuda_ok(cudaMemcpy(d_in.p, stream.data(), stream.size(), cudaMemcpyHostToDevice), "cudaMemcpy", error) ||
      !cuda_ok(cudaMemcpy(d_in_ptrs, in_ptrs.data(), items * sizeof(void*), cudaMemcpyHostToDevice), "cudaMemcpy",
             error) ||
      !cuda_ok(cudaMemcpy(d_out_ptrs, out_ptrs.data(), items * sizeof(void*), cudaMemcpyHostToDevice), "cudaMemcpy",
             error) ||
      !cuda_ok(cudaMemcpy(d_in_sizes, sizes.data(), items * sizeof(std::size_t), cudaMemcpyHostToDevice), "cudaMemcpy",
             error) ||
      !cuda_ok(cudaMemcpy(d_caps, caps.data(), items * sizeof(std::size_t), cudaMemcpyHostToDevice), "cudaMemcpy",
             error))
    return false;
  auto call = [&]() {
    return gpu::inflate_async(reinterpret_cast<const void* const*>(d_in_ptrs), d_in_sizes, items, d_temp.p,
                              temp_bytes, reinterpret_cast<void* const*>(d_out_ptrs), d_caps, d_sizes, d_status,
                              nullptr, nullptr, ev.stream, segments);
  };
  // Warm-up, checked.
  if (const Status s = call(); !s.ok()) {
    *error = "inflate_async: " + s.to_string();
    return false;
  }
  if (!cuda_ok(cudaStreamSynchronize(ev.stream), "inflate kernel", error)) return false;
  std::vector<std::size_t> got_sizes(items);
  std::vector<gpu::InflateStatus> got_status(items);
  std::vector<unsigned char> out(items * chunk);
  if (!cuda_ok(cudaMemcpy(got_sizes.data(), d_sizes, items * sizeof(std::size_t), cudaMemcpyDeviceToHost), "cudaMemcpy",
             error) ||
      !cuda_ok(cudaMemcpy(got_status.data(), d_status, items * sizeof(gpu::InflateStatus), cudaMemcpyDeviceToHost),
             "cudaMemcpy", error) ||
      !cuda_ok(cudaMemcpy(out.data(), d_out.p, items * chunk, cudaMemcpyDeviceToHost), "cudaMemcpy", error))
    return false;
  for (std::size_t i = 0; i < items; ++i) {
    if (got_status[i] != gpu::InflateStatus::ok || got_sizes[i] != out_sizes[i] ||
        std::memcmp(out.data() + i * chunk, expect + i * chunk, out_sizes[i]) != 0) {
      *error = "GPU inflate of chunk " + std::to_string(i) + " differs from the input (status " +
               gpu::inflate::inflate_status_name(got_status[i]) + ")";
      return false;
    }
  }
  (void)n;
  std::vector<double> times;
  for (int k = 0; k < std::max(1, runs); ++k) {
    if (!cuda_ok(cudaEventRecord(ev.start, ev.stream), "cudaEventRecord", error)) return false;
    if (const Status s = call(); !s.ok()) {
      *error = "inflate_async: " + s.to_string();
      return false;
    }
    if (!cuda_ok(cudaEventRecord(ev.stop, ev.stream), "cudaEventRecord", error)) return false;
    if (!cuda_ok(cudaEventSynchronize(ev.stop), "cudaEventSynchronize", error)) return false;
    float ms = 0;
    if (!cuda_ok(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime", error)) return false;
    times.push_back(ms / 1e3);
  }
  std::sort(times.begin(), times.end());
  r->seconds = times[times.size() / 2];
  return true;
}

}  // namespace tandem::bench
