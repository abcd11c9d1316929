// The hybrid section of `tandem bench` (`--hybrid`): LZ4 frames of 64 KiB
// independent blocks through the hybrid scheduler under each policy (cpu,
// gpu, auto), against liblz4 on the same blocks with one and N threads, on
// one large host-resident input.
//
// The input is FILES concatenated in order and repeated, whole, until it
// holds at least hybrid_size bytes. Where a CUDA device is present the
// input, the frame and the output live in pinned host memory, so the GPU
// copies straight from and to them, as an application holding its data in
// pinned memory would see it; otherwise in ordinary memory. Every page is
// touched before anything is timed.
//
// The policies and the references take turns, round after round, so that a
// slow spell of a shared machine falls on all of them alike. A policy's turn
// is one compression and then one decompression of that same frame (one
// frame buffer serves every policy), both timed, until both directions have
// min_runs runs adding up to min_seconds; the median is kept, as in the rest
// of the bench, and the scheduler's figures (RunMetrics) reported are those
// of the run whose time is nearest the median. Each policy's first round
// trip, untimed, is compared byte for byte with the input.
//
// A last measurement times one 64 KiB input (the first 64 KiB of the data)
// under cpu and auto: what a caller pays per small call.
#pragma once

#include "bench/bench.hpp"

namespace tandem::bench {

// Runs the hybrid section for config.paths (files); returns a process exit
// code (0 success, 1 failure or a round trip that differs, 2 bad arguments).
int run_hybrid(const BenchConfig& config);

}  // namespace tandem::bench
