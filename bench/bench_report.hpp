// What `tandem bench` reports: one row per (input, engine, threads), one
// comparison per input, printed as an aligned table and written as JSON; and
// for the GPU, one row per (input, chunk size, engine) and one comparison per
// (input, chunk size) in a second table.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bench/bench.hpp"

namespace tandem::bench {

// Seconds of the timed runs of one direction.
struct Timing {
  double median = 0;
  double min = 0;
  double max = 0;
  int runs = 0;
};

// The timed runs of one direction of one measurement (tandem bench and
// tandem pages bench alike).
struct Runs {
  std::vector<double> seconds;
  double total = 0;

  void add(double s) {
    seconds.push_back(s);
    total += s;
  }
  // At least min_runs, adding up to min_seconds (or so many that the clock
  // cannot see them: empty inputs).
  bool enough(double min_seconds, int min_runs) const {
    constexpr std::size_t kMaxRuns = 1'000'000;
    return static_cast<int>(seconds.size()) >= min_runs && (total >= min_seconds || seconds.size() >= kMaxRuns);
  }
  Timing timing() const {
    std::vector<double> sorted = seconds;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    Timing t;
    t.runs = static_cast<int>(n);
    if (n == 0) return t;
    t.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    t.min = sorted.front();
    t.max = sorted.back();
    return t;
  }
};

struct Row {
  std::string input;
  std::string engine;
  int threads = 1;
  std::uint64_t size = 0;             // uncompressed bytes
  std::uint64_t compressed_size = 0;  // bytes, framing included where the engine frames
  Timing compress;
  Timing decompress;

  double ratio() const;               // size / compressed_size
  double compress_rate() const;       // uncompressed bytes per second
  double decompress_rate() const;     // uncompressed bytes per second
};

// Ratios between rows of one input; NaN where a row is missing (one thread only).
struct Comparison {
  std::string input;
  int threads = 1;                             // the N of the N-thread rows
  double tandem_compress_scaling = 0;          // tandem N-thread / 1-thread compress rate
  double liblz4_compress_scaling = 0;          // liblz4 N-thread / 1-thread compress rate
  double tandem_decode_vs_liblz4 = 0;          // tandem 1-thread decode / liblz4 1-thread raw decode
  double tandem_xxh_decode_vs_liblz4 = 0;      // the same for tandem+xxh
  std::uint64_t blocks = 0;                    // chunks (frame blocks) of the input
  // The N-thread / 1-thread scaling these blocks allow when every byte costs
  // the same: blocks handed out in order to whichever thread is free. Real
  // blocks differ in cost, so a measurement may land above it.
  double even_scaling = 0;
};

Comparison compare(const std::vector<Row>& rows, const std::string& input, int threads, std::uint64_t size,
                   std::size_t chunk);

// Aligned table on a stdio stream; inputs' names are known before measuring,
// so the columns are sized once.
class Table {
 public:
  Table(std::FILE* out, const std::vector<std::string>& input_names);
  void header() const;
  void row(const Row& row) const;
  void comparison(const Comparison& comparison) const;

 private:
  std::FILE* out_;
  int input_width_;
};

// One row of the GPU table: liblz4 at one thread count, or the GPU in one
// mode, on raw LZ4 blocks of `chunk` bytes.
struct GpuRow {
  Row row;                        // engine "liblz4" or "gpu"; threads 0 for the GPU
  std::size_t chunk = 0;
  std::string mode;               // "device" or "host" for the GPU, empty for liblz4
  std::uint64_t blocks = 0;
  std::uint64_t incompressible = 0;  // GPU: blocks marked incompressible (valid, not smaller than the chunk)
  int buffer_sets = 0;            // GPU: buffer sets the timed runs rotate through
  // GPU: compressed size / liblz4's on the same chunks; NaN for liblz4 rows.
  double size_vs_liblz4 = std::numeric_limits<double>::quiet_NaN();

  std::string label() const;      // "liblz4", "gpu-device", "gpu-host"
};

// The GPU against liblz4 with N threads on one input and chunk size: rate
// quotients (GPU / liblz4), NaN where a row is missing.
struct GpuComparison {
  std::string input;
  std::size_t chunk = 0;
  int threads = 1;                          // the N of liblz4's N-thread row
  double device_compress = 0;
  double device_decompress = 0;
  double host_compress = 0;
  double host_decompress = 0;
  double size_vs_liblz4 = 0;                // GPU compressed size / liblz4's
  std::uint64_t blocks = 0;
  std::uint64_t incompressible = 0;
};

GpuComparison compare_gpu(const std::vector<GpuRow>& rows, const std::string& input, std::size_t chunk,
                          int threads);

// "4K", "256K", "1M", or bytes when not a whole number of KiB.
std::string chunk_label(std::size_t chunk);

// The GPU table: rates in GB/s (1e9 bytes per second), since GPU rates run
// to tens of GB/s.
class GpuTable {
 public:
  GpuTable(std::FILE* out, const std::vector<std::string>& input_names);
  void header() const;
  void row(const GpuRow& row) const;
  void comparison(const GpuComparison& comparison) const;

 private:
  std::FILE* out_;
  int input_width_;
};

struct InputInfo {
  std::string name;
  std::uint64_t size = 0;
  std::uint64_t xxh3 = 0;
  std::vector<std::string> files;  // the files it holds, in order
};

struct RunInfo {
  int threads = 1;                 // the N of the N-thread rows
  std::string backend;             // what was measured: "cpu", "gpu" or "cpu+gpu"
  std::string date;                // UTC ISO 8601
  std::string gpu_name;            // device 0, when there are GPU rows
};

// Everything one run measured.
struct Results {
  std::vector<InputInfo> inputs;
  std::vector<Row> rows;                       // the CPU table
  std::vector<Comparison> comparisons;
  std::vector<GpuRow> gpu_rows;                // the GPU table
  std::vector<GpuComparison> gpu_comparisons;
};

// Writes everything as JSON to `path`; false with a message on stderr when it cannot.
bool write_json(const std::string& path, const BenchConfig& config, const RunInfo& run, const Results& results);

// "2025-01-31T12:00:00Z"
std::string utc_now_iso8601();

}  // namespace tandem::bench
