// Shared by the LZ4 pipeline tests (tests/cpu/lz4_pipeline_test.cpp, on the
// emulated pipeline, and tests/gpu/lz4_pipeline_gpu_test.cpp, on the device):
// cutting data into chunks and batches, driving a pipeline with batches in
// flight up to its depth, wrapping compressed chunks into an LZ4 frame, and
// decoding frames with liblz4's LZ4F API as the reference.
#pragma once

#include <lz4frame.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "format/lz4_frame_format.hpp"
#include "gpu/lz4_gpu_pipeline.hpp"
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

}  // namespace tandem::test
