// The benchmark engine behind `tandem bench`.
//
// For each file, and for all files together, it measures tandem's codec and the
// reference library in the same run: compressed size, ratio, and compression
// and decompression throughput (uncompressed bytes per second) with one thread
// and with all threads, the median of several runs, every run verified by hash.
// On a GPU (`--backend gpu`, or `auto` where a CUDA device is present) it also
// measures tandem's batched GPU LZ4 calls on raw blocks of each of `gpu_chunks`
// against liblz4 on the same chunks. It prints tables on stdout and, when
// asked, writes the same results as JSON. `--hybrid` runs another section
// instead (hybrid_bench.hpp): the hybrid scheduler's policies on one large
// input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::bench {

struct BenchConfig {
  std::string codec = "lz4";
  std::string backend = "auto";        // cpu | gpu | auto
  std::size_t chunk = 4u << 20;        // frame block size / reference chunk size
  int threads = 0;                     // "all threads" figure: 0 = all hardware threads
  int level = 0;                       // as tandem::BatchOptions::level
  std::string json_path;               // write JSON results here when not empty
  std::vector<std::string> paths;      // files and directories (directories: their regular files)
  double min_seconds = 0.5;            // each measurement repeats until it lasts this long...
  int min_runs = 3;                    // ...and at least this many runs; the median is kept
  bool quiet = false;                  // no progress lines on stderr
  // The GPU figures: raw LZ4 blocks of each of these sizes (the GPU and
  // liblz4 alike), each in [1, kMaxGpuChunk] bytes.
  std::vector<std::size_t> gpu_chunks = {4u << 10, 16u << 10, 64u << 10, 256u << 10};
  // A GPU run takes milliseconds: many short runs give a steady median.
  double gpu_min_seconds = 0.3;
  int gpu_min_runs = 10;
  // The hybrid section (hybrid_bench.hpp), run instead of the tables above.
  bool hybrid = false;
  std::uint64_t hybrid_size = 4'000'000'000;  // the input: FILES repeated to at least this many bytes
  std::size_t hybrid_chunk = 0;               // the scheduler's host chunk; 0 = its default (2 MiB)
  std::string timeline_path;                  // SVG of the auto runs when not empty
};

// The largest GPU chunk: the LZ4 frame format's largest block.
inline constexpr std::size_t kMaxGpuChunk = std::size_t{4} << 20;

// Parses a comma-separated list of sizes with optional K or M suffixes (KiB,
// MiB: "4K,16K,64K,256K", "65536,1M") into `chunks`, in the order given,
// duplicates dropped. False, with a message in *error, when an entry is empty,
// malformed, 0 or larger than kMaxGpuChunk.
bool parse_chunk_list(std::string_view text, std::vector<std::size_t>* chunks, std::string* error);

// Runs the benchmark; returns a process exit code (0 success, 1 failure, 2 bad arguments).
int run(const BenchConfig& config);

// Reads `paths` (files, and directories: their regular files, sorted) and
// concatenates them in order into *data; *names gets each file's name without
// its directory. False, with a message on stderr, when a path is missing or
// cannot be read, or no file is given.
bool read_concatenated(const std::vector<std::string>& paths, std::vector<std::uint8_t>* data,
                       std::vector<std::string>* names);

}  // namespace tandem::bench
