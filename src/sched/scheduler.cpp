// The hybrid scheduler (see scheduler.hpp).
//
// One mutex guards the whole state of a run; nobody holds it while a caller's
// function runs. The calling thread is the reader; it waits on room_cv for
// room under the in-flight limit. Workers wait on work_cv for a chunk they may
// take: CPU workers take handed-back chunks first, then the ready queue when
// the policy lets them; GPU workers take the ready queue only. The writer
// waits on write_cv for the next chunk in order. Every change that can make a
// waiter's condition true notifies its variable, and fail() notifies all, so
// an error wakes every thread and run() joins them.
#include "sched/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "common/thread_pool.hpp"

namespace tandem::sched {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool is_device_fault(const Status& s) {
  return s.code == StatusCode::device_error || s.code == StatusCode::no_device;
}

struct Done {
  Chunk chunk;
  ChunkOutput out;
};

class Run {
 public:
  Run(const SchedulerOptions& options, const Work& work, RunMetrics* metrics)
      : opt_(options), work_(work), m_(*metrics) {}

  Status go();

 private:
  void read();
  void cpu_worker(std::size_t slot);
  void gpu_worker(std::size_t slot, int gpu);
  void writer();

  // All below with mu_ held.
  void fail(const Status& s);
  void fail(std::exception_ptr e);
  void finish(WorkerKind kind, const Chunk& chunk, ChunkOutput&& out, double busy);
  ChunkOutput take_spare();
  void recycle(ChunkOutput&& out);
  bool cpu_may_take() const { return !returned_.empty() || (cpu_enabled_ && !ready_.empty()); }
  bool cpu_finished() const {
    return source_done_ && returned_.empty() && ready_.empty() && gpu_in_hand_ == 0;
  }
  double since_start(Clock::time_point t) const { return seconds(t - start_); }

  const SchedulerOptions& opt_;
  const Work& work_;
  RunMetrics& m_;  // the timeline entries belong to their workers; the rest is under mu_
  Clock::time_point start_ = Clock::now();

