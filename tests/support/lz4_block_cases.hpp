// Shared by the tests of the GPU LZ4 block kernels (through their CPU
// emulation and on a device): hand-built blocks with the exact status each
// must get, the sizes and kinds of data every round trip covers, a reference
// walk over the sequences of a valid block, host buffers with guard bytes, and
// inputs that end where an unreadable page starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::test {

// One hand-built LZ4 block and what decoding it into `capacity` bytes gives.
struct Lz4BlockCase {
  std::string name;
  Bytes block;
  std::size_t capacity;
  gpu::ItemStatus want;
  Bytes output;  // the decoded bytes when want is ok
};

// Every decoder status, each from blocks written byte by byte (see the .cpp
// for what each byte means), and valid blocks that exercise the edges of the
// format: length extensions, overlapping matches, an offset to the first byte.
std::vector<Lz4BlockCase> lz4_block_cases();

// The sizes that every round trip covers: tiny blocks, both sides of the
// 15-length nibble, of powers of two, of 4 KiB, of 64 KiB (the offset range).
const std::vector<std::size_t>& lz4_edge_sizes();

// Test data by kind: 0 random (incompressible), 1 constant, 2 text-like,
// 3 mixed runs, text and noise, 4 records (each the one before with a byte
// or two changed). Seeded: the same arguments, the same bytes.
inline constexpr int kLz4DataKinds = 5;
Bytes lz4_test_data(int kind, std::size_t n, std::uint64_t seed);
const char* lz4_data_kind_name(int kind);

// The sequences of an LZ4 block, by a plain walk that throws where the block
// does not parse (a length, literal run or offset cut short, or an end after
// a match); offsets and output bounds are not checked. Positions are offsets
// into the block.
struct Lz4Sequence {
  std::size_t token;         // the token byte
  std::size_t literals;      // the first literal (after the length extension)
  std::size_t literals_end;  // one past the last literal
  std::size_t decoded_end;   // output bytes once this sequence's literals are out
  std::uint32_t offset;      // the match's offset (none in the last sequence)
};
std::vector<Lz4Sequence> lz4_sequences(const Bytes& block);

// What the decoder must say about the first `cut` bytes of the valid block
// whose sequences are `seqs`, decoded with room for the whole block's output:
// ok exactly where a literal run ends (that is a complete last sequence;
// *decoded gets the output size), literal_past_input_end inside a literal
// run, corrupt_token anywhere else (a length, an offset or a match cut short).
gpu::ItemStatus lz4_truncated_status(const std::vector<Lz4Sequence>& seqs, std::size_t cut, std::size_t* decoded);

// The statuses a decoder may return.
bool is_decoder_status(gpu::ItemStatus s);

// A host buffer of `capacity` bytes followed by guard bytes: a write past the
// capacity changes them.
inline constexpr std::size_t kGuardBytes = 64;
inline constexpr std::uint8_t kGuardValue = 0xA5;
class GuardedBuffer {
 public:
  explicit GuardedBuffer(std::size_t capacity, std::uint8_t fill = 0xCD);
  std::uint8_t* data() { return mem_.data(); }
  std::size_t capacity() const { return capacity_; }
  bool guard_intact() const;
  Bytes prefix(std::size_t n) const { return Bytes(mem_.begin(), mem_.begin() + static_cast<std::ptrdiff_t>(n)); }

 private:
  Bytes mem_;
  std::size_t capacity_;
};

// A copy of a buffer's bytes that ends where an unreadable page starts, so
// that a read past its end faults even without ASan.
class PageEndCopy {
 public:
  explicit PageEndCopy(const Bytes& b);
  ~PageEndCopy();
  PageEndCopy(const PageEndCopy&) = delete;
  PageEndCopy& operator=(const PageEndCopy&) = delete;
  const std::uint8_t* get() const { return data_; }

 private:
  std::uint8_t* base_ = nullptr;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tandem::test

namespace tandem::gpu {
// Item statuses print by name in test messages.
inline std::ostream& operator<<(std::ostream& os, ItemStatus s) { return os << item_status_name(s); }
}  // namespace tandem::gpu
