// LZ4 frames and batches through the GPU backend, with host buffers: frames
// written on the GPU decode with the CPU reader and with the `lz4` tool, and
// their blocks are, byte for byte, what the GPU encoder (its CPU emulation)
// makes, so that a silent fall-back to the CPU cannot pass for the GPU; frames
// written by the CPU and by `lz4` decode on the GPU; every block size, block
// and content checksums, incompressible blocks stored raw, corruption caught;
// batches large enough to be cut into several sub-batches; compress_batch and
// decompress_batch with Backend::gpu, a corrupt item failing alone.
//
// Tests that need a device skip without one; the ones about what happens
// without a device run everywhere.
#include <lz4.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "format/lz4_frame_format.hpp"
#include "gpu/lz4_gpu_emulate.hpp"
#include "gpu/lz4_gpu_engine.hpp"
#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::Backend;
using tandem::ConstBuffer;
using tandem::ItemResult;
using tandem::Lz4DecodeOptions;
using tandem::Lz4FrameOptions;
using tandem::MutableBuffer;
using tandem::StatusCode;
using tandem::test::Bytes;
using tandem::test::sh_quote;
using tandem::test::TempDir;

bool have_gpu() { return tandem::backend_info().gpu_count > 0; }

#define REQUIRE_GPU()                                                                  \
  do {                                                                                 \
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped"; \
  } while (0)

constexpr std::size_t kBlockSizes[] = {64u << 10, 256u << 10, 1u << 20, 4u << 20};

// Text, runs and noise, then a stretch of pure noise a little over 4 MiB, so
// that every block size has both compressible and incompressible blocks.
const Bytes& sample() {
  static const Bytes data = [] {
    Bytes d = tandem::test::mixed_bytes((3u << 20) + 777, 11);
    const Bytes noise = tandem::test::random_bytes((4u << 20) + 4097, 12);
    const Bytes text = tandem::test::text_like_bytes((2u << 20) + 5, 13);
    d.insert(d.end(), noise.begin(), noise.end());
    d.insert(d.end(), text.begin(), text.end());
    return d;
  }();
  return data;
}

Bytes head(const Bytes& data, std::size_t n) {
  return Bytes(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n));
}

Bytes compress(const Bytes& data, const Lz4FrameOptions& o, tandem::Status* st) {
  Bytes frame;
  *st = tandem::lz4_frame_compress({data.data(), data.size()}, &frame, o);
  return frame;
}

Bytes decompress(const Bytes& frame, Backend backend, tandem::Status* st) {
  Lz4DecodeOptions o;
  o.backend = backend;
  Bytes out;
  *st = tandem::lz4_frame_decompress({frame.data(), frame.size()}, &out, o);
  return out;
}

struct Block {
  bool raw;
  std::size_t offset, size;  // payload in the frame
};

// The blocks of a single frame, read with the format code.
std::vector<Block> frame_blocks(const Bytes& frame) {
  tandem::lz4f::FrameHeader h;
  std::vector<Block> blocks;
  const tandem::Status st = tandem::lz4f::parse_frame_header(frame.data(), frame.size(), &h);
  EXPECT_TRUE(st.ok()) << st.to_string();
  if (!st) return blocks;
  std::size_t off = h.header_size;
  while (off + 4 <= frame.size()) {
    const std::uint32_t word = tandem::lz4f::read_le32(frame.data() + off);
    if (word == 0) break;
    const Block b{(word & tandem::lz4f::kUncompressedBit) != 0, off + 4, word & ~tandem::lz4f::kUncompressedBit};
    blocks.push_back(b);
    off = b.offset + b.size + (h.block_checksum ? 4 : 0);
  }
  return blocks;
}

