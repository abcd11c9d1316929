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

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

#include "common/thread_pool.hpp"
#include "sched/timeline_svg.hpp"

namespace tandem::sched {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool is_device_fault(const Status& s) {
  return s.code == StatusCode::device_error || s.code == StatusCode::no_device;
}

double ewma(double old, double sample, double alpha) { return old == 0 ? sample : alpha * sample + (1 - alpha) * old; }

// A GPU's batches whose rate the CPU workers do not trust. Measured on the
// H100 (silesia7 to 4.3 GB, auto compression against the sum of cpu and
// gpu, one call): 0 batches 0.90, 1 0.90, 2 0.93.
constexpr int kGpuWarmBatches = 2;

// How much a CPU worker beside a GPU lowers its thread's priority (nice
// steps). The GPU worker's thread must run the moment a batch is done, to
// queue the next copies; with every core busy decoding it waits instead.
// Measured on the H100 (same input, auto against the sum of cpu and gpu,
// compression / decompression): in one call nice 0 0.90 / 0.81 and nice 5
// 0.89 / 0.85; in another nice 5 0.94 / 0.86 and nice 10 0.92 / 0.82.
constexpr int kCpuNiceBesideGpu = 5;

void yield_to_gpus() {
#if defined(__linux__)
  // On Linux a thread has a nice value of its own; raising it needs no
  // privilege. Where it fails the worker runs as it is.
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0) (void)::setpriority(PRIO_PROCESS, tid, std::min(19, nice + kCpuNiceBesideGpu));
#endif
}

// A GPU worker's batch in flight.
struct Batch {
  std::vector<Chunk> chunks;
  std::uint64_t bytes = 0;
  Clock::time_point submitted;
};

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
  void cpu_worker(std::size_t slot, bool beside_gpu);
  void gpu_worker(std::size_t slot, int gpu);
  void writer();
  Status run_inline();

  // All below with mu_ held.
  void fail(const Status& s);
  void fail(std::exception_ptr e);
  void finish(WorkerKind kind, const Chunk& chunk, ChunkOutput&& out);
  void hand_back(const std::vector<Chunk>& chunks);
  ChunkOutput take_spare();
  void recycle(ChunkOutput&& out);
  bool cpu_may_take() const;
  bool cpu_finished() const {
    return source_done_ && returned_.empty() && ready_.empty() && gpu_in_hand_ == 0;
  }
  // The ready queue's first chunk, or its last.
  Chunk pop_ready(bool back = false) {
    Chunk c = back ? ready_.back() : ready_.front();
    back ? ready_.pop_back() : ready_.pop_front();
    ready_bytes_ -= c.data.size();
    return c;
  }
  // While a GPU worker runs, CPU workers take the ready queue's last chunk:
  // the GPU takes batches from the front, so the output the writer waits
  // for is the GPU's, and a CPU chunk (a slow one) is done long before the
  // writer gets to it.
  bool cpu_from_back() const { return gpus_alive_ > 0 && gpu_eligible_; }
  double since_start(Clock::time_point t) const { return seconds(t - start_); }

  const SchedulerOptions& opt_;
  const Work& work_;
  RunMetrics& m_;  // the timeline entries belong to their workers; the rest is under mu_
  Clock::time_point start_ = Clock::now();
  std::uint64_t limit_ = 0;

  std::mutex mu_;
  std::condition_variable room_cv_, work_cv_, write_cv_;
  std::deque<Chunk> ready_;
  std::uint64_t ready_bytes_ = 0;
  std::deque<Chunk> returned_;  // handed back by a failed GPU, for the CPU only; ascending index
  std::map<std::uint64_t, Done> done_;
  std::vector<ChunkOutput> spare_;
  std::size_t spare_limit_ = 0;
  std::uint64_t held_ = 0;  // input of chunks not yet written + output of chunks done, not yet written
  std::uint64_t pulled_ = 0;
  std::uint64_t bytes_read_ = 0;
  std::uint64_t next_write_ = 0;
  std::uint64_t gpu_in_hand_ = 0;  // chunks in GPU workers' batches
  int gpus_alive_ = 0;  // counted from before the threads start, so that no CPU worker takes the front first
  double gpu_rate_ = 0;  // the GPU workers' smoothed rates, summed
  bool source_done_ = false;
  bool reader_blocked_ = false;
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
  out.clear();
  if (spare_.size() < spare_limit_ && out.bytes.capacity() > 0) spare_.push_back(std::move(out));
}

