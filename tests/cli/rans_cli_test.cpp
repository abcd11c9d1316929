// `tandem compress --codec rans` and `tandem decompress` of .rans files, run
// through /bin/sh in a fresh directory as a user would: the Silesia files,
// empty, one-byte and many-block files, recognition by content, -o, -c,
// stdin and stdout, -f, --rm, usage errors, and truncated or corrupted files,
// which must fail with a message and leave no output behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "support/cli_support.hpp"
#include "support/test_support.hpp"
#include "tandem/rans_file.hpp"

namespace {

namespace fs = std::filesystem;
using tandem::test::Bytes;
using Result = tandem::test::CliResult;

class RansCli : public tandem::test::CliTest {};

// Several 64 KiB blocks, one of them incompressible.
const Bytes& sample() {
  static const Bytes data = [] {
    Bytes d = tandem::test::mixed_bytes((1u << 20) + 777, 71);
    const Bytes noise = tandem::test::random_bytes(100000, 72);
    d.insert(d.begin() + 200000, noise.begin(), noise.end());
    return d;
  }();
  return data;
}

TEST_F(RansCli, RoundTripsWithItsSuffix) {
  write("data", sample());
  const Result c = tandem("compress --codec rans data");
  ASSERT_EQ(c.code, 0) << c.err;
  ASSERT_TRUE(exists("data.rans"));
  const Bytes packed = read("data.rans");
  EXPECT_LT(packed.size(), sample().size());
  EXPECT_TRUE(tandem::rans_file_magic(packed.data(), packed.size()));
  fs::rename(path("data"), path("original"));
  const Result d = tandem("decompress data.rans");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(read("data"), sample());
  EXPECT_TRUE(exists("data.rans")) << "inputs are kept";
  EXPECT_EQ(c.err + d.err, "");
  // The library reads what the command wrote.
  Bytes back;
  ASSERT_TRUE(tandem::rans_file_decompress({packed.data(), packed.size()}, &back).ok());
  EXPECT_EQ(back, sample());
}

TEST_F(RansCli, EmptyOneByteAndManyBlockFiles) {
  write("empty", {});
  write("one", Bytes{'x'});
  const Bytes many = tandem::test::text_like_bytes((5u << 20) + 3, 73);
  write("many", many);
  const Result c = tandem("--codec rans -T 2 empty one many");
  ASSERT_EQ(c.code, 0) << c.err;
  for (const char* name : {"empty", "one", "many"}) fs::rename(path(name), path(std::string(name) + ".orig"));
  const Result d = tandem("-d empty.rans one.rans many.rans");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(read("empty"), Bytes{});
  EXPECT_EQ(read("one"), Bytes{'x'});
  EXPECT_EQ(read("many"), many);
}

TEST_F(RansCli, SilesiaFilesRoundTrip) {
  if (tandem::test::silesia_dir().empty()) GTEST_SKIP() << "the Silesia corpus is not available";
  std::string names, packed;
  for (const std::string& name : tandem::test::silesia_names()) {
    fs::copy_file(tandem::test::silesia_dir() / name, path(name));
    names += " " + name;
    packed += " " + name + ".rans";
  }
  const Result c = tandem("--codec rans --rm" + names);
  ASSERT_EQ(c.code, 0) << c.err;
  const Result d = tandem("-d --rm" + packed);
  ASSERT_EQ(d.code, 0) << d.err;
  for (const std::string& name : tandem::test::silesia_names()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(read(name), tandem::test::read_file(tandem::test::silesia_dir() / name));
    EXPECT_FALSE(exists(name + ".rans"));
  }
}

TEST_F(RansCli, DashBSetsTheBlockSize) {
  write("data", sample());
  ASSERT_EQ(tandem("--codec rans -B1M -o big.rans data").code, 0);
  ASSERT_EQ(tandem("--codec rans -o small.rans data").code, 0);
  const Bytes big = read("big.rans"), small = read("small.rans");
  ASSERT_GT(big.size(), 5u);
  ASSERT_GT(small.size(), 5u);
  EXPECT_EQ(big[5], 20) << "block_log2 of 1 MiB blocks";
  EXPECT_EQ(small[5], 16) << "block_log2 of the default 64 KiB blocks";
  ASSERT_EQ(tandem("-d big.rans").code, 0);
  EXPECT_EQ(read("big"), sample());
}

TEST_F(RansCli, StdinStdoutAndDashO) {
  write("data", sample());
  ASSERT_EQ(tandem("--codec rans < data > packed").code, 0);
  ASSERT_EQ(tandem("-d < packed > unpacked").code, 0);  // recognised by content
  EXPECT_EQ(read("unpacked"), sample());
  ASSERT_EQ(tandem("--codec rans -c data > c.bin").code, 0);
  EXPECT_EQ(read("c.bin"), read("packed"));
  ASSERT_EQ(tandem("-d -o out c.bin").code, 0);
  EXPECT_EQ(read("out"), sample());
  ASSERT_EQ(tandem("-dc c.bin > piped").code, 0);
  EXPECT_EQ(read("piped"), sample());
  // Concatenated files decompress to the concatenation.
  ASSERT_EQ(shell("cat c.bin c.bin > twice.rans"), 0);
  ASSERT_EQ(tandem("-d twice.rans").code, 0);
  Bytes want = sample();
  want.insert(want.end(), sample().begin(), sample().end());
  EXPECT_EQ(read("twice"), want);
}

TEST_F(RansCli, NeverOverwritesWithoutForceAndRemovesOnlyWhenAsked) {
  write("data", sample());
  write("data.rans", Bytes{1, 2, 3});
  const Result refused = tandem("--codec rans data");
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("already exists"), std::string::npos) << refused.err;
  EXPECT_EQ(read("data.rans"), (Bytes{1, 2, 3}));
  ASSERT_EQ(tandem("--codec rans -f data").code, 0);
  const Result again = tandem("-d data.rans");
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  ASSERT_EQ(tandem("--codec rans -f --rm data").code, 0);
  EXPECT_FALSE(exists("data")) << "--rm removes the input after verifying the output";
  ASSERT_EQ(tandem("-d --rm data.rans").code, 0);
  EXPECT_EQ(read("data"), sample());
  EXPECT_FALSE(exists("data.rans"));
  EXPECT_EQ(listing(), (std::set<std::string>{"data"}));
}

