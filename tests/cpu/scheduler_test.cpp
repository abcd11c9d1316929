// The hybrid scheduler with fake work: the CPU and the GPU function both XOR
// the bytes and append the chunk's index (so outputs differ in size from
// inputs), the GPU one sleeping 0-2 ms now and then so that chunks finish out
// of order. Every policy with 1, 2 and 4 CPU workers and 0, 1 and 2 GPU
// workers writes every chunk once, in order; GPU faults at the first, a
// middle and the last chunk are absorbed by the CPU with one warning per
// failed GPU; other errors are returned and nothing hangs; the in-flight
// bound holds; the metrics add up. No timing is asserted.
#include <algorithm>
#include <deque>
#include <future>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

#include "sched/scheduler.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::Status;
using tandem::StatusCode;
using namespace tandem::sched;
using Bytes = std::vector<std::uint8_t>;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The fake codec: every byte XOR 0xA5, then the index as 8 bytes.
void transform(const Chunk& c, ChunkOutput* out) {
  for (const std::uint8_t b : c.data) out->bytes.push_back(static_cast<std::uint8_t>(b ^ 0xA5));
  for (int i = 0; i < 8; ++i) out->bytes.push_back(static_cast<std::uint8_t>(c.index >> (8 * i)));
}

void sleep_sometimes(std::uint64_t index, std::uint64_t salt, std::uint64_t one_in, std::uint64_t max_us) {
  const std::uint64_t h = mix(index ^ salt);
  if (h % one_in == 0) std::this_thread::sleep_for(std::chrono::microseconds((h >> 16) % (max_us + 1)));
}

void raise(std::atomic<std::int64_t>& max, std::int64_t v) {
  std::int64_t m = max.load();
  while (v > m && !max.compare_exchange_weak(m, v)) {
  }
}

// A source of the given chunk sizes over random bytes, fake work functions,
// and a sink that checks what it gets; hooks inject errors.
struct Harness {
  explicit Harness(std::vector<std::size_t> chunk_sizes) : sizes(std::move(chunk_sizes)) {
    std::size_t total = 0;
    for (const std::size_t s : sizes) total += s;
    input = tandem::test::random_bytes(total, 7);
  }

  // gpus: how many GPU workers, each a SyncGpuQueue over the fake GPU function.
  Work work(int gpus = 0) {
    Work w;
    queues.clear();
    for (int g = 0; g < gpus; ++g) {
      queues.push_back(std::make_unique<SyncGpuQueue>(
          [this, g](const Chunk& c, ChunkOutput* out) { return gpu_work(g, c, out); }));
      w.gpus.push_back(queues.back().get());
    }
    w.source = [this](SourceChunk* next, bool* end) {
      std::span<const std::uint8_t>* data = &next->data;
      if (source_hook) {
        const Status s = source_hook(next_source);
        if (!s.ok()) return s;
      }
      *end = next_source == sizes.size();
      if (*end) return Status();
      *data = std::span<const std::uint8_t>(input).subspan(source_pos, sizes[next_source]);
      source_pos += sizes[next_source++];
      raise(max_bytes, bytes_in_flight += static_cast<std::int64_t>(data->size()));
      raise(max_chunks, chunks_in_flight += 1);
      return Status();
    };
    w.cpu = [this](const Chunk& c, ChunkOutput* out) {
      cpu_calls += 1;
      if (cpu_hook) {
        const Status s = cpu_hook(c);
        if (!s.ok()) return s;
      }
      if (!out->bytes.empty()) bad_output_buffer = true;
      sleep_sometimes(c.index, 1, 32, 300);
      transform(c, out);
      return Status();
    };
    w.sink = [this](const Chunk& c, ChunkOutput&& out) {
      if (in_sink.exchange(true)) sink_overlap = true;
      bytes_in_flight -= static_cast<std::int64_t>(c.data.size());
      chunks_in_flight -= 1;
      Status s;
      if (sink_hook) s = sink_hook(c);
      if (s.ok()) check(c, out);
      in_sink = false;
      return s;
    };
    return w;
  }

