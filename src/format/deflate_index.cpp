// tandem's chunk index, gzip and zlib headers and trailers; see deflate_index.hpp.
#include "format/deflate_index.hpp"

#include <libdeflate.h>

#include <cstdint>
#include <cstring>

namespace tandem::format {

namespace {

constexpr std::size_t kMaxXlen = 0xffff;
constexpr std::size_t kSubfieldHeader = 4;  // SI1 SI2 LEN(2)

std::uint16_t read_le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t read_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
void put_le16(std::uint32_t v, std::vector<std::uint8_t>* out) {
  out->push_back(static_cast<std::uint8_t>(v));
  out->push_back(static_cast<std::uint8_t>(v >> 8));
}
void put_le32(std::uint32_t v, std::uint8_t* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Reads one varint at data[*pos, size); false when it runs past the end or
// does not fit 64 bits.
bool get_varint(const std::uint8_t* data, std::size_t size, std::size_t* pos, std::uint64_t* value) {
  std::uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    if (*pos >= size) return false;
    const std::uint8_t b = data[(*pos)++];
    const std::uint64_t group = b & 0x7f;
    if (i == 9 && group > 1) return false;  // bits past the 64th
    v |= group << (7 * i);
    if (!(b & 0x80)) {
      *value = v;
      return true;
    }
  }
  return false;
}

// Walks the FEXTRA subfields and picks up the index and the BGZF size. A
// field whose subfields do not add up to XLEN is left alone.
void read_subfields(GzipHeader* h) {
  const std::uint8_t* p = h->extra.data();
  const std::size_t n = h->extra.size();
  bool found_index = false, found_bgzf = false;
  DeflateIndex index;
  std::uint32_t bgzf = 0;
  std::size_t pos = 0;
  while (pos < n) {
    if (n - pos < kSubfieldHeader) return;
    const std::uint8_t si1 = p[pos], si2 = p[pos + 1];
    const std::size_t len = read_le16(p + pos + 2);
    pos += kSubfieldHeader;
    if (len > n - pos) return;
    if (si1 == kIndexSi1 && si2 == kIndexSi2 && !found_index) {
      found_index = parse_deflate_index(p + pos, len, &index).ok();
    } else if (si1 == kBgzfSi1 && si2 == kBgzfSi2 && len == 2 && !found_bgzf) {
      found_bgzf = true;
      bgzf = static_cast<std::uint32_t>(read_le16(p + pos)) + 1;
    }
    pos += len;
  }
  h->has_index = found_index;
  if (found_index) h->index = std::move(index);
  h->has_bgzf = found_bgzf;
  h->bgzf_member_size = bgzf;
}

}  // namespace

// ---------------------------------------------------------- chunk index ----

std::size_t varint_size(std::uint64_t value) {
  std::size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

void put_varint(std::uint64_t value, std::vector<std::uint8_t>* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<std::uint8_t>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<std::uint8_t>(value));
}

std::uint64_t deflate_chunk_bound(std::uint32_t chunk_log2) {
  const std::uint64_t c = std::uint64_t{1} << chunk_log2;
  // Stored blocks cost 5 bytes per (at most 65535, libdeflate: at least ~10000)
  // bytes; an eighth more and a constant cover every encoder's worst case.
  return c + c / 8 + 1024;
}

std::size_t deflate_index_size(const DeflateIndex& index) {
  std::size_t n = 2 + varint_size(index.compressed_sizes.size());
  for (const std::uint64_t s : index.compressed_sizes) n += varint_size(s);
  return n;
}

void write_deflate_index(const DeflateIndex& index, std::vector<std::uint8_t>* out) {
  out->push_back(kDeflateIndexVersion);
  out->push_back(static_cast<std::uint8_t>(index.chunk_log2));
  put_varint(index.compressed_sizes.size(), out);
  for (const std::uint64_t s : index.compressed_sizes) put_varint(s, out);
}

Status parse_deflate_index(const std::uint8_t* data, std::size_t size, DeflateIndex* index) {
  if (size < 3) return {StatusCode::bad_data, "chunk index shorter than its header"};
  if (data[0] != kDeflateIndexVersion) return {StatusCode::unsupported, "chunk index of an unknown version"};
  const std::uint32_t log2 = data[1];
  if (log2 < kDeflateMinChunkLog2 || log2 > kDeflateMaxChunkLog2) {
    return {StatusCode::bad_data, "chunk index with a chunk size outside 4 KiB .. 64 MiB"};
  }
  std::size_t pos = 2;
  std::uint64_t count = 0;
  if (!get_varint(data, size, &pos, &count)) return {StatusCode::bad_data, "chunk index count runs past its end"};
  if (count > size - pos) return {StatusCode::bad_data, "chunk index count exceeds its bytes"};
  const std::uint64_t bound = deflate_chunk_bound(log2);
  DeflateIndex result;
  result.chunk_log2 = log2;
  result.compressed_sizes.resize(static_cast<std::size_t>(count));
  for (auto& s : result.compressed_sizes) {
    if (!get_varint(data, size, &pos, &s)) return {StatusCode::bad_data, "chunk index entry runs past its end"};
    if (s == 0 || s > bound) return {StatusCode::bad_data, "chunk index entry of an impossible size"};
  }
  if (pos != size) return {StatusCode::bad_data, "bytes left over after the chunk index"};
  *index = std::move(result);
  return {};
}

// ------------------------------------------------------------------ gzip ----

Status parse_gzip_header(const std::uint8_t* data, std::size_t size, GzipHeader* header, bool verify_header_crc) {
  constexpr std::size_t kFixed = 10;
  if (size >= 1 && data[0] != kGzipId1) return {StatusCode::bad_data, "not a gzip member (magic)"};
  if (size >= 2 && data[1] != kGzipId2) return {StatusCode::bad_data, "not a gzip member (magic)"};
  if (size < kFixed) return {StatusCode::truncated, "gzip header cut short"};
  if (data[2] != 8) return {StatusCode::unsupported, "gzip compression method other than deflate"};
  const std::uint8_t flags = data[3];
  if (flags & 0xe0) return {StatusCode::bad_data, "gzip header with reserved flags set"};
  GzipHeader h;
  h.flags = flags;
  h.mtime = read_le32(data + 4);
  h.xfl = data[8];
  h.os = data[9];
  std::size_t pos = kFixed;
  if (flags & kGzipFextra) {
    if (size - pos < 2) return {StatusCode::truncated, "gzip header cut short (XLEN)"};
    const std::size_t xlen = read_le16(data + pos);
    pos += 2;
    if (size - pos < xlen) return {StatusCode::truncated, "gzip header cut short (FEXTRA)"};
    h.extra.assign(data + pos, data + pos + xlen);
    pos += xlen;
  }
  for (const std::uint8_t flag : {kGzipFname, kGzipFcomment}) {
    if (!(flags & flag)) continue;
    const std::size_t limit = std::min(size, kGzipMaxHeader);
    const void* nul = pos < limit ? std::memchr(data + pos, 0, limit - pos) : nullptr;
    if (!nul) {
      if (size >= kGzipMaxHeader) return {StatusCode::bad_data, "gzip header name or comment too long"};
      return {StatusCode::truncated, "gzip header cut short (name or comment)"};
    }
    const std::size_t end = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - data);
    std::string& text = flag == kGzipFname ? h.name : h.comment;
    text.assign(reinterpret_cast<const char*>(data + pos), end - pos);
    pos = end + 1;
  }
  if (flags & kGzipFhcrc) {
    if (size - pos < 2) return {StatusCode::truncated, "gzip header cut short (FHCRC)"};
    const std::uint16_t stored = read_le16(data + pos);
    const std::uint16_t actual = static_cast<std::uint16_t>(libdeflate_crc32(0, data, pos) & 0xffff);
    if (verify_header_crc && stored != actual) return {StatusCode::checksum_mismatch, "gzip header CRC mismatch"};
    pos += 2;
  }
  h.size = pos;
  read_subfields(&h);
  *header = std::move(h);
  return {};
}

