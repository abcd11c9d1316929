// The emulated LZ4 pipeline (gpu::Lz4Pipeline::emulated, the CPU stand-in for
// the device pipeline that the hybrid scheduler's tests use): compressed
// chunks, wrapped in a frame header and end mark, decode with liblz4's LZ4F
// API to the input, in 64 KiB and 256 KiB blocks, with and without block
// checksums, for random, constant and text-like data (and a Silesia file when
// the corpus is here); decompression gives the input back, into the
// pipeline's buffers and into direct outputs; batches complete in FIFO order,
// at most depth() in flight; malformed chunks fail alone with bad_data or
// checksum_mismatch; each injected fault fires once, in the batch it was
// armed for. Without CUDA, shared() answers no_device.
#include <lz4.h>
#include <xxhash.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu/lz4_twin.hpp"
#include "format/lz4_frame_format.hpp"
#include "gpu/lz4_gpu_pipeline.hpp"
#include "support/lz4_pipeline_support.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::Status;
using tandem::StatusCode;
using tandem::gpu::Fault;
using tandem::gpu::Lz4Pipeline;
using tandem::gpu::Lz4PipelineOptions;
using tandem::gpu::PipelineIn;
using tandem::gpu::PipelineMode;
using tandem::gpu::PipelineOut;
using tandem::test::Bytes;
using tandem::test::ChunkResult;

Lz4PipelineOptions options(PipelineMode mode, std::size_t block_size, bool checksum) {
  Lz4PipelineOptions o;
  o.mode = mode;
  o.block_size = block_size;
  o.block_checksum = checksum;
  return o;
}

// Chunk sizes around the block size: several blocks and a short one, exact
// blocks, a single byte, empty, block - 1 and block + 1, then the rest.
std::vector<std::size_t> chunk_sizes(std::size_t bs) {
  return {3 * bs + 1000, bs, 1, 0, bs - 1, bs + 1, 2 * bs};
}

struct Sample {
  const char* name;
  Bytes data;
};

std::vector<Sample> samples(std::size_t bs) {
  const std::size_t n = 9 * bs + 12345;
  std::vector<Sample> s;
  s.push_back({"random", tandem::test::random_bytes(n, 1)});
  s.push_back({"constant", tandem::test::constant_bytes(n, 'x')});
  s.push_back({"text", tandem::test::text_like_bytes(n, 2)});
  s.push_back({"mixed", tandem::test::mixed_bytes(n, 3)});
  if (const auto dir = tandem::test::silesia_dir(); !dir.empty()) {
    Bytes f = tandem::test::read_file(dir / "dickens");
    if (f.size() > n) f.resize(n);
    if (!f.empty()) s.push_back({"dickens", std::move(f)});
  }
  return s;
}

Bytes concat(const std::vector<ChunkResult>& r) {
  Bytes all;
  for (const ChunkResult& c : r) all.insert(all.end(), c.bytes.begin(), c.bytes.end());
  return all;
}

// The twin's frame blocks of one chunk, written independently of the
// pipeline: what the device writes.
Bytes twin_blocks(std::span<const std::uint8_t> chunk, std::size_t bs, bool checksum) {
  Bytes out;
  Bytes tmp(bs);
  for (std::size_t off = 0; off < chunk.size(); off += bs) {
    const std::size_t n = std::min(bs, chunk.size() - off);
    std::size_t size = 0;
    const auto st = tandem::cpu::lz4_twin_compress(chunk.data() + off, n, tmp.data(), n - 1, &size);
    const bool packed = st == tandem::gpu::ItemStatus::ok && size < n;
    const std::uint8_t* payload = packed ? tmp.data() : chunk.data() + off;
    if (!packed) size = n;
    std::uint8_t w[4];
    tandem::lz4f::write_le32(w, static_cast<std::uint32_t>(size) | (packed ? 0 : tandem::lz4f::kUncompressedBit));
    out.insert(out.end(), w, w + 4);
    out.insert(out.end(), payload, payload + size);
    if (checksum) {
      tandem::lz4f::write_le32(w, XXH32(payload, size, 0));
      out.insert(out.end(), w, w + 4);
    }
  }
  return out;
}

struct RoundTrip : ::testing::TestWithParam<std::tuple<std::size_t, bool>> {};

