// The batched GPU LZ4 calls of tandem_gpu.hpp on a device, with device buffers
// and a stream of the test's own: batches of mixed sizes (0 to 4 MiB) in one
// call; GPU blocks decoded by liblz4 and equal, byte for byte, to the CPU
// emulation's; liblz4 fast and HC blocks decoded on the GPU; GPU to GPU with no
// host copy between; too-small capacities; hand-built malformed blocks beside
// valid ones, each with its exact status; random and mutated blocks, which
// must get the emulation's status; batches of 1 to 2,500 items through the wide
// decoder's launches; optional outputs left null; argument errors.
// Every item sits at its own misalignment and every output is followed by
// guard bytes, checked after the call.
//
// Skips without a CUDA device, and compiles to a skip in a build without CUDA.
#include <lz4.h>
#include <lz4hc.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/lz4_gpu_emulate.hpp"
#include "support/gpu_support.hpp"
#include "support/lz4_block_cases.hpp"
#include "support/test_support.hpp"
#include "tandem/tandem_gpu.hpp"

#if TANDEM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using tandem::StatusCode;
using tandem::gpu::ItemStatus;
using tandem::test::Bytes;

#if TANDEM_HAVE_CUDA

using tandem::test::DeviceBuffer;
using tandem::test::download;
using tandem::test::StreamHandle;
using tandem::test::upload;

// A sentinel that no status or size equals: the device did not write the slot.
constexpr std::uint8_t kUnwritten = 0x7F;
const ItemStatus kUnwrittenStatus = static_cast<ItemStatus>(0x7F7F7F7F);

// One item of a batch: its input and its output capacity, or a null pointer
// in place of either buffer.
struct Item {
  Bytes in;
  std::size_t capacity;
  bool null_in = false;
  bool null_out = false;
};

struct ItemOut {
  ItemStatus status = kUnwrittenStatus;  // stays so when the call had no d_statuses
  std::size_t size = 0;
  Bytes out;  // the first `size` bytes of the output when the status is ok or incompressible
  bool guard_intact = true;
};

enum class Call { compress, decompress };

struct CallOptions {
  bool null_capacities = false;  // compression only: the bound for every item
  bool null_statuses = false;
  std::size_t max_item_size = 0;  // compression; 0: the largest input
  // Decompression's max_output_size: up to 16 KiB gives the lane decoder (a
  // warp per block; up to 8 KiB with its output staged in shared memory), up
  // to 32 KiB the wide decoder (a thread block per block), up to 64 KiB the
  // gather decoder (a thread block of 1024 threads per block, which parse
  // and gather the whole block at once), larger the window decoder (a thread
  // block per block, its parse across several warps); 0: the largest
  // capacity.
  std::size_t max_output_size = 0;
  cudaStream_t stream = nullptr;
};

