// tandem - .rans files: tandem's rANS entropy coder over data of any size.
//
// A rANS stream (docs/formats/rans.md) codes at most 4 GiB - 1 bytes and has
// no checksum. A .rans file cuts its content into blocks (1 MiB by default),
// codes each block as its own rANS stream - or stores it raw when the stream
// would not be smaller - behind a header that gives both sizes, and ends with
// an XXH3-64 checksum of the content. Blocks are coded and decoded in
// parallel on the worker threads, a batch at a time, so memory stays bounded
// whatever the size of the content. The format is documented in
// docs/formats/rans.md ("Files").
//
// Decompression treats its input as hostile: every malformed file ends in a
// status (bad_data, truncated, unsupported, checksum_mismatch, output_limit;
// io_error and the like from the source and sink), never a read or write
// outside the buffers. Files may be concatenated: the members decode one
// after another.
//
// Buffers are host memory; functions are safe to call from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tandem/block_file.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

struct RansFileOptions {
  // Bytes of content per block: a power of two, 64 KiB .. 16 MiB. Each block
  // gets its own frequency table (so smaller blocks adapt better to changing
  // data) and is the unit of parallel work.
  std::size_t block_size = std::size_t{64} << 10;
  // The rANS streams' parameters (docs/formats/rans.md): chunk size in KiB
  // (1..64), scale bits (8..12), lanes (1..32).
  std::uint32_t chunk_kib = 16;
  std::uint32_t scale_bits = 11;
  std::uint32_t lanes = 32;
  int threads = 0;       // 0 = all hardware threads
  ProgressFn progress;   // may be empty
};

using RansFileDecodeOptions = BlockFileDecodeOptions;
using RansFileStats = BlockFileStats;

// True when data[0, size) starts with a .rans file's magic number ("TNRF").
bool rans_file_magic(const void* data, std::size_t size);

// Upper bound of the size of one .rans file holding `input_size` bytes:
// every block stored raw, plus the headers. 0 for invalid options.
std::uint64_t rans_file_max_compressed_size(std::uint64_t input_size, const RansFileOptions& options = {});

// Compresses everything `in` yields into one .rans member written to `out`.
// invalid_argument for a bad block size or bad stream parameters.
Status rans_file_compress_stream(Source& in, Sink& out, const RansFileOptions& options = {},
                                 StreamStats* stats = nullptr);

// Decompresses every member of `in` into `out`. An empty input is truncated.
Status rans_file_decompress_stream(Source& in, Sink& out, const RansFileDecodeOptions& options = {},
                                   StreamStats* stats = nullptr, RansFileStats* file_stats = nullptr);

// In-memory conveniences. The vector forms replace *output's contents (empty
// after a failure).
Status rans_file_compress(ConstBuffer input, std::vector<std::uint8_t>* output, const RansFileOptions& options = {});
Status rans_file_decompress(ConstBuffer input, std::vector<std::uint8_t>* output,
                            const RansFileDecodeOptions& options = {}, RansFileStats* file_stats = nullptr);
// Into a caller's buffer: *size receives the bytes written; output_too_small
// when they do not fit (size a compression with rans_file_max_compressed_size).
Status rans_file_compress(ConstBuffer input, MutableBuffer output, std::size_t* size,
                          const RansFileOptions& options = {});
Status rans_file_decompress(ConstBuffer input, MutableBuffer output, std::size_t* size,
                            const RansFileDecodeOptions& options = {});

}  // namespace tandem
