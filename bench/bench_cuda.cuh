// What the GPU measurements share (CUDA code only): owners of device and
// pinned memory, events and streams.
//
// Teardown errors have nowhere to go: a failed trial already reported the
// first error, and a later cudaFree cannot make its figures wrong.
#pragma once

#include <cuda_runtime.h>

#include <memory>

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

}  // namespace tandem::bench
