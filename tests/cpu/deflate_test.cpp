// Deflate, zlib and gzip on the CPU: the chunk index and header parsers,
// round trips through tandem and through zlib, the indexed stream's layout
// (each chunk inflates alone and ends on a sync marker), multi-member and
// BGZF files, and the exact status of every class of malformed input.
#include <gtest/gtest.h>
#include <libdeflate.h>
#include <zlib.h>

#include <cstring>

#include "format/deflate_index.hpp"
#include "support/test_support.hpp"
#include "tandem/deflate.hpp"

namespace {

using tandem::ConstBuffer;
using tandem::DeflateContainer;
using tandem::DeflateDecodeOptions;
using tandem::DeflateOptions;
using tandem::DeflateStats;
using tandem::StatusCode;
using tandem::test::Bytes;
using tandem::test::zlib_deflate;
namespace format = tandem::format;

Bytes compress(const Bytes& in, DeflateContainer c, int level = 6, std::size_t chunk = 64u << 10,
               const std::string& name = {}) {
  DeflateOptions o;
  o.container = c;
  o.level = level;
  o.chunk_size = chunk;
  o.name = name;
  Bytes out;
  EXPECT_TRUE(tandem::deflate_compress({in.data(), in.size()}, &out, o).ok());
  return out;
}

tandem::Status decompress(const Bytes& in, Bytes* out, DeflateContainer c = DeflateContainer::detect,
                          DeflateStats* stats = nullptr, std::uint64_t limit = UINT64_MAX) {
  DeflateDecodeOptions o;
  o.container = c;
  o.max_output = limit;
  return tandem::deflate_decompress({in.data(), in.size()}, out, o, stats);
}

// zlib's own inflate of a whole stream: windowBits 31 gzip, 15 zlib, -15 raw.
bool zlib_inflate(const Bytes& in, int window_bits, Bytes* out) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return false;
  out->clear();
  Bytes buf(1 << 16);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  int ret = Z_OK;
  while (ret == Z_OK) {
    z.next_out = buf.data();
    z.avail_out = static_cast<uInt>(buf.size());
    ret = inflate(&z, Z_NO_FLUSH);
    out->insert(out->end(), buf.data(), buf.data() + (buf.size() - z.avail_out));
    if (ret == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  const bool ok = ret == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  return ok;
}

// zlib's deflate in one container (windowBits 31, 15 or -15).
std::vector<Bytes> sample_inputs(std::size_t chunk) {
  return {Bytes{},
          Bytes{42},
          tandem::test::random_bytes(chunk - 1, 1),
          tandem::test::text_like_bytes(chunk, 2),
          tandem::test::constant_bytes(chunk + 1, 7),
          tandem::test::mixed_bytes(3 * chunk + 5, 3),
          tandem::test::record_bytes(5 * chunk, 4)};
}

// ------------------------------------------------------------ the index ----

TEST(DeflateIndex, WritesAndParsesBack) {
  format::DeflateIndex index;
  index.chunk_log2 = 16;
  index.compressed_sizes = {1, 127, 128, 16383, 16384, 70000};
  std::vector<std::uint8_t> bytes;
  format::write_deflate_index(index, &bytes);
  EXPECT_EQ(bytes.size(), format::deflate_index_size(index));
  EXPECT_EQ(bytes[0], format::kDeflateIndexVersion);
  EXPECT_EQ(bytes[1], 16);
  format::DeflateIndex back;
  ASSERT_TRUE(format::parse_deflate_index(bytes.data(), bytes.size(), &back).ok());
  EXPECT_EQ(back.chunk_log2, 16u);
  EXPECT_EQ(back.compressed_sizes, index.compressed_sizes);
}

TEST(DeflateIndex, RejectsMalformedBytes) {
  format::DeflateIndex index;
  index.compressed_sizes = {300, 400};
  std::vector<std::uint8_t> good;
  format::write_deflate_index(index, &good);
  format::DeflateIndex out;
  for (std::size_t n = 0; n < good.size(); ++n) {  // every cut
    EXPECT_STATUS(format::parse_deflate_index(good.data(), n, &out), StatusCode::bad_data) << n;
  }
  auto with = [&](std::size_t at, std::uint8_t v) {
    std::vector<std::uint8_t> b = good;
    b[at] = v;
    return format::parse_deflate_index(b.data(), b.size(), &out);
  };
  EXPECT_STATUS(with(0, 2), StatusCode::unsupported);  // version
  EXPECT_STATUS(with(1, 11), StatusCode::bad_data);    // chunk below 4 KiB
  EXPECT_STATUS(with(1, 27), StatusCode::bad_data);    // chunk above 64 MiB
  EXPECT_STATUS(with(2, 3), StatusCode::bad_data);     // count beyond the bytes
  std::vector<std::uint8_t> extra = good;
  extra.push_back(1);
  EXPECT_STATUS(format::parse_deflate_index(extra.data(), extra.size(), &out), StatusCode::bad_data);
  // A zero size and a size beyond any chunk's bound.
  std::vector<std::uint8_t> zero = {format::kDeflateIndexVersion, 16, 1, 0};
  EXPECT_STATUS(format::parse_deflate_index(zero.data(), zero.size(), &out), StatusCode::bad_data);
  std::vector<std::uint8_t> huge = {format::kDeflateIndexVersion, 12, 1};
  format::put_varint(std::uint64_t{1} << 40, &huge);
  EXPECT_STATUS(format::parse_deflate_index(huge.data(), huge.size(), &out), StatusCode::bad_data);
  // A varint longer than 64 bits.
  std::vector<std::uint8_t> overlong = {format::kDeflateIndexVersion, 16, 1};
  for (int i = 0; i < 10; ++i) overlong.push_back(0xff);
  overlong.push_back(1);
  EXPECT_STATUS(format::parse_deflate_index(overlong.data(), overlong.size(), &out), StatusCode::bad_data);
}

// ------------------------------------------------------------- headers ----

// A hand-built gzip header with every optional field.
Bytes full_header(bool good_hcrc) {
  Bytes h = {0x1f, 0x8b, 8, format::kGzipFtext | format::kGzipFhcrc | format::kGzipFextra | format::kGzipFname |
                             format::kGzipFcomment,
             0x78, 0x56, 0x34, 0x12, 2, 3};
  const Bytes extra = {'x', 'y', 3, 0, 1, 2, 3, 'B', 'C', 2, 0, 0x10, 0x00};
  h.push_back(static_cast<std::uint8_t>(extra.size()));
  h.push_back(0);
  h.insert(h.end(), extra.begin(), extra.end());
  for (const char* s : {"name.txt", "a comment"}) {
    h.insert(h.end(), s, s + std::strlen(s));
    h.push_back(0);
  }
  const std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0, h.data(), static_cast<uInt>(h.size())));
  h.push_back(static_cast<std::uint8_t>(good_hcrc ? crc : ~crc));
  h.push_back(static_cast<std::uint8_t>(crc >> 8));
  return h;
}

