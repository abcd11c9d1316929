// The scanner's GPU path (tandem/scan_gpu.hpp) on a device: every archive
// kind and hostile case of the scanner's tests, under four sets of limits,
// alone and all in one batch, gives scan()'s entries and bytes with the
// blocks decoded by the device (stats.emulated false); well-formed archives
// decode with no block left to the CPU when the split gives it none, and the
// split between the device and the CPU pool (cpu_block_bytes) at 0, small
// and default gives scan()'s result with the same blocks as the emulation;
// an archive already in device memory; the caller's stream; transfers
// larger than the pinned staging, and archives in registered host memory.
//
// Skips without a CUDA device, and compiles to a skip in a build without CUDA.
#include <algorithm>
#include <cstdint>

#include "support/gpu_support.hpp"
#include "support/scan_cases.hpp"

namespace tandem {
namespace {

using scan_cases::all_cases;
using scan_cases::all_limits;
using scan_cases::Case;
using scan_cases::expect_same_as_scan;
using test::Bytes;

#if TANDEM_HAVE_CUDA

TEST(ScanGpu, EachArchiveAloneEqualsScan) {
  SKIP_WITHOUT_GPU();
  for (const Case& c : all_cases()) {
    for (const ScanLimits& l : all_limits()) {
      SCOPED_TRACE(c.name + " max_ratio " + std::to_string(l.max_ratio) + " max_output " +
                   std::to_string(l.max_output));
      DeviceScanResult r;
      expect_same_as_scan({c}, l, {}, &r);
      EXPECT_FALSE(r.stats.emulated);
    }
  }
}

TEST(ScanGpu, OneBatchOfEveryArchiveEqualsScan) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = all_cases();
  test::StreamHandle stream;
  DeviceScanOptions o;
  o.stream = reinterpret_cast<gpu::Stream>(stream.get());
  for (const ScanLimits& l : all_limits()) {
    // Nested layers decoded by the walks (the default), and each in a
    // dispatch of its own.
    for (const std::uint64_t walk_cpu : {DeviceScanOptions::kDefaultWalkCpuBytes, std::uint64_t{0}}) {
      SCOPED_TRACE("walk_cpu_bytes " + std::to_string(walk_cpu));
      o.walk_cpu_bytes = walk_cpu;
      DeviceScanResult r;
      expect_same_as_scan(cases, l, o, &r);
      EXPECT_FALSE(r.stats.emulated);
      EXPECT_GT(r.stats.gpu_blocks, 0u);
      EXPECT_GT(r.stats.unsupported_blocks, 0u);
      EXPECT_LE(r.stats.dispatches, 4 * r.stats.layers + 1);
      if (walk_cpu == 0) EXPECT_GE(r.stats.layers, 3u);
    }
  }
  o.walk_cpu_bytes = DeviceScanOptions::kDefaultWalkCpuBytes;
  std::vector<Case> twice = cases;
  twice.insert(twice.end(), cases.begin(), cases.end());
  std::reverse(twice.begin(), twice.end());
  expect_same_as_scan(twice, {}, o);
}

// The emulation of the device's call with options o on the same cases
// splits the work as the device did: the same blocks and bytes on each side.
void expect_emulation_splits_alike(const std::vector<Case>& cases, const ScanLimits& l, const DeviceScanOptions& o,
                                   const DeviceScanResult& device) {
  DeviceScanOptions emulated = o;
  emulated.gpu = false;
  DeviceScanResult e;
  expect_same_as_scan(cases, l, emulated, &e);
  EXPECT_EQ(e.stats.policy_blocks, device.stats.policy_blocks);
  EXPECT_EQ(e.stats.gpu_blocks, device.stats.gpu_blocks);
  EXPECT_EQ(e.stats.gpu_bytes, device.stats.gpu_bytes);
}

TEST(ScanGpu, WellFormedArchivesDecodeOnTheDevice) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = scan_cases::well_formed_cases(10, 41);
  ScanLimits l;
  l.max_ratio = 1u << 20;  // zstd's RLE blocks decode to 30000 times their size
  DeviceScanOptions o;
  o.cpu_block_bytes = UINT64_MAX;  // all on the device
  DeviceScanResult r;
  expect_same_as_scan(cases, l, o, &r);
  EXPECT_FALSE(r.stats.emulated);
  EXPECT_EQ(r.stats.rejected_blocks, 0u);
  EXPECT_EQ(r.stats.cpu_blocks, 0u);
  EXPECT_EQ(r.stats.layers, 1u);
  expect_emulation_splits_alike(cases, l, o, r);
}

