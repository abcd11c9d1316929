// ZIP archives (see zip_format.hpp). Record layouts from APPNOTE 6.3:
// local file header 4.3.7, central directory header 4.3.12, end of central
// directory 4.3.16, ZIP64 end record 4.3.14 and locator 4.3.15, ZIP64
// extended information extra field 4.5.3.
#include "format/zip_format.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>

#include "common/thread_pool.hpp"
#include "cpu/deflate_cpu.hpp"
#include "format/deflate_index.hpp"

namespace tandem::zip {

namespace {

using format::DeflateIndex;
using format::kDeflateEnd;
using format::write_deflate_index;

constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEndSig = 0x06054b50;
constexpr std::uint32_t kZip64EndSig = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::uint16_t kZip64Field = 0x0001;
constexpr std::size_t kLocalSize = 30;
constexpr std::size_t kCentralSize = 46;
constexpr std::size_t kEndSize = 22;
constexpr std::size_t kZip64EndSize = 56;
constexpr std::size_t kZip64LocatorSize = 20;
constexpr std::uint16_t kEncrypted = 1u << 0;
constexpr std::uint16_t kUtf8 = 1u << 11;
constexpr std::uint16_t kMadeByUnix = (3u << 8) | 45;  // Unix, APPNOTE 4.5
constexpr std::uint16_t kNeed20 = 20, kNeed45 = 45;    // deflate / ZIP64
// Deflated entries: chunks of 64 KiB, as tandem's gzip writes them.
constexpr std::uint32_t kChunkLog2 = 16;
// An extra field's payload beside the ZIP64 field, within the 16-bit length
// of a header's extra area.
constexpr std::size_t kMaxIndexField = 0xFFFF - 4 - 28 - 4;

std::uint16_t le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
std::uint64_t le64(const std::uint8_t* p) { return le32(p) | (static_cast<std::uint64_t>(le32(p + 4)) << 32); }

void put16(std::vector<std::uint8_t>& o, std::uint32_t v) {
  o.push_back(static_cast<std::uint8_t>(v));
  o.push_back(static_cast<std::uint8_t>(v >> 8));
}
void put32(std::vector<std::uint8_t>& o, std::uint32_t v) {
  put16(o, v & 0xFFFF);
  put16(o, v >> 16);
}
void put64(std::vector<std::uint8_t>& o, std::uint64_t v) {
  put32(o, static_cast<std::uint32_t>(v));
  put32(o, static_cast<std::uint32_t>(v >> 32));
}

Status bad(const char* why) { return {StatusCode::bad_data, why}; }

// The ZIP64 extended information field replaces, in this order, each of the
// central header's fields that holds its all-ones marker.
Status apply_zip64(std::span<const std::uint8_t> data, Entry* e, bool size_marked, bool csize_marked,
                   bool offset_marked) {
  std::size_t pos = 0;
  auto take = [&](std::uint64_t* v) {
    if (data.size() - pos < 8) return false;
    *v = le64(data.data() + pos);
    pos += 8;
    return true;
  };
  if (size_marked && !take(&e->size)) return bad("ZIP64 field too short for the size");
  if (csize_marked && !take(&e->compressed_size)) return bad("ZIP64 field too short for the compressed size");
  if (offset_marked && !take(&e->header_offset)) return bad("ZIP64 field too short for the header offset");
  return {};
}

// Walks the extra fields of a header: ZIP64 and tandem's index.
Status read_extra(std::span<const std::uint8_t> extra, Entry* e, bool size_marked, bool csize_marked,
                  bool offset_marked) {
  bool zip64_seen = false;
  std::size_t pos = 0;
  while (pos < extra.size()) {
    if (extra.size() - pos < 4) return bad("extra field header cut short");
    const std::uint16_t id = le16(extra.data() + pos);
    const std::uint16_t len = le16(extra.data() + pos + 2);
    pos += 4;
    if (extra.size() - pos < len) return bad("extra field longer than its header's room");
    const auto body = extra.subspan(pos, len);
    if (id == kZip64Field && !zip64_seen) {
      zip64_seen = true;
      if (Status s = apply_zip64(body, e, size_marked, csize_marked, offset_marked); !s) return s;
    } else if (id == kTandemIndexField) {
      e->tandem_index.assign(body.begin(), body.end());
    }
    pos += len;
  }
  // All-ones values without a ZIP64 field stay as they are: the range
  // checks of the caller decide.
  return {};
}

struct EndRecord {
  std::uint64_t entries = 0;
  std::uint64_t dir_size = 0;
  std::uint64_t dir_offset = 0;
  std::uint64_t end_offset = 0;  // where the end records start (the directory must end there)
};

Status find_end(std::span<const std::uint8_t> a, EndRecord* r) {
  if (a.size() < kEndSize) return {StatusCode::truncated, "shorter than a ZIP end record"};
  // The end record is the last 22 bytes plus a comment of up to 65535.
  const std::size_t lowest = a.size() - std::min<std::size_t>(a.size(), kEndSize + 0xFFFF);
  std::size_t at = a.size() - kEndSize;
  for (;;) {
    if (le32(a.data() + at) == kEndSig && at + kEndSize + le16(a.data() + at + 20) == a.size()) break;
    if (at == lowest) return bad("no ZIP end of central directory record");
    --at;
  }
  const std::uint8_t* p = a.data() + at;
  if (le16(p + 4) != 0 || le16(p + 6) != 0 || le16(p + 8) != le16(p + 10)) {
    return {StatusCode::unsupported, "multi-disk ZIP archive"};
  }
  r->entries = le16(p + 10);
  r->dir_size = le32(p + 12);
  r->dir_offset = le32(p + 16);
  r->end_offset = at;
  const bool marked = r->entries == 0xFFFF || r->dir_size == 0xFFFFFFFF || r->dir_offset == 0xFFFFFFFF;
  if (at >= kZip64LocatorSize && le32(a.data() + at - kZip64LocatorSize) == kZip64LocatorSig) {
    const std::uint8_t* loc = a.data() + at - kZip64LocatorSize;
    const std::uint64_t z = le64(loc + 8);
    if (le32(loc + 4) != 0 || le32(loc + 16) > 1) return {StatusCode::unsupported, "multi-disk ZIP64 archive"};
    if (z > at - kZip64LocatorSize || at - kZip64LocatorSize - z < kZip64EndSize) {
      return bad("ZIP64 end record locator points outside the archive");
    }
    const std::uint8_t* q = a.data() + z;
    if (le32(q) != kZip64EndSig) return bad("no ZIP64 end record where the locator points");
    if (le32(q + 16) != 0 || le32(q + 20) != 0 || le64(q + 24) != le64(q + 32)) {
      return {StatusCode::unsupported, "multi-disk ZIP64 archive"};
    }
    r->entries = le64(q + 32);
    r->dir_size = le64(q + 40);
    r->dir_offset = le64(q + 48);
    r->end_offset = z;
  } else if (marked && r->entries == 0xFFFF && r->dir_offset == 0xFFFFFFFF) {
    return bad("end record asks for ZIP64 records that are not there");
  }
  if (r->dir_offset > r->end_offset || r->end_offset - r->dir_offset < r->dir_size) {
    return bad("central directory outside the archive");
  }
  if (r->dir_offset + r->dir_size != r->end_offset) return bad("central directory does not end at the end records");
  return {};
}

}  // namespace

std::uint32_t crc32(std::span<const std::uint8_t> data, std::uint32_t crc) {
  return libdeflate_crc32(crc, data.data(), data.size());
}

Status read_directory(std::span<const std::uint8_t> a, std::vector<Entry>* entries, const ReadLimits& limits) {
  entries->clear();
  EndRecord end;
  if (Status s = find_end(a, &end); !s) return s;
  if (end.entries > limits.max_entries) return {StatusCode::output_limit, "more ZIP entries than the limit"};
  if (end.entries > end.dir_size / kCentralSize) return bad("more entries than the central directory holds");
  entries->reserve(static_cast<std::size_t>(end.entries));
  std::size_t pos = static_cast<std::size_t>(end.dir_offset);
  const std::size_t dir_end = static_cast<std::size_t>(end.dir_offset + end.dir_size);
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < end.entries; ++i) {
    if (dir_end - pos < kCentralSize) return bad("central directory entry cut short");
    const std::uint8_t* p = a.data() + pos;
    if (le32(p) != kCentralSig) return bad("central directory entry signature");
    Entry e;
    e.made_by = le16(p + 4);
    e.flags = le16(p + 8);
    e.method = le16(p + 10);
    e.dos_time = (static_cast<std::uint32_t>(le16(p + 14)) << 16) | le16(p + 12);
    e.crc32 = le32(p + 16);
    e.compressed_size = le32(p + 20);
    e.size = le32(p + 24);
    const std::size_t name_len = le16(p + 28), extra_len = le16(p + 30), comment_len = le16(p + 32);
    e.external_attributes = le32(p + 38);
    e.header_offset = le32(p + 42);
    if (dir_end - pos - kCentralSize < name_len + extra_len + comment_len) {
      return bad("central directory entry's name, extra and comment overrun the directory");
    }
    if (e.flags & kEncrypted) return {StatusCode::unsupported, "encrypted ZIP entry"};
    if (le16(p + 34) != 0) return {StatusCode::unsupported, "multi-disk ZIP entry"};
    e.name.assign(reinterpret_cast<const char*>(p + kCentralSize), name_len);
    if (e.name.find('\0') != std::string::npos) return bad("entry name holds a NUL byte");
    if (Status s = read_extra(a.subspan(pos + kCentralSize + name_len, extra_len), &e, e.size == 0xFFFFFFFF,
                              e.compressed_size == 0xFFFFFFFF, e.header_offset == 0xFFFFFFFF);
        !s) {
      return s;
    }
    pos += kCentralSize + name_len + extra_len + comment_len;

    // The local header: inside the archive, before the directory, agreeing.
    if (e.header_offset > end.dir_offset || end.dir_offset - e.header_offset < kLocalSize) {
      return bad("local header outside the entries' area");
    }
    const std::uint8_t* l = a.data() + e.header_offset;
    if (le32(l) != kLocalSig) return bad("local header signature");
    if (le16(l + 8) != e.method) return bad("local header's method differs from the directory's");
    const std::size_t lname = le16(l + 26), lextra = le16(l + 28);
    if (lname != name_len || std::memcmp(l + kLocalSize, e.name.data(), name_len) != 0) {
      return bad("local header's name differs from the directory's");
    }
    const std::uint64_t data = e.header_offset + kLocalSize + lname + lextra;
    if (data > end.dir_offset || end.dir_offset - data < e.compressed_size) {
      return bad("entry data overruns the central directory");
    }
    e.data_offset = data;
    if (e.method == kStored && e.compressed_size != e.size) return bad("stored entry whose sizes differ");
    if (e.size > limits.max_entry_size) return {StatusCode::output_limit, "ZIP entry larger than the limit"};
    total += e.size;
    if (total > limits.max_total_size) return {StatusCode::output_limit, "ZIP entries larger than the limit"};
    entries->push_back(std::move(e));
  }
  if (pos != dir_end) return bad("central directory longer than its entries");
  // No two entries share bytes (an overlapping archive is a known bomb).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  spans.reserve(entries->size());
  for (const Entry& e : *entries) spans.emplace_back(e.header_offset, e.data_offset + e.compressed_size);
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) return bad("ZIP entries overlap");
  }
  return {};
}

