// The archive scanner's device: memory, copies and one dispatch per decoder
// kind, for scan_to_device (codec/scan_device.cpp). Two implementations: the
// CUDA one (scan_gpu.cu; scan_gpu_none.cpp says no_device without CUDA) and
// the emulation (scan_gpu_emulate.cpp), where device memory is host memory
// and the kernels' bodies run on the CPU: the same descriptors and results.
//
// A dispatch takes lists of jobs in host memory whose pointers are device
// memory, runs each list in one launch (inflate_async, lz4_decompress_async,
// the copy, CRC-32 and layer kernels of scan_gpu_body.hpp), waits once, and
// writes each job's outcome back into the host arrays.
//
// Transfers take host memory of any kind: the CUDA device stages pageable
// memory through pinned memory of its own and copies pinned, registered,
// device and managed memory directly.
//
// A device object is used by one thread at a time; an uploader (below)
// lets another thread's uploads overlap it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "gpu/inflate_body.hpp"
#include "gpu/scan_gpu_body.hpp"
#include "tandem/tandem.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

// One block of an inflate or LZ4 dispatch.
struct ScanDecodeJob {
  const void* in = nullptr;  // device
  std::size_t in_size = 0;
  void* out = nullptr;       // device
  std::size_t capacity = 0;
  // Written by the dispatch.
  std::size_t out_size = 0;
  std::size_t in_used = 0;   // inflate only
  bool ok = false;           // decoded without error (inflate: ended on a final block)
};

// One item of a copy dispatch, and its status.
struct ScanCopyJob {
  ScanCopyItem item;
  ScanCopyStatus status = ScanCopyStatus::ok;
};

// One copy of a download_many.
struct ScanTransfer {
  void* dst = nullptr;        // host
  const void* src = nullptr;  // device
  std::size_t bytes = 0;
};

// One copy of an upload_many.
struct ScanUpload {
  void* dst = nullptr;        // device
  const void* src = nullptr;  // host
  std::size_t bytes = 0;
  // The device bytes from dst + bytes up to the next multiple of 256 (of
  // the address) are the caller's padding: the upload may overwrite them, so
  // that uploads laid out one after another go in one DMA.
  bool padded = false;
};

class ScanDevice {
 public:
  virtual ~ScanDevice() = default;
  virtual bool emulated() const = 0;
  // Device memory of `bytes` bytes (at least 1), 256-byte aligned, for the
  // device's stream until free (ordered on the stream after every use of it;
  // before the device object goes).
  virtual Status alloc(std::size_t bytes, void** ptr) = 0;
  virtual void free(void* ptr) = 0;
  // The same for the result, which outlives the device object: freed by
  // free_cuda_scan_memory (std::free when emulated). It may be called from
  // another thread while the caller's makes no device call.
  virtual Status alloc_result(std::size_t bytes, void** ptr) = 0;
  // Host memory of `bytes` bytes that transfers reach without staging
  // (pinned; plain host memory when emulated), for outputs the CPU writes
  // and the device then takes; kept across calls. Null with ok when none can
  // be had (the caller uses ordinary memory then). host_free gives it back
  // once no transfer of it is in flight.
  virtual Status host_alloc(std::size_t bytes, std::uint8_t** ptr) = 0;
  virtual void host_free(std::uint8_t* ptr) = 0;
  // Whether the device's kernels (a copy's destinations) may write
  // host_alloc's memory at its host address (unified addressing).
  virtual bool kernels_reach_host() const { return false; }
  // Ordered on the device's stream; upload returns once `src` may be reused.
  virtual Status upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual Status download(void* dst, const void* src, std::size_t bytes) = 0;
  // Every transfer, then one wait.
  virtual Status download_many(std::span<const ScanTransfer> transfers) = 0;
  // Every copy, then one wait: the sources may be reused once it returns.
  // The destinations lie in one allocation (copies whose device bytes meet,
  // or meet but for padding, may go in one DMA).
  virtual Status upload_many(std::span<const ScanUpload> uploads) = 0;
  // upload_many without its wait: the copies are queued on the stream,
  // before everything called on this device afterwards, and the pageable
  // sources may be reused once it returns; pinned ones (host_alloc's) must
  // stay until the stream is next waited for (the device object's end
  // waits too).
  virtual Status upload_queued(std::span<const ScanUpload> uploads) { return upload_many(uploads); }
  // A device for uploads from another thread while this one works on: its
  // own stream, ordered after everything called on this one so far (so
  // memory from this one's alloc may be its destinations), and its own
  // pinned stage; its upload_many waits for its own copies only, which then
  // come before anything called on this one afterwards. Only upload and
  // upload_many may be called on it, from one thread at a time (any one:
  // it makes its calls on this one's CUDA device). Its destructor waits for
  // its copies; it goes before this one, and before the memory it wrote is
  // freed.
  virtual Status uploader(std::unique_ptr<ScanDevice>* out) = 0;
  // One dispatch of every list: the inflate jobs, the LZ4 jobs and the
  // copies, then the CRC-32 of every piece and the layer of every output
  // (scan_layer_of of its first bytes), which may read what the decoders
  // wrote. One upload of the descriptors, one wait, one download of the
  // results.
  Status decode(std::span<ScanDecodeJob> inflates, std::span<ScanDecodeJob> lz4s, std::span<ScanCopyJob> copies,
                std::span<ScanCrcPiece> pieces, std::span<ScanLayerJob> layers) {
    if (Status s = decode_start(inflates, lz4s, copies, pieces, layers); !s) return s;
    return decode_finish();
  }
  // decode() in two halves, so that the caller's thread works while the
  // device does: decode_start takes the descriptors and launches (the
  // spans stay the caller's, unread, until decode_finish), decode_finish
  // waits and writes the results into the spans. Nothing else may be
  // called between them.
  virtual Status decode_start(std::span<ScanDecodeJob> inflates, std::span<ScanDecodeJob> lz4s,
                              std::span<ScanCopyJob> copies, std::span<ScanCrcPiece> pieces,
                              std::span<ScanLayerJob> layers) = 0;
  virtual Status decode_finish() = 0;
  // A dispatch of copies alone, and one of checks alone.
  Status copy(std::span<ScanCopyJob> jobs) { return decode({}, {}, jobs, {}, {}); }
  Status check(std::span<ScanCrcPiece> pieces, std::span<ScanLayerJob> layers) {
    return decode({}, {}, {}, pieces, layers);
  }
};

// The emulation, its CPU work spread over `threads` threads (0: all).
std::unique_ptr<ScanDevice> make_emulated_scan_device(unsigned threads);
// The CUDA device on `stream`; no_device without CUDA or without a device.
Status make_cuda_scan_device(Stream stream, std::unique_ptr<ScanDevice>* device);
// Frees memory that make_cuda_scan_device's allocations gave (for
// DeviceScanResult, which outlives its device object).
void free_cuda_scan_memory(void* ptr);

}  // namespace tandem::gpu
