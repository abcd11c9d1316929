// tandem - deflate, zlib and gzip on the CPU.
//
// Compression cuts the input into chunks of `chunk_size` bytes and compresses
// them independently (libdeflate, levels 0..12) on the worker threads, then
// joins them into one deflate stream that every inflater reads: each chunk
// ends byte-aligned with an empty stored block, and the stream ends with an
// empty final block. A gzip member also carries the chunk index (the 'TD'
// FEXTRA subfield; docs/formats/deflate.md) with which tandem inflates the
// chunks in parallel; other tools ignore it.
//
// Decompression reads raw deflate, zlib streams and gzip files of any origin:
// single and multi-member, BGZF (whose members are inflated in parallel), with
// or without tandem's index. Checksums (CRC-32 and ISIZE, Adler-32) are
// verified. Every malformed input ends in a status: bad_data, truncated,
// checksum_mismatch, unsupported (a zlib preset dictionary), output_limit.
//
// Buffers are host memory; functions are safe to call from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem {

enum class DeflateContainer : int {
  raw = 0,   // RFC 1951 alone
  zlib = 1,  // RFC 1950
  gzip = 2,  // RFC 1952
  // Decoding only: gzip when the input starts with 1f 8b, zlib when its first
  // two bytes are a valid zlib header, else raw deflate.
  detect = 3,
};

const char* deflate_container_name(DeflateContainer container);  // "raw", "zlib", "gzip", "detect"

struct DeflateOptions {
  DeflateContainer container = DeflateContainer::gzip;  // raw, zlib or gzip
  int level = 6;                        // libdeflate's 0 (stored) .. 12
  std::size_t chunk_size = 64u << 10;   // a power of two, 4 KiB .. 64 MiB
  int threads = 0;                      // 0 = all hardware threads
  // gzip: write the chunk index subfield. The header comes before the data,
  // so the compressed chunks are held in memory until the end of the input
  // (or until the index outgrows the 64 KiB FEXTRA field; the rest of the
  // member then streams out without an index). false: memory stays bounded.
  bool index = true;
  // gzip header fields: FNAME when not empty (a file name without directory;
  // ISO 8859-1 by the RFC, written as given, NUL bytes not allowed), MTIME
  // (seconds since 1970; 0 = none).
  std::string name;
  std::uint32_t mtime = 0;
  ProgressFn progress;                  // may be empty
  // For a gzip member with an index whose output can be rewritten (a file):
  // when set and the source knows its size, the header goes out first with
  // room for the index (in a padding subfield), the chunks stream with
  // bounded memory, and at the end, after the sink was flushed, this is
  // called with the final header, of the same size, to be written over the
  // output's first bytes. Without the call the member stays valid gzip,
  // without an index. Input that outgrows its announced size is also left
  // without an index.
  std::function<Status(const std::uint8_t* header, std::size_t size)> rewrite_header;
};

struct DeflateDecodeOptions {
  DeflateContainer container = DeflateContainer::detect;
  int threads = 0;                         // 0 = all hardware threads
  std::uint64_t max_output = UINT64_MAX;   // fail with output_limit beyond this many bytes
  bool verify_checksums = true;            // CRC-32 / ISIZE / Adler-32
  ProgressFn progress;                     // may be empty
};

// What a decompression met, beyond StreamStats.
struct DeflateStats {
  std::uint64_t members = 0;         // gzip members (1 for zlib and raw)
  std::uint64_t indexed_members = 0; // members inflated by their TD index, chunks in parallel
  std::uint64_t bgzf_members = 0;    // members inflated by their BC size, in parallel
};

// Upper bound of the compressed size of `input_size` bytes in `options`'s
// container and chunk size (the gzip header counted with its largest index
// and the name).
std::uint64_t deflate_max_compressed_size(std::uint64_t input_size, const DeflateOptions& options = {});

// Compresses everything `in` yields into one raw stream, zlib stream or gzip
// member written to `out`. invalid_argument for a bad level, chunk size,
// container or name.
Status deflate_compress_stream(Source& in, Sink& out, const DeflateOptions& options = {},
                               StreamStats* stats = nullptr);

// Decompresses `in` (every member of a gzip file) into `out`.
Status deflate_decompress_stream(Source& in, Sink& out, const DeflateDecodeOptions& options = {},
                                 StreamStats* stats = nullptr, DeflateStats* deflate_stats = nullptr);

// In-memory conveniences.
Status deflate_compress(ConstBuffer input, std::vector<std::uint8_t>* output, const DeflateOptions& options = {});
Status deflate_decompress(ConstBuffer input, std::vector<std::uint8_t>* output,
                          const DeflateDecodeOptions& options = {}, DeflateStats* deflate_stats = nullptr);

}  // namespace tandem