  Status gpu_work(int gpu, const Chunk& c, ChunkOutput* out) {
    gpu_calls += 1;
    if (gpu_hook) {
      const Status s = gpu_hook(gpu, c);
      if (!s.ok()) {
        if (s.code == StatusCode::device_error || s.code == StatusCode::no_device) {
          std::lock_guard lk(mu);
          failed_gpus.insert(gpu);
        }
        return s;
      }
    }
    if (out->size() != 0) bad_output_buffer = true;
    sleep_sometimes(c.index, 2, 8, 2000);
    transform(c, out);
    return Status();
  }

  void check(const Chunk& c, const ChunkOutput& out) {
    if (c.index != written || c.offset != written_bytes || c.data.data() != input.data() + c.offset ||
        c.data.size() != sizes[c.index]) {
      in_order = false;
    }
    ChunkOutput expect;
    transform(c, &expect);
    const auto got = out.data();
    if (!std::equal(expect.bytes.begin(), expect.bytes.end(), got.begin(), got.end())) output_ok = false;
    written += 1;
    written_bytes += c.data.size();
    output_bytes += got.size();
  }

  // Complete and in order, and the metrics say so.
  void expect_complete(const RunMetrics& m) const {
    EXPECT_TRUE(in_order);
    EXPECT_TRUE(output_ok);
    EXPECT_FALSE(sink_overlap);
    EXPECT_FALSE(bad_output_buffer);
    EXPECT_EQ(written, sizes.size());
    EXPECT_EQ(written_bytes, input.size());
    EXPECT_EQ(m.chunks, sizes.size());
    EXPECT_EQ(m.cpu.chunks + m.gpu.chunks, sizes.size());
    EXPECT_EQ(m.bytes_in, input.size());
    EXPECT_EQ(m.cpu.bytes_in + m.gpu.bytes_in, input.size());
    EXPECT_EQ(m.bytes_out, output_bytes);
    EXPECT_EQ(m.cpu.bytes_out + m.gpu.bytes_out, output_bytes);
    std::size_t spans = 0, handed_back = 0;
    for (const WorkerTimeline& w : m.timeline) {
      for (const Span& s : w.spans) {
        EXPECT_LE(s.start_seconds, s.end_seconds);
        ++(s.handed_back ? handed_back : spans);
      }
    }
    EXPECT_EQ(spans, sizes.size());
    EXPECT_EQ(handed_back, failed_gpus.size());
  }

  std::vector<std::size_t> sizes;
  Bytes input;
  std::vector<std::unique_ptr<SyncGpuQueue>> queues;
  std::size_t next_source = 0, source_pos = 0;
  std::function<Status(std::size_t)> source_hook;
  std::function<Status(const Chunk&)> cpu_hook;
  std::function<Status(int, const Chunk&)> gpu_hook;
  std::function<Status(const Chunk&)> sink_hook;

  std::atomic<int> cpu_calls{0}, gpu_calls{0};
  std::atomic<std::int64_t> bytes_in_flight{0}, max_bytes{0}, chunks_in_flight{0}, max_chunks{0};
  std::atomic<bool> in_sink{false}, sink_overlap{false}, bad_output_buffer{false};
  std::mutex mu;
  std::set<int> failed_gpus;
  std::uint64_t written = 0, written_bytes = 0, output_bytes = 0;
  bool in_order = true, output_ok = true;
};

// 1000 chunks of 0 to 64 bytes.
std::vector<std::size_t> small_chunks(std::size_t n = 1000) {
  std::vector<std::size_t> sizes(n);
  for (std::size_t i = 0; i < n; ++i) sizes[i] = mix(i + 99) % 65;
  return sizes;
}

SchedulerOptions options(Policy policy, int cpu) {
  SchedulerOptions o;
  o.policy = policy;
  o.cpu_workers = cpu;
  o.chunk_size = 64;
  o.max_in_flight_bytes = 4096;
  o.cpu_only_below = 0;
  return o;
}

const char* name(Policy p) { return p == Policy::cpu ? "cpu" : p == Policy::gpu ? "gpu" : "automatic"; }

