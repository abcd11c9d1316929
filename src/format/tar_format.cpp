// tar archives; see tar_format.hpp.
#include "format/tar_format.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

namespace tandem::tar {

namespace {

// Header fields: offset and size.
struct Field {
  std::size_t at, size;
};
constexpr Field kName{0, 100}, kMode{100, 8}, kSize{124, 12}, kMtime{136, 12}, kLinkname{157, 100}, kMagic{257, 6},
    kPrefix{345, 155};
constexpr std::size_t kTypeflag = 156;

std::string_view text(const std::uint8_t* h, Field f) {
  const char* s = reinterpret_cast<const char*>(h + f.at);
  return {s, strnlen(s, f.size)};
}

// A number field (tar_body::number); nullopt when malformed.
std::optional<std::uint64_t> number(const std::uint8_t* h, Field f, bool empty_is_zero = true) {
  std::uint64_t v = 0;
  if (!tar_body::number(h + f.at, static_cast<std::uint32_t>(f.size), empty_is_zero, &v)) return std::nullopt;
  return v;
}

using tar_body::checksum_holds;
using tar_body::zero_block;

std::uint64_t padded(std::uint64_t size) { return (size + kBlockBytes - 1) / kBlockBytes * kBlockBytes; }

// pax records "LEN key=value\n", LEN the record's whole length in decimal.
struct Pax {
  std::optional<std::string> path, linkpath;
  std::optional<std::uint64_t> size;
  std::optional<std::int64_t> mtime;
};

std::optional<std::uint64_t> decimal(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

bool parse_pax(std::string_view data, Pax* pax) {
  while (!data.empty()) {
    const std::size_t space = data.find(' ');
    if (space == std::string_view::npos) return false;
    const std::optional<std::uint64_t> len = decimal(data.substr(0, space));
    if (!len || *len <= space + 1 || *len > data.size() || data[*len - 1] != '\n') return false;
    const std::string_view record = data.substr(space + 1, *len - space - 2);
    data.remove_prefix(*len);
    const std::size_t eq = record.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    const std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") {
      pax->path = std::string(value);
    } else if (key == "linkpath") {
      pax->linkpath = std::string(value);
    } else if (key == "size") {
      pax->size = decimal(value);
      if (!pax->size) return false;
    } else if (key == "mtime") {
      // Seconds, an optional sign and fraction: the whole seconds are kept.
      std::string_view whole = value.substr(0, value.find('.'));
      const bool negative = !whole.empty() && whole[0] == '-';
      if (negative) whole.remove_prefix(1);
      const std::optional<std::uint64_t> s = decimal(whole);
      if (!s || *s > (std::uint64_t{1} << 62)) return false;
      pax->mtime = negative ? -static_cast<std::int64_t>(*s) : static_cast<std::int64_t>(*s);
    }
  }
  return true;
}

}  // namespace

bool looks_like_tar(const std::uint8_t* p, std::size_t n) {
  return tar_body::looks_like_tar(p, n);
}

Status parse(const std::uint8_t* p, std::size_t n, std::vector<Entry>* entries, const Limits& limits) {
  entries->clear();
  std::optional<std::string> long_name, long_link;  // GNU 'L' and 'K', for the next entry
  Pax pax;                                          // an 'x' header's records, for the next entry
  std::size_t at = 0;
  while (at < n) {
    const std::uint8_t* h = p + at;
    if (n - at < kBlockBytes) {
      // A cut in the end's zero blocks ends the archive; in a header, not.
      if (std::all_of(h, p + n, [](std::uint8_t b) { return b == 0; })) return {};
      return {StatusCode::truncated, "tar archive cut short (header)"};
    }
    if (zero_block(h)) return {};  // the end; what follows is padding
    if (!checksum_holds(h)) return {StatusCode::bad_data, "tar header checksum mismatch"};
    const std::optional<std::uint64_t> header_size = number(h, kSize);
    const std::optional<std::uint64_t> mode = number(h, kMode);
    const std::optional<std::uint64_t> mtime = number(h, kMtime);
    if (!header_size || !mode || !mtime) return {StatusCode::bad_data, "tar header with a malformed number"};
    const char flag = static_cast<char>(h[kTypeflag]);
    const std::uint64_t data_at = at + kBlockBytes;
    const bool meta = flag == 'L' || flag == 'K' || flag == 'x' || flag == 'g';
    const std::uint64_t size = !meta && pax.size ? *pax.size : *header_size;
    if (size > n - data_at) return {StatusCode::truncated, "tar archive cut short (entry data)"};
    const std::uint64_t next = data_at + std::min<std::uint64_t>(padded(size), n - data_at);
    const std::string_view data(reinterpret_cast<const char*>(p + data_at), static_cast<std::size_t>(size));
    if (meta) {
      if (size > limits.max_meta) return {StatusCode::bad_data, "tar long name or pax header over the limit"};
      if (flag == 'L' || flag == 'K') {
        (flag == 'L' ? long_name : long_link) = std::string(data.substr(0, data.find('\0')));
      } else {
        Pax records;
        if (!parse_pax(data, &records)) return {StatusCode::bad_data, "tar pax header with a malformed record"};
        if (flag == 'x') pax = records;  // global ('g') records are checked and not applied
      }
      at = static_cast<std::size_t>(next);
      continue;
    }
    if (entries->size() >= limits.max_entries) {
      return {StatusCode::bad_data, "tar archive with more entries than the limit"};
    }
    Entry e;
    // POSIX ustar's magic; GNU's ("ustar  ") keeps times where the prefix would be.
    const bool posix = std::memcmp(h + kMagic.at, "ustar\0", 6) == 0;
    if (pax.path) {
      e.path = *pax.path;
    } else if (long_name) {
      e.path = *long_name;
    } else {
      const std::string_view prefix = posix ? text(h, kPrefix) : std::string_view{};
      e.path = std::string(text(h, kName));
      if (!prefix.empty()) e.path = std::string(prefix) + "/" + e.path;
    }
    e.link = pax.linkpath ? *pax.linkpath : long_link ? *long_link : std::string(text(h, kLinkname));
    e.typeflag = flag;
    switch (flag) {
      case '0':
      case '\0':
      case '7':
        e.kind = Kind::file;
        break;
      case '1':
        e.kind = Kind::hardlink;
        break;
      case '2':
        e.kind = Kind::symlink;
        break;
      case '5':
        e.kind = Kind::directory;
        break;
      default:
        e.kind = Kind::other;
        break;
    }
    // Old v7 archives mark directories by a trailing slash only.
    if (flag == '\0' && !e.path.empty() && e.path.back() == '/') e.kind = Kind::directory;
    e.size = size;
    e.data_at = data_at;
    e.mode = static_cast<std::uint32_t>(*mode & 07777);
    e.mtime = pax.mtime ? *pax.mtime : static_cast<std::int64_t>(*mtime);
    entries->push_back(std::move(e));
    long_name.reset();
    long_link.reset();
    pax = Pax{};
    at = static_cast<std::size_t>(next);
  }
  return {};
}

}  // namespace tandem::tar
