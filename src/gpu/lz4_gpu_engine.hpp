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

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>

#include "tandem/tandem.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

// How the frame codecs batch blocks for the engine. A GPU call has a fixed
// cost (launches, synchronisation, the bus latency) and needs many items to
// fill the device, so its batches are larger than the CPU's: this many input
// bytes per batch when the input must be read from a stream, and up to the
// second figure when it is already in memory.
inline constexpr std::size_t kStreamBatchBytes = std::size_t{64} << 20;
inline constexpr std::size_t kMemoryBatchBytes = std::size_t{256} << 20;
// Backend::automatic sends a batch to the GPU only from this many bytes on:
// below it the CPU finishes before the device would have started (and a short
// file does not pay for creating the CUDA context).
inline constexpr std::size_t kAutoMinBatchBytes = std::size_t{8} << 20;

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
