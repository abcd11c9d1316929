// Table and JSON output of `tandem bench`; see bench_report.hpp.
//
// The CPU table shows MB/s with MB = 1e6 bytes, the GPU table GB/s with
// GB = 1e9 bytes; the JSON keeps raw bytes and bytes per second so that
// nothing is lost to rounding or units.
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

const GpuRow* find_gpu_row(const std::vector<GpuRow>& rows, const std::string& input, std::size_t chunk,
                           const char* engine, const char* mode, int threads) {
  for (const GpuRow& r : rows)
    if (r.row.input == input && r.chunk == chunk && r.row.engine == engine && r.mode == mode &&
        r.row.threads == threads)
      return &r;
  return nullptr;
}

std::string times(double v) {
  char text[32] = "n/a";
  if (!std::isnan(v)) std::snprintf(text, sizeof text, "%.2fx", v);
  return text;
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
  const auto x = times;
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

// ------------------------------------------------------------ GPU table ----

std::string GpuRow::label() const { return mode.empty() ? row.engine : row.engine + "-" + mode; }

std::string chunk_label(std::size_t chunk) {
  if (chunk % (1u << 20) == 0) return std::to_string(chunk >> 20) + "M";
  if (chunk % (1u << 10) == 0) return std::to_string(chunk >> 10) + "K";
  return std::to_string(chunk);
}

GpuComparison compare_gpu(const std::vector<GpuRow>& rows, const std::string& input, std::size_t chunk,
                          int threads) {
  GpuComparison c;
  c.input = input;
  c.chunk = chunk;
  c.threads = threads;
  const GpuRow* lz4 = find_gpu_row(rows, input, chunk, "liblz4", "", threads);
  const GpuRow* device = find_gpu_row(rows, input, chunk, "gpu", "device", 0);
  const GpuRow* host = find_gpu_row(rows, input, chunk, "gpu", "host", 0);
  const auto speedup = [&](const GpuRow* gpu, bool compress) {
    if (!gpu || !lz4) return kNaN;
    return compress ? quotient(gpu->row.compress_rate(), lz4->row.compress_rate())
                    : quotient(gpu->row.decompress_rate(), lz4->row.decompress_rate());
  };
  c.device_compress = speedup(device, true);
  c.device_decompress = speedup(device, false);
  c.host_compress = speedup(host, true);
  c.host_decompress = speedup(host, false);
  const GpuRow* gpu = device ? device : host;
  c.size_vs_liblz4 = gpu ? gpu->size_vs_liblz4 : kNaN;
  c.blocks = gpu ? gpu->blocks : 0;
  c.incompressible = gpu ? gpu->incompressible : 0;
  return c;
}

GpuTable::GpuTable(std::FILE* out, const std::vector<std::string>& input_names) : out_(out), input_width_(5) {
  for (const auto& name : input_names) input_width_ = std::max(input_width_, static_cast<int>(name.size()));
}

void GpuTable::header() const {
  std::fprintf(out_, "%-*s  %6s  %-10s  %7s  %12s  %12s  %7s  %9s  %13s  %15s\n", input_width_, "input", "chunk",
               "engine", "threads", "size", "compressed", "ratio", "vs liblz4", "compress GB/s", "decompress GB/s");
  std::fflush(out_);
}

void GpuTable::row(const GpuRow& g) const {
  const Row& r = g.row;
  char threads[16] = "-";
  if (r.threads > 0) std::snprintf(threads, sizeof threads, "%d", r.threads);
  char vs[32] = "";
  if (!std::isnan(g.size_vs_liblz4)) std::snprintf(vs, sizeof vs, "%.3fx", g.size_vs_liblz4);
  std::fprintf(out_, "%-*s  %6s  %-10s  %7s  %12llu  %12llu  %7.3f  %9s  %13.2f  %15.2f\n", input_width_,
               r.input.c_str(), chunk_label(g.chunk).c_str(), g.label().c_str(), threads,
               static_cast<unsigned long long>(r.size), static_cast<unsigned long long>(r.compressed_size),
               r.ratio(), vs, r.compress_rate() / 1e9, r.decompress_rate() / 1e9);
  std::fflush(out_);
}

void GpuTable::comparison(const GpuComparison& c) const {
  char size[32] = "n/a";
  if (!std::isnan(c.size_vs_liblz4)) std::snprintf(size, sizeof size, "%.3fx", c.size_vs_liblz4);
  std::fprintf(out_,
               "%-*s  %6s  -> gpu / liblz4 %d thread%s: compress device %s host %s, decompress device %s host %s; "
               "size %s; %llu blocks (%llu incompressible)\n",
               input_width_, c.input.c_str(), chunk_label(c.chunk).c_str(), c.threads, c.threads == 1 ? "" : "s",
               times(c.device_compress).c_str(), times(c.host_compress).c_str(), times(c.device_decompress).c_str(),
               times(c.host_decompress).c_str(), size, static_cast<unsigned long long>(c.blocks),
               static_cast<unsigned long long>(c.incompressible));
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

bool write_json(const std::string& path, const BenchConfig& config, const RunInfo& run, const Results& results) {
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
  if (!run.gpu_name.empty()) doc["machine"]["gpu"] = run.gpu_name;
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
  if (!results.gpu_rows.empty()) {
    doc["config"]["gpu_chunks"] = config.gpu_chunks;
    doc["config"]["gpu_min_seconds"] = config.gpu_min_seconds;
    doc["config"]["gpu_min_runs"] = config.gpu_min_runs;
  }
  doc["units"] = {
      {"size", "bytes"},
      {"rate", "uncompressed bytes per second, median run"},
      {"seconds", "one timed run: median, fastest, slowest, and the number of runs"},
      {"gpu_seconds", "CUDA events on the stream; mode device: the kernel alone, mode host: uploads, kernel, "
                      "packing and downloads"},
  };
  json& jinputs = doc["inputs"] = json::array();
  for (const InputInfo& in : results.inputs) {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(in.xxh3));
    // File names only: a result file must not depend on where the corpus lay.
    std::vector<std::string> files;
    for (const std::string& f : in.files) files.push_back(std::filesystem::path(f).filename().string());
    jinputs.push_back({{"name", in.name}, {"size", in.size}, {"xxh3_64", hash}, {"files", files}});
  }
  json& jrows = doc["rows"] = json::array();
  for (const Row& r : results.rows) {
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
  for (const Comparison& c : results.comparisons) {
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

  json& jgpu_rows = doc["gpu_rows"] = json::array();
  for (const GpuRow& g : results.gpu_rows) {
    const Row& r = g.row;
    const bool gpu = !g.mode.empty();
    jgpu_rows.push_back({
        {"input", r.input},
        {"chunk", g.chunk},
        {"engine", r.engine},
        {"mode", gpu ? json(g.mode) : json(nullptr)},
        {"threads", gpu ? json(nullptr) : json(r.threads)},
        {"size", r.size},
        {"compressed_size", r.compressed_size},
        {"ratio", r.ratio()},
        {"compressed_size_vs_liblz4", number_or_null(g.size_vs_liblz4)},
        {"compress_bytes_per_second", r.compress_rate()},
        {"decompress_bytes_per_second", r.decompress_rate()},
        {"compress_seconds", timing_json(r.compress)},
        {"decompress_seconds", timing_json(r.decompress)},
        {"blocks", g.blocks},
        {"incompressible_blocks", gpu ? json(g.incompressible) : json(nullptr)},
        {"buffer_sets", gpu ? json(g.buffer_sets) : json(nullptr)},
    });
  }
  json& jgpu_comparisons = doc["gpu_comparisons"] = json::array();
  for (const GpuComparison& c : results.gpu_comparisons) {
    jgpu_comparisons.push_back({
        {"input", c.input},
        {"chunk", c.chunk},
        {"liblz4_threads", c.threads},
        {"device_compress_vs_liblz4", number_or_null(c.device_compress)},
        {"device_decompress_vs_liblz4", number_or_null(c.device_decompress)},
        {"host_compress_vs_liblz4", number_or_null(c.host_compress)},
        {"host_decompress_vs_liblz4", number_or_null(c.host_decompress)},
        {"compressed_size_vs_liblz4", number_or_null(c.size_vs_liblz4)},
        {"blocks", c.blocks},
        {"incompressible_blocks", c.incompressible},
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
