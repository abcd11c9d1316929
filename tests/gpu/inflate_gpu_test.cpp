// Batched inflate on a device (gpu/inflate_gpu.hpp), with the test's own
// device buffers and stream:
// - the chunks of tandem's indexed streams (zlib, a full flush per chunk) of
//   text-like, mixed, random and Silesia data at 16, 64 and 128 KiB, and
//   whole raw deflate streams from zlib and libdeflate, inflate on the GPU to
//   the bytes, sizes, ends and input counts the CPU body gives;
// - malformed items (each error class, then random corruptions) get the CPU
//   body's status item by item in a batch that mixes them with valid items;
// - items sit at odd addresses and every output is followed by guard bytes
//   that must survive; null pointers and oversized items get invalid_item.
//
// Skips without a CUDA device, and compiles to a skip in a build without CUDA.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "cpu/inflate_test_streams.hpp"
#include "gpu/deflate_gpu.hpp"
#include "gpu/inflate_body.hpp"
#include "gpu/inflate_gpu.hpp"
#include "support/gpu_support.hpp"
#include "support/test_support.hpp"

namespace tandem {
namespace {

using gpu::InflateEnd;
using gpu::InflateStatus;
using test::Bytes;
namespace is = test::inflate_streams;

#if TANDEM_HAVE_CUDA

using test::have_gpu;
using test::DeviceBuffer;
using test::download;
using test::StreamHandle;
using test::upload;

constexpr std::size_t kGuard = 64;
constexpr std::uint8_t kGuardByte = 0xA5;
constexpr std::size_t kSkew = 3;

struct Item {
  Bytes in;
  std::size_t capacity;
  std::vector<std::uint32_t> starts = {};  // segment starts (none: empty)
};

// Segments of the starts given to the device (run_gpu) and the emulation.
constexpr std::uint32_t kSeg = gpu::kDeflateSegmentBytes;

struct Outcome {
  InflateStatus status;
  InflateEnd end;
  std::size_t size;
  std::size_t used;
  Bytes out;
};

std::size_t place(std::size_t n) { return (n + kGuard + 15) / 16 * 16 + 16; }

// Runs the batch on the device; checks the guards.
std::vector<Outcome> run_gpu(const std::vector<Item>& items) {
  const std::size_t n = items.size();
  std::vector<std::size_t> in_off(n), out_off(n);
  std::size_t in_total = 0, out_total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    in_off[i] = in_total + kSkew;
    in_total += place(items[i].in.size() + kSkew);
    out_off[i] = out_total + kSkew;
    out_total += place(items[i].capacity + kSkew);
  }
  StreamHandle s;
  DeviceBuffer d_in(in_total), d_out(out_total);
  Bytes h_in(in_total, 0), h_out(out_total, kGuardByte);
  for (std::size_t i = 0; i < n; ++i) std::copy(items[i].in.begin(), items[i].in.end(), h_in.begin() + in_off[i]);
  upload(d_in.get(), h_in.data(), in_total, s.get());
  upload(d_out.get(), h_out.data(), out_total, s.get());
  std::vector<const void*> in_ptrs(n);
  std::vector<void*> out_ptrs(n);
  std::vector<std::size_t> in_sizes(n), caps(n);
  for (std::size_t i = 0; i < n; ++i) {
    in_ptrs[i] = d_in.get<std::uint8_t>() + in_off[i];
    out_ptrs[i] = d_out.get<std::uint8_t>() + out_off[i];
    in_sizes[i] = items[i].in.size();
    caps[i] = items[i].capacity;
  }
  DeviceBuffer d_in_ptrs(n * sizeof(void*)), d_out_ptrs(n * sizeof(void*)), d_in_sizes(n * sizeof(std::size_t)),
      d_caps(n * sizeof(std::size_t)), d_sizes(n * sizeof(std::size_t)), d_used(n * sizeof(std::size_t)),
      d_status(n * sizeof(InflateStatus)), d_ends(n * sizeof(InflateEnd));
  upload(d_in_ptrs, in_ptrs, s.get());
  upload(d_out_ptrs, out_ptrs, s.get());
  upload(d_in_sizes, in_sizes, s.get());
  upload(d_caps, caps, s.get());
  // Segment starts, when any item has them: per_item entries an item, the
  // items without them all zeros.
  std::size_t per_item = 0, max_cap = 0;
  for (const Item& it : items) {
    per_item = std::max(per_item, it.starts.size());
    max_cap = std::max(max_cap, it.capacity);
  }
  std::vector<std::uint32_t> flat(std::max<std::size_t>(1, n * per_item), 0);
  for (std::size_t i = 0; i < n; ++i) std::copy(items[i].starts.begin(), items[i].starts.end(), flat.begin() + i * per_item);
  DeviceBuffer d_starts(flat.size() * sizeof(std::uint32_t));
  upload(d_starts, flat, s.get());
  gpu::InflateSegments seg;
  std::size_t temp = 0;
  if (per_item > 0) {
    seg = {d_starts.get<const std::uint32_t>(), per_item, kSeg, max_cap};
    EXPECT_TRUE(gpu::inflate_temp_size(n, max_cap, &temp).ok());
  }
  DeviceBuffer d_temp(std::max<std::size_t>(1, temp));
  const Status st = gpu::inflate_async(d_in_ptrs.get<const void* const>(), d_in_sizes.get<std::size_t>(), n,
                                       d_temp.get(), temp, d_out_ptrs.get<void* const>(), d_caps.get<std::size_t>(),
                                       d_sizes.get<std::size_t>(), d_status.get<InflateStatus>(),
                                       d_ends.get<InflateEnd>(), d_used.get<std::size_t>(), s.get(), seg);
  EXPECT_TRUE(st.ok()) << st.to_string();
  const auto sizes = download<std::size_t>(d_sizes, n, s.get());
  const auto used = download<std::size_t>(d_used, n, s.get());
  const auto statuses = download<InflateStatus>(d_status, n, s.get());
  const auto ends = download<InflateEnd>(d_ends, n, s.get());
  const auto out = download<std::uint8_t>(d_out, out_total, s.get());
  std::vector<Outcome> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* o = out.data() + out_off[i];
    EXPECT_TRUE(std::all_of(o + caps[i], o + caps[i] + kGuard, [](std::uint8_t b) { return b == kGuardByte; }))
        << "item " << i << " wrote past its capacity";
    EXPECT_TRUE(std::all_of(o - kSkew, o, [](std::uint8_t b) { return b == kGuardByte; }))
        << "item " << i << " wrote before its output";
    r[i] = {statuses[i], ends[i], sizes[i], used[i], Bytes(o, o + std::min(sizes[i], caps[i]))};
  }
  return r;
}

