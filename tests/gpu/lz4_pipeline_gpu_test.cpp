// The LZ4 pipeline on the device (gpu::Lz4Pipeline::shared), through the
// checks of support/lz4_pipeline_support.hpp that tests/cpu runs on the
// emulated pipeline: compressed chunks equal, byte for byte, the frame blocks
// of the GPU encoder's twin and the emulated pipeline's output, and decode
// with liblz4's LZ4F API; decompression gives the input back into the
// pipeline's buffers and into direct outputs, pageable and pinned; inputs in
// pageable and in pinned memory (and both in one batch); a batch larger than
// batch_bytes(); outputs held across later batches; depth and FIFO order;
// malformed chunks fail alone; short blocks inside a chunk; each injected
// fault fires once, where its kind does; the pipeline of each device; frames
// placed in pinned output by the GPU equal the ones copied out.
//
// Tests that need a device skip without one; without CUDA, shared() must
// answer no_device.
#if TANDEM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cstring>
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
using tandem::gpu::PipelineIn;
using tandem::gpu::PipelineMode;
using tandem::gpu::PipelineOut;
using tandem::test::Bytes;
using tandem::test::ChunkResult;
using tandem::test::HostAlloc;
using tandem::test::PageableArena;

bool have_gpu() { return tandem::backend_info().gpu_count > 0; }

