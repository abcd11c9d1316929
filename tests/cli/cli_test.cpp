// Tests of the `tandem` command, run as a user would run it: through /bin/sh
// in a fresh directory, checking exit codes, the files left behind, the bytes
// they hold and what the `lz4` tool makes of them.
//
// Every test owns two temporary directories: `dir`, where the command runs
// and whose listing the tests check for stray temporary files, and `logs`,
// where stderr is captured.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "support/cli_support.hpp"
#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

namespace fs = std::filesystem;
using tandem::test::Bytes;
using tandem::test::TempDir;

using Result = tandem::test::CliResult;

std::size_t count_lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

// Frame descriptor bytes of an LZ4 frame (spec: lz4_Frame_format.md).
constexpr std::uint8_t kFlgBlockIndependence = 1u << 5;
constexpr std::uint8_t kFlgBlockChecksum = 1u << 4;
constexpr std::uint8_t kFlgContentSize = 1u << 3;
constexpr std::uint8_t kFlgContentChecksum = 1u << 2;

bool has_frame_magic(const Bytes& b) {
  return b.size() >= 7 && b[0] == 0x04 && b[1] == 0x22 && b[2] == 0x4D && b[3] == 0x18;
}
bool has_legacy_magic(const Bytes& b) {
  return b.size() >= 4 && b[0] == 0x02 && b[1] == 0x21 && b[2] == 0x4C && b[3] == 0x18;
}
int block_size_id(const Bytes& b) { return (b[5] >> 4) & 7; }

class Cli : public tandem::test::CliTest {};

const Bytes& sample() {
  static const Bytes data = tandem::test::mixed_bytes(5u << 20, 42);  // more than one 4 MiB block
  return data;
}

// ------------------------------------------------------------ round trips ----

TEST_F(Cli, RoundTripThroughFilesKeepsTheInput) {
  write("data", sample());
  const Result c = tandem("data");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_TRUE(exists("data")) << "inputs are kept by default";
  const Bytes frame = read("data.lz4");
  EXPECT_TRUE(has_frame_magic(frame));
  EXPECT_LT(frame.size(), sample().size());

  fs::rename(path("data"), path("original"));
  const Result d = tandem("-d data.lz4");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(read("data"), sample());
  EXPECT_TRUE(exists("data.lz4"));
  EXPECT_EQ(listing(), (std::set<std::string>{"data", "data.lz4", "original"}));
  EXPECT_EQ(c.err + d.err, "") << "nothing on stderr without -v";
}

TEST_F(Cli, RoundTripThroughStdinAndStdout) {
  write("data", sample());
  ASSERT_EQ(tandem("< data > packed").code, 0);
  EXPECT_TRUE(has_frame_magic(read("packed")));
  ASSERT_EQ(tandem("-d < packed > unpacked").code, 0);
  EXPECT_EQ(read("unpacked"), sample());
  // '-' names stdin explicitly; stdin's output is stdout.
  ASSERT_EQ(tandem("compress - < data > packed2").code, 0);
  ASSERT_EQ(tandem("decompress - < packed2 > unpacked2").code, 0);
  EXPECT_EQ(read("unpacked2"), sample());
  EXPECT_EQ(listing(), (std::set<std::string>{"data", "packed", "unpacked", "packed2", "unpacked2"}));
}

TEST_F(Cli, StdinToAFileWithDashO) {
  write("data", sample());
  ASSERT_EQ(tandem("-o out.lz4 < data").code, 0);
  ASSERT_EQ(tandem("-d -o back < out.lz4").code, 0);
  EXPECT_EQ(read("back"), sample());
}

TEST_F(Cli, EmptyAndTinyInputs) {
  for (const std::size_t n : {0u, 1u, 17u}) {
    const Bytes data = tandem::test::random_bytes(n, n);
    write("in", data);
    ASSERT_EQ(tandem("-f in").code, 0) << n;
    fs::remove(path("in"));
    ASSERT_EQ(tandem("-d in.lz4").code, 0) << n;
    EXPECT_EQ(read("in"), data) << n;
    fs::remove(path("in.lz4"));
  }
}

