// The benchmark behind `tandem pages bench`: any file read as a sequence of
// memory pages (a core dump of a process, say), compressed and decompressed
// in batches of several sizes by each engine, with a kernel-zram-like
// baseline measured in the same run:
//
//   zram        one thread, a page at a time: the same-fill check, then
//               liblz4's LZ4_compress_default, raw where the block is longer
//               than page_max_compressed; LZ4_decompress_safe back. What
//               zram does on one CPU core (batch size does not apply).
//   cpu-1       tandem's CPU backend, compress_pages on one thread
//   cpu         the same on all threads (--threads)
//   gpu-host    compress_pages with Backend::gpu: host memory in and out
//               (pinned, as a caller streaming pages through the GPU keeps
//               it), transfers included, wall-clock time
//   gpu-pageable  the same with ordinary (pageable) host memory, which
//               passes through the engine's pinned staging
//   gpu-device  pages_compress_async / pages_decompress_async on pages
//               already in GPU memory, timed with CUDA events
//
// Throughput is uncompressed bytes (and pages) per second, both ways, the
// median of several runs. A run covers the whole input in batches of B
// pages for batches of 256 pages and more (the input cycled to fill a batch
// larger than it), and 8,192 pages spread over it for smaller batches. Every
// engine's records are checked against the CPU backend's (the same kinds and
// lengths) and every decompression against the input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::bench {

struct PagesBenchConfig {
  std::vector<std::string> paths;  // files, read as one sequence of pages
  std::size_t page_size = 4096;
  std::vector<std::size_t> batches = {1, 16, 256, 1000, 10000, 100000};
  // zram, cpu-1, cpu, gpu-host, gpu-pageable, gpu-device; the GPU ones are
  // skipped, with a note, where there is no GPU.
  std::vector<std::string> engines = {"zram", "cpu-1", "cpu", "gpu-host", "gpu-pageable", "gpu-device"};
  int threads = 0;  // the `cpu` engine's threads: 0 = all
  double min_seconds = 0.3;
  int min_runs = 3;
  std::string json_path;
  bool quiet = false;
};

// Parses "1,16,256" (K suffixes allowed: "10K" = 10,000 pages) into *batches;
// false with *error on an empty, zero or malformed entry, or one over 1,000,000.
bool parse_batch_list(std::string_view text, std::vector<std::size_t>* batches, std::string* error);
// Parses "zram,cpu,gpu-device"; false with *error on an unknown name.
bool parse_engine_list(std::string_view text, std::vector<std::string>* engines, std::string* error);

// Runs it; returns a process exit code (0 success, 1 failure, 2 bad arguments).
int run_pages(const PagesBenchConfig& config);

}  // namespace tandem::bench
