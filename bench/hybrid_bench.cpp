// The hybrid section of `tandem bench`; see hybrid_bench.hpp for what it
// measures and how.
//
// Memory: the input, one frame buffer (lz4_frame_max_compressed_size of the
// input) and one output buffer, pinned where a device is present; plus
// liblz4's compressed buffers for its two rows (about the input's size
// each, ordinary memory). About five times the input in all.
#include "bench/hybrid_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_engines.hpp"
#include "bench/bench_report.hpp"
#include "bench/pages_bench_gpu.hpp"
#include "sched/scheduler.hpp"
#include "sched/timeline_svg.hpp"
#include "tandem/tandem.hpp"

namespace tandem::bench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// 64 KiB blocks: the size the GPU decodes (it takes frames of blocks up to
// 256 KiB) and the one where per-block work is smallest on both sides.
constexpr std::size_t kBlockSize = std::size_t{64} << 10;
// The small-input measurement: one block.
constexpr std::size_t kSmallInput = kBlockSize;

double elapsed(Clock::time_point start, Clock::time_point stop) {
  return std::chrono::duration<double>(stop - start).count();
}

double rate(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0;
}

// Host memory for the measurement. pinned: cudaMallocHost, so the GPU
// copies straight from and to it.
struct HostBuffer {
  std::shared_ptr<std::uint8_t> owner;
  std::span<std::uint8_t> bytes;
  bool pinned = false;
};

// n bytes, every page written once so that no timed call pays first-touch
// faults. Pinned when asked and possible; ordinary memory otherwise (the
// caller reports which).
HostBuffer host_buffer(std::size_t n, bool want_pinned) {
  HostBuffer b;
  if (want_pinned) b.owner = pinned_bytes(n);
  b.pinned = b.owner != nullptr;
  if (!b.owner) b.owner = std::shared_ptr<std::uint8_t>(new std::uint8_t[n > 0 ? n : 1], std::default_delete<std::uint8_t[]>());
  b.bytes = std::span<std::uint8_t>(b.owner.get(), n);
  std::memset(b.bytes.data(), 0, n);
  return b;
}

bool read_whole_file(const std::string& path, std::vector<std::uint8_t>* data) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    std::fprintf(stderr, "tandem bench: not a regular file: %s\n", path.c_str());
    return false;
  }
  std::ifstream file(path, std::ios::binary);
  data->assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  if (file.bad()) {
    std::fprintf(stderr, "tandem bench: cannot read %s\n", path.c_str());
    return false;
  }
  return true;
}

// Gives one byte of every 4 KiB page of `output` a value that differs from
// the original's byte there, so that a decoder that skips a page cannot pass
// on what an earlier round trip left.
void scramble(std::span<std::uint8_t> output, std::span<const std::uint8_t> original) {
  constexpr std::size_t kPage = 4096;
  for (std::size_t i = 0; i < output.size(); i += kPage) output[i] = static_cast<std::uint8_t>(~original[i]);
  if (!output.empty()) output.back() = static_cast<std::uint8_t>(~original.back());
}

// The index of the run whose time is nearest the median: the run that the
// reported figures come from.
std::size_t median_run(const Runs& runs) {
  const double median = runs.timing().median;
  std::size_t best = 0;
  for (std::size_t i = 1; i < runs.seconds.size(); ++i)
    if (std::fabs(runs.seconds[i] - median) < std::fabs(runs.seconds[best] - median)) best = i;
  return best;
}

// One direction of one row: its timed runs and, for the policies, each run's
// scheduler figures.
struct Direction {
  Runs runs;
  std::vector<sched::RunMetrics> metrics;

  const sched::RunMetrics* reported() const { return metrics.empty() ? nullptr : &metrics[median_run(runs)]; }
};

// A row of the table: a policy of lz4_frame_compress / lz4_frame_decompress,
// or liblz4 at a thread count.
struct HybridRow {
  std::string name;
  Backend backend = Backend::cpu;     // policies
  std::unique_ptr<Engine> reference;  // liblz4 rows
  int threads = 0;                    // liblz4 rows
  std::string skipped;                // why the row was not measured; empty when it was
  std::uint64_t compressed_size = 0;
  Direction compress;
  Direction decompress;

