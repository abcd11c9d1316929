// The hybrid scheduler: one stream cut into host chunks, worked on by CPU
// workers and one worker per GPU at once, written back in input order.
//
// It knows nothing of codecs. A run pulls chunks from a source on the calling
// thread into a ready queue; each worker thread takes the chunk at the front
// when it is free (so faster workers simply take more chunks), runs the
// caller's CPU or GPU function on it, and leaves the output for a writer
// thread, which hands outputs to the sink strictly in chunk order.
//
// Backpressure: the bytes held (input of chunks pulled and not yet written,
// plus output of chunks done and not yet written) are bounded. A chunk is
// pulled only while held + chunk_size <= max_in_flight_bytes, or when nothing
// is held, so a chunk larger than the limit goes through alone.
//
// GPU faults: when the GPU function returns device_error or no_device, or
// throws, that GPU worker stops for the rest of the run and its chunk goes
// back, ahead of the queue, to the CPU workers, which from then on take
// chunks whatever the policy. The run records one warning per failed GPU and
// still writes every chunk. Any other error, from a work function, the source
// or the sink, stops the run: every thread is joined and the first error is
// returned. An exception from the source, the CPU function or the sink also
// stops the run and is rethrown by run() after the join.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::sched {

inline constexpr std::size_t kDefaultChunkSize = std::size_t{2} << 20;
inline constexpr std::uint64_t kUnknownSize = std::numeric_limits<std::uint64_t>::max();

// A piece of the input. index counts chunks from 0 in input order; offset is
// the position of data[0] in the stream. data is the source's memory and
// stays valid until the sink has returned for this chunk.
struct Chunk {
  std::uint64_t index = 0;
  std::uint64_t offset = 0;
  std::span<const std::uint8_t> data;
};

// What a work function produced for one chunk. A work function receives it
// empty (bytes.size() == 0), possibly with capacity left from an earlier
// chunk, and appends or resizes as it likes.
struct ChunkOutput {
  std::vector<std::uint8_t> bytes;
};

enum class Policy {
  cpu,        // CPU workers only; the GPU function is never called
  gpu,        // GPU workers only; the CPU workers step in after a GPU fault,
              // or for the whole run when there are no GPU workers
  automatic,  // both; inputs under cpu_only_below go to the CPU only
};

enum class WorkerKind { cpu, gpu };

struct SchedulerOptions {
  Policy policy = Policy::automatic;
  int cpu_workers = 0;  // 0: one per hardware thread
  int gpu_workers = 0;  // GPU workers, numbered 0..gpu_workers-1; 0 when there is no GPU
  // The most bytes the source returns per chunk (it is an error to return
  // more): the scheduler pulls a chunk only when this much room is left.
  std::size_t chunk_size = kDefaultChunkSize;
  std::size_t max_in_flight_bytes = std::size_t{64} << 20;  // > 0; see the backpressure rule above
  // automatic: the GPU takes chunks only once the input is known to be at
  // least this large, from input_size or from the bytes read so far. Below
  // it, the transfers and the launch cost more than the CPU needs.
  std::uint64_t cpu_only_below = std::uint64_t{8} << 20;
  std::uint64_t input_size = kUnknownSize;  // bytes the source will return in all, if known
  double ewma_alpha = 0.25;                 // in (0, 1]: weight of the newest chunk in the rates
};

// The caller's functions. The source and the sink are called on one thread at
// a time; the CPU and GPU functions on several at once (one call per worker
// thread at a time, so thread_local state in them is per worker).
struct Work {
  // Next chunk's bytes into *data (at most chunk_size; may be empty), or
  // *end = true when the input is done. Called on the thread that called run().
  std::function<Status(std::span<const std::uint8_t>* data, bool* end)> source;
  std::function<Status(const Chunk& chunk, ChunkOutput* out)> cpu;  // required
  // Required when gpu_workers > 0 and the policy is not cpu. gpu is the
  // worker's number. device_error and no_device mean "this GPU is gone".
  std::function<Status(int gpu, const Chunk& chunk, ChunkOutput* out)> gpu;
  // Called in chunk index order, each chunk exactly once, on the writer thread.
  std::function<Status(const Chunk& chunk, ChunkOutput&& out)> sink;
};

// Totals for one kind of worker.
struct KindMetrics {
  std::uint64_t chunks = 0;     // chunks done (a chunk handed back counts where it was redone)
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  double busy_seconds = 0;        // in the work function, summed over the workers
  double queue_wait_seconds = 0;  // waiting for a chunk, summed over the workers
  // One worker's rate, input bytes per busy second, smoothed over its chunks
  // with ewma_alpha; 0 before the first chunk.
  double ewma_bytes_per_second = 0;
};

// One call of a work function, in seconds from the start of the run.
struct Span {
  std::uint64_t chunk = 0;
  double start_seconds = 0;
  double end_seconds = 0;
  bool handed_back = false;  // a GPU fault: the chunk went to the CPU workers
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
  double wall_seconds = 0;
  double queue_wait_seconds = 0;   // cpu + gpu
  double gpu_idle_seconds = 0;     // GPU workers alive but not in the GPU function, summed
  double read_wait_seconds = 0;    // the source side waiting for room (backpressure)
  double writer_wait_seconds = 0;  // the writer waiting for the next chunk in order
  std::vector<std::string> warnings;       // GPU faults, a policy that could not be followed
  std::vector<WorkerTimeline> timeline;    // one entry per worker thread started
};

// Runs the whole stream through the workers. Returns ok when the source ended
// and every chunk was written; else the first error. metrics may be null; it
// is filled in either case. Not reentrant per Work object; distinct runs may
// go on at once in different threads.
Status run(const SchedulerOptions& options, const Work& work, RunMetrics* metrics);

// A source over memory: chunks of chunk_size bytes (the last one shorter),
// none for an empty input. input must outlive the run.
std::function<Status(std::span<const std::uint8_t>*, bool*)> memory_source(std::span<const std::uint8_t> input,
                                                                             std::size_t chunk_size);

}  // namespace tandem::sched