TEST_F(Cli, SubcommandsAndShortcutsAgree) {
  write("data", sample());
  ASSERT_EQ(tandem("compress -c data > a.lz4").code, 0);
  ASSERT_EQ(tandem("-c data > b.lz4").code, 0);
  ASSERT_EQ(tandem("-z -c data > c.lz4").code, 0);
  EXPECT_EQ(read("a.lz4"), read("b.lz4"));
  EXPECT_EQ(read("a.lz4"), read("c.lz4"));
  ASSERT_EQ(tandem("decompress -c a.lz4 > a").code, 0);
  ASSERT_EQ(tandem("-d -c b.lz4 > b").code, 0);
  ASSERT_EQ(tandem("-dc c.lz4 > c").code, 0);
  EXPECT_EQ(read("a"), sample());
  EXPECT_EQ(read("b"), sample());
  EXPECT_EQ(read("c"), sample());
}

TEST_F(Cli, SeveralInputs) {
  const Bytes one = tandem::test::text_like_bytes(100000, 1);
  const Bytes two = tandem::test::random_bytes(70000, 2);
  write("one", one);
  write("two", two);
  ASSERT_EQ(tandem("one two").code, 0);
  EXPECT_TRUE(exists("one.lz4"));
  EXPECT_TRUE(exists("two.lz4"));
  // With -c the frames are concatenated, and decompress to the concatenation.
  ASSERT_EQ(tandem("-c one two > both.lz4").code, 0);
  ASSERT_EQ(tandem("-dc both.lz4 > both").code, 0);
  Bytes expected = one;
  expected.insert(expected.end(), two.begin(), two.end());
  EXPECT_EQ(read("both"), expected);
}

TEST_F(Cli, DashCWritesStdoutAndNoFile) {
  write("data", sample());
  ASSERT_EQ(tandem("-c data > out").code, 0);
  EXPECT_FALSE(exists("data.lz4"));
  EXPECT_TRUE(has_frame_magic(read("out")));
  const Result d = tandem("-dc out");
  ASSERT_EQ(d.code, 0);
  EXPECT_EQ(Bytes(d.out.begin(), d.out.end()), sample());
}

TEST_F(Cli, DashONamesTheOutput) {
  write("data", sample());
  ASSERT_EQ(tandem("-o custom.bin data").code, 0);
  EXPECT_FALSE(exists("data.lz4"));
  // -o also lifts the .lz4 suffix rule of decompression.
  ASSERT_EQ(tandem("-d -o restored custom.bin").code, 0);
  EXPECT_EQ(read("restored"), sample());
  const Result r = tandem("-o x one two");
  EXPECT_EQ(r.code, 2) << "-o with several inputs is a usage error";
  EXPECT_FALSE(exists("x"));
}

TEST_F(Cli, FileNamesAfterDoubleDash) {
  write("-9", sample());
  ASSERT_EQ(tandem("-- -9").code, 0);
  EXPECT_TRUE(exists("-9.lz4"));
  EXPECT_FALSE(exists("-9.lz4.lz4"));
}

// --------------------------------------------------------- safe outputs ----

