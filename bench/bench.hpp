// The benchmark engine behind `tandem bench`.
//
// For each file, and for all files together, it measures tandem's codec and the
// reference library in the same run: compressed size, ratio, and compression
// and decompression throughput (uncompressed bytes per second) with one thread
// and with all threads, the median of several runs, every run verified by hash.
// It prints a table on stdout and, when asked, writes the same results as JSON.
#pragma once

#include <cstddef>
#include <string>
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
};

// Runs the benchmark; returns a process exit code (0 success, 1 failure, 2 bad arguments).
int run(const BenchConfig& config);

}  // namespace tandem::bench