// Checks that the frame's blocks are what the GPU makes of `data`: each
// compressed block equal to the emulated GPU encoding of its input, each raw
// block its input unchanged, and raw exactly when the encoding does not shrink
// the block. Returns the number of compressed blocks.
std::size_t expect_gpu_blocks(const Bytes& frame, const Bytes& data, std::size_t block) {
  const std::vector<Block> blocks = frame_blocks(frame);
  EXPECT_EQ(blocks.size(), (data.size() + block - 1) / block);
  std::size_t compressed = 0;
  Bytes expected(tandem::gpu::lz4_max_compressed_size(block));
  for (std::size_t i = 0; i < blocks.size() && i * block < data.size(); ++i) {
    const std::uint8_t* in = data.data() + i * block;
    const std::size_t len = std::min(block, data.size() - i * block);
    std::size_t size = 0;
    const tandem::gpu::ItemStatus s =
        tandem::gpu::lz4_encode_block_emulated(in, len, expected.data(), expected.size(), &size);
    const bool shrinks = s == tandem::gpu::ItemStatus::ok && size < len;
    EXPECT_EQ(blocks[i].raw, !shrinks) << "block " << i << " of " << len << " bytes";
    if (blocks[i].raw) {
      EXPECT_EQ(blocks[i].size, len) << "block " << i;
      EXPECT_TRUE(blocks[i].size == len && std::memcmp(frame.data() + blocks[i].offset, in, len) == 0)
          << "raw block " << i << " holds its input";
    } else {
      ++compressed;
      EXPECT_EQ(blocks[i].size, size) << "block " << i;
      EXPECT_TRUE(blocks[i].size == size && std::memcmp(frame.data() + blocks[i].offset, expected.data(), size) == 0)
          << "block " << i << " is the GPU encoder's";
    }
  }
  return compressed;
}

// ------------------------------------------------------- without a GPU ----

TEST(GpuBackend, WithoutADeviceIsNoDevice) {
  if (have_gpu()) GTEST_SKIP() << "this machine has a CUDA device";
  Backend resolved{};
  EXPECT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, Backend::gpu, &resolved), StatusCode::no_device);
  EXPECT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, Backend::gpu, 0, &resolved), StatusCode::no_device);
  ASSERT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, Backend::automatic, &resolved), StatusCode::ok);
  EXPECT_EQ(resolved, Backend::cpu);

  const Bytes data = head(sample(), 100000);
  tandem::Status st;
  Lz4FrameOptions gpu;
  gpu.backend = Backend::gpu;
  compress(data, gpu, &st);
  EXPECT_STATUS(st, StatusCode::no_device);
  const Bytes frame = compress(data, {}, &st);
  ASSERT_STATUS(st, StatusCode::ok);
  decompress(frame, Backend::gpu, &st);
  EXPECT_STATUS(st, StatusCode::no_device);
  EXPECT_TRUE(decompress(frame, Backend::automatic, &st) == data);
  EXPECT_STATUS(st, StatusCode::ok);

  Bytes out(tandem::max_compressed_size(tandem::Codec::lz4, data.size()));
  const ConstBuffer in[] = {{data.data(), data.size()}};
  const MutableBuffer outs[] = {{out.data(), out.size()}};
  ItemResult results[1];
  tandem::BatchOptions bo;
  bo.backend = Backend::gpu;
  EXPECT_STATUS(tandem::compress_batch(tandem::Codec::lz4, in, outs, results, bo), StatusCode::no_device);
  EXPECT_STATUS(tandem::decompress_batch(tandem::Codec::lz4, in, outs, results, bo), StatusCode::no_device);

  std::unique_ptr<tandem::gpu::Lz4HostEngine> engine;
  EXPECT_STATUS(tandem::gpu::Lz4HostEngine::create(&engine), StatusCode::no_device);
  EXPECT_EQ(engine, nullptr);
}

// Runs everywhere: what each level resolves to.
TEST(GpuBackend, TheGpuEncoderHasOneLevel) {
  const bool gpu = have_gpu();
  for (int level : {-5, -1, 0, 1, 2, 3, 9, 12}) {
    SCOPED_TRACE(testing::Message() << "level " << level);
    Backend resolved{};
    ASSERT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, Backend::automatic, level, &resolved), StatusCode::ok);
    EXPECT_EQ(resolved, gpu && level >= 0 && level <= 2 ? Backend::gpu : Backend::cpu);
    const tandem::Status st = tandem::resolve_backend(tandem::Codec::lz4, Backend::gpu, level, &resolved);
    if (!gpu) {
      EXPECT_STATUS(st, StatusCode::no_device);
    } else if (level >= 3) {
      EXPECT_STATUS(st, StatusCode::unsupported);
      EXPECT_NE(std::string(st.reason ? st.reason : "").find("HC"), std::string::npos) << st.to_string();
    } else {
      EXPECT_STATUS(st, StatusCode::ok);
      EXPECT_EQ(resolved, Backend::gpu);
    }
  }
  Backend resolved{};
  ASSERT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, Backend::automatic, &resolved), StatusCode::ok);
  EXPECT_EQ(resolved, gpu ? Backend::gpu : Backend::cpu) << "decoding: auto takes the GPU when there is one";
}

