// `tandem zip` and `tandem unzip`: archives of files and directories that
// unzip tests and extracts, extraction equal to the files, nothing replaced
// without -f, and hostile archives (names leaving the directory, symbolic
// links, links already under the directory) refused entry by entry without
// a byte written outside.
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "format/zip_format.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::test::Bytes;
using tandem::test::cli_path;
using tandem::test::have_tool;
using tandem::test::read_file;
using tandem::test::run;
using tandem::test::sh_quote;
using tandem::test::TempDir;
using tandem::test::write_file;
namespace fs = std::filesystem;
namespace zip = tandem::zip;

int tandem(const std::string& args, std::string* out = nullptr) {
  return run(sh_quote(cli_path()) + " " + args + " 2>&1", out);
}

std::string q(const fs::path& p) { return sh_quote(p.string()); }

TEST(CliZip, ZipAndUnzipRoundTrip) {
  TempDir t;
  fs::create_directories(t / "in/d/e");
  const Bytes a = tandem::test::text_like_bytes(300000, 1), b = tandem::test::random_bytes(50000, 2);
  write_file(t / "in/a.txt", a);
  write_file(t / "in/d/e/b.bin", b);
  write_file(t / "in/d/empty", {});
  ::chmod((t / "in/a.txt").c_str(), 0640);
  std::string out;
  ASSERT_EQ(run("cd " + q(t / "in") + " && " + sh_quote(cli_path()) + " zip -q ../o.zip a.txt d 2>&1", &out), 0)
      << out;
  if (have_tool("unzip")) {
    ASSERT_EQ(run("unzip -tq " + q(t / "o.zip"), &out), 0) << out;
  }
  ASSERT_EQ(tandem("unzip -q " + q(t / "o.zip") + " -d " + q(t / "x"), &out), 0) << out;
  EXPECT_EQ(read_file(t / "x/a.txt"), a);
  EXPECT_EQ(read_file(t / "x/d/e/b.bin"), b);
  EXPECT_TRUE(fs::exists(t / "x/d/empty"));
  EXPECT_EQ(fs::status(t / "x/a.txt").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  ASSERT_EQ(tandem("unzip --list " + q(t / "o.zip"), &out), 0) << out;
  EXPECT_NE(out.find("d/e/b.bin"), std::string::npos) << out;
}

TEST(CliZip, NothingIsReplacedWithoutForce) {
  TempDir t;
  write_file(t / "f", Bytes{1, 2, 3});
  std::string out;
  ASSERT_EQ(run("cd " + q(t.path()) + " && " + sh_quote(cli_path()) + " zip -q o.zip f 2>&1", &out), 0) << out;
  const Bytes archive = read_file(t / "o.zip");
  write_file(t / "g", Bytes{4, 5});
  EXPECT_EQ(run("cd " + q(t.path()) + " && " + sh_quote(cli_path()) + " zip -q o.zip g 2>&1", &out), 1);
  EXPECT_NE(out.find("-f"), std::string::npos) << out;
  EXPECT_EQ(read_file(t / "o.zip"), archive);
  // unzip over an existing file.
  fs::create_directories(t / "x");
  write_file(t / "x/f", Bytes{9});
  EXPECT_EQ(tandem("unzip -q " + q(t / "o.zip") + " -d " + q(t / "x"), &out), 1);
  EXPECT_EQ(read_file(t / "x/f"), (Bytes{9}));
  EXPECT_EQ(tandem("unzip -q -f " + q(t / "o.zip") + " -d " + q(t / "x"), &out), 0) << out;
  EXPECT_EQ(read_file(t / "x/f"), (Bytes{1, 2, 3}));
  // No temporary file is left behind.
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(t / "x")) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

// An archive whose entry names are patched, after writing, from safe
// placeholders of the same length into the names given.
Bytes hostile(const std::vector<std::pair<std::string, std::string>>& renames, bool symlink_first) {
  zip::Writer::Options o;
  o.level = 0;
  zip::Writer w(o);
  if (symlink_first) {
    const std::string target = "/tmp";
    const Bytes data(target.begin(), target.end());
    EXPECT_TRUE(w.add_raw("link", zip::kStored, data, data.size(), zip::crc32(data), 0120777).ok());
  }
  for (const auto& [placeholder, _] : renames) EXPECT_TRUE(w.add_file(placeholder, Bytes{'x'}).ok());
  EXPECT_TRUE(w.add_file("good", Bytes{'g'}).ok());
  EXPECT_TRUE(w.finish().ok());
  Bytes a = w.take();
  for (const auto& [from, to] : renames) {
    EXPECT_EQ(from.size(), to.size());
    for (std::size_t i = 0; i + from.size() <= a.size(); ++i) {
      if (std::equal(from.begin(), from.end(), a.begin() + static_cast<std::ptrdiff_t>(i))) {
        std::copy(to.begin(), to.end(), a.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
  return a;
}

TEST(CliZip, HostileNamesAreRefused) {
  TempDir t;
  write_file(t / "h.zip", hostile({{"zz/evil1", "../evil1"}, {"zzzzzzzzevil2", "/tmp/../evil2"},
                                   {"q/zz/zz/evil3", "q/../../evil3"}},
                                  false));
  // The patched archive still reads: the names are the only damage.
  std::vector<zip::Entry> entries;
  ASSERT_TRUE(zip::read_directory(read_file(t / "h.zip"), &entries).ok());
  std::string out;
  fs::create_directories(t / "x/y");
  EXPECT_EQ(tandem("unzip -q " + q(t / "h.zip") + " -d " + q(t / "x/y"), &out), 1);
  EXPECT_NE(out.find("../evil1"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(t / "x/evil1"));
  EXPECT_FALSE(fs::exists(t / "evil3"));
  EXPECT_FALSE(fs::exists(t / "x/evil3"));
  EXPECT_EQ(read_file(t / "x/y/good"), (Bytes{'g'}));  // the safe entry is extracted
}

TEST(CliZip, SymbolicLinksAreNeitherMadeNorFollowed) {
  TempDir t;
  std::string out;
  // A symlink entry, then a file through it.
  write_file(t / "s.zip", hostile({{"zzzz/f", "link/f"}}, true));
  EXPECT_EQ(tandem("unzip -q " + q(t / "s.zip") + " -d " + q(t / "x"), &out), 1);
  EXPECT_NE(out.find("symbolic link"), std::string::npos) << out;
  struct stat st {};
  ASSERT_EQ(::lstat((t / "x/link").c_str(), &st), 0);  // a directory made for link/f, not a link
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  // A link already under the directory, pointing outside it.
  fs::create_directories(t / "outside");
  fs::create_directories(t / "z");
  fs::create_symlink(t / "outside", t / "z/link");
  EXPECT_EQ(tandem("unzip -q " + q(t / "s.zip") + " -d " + q(t / "z"), &out), 1);
  EXPECT_NE(out.find("not followed"), std::string::npos) << out;
  EXPECT_TRUE(fs::is_empty(t / "outside"));
  // With -f, an existing link in a file's place is replaced, not written through.
  fs::create_directories(t / "w");
  write_file(t / "outside/target", Bytes{7});
  fs::create_symlink(t / "outside/target", t / "w/good");
  EXPECT_EQ(tandem("unzip -q -f " + q(t / "s.zip") + " -d " + q(t / "w"), &out), 1);  // the link entry
  EXPECT_EQ(read_file(t / "outside/target"), (Bytes{7}));
  ASSERT_EQ(::lstat((t / "w/good").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(read_file(t / "w/good"), (Bytes{'g'}));
}

TEST(CliZip, BombsStopAtTheLimit) {
  TempDir t;
  write_file(t / "zeros", tandem::test::constant_bytes(4 << 20, 0));
  std::string out;
  ASSERT_EQ(run("cd " + q(t.path()) + " && " + sh_quote(cli_path()) + " zip -q b.zip zeros 2>&1", &out), 0) << out;
  EXPECT_EQ(tandem("unzip -q --max-output 1M " + q(t / "b.zip") + " -d " + q(t / "x"), &out), 1);
  EXPECT_NE(out.find("limit"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(t / "x/zeros"));
}

}  // namespace