TEST_F(Cli, RefusesToOverwriteWithoutForce) {
  write("data", sample());
  const Bytes old = {'o', 'l', 'd'};
  write("data.lz4", old);
  const Result r = tandem("data");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(read("data.lz4"), old);
  EXPECT_NE(r.err.find("tandem: data.lz4: already exists"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u);
  EXPECT_EQ(listing(), (std::set<std::string>{"data", "data.lz4"}));

  const Result f = tandem("-f data");
  ASSERT_EQ(f.code, 0) << f.err;
  ASSERT_EQ(tandem("-dc data.lz4 > back").code, 0);
  EXPECT_EQ(read("back"), sample());
}

TEST_F(Cli, DecompressRefusesToOverwriteWithoutForce) {
  write("data", sample());
  ASSERT_EQ(tandem("data").code, 0);
  const Bytes old = {'k', 'e', 'e', 'p'};
  write("data", old);
  EXPECT_EQ(tandem("-d data.lz4").code, 1);
  EXPECT_EQ(read("data"), old);
  EXPECT_EQ(tandem("-d -f data.lz4").code, 0);
  EXPECT_EQ(read("data"), sample());
}

TEST_F(Cli, OneFailureDoesNotStopTheOtherFiles) {
  write("a", sample());
  write("b", sample());
  const Result r = tandem("a missing b");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(exists("a.lz4"));
  EXPECT_TRUE(exists("b.lz4"));
  EXPECT_NE(r.err.find("tandem: missing: "), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u);
}

TEST_F(Cli, CopiesModeAndModificationTime) {
  write("data", sample());
  fs::permissions(path("data"), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const auto when = fs::file_time_type::clock::now() - std::chrono::hours(24 * 100);
  fs::last_write_time(path("data"), when);
  ASSERT_EQ(tandem("data").code, 0);
  EXPECT_EQ(fs::status(path("data.lz4")).permissions(), fs::status(path("data")).permissions());
  EXPECT_EQ(fs::last_write_time(path("data.lz4")), when);
  fs::rename(path("data"), path("original"));
  ASSERT_EQ(tandem("-d data.lz4").code, 0);
  EXPECT_EQ(fs::status(path("data")).permissions(), fs::status(path("original")).permissions());
  EXPECT_EQ(fs::last_write_time(path("data")), when);
}

TEST_F(Cli, RemovesTheInputOnlyAfterSuccess) {
  write("data", sample());
  const Result c = tandem("--rm data");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_FALSE(exists("data"));
  EXPECT_EQ(listing(), (std::set<std::string>{"data.lz4"}));
  const Result d = tandem("-d --rm data.lz4");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_FALSE(exists("data.lz4"));
  EXPECT_EQ(read("data"), sample());
  EXPECT_EQ(listing(), (std::set<std::string>{"data"}));
}

TEST_F(Cli, RmKeepsTheInputWhenTheOutputExists) {
  write("data", sample());
  write("data.lz4", {'x'});
  EXPECT_EQ(tandem("--rm data").code, 1);
  EXPECT_EQ(read("data"), sample());
  EXPECT_EQ(read("data.lz4"), Bytes{'x'});
}

TEST_F(Cli, RmKeepsTheInputWhenDecompressionFails) {
  write("data", sample());
  ASSERT_EQ(tandem("data").code, 0);
  Bytes frame = read("data.lz4");
  frame[frame.size() / 2] ^= 0x5A;
  write("bad.lz4", frame);
  EXPECT_EQ(tandem("-d --rm bad.lz4").code, 1);
  EXPECT_TRUE(exists("bad.lz4"));
  EXPECT_FALSE(exists("bad"));
}

TEST_F(Cli, RmAndKeepTogetherAreAUsageError) {
  write("data", sample());
  EXPECT_EQ(tandem("--rm -k data").code, 2);
  EXPECT_TRUE(exists("data"));
  EXPECT_FALSE(exists("data.lz4"));
}

TEST_F(Cli, RefusesToReplaceTheInputItself) {
  write("data", sample());
  ASSERT_EQ(tandem("data").code, 0);
  const Bytes frame = read("data.lz4");
  const Result r = tandem("-d -f -o data.lz4 data.lz4");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(read("data.lz4"), frame);
  EXPECT_EQ(listing(), (std::set<std::string>{"data", "data.lz4"}));
}

// ------------------------------------------------- errors and exit codes ----

TEST_F(Cli, MissingInputExitsOne) {
  const Result r = tandem("nothing-here");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("tandem: nothing-here: ", 0), 0u) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u);
  EXPECT_TRUE(listing().empty());
}

TEST_F(Cli, DirectoryInputExitsOne) {
  fs::create_directory(path("sub"));
  EXPECT_EQ(tandem("sub").code, 1);
  EXPECT_EQ(listing(), (std::set<std::string>{"sub"}));
}