// The end of the input: a CPU worker leaves the ready queue to the GPU
// workers when they would empty it sooner than it would finish one chunk.
bool Run::cpu_may_take() const {
  if (!returned_.empty()) return true;
  if (!cpu_enabled_ || ready_.empty()) return false;
  if (!cpu_from_back()) return true;
  // Beside a GPU, a CPU worker takes the last chunk only when it would
  // finish it before the GPUs, taking the queue from the front, got there:
  // else the writer, and every GPU output behind that chunk, would wait for
  // it. Until a GPU has finished a batch its rate is unknown, and the CPU
  // waits for it (a few milliseconds). Until a CPU worker has finished a
  // chunk, one is taken to be kCpuGuess times slower than the GPUs: LZ4 on
  // one core of the H100's host runs some 120 times slower than the H100
  // compressing (25 times decoding), and first chunks, on cold memory,
  // slower still. Measured there (silesia7 to 4.3 GB, auto compression,
  // GB/s per run): a guess of 32: 37.8, 44.9, 46.4, 46.3, 34.3; of 128:
  // 44.5, 45.1, 46.3, 45.9, 47.2.
  constexpr double kCpuGuess = 128;
  if (gpu_rate_ <= 0) return false;
  const double cpu_rate = m_.cpu.ewma_bytes_per_second > 0 ? m_.cpu.ewma_bytes_per_second : gpu_rate_ / kCpuGuess;
  const Chunk& last = ready_.back();
  const double cpu_time = static_cast<double>(last.data.size()) / cpu_rate;
  const double gpu_time = static_cast<double>(ready_bytes_ - last.data.size()) / gpu_rate_;
  return cpu_time <= gpu_time;
}

void Run::finish(WorkerKind kind, const Chunk& chunk, ChunkOutput&& out) {
  KindMetrics& k = kind == WorkerKind::cpu ? m_.cpu : m_.gpu;
  k.chunks += 1;
  k.bytes_in += chunk.data.size();
  k.bytes_out += out.size();
  held_ += out.held();
  const bool next = chunk.index == next_write_;
  done_.emplace(chunk.index, Done{chunk, std::move(out)});
  if (next) write_cv_.notify_one();
}

void Run::hand_back(const std::vector<Chunk>& chunks) {
  if (stop_) return;
  for (const Chunk& chunk : chunks) {
    returned_.insert(std::upper_bound(returned_.begin(), returned_.end(), chunk,
                                      [](const Chunk& a, const Chunk& b) { return a.index < b.index; }),
                     chunk);
  }
  cpu_enabled_ = true;
  work_cv_.notify_all();
}