  std::mutex mu_;
  std::condition_variable room_cv_, work_cv_, write_cv_;
  std::deque<Chunk> ready_;
  std::deque<Chunk> returned_;  // handed back by a failed GPU, for the CPU only; ascending index
  std::map<std::uint64_t, Done> done_;
  std::vector<ChunkOutput> spare_;
  std::size_t spare_limit_ = 0;
  std::uint64_t held_ = 0;  // input of chunks not yet written + output of chunks done, not yet written
  std::uint64_t pulled_ = 0;
  std::uint64_t bytes_read_ = 0;
  std::uint64_t next_write_ = 0;
  int gpu_in_hand_ = 0;
  bool source_done_ = false;
  bool stop_ = false;
  bool cpu_enabled_ = true;
  bool gpu_eligible_ = false;
  double gpu_alive_seconds_ = 0;
  Status error_;
  std::exception_ptr exception_;
};

void Run::fail(const Status& s) {
  if (!stop_) error_ = s;
  stop_ = true;
  room_cv_.notify_all();
  work_cv_.notify_all();
  write_cv_.notify_all();
}

void Run::fail(std::exception_ptr e) {
  if (!stop_) exception_ = std::move(e);
  fail(Status(StatusCode::invalid_argument, "a callback threw"));
}

ChunkOutput Run::take_spare() {
  if (spare_.empty()) return {};
  ChunkOutput out = std::move(spare_.back());
  spare_.pop_back();
  return out;
}

void Run::recycle(ChunkOutput&& out) {
  out.bytes.clear();
  if (spare_.size() < spare_limit_ && out.bytes.capacity() > 0) spare_.push_back(std::move(out));
}

void Run::finish(WorkerKind kind, const Chunk& chunk, ChunkOutput&& out, double busy) {
  KindMetrics& k = kind == WorkerKind::cpu ? m_.cpu : m_.gpu;
  k.chunks += 1;
  k.bytes_in += chunk.data.size();
  k.bytes_out += out.bytes.size();
  k.busy_seconds += busy;
  if (busy > 0) {
    const double rate = static_cast<double>(chunk.data.size()) / busy;
    k.ewma_bytes_per_second = k.ewma_bytes_per_second == 0
                                  ? rate
                                  : opt_.ewma_alpha * rate + (1 - opt_.ewma_alpha) * k.ewma_bytes_per_second;
  }
  held_ += out.bytes.size();
  const bool next = chunk.index == next_write_;
  done_.emplace(chunk.index, Done{chunk, std::move(out)});
  if (next) write_cv_.notify_one();
}

void Run::read() {
  std::unique_lock lk(mu_);
  const std::uint64_t limit = opt_.max_in_flight_bytes;
  for (;;) {
    const auto w0 = Clock::now();
    room_cv_.wait(lk, [&] { return stop_ || held_ == 0 || (held_ <= limit && limit - held_ >= opt_.chunk_size); });
    m_.read_wait_seconds += seconds(Clock::now() - w0);
    if (stop_) return;
    lk.unlock();
    std::span<const std::uint8_t> data;
    bool end = false;
    Status st;
    std::exception_ptr ex;
    try {
      st = work_.source(&data, &end);
    } catch (...) {
      ex = std::current_exception();
    }
    lk.lock();
    if (ex) return fail(std::move(ex));
    if (!st.ok()) return fail(st);
    if (stop_) return;
    if (end) {
      source_done_ = true;
      work_cv_.notify_all();
      write_cv_.notify_all();
      return;
    }
    if (data.size() > opt_.chunk_size) {
      return fail(Status(StatusCode::invalid_argument, "the source returned a chunk larger than chunk_size"));
    }
    ready_.push_back(Chunk{pulled_++, bytes_read_, data});
    bytes_read_ += data.size();
    held_ += data.size();
    if (opt_.policy == Policy::automatic && bytes_read_ >= opt_.cpu_only_below) gpu_eligible_ = true;
    work_cv_.notify_all();
  }
}

void Run::cpu_worker(std::size_t slot) {
  std::vector<Span>& spans = m_.timeline[slot].spans;
  std::unique_lock lk(mu_);
  for (;;) {
    const auto w0 = Clock::now();
    work_cv_.wait(lk, [&] { return stop_ || cpu_may_take() || cpu_finished(); });
    m_.cpu.queue_wait_seconds += seconds(Clock::now() - w0);
    if (stop_ || !cpu_may_take()) return;
    std::deque<Chunk>& q = returned_.empty() ? ready_ : returned_;
    const Chunk chunk = q.front();
    q.pop_front();
    ChunkOutput out = take_spare();
    lk.unlock();

    const auto t0 = Clock::now();
    Status st;
    std::exception_ptr ex;
    try {
      st = work_.cpu(chunk, &out);
    } catch (...) {
      ex = std::current_exception();
    }
    const auto t1 = Clock::now();
    spans.push_back(Span{chunk.index, since_start(t0), since_start(t1), false});

    lk.lock();
    if (ex) return fail(std::move(ex));
    if (!st.ok()) return fail(st);
    if (stop_) return;
    finish(WorkerKind::cpu, chunk, std::move(out), seconds(t1 - t0));
  }
}

void Run::gpu_worker(std::size_t slot, int gpu) {
  std::vector<Span>& spans = m_.timeline[slot].spans;
  const auto born = Clock::now();
  std::uint64_t chunks_done = 0;
  std::unique_lock lk(mu_);
  for (;;) {
    const auto w0 = Clock::now();
    work_cv_.wait(lk, [&] {
      return stop_ || (gpu_eligible_ && !ready_.empty()) || (source_done_ && (ready_.empty() || !gpu_eligible_));
    });
    m_.gpu.queue_wait_seconds += seconds(Clock::now() - w0);
    if (stop_ || !gpu_eligible_ || ready_.empty()) break;
    const Chunk chunk = ready_.front();
    ready_.pop_front();
    ++gpu_in_hand_;
    ChunkOutput out = take_spare();
    lk.unlock();

    const auto t0 = Clock::now();
    Status st;
    std::string thrown;
    try {
      st = work_.gpu(gpu, chunk, &out);
    } catch (const std::exception& e) {
      st = Status(StatusCode::device_error);
      thrown = e.what();
    } catch (...) {
      st = Status(StatusCode::device_error);
      thrown = "an exception";
    }
    const auto t1 = Clock::now();
    const bool fault = is_device_fault(st);
    spans.push_back(Span{chunk.index, since_start(t0), since_start(t1), fault});

    lk.lock();
    --gpu_in_hand_;
    if (fault) {
      m_.gpu.busy_seconds += seconds(t1 - t0);
      if (!stop_) {
        returned_.insert(std::upper_bound(returned_.begin(), returned_.end(), chunk,
                                          [](const Chunk& a, const Chunk& b) { return a.index < b.index; }),
                         chunk);
        cpu_enabled_ = true;
        work_cv_.notify_all();
      }
      std::string w = "GPU " + std::to_string(gpu) + ": " + (thrown.empty() ? st.to_string() : "threw " + thrown) +
                      "; stopped after " + std::to_string(chunks_done) + " chunks and handed 1 chunk back to the CPU";
      m_.warnings.push_back(std::move(w));
      break;
    }
    if (!st.ok()) {
      fail(st);
      break;
    }
    if (stop_) break;
    ++chunks_done;
    finish(WorkerKind::gpu, chunk, std::move(out), seconds(t1 - t0));
    if (source_done_ && gpu_in_hand_ == 0) work_cv_.notify_all();  // the CPU workers may be done
  }
  gpu_alive_seconds_ += seconds(Clock::now() - born);
  if (source_done_ && gpu_in_hand_ == 0) work_cv_.notify_all();
}

void Run::writer() {
  std::unique_lock lk(mu_);
  for (;;) {
    const auto w0 = Clock::now();
    write_cv_.wait(lk, [&] {
      return stop_ || done_.count(next_write_) != 0 || (source_done_ && next_write_ == pulled_);
    });
    m_.writer_wait_seconds += seconds(Clock::now() - w0);
    if (stop_) return;
    const auto it = done_.find(next_write_);
    if (it == done_.end()) return;  // everything written
    Done d = std::move(it->second);
    done_.erase(it);
    const std::size_t out_size = d.out.bytes.size();
    lk.unlock();

    Status st;
    std::exception_ptr ex;
    try {
      st = work_.sink(d.chunk, std::move(d.out));
    } catch (...) {
      ex = std::current_exception();
    }

    lk.lock();
    if (ex) return fail(std::move(ex));
    if (!st.ok()) return fail(st);
    held_ -= d.chunk.data.size() + out_size;
    m_.chunks += 1;
    m_.bytes_in += d.chunk.data.size();
    m_.bytes_out += out_size;
    ++next_write_;
    recycle(std::move(d.out));
    room_cv_.notify_one();
  }
}

Status Run::go() {
  const int cpu_workers = detail::effective_threads(opt_.cpu_workers);
  int gpu_workers = opt_.policy == Policy::cpu ? 0 : opt_.gpu_workers;
  if (opt_.policy == Policy::automatic) {
    const bool known_small = opt_.input_size != kUnknownSize && opt_.input_size < opt_.cpu_only_below;
    if (known_small) gpu_workers = 0;
    gpu_eligible_ = opt_.cpu_only_below == 0 ||
                    (opt_.input_size != kUnknownSize && opt_.input_size >= opt_.cpu_only_below);
  } else if (opt_.policy == Policy::gpu) {
    gpu_eligible_ = true;
    cpu_enabled_ = gpu_workers == 0;
    if (gpu_workers == 0) m_.warnings.emplace_back("policy gpu, but no GPU workers: the CPU workers ran the input");
  }
  spare_limit_ = static_cast<std::size_t>(cpu_workers + gpu_workers) + 1;

  m_.timeline.clear();
  for (int i = 0; i < cpu_workers; ++i) m_.timeline.push_back(WorkerTimeline{WorkerKind::cpu, i, {}});
  for (int g = 0; g < gpu_workers; ++g) m_.timeline.push_back(WorkerTimeline{WorkerKind::gpu, g, {}});

  std::vector<std::thread> threads;
  threads.reserve(m_.timeline.size() + 1);
  try {
    threads.emplace_back([this] { writer(); });
    for (int i = 0; i < cpu_workers; ++i) threads.emplace_back([this, i] { cpu_worker(static_cast<std::size_t>(i)); });
    for (int g = 0; g < gpu_workers; ++g) {
      threads.emplace_back([this, g, cpu_workers] { gpu_worker(static_cast<std::size_t>(cpu_workers + g), g); });
    }
  } catch (const std::system_error&) {
    std::lock_guard lk(mu_);
    fail(Status(StatusCode::out_of_memory, "could not start the scheduler's threads"));
  }
  read();
  for (std::thread& t : threads) t.join();

  // Every thread is joined: the state is ours alone.
  m_.wall_seconds = seconds(Clock::now() - start_);
  m_.queue_wait_seconds = m_.cpu.queue_wait_seconds + m_.gpu.queue_wait_seconds;
  m_.gpu_idle_seconds = std::max(0.0, gpu_alive_seconds_ - m_.gpu.busy_seconds);
  if (exception_) std::rethrow_exception(exception_);
  return error_;
}

}  // namespace

