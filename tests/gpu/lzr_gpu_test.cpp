// tandem lzr frames on a device (tandem/lzr.hpp's batched calls), with the
// test's own device buffers and stream:
// - the GPU encoder's frames equal the CPU encoder's byte for byte, for
//   random, constant, skewed, text-like, mixed and Silesia data, sizes from 0
//   to many blocks, every block size, items of different sizes in one batch;
// - the GPU decodes the CPU's frames to their data, and the CPU the GPU's;
// - malformed frames (random corruptions and cuts of valid ones, lying
//   headers) get, item by item, the CPU decoder's error, in batches mixed
//   with valid frames, which still decode;
// - outputs too small and null pointers get their errors;
// - items sit at every address modulo 4, and every output buffer is followed
//   by guard bytes that must survive.
//
// Skips without a CUDA device, and compiles to a skip in a build without CUDA.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/lzr_cpu.hpp"
#include "support/gpu_support.hpp"
#include "support/test_support.hpp"
#include "tandem/lzr.hpp"

namespace tandem {
namespace {

using lzr::Error;
using lzr::Params;
using test::Bytes;

#if TANDEM_HAVE_CUDA

using test::have_gpu;
using test::DeviceBuffer;
using test::download;
using test::StreamHandle;
using test::upload;

constexpr std::size_t kGuard = 64;
constexpr std::uint8_t kGuardByte = 0xA5;
constexpr std::size_t kSkew = 3;  // item i starts (kSkew + i) % 4 bytes past a 16-byte boundary

struct Result {
  Error error;
  Bytes bytes;
};

// Lays out items back to back in one device buffer, item i at 16k + (kSkew +
// i) % 4 and followed by guard bytes; returns the device pointers.
struct Packed {
  std::vector<std::size_t> at;
  Bytes host;
};
Packed pack(const std::vector<Bytes>& items, const std::vector<std::size_t>& room) {
  Packed p;
  std::size_t pos = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    pos = (pos + 15) / 16 * 16 + (kSkew + i) % 4;
    p.at.push_back(pos);
    pos += room[i] + kGuard;
  }
  p.host.assign(pos + 16, kGuardByte);
  for (std::size_t i = 0; i < items.size(); ++i) std::copy(items[i].begin(), items[i].end(), p.host.begin() + static_cast<std::ptrdiff_t>(p.at[i]));
  return p;
}

std::vector<const void*> pointers(const DeviceBuffer& d, const std::vector<std::size_t>& at) {
  std::vector<const void*> v;
  for (std::size_t a : at) v.push_back(d.get<std::uint8_t>() + a);
  return v;
}

// Compresses items on the device; caps: capacities (empty: null, the bound).
std::vector<Result> gpu_compress(const std::vector<Bytes>& items, const Params& p,
                                 const std::vector<std::size_t>& caps = {}, std::size_t null_item = SIZE_MAX) {
  StreamHandle stream;
  const std::size_t n = items.size();
  std::vector<std::size_t> sizes, room;
  std::size_t max_item = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sizes.push_back(items[i].size());
    max_item = std::max(max_item, items[i].size());
    room.push_back(caps.empty() ? lzr::max_encoded_size(items[i].size(), p) : caps[i]);
  }
  const Packed in = pack(items, sizes);
  const Packed out = pack(std::vector<Bytes>(n), room);
  DeviceBuffer d_in(in.host.size()), d_out(out.host.size());
  upload(d_in.get(), in.host.data(), in.host.size(), stream.get());
  upload(d_out.get(), out.host.data(), out.host.size(), stream.get());
  std::vector<const void*> in_ptrs = pointers(d_in, in.at);
  std::vector<const void*> out_ptrs = pointers(d_out, out.at);
  if (null_item < n) in_ptrs[null_item] = nullptr;
  DeviceBuffer d_in_ptrs(n * sizeof(void*)), d_in_sizes(n * sizeof(std::size_t)), d_out_ptrs(n * sizeof(void*)),
      d_caps(n * sizeof(std::size_t)), d_sizes(n * sizeof(std::size_t)), d_errors(n * sizeof(Error));
  upload(d_in_ptrs, in_ptrs, stream.get());
  upload(d_in_sizes, sizes, stream.get());
  upload(d_out_ptrs, out_ptrs, stream.get());
  if (!caps.empty()) upload(d_caps, caps, stream.get());
  std::size_t temp = 0;
  EXPECT_TRUE(gpu::lzr_compress_temp_size(n, max_item, p, &temp).ok());
  DeviceBuffer d_temp(temp);
  const Status s = gpu::lzr_compress_async(d_in_ptrs.get<const void* const>(), d_in_sizes.get<std::size_t>(), max_item,
                                            n, p, d_temp.get(), temp, d_out_ptrs.get<void* const>(),
                                            caps.empty() ? nullptr : d_caps.get<std::size_t>(),
                                            d_sizes.get<std::size_t>(), d_errors.get<Error>(), stream.get());
  EXPECT_TRUE(s.ok()) << s.to_string();
  const auto out_sizes = download<std::size_t>(d_sizes, n, stream.get());
  const auto errors = download<Error>(d_errors, n, stream.get());
  const Bytes host = download<std::uint8_t>(d_out, out.host.size(), stream.get());
  std::vector<Result> r;
  for (std::size_t i = 0; i < n; ++i) {
    const auto* b = host.data() + out.at[i];
    EXPECT_TRUE(std::all_of(b + room[i], b + room[i] + kGuard, [](std::uint8_t x) { return x == kGuardByte; }))
        << "item " << i << " wrote past its capacity";
    EXPECT_LE(out_sizes[i], room[i]);
    r.push_back({errors[i], Bytes(b, b + std::min(out_sizes[i], room[i]))});
  }
  return r;
}