TEST(GzipHeader, ParsesEveryField) {
  const Bytes h = full_header(true);
  format::GzipHeader out;
  ASSERT_TRUE(format::parse_gzip_header(h.data(), h.size(), &out).ok());
  EXPECT_EQ(out.size, h.size());
  EXPECT_EQ(out.mtime, 0x12345678u);
  EXPECT_EQ(out.xfl, 2);
  EXPECT_EQ(out.os, 3);
  EXPECT_EQ(out.name, "name.txt");
  EXPECT_EQ(out.comment, "a comment");
  EXPECT_EQ(out.extra.size(), 13u);
  EXPECT_TRUE(out.has_bgzf);
  EXPECT_EQ(out.bgzf_member_size, 0x11u);
  EXPECT_FALSE(out.has_index);
}

TEST(GzipHeader, EveryCutIsTruncatedAndBadFieldsAreRejected) {
  const Bytes h = full_header(true);
  format::GzipHeader out;
  for (std::size_t n = 0; n < h.size(); ++n) {
    EXPECT_STATUS(format::parse_gzip_header(h.data(), n, &out), StatusCode::truncated) << n;
  }
  const Bytes bad_crc = full_header(false);
  EXPECT_STATUS(format::parse_gzip_header(bad_crc.data(), bad_crc.size(), &out), StatusCode::checksum_mismatch);
  EXPECT_TRUE(format::parse_gzip_header(bad_crc.data(), bad_crc.size(), &out, false).ok());
  Bytes reserved = h;
  reserved[3] |= 0x20;
  EXPECT_STATUS(format::parse_gzip_header(reserved.data(), reserved.size(), &out), StatusCode::bad_data);
  Bytes method = h;
  method[2] = 7;
  EXPECT_STATUS(format::parse_gzip_header(method.data(), method.size(), &out), StatusCode::unsupported);
  Bytes magic = h;
  magic[1] = 0x8c;
  EXPECT_STATUS(format::parse_gzip_header(magic.data(), magic.size(), &out), StatusCode::bad_data);
}

