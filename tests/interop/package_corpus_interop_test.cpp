// scripts/package-corpus and scripts/package-corpus-check on a small corpus:
// 20 real package archives (npm tarballs that npm packs from Debian's node-*
// modules, Debian's wheels, JARs of lib*-java), fetched with apt-get
// download, each scanned by `tandem scan` and compared with what bsdtar
// extracts. Skips where a tool is missing or apt-get cannot fetch (a machine
// without network).
#include <filesystem>
#include <string>

#include "support/test_support.hpp"

namespace {

using tandem::test::have_tool;
using tandem::test::run;
using tandem::test::sh_quote;
using tandem::test::TempDir;
namespace fs = std::filesystem;

TEST(PackageCorpus, TwentyPackageArchivesScanAsBsdtarReadsThem) {
  for (const char* tool : {"bsdtar", "npm", "apt-get", "apt-cache", "dpkg-deb"}) {
    if (!have_tool(tool)) GTEST_SKIP() << tool << " is not installed";
  }
  TempDir dir;
  std::string out;
  fs::create_directories(dir / "probe");
  if (run("cd " + sh_quote((dir / "probe").string()) + " && apt-get download -q python3-wheel-whl 2>&1", &out) != 0) {
    GTEST_SKIP() << "apt-get download cannot fetch packages here (no network?): " << out;
  }
  const std::string scripts = std::string(TANDEM_SOURCE_DIR) + "/scripts/";
  const fs::path corpus = dir / "corpus";
  ASSERT_EQ(run(sh_quote(scripts + "package-corpus") + " " + sh_quote(corpus.string()) + " 20 2>&1", &out), 0) << out;
  std::size_t archives = 0;
  for (const auto& f : fs::directory_iterator(corpus / "archives")) archives += f.is_regular_file() ? 1 : 0;
  EXPECT_EQ(archives, 20u);
  EXPECT_TRUE(fs::is_regular_file(corpus / "MANIFEST"));
  ASSERT_EQ(run(sh_quote(scripts + "package-corpus-check") + " -t " + sh_quote(tandem::test::cli_path()) + " " +
                    sh_quote(corpus.string()) + " 2>&1",
                &out),
            0)
      << out;
  EXPECT_NE(out.find("20 archives"), std::string::npos) << out;
  EXPECT_NE(out.find(" 0 mismatches"), std::string::npos) << out;
}

}  // namespace