TEST_P(RoundTrip, Lz4PipelineEmulatedFramesDecodeWithLz4fAndBack) {
  const auto [bs, checksum] = GetParam();
  auto p = Lz4Pipeline::emulated();
  EXPECT_EQ(p->depth(), 3);
  EXPECT_GT(p->batch_bytes(), 0u);
  for (const Sample& s : samples(bs)) {
    SCOPED_TRACE(s.name);
    const auto pieces = tandem::test::cut_pieces(s.data, chunk_sizes(bs));
    ASSERT_TRUE(p->begin(options(PipelineMode::compress, bs, checksum)).ok());
    const std::vector<ChunkResult> packed = tandem::test::run_pipeline(*p, tandem::test::make_batches(pieces, 2));
    ASSERT_EQ(packed.size(), pieces.size());
    for (std::size_t i = 0; i < packed.size(); ++i) {
      ASSERT_TRUE(packed[i].status.ok()) << i;
      EXPECT_EQ(packed[i].bytes, twin_blocks(pieces[i], bs, checksum)) << "chunk " << i;
    }
    Bytes decoded;
    ASSERT_TRUE(tandem::test::lz4f_decode(tandem::test::frame_of(packed, bs, checksum), &decoded));
    EXPECT_TRUE(decoded == s.data);
    if (std::string(s.name) == "constant") EXPECT_LT(concat(packed).size(), s.data.size() / 50);
    if (std::string(s.name) == "random") EXPECT_GT(concat(packed).size(), s.data.size());

    // Back, into the pipeline's buffers, then into direct outputs.
    for (bool verify : {true, false}) {
      Lz4PipelineOptions d = options(PipelineMode::decompress, bs, checksum);
      d.verify_checksums = verify;
      ASSERT_TRUE(p->begin(d).ok());
      const auto back = tandem::test::run_pipeline(*p, tandem::test::decode_batches(packed, 3));
      ASSERT_EQ(back.size(), pieces.size());
      for (std::size_t i = 0; i < back.size(); ++i) {
        ASSERT_TRUE(back[i].status.ok()) << i << ": " << back[i].status.to_string();
        EXPECT_TRUE(std::equal(back[i].bytes.begin(), back[i].bytes.end(), pieces[i].begin(), pieces[i].end()))
            << "chunk " << i;
      }
    }
    ASSERT_TRUE(p->begin(options(PipelineMode::decompress, bs, checksum)).ok());
    std::vector<Bytes> direct(packed.size(), Bytes(4 * bs));
    std::vector<std::uint8_t*> ptrs;
    for (Bytes& d : direct) ptrs.push_back(d.data());
    std::vector<PipelineOut> outs;
    const auto batches = tandem::test::decode_batches(packed, 2, ptrs, 4 * bs);
    std::size_t chunk = 0;
    for (const auto& batch : batches) {
      ASSERT_TRUE(p->submit(batch).ok());
      ASSERT_TRUE(p->complete(&outs, nullptr).ok());
      ASSERT_EQ(outs.size(), batch.size());
      for (const PipelineOut& o : outs) {
        const auto& piece = pieces[chunk];
        ASSERT_TRUE(o.status.ok()) << o.status.to_string();
        EXPECT_EQ(o.keep, nullptr);
        EXPECT_EQ(o.bytes.data(), direct[chunk].data());
        EXPECT_TRUE(std::equal(o.bytes.begin(), o.bytes.end(), piece.begin(), piece.end())) << "chunk " << chunk;
        ++chunk;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Lz4Pipeline, RoundTrip,
                         ::testing::Combine(::testing::Values(std::size_t{64} << 10, std::size_t{256} << 10),
                                            ::testing::Bool()));

TEST(Lz4PipelineEmulated, DepthAndFifoOrder) {
  auto p = Lz4Pipeline::emulated();
  const std::size_t bs = 64 << 10;
  std::vector<Bytes> data;
  for (int i = 0; i < 5; ++i) data.push_back(tandem::test::text_like_bytes(bs * 2 + 17 * i, 10 + i));
  PipelineIn in[5];
  for (int i = 0; i < 5; ++i) in[i].data = {data[i].data(), data[i].size()};

  std::vector<PipelineOut> outs;
  EXPECT_EQ(p->submit({in, 1}).code, StatusCode::invalid_argument);  // not begun
  ASSERT_TRUE(p->begin(options(PipelineMode::compress, bs, false)).ok());
  EXPECT_EQ(p->complete(&outs, nullptr).code, StatusCode::invalid_argument);  // nothing in flight
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(p->submit({in + i, 1}).ok());
    EXPECT_EQ(p->in_flight(), i + 1);
  }
  EXPECT_EQ(p->submit({in + 3, 1}).code, StatusCode::invalid_argument);
  EXPECT_EQ(p->in_flight(), 3);

  // FIFO: each batch's output decodes to its own input; outputs stay valid
  // while held, across later batches.
  std::vector<PipelineOut> held;
  auto check = [&](int i) {
    ASSERT_TRUE(p->complete(&outs, nullptr).ok());
    ASSERT_EQ(outs.size(), 1u);
    ChunkResult r{outs[0].status, Bytes(outs[0].bytes.begin(), outs[0].bytes.end())};
    Bytes dec;
    ASSERT_TRUE(tandem::test::lz4f_decode(tandem::test::frame_of({r}, bs, false), &dec));
    EXPECT_EQ(dec, data[i]) << "batch " << i;
    held.push_back(outs[0]);
  };
  check(0);
  ASSERT_TRUE(p->submit({in + 3, 1}).ok());
  check(1);
  ASSERT_TRUE(p->submit({in + 4, 1}).ok());
  check(2);
  check(3);
  check(4);
  EXPECT_EQ(p->in_flight(), 0);
  for (int i = 0; i < 5; ++i) {
    Bytes dec;
    ASSERT_TRUE(tandem::test::lz4f_decode(
        tandem::test::frame_of({{held[i].status, Bytes(held[i].bytes.begin(), held[i].bytes.end())}}, bs, false),
        &dec));
    EXPECT_EQ(dec, data[i]);
  }

  // abandon drops what is in flight; begin does too.
  ASSERT_TRUE(p->submit({in, 2}).ok());
  ASSERT_TRUE(p->submit({in, 2}).ok());
  p->abandon();
  EXPECT_EQ(p->in_flight(), 0);
  ASSERT_TRUE(p->submit({in, 2}).ok());
  ASSERT_TRUE(p->begin(options(PipelineMode::compress, bs, false)).ok());
  EXPECT_EQ(p->in_flight(), 0);
  // An empty batch completes with no outputs.
  ASSERT_TRUE(p->submit({}).ok());
  ASSERT_TRUE(p->complete(&outs, nullptr).ok());
  EXPECT_TRUE(outs.empty());
  EXPECT_EQ(p->begin(options(PipelineMode::compress, 0, false)).code, StatusCode::invalid_argument);
}

// A chunk of frame blocks: one LZ4 block (compressed, from liblz4) of
// `data`, stored as the word says.
struct BlockBuilder {
  bool checksum;
  Bytes chunk;
  void add(std::uint32_t word, const Bytes& payload, bool good_checksum = true) {
    std::uint8_t w[4];
    tandem::lz4f::write_le32(w, word);
    chunk.insert(chunk.end(), w, w + 4);
    chunk.insert(chunk.end(), payload.begin(), payload.end());
    if (checksum) {
      tandem::lz4f::write_le32(w, XXH32(payload.data(), payload.size(), 0) ^ (good_checksum ? 0u : 1u));
      chunk.insert(chunk.end(), w, w + 4);
    }
  }
  void add_lz4(const Bytes& data, bool good_checksum = true) {
    Bytes c(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(data.size()))));
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(data.data()), reinterpret_cast<char*>(c.data()),
                                       static_cast<int>(data.size()), static_cast<int>(c.size()));
    c.resize(static_cast<std::size_t>(n));
    add(static_cast<std::uint32_t>(c.size()), c, good_checksum);
  }
};

