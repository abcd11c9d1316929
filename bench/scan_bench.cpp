// `tandem bench --codec scan` (see scan_bench.hpp).
#include "bench/scan_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_report.hpp"
#include "tandem/scan.hpp"
#include "tandem/scan_gpu.hpp"
#include "tandem/tandem.hpp"

namespace tandem::bench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Archive {
  std::string name;  // the file name: the first component of its entries' paths
  std::vector<std::uint8_t> bytes;
};

// Reads `paths`: files, and directories (their regular files, recursively,
// sorted; MANIFEST files, which scripts/package-corpus writes beside the
// archives, and names starting with '.' are left out).
bool read_archives(const std::vector<std::string>& paths, std::vector<Archive>* archives) {
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name == "MANIFEST" || name.starts_with('.')) {
          if (it->is_directory()) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file()) found.push_back(it->path());
      }
      if (ec) {
        std::fprintf(stderr, "tandem bench: %s: %s\n", p.c_str(), ec.message().c_str());
        return false;
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.emplace_back(p);
    } else {
      std::fprintf(stderr, "tandem bench: %s: no such file or directory\n", p.c_str());
      return false;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "tandem bench: no archives in the paths given\n");
    return false;
  }
  archives->reserve(files.size());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    Archive a;
    a.name = f.filename().string();
    a.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::fprintf(stderr, "tandem bench: %s: cannot read\n", f.c_str());
      return false;
    }
    archives->push_back(std::move(a));
  }
  return true;
}

// What the CPU scan gives for the corpus: each archive's result, and totals.
struct Reference {
  std::vector<ScanResult> results;
  std::uint64_t output = 0;   // bytes of every ok entry
  std::uint64_t entries = 0;  // entries listed
  std::uint64_t not_ok = 0;   // entries whose status is not ok
};

bool same_entry(const ScanEntry& a, const ScanEntry& b) {
  return a.path == b.path && a.layer == b.layer && a.size == b.size && a.codec == b.codec &&
         a.status.code == b.status.code;
}

// Whether `got` holds the reference's entries and bytes, archive by archive.
bool same_results(const std::vector<ScanResult>& got, const Reference& ref) {
  if (got.size() != ref.results.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const ScanResult& g = got[i];
    const ScanResult& r = ref.results[i];
    if (g.bytes != r.bytes || g.entries.size() != r.entries.size()) return false;
    for (std::size_t e = 0; e < g.entries.size(); ++e) {
      if (!same_entry(g.entries[e], r.entries[e]) || g.entries[e].offset != r.entries[e].offset) return false;
    }
  }
  return true;
}

// The comparison of a scan_to_device result (its bytes copied to the host)
// with the reference: entries in the same order, archive by archive, and
// every ok entry's bytes. `why` says the first difference.
struct DeviceCheck {
  bool entries_equal = false;
  bool bytes_equal = false;
  std::string why;
};

DeviceCheck check_device(const DeviceScanResult& d, const std::vector<std::uint8_t>& bytes, const Reference& ref,
                         const std::vector<Archive>& archives) {
  DeviceCheck c;
  c.entries_equal = true;
  c.bytes_equal = true;
  std::size_t next = 0;
  for (std::size_t a = 0; a < ref.results.size() && c.entries_equal; ++a) {
    for (const ScanEntry& r : ref.results[a].entries) {
      if (next >= d.entries.size() || d.entries[next].archive != a || !same_entry(d.entries[next], r)) {
        c.entries_equal = false;
        c.why = archives[a].name + ": " + r.path + ": the entry differs or is missing";
        break;
      }
      const ScanEntry& g = d.entries[next++];
      if (!r.status.ok() || r.size == 0) continue;
      if (g.offset > bytes.size() || bytes.size() - g.offset < g.size ||
          std::memcmp(bytes.data() + g.offset, ref.results[a].bytes.data() + r.offset, r.size) != 0) {
        if (c.bytes_equal) c.why = archives[a].name + ": " + r.path + ": the bytes differ";
        c.bytes_equal = false;
      }
    }
  }
  if (c.entries_equal && next != d.entries.size()) {
    c.entries_equal = false;
    c.why = "the GPU lists " + std::to_string(d.entries.size() - next) + " more entries";
  }
  if (!c.entries_equal) c.bytes_equal = false;
  return c;
}

