// Table and JSON output of `tandem bench`; see bench_report.hpp.
//
// The table shows MB/s with MB = 1e6 bytes; the JSON keeps raw bytes and
// bytes per second so that nothing is lost to rounding or units.
#include "bench/bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ctime>
#include <fstream>
#include <limits>

#include <lz4.h>
#include <nlohmann/json.hpp>

#include "tandem/tandem.hpp"

namespace tandem::bench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double rate(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0;
}

double quotient(double a, double b) { return b > 0 && !std::isnan(a) ? a / b : kNaN; }

const Row* find_row(const std::vector<Row>& rows, const std::string& input, const char* engine, int threads) {
  for (const Row& r : rows)
    if (r.input == input && r.engine == engine && r.threads == threads) return &r;
  return nullptr;
}

// JSON has no NaN: a missing ratio is null.
nlohmann::json number_or_null(double x) { return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x); }

nlohmann::json timing_json(const Timing& t) {
  return {{"median", t.median}, {"min", t.min}, {"max", t.max}, {"runs", t.runs}};
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    // x86 says "model name", some ARM kernels "Hardware" or "Model".
    if (line.rfind("model name", 0) == 0 || line.rfind("Hardware", 0) == 0 || line.rfind("Model", 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const auto begin = line.find_first_not_of(" \t", colon + 1);
      if (begin != std::string::npos) return line.substr(begin);
    }
  }
  return "unknown";
}

}  // namespace

double Row::ratio() const {
  return compressed_size > 0 ? static_cast<double>(size) / static_cast<double>(compressed_size) : 0.0;
}
double Row::compress_rate() const { return rate(size, compress.median); }
double Row::decompress_rate() const { return rate(size, decompress.median); }

// Makespan, in bytes, of handing `size` bytes in `chunk`-byte blocks, in
// order, to the first free of `threads` equally fast threads.
std::uint64_t makespan(std::uint64_t size, std::size_t chunk, int threads) {
  std::vector<std::uint64_t> busy(static_cast<std::size_t>(std::max(1, threads)), 0);
  for (std::uint64_t at = 0; at < size; at += chunk) {
    *std::min_element(busy.begin(), busy.end()) += std::min<std::uint64_t>(chunk, size - at);
  }
  return *std::max_element(busy.begin(), busy.end());
}

Comparison compare(const std::vector<Row>& rows, const std::string& input, int threads, std::uint64_t size,
                   std::size_t chunk) {
  Comparison c;
  c.input = input;
  c.threads = threads;
  c.blocks = (size + chunk - 1) / chunk;
  const std::uint64_t span = makespan(size, chunk, threads);
  c.even_scaling = span > 0 ? static_cast<double>(size) / static_cast<double>(span) : kNaN;
  const Row* tandem1 = find_row(rows, input, "tandem", 1);
  const Row* tandem_n = threads > 1 ? find_row(rows, input, "tandem", threads) : nullptr;
  const Row* tandem_xxh1 = find_row(rows, input, "tandem+xxh", 1);
  const Row* lz4_1 = find_row(rows, input, "liblz4", 1);
  const Row* lz4_n = threads > 1 ? find_row(rows, input, "liblz4", threads) : nullptr;
  c.tandem_compress_scaling =
      tandem1 && tandem_n ? quotient(tandem_n->compress_rate(), tandem1->compress_rate()) : kNaN;
  c.liblz4_compress_scaling = lz4_1 && lz4_n ? quotient(lz4_n->compress_rate(), lz4_1->compress_rate()) : kNaN;
  c.tandem_decode_vs_liblz4 =
      tandem1 && lz4_1 ? quotient(tandem1->decompress_rate(), lz4_1->decompress_rate()) : kNaN;
  c.tandem_xxh_decode_vs_liblz4 =
      tandem_xxh1 && lz4_1 ? quotient(tandem_xxh1->decompress_rate(), lz4_1->decompress_rate()) : kNaN;
  return c;
}

// ---------------------------------------------------------------- table ----

Table::Table(std::FILE* out, const std::vector<std::string>& input_names) : out_(out), input_width_(5) {
  for (const auto& name : input_names) input_width_ = std::max(input_width_, static_cast<int>(name.size()));
}

void Table::header() const {
  std::fprintf(out_, "%-*s  %-12s  %7s  %12s  %12s  %7s  %13s  %15s\n", input_width_, "input", "engine", "threads",
               "size", "compressed", "ratio", "compress MB/s", "decompress MB/s");
  std::fflush(out_);
}

