// The GPU measurement in a build without CUDA: there is none.
#include "bench/bench_gpu.hpp"

namespace tandem::bench {

bool gpu_bench_compiled() { return false; }

std::unique_ptr<GpuTrial> make_gpu_trial(std::span<const std::uint8_t>, std::uint64_t, std::size_t, GpuMode,
                                         std::string* error) {
  *error = "this build of tandem has no CUDA backend";
  return nullptr;
}

}  // namespace tandem::bench
