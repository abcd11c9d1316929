// tar archives that GNU tar writes, in its ustar, gnu, pax and v7 formats,
// read by tandem's parser (format/tar_format.hpp): every entry's path, kind,
// link and bytes equal what was packed, and the listing equals `tar -tf`'s.
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "format/tar_format.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::test::Bytes;
using tandem::test::have_tool;
using tandem::test::read_file;
using tandem::test::run;
using tandem::test::sh_quote;
using tandem::test::TempDir;
using tandem::test::write_file;
namespace fs = std::filesystem;
namespace tar = tandem::tar;

// A tree with long names (over 100 bytes, and over 255 where the format
// holds them), files at block edges, an empty file, links and directories.
std::map<std::string, Bytes> make_tree(const fs::path& root, bool long_names, bool links) {
  std::map<std::string, Bytes> files;
  const auto put = [&](const std::string& name, Bytes data) {
    fs::create_directories((root / name).parent_path());
    write_file(root / name, data);
    files[name] = std::move(data);
  };
  put("a.txt", tandem::test::text_like_bytes(1000, 1));
  put("d/e/edge511", tandem::test::random_bytes(511, 2));
  put("d/e/edge512", tandem::test::random_bytes(512, 3));
  put("d/e/edge513", tandem::test::random_bytes(513, 4));
  put("d/empty", {});
  put("d/big.bin", tandem::test::mixed_bytes(300000, 5));
  if (long_names) {
    put(std::string(60, 'p') + "/" + std::string(70, 'q') + "/file", tandem::test::text_like_bytes(3000, 6));
    put(std::string(120, 'r') + "/" + std::string(150, 's') + ".bin", tandem::test::random_bytes(100, 7));
  }
  if (links) {
    fs::create_symlink("a.txt", root / "sym");
    fs::create_hard_link(root / "a.txt", root / "d" / "hard");
  }
  return files;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

TEST(TarInterop, TandemReadsWhatGnuTarWrites) {
  if (!have_tool("tar")) GTEST_SKIP() << "tar is not installed";
  struct Case {
    const char* format;
    bool long_names, links;
  };
  for (const Case c : {Case{"gnu", true, true}, Case{"pax", true, true}, Case{"ustar", false, true},
                       Case{"v7", false, false}}) {
    SCOPED_TRACE(c.format);
    TempDir dir;
    const fs::path root = dir / "tree";
    const std::map<std::string, Bytes> files = make_tree(root, c.long_names, c.links);
    std::string out;
    ASSERT_EQ(run("cd " + sh_quote(root.string()) + " && tar --format=" + c.format + " -cf ../t.tar * 2>&1", &out), 0)
        << out;
    const Bytes archive = read_file(dir / "t.tar");
    ASSERT_TRUE(tar::looks_like_tar(archive.data(), archive.size()));
    std::vector<tar::Entry> entries;
    ASSERT_TRUE(tar::parse(archive.data(), archive.size(), &entries).ok());
    // The listing is tar's own.
    ASSERT_EQ(run("tar -tf " + sh_quote((dir / "t.tar").string()), &out), 0) << out;
    const std::vector<std::string> listed = lines(out);
    ASSERT_EQ(entries.size(), listed.size());
    for (std::size_t i = 0; i < entries.size(); ++i) EXPECT_EQ(entries[i].path, listed[i]);
    // Every file's bytes, and the links.
    std::size_t seen = 0;
    for (const tar::Entry& e : entries) {
      std::string path = e.path;
      if (e.kind == tar::Kind::directory) {
        EXPECT_TRUE(fs::is_directory(root / path)) << path;
        continue;
      }
      if (e.kind == tar::Kind::symlink) {
        EXPECT_EQ(path, "sym");
        EXPECT_EQ(e.link, "a.txt");
        continue;
      }
      if (e.kind == tar::Kind::hardlink) {
        EXPECT_TRUE(path == "d/hard" || path == "a.txt") << path;
        EXPECT_TRUE(e.link == "d/hard" || e.link == "a.txt") << e.link;
        continue;
      }
      ASSERT_EQ(e.kind, tar::Kind::file) << path;
      if (path == "d/hard") path = "a.txt";  // the hard link's first name, whichever tar met first
      const auto f = files.find(path);
      ASSERT_NE(f, files.end()) << path;
      ASSERT_LE(e.data_at + e.size, archive.size());
      EXPECT_EQ(Bytes(archive.begin() + static_cast<std::ptrdiff_t>(e.data_at),
                      archive.begin() + static_cast<std::ptrdiff_t>(e.data_at + e.size)),
                f->second)
          << path;
      ++seen;
    }
    EXPECT_EQ(seen, files.size());
  }
}

}  // namespace