void Run::read() {
  std::unique_lock lk(mu_);
  for (;;) {
    const auto w0 = Clock::now();
    auto room = [&] { return stop_ || held_ == 0 || (held_ <= limit_ && limit_ - held_ >= opt_.chunk_size); };
    if (!room()) {
      reader_blocked_ = true;
      work_cv_.notify_all();  // a GPU worker may take a short batch now
      room_cv_.wait(lk, room);
      reader_blocked_ = false;
    }
    m_.read_wait_seconds += seconds(Clock::now() - w0);
    if (stop_) return;
    lk.unlock();
    SourceChunk next;
    bool end = false;
    Status st;
    std::exception_ptr ex;
    try {
      st = work_.source(&next, &end);
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
    if (next.data.size() > opt_.chunk_size) {
      return fail(Status(StatusCode::invalid_argument, "the source returned a chunk larger than chunk_size"));
    }
    ready_.push_back(Chunk{pulled_++, bytes_read_, next.data, next.note});
    ready_bytes_ += next.data.size();
    bytes_read_ += next.data.size();
    held_ += next.data.size();
    if (opt_.policy == Policy::automatic && bytes_read_ >= opt_.cpu_only_below) gpu_eligible_ = true;
    work_cv_.notify_all();
  }
}

void Run::cpu_worker(std::size_t slot, bool beside_gpu) {
  std::vector<Span>& spans = m_.timeline[slot].spans;
  if (beside_gpu) yield_to_gpus();
  std::unique_lock lk(mu_);
  for (;;) {
    const auto w0 = Clock::now();
    work_cv_.wait(lk, [&] { return stop_ || cpu_may_take() || cpu_finished(); });
    m_.cpu.queue_wait_seconds += seconds(Clock::now() - w0);
    if (stop_ || !cpu_may_take()) return;
    Chunk chunk;
    if (!returned_.empty()) {
      chunk = returned_.front();
      returned_.pop_front();
    } else {
      chunk = pop_ready(cpu_from_back());
    }
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
    spans.push_back(Span{chunk.index, 1, since_start(t0), since_start(t1), false});

    lk.lock();
    if (ex) return fail(std::move(ex));
    if (!st.ok()) return fail(st);
    if (stop_) return;
    const double busy = seconds(t1 - t0);
    m_.cpu.busy_seconds += busy;
    if (busy > 0) {
      m_.cpu.ewma_bytes_per_second =
          ewma(m_.cpu.ewma_bytes_per_second, static_cast<double>(chunk.data.size()) / busy, opt_.ewma_alpha);
    }
    finish(WorkerKind::cpu, chunk, std::move(out));
  }
}

void Run::gpu_worker(std::size_t slot, int gpu) {
  std::vector<Span>& spans = m_.timeline[slot].spans;
  // This GPU's three device rows, after every worker's row.
  const std::size_t device_row = slot - static_cast<std::size_t>(gpu) + static_cast<std::size_t>(m_.gpu_workers) +
                                 3 * static_cast<std::size_t>(gpu);
  GpuQueue& queue = *work_.gpus[static_cast<std::size_t>(gpu)];
  const auto born = Clock::now();
  std::deque<Batch> flight;
  std::vector<ChunkOutput> outs;
  std::uint64_t chunks_done = 0;
  double rate = 0;  // this worker's share of gpu_rate_
  int batches_done = 0;
  Clock::time_point last_done = born;
  const std::size_t depth = static_cast<std::size_t>(std::max(1, queue.depth()));
  const std::uint64_t target = std::max<std::uint64_t>(queue.batch_bytes(), 1);

  std::unique_lock lk(mu_);
  // A batch is taken when there is room in flight and either a full batch is
  // ready, or no more can come soon (the source is done or waits for room).
  auto can_submit = [&] {
    return gpu_eligible_ && !ready_.empty() && flight.size() < depth &&
           (ready_bytes_ >= target || source_done_ || reader_blocked_ || flight.empty());
  };
  auto fault = [&](const Status& st, const std::string& thrown, std::vector<Chunk> extra) {
    std::uint64_t back = extra.size();
    for (const Batch& b : flight) {
      extra.insert(extra.end(), b.chunks.begin(), b.chunks.end());
      back += b.chunks.size();
    }
    const double now = since_start(Clock::now());
    for (const Batch& b : flight) {
      spans.push_back(Span{b.chunks.front().index, b.chunks.size(), since_start(b.submitted), now, true});
    }
    gpu_in_hand_ -= back;
    hand_back(extra);
    std::string w = "GPU " + std::to_string(gpu) + ": " + (thrown.empty() ? st.to_string() : "threw " + thrown) +
                    "; stopped after " + std::to_string(chunks_done) + " chunks and handed " + std::to_string(back) +
                    " chunk" + (back == 1 ? "" : "s") + " back to the CPU";
    m_.warnings.push_back(std::move(w));
    flight.clear();
    lk.unlock();
    try {
      queue.abandon();
    } catch (...) {
    }
    lk.lock();
  };
  auto guarded = [](auto&& call, std::string* thrown) {
    try {
      return call();
    } catch (const std::exception& e) {
      *thrown = e.what();
    } catch (...) {
      *thrown = "an exception";
    }
    return Status(StatusCode::device_error);
  };

  for (;;) {
    const auto w0 = Clock::now();
    work_cv_.wait(lk, [&] {
      return stop_ || can_submit() || !flight.empty() || (source_done_ && (ready_.empty() || !gpu_eligible_));
    });
    m_.gpu.queue_wait_seconds += seconds(Clock::now() - w0);
    if (stop_) break;
    if (can_submit()) {
      Batch b;
      // Consecutive chunks only: a CPU worker may have taken one from between.
      while (!ready_.empty() && (b.chunks.empty() || (b.bytes + ready_.front().data.size() <= target &&
                                                      ready_.front().index == b.chunks.back().index + 1))) {
        b.chunks.push_back(pop_ready());
        b.bytes += b.chunks.back().data.size();
      }
      gpu_in_hand_ += b.chunks.size();
      work_cv_.notify_all();  // the CPU workers' end-of-input rule looks at the ready queue
      lk.unlock();
      b.submitted = Clock::now();
      std::string thrown;
      const Status st = guarded([&] { return queue.submit(b.chunks); }, &thrown);
      lk.lock();
      if (is_device_fault(st)) {
        fault(st, thrown, b.chunks);
        break;
      }
      if (!st.ok()) {
        fail(st);
        break;
      }
      flight.push_back(std::move(b));
      continue;
    }
    if (flight.empty()) break;  // the source is done and nothing is left for the GPU

    Batch& b = flight.front();
    outs.resize(b.chunks.size());
    for (ChunkOutput& o : outs) o = take_spare();
    lk.unlock();
    GpuTimes times;
    std::string thrown;
    const Status st = guarded([&] { return queue.complete(outs, &times); }, &thrown);
    const auto t1 = Clock::now();
    lk.lock();
    if (is_device_fault(st)) {
      fault(st, thrown, {});
      break;
    }
    if (!st.ok()) {
      fail(st);
      break;
    }
    if (stop_) break;
    spans.push_back(Span{b.chunks.front().index, b.chunks.size(), since_start(b.submitted), since_start(t1), false});
    const double span = seconds(t1 - std::max(b.submitted, last_done));
    last_done = t1;
    // The first batches meet cold buffers and an empty pipeline: the CPU
    // workers would take the GPU for far slower than it is (see
    // cpu_may_take), so their rate is not counted.
    ++batches_done;
    if (span > 0 && batches_done > kGpuWarmBatches) {
      const double r = ewma(rate, static_cast<double>(b.bytes) / span, opt_.ewma_alpha);
      gpu_rate_ += r - rate;
      rate = r;
    }
    if (span > 0) {
      m_.gpu.ewma_bytes_per_second = ewma(m_.gpu.ewma_bytes_per_second, static_cast<double>(b.bytes) / span,
                                          opt_.ewma_alpha);
    }
    m_.gpu_transfer_seconds += times.transfer_seconds;
    m_.gpu_kernel_seconds += times.kernel_seconds;
    if (times.device_timed) {
      const double base = std::chrono::duration<double>(start_.time_since_epoch()).count();
      const Span one{b.chunks.front().index, b.chunks.size(), 0, 0, false};
      auto put = [&](std::size_t row, double from, double to) {
        Span s = one;
        s.start_seconds = from - base;
        s.end_seconds = to - base;
        m_.timeline[row].spans.push_back(s);
      };
      put(device_row, times.copy_in_start, times.copy_in_end);
      put(device_row + 1, times.copy_in_end, times.kernels_end);
      put(device_row + 2, times.copy_out_start, times.copy_out_end);
    }
    m_.gpu_batches += 1;
    for (std::size_t i = 0; i < b.chunks.size(); ++i) finish(WorkerKind::gpu, b.chunks[i], std::move(outs[i]));
    chunks_done += b.chunks.size();
    gpu_in_hand_ -= b.chunks.size();
    flight.pop_front();
    work_cv_.notify_all();  // a new rate: the CPU workers may take the last chunk now (or be done)
  }
  if (!flight.empty()) {  // the run stopped with batches in flight
    lk.unlock();
    try {
      queue.abandon();
    } catch (...) {
    }
    lk.lock();
    for (const Batch& b : flight) gpu_in_hand_ -= b.chunks.size();
  }
  gpu_rate_ -= rate;
  --gpus_alive_;
  gpu_alive_seconds_ += seconds(Clock::now() - born);
  work_cv_.notify_all();
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
    const std::size_t out_size = d.out.size();
    const std::size_t out_held = d.out.held();
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
    held_ -= d.chunk.data.size() + out_held;
    m_.chunks += 1;
    m_.bytes_in += d.chunk.data.size();
    m_.bytes_out += out_size;
    ++next_write_;
    recycle(std::move(d.out));
    room_cv_.notify_one();
  }
}

