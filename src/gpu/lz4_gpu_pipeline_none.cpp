// The LZ4 pipeline in a build without CUDA: there is no device pipeline (the
// emulated one, in lz4_gpu_pipeline_common.cpp, is in every build).
#include "gpu/lz4_gpu_pipeline.hpp"

namespace tandem::gpu {

Status Lz4Pipeline::shared(int, Lz4Pipeline** pipeline) {
  if (pipeline) *pipeline = nullptr;
  return {StatusCode::no_device, "built without CUDA"};
}

}  // namespace tandem::gpu
