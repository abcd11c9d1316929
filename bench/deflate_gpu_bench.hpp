// The GPU deflate benchmark: tandem's device-resident batched deflate
// compression (src/gpu/deflate_gpu.hpp) on one input cut into chunks of
// tandem's indexed deflate stream, against libdeflate levels 1 and 6 on the
// same chunks with one thread and with all threads, in the same run.
//
// The input is the files given, concatenated in order (silesia7: dickens mr
// nci ooffice osdb reymont xml). The GPU figure is device-resident: the input
// and the item arrays are in device memory before the first CUDA event, and
// only deflate_compress_async sits between the events; the median of the
// runs is kept. Every GPU chunk is checked once: libdeflate inflates it to
// its input, and all chunks joined with 03 00 inflate as one stream. The
// libdeflate figures time the chunks' compression spread over threads (each
// with its own compressor), median of the runs. Throughput is uncompressed
// bytes per second. Prints a table on stdout and, when asked, writes JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>


namespace tandem::bench {

struct DeflateGpuBenchConfig {
  std::vector<std::string> paths;       // files, concatenated in this order
  std::size_t chunk = std::size_t{64} << 10;  // chunk size, a power of two
  int threads = 0;                      // the "all threads" figure: 0 = all hardware threads
  int runs = 10;                        // timed runs per measurement (the median is kept)
  std::string json_path;                // write JSON results here when not empty
};

// Runs the benchmark; returns a process exit code (0 success, 1 failure, 2 bad arguments).
int run_deflate_gpu_bench(const DeflateGpuBenchConfig& config);

// The GPU part (deflate_gpu_bench.cu, or deflate_gpu_bench_none.cpp without
// CUDA): compresses `n` bytes at `data` in chunks of `chunk` bytes on the
// device `runs` times after a warm-up; stores the median seconds, the chunks'
// total compressed bytes and the chunks themselves (joined, in order). False
// with a message in *error when there is no device or something fails.
struct DeflateGpuResult {
  double seconds = 0;
  std::size_t compressed = 0;
  std::vector<std::size_t> chunk_sizes;
  std::vector<unsigned char> chunks;
  // Where each chunk's segments start (deflate_compress_async's
  // d_segment_starts): segments_per_item entries a chunk.
  std::vector<std::uint32_t> segment_starts;
  std::size_t segments_per_item = 0;
  std::string device;
};
bool deflate_gpu_measure(const unsigned char* data, std::size_t n, std::size_t chunk, int runs,
                         DeflateGpuResult* result, std::string* error);

}  // namespace tandem::bench
