// `tandem compress --codec gzip|zlib|deflate` and `tandem decompress` of
// their files, run through /bin/sh in a fresh directory as a user would:
// suffixes, -o, -c, stdin and stdout, -f, --rm, levels, recognition by
// content, what gzip makes of tandem's files, and no temporary files left
// behind on failure.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "support/cli_support.hpp"
#include "support/test_support.hpp"
#include "tandem/deflate.hpp"

namespace {

namespace fs = std::filesystem;
using tandem::test::Bytes;
using tandem::test::TempDir;

using Result = tandem::test::CliResult;

class DeflateCli : public tandem::test::CliTest {};

const Bytes& sample() {
  static const Bytes data = tandem::test::mixed_bytes((1u << 20) + 777, 61);
  return data;
}

TEST_F(DeflateCli, EachCodecRoundTripsWithItsSuffix) {
  write("data", sample());
  for (const auto& [codec, suffix] : std::vector<std::pair<std::string, std::string>>{
           {"gzip", ".gz"}, {"zlib", ".zz"}, {"deflate", ".deflate"}}) {
    SCOPED_TRACE(codec);
    const Result c = tandem("compress --codec " + codec + " data");
    ASSERT_EQ(c.code, 0) << c.err;
    ASSERT_TRUE(exists("data" + suffix));
    EXPECT_LT(read("data" + suffix).size(), sample().size());
    fs::rename(path("data"), path("original"));
    const Result d = tandem("decompress data" + suffix);  // recognised by content (raw: by name)
    ASSERT_EQ(d.code, 0) << d.err;
    EXPECT_EQ(read("data"), sample());
    EXPECT_TRUE(exists("data" + suffix)) << "inputs are kept";
    fs::remove(path("original"));
    fs::remove(path("data" + suffix));
    EXPECT_EQ(c.err + d.err, "");
  }
  EXPECT_EQ(listing(), (std::set<std::string>{"data"}));
}

TEST_F(DeflateCli, GzipFilesCarryTheNameAndTheIndexAndGzipReadsThem) {
  write("data", sample());
  ASSERT_EQ(tandem("--codec gzip -9 data").code, 0);
  const Bytes gz = read("data.gz");
  ASSERT_GE(gz.size(), 10u);
  EXPECT_EQ(gz[0], 0x1f);
  EXPECT_EQ(gz[1], 0x8b);
  EXPECT_EQ(gz[8], 2) << "XFL for the slowest levels";
  Bytes back;
  tandem::DeflateStats stats;
  ASSERT_TRUE(tandem::deflate_decompress({gz.data(), gz.size()}, &back, {}, &stats).ok());
  EXPECT_EQ(back, sample());
  EXPECT_EQ(stats.indexed_members, 1u);
  if (!tandem::test::have_tool("gzip")) GTEST_SKIP() << "the `gzip` command is not installed";
  EXPECT_EQ(shell("gzip -t data.gz"), 0);
  std::string listing_text;
  tandem::test::run("cd " + tandem::test::sh_quote(dir.path().string()) + " && gzip -lN data.gz", &listing_text);
  EXPECT_NE(listing_text.find("data"), std::string::npos) << listing_text;
  EXPECT_EQ(shell("gzip -dc data.gz > via_gzip"), 0);
  EXPECT_EQ(read("via_gzip"), sample());
}

TEST_F(DeflateCli, StdinStdoutAndDashO) {
  write("data", sample());
  ASSERT_EQ(tandem("--codec gzip < data > packed").code, 0);
  ASSERT_EQ(tandem("-d < packed > unpacked").code, 0);
  EXPECT_EQ(read("unpacked"), sample());
  ASSERT_EQ(tandem("--codec zlib -c data > z").code, 0);
  ASSERT_EQ(tandem("-dc z > z_out").code, 0);
  EXPECT_EQ(read("z_out"), sample());
  ASSERT_EQ(tandem("--codec deflate -o raw.bin data").code, 0);
  // Raw deflate has no header: it needs the codec named when the name does not say.
  EXPECT_NE(tandem("-d raw.bin -o wrong").code, 0);
  EXPECT_FALSE(exists("wrong"));
  ASSERT_EQ(tandem("-d --codec deflate raw.bin -o right").code, 0);
  EXPECT_EQ(read("right"), sample());
}

TEST_F(DeflateCli, NeverOverwritesWithoutForceAndRemovesOnlyWhenAsked) {
  write("data", sample());
  write("data.gz", Bytes{1, 2, 3});
  const Result refused = tandem("--codec gzip data");
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("already exists"), std::string::npos) << refused.err;
  EXPECT_EQ(read("data.gz"), (Bytes{1, 2, 3}));
  ASSERT_EQ(tandem("--codec gzip -f data").code, 0);
  ASSERT_EQ(tandem("--codec gzip -f --rm data").code, 0);
  EXPECT_FALSE(exists("data")) << "--rm removes the input after verifying the output";
  ASSERT_EQ(tandem("-d --rm data.gz").code, 0);
  EXPECT_EQ(read("data"), sample());
  EXPECT_FALSE(exists("data.gz"));
  EXPECT_EQ(listing(), (std::set<std::string>{"data"}));
}

