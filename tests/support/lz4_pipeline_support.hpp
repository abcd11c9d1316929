// Shared by the LZ4 pipeline tests (tests/cpu/lz4_pipeline_test.cpp, on the
// emulated pipeline, and tests/gpu/lz4_pipeline_gpu_test.cpp, on the device):
// cutting data into chunks and batches, driving a pipeline with batches in
// flight up to its depth, wrapping compressed chunks into an LZ4 frame, and
// decoding frames with liblz4's LZ4F API as the reference; and the checks
// both run on their pipeline: round trips (each chunk's frame blocks equal to
// the GPU encoder's twin's, independently framed here), depth and FIFO order,
// malformed chunks, short blocks inside a chunk, faults.
#pragma once

#include <lz4.h>
#include <lz4frame.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/lz4_twin.hpp"
#include "format/lz4_frame_format.hpp"
#include "gpu/lz4_gpu_pipeline.hpp"
#include "gpu/lz4_gpu_pipeline_host.hpp"
#include "support/test_support.hpp"

namespace tandem::test {

struct ChunkResult {
  Status status;
  Bytes bytes;
};

// Pieces of `data`: each size of `sizes` in turn, the last piece taking the
// rest (sizes past the data's end give empty pieces).
inline std::vector<std::span<const std::uint8_t>> cut_pieces(const Bytes& data, const std::vector<std::size_t>& sizes) {
  std::vector<std::span<const std::uint8_t>> pieces;
  std::size_t pos = 0;
  for (std::size_t s : sizes) {
    const std::size_t n = std::min(s, data.size() - pos);
    pieces.push_back({data.data() + pos, n});
    pos += n;
  }
  pieces.push_back({data.data() + pos, data.size() - pos});
  return pieces;
}

// Batches of `per_batch` chunks each.
inline std::vector<std::vector<gpu::PipelineIn>> make_batches(const std::vector<std::span<const std::uint8_t>>& pieces,
                                                              std::size_t per_batch) {
  std::vector<std::vector<gpu::PipelineIn>> batches;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (i % per_batch == 0) batches.emplace_back();
    gpu::PipelineIn in;
    in.data = pieces[i];
    batches.back().push_back(in);
  }
  return batches;
}

// Runs every batch through `p` (begun), with as many in flight as its depth
// allows, and returns each chunk's result in input order. A pipeline failure
// fails the test (the results are then incomplete).
inline std::vector<ChunkResult> run_pipeline(gpu::Lz4Pipeline& p,
                                             const std::vector<std::vector<gpu::PipelineIn>>& batches) {
  std::vector<ChunkResult> results;
  std::size_t next = 0;
  std::vector<gpu::PipelineOut> outs;
  while (next < batches.size() || p.in_flight() > 0) {
    if (next < batches.size() && p.in_flight() < p.depth()) {
      const Status s = p.submit(batches[next]);
      EXPECT_TRUE(s.ok()) << "submit: " << s.to_string();
      if (!s) {
        p.abandon();
        return results;
      }
      ++next;
      continue;
    }
    gpu::BatchTimes times;
    const Status s = p.complete(&outs, &times);
    EXPECT_TRUE(s.ok()) << "complete: " << s.to_string();
    if (!s) {
      p.abandon();
      return results;
    }
    EXPECT_GE(times.h2d_ms, 0);
    EXPECT_GE(times.kernel_ms, 0);
    EXPECT_GE(times.d2h_ms, 0);
    for (const gpu::PipelineOut& o : outs) results.push_back({o.status, Bytes(o.bytes.begin(), o.bytes.end())});
    outs.clear();  // gives the pipeline's output buffers back
  }
  return results;
}

// The compressed chunks as one LZ4 frame: header, blocks, end mark.
inline Bytes frame_of(const std::vector<ChunkResult>& chunks, std::size_t block_size, bool block_checksum) {
  lz4f::FrameHeader h;
  h.block_max = block_size;
  h.block_checksum = block_checksum;
  h.content_checksum = false;
  Bytes frame(lz4f::kMaxHeaderSize);
  frame.resize(lz4f::write_frame_header(h, frame.data()));
  for (const ChunkResult& c : chunks) frame.insert(frame.end(), c.bytes.begin(), c.bytes.end());
  frame.insert(frame.end(), 4, 0);
  return frame;
}

