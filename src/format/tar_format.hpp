// tar archives, read in memory: the entries of a ustar, GNU or pax archive
// (POSIX.1-2001 pax; GNU tar's long names and base-256 numbers; old v7
// headers), each with its path, kind, size and where its data lies. What an
// archive scanner needs to hand a tar's members on; extraction is the
// caller's (and it is the caller's to refuse paths that leave a directory).
//
// The input is hostile: every header's checksum is checked, every number
// parsed with its field's bounds, every size checked against the input
// before anything is sized by it, and metadata (long names, pax records)
// capped. parse() never reads outside its input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/tar_body.hpp"
#include "tandem/tandem.hpp"

namespace tandem::tar {

inline constexpr std::size_t kBlockBytes = tar_body::kBlockBytes;

enum class Kind : std::uint8_t {
  file,       // '0', NUL, '7' (contiguous)
  hardlink,   // '1': `link` names the entry it repeats
  symlink,    // '2': `link` is its target
  directory,  // '5'
  other,      // devices, FIFOs, GNU sparse and volume entries: data skipped
};

struct Entry {
  std::string path;  // pax `path`, else a GNU long name, else ustar's prefix/name
  std::string link;  // pax `linkpath`, else a GNU long link, else the header's
  Kind kind = Kind::file;
  char typeflag = '0';         // as the header has it
  std::uint64_t size = 0;      // bytes of data (pax `size` over the header's)
  std::uint64_t data_at = 0;   // the data's offset in the archive
  std::uint32_t mode = 0;
  std::int64_t mtime = 0;      // seconds (pax `mtime` over the header's; its fraction dropped)
};

struct Limits {
  std::size_t max_entries = 1u << 20;  // entries listed at most
  std::size_t max_meta = 1u << 20;     // bytes of one long name or pax header at most
};

// True when p[0, n) starts with a tar header whose checksum holds.
bool looks_like_tar(const std::uint8_t* p, std::size_t n);

// Lists the entries of the archive p[0, n) in order, up to its end (a zero
// block; or the end of the input after an entry's whole data, in its
// padding, or in zero bytes; what follows a zero block is padding and is
// not read). truncated: the input ends inside a
// header or an entry's data; bad_data: a checksum, a number, a pax record
// or a long name is malformed, or a limit is passed. *entries holds the
// entries before the failure.
Status parse(const std::uint8_t* p, std::size_t n, std::vector<Entry>* entries, const Limits& limits = {});

}  // namespace tandem::tar
