// Interoperability of tandem's gzip, zlib and raw deflate with the reference
// tools, both ways: every file tandem writes is tested and read by gzip, pigz
// and Python's gzip and zlib modules; every file they (and bgzip) write is
// read by tandem, with BGZF members taken in parallel. The tandem side uses
// the library API; each tool that is missing skips its part with a message.
#include <gtest/gtest.h>

#include <string>

#include "support/test_support.hpp"
#include "tandem/deflate.hpp"

namespace {

using tandem::DeflateContainer;
using tandem::test::Bytes;
using tandem::test::sh_quote;
using tandem::test::TempDir;

const Bytes& data() {
  static const Bytes d = [] {
    Bytes b = tandem::test::mixed_bytes(3u << 20, 71);
    const Bytes t = tandem::test::text_like_bytes(500000, 72);
    b.insert(b.end(), t.begin(), t.end());
    return b;
  }();
  return d;
}

Bytes compress(const Bytes& in, DeflateContainer c, int level) {
  tandem::DeflateOptions o;
  o.container = c;
  o.level = level;
  o.name = "data";
  Bytes out;
  EXPECT_TRUE(tandem::deflate_compress({in.data(), in.size()}, &out, o).ok());
  return out;
}

Bytes decompress(const Bytes& in, tandem::DeflateStats* stats = nullptr,
                 DeflateContainer c = DeflateContainer::detect) {
  tandem::DeflateDecodeOptions o;
  o.container = c;
  Bytes out;
  const tandem::Status s = tandem::deflate_decompress({in.data(), in.size()}, &out, o, stats);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

int sh(const TempDir& dir, const std::string& cmd) {
  return tandem::test::run("cd " + sh_quote(dir.path().string()) + " && " + cmd + " 2>/dev/null");
}

const char* const kPythonRead =
    "python3 -c \"import sys, gzip, zlib; d = open(sys.argv[1], 'rb').read(); "
    "m = sys.argv[2]; "
    "out = gzip.decompress(d) if m == 'gzip' else zlib.decompress(d) if m == 'zlib' else zlib.decompress(d, -15); "
    "open(sys.argv[3], 'wb').write(out)\"";

const char* const kPythonWrite =
    "python3 -c \"import sys, zlib; d = open(sys.argv[1], 'rb').read(); "
    "c = zlib.compressobj(6, zlib.DEFLATED, int(sys.argv[2])); "
    "open(sys.argv[3], 'wb').write(c.compress(d) + c.flush())\"";

TEST(DeflateInterop, TandemGzipIsReadByGzipPigzAndPython) {
  TempDir dir;
  for (const int level : {1, 6, 12}) {
    SCOPED_TRACE(level);
    for (const Bytes& in : {data(), Bytes{}}) {
      tandem::test::write_file(dir / "t.gz", compress(in, DeflateContainer::gzip, level));
      if (tandem::test::have_tool("gzip")) {
        EXPECT_EQ(sh(dir, "gzip -t t.gz"), 0);
        ASSERT_EQ(sh(dir, "gzip -dc t.gz > by_gzip"), 0);
        EXPECT_EQ(tandem::test::read_file(dir / "by_gzip"), in);
      }
      if (tandem::test::have_tool("pigz")) {
        ASSERT_EQ(sh(dir, "pigz -dc t.gz > by_pigz"), 0);
        EXPECT_EQ(tandem::test::read_file(dir / "by_pigz"), in);
      }
      if (tandem::test::have_tool("python3")) {
        ASSERT_EQ(sh(dir, std::string(kPythonRead) + " t.gz gzip by_python"), 0);
        EXPECT_EQ(tandem::test::read_file(dir / "by_python"), in);
      }
    }
  }
  if (!tandem::test::have_tool("gzip")) GTEST_SKIP() << "the `gzip` command is not installed";
}

TEST(DeflateInterop, TandemZlibAndRawAreReadByPythonZlib) {
  if (!tandem::test::have_tool("python3")) GTEST_SKIP() << "python3 is not installed";
  TempDir dir;
  for (const int level : {1, 9}) {
    tandem::test::write_file(dir / "t.zz", compress(data(), DeflateContainer::zlib, level));
    ASSERT_EQ(sh(dir, std::string(kPythonRead) + " t.zz zlib out_zlib"), 0);
    EXPECT_EQ(tandem::test::read_file(dir / "out_zlib"), data());
    tandem::test::write_file(dir / "t.deflate", compress(data(), DeflateContainer::raw, level));
    ASSERT_EQ(sh(dir, std::string(kPythonRead) + " t.deflate raw out_raw"), 0);
    EXPECT_EQ(tandem::test::read_file(dir / "out_raw"), data());
  }
}

TEST(DeflateInterop, GzipAndPigzFilesAreReadByTandem) {
  TempDir dir;
  tandem::test::write_file(dir / "in", data());
  bool any = false;
  for (const std::string& cmd : {"gzip -1 -c in > f.gz", "gzip -9 -c in > f.gz", "pigz -c in > f.gz",
                                 "pigz -i -c in > f.gz",
                                 "gzip -c in > a.gz && pigz -c in > b.gz && cat a.gz b.gz > f.gz"}) {
    const std::string tool = cmd.substr(0, cmd.find(' '));
    if (!tandem::test::have_tool(tool) || (cmd.find("pigz") != std::string::npos && !tandem::test::have_tool("pigz"))) {
      continue;
    }
    SCOPED_TRACE(cmd);
    any = true;
    ASSERT_EQ(sh(dir, cmd), 0);
    tandem::DeflateStats stats;
    const Bytes out = decompress(tandem::test::read_file(dir / "f.gz"), &stats);
    const bool twice = cmd.find("cat") != std::string::npos;
    Bytes want = data();
    if (twice) want.insert(want.end(), data().begin(), data().end());
    EXPECT_EQ(out, want);
    EXPECT_EQ(stats.members, twice ? 2u : 1u);
    EXPECT_EQ(stats.indexed_members, 0u);
  }
  if (!any) GTEST_SKIP() << "neither `gzip` nor `pigz` is installed";
}

TEST(DeflateInterop, BgzipFilesAreReadMembersInParallel) {
  if (!tandem::test::have_tool("bgzip")) GTEST_SKIP() << "`bgzip` (package tabix) is not installed";
  TempDir dir;
  tandem::test::write_file(dir / "in", data());
  ASSERT_EQ(sh(dir, "bgzip -c in > f.gz"), 0);
  tandem::DeflateStats stats;
  EXPECT_EQ(decompress(tandem::test::read_file(dir / "f.gz"), &stats), data());
  EXPECT_GT(stats.bgzf_members, 50u);
  EXPECT_EQ(stats.bgzf_members, stats.members);
  // And tandem's gzip through bgzip's reader.
  tandem::test::write_file(dir / "t.gz", compress(data(), DeflateContainer::gzip, 6));
  ASSERT_EQ(sh(dir, "bgzip -dc t.gz > by_bgzip"), 0);
  EXPECT_EQ(tandem::test::read_file(dir / "by_bgzip"), data());
}

TEST(DeflateInterop, PythonZlibStreamsAreReadByTandem) {
  if (!tandem::test::have_tool("python3")) GTEST_SKIP() << "python3 is not installed";
  TempDir dir;
  tandem::test::write_file(dir / "in", data());
  for (const int bits : {15, -15, 31}) {
    SCOPED_TRACE(bits);
    ASSERT_EQ(sh(dir, std::string(kPythonWrite) + " in " + std::to_string(bits) + " out"), 0);
    const Bytes z = tandem::test::read_file(dir / "out");
    EXPECT_EQ(decompress(z, nullptr, bits == -15 ? DeflateContainer::raw : DeflateContainer::detect), data());
  }
}

}  // namespace
