// The GPU deflate benchmark's GPU part in a build without CUDA: there is none.
#include "bench/deflate_gpu_bench.hpp"

namespace tandem::bench {

bool deflate_gpu_measure(const unsigned char*, std::size_t, std::size_t, int, DeflateGpuResult*, std::string* error) {
  *error = "this build of tandem has no CUDA backend";
  return false;
}

}  // namespace tandem::bench