// A known input of at most one chunk on the CPU: no threads to start.
Status Run::run_inline() {
  std::uint64_t index = 0;
  ChunkOutput out;
  for (;;) {
    SourceChunk next;
    bool end = false;
    if (Status st = work_.source(&next, &end); !st.ok()) return st;
    if (end) break;
    if (next.data.size() > opt_.chunk_size) {
      return Status(StatusCode::invalid_argument, "the source returned a chunk larger than chunk_size");
    }
    const Chunk chunk{index++, m_.bytes_in, next.data, next.note};
    out.clear();
    const auto t0 = Clock::now();
    if (Status st = work_.cpu(chunk, &out); !st.ok()) return st;
    const auto t1 = Clock::now();
    m_.timeline[0].spans.push_back(Span{chunk.index, 1, since_start(t0), since_start(t1), false});
    m_.cpu.busy_seconds += seconds(t1 - t0);
    m_.cpu.chunks += 1;
    m_.cpu.bytes_in += chunk.data.size();
    m_.cpu.bytes_out += out.size();
    const std::size_t out_size = out.size();
    if (Status st = work_.sink(chunk, std::move(out)); !st.ok()) return st;
    m_.chunks += 1;
    m_.bytes_in += chunk.data.size();
    m_.bytes_out += out_size;
  }
  if (m_.cpu.busy_seconds > 0) {
    m_.cpu.ewma_bytes_per_second = static_cast<double>(m_.cpu.bytes_in) / m_.cpu.busy_seconds;
  }
  return {};
}