// ------------------------------------------------------------- frames ----

TEST(GpuFrames, WrittenOnTheGpuDecodeOnTheCpu) {
  REQUIRE_GPU();
  for (std::size_t block : kBlockSizes) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, block - 1, block, block + 1, sample().size()}) {
      for (int checksums = 0; checksums < 4; ++checksums) {
        SCOPED_TRACE(testing::Message() << "block " << block << ", " << n << " bytes, checksums " << checksums);
        const Bytes data = head(sample(), std::min(n, sample().size()));
        Lz4FrameOptions o;
        o.backend = Backend::gpu;
        o.block_size = block;
        o.block_checksum = (checksums & 1) != 0;
        o.content_checksum = (checksums & 2) != 0;
        tandem::Status st;
        const Bytes frame = compress(data, o, &st);
        ASSERT_STATUS(st, StatusCode::ok);
        if (checksums == 0) expect_gpu_blocks(frame, data, block);  // the checksums do not change the blocks
        const Bytes back = decompress(frame, Backend::cpu, &st);
        ASSERT_STATUS(st, StatusCode::ok);
        EXPECT_TRUE(back == data);
      }
    }
  }
}

TEST(GpuFrames, IncompressibleBlocksAreStoredRaw) {
  REQUIRE_GPU();
  const Bytes noise = tandem::test::random_bytes((3u << 20) + 10, 21);
  Lz4FrameOptions o;
  o.backend = Backend::gpu;
  o.block_size = 1u << 20;
  tandem::Status st;
  const Bytes frame = compress(noise, o, &st);
  ASSERT_STATUS(st, StatusCode::ok);
  for (const Block& b : frame_blocks(frame)) EXPECT_TRUE(b.raw);
  EXPECT_EQ(expect_gpu_blocks(frame, noise, o.block_size), 0u);
  EXPECT_LE(frame.size(), tandem::lz4_frame_max_compressed_size(noise.size(), o));

  // Constant data shrinks in every block.
  const Bytes zeros = tandem::test::constant_bytes(5u << 20, 0);
  const Bytes zframe = compress(zeros, o, &st);
  ASSERT_STATUS(st, StatusCode::ok);
  EXPECT_EQ(expect_gpu_blocks(zframe, zeros, o.block_size), 5u);
  EXPECT_TRUE(decompress(zframe, Backend::gpu, &st) == zeros);
  EXPECT_STATUS(st, StatusCode::ok);
}

TEST(GpuFrames, CpuFramesDecodeOnTheGpu) {
  REQUIRE_GPU();
  const Bytes& data = sample();
  for (std::size_t block : kBlockSizes) {
    for (int variant = 0; variant < 5; ++variant) {
      SCOPED_TRACE(testing::Message() << "block " << block << ", variant " << variant);
      Lz4FrameOptions o;
      o.backend = Backend::cpu;
      o.block_size = block;
      o.block_checksum = variant == 1;
      o.content_checksum = variant != 2;
      o.level = variant == 3 ? 9 : 0;      // HC blocks decode on the GPU too
      o.linked_blocks = variant == 4;      // linked blocks stay on the CPU
      tandem::Status st;
      const Bytes frame = compress(data, o, &st);
      ASSERT_STATUS(st, StatusCode::ok);
      const Bytes back = decompress(frame, Backend::gpu, &st);
      ASSERT_STATUS(st, StatusCode::ok);
      EXPECT_TRUE(back == data);
    }
  }
}