Status run(const SchedulerOptions& options, const Work& work, RunMetrics* metrics) {
  RunMetrics local;
  RunMetrics* m = metrics ? metrics : &local;
  *m = RunMetrics{};
  if (!work.source || !work.cpu || !work.sink) {
    return Status(StatusCode::invalid_argument, "the scheduler needs a source, a CPU function and a sink");
  }
  if (options.policy != Policy::cpu && options.gpu_workers > 0 && !work.gpu) {
    return Status(StatusCode::invalid_argument, "GPU workers without a GPU function");
  }
  if (options.cpu_workers < 0 || options.gpu_workers < 0 || options.chunk_size == 0 ||
      options.max_in_flight_bytes == 0 || !(options.ewma_alpha > 0 && options.ewma_alpha <= 1)) {
    return Status(StatusCode::invalid_argument, "bad scheduler options");
  }
  Run r(options, work, m);
  return r.go();
}

std::function<Status(std::span<const std::uint8_t>*, bool*)> memory_source(std::span<const std::uint8_t> input,
                                                                             std::size_t chunk_size) {
  return [input, chunk_size, pos = std::size_t{0}](std::span<const std::uint8_t>* data, bool* end) mutable {
    if (chunk_size == 0) return Status(StatusCode::invalid_argument, "chunk size 0");
    *end = pos == input.size();
    if (!*end) {
      const std::size_t n = std::min(chunk_size, input.size() - pos);
      *data = input.subspan(pos, n);
      pos += n;
    }
    return Status();
  };
}

}  // namespace tandem::sched