Status Run::go() {
  const bool known = opt_.input_size != kUnknownSize;
  int gpu_workers = opt_.policy == Policy::cpu ? 0 : static_cast<int>(work_.gpus.size());
  if (opt_.policy == Policy::automatic) {
    if (known && opt_.input_size < opt_.cpu_only_below) gpu_workers = 0;
    gpu_eligible_ = opt_.cpu_only_below == 0 || (known && opt_.input_size >= opt_.cpu_only_below);
  } else if (opt_.policy == Policy::gpu) {
    gpu_eligible_ = true;
    cpu_enabled_ = gpu_workers == 0;
    if (gpu_workers == 0) m_.warnings.emplace_back("policy gpu, but no GPU: the CPU workers ran the input");
  }
  int cpu_workers = opt_.cpu_workers;
  if (cpu_workers == 0) cpu_workers = std::max(1, hardware_threads() - gpu_workers);
  if (known) {
    const std::uint64_t chunks = std::max<std::uint64_t>(1, (opt_.input_size + opt_.chunk_size - 1) / opt_.chunk_size);
    cpu_workers = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(cpu_workers), chunks));
  }
  m_.cpu_workers = cpu_workers;
  m_.gpu_workers = gpu_workers;
  spare_limit_ = static_cast<std::size_t>(cpu_workers) * 2 + 2;
  limit_ = opt_.max_in_flight_bytes;
  if (limit_ == 0) {
    limit_ = std::uint64_t{4} * static_cast<std::uint64_t>(cpu_workers) * opt_.chunk_size;
    for (int g = 0; g < gpu_workers; ++g) {
      const GpuQueue& q = *work_.gpus[static_cast<std::size_t>(g)];
      limit_ += 4 * static_cast<std::uint64_t>(std::max(1, q.depth()) + 1) *
                std::max<std::uint64_t>(q.batch_bytes(), opt_.chunk_size);
    }
  }

  m_.timeline.clear();
  for (int i = 0; i < cpu_workers; ++i) m_.timeline.push_back(WorkerTimeline{WorkerKind::cpu, i, {}});
  for (int g = 0; g < gpu_workers; ++g) m_.timeline.push_back(WorkerTimeline{WorkerKind::gpu, g, {}});
  // The devices' rows, dropped at the end where no device timed a batch.
  for (int g = 0; g < gpu_workers; ++g) {
    for (const WorkerKind k : {WorkerKind::gpu_copy_in, WorkerKind::gpu_kernels, WorkerKind::gpu_copy_out}) {
      m_.timeline.push_back(WorkerTimeline{k, g, {}});
    }
  }
  const std::size_t threads_started = static_cast<std::size_t>(cpu_workers + gpu_workers);

  if (gpu_workers == 0 && known && opt_.input_size <= opt_.chunk_size) {
    const Status st = run_inline();
    m_.wall_seconds = seconds(Clock::now() - start_);
    return st;
  }

  gpus_alive_ = gpu_workers;
  std::vector<std::thread> threads;
  threads.reserve(threads_started + 1);
  try {
    threads.emplace_back([this] { writer(); });
    for (int i = 0; i < cpu_workers; ++i) {
      threads.emplace_back([this, i, gpu_workers] { cpu_worker(static_cast<std::size_t>(i), gpu_workers > 0); });
    }
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
  for (const WorkerTimeline& t : m_.timeline) {
    if (t.kind == WorkerKind::gpu) m_.gpu.busy_seconds += busy_union_seconds(t.spans);
    if (t.kind == WorkerKind::gpu_kernels) m_.gpu_kernel_busy_seconds += busy_union_seconds(t.spans);
  }
  std::erase_if(m_.timeline, [&](const WorkerTimeline& t) {
    return t.kind != WorkerKind::cpu && t.kind != WorkerKind::gpu && t.spans.empty();
  });
  m_.gpu_idle_seconds = std::max(0.0, gpu_alive_seconds_ - m_.gpu.busy_seconds);
  if (exception_) std::rethrow_exception(exception_);
  return error_;
}

}  // namespace

