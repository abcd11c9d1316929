// The archive scanner (tandem/scan.hpp) against libarchive's bsdtar on
// archives tandem did not write: the wheels Debian ships (python3-pip-whl),
// JARs under /usr/share where there are any, and archives that GNU tar, zip,
// gzip and zstd write here (GNU and pax tars, gzip and zstd, ZIP with
// directories). Every regular file bsdtar extracts is an entry of the scan
// with the same bytes, and the scan lists no file bsdtar does not.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "tandem/scan.hpp"

namespace {

using tandem::test::Bytes;
using tandem::test::have_tool;
using tandem::test::read_file;
using tandem::test::run;
using tandem::test::sh_quote;
using tandem::test::TempDir;
namespace fs = std::filesystem;

// Scans `archive` and compares with what bsdtar extracts from it. `top` is
// the first path component the scan gives its members (the archive's name
// without its compression suffix).
void expect_same_as_bsdtar(const fs::path& archive, const std::string& top) {
  SCOPED_TRACE(archive.string());
  TempDir dir;
  std::string out;
  ASSERT_EQ(run("bsdtar -xf " + sh_quote(archive.string()) + " -C " + sh_quote(dir.path().string()), &out), 0)
      << out;
  std::map<std::string, Bytes> expected;
  for (const auto& f : fs::recursive_directory_iterator(dir.path())) {
    if (f.is_symlink() || !f.is_regular_file()) continue;
    expected[fs::relative(f.path(), dir.path()).generic_string()] = read_file(f.path());
  }
  const Bytes data = read_file(archive);
  tandem::ScanResult r;
  ASSERT_TRUE(tandem::scan({data.data(), data.size()}, archive.filename().string(), {}, &r).ok());
  std::map<std::string, Bytes> got;
  for (const tandem::ScanEntry& e : r.entries) {
    ASSERT_TRUE(e.status.ok()) << e.path << ": " << e.status.to_string();
    ASSERT_EQ(e.path.rfind(top + "/", 0), 0u) << e.path;
    got[e.path.substr(top.size() + 1)] =
        Bytes(r.bytes.begin() + static_cast<std::ptrdiff_t>(e.offset),
              r.bytes.begin() + static_cast<std::ptrdiff_t>(e.offset + e.size));
  }
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [path, bytes] : expected) {
    const auto g = got.find(path);
    ASSERT_NE(g, got.end()) << path << " is not in the scan";
    EXPECT_TRUE(g->second == bytes) << path;
  }
}

TEST(ScanInterop, ArchivesDebianShipsReadAsBsdtarReadsThem) {
  if (!have_tool("bsdtar")) GTEST_SKIP() << "bsdtar (libarchive-tools) is not installed";
  std::vector<fs::path> archives;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator("/usr/share/python-wheels", ec)) {
    if (f.path().extension() == ".whl") archives.push_back(f.path());
  }
  std::vector<fs::path> jars;
  for (auto it = fs::recursive_directory_iterator("/usr/share/maven-repo", ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->path().extension() == ".jar" && it->is_regular_file() && !it->is_symlink()) jars.push_back(it->path());
  }
  std::sort(jars.begin(), jars.end());
  if (jars.size() > 20) jars.resize(20);
  archives.insert(archives.end(), jars.begin(), jars.end());
  if (archives.empty()) GTEST_SKIP() << "no wheels or JARs installed (python3-pip-whl ships wheels)";
  for (const fs::path& a : archives) expect_same_as_bsdtar(a, a.filename().string());
}

TEST(ScanInterop, ArchivesTheToolsWriteReadAsBsdtarReadsThem) {
  for (const char* tool : {"bsdtar", "tar", "zip", "zstd", "gzip"}) {
    if (!have_tool(tool)) GTEST_SKIP() << tool << " is not installed";
  }
  TempDir dir;
  const fs::path t = dir / "tree";
  const auto put = [&](const std::string& name, const Bytes& data) {
    fs::create_directories((t / name).parent_path());
    tandem::test::write_file(t / name, data);
  };
  put("readme.txt", tandem::test::text_like_bytes(12345, 1));
  put("src/lib/" + std::string(120, 'x') + ".js", tandem::test::text_like_bytes(70000, 2));
  put("bin/blob", tandem::test::random_bytes(40000, 3));
  put("empty", {});
  fs::create_directories(t / "emptydir");
  std::string out;
  const std::string cd = "cd " + sh_quote(t.string()) + " && ";
  ASSERT_EQ(run(cd + "tar --format=gnu -czf ../a.tar.gz * 2>&1", &out), 0) << out;
  ASSERT_EQ(run(cd + "tar --format=pax -cf - * | zstd -q -19 -o ../b.tar.zst 2>&1", &out), 0) << out;
  ASSERT_EQ(run(cd + "zip -qr ../c.zip . 2>&1", &out), 0) << out;
  ASSERT_EQ(run(cd + "tar -cf - * | gzip -9 > ../d.tgz", &out), 0) << out;
  expect_same_as_bsdtar(dir / "a.tar.gz", "a.tar");
  expect_same_as_bsdtar(dir / "b.tar.zst", "b.tar");
  expect_same_as_bsdtar(dir / "c.zip", "c.zip");
  expect_same_as_bsdtar(dir / "d.tgz", "d.tar");
}

}  // namespace
