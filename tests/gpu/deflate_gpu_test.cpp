// GPU deflate compression (gpu/deflate_gpu.hpp) on a device, with the test's
// own device buffers and stream:
// - each chunk the GPU writes equals, byte for byte, the CPU emulation's
//   (deflate_compress_emulated), for random, constant, text-like, mixed and
//   record data, sizes from 0 to past several segments, and Silesia files in
//   64 KiB chunks; zlib inflates every chunk alone, and all of them joined
//   into one stream ended by 03 00, to the input;
// - a capacity one byte short gives output_overflow and size 0, null and
//   oversized items give invalid_item, and the others in the same batch are
//   unaffected; guard bytes after every output survive;
// - batches of small items (small hash tables), of one segment per item and
//   of many, and runs around the 258-byte match pieces equal the emulation;
// - bad arguments (temporary storage too small, max_item_size too large)
//   are refused before any launch.
//
// Skips without a CUDA device, and compiles to a skip in a build without CUDA.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu/deflate_gpu.hpp"
#include "support/gpu_support.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

using test::Bytes;

#if TANDEM_HAVE_CUDA

using test::have_gpu;
using test::DeviceBuffer;
using test::download;
using test::StreamHandle;
using test::upload;

constexpr std::size_t kGuard = 64;
constexpr std::uint8_t kGuardByte = 0xA5;
constexpr std::size_t kSkew = 3;  // items start 3 bytes past a 16-byte boundary

struct Item {
  Bytes data;
  bool null_input = false;        // the item's pointer is null
  std::ptrdiff_t capacity_delta = 0;  // capacity: the emulated size plus this (0: the bound)
};

struct Outcome {
  gpu::ItemStatus status;
  Bytes bytes;
  std::vector<std::uint32_t> starts;  // the item's segment starts
};

// Runs one batch on the device; max_item_size: the call's (0: the largest item).
std::vector<Outcome> run_batch(const std::vector<Item>& items, std::size_t max_item_size = 0) {
  const std::size_t n = items.size();
  if (max_item_size == 0)
    for (const Item& it : items) max_item_size = std::max(max_item_size, it.data.size());
  std::vector<std::size_t> in_at(n), out_at(n), sizes(n), caps(n);
  std::size_t in_total = 0, out_total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    in_at[i] = in_total + kSkew;
    in_total = (in_at[i] + items[i].data.size() + 15) / 16 * 16 + 16;
    sizes[i] = items[i].data.size();
    caps[i] = gpu::deflate_max_compressed_size(sizes[i]);
    if (items[i].capacity_delta != 0) {
      Bytes emu;
      EXPECT_TRUE(gpu::deflate_compress_emulated(items[i].data.data(), sizes[i], &emu).ok());
      caps[i] = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(emu.size()) + items[i].capacity_delta);
    }
    out_at[i] = out_total + kSkew;
    out_total = (out_at[i] + caps[i] + kGuard + 15) / 16 * 16;
  }
  StreamHandle stream;
  const cudaStream_t s = stream.get();
  DeviceBuffer d_in(in_total + 16), d_out(out_total + 16);
  Bytes h_in(in_total + 16, 0);
  for (std::size_t i = 0; i < n; ++i) std::copy(items[i].data.begin(), items[i].data.end(), h_in.begin() + in_at[i]);
  upload(d_in, h_in, s);
  CUDA_CHECK(cudaMemsetAsync(d_out.get(), kGuardByte, out_total + 16, s));
  std::vector<const void*> in_ptrs(n);
  std::vector<void*> out_ptrs(n);
  for (std::size_t i = 0; i < n; ++i) {
    in_ptrs[i] = items[i].null_input ? nullptr : d_in.get<std::uint8_t>() + in_at[i];
    out_ptrs[i] = d_out.get<std::uint8_t>() + out_at[i];
  }
  DeviceBuffer d_in_ptrs(n * sizeof(void*)), d_in_sizes(n * sizeof(std::size_t)), d_out_ptrs(n * sizeof(void*)),
      d_caps(n * sizeof(std::size_t)), d_out_sizes(n * sizeof(std::size_t)), d_statuses(n * sizeof(gpu::ItemStatus));
  upload(d_in_ptrs, in_ptrs, s);
  upload(d_in_sizes, sizes, s);
  upload(d_out_ptrs, out_ptrs, s);
  upload(d_caps, caps, s);
  std::size_t temp_bytes = 0;
  EXPECT_TRUE(gpu::deflate_compress_temp_size(n, max_item_size, &temp_bytes).ok());
  DeviceBuffer d_temp(temp_bytes);
  const std::size_t spi = gpu::deflate_segments_per_item(max_item_size);
  DeviceBuffer d_starts(std::max<std::size_t>(1, n * spi) * sizeof(std::uint32_t));
  const Status st = gpu::deflate_compress_async(d_in_ptrs.get<const void*>(), d_in_sizes.get<std::size_t>(),
                                                max_item_size, n, d_temp.get(), temp_bytes, d_out_ptrs.get<void*>(),
                                                d_caps.get<std::size_t>(), d_out_sizes.get<std::size_t>(),
                                                d_statuses.get<gpu::ItemStatus>(), s,
                                                d_starts.get<std::uint32_t>());
  EXPECT_TRUE(st.ok()) << st.to_string();
  const auto out_sizes = download<std::size_t>(d_out_sizes, n, s);
  const auto statuses = download<gpu::ItemStatus>(d_statuses, n, s);
  const Bytes h_out = download<std::uint8_t>(d_out, out_total + 16, s);
  const auto starts = download<std::uint32_t>(d_starts, n * spi, s);
  std::vector<Outcome> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    r[i].status = statuses[i];
    r[i].starts.assign(starts.begin() + static_cast<std::ptrdiff_t>(i * spi),
                       starts.begin() + static_cast<std::ptrdiff_t>(i * spi + gpu::deflate_segments_per_item(sizes[i])));
    r[i].bytes.assign(h_out.begin() + out_at[i], h_out.begin() + out_at[i] + out_sizes[i]);
    // A failed item writes nothing; a good one nothing past its capacity.
    for (std::size_t k = statuses[i] == gpu::ItemStatus::ok ? caps[i] : 0; k < caps[i] + kGuard; ++k)
      EXPECT_EQ(h_out[out_at[i] + k], kGuardByte) << "guard byte " << k << " of item " << i;
  }
  return r;
}

