// simt::copy_words_share, the batched copy of the lzr and rANS kernels, run
// on the host: every alignment of source and destination, short and long
// lengths, warp- and block-sized teams, sources whose aligned words reach
// past their bounds.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "gpu/simt.hpp"

namespace {

using tandem::gpu::simt::copy_words_share;

// Copies len bytes from src (bounded by [lo, hi)) into a fresh destination
// at offset dst_off of a guarded buffer, with `threads` threads of batch 8;
// checks the bytes and that nothing outside them changed.
void check_copy(const std::uint8_t* src, std::uint32_t len, const std::uint8_t* lo, const std::uint8_t* hi,
                std::uint32_t dst_off, std::uint32_t threads) {
  constexpr std::uint8_t kGuard = 0xA5;
  std::vector<std::uint8_t> dst(len + dst_off + 64, kGuard);
  std::uint8_t* to = dst.data() + dst_off;
  for (std::uint32_t t = 0; t < threads; ++t) copy_words_share<8>(to, src, len, lo, hi, t, threads);
  for (std::uint32_t i = 0; i < len; ++i) ASSERT_EQ(to[i], src[i]) << "len " << len << " byte " << i;
  for (std::size_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], kGuard);
  for (std::size_t i = dst_off + len; i < dst.size(); ++i) ASSERT_EQ(dst[i], kGuard);
}

TEST(SimtCopy, EveryAlignmentAndLength) {
  std::mt19937 rng(7);
  std::vector<std::uint8_t> buf(20000);
  for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
  const std::uint8_t* lo = buf.data();
  const std::uint8_t* hi = buf.data() + buf.size();
  for (std::uint32_t threads : {32u, 256u}) {
    for (std::uint32_t src_off = 0; src_off < 4; ++src_off) {
      for (std::uint32_t dst_off = 0; dst_off < 4; ++dst_off) {
        for (std::uint32_t len = 0; len < 300; ++len) check_copy(lo + 16 + src_off, len, lo, hi, dst_off, threads);
        for (std::uint32_t len : {1023u, 1024u, 1025u, 8191u, 8192u, 8193u, 19000u}) {
          check_copy(lo + 16 + src_off, len, lo, hi, dst_off, threads);
        }
      }
    }
  }
}

TEST(SimtCopy, SourcesAtTheEdgesOfTheirBounds) {
  // Bounds that start and end off a word boundary: the copy may read only
  // inside them, so the words at the edges go byte by byte; the bytes are
  // the same.
  std::vector<std::uint8_t> buf(4096 + 8);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::uint8_t>(i * 131 + 7);
  for (std::uint32_t lo_off = 0; lo_off < 4; ++lo_off) {
    for (std::uint32_t hi_cut = 0; hi_cut < 4; ++hi_cut) {
      const std::uint8_t* lo = buf.data() + 4 + lo_off;
      const std::uint8_t* hi = buf.data() + buf.size() - hi_cut;
      const auto span = static_cast<std::uint32_t>(hi - lo);
      for (std::uint32_t dst_off = 0; dst_off < 4; ++dst_off) {
        check_copy(lo, span, lo, hi, dst_off, 32);               // the whole bounded range
        check_copy(lo + 1, span - 1, lo, hi, dst_off, 256);      // up to its end
        check_copy(lo, span - 5, lo, hi, dst_off, 32);           // from its start
        for (std::uint32_t len = 0; len < 70; ++len) check_copy(hi - len, len, lo, hi, dst_off, 32);
      }
    }
  }
}

}  // namespace
