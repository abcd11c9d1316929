// ZIP interop both ways: archives tandem writes are tested and extracted by
// `unzip`, byte for byte; archives `zip` writes (deflated, stored, with
// directories, and ZIP64 from `zip -fz`) are read and extracted by tandem.
#include <filesystem>
#include <string>
#include <vector>

#include "format/zip_format.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::test::Bytes;
using tandem::test::have_tool;
using tandem::test::read_file;
using tandem::test::run;
using tandem::test::sh_quote;
using tandem::test::TempDir;
using tandem::test::write_file;
namespace zip = tandem::zip;
namespace fs = std::filesystem;

struct File {
  std::string name;
  Bytes data;
};

std::vector<File> files() {
  std::vector<File> f = {{"text.txt", tandem::test::text_like_bytes(200000, 11)},
                         {"d/random.bin", tandem::test::random_bytes(100000, 12)},
                         {"d/e/mixed.bin", tandem::test::mixed_bytes(150000, 13)},
                         {"empty", {}}};
  const fs::path corpus = tandem::test::silesia_dir();
  if (!corpus.empty()) f.push_back({"silesia/xml", read_file(corpus / "xml")});
  return f;
}

TEST(ZipInterop, UnzipReadsWhatTandemWrites) {
  if (!have_tool("unzip")) GTEST_SKIP() << "unzip is not installed";
  for (const bool zip64 : {false, true}) {
    SCOPED_TRACE(zip64 ? "zip64" : "classic");
    TempDir dir;
    zip::Writer w;
    w.force_zip64(zip64);
    const auto fs_ = files();
    for (const File& f : fs_) ASSERT_TRUE(w.add_file(f.name, f.data).ok());
    ASSERT_TRUE(w.finish().ok());
    write_file(dir / "t.zip", w.bytes());
    std::string out;
    ASSERT_EQ(run("unzip -tq " + sh_quote((dir / "t.zip").string()), &out), 0) << out;
    ASSERT_EQ(run("cd " + sh_quote(dir.path().string()) + " && mkdir x && cd x && unzip -q ../t.zip", &out), 0)
        << out;
    for (const File& f : fs_) EXPECT_EQ(read_file(dir / "x" / f.name), f.data) << f.name;
  }
}

TEST(ZipInterop, TandemReadsWhatZipWrites) {
  if (!have_tool("zip")) GTEST_SKIP() << "zip is not installed";
  for (const std::string flags : {"-q -r", "-q -r -0", "-q -r -9", "-q -r -fz"}) {
    SCOPED_TRACE(flags);
    TempDir dir;
    const auto fs_ = files();
    for (const File& f : fs_) {
      fs::create_directories((dir / "in" / f.name).parent_path());
      write_file(dir / "in" / f.name, f.data);
    }
    std::string out;
    ASSERT_EQ(run("cd " + sh_quote((dir / "in").string()) + " && zip " + flags + " ../z.zip .", &out), 0) << out;
    const Bytes archive = read_file(dir / "z.zip");
    std::vector<zip::Entry> entries;
    ASSERT_TRUE(zip::read_directory(archive, &entries).ok());
    std::size_t found = 0;
    for (const zip::Entry& e : entries) {
      std::string clean;
      ASSERT_TRUE(zip::safe_relative_path(e.name, &clean)) << e.name;
      if (e.is_directory()) continue;
      Bytes data;
      ASSERT_TRUE(zip::extract(archive, e, &data).ok()) << e.name;
      for (const File& f : fs_) {
        if (f.name == clean) {
          EXPECT_EQ(data, f.data) << e.name;
          ++found;
        }
      }
    }
    EXPECT_EQ(found, fs_.size());
  }
}

TEST(ZipInterop, StreamedZipWithDataDescriptorsReads) {
  // `zip -` from a pipe writes sizes after the data (general purpose bit 3).
  if (!have_tool("zip")) GTEST_SKIP() << "zip is not installed";
  TempDir dir;
  const Bytes data = tandem::test::text_like_bytes(300000, 14);
  write_file(dir / "in", data);
  std::string out;
  ASSERT_EQ(run("cd " + sh_quote(dir.path().string()) + " && zip -q - - < in | cat > s.zip", &out), 0) << out;
  const Bytes archive = read_file(dir / "s.zip");
  std::vector<zip::Entry> entries;
  ASSERT_TRUE(zip::read_directory(archive, &entries).ok());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].flags & 8);
  Bytes got;
  ASSERT_TRUE(zip::extract(archive, entries[0], &got).ok());
  EXPECT_EQ(got, data);
}

}  // namespace
