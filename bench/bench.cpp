// `tandem bench`: checks the configuration, loads every input into memory,
// then for each input measures every engine (bench_engines.hpp) with one
// thread and with N threads, and reports (bench_report.hpp).
//
// For one input, every engine is made first (buffers allocated and touched)
// and runs one untimed round trip. Then the engines take turns, one timed
// compression and one timed decompression each per round, until each
// direction of each has timed runs that add up to min_seconds and number at
// least min_runs; the median is kept. Only the codec call sits between the two
// clock reads. Every decompression run - the warm-up included - is checked
// against the original with XXH3-64; before each run one byte of every 4 KiB
// page of the output is set to a value the original does not hold there, so a
// decoder that skips a page cannot pass on the previous run's output.
//
// The GPU section (bench_gpu.hpp) follows the same scheme for each input and
// chunk size: liblz4 raw blocks with one and N threads and the GPU in device
// and host mode take turns; the GPU's runs are timed with CUDA events and
// checked on the GPU, and each of its measurements needs gpu_min_runs runs
// adding up to gpu_min_seconds.
//
// Memory: the inputs (twice: files and their concatenation), one output
// buffer, and every engine's compressed buffer for the input being measured:
// about ten times the largest input. The GPU section needs, per mode, a few
// buffer sets of about four times the input in GPU memory and three times the
// input in pinned host memory.
#include "bench/bench.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <new>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <xxhash.h>

#include "bench/bench_engines.hpp"
#include "bench/bench_gpu.hpp"
#include "bench/bench_report.hpp"
#include "bench/hybrid_bench.hpp"
#include "bench/deflate_gpu_bench.hpp"
#include "bench/inflate_bench.hpp"
#include "bench/lzr_bench.hpp"
#include "bench/scan_bench.hpp"
#include "bench/rans_bench.hpp"
#include "tandem/tandem.hpp"

namespace tandem::bench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The seven Silesia files of ../shared/corpus, in the order that silesia7
// concatenates them.
constexpr std::array<const char*, 7> kSilesia7 = {"dickens", "mr", "nci", "ooffice", "osdb", "reymont", "xml"};

struct Input {
  std::string name;
  std::vector<std::string> files;
  std::vector<std::uint8_t> data;
  std::uint64_t xxh3 = 0;
};

// Expands directories to their regular files (sorted). False with a message
// when a path is missing or names neither a file nor a directory.
bool expand_paths(const std::vector<std::string>& paths, std::vector<std::string>* files) {
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) {
      std::fprintf(stderr, "tandem bench: no such file or directory: %s\n", path.c_str());
      return false;
    }
    if (fs::is_directory(status)) {
      std::vector<std::string> found;
      for (const fs::directory_entry& entry : fs::directory_iterator(path, ec))
        if (entry.is_regular_file(ec)) found.push_back(entry.path().string());
      if (ec) {
        std::fprintf(stderr, "tandem bench: cannot list %s: %s\n", path.c_str(), ec.message().c_str());
        return false;
      }
      std::sort(found.begin(), found.end());
      files->insert(files->end(), found.begin(), found.end());
    } else if (fs::is_regular_file(status)) {
      files->push_back(path);
    } else {
      std::fprintf(stderr, "tandem bench: not a regular file or directory: %s\n", path.c_str());
      return false;
    }
  }
  if (files->empty()) {
    std::fprintf(stderr, "tandem bench: no input files\n");
    return false;
  }
  return true;
}

bool read_file(const std::string& path, std::vector<std::uint8_t>* data) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    std::perror(("tandem bench: " + path).c_str());
    return false;
  }
  std::error_code ec;
  const auto expected = fs::file_size(path, ec);
  data->clear();
  data->resize(ec ? 0 : static_cast<std::size_t>(expected));
  std::size_t have = std::fread(data->data(), 1, data->size(), file);
  // The file may have grown since it was sized: read to the end.
  for (std::uint8_t block[1 << 16]; !std::ferror(file);) {
    const std::size_t n = std::fread(block, 1, sizeof block, file);
    if (n == 0) break;
    data->insert(data->end(), block, block + n);
    have += n;
  }
  const bool ok = !std::ferror(file);
  std::fclose(file);
  if (!ok) {
    std::fprintf(stderr, "tandem bench: cannot read %s\n", path.c_str());
    return false;
  }
  data->resize(have);
  return true;
}

