// The rANS benchmark's GPU half in a build without CUDA: there is none.
#include "bench/rans_bench.hpp"

namespace tandem::bench {

bool rans_gpu_compiled() { return false; }

RansGpuFigures rans_gpu_measure(std::span<const std::uint8_t>, std::size_t, const rans::Params&,
                                const std::vector<std::vector<std::uint8_t>>&, double, int) {
  RansGpuFigures f;
  f.error = "this build of tandem has no CUDA backend";
  return f;
}

}  // namespace tandem::bench