TEST(SchedulerTest, EveryPolicyWritesEveryChunkInOrder) {
  const std::vector<std::vector<std::size_t>> inputs = {{}, {64}, small_chunks()};
  for (const Policy policy : {Policy::cpu, Policy::gpu, Policy::automatic}) {
    for (const int cpu : {1, 2, 4}) {
      for (const int gpu : {0, 1, 2}) {
        for (const auto& sizes : inputs) {
          SCOPED_TRACE(std::string(name(policy)) + " cpu " + std::to_string(cpu) + " gpu " + std::to_string(gpu) +
                       " chunks " + std::to_string(sizes.size()));
          Harness h(sizes);
          RunMetrics m;
          ASSERT_TRUE(run(options(policy, cpu), h.work(gpu), &m).ok());
          h.expect_complete(m);
          EXPECT_EQ(m.gpu.chunks, static_cast<std::uint64_t>(h.gpu_calls.load()));
          EXPECT_EQ(m.cpu.chunks, static_cast<std::uint64_t>(h.cpu_calls.load()));
          if (policy == Policy::cpu) EXPECT_EQ(h.gpu_calls.load(), 0);
          if (policy == Policy::gpu && gpu > 0) EXPECT_EQ(h.cpu_calls.load(), 0);
          const bool gpu_without_gpus = policy == Policy::gpu && gpu == 0;
          EXPECT_EQ(m.warnings.size(), gpu_without_gpus ? 1u : 0u);
          if (gpu_without_gpus) EXPECT_NE(m.warnings[0].find("CPU"), std::string::npos);
          EXPECT_EQ(m.timeline.size(), static_cast<std::size_t>(cpu + (policy == Policy::cpu ? 0 : gpu)));
          EXPECT_LE(h.max_bytes.load(), 4096);
        }
      }
    }
  }
}

// How the fault is injected at chunk k.
enum class Fault { one_chunk, device_lost, throws, no_device };

TEST(SchedulerTest, GpuFaultHandsTheChunkToTheCpu) {
  const std::size_t n = 1000;
  for (const Policy policy : {Policy::gpu, Policy::automatic}) {
    for (const Fault fault : {Fault::one_chunk, Fault::device_lost, Fault::throws, Fault::no_device}) {
      for (const std::uint64_t k : {std::uint64_t{0}, std::uint64_t{500}, std::uint64_t{n - 1}}) {
        for (const int gpus : {1, 2}) {
          SCOPED_TRACE(std::string(name(policy)) + " fault " + std::to_string(static_cast<int>(fault)) + " at " +
                       std::to_string(k) + " gpus " + std::to_string(gpus));
          Harness h(small_chunks(n));
          h.gpu_hook = [&h, fault, k](int gpu, const Chunk& c) {
            const bool hit = fault == Fault::device_lost ? c.index >= k : c.index == k;
            if (!hit) return Status();
            if (fault == Fault::throws) {
              {
                std::lock_guard lk(h.mu);
                h.failed_gpus.insert(gpu);
              }
              throw std::runtime_error("device gone");
            }
            return Status(fault == Fault::no_device ? StatusCode::no_device : StatusCode::device_error, "injected");
          };
          RunMetrics m;
          ASSERT_TRUE(run(options(policy, 2), h.work(gpus), &m).ok());
          h.expect_complete(m);
          EXPECT_EQ(m.warnings.size(), h.failed_gpus.size());
          for (const int g : h.failed_gpus) {
            const std::string tag = "GPU " + std::to_string(g) + ":";
            EXPECT_TRUE(std::any_of(m.warnings.begin(), m.warnings.end(),
                                    [&](const std::string& w) { return w.find(tag) != std::string::npos; }));
          }
          if (policy == Policy::gpu) {
            // Before any fault only the GPUs take chunks, so chunk k reaches one.
            EXPECT_GE(h.failed_gpus.size(), 1u);
            if (fault != Fault::device_lost) EXPECT_EQ(h.failed_gpus.size(), 1u);
            EXPECT_GE(h.cpu_calls.load(), 1);
          }
        }
      }
    }
  }
}

