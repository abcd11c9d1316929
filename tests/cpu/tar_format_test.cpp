// tar archives (format/tar_format.hpp) built here header by header: ustar
// names with a prefix, GNU long names and links, pax records (path,
// linkpath, size, mtime), base-256 sizes, v7 directories, entries of every
// kind, the end of an archive with and without its zero blocks; and
// malformed archives with their exact statuses: checksums, numbers, pax
// records, cuts at every boundary, sizes past the input, the limits.
#include <cstring>
#include <string>
#include <vector>

#include "format/tar_format.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

using test::Bytes;

// One 512-byte header; fields as tar writes them.
struct Header {
  std::string name, linkname, prefix;
  char typeflag = '0';
  std::uint64_t size = 0;
  std::uint32_t mode = 0644;
  std::uint64_t mtime = 1700000000;
  bool posix = true;        // "ustar\0" "00", else GNU's "ustar  \0"
  bool base256_size = false;
};

void octal(std::uint8_t* p, std::size_t width, std::uint64_t v) {
  // width - 1 digits and a NUL
  for (std::size_t i = width - 1; i-- > 0;) {
    p[i] = static_cast<std::uint8_t>('0' + (v & 7));
    v >>= 3;
  }
  p[width - 1] = 0;
}

Bytes header(const Header& h) {
  Bytes b(tar::kBlockBytes, 0);
  std::memcpy(b.data(), h.name.data(), std::min<std::size_t>(h.name.size(), 100));
  octal(&b[100], 8, h.mode);
  octal(&b[108], 8, 0);
  octal(&b[116], 8, 0);
  if (h.base256_size) {
    b[124] = 0x80;
    for (int i = 0; i < 8; ++i) b[135 - i] = static_cast<std::uint8_t>(h.size >> (8 * i));
  } else {
    octal(&b[124], 12, h.size);
  }
  octal(&b[136], 12, h.mtime);
  b[156] = static_cast<std::uint8_t>(h.typeflag);
  std::memcpy(&b[157], h.linkname.data(), std::min<std::size_t>(h.linkname.size(), 100));
  std::memcpy(&b[257], h.posix ? "ustar\0" "00" : "ustar  \0", 8);
  std::memcpy(&b[345], h.prefix.data(), std::min<std::size_t>(h.prefix.size(), 155));
  std::memset(&b[148], ' ', 8);
  std::uint32_t sum = 0;
  for (const std::uint8_t c : b) sum += c;
  octal(&b[148], 7, sum);  // six digits, NUL, then the space left
  b[155] = ' ';
  return b;
}

void append(Bytes* a, const Bytes& b) { a->insert(a->end(), b.begin(), b.end()); }