namespace {

// Whether the entry's data lies in the archive and its size within the limit.
Status entry_fits(std::span<const std::uint8_t> a, const Entry& e, std::uint64_t max_output) {
  if (e.data_offset > a.size() || a.size() - e.data_offset < e.compressed_size) {
    return bad("entry data outside the archive");
  }
  if (e.size > max_output) return {StatusCode::output_limit, "ZIP entry larger than the output limit"};
  return {};
}

}  // namespace

Status extract_into(std::span<const std::uint8_t> a, const Entry& e, std::uint8_t* out, std::uint64_t max_output) {
  if (Status s = entry_fits(a, e, max_output); !s) return s;
  const auto src = a.subspan(static_cast<std::size_t>(e.data_offset), static_cast<std::size_t>(e.compressed_size));
  const auto size = static_cast<std::size_t>(e.size);
  if (e.method == kStored) {
    if (!src.empty()) std::memcpy(out, src.data(), src.size());
  } else if (e.method == kDeflate) {
    // The thread's decompressor: an archive's entries are many and small.
    libdeflate_decompressor* const d = deflate_cpu::decompressor();
    if (!d) return {StatusCode::out_of_memory, "libdeflate decompressor"};
    std::size_t used = 0, got = 0;
    const libdeflate_result r = libdeflate_deflate_decompress_ex(d, src.data(), src.size(), out, size, &used, &got);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE) return bad("deflate data decodes to more than the entry's size");
    if (r != LIBDEFLATE_SUCCESS) return bad("malformed deflate data in a ZIP entry");
    if (got != size) return bad("deflate data decodes to less than the entry's size");
  } else {
    return {StatusCode::unsupported, "ZIP entry method other than stored or deflate"};
  }
  if (crc32({out, size}) != e.crc32) return {StatusCode::checksum_mismatch, "ZIP entry CRC-32"};
  return {};
}