// The GPU call's wall time and its phases (DeviceScanStats), as "name
// seconds" pairs in the order the call runs them; "other" is what no phase
// covers (the phases cover the call whole, so it is 0 but for rounding).
std::vector<std::pair<const char*, double>> time_split(const DeviceScanStats& s) {
  std::vector<std::pair<const char*, double>> v;
  for (const DeviceScanStats::Phase& p : s.phases()) v.push_back({p.name, p.seconds});
  double covered = 0;
  for (const auto& p : v) covered += p.second;
  v.insert(v.begin(), {"call", s.seconds});
  v.push_back({"other", s.seconds - covered});
  // Not phases of their own: the part of "device" spent inside the device's
  // calls, and the CPU pool's time on the inputs it decoded beside the device.
  v.push_back({"device_calls", s.device_call_seconds});
  v.push_back({"cpu_pool", s.cpu_pool_seconds});
  return v;
}

std::string split_text(const DeviceScanStats& s) {
  std::string t;
  char buf[64];
  for (const auto& [name, sec] : time_split(s)) {
    std::snprintf(buf, sizeof buf, "%s%s %.4f", t.empty() ? "" : ", ", name, sec);
    t += buf;
  }
  return t;
}

nlohmann::json split_json(const DeviceScanStats& s) {
  nlohmann::json j;
  for (const auto& [name, sec] : time_split(s)) j[name] = sec;
  return j;
}

struct ScanRow {
  std::string engine;
  std::string resident;  // where the archives start and the files' bytes end up
  unsigned threads = 0;
  Timing timing;
  std::string note;      // "no device", or what failed
};

}  // namespace

