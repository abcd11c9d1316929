#include "support/test_support.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>
#include <zlib.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <stdexcept>

namespace tandem::test {

namespace fs = std::filesystem;

Bytes random_bytes(std::size_t n, std::uint64_t seed) {
  Bytes b(n);
  std::mt19937_64 rng(seed);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const std::uint64_t v = rng();
    for (int k = 0; k < 8; ++k) b[i + k] = static_cast<std::uint8_t>(v >> (8 * k));
  }
  for (; i < n; ++i) b[i] = static_cast<std::uint8_t>(rng());
  return b;
}

Bytes constant_bytes(std::size_t n, std::uint8_t value) { return Bytes(n, value); }

Bytes text_like_bytes(std::size_t n, std::uint64_t seed) {
  static const char* const words[] = {"the ",   "tandem ", "compresses ", "data ",  "on ",
                                      "GPU ",   "and ",    "CPU ",        "blocks ", "frame ",
                                      "of ",    "a ",      "stream\n",    "fast ",   "lz4 ",
                                      "bytes ", "page ",   "zstd, ",      "deflate. "};
  Bytes b;
  b.reserve(n);
  std::mt19937_64 rng(seed);
  while (b.size() < n) {
    const char* w = words[rng() % (sizeof(words) / sizeof(words[0]))];
    for (const char* p = w; *p && b.size() < n; ++p) b.push_back(static_cast<std::uint8_t>(*p));
  }
  return b;
}

Bytes mixed_bytes(std::size_t n, std::uint64_t seed) {
  Bytes b;
  b.reserve(n);
  std::mt19937_64 rng(seed);
  while (b.size() < n) {
    const std::size_t len = std::min<std::size_t>(n - b.size(), 1 + rng() % 5000);
    Bytes part;
    switch (rng() % 3) {
      case 0: part = constant_bytes(len, static_cast<std::uint8_t>(rng())); break;
      case 1: part = text_like_bytes(len, rng()); break;
      default: part = random_bytes(len, rng()); break;
    }
    b.insert(b.end(), part.begin(), part.end());
  }
  return b;
}

// Fixed-size records (3 to 40 bytes), each a copy of the one before with
// a byte or two changed: LZ4 encodes them as chains of matches, each copying
// the output of the match before it.
Bytes record_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::size_t size = 3 + rng() % 38;
  Bytes b = random_bytes(std::min(n, size), rng());
  b.reserve(n);
  while (b.size() < n) {
    Bytes next(b.end() - static_cast<std::ptrdiff_t>(size), b.end());
    for (std::uint64_t k = 1 + rng() % 2; k > 0; --k) next[rng() % size] = static_cast<std::uint8_t>(rng());
    b.insert(b.end(), next.begin(), next.begin() + static_cast<std::ptrdiff_t>(std::min(size, n - b.size())));
  }
  return b;
}

std::uint64_t hash64(const void* data, std::size_t n) { return XXH3_64bits(data, n); }

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "tandem-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Bytes zlib_deflate(const Bytes& in, int window_bits, int level, int strategy) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, strategy) != Z_OK) throw std::runtime_error("deflateInit2");
  Bytes out(deflateBound(&z, static_cast<uLong>(in.size())) + 64);
  z.next_in = const_cast<Bytes::value_type*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const std::size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(n);
  return out;
}

Bytes read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& p, const Bytes& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

int run(const std::string& command, std::string* out) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buf;
  std::size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    if (out) out->append(buf.data(), got);
  }
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

bool have_tool(const std::string& name) {
  return run("command -v " + name + " >/dev/null 2>&1") == 0;
}

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

std::string cli_path() { return TANDEM_CLI_PATH; }

std::vector<std::string> silesia_names() {
  return {"dickens", "mr", "nci", "ooffice", "osdb", "reymont", "xml"};
}

fs::path silesia_dir() {
  static std::once_flag once;
  static fs::path dir;
  static std::unique_ptr<TempDir> unzipped;
  std::call_once(once, [] {
    if (const char* env = std::getenv("TANDEM_CORPUS"); env && fs::exists(fs::path(env) / "dickens")) {
      dir = env;
      return;
    }
    const fs::path zips = fs::path(TANDEM_SOURCE_DIR) / ".." / "shared" / "corpus" / "silesia";
    if (!fs::exists(zips / "dickens.zip") || !have_tool("unzip")) return;
    unzipped = std::make_unique<TempDir>();
    for (const auto& name : silesia_names()) {
      const std::string cmd = "unzip -q -o " + sh_quote((zips / (name + ".zip")).string()) + " -d " +
                              sh_quote(unzipped->path().string());
      if (run(cmd) != 0) return;
    }
    dir = unzipped->path();
  });
  return dir;
}

void for_each_silesia_file_in_pages(std::size_t page, const std::function<void(const Bytes&)>& f) {
  const fs::path dir = silesia_dir();
  if (dir.empty()) return;
  for (const std::string& name : silesia_names()) {
    SCOPED_TRACE(name);
    Bytes data = read_file(dir / name);
    data.resize(data.size() / page * page);
    f(data);
  }
}

::testing::AssertionResult StatusIs(const char* status_expr, const char* code_expr,
                                    const Status& status, StatusCode want) {
  if (status.code == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << status_expr << " is " << status_name(status.code) << " ("
         << (status.reason ? status.reason : "no reason") << "), expected " << code_expr << " ("
         << status_name(want) << ")";
}

std::uint64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}


tandem::Status StingySource::ensure(std::size_t n, std::size_t* available) {
  const std::size_t k = std::min(n, in_.size() - pos_);
  window_ = std::make_unique<std::uint8_t[]>(std::max<std::size_t>(k, 1));
  if (k) std::memcpy(window_.get(), in_.data() + pos_, k);
  size_ = k;
  off_ = 0;
  *available = k;
  return {};
}

void StingySource::consume(std::size_t n) {
  if (off_ + n > size_) violations++;
  n = std::min(n, size_ - off_);
  off_ += n;
  pos_ += n;
}

}  // namespace tandem::test