// Runs one batched call over `items`: inputs and outputs each in one device
// arena, every item at its own misalignment (the kernels' word loads and
// stores meet every alignment), every output followed by guard bytes.
std::vector<ItemOut> run_batch(Call call, const std::vector<Item>& items, const CallOptions& o) {
  const std::size_t n = items.size();
  const auto place = [](std::size_t* end, std::size_t bytes, std::size_t skew) {
    const std::size_t at = (*end + 255) / 256 * 256 + skew;
    *end = at + bytes;
    return at;
  };
  std::vector<std::size_t> in_at(n), out_at(n);
  std::size_t in_end = 0, out_end = 0, max_in = 0, max_cap = 0;
  for (std::size_t i = 0; i < n; ++i) {
    in_at[i] = place(&in_end, items[i].in.size(), i % 8);
    out_at[i] = place(&out_end, items[i].capacity + tandem::test::kGuardBytes, (i * 3) % 8);
    max_in = std::max(max_in, items[i].in.size());
    max_cap = std::max(max_cap, items[i].capacity);
  }
  Bytes in_image(in_end), out_image(out_end, tandem::test::kGuardValue);
  for (std::size_t i = 0; i < n; ++i) {
    std::copy(items[i].in.begin(), items[i].in.end(), in_image.begin() + static_cast<std::ptrdiff_t>(in_at[i]));
    std::fill_n(out_image.begin() + static_cast<std::ptrdiff_t>(out_at[i]), items[i].capacity, 0xCD);
  }
  const DeviceBuffer d_in(in_end), d_out(out_end);
  std::vector<const void*> in_ptrs(n);
  std::vector<void*> out_ptrs(n);
  std::vector<std::size_t> in_sizes(n), caps(n);
  for (std::size_t i = 0; i < n; ++i) {
    in_ptrs[i] = items[i].null_in ? nullptr : d_in.get<std::uint8_t>() + in_at[i];
    out_ptrs[i] = items[i].null_out ? nullptr : d_out.get<std::uint8_t>() + out_at[i];
    in_sizes[i] = items[i].in.size();
    caps[i] = items[i].capacity;
  }
  const DeviceBuffer d_in_ptrs(n * sizeof(void*)), d_out_ptrs(n * sizeof(void*));
  const DeviceBuffer d_in_sizes(n * sizeof(std::size_t)), d_caps(n * sizeof(std::size_t));
  const DeviceBuffer d_out_sizes(n * sizeof(std::size_t)), d_statuses(n * sizeof(ItemStatus));
  const cudaStream_t s = o.stream;
  upload(d_in, in_image, s);
  upload(d_out, out_image, s);
  upload(d_in_ptrs, in_ptrs, s);
  upload(d_out_ptrs, out_ptrs, s);
  upload(d_in_sizes, in_sizes, s);
  upload(d_caps, caps, s);
  CUDA_CHECK(cudaMemsetAsync(d_out_sizes.get(), kUnwritten, d_out_sizes.bytes(), s));
  CUDA_CHECK(cudaMemsetAsync(d_statuses.get(), kUnwritten, d_statuses.bytes(), s));

  ItemStatus* statuses = o.null_statuses ? nullptr : d_statuses.get<ItemStatus>();
  const std::size_t max_item = o.max_item_size ? o.max_item_size : max_in;
  std::size_t temp_bytes = 0;
  if (call == Call::compress && !tandem::gpu::lz4_compress_temp_size(n, max_item, &temp_bytes).ok()) {
    throw std::runtime_error("lz4_compress_temp_size failed");
  }
  const DeviceBuffer d_temp(temp_bytes);
  const tandem::Status st =
      call == Call::compress
          ? tandem::gpu::lz4_compress_async(d_in_ptrs.get<const void* const>(), d_in_sizes.get<const std::size_t>(),
                                            max_item, n, d_temp.get(), temp_bytes,
                                            d_out_ptrs.get<void* const>(),
                                            o.null_capacities ? nullptr : d_caps.get<const std::size_t>(),
                                            d_out_sizes.get<std::size_t>(), statuses, s)
          : tandem::gpu::lz4_decompress_async(d_in_ptrs.get<const void* const>(), d_in_sizes.get<const std::size_t>(),
                                              o.max_output_size ? o.max_output_size : max_cap, n, nullptr, 0,
                                              d_out_ptrs.get<void* const>(),
                                              d_caps.get<const std::size_t>(), d_out_sizes.get<std::size_t>(),
                                              statuses, s);
  if (!st.ok()) throw std::runtime_error("the batched call failed: " + st.to_string());

  const Bytes out_back = download<std::uint8_t>(d_out, out_end, s);
  const std::vector<std::size_t> sizes = download<std::size_t>(d_out_sizes, n, s);
  const std::vector<ItemStatus> stats = download<ItemStatus>(d_statuses, n, s);
  std::vector<ItemOut> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto first = out_back.begin() + static_cast<std::ptrdiff_t>(out_at[i]);
    const auto cap_end = first + static_cast<std::ptrdiff_t>(items[i].capacity);
    r[i].guard_intact = std::all_of(cap_end, cap_end + static_cast<std::ptrdiff_t>(tandem::test::kGuardBytes),
                                    [](std::uint8_t b) { return b == tandem::test::kGuardValue; });
    if (!o.null_statuses) r[i].status = stats[i];
    r[i].size = sizes[i];
    const bool has_output = o.null_statuses || stats[i] == ItemStatus::ok || stats[i] == ItemStatus::incompressible;
    if (has_output && sizes[i] <= items[i].capacity) r[i].out.assign(first, first + static_cast<std::ptrdiff_t>(sizes[i]));
  }
  return r;
}

// Decodes `items` in each of the decoder's launch shapes (max_output_size
// picks it; any value decodes every item); they must agree item by item.
// Returns the window shape's results.
std::vector<ItemOut> run_decode(const std::vector<Item>& items, const CallOptions& o) {
  CallOptions window = o;
  window.max_output_size = SIZE_MAX;
  std::vector<ItemOut> by_window = run_batch(Call::decompress, items, window);
  // 64 KiB: the gather decoder; 32 KiB: the wide decoder; 16 KiB: the lane
  // decoder in place; 8 and 4 KiB: with its output staged in shared memory
  // (items with more room decode in place).
  for (const std::size_t max : {std::size_t{64} << 10, std::size_t{32} << 10, std::size_t{16} << 10,
                                std::size_t{8} << 10, std::size_t{4} << 10}) {
    CallOptions other = o;
    other.max_output_size = max;
    const std::vector<ItemOut> by_other = run_batch(Call::decompress, items, other);
    for (std::size_t i = 0; i < items.size(); ++i) {
      SCOPED_TRACE("item " + std::to_string(i) + ": max_output_size " + std::to_string(max) +
                   " against the window decoder");
      EXPECT_EQ(by_other[i].status, by_window[i].status);
      EXPECT_EQ(by_other[i].size, by_window[i].size);
      EXPECT_TRUE(by_other[i].out == by_window[i].out);
      EXPECT_TRUE(by_other[i].guard_intact);
    }
  }
  return by_window;
}

