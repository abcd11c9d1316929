// tandem - the archive scanner's GPU path: a batch of archives scanned into
// one device allocation, every file's bytes back to back, with the same
// entry table (paths, order, layers, codecs, statuses, sizes) and the same
// bytes as scan() gives for each archive on its own.
//
// How it works: the host parses each layer's structure across ALL archives
// of the batch (gzip members, ZIP central directories, LZ4 frame blocks,
// zstd frames and blocks, tar headers) and builds block descriptors; each
// decoder kind then gets ONE dispatch per layer for the blocks of every
// archive (inflate for deflate, the LZ4 block decoder, and a copy kernel for
// stored data and zstd raw and RLE blocks). The GPU writes a status and an
// actual size per block. Blocks it rejects or cannot decode (zstd compressed
// blocks: "unsupported on GPU"; frames with dependent blocks) are decoded on
// the CPU (libdeflate, liblz4, libzstd) and their bytes uploaded, so the
// result is complete either way and never holds a wrong byte. Containers
// found inside a decompressed layer (a tar inside gzip, a tar.gz inside a
// ZIP) are copied back to the host to be parsed; the bytes of the files
// themselves stay in device memory. Checksums (gzip CRC-32 and ISIZE, ZIP
// CRC-32, LZ4 and zstd content checksums) are verified, a mismatch being the
// entry's status as in scan(); the CRC-32s, and whether each output is a
// file or a container, are taken on the device in the decoders' own round
// trip. Each layer's walk of an archive is its final one (the entries it
// lists stand) unless it finds something new to decode.
//
// The GPU and the CPU share each layer: inputs with a large decode unit (a
// long deflate stream, a large LZ4 block, a zstd frame that libzstd decodes;
// DeviceScanOptions::cpu_block_bytes) are decoded whole by a background CPU
// thread pool (its threads at a lower OS priority, so that the host's own
// parallel passes preempt them) while the device decodes the many small
// ones: a long stream is decoded serially on either side, and a CPU core
// does it faster than one warp. The CPU's bytes go up to the device in runs
// as the inputs finish, while the device and the rest of the pool still
// work.
//
// With DeviceScanOptions::gpu false, or in a build or on a machine without a
// CUDA device, the same descriptors, dispatches and fallbacks run through the
// CPU emulations of the kernels (the kernels' own __host__ __device__
// bodies), and "device memory" is host memory: CI checks the logic that the
// GPU runs.
//
// Functions are safe to call from several threads (each call owns its
// allocations and uses only the stream it is given).
//
// Memory: a call's temporary device memory comes from the device's default
// memory pool, allocated and freed in order on the call's stream; the first
// call on a device raises that pool's release threshold to an eighth of the
// device's memory (never lowers it), so that the pool keeps memory between
// calls instead of giving it back at each synchronisation. The result's
// allocation is plain cudaMalloc memory. Transfers of pageable host memory
// go through pinned host memory (8 MiB and room for descriptors for each
// call under way, and 8 MiB more for each upload that runs beside its other
// work: the archives', the CPU pool's outputs') that the scanner keeps for
// later calls until the process exits, as it keeps the host memory that
// outputs are downloaded into (up to 256 MiB). A call's other host memory
// (its parses, the CPU's outputs) is freed after the call returns, by a
// thread the scanner keeps for that (while four calls' worth waits there, a
// call frees its own before it returns).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "tandem/scan.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem {

