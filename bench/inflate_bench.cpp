// The GPU inflate benchmark (inflate_bench.hpp): input, chunking, the
// libdeflate figures, the table and the JSON. The GPU part is in
// inflate_bench.cu.
#include "bench/inflate_bench.hpp"

#include "bench/bench.hpp"
#include "bench/deflate_gpu_bench.hpp"
#include "gpu/deflate_gpu.hpp"
#include "gpu/inflate_body.hpp"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace tandem::bench {

namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<unsigned char>;

// Runs fn(i) for every i < n on `threads` threads taking indices in turn.
template <class Fn>
void parallel_for(std::size_t n, int threads, Fn&& fn) {
  std::atomic<std::size_t> next{0};
  auto work = [&]() {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

// The chunks of an indexed stream (without the final 03 00): each chunk
// compressed alone by zlib, ended with a full flush.
struct Chunks {
  Bytes stream;
  std::vector<std::size_t> offsets, sizes, out_sizes;
};

bool make_chunks(const Bytes& data, std::size_t chunk, int level, int threads, Chunks* c, std::string* error) {
  const std::size_t items = (data.size() + chunk - 1) / chunk;
  std::vector<Bytes> parts(items);
  std::atomic<bool> failed{false};
  parallel_for(items, threads, [&](std::size_t i) {
    const std::size_t n = std::min(chunk, data.size() - i * chunk);
    z_stream z{};
    if (deflateInit2(&z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      failed = true;
      return;
    }
    Bytes& out = parts[i];
    out.resize(deflateBound(&z, n) + 64);
    z.next_in = const_cast<unsigned char*>(data.data() + i * chunk);
    z.avail_in = static_cast<uInt>(n);
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z, Z_FULL_FLUSH);
    if (rc != Z_OK || z.avail_in != 0 || z.avail_out == 0) failed = true;
    out.resize(out.size() - z.avail_out);
    deflateEnd(&z);
  });
  if (failed) {
    *error = "zlib failed to compress a chunk";
    return false;
  }
  for (std::size_t i = 0; i < items; ++i) {
    c->offsets.push_back(c->stream.size());
    c->sizes.push_back(parts[i].size());
    c->out_sizes.push_back(std::min(chunk, data.size() - i * chunk));
    c->stream.insert(c->stream.end(), parts[i].begin(), parts[i].end());
  }
  return true;
}

// libdeflate's inflate of every chunk (each followed by 03 00) on `threads`
// threads: the median seconds of `runs`; false when an output differs.
bool libdeflate_measure(const Chunks& c, const Bytes& data, std::size_t chunk, int threads, int runs,
                        double* seconds, std::string* error) {
  const std::size_t items = c.sizes.size();
  std::vector<Bytes> inputs(items);
  for (std::size_t i = 0; i < items; ++i) {
    inputs[i].assign(c.stream.begin() + static_cast<std::ptrdiff_t>(c.offsets[i]),
                     c.stream.begin() + static_cast<std::ptrdiff_t>(c.offsets[i] + c.sizes[i]));
    inputs[i].push_back(0x03);
    inputs[i].push_back(0x00);
  }
  Bytes out(items * chunk);
  std::vector<libdeflate_decompressor*> decs(static_cast<std::size_t>(threads));
  for (auto& d : decs) d = libdeflate_alloc_decompressor();
  std::atomic<bool> failed{false};
  std::vector<double> times;
  for (int k = 0; k < std::max(1, runs) + 1; ++k) {
    std::atomic<std::size_t> next{0};
    const auto t0 = Clock::now();
    auto work = [&](int t) {
      for (std::size_t i; (i = next.fetch_add(1)) < items;) {
        std::size_t got = 0;
        if (libdeflate_deflate_decompress(decs[static_cast<std::size_t>(t)], inputs[i].data(), inputs[i].size(),
                                          out.data() + i * chunk, chunk, &got) != LIBDEFLATE_SUCCESS ||
            got != c.out_sizes[i])
          failed = true;
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& t : pool) t.join();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (k > 0) times.push_back(s);  // the first run warms the caches and threads
  }
  for (auto d : decs) libdeflate_free_decompressor(d);
  bool same = !failed;
  for (std::size_t i = 0; same && i < items; ++i)
    same = std::memcmp(out.data() + i * chunk, data.data() + i * chunk, c.out_sizes[i]) == 0;
  if (!same) {
    *error = "libdeflate's inflate of the chunks differs from the input";
    return false;
  }
  std::sort(times.begin(), times.end());
  *seconds = times[times.size() / 2];
  return true;
}

// The second table: the chunks tandem's GPU deflate encoder writes (made on
// the device, each checked by the GPU inflate against the input), inflated
// on the GPU with their segment starts and without, and by libdeflate on one
// and on all threads. Chunk sizes of 2 to inflate::kMaxSegments segments
// only. Nonzero when
// something fails other than the want of a GPU.
int gpu_written_table(const InflateBenchConfig& config, const Bytes& data, int threads, nlohmann::json* j,
                      std::string* device) {
  const double mb = static_cast<double>(data.size()) / 1e6;
  (*j)["gpu_written"] = nlohmann::json::array();
  bool header = false;
  for (std::size_t chunk : config.chunks) {
    if (chunk < 2 * gpu::kDeflateSegmentBytes || chunk > gpu::inflate::kMaxSegments * gpu::kDeflateSegmentBytes)
      continue;
    DeflateGpuResult enc;
    std::string error;
    if (!deflate_gpu_measure(data.data(), data.size(), chunk, 0, &enc, &error)) {
      std::printf("GPU-written chunks: %s\n", error.c_str());
      return error.find("no CUDA") != std::string::npos || error.find("no CUDA device") != std::string::npos ? 0 : 1;
    }
    Chunks c;
    c.stream = enc.chunks;
    std::size_t at = 0;
    for (std::size_t i = 0; i < enc.chunk_sizes.size(); ++i) {
      c.offsets.push_back(at);
      c.sizes.push_back(enc.chunk_sizes[i]);
      c.out_sizes.push_back(std::min(chunk, data.size() - i * chunk));
      at += enc.chunk_sizes[i];
    }
    double one = 0, all = 0;
    if (!libdeflate_measure(c, data, chunk, 1, config.runs, &one, &error) ||
        !libdeflate_measure(c, data, chunk, threads, config.runs, &all, &error)) {
      std::fprintf(stderr, "inflate bench: GPU-written chunks: %s\n", error.c_str());
      return 1;
    }
    InflateGpuResult plain, seg;
    const InflateGpuStarts starts{&enc.segment_starts, enc.segments_per_item, gpu::kDeflateSegmentBytes};
    if (!inflate_gpu_measure(c.stream, c.offsets, c.sizes, c.out_sizes, chunk, data.data(), data.size(), config.runs,
                             &plain, &error) ||
        !inflate_gpu_measure(c.stream, c.offsets, c.sizes, c.out_sizes, chunk, data.data(), data.size(), config.runs,
                             &seg, &error, starts)) {
      std::fprintf(stderr, "inflate bench: GPU-written chunks: %s\n", error.c_str());
      return 1;
    }
    *device = seg.device;
    if (!header) {
      std::printf("\ninflate of the GPU deflate encoder's chunks (%u-byte segments), median of %d runs\n",
                  gpu::kDeflateSegmentBytes, config.runs);
      std::printf("%8s %12s %7s %14s %14s %12s %12s %8s %8s\n", "chunk", "compressed", "ratio", "gpu seg MB/s",
                  "gpu warp MB/s", "ld 1t MB/s", "ld Nt MB/s", "seg/1t", "seg/Nt");
      header = true;
    }
    const std::size_t compressed = c.stream.size() + 2;
    std::printf("%8zu %12zu %7.3f %14.0f %14.0f %12.0f %12.0f %8.2f %8.2f\n", chunk, compressed,
                static_cast<double>(data.size()) / static_cast<double>(compressed), mb / seg.seconds,
                mb / plain.seconds, mb / one, mb / all, one / seg.seconds, all / seg.seconds);
    nlohmann::json row;
    row["chunk"] = chunk;
    row["chunks"] = c.sizes.size();
    row["segment_bytes"] = gpu::kDeflateSegmentBytes;
    row["compressed_bytes"] = compressed;
    row["gpu_segments_mb_s"] = mb / seg.seconds;
    row["gpu_segments_seconds"] = seg.seconds;
    row["gpu_warp_mb_s"] = mb / plain.seconds;
    row["gpu_warp_seconds"] = plain.seconds;
    row["libdeflate_1t_mb_s"] = mb / one;
    row["libdeflate_all_mb_s"] = mb / all;
    row["gpu_segments_over_libdeflate_1t"] = one / seg.seconds;
    row["gpu_segments_over_libdeflate_all"] = all / seg.seconds;
    (*j)["gpu_written"].push_back(row);
  }
  return 0;
}

}  // namespace

int run_inflate_bench(const InflateBenchConfig& config) {
  if (config.paths.empty() || config.chunks.empty() || config.runs < 1 || config.level < 0 || config.level > 9) {
    std::fprintf(stderr, "inflate bench: give files, chunk sizes, runs >= 1 and a zlib level 0-9\n");
    return 2;
  }
  for (std::size_t c : config.chunks) {
    if (c < 1024 || (c & (c - 1)) != 0 || c > (std::size_t{1} << 26)) {
      std::fprintf(stderr, "inflate bench: chunk size %zu is not a power of two from 1 KiB to 64 MiB\n", c);
      return 2;
    }
  }
  Bytes data;
  std::vector<std::string> names;
  if (!read_concatenated(config.paths, &data, &names)) return 2;
  if (data.empty()) {
    std::fprintf(stderr, "inflate bench: the input is empty\n");
    return 2;
  }
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = config.threads > 0 ? config.threads : hw;
  const double mb = static_cast<double>(data.size()) / 1e6;

  nlohmann::json j;
  j["benchmark"] = "inflate";
  j["files"] = names;
  j["input_bytes"] = data.size();
  j["zlib_level"] = config.level;
  j["threads"] = threads;
  j["runs"] = config.runs;
  j["results"] = nlohmann::json::array();
  std::printf("inflate: %zu bytes (%zu files), zlib level %d chunks ended by a full flush, median of %d runs\n",
              data.size(), names.size(), config.level, config.runs);
  std::printf("%8s %12s %7s %12s %12s %12s %8s %8s\n", "chunk", "compressed", "ratio", "gpu MB/s", "ld 1t MB/s",
              "ld Nt MB/s", "gpu/1t", "gpu/Nt");
  int rc = 0;
  std::string device;
  for (std::size_t chunk : config.chunks) {
    Chunks c;
    std::string error;
    if (!make_chunks(data, chunk, config.level, threads, &c, &error)) {
      std::fprintf(stderr, "inflate bench: %s\n", error.c_str());
      return 1;
    }
    double one = 0, all = 0;
    if (!libdeflate_measure(c, data, chunk, 1, config.runs, &one, &error) ||
        !libdeflate_measure(c, data, chunk, threads, config.runs, &all, &error)) {
      std::fprintf(stderr, "inflate bench: %s\n", error.c_str());
      return 1;
    }
    InflateGpuResult g;
    const bool gpu_ok =
        inflate_gpu_measure(c.stream, c.offsets, c.sizes, c.out_sizes, chunk, data.data(), data.size(), config.runs,
                            &g, &error);
    nlohmann::json row;
    row["chunk"] = chunk;
    row["chunks"] = c.sizes.size();
    row["compressed_bytes"] = c.stream.size() + 2;
    row["libdeflate_1t_mb_s"] = mb / one;
    row["libdeflate_all_mb_s"] = mb / all;
    char gpu_col[32] = "-", r1[16] = "-", rn[16] = "-";
    if (gpu_ok) {
      device = g.device;
      row["gpu_device_mb_s"] = mb / g.seconds;
      row["gpu_seconds"] = g.seconds;
      row["gpu_over_libdeflate_1t"] = one / g.seconds;
      row["gpu_over_libdeflate_all"] = all / g.seconds;
      std::snprintf(gpu_col, sizeof gpu_col, "%.0f", mb / g.seconds);
      std::snprintf(r1, sizeof r1, "%.2f", one / g.seconds);
      std::snprintf(rn, sizeof rn, "%.2f", all / g.seconds);
    } else {
      row["gpu_error"] = error;
      if (error.find("no CUDA") == std::string::npos) rc = 1;
    }
    std::printf("%8zu %12zu %7.3f %12s %12.0f %12.0f %8s %8s\n", chunk, c.stream.size() + 2,
                static_cast<double>(data.size()) / static_cast<double>(c.stream.size() + 2), gpu_col, mb / one,
                mb / all, r1, rn);
    if (!gpu_ok) std::printf("         gpu: %s\n", error.c_str());
    j["results"].push_back(row);
  }
  if (gpu_written_table(config, data, threads, &j, &device) != 0) rc = 1;
  if (!device.empty()) j["device"] = device;
  if (!config.json_path.empty()) {
    const std::string tmp = config.json_path + ".tmp";
    {
      std::ofstream f(tmp);
      f << j.dump(2) << "\n";
      if (!f) {
        std::fprintf(stderr, "inflate bench: cannot write %s\n", tmp.c_str());
        return 1;
      }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, config.json_path, ec);
    if (ec) {
      std::fprintf(stderr, "inflate bench: cannot write %s\n", config.json_path.c_str());
      return 1;
    }
  }
  return rc;
}

}  // namespace tandem::bench
