// The hybrid scheduler: one stream cut into host chunks, worked on by CPU
// workers and one worker per GPU at once, written back in input order.
//
// It knows nothing of codecs. A run pulls chunks from a source on the calling
// thread into a ready queue; each CPU worker thread takes the chunk at the
// front when it is free (so faster workers simply take more chunks) and runs
// the caller's CPU function on it; while a GPU worker runs, CPU workers take
// the ready queue's last chunk instead, so that the output the writer waits
// for is the GPU's and a slow CPU chunk is done long before the writer needs
// it. Each GPU worker thread drives a GpuQueue:
// it takes a batch of chunks from the front (about the queue's batch_bytes),
// submits it without waiting, and keeps up to the queue's depth of batches in
// flight, so that the copies and kernels of consecutive batches overlap; it
// collects the oldest batch when it can submit no more. A writer thread hands
// outputs to the sink strictly in chunk order.
//
// Backpressure: the bytes held (input of chunks pulled and not yet written,
// plus output of chunks done and not yet written, unless it lies in its place
// in the caller's memory already) are bounded. A chunk is
// pulled only while held + chunk_size <= max_in_flight_bytes, or when nothing
// is held, so a chunk larger than the limit goes through alone.
//
// Beside a GPU: a CPU worker takes the last chunk of the ready queue only
// when it would finish it (at its smoothed rate) before the GPU workers,
// taking the queue from the front (at theirs), would get to it, so that a
// slow CPU chunk never holds up the writer, and the GPU outputs behind it,
// while the GPU runs on; and none before the GPUs' first batch gives their
// rate. At the end of the input this leaves the last chunks to the GPU when
// it would finish them first.
//
// GPU faults: when a GpuQueue's submit or complete returns device_error or
// no_device, or throws, that GPU worker abandons its queue and stops for the
// rest of the run, and every chunk it held goes back, ahead of the queue, to
// the CPU workers, which from then on take chunks whatever the policy. The
// run records one warning per failed GPU and still writes every chunk. Any
// other error, from a work function, the source or the sink, stops the run:
// every thread is joined and the first error is returned. An exception from
// the source, the CPU function or the sink also stops the run and is rethrown
// by run() after the join.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::sched {

inline constexpr std::size_t kDefaultChunkSize = std::size_t{2} << 20;
inline constexpr std::uint64_t kUnknownSize = std::numeric_limits<std::uint64_t>::max();

// A piece of the input. index counts chunks from 0 in input order; offset is
// the position of data[0] in the stream. data is the source's memory and
// stays valid until the sink has returned for this chunk; so does note.
struct Chunk {
  std::uint64_t index = 0;
  std::uint64_t offset = 0;
  std::span<const std::uint8_t> data;
  const void* note = nullptr;  // the source's, for the work functions and the sink
};

// What the source returns for the next chunk.
struct SourceChunk {
  std::span<const std::uint8_t> data;
  const void* note = nullptr;
};

// What a work function produced for one chunk: bytes it owns, or a view of
// memory that `keep` holds (a pinned buffer of a GPU pool, say) or that the
// caller owns. A work function receives it empty, possibly with capacity
// left in `bytes` from an earlier chunk.
struct ChunkOutput {
  std::vector<std::uint8_t> bytes;
  std::span<const std::uint8_t> view;  // when view.data() is set, the output is view
  std::shared_ptr<const void> keep;
  // The view lies where the sink wants it already, in the caller's memory
  // (decoded in place, say): it holds none of the run's memory and does not
  // count against max_in_flight_bytes.
  bool in_place = false;

  std::span<const std::uint8_t> data() const {
    return view.data() ? view : std::span<const std::uint8_t>(bytes);
  }
  std::size_t size() const { return data().size(); }
  void set_view(std::span<const std::uint8_t> v, std::shared_ptr<const void> k = {}) {
    view = v;
    keep = std::move(k);
  }
  // Output that lies in its place already (see in_place).
  void set_in_place(std::span<const std::uint8_t> v) {
    set_view(v);
    in_place = true;
  }
  // Bytes of the run's memory that this output holds.
  std::size_t held() const { return in_place ? 0 : size(); }
  // Empty again; bytes keep their capacity, a view's memory is let go.
  void clear() {
    bytes.clear();
    view = {};
    keep.reset();
    in_place = false;
  }
};

