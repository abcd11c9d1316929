// ZIP archives in memory: what the writer writes the reader reads back
// (stored, deflated, directories, ZIP64 records, tandem's index field), and
// each kind of damage gets its status; names that would escape a directory
// are refused.
#include <cstring>
#include <string>
#include <vector>

#include "format/deflate_index.hpp"
#include "format/zip_format.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::Status;
using tandem::StatusCode;
using tandem::test::Bytes;
using tandem::test::StatusIs;
namespace zip = tandem::zip;

struct File {
  std::string name;
  Bytes data;
};

std::vector<File> sample_files() {
  return {{"a.txt", tandem::test::text_like_bytes(100000, 1)},
          {"dir/random.bin", tandem::test::random_bytes(70000, 2)},
          {"dir/empty", {}},
          {"dir/sub/constant", tandem::test::constant_bytes(300000, 'z')}};
}

Bytes write_archive(const std::vector<File>& files, int level, bool zip64) {
  zip::Writer::Options o;
  o.level = level;
  zip::Writer w(o);
  w.force_zip64(zip64);
  EXPECT_TRUE(w.add_directory("dir").ok());
  for (const File& f : files) EXPECT_TRUE(w.add_file(f.name, f.data).ok()) << f.name;
  EXPECT_TRUE(w.finish().ok());
  return w.take();
}

TEST(ZipFormat, WrittenArchivesReadBack) {
  for (const int level : {0, 1, 6, 12}) {
    for (const bool zip64 : {false, true}) {
      SCOPED_TRACE("level " + std::to_string(level) + (zip64 ? " zip64" : ""));
      const auto files = sample_files();
      const Bytes archive = write_archive(files, level, zip64);
      std::vector<zip::Entry> entries;
      ASSERT_TRUE(zip::read_directory(archive, &entries).ok());
      ASSERT_EQ(entries.size(), files.size() + 1);
      EXPECT_EQ(entries[0].name, "dir/");
      EXPECT_TRUE(entries[0].is_directory());
      EXPECT_EQ(entries[0].unix_mode(), 040755u);
      for (std::size_t i = 0; i < files.size(); ++i) {
        const zip::Entry& e = entries[i + 1];
        EXPECT_EQ(e.name, files[i].name);
        EXPECT_EQ(e.size, files[i].data.size());
        EXPECT_EQ(e.unix_mode(), 0100644u);
        // Incompressible and empty data are stored, the rest deflated (level > 0).
        const bool deflated = level > 0 && files[i].name != "dir/random.bin" && !files[i].data.empty();
        EXPECT_EQ(e.method, deflated ? zip::kDeflate : zip::kStored) << e.name;
        if (deflated) {
          // tandem's index: the chunks' sizes and the two-byte end fill the entry.
          tandem::format::DeflateIndex index;
          ASSERT_TRUE(tandem::format::parse_deflate_index(e.tandem_index.data(), e.tandem_index.size(), &index).ok());
          std::uint64_t sum = 2;
          for (const std::uint64_t c : index.compressed_sizes) sum += c;
          EXPECT_EQ(sum, e.compressed_size) << e.name;
          EXPECT_EQ(index.compressed_sizes.size(), (e.size + 65535) / 65536) << e.name;
        }
        Bytes out;
        ASSERT_TRUE(zip::extract(archive, e, &out).ok()) << e.name;
        EXPECT_EQ(out, files[i].data) << e.name;
      }
    }
  }
}

TEST(ZipFormat, TandemIndexFieldTravels) {
  zip::Writer w;
  const Bytes data = tandem::test::text_like_bytes(5000, 3);
  const Bytes index = {1, 16, 3, 0x80, 0x01, 7, 9};
  ASSERT_TRUE(w.add_raw("x", zip::kStored, data, data.size(), zip::crc32(data), 0100600, index).ok());
  ASSERT_TRUE(w.finish().ok());
  std::vector<zip::Entry> entries;
  ASSERT_TRUE(zip::read_directory(w.bytes(), &entries).ok());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].tandem_index, index);
  Bytes out;
  ASSERT_TRUE(zip::extract(w.bytes(), entries[0], &out).ok());
  EXPECT_EQ(out, data);
}

TEST(ZipFormat, UnsafeNamesAreRefused) {
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a/./b", "a//b", "C:/x", "a\\b", "..", "/"}) {
    EXPECT_FALSE(zip::safe_relative_path(bad, nullptr)) << bad;
    zip::Writer w;
    EXPECT_PRED_FORMAT2(StatusIs, w.add_file(bad, Bytes{1, 2}), StatusCode::invalid_argument) << bad;
  }
  std::string clean;
  EXPECT_TRUE(zip::safe_relative_path("a/b/c.txt", &clean));
  EXPECT_EQ(clean, "a/b/c.txt");
  EXPECT_TRUE(zip::safe_relative_path("dir/", &clean));
  EXPECT_EQ(clean, "dir");
  EXPECT_TRUE(zip::safe_relative_path("..hidden/x..y", &clean));
}

// Offsets of the records of a one-entry archive, to damage them.
struct Layout {
  Bytes archive;
  std::size_t central = 0;  // the central directory header
  std::size_t end = 0;      // the end record
};

