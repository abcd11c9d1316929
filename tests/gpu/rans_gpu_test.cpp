// tandem rANS streams on a device (gpu/rans_gpu.hpp), with the test's own
// device buffers and stream:
// - the GPU encoder's streams equal the CPU reference's byte for byte, for
//   random, constant, skewed, text-like and Silesia data, sizes from 0 to
//   several chunks, and several parameter sets; the CPU decodes them; so
//   do batches of one-chunk items alone and mixed with longer ones (the
//   histogram's warp and tile paths); the temporary storage arrives dirty;
// - the GPU decodes the CPU's streams to their data;
// - malformed streams (each kind of lie the CPU tests build, then random
//   corruptions) get, item by item, the CPU decoder's error, and a batch
//   that mixes them with valid streams decodes the valid ones;
// - outputs too small, null pointers and oversized items get their errors;
// - items sit at every address modulo 4 (the kernels stage their input
//   through aligned loads), and every output buffer is followed by guard
//   bytes that must survive.
//
// Skips without a CUDA device, and compiles to a skip in a build without CUDA.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/rans_cpu.hpp"
#include "gpu/rans_body.hpp"
#include "gpu/rans_gpu.hpp"
#include "support/gpu_support.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

using rans::Error;
using rans::Params;
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
    room.push_back(caps.empty() ? rans::max_encoded_size(items[i].size(), p) : caps[i]);
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
  EXPECT_TRUE(gpu::rans_compress_temp_size(n, max_item, p, &temp).ok());
  DeviceBuffer d_temp(temp);
  // The temporary storage arrives dirty: nothing may depend on it being
  // zero (the histogram's warp path stores its counts, the tiles add to
  // counters the call clears).
  CUDA_CHECK(cudaMemsetAsync(d_temp.get(), 0xA5, temp, stream.get()));
  const Status s = gpu::rans_compress_async(d_in_ptrs.get<const void* const>(), d_in_sizes.get<std::size_t>(), max_item,
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

// Decodes streams on the device into outputs of caps[i] bytes.
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
  EXPECT_TRUE(gpu::rans_decompress_temp_size(n, max_out, &temp).ok());
  DeviceBuffer d_temp(temp);
  const Status s = gpu::rans_decompress_async(d_in_ptrs.get<const void* const>(), d_in_sizes.get<std::size_t>(),
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

std::vector<Bytes> sample_items() {
  std::vector<Bytes> items;
  std::uint64_t seed = 1;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{63},
                        std::size_t{64}, std::size_t{65}, std::size_t{1023}, std::size_t{1024}, std::size_t{1025},
                        std::size_t{16383}, std::size_t{16384}, std::size_t{16385}, std::size_t{65536},
                        std::size_t{100001}, std::size_t{300000}}) {
    items.push_back(test::random_bytes(n, ++seed));
    items.push_back(test::constant_bytes(n, static_cast<std::uint8_t>(seed)));
    items.push_back(skewed_bytes(n, ++seed));
    items.push_back(test::text_like_bytes(n, ++seed));
    items.push_back(test::mixed_bytes(n, ++seed));
  }
  if (!test::silesia_dir().empty()) {
    for (const std::string& name : test::silesia_names()) {
      const Bytes file = test::read_file(test::silesia_dir() / name);
      for (std::size_t at = 0; at + 65536 <= file.size() && at < (std::size_t{4} << 20); at += 65536) {
        items.emplace_back(file.begin() + static_cast<std::ptrdiff_t>(at),
                           file.begin() + static_cast<std::ptrdiff_t>(at + 65536));
      }
    }
  }
  return items;
}

const Params kParamSets[] = {Params{}, Params{1, 8, 32}, Params{4, 12, 7}, Params{64, 10, 1}, Params{8, 11, 32}};

Error cpu_error(const Bytes& stream, std::size_t cap, Bytes* out) {
  out->assign(cap, 0);
  std::size_t size = 0;
  Error e = Error::ok;
  (void)rans::decode(stream, *out, &size, &e);
  out->resize(e == Error::ok ? size : 0);
  return e;
}