// zlib inflates raw deflate `c` (all of it) to `want`; `final`: a final block must end it.
void expect_inflates(const Bytes& c, const Bytes& want, bool final) {
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, -15), Z_OK);
  Bytes out(want.size() + 1);
  z.next_in = const_cast<Bytef*>(c.data());
  z.avail_in = static_cast<uInt>(c.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int r = inflate(&z, Z_SYNC_FLUSH);
  EXPECT_EQ(r, final ? Z_STREAM_END : Z_OK);
  EXPECT_EQ(z.avail_in, 0u);
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  EXPECT_TRUE(out == want);
}

void expect_matches_emulation(const std::vector<Item>& items, std::size_t max_item_size = 0) {
  const std::vector<Outcome> r = run_batch(items, max_item_size);
  Bytes stream, all;
  for (std::size_t i = 0; i < items.size(); ++i) {
    SCOPED_TRACE(i);
    Bytes emu;
    std::vector<std::uint32_t> emu_starts;
    ASSERT_TRUE(gpu::deflate_compress_emulated(items[i].data.data(), items[i].data.size(), &emu, &emu_starts).ok());
    EXPECT_EQ(r[i].status, gpu::ItemStatus::ok);
    EXPECT_TRUE(r[i].bytes == emu) << "GPU " << r[i].bytes.size() << " bytes, emulation " << emu.size();
    EXPECT_TRUE(r[i].starts == emu_starts) << "the segment starts differ from the emulation's";
    expect_inflates(r[i].bytes, items[i].data, false);
    stream.insert(stream.end(), r[i].bytes.begin(), r[i].bytes.end());
    all.insert(all.end(), items[i].data.begin(), items[i].data.end());
  }
  stream.push_back(0x03);
  stream.push_back(0x00);
  expect_inflates(stream, all, true);
}

TEST(DeflateGpu, MixedBatchEqualsEmulation) {
  SKIP_WITHOUT_GPU();
  std::vector<Item> items;
  std::uint64_t seed = 1;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{17}, std::size_t{1000},
                        std::size_t{8191}, std::size_t{8192}, std::size_t{8193}, std::size_t{40000}, std::size_t{65535},
                        std::size_t{65536}}) {
    items.push_back({test::random_bytes(n, seed++)});
    items.push_back({test::constant_bytes(n, 7)});
    items.push_back({test::text_like_bytes(n, seed++)});
    items.push_back({test::mixed_bytes(n, seed++)});
    items.push_back({test::record_bytes(n, seed++)});
  }
  expect_matches_emulation(items);
}

TEST(DeflateGpu, LargeItemsEqualEmulation) {
  SKIP_WITHOUT_GPU();
  expect_matches_emulation({{test::mixed_bytes(1 << 20, 3)}, {test::text_like_bytes(300000, 4)}, {Bytes{}}});
}