// One input per file, named after the file (its path when two share a name),
// plus the aggregate of all files when there are several.
bool load_inputs(const std::vector<std::string>& files, std::vector<Input>* inputs) {
  std::multiset<std::string> names;
  for (const auto& f : files) names.insert(fs::path(f).filename().string());
  for (const auto& f : files) {
    Input in;
    const std::string base = fs::path(f).filename().string();
    in.name = names.count(base) == 1 ? base : f;
    in.files = {f};
    if (!read_file(f, &in.data)) return false;
    inputs->push_back(std::move(in));
  }
  if (files.size() < 2) return true;

  const bool silesia = files.size() == kSilesia7.size() &&
                       std::all_of(kSilesia7.begin(), kSilesia7.end(),
                                   [&](const char* name) { return names.count(name) == 1; });
  std::vector<const Input*> parts;
  if (silesia) {
    for (const char* name : kSilesia7)
      for (const Input& in : *inputs)
        if (in.name == name) parts.push_back(&in);
  } else {
    for (const Input& in : *inputs) parts.push_back(&in);
  }
  Input all;
  all.name = silesia ? "silesia7" : "all";
  std::size_t total = 0;
  for (const Input* part : parts) total += part->data.size();
  all.data.reserve(total);
  for (const Input* part : parts) {
    all.files.push_back(part->files.front());
    all.data.insert(all.data.end(), part->data.begin(), part->data.end());
  }
  inputs->push_back(std::move(all));
  return true;
}

// One thing measured on one input: an engine at a thread count, or the GPU in
// one mode. Each call runs once and, given a non-null pointer, stores the
// seconds of the timed part; false after printing why it failed.
struct Measurement {
  std::string what;  // "dickens: liblz4, 16 threads", for messages
  std::function<bool(double* seconds)> compress;
  std::function<bool(double* seconds)> decompress;
  double min_seconds = 0;
  int min_runs = 1;
  Runs compress_runs;
  Runs decompress_runs;
};

double elapsed(Clock::time_point start, Clock::time_point stop) {
  return std::chrono::duration<double>(stop - start).count();
}

// Gives one byte of every 4 KiB page of `output` a value that differs from
// the original's byte there.
void scramble(std::span<std::uint8_t> output, std::span<const std::uint8_t> original) {
  constexpr std::size_t kPage = 4096;
  for (std::size_t i = 0; i < output.size(); i += kPage) output[i] = static_cast<std::uint8_t>(~original[i]);
  if (!output.empty()) output.back() = static_cast<std::uint8_t>(~original.back());
}

bool report_failure(const std::string& what, const std::string& error) {
  std::fprintf(stderr, "tandem bench: %s: %s\n", what.c_str(), error.c_str());
  return false;
}

// A CPU engine timed with the steady clock around the codec call alone; every
// decompression is checked against the original with XXH3-64 (untimed).
Measurement engine_measurement(std::string what, Engine* engine, const Input& input, std::span<std::uint8_t> output,
                               const BenchConfig& config) {
  Measurement m;
  m.what = std::move(what);
  m.min_seconds = config.min_seconds;
  m.min_runs = config.min_runs;
  m.compress = [engine, what = m.what](double* seconds) {
    const auto start = Clock::now();
    const bool ok = engine->compress();
    const auto stop = Clock::now();
    if (!ok) return report_failure(what, engine->error());
    if (seconds) *seconds = elapsed(start, stop);
    return true;
  };
  m.decompress = [engine, what = m.what, &input, output](double* seconds) {
    const std::span<const std::uint8_t> original(input.data);
    scramble(output, original);
    const auto start = Clock::now();
    const bool ok = engine->decompress(output);
    const auto stop = Clock::now();
    if (!ok) return report_failure(what, engine->error());
    if (XXH3_64bits(output.data(), output.size()) != input.xxh3)
      return report_failure(what, "decompressed data differ from the original (XXH3-64 mismatch)");
    if (seconds) *seconds = elapsed(start, stop);
    return true;
  };
  return m;
}

