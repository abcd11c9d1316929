// Fuzz target: the GPU deflate encoder (gpu/deflate_enc_body.hpp, through its
// CPU emulation) is deterministic and lossless, and its Huffman builder keeps
// its limits.
//
// The input is the data. The chunk is compressed twice (the bytes
// must be identical and within deflate_max_compressed_size), must end with
// the empty stored block, and zlib must inflate it (raw deflate) to the data
// with input left over none. The data's bytes, taken as frequencies of 19,
// 30 and 286 symbols, must give codes within 7, 15 and 15 bits whose Kraft
// sum is exactly 1.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.hpp"
#include "gpu/deflate_gpu.hpp"
#include "gpu/huffman_encode.hpp"

namespace {

namespace enc = tandem::gpu::deflate_enc;

void check_code(const std::uint8_t* data, std::size_t size, int n, int max_len) {
  std::uint32_t freq[enc::kMaxSymbols] = {};
  for (std::size_t i = 0; i < size; ++i) {
    // Skewed weights: a byte's square, shifted by its position.
    freq[i % static_cast<std::size_t>(n)] += static_cast<std::uint32_t>(data[i]) * data[i] << (i % 7);
  }
  std::uint8_t len[enc::kMaxSymbols];
  enc::build_code_lengths(freq, n, max_len, len);
  std::uint64_t kraft = 0;
  int used = 0;
  for (int s = 0; s < n; ++s) {
    FUZZ_ASSERT(len[s] <= max_len);
    FUZZ_ASSERT(freq[s] == 0 || len[s] > 0);
    if (len[s]) {
      kraft += std::uint64_t{1} << (max_len - len[s]);
      ++used;
    }
  }
  FUZZ_ASSERT(kraft == (std::uint64_t{1} << max_len));
  FUZZ_ASSERT(used >= 2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t* in = data;
  const std::size_t n = size;

  std::vector<std::uint8_t> one, two;
  FUZZ_ASSERT(tandem::gpu::deflate_compress_emulated(in, n, &one).ok());
  FUZZ_ASSERT(tandem::gpu::deflate_compress_emulated(in, n, &two).ok());
  FUZZ_ASSERT(one == two);
  FUZZ_ASSERT(one.size() <= tandem::gpu::deflate_max_compressed_size(n));
  FUZZ_ASSERT(one.size() >= 5 && std::memcmp(one.data() + one.size() - 4, "\x00\x00\xff\xff", 4) == 0);

  z_stream z{};
  FUZZ_ASSERT(inflateInit2(&z, -15) == Z_OK);
  std::vector<std::uint8_t> back(n + 1);
  z.next_in = one.data();
  z.avail_in = static_cast<uInt>(one.size());
  z.next_out = back.data();
  z.avail_out = static_cast<uInt>(back.size());
  const int r = inflate(&z, Z_SYNC_FLUSH);
  FUZZ_ASSERT(r == Z_OK);
  FUZZ_ASSERT(z.avail_in == 0);
  FUZZ_ASSERT(back.size() - z.avail_out == n);
  FUZZ_ASSERT(n == 0 || std::memcmp(back.data(), in, n) == 0);
  inflateEnd(&z);

  check_code(in, n, enc::kCLSymbols, enc::kMaxCodeLengthCL);
  check_code(in, n, enc::kDistSymbols, enc::kMaxCodeLength);
  check_code(in, n, enc::kLitLenSymbols, enc::kMaxCodeLength);
  return 0;
}
