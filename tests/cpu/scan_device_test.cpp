// scan_to_device through the CPU emulation of its kernels (options.gpu
// false): the same descriptors, dispatches and CPU fallbacks the GPU path
// runs, whose entries (paths, order, layers, codecs, statuses, sizes) and
// bytes must equal scan()'s on every kind of archive scan_test reads and on
// the hostile ones (bombs, corrupted members, lying sizes, truncated
// headers, traversal names, depth and entry limits), one archive at a time
// and in batches; and the blocks that the device takes really go to it.
// The split between the device and the CPU pool (cpu_block_bytes) runs at
// 0 (every decoder's input on the CPU), small, default and UINT64_MAX (all
// on the device), each giving scan()'s result.
#include <algorithm>
#include <cstdint>

#include "support/scan_cases.hpp"

namespace tandem {
namespace {

using scan_cases::all_cases;
using scan_cases::all_limits;
using scan_cases::Case;
using scan_cases::expect_same_as_scan;
using test::Bytes;

DeviceScanOptions emulated(std::uint64_t cpu_block_bytes = DeviceScanOptions::kDefaultCpuBlockBytes,
                           std::uint64_t walk_cpu_bytes = DeviceScanOptions::kDefaultWalkCpuBytes) {
  DeviceScanOptions o;
  o.gpu = false;
  o.cpu_block_bytes = cpu_block_bytes;
  o.walk_cpu_bytes = walk_cpu_bytes;
  return o;
}

constexpr std::uint64_t kAllOnDevice = UINT64_MAX;

TEST(ScanDevice, EachArchiveAloneEqualsScan) {
  for (const Case& c : all_cases()) {
    for (const ScanLimits& l : all_limits()) {
      SCOPED_TRACE(c.name + " max_ratio " + std::to_string(l.max_ratio) + " max_output " +
                   std::to_string(l.max_output));
      expect_same_as_scan({c}, l, emulated());
    }
  }
}

TEST(ScanDevice, OneBatchOfEveryArchiveEqualsScan) {
  const std::vector<Case> cases = all_cases();
  for (const ScanLimits& l : all_limits()) {
    DeviceScanResult r;
    // Every nested layer in a dispatch of its own.
    expect_same_as_scan(cases, l, emulated(DeviceScanOptions::kDefaultCpuBlockBytes, 0), &r);
    EXPECT_TRUE(r.stats.emulated);
    EXPECT_GT(r.entries.size(), 60u);
    EXPECT_GT(r.stats.gpu_blocks, 0u);
    EXPECT_GT(r.stats.cpu_blocks, 0u);         // zstd compressed blocks, multi-member gzip, linked LZ4
    EXPECT_GT(r.stats.unsupported_blocks, 0u);  // zstd compressed blocks, said so first
    EXPECT_GE(r.stats.layers, 3u);
    EXPECT_LE(r.stats.dispatches, 4 * r.stats.layers + 1);
  }
  // In another order, and every archive twice.
  std::vector<Case> twice = cases;
  twice.insert(twice.end(), cases.begin(), cases.end());
  std::reverse(twice.begin(), twice.end());
  expect_same_as_scan(twice, {}, emulated());
}

// The new inputs of nested layers, decoded by the walks themselves up to
// walk_cpu_bytes per archive and layer: scan()'s result either way, in
// fewer dispatch rounds.
TEST(ScanDevice, WalksDecodeNestedInputsUpToTheirBudget) {
  const std::vector<Case> cases = all_cases();
  constexpr std::uint64_t kSplit = DeviceScanOptions::kDefaultCpuBlockBytes;
  for (const ScanLimits& l : all_limits()) {
    SCOPED_TRACE("max_ratio " + std::to_string(l.max_ratio) + " max_output " + std::to_string(l.max_output));
    DeviceScanResult none, some, all;
    expect_same_as_scan(cases, l, emulated(kSplit, 0), &none);
    expect_same_as_scan(cases, l, emulated(kSplit, 4096), &some);
    expect_same_as_scan(cases, l, emulated(kSplit, UINT64_MAX), &all);
    EXPECT_EQ(none.stats.walk_cpu_blocks, 0u);
    EXPECT_GT(some.stats.walk_cpu_blocks, 0u);
    EXPECT_GT(all.stats.walk_cpu_blocks, 0u);
    EXPECT_EQ(all.stats.layers, 1u);  // the first layer's dispatch only
    EXPECT_LE(some.stats.layers, none.stats.layers);
    EXPECT_LT(all.stats.layers, none.stats.layers);
  }
}

TEST(ScanDevice, WellFormedArchivesDecodeOnTheDevice) {
  const std::vector<Case> cases = scan_cases::well_formed_cases(1, 31);
  ScanLimits l;
  l.max_ratio = 1u << 20;  // zstd's RLE blocks decode to 30000 times their size
  DeviceScanResult r;
  expect_same_as_scan(cases, l, emulated(kAllOnDevice), &r);
  EXPECT_EQ(r.stats.rejected_blocks, 0u);
  EXPECT_EQ(r.stats.cpu_blocks, 0u);
  EXPECT_EQ(r.stats.policy_blocks, 0u);
  EXPECT_EQ(r.stats.unsupported_blocks, 0u);
  EXPECT_GT(r.stats.gpu_bytes, 3 * 300000u + 2 * 200000u + (4u << 17));  // the sizes well_formed_cases(1) takes
  EXPECT_EQ(r.stats.layers, 1u);  // every decoder's blocks of every archive in one round
}

// The split: the inputs whose decode unit reaches cpu_block_bytes go to the
// CPU pool, counted apart from those the device rejects, and the result is
// scan()'s at every threshold.
TEST(ScanDevice, SplitOfWellFormedArchives) {
  const std::vector<Case> cases = scan_cases::well_formed_cases(1, 31);
  ScanLimits l;
  l.max_ratio = 1u << 20;
  DeviceScanResult all_gpu, split, by_default, small, all_cpu;
  expect_same_as_scan(cases, l, emulated(kAllOnDevice), &all_gpu);
  expect_same_as_scan(cases, l, emulated(256u << 10), &split);
  expect_same_as_scan(cases, l, emulated(), &by_default);
  expect_same_as_scan(cases, l, emulated(4096), &small);
  expect_same_as_scan(cases, l, emulated(0), &all_cpu);
  for (const DeviceScanResult* r : {&split, &by_default, &small, &all_cpu}) {
    EXPECT_EQ(r->stats.rejected_blocks, 0u);
    EXPECT_EQ(r->stats.rejected_bytes, 0u);
    EXPECT_GT(r->stats.policy_blocks, 0u);
    EXPECT_EQ(r->stats.cpu_blocks, r->stats.policy_blocks);  // every CPU input is the split's
    EXPECT_EQ(r->stats.cpu_bytes, r->stats.policy_bytes);
    EXPECT_EQ(r->stats.layers, 1u);
  }
  // 256 KiB sends the 300 KB gzip member, ZIP entry and tar.gz to the CPU;
  // the 64 KiB LZ4 blocks and the zstd raw and RLE blocks stay.
  EXPECT_EQ(split.stats.policy_blocks, 3u);
  EXPECT_GE(split.stats.policy_bytes, 3 * 300000u);
  EXPECT_GT(split.stats.gpu_blocks, 0u);
  EXPECT_GE(small.stats.policy_blocks, split.stats.policy_blocks);
  EXPECT_GE(all_cpu.stats.policy_blocks, small.stats.policy_blocks);
  EXPECT_LT(all_cpu.stats.gpu_blocks, split.stats.gpu_blocks);
  EXPECT_LT(split.stats.gpu_blocks, all_gpu.stats.gpu_blocks);
  // Every byte is decoded once, on one side or the other.
  EXPECT_GE(by_default.stats.policy_blocks, split.stats.policy_blocks);  // 32 KiB
  for (const DeviceScanResult* r : {&split, &by_default, &small, &all_cpu}) {
    EXPECT_EQ(r->stats.gpu_bytes + r->stats.cpu_bytes, all_gpu.stats.gpu_bytes);
  }
}

// A batch whose CPU pool outputs are large (every decode unit on the CPU,
// 22 MB of them) gives scan()'s bytes.
TEST(ScanDevice, LargeCpuPoolOutputsEqualScan) {
  const std::vector<Case> cases = scan_cases::well_formed_cases(16, 47);
  ScanLimits l;
  l.max_ratio = 1u << 20;
  DeviceScanResult r;
  expect_same_as_scan(cases, l, emulated(0), &r);
  EXPECT_EQ(r.stats.cpu_blocks, r.stats.policy_blocks);
  EXPECT_GT(r.stats.policy_bytes, 20u << 20);
}

TEST(ScanDevice, SplitOfEveryArchiveEqualsScan) {
  const std::vector<Case> cases = all_cases();
  for (const std::uint64_t threshold : {std::uint64_t{0}, std::uint64_t{4096}, kAllOnDevice}) {
    for (const ScanLimits& l : all_limits()) {
      SCOPED_TRACE("cpu_block_bytes " + std::to_string(threshold) + " max_ratio " + std::to_string(l.max_ratio) +
                   " max_output " + std::to_string(l.max_output));
      DeviceScanResult r;
      expect_same_as_scan(cases, l, emulated(threshold), &r);
      if (threshold == kAllOnDevice) {
        EXPECT_EQ(r.stats.policy_blocks, 0u);
      } else {
        EXPECT_GT(r.stats.policy_blocks, 0u);
      }
      EXPECT_LE(r.stats.policy_bytes + r.stats.rejected_bytes, r.stats.cpu_bytes);
    }
  }
  // Each hostile archive alone, split at every decode unit and not at all.
  for (const Case& c : cases) {
    for (const std::uint64_t threshold : {std::uint64_t{0}, std::uint64_t{1}, kAllOnDevice}) {
      SCOPED_TRACE(c.name + " cpu_block_bytes " + std::to_string(threshold));
      expect_same_as_scan({c}, all_limits()[1], emulated(threshold));
    }
  }
}

TEST(ScanDevice, ArchiveAlreadyInDeviceMemory) {
  const std::vector<Case> cases = all_cases();
  for (const Case& c : cases) {
    ScanResult want;
    (void)scan({c.bytes.data(), c.bytes.size()}, c.name, {}, &want);
    DeviceScanResult got;
    (void)scan_device_archive(c.bytes.data(), c.bytes.size(), c.name, {}, emulated(), &got);
    scan_cases::expect_phases_add_up(got.stats);
    ASSERT_EQ(got.entries.size(), want.entries.size()) << c.name;
    Bytes bytes;
    ASSERT_TRUE(got.copy_to_host(&bytes).ok());
    EXPECT_EQ(bytes, want.bytes) << c.name;
  }
}

TEST(ScanDevice, ArgumentsAndMoves) {
  DeviceScanResult r;
  EXPECT_EQ(scan_to_device({}, {}, emulated(), nullptr).code, StatusCode::invalid_argument);
  const ScanInput bad{{nullptr, 5}, "x"};
  EXPECT_EQ(scan_to_device({&bad, 1}, {}, emulated(), &r).code, StatusCode::invalid_argument);
  ASSERT_TRUE(scan_to_device({}, {}, emulated(), &r).ok());
  EXPECT_TRUE(r.entries.empty());
  EXPECT_EQ(r.size(), 0u);
  const Bytes gz = scan_cases::gzip(test::text_like_bytes(1000, 33));
  const ScanInput one{{gz.data(), gz.size()}, "one.gz"};
  ASSERT_TRUE(scan_to_device({&one, 1}, {}, emulated(), &r).ok());
  DeviceScanResult moved = std::move(r);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(moved.size(), 1000u);
  ASSERT_EQ(moved.entries.size(), 1u);
  EXPECT_EQ(moved.entries[0].path, "one");
  Bytes back;
  ASSERT_TRUE(moved.copy_to_host(&back).ok());
  EXPECT_EQ(back, test::text_like_bytes(1000, 33));
}

}  // namespace
}  // namespace tandem
