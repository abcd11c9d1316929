// The hybrid scheduler's LZ4 output under every policy, with a GPU worker that
// runs on the CPU (the emulated pipeline: the GPU encoder's twin, the same
// bytes as the device writes), and with each GPU fault injected mid-stream:
// `lz4 -d` decodes every frame to the input, tandem decodes them under every
// policy, and a fault leaves one warning and a complete output.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "codec/lz4_hybrid.hpp"
#include "format/lz4_frame_format.hpp"
#include "gpu/lz4_gpu_pipeline.hpp"
#include "sched/scheduler.hpp"
#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::Backend;
using tandem::Lz4DecodeOptions;
using tandem::Lz4FrameOptions;
using tandem::StatusCode;
using tandem::test::Bytes;
using tandem::test::sh_quote;
using tandem::test::TempDir;
namespace gpu = tandem::gpu;

// The emulated GPU for the test's lifetime; faults disarmed after.
class EmulatedGpu {
 public:
  EmulatedGpu() : pipeline_(gpu::Lz4Pipeline::emulated()) { tandem::hybrid::set_test_pipeline(pipeline_.get()); }
  ~EmulatedGpu() {
    tandem::hybrid::set_test_pipeline(nullptr);
    gpu::inject_fault(gpu::Fault::none, 0);
  }

 private:
  std::unique_ptr<gpu::Lz4Pipeline> pipeline_;
};

// 24 MiB of mixed data: many chunks, over the automatic policy's 8 MiB.
const Bytes& data() {
  static const Bytes d = [] {
    Bytes b = tandem::test::mixed_bytes(12u << 20, 5);
    const Bytes t = tandem::test::text_like_bytes((12u << 20) + 777, 6);
    b.insert(b.end(), t.begin(), t.end());
    return b;
  }();
  return d;
}

Lz4FrameOptions frame_options(Backend b, std::size_t block, tandem::sched::RunMetrics* m) {
  Lz4FrameOptions o;
  o.backend = b;
  o.block_size = block;
  o.threads = 3;
  o.chunk_size = std::size_t{1} << 20;
  o.metrics = m;
  return o;
}

void expect_lz4_decodes(const Bytes& frame, const Bytes& want) {
  if (!tandem::test::have_tool("lz4")) GTEST_SKIP() << "the `lz4` command is not installed";
  TempDir dir;
  tandem::test::write_file(dir / "f.lz4", frame);
  std::string out;
  ASSERT_EQ(tandem::test::run("lz4 -d -q -f " + sh_quote((dir / "f.lz4").string()) + " " +
                                  sh_quote((dir / "f").string()) + " 2>&1",
                              &out),
            0)
      << out;
  EXPECT_TRUE(tandem::test::read_file(dir / "f") == want);
}

const char* name(Backend b) { return tandem::backend_name(b); }

TEST(Lz4Hybrid, EveryPolicyWritesFramesThatLz4Decodes) {
  EmulatedGpu gpu;
  for (const std::size_t block : {std::size_t{64} << 10, std::size_t{256} << 10, std::size_t{4} << 20}) {
    for (const Backend b : {Backend::cpu, Backend::gpu, Backend::automatic}) {
      SCOPED_TRACE(std::string(name(b)) + " block " + std::to_string(block));
      tandem::sched::RunMetrics m;
      Bytes frame;
      ASSERT_TRUE(tandem::lz4_frame_compress({data().data(), data().size()}, &frame, frame_options(b, block, &m)));
      EXPECT_TRUE(m.warnings.empty());
      if (b == Backend::cpu) EXPECT_EQ(m.gpu.chunks, 0u);
      if (b == Backend::gpu) EXPECT_GT(m.gpu.chunks, 0u);  // automatic: whoever is free first
      if (b == Backend::gpu) EXPECT_EQ(m.cpu.chunks, 0u);
      EXPECT_EQ(m.cpu.bytes_in + m.gpu.bytes_in, data().size());
      expect_lz4_decodes(frame, data());
      // tandem decodes it under every policy, to a vector and in place.
      for (const Backend d : {Backend::cpu, Backend::gpu, Backend::automatic}) {
        SCOPED_TRACE(std::string("decode ") + name(d));
        Lz4DecodeOptions o;
        o.backend = d;
        o.threads = 3;
        tandem::sched::RunMetrics dm;
        o.metrics = &dm;
        Bytes out;
        ASSERT_TRUE(tandem::lz4_frame_decompress({frame.data(), frame.size()}, &out, o));
        EXPECT_TRUE(out == data());
        if (d == Backend::gpu && block <= (256u << 10)) EXPECT_GT(dm.gpu.chunks, 0u);
        Bytes flat(data().size() + 100);
        std::size_t size = 0;
        ASSERT_TRUE(tandem::lz4_frame_decompress({frame.data(), frame.size()}, {flat.data(), flat.size()}, &size, o));
        ASSERT_EQ(size, data().size());
        EXPECT_TRUE(std::equal(data().begin(), data().end(), flat.begin()));
      }
    }
  }
}

