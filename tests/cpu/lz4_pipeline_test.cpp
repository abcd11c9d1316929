// The emulated LZ4 pipeline (gpu::Lz4Pipeline::emulated, the CPU stand-in for
// the device pipeline that the hybrid scheduler's tests use), through the
// checks of support/lz4_pipeline_support.hpp that tests/gpu runs on the
// device: compressed chunks equal the GPU encoder twin's frame blocks and,
// wrapped in a frame header and end mark, decode with liblz4's LZ4F API to
// the input, in 64 KiB and 256 KiB blocks, with and without block checksums,
// for random, constant, text-like and mixed data (and a Silesia file when the
// corpus is here); decompression gives the input back, into the pipeline's
// buffers and into direct outputs; batches complete in FIFO order, at most
// depth() in flight; malformed chunks fail alone with bad_data or
// checksum_mismatch; short blocks inside a chunk come back contiguous; each
// injected fault fires once, in the batch it was armed for. Without CUDA,
// shared() answers no_device.
#include <string>
#include <vector>

#include "gpu/lz4_gpu_pipeline.hpp"
#include "support/lz4_pipeline_support.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::Status;
using tandem::StatusCode;
using tandem::gpu::Fault;
using tandem::gpu::Lz4Pipeline;
using tandem::test::Bytes;
using tandem::test::ChunkResult;
using tandem::test::PageableArena;

Bytes concat(const std::vector<ChunkResult>& r) {
  Bytes all;
  for (const ChunkResult& c : r) all.insert(all.end(), c.bytes.begin(), c.bytes.end());
  return all;
}

struct RoundTrip : ::testing::TestWithParam<std::tuple<std::size_t, bool>> {};

TEST_P(RoundTrip, Lz4PipelineEmulatedFramesDecodeWithLz4fAndBack) {
  const auto [bs, checksum] = GetParam();
  auto p = Lz4Pipeline::emulated();
  EXPECT_EQ(p->depth(), tandem::gpu::kPipelineDepth);
  EXPECT_GT(p->batch_bytes(), 0u);
  for (const auto& s : tandem::test::pipeline_samples(bs)) {
    SCOPED_TRACE(s.name);
    PageableArena arena;
    std::vector<ChunkResult> packed;
    tandem::test::check_pipeline_round_trip(*p, s.data, bs, checksum, nullptr, arena.alloc(), &packed);
    if (s.name == "constant") EXPECT_LT(concat(packed).size(), s.data.size() / 50);
    if (s.name == "random") EXPECT_GT(concat(packed).size(), s.data.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Lz4Pipeline, RoundTrip,
                         ::testing::Combine(::testing::Values(std::size_t{64} << 10, std::size_t{256} << 10),
                                            ::testing::Bool()));

TEST(Lz4PipelineEmulated, DepthAndFifoOrder) {
  auto p = Lz4Pipeline::emulated();
  tandem::test::check_pipeline_depth_and_fifo(*p);
}

TEST(Lz4PipelineEmulated, MalformedChunksFailAlone) {
  auto p = Lz4Pipeline::emulated();
  tandem::test::check_pipeline_malformed(*p);
}

TEST(Lz4PipelineEmulated, ShortBlocksInsideAChunkComeBackContiguous) {
  auto p = Lz4Pipeline::emulated();
  PageableArena arena;
  tandem::test::check_pipeline_short_blocks(*p, arena.alloc());
}

TEST(Lz4PipelineFaults, ParseFault) {
  Fault f = Fault::none;
  EXPECT_TRUE(tandem::gpu::parse_fault("no-device", &f));
  EXPECT_EQ(f, Fault::no_device);
  EXPECT_TRUE(tandem::gpu::parse_fault("oom", &f));
  EXPECT_EQ(f, Fault::out_of_memory);
  EXPECT_TRUE(tandem::gpu::parse_fault("kernel", &f));
  EXPECT_EQ(f, Fault::kernel);
  EXPECT_TRUE(tandem::gpu::parse_fault("copy", &f));
  EXPECT_EQ(f, Fault::copy);
  EXPECT_FALSE(tandem::gpu::parse_fault("Kernel", &f));
  EXPECT_FALSE(tandem::gpu::parse_fault("", &f));
  EXPECT_FALSE(tandem::gpu::parse_fault(nullptr, &f));
}

TEST(Lz4PipelineFaults, EmulatedFaultsFireOnceAtTheirBatch) {
  auto p = Lz4Pipeline::emulated();
  for (Fault f : {Fault::out_of_memory, Fault::copy, Fault::kernel}) {
    SCOPED_TRACE(static_cast<int>(f));
    tandem::test::check_pipeline_fault_fires_once(*p, f);
  }
}

TEST(Lz4PipelineShared, NoDeviceWithoutCuda) {
  if (tandem::backend_info().cuda_compiled) GTEST_SKIP() << "built with CUDA: tests/gpu covers shared()";
  Lz4Pipeline* p = reinterpret_cast<Lz4Pipeline*>(1);
  const Status s = Lz4Pipeline::shared(0, &p);
  EXPECT_EQ(s.code, StatusCode::no_device);
  EXPECT_EQ(p, nullptr);
}

}  // namespace
