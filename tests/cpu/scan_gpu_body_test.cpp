// The archive scanner's device bodies (gpu/scan_gpu_body.hpp) run on the
// host: the warp's CRC-32 of a piece against zlib's for every length class
// and alignment, its GF(2) helpers against zlib's crc32_combine, and the
// copy descriptor's worker shares at every relative alignment.
#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <cstdint>
#include <vector>

#include "gpu/scan_gpu_body.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

using gpu::ScanCopyItem;
using gpu::ScanCopyMode;

const std::array<std::uint32_t, 256>& crc_table() {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) t[i] = gpu::scan_crc32_table_entry(i);
    return t;
  }();
  return table;
}

std::uint32_t zlib_crc(const std::uint8_t* p, std::size_t n) {
  return static_cast<std::uint32_t>(crc32(0, p, static_cast<uInt>(n)));
}

TEST(ScanGpuBody, WarpCrcEqualsZlibForEveryLengthClassAndAlignment) {
  const test::Bytes data = test::random_bytes(gpu::kScanCrcPiece + 8, 11);
  std::vector<std::uint32_t> lengths;
  for (std::uint32_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (std::uint32_t n : {511u, 512u, 513u, 1000u, 4095u, 4096u, 4097u, 8191u, 12345u, 16383u, gpu::kScanCrcPiece}) {
    lengths.push_back(n);
  }
  for (std::uint32_t n : lengths) {
    for (std::uint32_t at = 0; at < 4; ++at) {
      const std::uint8_t* p = data.data() + at;
      ASSERT_EQ(gpu::scan_crc32_warp(gpu::simt::Warp{}, crc_table().data(), p, n), zlib_crc(p, n))
          << "length " << n << " offset " << at;
    }
  }
}

TEST(ScanGpuBody, WarpCrcOfConstantAndTextBytes) {
  for (const test::Bytes& b : {test::constant_bytes(gpu::kScanCrcPiece, 0), test::constant_bytes(9999, 0xFF),
                               test::text_like_bytes(gpu::kScanCrcPiece, 3)}) {
    ASSERT_EQ(gpu::scan_crc32_warp(gpu::simt::Warp{}, crc_table().data(), b.data(), static_cast<std::uint32_t>(b.size())),
              zlib_crc(b.data(), b.size()));
  }
}

TEST(ScanGpuBody, ShiftOperatorJoinsAsZlib) {
  const test::Bytes data = test::random_bytes(70000, 5);
  for (std::uint32_t split : {0u, 1u, 7u, 128u, 4096u, 33333u}) {
    for (std::uint32_t tail : {0u, 1u, 3u, 100u, 16384u, 36000u}) {
      const std::uint32_t a = zlib_crc(data.data(), split);
      const std::uint32_t b = zlib_crc(data.data() + split, tail);
      const std::uint32_t joined = gpu::crc32_multmodp(gpu::crc32_shift_op(tail), a) ^ b;
      ASSERT_EQ(joined, zlib_crc(data.data(), split + tail)) << split << " + " << tail;
      ASSERT_EQ(joined, static_cast<std::uint32_t>(crc32_combine(a, b, static_cast<z_off_t>(tail))));
    }
  }
}

// Copies with `workers` workers into a guarded buffer at dst_off; checks the
// bytes and the guards.
void check_copy(const test::Bytes& src, std::size_t src_off, std::size_t len, std::size_t dst_off, std::uint64_t workers) {
  constexpr std::uint8_t kGuard = 0x5A;
  std::vector<std::uint8_t> dst(dst_off + len + 32, kGuard);
  ScanCopyItem item;
  item.src = src.data() + src_off;
  item.dst = dst.data() + dst_off;
  item.size = len;
  item.mode = ScanCopyMode::copy;
  ASSERT_EQ(gpu::scan_copy_status(item), gpu::ScanCopyStatus::ok);
  for (std::uint64_t w = 0; w < workers; ++w) gpu::scan_copy_part(item, w, workers);
  for (std::size_t i = 0; i < len; ++i) ASSERT_EQ(dst[dst_off + i], src[src_off + i]) << "byte " << i;
  for (std::size_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], kGuard);
  for (std::size_t i = dst_off + len; i < dst.size(); ++i) ASSERT_EQ(dst[i], kGuard);
}

TEST(ScanGpuBody, CopySharesAtEveryRelativeAlignment) {
  const test::Bytes src = test::random_bytes(5000, 9);
  for (std::size_t src_off = 0; src_off < 16; src_off += 3) {
    for (std::size_t dst_off = 0; dst_off < 16; ++dst_off) {
      for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{5}, std::size_t{63},
                              std::size_t{64}, std::size_t{1000}, std::size_t{4097}}) {
        for (std::uint64_t workers : {1u, 7u, 256u}) {
          SCOPED_TRACE(::testing::Message() << "src+" << src_off << " dst+" << dst_off << " len " << len << " workers "
                                            << workers);
          check_copy(src, src_off, len, dst_off, workers);
        }
      }
    }
  }
}

TEST(ScanGpuBody, FillWritesTheValue) {
  const std::uint8_t v = 0x42;
  std::vector<std::uint8_t> dst(300, 0);
  ScanCopyItem item;
  item.src = &v;
  item.dst = dst.data() + 3;
  item.size = 290;
  item.mode = ScanCopyMode::fill;
  for (std::uint64_t w = 0; w < 5; ++w) gpu::scan_copy_part(item, w, 5);
  for (std::size_t i = 0; i < dst.size(); ++i) ASSERT_EQ(dst[i], i >= 3 && i < 293 ? v : 0) << i;
}

}  // namespace
}  // namespace tandem
