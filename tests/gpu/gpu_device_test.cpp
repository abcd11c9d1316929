// GPU presence and backend selection. Skips with a message where no CUDA
// device is present (CI has none).
#include <gtest/gtest.h>

#include "tandem/tandem.hpp"

namespace {

bool have_gpu() { return tandem::backend_info().gpu_count > 0; }

TEST(GpuDevice, ReportsTheDevice) {
  const tandem::BackendInfo info = tandem::backend_info();
  if (!info.cuda_compiled) GTEST_SKIP() << "this build has no CUDA backend";
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped";
  EXPECT_FALSE(info.gpu_name.empty());
}

TEST(GpuDevice, AutoChoosesTheGpuExceptForHcLevels) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped";
  tandem::Backend b = tandem::Backend::cpu;
  ASSERT_TRUE(tandem::resolve_backend(tandem::Codec::lz4, tandem::Backend::automatic, &b).ok());
  EXPECT_EQ(b, tandem::Backend::gpu);
  ASSERT_TRUE(tandem::resolve_backend(tandem::Codec::lz4, tandem::Backend::automatic, 9, &b).ok());
  EXPECT_EQ(b, tandem::Backend::cpu) << "the GPU encoder has no HC levels";
  EXPECT_EQ(tandem::resolve_backend(tandem::Codec::lz4, tandem::Backend::gpu, 9, &b).code,
            tandem::StatusCode::unsupported);
}

}  // namespace
