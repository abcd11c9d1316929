// `tandem pages bench`; see pages_bench.hpp.
#include "bench/pages_bench.hpp"

#include <lz4.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/bench_report.hpp"
#include "bench/pages_bench_gpu.hpp"
#include "tandem/pages.hpp"
#include "tandem/tandem.hpp"

namespace tandem::bench {

namespace {

constexpr std::size_t kMaxBatch = 1000000;
// Batches under this many pages take a spread sample of the input per run...
constexpr std::size_t kWholeInputBatch = 256;
// ...of about this many pages.
constexpr std::size_t kSamplePages = 8192;

const char* const kEngines[] = {"zram", "cpu-1", "cpu", "gpu-host", "gpu-pageable", "gpu-device"};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Repeats fn (one run, returning its seconds, or a negative number on
// failure) until the runs number min_runs and add up to min_seconds; the
// median run.
double measure(const PagesBenchConfig& c, const std::function<double()>& fn) {
  Runs runs;
  while (!runs.enough(c.min_seconds, c.min_runs)) {
    const double t = fn();
    if (t < 0) return -1;
    runs.add(t);
  }
  return runs.timing().median;
}

// The kernel-zram-like baseline: one page at a time on one thread.
struct ZramPage {
  PageKind kind;
  std::uint32_t length;
  std::uint64_t fill;
};

bool same_filled(const std::uint8_t* page, std::size_t p, std::uint64_t* fill) {
  if (std::memcmp(page, page + 8, p - 8) != 0) return false;
  std::memcpy(fill, page, 8);
  return true;
}

void zram_compress(const std::uint8_t* in, std::size_t pages, std::size_t p, std::uint8_t* slots,
                   std::vector<ZramPage>* out) {
  const int bound = LZ4_compressBound(static_cast<int>(p));
  std::vector<char> scratch(static_cast<std::size_t>(bound));
  for (std::size_t i = 0; i < pages; ++i) {
    const std::uint8_t* page = in + i * p;
    ZramPage& z = (*out)[i];
    std::uint64_t fill = 0;
    if (same_filled(page, p, &fill)) {
      z = {fill ? PageKind::same_fill : PageKind::zero, 0, fill};
      continue;
    }
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(page), scratch.data(), static_cast<int>(p), bound);
    if (n > 0 && static_cast<std::size_t>(n) <= page_max_compressed(p)) {
      std::memcpy(slots + i * p, scratch.data(), static_cast<std::size_t>(n));
      z = {PageKind::lz4, static_cast<std::uint32_t>(n), 0};
    } else {
      std::memcpy(slots + i * p, page, p);
      z = {PageKind::stored, static_cast<std::uint32_t>(p), 0};
    }
  }
}

bool zram_decompress(const std::vector<ZramPage>& z, const std::uint8_t* slots, std::size_t p, std::uint8_t* out) {
  for (std::size_t i = 0; i < z.size(); ++i) {
    std::uint8_t* page = out + i * p;
    switch (z[i].kind) {
      case PageKind::zero: std::memset(page, 0, p); break;
      case PageKind::same_fill:
        for (std::size_t k = 0; k < p; k += 8) std::memcpy(page + k, &z[i].fill, 8);
        break;
      case PageKind::stored: std::memcpy(page, slots + i * p, p); break;
      default:
        if (LZ4_decompress_safe(reinterpret_cast<const char*>(slots + i * p), reinterpret_cast<char*>(page),
                                static_cast<int>(z[i].length), static_cast<int>(p)) != static_cast<int>(p)) {
          return false;
        }
    }
  }
  return true;
}

struct PageRow {
  std::string engine;
  std::size_t batch = 0;  // 0: not batched (zram)
  double compress_s = NAN, decompress_s = NAN;  // one run
  std::size_t pages = 0;                        // pages in one run
  std::string note;                             // why a row has no figures
};

struct Histogram {
  std::size_t kinds[4] = {};
  std::uint64_t data_bytes = 0;
};

Histogram histogram_of(std::span<const PageRecord> r) {
  Histogram h;
  for (const PageRecord& x : r) {
    ++h.kinds[static_cast<int>(x.kind) & 3];
    h.data_bytes += x.length;
  }
  return h;
}

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

std::string with_commas(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

// The pages of a run for batches of `batch` pages over `pages` pages: the
// start of each batch.
std::vector<std::size_t> batch_starts(std::size_t pages, std::size_t batch) {
  std::vector<std::size_t> starts;
  const std::size_t windows = pages / batch;
  std::size_t k = windows;
  if (batch < kWholeInputBatch) k = std::min(windows, (kSamplePages + batch - 1) / batch);
  for (std::size_t j = 0; j < k; ++j) starts.push_back(k == windows ? j * batch : j * (windows / k) * batch);
  return starts;
}

}  // namespace

bool parse_batch_list(std::string_view text, std::vector<std::size_t>* batches, std::string* error) {
  std::vector<std::size_t> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    std::string_view item = text.substr(at, comma - at);
    std::size_t scale = 1;
    if (!item.empty() && (item.back() == 'K' || item.back() == 'k')) {
      scale = 1000;
      item.remove_suffix(1);
    }
    if (item.empty() || !std::all_of(item.begin(), item.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
        item.size() > 7) {
      *error = "bad batch size '" + std::string(text.substr(at, comma - at)) + "'";
      return false;
    }
    const std::size_t v = std::stoull(std::string(item)) * scale;
    if (v == 0 || v > kMaxBatch) {
      *error = "batch sizes go from 1 to 1,000,000 pages";
      return false;
    }
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    at = comma + 1;
  }
  *batches = out;
  return true;
}

bool parse_engine_list(std::string_view text, std::vector<std::string>* engines, std::string* error) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item(text.substr(at, comma - at));
    if (std::find(std::begin(kEngines), std::end(kEngines), item) == std::end(kEngines)) {
      *error = "unknown engine '" + item + "' (zram, cpu-1, cpu, gpu-host, gpu-pageable, gpu-device)";
      return false;
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    at = comma + 1;
  }
  *engines = out;
  return true;
}

int run_pages(const PagesBenchConfig& c) {
  if (!valid_page_size(c.page_size)) {
    std::fprintf(stderr, "tandem: pages bench: page size must be 4K, 16K or 64K\n");
    return 2;
  }
  // The input: every file's whole pages, one after another.
  std::vector<std::uint8_t> pool;
  std::string name;
  for (const std::string& path : c.paths) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "tandem: pages bench: cannot read %s\n", path.c_str());
      return 1;
    }
    std::vector<std::uint8_t> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    data.resize(data.size() / c.page_size * c.page_size);
    pool.insert(pool.end(), data.begin(), data.end());
    const std::size_t slash = path.find_last_of('/');
    name += (name.empty() ? "" : "+") + (slash == std::string::npos ? path : path.substr(slash + 1));
  }
  const std::size_t p = c.page_size;
  const std::size_t pool_pages = pool.size() / p;
  if (pool_pages == 0) {
    std::fprintf(stderr, "tandem: pages bench: the input holds no whole page of %zu bytes\n", p);
    return 1;
  }
  const int threads = c.threads > 0 ? c.threads : hardware_threads();
  const BackendInfo info = backend_info();
  const bool have_gpu = info.cuda_compiled && info.gpu_count > 0;

  // The CPU backend's records of the whole pool: what every engine must give.
  std::vector<PageRecord> want(pool_pages);
  std::vector<std::uint8_t> want_slots(pool.size());
  {
    PageOptions o;
    o.backend = Backend::cpu;
    if (!compress_pages({pool.data(), pool_pages, p}, {want_slots.data(), want_slots.size()}, want, o).ok()) {
      std::fprintf(stderr, "tandem: pages bench: compression failed\n");
      return 1;
    }
  }
  const Histogram hist = histogram_of(want);

  std::vector<PageRow> rows;
  bool failed = false;
  const auto progress = [&](const std::string& what) {
    if (!c.quiet) std::fprintf(stderr, "pages bench: %s\n", what.c_str());
  };

  // zram: once over the whole input (a page at a time; batches do not apply).
  Histogram zram_hist;
  if (std::find(c.engines.begin(), c.engines.end(), "zram") != c.engines.end()) {
    progress("zram-like baseline");
    std::vector<ZramPage> z(pool_pages);
    std::vector<std::uint8_t> slots(pool.size()), out(pool.size());
    PageRow r;
    r.engine = "zram";
    r.pages = pool_pages;
    r.compress_s = measure(c, [&] {
      const double t0 = now();
      zram_compress(pool.data(), pool_pages, p, slots.data(), &z);
      return now() - t0;
    });
    bool ok = true;
    r.decompress_s = measure(c, [&] {
      const double t0 = now();
      ok = zram_decompress(z, slots.data(), p, out.data()) && ok;
      return now() - t0;
    });
    if (!ok || out != pool) {
      std::fprintf(stderr, "tandem: pages bench: the zram-like baseline did not round-trip\n");
      failed = true;
    }
    for (const ZramPage& x : z) {
      ++zram_hist.kinds[static_cast<int>(x.kind)];
      zram_hist.data_bytes += x.length;
    }
    rows.push_back(r);
  }

  for (const std::size_t batch : c.batches) {
    // The work: the pool, or the pool cycled to fill one batch larger than it.
    std::vector<std::uint8_t> cycled;
    std::span<const std::uint8_t> work(pool);
    std::vector<PageRecord> work_want;
    std::vector<std::uint8_t> work_want_slots;
    std::span<const PageRecord> want_records(want);
    std::span<const std::uint8_t> want_bytes(want_slots);
    if (batch > pool_pages) {
      cycled.resize(batch * p);
      work_want.resize(batch);
      work_want_slots.resize(batch * p);
      for (std::size_t i = 0; i < batch; ++i) {
        const std::size_t from = i % pool_pages;
        std::memcpy(cycled.data() + i * p, pool.data() + from * p, p);
        std::memcpy(work_want_slots.data() + i * p, want_slots.data() + from * p, p);
        work_want[i] = want[from];
      }
      work = cycled;
      want_records = work_want;
      want_bytes = work_want_slots;
    }
    const std::size_t work_pages = work.size() / p;
    const std::vector<std::size_t> starts = batch_starts(work_pages, batch);
    std::vector<PageRecord> records(work_pages);
    std::vector<std::uint8_t> slot_buf(work.size()), out_buf(work.size());
    std::vector<Status> statuses(work_pages);

    for (const std::string& engine : c.engines) {
      if (engine == "zram") continue;
      PageRow r;
      r.engine = engine;
      r.batch = batch;
      r.pages = starts.size() * batch;
      progress(engine + ", batches of " + std::to_string(batch) + " pages");
      if (engine == "gpu-device") {
        if (!have_gpu) {
          r.note = "no GPU";
          rows.push_back(r);
          continue;
        }
        std::string error;
        auto trial = make_pages_device_trial(work, p, batch, starts, &error);
        double s = -1;
        if (trial) {
          r.compress_s = measure(c, [&] { return trial->compress(&s) ? s : -1.0; });
          r.decompress_s = measure(c, [&] { return trial->decompress(&s) ? s : -1.0; });
          if (r.compress_s < 0 || r.decompress_s < 0 || !trial->check(want_records, want_bytes)) error = trial->error();
        }
        if (!error.empty()) {
          std::fprintf(stderr, "tandem: pages bench: gpu-device, batches of %zu: %s\n", batch, error.c_str());
          failed = true;
          r.note = "failed";
        }
        rows.push_back(r);
        continue;
      }
      const bool gpu = engine == "gpu-host" || engine == "gpu-pageable";
      PageOptions o;
      o.backend = gpu ? Backend::gpu : Backend::cpu;
      o.threads = engine == "cpu-1" ? 1 : threads;
      if (gpu && !have_gpu) {
        r.note = "no GPU";
        rows.push_back(r);
        continue;
      }
      // gpu-host: the input, the slots and the output in pinned memory, as a
      // caller streaming pages through the GPU keeps them.
      std::uint8_t* in = const_cast<std::uint8_t*>(work.data());
      std::uint8_t* slots = slot_buf.data();
      std::uint8_t* out = out_buf.data();
      std::shared_ptr<std::uint8_t> pin_in, pin_slots, pin_out;
      if (engine == "gpu-host") {
        pin_in = pinned_bytes(work.size());
        pin_slots = pinned_bytes(work.size());
        pin_out = pinned_bytes(work.size());
        if (!pin_in || !pin_slots || !pin_out) {
          r.note = "no pinned memory";
          rows.push_back(r);
          continue;
        }
        std::memcpy(pin_in.get(), work.data(), work.size());
        in = pin_in.get();
        slots = pin_slots.get();
        out = pin_out.get();
      }
      bool ok = true;
      r.compress_s = measure(c, [&] {
        const double t0 = now();
        for (const std::size_t s : starts) {
          ok = compress_pages({in + s * p, batch, p}, {slots + s * p, batch * p},
                              std::span<PageRecord>(records).subspan(s, batch), o)
                   .ok() &&
               ok;
        }
        return now() - t0;
      });
      r.decompress_s = measure(c, [&] {
        const double t0 = now();
        for (const std::size_t s : starts) {
          ok = decompress_pages(std::span<const PageRecord>(records).subspan(s, batch),
                                ConstBuffer{slots + s * p, batch * p}, p, {out + s * p, batch * p},
                                std::span<Status>(statuses).subspan(s, batch), o)
                   .ok() &&
               ok;
        }
        return now() - t0;
      });
      // Every page of the run: the CPU backend's record and bytes, decoded back to the input.
      for (const std::size_t s : starts) {
        for (std::size_t i = s; i < s + batch && ok; ++i) {
          ok = std::memcmp(&records[i], &want_records[i], sizeof(PageRecord)) == 0 &&
               std::memcmp(slots + i * p, want_bytes.data() + i * p, records[i].length) == 0 &&
               std::memcmp(out + i * p, work.data() + i * p, p) == 0;
        }
      }
      if (!ok) {
        std::fprintf(stderr, "tandem: pages bench: %s, batches of %zu: a page differs from the CPU backend's\n",
                     engine.c_str(), batch);
        failed = true;
        r.note = "failed";
      }
      rows.push_back(r);
    }
  }

  // The table.
  const double gb = 1e9;
  const double ratio = hist.data_bytes ? static_cast<double>(pool.size()) / static_cast<double>(hist.data_bytes) : 0;
  std::printf("pages: %s, %s pages of %zu bytes (%.1f MB); %d threads; %s\n", name.c_str(),
              with_commas(pool_pages).c_str(), p, static_cast<double>(pool.size()) / 1e6, threads,
              have_gpu ? info.gpu_name.c_str() : "no GPU");
  std::printf("kinds (tandem): zero %s, same_fill %s, stored %s, lz4 %s; data %s bytes, ratio %.3f\n",
              with_commas(hist.kinds[0]).c_str(), with_commas(hist.kinds[1]).c_str(),
              with_commas(hist.kinds[2]).c_str(), with_commas(hist.kinds[3]).c_str(),
              with_commas(hist.data_bytes).c_str(), ratio);
  const double zram_ratio =
      zram_hist.data_bytes ? static_cast<double>(pool.size()) / static_cast<double>(zram_hist.data_bytes) : 0;
  if (zram_hist.data_bytes) {
    std::printf("kinds (zram-like, liblz4): zero %s, same_fill %s, stored %s, lz4 %s; data %s bytes, ratio %.3f\n",
                with_commas(zram_hist.kinds[0]).c_str(), with_commas(zram_hist.kinds[1]).c_str(),
                with_commas(zram_hist.kinds[2]).c_str(), with_commas(zram_hist.kinds[3]).c_str(),
                with_commas(zram_hist.data_bytes).c_str(), zram_ratio);
  }
  const PageRow* zram = nullptr;
  for (const PageRow& r : rows) {
    if (r.engine == "zram") zram = &r;
  }
  const auto rate = [&](const PageRow& r, double s) { return static_cast<double>(r.pages) * static_cast<double>(p) / s; };
  std::printf("\n| batch | engine | compress pages/s | compress GB/s | decompress pages/s | decompress GB/s | "
              "x zram (c / d) |\n|---|---|---|---|---|---|---|\n");
  for (const PageRow& r : rows) {
    const std::string batch = r.batch ? with_commas(r.batch) : "1 (page at a time)";
    if (!r.note.empty()) {
      std::printf("| %s | %s | %s | | | | |\n", batch.c_str(), r.engine.c_str(), r.note.c_str());
      continue;
    }
    const double cr = rate(r, r.compress_s), dr = rate(r, r.decompress_s);
    std::string vs;
    if (zram && zram != &r) {
      vs = fmt("%.1fx", cr / rate(*zram, zram->compress_s)) + " / " + fmt("%.1fx", dr / rate(*zram, zram->decompress_s));
    }
    std::printf("| %s | %s | %s | %.2f | %s | %.2f | %s |\n", batch.c_str(), r.engine.c_str(),
                with_commas(static_cast<std::uint64_t>(cr / static_cast<double>(p))).c_str(), cr / gb,
                with_commas(static_cast<std::uint64_t>(dr / static_cast<double>(p))).c_str(), dr / gb, vs.c_str());
  }

  if (!c.json_path.empty()) {
    using nlohmann::json;
    json j;
    j["input"] = name;
    j["page_size"] = p;
    j["pages"] = pool_pages;
    j["threads"] = threads;
    j["gpu"] = have_gpu ? info.gpu_name : "";
    j["version"] = version();
    j["kinds"] = {{"zero", hist.kinds[0]},
                  {"same_fill", hist.kinds[1]},
                  {"stored", hist.kinds[2]},
                  {"lz4", hist.kinds[3]},
                  {"data_bytes", hist.data_bytes},
                  {"ratio", ratio}};
    if (zram_hist.data_bytes) {
      j["zram_kinds"] = {{"zero", zram_hist.kinds[0]},          {"same_fill", zram_hist.kinds[1]},
                         {"stored", zram_hist.kinds[2]},        {"lz4", zram_hist.kinds[3]},
                         {"data_bytes", zram_hist.data_bytes}, {"ratio", zram_ratio}};
    }
    j["rows"] = json::array();
    for (const PageRow& r : rows) {
      json x = {{"engine", r.engine}, {"batch", r.batch}, {"pages_per_run", r.pages}};
      if (!r.note.empty()) {
        x["note"] = r.note;
      } else {
        const double cr = rate(r, r.compress_s), dr = rate(r, r.decompress_s);
        x["compress_bytes_per_s"] = cr;
        x["decompress_bytes_per_s"] = dr;
        x["compress_pages_per_s"] = cr / static_cast<double>(p);
        x["decompress_pages_per_s"] = dr / static_cast<double>(p);
      }
      j["rows"].push_back(x);
    }
    std::ofstream f(c.json_path);
    f << j.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "tandem: pages bench: cannot write %s\n", c.json_path.c_str());
      failed = true;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace tandem::bench