struct Malformed {
  const char* name;
  Bytes chunk;
  StatusCode want;
};

std::vector<Malformed> malformed_chunks(std::size_t bs, bool checksum) {
  const Bytes text = tandem::test::text_like_bytes(bs, 5);
  std::vector<Malformed> m;
  auto good = [&] {
    BlockBuilder b{checksum, {}};
    b.add_lz4(text);
    return b;
  };
  {
    BlockBuilder b = good();
    std::uint8_t w[4];
    tandem::lz4f::write_le32(w, 1000);  // claims 1000 bytes, has 10
    b.chunk.insert(b.chunk.end(), w, w + 4);
    b.chunk.insert(b.chunk.end(), 10, 0x11);
    m.push_back({"lying word", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.add(static_cast<std::uint32_t>(bs + 1) | tandem::lz4f::kUncompressedBit, Bytes(bs + 1, 7));
    m.push_back({"raw payload over the block size", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.add(static_cast<std::uint32_t>(bs + 1), Bytes(bs + 1, 7));
    m.push_back({"compressed payload over the block size", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.chunk.resize(b.chunk.size() - 5);
    m.push_back({"truncated payload", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.chunk.push_back(3);
    b.chunk.push_back(0);
    m.push_back({"truncated word", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.add(0, {});
    m.push_back({"end mark", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.add(3, Bytes{0x1F, 'a', 0x00});  // a match without its offset
    m.push_back({"corrupted LZ4 block", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.add_lz4(Bytes(bs + 1, 'z'));  // valid LZ4, but one byte more than a block
    m.push_back({"block decodes past the block size", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.add(5, Bytes{0x50, 'a', 'b', 'c', 'd'});  // 5 literals out of 4 bytes
    m.push_back({"literals past the input", b.chunk, StatusCode::bad_data});
  }
  if (checksum) {
    BlockBuilder b = good();
    b.add_lz4(text, false);
    m.push_back({"bad checksum", b.chunk, StatusCode::checksum_mismatch});
  }
  return m;
}

TEST(Lz4PipelineEmulated, MalformedChunksFailAlone) {
  const std::size_t bs = 64 << 10;
  auto p = Lz4Pipeline::emulated();
  for (bool checksum : {false, true}) {
    const Bytes text = tandem::test::text_like_bytes(bs, 5);
    BlockBuilder good{checksum, {}};
    good.add_lz4(text);
    good.add(100 | tandem::lz4f::kUncompressedBit, Bytes(text.begin(), text.begin() + 100));
    Bytes expect = text;
    expect.insert(expect.end(), text.begin(), text.begin() + 100);
    for (const Malformed& m : malformed_chunks(bs, checksum)) {
      SCOPED_TRACE(std::string(m.name) + (checksum ? ", with checksums" : ""));
      ASSERT_TRUE(p->begin(options(PipelineMode::decompress, bs, checksum)).ok());
      PipelineIn in[3];
      in[0].data = {good.chunk.data(), good.chunk.size()};
      in[1].data = {m.chunk.data(), m.chunk.size()};
      in[2] = in[0];
      std::vector<PipelineOut> outs;
      ASSERT_TRUE(p->submit(in).ok());
      ASSERT_TRUE(p->complete(&outs, nullptr).ok());
      ASSERT_EQ(outs.size(), 3u);
      EXPECT_EQ(outs[1].status.code, m.want) << outs[1].status.to_string();
      for (int i : {0, 2}) {
        ASSERT_TRUE(outs[i].status.ok()) << outs[i].status.to_string();
        EXPECT_TRUE(std::equal(outs[i].bytes.begin(), outs[i].bytes.end(), expect.begin(), expect.end()));
      }
    }
    if (checksum) {
      // Without verification a bad checksum passes.
      Lz4PipelineOptions o = options(PipelineMode::decompress, bs, true);
      o.verify_checksums = false;
      ASSERT_TRUE(p->begin(o).ok());
      BlockBuilder b{true, {}};
      b.add_lz4(text, false);
      PipelineIn in;
      in.data = {b.chunk.data(), b.chunk.size()};
      std::vector<PipelineOut> outs;
      ASSERT_TRUE(p->submit({&in, 1}).ok());
      ASSERT_TRUE(p->complete(&outs, nullptr).ok());
      ASSERT_TRUE(outs[0].status.ok());
      EXPECT_TRUE(std::equal(outs[0].bytes.begin(), outs[0].bytes.end(), text.begin(), text.end()));
    }
  }
}

TEST(Lz4PipelineEmulated, DirectOutputTooSmall) {
  const std::size_t bs = 64 << 10;
  const Bytes text = tandem::test::text_like_bytes(2 * bs, 6);
  auto p = Lz4Pipeline::emulated();
  ASSERT_TRUE(p->begin(options(PipelineMode::compress, bs, false)).ok());
  PipelineIn in;
  in.data = {text.data(), text.size()};
  const auto packed = tandem::test::run_pipeline(*p, {{in}});
  ASSERT_EQ(packed.size(), 1u);
  ASSERT_TRUE(p->begin(options(PipelineMode::decompress, bs, false)).ok());
  Bytes direct(2 * bs - 1);
  in.data = {packed[0].bytes.data(), packed[0].bytes.size()};
  in.direct = direct.data();
  in.direct_capacity = direct.size();
  std::vector<PipelineOut> outs;
  ASSERT_TRUE(p->submit({&in, 1}).ok());
  ASSERT_TRUE(p->complete(&outs, nullptr).ok());
  EXPECT_EQ(outs[0].status.code, StatusCode::output_too_small);
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

// Runs 5 one-chunk batches with `fault` armed to fire in batch 2: batches 0
// and 1 come back whole, the fault shows where its kind does, and once fired
// it is gone.
void check_fault_fires_once(Lz4Pipeline& p, Fault fault) {
  const std::size_t bs = 64 << 10;
  const Bytes data = tandem::test::mixed_bytes(bs * 3, 8);
  PipelineIn in;
  in.data = {data.data(), data.size()};
  std::vector<PipelineOut> outs;
  ASSERT_TRUE(p.begin(options(PipelineMode::compress, bs, false)).ok());
  tandem::gpu::inject_fault(fault, 2);
  ASSERT_TRUE(p.submit({&in, 1}).ok());
  ASSERT_TRUE(p.submit({&in, 1}).ok());
  const Status third = p.submit({&in, 1});
  if (fault == Fault::out_of_memory || fault == Fault::copy) {
    EXPECT_EQ(third.code, StatusCode::device_error);
    ASSERT_NE(third.reason, nullptr);
    EXPECT_NE(std::string(third.reason).find("injected"), std::string::npos);
    p.abandon();
  } else {
    ASSERT_TRUE(third.ok());
    ASSERT_TRUE(p.complete(&outs, nullptr).ok());
    ASSERT_TRUE(outs[0].status.ok());
    ASSERT_TRUE(p.complete(&outs, nullptr).ok());
    const Status s = p.complete(&outs, nullptr);
    EXPECT_EQ(s.code, StatusCode::device_error);
    p.abandon();
  }
  EXPECT_EQ(p.in_flight(), 0);
  // Fired once: a new run goes through.
  ASSERT_TRUE(p.begin(options(PipelineMode::compress, bs, false)).ok());
  const auto r = tandem::test::run_pipeline(p, {{in}, {in}, {in}, {in}});
  ASSERT_EQ(r.size(), 4u);
  Bytes dec;
  ASSERT_TRUE(tandem::test::lz4f_decode(tandem::test::frame_of({r[3]}, bs, false), &dec));
  EXPECT_EQ(dec, data);
}

TEST(Lz4PipelineFaults, EachFaultFiresOnceAtItsBatch) {
  auto p = Lz4Pipeline::emulated();
  for (Fault f : {Fault::out_of_memory, Fault::copy, Fault::kernel}) {
    SCOPED_TRACE(static_cast<int>(f));
    check_fault_fires_once(*p, f);
  }
  // no_device counts begin() calls.
  tandem::gpu::inject_fault(Fault::no_device, 1);
  EXPECT_TRUE(p->begin({}).ok());
  EXPECT_EQ(p->begin({}).code, StatusCode::no_device);
  EXPECT_TRUE(p->begin({}).ok());
  // none disarms.
  tandem::gpu::inject_fault(Fault::no_device, 0);
  tandem::gpu::inject_fault(Fault::none, 0);
  EXPECT_TRUE(p->begin({}).ok());
}

TEST(Lz4PipelineShared, NoDeviceWithoutCuda) {
  if (tandem::backend_info().cuda_compiled) GTEST_SKIP() << "built with CUDA: tests/gpu covers shared()";
  Lz4Pipeline* p = reinterpret_cast<Lz4Pipeline*>(1);
  const Status s = Lz4Pipeline::shared(0, &p);
  EXPECT_EQ(s.code, StatusCode::no_device);
  EXPECT_EQ(p, nullptr);
}

}  // namespace