TEST(SchedulerTest, WorkErrorsAreReturned) {
  const std::size_t n = 1000;
  for (const std::uint64_t k : {std::uint64_t{0}, std::uint64_t{500}, std::uint64_t{n - 1}}) {
    for (const Policy policy : {Policy::cpu, Policy::automatic}) {
      SCOPED_TRACE(std::string(name(policy)) + " at " + std::to_string(k));
      {
        Harness h(small_chunks(n));
        h.cpu_hook = [k](const Chunk& c) { return c.index == k ? Status(StatusCode::bad_data, "x") : Status(); };
        // automatic may give chunk k to a GPU; the CPU must fail on it then.
        h.gpu_hook = [k](int, const Chunk& c) { return c.index == k ? Status(StatusCode::bad_data) : Status(); };
        EXPECT_EQ(run(options(policy, 2), h.work(2), nullptr).code, StatusCode::bad_data);
        EXPECT_TRUE(h.in_order);
        EXPECT_TRUE(h.output_ok);
        EXPECT_LE(h.written, k);
      }
      {
        Harness h(small_chunks(n));
        h.sink_hook = [k](const Chunk& c) { return c.index == k ? Status(StatusCode::io_error) : Status(); };
        RunMetrics m;
        EXPECT_EQ(run(options(policy, 2), h.work(2), &m).code, StatusCode::io_error);
        EXPECT_EQ(h.written, k);
        EXPECT_EQ(m.chunks, k);
      }
      {
        Harness h(small_chunks(n));
        h.source_hook = [k](std::size_t i) { return i == k ? Status(StatusCode::truncated) : Status(); };
        EXPECT_EQ(run(options(policy, 2), h.work(2), nullptr).code, StatusCode::truncated);
        EXPECT_LE(h.written, k);
      }
    }
  }
}

TEST(SchedulerTest, ExceptionsFromTheCpuSideAreRethrown) {
  for (const int where : {0, 1, 2}) {
    Harness h(small_chunks(200));
    const auto boom = [](std::uint64_t i) {
      if (i == 100) throw std::runtime_error("boom");
      return Status();
    };
    if (where == 0) h.source_hook = [&](std::size_t i) { return boom(i); };
    if (where == 1) h.cpu_hook = [&](const Chunk& c) { return boom(c.index); };
    if (where == 2) h.sink_hook = [&](const Chunk& c) { return boom(c.index); };
    EXPECT_THROW(run(options(Policy::cpu, 2), h.work(), nullptr), std::runtime_error) << where;
  }
}

TEST(SchedulerTest, InFlightBytesStayUnderTheLimit) {
  for (const Policy policy : {Policy::cpu, Policy::gpu, Policy::automatic}) {
    SCOPED_TRACE(name(policy));
    Harness h(small_chunks());
    SchedulerOptions o = options(policy, 2);
    o.max_in_flight_bytes = 256;
    RunMetrics m;
    ASSERT_TRUE(run(o, h.work(2), &m).ok());
    h.expect_complete(m);
    EXPECT_LE(h.max_bytes.load(), 256);
    EXPECT_GE(h.max_bytes.load(), 1);

    // A chunk larger than the limit goes through alone.
    Harness big(std::vector<std::size_t>(20, 3000));
    o.chunk_size = 4096;
    o.max_in_flight_bytes = 1000;
    ASSERT_TRUE(run(o, big.work(2), &m).ok());
    big.expect_complete(m);
    EXPECT_EQ(big.max_chunks.load(), 1);
  }
}

TEST(SchedulerTest, SmallInputsStayOnTheCpuUnderAutomatic) {
  for (const bool size_known : {false, true}) {
    Harness h(small_chunks());
    SchedulerOptions o = options(Policy::automatic, 2);
    o.cpu_only_below = h.input.size() + 1;
    if (size_known) o.input_size = h.input.size();
    RunMetrics m;
    ASSERT_TRUE(run(o, h.work(2), &m).ok());
    h.expect_complete(m);
    EXPECT_EQ(h.gpu_calls.load(), 0);
    EXPECT_EQ(m.gpu.chunks, 0u);
  }
}

