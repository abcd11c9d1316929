// `tandem bench --codec lzr` (see lzr_bench.hpp).
#include "bench/lzr_bench.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#if TANDEM_BENCH_ZSTD
#include <zstd.h>
#endif

#include "tandem/tandem.hpp"

namespace tandem::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Runs fn(i) for every item i on `threads` threads, each taking the next item.
template <class F>
void for_items(std::size_t items, int threads, F fn) {
  if (threads <= 1) {
    for (std::size_t i = 0; i < items; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < items; i = next++) fn(i);
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

double gbps(std::size_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }

// One row of the table: an engine, its size and its speeds (seconds; 0 = not measured).
struct Row {
  std::string engine;
  std::uint64_t compressed = 0;
  double enc1 = 0, dec1 = 0, encn = 0, decn = 0;  // CPU: one thread, all threads
  double gpu_enc = 0, gpu_dec = 0;                // GPU, device-resident
  std::string same_bytes = "-", round_trip = "-";
  std::size_t gpu_enc_temp = 0, gpu_dec_temp = 0;
};

}  // namespace

int run_lzr_bench(const BenchConfig& config) {
  std::vector<std::uint8_t> input;
  std::vector<std::string> names;
  if (!read_concatenated(config.paths, &input, &names)) return 2;
  if (input.empty()) {
    std::fprintf(stderr, "tandem bench: the input is empty\n");
    return 2;
  }
  const int threads = config.threads > 0 ? config.threads : hardware_threads();
  const BackendInfo info = backend_info();
  const bool gpu = lzr_gpu_compiled() && info.gpu_count > 0 && config.backend != "cpu";
  const std::size_t item = std::min(config.chunk, gpu::kMaxItemSize);
  const std::size_t items = (input.size() + item - 1) / item;
  auto span_of = [&](std::size_t i) {
    return std::span<const std::uint8_t>(input).subspan(i * item, std::min(item, input.size() - i * item));
  };
  std::printf("lzr: %zu bytes (%zu files) in %zu items of %zu bytes, each a frame; %d host threads; GPU: %s\n",
              input.size(), names.size(), items, item, threads, gpu ? info.gpu_name.c_str() : "none");
  std::fflush(stdout);

  std::vector<Row> rows;
  bool all_good = true;
  // 128 KiB blocks (the default), and 256 KiB.
  for (const std::uint32_t log : {lzr::kMaxBlockLog - 1, lzr::kMaxBlockLog}) {
    Row r;
    r.engine = "lzr " + std::to_string((1u << log) >> 10) + "K";
    const lzr::Params p{log};
    std::vector<std::vector<std::uint8_t>> frames(items);
    bool ok = true;
    auto encode_all = [&](int t) {
      for_items(items, t, [&](std::size_t i) {
        if (!lzr::encode(span_of(i), p, &frames[i])) ok = false;
      });
    };
    std::vector<std::uint8_t> back(input.size());
    auto decode_all = [&](int t) {
      for_items(items, t, [&](std::size_t i) {
        std::size_t got = 0;
        const auto src = span_of(i);
        if (!lzr::decode(frames[i], std::span<std::uint8_t>(back).subspan(i * item, src.size()), &got) ||
            got != src.size()) {
          ok = false;
        }
      });
    };
    if (!config.quiet) std::fprintf(stderr, "bench: lzr: CPU, %u KiB blocks\n", (1u << log) >> 10);
    // The CPU codec runs the GPU's warp bodies through an emulation: one
    // run each way on all threads, for reference.
    const auto t0 = Clock::now();
    encode_all(threads);
    r.encn = std::chrono::duration<double>(Clock::now() - t0).count();
    const auto t1 = Clock::now();
    decode_all(threads);
    r.decn = std::chrono::duration<double>(Clock::now() - t1).count();
    if (!ok || back != input) {
      std::fprintf(stderr, "tandem bench: the CPU lzr codec failed its round trip (%u KiB blocks)\n",
                   (1u << log) >> 10);
      return 1;
    }
    for (const auto& f : frames) r.compressed += f.size();
    if (gpu) {
      if (!config.quiet) std::fprintf(stderr, "bench: lzr: GPU, %u KiB blocks\n", (1u << log) >> 10);
      const LzrGpuFigures g = lzr_gpu_measure(input, item, p, frames, config.gpu_min_seconds, config.gpu_min_runs);
      if (!g.ran) {
        std::fprintf(stderr, "tandem bench: lzr on the GPU: %s\n", g.error.c_str());
        return 1;
      }
      r.gpu_enc = g.encode_seconds;
      r.gpu_dec = g.decode_seconds;
      r.same_bytes = g.identical ? "yes" : "NO";
      r.round_trip = g.round_trip ? "yes" : "NO";
      r.gpu_enc_temp = g.encode_temp;
      r.gpu_dec_temp = g.decode_temp;
      all_good = all_good && g.identical && g.round_trip;
    }
    rows.push_back(r);
  }

#if TANDEM_BENCH_ZSTD
  for (const int level : {1, 3}) {
    Row r;
    r.engine = "zstd -" + std::to_string(level);
    std::vector<std::vector<std::uint8_t>> frames(items);
    bool ok = true;
    auto encode_all = [&](int t) {
      for_items(items, t, [&](std::size_t i) {
        const auto src = span_of(i);
        frames[i].resize(ZSTD_compressBound(src.size()));
        const std::size_t got = ZSTD_compress(frames[i].data(), frames[i].size(), src.data(), src.size(), level);
        if (ZSTD_isError(got)) ok = false;
        else frames[i].resize(got);
      });
    };
    std::vector<std::uint8_t> back(input.size());
    auto decode_all = [&](int t) {
      for_items(items, t, [&](std::size_t i) {
        const auto src = span_of(i);
        const std::size_t got = ZSTD_decompress(back.data() + i * item, src.size(), frames[i].data(), frames[i].size());
        if (ZSTD_isError(got) || got != src.size()) ok = false;
      });
    };
    encode_all(threads);
    decode_all(threads);
    if (!ok || back != input) {
      std::fprintf(stderr, "tandem bench: libzstd failed its round trip (level %d)\n", level);
      return 1;
    }
    for (const auto& f : frames) r.compressed += f.size();
    if (!config.quiet) std::fprintf(stderr, "bench: lzr: zstd -%d, 1 and %d threads\n", level, threads);
    r.enc1 = median_seconds(config.min_seconds, config.min_runs, [&] { encode_all(1); });
    r.dec1 = median_seconds(config.min_seconds, config.min_runs, [&] { decode_all(1); });
    if (threads > 1) {
      r.encn = median_seconds(config.min_seconds, config.min_runs, [&] { encode_all(threads); });
      r.decn = median_seconds(config.min_seconds, config.min_runs, [&] { decode_all(threads); });
    }
    rows.push_back(r);
  }
#endif

  // The figures against zstd -1 on all threads (the reference of the design targets).
  const Row* zstd1 = nullptr;
  for (const Row& r : rows) {
    if (r.engine == "zstd -1") zstd1 = &r;
  }
  std::printf("\nGB/s: 1e9 uncompressed bytes per second, median of the runs (the lzr CPU rows: one run, all "
              "threads); GPU: device-resident, every item in one call; same bytes: the GPU wrote the CPU encoder's "
              "frames; round trip: the GPU decoded them back; vs zstd-1: size, and GPU speed against zstd -1 on "
              "%d threads\n",
              threads);
  std::printf("%-10s %12s %7s %9s %9s %9s %9s %9s %9s %8s %8s %8s %5s %5s\n", "engine", "bytes", "ratio", "gpu enc",
              "gpu dec", "cpu1 enc", "cpu1 dec", "cpuN enc", "cpuN dec", "size/z1", "enc/z1N", "dec/z1N", "same",
              "trip");
  auto cell = [](double v, const char* fmt = "%9.3f") {
    char b[32];
    if (v > 0) std::snprintf(b, sizeof b, fmt, v);
    else std::snprintf(b, sizeof b, "%9s", "-");
    return std::string(b);
  };
  const std::size_t n = input.size();
  for (const Row& r : rows) {
    const double size_vs = zstd1 ? static_cast<double>(r.compressed) / static_cast<double>(zstd1->compressed) : 0;
    const double enc_vs = zstd1 && zstd1->encn > 0 && r.gpu_enc > 0 ? zstd1->encn / r.gpu_enc : 0;
    const double dec_vs = zstd1 && zstd1->decn > 0 && r.gpu_dec > 0 ? zstd1->decn / r.gpu_dec : 0;
    std::printf("%-10s %12llu %7.4f %s %s %s %s %s %s %8s %8s %8s %5s %5s\n", r.engine.c_str(),
                static_cast<unsigned long long>(r.compressed), static_cast<double>(n) / static_cast<double>(r.compressed),
                cell(gbps(n, r.gpu_enc)).c_str(), cell(gbps(n, r.gpu_dec)).c_str(), cell(gbps(n, r.enc1)).c_str(),
                cell(gbps(n, r.dec1)).c_str(), cell(gbps(n, r.encn)).c_str(), cell(gbps(n, r.decn)).c_str(),
                cell(size_vs, "%8.3f").c_str(), cell(enc_vs, "%8.2f").c_str(), cell(dec_vs, "%8.2f").c_str(),
                r.same_bytes.c_str(), r.round_trip.c_str());
  }
#if !TANDEM_BENCH_ZSTD
  std::printf("(libzstd was not found when tandem was built: no zstd rows)\n");
#endif

  if (!config.json_path.empty()) {
    nlohmann::json j;
    j["tool"] = "tandem bench --codec lzr";
    j["tandem_version"] = version();
    j["input"] = {{"bytes", n}, {"files", names}, {"item_bytes", item}, {"items", items}};
    j["machine"] = {{"threads", threads}, {"gpu", gpu ? info.gpu_name : ""}};
    j["min_runs"] = config.min_runs;
    j["min_seconds"] = config.min_seconds;
    nlohmann::json rs = nlohmann::json::array();
    for (const Row& r : rows) {
      nlohmann::json x = {{"engine", r.engine},
                          {"compressed", r.compressed},
                          {"ratio", static_cast<double>(n) / static_cast<double>(r.compressed)}};
      if (zstd1) x["size_vs_zstd1"] = static_cast<double>(r.compressed) / static_cast<double>(zstd1->compressed);
      auto put = [&](const char* key, double seconds) {
        if (seconds > 0) x[key] = {{"seconds", seconds}, {"bytes_per_second", static_cast<double>(n) / seconds}};
      };
      put("cpu_1_thread_encode", r.enc1);
      put("cpu_1_thread_decode", r.dec1);
      put("cpu_all_threads_encode", r.encn);
      put("cpu_all_threads_decode", r.decn);
      if (r.gpu_enc > 0) {
        put("gpu_encode", r.gpu_enc);
        put("gpu_decode", r.gpu_dec);
        x["gpu_same_bytes_as_cpu"] = r.same_bytes == "yes";
        x["gpu_round_trip"] = r.round_trip == "yes";
        x["gpu_encode_temp_bytes"] = r.gpu_enc_temp;
        x["gpu_decode_temp_bytes"] = r.gpu_dec_temp;
        if (zstd1 && zstd1->encn > 0) x["gpu_encode_vs_zstd1_all_threads"] = zstd1->encn / r.gpu_enc;
        if (zstd1 && zstd1->decn > 0) x["gpu_decode_vs_zstd1_all_threads"] = zstd1->decn / r.gpu_dec;
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
    std::fprintf(stderr, "tandem bench: the GPU's lzr frames differ from the CPU's or did not decode back\n");
    return 1;
  }
  return 0;
}

}  // namespace tandem::bench
