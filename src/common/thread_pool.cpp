// The shared worker pools behind parallel_for and parallel_for_background
// (see thread_pool.hpp).
//
// Workers sleep on an epoch counter and wake when a job is published (see
// Pool). A job owns an atomic item counter; every participant (the caller and
// up to max_threads - 1 workers) claims items until none are left. The caller
// waits for the count of finished items, so a job ends only when all fn(i)
// returned.
#include "common/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "tandem/tandem.hpp"

namespace tandem {

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

namespace detail {
namespace {

constexpr int kMaxThreads = 256;
// The background pool's workers run this much nicer than the process.
constexpr int kBackgroundNice = 10;
thread_local bool t_inside_parallel = false;

struct Job {
  const std::function<void(std::size_t)>* fn = nullptr;
  std::size_t n = 0;
  int helpers_wanted = 0;
  std::atomic<int> helpers_joined{0};
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> finished{0};
  std::mutex m;
  std::exception_ptr error;  // first exception thrown by fn, guarded by m

  // Claims and runs items until none are left.
  void work() {
    std::size_t ran = 0;
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      try {
        (*fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!error) error = std::current_exception();
      }
      ++ran;
    }
    if (ran != 0 && finished.fetch_add(ran, std::memory_order_acq_rel) + ran == n) finished.notify_all();
  }
};

// How long a worker that found no job looks for the next before it sleeps
// (yielding its core to any thread that wants it): a caller's next
// parallel_for often comes that soon, and a sleeping worker takes tens of
// microseconds to wake.
constexpr auto kIdleSpin = std::chrono::microseconds(20);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A job is published in a slot, which workers find without a lock: a
// worker takes a reference on the slot, reads the job there and joins it if
// it still wants helpers; the caller empties the slot once its items are
// finished and returns only when no worker holds a reference (so no worker
// touches a job after its call returned). Sleeping workers wait on an epoch
// counter that each publication bumps: one wake of all, and no lock they
// then queue on.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool(0);  // never destroyed: workers may outlive static destructors
    return *pool;
  }
  static Pool& background() {
    static Pool* pool = new Pool(kBackgroundNice);
    return *pool;
  }