TEST(Lz4Hybrid, EachInjectedFaultIsAbsorbedWithOneWarning) {
  EmulatedGpu gpu;
  for (const gpu::Fault fault : {gpu::Fault::no_device, gpu::Fault::out_of_memory, gpu::Fault::kernel,
                                 gpu::Fault::copy}) {
    for (const int batch : {0}) {  // the emulated GPU may take a small input in one batch
      for (const Backend b : {Backend::gpu, Backend::automatic}) {
        SCOPED_TRACE(std::string(name(b)) + " fault " + std::to_string(static_cast<int>(fault)) + " at batch " +
                     std::to_string(batch));
        // Compression.
        gpu::inject_fault(fault, batch);
        tandem::sched::RunMetrics m;
        Bytes frame;
        ASSERT_TRUE(tandem::lz4_frame_compress({data().data(), data().size()}, &frame,
                                               frame_options(b, 64u << 10, &m)));
        ASSERT_EQ(m.warnings.size(), 1u);
        EXPECT_NE(m.warnings[0].find("back to the CPU"), std::string::npos) << m.warnings[0];
        EXPECT_GT(m.cpu.chunks, 0u);
        expect_lz4_decodes(frame, data());
        // Decompression (a smaller input: the GPU may get a single batch).
        gpu::inject_fault(fault, 0);
        Lz4DecodeOptions o;
        o.backend = b;
        o.threads = 3;
        o.metrics = &m;
        Bytes out;
        ASSERT_TRUE(tandem::lz4_frame_decompress({frame.data(), frame.size()}, &out, o));
        EXPECT_TRUE(out == data());
        // automatic keeps a frame this small (under 4 MiB) on the CPU.
        if (b == Backend::gpu) {
          ASSERT_EQ(m.warnings.size(), 1u);
          EXPECT_GT(m.cpu.chunks, 0u);
        }
      }
    }
  }
}

// A sink over a fixed buffer, as buffer_sink, that counts the rooms it gives
// out ahead of its position (Sink::place) for more than zero bytes.
class CountingBufferSink final : public tandem::Sink {
 public:
  explicit CountingBufferSink(Bytes* buffer) : b_(*buffer) {}
  tandem::Status reserve(std::size_t n, std::uint8_t** room) override {
    if (n > b_.size() - pos_) return {StatusCode::output_too_small, "full"};
    *room = b_.data() + pos_;
    return {};
  }
  tandem::Status commit(std::size_t n) override {
    if (n > b_.size() - pos_) return {StatusCode::output_too_small, "full"};
    pos_ += n;
    return {};
  }
  std::uint64_t position() const override { return pos_; }
  // Called from the GPU worker's thread while the writer commits: the
  // buffer's fixed fields only.
  std::uint8_t* place(std::uint64_t position, std::size_t n) override {
    if (position > b_.size() || n > b_.size() - position) return nullptr;
    if (n > 0) ++placed_;
    return b_.data() + position;
  }
  int placed() const { return placed_.load(); }

 private:
  Bytes& b_;
  std::size_t pos_ = 0;
  std::atomic<int> placed_{0};
};

// 80 MiB: several of the emulated GPU's batches.
const Bytes& large_data() {
  static const Bytes d = [] {
    Bytes b = data();
    while (b.size() < (80u << 20)) b.insert(b.end(), data().begin(), data().begin() + (std::min)(data().size(), (80u << 20) - b.size()));
    return b;
  }();
  return d;
}

// Compresses large_data() into a fixed buffer through the sink, returning the frame.
Bytes compress_placed(Backend b, tandem::sched::RunMetrics* m, int* placed) {
  Bytes buffer(tandem::lz4_frame_max_compressed_size(large_data().size(), frame_options(b, 64u << 10, nullptr)));
  auto in = tandem::memory_source({large_data().data(), large_data().size()});
  CountingBufferSink out(&buffer);
  const tandem::Status s = tandem::lz4_compress_stream(*in, out, frame_options(b, 64u << 10, m));
  EXPECT_TRUE(s) << s.reason;
  buffer.resize(s ? out.position() : 0);
  *placed = out.placed();
  return buffer;
}

