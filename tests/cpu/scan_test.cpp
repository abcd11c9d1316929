// The archive scanner (tandem/scan.hpp) on the CPU: a tar.gz inside a ZIP
// inside a tar.gz, every file's bytes and path; LZ4 frames and plain files;
// gzip bombs stopped by the ratio and the output limits with their reasons;
// nesting past the depth limit; a corrupted member beside good ones; the
// entry limit.
#include <filesystem>
#include <string>
#include <vector>

#include <zstd.h>

#include "support/scan_cases.hpp"
#include "support/test_support.hpp"
#include "tandem/deflate.hpp"
#include "tandem/scan.hpp"
#include "tandem/zip.hpp"

namespace tandem {
namespace {

using test::Bytes;
namespace fs = std::filesystem;

Bytes zstd(const Bytes& in, int level = 3, bool checksum = false) { return scan_cases::zstd(in, level, checksum); }

Bytes gzip(const Bytes& in) {
  DeflateOptions o;
  o.container = DeflateContainer::gzip;
  o.level = 1;
  Bytes out;
  EXPECT_TRUE(deflate_compress({in.data(), in.size()}, &out, o).ok());
  return out;
}

// A tar of `files` (name, bytes), written by the tar tool.
Bytes tar_of(const std::vector<std::pair<std::string, Bytes>>& files) {
  test::TempDir dir;
  std::string names;
  for (const auto& [name, data] : files) {
    fs::create_directories((dir / "t" / name).parent_path());
    test::write_file(dir / "t" / name, data);
    names += " " + test::sh_quote(name);
  }
  std::string out;
  EXPECT_EQ(test::run("cd " + test::sh_quote((dir / "t").string()) + " && tar -cf ../x.tar" + names, &out), 0) << out;
  return test::read_file(dir / "x.tar");
}

const ScanEntry* find(const ScanResult& r, const std::string& path) {
  for (const ScanEntry& e : r.entries) {
    if (e.path == path) return &e;
  }
  return nullptr;
}

Bytes bytes_of(const ScanResult& r, const ScanEntry& e) {
  return Bytes(r.bytes.begin() + static_cast<std::ptrdiff_t>(e.offset),
               r.bytes.begin() + static_cast<std::ptrdiff_t>(e.offset + e.size));
}

TEST(Scan, NestedArchivesThreeLayersDeep) {
  if (!test::have_tool("tar")) GTEST_SKIP() << "tar is not installed";
  const Bytes a = test::text_like_bytes(50000, 1), b = test::random_bytes(3000, 2), c = test::mixed_bytes(7000, 3),
              d = test::text_like_bytes(100, 4);
  const Bytes inner = gzip(tar_of({{"a.txt", a}, {"sub/b.bin", b}}));
  zip::Writer w;
  ASSERT_TRUE(w.add_file("pkg/inner.tar.gz", inner).ok());
  ASSERT_TRUE(w.add_file("c.txt", c).ok());
  ASSERT_TRUE(w.add_directory("empty/").ok());
  ASSERT_TRUE(w.finish().ok());
  const Bytes outer = gzip(tar_of({{"mid.zip", w.bytes()}, {"d.txt", d}}));

  ScanResult r;
  ASSERT_STATUS(scan({outer.data(), outer.size()}, "outer.tar.gz", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 4u);
  for (const ScanEntry& e : r.entries) EXPECT_TRUE(e.status.ok()) << e.path << ": " << e.status.to_string();
  const ScanEntry* ea = find(r, "outer.tar/mid.zip/pkg/inner.tar/a.txt");
  const ScanEntry* eb = find(r, "outer.tar/mid.zip/pkg/inner.tar/sub/b.bin");
  const ScanEntry* ec = find(r, "outer.tar/mid.zip/c.txt");
  const ScanEntry* ed = find(r, "outer.tar/d.txt");
  ASSERT_TRUE(ea && eb && ec && ed);
  EXPECT_EQ(bytes_of(r, *ea), a);
  EXPECT_EQ(bytes_of(r, *eb), b);
  EXPECT_EQ(bytes_of(r, *ec), c);
  EXPECT_EQ(bytes_of(r, *ed), d);
  EXPECT_EQ(ea->layer, 3);
  // The ZIP writer stores the gzip member or deflates it, whichever is
  // smaller (the tar tool's headers hold the files' times, so it varies).
  EXPECT_TRUE(ea->codec == "gzip+tar+zip:stored+gzip+tar" || ea->codec == "gzip+tar+zip:deflate+gzip+tar")
      << ea->codec;
  EXPECT_EQ(ed->layer, 1);
  EXPECT_EQ(ed->codec, "gzip+tar");
}

TEST(Scan, Lz4FramesAndPlainFiles) {
  const Bytes data = test::text_like_bytes(200000, 5);
  Bytes frame;
  ASSERT_TRUE(lz4_frame_compress({data.data(), data.size()}, &frame).ok());
  ScanResult r;
  ASSERT_STATUS(scan({frame.data(), frame.size()}, "log.lz4", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.entries[0].path, "log");
  EXPECT_EQ(r.entries[0].codec, "lz4");
  EXPECT_EQ(r.bytes, data);
  ASSERT_STATUS(scan({data.data(), data.size()}, "plain", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.entries[0].codec, "stored");
  EXPECT_EQ(r.bytes, data);
  ASSERT_STATUS(scan({nullptr, 0}, "empty", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.entries[0].size, 0u);
}

TEST(Scan, BombsStopAtTheRatioAndOutputLimits) {
  const Bytes zeros(64u << 20, 0);
  const Bytes bomb = gzip(zeros);
  ASSERT_LT(bomb.size(), zeros.size() / 500);
  ScanLimits l;
  l.max_ratio = 100;
  ScanResult r;
  ASSERT_STATUS(scan({bomb.data(), bomb.size()}, "z.gz", l, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_STATUS(r.entries[0].status, StatusCode::output_limit);
  EXPECT_NE(r.entries[0].status.to_string().find("ratio"), std::string::npos) << r.entries[0].status.to_string();
  EXPECT_TRUE(r.bytes.empty());
  l = {};
  l.max_output = 1u << 20;
  ASSERT_STATUS(scan({bomb.data(), bomb.size()}, "z.gz", l, &r), StatusCode::ok);
  EXPECT_STATUS(r.entries[0].status, StatusCode::output_limit);
  EXPECT_NE(r.entries[0].status.to_string().find("output limit"), std::string::npos);
  l = {};  // within the defaults
  ASSERT_STATUS(scan({bomb.data(), bomb.size()}, "z.gz", l, &r), StatusCode::ok);
  EXPECT_TRUE(r.entries[0].status.ok());
  EXPECT_EQ(r.bytes.size(), zeros.size());
  // A ZIP entry that claims more than the limits allow.
  zip::Writer w;
  ASSERT_TRUE(w.add_file("zeros", zeros).ok());
  ASSERT_TRUE(w.add_file("small", Bytes{1, 2, 3}).ok());
  ASSERT_TRUE(w.finish().ok());
  l.max_ratio = 100;
  ASSERT_STATUS(scan({w.bytes().data(), w.bytes().size()}, "b.zip", l, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_STATUS(r.entries[0].status, StatusCode::output_limit);
  EXPECT_TRUE(r.entries[1].status.ok());
  EXPECT_EQ(r.bytes, (Bytes{1, 2, 3}));
}

TEST(Scan, DepthLimitAndCorruptedMembers) {
  Bytes nested = test::text_like_bytes(1000, 6);
  for (int i = 0; i < 6; ++i) nested = gzip(nested);
  ScanLimits l;
  l.max_depth = 3;
  ScanResult r;
  ASSERT_STATUS(scan({nested.data(), nested.size()}, "n.gz", l, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_STATUS(r.entries[0].status, StatusCode::unsupported);
  l.max_depth = 6;
  ASSERT_STATUS(scan({nested.data(), nested.size()}, "n.gz", l, &r), StatusCode::ok);
  EXPECT_TRUE(r.entries[0].status.ok());
  EXPECT_EQ(r.bytes, test::text_like_bytes(1000, 6));

  Bytes broken = gzip(test::text_like_bytes(5000, 7));
  broken[broken.size() / 2] ^= 0xFF;
  zip::Writer w;
  ASSERT_TRUE(w.add_file("broken.gz", broken).ok());
  ASSERT_TRUE(w.add_file("fine.txt", Bytes{'o', 'k'}).ok());
  ASSERT_TRUE(w.finish().ok());
  ASSERT_STATUS(scan({w.bytes().data(), w.bytes().size()}, "m.zip", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_FALSE(r.entries[0].status.ok());
  EXPECT_EQ(r.entries[0].path, "m.zip/broken.gz");
  EXPECT_TRUE(r.entries[1].status.ok());
  EXPECT_EQ(bytes_of(r, r.entries[1]), (Bytes{'o', 'k'}));
  // A truncated ZIP is an entry with its status.
  const Bytes cut(w.bytes().begin(), w.bytes().end() - 10);
  ASSERT_STATUS(scan({cut.data(), cut.size()}, "cut.zip", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_FALSE(r.entries[0].status.ok());
  // A container over the entry limit is an entry with that status.
  zip::Writer many;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(many.add_file("f" + std::to_string(i), Bytes{1}).ok());
  ASSERT_TRUE(many.finish().ok());
  l = {};
  l.max_entries = 5;
  ASSERT_STATUS(scan({many.bytes().data(), many.bytes().size()}, "many.zip", l, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_STATUS(r.entries[0].status, StatusCode::output_limit);
  // Entries of several containers together past the limit stop the scan.
  zip::Writer two;
  ASSERT_TRUE(two.add_file("a.zip", many.bytes()).ok());
  ASSERT_TRUE(two.add_file("b.zip", many.bytes()).ok());
  ASSERT_TRUE(two.finish().ok());
  l.max_entries = 15;
  EXPECT_STATUS(scan({two.bytes().data(), two.bytes().size()}, "two.zip", l, &r), StatusCode::bad_data);
  EXPECT_EQ(r.entries.size(), 15u);
}

// A gzip layer of one member decodes in one call (its trailer's size);
// every other shape goes through the stream decoder. Either way the entry's
// bytes and status are what the stream decoder gives the whole input.
TEST(Scan, GzipMembersDecodeAsTheStreamDecoderDoes) {
  const Bytes text = test::text_like_bytes(300000, 11);
  // Written by the gzip tool: one plain member (tandem's own carry an index).
  test::TempDir dir;
  test::write_file(dir / "x", text);
  std::string log;
  ASSERT_EQ(test::run("gzip -n -6 " + test::sh_quote((dir / "x").string()), &log), 0) << log;
  const Bytes one = test::read_file(dir / "x.gz");
  const auto set_isize = [](Bytes b, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<std::uint8_t>(v >> (8 * i));
    return b;
  };
  Bytes two = one;
  const Bytes second = gzip(test::random_bytes(5000, 12));
  two.insert(two.end(), second.begin(), second.end());
  Bytes twice = one;  // the last trailer gives the first member's size too
  twice.insert(twice.end(), one.begin(), one.end());
  Bytes bad_crc = one;
  bad_crc[bad_crc.size() - 8] ^= 1;
  Bytes trailing = one;
  trailing.push_back(0);
  const Bytes cut(one.begin(), one.end() - 3);
  Bytes broken = one;
  broken[broken.size() / 2] ^= 0x5a;
  const std::vector<std::pair<const char*, Bytes>> cases = {
      {"one member", one},
      {"two members", two},
      {"the same member twice", twice},
      {"ISIZE one less", set_isize(one, static_cast<std::uint32_t>(text.size() - 1))},
      {"ISIZE one more", set_isize(one, static_cast<std::uint32_t>(text.size() + 1))},
      {"ISIZE 0", set_isize(one, 0)},
      {"CRC-32 off", bad_crc},
      {"a byte after the member", trailing},
      {"trailer cut", cut},
      {"corrupted data", broken},
  };
  for (const auto& [what, data] : cases) {
    SCOPED_TRACE(what);
    DeflateDecodeOptions o;
    o.container = DeflateContainer::gzip;
    o.threads = 1;
    Bytes want;
    const Status ref = deflate_decompress({data.data(), data.size()}, &want, o);
    ScanResult r;
    ASSERT_STATUS(scan({data.data(), data.size()}, "x.gz", {}, &r), StatusCode::ok);
    ASSERT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.entries[0].status.code, ref.code) << r.entries[0].status.to_string() << " / " << ref.to_string();
    if (ref.ok()) EXPECT_EQ(bytes_of(r, r.entries[0]), want);
  }
}

TEST(Scan, ZstdFramesConcatenatedCorruptedAndBombs) {
  if (!test::have_tool("tar")) GTEST_SKIP() << "tar is not installed";
  const Bytes a = test::text_like_bytes(300000, 8), b = test::random_bytes(4000, 9);
  const Bytes tzst = zstd(tar_of({{"a.txt", a}, {"b.bin", b}}), 19);
  ScanResult r;
  ASSERT_STATUS(scan({tzst.data(), tzst.size()}, "pkg.tzst", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.entries[0].path, "pkg.tar/a.txt");
  EXPECT_EQ(r.entries[0].codec, "zstd+tar");
  EXPECT_EQ(bytes_of(r, r.entries[0]), a);
  EXPECT_EQ(bytes_of(r, r.entries[1]), b);
  // Two frames and a skippable frame between them: one content.
  Bytes two = zstd(a, 1);
  const Bytes skippable = {0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'};
  two.insert(two.end(), skippable.begin(), skippable.end());
  const Bytes second = zstd(b, 1);
  two.insert(two.end(), second.begin(), second.end());
  ASSERT_STATUS(scan({two.data(), two.size()}, "two.zst", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  Bytes both = a;
  both.insert(both.end(), b.begin(), b.end());
  EXPECT_EQ(r.bytes, both);
  EXPECT_EQ(r.entries[0].path, "two");
  // Cut and corrupted frames.
  const Bytes cut(tzst.begin(), tzst.end() - 7);
  ASSERT_STATUS(scan({cut.data(), cut.size()}, "cut.zst", {}, &r), StatusCode::ok);
  EXPECT_STATUS(r.entries[0].status, StatusCode::truncated);
  // A corrupted frame with a content checksum (the tar tool's headers hold
  // the files' times, so a frame of its output may or may not decode to
  // wrong bytes; a checksum always catches them).
  Bytes bad = zstd(a, 3, true);
  bad[bad.size() / 2] ^= 0x55;
  ASSERT_STATUS(scan({bad.data(), bad.size()}, "bad.zst", {}, &r), StatusCode::ok);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_FALSE(r.entries[0].status.ok());
  // A bomb.
  const Bytes bomb = zstd(Bytes(64u << 20, 0), 3);
  ScanLimits l;
  l.max_ratio = 100;
  ASSERT_STATUS(scan({bomb.data(), bomb.size()}, "z.zst", l, &r), StatusCode::ok);
  EXPECT_STATUS(r.entries[0].status, StatusCode::output_limit);
  EXPECT_NE(r.entries[0].status.to_string().find("ratio"), std::string::npos) << r.entries[0].status.to_string();
}

// Regression: a frame whose content is a whole number of libzstd's stream
// output buffers (128 KiB) was "cut short": its last call filled the buffer
// and said 0, and one more call started a frame that was not there.
TEST(Scan, ZstdContentOfWholeOutputBuffers) {
  for (const std::size_t n : {std::size_t{128} << 10, std::size_t{512} << 10, std::size_t{1} << 20}) {
    const Bytes ones(n, 9), text = test::text_like_bytes(n, 13);
    for (const Bytes* content : {&ones, &text}) {
      const Bytes frame = zstd(*content, 1, true);
      ScanLimits l;
      l.max_ratio = 1u << 20;
      ScanResult r;
      ASSERT_STATUS(scan({frame.data(), frame.size()}, "x.zst", l, &r), StatusCode::ok);
      ASSERT_EQ(r.entries.size(), 1u);
      EXPECT_TRUE(r.entries[0].status.ok()) << n << ": " << r.entries[0].status.to_string();
      EXPECT_EQ(r.bytes, *content);
    }
  }
}

TEST(Scan, ManyArchivesOnSeveralThreadsEqualOneByOne) {
  std::vector<Bytes> archives;
  archives.push_back(gzip(test::text_like_bytes(40000, 10)));
  archives.push_back(zstd(test::mixed_bytes(30000, 11), 5, true));
  Bytes frame;
  ASSERT_TRUE(lz4_frame_compress({archives[0].data(), archives[0].size()}, &frame).ok());
  archives.push_back(frame);
  zip::Writer w;
  ASSERT_TRUE(w.add_file("x.gz", archives[0]).ok());
  ASSERT_TRUE(w.add_file("y.txt", test::text_like_bytes(999, 12)).ok());
  ASSERT_TRUE(w.finish().ok());
  archives.push_back(w.bytes());
  Bytes broken = archives[1];
  broken[broken.size() / 2] ^= 0x33;
  archives.push_back(broken);
  archives.push_back({});
  std::vector<ScanInput> in;
  for (std::size_t i = 0; i < archives.size(); ++i) {
    in.push_back({{archives[i].data(), archives[i].size()}, "a" + std::to_string(i) + (i == 1 ? ".zst" : "")});
  }
  for (unsigned threads : {0u, 1u, 3u}) {
    std::vector<ScanResult> many;
    ASSERT_STATUS(scan_many(in, {}, threads, &many), StatusCode::ok);
    ASSERT_EQ(many.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      ScanResult one;
      ASSERT_STATUS(scan(in[i].archive, in[i].name, {}, &one), StatusCode::ok);
      EXPECT_EQ(many[i].bytes, one.bytes) << i;
      ASSERT_EQ(many[i].entries.size(), one.entries.size()) << i;
      for (std::size_t k = 0; k < one.entries.size(); ++k) {
        EXPECT_EQ(many[i].entries[k].path, one.entries[k].path);
        EXPECT_EQ(many[i].entries[k].codec, one.entries[k].codec);
        EXPECT_EQ(many[i].entries[k].offset, one.entries[k].offset);
        EXPECT_EQ(many[i].entries[k].size, one.entries[k].size);
        EXPECT_EQ(many[i].entries[k].status.code, one.entries[k].status.code);
      }
    }
  }
  EXPECT_STATUS(scan_many(in, {}, 1, nullptr), StatusCode::invalid_argument);
  std::vector<ScanResult> none;
  ASSERT_STATUS(scan_many({}, {}, 0, &none), StatusCode::ok);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace tandem