// Each item against the one-thread CPU body.
void expect_like_cpu(const std::vector<Item>& items) {
  const std::vector<Outcome> g = run_gpu(items);
  auto tables = std::make_unique<gpu::inflate::InflateTables>();
  for (std::size_t i = 0; i < items.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "item " << i);
    Bytes out(items[i].capacity);
    const auto r = gpu::inflate::inflate_stream(items[i].in.data(), items[i].in.size(), out.data(), out.size(),
                                                *tables);
    ASSERT_EQ(g[i].status, r.status) << gpu::inflate::inflate_status_name(g[i].status) << " vs "
                                     << gpu::inflate::inflate_status_name(r.status);
    ASSERT_EQ(g[i].size, r.out_size);
    EXPECT_EQ(g[i].used, r.in_used);
    if (r.status == InflateStatus::ok) EXPECT_EQ(g[i].end, r.end);
    ASSERT_TRUE(std::equal(g[i].out.begin(), g[i].out.end(), out.begin()));
  }
}

void add_chunks(std::vector<Item>& items, const Bytes& d, std::size_t chunk, int level) {
  const is::Chunked c = is::zlib_chunked(d, chunk, level);
  for (std::size_t i = 0; i < c.offsets.size(); ++i)
    items.push_back({Bytes(c.stream.begin() + static_cast<std::ptrdiff_t>(c.offsets[i]),
                           c.stream.begin() + static_cast<std::ptrdiff_t>(c.offsets[i] + c.compressed_sizes[i])),
                     chunk});
  items.push_back({Bytes{0x03, 0x00}, 0});
}

TEST(InflateGpu, ChunksOfIndexedStreams) {
  SKIP_WITHOUT_GPU();
  for (std::size_t chunk : {std::size_t{16384}, std::size_t{65536}, std::size_t{131072}}) {
    SCOPED_TRACE(chunk);
    std::vector<Item> items;
    add_chunks(items, test::text_like_bytes(1 << 20, 1), chunk, 6);
    add_chunks(items, test::mixed_bytes(700001, 2), chunk, 1);
    add_chunks(items, test::random_bytes(300000, 3), chunk, 9);
    add_chunks(items, test::constant_bytes(500000, 7), chunk, 9);
    expect_like_cpu(items);
    // and the chunks' outputs are the data
    const Bytes d = test::text_like_bytes(1 << 20, 1);
    std::vector<Item> only;
    add_chunks(only, d, chunk, 6);
    const std::vector<Outcome> g = run_gpu(only);
    Bytes joined;
    for (const Outcome& o : g) {
      EXPECT_EQ(o.status, InflateStatus::ok);
      joined.insert(joined.end(), o.out.begin(), o.out.end());
    }
    EXPECT_TRUE(joined == d);
    EXPECT_EQ(g.back().end, InflateEnd::final_block);
    EXPECT_EQ(g.front().end, InflateEnd::input_end);
  }
}