TEST(ScanGpu, SplitWithTheCpuPoolEqualsScan) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> well = scan_cases::well_formed_cases(10, 41);
  const std::vector<Case> hostile = all_cases();
  ScanLimits l;
  l.max_ratio = 1u << 20;
  for (const std::uint64_t threshold : {std::uint64_t{0}, std::uint64_t{4096}, DeviceScanOptions::kDefaultCpuBlockBytes}) {
    SCOPED_TRACE("cpu_block_bytes " + std::to_string(threshold));
    DeviceScanOptions o;
    o.cpu_block_bytes = threshold;
    DeviceScanResult r;
    expect_same_as_scan(well, l, o, &r);
    EXPECT_FALSE(r.stats.emulated);
    EXPECT_EQ(r.stats.rejected_blocks, 0u);
    EXPECT_GT(r.stats.policy_blocks, 0u);
    EXPECT_EQ(r.stats.cpu_blocks, r.stats.policy_blocks);
    expect_emulation_splits_alike(well, l, o, r);
    for (const ScanLimits& hl : all_limits()) expect_same_as_scan(hostile, hl, o);
  }
}

TEST(ScanGpu, ArchiveAlreadyInDeviceMemory) {
  SKIP_WITHOUT_GPU();
  for (const Case& c : all_cases()) {
    test::DeviceBuffer d(c.bytes.size());
    if (!c.bytes.empty()) CUDA_CHECK(cudaMemcpy(d.get(), c.bytes.data(), c.bytes.size(), cudaMemcpyHostToDevice));
    ScanResult want;
    (void)scan({c.bytes.data(), c.bytes.size()}, c.name, {}, &want);
    DeviceScanResult got;
    (void)scan_device_archive(d.get(), c.bytes.size(), c.name, {}, {}, &got);
    EXPECT_FALSE(got.stats.emulated);
    scan_cases::expect_phases_add_up(got.stats);
    ASSERT_EQ(got.entries.size(), want.entries.size()) << c.name;
    for (std::size_t i = 0; i < want.entries.size(); ++i) {
      EXPECT_EQ(got.entries[i].path, want.entries[i].path);
      EXPECT_EQ(got.entries[i].status.to_string(), want.entries[i].status.to_string()) << want.entries[i].path;
    }
    Bytes bytes;
    ASSERT_TRUE(got.copy_to_host(&bytes).ok());
    EXPECT_EQ(bytes, want.bytes) << c.name;
  }
}

// Transfers larger than the two halves of the pinned staging (the archives'
// upload, the CPU's outputs going up, the result coming back), and the same
// archives in registered host memory, which go up without staging.
TEST(ScanGpu, LargeAndPinnedInputsEqualScan) {
  SKIP_WITHOUT_GPU();
  std::vector<Case> cases = all_cases();
  cases.push_back({"large.gz", scan_cases::gzip(test::text_like_bytes(12u << 20, 5), 1)});
  cases.push_back({"large.tar", scan_cases::tar_of({{"a.bin", test::random_bytes(5u << 20, 6)},
                                                    {"b.txt", test::text_like_bytes(7u << 20, 7)}})});
  ScanLimits l;
  l.max_ratio = 1u << 20;
  expect_same_as_scan(cases, l, {});
  for (Case& c : cases) {
    if (!c.bytes.empty()) CUDA_CHECK(cudaHostRegister(c.bytes.data(), c.bytes.size(), cudaHostRegisterDefault));
  }
  expect_same_as_scan(cases, l, {});
  for (Case& c : cases) {
    if (!c.bytes.empty()) CUDA_CHECK(cudaHostUnregister(c.bytes.data()));
  }
}

#else

TEST(ScanGpu, NeedsCuda) { GTEST_SKIP() << "this build of tandem has no CUDA backend: GPU tests skipped"; }

#endif

}  // namespace
}  // namespace tandem