int run_scan_bench(const BenchConfig& config) {
  std::vector<Archive> archives;
  if (!read_archives(config.paths, &archives)) return 2;
  std::vector<ScanInput> inputs;
  std::uint64_t input_bytes = 0;
  for (const Archive& a : archives) {
    inputs.push_back({{a.bytes.data(), a.bytes.size()}, a.name});
    input_bytes += a.bytes.size();
  }
  const ScanLimits limits;
  const unsigned hardware = static_cast<unsigned>(std::max(1, hardware_threads()));
  const unsigned all = config.threads > 0 ? static_cast<unsigned>(config.threads) : hardware;
  const BackendInfo info = backend_info();
  const bool want_gpu = config.backend != "cpu";

  if (!config.quiet) std::fprintf(stderr, "bench: scan: the reference scan (1 thread)\n");
  Reference ref;
  const Status rs = scan_many(inputs, limits, 1, &ref.results);
  for (const ScanResult& r : ref.results) {
    ref.output += r.bytes.size();
    ref.entries += r.entries.size();
    for (const ScanEntry& e : r.entries) ref.not_ok += e.status.ok() ? 0 : 1;
  }
  std::printf("scan: %zu archives, %llu bytes in, %llu entries (%llu not ok), %llu bytes out; %u hardware threads; "
              "GPU: %s\n",
              archives.size(), static_cast<unsigned long long>(input_bytes),
              static_cast<unsigned long long>(ref.entries), static_cast<unsigned long long>(ref.not_ok),
              static_cast<unsigned long long>(ref.output), hardware,
              info.gpu_count > 0 ? info.gpu_name.c_str() : "no device");
  if (!rs.ok()) std::printf("(the scan of an archive says: %s)\n", rs.to_string().c_str());
  std::fflush(stdout);

  // The CPU rows: 1 thread, 16 where there are that many, all (or --threads).
  std::vector<unsigned> thread_counts = {1};
  if (hardware >= 16) thread_counts.push_back(16);
  thread_counts.push_back(all);
  std::sort(thread_counts.begin(), thread_counts.end());
  thread_counts.erase(std::unique(thread_counts.begin(), thread_counts.end()), thread_counts.end());

  std::vector<ScanRow> rows;
  bool all_good = true;
  for (const unsigned t : thread_counts) {
    if (!config.quiet) std::fprintf(stderr, "bench: scan: CPU, scan_many on %u thread%s\n", t, t == 1 ? "" : "s");
    ScanRow r;
    r.engine = "cpu scan_many";
    r.resident = "host -> host";
    r.threads = t;
    std::vector<ScanResult> got;
    Runs runs;
    while (!runs.enough(config.min_seconds, config.min_runs)) {
      std::vector<ScanResult>().swap(got);  // the last run's results are freed before the clock starts
      const auto t0 = Clock::now();
      (void)scan_many(inputs, limits, t, &got);
      runs.add(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    r.timing = runs.timing();
    if (!same_results(got, ref)) {
      r.note = "RESULT DIFFERS from 1 thread";
      all_good = false;
    }
    rows.push_back(std::move(r));
  }

  // The GPU: the whole corpus in one call.
  DeviceCheck check;
  DeviceScanStats stats;         // the first call's
  DeviceScanStats timed_stats;   // the timed device-only run of median time
  bool have_timed_stats = false;
  std::string gpu_state = "not run (--backend cpu)";
  bool gpu_ran = false;
  if (want_gpu) {
    DeviceScanOptions options;
    options.gpu = true;
    options.threads = all;
    if (!config.quiet) std::fprintf(stderr, "bench: scan: scan_to_device, %zu archives in one batch\n", inputs.size());
    DeviceScanResult d;
    // The first call also starts the device; it is not timed.
    const Status s = scan_to_device(inputs, limits, options, &d);
    std::vector<std::uint8_t> back;
    // An archive past the entry limit fails the call as it fails scan_many:
    // the results are still compared then.
    const bool same_status = s.code == rs.code;
    const Status copied = same_status ? d.copy_to_host(&back) : s;
    if (!same_status) {
      gpu_state = "failed: " + s.to_string();
      all_good = false;
    } else if (!copied.ok()) {
      gpu_state = "copy_to_host failed: " + copied.to_string();
      all_good = false;
    } else {
      check = check_device(d, back, ref, archives);
      stats = d.stats;
      all_good = all_good && check.entries_equal && check.bytes_equal;
      gpu_state = d.stats.emulated ? "no device (checked through the emulation)" : info.gpu_name;
      gpu_ran = !d.stats.emulated;
    }
    d.reset();
    ScanRow device{"gpu scan_to_device", "host -> device", all, {}, {}};
    ScanRow host{"gpu scan_to_device + copy_to_host", "host -> host", all, {}, {}};
    // The same call with no input given to the CPU pool by the split, for
    // comparison.
    ScanRow gpu_only{"gpu scan_to_device, split off", "host -> device", all, {}, {}};
    // The split at other thresholds (0: every decoder's input on the CPU).
    const std::uint64_t other_splits[] = {0, 16u << 10, 32u << 10, 64u << 10, 128u << 10, 256u << 10, 1u << 20};
    std::vector<ScanRow> split_rows;
    for (const std::uint64_t at : other_splits) {
      const std::string size = at >= (1u << 20) ? std::to_string(at >> 20) + "M" : std::to_string(at >> 10) + "K";
      split_rows.push_back({"gpu scan_to_device, split " + (at ? size : std::string("0")), "host -> device", all, {}, {}});
    }
    if (gpu_ran) {
      if (!config.quiet) std::fprintf(stderr, "bench: scan: scan_to_device, timed\n");
      // Each run's result is freed after its clock stops.
      std::vector<DeviceScanStats> splits;
      const auto timed = [&](bool to_host, const DeviceScanOptions& o, bool keep_split) {
        Runs runs;
        std::vector<std::uint8_t> h;
        while (!runs.enough(config.gpu_min_seconds, config.gpu_min_runs)) {
          DeviceScanResult x;
          const auto t0 = Clock::now();
          (void)scan_to_device(inputs, limits, o, &x);
          if (to_host) (void)x.copy_to_host(&h);
          runs.add(std::chrono::duration<double>(Clock::now() - t0).count());
          if (keep_split) splits.push_back(x.stats);
        }
        return runs.timing();
      };
      device.timing = timed(false, options, true);
      host.timing = timed(true, options, false);
      DeviceScanOptions off = options;
      off.cpu_block_bytes = UINT64_MAX;
      gpu_only.timing = timed(false, off, false);
      for (std::size_t k = 0; k < split_rows.size(); ++k) {
        DeviceScanOptions at = options;
        at.cpu_block_bytes = other_splits[k];
        split_rows[k].timing = timed(false, at, false);
      }
      if (!splits.empty()) {
        std::sort(splits.begin(), splits.end(),
                  [](const DeviceScanStats& a, const DeviceScanStats& b) { return a.seconds < b.seconds; });
        timed_stats = splits[splits.size() / 2];
        have_timed_stats = true;
      }
    } else {
      device.note = host.note = gpu_only.note = "no device";
      for (ScanRow& r : split_rows) r.note = "no device";
    }
    rows.push_back(std::move(device));
    rows.push_back(std::move(host));
    rows.push_back(std::move(gpu_only));
    for (ScanRow& r : split_rows) rows.push_back(std::move(r));
  }

  // The reference of the goal: the CPU on 16 threads, or on all where fewer.
  const ScanRow* cpu_ref = nullptr;
  for (const ScanRow& r : rows) {
    if (r.engine != "cpu scan_many") continue;
    if (!cpu_ref || (cpu_ref->threads != 16 && (r.threads == 16 || r.threads > cpu_ref->threads))) cpu_ref = &r;
  }
  const auto rate = [](std::uint64_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0.0; };

  std::printf("\nout GB/s: 1e9 bytes of the files found (every ok entry) per second; in GB/s: archive bytes per "
              "second; median of the runs.\nhost -> device: archives in host memory, files' bytes left in device "
              "memory (the archives' host->device copy is inside the time);\nhost -> host: the same plus "
              "copy_to_host. vs cpu%u: speed against scan_many on %u thread(s).\n",
              cpu_ref ? cpu_ref->threads : 0, cpu_ref ? cpu_ref->threads : 0);
  std::printf("%-34s %-15s %7s %10s %9s %9s %11s %8s %s\n", "engine", "resident", "threads", "seconds", "out GB/s",
              "in GB/s", "archives/s", "vs cpu", "");
  for (const ScanRow& r : rows) {
    if (!r.note.empty() && r.timing.runs == 0) {
      std::printf("%-34s %-15s %7u %10s %9s %9s %11s %8s %s\n", r.engine.c_str(), r.resident.c_str(), r.threads, "-",
                  "-", "-", "-", "-", r.note.c_str());
      continue;
    }
    const double s = r.timing.median;
    const double vs = cpu_ref && s > 0 ? cpu_ref->timing.median / s : 0;
    std::printf("%-34s %-15s %7u %10.4f %9.3f %9.3f %11.0f %8.2f %s\n", r.engine.c_str(), r.resident.c_str(),
                r.threads, s, rate(ref.output, s) / 1e9, rate(input_bytes, s) / 1e9, rate(archives.size(), s), vs,
                r.note.c_str());
  }
  if (want_gpu) {
    std::printf("GPU: %s\n", gpu_state.c_str());
    if (check.entries_equal || check.bytes_equal || !check.why.empty()) {
      std::printf("entries equal: %s; bytes equal: %s%s%s\n", check.entries_equal ? "yes" : "no",
                  check.bytes_equal ? "yes" : "no", check.why.empty() ? "" : "; first difference: ",
                  check.why.c_str());
      std::printf("blocks: %llu on the GPU (%llu bytes), %llu on the CPU (%llu bytes; of which %llu inputs by the "
                  "split at %llu bytes, %llu bytes; %llu rejected by the GPU, %llu bytes); %llu unsupported on the "
                  "GPU; %llu nested inputs decoded by the walks; %llu layers, %llu dispatches; %llu bytes host->device, "
                  "%llu device->host\n",
                  static_cast<unsigned long long>(stats.gpu_blocks), static_cast<unsigned long long>(stats.gpu_bytes),
                  static_cast<unsigned long long>(stats.cpu_blocks), static_cast<unsigned long long>(stats.cpu_bytes),
                  static_cast<unsigned long long>(stats.policy_blocks),
                  static_cast<unsigned long long>(DeviceScanOptions{}.cpu_block_bytes),
                  static_cast<unsigned long long>(stats.policy_bytes),
                  static_cast<unsigned long long>(stats.rejected_blocks),
                  static_cast<unsigned long long>(stats.rejected_bytes),
                  static_cast<unsigned long long>(stats.unsupported_blocks),
                  static_cast<unsigned long long>(stats.walk_cpu_blocks), static_cast<unsigned long long>(stats.layers),
                  static_cast<unsigned long long>(stats.dispatches),
                  static_cast<unsigned long long>(stats.host_to_device_bytes),
                  static_cast<unsigned long long>(stats.device_to_host_bytes));
      std::printf("time split of the first call (s): %s\n", split_text(stats).c_str());
      if (have_timed_stats) {
        std::printf("time split of the median timed call (s): %s\n", split_text(timed_stats).c_str());
      }
    }
  }

  if (!config.json_path.empty()) {
    nlohmann::json j;
    j["tool"] = "tandem bench --codec scan";
    j["tandem_version"] = version();
    nlohmann::json names = nlohmann::json::array();
    for (const Archive& a : archives) names.push_back(a.name);
    j["input"] = {{"archives", archives.size()}, {"bytes", input_bytes},     {"entries", ref.entries},
                  {"entries_not_ok", ref.not_ok},   {"output_bytes", ref.output}, {"names", names}};
    j["machine"] = {{"hardware_threads", hardware}, {"gpu", info.gpu_count > 0 ? info.gpu_name : ""}};
    j["min_runs"] = config.min_runs;
    j["min_seconds"] = config.min_seconds;
    j["gpu_min_runs"] = config.gpu_min_runs;
    j["gpu_min_seconds"] = config.gpu_min_seconds;
    nlohmann::json rs_json = nlohmann::json::array();
    for (const ScanRow& r : rows) {
      nlohmann::json x = {{"engine", r.engine}, {"resident", r.resident}, {"threads", r.threads}};
      if (r.timing.runs > 0) {
        const double s = r.timing.median;
        x["seconds"] = {{"median", s}, {"min", r.timing.min}, {"max", r.timing.max}, {"runs", r.timing.runs}};
        x["output_bytes_per_second"] = rate(ref.output, s);
        x["input_bytes_per_second"] = rate(input_bytes, s);
        x["archives_per_second"] = rate(archives.size(), s);
        if (cpu_ref && s > 0) x["vs_cpu_threads"] = {{"threads", cpu_ref->threads}, {"speedup", cpu_ref->timing.median / s}};
      }
      if (!r.note.empty()) x["note"] = r.note;
      rs_json.push_back(x);
    }
    j["rows"] = rs_json;
    if (want_gpu) {
      j["gpu"] = {{"state", gpu_state},
                  {"ran_on_device", gpu_ran},
                  {"entries_equal", check.entries_equal},
                  {"bytes_equal", check.bytes_equal},
                  {"first_difference", check.why},
                  {"stats",
                   {{"gpu_blocks", stats.gpu_blocks},
                    {"gpu_bytes", stats.gpu_bytes},
                    {"cpu_blocks", stats.cpu_blocks},
                    {"cpu_bytes", stats.cpu_bytes},
                    {"policy_blocks", stats.policy_blocks},
                    {"policy_bytes", stats.policy_bytes},
                    {"cpu_block_bytes", DeviceScanOptions{}.cpu_block_bytes},
                    {"unsupported_blocks", stats.unsupported_blocks},
                    {"rejected_blocks", stats.rejected_blocks},
                    {"rejected_bytes", stats.rejected_bytes},
                    {"walk_cpu_blocks", stats.walk_cpu_blocks},
                    {"walk_cpu_bytes", DeviceScanOptions{}.walk_cpu_bytes},
                    {"layers", stats.layers},
                    {"dispatches", stats.dispatches},
                    {"host_to_device_bytes", stats.host_to_device_bytes},
                    {"device_to_host_bytes", stats.device_to_host_bytes},
                    {"seconds_first_call", stats.seconds},
                    {"emulated", stats.emulated}}}};
      // Where the call's time goes: the first call, and the timed device-only
      // run of median time (absent when none ran).
      j["gpu"]["seconds_split_first_call"] = split_json(stats);
      if (have_timed_stats) j["gpu"]["seconds_split_median_call"] = split_json(timed_stats);
    }
    std::ofstream out(config.json_path);
    out << j.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "tandem bench: %s: cannot write\n", config.json_path.c_str());
      return 1;
    }
  }
  if (!all_good) {
    std::fprintf(stderr, "tandem bench: the scans differ (see above)\n");
    return 1;
  }
  if (config.backend == "gpu" && !gpu_ran) {
    std::fprintf(stderr, "tandem bench: --backend gpu: the scan did not run on a device (%s)\n", gpu_state.c_str());
    return 1;
  }
  return 0;
}

}  // namespace tandem::bench