  bool ran() const { return skipped.empty(); }
  bool enough(const BenchConfig& config) const {
    return compress.runs.enough(config.min_seconds, config.min_runs) &&
           decompress.runs.enough(config.min_seconds, config.min_runs);
  }
};

struct Buffers {
  std::span<const std::uint8_t> input;
  std::span<std::uint8_t> frame;
  std::span<std::uint8_t> output;
};

Lz4FrameOptions frame_options(const BenchConfig& config, Backend backend, sched::RunMetrics* metrics) {
  Lz4FrameOptions o;
  o.level = 0;
  o.block_size = kBlockSize;
  o.linked_blocks = false;
  o.content_checksum = false;
  o.block_checksum = false;
  o.content_size = true;
  o.threads = config.threads;
  o.backend = backend;
  o.chunk_size = config.hybrid_chunk;
  o.metrics = metrics;
  return o;
}

Lz4DecodeOptions decode_options(const BenchConfig& config, Backend backend, sched::RunMetrics* metrics) {
  Lz4DecodeOptions o;
  o.threads = config.threads;
  o.backend = backend;
  o.chunk_size = config.hybrid_chunk;
  o.metrics = metrics;
  return o;
}

bool fail(const std::string& what, const std::string& why) {
  std::fprintf(stderr, "tandem bench: %s: %s\n", what.c_str(), why.c_str());
  return false;
}

// One compression and one decompression of `row` over `b`; the seconds of
// each codec call alone. With `verify`, the output is scrambled first and
// compared byte for byte with the input afterwards (untimed).
bool round_trip(const BenchConfig& config, HybridRow* row, const Buffers& b, bool verify, double* compress_seconds,
                double* decompress_seconds, sched::RunMetrics* compress_metrics,
                sched::RunMetrics* decompress_metrics) {
  if (verify) scramble(b.output, b.input);
  if (row->reference) {
    auto start = Clock::now();
    if (!row->reference->compress()) return fail(row->name + " compression", row->reference->error());
    auto stop = Clock::now();
    *compress_seconds = elapsed(start, stop);
    row->compressed_size = row->reference->compressed_size();
    start = Clock::now();
    if (!row->reference->decompress(b.output)) return fail(row->name + " decompression", row->reference->error());
    stop = Clock::now();
    *decompress_seconds = elapsed(start, stop);
  } else {
    const Lz4FrameOptions fo = frame_options(config, row->backend, compress_metrics);
    std::size_t frame_size = 0;
    auto start = Clock::now();
    Status s = lz4_frame_compress({b.input.data(), b.input.size()}, {b.frame.data(), b.frame.size()}, &frame_size, fo);
    auto stop = Clock::now();
    if (!s) return fail(row->name + " compression", s.to_string());
    *compress_seconds = elapsed(start, stop);
    row->compressed_size = frame_size;
    const Lz4DecodeOptions d = decode_options(config, row->backend, decompress_metrics);
    std::size_t out_size = 0;
    start = Clock::now();
    s = lz4_frame_decompress({b.frame.data(), frame_size}, {b.output.data(), b.output.size()}, &out_size, d);
    stop = Clock::now();
    if (!s) return fail(row->name + " decompression", s.to_string());
    if (out_size != b.input.size())
      return fail(row->name, "decompressed " + std::to_string(out_size) + " bytes, not " +
                                 std::to_string(b.input.size()));
    *decompress_seconds = elapsed(start, stop);
  }
  if (verify && std::memcmp(b.output.data(), b.input.data(), b.input.size()) != 0)
    return fail(row->name, "decompressed data differ from the input");
  return true;
}