TEST(InflateGpu, WholeStreamsAndSilesia) {
  SKIP_WITHOUT_GPU();
  std::vector<Item> items;
  for (std::size_t n : {0, 1, 100, 65536, 300000}) {
    const Bytes d = test::mixed_bytes(n, n + 5);
    for (int level : {0, 1, 6, 9}) items.push_back({is::zlib_raw(d, level), d.size()});
    for (int strategy : {Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED}) items.push_back({is::zlib_raw(d, 6, strategy), d.size()});
    for (int level : {1, 6, 12}) items.push_back({is::libdeflate_raw(d, level), d.size()});
  }
  const auto dir = test::silesia_dir();
  if (!dir.empty()) {
    for (const std::string& name : test::silesia_names()) {
      Bytes data = test::read_file(dir / name);
      data.resize(std::min<std::size_t>(data.size(), 4u << 20));
      add_chunks(items, data, 65536, 6);
      items.push_back({is::libdeflate_raw(data, 6), data.size()});
    }
  }
  expect_like_cpu(items);
}

TEST(InflateGpu, MalformedItemsGetTheCpuStatus) {
  SKIP_WITHOUT_GPU();
  std::vector<Item> items;
  items.push_back({{0x07, 0x00}, 100});                                           // reserved type
  items.push_back({{0x01, 0x05, 0x00, 0xfa, 0xfe, 'a', 'b', 'c', 'd', 'e'}, 100});  // LEN/NLEN
  items.push_back({{0x01, 0x05, 0x00, 0xfa, 0xff, 'a'}, 100});                    // truncated stored
  items.push_back({{0x01, 0x05, 0x00, 0xfa, 0xff, 'a', 'b', 'c', 'd', 'e'}, 4});    // overflow
  {
    is::BitWriter w;
    is::put_dynamic_header(w, true, 287, 1, is::full_precode_lengths(), {});
    items.push_back({w.bytes(), 100});
  }
  {
    is::BitWriter w;
    is::put_dynamic_header(w, true, 257, 1, is::full_precode_lengths(), {{16, 0}});
    items.push_back({w.bytes(), 100});
  }
  {
    is::BitWriter w;  // distance 2 after one byte
    w.put(1, 1);
    w.put(1, 2);
    is::put_fixed_litlen(w, 'a');
    is::put_fixed_litlen(w, 257);
    w.put_code(1, 5);
    is::put_fixed_litlen(w, 256);
    items.push_back({w.bytes(), 100});
  }
  std::mt19937_64 rng(5);
  const Bytes d = test::mixed_bytes(40000, 9);
  const Bytes base = is::zlib_raw(d, 6);
  for (int k = 0; k < 500; ++k) {
    Bytes s = base;
    for (int e = 0; e < 3; ++e) s[rng() % s.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    if (k % 3 == 0) s.resize(rng() % s.size());
    items.push_back({s, d.size() + (k % 2 ? 0 : 500)});
    if (k % 10 == 0) items.push_back({base, d.size()});
  }
  expect_like_cpu(items);
}

TEST(InflateGpu, NullAndOversizedItems) {
  SKIP_WITHOUT_GPU();
  StreamHandle s;
  DeviceBuffer d_in_ptrs(2 * sizeof(void*)), d_out_ptrs(2 * sizeof(void*)), d_sizes_in(2 * sizeof(std::size_t)),
      d_caps(2 * sizeof(std::size_t)), d_sizes(2 * sizeof(std::size_t)), d_status(2 * sizeof(InflateStatus)),
      d_buf(16);
  const std::vector<const void*> in_ptrs = {nullptr, d_buf.get()};
  const std::vector<void*> out_ptrs = {d_buf.get(), d_buf.get()};
  const std::vector<std::size_t> in_sizes = {5, gpu::kMaxItemSize + 1};
  const std::vector<std::size_t> caps = {16, 16};
  upload(d_in_ptrs, in_ptrs, s.get());
  upload(d_out_ptrs, out_ptrs, s.get());
  upload(d_sizes_in, in_sizes, s.get());
  upload(d_caps, caps, s.get());
  ASSERT_TRUE(gpu::inflate_async(d_in_ptrs.get<const void* const>(), d_sizes_in.get<std::size_t>(), 2, nullptr, 0,
                                 d_out_ptrs.get<void* const>(), d_caps.get<std::size_t>(), d_sizes.get<std::size_t>(),
                                 d_status.get<InflateStatus>(), nullptr, nullptr, s.get())
                  .ok());
  const auto st = download<InflateStatus>(d_status, 2, s.get());
  EXPECT_EQ(st[0], InflateStatus::invalid_item);
  EXPECT_EQ(st[1], InflateStatus::invalid_item);
  EXPECT_EQ(gpu::inflate_async(nullptr, nullptr, 1, nullptr, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                               s.get())
                .code,
            StatusCode::invalid_argument);
}

// Chunks of the GPU deflate encoder (its emulation) with their segment
// starts, as they are and with lies or corruptions.
void add_encoded(std::vector<Item>& items, const Bytes& d, std::size_t chunk) {
  for (std::size_t at = 0; at < d.size(); at += chunk) {
    const std::size_t n = std::min(chunk, d.size() - at);
    Item it;
    it.capacity = n;
    ASSERT_TRUE(gpu::deflate_compress_emulated(d.data() + at, n, &it.in, &it.starts).ok());
    items.push_back(std::move(it));
  }
}

TEST(InflateGpu, SegmentedChunksOfTheGpuEncoder) {
  SKIP_WITHOUT_GPU();
  for (std::size_t chunk : {std::size_t{16384}, std::size_t{65536}, std::size_t{262144}}) {
    SCOPED_TRACE(chunk);
    std::vector<Item> items;
    const Bytes text = test::text_like_bytes(1 << 20, 1);
    add_encoded(items, text, chunk);
    add_encoded(items, test::mixed_bytes(700001, 2), chunk);
    add_encoded(items, test::record_bytes(300000, 3), chunk);
    add_encoded(items, test::random_bytes(100000, 4), chunk);
    add_encoded(items, test::constant_bytes(200000, 7), chunk);
    for (std::size_t n : {std::size_t{1}, std::size_t{kSeg - 1}, std::size_t{kSeg + 1}, std::size_t{2 * kSeg},
                          std::size_t{3 * kSeg + 5}})
      add_encoded(items, test::mixed_bytes(n, n), n);
    const auto dir = test::silesia_dir();
    if (!dir.empty()) {
      for (const std::string& name : test::silesia_names()) {
        Bytes data = test::read_file(dir / name);
        data.resize(std::min<std::size_t>(data.size(), 2u << 20));
        add_encoded(items, data, chunk);
      }
    }
    expect_like_cpu(items);
    // The text's chunks are the text.
    std::vector<Item> only;
    add_encoded(only, text, chunk);
    const std::vector<Outcome> g = run_gpu(only);
    Bytes joined;
    for (const Outcome& o : g) {
      EXPECT_EQ(o.status, InflateStatus::ok);
      EXPECT_EQ(o.end, InflateEnd::input_end);
      joined.insert(joined.end(), o.out.begin(), o.out.end());
    }
    EXPECT_TRUE(joined == text);
  }
}

TEST(InflateGpu, SegmentedLyingStartsAndCorruptionsGetTheCpuResult) {
  SKIP_WITHOUT_GPU();
  std::vector<Item> base;
  add_encoded(base, test::mixed_bytes(16 * 65536, 8), 65536);
  std::mt19937_64 rng(9);
  std::vector<Item> items;
  for (int k = 0; k < 400; ++k) {
    Item it = base[static_cast<std::size_t>(k) % base.size()];
    switch (k % 4) {
      case 0:  // a start moved
        it.starts[rng() % it.starts.size()] += static_cast<std::uint32_t>(1 + rng() % 16);
        break;
      case 1:  // bytes flipped
        for (int e = 0; e < 2; ++e) it.in[rng() % it.in.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
        break;
      case 2:  // cut short
        it.in.resize(rng() % it.in.size());
        break;
      default:  // as written
        break;
    }
    items.push_back(std::move(it));
  }
  expect_like_cpu(items);
}

#else

TEST(InflateGpu, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA backend: GPU tests skipped"; }

#endif

}  // namespace
}  // namespace tandem