void Table::row(const Row& r) const {
  std::fprintf(out_, "%-*s  %-12s  %7d  %12llu  %12llu  %7.3f  %13.1f  %15.1f\n", input_width_, r.input.c_str(),
               r.engine.c_str(), r.threads, static_cast<unsigned long long>(r.size),
               static_cast<unsigned long long>(r.compressed_size), r.ratio(), r.compress_rate() / 1e6,
               r.decompress_rate() / 1e6);
  std::fflush(out_);
}

void Table::comparison(const Comparison& c) const {
  const auto x = [](double v) {
    char text[32] = "n/a";
    if (!std::isnan(v)) std::snprintf(text, sizeof text, "%.2fx", v);
    return std::string(text);
  };
  std::fprintf(out_,
               "%-*s  -> compress %d threads / 1 thread: tandem %s, liblz4 %s (%llu block%s: %s if every byte cost "
               "the same)\n",
               input_width_, c.input.c_str(), c.threads, x(c.tandem_compress_scaling).c_str(),
               x(c.liblz4_compress_scaling).c_str(), static_cast<unsigned long long>(c.blocks),
               c.blocks == 1 ? "" : "s", x(c.even_scaling).c_str());
  std::fprintf(out_, "%-*s  -> 1-thread decode / liblz4 1-thread raw decode: tandem %s, tandem+xxh %s\n",
               input_width_, c.input.c_str(), x(c.tandem_decode_vs_liblz4).c_str(),
               x(c.tandem_xxh_decode_vs_liblz4).c_str());
  std::fflush(out_);
}

// ----------------------------------------------------------------- JSON ----

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

bool write_json(const std::string& path, const BenchConfig& config, const RunInfo& run,
                const std::vector<InputInfo>& inputs, const std::vector<Row>& rows,
                const std::vector<Comparison>& comparisons) {
  using nlohmann::json;
  json doc;
  doc["tool"] = "tandem bench";
  doc["tandem_version"] = tandem::version();
  doc["date"] = run.date;
  doc["machine"] = {
      {"hardware_threads", tandem::hardware_threads()},
      {"cpu_model", cpu_model()},
      {"liblz4_version", LZ4_versionString()},
  };
  doc["config"] = {
      {"codec", config.codec},
      {"backend_requested", config.backend},
      {"backend", run.backend},
      {"chunk", config.chunk},
      {"threads", run.threads},
      {"threads_requested", config.threads},
      {"level", config.level},
      {"min_seconds", config.min_seconds},
      {"min_runs", config.min_runs},
  };
  doc["units"] = {
      {"size", "bytes"},
      {"rate", "uncompressed bytes per second, median run"},
      {"seconds", "one timed run: median, fastest, slowest, and the number of runs"},
  };
  json& jinputs = doc["inputs"] = json::array();
  for (const InputInfo& in : inputs) {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(in.xxh3));
    // File names only: a result file must not depend on where the corpus lay.
    std::vector<std::string> files;
    for (const std::string& f : in.files) files.push_back(std::filesystem::path(f).filename().string());
    jinputs.push_back({{"name", in.name}, {"size", in.size}, {"xxh3_64", hash}, {"files", files}});
  }
  json& jrows = doc["rows"] = json::array();
  for (const Row& r : rows) {
    jrows.push_back({
        {"input", r.input},
        {"engine", r.engine},
        {"threads", r.threads},
        {"size", r.size},
        {"compressed_size", r.compressed_size},
        {"ratio", r.ratio()},
        {"compress_bytes_per_second", r.compress_rate()},
        {"decompress_bytes_per_second", r.decompress_rate()},
        {"compress_seconds", timing_json(r.compress)},
        {"decompress_seconds", timing_json(r.decompress)},
    });
  }
  json& jcomparisons = doc["comparisons"] = json::array();
  for (const Comparison& c : comparisons) {
    jcomparisons.push_back({
        {"input", c.input},
        {"threads", c.threads},
        {"blocks", c.blocks},
        {"even_cost_scaling", number_or_null(c.even_scaling)},
        {"tandem_compress_scaling", number_or_null(c.tandem_compress_scaling)},
        {"liblz4_compress_scaling", number_or_null(c.liblz4_compress_scaling)},
        {"tandem_decode_vs_liblz4_raw", number_or_null(c.tandem_decode_vs_liblz4)},
        {"tandem_xxh_decode_vs_liblz4_raw", number_or_null(c.tandem_xxh_decode_vs_liblz4)},
    });
  }

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << doc.dump(2) << '\n';
  file.close();
  if (!file) {
    std::fprintf(stderr, "tandem bench: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace tandem::bench