TEST(RansGpu, EncoderWritesTheCpuBytes) {
  SKIP_WITHOUT_GPU();
  const std::vector<Bytes> items = sample_items();
  for (const Params& p : kParamSets) {
    SCOPED_TRACE(::testing::Message() << "chunk " << p.chunk_kib << " KiB, scale " << p.scale_bits << ", lanes "
                                      << p.lanes);
    const std::vector<Result> gpu = gpu_compress(items, p);
    for (std::size_t i = 0; i < items.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "item " << i << " of " << items[i].size() << " bytes");
      ASSERT_EQ(gpu[i].error, Error::ok) << rans::error_name(gpu[i].error);
      Bytes cpu;
      ASSERT_TRUE(rans::encode(items[i], p, &cpu).ok());
      ASSERT_EQ(gpu[i].bytes, cpu);
      Bytes back;
      ASSERT_TRUE(rans::decode(gpu[i].bytes, &back).ok());
      ASSERT_EQ(back, items[i]);
    }
  }
}

// A batch whose items are all of one chunk (the histogram's warp path for
// every item, and no clearing of the counters) and a batch that mixes them
// with longer items (tiles and warps in one histogram kernel): the CPU's
// bytes.
TEST(RansGpu, SmallItemBatchesEncodeAsTheCpuDoes) {
  SKIP_WITHOUT_GPU();
  std::vector<Bytes> small, mixed;
  for (const Bytes& item : sample_items()) {
    if (item.size() <= 16384) small.push_back(item);
    mixed.push_back(item);
  }
  for (std::uint32_t n = 0; n < 600; ++n) {  // many short items, a unit of the histogram not full
    const std::size_t size = (n * 7919u) % 4000u;
    small.push_back(n % 3 == 0 ? test::constant_bytes(size, static_cast<std::uint8_t>(n)) : skewed_bytes(size, n));
    if (n % 5 == 0) mixed.push_back(small.back());
  }
  for (const Params& p : {Params{}, Params{16, 12, 32}, Params{8, 9, 5}}) {
    for (const std::vector<Bytes>* items : {&small, &mixed}) {
      SCOPED_TRACE(::testing::Message() << "chunk " << p.chunk_kib << " KiB, scale " << p.scale_bits << ", "
                                        << (items == &small ? "small" : "mixed") << " batch");
      const std::vector<Result> gpu = gpu_compress(*items, p);
      for (std::size_t i = 0; i < items->size(); ++i) {
        ASSERT_EQ(gpu[i].error, Error::ok) << "item " << i << ": " << rans::error_name(gpu[i].error);
        Bytes cpu;
        ASSERT_TRUE(rans::encode((*items)[i], p, &cpu).ok());
        ASSERT_EQ(gpu[i].bytes, cpu) << "item " << i << " of " << (*items)[i].size() << " bytes";
      }
    }
  }
}

// Batches with items of 4 MiB and more (64 histogram tiles and more, each
// tile's counts added up by the table kernel) beside small and empty items:
// the CPU's bytes.
TEST(RansGpu, LargeItemBatchesEncodeAsTheCpuDoes) {
  SKIP_WITHOUT_GPU();
  const std::size_t kLimit = std::size_t{64} * 65536;
  for (const std::size_t large : {kLimit, kLimit + 1, kLimit + 300001}) {
    std::vector<Bytes> items;
    items.push_back(test::text_like_bytes(large, 11));
    items.push_back(test::mixed_bytes(large - 4097, 12));
    items.push_back(test::text_like_bytes(70000, 13));
    items.push_back(skewed_bytes(5000, 14));
    items.push_back(Bytes{});
    for (const Params& p : {Params{}, Params{64, 10, 1}}) {
      SCOPED_TRACE(::testing::Message() << "largest item " << large << " bytes, chunk " << p.chunk_kib << " KiB");
      const std::vector<Result> gpu = gpu_compress(items, p);
      for (std::size_t i = 0; i < items.size(); ++i) {
        ASSERT_EQ(gpu[i].error, Error::ok) << "item " << i << ": " << rans::error_name(gpu[i].error);
        Bytes cpu;
        ASSERT_TRUE(rans::encode(items[i], p, &cpu).ok());
        ASSERT_EQ(gpu[i].bytes, cpu) << "item " << i << " of " << items[i].size() << " bytes";
      }
    }
  }
}

