// The batched rANS GPU calls in a build without CUDA: they say so.
#include "gpu/rans_gpu.hpp"

namespace tandem::gpu {

namespace {
constexpr Status kNoCuda{StatusCode::no_device, "this build of tandem has no CUDA backend"};
}

Status rans_compress_temp_size(std::size_t, std::size_t, const rans::Params&, std::size_t*) { return kNoCuda; }

Status rans_compress_async(const void* const*, const std::size_t*, std::size_t, std::size_t, const rans::Params&, void*,
                           std::size_t, void* const*, const std::size_t*, std::size_t*, rans::Error*, Stream) {
  return kNoCuda;
}

Status rans_decompress_temp_size(std::size_t, std::size_t, std::size_t*) { return kNoCuda; }

Status rans_decompress_async(const void* const*, const std::size_t*, std::size_t, std::size_t, void*, std::size_t,
                             void* const*, const std::size_t*, std::size_t*, rans::Error*, Stream) {
  return kNoCuda;
}

}  // namespace tandem::gpu
