// The CPU twin of the GPU LZ4 encoder: one thread compresses an item into the
// very block that the GPU encoder (src/gpu/lz4_gpu_encode.hpp) writes for it,
// byte for byte, with the same size and status for every capacity. Pages that
// are compressed on the CPU and pages compressed on the GPU therefore agree,
// whichever side took them: the same lengths and the same bytes.
//
// The GPU's bodies also run on the CPU through their lane-by-lane emulation
// (gpu::lz4_encode_block_emulated), which is the reference but is slow; the
// twin computes the same parse in scalar code:
//  - The block is cut into segments of kSegmentSize bytes, parsed in order,
//    each from its own starting table: segment 0 from a cleared one (every
//    entry names the segment's first position), segment s > 0 from its prime
//    table, which for each hash holds the newest of every kPrimeStride-th
//    position of segments s - 3 .. s - 1 (from a running table of the newest
//    position of each hash, kept while the segments go by). Tables have
//    2^kSmallHashLog entries for blocks up to kSmallTableLimit bytes and
//    2^kLargeHashLog above; entries hold positions after the segment's prime
//    base.
//  - A segment is walked in steps of 32 positions, as the warp does: every
//    position of a step reads its candidate from the table as it was before
//    the step, and whether the candidate's 4 bytes equal its own becomes a bit
//    of a mask (the warp's ballot); then the step's positions are written
//    from the last down, so that the first of each hash stays. This half has
//    no branches.
//  - The parse walks the mask's bits: the lowest hit at or past the end of
//    the last match starts a match, extended forwards up to the segment's
//    match limit and backwards no further than the last match's end. The
//    next step starts at the later of the step's end and the match's.
//  - Sequences are written as they are found, each taking the literals since
//    the last match of any segment, so the block needs no records; a
//    sequence that does not fit ends the call.
// Loads stay inside in[0, n); writes stay inside out[0, capacity).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/tandem_gpu.hpp"

namespace tandem::cpu {

// Compresses in[0, n) into out[0, capacity) as the GPU encoder does and sets
// *out_size: ok (a block smaller than its input), incompressible (a valid
// block, not smaller), output_overflow (*out_size 0: the block is larger than
// capacity; it never is larger than lz4_max_compressed_size(n)), invalid_item
// (n larger than gpu::kMaxItemSize, or a null pointer with a size). Empty
// input gives the 1-byte block. On output_overflow the bytes of
// out[0, capacity) are unspecified (the GPU leaves them untouched); nothing
// past capacity is ever written. Allocates nothing: its tables are the
// thread's own.
gpu::ItemStatus lz4_twin_compress(const std::uint8_t* in, std::size_t n, std::uint8_t* out, std::size_t capacity,
                                  std::size_t* out_size);

}  // namespace tandem::cpu