TEST(GpuFrames, Lz4ToolInterop) {
  REQUIRE_GPU();
  if (!tandem::test::have_tool("lz4")) GTEST_SKIP() << "the `lz4` command is not installed";
  TempDir dir;
  const Bytes& data = sample();
  tandem::test::write_file(dir / "data", data);
  // lz4 writes, tandem reads on the GPU.
  for (const char* args : {"-B4", "-B5", "-B6", "-B7", "-B4 -BX", "-B7 --no-frame-crc", "-9 -B6", "-B4 -BD", "-l"}) {
    SCOPED_TRACE(args);
    const std::string cmd = std::string("lz4 -q -f ") + args + " " + sh_quote((dir / "data").string()) + " " +
                            sh_quote((dir / "t.lz4").string());
    ASSERT_EQ(tandem::test::run(cmd), 0) << cmd;
    tandem::Status st;
    const Bytes back = decompress(tandem::test::read_file(dir / "t.lz4"), Backend::gpu, &st);
    ASSERT_STATUS(st, StatusCode::ok);
    EXPECT_TRUE(back == data);
  }
  // tandem writes on the GPU, lz4 tests and reads.
  for (std::size_t block : kBlockSizes) {
    for (bool block_checksum : {false, true}) {
      SCOPED_TRACE(testing::Message() << "block " << block << ", block checksum " << block_checksum);
      Lz4FrameOptions o;
      o.backend = Backend::gpu;
      o.block_size = block;
      o.block_checksum = block_checksum;
      tandem::Status st;
      tandem::test::write_file(dir / "g.lz4", compress(data, o, &st));
      ASSERT_STATUS(st, StatusCode::ok);
      const std::string in = sh_quote((dir / "g.lz4").string());
      EXPECT_EQ(tandem::test::run("lz4 -q -t " + in), 0);
      ASSERT_EQ(tandem::test::run("lz4 -q -d -f " + in + " " + sh_quote((dir / "back").string())), 0);
      EXPECT_TRUE(tandem::test::read_file(dir / "back") == data);
    }
  }
}

TEST(GpuFrames, CorruptionIsCaughtOnTheGpu) {
  REQUIRE_GPU();
  const Bytes data = head(sample(), 3u << 20);
  Lz4FrameOptions o;
  o.backend = Backend::gpu;
  o.block_size = 256u << 10;
  for (bool block_checksum : {false, true}) {
    SCOPED_TRACE(testing::Message() << "block checksum " << block_checksum);
    o.block_checksum = block_checksum;
    tandem::Status st;
    const Bytes frame = compress(data, o, &st);
    ASSERT_STATUS(st, StatusCode::ok);
    const std::vector<Block> blocks = frame_blocks(frame);
    const auto victim = std::find_if(blocks.begin() + 2, blocks.end(), [](const Block& b) { return !b.raw; });
    ASSERT_NE(victim, blocks.end());
    Bytes bad = frame;
    bad[victim->offset + victim->size / 2] ^= 0x5a;
    decompress(bad, Backend::gpu, &st);
    if (block_checksum) {
      EXPECT_STATUS(st, StatusCode::checksum_mismatch);
    } else {
      EXPECT_TRUE(st.code == StatusCode::checksum_mismatch || st.code == StatusCode::bad_data) << st.to_string();
    }
    // Dropping the end mark and content checksum leaves a truncated frame.
    decompress(head(frame, frame.size() - 6), Backend::gpu, &st);
    EXPECT_STATUS(st, StatusCode::truncated);
  }
}

// Several of the GPU's batches, in memory and through a stingy source.
TEST(GpuFrames, LargeInputsRoundTrip) {
  REQUIRE_GPU();
  const Bytes data = tandem::test::mixed_bytes(80u << 20, 31);
  Lz4FrameOptions o;
  o.backend = Backend::gpu;
  o.block_size = 64u << 10;
  tandem::Status st;
  const Bytes frame = compress(data, o, &st);
  ASSERT_STATUS(st, StatusCode::ok);
  Bytes back = decompress(frame, Backend::gpu, &st);
  ASSERT_STATUS(st, StatusCode::ok);
  EXPECT_TRUE(back == data);

  // Through a stingy source (no size hint), which hands out only what it is
  // asked for, each time in a fresh copy (so a smaller frame: the copies grow
  // with the batch).
  const Bytes part = head(data, 12u << 20);
  const Bytes small = compress(part, o, &st);
  ASSERT_STATUS(st, StatusCode::ok);
  tandem::test::StingySource source(small);
  back.clear();
  auto sink = tandem::vector_sink(&back);
  Lz4DecodeOptions d;
  d.backend = Backend::gpu;
  ASSERT_STATUS(tandem::lz4_decompress_stream(source, *sink, d), StatusCode::ok);
  sink.reset();
  EXPECT_EQ(source.violations, 0);
  EXPECT_TRUE(back == part);
}

