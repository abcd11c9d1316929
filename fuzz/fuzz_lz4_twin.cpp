// Fuzz target: the CPU twin of the GPU LZ4 encoder gives the GPU's blocks.
//
// Input: a 2-byte little-endian output capacity, then the data. Properties:
// for the capacity given, the bound (lz4_max_compressed_size), exactly the
// block's size, one byte less, and the capacity reduced modulo the bound, the
// twin (cpu::lz4_twin_compress) and the GPU encoder's emulation give the same
// status, the same size and the same bytes; neither writes past its capacity
// (guard bytes); every block decodes with liblz4's safe decoder to the data.
#include <lz4.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/lz4_twin.hpp"
#include "fuzz_check.hpp"
#include "fuzz_guard.hpp"
#include "gpu/lz4_gpu_emulate.hpp"

namespace {

using tandem::gpu::ItemStatus;

using tandem::fuzz::Encoded;

// The encoder into cap bytes, which must set the size: 0 unless it gives a block.
template <class Encode>
Encoded encode(Encode&& fn, const std::uint8_t* in, std::size_t n, std::size_t cap) {
  const Encoded e = tandem::fuzz::encode_guarded(fn, in, n, cap, 0x3C, 12345);
  if (e.status == ItemStatus::ok || e.status == ItemStatus::incompressible) {
    FUZZ_ASSERT(e.size > 0);
  } else {
    FUZZ_ASSERT(e.size == 0);
  }
  return e;
}

// Twin and emulation agree for capacity cap; returns the twin's result.
Encoded check(const std::uint8_t* in, std::size_t n, std::size_t cap) {
  const Encoded twin = encode(tandem::cpu::lz4_twin_compress, in, n, cap);
  const Encoded gpu = encode(tandem::gpu::lz4_encode_block_emulated, in, n, cap);
  FUZZ_ASSERT(twin.status == gpu.status);
  FUZZ_ASSERT(twin.size == gpu.size);
  FUZZ_ASSERT(twin.block == gpu.block);
  if (!twin.block.empty()) {
    FUZZ_ASSERT((twin.status == ItemStatus::ok) == (twin.size < n));
    std::vector<std::uint8_t> back(n ? n : 1);
    const int r =
        LZ4_decompress_safe(reinterpret_cast<const char*>(twin.block.data()), reinterpret_cast<char*>(back.data()),
                            static_cast<int>(twin.block.size()), static_cast<int>(n));
    FUZZ_ASSERT(r >= 0 && static_cast<std::size_t>(r) == n);
    FUZZ_ASSERT(n == 0 || std::memcmp(back.data(), in, n) == 0);
  }
  return twin;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::size_t given = 0;
  if (size >= 2) {
    given = data[0] | static_cast<std::size_t>(data[1]) << 8;
    data += 2;
    size -= 2;
  }
  const std::size_t bound = tandem::gpu::lz4_max_compressed_size(size);
  const Encoded full = check(data, size, bound);
  FUZZ_ASSERT(full.status == ItemStatus::ok || full.status == ItemStatus::incompressible);
  check(data, size, full.size);
  FUZZ_ASSERT(check(data, size, full.size - 1).status == ItemStatus::output_overflow);
  check(data, size, given);
  check(data, size, given % (bound + 1));
  return 0;
}