TEST(GzipHeader, MalformedSubfieldsAreIgnored) {
  // A subfield whose length runs past XLEN: the header is still valid gzip.
  Bytes h = {0x1f, 0x8b, 8, format::kGzipFextra, 0, 0, 0, 0, 0, 3, 6, 0, 'T', 'D', 9, 0, 1, 16};
  format::GzipHeader out;
  ASSERT_TRUE(format::parse_gzip_header(h.data(), h.size(), &out).ok());
  EXPECT_FALSE(out.has_index);
  EXPECT_FALSE(out.has_bgzf);
}

TEST(GzipHeader, WriterOutputParsesBack) {
  format::DeflateIndex index;
  index.compressed_sizes = {5, 6, 7};
  format::GzipHeaderFields f;
  f.mtime = 99;
  f.name = "file";
  f.index = &index;
  std::vector<std::uint8_t> bytes;
  ASSERT_TRUE(format::write_gzip_header(f, &bytes));
  EXPECT_EQ(bytes.size(), format::gzip_header_size(f));
  format::GzipHeader out;
  ASSERT_TRUE(format::parse_gzip_header(bytes.data(), bytes.size(), &out).ok());
  EXPECT_EQ(out.name, "file");
  EXPECT_EQ(out.mtime, 99u);
  ASSERT_TRUE(out.has_index);
  EXPECT_EQ(out.index.compressed_sizes, index.compressed_sizes);
}

TEST(ZlibHeader, ChecksEveryField) {
  std::uint8_t h[2];
  for (int level = 0; level <= 12; ++level) {
    format::write_zlib_header(level, h);
    EXPECT_TRUE(format::parse_zlib_header(h, 2).ok()) << level;
    EXPECT_TRUE(format::is_zlib_header(h[0], h[1]));
  }
  const std::uint8_t dict[2] = {0x78, 0xbb};  // FDICT set, check bits right
  EXPECT_STATUS(format::parse_zlib_header(dict, 2), StatusCode::unsupported);
  const std::uint8_t check[2] = {0x78, 0x9d};
  EXPECT_STATUS(format::parse_zlib_header(check, 2), StatusCode::bad_data);
  const std::uint8_t method[2] = {0x77, 0x01};
  EXPECT_STATUS(format::parse_zlib_header(method, 2), StatusCode::bad_data);
  EXPECT_STATUS(format::parse_zlib_header(check, 1), StatusCode::truncated);
}

// ---------------------------------------------------------- round trips ----

