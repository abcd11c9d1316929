// The lzr benchmark's GPU half in a build without CUDA: there is none.
#include "bench/lzr_bench.hpp"

namespace tandem::bench {

bool lzr_gpu_compiled() { return false; }

LzrGpuFigures lzr_gpu_measure(std::span<const std::uint8_t>, std::size_t, const lzr::Params&,
                              const std::vector<std::vector<std::uint8_t>>&, double, int) {
  LzrGpuFigures f;
  f.error = "this build has no CUDA backend";
  return f;
}

}  // namespace tandem::bench