// Decodes frames on the device into outputs of caps[i] bytes.
std::vector<Result> gpu_decompress(const std::vector<Bytes>& streams, const std::vector<std::size_t>& caps) {
  StreamHandle stream;
  const std::size_t n = streams.size();
  std::vector<std::size_t> sizes;
  for (const Bytes& s : streams) sizes.push_back(s.size());
  const std::size_t max_out = caps.empty() ? 0 : *std::max_element(caps.begin(), caps.end());
  const Packed in = pack(streams, sizes);
  const Packed out = pack(std::vector<Bytes>(n), caps);
  DeviceBuffer d_in(in.host.size()), d_out(out.host.size());
  upload(d_in.get(), in.host.data(), in.host.size(), stream.get());
  upload(d_out.get(), out.host.data(), out.host.size(), stream.get());
  DeviceBuffer d_in_ptrs(n * sizeof(void*)), d_in_sizes(n * sizeof(std::size_t)), d_out_ptrs(n * sizeof(void*)),
      d_caps(n * sizeof(std::size_t)), d_sizes(n * sizeof(std::size_t)), d_errors(n * sizeof(Error));
  upload(d_in_ptrs, pointers(d_in, in.at), stream.get());
  upload(d_in_sizes, sizes, stream.get());
  upload(d_out_ptrs, pointers(d_out, out.at), stream.get());
  upload(d_caps, caps, stream.get());
  std::size_t temp = 0;
  EXPECT_TRUE(gpu::lzr_decompress_temp_size(n, max_out, &temp).ok());
  DeviceBuffer d_temp(temp);
  const Status s = gpu::lzr_decompress_async(d_in_ptrs.get<const void* const>(), d_in_sizes.get<std::size_t>(),
                                              max_out, n, d_temp.get(), temp, d_out_ptrs.get<void* const>(),
                                              d_caps.get<std::size_t>(), d_sizes.get<std::size_t>(),
                                              d_errors.get<Error>(), stream.get());
  EXPECT_TRUE(s.ok()) << s.to_string();
  const auto out_sizes = download<std::size_t>(d_sizes, n, stream.get());
  const auto errors = download<Error>(d_errors, n, stream.get());
  const Bytes host = download<std::uint8_t>(d_out, out.host.size(), stream.get());
  std::vector<Result> r;
  for (std::size_t i = 0; i < n; ++i) {
    const auto* b = host.data() + out.at[i];
    EXPECT_TRUE(std::all_of(b + caps[i], b + caps[i] + kGuard, [](std::uint8_t x) { return x == kGuardByte; }))
        << "item " << i << " wrote past its capacity";
    r.push_back({errors[i], Bytes(b, b + std::min(out_sizes[i], caps[i]))});
  }
  return r;
}

Bytes skewed_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (auto& x : b) {
    const std::uint64_t r = rng();
    x = r % 1000 == 0 ? static_cast<std::uint8_t>(r >> 20) : static_cast<std::uint8_t>(std::countr_one(r) % 20);
  }
  return b;
}

std::vector<Bytes> sample_items(std::size_t silesia_prefix) {
  std::vector<Bytes> items;
  std::uint64_t seed = 1;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{13}, std::size_t{100},
                        std::size_t{8191}, std::size_t{8193}, std::size_t{65535}, std::size_t{65536},
                        std::size_t{65537}, std::size_t{131073}, std::size_t{600000}}) {
    items.push_back(test::random_bytes(n, ++seed));
    items.push_back(test::constant_bytes(n, static_cast<std::uint8_t>(seed)));
    items.push_back(skewed_bytes(n, ++seed));
    items.push_back(test::text_like_bytes(n, ++seed));
    items.push_back(test::mixed_bytes(n, ++seed));
  }
  if (silesia_prefix && !test::silesia_dir().empty()) {
    for (const std::string& name : test::silesia_names()) {
      Bytes file = test::read_file(test::silesia_dir() / name);
      file.resize(std::min(file.size(), silesia_prefix));
      items.push_back(std::move(file));
    }
  }
  return items;
}

Bytes cpu_encode(const Bytes& in, const Params& p) {
  Bytes out;
  EXPECT_TRUE(lzr::encode(in, p, &out).ok());
  return out;
}

Error cpu_error(const Bytes& frame, std::size_t cap, Bytes* out) {
  out->assign(cap, 0);
  std::size_t size = 0;
  Error e = Error::invalid_item;
  (void)lzr::decode(frame, *out, &size, &e);
  out->resize(size);
  return e;
}

