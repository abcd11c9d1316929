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
// Memory: the inputs (twice: files and their concatenation), one output
// buffer, and every engine's compressed buffer for the input being measured:
// about ten times the largest input.
#include "bench/bench.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <xxhash.h>

#include "bench/bench_engines.hpp"
#include "bench/bench_report.hpp"
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

// The timed runs of one direction of one measurement.
struct Runs {
  std::vector<double> seconds;
  double total = 0;

  void add(double s) {
    seconds.push_back(s);
    total += s;
  }
  // At least min_runs, adding up to min_seconds (or so many that the clock
  // cannot see them: empty inputs).
  bool enough(const BenchConfig& config) const {
    constexpr std::size_t kMaxRuns = 1'000'000;
    return static_cast<int>(seconds.size()) >= config.min_runs &&
           (total >= config.min_seconds || seconds.size() >= kMaxRuns);
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

// One engine at one thread count on one input.
struct Trial {
  EngineKind kind;
  int threads;
  std::unique_ptr<Engine> engine;
  Runs compress;
  Runs decompress;
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

std::string describe(const Input& input, const Trial& t) {
  return input.name + ": " + engine_name(t.kind) + ", " + std::to_string(t.threads) +
         (t.threads == 1 ? " thread" : " threads");
}

// Measures every engine at every thread count on one input and appends their
// rows; false after printing why. The engines take turns: each round gives
// every measurement that still needs runs one compression and one
// decompression, so that a slow spell of a shared machine falls on all of
// them alike instead of on whichever was being measured at the time.
bool measure_input(const BenchConfig& config, const Input& input, const std::vector<int>& thread_counts,
                   std::span<std::uint8_t> output, std::vector<Row>* rows) {
  const std::span<const std::uint8_t> original(input.data);
  std::vector<Trial> trials;
  for (const EngineKind kind : kAllEngines) {
    for (const int threads : thread_counts) {
      if (threads == 1 || engine_multithreaded(kind)) trials.push_back({kind, threads, nullptr, {}, {}});
    }
  }
  const auto fail = [&](const Trial& t, const std::string& what) {
    std::fprintf(stderr, "tandem bench: %s: %s\n", describe(input, t).c_str(), what.c_str());
    return false;
  };
  const auto compress_once = [&](Trial& t, Runs* runs) {
    const auto start = Clock::now();
    const bool ok = t.engine->compress();
    const auto stop = Clock::now();
    if (!ok) return fail(t, t.engine->error());
    if (runs) runs->add(elapsed(start, stop));
    return true;
  };
  const auto decompress_once = [&](Trial& t, Runs* runs) {
    scramble(output, original);
    const auto start = Clock::now();
    const bool ok = t.engine->decompress(output);
    const auto stop = Clock::now();
    if (!ok) return fail(t, t.engine->error());
    if (XXH3_64bits(output.data(), output.size()) != input.xxh3) {
      return fail(t, "decompressed data differ from the original (XXH3-64 mismatch, run " +
                         std::to_string(runs ? runs->seconds.size() + 1 : 0) + ")");
    }
    if (runs) runs->add(elapsed(start, stop));
    return true;
  };

  // Every engine is made (buffers allocated and touched) and warmed up with
  // one untimed, verified round trip before anything is timed.
  for (Trial& t : trials) {
    if (!config.quiet) std::fprintf(stderr, "bench: %s: warm-up\n", describe(input, t).c_str());
    t.engine = make_engine(t.kind, original, {config.level, config.chunk, t.threads});
    if (!compress_once(t, nullptr) || !decompress_once(t, nullptr)) return false;
  }
  if (!config.quiet) {
    std::fprintf(stderr, "bench: %s: timing %zu measurements in turn\n", input.name.c_str(), trials.size());
  }
  for (bool more = true; more;) {
    more = false;
    for (Trial& t : trials) {
      if (!t.compress.enough(config)) {
        if (!compress_once(t, &t.compress)) return false;
        more = true;
      }
      if (!t.decompress.enough(config)) {
        if (!decompress_once(t, &t.decompress)) return false;
        more = true;
      }
    }
  }

  for (const Trial& t : trials) {
    Row row;
    row.input = input.name;
    row.engine = engine_name(t.kind);
    row.threads = t.threads;
    row.size = input.data.size();
    row.compressed_size = t.engine->compressed_size();
    row.compress = t.compress.timing();
    row.decompress = t.decompress.timing();
    rows->push_back(row);
  }
  return true;
}

// Checks everything that does not need the inputs; returns 0 or an exit code.
int check_config(const BenchConfig& config) {
  if (config.codec != "lz4") {
    std::fprintf(stderr, "tandem bench: unknown codec '%s' (known: lz4)\n", config.codec.c_str());
    return 2;
  }
  Backend requested{};
  if (!parse_backend(config.backend, &requested)) {
    std::fprintf(stderr, "tandem bench: unknown backend '%s' (cpu, gpu or auto)\n", config.backend.c_str());
    return 2;
  }
  if (requested == Backend::gpu) {
    Backend resolved{};
    const Status status = resolve_backend(Codec::lz4, Backend::gpu, &resolved);
    if (!status) {
      std::fprintf(stderr, "tandem bench: %s\n", status.to_string().c_str());
      return 1;
    }
    std::fprintf(stderr, "tandem bench: the gpu backend has no benchmark engines yet; use --backend cpu\n");
    return 1;
  }
  if (!lz4_valid_block_size(config.chunk)) {
    std::fprintf(stderr, "tandem bench: chunk size %zu: must be 64 KiB, 256 KiB, 1 MiB or 4 MiB\n", config.chunk);
    return 2;
  }
  if (config.threads < 0) {
    std::fprintf(stderr, "tandem bench: threads must be 0 (all) or more\n");
    return 2;
  }
  if (config.min_runs < 1 || !(config.min_seconds >= 0)) {
    std::fprintf(stderr, "tandem bench: min_runs must be at least 1 and min_seconds at least 0\n");
    return 2;
  }
  if (config.paths.empty()) {
    std::fprintf(stderr, "tandem bench: no input files\n");
    return 2;
  }
  return 0;
}

int run_checked(const BenchConfig& config) {
  if (const int code = check_config(config)) return code;
  std::vector<std::string> files;
  if (!expand_paths(config.paths, &files)) return 2;
  std::vector<Input> inputs;
  if (!load_inputs(files, &inputs)) return 1;

  const int n = config.threads > 0 ? config.threads : hardware_threads();
  std::vector<int> thread_counts = {1};
  if (n > 1) thread_counts.push_back(n);

  std::vector<std::string> names;
  std::vector<InputInfo> infos;
  std::size_t largest = 0;
  for (Input& in : inputs) {
    in.xxh3 = XXH3_64bits(in.data.data(), in.data.size());
    names.push_back(in.name);
    infos.push_back({in.name, in.data.size(), in.xxh3, in.files});
    largest = std::max(largest, in.data.size());
  }
  std::vector<std::uint8_t> output(largest, 0);  // shared by every decompression; pages touched once

  RunInfo info;
  info.threads = n;
  info.backend = "cpu";
  info.date = utc_now_iso8601();
  const Table table(stdout, names);
  table.header();
  std::vector<Row> rows;
  std::vector<Comparison> comparisons;
  for (const Input& in : inputs) {
    const std::span<std::uint8_t> out(output.data(), in.data.size());
    const std::size_t first = rows.size();
    if (!measure_input(config, in, thread_counts, out, &rows)) return 1;
    for (std::size_t i = first; i < rows.size(); ++i) table.row(rows[i]);
    comparisons.push_back(compare(rows, in.name, n, in.data.size(), config.chunk));
    table.comparison(comparisons.back());
  }

  if (!config.json_path.empty()) {
    if (!write_json(config.json_path, config, info, infos, rows, comparisons)) return 1;
    if (!config.quiet) std::fprintf(stderr, "bench: wrote %s\n", config.json_path.c_str());
  }
  return 0;
}

}  // namespace

int run(const BenchConfig& config) {
  try {
    return run_checked(config);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tandem bench: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem bench: %s\n", e.what());
    return 1;
  }
}

}  // namespace tandem::bench
