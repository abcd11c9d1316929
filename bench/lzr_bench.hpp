// `tandem bench --codec lzr`: tandem's lzr format (docs/formats/lzr.md) on
// the input cut into items of --chunk bytes (each item a frame of its own),
// for each block size measured: the compressed size and ratio; the GPU's
// device-resident throughput (the batched calls of tandem/lzr.hpp, CUDA
// events around each call, the median of runs), whether the GPU wrote the
// CPU encoder's bytes and whether it decoded its frames back; the CPU codec
// on all threads (an item a thread); and, in the same run, libzstd at levels
// 1 and 3 on the same items, on one thread and on all threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "tandem/lzr.hpp"

namespace tandem::bench {

int run_lzr_bench(const BenchConfig& config);

// The GPU half (lzr_bench.cu; lzr_bench_none.cpp without CUDA).
struct LzrGpuFigures {
  bool ran = false;
  std::string error;             // why it did not run, or what failed
  double encode_seconds = 0;     // median, device-resident, every item in one call
  double decode_seconds = 0;
  std::uint64_t compressed = 0;  // the GPU's frames, summed
  std::size_t encode_temp = 0, decode_temp = 0;  // temporary device bytes
  bool identical = false;        // every frame equals the CPU encoder's
  bool round_trip = false;       // the GPU decoded every frame back to its item
};
bool lzr_gpu_compiled();
// Items are input[i * item, ...) of `item` bytes (the last shorter);
// cpu_frames[i] is the CPU encoder's frame of item i.
LzrGpuFigures lzr_gpu_measure(std::span<const std::uint8_t> input, std::size_t item, const lzr::Params& params,
                              const std::vector<std::vector<std::uint8_t>>& cpu_frames, double min_seconds,
                              int min_runs);

}  // namespace tandem::bench
