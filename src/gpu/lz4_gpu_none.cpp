// The batched GPU calls in a build without CUDA: they say so.
#include "gpu/lz4_gpu_engine.hpp"
#include "gpu/pages_gpu_engine.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

namespace {
constexpr Status kNoCuda{StatusCode::no_device, "this build of tandem has no CUDA backend"};
}

Status lz4_compress_async(const void* const*, const std::size_t*, std::size_t, std::size_t, void*, std::size_t,
                          void* const*, const std::size_t*, std::size_t*, ItemStatus*, Stream) {
  return kNoCuda;
}

Status lz4_decompress_async(const void* const*, const std::size_t*, std::size_t, std::size_t, void*, std::size_t,
                            void* const*,
                            const std::size_t*, std::size_t*, ItemStatus*, Stream) {
  return kNoCuda;
}

Status pages_compress_async(const void*, std::size_t, std::size_t, void*, std::size_t, void*, PageRecord*, Stream) {
  return kNoCuda;
}

Status pages_decompress_async(const PageRecord*, const void*, std::size_t, std::size_t, void*, std::size_t, void*,
                              ItemStatus*, Stream) {
  return kNoCuda;
}

Status Lz4HostEngine::create(std::unique_ptr<Lz4HostEngine>*) { return kNoCuda; }
Status Lz4HostEngine::shared(Lz4HostEngine**) { return kNoCuda; }
Status PagesHostEngine::shared(PagesHostEngine**) { return kNoCuda; }

}  // namespace tandem::gpu