namespace {

// Bytes of FEXTRA after XLEN; 0 when there is none; SIZE_MAX when it cannot be written.
std::size_t extra_bytes(const GzipHeaderFields& fields) {
  const std::size_t index = fields.index ? kSubfieldHeader + deflate_index_size(*fields.index) : 0;
  if (fields.extra_size == 0) return index > kMaxXlen ? SIZE_MAX : index;
  if (fields.extra_size > kMaxXlen || index + kSubfieldHeader > fields.extra_size) return SIZE_MAX;
  return fields.extra_size;
}

}  // namespace

std::size_t gzip_header_size(const GzipHeaderFields& fields) {
  std::size_t n = 10;
  const std::size_t extra = extra_bytes(fields);
  if (extra == SIZE_MAX) return 0;
  if (extra) n += 2 + extra;
  if (!fields.name.empty()) n += fields.name.size() + 1;
  return n;
}

bool write_gzip_header(const GzipHeaderFields& fields, std::vector<std::uint8_t>* out) {
  if (gzip_header_size(fields) == 0) return false;
  if (fields.name.find('\0') != std::string::npos) return false;
  const std::size_t extra = extra_bytes(fields);
  std::uint8_t flags = 0;
  if (extra) flags |= kGzipFextra;
  if (!fields.name.empty()) flags |= kGzipFname;
  out->push_back(kGzipId1);
  out->push_back(kGzipId2);
  out->push_back(8);
  out->push_back(flags);
  std::uint8_t mtime[4];
  put_le32(fields.mtime, mtime);
  out->insert(out->end(), mtime, mtime + 4);
  out->push_back(fields.xfl);
  out->push_back(fields.os);
  if (extra) put_le16(static_cast<std::uint32_t>(extra), out);
  std::size_t written = 0;
  if (fields.index) {
    const std::size_t data = deflate_index_size(*fields.index);
    out->push_back(kIndexSi1);
    out->push_back(kIndexSi2);
    put_le16(static_cast<std::uint32_t>(data), out);
    write_deflate_index(*fields.index, out);
    written = kSubfieldHeader + data;
  }
  if (fields.extra_size) {
    const std::size_t pad = fields.extra_size - written - kSubfieldHeader;
    out->push_back(kPadSi1);
    out->push_back(kPadSi2);
    put_le16(static_cast<std::uint32_t>(pad), out);
    out->insert(out->end(), pad, 0);
  }
  if (!fields.name.empty()) {
    out->insert(out->end(), fields.name.begin(), fields.name.end());
    out->push_back(0);
  }
  return true;
}