TEST(DeflateRoundTrip, ContainersLevelsChunkSizes) {
  for (const std::size_t chunk : {std::size_t{4096}, std::size_t{64} << 10}) {
    for (const Bytes& in : sample_inputs(chunk)) {
      for (const int level : {0, 1, 6, 9, 12}) {
        for (const auto c : {DeflateContainer::raw, DeflateContainer::zlib, DeflateContainer::gzip}) {
          SCOPED_TRACE(testing::Message() << "chunk " << chunk << " size " << in.size() << " level " << level
                                          << " " << tandem::deflate_container_name(c));
          const Bytes z = compress(in, c, level, chunk);
          Bytes back;
          DeflateStats stats;
          ASSERT_TRUE(decompress(z, &back, c == DeflateContainer::raw ? c : DeflateContainer::detect, &stats).ok());
          EXPECT_EQ(back, in);
          EXPECT_EQ(stats.indexed_members, c == DeflateContainer::gzip ? 1u : 0u);
          Bytes by_zlib;
          const int bits = c == DeflateContainer::gzip ? 31 : c == DeflateContainer::zlib ? 15 : -15;
          ASSERT_TRUE(zlib_inflate(z, bits, &by_zlib));
          EXPECT_EQ(by_zlib, in);
        }
      }
    }
  }
}

TEST(DeflateRoundTrip, StingySourceAndOneThread) {
  const Bytes in = tandem::test::mixed_bytes(300000, 9);
  for (const auto c : {DeflateContainer::zlib, DeflateContainer::gzip}) {
    const Bytes z = compress(in, c, 1, 4096);
    tandem::test::StingySource src(z);
    Bytes back;
    auto sink = tandem::vector_sink(&back);
    DeflateDecodeOptions o;
    o.threads = 1;
    ASSERT_TRUE(tandem::deflate_decompress_stream(src, *sink, o).ok());
    sink.reset();
    EXPECT_EQ(back, in);
    EXPECT_EQ(src.violations, 0);
  }
}

// The layout of the indexed stream: what the contract promises other readers.
TEST(DeflateIndexedStream, ChunksInflateAloneAndEndOnSyncMarkers) {
  const std::size_t chunk = 4096;
  const Bytes in = tandem::test::mixed_bytes(10 * chunk + 123, 5);
  const Bytes z = compress(in, DeflateContainer::gzip, 6, chunk);
  format::GzipHeader h;
  ASSERT_TRUE(format::parse_gzip_header(z.data(), z.size(), &h).ok());
  ASSERT_TRUE(h.has_index);
  EXPECT_EQ(h.index.chunk_log2, 12u);
  ASSERT_EQ(h.index.compressed_sizes.size(), 11u);
  std::size_t pos = h.size;
  for (std::size_t i = 0; i < 11; ++i) {
    const std::size_t n = h.index.compressed_sizes[i];
    ASSERT_LE(pos + n, z.size());
    const Bytes piece(z.begin() + static_cast<std::ptrdiff_t>(pos), z.begin() + static_cast<std::ptrdiff_t>(pos + n));
    EXPECT_EQ(0, std::memcmp(piece.data() + n - 4, format::kSyncMarker, 4));
    EXPECT_EQ(piece[0] & 1, 0) << "BFINAL set on chunk " << i;
    // zlib stops at the end of the input without the stream's end: no
    // final block inside, and exactly the chunk's bytes come out.
    z_stream s{};
    ASSERT_EQ(inflateInit2(&s, -15), Z_OK);
    Bytes out(chunk + 1);
    s.next_in = const_cast<Bytef*>(piece.data());
    s.avail_in = static_cast<uInt>(piece.size());
    s.next_out = out.data();
    s.avail_out = static_cast<uInt>(out.size());
    const int ret = inflate(&s, Z_SYNC_FLUSH);
    EXPECT_EQ(ret, Z_OK);
    EXPECT_EQ(s.avail_in, 0u);
    const std::size_t want = std::min(chunk, in.size() - i * chunk);
    ASSERT_EQ(s.total_out, want);
    EXPECT_EQ(0, std::memcmp(out.data(), in.data() + i * chunk, want));
    inflateEnd(&s);
    pos += n;
  }
  EXPECT_EQ(z[pos], 0x03);
  EXPECT_EQ(z[pos + 1], 0x00);
  EXPECT_EQ(pos + 2 + 8, z.size());
}