// A GPU trial, timed by its own CUDA events; it checks every decompression.
Measurement gpu_measurement(std::string what, GpuTrial* trial, const BenchConfig& config) {
  Measurement m;
  m.what = std::move(what);
  m.min_seconds = config.gpu_min_seconds;
  m.min_runs = config.gpu_min_runs;
  m.compress = [trial, what = m.what](double* seconds) {
    return trial->compress(seconds) || report_failure(what, trial->error());
  };
  m.decompress = [trial, what = m.what](double* seconds) {
    return trial->decompress(seconds) || report_failure(what, trial->error());
  };
  return m;
}

// Runs every measurement once untimed, then lets them take turns: each round
// gives every measurement that still needs runs one compression and one
// decompression, so that a slow spell of a shared machine falls on all of
// them alike instead of on whichever was being measured at the time. False
// after the first failure (already printed).
bool take_turns(const BenchConfig& config, const std::string& input_name, std::vector<Measurement>* measurements) {
  for (Measurement& m : *measurements) {
    if (!config.quiet) std::fprintf(stderr, "bench: %s: warm-up\n", m.what.c_str());
    if (!m.compress(nullptr) || !m.decompress(nullptr)) return false;
  }
  if (!config.quiet) {
    std::fprintf(stderr, "bench: %s: timing %zu measurements in turn\n", input_name.c_str(), measurements->size());
  }
  for (bool more = true; more;) {
    more = false;
    for (Measurement& m : *measurements) {
      double seconds = 0;
      if (!m.compress_runs.enough(m.min_seconds, m.min_runs)) {
        if (!m.compress(&seconds)) return false;
        m.compress_runs.add(seconds);
        more = true;
      }
      if (!m.decompress_runs.enough(m.min_seconds, m.min_runs)) {
        if (!m.decompress(&seconds)) return false;
        m.decompress_runs.add(seconds);
        more = true;
      }
    }
  }
  return true;
}