TEST(LzrGpu, EncoderWritesTheCpuBytes) {
  SKIP_WITHOUT_GPU();
  for (std::uint32_t log = lzr::kMinBlockLog; log <= lzr::kMaxBlockLog; ++log) {
    SCOPED_TRACE(::testing::Message() << "block_log " << log);
    const Params p{log};
    const std::vector<Bytes> items = sample_items(log == lzr::kDefaultBlockLog ? (std::size_t{6} << 20) : 0);
    const std::vector<Result> r = gpu_compress(items, p);
    ASSERT_EQ(r.size(), items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "item " << i << " of " << items[i].size() << " bytes");
      ASSERT_EQ(r[i].error, Error::ok);
      const Bytes want = cpu_encode(items[i], p);
      ASSERT_EQ(r[i].bytes.size(), want.size());
      ASSERT_TRUE(r[i].bytes == want);
      Bytes back;
      ASSERT_TRUE(lzr::decode(r[i].bytes, &back).ok());
      ASSERT_TRUE(back == items[i]);
    }
  }
}

TEST(LzrGpu, DecoderReadsTheCpuFrames) {
  SKIP_WITHOUT_GPU();
  for (std::uint32_t log = lzr::kMinBlockLog; log <= lzr::kMaxBlockLog; ++log) {
    SCOPED_TRACE(::testing::Message() << "block_log " << log);
    const std::vector<Bytes> items = sample_items(log == lzr::kDefaultBlockLog ? (std::size_t{6} << 20) : 0);
    std::vector<Bytes> frames;
    std::vector<std::size_t> caps;
    for (const Bytes& in : items) {
      frames.push_back(cpu_encode(in, Params{log}));
      caps.push_back(in.size());
    }
    const std::vector<Result> r = gpu_decompress(frames, caps);
    for (std::size_t i = 0; i < items.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "item " << i << " of " << items[i].size() << " bytes");
      ASSERT_EQ(r[i].error, Error::ok);
      ASSERT_TRUE(r[i].bytes == items[i]);
    }
  }
}

TEST(LzrGpu, MalformedFramesGetTheCpuErrors) {
  SKIP_WITHOUT_GPU();
  std::vector<Bytes> frames;
  std::vector<std::size_t> caps;
  std::mt19937_64 rng(17);
  for (int t = 0; t < 400; ++t) {
    const std::size_t n = 1 + rng() % 300000;
    const Bytes in = t % 3 == 0 ? test::text_like_bytes(n, rng()) : test::mixed_bytes(n, rng());
    Bytes f = cpu_encode(in, Params{lzr::kMinBlockLog + static_cast<std::uint32_t>(rng() % 3)});
    const int kind = t % 5;
    if (kind == 1) {
      for (int e = 0; e < 1 + static_cast<int>(rng() % 4); ++e) f[rng() % f.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    } else if (kind == 2) {
      f.resize(rng() % f.size());
    } else if (kind == 3 && f.size() > 60) {
      // A byte of a block header or a directory entry.
      f[20 + rng() % 40] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    } else if (kind == 4) {
      f[8 + rng() % 12] ^= static_cast<std::uint8_t>(1u << (rng() % 8));  // the length or the block count
    }
    frames.push_back(std::move(f));
    caps.push_back(t % 7 == 0 ? n - 1 : n);
  }
  const std::vector<Result> r = gpu_decompress(frames, caps);
  int failed = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "item " << i);
    Bytes want;
    const Error e = cpu_error(frames[i], caps[i], &want);
    EXPECT_EQ(r[i].error, e) << lzr::error_name(r[i].error) << " against " << lzr::error_name(e);
    if (e == Error::ok) EXPECT_TRUE(r[i].bytes == want);
    failed += e != Error::ok;
  }
  EXPECT_GT(failed, 100);
}

TEST(LzrGpu, EncoderErrors) {
  SKIP_WITHOUT_GPU();
  const Params p{};
  const std::vector<Bytes> items = {test::text_like_bytes(200000, 1), test::text_like_bytes(200000, 2),
                                    test::random_bytes(1000, 3), Bytes{}, test::mixed_bytes(5000, 4)};
  const Bytes second = cpu_encode(items[1], p);
  std::vector<std::size_t> caps = {100, second.size(), 1019, 19, 100000};
  const std::vector<Result> r = gpu_compress(items, p, caps, /*null_item=*/4);
  EXPECT_EQ(r[0].error, Error::output_too_small);
  EXPECT_TRUE(r[0].bytes.empty());
  EXPECT_EQ(r[1].error, Error::ok);
  EXPECT_TRUE(r[1].bytes == second);
  EXPECT_EQ(r[2].error, Error::output_too_small);
  EXPECT_EQ(r[3].error, Error::output_too_small);
  EXPECT_EQ(r[4].error, Error::invalid_item);
}

#else

TEST(LzrGpu, SkipsWithoutCuda) { GTEST_SKIP() << "this build has no CUDA backend: GPU tests skipped"; }

#endif

}  // namespace
}  // namespace tandem