#define REQUIRE_GPU()                                                                              \
  do {                                                                                             \
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU pipeline tests skipped"; \
  } while (0)

// The pipeline of device 0, locked for the test.
Lz4Pipeline* device_pipeline() {
  Lz4Pipeline* p = nullptr;
  const Status s = Lz4Pipeline::shared(0, &p);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return s.ok() ? p : nullptr;
}

#if TANDEM_HAVE_CUDA
// Pinned host memory (cudaMallocHost) that lives as long as the arena.
class PinnedArena {
 public:
  ~PinnedArena() {
    for (void* p : blocks_) (void)cudaFreeHost(p);
  }
  std::uint8_t* get(std::size_t n) {
    void* p = nullptr;
    if (cudaMallocHost(&p, n ? n : 1) != cudaSuccess) {
      ADD_FAILURE() << "cudaMallocHost failed";
      return nullptr;
    }
    blocks_.push_back(p);
    return static_cast<std::uint8_t*>(p);
  }
  HostAlloc alloc() {
    return [this](std::size_t n) { return get(n); };
  }

 private:
  std::vector<void*> blocks_;
};
#endif

TEST(Lz4PipelineGpu, SharedAnswersNoDeviceWithoutOne) {
  Lz4Pipeline* p = nullptr;
  if (!have_gpu()) {
    const Status s = Lz4Pipeline::shared(0, &p);
    EXPECT_EQ(s.code, StatusCode::no_device) << s.to_string();
    EXPECT_EQ(p, nullptr);
    return;
  }
  EXPECT_EQ(Lz4Pipeline::shared(1000, &p).code, StatusCode::no_device);
  Lz4Pipeline* a = nullptr;
  Lz4Pipeline* b = nullptr;
  ASSERT_TRUE(Lz4Pipeline::shared(0, &a).ok());
  ASSERT_TRUE(Lz4Pipeline::shared(0, &b).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->depth(), tandem::gpu::kPipelineDepth);
  EXPECT_EQ(a->batch_bytes(), std::size_t{32} << 20);
}

struct GpuRoundTrip : ::testing::TestWithParam<std::tuple<std::size_t, bool>> {};

TEST_P(GpuRoundTrip, Lz4PipelineGpuMatchesTheTwinAndRoundTrips) {
  REQUIRE_GPU();
  const auto [bs, checksum] = GetParam();
  Lz4Pipeline* p = device_pipeline();
  ASSERT_NE(p, nullptr);
  const auto lock = p->lock();
  auto emulated = Lz4Pipeline::emulated();
  for (const auto& s : tandem::test::pipeline_samples(bs)) {
    SCOPED_TRACE(s.name);
    PageableArena pageable;
    std::vector<ChunkResult> gpu_packed, cpu_packed;
    tandem::test::check_pipeline_round_trip(*p, s.data, bs, checksum, nullptr, pageable.alloc(), &gpu_packed);
    tandem::test::check_pipeline_round_trip(*emulated, s.data, bs, checksum, nullptr, pageable.alloc(), &cpu_packed);
    ASSERT_EQ(gpu_packed.size(), cpu_packed.size());
    for (std::size_t i = 0; i < gpu_packed.size(); ++i) {
      EXPECT_EQ(gpu_packed[i].bytes, cpu_packed[i].bytes) << "chunk " << i;
    }
#if TANDEM_HAVE_CUDA
    SCOPED_TRACE("pinned input and direct outputs");
    PinnedArena pinned;
    tandem::test::check_pipeline_round_trip(*p, s.data, bs, checksum, pinned.alloc(), pinned.alloc());
#endif
  }
}

INSTANTIATE_TEST_SUITE_P(Lz4PipelineGpu, GpuRoundTrip,
                         ::testing::Combine(::testing::Values(std::size_t{64} << 10, std::size_t{256} << 10),
                                            ::testing::Bool()));

#if TANDEM_HAVE_CUDA
// Pinned and pageable chunks in one batch; a batch larger than batch_bytes();
// outputs of three batches held while three more run.
TEST(Lz4PipelineGpu, MixedMemoryLargeBatchesAndHeldOutputs) {
  REQUIRE_GPU();
  Lz4Pipeline* p = device_pipeline();
  ASSERT_NE(p, nullptr);
  const auto lock = p->lock();
  const std::size_t bs = 64 << 10;
  const Bytes data = tandem::test::mixed_bytes(p->batch_bytes() + (5u << 20) + 321, 21);
  PinnedArena pinned;
  std::uint8_t* copy = pinned.get(data.size());
  std::memcpy(copy, data.data(), data.size());
  // Chunks of 1 MiB + a bit, alternating pinned and pageable memory, all in
  // one batch.
  std::vector<PipelineIn> ins;
  const std::size_t piece = (1u << 20) + 4097;
  for (std::size_t pos = 0, i = 0; pos < data.size(); pos += piece, ++i) {
    PipelineIn in;
    const std::size_t n = std::min(piece, data.size() - pos);
    in.data = {(i % 2 ? copy : data.data()) + pos, n};
    ins.push_back(in);
  }
  ASSERT_TRUE(p->begin(tandem::test::pipeline_options(PipelineMode::compress, bs, true)).ok());
  const auto packed = tandem::test::run_pipeline(*p, {ins});
  ASSERT_EQ(packed.size(), ins.size());
  for (std::size_t i = 0; i < ins.size(); ++i) {
    ASSERT_TRUE(packed[i].status.ok());
    EXPECT_EQ(packed[i].bytes, tandem::test::twin_blocks(ins[i].data, bs, true)) << "chunk " << i;
  }
  Bytes decoded;
  ASSERT_TRUE(tandem::test::lz4f_decode(tandem::test::frame_of(packed, bs, true), &decoded));
  EXPECT_TRUE(decoded == data);

  // Held outputs: batches of 4 chunks; keep the outputs of the first three
  // while the rest run, then check them all.
  std::vector<std::vector<PipelineIn>> batches;
  for (std::size_t i = 0; i < 24 && i < ins.size(); i += 4) {
    batches.emplace_back(ins.begin() + static_cast<std::ptrdiff_t>(i),
                         ins.begin() + static_cast<std::ptrdiff_t>(std::min(i + 4, ins.size())));
  }
  ASSERT_TRUE(p->begin(tandem::test::pipeline_options(PipelineMode::compress, bs, false)).ok());
  std::vector<PipelineOut> held, outs;
  std::size_t next = 0, done = 0;
  while (done < batches.size()) {
    if (next < batches.size() && p->in_flight() < p->depth()) {
      ASSERT_TRUE(p->submit(batches[next++]).ok());
      continue;
    }
    ASSERT_TRUE(p->complete(&outs, nullptr).ok());
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const PipelineIn& in = batches[done][k];
      EXPECT_EQ(Bytes(outs[k].bytes.begin(), outs[k].bytes.end()), tandem::test::twin_blocks(in.data, bs, false));
      if (done < 3) held.push_back(outs[k]);
    }
    ++done;
  }
  for (std::size_t k = 0; k < held.size(); ++k) {
    EXPECT_EQ(Bytes(held[k].bytes.begin(), held[k].bytes.end()), tandem::test::twin_blocks(ins[k].data, bs, false))
        << "held chunk " << k;
  }
}
#endif