// ------------------------------------------------------------ batches ----

struct Items {
  std::vector<Bytes> data;
  std::vector<ConstBuffer> in;
  std::vector<Bytes> out;
  std::vector<MutableBuffer> outs;
  std::vector<ItemResult> results;
};

Items batch_of(std::vector<Bytes> data, const std::vector<std::size_t>& capacities) {
  Items b;
  b.data = std::move(data);
  for (std::size_t i = 0; i < b.data.size(); ++i) {
    b.in.push_back({b.data[i].data(), b.data[i].size()});
    b.out.emplace_back(capacities[i]);
  }
  for (Bytes& o : b.out) b.outs.push_back({o.data(), o.size()});
  b.results.resize(b.data.size());
  return b;
}

std::vector<Bytes> mixed_items() {
  std::vector<Bytes> items;
  std::uint64_t seed = 40;
  for (std::size_t n : {0u, 1u, 15u, 100u, 65535u, 65536u, 65537u, 1u << 20, 4u << 20}) {
    items.push_back(tandem::test::text_like_bytes(n, ++seed));
    items.push_back(tandem::test::random_bytes(n, ++seed));
  }
  items.push_back(tandem::test::constant_bytes(3u << 20, 7));
  return items;
}

TEST(GpuBatch, RoundTripsAndLiblz4Decodes) {
  REQUIRE_GPU();
  const std::vector<Bytes> data = mixed_items();
  std::vector<std::size_t> bounds;
  for (const Bytes& d : data) bounds.push_back(tandem::max_compressed_size(tandem::Codec::lz4, d.size()));
  Items c = batch_of(data, bounds);
  tandem::BatchOptions bo;
  bo.backend = Backend::gpu;
  ASSERT_STATUS(tandem::compress_batch(tandem::Codec::lz4, c.in, c.outs, c.results, bo), StatusCode::ok);

  std::vector<Bytes> blocks;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < data.size(); ++i) {
    ASSERT_STATUS(c.results[i].status, StatusCode::ok) << "item " << i;
    blocks.push_back(head(c.out[i], c.results[i].size));
    sizes.push_back(data[i].size());
    // liblz4 reads the GPU's block.
    Bytes back(data[i].size() + 1);
    const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(blocks[i].data()),
                                        reinterpret_cast<char*>(back.data()), static_cast<int>(blocks[i].size()),
                                        static_cast<int>(back.size()));
    ASSERT_EQ(got, static_cast<int>(data[i].size())) << "item " << i;
    EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), back.begin())) << "item " << i;
  }
  Items d = batch_of(blocks, sizes);
  ASSERT_STATUS(tandem::decompress_batch(tandem::Codec::lz4, d.in, d.outs, d.results, bo), StatusCode::ok);
  for (std::size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(d.results[i].size, data[i].size()) << "item " << i;
    EXPECT_TRUE(d.out[i] == data[i]) << "item " << i;
  }
}

