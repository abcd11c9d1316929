// tandem - the archive scanner: every file inside an archive, through any
// nesting of gzip, zstd and LZ4 frames, tar and ZIP (a tar.gz inside a ZIP
// inside a tar.zst), decompressed into one buffer with a table of entries.
//
// This is the CPU path: each layer is parsed and decompressed on the host
// (zstd frames by libzstd).
// Its input is hostile: limits on the total output, on each decompression's
// ratio, on the depth of nesting and on the number of entries stop zip and
// tar bombs with a status, and every entry carries its own status, so one
// malformed member leaves the others listed and decompressed.
//
// Functions are safe to call from several threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem {

struct ScanLimits {
  std::uint64_t max_output = std::uint64_t{4} << 30;  // bytes all decompressions may produce together
  std::uint64_t max_ratio = 1000;                      // output of one decompression per byte of its input
  int max_depth = 8;                                   // layers of nesting below the archive
  std::uint64_t max_entries = 1u << 20;
};

struct ScanEntry {
  // The archive's name, then each container member's name, joined by '/';
  // compression layers (gzip, LZ4) add no component.
  std::string path;
  int layer = 0;              // containers (tar, ZIP) above it
  std::uint64_t offset = 0;   // of its bytes in ScanResult::bytes
  std::uint64_t size = 0;     // its bytes there (0 when status is not ok)
  std::string codec;          // the layers it came through: "gzip+tar", "zstd", "zip:deflate", "zip:stored", "stored"
  Status status;              // ok, or why its bytes are not there
  std::size_t archive = 0;    // which archive of a batch (scan_to_device); 0 otherwise
};

struct ScanResult {
  std::vector<std::uint8_t> bytes;  // every ok entry's bytes, back to back
  std::vector<ScanEntry> entries;   // files, in archive order (directories and links are not listed)
};

// Scans `archive`, named `name`. The result lists what was found, each entry
// with its status (a container that cannot be read, or that lists more
// entries than the limit, is an entry with that status); the call's own
// status is not ok only for an argument error or when the entries found in
// all containers together pass the limit (bad_data).
Status scan(ConstBuffer archive, std::string_view name, const ScanLimits& limits, ScanResult* result);

// One archive of a batch: its bytes (host memory, held by the caller until
// the call returns) and the name its entries' paths start with.
struct ScanInput {
  ConstBuffer archive;
  std::string name;
};

// Scans every archive of `archives` on up to `threads` threads (0: all
// hardware threads), one archive per task. (*results)[i] is what scan() gives
// for archives[i], limits applying to each archive on its own. The call's
// status is the first archive's (in order) whose scan() status is not ok;
// every result is filled either way.
Status scan_many(std::span<const ScanInput> archives, const ScanLimits& limits, unsigned threads,
                 std::vector<ScanResult>* results);

}  // namespace tandem
