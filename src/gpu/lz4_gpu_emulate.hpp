// The GPU kernels' bodies run on the CPU, one warp emulated lane by lane: the
// same source as the device code, so CPU tests and fuzzers check the logic that
// the GPU runs, and their output is byte for byte what the GPU writes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

// The shapes of the GPU decoder: a thread block per LZ4 block (wide), a warp
// per block (lanes, for batches of small blocks), a warp per block with the
// block's output staged in shared memory (staged, for blocks of up to 4 KiB;
// larger ones decode in place), or a thread block per block whose parse
// takes windows of input across several warps (window, for the largest
// blocks), or a thread block per block whose threads parse and gather the
// whole block at once (gather, for blocks of up to 64 KiB). They give the
// same statuses and bytes.
enum class DecodeShape { wide, lanes, staged, window, gather };
inline constexpr DecodeShape kDecodeShapes[] = {DecodeShape::wide, DecodeShape::lanes, DecodeShape::staged,
                                                DecodeShape::window, DecodeShape::gather};

// The order in which the emulation runs a warp's lanes: on the GPU they run
// at once, so a kernel's result must not depend on it.
enum class LaneOrder { up, down };

// Decodes one LZ4 block as the GPU kernel does; *out_size gets the bytes written.
ItemStatus lz4_decode_block_emulated(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                     std::size_t capacity, std::size_t* out_size,
                                     DecodeShape shape = DecodeShape::wide, LaneOrder order = LaneOrder::up);

// Compresses one item as the GPU kernel does.
ItemStatus lz4_encode_block_emulated(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                     std::size_t capacity, std::size_t* out_size);

}  // namespace tandem::gpu
