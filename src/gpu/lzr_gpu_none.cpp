// The lzr device calls in a build without CUDA: each says there is no device.
#include "tandem/lzr.hpp"

namespace tandem::gpu {

namespace {
constexpr Status kNoDevice{StatusCode::no_device, "tandem was built without CUDA"};
}

Status lzr_compress_temp_size(std::size_t, std::size_t, const lzr::Params&, std::size_t*) { return kNoDevice; }

Status lzr_compress_async(const void* const*, const std::size_t*, std::size_t, std::size_t, const lzr::Params&, void*,
                          std::size_t, void* const*, const std::size_t*, std::size_t*, lzr::Error*, Stream) {
  return kNoDevice;
}

Status lzr_decompress_temp_size(std::size_t, std::size_t, std::size_t*) { return kNoDevice; }

Status lzr_decompress_async(const void* const*, const std::size_t*, std::size_t, std::size_t, void*, std::size_t,
                            void* const*, const std::size_t*, std::size_t*, lzr::Error*, Stream) {
  return kNoDevice;
}

}  // namespace tandem::gpu