TEST(SchedulerTest, RejectsBadOptionsAndOversizedChunks) {
  Harness h(small_chunks(10));
  Work w = h.work(1);
  SchedulerOptions o = options(Policy::automatic, 1);
  EXPECT_TRUE(run(o, w, nullptr).ok());

  for (int i = 0; i < 4; ++i) {
    SchedulerOptions bad = o;
    if (i == 0) bad.chunk_size = 0;
    if (i == 1) bad.ewma_alpha = 0;
    if (i == 2) bad.ewma_alpha = 1.5;
    if (i == 3) bad.cpu_workers = -1;
    EXPECT_EQ(run(bad, w, nullptr).code, StatusCode::invalid_argument) << i;
  }
  Work null_gpu = w;
  null_gpu.gpus.push_back(nullptr);
  EXPECT_EQ(run(o, null_gpu, nullptr).code, StatusCode::invalid_argument);
  Work no_cpu = w;
  no_cpu.cpu = nullptr;
  EXPECT_EQ(run(o, no_cpu, nullptr).code, StatusCode::invalid_argument);
  o.policy = Policy::cpu;
  Harness h2(small_chunks(10));
  EXPECT_TRUE(run(o, h2.work(), nullptr).ok());

  Harness h3({10, 100, 10});  // 100 > chunk_size
  EXPECT_EQ(run(o, h3.work(), nullptr).code, StatusCode::invalid_argument);
}

TEST(SchedulerTest, MemorySourceCutsTheInput) {
  for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{4096},
                                 std::size_t{4097}, std::size_t{100000}}) {
    const Bytes input = tandem::test::random_bytes(size, 3);
    Work w;
    w.source = memory_source(input, 4096);
    w.cpu = [](const Chunk& c, ChunkOutput* out) {
      out->bytes.assign(c.data.begin(), c.data.end());
      return Status();
    };
    SyncGpuQueue gpu([](const Chunk& c, ChunkOutput* out) {
      out->bytes.assign(c.data.begin(), c.data.end());
      return Status();
    });
    w.gpus.push_back(&gpu);
    Bytes output;
    std::uint64_t chunks = 0;
    w.sink = [&](const Chunk& c, ChunkOutput&& out) {
      EXPECT_EQ(c.index, chunks++);
      EXPECT_EQ(c.offset, output.size());
      EXPECT_LE(c.data.size(), 4096u);
      output.insert(output.end(), out.data().begin(), out.data().end());
      return Status();
    };
    SchedulerOptions o;
    o.chunk_size = 4096;
    o.cpu_workers = 2;
    o.cpu_only_below = 0;
    RunMetrics m;
    ASSERT_TRUE(run(o, w, &m).ok()) << size;
    EXPECT_EQ(output, input) << size;
    EXPECT_EQ(chunks, (size + 4095) / 4096) << size;
    EXPECT_EQ(m.bytes_in, size);
  }
}

