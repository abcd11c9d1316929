// The batched GPU deflate calls in a build without CUDA: they say so.
#include "gpu/deflate_gpu.hpp"

namespace tandem::gpu {

namespace {
constexpr Status kNoCuda{StatusCode::no_device, "this build of tandem has no CUDA backend"};
}

Status deflate_compress_temp_size(std::size_t, std::size_t, std::size_t*) {
  return kNoCuda;
}

Status deflate_compress_async(const void* const*, const std::size_t*, std::size_t, std::size_t, void*, std::size_t,
                              void* const*, const std::size_t*, std::size_t*, ItemStatus*, Stream,
                              std::uint32_t*) {
  return kNoCuda;
}

}  // namespace tandem::gpu
