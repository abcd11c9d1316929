// The lzr benchmark's GPU half: every item of the input in device memory,
// one batched call per direction, timed with CUDA events.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "bench/bench_cuda.cuh"
#include "bench/lzr_bench.hpp"

namespace tandem::bench {

bool lzr_gpu_compiled() { return true; }

namespace {

// One failed CUDA call ends the measurement with its name.
struct Failed {
  std::string what;
};
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Failed{std::string(what) + ": " + cudaGetErrorString(e)};
}
void check(const Status& s, const char* what) {
  if (!s) throw Failed{std::string(what) + ": " + s.to_string()};
}

template <class T>
DevicePtr<T> device_array(std::size_t n) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  return DevicePtr<T>(static_cast<T*>(p));
}

// Runs `call` (which queues work on `stream`) until min_runs runs and
// min_seconds have passed; the median of the event-timed runs.
template <class F>
double time_median(cudaStream_t stream, double min_seconds, int min_runs, F call) {
  cudaEvent_t a = nullptr, b = nullptr;
  check(cudaEventCreate(&a), "cudaEventCreate");
  std::unique_ptr<CUevent_st, CudaEventDestroy> own_a(a);
  check(cudaEventCreate(&b), "cudaEventCreate");
  std::unique_ptr<CUevent_st, CudaEventDestroy> own_b(b);
  call();  // warm-up
  check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> runs;
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(runs.size()) < min_runs ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < min_seconds) {
    check(cudaEventRecord(a, stream), "cudaEventRecord");
    call();
    check(cudaEventRecord(b, stream), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    runs.push_back(ms / 1e3);
    if (runs.size() >= 1000) break;
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

}  // namespace

LzrGpuFigures lzr_gpu_measure(std::span<const std::uint8_t> input, std::size_t item, const lzr::Params& params,
                              const std::vector<std::vector<std::uint8_t>>& cpu_frames, double min_seconds,
                              int min_runs) {
  LzrGpuFigures f;
  try {
    const std::size_t n = input.size();
    const std::size_t items = (n + item - 1) / item;
    if (items == 0) throw Failed{"empty input"};
    const std::size_t cap = lzr::max_encoded_size(item, params);
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    std::unique_ptr<CUstream_st, CudaStreamDestroy> own_stream(stream);

    auto d_in = device_array<std::uint8_t>(n);
    auto d_out = device_array<std::uint8_t>(items * cap);
    auto d_back = device_array<std::uint8_t>(items * item);
    check(cudaMemcpy(d_in.get(), input.data(), n, cudaMemcpyHostToDevice), "copy in");

    std::vector<const void*> in_ptrs(items);
    std::vector<std::size_t> in_sizes(items), out_caps(items, cap), back_caps(items);
    std::vector<void*> out_ptrs(items), back_ptrs(items);
    for (std::size_t i = 0; i < items; ++i) {
      in_ptrs[i] = d_in.get() + i * item;
      in_sizes[i] = std::min(item, n - i * item);
      out_ptrs[i] = d_out.get() + i * cap;
      back_ptrs[i] = d_back.get() + i * item;
      back_caps[i] = in_sizes[i];
    }
    auto put = [&](auto& host) {
      using T = typename std::decay_t<decltype(host)>::value_type;
      auto d = device_array<T>(host.size());
      check(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "copy arrays");
      return d;
    };
    auto d_in_ptrs = put(in_ptrs);
    auto d_in_sizes = put(in_sizes);
    auto d_out_ptrs = put(out_ptrs);
    auto d_out_caps = put(out_caps);
    auto d_back_ptrs = put(back_ptrs);
    auto d_back_caps = put(back_caps);
    auto d_out_sizes = device_array<std::size_t>(items);
    auto d_back_sizes = device_array<std::size_t>(items);
    auto d_errors = device_array<lzr::Error>(items);

    check(gpu::lzr_compress_temp_size(items, item, params, &f.encode_temp), "lzr_compress_temp_size");
    check(gpu::lzr_decompress_temp_size(items, item, &f.decode_temp), "lzr_decompress_temp_size");
    auto d_temp = device_array<std::uint8_t>(std::max(f.encode_temp, f.decode_temp));

    f.encode_seconds = time_median(stream, min_seconds, min_runs, [&] {
      check(gpu::lzr_compress_async(reinterpret_cast<const void* const*>(d_in_ptrs.get()), d_in_sizes.get(), item,
                                    items, params, d_temp.get(), f.encode_temp,
                                    reinterpret_cast<void* const*>(d_out_ptrs.get()), d_out_caps.get(),
                                    d_out_sizes.get(), d_errors.get(), stream),
            "lzr_compress_async");
    });
    std::vector<std::size_t> sizes(items);
    std::vector<lzr::Error> errors(items);
    check(cudaMemcpy(sizes.data(), d_out_sizes.get(), items * sizeof(std::size_t), cudaMemcpyDeviceToHost), "sizes");
    check(cudaMemcpy(errors.data(), d_errors.get(), items * sizeof(lzr::Error), cudaMemcpyDeviceToHost), "errors");
    std::vector<std::uint8_t> frames(items * cap);
    check(cudaMemcpy(frames.data(), d_out.get(), items * cap, cudaMemcpyDeviceToHost), "frames");
    f.identical = cpu_frames.size() == items;
    for (std::size_t i = 0; i < items; ++i) {
      if (errors[i] != lzr::Error::ok) throw Failed{std::string("GPU encoder: ") + lzr::error_name(errors[i])};
      f.compressed += sizes[i];
      if (f.identical && (cpu_frames[i].size() != sizes[i] ||
                          std::memcmp(cpu_frames[i].data(), frames.data() + i * cap, sizes[i]) != 0)) {
        f.identical = false;
      }
    }

    // Decode the GPU's own frames.
    auto d_sizes_in = put(sizes);
    std::vector<const void*> enc_ptrs(out_ptrs.begin(), out_ptrs.end());
    auto d_enc_ptrs = put(enc_ptrs);
    f.decode_seconds = time_median(stream, min_seconds, min_runs, [&] {
      check(gpu::lzr_decompress_async(reinterpret_cast<const void* const*>(d_enc_ptrs.get()), d_sizes_in.get(), item,
                                      items, d_temp.get(), f.decode_temp,
                                      reinterpret_cast<void* const*>(d_back_ptrs.get()), d_back_caps.get(),
                                      d_back_sizes.get(), d_errors.get(), stream),
            "lzr_decompress_async");
    });
    std::vector<std::uint8_t> back(items * item);
    check(cudaMemcpy(back.data(), d_back.get(), items * item, cudaMemcpyDeviceToHost), "decoded");
    check(cudaMemcpy(errors.data(), d_errors.get(), items * sizeof(lzr::Error), cudaMemcpyDeviceToHost), "errors");
    f.round_trip = true;
    for (std::size_t i = 0; i < items; ++i) {
      if (errors[i] != lzr::Error::ok || std::memcmp(back.data() + i * item, input.data() + i * item, in_sizes[i]) != 0) {
        f.round_trip = false;
      }
    }
    f.ran = true;
  } catch (const Failed& e) {
    f.error = e.what;
  }
  return f;
}

}  // namespace tandem::bench
