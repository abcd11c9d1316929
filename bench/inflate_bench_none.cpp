// The GPU part of the inflate benchmark in a build without CUDA: there is none.
#include "bench/inflate_bench.hpp"

namespace tandem::bench {

bool inflate_gpu_measure(const std::vector<unsigned char>&, const std::vector<std::size_t>&,
                         const std::vector<std::size_t>&, const std::vector<std::size_t>&, std::size_t,
                         const unsigned char*, std::size_t, int, InflateGpuResult*, std::string* error,
                         const InflateGpuStarts&) {
  *error = "this build of tandem has no CUDA backend";
  return false;
}

}  // namespace tandem::bench