TEST_F(DeflateCli, BadInputsFailAndLeaveNothingBehind) {
  write("data", sample());
  ASSERT_EQ(tandem("--codec gzip data").code, 0);
  Bytes gz = read("data.gz");
  gz[gz.size() - 6] ^= 0xff;  // the CRC-32
  write("bad.gz", gz);
  const Result crc = tandem("-d bad.gz");
  EXPECT_EQ(crc.code, 1);
  EXPECT_NE(crc.err.find("checksum"), std::string::npos) << crc.err;
  gz = read("data.gz");
  gz.resize(gz.size() / 2);
  write("cut.gz", gz);
  const Result cut = tandem("-d cut.gz");
  EXPECT_EQ(cut.code, 1);
  EXPECT_NE(cut.err.find("truncated"), std::string::npos) << cut.err;
  EXPECT_EQ(listing(), (std::set<std::string>{"data", "data.gz", "bad.gz", "cut.gz"}));
}

TEST_F(DeflateCli, LevelsAndUsageErrors) {
  write("data", sample());
  std::size_t previous = 0;
  for (const int level : {1, 6, 12}) {
    ASSERT_EQ(tandem("--codec zlib -f -" + std::to_string(level) + " data").code, 0);
    const std::size_t size = read("data.zz").size();
    if (previous) {
      EXPECT_LE(size, previous + previous / 50) << "level " << level;
    }
    previous = size;
  }
  EXPECT_EQ(tandem("--codec gzip --fast=3 data").code, 2);
  EXPECT_EQ(tandem("--codec brotli data").code, 2);
  EXPECT_EQ(tandem("--codec gzip --backend gpu -f data").code, 1);
}

TEST_F(DeflateCli, ForeignGzipAndTheLz4PathStillWork) {
  write("data", sample());
  if (tandem::test::have_tool("gzip")) {
    ASSERT_EQ(shell("gzip -c data > g.gz && cat g.gz g.gz > twice.gz"), 0);
    ASSERT_EQ(tandem("-d twice.gz").code, 0);
    Bytes want = sample();
    want.insert(want.end(), sample().begin(), sample().end());
    EXPECT_EQ(read("twice"), want);
  }
  ASSERT_EQ(tandem("data").code, 0);  // LZ4 stays the default
  const Bytes lz4 = read("data.lz4");
  ASSERT_GE(lz4.size(), 4u);
  EXPECT_EQ(lz4[0], 0x04);
  fs::rename(path("data"), path("original"));
  ASSERT_EQ(tandem("-d data.lz4").code, 0);
  EXPECT_EQ(read("data"), sample());
}

}  // namespace
