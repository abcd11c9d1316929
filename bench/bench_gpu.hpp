// The GPU measurement of `tandem bench`: tandem's batched LZ4 calls
// (tandem_gpu.hpp) on raw blocks of one chunk size, in one of two modes:
//
//   device   the input is already in GPU memory: only lz4_compress_async or
//            lz4_decompress_async sits between the two CUDA events
//   host     the input starts and the result ends in pinned host memory:
//            compression times the upload of the input, the kernel, packing
//            the blocks end to end on the GPU and the download of the sizes,
//            statuses and packed blocks; decompression times the upload of the
//            packed blocks and of the item arrays, the kernel and the download
//            of the output and the statuses. Both split the batch into
//            slices of whole chunks, each on its own CUDA stream, so that a
//            slice's transfers overlap the other slices' kernels, as a caller
//            streaming host data through the GPU would
//
// A trial allocates everything when it is made and checks one untimed round
// trip; its timed calls then only enqueue work and wait for the stop event.
// The interface names no CUDA type, so that bench.cpp compiles without CUDA;
// a build without CUDA links bench_gpu_none.cpp, whose make_gpu_trial fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace tandem::bench {

enum class GpuMode { device, host };

inline constexpr GpuMode kGpuModes[] = {GpuMode::device, GpuMode::host};

constexpr const char* gpu_mode_name(GpuMode mode) { return mode == GpuMode::device ? "device" : "host"; }

// True when this build has the GPU measurement (a CUDA build).
bool gpu_bench_compiled();

class GpuTrial {
 public:
  virtual ~GpuTrial() = default;
  // One timed compression; *seconds from CUDA events on the trial's stream.
  // False, with error(), on any failure.
  virtual bool compress(double* seconds) = 0;
  // One timed decompression, then (untimed) a check on the GPU that the
  // output equals the input byte for byte and every item decoded to its size
  // with status ok. False, with error(), on any failure or mismatch.
  virtual bool decompress(double* seconds) = 0;
  // After the timed runs: decodes and checks every buffer set once more, and
  // in host mode checks the last downloaded blocks and output against the
  // warm-up's hashes. False, with error(), on any mismatch.
  virtual bool finish() = 0;

  // Sum of the block sizes (raw blocks: no framing).
  virtual std::uint64_t compressed_size() const = 0;
  // Blocks, and how many of them the GPU marked incompressible (a valid
  // block, not smaller than its chunk).
  virtual std::uint64_t items() const = 0;
  virtual std::uint64_t incompressible() const = 0;
  // How many buffer sets the timed runs rotate through.
  virtual int buffer_sets() const = 0;

  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

// A trial on device 0 for `input` (which must outlive it), whose XXH3-64 is
// `xxh3`, cut into chunks of `chunk` bytes. Allocates every buffer, then runs
// one untimed round trip through each buffer set and verifies it: the blocks
// decode with liblz4's LZ4_decompress_safe to the input, chunk by chunk, and
// the GPU's own decoding hashes to `xxh3`. Null, with *error, on any failure.
std::unique_ptr<GpuTrial> make_gpu_trial(std::span<const std::uint8_t> input, std::uint64_t xxh3,
                                         std::size_t chunk, GpuMode mode, std::string* error);

}  // namespace tandem::bench