TEST(Lz4Hybrid, BatchesPlacedInTheOutputEqualTheCopiedOnes) {
  EmulatedGpu gpu;
  // The GPU alone: the frame is the same bytes whether its batches land in
  // their place in the output or are copied there by the writer.
  tandem::sched::RunMetrics m;
  int placed = 0;
  const Bytes frame = compress_placed(Backend::gpu, &m, &placed);
  EXPECT_GT(placed, 0);
  EXPECT_TRUE(m.warnings.empty());
  Bytes copied;
  ASSERT_TRUE(tandem::lz4_frame_compress({large_data().data(), large_data().size()}, &copied,
                                         frame_options(Backend::gpu, 64u << 10, nullptr)));
  EXPECT_TRUE(frame == copied);
  // Both kinds of worker: some batches wait for a CPU chunk before them.
  const Bytes mixed = compress_placed(Backend::automatic, &m, &placed);
  expect_lz4_decodes(mixed, large_data());
  Bytes out;
  ASSERT_TRUE(tandem::lz4_frame_decompress({mixed.data(), mixed.size()}, &out, {}));
  EXPECT_TRUE(out == large_data());
  // A fault after batches were placed: the CPU redoes the rest, and places nothing more.
  for (const gpu::Fault fault : {gpu::Fault::kernel, gpu::Fault::copy}) {
    for (const int batch : {1, 2}) {
      SCOPED_TRACE("fault " + std::to_string(static_cast<int>(fault)) + " at batch " + std::to_string(batch));
      gpu::inject_fault(fault, batch);
      tandem::sched::RunMetrics fm;
      const Bytes f = compress_placed(Backend::gpu, &fm, &placed);
      gpu::inject_fault(gpu::Fault::none, 0);
      EXPECT_EQ(fm.warnings.size(), 1u);
      expect_lz4_decodes(f, large_data());
      ASSERT_TRUE(tandem::lz4_frame_decompress({f.data(), f.size()}, &out, {}));
      EXPECT_TRUE(out == large_data());
    }
  }
}

TEST(Lz4Hybrid, ChunksTheGpuRefusesAreJudgedByTheCpu) {
  EmulatedGpu gpu;
  Bytes frame;
  ASSERT_TRUE(tandem::lz4_frame_compress({data().data(), data().size()}, &frame,
                                         frame_options(Backend::cpu, 64u << 10, nullptr)));
  // Spoil one LZ4 block far into the frame: its offset points before the start.
  Bytes bad = frame;
  std::size_t pos = 7 + 8;  // header with content size
  for (int i = 0; i < 100 || (tandem::lz4f::read_le32(bad.data() + pos) & tandem::lz4f::kUncompressedBit); ++i) {
    pos += 4 + (tandem::lz4f::read_le32(bad.data() + pos) & ~tandem::lz4f::kUncompressedBit);
    ASSERT_LT(pos + 8, bad.size());
  }
  // A token of 0 literals and a match at offset 0xFFFF at the block's start.
  bad[pos + 4] = 0x00;
  bad[pos + 5] = 0xFF;
  bad[pos + 6] = 0xFF;
  for (const Backend b : {Backend::cpu, Backend::gpu, Backend::automatic}) {
    SCOPED_TRACE(name(b));
    Lz4DecodeOptions o;
    o.backend = b;
    Bytes out;
    EXPECT_EQ(tandem::lz4_frame_decompress({bad.data(), bad.size()}, &out, o).code, StatusCode::bad_data);
  }
}

TEST(Lz4Hybrid, CliReportsTheFaultAndTheFileStillDecodes) {
  if (!tandem::test::have_tool("lz4")) GTEST_SKIP() << "the `lz4` command is not installed";
  TempDir dir;
  tandem::test::write_file(dir / "in", data());
  const std::string cli = sh_quote(tandem::test::cli_path());
  std::string out;
  ASSERT_EQ(tandem::test::run("TANDEM_TEST_GPU=emulated TANDEM_TEST_GPU_FAULT=kernel@0 " + cli +
                                  " -q -B64K --backend gpu --stats --json " + sh_quote((dir / "s.json").string()) +
                                  " " + sh_quote((dir / "in").string()) + " 2>&1",
                              &out),
            0)
      << out;
  EXPECT_NE(out.find("chunks"), std::string::npos) << out;  // --stats prints even with -q
  ASSERT_EQ(tandem::test::run("TANDEM_TEST_GPU=emulated TANDEM_TEST_GPU_FAULT=copy@0 " + cli + " -f -B64K --backend gpu " +
                                  sh_quote((dir / "in").string()) + " -o " + sh_quote((dir / "w.lz4").string()) +
                                  " 2>&1",
                              &out),
            0)
      << out;
  EXPECT_NE(out.find("warning: GPU 0"), std::string::npos) << out;
  EXPECT_NE(out.find("back to the CPU"), std::string::npos) << out;
  expect_lz4_decodes(tandem::test::read_file(dir / "w.lz4"), data());
  const Bytes json = tandem::test::read_file(dir / "s.json");
  const std::string text(json.begin(), json.end());
  EXPECT_NE(text.find("\"gpu_batches\""), std::string::npos);
  EXPECT_NE(text.find("injected"), std::string::npos);
}

}  // namespace
