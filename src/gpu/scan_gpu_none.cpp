// The archive scanner's CUDA device in a build without CUDA: it says so, and
// scan_to_device runs on the emulation.
#include "gpu/scan_gpu.hpp"

namespace tandem::gpu {

Status make_cuda_scan_device(Stream, std::unique_ptr<ScanDevice>*) {
  return {StatusCode::no_device, "this build of tandem has no CUDA backend"};
}

void free_cuda_scan_memory(void*) {}

}  // namespace tandem::gpu
