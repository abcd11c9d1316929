// Host-side pieces that the CUDA LZ4 pipeline and the emulated one share: the
// pipeline's shape, the parse of a decompression chunk's frame blocks (its
// input is hostile), and the block checksums, which both compute on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpu/lz4_gpu_pipeline.hpp"
#include "tandem/tandem.hpp"

namespace tandem::gpu {

// Batches in flight: one copying in, one in the kernels, one copying out,
// and one more, so that the device goes on while the host waits for the
// oldest batch's place in the output. Measured on the H100 (silesia7 to
// 4.3 GB, host-resident, GB/s, auto compression / GPU-only decompression):
// depth 3 42.3 / 39.1, 4 46.5 / 41.0, 5 45.6 / 44.5.
inline constexpr int kPipelineDepth = 4;
// Input bytes of a batch that keep the device busy (thousands of 64 KiB
// blocks) while the buffers of every batch in flight stay small beside the device memory.
inline constexpr std::size_t kPipelineBatchBytes = std::size_t{32} << 20;
// Block sizes a run accepts (frame blocks go up to 4 MiB).
inline constexpr std::size_t kPipelineMaxBlockSize = std::size_t{4} << 20;
// Decompression: the device output area of a batch (frame_blocks_area of
// its chunks) at most. A chunk that would
// push the batch past it fails with output_too_small, and the caller decodes
// it on the CPU; only hostile chunks (tiny blocks) or batches of extremely
// compressible data get there.
inline constexpr std::size_t kPipelineMaxBatchOutput = std::size_t{1} << 30;

// block_size in 1 .. kPipelineMaxBlockSize.
Status check_pipeline_options(const Lz4PipelineOptions& options);

// Blocks of a compression chunk of n bytes.
inline std::size_t pipeline_block_count(std::size_t n, std::size_t block_size) {
  return (n + block_size - 1) / block_size;
}

// One frame block of a decompression chunk.
struct FrameBlock {
  std::size_t payload = 0;  // offset of its payload in the chunk
  std::size_t size = 0;     // payload bytes
  bool raw = false;         // stored raw: decodes to its payload
};

// The frame blocks of `chunk`: for each, a word (non-zero; its size at most
// block_size), the payload and, with block_checksum, 4 checksum bytes, all
// inside the chunk. bad_data (blocks cleared) otherwise.
Status parse_frame_blocks(std::span<const std::uint8_t> chunk, std::size_t block_size, bool block_checksum,
                          std::vector<FrameBlock>* blocks);

// The output area of a parsed chunk whose block k decodes at k * block_size:
// block_size per block but the last, which takes its payload when raw, else
// block_size.
std::size_t frame_blocks_area(std::span<const FrameBlock> blocks, std::size_t block_size);

// checksum_mismatch when a block's XXH32 (seed 0) of its payload differs from
// the 4 bytes after it.
Status verify_block_checksums(std::span<const std::uint8_t> chunk, std::span<const FrameBlock> blocks);

// Compression with block checksums: frame blocks j < m lie at
// frames[places[j], places[j + 1]), each a word, its payload and a 4-byte gap,
// which receives XXH32 of the payload. Runs on the worker pool for large
// batches.
void write_block_checksums(std::uint8_t* frames, const std::size_t* places, std::size_t m);

}  // namespace tandem::gpu
