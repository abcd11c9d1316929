// tandem - what .rans files (tandem/rans_file.hpp) and .lzr files
// (tandem/lzr_file.hpp) share: they are tandem's block files, one layout
// (docs/formats/rans.md, "Files") with a codec each, read with these options.
#pragma once

#include <cstdint>

#include "tandem/tandem.hpp"

namespace tandem {

struct BlockFileDecodeOptions {
  int threads = 0;                        // 0 = all hardware threads
  std::uint64_t max_output = UINT64_MAX;  // fail with output_limit beyond this many bytes
  bool verify_checksum = true;            // compare each member's XXH3-64 with its content
  ProgressFn progress;                    // may be empty
};

// What a decompression met, beyond StreamStats.
struct BlockFileStats {
  std::uint64_t members = 0;     // files, when several were concatenated
  std::uint64_t blocks = 0;      // blocks of content (end markers not counted)
  std::uint64_t raw_blocks = 0;  // of which stored raw
};

}  // namespace tandem
