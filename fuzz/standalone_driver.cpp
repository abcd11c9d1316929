// A main() for the fuzz targets when libFuzzer is not there (gcc builds, CI).
//
//   fuzz_x                      runs the target over inputs generated here:
//                               valid LZ4 frames (every option shape, legacy,
//                               skippable, concatenated), raw LZ4 blocks behind
//                               a 2-byte capacity, their byte flips, truncations
//                               and insertions, and random bytes. Deterministic:
//                               a fixed seed, a few thousand executions.
//   fuzz_x FILE|DIR...          runs the target on those files (a crash reproducer
//                               from libFuzzer, or a corpus directory).
//   fuzz_x --write-seeds DIR    writes the unmutated generated inputs to DIR, to
//                               seed a libFuzzer corpus; runs nothing.
//   --runs=N                    mutations per generated input (default 24).
//
// A property failure inside a target aborts; this driver then dies with it, so
// the CTest test fails, and a signal handler first prints which input it was.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tandem/tandem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using Bytes = std::vector<std::uint8_t>;
namespace fs = std::filesystem;

// splitmix64: small, fixed, the same everywhere.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(next() % n) : 0; }
};

Bytes sample_data(std::size_t n, int kind, Rng& rng) {
  static const char* const words[] = {"frame ", "block ", "tandem ", "lz4 ", "the ", "data\n", "GPU "};
  Bytes b;
  b.reserve(n);
  while (b.size() < n) {
    switch (kind) {
      case 0: b.push_back(static_cast<std::uint8_t>(rng.next())); break;  // noise
      case 1: b.push_back('A'); break;                                     // a run
      case 2: {                                                            // text
        for (const char* w = words[rng.below(7)]; *w && b.size() < n; ++w) b.push_back(static_cast<std::uint8_t>(*w));
        break;
      }
      default: {  // mixed runs, text and noise
        const std::size_t len = std::min(n - b.size(), 1 + rng.below(300));
        const int k = static_cast<int>(rng.below(3));
        const Bytes part = sample_data(len, k, rng);
        b.insert(b.end(), part.begin(), part.end());
      }
    }
  }
  return b;
}

void put32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::vector<Bytes> generate_seeds() {
  std::vector<Bytes> seeds;
  Rng rng{20240611};
  const std::size_t sizes[] = {0, 1, 17, 300, 5000, 70000};
  std::vector<Bytes> datas;
  for (std::size_t n : sizes)
    for (int kind = 0; kind < 4; ++kind)
      if (n < 70000 || kind >= 2) datas.push_back(sample_data(n, kind, rng));

  // Frames in every option shape.
  for (std::size_t i = 0; i < datas.size(); ++i) {
    for (int shape = 0; shape < 8; ++shape) {
      if ((i + static_cast<std::size_t>(shape)) % 2) continue;  // half of the pairs is plenty
      tandem::Lz4FrameOptions o;
      o.block_size = 64u << 10;
      o.linked_blocks = shape & 1;
      o.block_checksum = shape & 2;
      o.content_checksum = shape & 4;
      o.content_size = shape != 3;
      o.legacy = shape == 7;
      o.level = shape == 5 ? 9 : (shape == 6 ? -3 : 0);
      o.threads = 1;
      o.backend = tandem::Backend::cpu;
      Bytes frame;
      if (!tandem::lz4_frame_compress({datas[i].data(), datas[i].size()}, &frame, o).ok()) {
        std::fprintf(stderr, "standalone driver: the library could not compress a seed\n");
        std::exit(2);
      }
      seeds.push_back(std::move(frame));
    }
  }
  // Concatenations with skippable frames.
  {
    Bytes cat;
    put32(cat, 0x184D2A50u);
    put32(cat, 3);
    cat.insert(cat.end(), {'a', 'b', 'c'});
    cat.insert(cat.end(), seeds[1].begin(), seeds[1].end());
    cat.insert(cat.end(), seeds[2].begin(), seeds[2].end());
    put32(cat, 0x184D2A5Fu);
    put32(cat, 0);
    seeds.push_back(std::move(cat));
  }
  // Raw blocks behind a 2-byte output capacity (for the block target): the
  // exact size, one less, and a roomy one.
  for (std::size_t i = 0; i < datas.size(); i += 2) {
    const Bytes& d = datas[i];
    Bytes block(tandem::max_compressed_size(tandem::Codec::lz4, d.size()));
    tandem::ConstBuffer in{d.data(), d.size()};
    tandem::MutableBuffer out{block.data(), block.size()};
    tandem::ItemResult r;
    tandem::BatchOptions bo;
    bo.backend = tandem::Backend::cpu;
    bo.threads = 1;
    if (!tandem::compress_batch(tandem::Codec::lz4, {&in, 1}, {&out, 1}, {&r, 1}, bo).ok()) std::exit(2);
    block.resize(r.size);
    for (std::size_t cap : {d.size(), d.size() ? d.size() - 1 : 0, std::size_t{65535}}) {
      cap = std::min<std::size_t>(cap, 65535);
      Bytes s{static_cast<std::uint8_t>(cap), static_cast<std::uint8_t>(cap >> 8)};
      s.insert(s.end(), block.begin(), block.end());
      seeds.push_back(std::move(s));
    }
  }
  // Plain data (for the round-trip target, whose first 2 bytes are options).
  for (std::size_t i = 0; i < datas.size(); i += 3) {
    Bytes s{static_cast<std::uint8_t>(rng.next()), static_cast<std::uint8_t>(rng.next())};
    s.insert(s.end(), datas[i].begin(), datas[i].end());
    seeds.push_back(std::move(s));
  }
  return seeds;
}

