// The hybrid scheduler with fake work: the CPU and the GPU function both XOR
// the bytes and append the chunk's index (so outputs differ in size from
// inputs), the GPU one sleeping 0-2 ms now and then so that chunks finish out
// of order. Every policy with 1, 2 and 4 CPU workers and 0, 1 and 2 GPU
// workers writes every chunk once, in order; GPU faults at the first, a
// middle and the last chunk are absorbed by the CPU with one warning per
// failed GPU; other errors are returned and nothing hangs; the in-flight
// bound holds; the metrics add up. No timing is asserted.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

  Work work() {
    Work w;
    w.source = [this](std::span<const std::uint8_t>* data, bool* end) {
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
    w.gpu = [this](int gpu, const Chunk& c, ChunkOutput* out) {
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
      if (!out->bytes.empty()) bad_output_buffer = true;
      sleep_sometimes(c.index, 2, 8, 2000);
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

  void check(const Chunk& c, const ChunkOutput& out) {
    if (c.index != written || c.offset != written_bytes || c.data.data() != input.data() + c.offset ||
        c.data.size() != sizes[c.index]) {
      in_order = false;
    }
    ChunkOutput expect;
    transform(c, &expect);
    if (expect.bytes != out.bytes) output_ok = false;
    written += 1;
    written_bytes += c.data.size();
    output_bytes += out.bytes.size();
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

SchedulerOptions options(Policy policy, int cpu, int gpu) {
  SchedulerOptions o;
  o.policy = policy;
  o.cpu_workers = cpu;
  o.gpu_workers = gpu;
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
          ASSERT_TRUE(run(options(policy, cpu, gpu), h.work(), &m).ok());
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
          ASSERT_TRUE(run(options(policy, 2, gpus), h.work(), &m).ok());
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
        EXPECT_EQ(run(options(policy, 2, 2), h.work(), nullptr).code, StatusCode::bad_data);
        EXPECT_TRUE(h.in_order);
        EXPECT_TRUE(h.output_ok);
        EXPECT_LE(h.written, k);
      }
      {
        Harness h(small_chunks(n));
        h.sink_hook = [k](const Chunk& c) { return c.index == k ? Status(StatusCode::io_error) : Status(); };
        RunMetrics m;
        EXPECT_EQ(run(options(policy, 2, 2), h.work(), &m).code, StatusCode::io_error);
        EXPECT_EQ(h.written, k);
        EXPECT_EQ(m.chunks, k);
      }
      {
        Harness h(small_chunks(n));
        h.source_hook = [k](std::size_t i) { return i == k ? Status(StatusCode::truncated) : Status(); };
        EXPECT_EQ(run(options(policy, 2, 2), h.work(), nullptr).code, StatusCode::truncated);
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
    EXPECT_THROW(run(options(Policy::cpu, 2, 0), h.work(), nullptr), std::runtime_error) << where;
  }
}

TEST(SchedulerTest, InFlightBytesStayUnderTheLimit) {
  for (const Policy policy : {Policy::cpu, Policy::gpu, Policy::automatic}) {
    SCOPED_TRACE(name(policy));
    Harness h(small_chunks());
    SchedulerOptions o = options(policy, 2, 2);
    o.max_in_flight_bytes = 256;
    RunMetrics m;
    ASSERT_TRUE(run(o, h.work(), &m).ok());
    h.expect_complete(m);
    EXPECT_LE(h.max_bytes.load(), 256);
    EXPECT_GE(h.max_bytes.load(), 1);

    // A chunk larger than the limit goes through alone.
    Harness big(std::vector<std::size_t>(20, 3000));
    o.chunk_size = 4096;
    o.max_in_flight_bytes = 1000;
    ASSERT_TRUE(run(o, big.work(), &m).ok());
    big.expect_complete(m);
    EXPECT_EQ(big.max_chunks.load(), 1);
  }
}

TEST(SchedulerTest, SmallInputsStayOnTheCpuUnderAutomatic) {
  for (const bool size_known : {false, true}) {
    Harness h(small_chunks());
    SchedulerOptions o = options(Policy::automatic, 2, 2);
    o.cpu_only_below = h.input.size() + 1;
    if (size_known) o.input_size = h.input.size();
    RunMetrics m;
    ASSERT_TRUE(run(o, h.work(), &m).ok());
    h.expect_complete(m);
    EXPECT_EQ(h.gpu_calls.load(), 0);
    EXPECT_EQ(m.gpu.chunks, 0u);
  }
}

TEST(SchedulerTest, RejectsBadOptionsAndOversizedChunks) {
  Harness h(small_chunks(10));
  Work w = h.work();
  SchedulerOptions o = options(Policy::automatic, 1, 1);
  EXPECT_TRUE(run(o, w, nullptr).ok());

  for (int i = 0; i < 5; ++i) {
    SchedulerOptions bad = o;
    if (i == 0) bad.chunk_size = 0;
    if (i == 1) bad.max_in_flight_bytes = 0;
    if (i == 2) bad.ewma_alpha = 0;
    if (i == 3) bad.cpu_workers = -1;
    if (i == 4) bad.gpu_workers = -1;
    EXPECT_EQ(run(bad, w, nullptr).code, StatusCode::invalid_argument) << i;
  }
  Work no_gpu = w;
  no_gpu.gpu = nullptr;
  EXPECT_EQ(run(o, no_gpu, nullptr).code, StatusCode::invalid_argument);
  o.policy = Policy::cpu;
  Harness h2(small_chunks(10));
  Work cpu_only = h2.work();
  cpu_only.gpu = nullptr;
  EXPECT_TRUE(run(o, cpu_only, nullptr).ok());

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
    w.gpu = [](int, const Chunk& c, ChunkOutput* out) {
      out->bytes.assign(c.data.begin(), c.data.end());
      return Status();
    };
    Bytes output;
    std::uint64_t chunks = 0;
    w.sink = [&](const Chunk& c, ChunkOutput&& out) {
      EXPECT_EQ(c.index, chunks++);
      EXPECT_EQ(c.offset, output.size());
      EXPECT_LE(c.data.size(), 4096u);
      output.insert(output.end(), out.bytes.begin(), out.bytes.end());
      return Status();
    };
    SchedulerOptions o;
    o.chunk_size = 4096;
    o.cpu_workers = 2;
    o.gpu_workers = 1;
    o.cpu_only_below = 0;
    RunMetrics m;
    ASSERT_TRUE(run(o, w, &m).ok()) << size;
    EXPECT_EQ(output, input) << size;
    EXPECT_EQ(chunks, (size + 4095) / 4096) << size;
    EXPECT_EQ(m.bytes_in, size);
  }
}

}  // namespace
