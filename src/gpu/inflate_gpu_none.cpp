// The batched inflate GPU calls in a build without CUDA: they say so.
#include "gpu/inflate_gpu.hpp"

namespace tandem::gpu {

namespace {
constexpr Status kNoCuda{StatusCode::no_device, "this build of tandem has no CUDA backend"};
}

Status inflate_temp_size(std::size_t, std::size_t, std::size_t*) { return kNoCuda; }

Status inflate_async(const void* const*, const std::size_t*, std::size_t, void*, std::size_t, void* const*,
                     const std::size_t*, std::size_t*, InflateStatus*, InflateEnd*, std::size_t*, Stream,
                     const InflateSegments&) {
  return kNoCuda;
}

}  // namespace tandem::gpu
