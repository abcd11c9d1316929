// The GPU device query of a CPU-only build: no CUDA, no devices.
#include "gpu/gpu_device.hpp"

namespace tandem::gpu {

bool compiled() { return false; }
int device_count(std::string*) { return 0; }

}  // namespace tandem::gpu
