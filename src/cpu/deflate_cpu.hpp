// Deflate chunks on the CPU: one chunk of tandem's indexed stream compressed
// (libdeflate) and rewritten to the stream contract, one chunk inflated
// alone, and a streaming raw inflater (zlib) for streams of unknown size.
//
// A chunk as libdeflate writes it ends with a final block. compress_chunk
// walks the compressed chunk with zlib's inflate(Z_BLOCK), which stops at
// every block boundary and reports the bit position there (the way gzjoin
// finds the last block), clears the final block's BFINAL bit and appends an
// empty stored block (3 zero bits, zero bits to the byte boundary, then
// 00 00 FF FF). The walk also proves that the chunk inflates to its input's
// size. Per-thread compressors and inflaters are cached (thread_local), so
// the functions are safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tandem/tandem.hpp"

struct libdeflate_decompressor;

namespace tandem::deflate_cpu {

// Compresses in[0, n) (n >= 1) at libdeflate `level` (0..12) into *out
// (resized to the chunk's compressed size): a chunk of the indexed stream,
// BFINAL clear, ending byte-aligned with an empty stored block.
Status compress_chunk(const std::uint8_t* in, std::size_t n, int level, std::vector<std::uint8_t>* out);

// This thread's libdeflate decompressor (made on first use, kept until the
// thread ends); null when it cannot be made.
libdeflate_decompressor* decompressor();

// Inflates one chunk of an indexed stream, in[0, n), that must produce
// between 1 and `capacity` bytes at out; *produced receives the size.
// bad_data when the chunk does not inflate alone, does not end on a block
// boundary at its last byte, holds a final block, or would produce more
// than `capacity`.
Status inflate_chunk(const std::uint8_t* in, std::size_t n, std::uint8_t* out, std::size_t capacity,
                     std::size_t* produced);

// Inflates a whole raw deflate stream in[0, n) that must end exactly at n and
// produce exactly `expected` bytes at out (a BGZF member, whose ISIZE gives
// the size). bad_data, or checksum_mismatch when the size is not `expected`.
Status inflate_exact(const std::uint8_t* in, std::size_t n, std::uint8_t* out, std::size_t expected);

// A streaming raw inflater over zlib (RFC 1951 without a header).
class StreamInflater {
 public:
  StreamInflater();
  ~StreamInflater();
  StreamInflater(const StreamInflater&) = delete;
  StreamInflater& operator=(const StreamInflater&) = delete;
  bool ok() const { return state_ != nullptr; }
  void reset();
  // Inflates from in[0, *in_size) into out[0, *out_size); on return the two
  // sizes hold what was consumed and produced. *finished is set at the end
  // of the deflate stream. bad_data on a malformed stream.
  Status step(const std::uint8_t* in, std::size_t* in_size, std::uint8_t* out, std::size_t* out_size,
              bool* finished);

 private:
  void* state_ = nullptr;  // z_stream
};

std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t n);
std::uint32_t adler32(std::uint32_t adler, const void* data, std::size_t n);
std::uint32_t crc32_combine(std::uint32_t a, std::uint32_t b, std::uint64_t b_size);
std::uint32_t adler32_combine(std::uint32_t a, std::uint32_t b, std::uint64_t b_size);

}  // namespace tandem::deflate_cpu
