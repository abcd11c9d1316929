// The GPU inflate benchmark: tandem's device-resident batched inflate
// (src/gpu/inflate_gpu.hpp) of tandem's indexed deflate streams, against
// libdeflate decompression of the same chunks on one thread and on all
// threads, in the same run, for each chunk size asked. A second table does
// the same for the chunks that tandem's GPU deflate encoder writes (on a
// machine with a GPU), inflated with their segment starts and without.
//
// The input is the files given, concatenated in order (silesia7: dickens mr
// nci ooffice osdb reymont xml). For each chunk size C, the input is cut into
// chunks of C bytes, each compressed alone by zlib at `level` and ended with a
// full flush (an empty stored block, byte-aligned), as an indexed stream's
// chunks are. The GPU figure is device-resident: the chunks, the item arrays
// and the output buffers are in device memory before the first CUDA event,
// and only inflate_async sits between the events; the median of the runs is
// kept. The GPU's output is checked once against the input, byte for byte,
// with every chunk's status and size. libdeflate inflates each chunk followed
// by the two bytes 03 00 (a final empty block, which it needs to stop), spread
// over threads (a decompressor each), median of the runs; its output is
// checked too. Throughput is uncompressed bytes per second. Prints a table on
// stdout and, when asked, writes JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::bench {

struct InflateBenchConfig {
  std::vector<std::string> paths;  // files, concatenated in this order
  std::vector<std::size_t> chunks = {std::size_t{16} << 10, std::size_t{32} << 10, std::size_t{64} << 10,
                                     std::size_t{128} << 10};  // chunk sizes, powers of two
  int level = 6;                   // zlib's level for the chunks
  int threads = 0;                 // the "all threads" figure: 0 = all hardware threads
  int runs = 10;                   // timed runs per measurement (the median is kept)
  std::string json_path;           // write JSON results here when not empty
};

// Runs the benchmark; returns a process exit code (0 success, 1 failure, 2 bad arguments).
int run_inflate_bench(const InflateBenchConfig& config);

// The GPU part (inflate_bench.cu, or inflate_bench_none.cpp without CUDA):
// inflates the chunks (chunk i is sizes[i] bytes at offsets[i] in `stream`,
// to out_sizes[i] bytes) on the device `runs` times after a checked warm-up,
// the output compared with `expect` (the input, n bytes). Stores the median
// seconds and the device's name. False with a message in *error when there is
// no device, a call fails or the output differs.
struct InflateGpuResult {
  double seconds = 0;
  std::string device;
};
// With `starts` (not null): the chunks' segment starts, per_item a chunk, of
// segments of segment_bytes, given to the device call (InflateSegments).
struct InflateGpuStarts {
  const std::vector<std::uint32_t>* starts = nullptr;
  std::size_t per_item = 0;
  std::uint32_t segment_bytes = 0;
};
bool inflate_gpu_measure(const std::vector<unsigned char>& stream, const std::vector<std::size_t>& offsets,
                         const std::vector<std::size_t>& sizes, const std::vector<std::size_t>& out_sizes,
                         std::size_t chunk, const unsigned char* expect, std::size_t n, int runs,
                         InflateGpuResult* result, std::string* error, const InflateGpuStarts& starts = {});

}  // namespace tandem::bench