// Decodes an LZ4 frame with liblz4; false on any error.
inline bool lz4f_decode(const Bytes& frame, Bytes* out) {
  LZ4F_dctx* dctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) return false;
  out->clear();
  std::vector<std::uint8_t> buf(std::size_t{4} << 20);
  std::size_t pos = 0;
  std::size_t hint = 1;
  bool ok = true;
  while (pos < frame.size() && hint != 0) {
    std::size_t src = frame.size() - pos;
    std::size_t dst = buf.size();
    hint = LZ4F_decompress(dctx, buf.data(), &dst, frame.data() + pos, &src, nullptr);
    if (LZ4F_isError(hint)) {
      ok = false;
      break;
    }
    pos += src;
    out->insert(out->end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(dst));
    if (src == 0 && dst == 0) break;
  }
  LZ4F_freeDecompressionContext(dctx);
  return ok && hint == 0 && pos == frame.size();
}

// The inputs of a decompression run: each compressed chunk, as a batch of
// `per_batch`, with direct outputs (room for `direct_room` bytes each) when
// `direct` holds one buffer per chunk.
inline std::vector<std::vector<gpu::PipelineIn>> decode_batches(const std::vector<ChunkResult>& compressed,
                                                                std::size_t per_batch,
                                                                std::vector<std::uint8_t*> direct = {},
                                                                std::size_t direct_room = 0) {
  std::vector<std::vector<gpu::PipelineIn>> batches;
  for (std::size_t i = 0; i < compressed.size(); ++i) {
    if (i % per_batch == 0) batches.emplace_back();
    gpu::PipelineIn in;
    in.data = {compressed[i].bytes.data(), compressed[i].bytes.size()};
    if (!direct.empty()) {
      in.direct = direct[i];
      in.direct_capacity = direct_room;
    }
    batches.back().push_back(in);
  }
  return batches;
}

// --------------------------------------------------------- shared checks ----

inline gpu::Lz4PipelineOptions pipeline_options(gpu::PipelineMode mode, std::size_t block_size, bool checksum) {
  gpu::Lz4PipelineOptions o;
  o.mode = mode;
  o.block_size = block_size;
  o.block_checksum = checksum;
  return o;
}

// Host memory of n bytes that the test keeps alive (pageable or pinned).
using HostAlloc = std::function<std::uint8_t*(std::size_t)>;

// Pageable memory that lives as long as the arena.
class PageableArena {
 public:
  std::uint8_t* get(std::size_t n) {
    blocks_.push_back(std::make_unique<std::uint8_t[]>(n ? n : 1));
    return blocks_.back().get();
  }
  HostAlloc alloc() {
    return [this](std::size_t n) { return get(n); };
  }

 private:
  std::vector<std::unique_ptr<std::uint8_t[]>> blocks_;
};

// Chunk sizes around the block size: several blocks and a short one, exact
// blocks, a single byte, empty, block - 1 and block + 1, then the rest.
inline std::vector<std::size_t> pipeline_chunk_sizes(std::size_t bs) {
  return {3 * bs + 1000, bs, 1, 0, bs - 1, bs + 1, 2 * bs};
}

struct PipelineSample {
  std::string name;
  Bytes data;
};

// Random, constant, text-like and mixed data of 9 blocks and a bit, and a
// Silesia file when the corpus is here.
inline std::vector<PipelineSample> pipeline_samples(std::size_t bs) {
  const std::size_t n = 9 * bs + 12345;
  std::vector<PipelineSample> s;
  s.push_back({"random", random_bytes(n, 1)});
  s.push_back({"constant", constant_bytes(n, 'x')});
  s.push_back({"text", text_like_bytes(n, 2)});
  s.push_back({"mixed", mixed_bytes(n, 3)});
  if (const auto dir = silesia_dir(); !dir.empty()) {
    Bytes f = read_file(dir / "dickens");
    if (f.size() > n) f.resize(n);
    if (!f.empty()) s.push_back({"dickens", std::move(f)});
  }
  return s;
}

