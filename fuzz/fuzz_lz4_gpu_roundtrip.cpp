// Fuzz target: the GPU LZ4 block encoder (its CPU emulation, the same source
// as the kernel) is lossless, standard and deterministic.
//
// Input: the data itself. Properties: the block fits lz4_max_compressed_size;
// its status says whether it is smaller than the data; liblz4's safe decoder
// and the emulated GPU decoder both give the data back; encoding again into a
// differently filled buffer gives the same bytes; with exactly the block's
// size as capacity it gives the same block, and with one byte less
// output_overflow, never writing past the capacity (guard bytes).
#include <lz4.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_guard.hpp"
#include "gpu/lz4_gpu_emulate.hpp"

namespace {

using tandem::gpu::ItemStatus;

using tandem::fuzz::Encoded;

Encoded encode(const std::uint8_t* in, std::size_t n, std::size_t cap, std::uint8_t fill) {
  return tandem::fuzz::encode_guarded(tandem::gpu::lz4_encode_block_emulated, in, n, cap, fill, 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::size_t bound = tandem::gpu::lz4_max_compressed_size(size);
  const Encoded e = encode(data, size, bound, 0x00);
  FUZZ_ASSERT(e.status == ItemStatus::ok || e.status == ItemStatus::incompressible);
  FUZZ_ASSERT(!e.block.empty());
  FUZZ_ASSERT((e.status == ItemStatus::ok) == (e.block.size() < size));

  // Lossless through liblz4 and through the GPU decoder, each into room for
  // exactly the data.
  std::vector<std::uint8_t> back(size ? size : 1);
  const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(e.block.data()), reinterpret_cast<char*>(back.data()),
                                    static_cast<int>(e.block.size()), static_cast<int>(size));
  FUZZ_ASSERT(r >= 0 && static_cast<std::size_t>(r) == size);
  FUZZ_ASSERT(size == 0 || std::memcmp(back.data(), data, size) == 0);
  std::fill(back.begin(), back.end(), 0);
  std::size_t decoded = 0;
  FUZZ_ASSERT(tandem::gpu::lz4_decode_block_emulated(e.block.data(), e.block.size(), back.data(), size, &decoded) ==
              ItemStatus::ok);
  FUZZ_ASSERT(decoded == size);
  FUZZ_ASSERT(size == 0 || std::memcmp(back.data(), data, size) == 0);

  // Deterministic, whatever the output buffer held and whatever room is left.
  const Encoded again = encode(data, size, bound, 0xFF);
  FUZZ_ASSERT(again.status == e.status && again.block == e.block);
  const Encoded exact = encode(data, size, e.block.size(), 0x5A);
  FUZZ_ASSERT(exact.status == e.status && exact.block == e.block);
  FUZZ_ASSERT(encode(data, size, e.block.size() - 1, 0x5A).status == ItemStatus::output_overflow);
  return 0;
}