struct DeviceScanOptions {
  // The stream every copy and kernel of the call is ordered on; the call
  // returns after synchronising it (the entry table needs the statuses).
  gpu::Stream stream = nullptr;
  // false: the same result through the CPU emulations, in host memory (for
  // CI and as a fallback). true falls back to the same when the build or the
  // machine has no CUDA device (DeviceScanStats::emulated then says so).
  bool gpu = true;
  // CPU threads for the blocks that fall back to the CPU and for host-side
  // checks (0: all hardware threads).
  unsigned threads = 0;
  // The hybrid's split: an input whose decode unit (a deflate stream, an
  // LZ4 compressed block, a zstd frame with compressed blocks) expects at
  // least this many bytes of output, or has at least this many compressed
  // bytes, is decoded whole by the CPU pool while the device decodes the
  // rest of the layer. Expected output is gzip's ISIZE, a ZIP entry's size,
  // an LZ4 block's size (its compressed size where only bounded) and a zstd
  // frame's content size (its compressed size where absent). 0: every input
  // that needs a decoder goes to the CPU (stored data and zstd raw and RLE
  // blocks stay on the device's copy kernel); UINT64_MAX: none does (the
  // device takes all it can). Either way the result is the same. The
  // default is 16 KiB: since the CPU decodes a gzip member in one libdeflate
  // call, 16 KiB measured 15.7 and 15.8 ms a call against 17.2 and 17.0 ms
  // for 32 KiB on 520 package archives on an H200 with 16 host threads (two
  // rounds; 14 and 15 threads alike: docs/benchmarks/2026-11-29-h200-scan.md).
  static constexpr std::uint64_t kDefaultCpuBlockBytes = 16u << 10;
  std::uint64_t cpu_block_bytes = kDefaultCpuBlockBytes;
  // Nested layers found after the first dispatch: an archive's walk decodes
  // their new inputs itself, on the CPU, up to this many compressed bytes
  // per archive and layer; past that, the inputs go to the next dispatch.
  // A dispatch's round trip (about 0.4 ms on an H200) costs more than a few
  // small inputs: the 520 package archives of the benchmark have one JAR
  // inside a JAR, whose 11 entries took a second dispatch of their own. The
  // first layer's inputs always go to the dispatch. 0: every nested layer
  // gets its own dispatch. Either way the result is the same.
  static constexpr std::uint64_t kDefaultWalkCpuBytes = 256u << 10;
  std::uint64_t walk_cpu_bytes = kDefaultWalkCpuBytes;
};

// What the call did, for profiling. Blocks are descriptors of one dispatch
// (a deflate stream, an LZ4 block, a zstd block, a stored copy).
struct DeviceScanStats {
  std::uint64_t gpu_blocks = 0;        // blocks the device (or its emulation) decoded
  std::uint64_t gpu_bytes = 0;         // bytes they produced
  std::uint64_t cpu_blocks = 0;        // blocks (or whole frames/members) decoded on the CPU instead
  std::uint64_t cpu_bytes = 0;         // bytes those produced
  std::uint64_t policy_blocks = 0;     // inputs the split (cpu_block_bytes) gave the CPU pool: each decoded
                                       // there while the device worked (in cpu_blocks when it succeeded)
  std::uint64_t policy_bytes = 0;      // bytes those produced (part of cpu_bytes)
  std::uint64_t unsupported_blocks = 0;  // blocks the GPU said it cannot decode (zstd compressed blocks)
  std::uint64_t rejected_blocks = 0;     // inputs (a member, an entry, frames) whose device result failed a
                                         // check (bad data, wrong size, checksum): decoded again on the CPU
  std::uint64_t rejected_bytes = 0;      // bytes the CPU produced for those (part of cpu_bytes)
  std::uint64_t walk_cpu_blocks = 0;     // nested layers' inputs the walks decoded on the CPU
                                         // (DeviceScanOptions::walk_cpu_bytes), not in cpu_blocks
  std::uint64_t layers = 0;            // dispatch rounds (layers of nesting across the batch)
  std::uint64_t dispatches = 0;        // launches: per layer at most 3 decoders and a CRC-32; the final gather
  std::uint64_t host_to_device_bytes = 0;
  std::uint64_t device_to_host_bytes = 0;  // outputs' first bytes, and whole outputs to parse or to xxHash
  double seconds = 0;                  // wall time of the call, the sum of the phases below:
  double setup_seconds = 0;            //   the device's choice and set-up, the archives' device allocation
  double upload_seconds = 0;           //   the archives' transfer: its start, and the time the call waited
                                       //   for it before the first read of the device copies (it runs on a
                                       //   thread of its own beside the first discovery walk, so most of it
                                       //   hides there); the copy back for scan_device_archive
  double walk_seconds = 0;             //   the host's discovery walks and parsing of structure
  double prepare_seconds = 0;          //   block layout (zstd frames with compressed blocks decoded here)
  double device_seconds = 0;           //   dispatches, their allocations, waits and transfers, checks of the
                                       //   outputs, the upload of the CPU's outputs (those of the pool's
                                       //   inputs go up as each finishes, on a thread of their own beside the
                                       //   device: here the wait for the last of them; the rest, those that
                                       //   outgrew their headers' size and the rejected, after the pool);
  double device_call_seconds = 0;      //     of which inside the device's calls (launches and their waits,
                                       //     transfers; with the emulation, the emulated kernels)
  double cpu_seconds = 0;              //   after the device's part: the inputs it rejected, decoded on the
                                       //   CPU, and the wait for the pool's inputs (below) where the device
                                       //   finished first
  double final_walk_seconds = 0;       //   the final walks left (with the CPU decodes they ask for): each
                                       //   pass's walk of an archive is its final walk when it finds nothing
                                       //   new to decode, and counts in walk_seconds then
  double entry_table_seconds = 0;      //   the gather's list of where each entry's bytes are (the entries
                                       //   join the result's table on a thread of their own beside the gather)
  double result_alloc_seconds = 0;     //   the wait for the result's allocation (made beside the list)
  double gather_seconds = 0;           //   the upload of entries' bytes held on the host, the final gather,
                                       //   and the wait for the table
  double release_seconds = 0;          //   freeing the call's temporary device memory (its host state is
                                       //   freed after the call returns, on a thread of the scanner's)
  double cpu_pool_seconds = 0;         // not a phase of its own: the CPU pool's time on the inputs it took
                                       // at the start of each layer (the split's, and those the device cannot
                                       // take), while the device part ran
  bool emulated = false;               // true when no device was used

