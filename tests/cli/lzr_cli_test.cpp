// `tandem compress --codec lzr` and `tandem decompress` of .lzr files, run
// through /bin/sh in a fresh directory as a user would: round trips with
// the suffix, empty, one-byte and several-block files, recognition by
// content, -B, stdin and stdout, concatenation, --rm, -f, usage errors, and
// truncated or corrupted files, which must fail with a message and leave no
// output behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "support/cli_support.hpp"
#include "support/test_support.hpp"
#include "tandem/lzr_file.hpp"

namespace {

namespace fs = std::filesystem;
using tandem::test::Bytes;
using Result = tandem::test::CliResult;

class LzrCli : public tandem::test::CliTest {};

// Text with an incompressible stretch: coded and raw blocks at -B64K.
const Bytes& sample() {
  static const Bytes data = [] {
    Bytes d = tandem::test::text_like_bytes((1u << 20) + 777, 81);
    const Bytes noise = tandem::test::random_bytes(100000, 82);
    d.insert(d.begin() + 200000, noise.begin(), noise.end());
    return d;
  }();
  return data;
}

TEST_F(LzrCli, RoundTripsWithItsSuffix) {
  write("data", sample());
  const Result c = tandem("compress --codec lzr data");
  ASSERT_EQ(c.code, 0) << c.err;
  ASSERT_TRUE(exists("data.lzr"));
  const Bytes packed = read("data.lzr");
  EXPECT_LT(packed.size(), sample().size() / 2);
  EXPECT_TRUE(tandem::lzr_file_magic(packed.data(), packed.size()));
  fs::rename(path("data"), path("original"));
  const Result d = tandem("decompress data.lzr");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(read("data"), sample());
  EXPECT_TRUE(exists("data.lzr")) << "inputs are kept";
  EXPECT_EQ(c.err + d.err, "");
  // The library reads what the command wrote.
  Bytes back;
  ASSERT_TRUE(tandem::lzr_file_decompress({packed.data(), packed.size()}, &back).ok());
  EXPECT_EQ(back, sample());
}

TEST_F(LzrCli, EmptyOneByteAndSeveralBlockFilesAndDashB) {
  write("empty", {});
  write("one", Bytes{'x'});
  write("data", sample());
  const Result c = tandem("--codec lzr -B64K -T 2 empty one data");
  ASSERT_EQ(c.code, 0) << c.err;
  const Bytes small = read("data.lzr");
  ASSERT_GT(small.size(), 5u);
  EXPECT_EQ(small[5], 16) << "block_log2 of 64 KiB blocks";
  for (const char* name : {"empty", "one", "data"}) fs::rename(path(name), path(std::string(name) + ".orig"));
  const Result d = tandem("-d empty.lzr one.lzr data.lzr");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(read("empty"), Bytes{});
  EXPECT_EQ(read("one"), Bytes{'x'});
  EXPECT_EQ(read("data"), sample());
  ASSERT_EQ(tandem("--codec lzr -o big.lzr data").code, 0);
  EXPECT_EQ(read("big.lzr")[5], 22) << "block_log2 of the default 4 MiB blocks";
}

TEST_F(LzrCli, StdinStdoutConcatenationAndRemoval) {
  write("data", sample());
  ASSERT_EQ(tandem("--codec lzr < data > packed").code, 0);
  ASSERT_EQ(tandem("-d < packed > unpacked").code, 0);  // recognised by content
  EXPECT_EQ(read("unpacked"), sample());
  ASSERT_EQ(shell("cat packed packed > twice.lzr"), 0);
  ASSERT_EQ(tandem("-d twice.lzr").code, 0);
  Bytes want = sample();
  want.insert(want.end(), sample().begin(), sample().end());
  EXPECT_EQ(read("twice"), want);
  write("data.lzr", Bytes{1, 2, 3});
  const Result refused = tandem("--codec lzr data");
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("already exists"), std::string::npos) << refused.err;
  EXPECT_EQ(read("data.lzr"), (Bytes{1, 2, 3}));
  ASSERT_EQ(tandem("--codec lzr -f --rm data").code, 0);
  EXPECT_FALSE(exists("data")) << "--rm removes the input after verifying the output";
  ASSERT_EQ(tandem("-d --rm data.lzr").code, 0);
  EXPECT_EQ(read("data"), sample());
  EXPECT_FALSE(exists("data.lzr"));
}

TEST_F(LzrCli, TruncatedAndCorruptedFilesFailAndLeaveNothingBehind) {
  write("data", sample());
  ASSERT_EQ(tandem("--codec lzr -B64K data").code, 0);
  const Bytes good = read("data.lzr");
  fs::remove(path("data"));

  Bytes cut = good;
  cut.resize(cut.size() / 2);
  write("cut.lzr", cut);
  const Result c = tandem("-d cut.lzr");
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.err.find("tandem: cut.lzr: truncated"), std::string::npos) << c.err;

  Bytes crc = good;
  crc[crc.size() - 2] ^= 0xff;  // the checksum
  write("crc.lzr", crc);
  const Result k = tandem("-d crc.lzr");
  EXPECT_EQ(k.code, 1);
  EXPECT_NE(k.err.find("checksum"), std::string::npos) << k.err;

  write("junk.lzr", tandem::test::text_like_bytes(1000, 3));
  const Result j = tandem("-d junk.lzr");
  EXPECT_EQ(j.code, 1);
  EXPECT_NE(j.err.find("not a tandem lzr file"), std::string::npos) << j.err;

  EXPECT_EQ(tandem("-dc cut.lzr > /dev/null").code, 1);
  EXPECT_EQ(listing(), (std::set<std::string>{"data.lzr", "cut.lzr", "crc.lzr", "junk.lzr"}));
}

TEST_F(LzrCli, HelpAndUsageErrors) {
  const Result help = tandem("compress --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("lzr"), std::string::npos) << help.out;
  write("data", sample());
  const Result level = tandem("--codec lzr -9 data");
  EXPECT_EQ(level.code, 2);
  EXPECT_NE(level.err.find("lzr has no compression levels"), std::string::npos) << level.err;
  const Result gpu = tandem("--codec lzr --backend gpu data");
  EXPECT_EQ(gpu.code, 1);
  EXPECT_NE(gpu.err.find("runs on the CPU"), std::string::npos) << gpu.err;
  EXPECT_EQ(listing(), (std::set<std::string>{"data"}));
}

}  // namespace