TEST(DeflateIndexedStream, EmptyInputIsTheEndBlockAlone) {
  const Bytes z = compress({}, DeflateContainer::raw);
  EXPECT_EQ(z, (Bytes{0x03, 0x00}));
}

TEST(DeflateIndexedStream, HeaderFieldsAreWritten) {
  DeflateOptions o;
  o.name = "hello.txt";
  o.mtime = 1700000000;
  const Bytes in = tandem::test::text_like_bytes(1000, 3);
  Bytes z;
  ASSERT_TRUE(tandem::deflate_compress({in.data(), in.size()}, &z, o).ok());
  format::GzipHeader h;
  ASSERT_TRUE(format::parse_gzip_header(z.data(), z.size(), &h).ok());
  EXPECT_EQ(h.name, "hello.txt");
  EXPECT_EQ(h.mtime, 1700000000u);
  EXPECT_EQ(h.os, 3);
  o.name = std::string("a\0b", 3);
  EXPECT_STATUS(tandem::deflate_compress({in.data(), in.size()}, &z, o), StatusCode::invalid_argument);
}

// With rewrite_header, the header goes out first with room for the index and
// is rewritten at the end; until then, and when the input outgrows the size
// its source announced, the member is valid gzip without an index.
TEST(DeflateIndexedStream, HeaderRewrittenInPlaceWhenTheSizeIsKnown) {
  const Bytes in = tandem::test::mixed_bytes(20 * 4096 + 17, 31);
  for (const std::int64_t hint : {std::int64_t(in.size()), std::int64_t(in.size() + 9000), std::int64_t(4096)}) {
    SCOPED_TRACE(hint);
    for (const bool rewrite : {true, false}) {
      Bytes z;
      auto sink = tandem::vector_sink(&z);
      int calls = 0;
      DeflateOptions o;
      o.chunk_size = 4096;
      o.rewrite_header = [&](const std::uint8_t* header, std::size_t size) {
        ++calls;
        EXPECT_LE(size, z.size());
        if (rewrite) std::memcpy(z.data(), header, size);
        return tandem::Status{};
      };
      tandem::test::StingySource src(in, hint);
      ASSERT_TRUE(tandem::deflate_compress_stream(src, *sink, o).ok());
      sink.reset();
      const bool fits = hint >= std::int64_t(in.size());
      EXPECT_EQ(calls, fits ? 1 : 0);
      format::GzipHeader h;
      ASSERT_TRUE(format::parse_gzip_header(z.data(), z.size(), &h).ok());
      EXPECT_EQ(h.has_index, fits && rewrite);
      Bytes back;
      DeflateStats stats;
      ASSERT_TRUE(decompress(z, &back, DeflateContainer::detect, &stats).ok());
      EXPECT_EQ(back, in);
      EXPECT_EQ(stats.indexed_members, fits && rewrite ? 1u : 0u);
      Bytes by_zlib;
      ASSERT_TRUE(zlib_inflate(z, 31, &by_zlib));
      EXPECT_EQ(by_zlib, in);
    }
  }
}

TEST(DeflateOptions, BadArgumentsAreRefused) {
  const Bytes in(10, 1);
  Bytes z;
  DeflateOptions o;
  o.level = 13;
  EXPECT_STATUS(tandem::deflate_compress({in.data(), in.size()}, &z, o), StatusCode::invalid_argument);
  o.level = 6;
  o.chunk_size = 65537;
  EXPECT_STATUS(tandem::deflate_compress({in.data(), in.size()}, &z, o), StatusCode::invalid_argument);
  o.chunk_size = 2048;
  EXPECT_STATUS(tandem::deflate_compress({in.data(), in.size()}, &z, o), StatusCode::invalid_argument);
  o.chunk_size = 4096;
  o.container = DeflateContainer::detect;
  EXPECT_STATUS(tandem::deflate_compress({in.data(), in.size()}, &z, o), StatusCode::invalid_argument);
}