// The frame blocks of one chunk as the device writes them, framed here from
// the GPU encoder's twin: blocks that the twin cannot shrink into size - 1
// bytes are stored raw.
inline Bytes twin_blocks(std::span<const std::uint8_t> chunk, std::size_t bs, bool checksum) {
  Bytes out;
  Bytes tmp(bs);
  for (std::size_t off = 0; off < chunk.size(); off += bs) {
    const std::size_t n = std::min(bs, chunk.size() - off);
    std::size_t size = 0;
    const auto st = cpu::lz4_twin_compress(chunk.data() + off, n, tmp.data(), n - 1, &size);
    const bool packed = st == gpu::ItemStatus::ok && size > 0 && size < n;
    const std::uint8_t* payload = packed ? tmp.data() : chunk.data() + off;
    if (!packed) size = n;
    std::uint8_t w[4];
    lz4f::write_le32(w, static_cast<std::uint32_t>(size) | (packed ? 0 : lz4f::kUncompressedBit));
    out.insert(out.end(), w, w + 4);
    out.insert(out.end(), payload, payload + size);
    if (checksum) {
      lz4f::write_le32(w, XXH32(payload, size, 0));
      out.insert(out.end(), w, w + 4);
    }
  }
  return out;
}

inline bool same(const Bytes& a, std::span<const std::uint8_t> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// Compresses `data` (copied into input_mem first, when given) in chunks of
// pipeline_chunk_sizes, two a batch: each chunk's output equals the twin's
// frame blocks and the whole, framed, decodes with liblz4 to the data. Then
// decompresses the chunks, three a batch, with and without checksum
// verification, and into direct outputs from direct_mem of exactly each
// chunk's size: each comes back. The compressed chunks go to *packed_out.
inline void check_pipeline_round_trip(gpu::Lz4Pipeline& p, const Bytes& data, std::size_t bs, bool checksum,
                                      const HostAlloc& input_mem, const HostAlloc& direct_mem,
                                      std::vector<ChunkResult>* packed_out = nullptr) {
  Bytes local;
  std::span<const std::uint8_t> input(data);
  if (input_mem) {
    std::uint8_t* m = input_mem(data.size());
    std::memcpy(m, data.data(), data.size());
    input = {m, data.size()};
  }
  // Pieces of the input where it lies (pinned or not), cut as cut_pieces does.
  std::vector<std::span<const std::uint8_t>> pieces;
  {
    std::size_t pos = 0;
    for (std::size_t s : pipeline_chunk_sizes(bs)) {
      const std::size_t n = std::min(s, input.size() - pos);
      pieces.push_back(input.subspan(pos, n));
      pos += n;
    }
    pieces.push_back(input.subspan(pos));
  }
  ASSERT_TRUE(p.begin(pipeline_options(gpu::PipelineMode::compress, bs, checksum)).ok());
  const std::vector<ChunkResult> packed = run_pipeline(p, make_batches(pieces, 2));
  ASSERT_EQ(packed.size(), pieces.size());
  for (std::size_t i = 0; i < packed.size(); ++i) {
    ASSERT_TRUE(packed[i].status.ok()) << i;
    EXPECT_EQ(packed[i].bytes, twin_blocks(pieces[i], bs, checksum)) << "chunk " << i;
  }
  Bytes decoded;
  ASSERT_TRUE(lz4f_decode(frame_of(packed, bs, checksum), &decoded));
  EXPECT_TRUE(decoded == data);
  if (packed_out) *packed_out = packed;

  for (bool verify : {true, false}) {
    gpu::Lz4PipelineOptions d = pipeline_options(gpu::PipelineMode::decompress, bs, checksum);
    d.verify_checksums = verify;
    ASSERT_TRUE(p.begin(d).ok());
    const auto back = run_pipeline(p, decode_batches(packed, 3));
    ASSERT_EQ(back.size(), pieces.size());
    for (std::size_t i = 0; i < back.size(); ++i) {
      ASSERT_TRUE(back[i].status.ok()) << i << ": " << back[i].status.to_string();
      EXPECT_TRUE(same(back[i].bytes, pieces[i])) << "chunk " << i;
    }
  }

  ASSERT_TRUE(p.begin(pipeline_options(gpu::PipelineMode::decompress, bs, checksum)).ok());
  std::vector<gpu::PipelineIn> ins(packed.size());
  for (std::size_t i = 0; i < packed.size(); ++i) {
    ins[i].data = {packed[i].bytes.data(), packed[i].bytes.size()};
    ins[i].direct = direct_mem(pieces[i].size());
    ins[i].direct_capacity = pieces[i].size();
  }
  std::vector<gpu::PipelineOut> outs;
  for (std::size_t first = 0; first < ins.size(); first += 2) {
    const std::size_t n = std::min<std::size_t>(2, ins.size() - first);
    ASSERT_TRUE(p.submit(std::span<const gpu::PipelineIn>(ins).subspan(first, n)).ok());
    ASSERT_TRUE(p.complete(&outs, nullptr).ok());
    ASSERT_EQ(outs.size(), n);
    for (std::size_t k = 0; k < n; ++k) {
      const gpu::PipelineOut& o = outs[k];
      ASSERT_TRUE(o.status.ok()) << o.status.to_string();
      EXPECT_EQ(o.keep, nullptr);
      EXPECT_EQ(o.bytes.data(), ins[first + k].direct);
      EXPECT_TRUE(std::equal(o.bytes.begin(), o.bytes.end(), pieces[first + k].begin(), pieces[first + k].end()))
          << "chunk " << first + k;
    }
  }
}

// Submits up to depth, refuses one more, completes in FIFO order; outputs
// held stay valid while later batches run; abandon and begin drop what is in
// flight; an empty batch completes empty; a zero block size is refused.
inline void check_pipeline_depth_and_fifo(gpu::Lz4Pipeline& p) {
  const std::size_t bs = 64 << 10;
  const int depth = p.depth();
  EXPECT_EQ(depth, gpu::kPipelineDepth);
  const int n = depth + 2;  // two more than fit at once
  std::vector<Bytes> data;
  for (int i = 0; i < n; ++i) data.push_back(text_like_bytes(bs * 2 + 17 * i, 10 + i));
  std::vector<gpu::PipelineIn> in(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) in[i].data = {data[i].data(), data[i].size()};
  std::vector<gpu::PipelineOut> outs;

  ASSERT_TRUE(p.begin(pipeline_options(gpu::PipelineMode::compress, bs, false)).ok());
  EXPECT_EQ(p.complete(&outs, nullptr).code, StatusCode::invalid_argument);  // nothing in flight
  for (int i = 0; i < depth; ++i) {
    ASSERT_TRUE(p.submit({&in[i], 1}).ok());
    EXPECT_EQ(p.in_flight(), i + 1);
  }
  EXPECT_EQ(p.submit({&in[depth], 1}).code, StatusCode::invalid_argument);
  EXPECT_EQ(p.in_flight(), depth);

  std::vector<gpu::PipelineOut> held;
  auto check = [&](int i) {
    ASSERT_TRUE(p.complete(&outs, nullptr).ok());
    ASSERT_EQ(outs.size(), 1u);
    ASSERT_TRUE(outs[0].status.ok());
    EXPECT_NE(outs[0].keep, nullptr);
    EXPECT_EQ(Bytes(outs[0].bytes.begin(), outs[0].bytes.end()), twin_blocks(in[i].data, bs, false)) << "batch " << i;
    held.push_back(outs[0]);
  };
  check(0);
  ASSERT_TRUE(p.submit({&in[depth], 1}).ok());
  check(1);
  ASSERT_TRUE(p.submit({&in[depth + 1], 1}).ok());
  for (int i = 2; i < n; ++i) check(i);
  EXPECT_EQ(p.in_flight(), 0);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(Bytes(held[i].bytes.begin(), held[i].bytes.end()), twin_blocks(in[i].data, bs, false)) << i;
  }
  held.clear();

  ASSERT_TRUE(p.submit({in.data(), 2}).ok());
  ASSERT_TRUE(p.submit({in.data(), 2}).ok());
  p.abandon();
  EXPECT_EQ(p.in_flight(), 0);
  ASSERT_TRUE(p.submit({in.data(), 2}).ok());
  ASSERT_TRUE(p.begin(pipeline_options(gpu::PipelineMode::compress, bs, false)).ok());
  EXPECT_EQ(p.in_flight(), 0);
  ASSERT_TRUE(p.submit({}).ok());
  ASSERT_TRUE(p.complete(&outs, nullptr).ok());
  EXPECT_TRUE(outs.empty());
  ASSERT_TRUE(p.submit({in.data(), 5}).ok());
  ASSERT_TRUE(p.complete(&outs, nullptr).ok());
  ASSERT_EQ(outs.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Bytes(outs[i].bytes.begin(), outs[i].bytes.end()), twin_blocks(in[i].data, bs, false));
  EXPECT_EQ(p.begin(pipeline_options(gpu::PipelineMode::compress, 0, false)).code, StatusCode::invalid_argument);
  EXPECT_EQ(p.submit({in.data(), 1}).code, StatusCode::invalid_argument);  // not begun
}