TEST_F(Cli, UsageErrorsExitTwo) {
  write("data", sample());
  for (const char* args : {"--bogus data", "-13 data", "--fast=0 data", "--fast=x data", "-B3 data", "-B100 data",
                           "-BQ data", "--backend tpu data", "-T -1 data", "-c -o x data", "bench",
                           "bench --chunk 3K data", "bench --codec zip data"}) {
    const Result r = tandem(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("tandem: "), std::string::npos) << args;
  }
  EXPECT_EQ(listing(), (std::set<std::string>{"data"}));
}

TEST_F(Cli, CorruptInputExitsOneAndLeavesNothing) {
  write("data", sample());
  ASSERT_EQ(tandem("data").code, 0);
  fs::remove(path("data"));
  Bytes frame = read("data.lz4");
  frame[frame.size() / 2] ^= 0xFF;
  write("flipped.lz4", frame);
  write("truncated.lz4", Bytes(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(frame.size() / 3)));
  write("garbage.lz4", tandem::test::random_bytes(10000, 7));
  for (const char* name : {"flipped", "truncated", "garbage"}) {
    const Result r = tandem(std::string("-d ") + name + ".lz4");
    EXPECT_EQ(r.code, 1) << name;
    EXPECT_EQ(r.err.rfind(std::string("tandem: ") + name + ".lz4: ", 0), 0u) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_FALSE(exists(name)) << name;
  }
  EXPECT_EQ(listing(), (std::set<std::string>{"data.lz4", "flipped.lz4", "truncated.lz4", "garbage.lz4"}))
      << "no temporary file may be left behind";
}

TEST_F(Cli, UnknownSuffixOnDecompress) {
  write("data.bin", sample());
  const Result r = tandem("-d data.bin");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("tandem: data.bin: unknown suffix"), std::string::npos) << r.err;
  EXPECT_EQ(listing(), (std::set<std::string>{"data.bin"}));
}