// The same items in batches of other largest sizes: small tables for items
// of at most 4 KiB, one segment per item, many segments per item; and runs
// around the 258-byte match pieces.
TEST(DeflateGpu, BatchShapesEqualEmulation) {
  SKIP_WITHOUT_GPU();
  std::vector<Item> small;
  for (std::size_t n : {std::size_t{0}, std::size_t{13}, std::size_t{100}, std::size_t{4095}, std::size_t{4096}})
    small.push_back({test::text_like_bytes(n, n + 1)});
  expect_matches_emulation(small);
  expect_matches_emulation(small, 8192);
  Bytes runs;
  for (std::uint32_t run : {258u, 259u, 260u, 517u, 8191u, 8193u, 30000u}) {
    const Bytes noise = test::random_bytes(41, run);
    runs.insert(runs.end(), noise.begin(), noise.end());
    runs.insert(runs.end(), run, static_cast<std::uint8_t>(run));
  }
  expect_matches_emulation({{runs}, {test::record_bytes(3 << 20, 5)}, {test::constant_bytes(70000, 9)}});
}

TEST(DeflateGpu, SilesiaIn64KiBChunksEqualsEmulation) {
  SKIP_WITHOUT_GPU();
  if (test::silesia_dir().empty()) GTEST_SKIP() << "Silesia corpus not available";
  for (const std::string& name : test::silesia_names()) {
    SCOPED_TRACE(name);
    const Bytes data = test::read_file(test::silesia_dir() / name);
    std::vector<Item> items;
    for (std::size_t at = 0; at < data.size() && at < (std::size_t{4} << 20); at += 65536)
      items.push_back({Bytes(data.begin() + at, data.begin() + std::min(data.size(), at + 65536))});
    expect_matches_emulation(items);
  }
}

TEST(DeflateGpu, ItemErrorsLeaveTheOthersAlone) {
  SKIP_WITHOUT_GPU();
  std::vector<Item> items = {{test::text_like_bytes(50000, 1)},
                             {test::text_like_bytes(50000, 2), false, -1},
                             {test::text_like_bytes(1000, 3), true},
                             {test::mixed_bytes(60000, 4)}};
  const std::vector<Outcome> r = run_batch(items);
  EXPECT_EQ(r[0].status, gpu::ItemStatus::ok);
  EXPECT_EQ(r[1].status, gpu::ItemStatus::output_overflow);
  EXPECT_TRUE(r[1].bytes.empty());
  EXPECT_EQ(r[2].status, gpu::ItemStatus::invalid_item);
  EXPECT_TRUE(r[2].bytes.empty());
  EXPECT_EQ(r[3].status, gpu::ItemStatus::ok);
  expect_inflates(r[0].bytes, items[0].data, false);
  expect_inflates(r[3].bytes, items[3].data, false);

  // An item over the call's max_item_size.
  const std::vector<Outcome> big = run_batch({{test::text_like_bytes(5000, 5)}, {test::text_like_bytes(9000, 6)}}, 8192);
  EXPECT_EQ(big[0].status, gpu::ItemStatus::ok);
  EXPECT_EQ(big[1].status, gpu::ItemStatus::invalid_item);
}

TEST(DeflateGpu, BadArgumentsAreRefused) {
  SKIP_WITHOUT_GPU();
  std::size_t temp = 0;
  EXPECT_PRED_FORMAT2(test::StatusIs, gpu::deflate_compress_temp_size(1, gpu::kMaxDeflateItem + 1, &temp),
                      StatusCode::invalid_argument);
  EXPECT_PRED_FORMAT2(test::StatusIs, gpu::deflate_compress_temp_size(1, 1000, nullptr), StatusCode::invalid_argument);
  ASSERT_TRUE(gpu::deflate_compress_temp_size(4, 65536, &temp).ok());
  DeviceBuffer d_arrays(4 * 64);
  const auto* ptrs = d_arrays.get<const void*>();
  auto* sizes = d_arrays.get<std::size_t>();
  EXPECT_PRED_FORMAT2(test::StatusIs,
                      gpu::deflate_compress_async(ptrs, sizes, 65536, 4, d_arrays.get(), temp - 1,
                                                  d_arrays.get<void*>(), nullptr, sizes, nullptr, nullptr),
                      StatusCode::invalid_argument);
  EXPECT_PRED_FORMAT2(test::StatusIs,
                      gpu::deflate_compress_async(nullptr, sizes, 65536, 4, d_arrays.get(), temp,
                                                  d_arrays.get<void*>(), nullptr, sizes, nullptr, nullptr),
                      StatusCode::invalid_argument);
}

#else

TEST(DeflateGpu, SkippedWithoutCuda) {
  Bytes out;
  std::size_t temp = 0;
  EXPECT_PRED_FORMAT2(test::StatusIs, gpu::deflate_compress_temp_size(1, 65536, &temp), StatusCode::no_device);
  GTEST_SKIP() << "this build has no CUDA: GPU deflate tests skipped";
}

#endif

}  // namespace
}  // namespace tandem