// Every row once untimed and verified, then turns until every row has
// enough runs both ways. One line per timed round trip on stderr.
bool measure(const BenchConfig& config, std::vector<HybridRow*> rows, const Buffers& b, const char* label) {
  for (HybridRow* row : rows) {
    if (!config.quiet) std::fprintf(stderr, "bench: hybrid%s: %s: warm-up and check\n", label, row->name.c_str());
    double c = 0, d = 0;
    if (!round_trip(config, row, b, true, &c, &d, nullptr, nullptr)) return false;
  }
  const bool every_run = b.input.size() > kSmallInput;  // small runs number thousands
  for (bool more = true; more;) {
    more = false;
    for (HybridRow* row : rows) {
      if (row->enough(config)) continue;
      more = true;
      double c = 0, d = 0;
      sched::RunMetrics cm, dm;
      // A small call is timed as a caller makes it, without figures to fill.
      const bool figures = every_run && !row->reference;
      if (!round_trip(config, row, b, false, &c, &d, figures ? &cm : nullptr, figures ? &dm : nullptr)) return false;
      row->compress.runs.add(c);
      row->decompress.runs.add(d);
      if (figures) {
        row->compress.metrics.push_back(std::move(cm));
        row->decompress.metrics.push_back(std::move(dm));
      }
      if (!config.quiet && every_run) {
        std::fprintf(stderr, "bench: hybrid%s: %s run %zu: compress %.4f s (%.2f GB/s), decompress %.4f s (%.2f GB/s)\n",
                     label, row->name.c_str(), row->compress.runs.seconds.size(), c,
                     rate(b.input.size(), c) / 1e9, d, rate(b.input.size(), d) / 1e9);
      }
    }
  }
  if (!config.quiet && !every_run) {
    for (const HybridRow* row : rows) {
      std::fprintf(stderr, "bench: hybrid%s: %s: %zu runs, median compress %.2f us, decompress %.2f us\n", label,
                   row->name.c_str(), row->compress.runs.seconds.size(), row->compress.runs.timing().median * 1e6,
                   row->decompress.runs.timing().median * 1e6);
    }
  }
  return true;
}

// Shares of the bytes the CPU and the GPU workers took, in percent.
double cpu_share(const sched::RunMetrics& m) {
  const double total = static_cast<double>(m.cpu.bytes_in + m.gpu.bytes_in);
  return total > 0 ? 100.0 * static_cast<double>(m.cpu.bytes_in) / total : 0.0;
}
double gpu_share(const sched::RunMetrics& m) {
  const double total = static_cast<double>(m.cpu.bytes_in + m.gpu.bytes_in);
  return total > 0 ? 100.0 * static_cast<double>(m.gpu.bytes_in) / total : 0.0;
}

json kind_json(const sched::KindMetrics& k) {
  return {{"chunks", k.chunks},
          {"bytes_in", k.bytes_in},
          {"bytes_out", k.bytes_out},
          {"busy_seconds", k.busy_seconds},
          {"queue_wait_seconds", k.queue_wait_seconds},
          {"ewma_bytes_per_second", k.ewma_bytes_per_second}};
}

json metrics_json(const sched::RunMetrics& m) {
  json workers = json::array();
  for (const sched::WorkerTimeline& w : m.timeline) {
    workers.push_back({{"kind", sched::worker_kind_name(w.kind)},
                       {"id", w.id},
                       {"spans", w.spans.size()},
                       {"busy_seconds", sched::busy_union_seconds(w.spans)}});
  }
  return {{"cpu", kind_json(m.cpu)},
          {"gpu", kind_json(m.gpu)},
          {"cpu_share_percent", cpu_share(m)},
          {"gpu_share_percent", gpu_share(m)},
          {"chunks", m.chunks},
          {"bytes_in", m.bytes_in},
          {"bytes_out", m.bytes_out},
          {"gpu_batches", m.gpu_batches},
          {"wall_seconds", m.wall_seconds},
          {"queue_wait_seconds", m.queue_wait_seconds},
          {"gpu_idle_seconds", m.gpu_idle_seconds},
          {"gpu_transfer_seconds", m.gpu_transfer_seconds},
          {"gpu_kernel_seconds", m.gpu_kernel_seconds},
          {"gpu_kernel_busy_seconds", m.gpu_kernel_busy_seconds},
          {"read_wait_seconds", m.read_wait_seconds},
          {"writer_wait_seconds", m.writer_wait_seconds},
          {"cpu_workers", m.cpu_workers},
          {"gpu_workers", m.gpu_workers},
          {"warnings", m.warnings},
          {"workers", workers}};
}

