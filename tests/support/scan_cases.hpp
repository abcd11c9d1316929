// Archives for the scanner's tests: every kind scan() reads and the hostile
// cases, built in memory (tar by the tar tool when it is installed), and a
// check that scan_to_device gives exactly what scan() gives for each. Shared
// by tests/cpu/scan_device_test.cpp (the emulation) and
// tests/gpu/scan_gpu_test.cpp (the device).
#pragma once

#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "tandem/deflate.hpp"
#include "tandem/scan.hpp"
#include "tandem/scan_gpu.hpp"
#include "tandem/zip.hpp"

namespace tandem::scan_cases {

using test::Bytes;

inline Bytes zstd(const Bytes& in, int level = 3, bool checksum = false, bool content_size = true) {
  Bytes out(ZSTD_compressBound(in.size()));
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  const std::size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
  ZSTD_freeCCtx(c);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// A zstd frame of raw and RLE blocks only (64 KiB each: RLE where a block
// is one byte repeated), with a content size and optionally a checksum: what
// the GPU decodes whole, where libzstd's frames of such content may still
// hold a compressed block.
inline Bytes zstd_raw_rle(const Bytes& content, bool checksum) {
  Bytes f = {0x28, 0xB5, 0x2F, 0xFD, static_cast<std::uint8_t>(0xA0 | (checksum ? 0x04 : 0))};
  for (int i = 0; i < 4; ++i) f.push_back(static_cast<std::uint8_t>(content.size() >> (8 * i)));
  constexpr std::size_t kBlock = 64u << 10;
  std::size_t at = 0;
  do {
    const std::size_t n = std::min(kBlock, content.size() - at);
    const bool rle = n > 0 && std::all_of(content.begin() + static_cast<std::ptrdiff_t>(at),
                                          content.begin() + static_cast<std::ptrdiff_t>(at + n),
                                          [&](std::uint8_t b) { return b == content[at]; });
    const std::uint32_t h = (at + n == content.size() ? 1u : 0u) | (rle ? 1u : 0u) << 1 | static_cast<std::uint32_t>(n) << 3;
    f.push_back(static_cast<std::uint8_t>(h));
    f.push_back(static_cast<std::uint8_t>(h >> 8));
    f.push_back(static_cast<std::uint8_t>(h >> 16));
    if (rle) {
      f.push_back(content[at]);
    } else {
      f.insert(f.end(), content.begin() + static_cast<std::ptrdiff_t>(at),
               content.begin() + static_cast<std::ptrdiff_t>(at + n));
    }
    at += n;
  } while (at < content.size());
  if (checksum) {
    const std::uint32_t sum = static_cast<std::uint32_t>(XXH64(content.data(), content.size(), 0));
    for (int i = 0; i < 4; ++i) f.push_back(static_cast<std::uint8_t>(sum >> (8 * i)));
  }
  return f;
}

// gzip as the gzip tool and zlib write it (one member, no extra field).
inline Bytes gzip(const Bytes& in, int level = 6) { return test::zlib_deflate(in, 31, level); }

// gzip as tandem writes it (a chunk index in the header for larger inputs).
inline Bytes gzip_indexed(const Bytes& in, int level = 1) {
  DeflateOptions o;
  o.container = DeflateContainer::gzip;
  o.level = level;
  Bytes out;
  EXPECT_TRUE(deflate_compress({in.data(), in.size()}, &out, o).ok());
  return out;
}

inline Bytes lz4(const Bytes& in, std::size_t block = 64u << 10, bool block_checksum = false,
                 bool content_checksum = true, bool content_size = true, bool linked = false) {
  Lz4FrameOptions o;
  o.block_size = block;
  o.block_checksum = block_checksum;
  o.content_checksum = content_checksum;
  o.content_size = content_size;
  o.linked_blocks = linked;
  o.backend = Backend::cpu;
  Bytes out;
  EXPECT_TRUE(lz4_frame_compress({in.data(), in.size()}, &out, o).ok());
  return out;
}

inline Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A tar of `files` (name, bytes), written by the tar tool; empty without it.
inline Bytes tar_of(const std::vector<std::pair<std::string, Bytes>>& files) {
  if (!test::have_tool("tar")) return {};
  test::TempDir dir;
  std::string names;
  for (const auto& [name, data] : files) {
    std::filesystem::create_directories((dir / "t" / name).parent_path());
    test::write_file(dir / "t" / name, data);
    names += " " + test::sh_quote(name);
  }
  std::string out;
  EXPECT_EQ(test::run("cd " + test::sh_quote((dir / "t").string()) + " && tar -cf ../x.tar" + names, &out), 0) << out;
  return test::read_file(dir / "x.tar");
}

inline Bytes zip_of(const std::vector<std::pair<std::string, Bytes>>& files, int level = 6) {
  zip::Writer::Options o;
  o.level = level;
  zip::Writer w(o);
  for (const auto& [name, data] : files) EXPECT_TRUE(w.add_file(name, data).ok()) << name;
  EXPECT_TRUE(w.finish().ok());
  return w.take();
}

// Replaces every occurrence of `from` by `to` (same length) in a: names in
// ZIP headers, which no checksum covers.
inline void rename_in_place(Bytes* a, const std::string& from, const std::string& to) {
  for (std::size_t i = 0; i + from.size() <= a->size(); ++i) {
    if (std::memcmp(a->data() + i, from.data(), from.size()) == 0) std::memcpy(a->data() + i, to.data(), to.size());
  }
}

struct Case {
  std::string name;
  Bytes bytes;
};

// Every kind of archive and hostile input of the scanner's tests.
inline std::vector<Case> all_cases() {
  std::vector<Case> c;
  const Bytes text = test::text_like_bytes(200000, 21), rnd = test::random_bytes(150000, 22),
              mixed = test::mixed_bytes(90000, 23), small = test::text_like_bytes(100, 24);
  // Plain files, empty input.
  c.push_back({"plain", mixed});
  c.push_back({"empty", {}});
  // gzip: one member, two members, lying and corrupted trailers, cut.
  const Bytes gz = gzip(text);
  c.push_back({"text.gz", gz});
  c.push_back({"indexed.gz", gzip_indexed(text)});
  c.push_back({"big.gz", gzip(cat(rnd, cat(text, rnd)), 1)});
  c.push_back({"two.gz", cat(gzip(small), gzip(mixed))});
  for (int field = 0; field < 2; ++field) {
    Bytes lie = gz;
    lie[lie.size() - 8 + field * 4] ^= 0x01;  // CRC, then ISIZE
    c.push_back({"lie" + std::to_string(field) + ".gz", lie});
  }
  c.push_back({"cut.gz", Bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2))});
  c.push_back({"head.gz", Bytes(gz.begin(), gz.begin() + 5)});
  Bytes flipped = gz;
  flipped[flipped.size() / 3] ^= 0x40;
  c.push_back({"flip.gz", flipped});
  // zstd at levels 1..19, with and without checksums and content sizes.
  for (int level = 1; level <= 19; ++level) {
    c.push_back({"l" + std::to_string(level) + ".zst", zstd(text, level, level % 2 == 0, level % 3 != 0)});
  }
  c.push_back({"sum.zst", zstd(mixed, 3, true)});
  // Raw- and RLE-heavy frames: incompressible data, runs of one byte, both.
  c.push_back({"raw.zst", zstd(rnd, 1, true)});
  c.push_back({"rle.zst", zstd(Bytes(600000, 0x61), 1, true)});
  c.push_back({"rawrle.zst", cat(zstd(rnd, 1, true, false), zstd(Bytes(300000, 7), 3, false))});
  const Bytes runs = cat(cat(Bytes(200000, 7), test::random_bytes(70000, 26)), Bytes(140000, 0));
  c.push_back({"known.zst", cat(zstd_raw_rle(runs, true), zstd_raw_rle(small, false))});
  Bytes known_bad = zstd_raw_rle(runs, true);
  known_bad[known_bad.size() - 5] ^= 0x08;  // raw content: only the checksum sees it
  c.push_back({"knownbad.zst", known_bad});
  Bytes skip = zstd(small, 1);
  const Bytes skippable = {0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'};
  skip = cat(cat(skip, skippable), zstd(rnd, 1, true));
  c.push_back({"skip.zst", skip});
  Bytes badsum = zstd(rnd, 1, true);
  badsum[badsum.size() / 2] ^= 0x10;  // inside a raw block: only the checksum sees it
  c.push_back({"badsum.zst", badsum});
  Bytes badz = zstd(text, 3, true);
  badz[badz.size() / 2] ^= 0x55;
  c.push_back({"bad.zst", badz});
  c.push_back({"cut.zst", Bytes(badsum.begin(), badsum.end() - 7)});
  // LZ4 frames: block sizes, checksums, content sizes, linked blocks, several frames.
  c.push_back({"t.lz4", lz4(text)});
  c.push_back({"r.lz4", lz4(rnd, 64u << 10, true)});
  c.push_back({"big.lz4", lz4(cat(text, rnd), 256u << 10, true, true, false)});
  c.push_back({"nosize.lz4", lz4(mixed, 64u << 10, false, false, false)});
  c.push_back({"linked.lz4", lz4(text, 64u << 10, false, true, true, true)});
  c.push_back({"two.lz4", cat(lz4(small), lz4(mixed, 64u << 10, false, true, false))});
  Bytes badl = lz4(text);
  badl[badl.size() - 2] ^= 0x21;  // the content checksum
  c.push_back({"badsum.lz4", badl});
  const Bytes tl = lz4(text);
  c.push_back({"cut.lz4", Bytes(tl.begin(), tl.begin() + static_cast<std::ptrdiff_t>(tl.size() / 2))});
  // ZIP: stored and deflated entries, a corrupted member, a CRC mismatch,
  // traversal names, a cut archive.
  const Bytes z = zip_of({{"a.txt", text}, {"r.bin", rnd}, {"in.gz", gz}, {"s.txt", small}, {"dir/x.zst", zstd(mixed)}});
  c.push_back({"m.zip", z});
  c.push_back({"stored.zip", zip_of({{"a.txt", text}, {"b", small}}, 0)});
  Bytes broken = gzip(test::text_like_bytes(5000, 25));
  broken[broken.size() / 2] ^= 0xFF;
  c.push_back({"broken.zip", zip_of({{"broken.gz", broken}, {"fine.txt", small}})});
  Bytes crc = zip_of({{"a.txt", text}, {"b.txt", small}}, 0);
  crc[40] ^= 0x01;  // inside a.txt's stored bytes
  c.push_back({"crc.zip", crc});
  Bytes trav = zip_of({{"aa/x.txt", small}, {"bb", mixed}});
  rename_in_place(&trav, "aa/x.txt", "../x.txt");
  c.push_back({"trav.zip", trav});
  c.push_back({"cut.zip", Bytes(z.begin(), z.end() - 10)});
  // Bombs: at the ratio and output limits (the tests' limits are below).
  const Bytes zeros(16u << 20, 0);
  c.push_back({"bomb.gz", gzip(zeros)});
  c.push_back({"bomb.zst", zstd(zeros, 3)});
  c.push_back({"bomb.lz4", lz4(zeros)});
  c.push_back({"bomb.zip", zip_of({{"zeros", zeros}, {"small", small}})});
  // Depth: gzip six times over.
  Bytes nested = small;
  for (int i = 0; i < 6; ++i) nested = gzip(nested);
  c.push_back({"n.gz", nested});
  // Tars (by the tar tool): nested three layers deep, tar.zst, tar.lz4, cut.
  const Bytes inner = tar_of({{"a.txt", text}, {"sub/b.bin", rnd}});
  if (!inner.empty()) {
    const Bytes mid = zip_of({{"pkg/inner.tar.gz", gzip(inner)}, {"c.txt", mixed}, {"d.tar.zst", zstd(inner, 5, true)}});
    c.push_back({"outer.tar.gz", gzip(tar_of({{"mid.zip", mid}, {"d.txt", small}, {"e.lz4", lz4(text)}}))});
    c.push_back({"pkg.tzst", zstd(inner, 19, true)});
    c.push_back({"pkg.tar.lz4", lz4(inner, 64u << 10, true)});
    c.push_back({"cut.tar", Bytes(inner.begin(), inner.begin() + 700)});
    c.push_back({"plain.tar", inner});
    // A member named ../evil.txt (the tar tool will not write one): the
    // name edited in the header and its checksum made again.
    Bytes trav_tar = tar_of({{"zz/evil.txt", small}, {"ok.txt", small}});
    if (trav_tar.size() >= 512) {
      std::memcpy(trav_tar.data(), "..", 2);
      std::memset(trav_tar.data() + 148, ' ', 8);
      unsigned sum = 0;
      for (int i = 0; i < 512; ++i) sum += trav_tar[static_cast<std::size_t>(i)];
      std::snprintf(reinterpret_cast<char*>(trav_tar.data()) + 148, 8, "%06o", sum);
      trav_tar[155] = ' ';
    }
    c.push_back({"trav.tar", trav_tar});
  }
  return c;
}

// The limits the cases run under: small enough that the bombs hit them.
// Well-formed archives of every kind the device decodes whole (gzip, LZ4
// frames, zstd with compressed and with raw and RLE blocks, ZIP, tar.gz),
// of text and random bytes `scale` times 300 and 200 KB.
inline std::vector<Case> well_formed_cases(std::size_t scale, std::uint64_t seed) {
  const Bytes text = test::text_like_bytes(300000 * scale, seed), rnd = test::random_bytes(200000 * scale, seed + 1);
  std::vector<Case> cases = {{"a.gz", gzip(text)},
                             {"b.lz4", lz4(text, 64u << 10, true)},
                             {"c.zst", zstd(rnd, 1, true)},
                             {"d.zst", zstd_raw_rle(cat(Bytes(scale * (4u << 17), 9), rnd), true)},
                             {"e.zip", zip_of({{"x", text}, {"y", rnd}})}};
  const Bytes tar = tar_of({{"t.txt", text}, {"u.bin", rnd}});
  if (!tar.empty()) cases.push_back({"f.tar.gz", gzip(tar)});
  return cases;
}

inline std::vector<ScanLimits> all_limits() {
  std::vector<ScanLimits> l(4);
  l[1].max_ratio = 100;
  l[2].max_output = 3u << 20;
  l[3].max_depth = 3;
  l[3].max_entries = 6;
  return l;
}

// The call's phases cover it whole: they add up to its `seconds`, and the
// time inside the device's calls is part of the device's phase.
inline void expect_phases_add_up(const DeviceScanStats& s) {
  double sum = 0;
  for (const DeviceScanStats::Phase& p : s.phases()) {
    EXPECT_GE(p.seconds, 0.0) << p.name;
    sum += p.seconds;
  }
  EXPECT_GT(s.seconds, 0.0);
  EXPECT_NEAR(sum, s.seconds, 1e-9);
  EXPECT_LE(s.device_call_seconds, s.device_seconds + 1e-9);
}

// scan_to_device over `cases` in one batch equals scan() on each.
inline void expect_same_as_scan(const std::vector<Case>& cases, const ScanLimits& limits,
                                const DeviceScanOptions& options, DeviceScanResult* out = nullptr) {
  std::vector<ScanInput> in;
  for (const Case& c : cases) in.push_back({{c.bytes.data(), c.bytes.size()}, c.name});
  DeviceScanResult r;
  Status want_call;
  std::vector<ScanResult> want(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Status s = scan(in[i].archive, in[i].name, limits, &want[i]);
    if (!s && want_call) want_call = s;
  }
  const Status got_call = scan_to_device(in, limits, options, &r);
  EXPECT_EQ(got_call.code, want_call.code) << got_call.to_string();
  expect_phases_add_up(r.stats);
  Bytes bytes;
  ASSERT_TRUE(r.copy_to_host(&bytes).ok());
  ASSERT_EQ(bytes.size(), r.size());
  std::size_t k = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (const ScanEntry& w : want[i].entries) {
      ASSERT_LT(k, r.entries.size()) << cases[i].name << ": missing " << w.path;
      const ScanEntry& g = r.entries[k++];
      EXPECT_EQ(g.archive, i) << w.path;
      EXPECT_EQ(g.path, w.path);
      EXPECT_EQ(g.layer, w.layer) << w.path;
      EXPECT_EQ(g.codec, w.codec) << w.path;
      EXPECT_EQ(g.status.code, w.status.code) << w.path << ": " << g.status.to_string() << " vs " << w.status.to_string();
      EXPECT_EQ(g.status.to_string(), w.status.to_string()) << w.path;
      ASSERT_EQ(g.size, w.size) << w.path;
      ASSERT_LE(g.offset + g.size, bytes.size()) << w.path;
      // (memcmp's pointers must not be null even for no bytes: an empty
      // result's are; the sanitizer build's UBSan stopped here.)
      EXPECT_TRUE(w.size == 0 || std::memcmp(bytes.data() + g.offset, want[i].bytes.data() + w.offset, w.size) == 0)
          << cases[i].name << ": bytes of " << w.path;
    }
  }
  EXPECT_EQ(k, r.entries.size());
  if (out) *out = std::move(r);
}

}  // namespace tandem::scan_cases
