// LZ4 batches of host buffers on the GPU: the host-resident path used by the
// frame writer and reader, compress_batch/decompress_batch with Backend::gpu,
// and the benchmark. The engine copies items into device memory, runs the
// batched kernels of tandem_gpu.hpp and copies results back. It owns a stream,
// pinned staging and device buffers that grow to the largest batch seen and are
// reused: no allocation per batch once warm.
//
// A call is cut into sub-batches of bounded size that run through two slots
// (a stream and its buffers each), so that the copies and the kernels of
// consecutive sub-batches overlap. Device outputs are packed on the device
// before they come back, so only the bytes produced cross the bus.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>

#include "tandem/tandem.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

// How the frame codecs batch blocks for Backend::gpu. A GPU call has a fixed
// cost (launches, synchronisation, the bus latency) and needs many items to
// fill the device, so its batches are larger than the CPU's: this many input
// bytes per batch when the input must be read from a stream, and up to the
// second figure when it is already in memory. (Backend::automatic keeps the
// CPU's batches and their memory bound, and uses the GPU for those that suit
// it, below.)
inline constexpr std::size_t kStreamBatchBytes = std::size_t{64} << 20;
inline constexpr std::size_t kMemoryBatchBytes = std::size_t{256} << 20;
// Whether Backend::automatic sends a batch of `items` items and `bytes` input
// bytes to the GPU rather than to `threads` CPU threads: when the GPU's
// estimated throughput is the higher. The kernels give each item one warp,
// so the engine's throughput grows with the item count up to a ceiling (the
// bus, for decoding); the CPU's grows with its threads. The rates, in MB/s,
// are what tandem measured on an H100 host with 16 cores on Silesia data:
// compression 6.8 per item up to 12700 (1024 items of 64 KiB: 7 GB/s; 64 of
// 4 MiB: 0.8 GB/s) against 300 per thread; decoding 7.7 per item up to 15000
// against 1800 per thread, so 16 cores decode faster than the GPU. Batches
// under kAutoMinBatchBytes stay on the CPU, which finishes them before the
// device would have started (and a short file does not pay for creating the
// CUDA context).
enum class Direction { compress, decompress };
inline constexpr std::size_t kAutoMinBatchBytes = std::size_t{16} << 20;
inline bool auto_prefers_gpu(Direction direction, std::size_t items, std::size_t bytes, int threads) {
  struct Rates {
    double per_item, ceiling, per_thread;
  };
  constexpr Rates kCompress{6.8, 12700, 300};
  constexpr Rates kDecompress{7.7, 15000, 1800};
  const Rates& r = direction == Direction::compress ? kCompress : kDecompress;
  if (bytes < kAutoMinBatchBytes) return false;
  const double gpu = std::min(r.ceiling, r.per_item * static_cast<double>(items));
  return gpu > r.per_thread * threads;
}

// Whether a batch whose backend resolved to the GPU goes there: always when
// the caller asked for the GPU, by auto_prefers_gpu when it asked for auto.
inline bool batch_on_gpu(Backend requested, Direction direction, std::size_t items, std::size_t bytes, int threads) {
  return requested == Backend::gpu || auto_prefers_gpu(direction, items, bytes, threads);
}

// The frame codecs' batch sizes in blocks of `block` bytes (*batch from a
// stream, *max_batch in memory), raised to the GPU's when the caller asked for
// the GPU; `automatic` keeps the CPU's memory bound.
inline void grow_batches_for_gpu(Backend requested, std::size_t block, std::size_t* batch, std::size_t* max_batch) {
  if (requested != Backend::gpu) return;
  *batch = std::max(*batch, kStreamBatchBytes / block);
  *max_batch = std::max(*max_batch, kMemoryBatchBytes / block);
}

class Lz4HostEngine {
 public:
  // An engine on device 0; no_device when this build or machine has no GPU,
  // device_error when the device cannot be set up.
  static Status create(std::unique_ptr<Lz4HostEngine>* engine);
  // The process-wide engine shared by the frame writer and reader (created on
  // first use, never destroyed). Callers hold lock() around each batch.
  static Status shared(Lz4HostEngine** engine);

  virtual ~Lz4HostEngine() = default;

  // An engine runs one call at a time: a shared engine's callers hold this
  // lock for the duration of a call (and of the use of its results).
  [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }

  // Called on the calling thread, while later items are still on the device,
  // with n such that items [0, n) of the call are final (outputs, results and
  // statuses written); n grows from call to call and ends at the item count
  // when the call succeeds. Lets a caller overlap its own per-item work
  // (checksums, framing) with the device.
  using ItemsDone = std::function<void(std::size_t n)>;

  // Host buffers in and out, as compress_batch; the GPU encoder has one level
  // (LZ4 fast, acceleration 1). An item whose block is not smaller than its
  // input gets status ok and statuses[i] = incompressible (statuses may be
  // empty when the caller does not need them). An item whose block does not
  // fit outputs[i] fails with output_too_small, its output untouched.
  // Returns ok when every item succeeded, else the status of the first failed
  // item; device_error (in the return value and every unfinished item's
  // result) when the device failed, in which case the call may be repeated
  // on the CPU.
  virtual Status compress(std::span<const ConstBuffer> inputs, std::span<const MutableBuffer> outputs,
                          std::span<ItemResult> results, std::span<ItemStatus> statuses,
                          const ItemsDone& done = {}) = 0;
  // As decompress_batch; statuses and the return value as above.
  virtual Status decompress(std::span<const ConstBuffer> inputs, std::span<const MutableBuffer> outputs,
                            std::span<ItemResult> results, std::span<ItemStatus> statuses,
                            const ItemsDone& done = {}) = 0;

 private:
  std::mutex mutex_;
};

}  // namespace tandem::gpu