Status extract(std::span<const std::uint8_t> a, const Entry& e, std::vector<std::uint8_t>* out,
               std::uint64_t max_output) {
  // The room is made only once the entry's place and size pass.
  if (Status s = entry_fits(a, e, max_output); !s) return s;
  out->resize(static_cast<std::size_t>(e.size));
  return extract_into(a, e, out->data(), max_output);
}

bool safe_relative_path(std::string_view name, std::string* clean) {
  if (name.empty() || name.front() == '/' || name.find('\\') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos) {
    return false;
  }
  if (name.size() >= 2 && name[1] == ':') return false;  // a drive letter
  std::string_view rest = name;
  if (rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) return false;
  std::size_t start = 0;
  while (start <= rest.size()) {
    const std::size_t slash = rest.find('/', start);
    const std::string_view part = rest.substr(start, slash == std::string_view::npos ? rest.npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (clean) clean->assign(rest);
  return true;
}

Status Writer::add_file(std::string_view name, std::span<const std::uint8_t> data, std::uint32_t unix_mode) {
  const std::uint32_t crc = crc32(data);
  if (options_.level > 0 && !data.empty()) {
    // tandem's indexed deflate stream: chunks compressed in parallel, each
    // inflating alone, their sizes in the entry's extra field so that a
    // reader may inflate them in parallel too.
    const std::size_t chunk = std::size_t{1} << kChunkLog2;
    const std::size_t count = (data.size() + chunk - 1) / chunk;
    std::vector<std::vector<std::uint8_t>> parts(count);
    std::vector<Status> statuses(count);
    detail::parallel_for(count, 0, [&](std::size_t i) {
      const std::size_t n = std::min(chunk, data.size() - i * chunk);
      statuses[i] = deflate_cpu::compress_chunk(data.data() + i * chunk, n, std::clamp(options_.level, 1, 12),
                                                &parts[i]);
    });
    for (const Status& st : statuses)
      if (!st) return st;
    DeflateIndex index;
    index.chunk_log2 = kChunkLog2;
    std::vector<std::uint8_t> packed;
    for (const auto& part : parts) {
      index.compressed_sizes.push_back(part.size());
      packed.insert(packed.end(), part.begin(), part.end());
    }
    packed.insert(packed.end(), std::begin(kDeflateEnd), std::end(kDeflateEnd));
    if (packed.size() < data.size()) {
      std::vector<std::uint8_t> field;
      write_deflate_index(index, &field);
      if (field.size() > kMaxIndexField) field.clear();  // too many chunks for one extra field: none
      return add_raw(name, kDeflate, packed, data.size(), crc, unix_mode, field);
    }
  }
  return add_raw(name, kStored, data, data.size(), crc, unix_mode);
}

Status Writer::add_directory(std::string_view name, std::uint32_t unix_mode) {
  std::string n(name);
  if (n.empty() || n.back() != '/') n.push_back('/');
  return add_raw(n, kStored, {}, 0, 0, unix_mode);
}

Status Writer::add_raw(std::string_view name, std::uint16_t method, std::span<const std::uint8_t> data,
                       std::uint64_t size, std::uint32_t crc, std::uint32_t unix_mode,
                       std::span<const std::uint8_t> tandem_index) {
  if (finished_) return {StatusCode::invalid_argument, "entry added after the archive was finished"};
  if (!safe_relative_path(name, nullptr) || name.size() > 0xFFFF) {
    return {StatusCode::invalid_argument, "ZIP entry name is not a safe relative path"};
  }
  if (method != kStored && method != kDeflate) return {StatusCode::invalid_argument, "unknown ZIP method"};
  if (tandem_index.size() > kMaxIndexField) return {StatusCode::invalid_argument, "chunk index too large"};
  Written w;
  Entry& e = w.entry;
  e.name.assign(name);
  e.method = method;
  e.flags = kUtf8;
  e.crc32 = crc;
  e.compressed_size = data.size();
  e.size = size;
  e.header_offset = out_.size();
  e.made_by = kMadeByUnix;
  e.external_attributes = unix_mode << 16;
  e.dos_time = options_.dos_time;
  e.tandem_index.assign(tandem_index.begin(), tandem_index.end());
  w.zip64 = force_zip64_ || size >= 0xFFFFFFFF || data.size() >= 0xFFFFFFFF || e.header_offset >= 0xFFFFFFFF;

  // Local header; with ZIP64, both sizes go in its ZIP64 field.
  put32(out_, kLocalSig);
  put16(out_, w.zip64 ? kNeed45 : kNeed20);
  put16(out_, e.flags);
  put16(out_, method);
  put16(out_, e.dos_time & 0xFFFF);
  put16(out_, e.dos_time >> 16);
  put32(out_, crc);
  put32(out_, w.zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(e.compressed_size));
  put32(out_, w.zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(size));
  put16(out_, static_cast<std::uint32_t>(name.size()));
  const std::size_t extra = (w.zip64 ? 20 : 0) + (tandem_index.empty() ? 0 : 4 + tandem_index.size());
  put16(out_, static_cast<std::uint32_t>(extra));
  out_.insert(out_.end(), name.begin(), name.end());
  if (w.zip64) {
    put16(out_, kZip64Field);
    put16(out_, 16);
    put64(out_, size);
    put64(out_, e.compressed_size);
  }
  if (!tandem_index.empty()) {
    put16(out_, kTandemIndexField);
    put16(out_, static_cast<std::uint32_t>(tandem_index.size()));
    out_.insert(out_.end(), tandem_index.begin(), tandem_index.end());
  }
  e.data_offset = out_.size();
  out_.insert(out_.end(), data.begin(), data.end());
  written_.push_back(std::move(w));
  return {};
}

Status Writer::finish() {
  if (finished_) return {StatusCode::invalid_argument, "the archive is finished already"};
  finished_ = true;
  const std::uint64_t dir_offset = out_.size();
  for (const Written& w : written_) {
    const Entry& e = w.entry;
    put32(out_, kCentralSig);
    put16(out_, e.made_by);
    put16(out_, w.zip64 ? kNeed45 : kNeed20);
    put16(out_, e.flags);
    put16(out_, e.method);
    put16(out_, e.dos_time & 0xFFFF);
    put16(out_, e.dos_time >> 16);
    put32(out_, e.crc32);
    put32(out_, w.zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(e.compressed_size));
    put32(out_, w.zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(e.size));
    put16(out_, static_cast<std::uint32_t>(e.name.size()));
    const std::size_t extra = (w.zip64 ? 28 : 0) + (e.tandem_index.empty() ? 0 : 4 + e.tandem_index.size());
    put16(out_, static_cast<std::uint32_t>(extra));
    put16(out_, 0);  // comment
    put16(out_, 0);  // disk
    put16(out_, 0);  // internal attributes
    put32(out_, e.external_attributes);
    put32(out_, w.zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(e.header_offset));
    out_.insert(out_.end(), e.name.begin(), e.name.end());
    if (w.zip64) {
      put16(out_, kZip64Field);
      put16(out_, 24);
      put64(out_, e.size);
      put64(out_, e.compressed_size);
      put64(out_, e.header_offset);
    }
    if (!e.tandem_index.empty()) {
      put16(out_, kTandemIndexField);
      put16(out_, static_cast<std::uint32_t>(e.tandem_index.size()));
      out_.insert(out_.end(), e.tandem_index.begin(), e.tandem_index.end());
    }
  }
  const std::uint64_t dir_size = out_.size() - dir_offset;
  const std::uint64_t count = written_.size();
  const bool zip64 = force_zip64_ || count >= 0xFFFF || dir_offset >= 0xFFFFFFFF || dir_size >= 0xFFFFFFFF;
  if (zip64) {
    const std::uint64_t z = out_.size();
    put32(out_, kZip64EndSig);
    put64(out_, kZip64EndSize - 12);
    put16(out_, kMadeByUnix);
    put16(out_, kNeed45);
    put32(out_, 0);
    put32(out_, 0);
    put64(out_, count);
    put64(out_, count);
    put64(out_, dir_size);
    put64(out_, dir_offset);
    put32(out_, kZip64LocatorSig);
    put32(out_, 0);
    put64(out_, z);
    put32(out_, 1);
  }
  put32(out_, kEndSig);
  put16(out_, 0);
  put16(out_, 0);
  put16(out_, zip64 ? 0xFFFF : static_cast<std::uint32_t>(count));
  put16(out_, zip64 ? 0xFFFF : static_cast<std::uint32_t>(count));
  put32(out_, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(dir_size));
  put32(out_, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(dir_offset));
  put16(out_, 0);
  return {};
}

}  // namespace tandem::zip