// The CPU encoder's streams of items (with parameters p) decoded in one
// batch on the device, into outputs of each item's size plus i % (room + 1)
// bytes: every item back.
void expect_device_decodes(const std::vector<Bytes>& items, const Params& p, std::size_t room) {
  SCOPED_TRACE(::testing::Message() << "chunk " << p.chunk_kib << " KiB, scale " << p.scale_bits);
  std::vector<Bytes> streams;
  std::vector<std::size_t> caps;
  for (const Bytes& item : items) {
    Bytes s;
    ASSERT_TRUE(rans::encode(item, p, &s).ok());
    streams.push_back(std::move(s));
    caps.push_back(item.size() + caps.size() % (room + 1));
  }
  const std::vector<Result> gpu = gpu_decompress(streams, caps);
  for (std::size_t i = 0; i < items.size(); ++i) {
    ASSERT_EQ(gpu[i].error, Error::ok) << "item " << i << ": " << rans::error_name(gpu[i].error);
    ASSERT_EQ(gpu[i].bytes, items[i]) << "item " << i;
  }
}

TEST(RansGpu, DecoderReadsTheCpuStreams) {
  SKIP_WITHOUT_GPU();
  const std::vector<Bytes> items = sample_items();
  for (const Params& p : kParamSets) expect_device_decodes(items, p, 2);  // exact, or a little room
}

// `rounds` random corruptions of the stream good (bit flips, or a cut).
void add_corruptions(const Bytes& good, int rounds, std::uint64_t seed, std::vector<Bytes>* v) {
  std::mt19937_64 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    Bytes s = good;
    for (int e = 1 + static_cast<int>(rng() % 3); e > 0; --e) {
      const std::size_t at = rng() % s.size();
      if (round % 3 == 2) {
        s.resize(at + 1);
      } else {
        s[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      }
    }
    v->push_back(std::move(s));
  }
}

// Streams with each kind of lie, and random corruptions of valid ones.
std::vector<Bytes> malformed_streams() {
  namespace body = gpu::ransk;
  std::vector<Bytes> v;
  const Bytes data = test::text_like_bytes(40000, 17);
  Bytes good;
  EXPECT_TRUE(rans::encode(data, Params{16, 11, 32}, &good).ok());
  body::Header h;
  EXPECT_EQ(body::parse_header(good.data(), good.size(), &h), Error::ok);
  const std::size_t dir = body::directory_at(h);
  const auto edit = [&](auto f) {
    Bytes s = good;
    f(s);
    v.push_back(std::move(s));
  };
  v.push_back(good);
  for (std::size_t n : {0, 2, 17, 18, 40, 60, 200, 5000}) v.emplace_back(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
  edit([](Bytes& s) { s[0] = 'X'; });
  edit([](Bytes& s) { s[4] = 2; });
  edit([](Bytes& s) { s[5] = 13; });
  edit([](Bytes& s) { s[6] = 0; });
  edit([](Bytes& s) { s[7] = 33; });
  edit([&](Bytes& s) { body::store_u32le(s.data() + 12, h.chunk_count + 1); });
  edit([&](Bytes& s) { body::store_u32le(s.data() + 8, h.length + 1); });
  edit([](Bytes& s) { body::store_u16le(s.data() + 16, 10); });
  edit([](Bytes& s) { s[18] = 13; });
  edit([](Bytes& s) { s[19] ^= 0x10; });
  edit([&](Bytes& s) { s[dir] = 0; });
  edit([&](Bytes& s) { s[dir + 4] = 33; });
  edit([&](Bytes& s) { body::store_u16le(s.data() + dir + 2, 16385); });
  edit([&](Bytes& s) { s[dir + 1] = 3; });
  edit([&](Bytes& s) { s[body::payloads_at(h)] ^= 8; });
  edit([&](Bytes& s) { body::store_u16le(s.data() + dir + 2, body::load_u16le(&s[dir + 2]) - 1); });
  edit([&](Bytes& s) {  // the last chunk one word short
    const std::size_t e = dir + 4 * (h.chunk_count - 1);
    body::store_u16le(s.data() + e + 2, body::load_u16le(&s[e + 2]) - 1);
    s.resize(s.size() - 2);
  });
  edit([&](Bytes& s) {  // the last chunk one word long
    const std::size_t e = dir + 4 * (h.chunk_count - 1);
    body::store_u16le(s.data() + e + 2, body::load_u16le(&s[e + 2]) + 1);
    s.push_back(0);
    s.push_back(0);
  });
  edit([&](Bytes& s) { body::store_u32le(s.data() + body::payloads_at(h), 0xFFFF); });
  edit([](Bytes& s) { s.push_back(0); });
  add_corruptions(good, 400, 5, &v);
  return v;
}

// Decodes streams into outputs of caps[i] bytes on the device and on the
// CPU: the same error for each, the same bytes where it is ok. Returns how
// many failed.
int expect_cpu_errors(const std::vector<Bytes>& streams, const std::vector<std::size_t>& caps) {
  const std::vector<Result> gpu = gpu_decompress(streams, caps);
  int failed = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    Bytes cpu_out;
    const Error cpu = cpu_error(streams[i], caps[i], &cpu_out);
    EXPECT_EQ(rans::error_name(gpu[i].error), rans::error_name(cpu)) << "stream " << i;
    if (cpu == Error::ok) EXPECT_EQ(gpu[i].bytes, cpu_out) << "stream " << i;
    failed += cpu != Error::ok;
  }
  return failed;
}