  // The phases that add up to `seconds`, named, in the order a call runs them.
  struct Phase {
    const char* name;
    double seconds;
  };
  std::array<Phase, 11> phases() const {
    return {{{"setup", setup_seconds},
             {"upload", upload_seconds},
             {"walk", walk_seconds},
             {"prepare", prepare_seconds},
             {"device", device_seconds},
             {"cpu", cpu_seconds},
             {"final_walk", final_walk_seconds},
             {"entry_table", entry_table_seconds},
             {"result_alloc", result_alloc_seconds},
             {"gather", gather_seconds},
             {"release", release_seconds}}};
  }
};

// The result of scan_to_device: one allocation (device memory, or host
// memory when stats.emulated) holding every ok entry's bytes back to back,
// freed by the destructor; movable, not copyable.
class DeviceScanResult {
 public:
  DeviceScanResult() = default;
  DeviceScanResult(DeviceScanResult&& other) noexcept;
  DeviceScanResult& operator=(DeviceScanResult&& other) noexcept;
  DeviceScanResult(const DeviceScanResult&) = delete;
  DeviceScanResult& operator=(const DeviceScanResult&) = delete;
  ~DeviceScanResult();

  // Device memory (host memory when stats.emulated) of size() bytes; null
  // when size() is 0.
  const void* device_bytes() const { return bytes_; }
  std::uint64_t size() const { return size_; }
  // Copies the bytes to the host (a synchronous copy on the default stream).
  Status copy_to_host(std::vector<std::uint8_t>* out) const;
  // Frees the allocation and clears the entries.
  void reset();

  // Every archive's entries, archive after archive, each archive's in the
  // order scan() lists them; ScanEntry::archive says whose, ScanEntry::offset
  // is into device_bytes().
  std::vector<ScanEntry> entries;
  DeviceScanStats stats;

  // For the implementation: frees the bytes held and takes ownership of
  // `bytes` (device memory when on_device, else from std::malloc); the
  // entries stay.
  void adopt(void* bytes, std::uint64_t size, bool on_device);

 private:
  void* bytes_ = nullptr;
  std::uint64_t size_ = 0;
  bool on_device_ = false;
};

// Scans every archive of `archives` (host memory, held by the caller until
// the call returns; pageable memory goes up through pinned memory that the
// scanner keeps across calls, pinned or registered memory goes up directly)
// into result. Limits apply to each archive on its own, as
// scan() applies them. The call's status is not ok for an argument error, a
// device error (out of device memory, a failed launch), or when an archive's
// entries pass limits.max_entries (bad_data, as scan() says; the entries
// found before it stay listed).
Status scan_to_device(std::span<const ScanInput> archives, const ScanLimits& limits, const DeviceScanOptions& options,
                      DeviceScanResult* result);

// The same for one archive already in device memory (d_archive, `size`
// bytes; host memory when options.gpu is false), named `name`. The host
// copies the archive back to parse its structure; the decoders read it where
// it is.
Status scan_device_archive(const void* d_archive, std::uint64_t size, std::string_view name,
                           const ScanLimits& limits, const DeviceScanOptions& options, DeviceScanResult* result);

}  // namespace tandem