TEST(GpuBatch, ItemFailuresStayWithTheirItem) {
  REQUIRE_GPU();
  const Bytes text = tandem::test::text_like_bytes(200000, 51);
  Bytes block(tandem::max_compressed_size(tandem::Codec::lz4, text.size()));
  const int size =
      LZ4_compress_default(reinterpret_cast<const char*>(text.data()), reinterpret_cast<char*>(block.data()),
                           static_cast<int>(text.size()), static_cast<int>(block.size()));
  ASSERT_GT(size, 0);
  block.resize(static_cast<std::size_t>(size));
  // Item 1 is cut short inside its literals or sequences, item 2's output is
  // too small, item 3 has a null input: each fails alone.
  const Bytes cut = head(block, block.size() / 2);
  Bytes scratch(text.size());
  ASSERT_LT(LZ4_decompress_safe(reinterpret_cast<const char*>(cut.data()), reinterpret_cast<char*>(scratch.data()),
                                static_cast<int>(cut.size()), static_cast<int>(scratch.size())),
            0)
      << "control: liblz4 rejects the cut block";
  Items d = batch_of({block, cut, block, block}, {text.size(), text.size(), 1000, 10});
  d.in[3] = {nullptr, 5};
  tandem::BatchOptions bo;
  bo.backend = Backend::gpu;
  EXPECT_STATUS(tandem::decompress_batch(tandem::Codec::lz4, d.in, d.outs, d.results, bo), StatusCode::bad_data);
  EXPECT_STATUS(d.results[0].status, StatusCode::ok);
  EXPECT_TRUE(d.out[0] == text);
  EXPECT_STATUS(d.results[1].status, StatusCode::bad_data);
  EXPECT_STATUS(d.results[2].status, StatusCode::output_too_small);
  EXPECT_STATUS(d.results[3].status, StatusCode::invalid_argument);
  EXPECT_EQ(d.results[1].size, 0u);

  // Compression into outputs too small for the block fails that item only.
  Items c = batch_of({text, text}, {tandem::max_compressed_size(tandem::Codec::lz4, text.size()), 100});
  EXPECT_STATUS(tandem::compress_batch(tandem::Codec::lz4, c.in, c.outs, c.results, bo), StatusCode::output_too_small);
  EXPECT_STATUS(c.results[0].status, StatusCode::ok);
  EXPECT_STATUS(c.results[1].status, StatusCode::output_too_small);

  // HC levels are not the GPU's.
  bo.level = 9;
  EXPECT_STATUS(tandem::compress_batch(tandem::Codec::lz4, c.in, c.outs, c.results, bo), StatusCode::unsupported);
}

// The engine itself: statuses, ItemsDone, and a call cut into sub-batches.
TEST(GpuEngine, ReportsStatusesAndProgress) {
  REQUIRE_GPU();
  std::unique_ptr<tandem::gpu::Lz4HostEngine> engine;
  ASSERT_STATUS(tandem::gpu::Lz4HostEngine::create(&engine), StatusCode::ok);
  // Enough items, and bytes, for the engine to cut the call into sub-batches.
  constexpr std::size_t kItem = 8u << 10;
  std::vector<Bytes> data;
  for (std::size_t i = 0; i < 8192; ++i) {
    data.push_back(i % 3 == 0 ? tandem::test::random_bytes(kItem, 60 + i)
                              : tandem::test::text_like_bytes(kItem, 60 + i));
  }
  std::vector<std::size_t> caps(data.size(), tandem::gpu::lz4_max_compressed_size(kItem));
  Items c = batch_of(data, caps);
  std::vector<tandem::gpu::ItemStatus> statuses(data.size());
  std::vector<std::size_t> progress;
  ASSERT_STATUS(engine->compress(c.in, c.outs, c.results, statuses, [&](std::size_t n) { progress.push_back(n); }),
                StatusCode::ok);
  ASSERT_GE(progress.size(), 2u) << "the call was cut into sub-batches";
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
  EXPECT_EQ(progress.back(), data.size());
  std::vector<Bytes> blocks;
  for (std::size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(statuses[i], i % 3 == 0 ? tandem::gpu::ItemStatus::incompressible : tandem::gpu::ItemStatus::ok);
    blocks.push_back(head(c.out[i], c.results[i].size));
  }
  std::vector<std::size_t> sizes(data.size(), kItem);
  Items d = batch_of(blocks, sizes);
  ASSERT_STATUS(engine->decompress(d.in, d.outs, d.results, {}), StatusCode::ok);
  for (std::size_t i = 0; i < data.size(); ++i) EXPECT_TRUE(d.out[i] == data[i]) << "item " << i;

  // Mismatched spans are refused.
  EXPECT_STATUS(engine->decompress(d.in, std::span<const MutableBuffer>(d.outs).first(1), d.results, {}),
                StatusCode::invalid_argument);
}

}  // namespace