std::string describe(const std::string& input, const char* engine, int threads) {
  return input + ": " + engine + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

Row make_row(const Input& input, const std::string& engine, int threads, std::uint64_t compressed_size,
             const Measurement& m) {
  Row row;
  row.input = input.name;
  row.engine = engine;
  row.threads = threads;
  row.size = input.data.size();
  row.compressed_size = compressed_size;
  row.compress = m.compress_runs.timing();
  row.decompress = m.decompress_runs.timing();
  return row;
}

// Every CPU engine at every thread count on one input, one row each. Every
// engine is made (buffers allocated and touched) before anything is timed.
bool measure_input(const BenchConfig& config, const Input& input, const std::vector<int>& thread_counts,
                   std::span<std::uint8_t> output, std::vector<Row>* rows) {
  struct Made {
    EngineKind kind;
    int threads;
    std::unique_ptr<Engine> engine;
  };
  std::vector<Made> made;
  std::vector<Measurement> measurements;
  for (const EngineKind kind : kAllEngines) {
    for (const int threads : thread_counts) {
      if (threads > 1 && !engine_multithreaded(kind)) continue;
      made.push_back({kind, threads, make_engine(kind, input.data, {config.level, config.chunk, threads})});
      measurements.push_back(engine_measurement(describe(input.name, engine_name(kind), threads),
                                                made.back().engine.get(), input, output, config));
    }
  }
  if (!take_turns(config, input.name, &measurements)) return false;
  for (std::size_t i = 0; i < made.size(); ++i) {
    rows->push_back(make_row(input, engine_name(made[i].kind), made[i].threads,
                             made[i].engine->compressed_size(), measurements[i]));
  }
  return true;
}

// One input, one chunk size: liblz4 raw blocks (LZ4_compress_default, i.e.
// level 0 whatever --level says: the GPU has no levels) at every thread count,
// and the GPU in each mode, on the same chunks; rows in that order.
bool measure_gpu_chunk(const BenchConfig& config, const Input& input, std::size_t chunk,
                       const std::vector<int>& thread_counts, std::span<std::uint8_t> output,
                       std::vector<GpuRow>* rows) {
  const std::string name = input.name + " (" + chunk_label(chunk) + " chunks)";
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<std::unique_ptr<GpuTrial>> trials;
  std::vector<Measurement> measurements;
  for (const int threads : thread_counts) {
    engines.push_back(make_engine(EngineKind::liblz4, input.data, {0, chunk, threads}));
    measurements.push_back(
        engine_measurement(describe(name, "liblz4", threads), engines.back().get(), input, output, config));
  }
  for (const GpuMode mode : kGpuModes) {
    const std::string what = name + ": gpu, " + gpu_mode_name(mode) + "-resident";
    if (!config.quiet) std::fprintf(stderr, "bench: %s: allocating and verifying\n", what.c_str());
    std::string error;
    trials.push_back(make_gpu_trial(input.data, input.xxh3, chunk, mode, &error));
    if (!trials.back()) return report_failure(what, error);
    measurements.push_back(gpu_measurement(what, trials.back().get(), config));
  }
  if (!take_turns(config, name, &measurements)) return false;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    if (!trials[i]->finish()) return report_failure(measurements[engines.size() + i].what, trials[i]->error());
  }

  const std::uint64_t blocks = (input.data.size() + chunk - 1) / chunk;
  const std::uint64_t liblz4_size = engines.front()->compressed_size();
  for (std::size_t i = 0; i < engines.size(); ++i) {
    GpuRow g;
    g.row = make_row(input, "liblz4", thread_counts[i], engines[i]->compressed_size(), measurements[i]);
    g.chunk = chunk;
    g.blocks = blocks;
    rows->push_back(g);
  }
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const GpuTrial& t = *trials[i];
    GpuRow g;
    g.row = make_row(input, "gpu", 0, t.compressed_size(), measurements[engines.size() + i]);
    g.chunk = chunk;
    g.mode = gpu_mode_name(kGpuModes[i]);
    g.blocks = t.items();
    g.incompressible = t.incompressible();
    g.buffer_sets = t.buffer_sets();
    if (liblz4_size > 0)
      g.size_vs_liblz4 = static_cast<double>(t.compressed_size()) / static_cast<double>(liblz4_size);
    rows->push_back(g);
  }
  return true;
}

// A CUDA build of the benchmark and a device to run it on.
bool gpu_available() { return gpu_bench_compiled() && backend_info().gpu_count > 0; }

// Checks everything that does not need the inputs; returns 0 or an exit code.
int check_config(const BenchConfig& config) {
  if (config.codec != "lz4") {
    std::fprintf(stderr, "tandem bench: unknown codec '%s' (known: lz4, rans, deflate)\n", config.codec.c_str());
    return 2;
  }
  Backend requested{};
  if (!parse_backend(config.backend, &requested)) {
    std::fprintf(stderr, "tandem bench: unknown backend '%s' (cpu, gpu or auto)\n", config.backend.c_str());
    return 2;
  }
  if (requested == Backend::gpu && !gpu_available()) {
    Backend resolved{};
    const Status status = resolve_backend(Codec::lz4, Backend::gpu, &resolved);
    std::fprintf(stderr, "tandem bench: %s\n",
                 status ? "this build of the benchmark has no GPU engines" : status.to_string().c_str());
    return 1;
  }
  if (!lz4_valid_block_size(config.chunk)) {
    std::fprintf(stderr, "tandem bench: chunk size %zu: must be 64 KiB, 256 KiB, 1 MiB or 4 MiB\n", config.chunk);
    return 2;
  }
  if (config.gpu_chunks.empty() ||
      std::any_of(config.gpu_chunks.begin(), config.gpu_chunks.end(),
                  [](std::size_t c) { return c == 0 || c > kMaxGpuChunk; })) {
    std::fprintf(stderr, "tandem bench: GPU chunk sizes must be 1 byte to 4 MiB, at least one\n");
    return 2;
  }
  if (config.threads < 0) {
    std::fprintf(stderr, "tandem bench: threads must be 0 (all) or more\n");
    return 2;
  }
  if (config.min_runs < 1 || !(config.min_seconds >= 0) || config.gpu_min_runs < 1 ||
      !(config.gpu_min_seconds >= 0)) {
    std::fprintf(stderr, "tandem bench: min_runs must be at least 1 and min_seconds at least 0\n");
    return 2;
  }
  if (config.paths.empty()) {
    std::fprintf(stderr, "tandem bench: no input files\n");
    return 2;
  }
  return 0;
}

}  // namespace