// What the CPU emulation gives for one item (the device must give the same).
struct Emulated {
  ItemStatus status;
  Bytes out;
};
Emulated emulate(Call call, const Item& item) {
  if (item.null_out || (item.null_in && !item.in.empty())) return {ItemStatus::invalid_item, {}};
  const std::size_t cap = item.capacity;
  Bytes out(cap ? cap : 1);
  std::size_t size = 0;
  const ItemStatus st =
      call == Call::compress
          ? tandem::gpu::lz4_encode_block_emulated(item.in.data(), item.in.size(), out.data(), cap, &size)
          : tandem::gpu::lz4_decode_block_emulated(item.in.data(), item.in.size(), out.data(), cap, &size);
  out.resize(st == ItemStatus::ok || st == ItemStatus::incompressible ? size : 0);
  return {st, std::move(out)};
}

// Each item's status, size and bytes are the emulation's; a failed item
// reports size 0; nothing is written past a capacity.
void expect_as_emulated(Call call, const std::vector<Item>& items, const std::vector<ItemOut>& got) {
  ASSERT_EQ(got.size(), items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    SCOPED_TRACE("item " + std::to_string(i) + " of " + std::to_string(items[i].in.size()) + " bytes, capacity " +
                 std::to_string(items[i].capacity));
    const Emulated e = emulate(call, items[i]);
    EXPECT_TRUE(got[i].guard_intact) << "written past the capacity";
    EXPECT_EQ(got[i].status, e.status);
    if (e.status == ItemStatus::ok || e.status == ItemStatus::incompressible) {
      EXPECT_EQ(got[i].size, e.out.size());
      EXPECT_TRUE(got[i].out == e.out) << "other bytes than the CPU emulation";
    } else {
      EXPECT_EQ(got[i].size, 0u) << "a failed item's size (" << got[i].status << ")";
    }
  }
}

std::optional<Bytes> lz4_decode(const Bytes& block, std::size_t capacity) {
  Bytes out(capacity ? capacity : 1);
  const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(block.data()), reinterpret_cast<char*>(out.data()),
                                    static_cast<int>(block.size()), static_cast<int>(capacity));
  if (r < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(r));
  return out;
}

// The batch of every size and kind: edge sizes of the four kinds, larger items
// up to 4 MiB, and Silesia chunks where the corpus is present.
std::vector<Bytes> mixed_inputs() {
  std::vector<Bytes> v;
  for (std::size_t n : tandem::test::lz4_edge_sizes())
    for (int kind = 0; kind < tandem::test::kLz4DataKinds; ++kind)
      v.push_back(tandem::test::lz4_test_data(kind, n, 5000 + n * 4 + static_cast<std::size_t>(kind)));
  v.push_back(tandem::test::text_like_bytes((1u << 20) + 3, 1));
  v.push_back(tandem::test::constant_bytes((4u << 20) - 1, 'k'));
  v.push_back(tandem::test::mixed_bytes(4u << 20, 2));
  v.push_back(tandem::test::random_bytes(4u << 20, 3));
  if (const auto dir = tandem::test::silesia_dir(); !dir.empty()) {
    for (const std::string& name : tandem::test::silesia_names()) {
      const Bytes file = tandem::test::read_file(dir / name);
      for (std::size_t at = 0; at < std::min<std::size_t>(file.size(), 256u << 10); at += 64u << 10)
        v.emplace_back(file.begin() + static_cast<std::ptrdiff_t>(at),
                       file.begin() + static_cast<std::ptrdiff_t>(std::min(file.size(), at + (64u << 10))));
    }
  }
  return v;
}

std::vector<Item> compress_items(const std::vector<Bytes>& inputs) {
  std::vector<Item> items;
  for (const Bytes& in : inputs) items.push_back({in, tandem::gpu::lz4_max_compressed_size(in.size())});
  return items;
}