void write_gzip_trailer(std::uint32_t crc32, std::uint32_t isize, std::uint8_t out[kGzipTrailerSize]) {
  put_le32(crc32, out);
  put_le32(isize, out + 4);
}

void read_gzip_trailer(const std::uint8_t in[kGzipTrailerSize], std::uint32_t* crc32, std::uint32_t* isize) {
  *crc32 = read_le32(in);
  *isize = read_le32(in + 4);
}

// ------------------------------------------------------------------ zlib ----

bool is_zlib_header(std::uint8_t b0, std::uint8_t b1) {
  return (b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && ((static_cast<unsigned>(b0) << 8) | b1) % 31 == 0;
}

Status parse_zlib_header(const std::uint8_t* data, std::size_t size) {
  if (size < kZlibHeaderSize) return {StatusCode::truncated, "zlib header cut short"};
  if ((data[0] & 0x0f) != 8) return {StatusCode::bad_data, "zlib compression method other than deflate"};
  if ((data[0] >> 4) > 7) return {StatusCode::bad_data, "zlib window larger than 32 KiB"};
  if (((static_cast<unsigned>(data[0]) << 8) | data[1]) % 31 != 0) {
    return {StatusCode::bad_data, "zlib header check bits wrong"};
  }
  if (data[1] & 0x20) return {StatusCode::unsupported, "zlib stream needs a preset dictionary"};
  return {};
}

void write_zlib_header(int level, std::uint8_t out[kZlibHeaderSize]) {
  const unsigned flevel = level < 2 ? 0 : level < 6 ? 1 : level == 6 ? 2 : 3;
  const unsigned cmf = 0x78;  // CM 8, CINFO 7: a 32 KiB window
  unsigned flg = flevel << 6;
  flg += (31 - ((cmf << 8) | flg) % 31) % 31;
  out[0] = static_cast<std::uint8_t>(cmf);
  out[1] = static_cast<std::uint8_t>(flg);
}

void write_be32(std::uint32_t value, std::uint8_t out[4]) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(value >> (24 - 8 * i));
}

std::uint32_t read_be32(const std::uint8_t in[4]) {
  return (static_cast<std::uint32_t>(in[0]) << 24) | (static_cast<std::uint32_t>(in[1]) << 16) |
         (static_cast<std::uint32_t>(in[2]) << 8) | in[3];
}

}  // namespace tandem::format