bool read_concatenated(const std::vector<std::string>& paths, std::vector<std::uint8_t>* data,
                       std::vector<std::string>* names) {
  std::vector<std::string> files;
  if (!expand_paths(paths, &files)) return false;
  data->clear();
  names->clear();
  std::vector<std::uint8_t> one;
  for (const std::string& f : files) {
    if (!read_file(f, &one)) return false;
    data->insert(data->end(), one.begin(), one.end());
    names->push_back(fs::path(f).filename().string());
  }
  return true;
}

namespace {

int run_checked(const BenchConfig& config) {
  if (const int code = check_config(config)) return code;
  Backend requested{};
  parse_backend(config.backend, &requested);
  const bool cpu_rows = requested != Backend::gpu;
  const bool gpu_rows = requested == Backend::gpu || (requested == Backend::automatic && gpu_available());

  std::vector<std::string> files;
  if (!expand_paths(config.paths, &files)) return 2;
  std::vector<Input> inputs;
  if (!load_inputs(files, &inputs)) return 1;

  const int n = config.threads > 0 ? config.threads : hardware_threads();
  std::vector<int> thread_counts = {1};
  if (n > 1) thread_counts.push_back(n);

  std::vector<std::string> names;
  Results results;
  std::size_t largest = 0;
  for (Input& in : inputs) {
    in.xxh3 = XXH3_64bits(in.data.data(), in.data.size());
    names.push_back(in.name);
    results.inputs.push_back({in.name, in.data.size(), in.xxh3, in.files});
    largest = std::max(largest, in.data.size());
  }
  std::vector<std::uint8_t> output(largest, 0);  // shared by every CPU decompression; pages touched once

  RunInfo info;
  info.threads = n;
  info.backend = cpu_rows && gpu_rows ? "cpu+gpu" : gpu_rows ? "gpu" : "cpu";
  info.date = utc_now_iso8601();
  if (gpu_rows) info.gpu_name = backend_info().gpu_name;
  if (gpu_rows && config.level != 0 && !config.quiet)
    std::fprintf(stderr, "bench: the GPU table compares with liblz4's default level; --level applies to the CPU table\n");

  if (cpu_rows) {
    const Table table(stdout, names);
    table.header();
    for (const Input& in : inputs) {
      const std::span<std::uint8_t> out(output.data(), in.data.size());
      const std::size_t first = results.rows.size();
      if (!measure_input(config, in, thread_counts, out, &results.rows)) return 1;
      for (std::size_t i = first; i < results.rows.size(); ++i) table.row(results.rows[i]);
      results.comparisons.push_back(compare(results.rows, in.name, n, in.data.size(), config.chunk));
      table.comparison(results.comparisons.back());
    }
  }

  // The GPU table comes last, input by input with the aggregate at the end,
  // so that the tail of the output holds its figures for every chunk size.
  if (gpu_rows) {
    if (cpu_rows) std::printf("\n");
    std::printf("GPU: %s; device = input in GPU memory, kernel only; host = pinned host memory, transfers "
                "included; liblz4 raw blocks on the same chunks\n",
                info.gpu_name.c_str());
    const GpuTable table(stdout, names);
    table.header();
    for (const Input& in : inputs) {
      const std::span<std::uint8_t> out(output.data(), in.data.size());
      for (const std::size_t chunk : config.gpu_chunks) {
        const std::size_t first = results.gpu_rows.size();
        if (!measure_gpu_chunk(config, in, chunk, thread_counts, out, &results.gpu_rows)) return 1;
        for (std::size_t i = first; i < results.gpu_rows.size(); ++i) table.row(results.gpu_rows[i]);
        results.gpu_comparisons.push_back(compare_gpu(results.gpu_rows, in.name, chunk, n));
        table.comparison(results.gpu_comparisons.back());
      }
    }
  }

  if (!config.json_path.empty()) {
    if (!write_json(config.json_path, config, info, results)) return 1;
    if (!config.quiet) std::fprintf(stderr, "bench: wrote %s\n", config.json_path.c_str());
  }
  return 0;
}

}  // namespace