// A GPU queue with batches in flight: submit starts the batch on a thread of
// its own (sleeping now and then, so batches and CPU chunks finish out of
// order) and complete waits for the oldest. Outputs are views of one buffer
// per batch, held by `keep`. Faults: submit or complete of batch k fails.
class PipelinedQueue final : public GpuQueue {
 public:
  enum class FailAt { none, submit, complete };
  PipelinedQueue(int depth, std::size_t batch_bytes, FailAt fail_at = FailAt::none, int fail_batch = 0)
      : depth_(depth), batch_bytes_(batch_bytes), fail_at_(fail_at), fail_batch_(fail_batch) {}
  ~PipelinedQueue() override { abandon(); }
  int depth() const override { return depth_; }
  std::size_t batch_bytes() const override { return batch_bytes_; }
  Status submit(std::span<const Chunk> chunks) override {
    if (static_cast<int>(flight_.size()) >= depth_) overfull = true;
    const int number = submitted_++;
    if (fail_at_ == FailAt::submit && number == fail_batch_) {
      failed = true;
      return Status(StatusCode::device_error, "injected copy failure");
    }
    std::vector<Chunk> batch(chunks.begin(), chunks.end());
    for (const Chunk& c : batch) max_batch_bytes = std::max<std::size_t>(max_batch_bytes, c.data.size());
    for (std::size_t i = 1; i < batch.size(); ++i) gapped = gapped || batch[i].index != batch[i - 1].index + 1;
    submitted_at_.push_back(now());
    flight_.push_back(std::async(std::launch::async, [batch, number] {
      auto buf = std::make_shared<std::vector<Bytes>>(batch.size());
      for (std::size_t i = 0; i < batch.size(); ++i) {
        ChunkOutput o;
        transform(batch[i], &o);
        (*buf)[i] = std::move(o.bytes);
      }
      sleep_sometimes(static_cast<std::uint64_t>(number), 5, 3, 3000);
      return buf;
    }));
    return Status();
  }
  Status complete(std::span<ChunkOutput> outs, GpuTimes* times) override {
    const int number = completed_++;
    auto buf = flight_.front().get();
    flight_.pop_front();
    const double submitted = submitted_at_.front();
    submitted_at_.pop_front();
    if (fail_at_ == FailAt::complete && number == fail_batch_) {
      failed = true;
      return Status(StatusCode::device_error, "injected kernel failure");
    }
    if (outs.size() != buf->size()) return Status(StatusCode::invalid_argument, "batch size");
    for (std::size_t i = 0; i < outs.size(); ++i) outs[i].set_view((*buf)[i], buf);
    times->kernel_seconds = 0.001;
    times->transfer_seconds = 0.002;
    // A device clock: the copy in at the submit, the kernels until now, the
    // copy back a moment after.
    times->device_timed = true;
    times->copy_in_start = submitted;
    times->copy_in_end = submitted + 1e-6;
    times->kernels_end = now();
    times->copy_out_start = times->kernels_end;
    times->copy_out_end = times->kernels_end + 1e-6;
    completed += 1;
    return Status();
  }
  void abandon() override {
    for (auto& f : flight_) f.wait();
    flight_.clear();
    submitted_at_.clear();
  }
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  bool overfull = false, failed = false;
  std::atomic<int> completed{0};  // batches handed out
  bool gapped = false;  // a batch of chunks that do not follow each other
  std::size_t max_batch_bytes = 0;

 private:
  int depth_;
  std::size_t batch_bytes_;
  FailAt fail_at_;
  int fail_batch_;
  int submitted_ = 0, completed_ = 0;
  std::deque<std::future<std::shared_ptr<std::vector<Bytes>>>> flight_;
  std::deque<double> submitted_at_;
};

TEST(SchedulerTest, PipelinedGpuBatchesCompleteOutOfOrderAndStayInOrder) {
  for (const Policy policy : {Policy::gpu, Policy::automatic}) {
    for (const int depth : {1, 3}) {
      SCOPED_TRACE(std::string(name(policy)) + " depth " + std::to_string(depth));
      Harness h(small_chunks(2000));
      PipelinedQueue q(depth, 300);
      Work w = h.work();
      w.gpus.push_back(&q);
      RunMetrics m;
      ASSERT_TRUE(run(options(policy, 2), w, &m).ok());
      EXPECT_TRUE(h.in_order);
      EXPECT_TRUE(h.output_ok);
      EXPECT_EQ(h.written, 2000u);
      EXPECT_EQ(m.cpu.chunks + m.gpu.chunks, 2000u);
      EXPECT_FALSE(q.overfull);
      EXPECT_FALSE(q.gapped);  // the CPU workers take chunks from the back, never from inside a batch
      EXPECT_GT(m.gpu.chunks, 0u);
      if (policy == Policy::gpu) EXPECT_EQ(m.cpu.chunks, 0u);
      EXPECT_GE(m.gpu_batches, 1u);
      EXPECT_LT(m.gpu_batches, m.gpu.chunks);  // batches hold several chunks
      EXPECT_NEAR(m.gpu_kernel_seconds, 0.001 * static_cast<double>(m.gpu_batches), 1e-9);
      EXPECT_TRUE(m.warnings.empty());
      std::uint64_t gpu_span_chunks = 0;
      for (const WorkerTimeline& t : m.timeline) {
        if (t.kind != WorkerKind::gpu) continue;
        for (const Span& s : t.spans) gpu_span_chunks += s.chunks;
      }
      EXPECT_EQ(gpu_span_chunks, m.gpu.chunks);
      EXPECT_GT(m.gpu.busy_seconds, 0.0);
      // The device's rows: a span per batch in each, on the run's clock.
      int device_rows = 0;
      for (const WorkerTimeline& t : m.timeline) {
        if (t.kind == WorkerKind::cpu || t.kind == WorkerKind::gpu) continue;
        ++device_rows;
        EXPECT_EQ(t.id, 0);
        EXPECT_EQ(t.spans.size(), m.gpu_batches);
        for (const Span& s : t.spans) {
          EXPECT_GE(s.start_seconds, 0.0);
          EXPECT_LE(s.start_seconds, s.end_seconds);
          EXPECT_LE(s.end_seconds, m.wall_seconds + 1e-3);
        }
      }
      EXPECT_EQ(device_rows, 3);
      EXPECT_GT(m.gpu_kernel_busy_seconds, 0.0);
      EXPECT_LE(m.gpu_kernel_busy_seconds, m.wall_seconds);
    }
  }
}

