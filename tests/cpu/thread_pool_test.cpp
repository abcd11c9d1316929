// The worker pools: parallel_for and parallel_for_background run every item
// once, on the threads asked for, nested calls run serially, and the
// background pool's workers run at a lower OS priority than the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/thread_pool.hpp"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace {

using ParallelFor = void (*)(std::size_t, int, const std::function<void(std::size_t)>&);

struct Pools : testing::TestWithParam<ParallelFor> {};

TEST_P(Pools, EachItemRunsOnce) {
  const ParallelFor run = GetParam();
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{10000}}) {
    for (const int threads : {0, 1, 3}) {
      std::vector<std::atomic<int>> seen(n);
      run(n, threads, [&](std::size_t i) { seen[i].fetch_add(1, std::memory_order_relaxed); });
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << "n " << n << " threads " << threads << " item " << i;
    }
  }
}

TEST_P(Pools, NoMoreThreadsThanAsked) {
  const ParallelFor run = GetParam();
  std::mutex m;
  std::set<std::thread::id> ids;
  run(64, 3, [&](std::size_t) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    const std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_GE(ids.size(), 1u);
  EXPECT_LE(ids.size(), 3u);
}

TEST_P(Pools, NestedCallsRunOnTheirThread) {
  const ParallelFor run = GetParam();
  std::atomic<int> total{0};
  run(8, 4, [&](std::size_t) {
    const std::thread::id outer = std::this_thread::get_id();
    tandem::detail::parallel_for(5, 4, [&](std::size_t) {
      EXPECT_EQ(std::this_thread::get_id(), outer);
      total.fetch_add(1, std::memory_order_relaxed);
    });
  });
  EXPECT_EQ(total.load(), 40);
}

INSTANTIATE_TEST_SUITE_P(ThreadPool, Pools,
                         testing::Values(&tandem::detail::parallel_for, &tandem::detail::parallel_for_background),
                         [](const testing::TestParamInfo<ParallelFor>& p) {
                           return p.param == &tandem::detail::parallel_for ? "Shared" : "Background";
                         });

// A long background job and short shared jobs at once, from two threads:
// both finish, every item once.
TEST(ThreadPool, BackgroundAndSharedJobsAtOnce) {
  std::vector<std::atomic<int>> long_items(200);
  auto background = std::async(std::launch::async, [&] {
    tandem::detail::parallel_for_background(long_items.size(), 0, [&](std::size_t i) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      long_items[i].fetch_add(1, std::memory_order_relaxed);
    });
  });
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> items(300);
    tandem::detail::parallel_for(items.size(), 0, [&](std::size_t i) { items[i].fetch_add(1); });
    for (std::size_t i = 0; i < items.size(); ++i) ASSERT_EQ(items[i].load(), 1) << "round " << round;
  }
  background.get();
  for (std::size_t i = 0; i < long_items.size(); ++i) ASSERT_EQ(long_items[i].load(), 1);
}

#if defined(__linux__)
int thread_nice() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

// The nice values of the workers (not the caller) that ran items of a job of
// 64 items of 0.5 ms.
std::vector<int> worker_nices(ParallelFor run) {
  const std::thread::id me = std::this_thread::get_id();
  std::mutex m;
  std::vector<int> nices;
  run(64, 4, [&](std::size_t) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    if (std::this_thread::get_id() == me) return;
    const int nice = thread_nice();
    const std::lock_guard<std::mutex> lock(m);
    nices.push_back(nice);
  });
  return nices;
}

// Items the background pool's workers run see a higher nice value than the
// caller's (the lowest priority, 19, caps it); the shared pool's workers
// keep the process's.
TEST(ThreadPool, BackgroundWorkersAreNicer) {
  const int caller = thread_nice();
  if (caller >= 19) GTEST_SKIP() << "this process already runs at the lowest priority (nice 19)";
  const std::vector<int> background = worker_nices(&tandem::detail::parallel_for_background);
  ASSERT_FALSE(background.empty()) << "no worker took an item";
  for (const int n : background) EXPECT_GT(n, caller);
  for (const int n : worker_nices(&tandem::detail::parallel_for)) EXPECT_EQ(n, caller);
}
#endif

}  // namespace