TEST(Lz4PipelineGpu, DepthAndFifoOrder) {
  REQUIRE_GPU();
  Lz4Pipeline* p = device_pipeline();
  ASSERT_NE(p, nullptr);
  const auto lock = p->lock();
  tandem::test::check_pipeline_depth_and_fifo(*p);
}

TEST(Lz4PipelineGpu, MalformedChunksFailAlone) {
  REQUIRE_GPU();
  Lz4Pipeline* p = device_pipeline();
  ASSERT_NE(p, nullptr);
  const auto lock = p->lock();
  tandem::test::check_pipeline_malformed(*p);
}

TEST(Lz4PipelineGpu, ShortBlocksInsideAChunkComeBackContiguous) {
  REQUIRE_GPU();
  Lz4Pipeline* p = device_pipeline();
  ASSERT_NE(p, nullptr);
  const auto lock = p->lock();
  PageableArena pageable;
  tandem::test::check_pipeline_short_blocks(*p, pageable.alloc());
#if TANDEM_HAVE_CUDA
  PinnedArena pinned;
  tandem::test::check_pipeline_short_blocks(*p, pinned.alloc());
#endif
}

TEST(Lz4PipelineGpu, FaultsFireOnceAtTheirBatch) {
  REQUIRE_GPU();
  Lz4Pipeline* p = device_pipeline();
  ASSERT_NE(p, nullptr);
  const auto lock = p->lock();
  for (Fault f : {Fault::out_of_memory, Fault::copy, Fault::kernel}) {
    SCOPED_TRACE(static_cast<int>(f));
    tandem::test::check_pipeline_fault_fires_once(*p, f);
  }
}

#if TANDEM_HAVE_CUDA
// Every device's pipeline round-trips on its own device.
TEST(Lz4PipelineGpu, EachDeviceHasItsPipeline) {
  REQUIRE_GPU();
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const std::size_t bs = 64 << 10;
  const Bytes data = tandem::test::text_like_bytes(3 * bs + 5, 31);
  std::vector<Lz4Pipeline*> seen;
  for (int gpu = 0; gpu < count; ++gpu) {
    SCOPED_TRACE(gpu);
    Lz4Pipeline* p = nullptr;
    ASSERT_TRUE(Lz4Pipeline::shared(gpu, &p).ok());
    EXPECT_EQ(std::count(seen.begin(), seen.end(), p), 0);
    seen.push_back(p);
    const auto lock = p->lock();
    PageableArena pageable;
    tandem::test::check_pipeline_round_trip(*p, data, bs, false, nullptr, pageable.alloc());
  }
}

// Frames written straight into pinned output (the GPU copies each batch into
// its place there) equal those the writer copies out of the pipeline's
// buffers, byte for byte, under the GPU alone; beside the CPU workers, they
// decode to the input.
TEST(Lz4PipelineGpu, BatchesPlacedInPinnedOutputEqualTheCopiedOnes) {
  REQUIRE_GPU();
  Bytes data = tandem::test::mixed_bytes(std::size_t{20} << 20, 41);
  const Bytes text = tandem::test::text_like_bytes(std::size_t{20} << 20, 42);
  data.insert(data.end(), text.begin(), text.end());
  for (const tandem::Backend b : {tandem::Backend::gpu, tandem::Backend::automatic}) {
    SCOPED_TRACE(tandem::backend_name(b));
    tandem::Lz4FrameOptions o;
    o.backend = b;
    o.block_size = 64 << 10;
    const std::size_t cap = tandem::lz4_frame_max_compressed_size(data.size(), o);
    PinnedArena pinned;
    std::uint8_t* frame = pinned.get(cap);
    ASSERT_NE(frame, nullptr);
    std::size_t size = 0;
    ASSERT_TRUE(tandem::lz4_frame_compress({data.data(), data.size()}, {frame, cap}, &size, o).ok());
    Bytes decoded;
    ASSERT_TRUE(tandem::lz4_frame_decompress({frame, size}, &decoded, {}).ok());
    EXPECT_TRUE(decoded == data);
    if (b == tandem::Backend::gpu) {
      Bytes copied;
      ASSERT_TRUE(tandem::lz4_frame_compress({data.data(), data.size()}, &copied, o).ok());
      ASSERT_EQ(copied.size(), size);
      EXPECT_EQ(std::memcmp(copied.data(), frame, size), 0);
    }
  }
}
#endif

}  // namespace