Bytes mutate(const Bytes& seed, Rng& rng) {
  Bytes m = seed;
  switch (rng.below(6)) {
    case 0:  // truncation
      m.resize(rng.below(m.size() + 1));
      break;
    case 1:  // a few byte flips
    case 2:
      if (!m.empty())
        for (std::size_t k = 1 + rng.below(4); k > 0; --k) m[rng.below(m.size())] ^= static_cast<std::uint8_t>(1 + rng.below(255));
      break;
    case 3: {  // random bytes inserted
      const std::size_t at = rng.below(m.size() + 1);
      Bytes ins(1 + rng.below(16));
      for (auto& b : ins) b = static_cast<std::uint8_t>(rng.next());
      m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
      break;
    }
    case 4:  // a little-endian word overwritten with an interesting value
      if (m.size() >= 4) {
        static const std::uint32_t words[] = {0, 1, 0xFFFF, 0x10000, 0x10001, 0x400000, 0x400001,
                                              0x7FFFFFFF, 0x80000000u, 0x80010001u, 0xFFFFFFFFu};
        const std::uint32_t w = words[rng.below(std::size(words))];
        const std::size_t at = rng.below(m.size() - 3);
        for (int i = 0; i < 4; ++i) m[at + i] = static_cast<std::uint8_t>(w >> (8 * i));
      }
      break;
    default: {  // random bytes of the same length
      for (auto& b : m) b = static_cast<std::uint8_t>(rng.next());
    }
  }
  return m;
}

// The input now running, for the crash handler (async-signal-safe to print).
char g_current[512];
const std::uint8_t* g_current_data = nullptr;
std::size_t g_current_size = 0;

extern "C" void on_crash(int sig) {
  static const char head[] = "\nstandalone driver: crashed on ";
  static const char tail[] = "; the input is saved as ./standalone-crash.bin\n";
  (void)!::write(2, head, sizeof head - 1);
  (void)!::write(2, g_current, std::strlen(g_current));
  (void)!::write(2, tail, sizeof tail - 1);
  const int fd = ::open("standalone-crash.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    (void)!::write(fd, g_current_data, g_current_size);
    ::close(fd);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

#if defined(__SANITIZE_ADDRESS__)
#define TANDEM_DRIVER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TANDEM_DRIVER_ASAN 1
#endif
#endif

void install_crash_handler() {
  for (int sig : {SIGABRT, SIGILL, SIGFPE}) ::signal(sig, on_crash);
#ifndef TANDEM_DRIVER_ASAN
  // Under ASan its own handler reports these, with a stack.
  for (int sig : {SIGSEGV, SIGBUS}) ::signal(sig, on_crash);
#endif
}

int run_one(const Bytes& input, const std::string& name) {
  std::snprintf(g_current, sizeof g_current, "%s (%zu bytes)", name.c_str(), input.size());
  // A fresh exact-size copy, so that reads past the end are caught under ASan.
  std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[input.size() ? input.size() : 1]);
  if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
  g_current_data = copy.get();
  g_current_size = input.size();
  return LLVMFuzzerTestOneInput(copy.get(), input.size());
}

Bytes read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  install_crash_handler();
  std::size_t runs = 24;
  std::vector<std::string> paths;
  std::string seed_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--runs=", 0) == 0) runs = std::strtoul(a.c_str() + 7, nullptr, 10);
    else if (a == "--write-seeds" && i + 1 < argc) seed_dir = argv[++i];
    else if (a.rfind("-", 0) == 0) {
      std::fprintf(stderr, "usage: %s [--runs=N] [--write-seeds DIR] [FILE|DIR...]\n", argv[0]);
      return 2;
    } else {
      paths.push_back(a);
    }
  }

  if (!seed_dir.empty()) {
    fs::create_directories(seed_dir);
    const std::vector<Bytes> seeds = generate_seeds();
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      std::ofstream f(fs::path(seed_dir) / ("seed-" + std::to_string(i)), std::ios::binary);
      f.write(reinterpret_cast<const char*>(seeds[i].data()), static_cast<std::streamsize>(seeds[i].size()));
    }
    std::printf("wrote %zu seeds to %s\n", seeds.size(), seed_dir.c_str());
    return 0;
  }

  std::size_t executed = 0;
  if (!paths.empty()) {
    for (const auto& p : paths) {
      if (fs::is_directory(p)) {
        for (const auto& e : fs::recursive_directory_iterator(p))
          if (e.is_regular_file()) run_one(read_all(e.path()), e.path().string()), ++executed;
      } else {
        run_one(read_all(p), p), ++executed;
      }
    }
  } else {
    const std::vector<Bytes> seeds = generate_seeds();
    Rng rng{7};
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      run_one(seeds[i], "seed " + std::to_string(i));
      ++executed;
      for (std::size_t k = 0; k < runs; ++k) {
        run_one(mutate(seeds[i], rng), "seed " + std::to_string(i) + " mutation " + std::to_string(k));
        ++executed;
      }
    }
    // Pure noise of assorted lengths.
    for (std::size_t k = 0; k < 200; ++k) {
      Bytes noise(rng.below(k < 100 ? 64 : 4096));
      for (auto& b : noise) b = static_cast<std::uint8_t>(rng.next());
      run_one(noise, "noise " + std::to_string(k));
      ++executed;
    }
  }
  std::printf("%s: %zu inputs ran without a failure\n", argv[0], executed);
  return 0;
}