// Frame blocks built by hand.
struct BlockBuilder {
  bool checksum;
  Bytes chunk;
  void add(std::uint32_t word, const Bytes& payload, bool good_checksum = true) {
    std::uint8_t w[4];
    lz4f::write_le32(w, word);
    chunk.insert(chunk.end(), w, w + 4);
    chunk.insert(chunk.end(), payload.begin(), payload.end());
    if (checksum) {
      lz4f::write_le32(w, XXH32(payload.data(), payload.size(), 0) ^ (good_checksum ? 0u : 1u));
      chunk.insert(chunk.end(), w, w + 4);
    }
  }
  // `data` as one LZ4 block from liblz4.
  void add_lz4(const Bytes& data, bool good_checksum = true) {
    Bytes c(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(data.size()))));
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(data.data()), reinterpret_cast<char*>(c.data()),
                                       static_cast<int>(data.size()), static_cast<int>(c.size()));
    c.resize(static_cast<std::size_t>(n));
    add(static_cast<std::uint32_t>(c.size()), c, good_checksum);
  }
};

struct MalformedChunk {
  std::string name;
  Bytes chunk;
  StatusCode want;
};

// Chunks that start with a good block and then go wrong.
inline std::vector<MalformedChunk> malformed_chunks(std::size_t bs, bool checksum) {
  const Bytes text = text_like_bytes(bs, 5);
  std::vector<MalformedChunk> m;
  auto good = [&] {
    BlockBuilder b{checksum, {}};
    b.add_lz4(text);
    return b;
  };
  {
    BlockBuilder b = good();
    std::uint8_t w[4];
    lz4f::write_le32(w, 1000);  // claims 1000 bytes, has 10
    b.chunk.insert(b.chunk.end(), w, w + 4);
    b.chunk.insert(b.chunk.end(), 10, 0x11);
    m.push_back({"lying word", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.add(static_cast<std::uint32_t>(bs + 1) | lz4f::kUncompressedBit, Bytes(bs + 1, 7));
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
    b.add(5, Bytes{0x50, 'a', 'b', 'c', 'd'});  // 5 literals out of 4 bytes
    m.push_back({"literals past the input", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    b.add_lz4(Bytes(bs + 1, 'z'));  // valid LZ4, but one byte more than a block
    m.push_back({"block decodes past the block size", b.chunk, StatusCode::bad_data});
  }
  {
    BlockBuilder b = good();
    Bytes text_block;
    {
      BlockBuilder t{false, {}};
      t.add_lz4(text);
      text_block.assign(t.chunk.begin() + 4, t.chunk.end());
    }
    text_block[text_block.size() / 2] ^= 0xFF;  // a byte flipped: an error or other bytes
    text_block[0] = 0xFF;                       // a literal run longer than the block
    b.add(static_cast<std::uint32_t>(text_block.size()), text_block);
    m.push_back({"flipped LZ4 block", b.chunk, StatusCode::bad_data});
  }
  if (checksum) {
    BlockBuilder b = good();
    b.add_lz4(text, false);
    m.push_back({"bad checksum", b.chunk, StatusCode::checksum_mismatch});
  }
  return m;
}

// Each malformed chunk between two good ones: it fails with its status, they
// decode; with checksums unverified, a bad checksum passes.
inline void check_pipeline_malformed(gpu::Lz4Pipeline& p) {
  const std::size_t bs = 64 << 10;
  for (bool checksum : {false, true}) {
    const Bytes text = text_like_bytes(bs, 5);
    BlockBuilder good{checksum, {}};
    good.add_lz4(text);
    good.add(100 | lz4f::kUncompressedBit, Bytes(text.begin(), text.begin() + 100));
    Bytes expect = text;
    expect.insert(expect.end(), text.begin(), text.begin() + 100);
    for (const MalformedChunk& m : malformed_chunks(bs, checksum)) {
      SCOPED_TRACE(m.name + (checksum ? ", with checksums" : ""));
      ASSERT_TRUE(p.begin(pipeline_options(gpu::PipelineMode::decompress, bs, checksum)).ok());
      gpu::PipelineIn in[3];
      in[0].data = {good.chunk.data(), good.chunk.size()};
      in[1].data = {m.chunk.data(), m.chunk.size()};
      in[2] = in[0];
      std::vector<gpu::PipelineOut> outs;
      ASSERT_TRUE(p.submit(in).ok());
      ASSERT_TRUE(p.complete(&outs, nullptr).ok());
      ASSERT_EQ(outs.size(), 3u);
      EXPECT_EQ(outs[1].status.code, m.want) << outs[1].status.to_string();
      for (int i : {0, 2}) {
        ASSERT_TRUE(outs[i].status.ok()) << outs[i].status.to_string();
        EXPECT_TRUE(same(expect, outs[i].bytes));
      }
    }
    if (checksum) {
      gpu::Lz4PipelineOptions o = pipeline_options(gpu::PipelineMode::decompress, bs, true);
      o.verify_checksums = false;
      ASSERT_TRUE(p.begin(o).ok());
      BlockBuilder b{true, {}};
      b.add_lz4(text, false);
      gpu::PipelineIn in;
      in.data = {b.chunk.data(), b.chunk.size()};
      std::vector<gpu::PipelineOut> outs;
      ASSERT_TRUE(p.submit({&in, 1}).ok());
      ASSERT_TRUE(p.complete(&outs, nullptr).ok());
      ASSERT_TRUE(outs[0].status.ok());
      EXPECT_TRUE(same(text, outs[0].bytes));
    }
  }
}

// A chunk whose blocks inside decode to less than a block (as a frame
// written by another encoder may have): its bytes come back contiguous, into
// the pipeline's buffer and into a direct output of exactly their size; a
// direct output one byte short fails the chunk with output_too_small.
inline void check_pipeline_short_blocks(gpu::Lz4Pipeline& p, const HostAlloc& direct_mem) {
  const std::size_t bs = 64 << 10;
  const Bytes text = text_like_bytes(4 * bs, 9);
  BlockBuilder b{false, {}};
  Bytes expect;
  std::size_t pos = 0;
  for (std::size_t n : {bs - 100, std::size_t{1}, bs, std::size_t{3000}, bs}) {
    const Bytes part(text.begin() + pos, text.begin() + pos + n);
    if (n == 3000) {
      b.add(static_cast<std::uint32_t>(n) | lz4f::kUncompressedBit, part);
    } else {
      b.add_lz4(part);
    }
    expect.insert(expect.end(), part.begin(), part.end());
    pos += n;
  }
  ASSERT_TRUE(p.begin(pipeline_options(gpu::PipelineMode::decompress, bs, false)).ok());
  gpu::PipelineIn in[3];
  for (auto& i : in) i.data = {b.chunk.data(), b.chunk.size()};
  in[1].direct = direct_mem(expect.size());
  in[1].direct_capacity = expect.size();
  in[2].direct = direct_mem(expect.size());
  in[2].direct_capacity = expect.size() - 1;
  std::vector<gpu::PipelineOut> outs;
  ASSERT_TRUE(p.submit(in).ok());
  ASSERT_TRUE(p.complete(&outs, nullptr).ok());
  ASSERT_EQ(outs.size(), 3u);
  ASSERT_TRUE(outs[0].status.ok());
  EXPECT_TRUE(same(expect, outs[0].bytes));
  ASSERT_TRUE(outs[1].status.ok());
  EXPECT_EQ(outs[1].bytes.data(), in[1].direct);
  EXPECT_TRUE(same(expect, outs[1].bytes));
  EXPECT_EQ(outs[2].status.code, StatusCode::output_too_small);
}

// `fault` armed to fire in batch 2 of five one-chunk batches: batches 0 and
// 1 come back whole, the fault shows where its kind does (submit() for
// out_of_memory and copy, complete() for kernel), and once fired it is gone.
inline void check_pipeline_fault_fires_once(gpu::Lz4Pipeline& p, gpu::Fault fault) {
  const std::size_t bs = 64 << 10;
  const Bytes data = mixed_bytes(bs * 3, 8);
  gpu::PipelineIn in;
  in.data = {data.data(), data.size()};
  std::vector<gpu::PipelineOut> outs;
  ASSERT_TRUE(p.begin(pipeline_options(gpu::PipelineMode::compress, bs, false)).ok());
  gpu::inject_fault(fault, 2);
  ASSERT_TRUE(p.submit({&in, 1}).ok());
  ASSERT_TRUE(p.submit({&in, 1}).ok());
  const Status third = p.submit({&in, 1});
  if (fault == gpu::Fault::out_of_memory || fault == gpu::Fault::copy) {
    EXPECT_EQ(third.code, StatusCode::device_error);
    ASSERT_NE(third.reason, nullptr);
    EXPECT_NE(std::string(third.reason).find("injected"), std::string::npos);
    ASSERT_TRUE(p.complete(&outs, nullptr).ok());  // the batches before it are whole
    EXPECT_EQ(Bytes(outs[0].bytes.begin(), outs[0].bytes.end()), twin_blocks(in.data, bs, false));
    p.abandon();
  } else {
    ASSERT_TRUE(third.ok());
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(p.complete(&outs, nullptr).ok());
      EXPECT_EQ(Bytes(outs[0].bytes.begin(), outs[0].bytes.end()), twin_blocks(in.data, bs, false));
    }
    const Status s = p.complete(&outs, nullptr);
    EXPECT_EQ(s.code, StatusCode::device_error);
    p.abandon();
  }
  EXPECT_EQ(p.in_flight(), 0);
  ASSERT_TRUE(p.begin(pipeline_options(gpu::PipelineMode::compress, bs, false)).ok());
  const auto r = run_pipeline(p, {{in}, {in}, {in}, {in}});
  ASSERT_EQ(r.size(), 4u);
  for (const ChunkResult& c : r) EXPECT_EQ(c.bytes, twin_blocks(in.data, bs, false));

  // no_device counts begin() calls.
  gpu::inject_fault(gpu::Fault::no_device, 1);
  EXPECT_TRUE(p.begin({}).ok());
  EXPECT_EQ(p.begin({}).code, StatusCode::no_device);
  EXPECT_TRUE(p.begin({}).ok());
  // none disarms.
  gpu::inject_fault(gpu::Fault::no_device, 0);
  gpu::inject_fault(gpu::Fault::none, 0);
  EXPECT_TRUE(p.begin({}).ok());
}
}  // namespace tandem::test