enum class Policy {
  cpu,        // CPU workers only; the GPU queues are never used
  gpu,        // GPU workers only; the CPU workers step in after a GPU fault,
              // or for the whole run when there are no GPU queues
  automatic,  // both; inputs under cpu_only_below go to the CPU only
};

// The kinds of rows in a timeline: the worker threads, and what a GPU
// worker's device did, as the device timed it.
enum class WorkerKind { cpu, gpu, gpu_copy_in, gpu_kernels, gpu_copy_out };
// "cpu", "gpu", "gpu copy in", "gpu kernels", "gpu copy out".
const char* worker_kind_name(WorkerKind kind);

// Device time of one batch, as the queue measured it.
struct GpuTimes {
  double transfer_seconds = 0;  // copies both ways
  double kernel_seconds = 0;
  // When the device timed the batch: its copy to the device, its kernels
  // (from the end of that copy to the end of the last kernel: they may wait
  // there for another batch's kernels) and its copy back, as times of
  // std::chrono::steady_clock, in seconds since that clock's epoch.
  bool device_timed = false;
  double copy_in_start = 0, copy_in_end = 0, kernels_end = 0, copy_out_start = 0, copy_out_end = 0;
};

// A GPU worker's device. Its calls come from that worker's thread only.
class GpuQueue {
 public:
  virtual ~GpuQueue() = default;
  // Batches in flight at most (at least 1).
  virtual int depth() const = 0;
  // Input bytes per batch that keep the device busy; batches are cut to about
  // this (at least one chunk each).
  virtual std::size_t batch_bytes() const = 0;
  // Starts work on a batch of consecutive chunks; may return before it is done.
  virtual Status submit(std::span<const Chunk> chunks) = 0;
  // Finishes the oldest batch submitted: outs[i] for its chunk i (outs has
  // the batch's size). A non-device error fails the run.
  virtual Status complete(std::span<ChunkOutput> outs, GpuTimes* times) = 0;
  // Forgets every batch in flight (after a fault, or when the run stops).
  virtual void abandon() = 0;
};

struct SchedulerOptions {
  Policy policy = Policy::automatic;
  // 0: one per hardware thread, less one per GPU worker that runs (its thread
  // feeds the device). Never more than the input has chunks, when its size is known.
  int cpu_workers = 0;
  // The most bytes the source returns per chunk (it is an error to return
  // more): the scheduler pulls a chunk only when this much room is left.
  std::size_t chunk_size = kDefaultChunkSize;
  // > 0; see the backpressure rule above. 0: enough for every worker to hold
  // its work with the next waiting (4 chunks per CPU worker, four times depth
  // + 1 batches per GPU worker: a GPU runs ahead of slow CPU chunks).
  std::size_t max_in_flight_bytes = 0;
  // automatic: the GPU takes chunks only once the input is known to be at
  // least this large, from input_size or from the bytes read so far. Below
  // it, the transfers and the launch cost more than the CPU needs.
  std::uint64_t cpu_only_below = std::uint64_t{8} << 20;
  std::uint64_t input_size = kUnknownSize;  // bytes the source will return in all, if known
  double ewma_alpha = 0.25;                 // in (0, 1]: weight of the newest chunk in the rates
};

// The caller's functions. The source and the sink are called on one thread at
// a time; the CPU function on several at once (one call per worker thread at
// a time, so thread_local state in it is per worker).
struct Work {
  // The next chunk (data at most chunk_size bytes; may be empty), or *end =
  // true when the input is done. Called on the thread that called run().
  std::function<Status(SourceChunk* next, bool* end)> source;
  std::function<Status(const Chunk& chunk, ChunkOutput* out)> cpu;  // required
  // One GPU worker per queue, numbered by position (unused under Policy::cpu).
  // The caller owns them; they outlive the run.
  std::vector<GpuQueue*> gpus;
  // Called in chunk index order, each chunk exactly once, on the writer thread.
  std::function<Status(const Chunk& chunk, ChunkOutput&& out)> sink;
};

