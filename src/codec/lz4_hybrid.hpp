// LZ4 frames of independent blocks through the hybrid scheduler
// (sched/scheduler.hpp): the CPU workers compress and decode with liblz4, the
// GPU workers through each device's Lz4Pipeline, and one writer puts the
// blocks in order.
//
// Compression: the input is cut into host chunks of whole blocks (chunk_size,
// 2 MiB by default), each becoming a run of frame blocks; the content
// checksum runs over the chunks in order as they are read.
//
// Decompression: the reader parses frame headers and block words (every
// length checked before any block is decoded) and cuts each frame into chunks
// of whole blocks; the writer checks the content size and checksum in order.
// A chunk the GPU refuses is decoded again on the CPU, whose verdict counts,
// so that the result never depends on which worker took a chunk. When the
// output is one caller's buffer, workers decode straight into their chunk's
// place in it.
#pragma once

#include "gpu/lz4_gpu_pipeline.hpp"
#include "tandem/tandem.hpp"

namespace tandem::hybrid {

// Writes one frame of independent blocks (not legacy, not linked) holding
// everything `in` yields. options.backend: cpu, gpu or automatic, already
// known to be able to run here.
Status compress_frame(Source& in, Sink& out, const Lz4FrameOptions& options, StreamStats* stats);

// Decodes LZ4 frames of independent blocks, and skippable frames, from `in`
// until the input ends or a frame comes that this run does not take (a legacy
// frame, linked blocks, or another block maximum or block checksum flag than
// the run's first frame), which is left unread. `direct`, when not empty, is
// the buffer behind `out` from out's current position on: workers may decode
// into it. stats (may be null) receives this run's counts.
Status decompress_frames(Source& in, Sink& out, const Lz4DecodeOptions& options, MutableBuffer direct,
                         StreamStats* stats);

// Tests: the GPU workers use this pipeline (one GPU) instead of the devices'
// own, even where there is no device; null restores the devices.
void set_test_pipeline(gpu::Lz4Pipeline* pipeline);

// The backend a run of the scheduler uses for `requested` at `level` (as
// Lz4FrameOptions::level; decoding: 0): cpu where the GPU cannot help (no
// device, a level it lacks), else as requested; an error where the request
// cannot run (gpu without a device, gpu at an HC level).
Status hybrid_backend(Backend requested, int level, Backend* backend);

}  // namespace tandem::hybrid
