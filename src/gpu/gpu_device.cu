// The GPU device query of a CUDA build. A machine without a driver or device
// reports 0 devices rather than an error: the CPU backend then serves.
#include <cuda_runtime.h>

#include "gpu/gpu_device.hpp"

namespace tandem::gpu {

bool compiled() { return true; }

int device_count(std::string* name0) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error of a missing driver
    return 0;
  }
  if (n > 0 && name0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) *name0 = prop.name;
  }
  return n;
}

}  // namespace tandem::gpu
