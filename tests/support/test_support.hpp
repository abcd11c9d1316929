// Helpers shared by the tests: seeded data generators, temp dirs, running
// commands, and the Silesia corpus when it is present.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tandem/tandem.hpp"

namespace tandem::test {

using Bytes = std::vector<std::uint8_t>;

Bytes random_bytes(std::size_t n, std::uint64_t seed);        // incompressible
Bytes constant_bytes(std::size_t n, std::uint8_t value);
Bytes text_like_bytes(std::size_t n, std::uint64_t seed);     // compressible words
Bytes mixed_bytes(std::size_t n, std::uint64_t seed);         // runs, text and noise
Bytes record_bytes(std::size_t n, std::uint64_t seed);        // records, each the last with a byte or two changed

std::uint64_t hash64(const void* data, std::size_t n);

// A fresh directory removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

Bytes read_file(const std::filesystem::path& p);

// zlib's deflate of `in` (window_bits as deflateInit2 takes them: 31 for
// gzip, 15 for zlib, -15 for raw deflate) at `level` with `strategy`
// (0: Z_DEFAULT_STRATEGY); throws std::runtime_error when zlib fails.
Bytes zlib_deflate(const Bytes& in, int window_bits, int level = 6, int strategy = 0);
void write_file(const std::filesystem::path& p, const Bytes& data);

// Runs `command` through /bin/sh; returns its exit status (or -1), stdout in *out.
int run(const std::string& command, std::string* out = nullptr);
bool have_tool(const std::string& name);
// Quotes a path for /bin/sh.
std::string sh_quote(const std::string& s);
// The `tandem` command built with the tests.
std::string cli_path();

// Directory with the unzipped Silesia files, or empty when the corpus is not
// available (the test should then GTEST_SKIP with a message). Looks at
// $TANDEM_CORPUS (unzipped files) and at ../shared/corpus beside the project
// (zips, unzipped once per test process into a temp dir).
std::filesystem::path silesia_dir();
std::vector<std::string> silesia_names();
// Calls f with each Silesia file cut to a whole number of `page`-byte pages,
// under a SCOPED_TRACE of the file's name; calls nothing where the corpus is
// not available.
void for_each_silesia_file_in_pages(std::size_t page, const std::function<void(const Bytes&)>& f);

// ---- status assertions (added for the cpu/interop/slow tests) ----
// Predicate-format helper: EXPECT_PRED_FORMAT2(StatusIs, status, StatusCode::bad_data)
// prints both codes by name and the status's reason on failure.
::testing::AssertionResult StatusIs(const char* status_expr, const char* code_expr,
                                    const Status& status, StatusCode want);

// Peak resident set size of this process in bytes (VmHWM), and a reset of that
// peak (through /proc/self/clear_refs); returns false when it cannot reset.
std::uint64_t peak_rss_bytes();
bool reset_peak_rss();


// A Source that hands out exactly the bytes ensure() asks for, each time in a
// fresh allocation of exactly that size, so that a decoder reading past what
// it ensured, or through a pointer from before the last ensure(), trips ASan.
// consume() beyond what was made available counts in `violations`.
class StingySource final : public tandem::Source {
 public:
  explicit StingySource(const Bytes& in, std::int64_t hint = -1) : in_(in), hint_(hint) {}
  tandem::Status ensure(std::size_t n, std::size_t* available) override;
  const std::uint8_t* data() const override { return window_.get() + off_; }
  void consume(std::size_t n) override;
  std::uint64_t position() const override { return pos_; }
  std::int64_t size_hint() const override { return hint_; }
  int violations = 0;

 private:
  const Bytes& in_;
  std::int64_t hint_;
  std::unique_ptr<std::uint8_t[]> window_;
  std::size_t size_ = 0, off_ = 0, pos_ = 0;
};

}  // namespace tandem::test

// EXPECT_STATUS(expr, StatusCode::truncated), ASSERT_STATUS(...): exact status codes.
#define EXPECT_STATUS(expr, code) EXPECT_PRED_FORMAT2(::tandem::test::StatusIs, expr, code)
#define ASSERT_STATUS(expr, code) ASSERT_PRED_FORMAT2(::tandem::test::StatusIs, expr, code)
