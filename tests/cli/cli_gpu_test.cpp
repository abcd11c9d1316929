// The `tandem` command with --backend gpu: a request the GPU cannot serve (no
// device, or an HC level) fails in one line with exit status 1 and leaves no
// file; with a device, files round-trip through the GPU and `lz4` reads them;
// --version names the device.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

namespace fs = std::filesystem;
using tandem::test::Bytes;
using tandem::test::sh_quote;
using tandem::test::TempDir;

struct Result {
  int code = -1;
  std::string out, err;
};

class CliGpu : public ::testing::Test {
 protected:
  // Runs `tandem ARGS` in the test's directory.
  Result tandem(const std::string& args) {
    const fs::path err = logs.path() / "stderr";
    Result r;
    r.code = tandem::test::run("cd " + sh_quote(dir.path().string()) + " && " + sh_quote(tandem::test::cli_path()) +
                                   " " + args + " 2>" + sh_quote(err.string()),
                               &r.out);
    std::ifstream f(err);
    r.err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return r;
  }
  std::size_t files() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()));
  }

  TempDir dir, logs;
};

bool have_gpu() { return tandem::backend_info().gpu_count > 0; }

const Bytes& sample() {
  static const Bytes data = tandem::test::mixed_bytes((3u << 20) + 99, 77);
  return data;
}

TEST_F(CliGpu, RequestsTheGpuCannotServeFailInOneLine) {
  tandem::test::write_file(dir.path() / "data", sample());
  for (const char* args : {"-9 --backend gpu data", "--backend gpu -12 -c data"}) {
    SCOPED_TRACE(args);
    const Result r = tandem(args);
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("tandem: --backend gpu: ", 0), 0u) << r.err;
    // Without a device that is the reason; with one, the HC level is.
    EXPECT_NE(r.err.find(have_gpu() ? "HC" : tandem::status_message(tandem::StatusCode::no_device)),
              std::string::npos)
        << r.err;
    EXPECT_EQ(files(), 1u) << "nothing written";
  }
}

TEST_F(CliGpu, FilesRoundTripOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped";
  tandem::test::write_file(dir.path() / "data", sample());
  for (const char* options : {"-B64K -BX", "-B4M --no-frame-crc", "--fast=4 -B256K"}) {
    SCOPED_TRACE(options);
    ASSERT_EQ(tandem(std::string("-f --backend gpu ") + options + " data").code, 0);
    if (tandem::test::have_tool("lz4")) {
      EXPECT_EQ(tandem::test::run("lz4 -q -t " + sh_quote((dir.path() / "data.lz4").string())), 0);
    }
    ASSERT_EQ(tandem("-d -f --backend gpu -o back data.lz4").code, 0);
    EXPECT_TRUE(tandem::test::read_file(dir.path() / "back") == sample());
  }
}

TEST_F(CliGpu, VersionNamesTheDevice) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped";
  const Result r = tandem("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find(tandem::backend_info().gpu_name), std::string::npos) << r.out;
}

}  // namespace
