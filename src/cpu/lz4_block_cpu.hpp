// LZ4 blocks on the CPU: thin wrappers over liblz4 plus a structural
// validator that tells a block that is too big for its output from a broken one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tandem/tandem.hpp"

namespace tandem::cpu {

// Largest input one LZ4 block may hold (liblz4's LZ4_MAX_INPUT_SIZE).
inline constexpr std::size_t kLz4MaxInput = 0x7E000000;
// LZ4 offsets reach back at most this far.
inline constexpr std::size_t kLz4Window = 64u << 10;

// LZ4_compressBound, or 0 when n > kLz4MaxInput.
std::size_t lz4_block_bound(std::size_t n);

// Compresses one block with a per-thread state. Returns the compressed size,
// or 0 when the result does not fit in `capacity` (or n is too large). An
// empty input gives the one-byte empty block.
// level: <= 2 fast (acceleration 1, or -level when negative), 3..12 HC.
std::size_t lz4_compress_block(const std::uint8_t* src, std::size_t n, std::uint8_t* dst,
                               std::size_t capacity, int level);

// Decompresses one block into at most `capacity` bytes, using the `dict_size`
// bytes at `dict` as history (dict may be null when dict_size is 0).
// On success returns ok and sets *size. On failure returns output_too_small
// when the block is well formed but decodes to more than capacity, else bad_data.
Status lz4_decompress_block(const std::uint8_t* src, std::size_t n, std::uint8_t* dst,
                            std::size_t capacity, std::size_t* size,
                            const std::uint8_t* dict = nullptr, std::size_t dict_size = 0);

// Walks the sequences of a block without writing anything: true when every
// length and offset is consistent (offsets may reach `dict_size` bytes before
// the output start); *decoded_size receives the decoded size.
bool lz4_validate_block(const std::uint8_t* src, std::size_t n, std::size_t dict_size,
                        std::uint64_t* decoded_size);

// Compressor for linked blocks: each block may refer to the 64 KiB before it.
// The history is copied inside, so the caller may reuse its input buffers.
class Lz4LinkedCompressor {
 public:
  explicit Lz4LinkedCompressor(int level);
  ~Lz4LinkedCompressor();
  Lz4LinkedCompressor(const Lz4LinkedCompressor&) = delete;
  Lz4LinkedCompressor& operator=(const Lz4LinkedCompressor&) = delete;
  // As lz4_compress_block.
  std::size_t compress(const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t capacity);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Decompressor for linked blocks; keeps the last 64 KiB of output as history.
class Lz4LinkedDecompressor {
 public:
  Lz4LinkedDecompressor();
  // As lz4_decompress_block, with the history of earlier blocks.
  Status decompress(const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t capacity,
                    std::size_t* size);
  // Adds bytes that were stored raw (uncompressed blocks) to the history.
  void remember(const std::uint8_t* data, std::size_t n);

 private:
  std::unique_ptr<std::uint8_t[]> history_;
  std::size_t history_size_ = 0;
};

}  // namespace tandem::cpu