TEST_F(RansCli, TruncatedAndCorruptedFilesFailAndLeaveNothingBehind) {
  write("data", sample());
  ASSERT_EQ(tandem("--codec rans data").code, 0);
  const Bytes good = read("data.rans");
  fs::remove(path("data"));

  Bytes cut = good;
  cut.resize(cut.size() / 2);
  write("cut.rans", cut);
  const Result c = tandem("-d cut.rans");
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.err.find("tandem: cut.rans: truncated"), std::string::npos) << c.err;

  Bytes crc = good;
  crc[crc.size() - 2] ^= 0xff;  // the checksum
  write("crc.rans", crc);
  const Result k = tandem("-d crc.rans");
  EXPECT_EQ(k.code, 1);
  EXPECT_NE(k.err.find("checksum"), std::string::npos) << k.err;

  Bytes flipped = good;
  flipped[good.size() / 3] ^= 0x40;  // inside a block
  write("flip.rans", flipped);
  const Result f = tandem("-d flip.rans");
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.err.find("tandem: flip.rans: "), std::string::npos) << f.err;

  write("junk.rans", tandem::test::text_like_bytes(1000, 3));
  const Result j = tandem("-d junk.rans");
  EXPECT_EQ(j.code, 1);
  EXPECT_NE(j.err.find("not a tandem rANS file"), std::string::npos) << j.err;

  // Through stdout too: an error status, whatever reached the pipe.
  EXPECT_EQ(tandem("-dc cut.rans > /dev/null").code, 1);
  EXPECT_EQ(tandem("-d --codec rans < crc.rans > /dev/null").code, 1);

  EXPECT_EQ(listing(), (std::set<std::string>{"data.rans", "cut.rans", "crc.rans", "flip.rans", "junk.rans"}));
}

TEST_F(RansCli, HelpAndUsageErrors) {
  const Result help = tandem("compress --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("rans"), std::string::npos) << help.out;
  write("data", sample());
  const Result level = tandem("--codec rans -9 data");
  EXPECT_EQ(level.code, 2);
  EXPECT_NE(level.err.find("rans has no compression levels"), std::string::npos) << level.err;
  const Result gpu = tandem("--codec rans --backend gpu data");
  EXPECT_EQ(gpu.code, 1);
  EXPECT_NE(gpu.err.find("runs on the CPU"), std::string::npos) << gpu.err;
  const Result suffix = tandem("-d data");
  EXPECT_EQ(suffix.code, 1);
  EXPECT_NE(suffix.err.find(".rans"), std::string::npos) << "the known suffixes are listed: " << suffix.err;
  EXPECT_EQ(listing(), (std::set<std::string>{"data"}));
}

}  // namespace
