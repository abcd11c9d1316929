// The engine of tandem's block files (format/block_file_format.hpp): .rans
// files (tandem/rans_file.hpp) and .lzr files (tandem/lzr_file.hpp) are this
// engine with a block codec each.
//
// Compression reads a batch of blocks, codes them in parallel into
// per-block buffers of the block's own size - a payload that does not fit
// is not smaller than the block, which then goes raw - while one more task
// of the same parallel loop hashes the batch, and writes the blocks in
// order.
//
// Decompression reads block headers until a batch is gathered (its blocks'
// payloads in the source's window, at most 64 MiB of content), reserves the
// batch's content in the sink, decodes every block straight into its place
// in parallel, hashes it in order and commits it. A block's sizes are checked
// before anything is read or sized by them (content at most the block size,
// payload at most the content), so a lying header cannot make the reader
// stage more than a block's worth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "format/block_file_format.hpp"
#include "tandem/block_file.hpp"
#include "tandem/tandem.hpp"

namespace tandem::block_file {

// Codes one block. encode: output_too_small when the payload needs more
// than out.size() bytes (the block then goes raw); decode: the payload `in`
// into out, *size the bytes it gives, any failure a status. Both are called
// from several threads at once.
using BlockFn = std::function<Status(std::span<const std::uint8_t> in, std::span<std::uint8_t> out,
                                     std::size_t* size)>;

struct Codec {
  const Kind* kind;
  BlockFn encode;
  BlockFn decode;
};

struct EncodeOptions {
  std::size_t block_size = std::size_t{1} << kMinBlockLog2;
  int threads = 0;
  ProgressFn progress;
};

// A power of two in 64 KiB .. 16 MiB.
bool block_size_valid(std::size_t block_size);
// Every block stored raw, plus the headers.
std::uint64_t max_compressed_size(std::uint64_t input_size, std::size_t block_size);

// One member holding everything `in` yields (block_size checked by the caller).
Status compress(Source& in, Sink& out, const Codec& codec, const EncodeOptions& options, StreamStats* stats);
// Every member of `in`.
Status decompress(Source& in, Sink& out, const Codec& codec, const BlockFileDecodeOptions& options,
                  StreamStats* stats, BlockFileStats* file_stats);

// The in-memory forms of a stream call `run`: into a vector (replaced; empty
// after a failure) or a caller's buffer (*size: the bytes written, 0 after a
// failure).
using StreamFn = std::function<Status(Source& in, Sink& out)>;
Status run_to_vector(ConstBuffer input, std::vector<std::uint8_t>* output, const StreamFn& run);
Status run_to_buffer(ConstBuffer input, MutableBuffer output, std::size_t* size, const StreamFn& run);

}  // namespace tandem::block_file