class GpuLz4 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (tandem::backend_info().gpu_count == 0) GTEST_SKIP() << "no CUDA device";
    stream_ = std::make_unique<StreamHandle>();
    opts_.stream = stream_->get();
  }
  std::unique_ptr<StreamHandle> stream_;
  CallOptions opts_;
};

// ------------------------------------------------------- compression ----

TEST_F(GpuLz4, CompressesAMixedBatchLikeTheEmulationAndLiblz4DecodesIt) {
  const std::vector<Item> items = compress_items(mixed_inputs());
  const std::vector<ItemOut> got = run_batch(Call::compress, items, opts_);
  expect_as_emulated(Call::compress, items, got);
  for (std::size_t i = 0; i < items.size(); ++i) {
    SCOPED_TRACE("item " + std::to_string(i) + " of " + std::to_string(items[i].in.size()) + " bytes");
    const std::optional<Bytes> back = lz4_decode(got[i].out, items[i].in.size());
    ASSERT_TRUE(back.has_value()) << "liblz4 refuses the GPU's block";
    EXPECT_TRUE(*back == items[i].in);
    EXPECT_EQ(got[i].status, got[i].size < items[i].in.size() ? ItemStatus::ok : ItemStatus::incompressible);
  }
  // Null capacities mean the bound: the same blocks.
  CallOptions bound = opts_;
  bound.null_capacities = true;
  const std::vector<ItemOut> again = run_batch(Call::compress, items, bound);
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(again[i].status, got[i].status) << "item " << i;
    EXPECT_TRUE(again[i].out == got[i].out) << "item " << i << ": not deterministic";
  }
}

// The batch's max_item_size sizes the kernel's hash table: every item within
// it gets the same block (the emulation's) whatever the table, also on the
// legacy default stream; an item far larger than max_item_size is refused.
TEST_F(GpuLz4, EveryMaxItemSizeGivesTheSameBlocks) {
  std::vector<Bytes> inputs;
  for (std::size_t n : tandem::test::lz4_edge_sizes())
    if (n <= 65536)
      for (int kind = 0; kind < tandem::test::kLz4DataKinds; ++kind)
        inputs.push_back(tandem::test::lz4_test_data(kind, n, 6000 + n));
  // (The compressor's temporary storage grows with max_item_size: 4 MiB, the
  // largest LZ4 frame block, is the largest asked here.)
  for (std::size_t max : {std::size_t{16384}, std::size_t{65536}, std::size_t{1} << 20, std::size_t{4} << 20}) {
    SCOPED_TRACE("max_item_size " + std::to_string(max));
    std::vector<Bytes> fit;
    for (const Bytes& in : inputs)
      if (in.size() <= max) fit.push_back(in);
    const std::vector<Item> items = compress_items(fit);
    CallOptions o = opts_;
    o.max_item_size = max;
    o.stream = max == 65536 ? nullptr : opts_.stream;
    expect_as_emulated(Call::compress, items, run_batch(Call::compress, items, o));
  }
  CallOptions o = opts_;
  o.max_item_size = 16384;
  const std::vector<ItemOut> big =
      run_batch(Call::compress, compress_items({tandem::test::text_like_bytes(100000, 1)}), o);
  EXPECT_EQ(big[0].status, ItemStatus::invalid_item);
  EXPECT_EQ(big[0].size, 0u);
  EXPECT_TRUE(big[0].guard_intact);
}

// Too little room: output_overflow, nothing past the capacity; exactly enough: the block.
TEST_F(GpuLz4, CompressionRespectsEachCapacity) {
  const std::vector<Bytes> inputs = {Bytes{},
                                     Bytes{'x'},
                                     tandem::test::text_like_bytes(300, 1),
                                     tandem::test::random_bytes(300, 2),
                                     tandem::test::constant_bytes(65536, 'c'),
                                     tandem::test::text_like_bytes(65537, 3),
                                     tandem::test::mixed_bytes(262144, 5)};
  std::vector<Item> items;
  std::vector<std::size_t> block_sizes;  // with room to spare
  for (const Bytes& in : inputs) {
    const std::size_t c = emulate(Call::compress, {in, tandem::gpu::lz4_max_compressed_size(in.size())}).out.size();
    for (std::size_t cap : {std::size_t{0}, std::size_t{1}, c / 2, c - 1, c}) {
      items.push_back({in, cap});
      block_sizes.push_back(c);
    }
  }
  const std::vector<ItemOut> got = run_batch(Call::compress, items, opts_);
  expect_as_emulated(Call::compress, items, got);
  for (std::size_t i = 0; i < items.size(); ++i) {
    SCOPED_TRACE("capacity " + std::to_string(items[i].capacity) + " for a block of " + std::to_string(block_sizes[i]));
    if (items[i].capacity < block_sizes[i]) {
      EXPECT_EQ(got[i].status, ItemStatus::output_overflow);
    } else {
      EXPECT_TRUE(got[i].status == ItemStatus::ok || got[i].status == ItemStatus::incompressible) << got[i].status;
    }
  }
}