void add(Bytes* a, Header h, const Bytes& data) {
  if (!h.base256_size) h.size = data.size();
  append(a, header(h));
  append(a, data);
  a->resize((a->size() + 511) / 512 * 512, 0);
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

std::string pax_record(const std::string& key, const std::string& value) {
  const std::string body = " " + key + "=" + value + "\n";
  std::size_t len = body.size() + 1;
  while (std::to_string(len).size() + body.size() != len) ++len;
  return std::to_string(len) + body;
}

void finish(Bytes* a) { a->resize(a->size() + 2 * tar::kBlockBytes, 0); }

Status parse(const Bytes& a, std::vector<tar::Entry>* e, const tar::Limits& l = {}) {
  return tar::parse(a.data(), a.size(), e, l);
}

TEST(TarFormat, EntriesOfEveryKindAndTheirNames) {
  Bytes a;
  const Bytes data = test::text_like_bytes(1300, 1);
  add(&a, {.name = "dir/", .typeflag = '5', .mode = 0755}, {});
  add(&a, {.name = "file.txt", .prefix = "dir/sub"}, data);
  add(&a, {.name = "link", .linkname = "dir/sub/file.txt", .typeflag = '2'}, {});
  add(&a, {.name = "hard", .linkname = "link", .typeflag = '1'}, {});
  add(&a, {.name = "fifo", .typeflag = '6'}, {});
  add(&a, {.name = "gnu", .prefix = "ignored", .posix = false}, text("x"));
  add(&a, {.name = "old/", .typeflag = '\0'}, {});
  finish(&a);
  ASSERT_TRUE(tar::looks_like_tar(a.data(), a.size()));
  std::vector<tar::Entry> e;
  ASSERT_STATUS(parse(a, &e), StatusCode::ok);
  ASSERT_EQ(e.size(), 7u);
  EXPECT_EQ(e[0].path, "dir/");
  EXPECT_EQ(e[0].kind, tar::Kind::directory);
  EXPECT_EQ(e[0].mode, 0755u);
  EXPECT_EQ(e[1].path, "dir/sub/file.txt");
  EXPECT_EQ(e[1].kind, tar::Kind::file);
  EXPECT_EQ(e[1].size, data.size());
  EXPECT_EQ(Bytes(a.begin() + static_cast<std::ptrdiff_t>(e[1].data_at),
                  a.begin() + static_cast<std::ptrdiff_t>(e[1].data_at + e[1].size)),
            data);
  EXPECT_EQ(e[1].mtime, 1700000000);
  EXPECT_EQ(e[2].kind, tar::Kind::symlink);
  EXPECT_EQ(e[2].link, "dir/sub/file.txt");
  EXPECT_EQ(e[3].kind, tar::Kind::hardlink);
  EXPECT_EQ(e[4].kind, tar::Kind::other);
  EXPECT_EQ(e[5].path, "gnu") << "GNU headers keep no prefix";
  EXPECT_EQ(e[6].kind, tar::Kind::directory) << "a v7 directory by its slash";
  // Without the end's zero blocks, and with padding after them.
  Bytes open(a.begin(), a.end() - 2 * tar::kBlockBytes);
  ASSERT_STATUS(parse(open, &e), StatusCode::ok);
  EXPECT_EQ(e.size(), 7u);
  Bytes padded = a;
  padded.resize(10240 * 2, 0);
  padded.back() = 0xAB;  // after the end: not read
  ASSERT_STATUS(parse(padded, &e), StatusCode::ok);
  EXPECT_EQ(e.size(), 7u);
}

TEST(TarFormat, GnuLongNamesPaxRecordsAndBase256) {
  const std::string long_name = std::string(150, 'n') + "/" + std::string(120, 'm');
  const std::string long_link = std::string(200, 'l');
  Bytes a;
  add(&a, {.name = "././@LongLink", .typeflag = 'L', .posix = false}, text(long_name + '\0'));
  add(&a, {.name = "././@LongLink", .typeflag = 'K', .posix = false}, text(long_link + '\0'));
  add(&a, {.name = "short", .typeflag = '2', .posix = false}, {});
  const Bytes data = test::random_bytes(777, 2);
  add(&a, {.name = "PaxHeaders/x", .typeflag = 'x'},
      text(pax_record("path", "p\xc3\xa4x/" + long_name) + pax_record("mtime", "1234567890.5") +
           pax_record("linkpath", "t") + pax_record("comment", "any key is read past")));
  add(&a, {.name = "truncated-name"}, data);
  add(&a, {.name = "g", .typeflag = 'g'}, text(pax_record("path", "global, not applied")));
  add(&a, {.name = "big", .base256_size = true}, {});  // size 0 in base 256
  finish(&a);
  std::vector<tar::Entry> e;
  ASSERT_STATUS(parse(a, &e), StatusCode::ok);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].path, long_name);
  EXPECT_EQ(e[0].link, long_link);
  EXPECT_EQ(e[1].path, "p\xc3\xa4x/" + long_name);
  EXPECT_EQ(e[1].link, "t");
  EXPECT_EQ(e[1].mtime, 1234567890);
  EXPECT_EQ(e[1].size, data.size());
  EXPECT_EQ(e[2].path, "big") << "records apply to the next entry only";
  EXPECT_EQ(e[2].size, 0u);
}

TEST(TarFormat, PaxSizeOverridesTheHeader) {
  Bytes a;
  const Bytes data = test::text_like_bytes(3000, 3);
  add(&a, {.name = "x", .typeflag = 'x'}, text(pax_record("size", "3000")));
  Header h{.name = "f"};
  append(&a, header(h));  // the header says 0
  append(&a, data);
  a.resize((a.size() + 511) / 512 * 512, 0);
  add(&a, {.name = "after"}, text("tail"));
  finish(&a);
  std::vector<tar::Entry> e;
  ASSERT_STATUS(parse(a, &e), StatusCode::ok);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].size, 3000u);
  EXPECT_EQ(e[1].path, "after");
}

