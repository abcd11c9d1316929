// tandem - .lzr files: tandem's LZ77 + rANS codec (tandem/lzr.hpp) over data
// of any size.
//
// A .lzr file has the layout of a .rans file (docs/formats/rans.md, "Files";
// docs/formats/lzr.md, "Files") with its own magic number: it cuts its
// content into blocks (4 MiB by default), codes each block as one lzr frame -
// or stores it raw when the frame would not be smaller - behind a header that
// gives both sizes, and ends with an XXH3-64 checksum of the content. Blocks
// are coded and decoded in parallel on the worker threads, a batch at a
// time, so memory stays bounded whatever the size of the content. The CPU
// codes the frames the GPU encoder writes, byte for byte.
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
#include "tandem/lzr.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

struct LzrFileOptions {
  // Bytes of content per block, each one lzr frame: a power of two, 64 KiB
  // .. 16 MiB. The unit of parallel work.
  std::size_t block_size = std::size_t{4} << 20;
  // The frames' parameters (their own blocks of 64 .. 256 KiB).
  lzr::Params params;
  int threads = 0;      // 0 = all hardware threads
  ProgressFn progress;  // may be empty
};

using LzrFileDecodeOptions = BlockFileDecodeOptions;
using LzrFileStats = BlockFileStats;

// True when data[0, size) starts with a .lzr file's magic number ("TNLF").
bool lzr_file_magic(const void* data, std::size_t size);

// Upper bound of the size of one .lzr file holding `input_size` bytes:
// every block stored raw, plus the headers. 0 for invalid options.
std::uint64_t lzr_file_max_compressed_size(std::uint64_t input_size, const LzrFileOptions& options = {});

// Compresses everything `in` yields into one .lzr member written to `out`.
// invalid_argument for a bad block size or bad frame parameters.
Status lzr_file_compress_stream(Source& in, Sink& out, const LzrFileOptions& options = {},
                                StreamStats* stats = nullptr);

// Decompresses every member of `in` into `out`. An empty input is truncated.
Status lzr_file_decompress_stream(Source& in, Sink& out, const LzrFileDecodeOptions& options = {},
                                  StreamStats* stats = nullptr, LzrFileStats* file_stats = nullptr);

// In-memory conveniences. The vector forms replace *output's contents (empty
// after a failure).
Status lzr_file_compress(ConstBuffer input, std::vector<std::uint8_t>* output, const LzrFileOptions& options = {});
Status lzr_file_decompress(ConstBuffer input, std::vector<std::uint8_t>* output,
                           const LzrFileDecodeOptions& options = {}, LzrFileStats* file_stats = nullptr);

}  // namespace tandem