// ------------------------------------------------------- decompression ----

TEST_F(GpuLz4, DecompressesLiblz4FastAndHcBlocks) {
  const std::vector<Bytes> inputs = mixed_inputs();
  struct Ref {
    const char* name;
    int acceleration;  // fast when > 0
    int hc_level;
  };
  for (const Ref& ref : {Ref{"fast", 1, 0}, Ref{"fast acceleration 8", 8, 0}, Ref{"hc 3", 0, 3}, Ref{"hc 9", 0, 9},
                         Ref{"hc 12", 0, 12}}) {
    SCOPED_TRACE(std::string("liblz4 ") + ref.name);
    std::vector<Item> items;
    for (const Bytes& in : inputs) {
      if (ref.hc_level >= 9 && in.size() > (1u << 20)) continue;  // slow, and nothing new
      Bytes block(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(in.size()))) + 1);
      const Bytes src = in.empty() ? Bytes{0} : in;  // liblz4's HC encoder wants a pointer even for empty input
      const int r =
          ref.acceleration > 0
              ? LZ4_compress_fast(reinterpret_cast<const char*>(src.data()), reinterpret_cast<char*>(block.data()),
                                  static_cast<int>(in.size()), static_cast<int>(block.size()), ref.acceleration)
              : LZ4_compress_HC(reinterpret_cast<const char*>(src.data()), reinterpret_cast<char*>(block.data()),
                                static_cast<int>(in.size()), static_cast<int>(block.size()), ref.hc_level);
      ASSERT_GT(r, 0);
      block.resize(static_cast<std::size_t>(r));
      items.push_back({std::move(block), in.size()});
    }
    const std::vector<ItemOut> got = run_decode(items, opts_);
    std::size_t k = 0;
    for (const Bytes& in : inputs) {
      if (ref.hc_level >= 9 && in.size() > (1u << 20)) continue;
      EXPECT_EQ(got[k].status, ItemStatus::ok) << "item " << k;
      EXPECT_TRUE(got[k].guard_intact);
      EXPECT_TRUE(got[k].out == in) << "item " << k << " of " << in.size() << " bytes";
      ++k;
    }
  }
}

// The wide decoder has a launch for batches the GPU holds at once and one
// for larger batches (more thread blocks a multiprocessor, fewer registers):
// batches of 1 to 2,500 items of 20 KiB, of every kind of test data, each
// cut from the same items, decode to their inputs whichever runs.
TEST_F(GpuLz4, EveryBatchSizeOfTheWideDecoderDecodes) {
  constexpr std::size_t kItems = 2500, kSize = 20u << 10;
  std::vector<Bytes> inputs;
  std::vector<Item> items;
  for (std::size_t i = 0; i < kItems; ++i) {
    const int kind = static_cast<int>(i % tandem::test::kLz4DataKinds);
    inputs.push_back(tandem::test::lz4_test_data(kind, kSize - (i % 7) * 1000, 7000 + i));
    const Bytes& in = inputs.back();
    Bytes block(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(in.size()))));
    const int r = LZ4_compress_default(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(block.data()),
                                       static_cast<int>(in.size()), static_cast<int>(block.size()));
    ASSERT_GT(r, 0);
    block.resize(static_cast<std::size_t>(r));
    items.push_back({std::move(block), kSize});
  }
  CallOptions wide = opts_;
  wide.max_output_size = kSize;
  for (const std::size_t count : {std::size_t{1}, std::size_t{600}, std::size_t{1100}, std::size_t{1450}, kItems}) {
    SCOPED_TRACE("a batch of " + std::to_string(count) + " items");
    const std::vector<Item> batch(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(count));
    const std::vector<ItemOut> got = run_batch(Call::decompress, batch, wide);
    for (std::size_t i = 0; i < count; ++i) {
      EXPECT_EQ(got[i].status, ItemStatus::ok) << "item " << i;
      EXPECT_TRUE(got[i].guard_intact) << "item " << i;
      EXPECT_TRUE(got[i].out == inputs[i]) << "item " << i;
    }
  }
}

