// A process-wide pool of worker threads for data-parallel loops (and the
// host copies that the GPU engines spread over it).
//
// parallel_for(n, max_threads, fn) runs fn(i) for i in [0, n) on at most
// max_threads threads, the caller being one of them, and returns when all are
// done. Items are handed out one at a time from an atomic counter, so uneven
// items balance themselves. Calls from several threads at once are fine: each
// call is its own job, and a worker helps whichever job it finds first. A call
// made from inside fn runs serially on the calling thread (no deadlock).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace tandem::detail {

// Number of threads a `threads` option means: 0 -> all hardware threads.
int effective_threads(int requested);

void parallel_for(std::size_t n, int max_threads, const std::function<void(std::size_t)>& fn);
// The same on a second pool, whose workers run at a lower OS priority (a
// higher nice value, on Linux): long work there yields the cores to the
// short parallel_for bursts of the process's other threads, which would
// otherwise find every worker busy and run alone. The caller runs items at
// its own priority.
void parallel_for_background(std::size_t n, int max_threads, const std::function<void(std::size_t)>& fn);

// One memcpy of parallel_copy's list (no overlap).
struct Copy {
  void* dst;
  const void* src;
  std::size_t size;
};
// Host copies are split into pieces of this size, so that a few large ones
// still spread over the worker pool.
inline constexpr std::size_t kCopyPiece = std::size_t{1} << 20;
// Runs the copies on the worker pool in pieces of at most kCopyPiece bytes.
// first_piece is scratch, kept by the caller to reuse its memory.
void parallel_copy(const std::vector<Copy>& copies, std::vector<std::size_t>* first_piece);
// A single copy of n bytes, the same way.
void parallel_copy(void* dst, const void* src, std::size_t n);

// Batches of a streaming codec. A batch ends with a wait for its slowest
// item, so larger batches keep threads busier, but a batch read from a stream
// is held in memory. Hence: `batch_items` items per batch when they must be
// read (two per thread), and up to `max_batch_items` (about 64 MiB) when the
// input is already in memory anyway.
std::size_t batch_items(int threads);
std::size_t max_batch_items(int threads, std::size_t item_size);

}  // namespace tandem::detail