bool parse_chunk_list(std::string_view text, std::vector<std::size_t>* chunks, std::string* error) {
  std::vector<std::size_t> parsed;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    std::size_t i = 0;
    std::uint64_t value = 0;
    bool ok = !item.empty();
    for (; ok && i < item.size() && item[i] >= '0' && item[i] <= '9'; ++i) {
      value = value * 10 + static_cast<std::uint64_t>(item[i] - '0');
      ok = value <= kMaxGpuChunk;  // also keeps the next step from overflowing
    }
    ok = ok && i > 0;
    if (ok && i < item.size()) {
      const char unit = item[i++];
      if (unit == 'K' || unit == 'k') value <<= 10;
      else if (unit == 'M' || unit == 'm') value <<= 20;
      else ok = false;
      if (i < item.size() && item[i] == 'i') ++i;  // KiB, MiB
      if (i < item.size() && (item[i] == 'B' || item[i] == 'b')) ++i;
      ok = ok && i == item.size();
    }
    if (!ok || value == 0 || value > kMaxGpuChunk) {
      *error = "invalid chunk size '" + std::string(item) + "' (a size from 1 to 4M, such as 4K or 65536)";
      return false;
    }
    if (std::find(parsed.begin(), parsed.end(), value) == parsed.end()) parsed.push_back(value);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  *chunks = std::move(parsed);
  return true;
}

// `--codec deflate`: GPU deflate compression, then GPU inflate, each against
// libdeflate in the same run. JSON: FILE for the first, FILE-inflate for the
// second (before FILE's extension).
int run_deflate(const BenchConfig& config) {
  DeflateGpuBenchConfig d;
  d.paths = config.paths;
  d.threads = config.threads;
  d.json_path = config.json_path;
  const int code = run_deflate_gpu_bench(d);
  if (code == 2) return code;
  InflateBenchConfig i;
  i.paths = config.paths;
  i.threads = config.threads;
  if (!config.json_path.empty()) {
    const std::size_t dot = config.json_path.rfind('.');
    const std::size_t slash = config.json_path.rfind('/');
    const bool ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    i.json_path = ext ? config.json_path.substr(0, dot) + "-inflate" + config.json_path.substr(dot)
                      : config.json_path + "-inflate";
  }
  const int inflate_code = run_inflate_bench(i);
  return code != 0 ? code : inflate_code;
}

int run(const BenchConfig& config) {
  try {
    if (config.codec == "rans") return run_rans_bench(config);
    if (config.codec == "lzr") return run_lzr_bench(config);
    if (config.codec == "scan") return run_scan_bench(config);
    if (config.codec == "deflate") return run_deflate(config);
    return config.hybrid ? run_hybrid(config) : run_checked(config);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tandem bench: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem bench: %s\n", e.what());
    return 1;
  }
}

}  // namespace tandem::bench