// Compress then decompress with the device arrays of the first call feeding
// the second: the compressed sizes stay on the device.
TEST_F(GpuLz4, RoundTripsOnTheDevice) {
  const std::vector<Bytes> inputs = mixed_inputs();
  const std::size_t n = inputs.size();
  std::size_t in_total = 0, block_total = 0, max_in = 0;
  for (const Bytes& in : inputs) {
    in_total += in.size() + 1;
    block_total += tandem::gpu::lz4_max_compressed_size(in.size());
    max_in = std::max(max_in, in.size());
  }
  const cudaStream_t s = opts_.stream;
  const DeviceBuffer d_in(in_total), d_blocks(block_total), d_back(in_total);
  std::vector<const void*> in_ptrs(n);
  std::vector<void*> block_ptrs(n), back_ptrs(n);
  std::vector<std::size_t> sizes(n), block_caps(n);
  Bytes image(in_total);
  for (std::size_t i = 0, at = 0, bat = 0; i < n; ++i) {
    std::copy(inputs[i].begin(), inputs[i].end(), image.begin() + static_cast<std::ptrdiff_t>(at));
    in_ptrs[i] = d_in.get<std::uint8_t>() + at;
    back_ptrs[i] = d_back.get<std::uint8_t>() + at;
    block_ptrs[i] = d_blocks.get<std::uint8_t>() + bat;
    sizes[i] = inputs[i].size();
    block_caps[i] = tandem::gpu::lz4_max_compressed_size(inputs[i].size());
    at += inputs[i].size() + 1;
    bat += block_caps[i];
  }
  const DeviceBuffer d_in_ptrs(n * sizeof(void*)), d_block_ptrs(n * sizeof(void*)), d_back_ptrs(n * sizeof(void*));
  const DeviceBuffer d_sizes(n * sizeof(std::size_t)), d_block_caps(n * sizeof(std::size_t));
  const DeviceBuffer d_block_sizes(n * sizeof(std::size_t)), d_back_sizes(n * sizeof(std::size_t));
  const DeviceBuffer d_enc_status(n * sizeof(ItemStatus)), d_dec_status(n * sizeof(ItemStatus));
  upload(d_in, image, s);
  upload(d_in_ptrs, in_ptrs, s);
  upload(d_block_ptrs, block_ptrs, s);
  upload(d_back_ptrs, back_ptrs, s);
  upload(d_sizes, sizes, s);
  upload(d_block_caps, block_caps, s);
  CUDA_CHECK(cudaMemsetAsync(d_back.get(), 0, in_total, s));

  std::size_t temp_bytes = 0;
  ASSERT_TRUE(tandem::gpu::lz4_compress_temp_size(n, max_in, &temp_bytes).ok());
  const DeviceBuffer d_temp(temp_bytes);
  ASSERT_TRUE(tandem::gpu::lz4_compress_async(d_in_ptrs.get<const void* const>(), d_sizes.get<const std::size_t>(),
                                              max_in, n, d_temp.get(), temp_bytes, d_block_ptrs.get<void* const>(),
                                              d_block_caps.get<const std::size_t>(), d_block_sizes.get<std::size_t>(),
                                              d_enc_status.get<ItemStatus>(), s)
                  .ok());
  std::size_t dtemp_bytes = 0;
  ASSERT_TRUE(tandem::gpu::lz4_decompress_temp_size(n, max_in, &dtemp_bytes).ok());
  const DeviceBuffer d_dtemp(dtemp_bytes);
  // Decode capacities: the original sizes.
  ASSERT_TRUE(tandem::gpu::lz4_decompress_async(d_block_ptrs.get<const void* const>(),
                                                d_block_sizes.get<const std::size_t>(), max_in, n, d_dtemp.get(),
                                                dtemp_bytes,
                                                d_back_ptrs.get<void* const>(), d_sizes.get<const std::size_t>(),
                                                d_back_sizes.get<std::size_t>(), d_dec_status.get<ItemStatus>(), s)
                  .ok());
  const Bytes back = download<std::uint8_t>(d_back, in_total, s);
  const auto back_sizes = download<std::size_t>(d_back_sizes, n, s);
  const auto enc = download<ItemStatus>(d_enc_status, n, s);
  const auto dec = download<ItemStatus>(d_dec_status, n, s);
  for (std::size_t i = 0, at = 0; i < n; at += inputs[i].size() + 1, ++i) {
    SCOPED_TRACE("item " + std::to_string(i) + " of " + std::to_string(inputs[i].size()) + " bytes");
    EXPECT_TRUE(enc[i] == ItemStatus::ok || enc[i] == ItemStatus::incompressible) << enc[i];
    EXPECT_EQ(dec[i], ItemStatus::ok);
    EXPECT_EQ(back_sizes[i], inputs[i].size());
    EXPECT_TRUE(std::equal(inputs[i].begin(), inputs[i].end(), back.begin() + static_cast<std::ptrdiff_t>(at)));
  }
}