// ------------------------------------------------- other writers' files ----

TEST(DeflateForeign, ZlibWrittenStreamsAreRead) {
  const Bytes in = tandem::test::mixed_bytes(200000, 11);
  for (const int bits : {31, 15, -15}) {
    const Bytes z = zlib_deflate(in, bits);
    Bytes back;
    DeflateStats stats;
    ASSERT_TRUE(decompress(z, &back, bits == -15 ? DeflateContainer::raw : DeflateContainer::detect, &stats).ok())
        << bits;
    EXPECT_EQ(back, in);
    EXPECT_EQ(stats.indexed_members, 0u);
  }
}

TEST(DeflateForeign, MultiMemberAndTrailingZeros) {
  const Bytes a = tandem::test::text_like_bytes(70000, 1), b = tandem::test::random_bytes(5000, 2);
  Bytes z = zlib_deflate(a, 31);
  const Bytes zb = compress(b, DeflateContainer::gzip, 1, 4096);
  const Bytes ze = zlib_deflate({}, 31);
  z.insert(z.end(), zb.begin(), zb.end());
  z.insert(z.end(), ze.begin(), ze.end());
  Bytes want = a;
  want.insert(want.end(), b.begin(), b.end());
  Bytes back;
  DeflateStats stats;
  ASSERT_TRUE(decompress(z, &back, DeflateContainer::gzip, &stats).ok());
  EXPECT_EQ(back, want);
  EXPECT_EQ(stats.members, 3u);
  EXPECT_EQ(stats.indexed_members, 1u);
  Bytes padded = z;
  padded.resize(z.size() + 1000, 0);
  ASSERT_TRUE(decompress(padded, &back).ok());
  EXPECT_EQ(back, want);
  Bytes garbage = z;
  garbage.push_back(0x42);
  EXPECT_STATUS(decompress(garbage, &back), StatusCode::bad_data);
}

// A BGZF file as bgzip writes it: members of at most 64 KiB with a 'BC'
// subfield holding the member's size less one, and an empty member at the end.
Bytes make_bgzf(const Bytes& in, std::size_t piece) {
  Bytes out;
  libdeflate_compressor* c = libdeflate_alloc_compressor(6);
  for (std::size_t pos = 0;; pos += piece) {
    const std::size_t n = pos < in.size() ? std::min(piece, in.size() - pos) : 0;
    Bytes body(libdeflate_deflate_compress_bound(c, n));
    body.resize(libdeflate_deflate_compress(c, in.data() + pos, n, body.data(), body.size()));
    const std::size_t total = 18 + body.size() + 8;
    const Bytes head = {0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, 'B', 'C', 2, 0,
                        static_cast<std::uint8_t>(total - 1), static_cast<std::uint8_t>((total - 1) >> 8)};
    out.insert(out.end(), head.begin(), head.end());
    out.insert(out.end(), body.begin(), body.end());
    std::uint8_t trailer[8];
    format::write_gzip_trailer(libdeflate_crc32(0, in.data() + pos, n), static_cast<std::uint32_t>(n), trailer);
    out.insert(out.end(), trailer, trailer + 8);
    if (n == 0) break;
  }
  libdeflate_free_compressor(c);
  return out;
}

TEST(DeflateForeign, BgzfMembersInflateInParallel) {
  const Bytes in = tandem::test::mixed_bytes(1000000, 12);
  const Bytes z = make_bgzf(in, 65280);
  Bytes back;
  DeflateStats stats;
  ASSERT_TRUE(decompress(z, &back, DeflateContainer::detect, &stats).ok());
  EXPECT_EQ(back, in);
  EXPECT_EQ(stats.bgzf_members, stats.members);
  EXPECT_EQ(stats.members, 17u);
}