  void run(Job& job, int threads) {
    job.helpers_wanted = threads - 1;
    int slot = -1;
    if (job.helpers_wanted > 0) {
      grow(job.helpers_wanted);
      for (int s = 0; s < kSlots && slot < 0; ++s) {
        Job* empty = nullptr;
        if (slots_[s].compare_exchange_strong(empty, &job)) slot = s;
      }
      // (Every slot taken: the caller runs the items alone.)
      if (slot >= 0) {
        epoch_.fetch_add(1);
        epoch_.notify_all();
      }
    }
    t_inside_parallel = true;
    job.work();
    t_inside_parallel = false;
    if (slot >= 0) {
      for (std::size_t f; (f = job.finished.load(std::memory_order_acquire)) != job.n;) {
        job.finished.wait(f, std::memory_order_acquire);
      }
      slots_[slot].store(nullptr);
      for (int r; (r = refs_[slot].load()) != 0;) refs_[slot].wait(r);
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  static constexpr int kSlots = 32;  // jobs running at once, from different threads

  explicit Pool(int nice) : nice_(nice) {}

  void grow(int wanted) {
    wanted = std::min(wanted, kMaxThreads);
    if (started_.load(std::memory_order_acquire) >= wanted) return;
    std::lock_guard<std::mutex> lock(grow_m_);
    for (int k = started_.load(std::memory_order_relaxed); k < wanted; ++k) {
      std::thread([this] { loop(); }).detach();
      started_.store(k + 1, std::memory_order_release);
    }
  }

  // Joins the first published job that still wants helpers and runs its
  // items; whether it found one.
  bool help() {
    for (int s = 0; s < kSlots; ++s) {
      if (!slots_[s].load(std::memory_order_relaxed)) continue;
      refs_[s].fetch_add(1);
      Job* const job = slots_[s].load();
      bool joined = false;
      if (job && job->next.load(std::memory_order_relaxed) < job->n &&
          job->helpers_joined.fetch_add(1, std::memory_order_relaxed) < job->helpers_wanted) {
        job->work();
        joined = true;
      }
      if (refs_[s].fetch_sub(1) == 1) refs_[s].notify_all();
      if (joined) return true;
    }
    return false;
  }

  void loop() {
    t_inside_parallel = true;
#if defined(__linux__)
    // This thread's own nice value (Linux schedules threads alone, and
    // PRIO_PROCESS of 0 or of a thread id names the thread): the creator's
    // plus nice_. A failure leaves it at the creator's.
    if (nice_) {
      const auto self = static_cast<id_t>(syscall(SYS_gettid));
      (void)setpriority(PRIO_PROCESS, self, getpriority(PRIO_PROCESS, self) + nice_);
    }
#endif
    for (;;) {
      const std::uint32_t seen = epoch_.load();
      if (help()) continue;
      bool bumped = false;
      const auto until = std::chrono::steady_clock::now() + kIdleSpin;
      for (int k = 1; !bumped; ++k) {
        cpu_relax();
        bumped = epoch_.load(std::memory_order_relaxed) != seen;
        if (k % 64 == 0) {
          if (std::chrono::steady_clock::now() >= until) break;
          std::this_thread::yield();
        }
      }
      if (!bumped) epoch_.wait(seen);
    }
  }

  const int nice_;  // added to the workers' nice value
  std::atomic<Job*> slots_[kSlots] = {};
  std::atomic<int> refs_[kSlots] = {};
  std::atomic<std::uint32_t> epoch_{0};
  std::atomic<int> started_{0};
  std::mutex grow_m_;
};

}  // namespace

int effective_threads(int requested) {
  if (requested <= 0) return hardware_threads();
  return std::min(requested, kMaxThreads);
}

std::size_t batch_items(int threads) { return 2 * static_cast<std::size_t>(effective_threads(threads)); }

std::size_t max_batch_items(int threads, std::size_t item_size) {
  constexpr std::size_t kMaxBatchBytes = 64u << 20;
  return std::max(batch_items(threads), item_size ? kMaxBatchBytes / item_size : 1);
}

namespace {

void run_on(Pool& pool, std::size_t n, int max_threads, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  int threads = effective_threads(max_threads);
  if (static_cast<std::size_t>(threads) > n) threads = static_cast<int>(n);
  if (threads <= 1 || t_inside_parallel) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  pool.run(job, threads);
}

}  // namespace

void parallel_for(std::size_t n, int max_threads, const std::function<void(std::size_t)>& fn) {
  run_on(Pool::instance(), n, max_threads, fn);
}

void parallel_for_background(std::size_t n, int max_threads, const std::function<void(std::size_t)>& fn) {
  run_on(Pool::background(), n, max_threads, fn);
}

void parallel_copy(const std::vector<Copy>& copies, std::vector<std::size_t>* first_piece) {
  first_piece->assign(copies.size() + 1, 0);
  for (std::size_t i = 0; i < copies.size(); ++i) {
    (*first_piece)[i + 1] = (*first_piece)[i] + (copies[i].size + kCopyPiece - 1) / kCopyPiece;
  }
  const std::vector<std::size_t>& first = *first_piece;
  parallel_for(first.back(), 0, [&](std::size_t p) {
    const std::size_t i = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), p) - first.begin()) - 1;
    const std::size_t offset = (p - first[i]) * kCopyPiece;
    const std::size_t n = std::min(kCopyPiece, copies[i].size - offset);
    std::memcpy(static_cast<std::uint8_t*>(copies[i].dst) + offset,
                static_cast<const std::uint8_t*>(copies[i].src) + offset, n);
  });
}

void parallel_copy(void* dst, const void* src, std::size_t n) {
  std::vector<std::size_t> first_piece;
  parallel_copy({Copy{dst, src, n}}, &first_piece);
}

}  // namespace detail
}  // namespace tandem