// Hand-built malformed blocks between valid ones in one batch: each gets its
// exact status, the valid ones decode, null buffers get invalid_item.
TEST_F(GpuLz4, MalformedBlocksBesideValidOnesGetTheirExactStatus) {
  std::vector<Item> items;
  std::vector<std::string> names;
  std::vector<ItemStatus> want;
  std::vector<Bytes> want_out;
  const Bytes data = tandem::test::mixed_bytes(100000, 9);
  Bytes valid(tandem::gpu::lz4_max_compressed_size(data.size()));
  std::size_t valid_size = 0;
  ASSERT_EQ(tandem::gpu::lz4_encode_block_emulated(data.data(), data.size(), valid.data(), valid.size(), &valid_size),
            ItemStatus::ok);
  valid.resize(valid_size);
  const auto add = [&](Item item, std::string name, ItemStatus st, Bytes out) {
    items.push_back(std::move(item));
    names.push_back(std::move(name));
    want.push_back(st);
    want_out.push_back(std::move(out));
  };
  for (const tandem::test::Lz4BlockCase& c : tandem::test::lz4_block_cases()) {
    add({c.block, c.capacity}, c.name, c.want, c.output);
    add({valid, data.size()}, "a valid block after " + c.name, ItemStatus::ok, data);
  }
  // Null buffers: a 5-byte input at null, an output at null.
  add({Bytes{0x40, 'a', 'b', 'c', 'd'}, 64, true, false}, "null input", ItemStatus::invalid_item, {});
  add({Bytes{0x40, 'a', 'b', 'c', 'd'}, 64, false, true}, "null output", ItemStatus::invalid_item, {});

  const std::vector<ItemOut> got = run_decode(items, opts_);
  expect_as_emulated(Call::decompress, items, got);
  for (std::size_t i = 0; i < items.size(); ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(got[i].status, want[i]);
    if (want[i] == ItemStatus::ok) {
      EXPECT_TRUE(got[i].out == want_out[i]);
    }
  }
}

// Random bytes, mutated valid blocks and every truncation of a valid block:
// no fault (compute-sanitizer checks the accesses), a status for every item,
// and the emulation's status and bytes.
TEST_F(GpuLz4, HostileBlocksGetTheEmulationsStatus) {
  std::mt19937_64 rng(31);
  std::vector<Item> items;
  for (int i = 0; i < 1500; ++i) {
    Bytes b(i < 1000 ? rng() % 64 : rng() % 4096);
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    if (i % 3 == 0)
      for (auto& x : b) x &= 0x1F;  // low literal counts: longer parses
    items.push_back({std::move(b), rng() % 3 == 0 ? rng() % 16 : rng() % 8192});
  }
  const Bytes data = tandem::test::mixed_bytes(20000, 10);
  Bytes block(tandem::gpu::lz4_max_compressed_size(data.size()));
  std::size_t size = 0;
  ASSERT_EQ(tandem::gpu::lz4_encode_block_emulated(data.data(), data.size(), block.data(), block.size(), &size),
            ItemStatus::ok);
  block.resize(size);
  for (int i = 0; i < 1500; ++i) {
    Bytes m = block;
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) m[rng() % m.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    items.push_back({std::move(m), i % 2 ? data.size() : rng() % (data.size() + 4096)});
  }
  const Bytes small = tandem::test::text_like_bytes(3000, 11);
  Bytes small_block(tandem::gpu::lz4_max_compressed_size(small.size()));
  ASSERT_EQ(tandem::gpu::lz4_encode_block_emulated(small.data(), small.size(), small_block.data(), small_block.size(),
                                                   &size),
            ItemStatus::ok);
  for (std::size_t cut = 0; cut <= size; ++cut)
    items.push_back({Bytes(small_block.begin(), small_block.begin() + static_cast<std::ptrdiff_t>(cut)), small.size()});

  const std::vector<ItemOut> got = run_decode(items, opts_);
  for (std::size_t i = 0; i < items.size(); ++i) {
    ASSERT_NE(got[i].status, kUnwrittenStatus) << "item " << i << " got no status";
    ASSERT_TRUE(tandem::test::is_decoder_status(got[i].status)) << "item " << i;
  }
  expect_as_emulated(Call::decompress, items, got);
}

// ------------------------------------------------------- the calls ----