json direction_json(const Direction& d, std::uint64_t bytes) {
  const Timing t = d.runs.timing();
  json j = {{"seconds_median", t.median},
            {"seconds_min", t.min},
            {"seconds_max", t.max},
            {"runs", t.runs},
            {"bytes_per_second", rate(bytes, t.median)},
            {"best_bytes_per_second", rate(bytes, t.min)}};
  // Every run's seconds, unless they number thousands (the small input).
  if (d.runs.seconds.size() <= 1000) j["seconds"] = d.runs.seconds;
  if (const sched::RunMetrics* m = d.reported()) {
    j["reported_run"] = median_run(d.runs);
    j["metrics"] = metrics_json(*m);
  }
  return j;
}

json row_json(const HybridRow& row, std::uint64_t bytes) {
  json j = {{"name", row.name}, {"ran", row.ran()}};
  if (row.reference) j["threads"] = row.threads;
  if (!row.ran()) {
    j["reason"] = row.skipped;
    return j;
  }
  j["bytes"] = bytes;
  j["compressed_size"] = row.compressed_size;
  j["ratio"] = row.compressed_size ? static_cast<double>(bytes) / static_cast<double>(row.compressed_size) : 0.0;
  j["compress"] = direction_json(row.compress, bytes);
  j["decompress"] = direction_json(row.decompress, bytes);
  return j;
}

// "t.svg" -> "t-decompress.svg"; "t" -> "t-decompress".
std::string decompress_timeline_path(const std::string& path) {
  const fs::path p(path);
  return (p.parent_path() / (p.stem().string() + "-decompress" + p.extension().string())).string();
}

double median_rate(const Direction& d, std::uint64_t bytes) { return rate(bytes, d.runs.timing().median); }

void print_table(const std::vector<const HybridRow*>& rows, std::uint64_t bytes) {
  std::printf("GB/s: 1e9 uncompressed bytes per second, median of the runs; c compress, d decompress; shares: "
              "of the chunks' input bytes, by kind of worker; ms: summed over the workers, from the median run; "
              "kernels on: share of the wall time with kernels queued or running on the device\n");
  std::printf("%-18s %9s %9s %6s  %13s %13s %15s %15s %13s %15s %15s %9s\n", "", "compress", "decomp", "",
              "CPU share %", "GPU share %", "transfer ms", "kernel ms", "kernels on %", "GPU idle ms",
              "queue wait ms", "warnings");
  std::printf("%-18s %9s %9s %6s  %6s %6s %6s %6s %7s %7s %7s %7s %6s %6s %7s %7s %7s %7s %4s %4s\n", "engine",
              "GB/s", "GB/s", "ratio", "c", "d", "c", "d", "c", "d", "c", "d", "c", "d", "c", "d", "c", "d", "c", "d");
  for (const HybridRow* row : rows) {
    if (!row->ran()) {
      std::printf("%-18s (not run: %s)\n", row->name.c_str(), row->skipped.c_str());
      continue;
    }
    const double ratio =
        row->compressed_size ? static_cast<double>(bytes) / static_cast<double>(row->compressed_size) : 0.0;
    std::printf("%-18s %9.3f %9.3f %6.3f  ", row->name.c_str(), median_rate(row->compress, bytes) / 1e9,
                median_rate(row->decompress, bytes) / 1e9, ratio);
    const sched::RunMetrics* c = row->compress.reported();
    const sched::RunMetrics* d = row->decompress.reported();
    if (!c || !d) {
      std::printf("%6s %6s %6s %6s %7s %7s %7s %7s %6s %6s %7s %7s %7s %7s %4s %4s\n", "-", "-", "-", "-", "-", "-",
                  "-", "-", "-", "-", "-", "-", "-", "-", "-", "-");
      continue;
    }
    auto kernels_on = [](const sched::RunMetrics& m) {
      return m.wall_seconds > 0 ? 100.0 * m.gpu_kernel_busy_seconds / m.wall_seconds : 0.0;
    };
    std::printf("%6.1f %6.1f %6.1f %6.1f %7.1f %7.1f %7.1f %7.1f %6.1f %6.1f %7.1f %7.1f %7.1f %7.1f %4zu %4zu\n",
                cpu_share(*c), cpu_share(*d), gpu_share(*c), gpu_share(*d), c->gpu_transfer_seconds * 1e3,
                d->gpu_transfer_seconds * 1e3, c->gpu_kernel_seconds * 1e3, d->gpu_kernel_seconds * 1e3,
                kernels_on(*c), kernels_on(*d), c->gpu_idle_seconds * 1e3, d->gpu_idle_seconds * 1e3, c->queue_wait_seconds * 1e3,
                d->queue_wait_seconds * 1e3, c->warnings.size(), d->warnings.size());
  }
}

}  // namespace

