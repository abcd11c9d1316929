// The shared worker pools behind parallel_for and parallel_for_background
// (see thread_pool.hpp).
//
// Workers sleep on one condition variable and wake when a job is queued. A job
// owns an atomic item counter; every participant (the caller and up to
// max_threads - 1 workers) claims items until none are left. The caller waits
// for the count of finished items, so a job ends only when all fn(i) returned.
#include "common/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
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
  int helpers_joined = 0;  // guarded by the pool mutex
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> finished{0};
  std::mutex m;
  std::condition_variable cv;
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
    if (ran != 0 && finished.fetch_add(ran, std::memory_order_acq_rel) + ran == n) {
      std::lock_guard<std::mutex> lock(m);
      cv.notify_all();
    }
  }
};

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
    if (job.helpers_wanted > 0) {
      std::lock_guard<std::mutex> lock(m_);
      grow(job.helpers_wanted);
      queue_.push_back(&job);
      cv_.notify_all();
    }
    t_inside_parallel = true;
    job.work();
    t_inside_parallel = false;
    if (job.helpers_wanted > 0) {
      std::lock_guard<std::mutex> lock(m_);
      queue_.erase(std::remove(queue_.begin(), queue_.end(), &job), queue_.end());
    }
    {
      std::unique_lock<std::mutex> lock(job.m);
      job.cv.wait(lock, [&] { return job.finished.load(std::memory_order_acquire) == job.n; });
    }
    // Workers that joined may still be inside work(), one of them perhaps about
    // to take job.m for its notify (so job.m must be free now); wait until they
    // have all left before the job goes out of scope.
    std::unique_lock<std::mutex> pool_lock(m_);
    left_cv_.wait(pool_lock, [&] { return active_on(&job) == 0; });
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  explicit Pool(int nice) : nice_(nice) {}

  // Caller holds m_.
  void grow(int wanted) {
    wanted = std::min(wanted, kMaxThreads);
    while (static_cast<int>(workers_.size()) < wanted) {
      workers_.emplace_back([this] { loop(); });
      workers_.back().detach();
    }
  }

  int active_on(const Job* job) const {
    int k = 0;
    for (const Job* j : running_) k += (j == job);
    return k;
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
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      Job* job = nullptr;
      cv_.wait(lock, [&] {
        for (Job* j : queue_) {
          if (j->helpers_joined < j->helpers_wanted && j->next.load(std::memory_order_relaxed) < j->n) {
            job = j;
            return true;
          }
        }
        return false;
      });
      ++job->helpers_joined;
      running_.push_back(job);
      lock.unlock();
      job->work();
      lock.lock();
      running_.erase(std::find(running_.begin(), running_.end(), job));
      left_cv_.notify_all();
    }
  }

  const int nice_;  // added to the workers' nice value
  std::mutex m_;
  std::condition_variable cv_;
  std::condition_variable left_cv_;
  std::deque<Job*> queue_;
  std::vector<Job*> running_;
  std::vector<std::thread> workers_;
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