TEST_F(GpuLz4, StatusesMayBeNull) {
  const std::vector<Item> items = compress_items({tandem::test::text_like_bytes(5000, 1), Bytes{},
                                                  tandem::test::random_bytes(70000, 2)});
  CallOptions o = opts_;
  o.null_statuses = true;
  const std::vector<ItemOut> blocks = run_batch(Call::compress, items, o);
  std::vector<Item> decode_items;
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_TRUE(blocks[i].guard_intact);
    const Emulated e = emulate(Call::compress, items[i]);
    EXPECT_TRUE(blocks[i].out == e.out) << "item " << i;
    decode_items.push_back({blocks[i].out, items[i].in.size()});
  }
  const std::vector<ItemOut> back = run_decode(decode_items, o);
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(back[i].size, items[i].in.size());
    EXPECT_TRUE(back[i].out == items[i].in) << "item " << i;
  }
}

TEST_F(GpuLz4, ArgumentErrors) {
  const cudaStream_t s = opts_.stream;
  // No items: nothing to do, even with null arrays.
  EXPECT_STATUS(tandem::gpu::lz4_compress_async(nullptr, nullptr, 0, 0, nullptr, 0, nullptr, nullptr, nullptr,
                                                nullptr, s),
                StatusCode::ok);
  EXPECT_STATUS(tandem::gpu::lz4_decompress_async(nullptr, nullptr, 0, 0, nullptr, 0, nullptr, nullptr, nullptr,
                                                  nullptr, s),
                StatusCode::ok);
  CUDA_CHECK(cudaStreamSynchronize(s));

  const DeviceBuffer d_ptrs(sizeof(void*)), d_sizes(sizeof(std::size_t)), d_out_sizes(sizeof(std::size_t));
  // Items larger than the call accepts.
  EXPECT_STATUS(tandem::gpu::lz4_compress_async(d_ptrs.get<const void* const>(), d_sizes.get<const std::size_t>(),
                                                tandem::gpu::kMaxItemSize + 1, 1, nullptr, 0,
                                                d_ptrs.get<void* const>(), nullptr, d_out_sizes.get<std::size_t>(),
                                                nullptr, s),
                StatusCode::invalid_argument);
  std::size_t temp = 0;
  EXPECT_STATUS(tandem::gpu::lz4_compress_temp_size(1, tandem::gpu::kMaxItemSize + 1, &temp),
                StatusCode::invalid_argument);
  // Less temporary storage than lz4_compress_temp_size asks for.
  ASSERT_TRUE(tandem::gpu::lz4_compress_temp_size(1, 16, &temp).ok());
  ASSERT_GT(temp, 0u);
  const DeviceBuffer d_temp(temp);
  EXPECT_STATUS(tandem::gpu::lz4_compress_async(d_ptrs.get<const void* const>(), d_sizes.get<const std::size_t>(), 16,
                                                1, d_temp.get(), temp - 1, d_ptrs.get<void* const>(), nullptr,
                                                d_out_sizes.get<std::size_t>(), nullptr, s),
                StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::gpu::lz4_compress_async(d_ptrs.get<const void* const>(), d_sizes.get<const std::size_t>(), 16,
                                                1, nullptr, temp, d_ptrs.get<void* const>(), nullptr,
                                                d_out_sizes.get<std::size_t>(), nullptr, s),
                StatusCode::invalid_argument);
  // Null device arrays that the call needs.
  EXPECT_STATUS(tandem::gpu::lz4_compress_async(nullptr, d_sizes.get<const std::size_t>(), 16, 1, nullptr, 0,
                                                d_ptrs.get<void* const>(), nullptr, d_out_sizes.get<std::size_t>(),
                                                nullptr, s),
                StatusCode::invalid_argument);
  EXPECT_STATUS(tandem::gpu::lz4_decompress_async(d_ptrs.get<const void* const>(), d_sizes.get<const std::size_t>(), 16,
                                                  1, nullptr, 0, d_ptrs.get<void* const>(), nullptr,
                                                  d_out_sizes.get<std::size_t>(), nullptr, s),
                StatusCode::invalid_argument);
  CUDA_CHECK(cudaStreamSynchronize(s));
}

#else  // no CUDA in this build

TEST(GpuLz4, Kernels) { GTEST_SKIP() << "built without CUDA"; }

// The calls exist and say why they cannot run.
TEST(GpuLz4, CallsSayNoDevice) {
  EXPECT_STATUS(tandem::gpu::lz4_compress_async(nullptr, nullptr, 0, 1, nullptr, 0, nullptr, nullptr, nullptr,
                                                nullptr, nullptr),
                StatusCode::no_device);
  EXPECT_STATUS(tandem::gpu::lz4_decompress_async(nullptr, nullptr, 0, 1, nullptr, 0, nullptr, nullptr, nullptr,
                                                  nullptr, nullptr),
                StatusCode::no_device);
}

#endif

}  // namespace