int run_hybrid(const BenchConfig& config) {
  if (config.paths.empty()) {
    std::fprintf(stderr, "tandem bench: no input files\n");
    return 2;
  }
  if (config.hybrid_chunk % kBlockSize != 0) {
    std::fprintf(stderr, "tandem bench: --chunk must be a multiple of 64K with --hybrid\n");
    return 2;
  }

  // The input: FILES in order, repeated whole.
  std::vector<std::uint8_t> files_data;
  for (const std::string& path : config.paths) {
    std::vector<std::uint8_t> data;
    if (!read_whole_file(path, &data)) return 1;
    files_data.insert(files_data.end(), data.begin(), data.end());
  }
  if (files_data.empty()) {
    std::fprintf(stderr, "tandem bench: the input files are empty\n");
    return 2;
  }
  const std::uint64_t want = std::max<std::uint64_t>(config.hybrid_size, 1);
  const std::uint64_t repetitions = (want + files_data.size() - 1) / files_data.size();
  const std::size_t size = static_cast<std::size_t>(repetitions * files_data.size());
  std::string files_text;
  for (const std::string& path : config.paths) files_text += (files_text.empty() ? "" : " ") + path;

  const BackendInfo info = backend_info();
  const bool gpu = info.gpu_count > 0;
  const int threads = config.threads > 0 ? config.threads : hardware_threads();
  const std::size_t chunk = config.hybrid_chunk ? config.hybrid_chunk : sched::kDefaultChunkSize;

  HostBuffer input = host_buffer(size, gpu);
  for (std::uint64_t r = 0; r < repetitions; ++r)
    std::memcpy(input.bytes.data() + r * files_data.size(), files_data.data(), files_data.size());
  const std::size_t file_bytes = files_data.size();
  files_data = {};
  HostBuffer frame = host_buffer(lz4_frame_max_compressed_size(size, frame_options(config, Backend::cpu, nullptr)), gpu);
  HostBuffer output = host_buffer(size, gpu);
  const bool pinned = input.pinned && frame.pinned && output.pinned;
  if (gpu && !pinned)
    std::fprintf(stderr, "tandem bench: pinned allocation failed; the buffers are ordinary host memory\n");

  std::printf("input: %zu bytes = %llu x %s\n", size, static_cast<unsigned long long>(repetitions), files_text.c_str());
  std::printf("frames: 64 KiB independent blocks, content size on, no checksums; host chunks of %zu KiB; "
              "buffers in %s host memory; %d host threads; GPU: %s\n",
              chunk >> 10, pinned ? "pinned" : "ordinary", threads, gpu ? info.gpu_name.c_str() : "none");
  std::fflush(stdout);

  std::vector<HybridRow> rows(5);
  const char* const policy_names[] = {"cpu", "gpu", "auto"};
  const Backend backends[] = {Backend::cpu, Backend::gpu, Backend::automatic};
  for (int i = 0; i < 3; ++i) {
    rows[i].name = policy_names[i];
    rows[i].backend = backends[i];
    if (i > 0 && !gpu)
      rows[i].skipped = info.cuda_compiled ? "no CUDA device" : "this build of tandem has no CUDA backend";
  }
  const std::span<const std::uint8_t> in(input.bytes);
  for (int i = 0; i < 2; ++i) {
    HybridRow& r = rows[3 + i];
    r.threads = i == 0 ? 1 : threads;
    r.name = "liblz4 " + std::to_string(r.threads) + (r.threads == 1 ? " thread" : " threads");
    if (i == 1 && threads == 1) r.skipped = "one thread";
    else r.reference = make_engine(EngineKind::liblz4, in, {0, kBlockSize, r.threads});
  }
  if (!gpu) {
    std::printf("gpu, auto: not run (%s)\n", rows[1].skipped.c_str());
    std::fflush(stdout);
  }

  std::vector<HybridRow*> measured;
  for (HybridRow& r : rows)
    if (r.ran()) measured.push_back(&r);
  if (!measure(config, measured, {in, frame.bytes, output.bytes}, "")) return 1;

  // The small input: one 64 KiB block (less when the data are smaller),
  // through the ends of the same buffers.
  const std::size_t small_size = std::min(kSmallInput, size);
  std::vector<HybridRow> small(2);
  small[0].name = "cpu";
  small[0].backend = Backend::cpu;
  small[1].name = "auto";
  small[1].backend = Backend::automatic;
  const Buffers small_buffers = {in.first(small_size), frame.bytes, output.bytes.first(small_size)};
  if (!measure(config, {&small[0], &small[1]}, small_buffers, " 64K")) return 1;

  std::printf("\n");
  std::vector<const HybridRow*> table;
  for (const HybridRow& r : rows) table.push_back(&r);
  print_table(table, size);

  const HybridRow& cpu = rows[0];
  const HybridRow& gpu_row = rows[1];
  const HybridRow& automatic = rows[2];
  json comparisons = json::object();
  if (automatic.ran() && gpu_row.ran()) {
    const auto line = [&](const char* what, auto combine, const char* key) {
      const double c = median_rate(automatic.compress, size) /
                       combine(median_rate(cpu.compress, size), median_rate(gpu_row.compress, size));
      const double d = median_rate(automatic.decompress, size) /
                       combine(median_rate(cpu.decompress, size), median_rate(gpu_row.decompress, size));
      std::printf("%-22s compress %.2f, decompress %.2f\n", what, c, d);
      comparisons[std::string(key) + "_compress"] = c;
      comparisons[std::string(key) + "_decompress"] = d;
    };
    line("auto / max(cpu, gpu):", [](double a, double b) { return std::max(a, b); }, "auto_vs_max");
    line("auto / (cpu + gpu):", [](double a, double b) { return a + b; }, "auto_vs_sum");
  }
  const auto us = [](const Direction& d) { return d.runs.timing().median * 1e6; };
  std::printf("64 KiB input: compress auto %.1f us vs cpu %.1f us (%.2f vs %.2f GB/s); "
              "decompress auto %.1f us vs cpu %.1f us (%.2f vs %.2f GB/s)\n",
              us(small[1].compress), us(small[0].compress), median_rate(small[1].compress, small_size) / 1e9,
              median_rate(small[0].compress, small_size) / 1e9, us(small[1].decompress), us(small[0].decompress),
              median_rate(small[1].decompress, small_size) / 1e9, median_rate(small[0].decompress, small_size) / 1e9);

  // Warnings of every run, each once, with how many runs gave it.
  std::map<std::string, int> warnings;
  for (const HybridRow& r : rows)
    for (const Direction* d : {&r.compress, &r.decompress})
      for (const sched::RunMetrics& m : d->metrics)
        for (const std::string& w : m.warnings) ++warnings[r.name + (d == &r.compress ? " compress: " : " decompress: ") + w];
  for (const auto& [text, count] : warnings) std::printf("warning: %s (%d runs)\n", text.c_str(), count);
  std::fflush(stdout);

  // The timelines: the auto runs, or the cpu runs where auto did not run.
  json timelines = json::object();
  if (!config.timeline_path.empty()) {
    const HybridRow& shown = automatic.ran() ? automatic : cpu;
    const std::string note = automatic.ran() ? "" : " (auto not run: " + automatic.skipped + ")";
    for (const bool compress : {true, false}) {
      const Direction& d = compress ? shown.compress : shown.decompress;
      const std::string path = compress ? config.timeline_path : decompress_timeline_path(config.timeline_path);
      char title[256];
      std::snprintf(title, sizeof title, "tandem bench --hybrid: %s %s of %zu bytes, %.2f GB/s (median run)%s",
                    shown.name.c_str(), compress ? "compression" : "decompression", size,
                    median_rate(d, size) / 1e9, note.c_str());
      const Status s = sched::write_timeline_svg(path, *d.reported(), {title, 1200});
      if (!s) {
        std::fprintf(stderr, "tandem bench: cannot write %s: %s\n", path.c_str(), s.to_string().c_str());
        return 1;
      }
      timelines[compress ? "compress" : "decompress"] = path;
      if (!config.quiet) std::fprintf(stderr, "bench: wrote %s\n", path.c_str());
    }
  }

  if (!config.json_path.empty()) {
    json doc;
    doc["tool"] = "tandem bench --hybrid";
    doc["tandem_version"] = version();
    doc["date"] = utc_now_iso8601();
    doc["machine"] = {{"hardware_threads", hardware_threads()},
                      {"threads", threads},
                      {"cuda_compiled", info.cuda_compiled},
                      {"gpu_count", info.gpu_count},
                      {"gpu_name", info.gpu_name}};
    doc["input"] = {{"files", config.paths},
                    {"file_bytes", file_bytes},
                    {"repetitions", repetitions},
                    {"bytes", size},
                    {"min_bytes", config.hybrid_size},
                    {"memory", pinned ? "pinned" : "ordinary"}};
    doc["frame"] = {{"block_size", kBlockSize},
                    {"independent_blocks", true},
                    {"content_checksum", false},
                    {"block_checksum", false},
                    {"content_size", true},
                    {"chunk_size", chunk},
                    {"max_compressed_size", frame.bytes.size()}};
    doc["min_seconds"] = config.min_seconds;
    doc["min_runs"] = config.min_runs;
    doc["reported"] = "median";
    json policies = json::array();
    json references = json::array();
    for (const HybridRow& r : rows) (r.reference || r.threads ? references : policies).push_back(row_json(r, size));
    doc["policies"] = policies;
    doc["references"] = references;
    doc["comparisons"] = comparisons;
    json small_rows = json::array();
    for (const HybridRow& r : small) {
      json j = row_json(r, small_size);
      for (const char* dir : {"compress", "decompress"})
        j[dir]["microseconds_per_call"] = j[dir]["seconds_median"].get<double>() * 1e6;
      small_rows.push_back(j);
    }
    doc["small_input"] = {{"bytes", small_size}, {"policies", small_rows}};
    doc["warnings"] = json::array();
    for (const auto& [text, count] : warnings) doc["warnings"].push_back({{"text", text}, {"runs", count}});
    doc["timeline"] = timelines;
    std::ofstream file(config.json_path, std::ios::binary | std::ios::trunc);
    file << doc.dump(2) << '\n';
    file.close();
    if (!file) {
      std::fprintf(stderr, "tandem bench: cannot write %s\n", config.json_path.c_str());
      return 1;
    }
    if (!config.quiet) std::fprintf(stderr, "bench: wrote %s\n", config.json_path.c_str());
  }
  return 0;
}

}  // namespace tandem::bench
