// What the GPU measurements share (CUDA code only): owners of device and
// pinned memory, events and streams.
//
// Teardown errors have nowhere to go: a failed trial already reported the
// first error, and a later cudaFree cannot make its figures wrong.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace tandem::bench {

struct CudaFree {
  void operator()(void* p) const { (void)cudaFree(p); }
};
struct CudaFreeHost {
  void operator()(void* p) const { (void)cudaFreeHost(p); }
};
struct CudaEventDestroy {
  void operator()(cudaEvent_t e) const { (void)cudaEventDestroy(e); }
};
struct CudaStreamDestroy {
  void operator()(cudaStream_t s) const { (void)cudaStreamDestroy(s); }
};
template <class T>
using DevicePtr = std::unique_ptr<T, CudaFree>;
template <class T>
using PinnedPtr = std::unique_ptr<T, CudaFreeHost>;

// Untyped device memory freed on scope exit: cudaMalloc(&m.p, bytes).
struct DeviceMem {
  void* p = nullptr;
  DeviceMem() = default;
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  ~DeviceMem() { (void)cudaFree(p); }
};

// True when e is cudaSuccess; else false, with *error naming the call and
// the error.
inline bool cuda_ok(cudaError_t e, const char* what, std::string* error) {
  if (e == cudaSuccess) return true;
  *error = std::string(what) + ": " + cudaGetErrorString(e);
  return false;
}

// The name of device 0 into *name; false, with the reason in *error, when
// there is no CUDA device or its properties cannot be read.
inline bool device0_name(std::string* name, std::string* error) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    *error = "no CUDA device";
    return false;
  }
  cudaDeviceProp prop{};
  if (!cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", error)) return false;
  *name = prop.name;
  return true;
}

}  // namespace tandem::bench