Layout one_entry(const Bytes& data, int level) {
  zip::Writer::Options o;
  o.level = level;
  zip::Writer w(o);
  EXPECT_TRUE(w.add_file("f", data).ok());
  EXPECT_TRUE(w.finish().ok());
  Layout l;
  l.archive = w.take();
  l.end = l.archive.size() - 22;
  l.central = l.archive[l.end + 16] | (l.archive[l.end + 17] << 8) | (l.archive[l.end + 18] << 16);
  return l;
}

Status read_and_extract(const Bytes& archive) {
  std::vector<zip::Entry> entries;
  if (Status s = zip::read_directory(archive, &entries); !s) return s;
  for (const zip::Entry& e : entries) {
    Bytes out;
    if (Status s = zip::extract(archive, e, &out); !s) return s;
  }
  return {};
}

TEST(ZipFormat, DamageGetsItsStatus) {
  const Bytes data = tandem::test::text_like_bytes(20000, 4);
  const Layout base = one_entry(data, 6);
  ASSERT_TRUE(read_and_extract(base.archive).ok());
  auto damaged = [&](auto edit) {
    Bytes a = base.archive;
    edit(a);
    return read_and_extract(a);
  };
  // Cut short: no end record.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([](Bytes& a) { a.resize(10); }), StatusCode::truncated);
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a.resize(base.end + 10); }), StatusCode::bad_data);
  // The directory's offset past the end records.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.end + 19] = 0x7F; }), StatusCode::bad_data);
  // The entry count larger than the directory holds.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.end + 8] = a[base.end + 10] = 9; }),
                      StatusCode::bad_data);
  // The central header's signature.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central] ^= 1; }), StatusCode::bad_data);
  // A header offset pointing into the data: no local signature there.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central + 42] = 5; }), StatusCode::bad_data);
  // A compressed size running into the directory.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central + 22] = 0x7F; }), StatusCode::bad_data);
  // The method: local and central differ.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central + 10] = 0; }), StatusCode::bad_data);
  // An uncompressed size larger than the data inflates to.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central + 26] ^= 1; }), StatusCode::bad_data);
  // A wrong CRC-32.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central + 16] ^= 1; }),
                      StatusCode::checksum_mismatch);
  // Encrypted.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central + 8] |= 1; }), StatusCode::unsupported);
  // An unknown method in both headers.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central + 10] = a[8] = 12; }),
                      StatusCode::unsupported);
  // The deflate data itself (inside a dynamic block's header: it no longer decodes).
  std::vector<zip::Entry> entries;
  ASSERT_TRUE(zip::read_directory(base.archive, &entries).ok());
  const std::size_t data_at = static_cast<std::size_t>(entries[0].data_offset);
  EXPECT_FALSE(entries[0].tandem_index.empty());  // deflated in tandem's chunks
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[data_at + 1] ^= 0xFF; a[data_at + 2] ^= 0xFF; }),
                      StatusCode::bad_data);
  // A name with a NUL byte.
  EXPECT_PRED_FORMAT2(StatusIs, damaged([&](Bytes& a) { a[base.central + 46] = 0; }), StatusCode::bad_data);
}

TEST(ZipFormat, OverlappingEntriesAreRefused) {
  // Two central entries pointing at one local header: the second entry's
  // data is the first's.
  const Bytes data = tandem::test::text_like_bytes(1000, 5);
  zip::Writer w;
  ASSERT_TRUE(w.add_file("f", data).ok());
  ASSERT_TRUE(w.add_file("g", data).ok());
  ASSERT_TRUE(w.finish().ok());
  Bytes a = w.take();
  std::vector<zip::Entry> entries;
  ASSERT_TRUE(zip::read_directory(a, &entries).ok());
  const std::size_t end = a.size() - 22;
  const std::size_t central = a[end + 16] | (a[end + 17] << 8);
  // After the first header, its one-byte name and its extra field.
  const std::size_t second = central + 46 + 1 + (a[central + 30] | (a[central + 31] << 8));
  // Point the second entry at the first's header, under the first's name.
  a[second + 42] = a[second + 43] = a[second + 44] = a[second + 45] = 0;
  a[second + 46] = 'f';
  EXPECT_PRED_FORMAT2(StatusIs, zip::read_directory(a, &entries), StatusCode::bad_data);
}

TEST(ZipFormat, LimitsStopBombs) {
  const Bytes data = tandem::test::constant_bytes(1 << 20, 0);
  const Layout l = one_entry(data, 9);
  std::vector<zip::Entry> entries;
  zip::ReadLimits small;
  small.max_entry_size = 1000;
  EXPECT_PRED_FORMAT2(StatusIs, zip::read_directory(l.archive, &entries, small), StatusCode::output_limit);
  small = {};
  small.max_total_size = 1000;
  EXPECT_PRED_FORMAT2(StatusIs, zip::read_directory(l.archive, &entries, small), StatusCode::output_limit);
  ASSERT_TRUE(zip::read_directory(l.archive, &entries).ok());
  Bytes out;
  EXPECT_PRED_FORMAT2(StatusIs, zip::extract(l.archive, entries[0], &out, 4096), StatusCode::output_limit);
}

}  // namespace