const char* worker_kind_name(WorkerKind kind) {
  switch (kind) {
    case WorkerKind::cpu: return "cpu";
    case WorkerKind::gpu: return "gpu";
    case WorkerKind::gpu_copy_in: return "gpu copy in";
    case WorkerKind::gpu_kernels: return "gpu kernels";
    case WorkerKind::gpu_copy_out: return "gpu copy out";
  }
  return "?";
}

Status run(const SchedulerOptions& options, const Work& work, RunMetrics* metrics) {
  RunMetrics local;
  RunMetrics* m = metrics ? metrics : &local;
  *m = RunMetrics{};
  if (!work.source || !work.cpu || !work.sink) {
    return Status(StatusCode::invalid_argument, "the scheduler needs a source, a CPU function and a sink");
  }
  for (const GpuQueue* q : work.gpus) {
    if (!q) return Status(StatusCode::invalid_argument, "a null GPU queue");
  }
  if (options.cpu_workers < 0 || options.chunk_size == 0 || !(options.ewma_alpha > 0 && options.ewma_alpha <= 1)) {
    return Status(StatusCode::invalid_argument, "bad scheduler options");
  }
  Run r(options, work, m);
  return r.go();
}

std::function<Status(SourceChunk*, bool*)> memory_source(std::span<const std::uint8_t> input, std::size_t chunk_size) {
  return [input, chunk_size, pos = std::size_t{0}](SourceChunk* next, bool* end) mutable {
    if (chunk_size == 0) return Status(StatusCode::invalid_argument, "chunk size 0");
    *end = pos == input.size();
    if (!*end) {
      const std::size_t n = std::min(chunk_size, input.size() - pos);
      next->data = input.subspan(pos, n);
      pos += n;
    }
    return Status();
  };
}

Status SyncGpuQueue::submit(std::span<const Chunk> chunks) {
  pending_.insert(pending_.end(), chunks.begin(), chunks.end());
  return {};
}

Status SyncGpuQueue::complete(std::span<ChunkOutput> outs, GpuTimes* times) {
  if (outs.size() > pending_.size()) return Status(StatusCode::invalid_argument, "complete without a batch");
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < outs.size(); ++i) {
    if (Status st = fn_(pending_[i], &outs[i]); !st.ok()) {
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(i + 1));
      return st;
    }
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(outs.size()));
  if (times) times->kernel_seconds = seconds(Clock::now() - t0);
  return {};
}

}  // namespace tandem::sched
