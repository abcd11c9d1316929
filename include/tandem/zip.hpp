// tandem - ZIP archives (PKWARE APPNOTE 6.3): the central directory read from an
// archive in memory, entries (stored and deflate) checked and inflated, and
// archives written, with ZIP64 records where a size, an offset or the entry
// count does not fit the classic fields.
//
// The reader treats the archive as hostile: every offset and length is
// checked against the archive, local headers must agree with the central
// directory, entries may not overlap each other or the directory, sizes
// decode to no more than the caller's limit, and the CRC-32 of every entry is
// checked. Names are returned as stored; safe_relative_path() says whether a
// name may be written under a directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::zip {

inline constexpr std::uint16_t kStored = 0;
inline constexpr std::uint16_t kDeflate = 8;
// Extra field holding tandem's deflate chunk index (docs/formats/deflate.md);
// other readers skip it.
inline constexpr std::uint16_t kTandemIndexField = 0x4454;  // "TD"

struct Entry {
  std::string name;                  // as stored (directories end with '/')
  std::uint16_t method = 0;          // kStored or kDeflate (others: unsupported on extraction)
  std::uint16_t flags = 0;           // general purpose bit flag
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;            // uncompressed
  std::uint64_t header_offset = 0;   // of the local file header
  std::uint64_t data_offset = 0;     // of the entry's data, after its local header
  std::uint16_t made_by = 0;         // version made by (high byte: the host system, 3 = Unix)
  std::uint32_t external_attributes = 0;
  std::uint32_t dos_time = 0;        // DOS date (high 16 bits) and time
  std::vector<std::uint8_t> tandem_index;  // the kTandemIndexField payload, when present

  bool is_directory() const { return !name.empty() && name.back() == '/'; }
  // Unix mode bits when the archive was made on Unix, else 0.
  std::uint32_t unix_mode() const { return (made_by >> 8) == 3 ? external_attributes >> 16 : 0; }
  bool is_symlink() const { return (unix_mode() & 0170000) == 0120000; }
};

struct ReadLimits {
  std::uint64_t max_entries = 1u << 20;
  std::uint64_t max_entry_size = std::uint64_t{1} << 40;  // uncompressed bytes per entry
  std::uint64_t max_total_size = std::uint64_t{1} << 42;  // uncompressed bytes, all entries
};

// Reads the central directory of `archive`: the end record (and the ZIP64
// end record when the classic one says so), then every entry with its local
// header checked. bad_data names the first inconsistency, truncated an
// archive cut short, output_limit a directory over `limits`, unsupported an
// encrypted or multi-disk archive.
Status read_directory(std::span<const std::uint8_t> archive, std::vector<Entry>* entries,
                      const ReadLimits& limits = {});

// The entry's bytes, inflated when deflated, checked against its size and
// CRC-32. out is resized to the entry's size. unsupported for methods other
// than stored and deflate, checksum_mismatch for a wrong CRC-32, bad_data for
// a deflate stream that does not decode to exactly the recorded size,
// output_limit when the size exceeds max_output.
Status extract(std::span<const std::uint8_t> archive, const Entry& entry, std::vector<std::uint8_t>* out,
               std::uint64_t max_output = std::uint64_t{1} << 40);
// The same into out[0, entry.size), which the caller provides (at least
// entry.size bytes when that is at most max_output).
Status extract_into(std::span<const std::uint8_t> archive, const Entry& entry, std::uint8_t* out,
                    std::uint64_t max_output = std::uint64_t{1} << 40);

// True when `name` is a relative path that stays under the directory it is
// written to: not empty, not absolute, no drive letter, no backslash, no
// empty, "." or ".." component, no NUL. *clean gets it without a trailing
// '/' (a directory entry).
bool safe_relative_path(std::string_view name, std::string* clean);

// Writes an archive into memory, entry by entry.
class Writer {
 public:
  struct Options {
    int level = 6;                 // libdeflate level 1-12; 0 stores every entry
    std::uint32_t dos_time = 0x21;  // 1980-01-01 00:00
  };
  Writer() : Writer(Options{}) {}
  explicit Writer(const Options& options) : options_(options) {}

  // Adds a file; it is deflated unless that would not make it smaller (or
  // the level is 0), then stored. `unix_mode` (e.g. 0100644) goes into the
  // external attributes. invalid_argument for an unsafe name.
  Status add_file(std::string_view name, std::span<const std::uint8_t> data, std::uint32_t unix_mode = 0100644);
  // Adds a directory entry ("name/").
  Status add_directory(std::string_view name, std::uint32_t unix_mode = 040755);
  // Adds an entry whose data is already compressed with `method`, with an
  // optional extra-field payload for kTandemIndexField.
  Status add_raw(std::string_view name, std::uint16_t method, std::span<const std::uint8_t> data,
                 std::uint64_t size, std::uint32_t crc32, std::uint32_t unix_mode,
                 std::span<const std::uint8_t> tandem_index = {});
  // Writes the central directory and the end records; the archive is then
  // complete. Adding after finish is invalid_argument.
  Status finish();

  const std::vector<std::uint8_t>& bytes() const { return out_; }
  std::vector<std::uint8_t> take() { return std::move(out_); }

  // Forces ZIP64 records on every entry and at the end (for tests).
  void force_zip64(bool on) { force_zip64_ = on; }

 private:
  struct Written {
    Entry entry;
    bool zip64 = false;
  };
  Options options_;
  std::vector<std::uint8_t> out_;
  std::vector<Written> written_;
  bool finished_ = false;
  bool force_zip64_ = false;
};

// CRC-32 (the ZIP and gzip polynomial) of data, continuing from crc.
std::uint32_t crc32(std::span<const std::uint8_t> data, std::uint32_t crc = 0);

}  // namespace tandem::zip
