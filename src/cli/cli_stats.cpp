// See cli_stats.hpp.
#include "cli/cli_stats.hpp"

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_output.hpp"

namespace tandem::cli {

namespace {

double rate(std::uint64_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }

// Plain bytes: the input when compressing, the output when decompressing.
std::uint64_t plain(const FileRun& r) { return r.decompress ? r.stats.bytes_out : r.stats.bytes_in; }
std::uint64_t packed(const FileRun& r) { return r.decompress ? r.stats.bytes_in : r.stats.bytes_out; }

nlohmann::json kind_json(const sched::KindMetrics& k, bool decompress) {
  return {{"chunks", k.chunks},
          {"bytes_in", k.bytes_in},
          {"bytes_out", k.bytes_out},
          {"plain_bytes", decompress ? k.bytes_out : k.bytes_in},
          {"busy_seconds", k.busy_seconds},
          {"queue_wait_seconds", k.queue_wait_seconds},
          {"ewma_input_bytes_per_second", k.ewma_bytes_per_second}};
}

nlohmann::json run_json(const FileRun& r) {
  const sched::RunMetrics& m = r.metrics;
  nlohmann::json workers = nlohmann::json::array();
  for (const sched::WorkerTimeline& t : m.timeline) {
    double busy = 0;
    for (const sched::Span& s : t.spans) busy += s.end_seconds - s.start_seconds;
    workers.push_back({{"kind", sched::worker_kind_name(t.kind)},
                       {"id", t.id},
                       {"calls", t.spans.size()},
                       {"span_seconds", busy}});
  }
  return {{"file", r.name},
          {"direction", r.decompress ? "decompress" : "compress"},
          {"bytes_in", r.stats.bytes_in},
          {"bytes_out", r.stats.bytes_out},
          {"ratio", packed(r) ? static_cast<double>(plain(r)) / static_cast<double>(packed(r)) : 0.0},
          {"seconds", r.seconds},
          {"plain_bytes_per_second", rate(plain(r), r.seconds)},
          {"scheduler",
           {{"wall_seconds", m.wall_seconds},
            {"chunks", m.chunks},
            {"cpu_workers", m.cpu_workers},
            {"gpu_workers", m.gpu_workers},
            {"gpu_batches", m.gpu_batches},
            {"cpu", kind_json(m.cpu, r.decompress)},
            {"gpu", kind_json(m.gpu, r.decompress)},
            {"gpu_transfer_seconds", m.gpu_transfer_seconds},
            {"gpu_kernel_seconds", m.gpu_kernel_seconds},
            {"gpu_kernel_busy_seconds", m.gpu_kernel_busy_seconds},
            {"gpu_idle_seconds", m.gpu_idle_seconds},
            {"queue_wait_seconds", m.queue_wait_seconds},
            {"read_wait_seconds", m.read_wait_seconds},
            {"writer_wait_seconds", m.writer_wait_seconds},
            {"warnings", m.warnings},
            {"workers", workers}}}};
}

}  // namespace

void print_run_stats(const FileRun& r) {
  const sched::RunMetrics& m = r.metrics;
  const double mb = 1e6;
  std::fprintf(stderr, "tandem: %s: %s %.1f MB in %.3f s (%.0f MB/s), ratio %.3f; %d CPU workers, %d GPU workers\n",
               r.name.c_str(), r.decompress ? "decompressed" : "compressed", static_cast<double>(plain(r)) / mb,
               r.seconds, rate(plain(r), r.seconds) / mb,
               packed(r) ? static_cast<double>(plain(r)) / static_cast<double>(packed(r)) : 0.0, m.cpu_workers,
               m.gpu_workers);
  const std::uint64_t total = m.cpu.bytes_in + m.gpu.bytes_in;
  auto kind = [&](const char* label, const sched::KindMetrics& k) {
    const std::uint64_t bytes = r.decompress ? k.bytes_out : k.bytes_in;
    std::fprintf(stderr,
                 "  %s: %llu chunks, %.1f MB (%.0f%% of the input), busy %.1f ms, %.0f MB/s per worker, "
                 "queue wait %.1f ms\n",
                 label, static_cast<unsigned long long>(k.chunks), static_cast<double>(bytes) / mb,
                 total ? 100.0 * static_cast<double>(k.bytes_in) / static_cast<double>(total) : 0.0,
                 k.busy_seconds * 1e3, rate(bytes, k.busy_seconds) / mb, k.queue_wait_seconds * 1e3);
  };
  kind("cpu", m.cpu);
  if (m.gpu_workers > 0) {
    kind("gpu", m.gpu);
    std::fprintf(stderr, "  gpu: %llu batches, transfers %.1f ms, kernels %.1f ms, idle %.1f ms\n",
                 static_cast<unsigned long long>(m.gpu_batches), m.gpu_transfer_seconds * 1e3,
                 m.gpu_kernel_seconds * 1e3, m.gpu_idle_seconds * 1e3);
    if (m.gpu_kernel_busy_seconds > 0) {
      std::fprintf(stderr, "  device: kernels queued or running %.1f ms of the %.1f ms wall (%.0f%%)\n",
                   m.gpu_kernel_busy_seconds * 1e3, m.wall_seconds * 1e3,
                   m.wall_seconds > 0 ? 100.0 * m.gpu_kernel_busy_seconds / m.wall_seconds : 0.0);
    }
  }
  std::fprintf(stderr, "  waits: reader %.1f ms, writer %.1f ms\n", m.read_wait_seconds * 1e3,
               m.writer_wait_seconds * 1e3);
}

bool write_runs_json(const std::string& path, const std::vector<FileRun>& runs, std::string* error) {
  nlohmann::json doc = {{"tandem", version()}, {"files", nlohmann::json::array()}};
  for (const FileRun& r : runs) doc["files"].push_back(run_json(r));
  const std::string text = doc.dump(2) + "\n";
  AtomicOutput out;
  if (!out.open(path, error)) return false;
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(out.fd(), text.data() + done, text.size() - done);
    if (n < 0) {
      *error = errno_message("cannot write");
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return out.set_default_mode(error) && out.commit(true, error);
}

}  // namespace tandem::cli
