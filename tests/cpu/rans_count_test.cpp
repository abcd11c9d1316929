// The GPU encoder's warp histogram (gpu/rans_body.hpp's count_bytes, the
// histogram kernel's path for items of one chunk) through the warp
// emulation: its counts against a plain loop at sizes around the warp's
// 16-byte words and its rounds of loads, from every start modulo 16 (the
// bytes before the first 16-byte boundary go apart), in random, constant and
// skewed data, with lanes emulated in both orders, into a histogram the
// previous call left dirty.
#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/rans_body.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

namespace body = gpu::ransk;

std::array<std::uint32_t, 256> plain_counts(const std::uint8_t* in, std::size_t n) {
  std::array<std::uint32_t, 256> c{};
  for (std::size_t k = 0; k < n; ++k) ++c[in[k]];
  return c;
}

TEST(RansCountBytes, MatchesAPlainLoop) {
  const std::uint32_t sizes[] = {0, 1, 15, 16, 17, 31, 32, 33, 1000, 4096, 16384, 65536 + 1};
  std::mt19937 rng(5);
  alignas(16) std::uint32_t hist[body::kHistWords];
  for (bool reversed : {false, true}) {
    gpu::simt::host_lanes_reversed() = reversed;
    for (int kind = 0; kind < 3; ++kind) {
      for (std::uint32_t n : sizes) {
        std::vector<std::uint8_t> buf(n + 32);
        for (auto& b : buf) {
          const std::uint32_t r = rng();
          const std::uint32_t skewed = r % 7 == 0 ? r >> 8 : r % 3;
          b = static_cast<std::uint8_t>(kind == 0 ? r : kind == 1 ? 0x41u : skewed);
        }
        // Sixteen starts: every one modulo 16.
        for (std::uint32_t off = 0; off < 16; ++off) {
          const std::uint8_t* in = buf.data() + off;
          std::uint32_t counts[256];
          for (auto& c : counts) c = 0xDEADBEEFu;
          for (auto& h : hist) h = 0x12345u;  // left dirty: count_bytes clears it
          body::count_bytes(gpu::simt::Warp{}, in, n, hist, counts);
          const auto want = plain_counts(in, n);
          for (int s = 0; s < 256; ++s) {
            ASSERT_EQ(counts[s], want[s]) << "kind " << kind << " n " << n << " offset " << off << " symbol " << s
                                          << (reversed ? " lanes reversed" : "");
          }
        }
      }
    }
  }
  gpu::simt::host_lanes_reversed() = false;
}

}  // namespace
}  // namespace tandem