// Totals for one kind of worker.
struct KindMetrics {
  std::uint64_t chunks = 0;     // chunks done (a chunk handed back counts where it was redone)
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  // CPU: in the work function, summed over the workers. GPU: time with at
  // least one batch in flight, summed over the GPU workers.
  double busy_seconds = 0;
  double queue_wait_seconds = 0;  // waiting for a chunk, summed over the workers
  // Input bytes per busy second of one worker, smoothed over its chunks (CPU)
  // or batches (GPU, where a batch's time runs from the later of its submit
  // and the previous completion) with ewma_alpha; 0 before the first.
  double ewma_bytes_per_second = 0;
};

// One call of a work function (CPU) or one batch from submit to completion
// (GPU), in seconds from the start of the run.
struct Span {
  std::uint64_t chunk = 0;   // the first chunk
  std::uint64_t chunks = 1;  // how many
  double start_seconds = 0;
  double end_seconds = 0;
  bool handed_back = false;  // a GPU fault: the chunks went to the CPU workers
};

struct WorkerTimeline {
  WorkerKind kind = WorkerKind::cpu;
  int id = 0;  // CPU worker number, or the GPU's number
  std::vector<Span> spans;
};

struct RunMetrics {
  KindMetrics cpu;
  KindMetrics gpu;
  std::uint64_t chunks = 0;  // written to the sink
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t gpu_batches = 0;
  double wall_seconds = 0;
  double queue_wait_seconds = 0;     // cpu + gpu
  double gpu_idle_seconds = 0;       // GPU workers alive with no batch in flight, summed
  double gpu_transfer_seconds = 0;   // device copies both ways, as the queues measured them
  double gpu_kernel_seconds = 0;
  // Time with the kernels of at least one batch queued or running on a
  // device (the union of the gpu_kernels rows; 0 when no device timed its
  // batches). The wall time less this is the time the devices had no
  // kernel to run.
  double gpu_kernel_busy_seconds = 0;
  double read_wait_seconds = 0;      // the source side waiting for room (backpressure)
  double writer_wait_seconds = 0;    // the writer waiting for the next chunk in order
  int cpu_workers = 0;               // worker threads started
  int gpu_workers = 0;
  std::vector<std::string> warnings;     // GPU faults, a policy that could not be followed
  // One entry per worker thread started; then, for each GPU worker whose
  // device timed its batches, its copies in, kernels and copies out (kinds
  // gpu_copy_in, gpu_kernels, gpu_copy_out, the GPU's id, a span per batch).
  std::vector<WorkerTimeline> timeline;
};

// Runs the whole stream through the workers. Returns ok when the source ended
// and every chunk was written; else the first error. metrics may be null; it
// is filled in either case. Not reentrant per Work object; distinct runs may
// go on at once in different threads.
Status run(const SchedulerOptions& options, const Work& work, RunMetrics* metrics);

// A source over memory: chunks of chunk_size bytes (the last one shorter),
// none for an empty input. input must outlive the run.
std::function<Status(SourceChunk*, bool*)> memory_source(std::span<const std::uint8_t> input, std::size_t chunk_size);

// A GpuQueue over a function that does one chunk at a time, synchronously
// (depth 1, batches of one chunk): for tests and simple devices.
class SyncGpuQueue final : public GpuQueue {
 public:
  using Fn = std::function<Status(const Chunk& chunk, ChunkOutput* out)>;
  explicit SyncGpuQueue(Fn fn) : fn_(std::move(fn)) {}
  int depth() const override { return 1; }
  std::size_t batch_bytes() const override { return 1; }
  Status submit(std::span<const Chunk> chunks) override;
  Status complete(std::span<ChunkOutput> outs, GpuTimes* times) override;
  void abandon() override { pending_.clear(); }

 private:
  Fn fn_;
  std::vector<Chunk> pending_;
};

}  // namespace tandem::sched
