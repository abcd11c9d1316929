// `tandem compress --codec zstd` and `tandem decompress` of .zst files
// against the zstd tool, both ways, at several levels; recognition by
// content; concatenated frames; level errors; a cut file fails with a
// message and leaves no output behind.
#include <gtest/gtest.h>

#include <string>

#include "support/cli_support.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::test::Bytes;
using Result = tandem::test::CliResult;

class ZstdCli : public tandem::test::CliTest {
 protected:
  void SetUp() override {
    if (!tandem::test::have_tool("zstd")) GTEST_SKIP() << "the zstd tool is not installed";
  }
};

const Bytes& sample() {
  static const Bytes data = [] {
    Bytes d = tandem::test::text_like_bytes(700000, 91);
    const Bytes noise = tandem::test::random_bytes(90000, 92);
    d.insert(d.begin() + 100000, noise.begin(), noise.end());
    return d;
  }();
  return data;
}

TEST_F(ZstdCli, TheZstdToolReadsWhatTandemWritesAtEveryLevelGiven) {
  write("data", sample());
  for (const std::string level : {"", "-1", "-9", "-19"}) {
    const Result c = tandem("compress --codec zstd -f " + level + " data");
    ASSERT_EQ(c.code, 0) << level << c.err;
    ASSERT_TRUE(exists("data.zst"));
    ASSERT_EQ(shell("zstd -d -q -f data.zst -o back"), 0) << level;
    EXPECT_EQ(read("back"), sample()) << level;
  }
}

TEST_F(ZstdCli, TandemReadsWhatTheZstdToolWrites) {
  write("data", sample());
  for (const std::string level : {"-1", "-3", "-19"}) {
    ASSERT_EQ(shell("zstd -q -f " + level + " data -o tool.zst"), 0);
    const Result d = tandem("decompress -f tool.zst -o back");
    ASSERT_EQ(d.code, 0) << level << d.err;
    EXPECT_EQ(read("back"), sample()) << level;
  }
  // By content, whatever the name; two frames concatenated.
  ASSERT_EQ(shell("zstd -q -f -5 data -o one && cat one one > two.bin"), 0);
  const Result d = tandem("-d -c two.bin > both");
  ASSERT_EQ(d.code, 0) << d.err;
  Bytes want = sample();
  want.insert(want.end(), sample().begin(), sample().end());
  EXPECT_EQ(read("both"), want);
}

TEST_F(ZstdCli, LevelsOutOfRangeAreUsageErrors) {
  write("data", sample());
  EXPECT_EQ(tandem("compress --codec zstd -20 data").code, 2);
  EXPECT_EQ(tandem("compress --codec zstd --fast=2 data").code, 2);
  EXPECT_FALSE(exists("data.zst"));
}

TEST_F(ZstdCli, ACutFileFailsAndLeavesNoOutput) {
  write("data", sample());
  ASSERT_EQ(tandem("compress --codec zstd data").code, 0);
  Bytes packed = read("data.zst");
  packed.resize(packed.size() / 2);
  write("cut.zst", packed);
  const Result d = tandem("decompress cut.zst");
  EXPECT_EQ(d.code, 1);
  EXPECT_NE(d.err.find("cut.zst"), std::string::npos) << d.err;
  EXPECT_FALSE(exists("cut")) << "no partial output";
}

}  // namespace