TEST(RansGpu, MalformedStreamsGetTheCpuErrors) {
  SKIP_WITHOUT_GPU();
  std::vector<Bytes> streams = malformed_streams();
  streams.push_back(streams[0]);
  std::vector<std::size_t> caps(streams.size(), 40000);
  caps.back() = 39999;  // the valid stream, into one byte too few
  Bytes cpu_out;
  EXPECT_EQ(cpu_error(streams[0], caps[0], &cpu_out), Error::ok);
  EXPECT_GT(expect_cpu_errors(streams, caps), 300);
}

// Batches of items of at most 32 KiB take the decoder that pairs the items
// of one chunk (two to a thread block, each with its slots in half the
// block's memory); the others in such a batch (several chunks, or a scale
// of 12 bits, whose slots need all of it) take the usual units. The same
// bytes and errors as the CPU's.
TEST(RansGpu, SmallItemBatchesDecodeAsTheCpuDoes) {
  SKIP_WITHOUT_GPU();
  std::vector<Bytes> items;
  for (const Bytes& item : sample_items()) {
    if (item.size() <= 16385) items.push_back(item);
  }
  items.push_back(test::text_like_bytes(32768, 3));
  items.push_back(test::mixed_bytes(20000, 4));
  for (const Params& p : kParamSets) expect_device_decodes(items, p, 0);
  // Corruptions of one-chunk streams, in such a batch.
  std::vector<Bytes> streams;
  for (const Params& p : {Params{16, 11, 32}, Params{16, 9, 5}, Params{16, 12, 32}}) {
    Bytes good;
    ASSERT_TRUE(rans::encode(test::text_like_bytes(15000, 8), p, &good).ok());
    streams.push_back(good);
    add_corruptions(good, 200, p.scale_bits, &streams);
  }
  EXPECT_GT(expect_cpu_errors(streams, std::vector<std::size_t>(streams.size(), 15000)), 300);
}

TEST(RansGpu, EncoderErrors) {
  SKIP_WITHOUT_GPU();
  const std::vector<Bytes> items = {test::text_like_bytes(50000, 1), test::text_like_bytes(50000, 2), Bytes{},
                                    test::random_bytes(3000, 3), test::text_like_bytes(1000, 4)};
  const Params p;
  std::vector<std::size_t> caps;
  for (const Bytes& item : items) caps.push_back(rans::max_encoded_size(item.size(), p));
  Bytes first;
  ASSERT_TRUE(rans::encode(items[0], p, &first).ok());
  caps[0] = first.size() - 1;  // the stream one byte over
  caps[2] = 17;                // an empty stream's header does not fit
  caps[3] = 40;                // not even the table fits
  const std::vector<Result> r = gpu_compress(items, p, caps, /*null_item=*/4);
  EXPECT_EQ(r[0].error, Error::output_too_small);
  EXPECT_TRUE(r[0].bytes.empty());
  EXPECT_EQ(r[1].error, Error::ok);
  EXPECT_EQ(r[2].error, Error::output_too_small);
  EXPECT_EQ(r[3].error, Error::output_too_small);
  EXPECT_EQ(r[4].error, Error::invalid_item);
  Bytes second;
  ASSERT_TRUE(rans::encode(items[1], p, &second).ok());
  EXPECT_EQ(r[1].bytes, second);
}

#else

TEST(RansGpu, SkipsWithoutCuda) { GTEST_SKIP() << "this build has no CUDA backend: GPU tests skipped"; }

#endif

}  // namespace
}  // namespace tandem
