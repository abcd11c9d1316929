// The deflate benchmark's host part (deflate_gpu_bench.hpp): the input, the
// libdeflate figures, the GPU chunks' check, the table and the JSON.
#include "bench/deflate_gpu_bench.hpp"

#include "bench/bench.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace tandem::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string engine;
  int threads;
  std::size_t compressed;
  double seconds;
};

// libdeflate at `level` over the chunks of data, spread over `threads`
// threads (each takes every threads-th chunk, with its own compressor): the
// median seconds of `runs` runs and the total compressed bytes.
Row libdeflate_row(const std::vector<unsigned char>& data, std::size_t chunk, int level, int threads, int runs) {
  const std::size_t items = std::max<std::size_t>(1, (data.size() + chunk - 1) / chunk);
  std::vector<std::size_t> sizes(items);
  std::vector<double> times;
  for (int run = 0; run < runs; ++run) {
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        libdeflate_compressor* c = libdeflate_alloc_compressor(level);
        std::vector<unsigned char> out(libdeflate_deflate_compress_bound(c, chunk));
        for (std::size_t i = static_cast<std::size_t>(t); i < items; i += static_cast<std::size_t>(threads)) {
          const std::size_t at = i * chunk;
          const std::size_t n = std::min(chunk, data.size() - std::min(at, data.size()));
          sizes[i] = libdeflate_deflate_compress(c, data.data() + at, n, out.data(), out.size());
        }
        libdeflate_free_compressor(c);
      });
    }
    for (auto& th : pool) th.join();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  std::size_t total = 0;
  for (std::size_t s : sizes) total += s;
  return {"libdeflate L" + std::to_string(level), threads, total, times[times.size() / 2]};
}

// libdeflate inflates each GPU chunk alone to its input, and all of them
// joined and ended by 03 00 to the whole input.
bool verify(const std::vector<unsigned char>& data, std::size_t chunk, const DeflateGpuResult& r, std::string* error) {
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  std::vector<unsigned char> out(std::max<std::size_t>(chunk, 1));
  std::size_t at = 0;
  bool ok = true;
  for (std::size_t i = 0; ok && i < r.chunk_sizes.size(); ++i) {
    const std::size_t n = std::min(chunk, data.size() - std::min(i * chunk, data.size()));
    std::size_t in_used = 0, got = 0;
    // A chunk has no final block: libdeflate reports it as truncated or
    // short, so each chunk is checked with 03 00 appended.
    std::vector<unsigned char> one(r.chunks.begin() + at, r.chunks.begin() + at + r.chunk_sizes[i]);
    one.push_back(0x03);
    one.push_back(0x00);
    const auto res = libdeflate_deflate_decompress_ex(d, one.data(), one.size(), out.data(), out.size(), &in_used, &got);
    if (res != LIBDEFLATE_SUCCESS || got != n || in_used != one.size() ||
        !std::equal(out.begin(), out.begin() + n, data.begin() + i * chunk)) {
      *error = "GPU chunk " + std::to_string(i) + " does not inflate to its input";
      ok = false;
    }
    at += r.chunk_sizes[i];
  }
  if (ok) {
    std::vector<unsigned char> all(r.chunks);
    all.push_back(0x03);
    all.push_back(0x00);
    std::vector<unsigned char> whole(data.size() + 1);
    std::size_t got = 0;
    if (libdeflate_deflate_decompress(d, all.data(), all.size(), whole.data(), whole.size(), &got) != LIBDEFLATE_SUCCESS ||
        got != data.size() || !std::equal(data.begin(), data.end(), whole.begin())) {
      *error = "the joined GPU chunks do not inflate to the input";
      ok = false;
    }
  }
  libdeflate_free_decompressor(d);
  return ok;
}

}  // namespace

int run_deflate_gpu_bench(const DeflateGpuBenchConfig& config) {
  if (config.chunk == 0 || (config.chunk & (config.chunk - 1)) != 0 || config.runs < 1 || config.paths.empty()) {
    std::fprintf(stderr, "deflate GPU bench: the chunk must be a power of two, runs >= 1, and files given\n");
    return 2;
  }
  std::vector<unsigned char> data;
  std::vector<std::string> names;
  if (!read_concatenated(config.paths, &data, &names)) return 1;
  const int all_threads =
      config.threads > 0 ? config.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<Row> rows;
  for (int level : {1, 6})
    for (int threads : {1, all_threads}) {
      rows.push_back(libdeflate_row(data, config.chunk, level, threads, std::max(1, std::min(config.runs, threads == 1 ? 3 : config.runs))));
      if (all_threads == 1) break;
    }
  std::string error, device;
  bool have_gpu = false;
  DeflateGpuResult gpu;
  if (deflate_gpu_measure(data.data(), data.size(), config.chunk, config.runs, &gpu, &error)) {
    if (!verify(data, config.chunk, gpu, &error)) {
      std::fprintf(stderr, "deflate GPU bench: %s\n", error.c_str());
      return 1;
    }
    have_gpu = true;
    device = gpu.device;
    rows.push_back({"tandem GPU", 0, gpu.compressed, gpu.seconds});
  }

  const Row* l1_all = nullptr;
  for (const Row& r : rows)
    if (r.engine == "libdeflate L1" && r.threads == all_threads) l1_all = &r;
  std::printf("deflate compression, %zu bytes in %zu-byte chunks%s%s\n", data.size(), config.chunk,
              have_gpu ? ", GPU (device-resident): " : "", device.c_str());
  std::printf("%-40s %8s %14s %8s %10s %10s %10s\n", "engine", "threads", "compressed", "ratio", "vs L1 size", "GB/s",
              "vs L1 all");
  nlohmann::json rows_json = nlohmann::json::array();
  for (const Row& r : rows) {
    const double gbps = r.seconds > 0 ? static_cast<double>(data.size()) / r.seconds / 1e9 : 0;
    const double ratio = r.compressed ? static_cast<double>(data.size()) / static_cast<double>(r.compressed) : 0;
    const double vs_size = l1_all ? static_cast<double>(r.compressed) / static_cast<double>(l1_all->compressed) : 0;
    const double vs_speed = l1_all && r.seconds > 0 ? l1_all->seconds / r.seconds : 0;
    std::printf("%-40s %8s %14zu %8.3f %10.3f %10.2f %10.2f\n", r.engine.c_str(),
                r.threads ? std::to_string(r.threads).c_str() : "-", r.compressed, ratio, vs_size, gbps, vs_speed);
    rows_json.push_back({{"engine", r.engine}, {"threads", r.threads}, {"compressed_bytes", r.compressed},
                         {"ratio", ratio}, {"size_vs_libdeflate_l1", vs_size}, {"seconds", r.seconds},
                         {"gb_per_s", gbps}, {"speed_vs_libdeflate_l1_all_threads", vs_speed}});
  }
  if (!have_gpu) std::printf("GPU: %s\n", error.c_str());
  if (!config.json_path.empty()) {
    nlohmann::json j = {{"benchmark", "deflate_gpu"}, {"input_bytes", data.size()}, {"chunk", config.chunk},
                        {"all_threads", all_threads}, {"runs", config.runs}, {"gpu", device},
                        {"rows", rows_json}};
    const std::string tmp = config.json_path + ".tmp";
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
    out.close();
    if (!out || std::rename(tmp.c_str(), config.json_path.c_str()) != 0) {
      std::fprintf(stderr, "deflate GPU bench: cannot write %s\n", config.json_path.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace tandem::bench
