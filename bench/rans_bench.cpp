// `tandem bench --codec rans` (see rans_bench.hpp).
#include "bench/rans_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cpu/rans_cpu.hpp"
#include "tandem/tandem.hpp"

namespace tandem::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Runs fn(i) for every segment i on `threads` threads.
template <class F>
void for_segments(std::size_t items, int threads, F fn) {
  if (threads <= 1) {
    for (std::size_t i = 0; i < items; ++i) fn(i);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < items; i += static_cast<std::size_t>(threads)) fn(i);
    });
  }
  for (std::thread& th : pool) th.join();
}

template <class F>
double median_seconds(double min_seconds, int min_runs, F fn) {
  std::vector<double> runs;
  const auto start = Clock::now();
  while (static_cast<int>(runs.size()) < min_runs ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    const auto t0 = Clock::now();
    fn();
    runs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

struct Row {
  std::size_t segment = 0;
  std::uint32_t chunk_kib = 0;
  std::uint64_t compressed = 0;
  double vs_one_chunk = 0;  // compressed / the one-chunk row's, same segment
  double cpu1_encode = 0, cpu1_decode = 0, cpun_encode = 0, cpun_decode = 0;  // seconds; 0 = not measured
  RansGpuFigures gpu;
};

double gbps(std::size_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }

}  // namespace

int run_rans_bench(const BenchConfig& config) {
  std::vector<std::uint8_t> input;
  std::vector<std::string> names;
  if (!read_concatenated(config.paths, &input, &names)) return 2;
  if (input.empty()) {
    std::fprintf(stderr, "tandem bench: the input is empty\n");
    return 2;
  }
  const int threads = config.threads > 0 ? config.threads : hardware_threads();
  const BackendInfo info = backend_info();
  const bool gpu = rans_gpu_compiled() && info.gpu_count > 0 && config.backend != "cpu";
  std::printf("rANS: %zu bytes (%zu files); segments are streams of their own; %d host threads; GPU: %s\n",
              input.size(), names.size(), threads, gpu ? info.gpu_name.c_str() : "none");
  std::fflush(stdout);

  std::vector<Row> rows;
  for (const std::size_t segment : {std::size_t{64} << 10, std::size_t{16} << 10}) {
    const std::size_t items = (input.size() + segment - 1) / segment;
    const std::uint32_t seg_kib = static_cast<std::uint32_t>(segment >> 10);
    std::uint64_t one_chunk = 0;
    std::vector<Row> these;
    for (const std::uint32_t kib : {1u, 2u, 4u, 8u, 16u, 32u, 64u}) {
      if (kib > seg_kib) continue;
      Row r;
      r.segment = segment;
      r.chunk_kib = kib;
      rans::Params p;
      p.chunk_kib = kib;
      std::vector<std::vector<std::uint8_t>> streams(items);
      auto span_of = [&](std::size_t i) {
        return std::span<const std::uint8_t>(input).subspan(i * segment, std::min(segment, input.size() - i * segment));
      };
      bool ok = true;
      auto encode_all = [&](int t) {
        for_segments(items, t, [&](std::size_t i) {
          if (!rans::encode(span_of(i), p, &streams[i])) ok = false;
        });
      };
      std::vector<std::uint8_t> back(input.size());
      auto decode_all = [&](int t) {
        for_segments(items, t, [&](std::size_t i) {
          const auto src = span_of(i);
          std::size_t got = 0;
          if (!rans::decode(streams[i], std::span<std::uint8_t>(back).subspan(i * segment, src.size()), &got) ||
              got != src.size()) {
            ok = false;
          }
        });
      };
      encode_all(threads);
      decode_all(threads);
      if (!ok || back != input) {
        std::fprintf(stderr, "tandem bench: the CPU rANS codec failed its round trip (segment %u KiB, chunk %u KiB)\n",
                     seg_kib, kib);
        return 1;
      }
      for (const auto& s : streams) r.compressed += s.size();
      if (kib == seg_kib) one_chunk = r.compressed;
      // The CPU's speed at the default chunk size only: the others differ by little.
      if (kib == rans::kDefaultChunkKiB || (kib == seg_kib && seg_kib < rans::kDefaultChunkKiB)) {
        if (!config.quiet) std::fprintf(stderr, "bench: rans: CPU, segment %u KiB, chunk %u KiB\n", seg_kib, kib);
        r.cpu1_encode = median_seconds(config.min_seconds, config.min_runs, [&] { encode_all(1); });
        r.cpu1_decode = median_seconds(config.min_seconds, config.min_runs, [&] { decode_all(1); });
        if (threads > 1) {
          r.cpun_encode = median_seconds(config.min_seconds, config.min_runs, [&] { encode_all(threads); });
          r.cpun_decode = median_seconds(config.min_seconds, config.min_runs, [&] { decode_all(threads); });
        }
      }
      if (gpu) {
        if (!config.quiet) std::fprintf(stderr, "bench: rans: GPU, segment %u KiB, chunk %u KiB\n", seg_kib, kib);
        r.gpu = rans_gpu_measure(input, segment, p, streams, config.gpu_min_seconds, config.gpu_min_runs);
        if (!r.gpu.ran) {
          std::fprintf(stderr, "tandem bench: rans on the GPU: %s\n", r.gpu.error.c_str());
          return 1;
        }
      }
      these.push_back(r);
    }
    for (Row& r : these) r.vs_one_chunk = one_chunk ? static_cast<double>(r.compressed) / one_chunk : 0;
    rows.insert(rows.end(), these.begin(), these.end());
  }

  std::printf("\nGB/s: 1e9 uncompressed bytes per second, median of the runs; GPU: device-resident, every segment "
              "in one call; vs 1 chunk: size against the same segments coded as one chunk each; same bytes: the GPU "
              "wrote the CPU encoder's bytes; round trip: the GPU decoded them back\n");
  std::printf("%8s %6s %12s %7s %9s %9s %9s %9s %9s %9s %9s %10s %10s\n", "segment", "chunk", "bytes", "ratio",
              "vs 1 chk", "gpu enc", "gpu dec", "cpu1 enc", "cpu1 dec", "cpuN enc", "cpuN dec", "same bytes",
              "round trip");
  for (const Row& r : rows) {
    auto cell = [](double v) {
      char b[32];
      if (v > 0) std::snprintf(b, sizeof b, "%9.3f", v);
      else std::snprintf(b, sizeof b, "%9s", "-");
      return std::string(b);
    };
    std::printf("%7zuK %5uK %12llu %7.4f %8.3f%% %s %s %s %s %s %s %10s %10s\n", r.segment >> 10, r.chunk_kib,
                static_cast<unsigned long long>(r.compressed),
                static_cast<double>(input.size()) / static_cast<double>(r.compressed),
                (r.vs_one_chunk - 1) * 100, cell(gbps(input.size(), r.gpu.encode_seconds)).c_str(),
                cell(gbps(input.size(), r.gpu.decode_seconds)).c_str(),
                cell(gbps(input.size(), r.cpu1_encode)).c_str(), cell(gbps(input.size(), r.cpu1_decode)).c_str(),
                cell(gbps(input.size(), r.cpun_encode)).c_str(), cell(gbps(input.size(), r.cpun_decode)).c_str(),
                r.gpu.ran ? (r.gpu.identical ? "yes" : "NO") : "-", r.gpu.ran ? (r.gpu.round_trip ? "yes" : "NO") : "-");
  }
  bool all_good = true;
  for (const Row& r : rows) all_good = all_good && (!r.gpu.ran || (r.gpu.identical && r.gpu.round_trip));

  if (!config.json_path.empty()) {
    nlohmann::json j;
    j["tool"] = "tandem bench --codec rans";
    j["tandem_version"] = version();
    j["input"] = {{"bytes", input.size()}, {"files", names}};
    j["machine"] = {{"threads", threads}, {"gpu", gpu ? info.gpu_name : ""}};
    j["min_runs"] = config.min_runs;
    j["min_seconds"] = config.min_seconds;
    nlohmann::json rs = nlohmann::json::array();
    for (const Row& r : rows) {
      nlohmann::json x = {{"segment", r.segment},
                          {"chunk", r.chunk_kib * 1024},
                          {"compressed", r.compressed},
                          {"ratio", static_cast<double>(input.size()) / static_cast<double>(r.compressed)},
                          {"size_vs_one_chunk", r.vs_one_chunk}};
      auto put = [&](const char* key, double seconds) {
        if (seconds > 0) x[key] = {{"seconds", seconds}, {"bytes_per_second", input.size() / seconds}};
      };
      put("cpu_1_thread_encode", r.cpu1_encode);
      put("cpu_1_thread_decode", r.cpu1_decode);
      put("cpu_all_threads_encode", r.cpun_encode);
      put("cpu_all_threads_decode", r.cpun_decode);
      if (r.gpu.ran) {
        put("gpu_encode", r.gpu.encode_seconds);
        put("gpu_decode", r.gpu.decode_seconds);
        x["gpu_same_bytes_as_cpu"] = r.gpu.identical;
        x["gpu_round_trip"] = r.gpu.round_trip;
      }
      rs.push_back(x);
    }
    j["rows"] = rs;
    std::ofstream out(config.json_path);
    out << j.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "tandem bench: cannot write %s\n", config.json_path.c_str());
      return 1;
    }
  }
  if (!all_good) {
    std::fprintf(stderr, "tandem bench: the GPU's rANS streams differ from the CPU's or did not decode back\n");
    return 1;
  }
  return 0;
}

}  // namespace tandem::bench