// ------------------------------------------------------- malformed input ----

std::size_t trailer_at(const Bytes& z) { return z.size() - 8; }

TEST(DeflateMalformed, ChecksumsAndSizes) {
  const Bytes in = tandem::test::text_like_bytes(150000, 21);
  Bytes back;
  for (const bool indexed : {true, false}) {
    const Bytes z = indexed ? compress(in, DeflateContainer::gzip) : zlib_deflate(in, 31);
    Bytes crc = z;
    crc[trailer_at(z)] ^= 1;
    EXPECT_STATUS(decompress(crc, &back), StatusCode::checksum_mismatch);
    DeflateDecodeOptions lax;
    lax.verify_checksums = false;
    EXPECT_TRUE(tandem::deflate_decompress({crc.data(), crc.size()}, &back, lax).ok());
    Bytes isize = z;
    isize[trailer_at(z) + 4] ^= 1;
    EXPECT_STATUS(decompress(isize, &back), StatusCode::checksum_mismatch);
  }
  Bytes zl = compress(in, DeflateContainer::zlib);
  zl.back() ^= 0x80;
  EXPECT_STATUS(decompress(zl, &back), StatusCode::checksum_mismatch);
  const Bytes bgzf = make_bgzf(in, 65280);
  Bytes bad_bgzf = bgzf;
  const std::size_t first_size = static_cast<std::size_t>(bgzf[16] | (bgzf[17] << 8)) + 1;
  bad_bgzf[first_size - 8] ^= 4;
  EXPECT_STATUS(decompress(bad_bgzf, &back), StatusCode::checksum_mismatch);
  Bytes bad_isize = bgzf;
  bad_isize[first_size - 4] ^= 1;
  EXPECT_STATUS(decompress(bad_isize, &back), StatusCode::checksum_mismatch);
  // An ISIZE its bytes cannot yield (about 1 GiB): read the streaming way,
  // without staging for the claim.
  Bytes huge_isize = bgzf;
  huge_isize[first_size - 1] = 0x40;
  EXPECT_STATUS(decompress(huge_isize, &back), StatusCode::checksum_mismatch);
}

TEST(DeflateMalformed, EveryCutIsTruncated) {
  const Bytes in = tandem::test::mixed_bytes(20000, 22);
  for (const auto c : {DeflateContainer::gzip, DeflateContainer::zlib}) {
    const Bytes z = compress(in, c, 6, 4096);
    // From two bytes on: a lone first byte cannot tell the container.
    for (std::size_t n = 2; n < z.size(); n += (n < 40 || z.size() - n < 40) ? 1 : 97) {
      const Bytes cut(z.begin(), z.begin() + static_cast<std::ptrdiff_t>(n));
      Bytes back;
      EXPECT_STATUS(decompress(cut, &back), StatusCode::truncated) << deflate_container_name(c) << " cut at " << n;
    }
  }
  Bytes back;
  EXPECT_STATUS(decompress({}, &back), StatusCode::truncated);
  const Bytes raw = zlib_deflate(in, -15);
  EXPECT_STATUS(decompress(Bytes(raw.begin(), raw.end() - 5), &back, DeflateContainer::raw), StatusCode::truncated);
}