TEST_F(Cli, GpuBackendFailsCleanlyWithoutOne) {
  write("data", sample());
  tandem::Backend resolved = tandem::Backend::cpu;
  const tandem::Status can = tandem::resolve_backend(tandem::Codec::lz4, tandem::Backend::gpu, &resolved);
  // -f: with a GPU, the decompression replaces the data it came from.
  for (const char* args : {"--backend gpu data", "-d -f --backend gpu data.lz4"}) {
    if (std::string(args).starts_with("-d")) ASSERT_EQ(tandem("-f data").code, 0);
    const Result r = tandem(args);
    if (can) {
      EXPECT_EQ(r.code, 0) << r.err;
      continue;
    }
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("tandem: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(can.to_string()), std::string::npos) << "the library's reason is reported: " << r.err;
  }
  if (!can) EXPECT_EQ(listing(), (std::set<std::string>{"data", "data.lz4"}));
}

TEST_F(Cli, CpuAndAutoBackendsWork) {
  write("data", sample());
  for (const char* backend : {"cpu", "auto"}) {
    ASSERT_EQ(tandem(std::string("-c --backend ") + backend + " data > out.lz4").code, 0);
    ASSERT_EQ(tandem(std::string("-dc --backend ") + backend + " out.lz4 > back").code, 0);
    EXPECT_EQ(read("back"), sample()) << backend;
  }
}

// ------------------------------------- levels, blocks and the lz4 tool ----

TEST_F(Cli, LevelsAndBlockOptionsRoundTripThroughLz4) {
  if (!tandem::test::have_tool("lz4")) GTEST_SKIP() << "the lz4 tool is not installed";
  write("data", sample());
  const char* const cases[] = {"-1", "-9", "-12", "--fast=5", "--level 3", "--level -2", "-T 1", "-T 0",
                               "-B4", "-B5", "-B6", "-B7", "-B64K", "-B1M", "-BD", "-BX", "-B4 -BD -BX",
                               "-B5DX", "--no-frame-crc", "--no-content-size", "-l", "-9 -BD -B4"};
  for (const char* opts : cases) {
    SCOPED_TRACE(opts);
    ASSERT_EQ(tandem(std::string("-f ") + opts + " -o out.lz4 data").code, 0);
    ASSERT_EQ(shell("lz4 -d -c out.lz4 > by-lz4"), 0);
    EXPECT_EQ(read("by-lz4"), sample());
    ASSERT_EQ(tandem("-dc out.lz4 > by-tandem").code, 0);
    EXPECT_EQ(read("by-tandem"), sample());
  }
}

TEST_F(Cli, OptionsReachTheFrameHeader) {
  write("data", sample());
  auto header_of = [&](const std::string& opts) {
    EXPECT_EQ(tandem("-c " + opts + " data > out.lz4").code, 0) << opts;
    const Bytes b = read("out.lz4");
    EXPECT_TRUE(has_frame_magic(b)) << opts;
    return b;
  };
  const Bytes plain = header_of("");
  EXPECT_EQ(block_size_id(plain), 7);
  EXPECT_TRUE(plain[4] & kFlgBlockIndependence);
  EXPECT_FALSE(plain[4] & kFlgBlockChecksum);
  EXPECT_TRUE(plain[4] & kFlgContentChecksum);
  EXPECT_TRUE(plain[4] & kFlgContentSize) << "a regular file's size is stored";
  for (int id = 4; id <= 7; ++id) EXPECT_EQ(block_size_id(header_of("-B" + std::to_string(id))), id);
  EXPECT_EQ(block_size_id(header_of("-B256K")), 5);
  EXPECT_FALSE(header_of("-BD")[4] & kFlgBlockIndependence);
  EXPECT_TRUE(header_of("-BX")[4] & kFlgBlockChecksum);
  const Bytes combined = header_of("-B4DX");
  EXPECT_EQ(block_size_id(combined), 4);
  EXPECT_FALSE(combined[4] & kFlgBlockIndependence);
  EXPECT_TRUE(combined[4] & kFlgBlockChecksum);
  EXPECT_FALSE(header_of("--no-frame-crc")[4] & kFlgContentChecksum);
  EXPECT_FALSE(header_of("--no-content-size")[4] & kFlgContentSize);
  ASSERT_EQ(tandem("-c -l data > legacy.lz4").code, 0);
  EXPECT_TRUE(has_legacy_magic(read("legacy.lz4")));
}

TEST_F(Cli, HigherLevelsCompressSmaller) {
  write("text", tandem::test::text_like_bytes(2u << 20, 3));
  ASSERT_EQ(tandem("-c -1 text > l1.lz4").code, 0);
  ASSERT_EQ(tandem("-c -12 text > l12.lz4").code, 0);
  ASSERT_EQ(tandem("-c -1 -12 -1 text > last.lz4").code, 0);
  EXPECT_LT(read("l12.lz4").size(), read("l1.lz4").size());
  EXPECT_EQ(read("last.lz4"), read("l1.lz4")) << "the last level given wins";
}

TEST_F(Cli, DecompressesWhatLz4Writes) {
  if (!tandem::test::have_tool("lz4")) GTEST_SKIP() << "the lz4 tool is not installed";
  write("data", sample());
  const char* const cases[] = {"", "-9", "-BD", "-BX -B4", "--content-size", "-l", "--no-frame-crc"};
  for (const char* opts : cases) {
    SCOPED_TRACE(opts);
    ASSERT_EQ(shell(std::string("lz4 -q -f ") + opts + " data from-lz4.lz4"), 0);
    const Result r = tandem("-d -f -o back from-lz4.lz4");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(read("back"), sample());
  }
  // Concatenated frames, as `cat a.lz4 b.lz4` makes them.
  ASSERT_EQ(shell("lz4 -q -c data > twice.lz4 && lz4 -q -c -BD data >> twice.lz4"), 0);
  ASSERT_EQ(tandem("-d twice.lz4").code, 0);
  Bytes expected = sample();
  expected.insert(expected.end(), sample().begin(), sample().end());
  EXPECT_EQ(read("twice"), expected);
}

// ---------------------------------------------- terminals and progress ----

// Runs `command` with stdin, stdout and stderr on a pseudo-terminal (script(1)).
int run_on_terminal(const std::string& dir, const std::string& command, std::string* output) {
  const std::string cmd = "cd " + tandem::test::sh_quote(dir) + " && script -qec " +
                          tandem::test::sh_quote(command) + " /dev/null < /dev/null";
  return tandem::test::run(cmd, output);
}

TEST_F(Cli, RefusesToWriteCompressedDataToATerminal) {
  if (!tandem::test::have_tool("script")) GTEST_SKIP() << "script(1) is not installed";
  write("data", tandem::test::text_like_bytes(1000, 5));
  std::string out;
  EXPECT_EQ(run_on_terminal(dir.path().string(), cli() + " -c data", &out), 1);
  EXPECT_NE(out.find("terminal"), std::string::npos) << out;
  ASSERT_EQ(tandem("data").code, 0);
  out.clear();
  EXPECT_EQ(run_on_terminal(dir.path().string(), cli() + " -dc data.lz4", &out), 0)
      << "decompressed data may go to a terminal: " << out;
}

TEST_F(Cli, ProgressBarOnATerminalForLargeInputsOnly) {
  if (!tandem::test::have_tool("script")) GTEST_SKIP() << "script(1) is not installed";
  write("big", tandem::test::text_like_bytes(std::size_t{80} << 20, 6));
  write("small", tandem::test::text_like_bytes(1u << 20, 6));
  std::string out;
  ASSERT_EQ(run_on_terminal(dir.path().string(), cli() + " big small", &out), 0) << out;
  EXPECT_NE(out.find("MiB"), std::string::npos) << "a bar for the 80 MiB input";
  EXPECT_NE(out.find("\r\033[K"), std::string::npos) << "the bar is erased at the end";
  EXPECT_EQ(out.find("small"), std::string::npos) << "no bar for a 1 MiB input: " << out;
  out.clear();
  ASSERT_EQ(run_on_terminal(dir.path().string(), cli() + " -q -f big", &out), 0) << out;
  EXPECT_EQ(out, "") << "-q: no bar";
  // Not a terminal: no bar.
  const Result r = tandem("-f big");
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
}

TEST_F(Cli, VerbosePrintsSizesRatioAndSpeed) {
  write("data", sample());
  const Result r = tandem("-v data");
  ASSERT_EQ(r.code, 0);
  const std::string packed = std::to_string(fs::file_size(path("data.lz4")));
  EXPECT_NE(r.err.find("data -> data.lz4: " + std::to_string(sample().size()) + " -> " + packed + " bytes"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("MB/s"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u);
}

// ------------------------------------------------ version, help, bench ----

TEST_F(Cli, VersionAndHelp) {
  const Result v = tandem("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind(std::string("tandem ") + tandem::version(), 0), 0u) << v.out;
  EXPECT_NE(v.out.find(tandem::backend_info().cuda_compiled ? "gpu compiled in" : "gpu not compiled in"),
            std::string::npos)
      << v.out;
  const Result h = tandem("--help");
  EXPECT_EQ(h.code, 0);
  for (const char* word : {"compress", "decompress", "bench", "--version"}) {
    EXPECT_NE(h.out.find(word), std::string::npos) << word;
  }
  const Result ch = tandem("compress --help");
  EXPECT_EQ(ch.code, 0);
  for (const char* word : {"-o,--output", "-c,--stdout", "--rm", "-B", "--backend", "--fast"}) {
    EXPECT_NE(ch.out.find(word), std::string::npos) << word;
  }
}

TEST_F(Cli, BenchWritesJson) {
  write("sample.bin", tandem::test::mixed_bytes(300000, 9));
  const Result r = tandem("bench -q --min-time 0 --runs 1 --chunk 64K --json result.json sample.bin");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(path("result.json"));
  ASSERT_TRUE(f.good());
  const nlohmann::json json = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded()) << "result.json is not valid JSON";
  EXPECT_NE(json.dump().find("sample.bin"), std::string::npos);
}

}  // namespace