TEST(SchedulerTest, PipelinedGpuFaultsHandEveryChunkInFlightBack) {
  for (const auto fail_at : {PipelinedQueue::FailAt::submit, PipelinedQueue::FailAt::complete}) {
    for (const int batch : {0, 3, 40}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(fail_at)) + " at batch " + std::to_string(batch));
      Harness h(small_chunks(2000));
      PipelinedQueue q(3, 300, fail_at, batch);
      Work w = h.work();
      w.gpus.push_back(&q);
      RunMetrics m;
      ASSERT_TRUE(run(options(Policy::gpu, 2), w, &m).ok());
      EXPECT_TRUE(q.failed);
      EXPECT_TRUE(h.in_order);
      EXPECT_TRUE(h.output_ok);
      EXPECT_EQ(h.written, 2000u);
      EXPECT_EQ(m.cpu.chunks + m.gpu.chunks, 2000u);
      ASSERT_EQ(m.warnings.size(), 1u);
      EXPECT_NE(m.warnings[0].find("GPU 0: GPU device error: injected"), std::string::npos) << m.warnings[0];
      EXPECT_NE(m.warnings[0].find("back to the CPU"), std::string::npos);
      EXPECT_GE(m.cpu.chunks, 1u);
    }
  }
}


// This thread's nice value (Linux gives each thread one).
int thread_nice() {
#if defined(__linux__)
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
  return errno == 0 ? nice : 0;
#else
  return 0;
#endif
}

// Beside a GPU a CPU worker takes no chunk before the GPU has handed out its
// third batch (the first two set no rate: cold buffers, an empty pipeline),
// and runs at a lower priority than the caller (nice 5 more, at most 19), so
// that the GPU worker's thread gets a core when it needs one. Without a GPU
// the workers keep the caller's priority.
TEST(SchedulerTest, CpuWorkersBesideAGpuWaitForItsRateAndYieldToIt) {
  const int caller = thread_nice();
  for (const Policy policy : {Policy::cpu, Policy::automatic}) {
    SCOPED_TRACE(name(policy));
    Harness h(small_chunks(3000));
    PipelinedQueue q(1, 300);
    Work w = h.work();
    if (policy == Policy::automatic) w.gpus.push_back(&q);
    std::mutex mu;
    int fewest_batches = 1 << 30;
    std::set<int> nices;
    h.cpu_hook = [&](const Chunk&) {
      std::lock_guard lk(mu);
      fewest_batches = std::min(fewest_batches, q.completed.load());
      nices.insert(thread_nice());
      return Status();
    };
    SchedulerOptions o = options(policy, 2);
    o.max_in_flight_bytes = 1 << 20;  // the whole input: the CPU workers may take from far ahead
    RunMetrics m;
    ASSERT_TRUE(run(o, w, &m).ok());
    EXPECT_TRUE(h.in_order);
    EXPECT_TRUE(h.output_ok);
    EXPECT_EQ(h.written, 3000u);
    if (policy == Policy::cpu) {
      EXPECT_EQ(m.cpu.chunks, 3000u);
      EXPECT_EQ(nices, std::set<int>{caller});
      continue;
    }
    EXPECT_EQ(m.cpu.chunks, static_cast<std::uint64_t>(h.cpu_calls.load()));
    if (m.cpu.chunks > 0) {
      EXPECT_GE(fewest_batches, 3);
#if defined(__linux__)
      EXPECT_EQ(nices, std::set<int>{std::min(19, caller + 5)});
#endif
    }
  }
}

}  // namespace
