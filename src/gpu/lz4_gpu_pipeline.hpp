// The GPU worker's device side for LZ4 frames: batches of host chunks go in,
// frame bytes (compression) or decoded bytes (decompression) come back, with
// several batches in flight so that the host-to-device copy, the kernels and
// the device-to-host copy of consecutive batches overlap.
//
// One pipeline per GPU per process (shared(), never destroyed): its streams,
// events, device buffers and pinned buffers are made once, grow to the
// largest batch seen and are reused, so that a warm run allocates nothing per
// chunk or per batch. A run holds lock() from begin() to its last complete()
// or abandon().
//
// What a chunk is:
//  - compress: `data` is a piece of the input. It is cut into blocks of
//    block_size bytes (the last one shorter), and its output is those blocks
//    as LZ4 frame blocks, concatenated: for each block a little-endian word
//    and a payload, the word being the LZ4 block's size when the GPU encoder
//    (acceleration 1) made it smaller than the block, else the block's size |
//    0x80000000 with the block itself as the payload (stored raw); then, when
//    block_checksum is set, XXH32 (seed 0) of the payload.
//  - decompress: `data` is a run of frame blocks of one frame, as above (each
//    word non-zero, no end mark, payload at most block_size bytes, a checksum
//    after each payload when block_checksum is set). Its output is the decoded
//    blocks concatenated (a raw block decodes to its payload). A block that
//    does not decode to at most block_size bytes, or whose checksum differs
//    (when verify_checksums), fails the chunk with bad_data /
//    checksum_mismatch; the caller may then decode that chunk on the CPU for
//    the authoritative verdict.
//
// Memory: chunk data in pinned host memory (cudaHostAlloc or registered) is
// copied straight to the device; other host memory is first copied into the
// pipeline's pinned staging. Outputs land in pinned buffers of the pipeline's
// own (held by PipelineOut::keep while the caller needs them), or, in
// decompression, at PipelineIn::direct when given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::gpu {

enum class PipelineMode { compress, decompress };

struct Lz4PipelineOptions {
  PipelineMode mode = PipelineMode::compress;
  std::size_t block_size = std::size_t{64} << 10;  // compress: the blocks; decompress: the frame's block maximum
  bool block_checksum = false;   // compress: write them; decompress: the chunks carry them
  bool verify_checksums = true;  // decompress: check the block checksums
};

struct PipelineIn {
  std::span<const std::uint8_t> data;  // host memory
  // Decompression only, optional: where the chunk's decoded bytes go (host
  // memory, pinned for a direct copy), with room for direct_capacity bytes.
  std::uint8_t* direct = nullptr;
  std::size_t direct_capacity = 0;
};

struct PipelineOut {
  Status status;                       // of this chunk
  std::span<const std::uint8_t> bytes;  // its output (at direct when one was given)
  std::shared_ptr<const void> keep;    // holds the memory of bytes while alive (null for direct)
};

// Compression: where a batch's frame bytes go instead of the pipeline's own
// buffers. Called at most once per batch (and batches in the order of their
// submission), on the thread that calls complete(), once the batch's size is
// known; returns room for `bytes` bytes that placeable() accepts, or null for
// the pipeline's buffers. The batch's outputs are then views of that room,
// with no keep. A null return has no effect: it may be asked again. With
// `wait` (the oldest batch, which the pipeline cannot hold back), the caller
// may wait a while for the room to become known rather than answer null.
using PlaceFn = std::function<std::uint8_t*(std::size_t bytes, bool wait)>;

// Device time of one batch, from CUDA events, in milliseconds.
struct BatchTimes {
  double h2d_ms = 0;
  double kernel_ms = 0;
  double d2h_ms = 0;
  // The same on the host's clock, when known: std::chrono::steady_clock
  // seconds since its epoch, of the start and end of the copy in, the end of
  // the kernels, the start and end of the copy back.
  bool timed = false;
  double h2d_start = 0, h2d_end = 0, kernel_end = 0, d2h_start = 0, d2h_end = 0;
};

// Faults that tests inject to check that a run survives the GPU failing.
enum class Fault {
  none,
  no_device,      // begin() answers no_device, as on a machine without a GPU
  out_of_memory,  // a buffer cannot be had (device_error, "out of memory")
  kernel,         // a kernel fails (reported by complete())
  copy,           // a host-device copy fails (reported by submit())
};
// Arms a fault for every pipeline of the process: it fires in the batch
// numbered `after_batches` (0 = the first) counted from this call, once.
// Fault::none disarms.
void inject_fault(Fault fault, int after_batches);
// Parses "no-device", "oom", "kernel", "copy"; false on anything else.
bool parse_fault(const char* name, Fault* fault);

class Lz4Pipeline {
 public:
  // The process's pipeline of GPU `gpu` (CUDA device number), made on first
  // use. no_device when this build has no CUDA or there is no such device.
  static Status shared(int gpu, Lz4Pipeline** pipeline);
  // A pipeline that runs on the CPU: the GPU encoder's twin (the same bytes
  // as the GPU writes) and decoder, computed in submit(). For tests of the
  // hybrid scheduler on machines without a GPU; it honours injected faults.
  static std::unique_ptr<Lz4Pipeline> emulated();

  virtual ~Lz4Pipeline() = default;

  [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  // The lock if no other run holds it now (owns_lock() says).
  [[nodiscard]] std::unique_lock<std::mutex> try_lock() {
    return std::unique_lock<std::mutex>(mutex_, std::try_to_lock);
  }

  // Starts a run in this mode; abandons whatever an earlier run left behind.
  virtual Status begin(const Lz4PipelineOptions& options) = 0;
  // Batches in flight at most (submit() beyond it is an invalid_argument).
  virtual int depth() const = 0;
  // Input bytes per batch that keep the device busy.
  virtual std::size_t batch_bytes() const = 0;
  // Queues one batch (copies and kernels) and returns without waiting for
  // the device. device_error / no_device: the device failed; the caller
  // should abandon() and give every chunk in flight to the CPU.
  // `place` (compression; may be empty): see PlaceFn.
  virtual Status submit(std::span<const PipelineIn> chunks, PlaceFn place = {}) = 0;
  // Whether host memory [p, p + n) can receive placed bytes: the device
  // copies straight into it (pinned memory).
  virtual bool placeable(const void* p, std::size_t n) const = 0;
  // Waits for the oldest batch in flight; outs receives one entry per chunk
  // of it, in order. Returns device_error when the device failed (then the
  // outs are not to be used); otherwise ok, with each chunk's own status in
  // its entry.
  virtual Status complete(std::vector<PipelineOut>* outs, BatchTimes* times) = 0;
  // Drops every batch in flight, waiting for the device to let go of their
  // memory. Safe after a failure.
  virtual void abandon() = 0;
  // Batches in flight now.
  virtual int in_flight() const = 0;

 private:
  std::mutex mutex_;
};

}  // namespace tandem::gpu
