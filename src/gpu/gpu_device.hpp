// What the CUDA runtime reports about this machine's GPUs. Implemented in
// gpu_device.cu when the CUDA backend is compiled, else by gpu_device_none.cpp.
#pragma once

#include <string>

namespace tandem::gpu {

// True when this library was built with the CUDA backend.
bool compiled();
// Number of usable CUDA devices (0 when none, or when the driver is missing);
// *name0 receives the name of device 0 when there is one.
int device_count(std::string* name0);

}  // namespace tandem::gpu
