// `tandem bench --codec rans`: tandem's rANS format (docs/formats/rans.md) on
// the input cut into segments (each segment its own stream, with its own
// frequency table), for each chunk size the format allows up to the segment:
// the compressed size and ratio; the CPU reference codec's throughput on one
// thread and on all threads; and, on a GPU, the device-resident throughput of
// the batched GPU calls (CUDA events around the calls, the median of runs),
// whether the GPU wrote the CPU's bytes, and whether it decoded them back.
// The one-chunk-per-segment row is the same coder without chunk boundaries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "format/rans_format.hpp"

namespace tandem::bench {

int run_rans_bench(const BenchConfig& config);

// The GPU half (rans_bench_gpu.cu; rans_bench_gpu_none.cpp without CUDA).
struct RansGpuFigures {
  bool ran = false;
  std::string error;            // why it did not run, or what failed
  double encode_seconds = 0;    // median, device-resident, all segments in one call
  double decode_seconds = 0;
  std::uint64_t compressed = 0; // the GPU's streams, summed
  bool identical = false;       // every stream equals the CPU encoder's
  bool round_trip = false;      // the GPU decoded every stream back to its segment
};
bool rans_gpu_compiled();
// `cpu_streams[i]` is the CPU encoder's stream of segment i.
RansGpuFigures rans_gpu_measure(std::span<const std::uint8_t> input, std::size_t segment, const rans::Params& params,
                                const std::vector<std::vector<std::uint8_t>>& cpu_streams, double min_seconds,
                                int min_runs);

}  // namespace tandem::bench
