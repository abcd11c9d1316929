// Fuzz target: the GPU LZ4 block decoder (its CPU emulation, the same source
// as the kernel) on arbitrary bytes.
//
// Input: 2 bytes (little-endian) choose the output capacity, the rest is the
// block, in its own exact-size allocation (ASan catches a read past it). The
// output is followed by guard bytes (a write past the capacity changes them,
// with or without ASan). Properties: the status is one the decoder may give;
// an ok output fits the capacity; decoding twice into differently filled
// buffers gives the same status and bytes (nothing uninitialised is read);
// and where liblz4's safe decoder accepts the block, this one does too, with
// the same bytes (it is more lenient than liblz4 about the end of a block,
// never stricter), except for a match offset of 0, which liblz4 1.9 lets
// through and the format forbids.
#include <lz4.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_guard.hpp"
#include "gpu/lz4_gpu_emulate.hpp"

namespace {

using tandem::gpu::ItemStatus;

using tandem::fuzz::guard_intact;
using tandem::fuzz::guarded_buffer;

struct Result {
  ItemStatus status;
  std::vector<std::uint8_t> out;  // the decoded bytes when ok
};

// Decodes with every shape of the decoder, its lanes run in either order,
// which must agree on the status, the size and every byte (also those
// written before a failure).
Result decode(const std::uint8_t* block, std::size_t n, std::size_t cap, std::uint8_t fill) {
  std::vector<std::uint8_t> buf = guarded_buffer(cap, fill);
  std::size_t size = 0;
  const ItemStatus st = tandem::gpu::lz4_decode_block_emulated(block, n, buf.data(), cap, &size);
  FUZZ_ASSERT(guard_intact(buf, cap));
  for (const tandem::gpu::DecodeShape shape : tandem::gpu::kDecodeShapes) {
    for (const tandem::gpu::LaneOrder order : {tandem::gpu::LaneOrder::up, tandem::gpu::LaneOrder::down}) {
      if (shape == tandem::gpu::DecodeShape::wide && order == tandem::gpu::LaneOrder::up) continue;
      std::vector<std::uint8_t> other = guarded_buffer(cap, fill);
      std::size_t other_size = 0;
      const ItemStatus other_st =
          tandem::gpu::lz4_decode_block_emulated(block, n, other.data(), cap, &other_size, shape, order);
      FUZZ_ASSERT(st == other_st && size == other_size && buf == other);
    }
  }
  FUZZ_ASSERT(st == ItemStatus::ok || st == ItemStatus::corrupt_token || st == ItemStatus::offset_out_of_range ||
              st == ItemStatus::output_overflow || st == ItemStatus::literal_past_input_end ||
              st == ItemStatus::match_past_output_end);
  Result r{st, {}};
  if (st == ItemStatus::ok) {
    FUZZ_ASSERT(size <= cap);
    r.out.assign(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(size));
  }
  return r;
}

// Whether some match of the block (one that parses, as liblz4 accepted it)
// has offset 0.
bool has_zero_offset(const std::uint8_t* b, std::size_t n) {
  std::size_t p = 0;
  const auto length = [&](std::size_t v) {
    if (v == 15)
      for (std::uint8_t e = 255; e == 255 && p < n;) v += (e = b[p++]);
    return v;
  };
  while (p < n) {
    const std::uint8_t token = b[p++];
    p += length(token >> 4);
    if (p + 2 > n) return false;  // the last sequence
    if ((b[p] | b[p + 1]) == 0) return true;
    p += 2;
    if ((token & 15) == 15) length(15);
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t cap = static_cast<std::size_t>(data[0]) | static_cast<std::size_t>(data[1]) << 8;
  const std::size_t n = size - 2;
  std::unique_ptr<std::uint8_t[]> block(new std::uint8_t[n ? n : 1]);
  if (n) std::memcpy(block.get(), data + 2, n);

  const Result a = decode(block.get(), n, cap, 0x00);
  const Result b = decode(block.get(), n, cap, 0xFF);
  FUZZ_ASSERT(a.status == b.status);
  FUZZ_ASSERT(a.out == b.out);

  std::unique_ptr<char[]> ref(new char[cap ? cap : 1]);
  const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(block.get()), ref.get(), static_cast<int>(n),
                                    static_cast<int>(cap));
  if (r >= 0) {
    if (has_zero_offset(block.get(), n)) {
      FUZZ_ASSERT(a.status == ItemStatus::offset_out_of_range);
    } else {
      FUZZ_ASSERT(a.status == ItemStatus::ok);
      FUZZ_ASSERT(a.out.size() == static_cast<std::size_t>(r));
      FUZZ_ASSERT(r == 0 || std::memcmp(a.out.data(), ref.get(), static_cast<std::size_t>(r)) == 0);
    }
  }
  return 0;
}
