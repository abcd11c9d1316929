// tandem - zstd frames (RFC 8878) through libzstd on the CPU: what the zstd
// tool writes and reads, so that `tandem compress --codec zstd` and
// `tandem decompress` interoperate with it both ways.
#pragma once

#include <cstdint>

#include "tandem/tandem.hpp"

namespace tandem {

struct ZstdOptions {
  int level = 3;            // 1 .. 19 (as zstd -1 .. -19)
  int threads = 0;          // libzstd's workers: 0 = all hardware threads, 1 = none
  bool checksum = true;     // XXH64 of the content in the frame, as the zstd tool writes
  ProgressFn progress;      // may be empty
};

struct ZstdDecodeOptions {
  std::uint64_t max_output = UINT64_MAX;  // fail with output_limit beyond this many bytes
  ProgressFn progress;                    // may be empty
};

// Compresses everything `in` yields into one zstd frame written to `out`
// (with the content size when the source knows it). Memory stays bounded.
Status zstd_compress_stream(Source& in, Sink& out, const ZstdOptions& options = {}, StreamStats* stats = nullptr);

// Decompresses every frame of `in` (zstd frames and skippable frames,
// concatenated) into `out`, checking content checksums where present.
// Input is untrusted: a malformed or cut frame is an error (bad_data,
// truncated, checksum_mismatch), never a crash; no input at all is bad_data.
Status zstd_decompress_stream(Source& in, Sink& out, const ZstdDecodeOptions& options = {},
                              StreamStats* stats = nullptr);

}  // namespace tandem