TEST(DeflateMalformed, BadBlocksAndBadIndexes) {
  Bytes back;
  // A block of the reserved type 3, raw and in a gzip member.
  EXPECT_STATUS(decompress(Bytes{0x07, 0x00}, &back, DeflateContainer::raw), StatusCode::bad_data);
  Bytes member = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_STATUS(decompress(member, &back), StatusCode::bad_data);
  // A stored block whose NLEN is not the complement of LEN.
  EXPECT_STATUS(decompress(Bytes{0x01, 0x05, 0x00, 0x00, 0x00, 'a', 'b', 'c', 'd', 'e'}, &back, DeflateContainer::raw),
                StatusCode::bad_data);
  // An index that disagrees with its chunks: the sizes of two chunks swapped
  // (the total still agrees), and one chunk a byte longer.
  const std::size_t chunk = 4096;
  const Bytes in = tandem::test::mixed_bytes(4 * chunk, 23);
  const Bytes z = compress(in, DeflateContainer::gzip, 6, chunk);
  format::GzipHeader h;
  ASSERT_TRUE(format::parse_gzip_header(z.data(), z.size(), &h).ok());
  auto rebuilt = [&](const std::vector<std::uint64_t>& sizes) {
    format::DeflateIndex index = h.index;
    index.compressed_sizes = sizes;
    format::GzipHeaderFields f;
    f.index = &index;
    std::vector<std::uint8_t> out;
    EXPECT_TRUE(format::write_gzip_header(f, &out));
    out.insert(out.end(), z.begin() + static_cast<std::ptrdiff_t>(h.size), z.end());
    return out;
  };
  std::vector<std::uint64_t> sizes = h.index.compressed_sizes;
  ASSERT_TRUE(decompress(rebuilt(sizes), &back).ok());
  EXPECT_EQ(back, in);
  ASSERT_NE(sizes[0], sizes[1]);
  std::swap(sizes[0], sizes[1]);
  EXPECT_STATUS(decompress(rebuilt(sizes), &back), StatusCode::bad_data);
  sizes = h.index.compressed_sizes;
  sizes[2] += 1;
  EXPECT_STATUS(decompress(rebuilt(sizes), &back), StatusCode::bad_data);
  sizes = h.index.compressed_sizes;
  sizes.pop_back();  // one chunk fewer: the stream does not end where the index says
  EXPECT_STATUS(decompress(rebuilt(sizes), &back), StatusCode::bad_data);
  // A zlib stream with a preset dictionary.
  Bytes dict = {0x78, 0xbb, 0, 0, 0, 1, 0x03, 0x00};
  EXPECT_STATUS(decompress(dict, &back, DeflateContainer::zlib), StatusCode::unsupported);
  // Data after a zlib stream or a raw one.
  Bytes zl = compress(in, DeflateContainer::zlib);
  zl.push_back(0);
  EXPECT_STATUS(decompress(zl, &back), StatusCode::bad_data);
}

TEST(DeflateMalformed, OutputLimit) {
  const Bytes in = tandem::test::constant_bytes(300000, 1);
  Bytes back;
  for (const Bytes& z : {compress(in, DeflateContainer::gzip), compress(in, DeflateContainer::zlib),
                         zlib_deflate(in, 31), make_bgzf(in, 65280)}) {
    EXPECT_STATUS(decompress(z, &back, DeflateContainer::detect, nullptr, in.size() - 1), StatusCode::output_limit);
    EXPECT_LE(back.size(), in.size() - 1);
    EXPECT_TRUE(decompress(z, &back, DeflateContainer::detect, nullptr, in.size()).ok());
    EXPECT_EQ(back, in);
  }
}

TEST(DeflateMalformed, FlippedBytesNeverCrash) {
  const Bytes in = tandem::test::mixed_bytes(50000, 24);
  for (const auto c : {DeflateContainer::gzip, DeflateContainer::zlib, DeflateContainer::raw}) {
    const Bytes z = compress(in, c, 6, 4096);
    for (std::size_t i = 0; i < z.size(); i += 7) {
      Bytes bad = z;
      bad[i] ^= static_cast<std::uint8_t>(1u << (i % 8));
      Bytes back;
      const tandem::Status s = decompress(bad, &back, c == DeflateContainer::raw ? c : DeflateContainer::detect,
                                          nullptr, 1u << 20);
      if (s.ok()) {
        EXPECT_LE(back.size(), std::size_t{1} << 20);
      }
    }
  }
}

}  // namespace