TEST(TarFormatMalformed, ChecksumsNumbersRecordsAndCuts) {
  Bytes a;
  add(&a, {.name = "a"}, test::text_like_bytes(2000, 4));
  add(&a, {.name = "b"}, text("bb"));
  finish(&a);
  std::vector<tar::Entry> e;
  Bytes bad = a;
  bad[10] ^= 1;  // the name: the checksum no longer holds
  EXPECT_STATUS(parse(bad, &e), StatusCode::bad_data);
  EXPECT_FALSE(tar::looks_like_tar(bad.data(), bad.size()));
  // A size with a digit 8: the checksum is recomputed, the number is bad.
  Header h{.name = "c"};
  Bytes c = header(h);
  c[130] = '8';
  std::memset(&c[148], ' ', 8);
  std::uint32_t sum = 0;
  for (const std::uint8_t x : c) sum += x;
  octal(&c[148], 7, sum);
  c[155] = ' ';
  EXPECT_STATUS(tar::parse(c.data(), c.size(), &e), StatusCode::bad_data);
  // A negative base-256 size.
  Bytes n = header({.name = "n", .size = 1, .base256_size = true});
  n[124] = 0xFF;
  std::memset(&n[148], ' ', 8);
  sum = 0;
  for (const std::uint8_t x : n) sum += x;
  octal(&n[148], 7, sum);
  n[155] = ' ';
  EXPECT_STATUS(tar::parse(n.data(), n.size(), &e), StatusCode::bad_data);
  // Malformed pax records.
  for (const std::string& rec : {std::string("5 a=b\n"), std::string("99 path=x\n"), std::string("7 path\n"),
                                 std::string("x path=y\n"), pax_record("size", "12z")}) {
    Bytes p;
    add(&p, {.name = "x", .typeflag = 'x'}, text(rec));
    add(&p, {.name = "f"}, {});
    finish(&p);
    EXPECT_STATUS(parse(p, &e), StatusCode::bad_data) << rec;
  }
  // Every cut: truncated inside a header or an entry's data; ok where the
  // data is whole (a cut in its padding or in the end's zero blocks ends
  // the archive there). a: header [0, 512), data [512, 2512), padding to
  // 2560; b: header [2560, 3072), data [3072, 3074), padding to 3584.
  for (std::size_t cut = 0; cut < a.size(); ++cut) {
    const Bytes part(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(cut));
    const bool whole = cut == 0 || (cut >= 2512 && cut <= 2560) || cut >= 3074;
    EXPECT_STATUS(parse(part, &e), whole ? StatusCode::ok : StatusCode::truncated) << "cut at " << cut;
  }
  // A size past the input.
  Bytes big = header({.name = "big", .size = 1u << 30});
  EXPECT_STATUS(tar::parse(big.data(), big.size(), &e), StatusCode::truncated);
}

TEST(TarFormatMalformed, Limits) {
  Bytes a;
  for (int i = 0; i < 5; ++i) add(&a, {.name = "f" + std::to_string(i)}, text("x"));
  finish(&a);
  std::vector<tar::Entry> e;
  tar::Limits l;
  l.max_entries = 4;
  EXPECT_STATUS(parse(a, &e, l), StatusCode::bad_data);
  EXPECT_EQ(e.size(), 4u) << "the entries before the failure";
  Bytes m;
  add(&m, {.name = "L", .typeflag = 'L', .posix = false}, Bytes(5000, 'a'));
  add(&m, {.name = "f"}, {});
  finish(&m);
  l = {};
  l.max_meta = 4096;
  EXPECT_STATUS(parse(m, &e, l), StatusCode::bad_data);
  l.max_meta = 5000;
  EXPECT_STATUS(parse(m, &e, l), StatusCode::ok);
  EXPECT_EQ(e[0].path, std::string(5000, 'a'));
}

}  // namespace
}  // namespace tandem
