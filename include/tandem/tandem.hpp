// tandem - C++ interface.
//
// The public surface of the library: status codes, the batch data model, LZ4
// block batches and LZ4 frames (in memory and streamed with bounded memory).
//
// Conventions:
// - Every buffer is host memory unless its comment says otherwise.
// - Functions keep no hidden global state other than a shared thread pool,
//   and are safe to call from several threads at once.
// - Decoders treat their input as hostile: they check every length, offset and
//   count, return a status, never write outside the output they were given,
//   and honour an output size limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/tandem.h"

namespace tandem {

namespace sched {
struct RunMetrics;  // tandem/scheduler.hpp
}

// ---------------------------------------------------------------- status ----

// Numeric values are permanent and equal to the C enum tandem_status.
enum class StatusCode : int {
  ok = TANDEM_OK,
  bad_data = TANDEM_BAD_DATA,
  output_too_small = TANDEM_OUTPUT_TOO_SMALL,
  unsupported = TANDEM_UNSUPPORTED,
  io_error = TANDEM_IO_ERROR,
  device_error = TANDEM_DEVICE_ERROR,
  invalid_argument = TANDEM_INVALID_ARGUMENT,
  checksum_mismatch = TANDEM_CHECKSUM_MISMATCH,
  truncated = TANDEM_TRUNCATED,
  out_of_memory = TANDEM_OUT_OF_MEMORY,
  output_limit = TANDEM_OUTPUT_LIMIT,
  no_device = TANDEM_NO_DEVICE,
  not_found = TANDEM_NOT_FOUND,
};

// A code and, where there is one, the reason: a static string naming what was
// wrong ("block size exceeds the frame's maximum"). Cheap to copy.
struct Status {
  StatusCode code = StatusCode::ok;
  const char* reason = nullptr;  // static storage; may be null

  constexpr Status() = default;
  constexpr Status(StatusCode c, const char* r = nullptr) : code(c), reason(r) {}
  constexpr bool ok() const { return code == StatusCode::ok; }
  constexpr explicit operator bool() const { return ok(); }
  // "bad data: block size exceeds the frame's maximum"
  std::string to_string() const;
};

// Short fixed description of a code ("bad data", "output too small", ...).
const char* status_message(StatusCode code);
// Stable identifier of a code ("bad_data").
const char* status_name(StatusCode code);

// ------------------------------------------------------ codecs, backends ----

enum class Codec : int { lz4 = 1 };
enum class Backend : int { cpu = TANDEM_BACKEND_CPU, gpu = TANDEM_BACKEND_GPU, automatic = TANDEM_BACKEND_AUTO };

const char* codec_name(Codec codec);
const char* backend_name(Backend backend);  // "cpu", "gpu", "auto"
// Parses "cpu", "gpu" or "auto"; returns false on anything else.
bool parse_backend(std::string_view text, Backend* backend);

// What this build and this machine offer.
struct BackendInfo {
  bool cuda_compiled = false;  // the library was built with the CUDA backend
  int gpu_count = 0;           // usable CUDA devices now (0 when not compiled)
  std::string gpu_name;        // name of device 0, empty when none
};
BackendInfo backend_info();

// Resolves `automatic` for a codec and checks that the choice can run here:
// `automatic` is the GPU when this build has CUDA and a device is present,
// else the CPU. Returns no_device or unsupported with a reason when the
// request cannot run. This answers for decompression and for compression at
// the default level; compression at another level asks the overload below.
Status resolve_backend(Codec codec, Backend requested, Backend* resolved);

// As above, for compression at `level` (as BatchOptions::level). The GPU's
// LZ4 encoder has one level, LZ4 fast with acceleration 1, what levels 0..2
// mean on the CPU. So `automatic` is the CPU for the levels the GPU lacks (HC
// levels 3..12 and the faster negative levels), and `gpu` with an HC level is
// unsupported; `gpu` with a negative level runs at acceleration 1 (smaller
// output than asked for, still valid).
Status resolve_backend(Codec codec, Backend requested, int level, Backend* resolved);

// Hardware threads of this machine (at least 1).
int hardware_threads();

// ----------------------------------------------------- batch data model ----

// One item of a batch: a pointer and a size, in host memory for every
// backend (the GPU backend copies items to the device and results back;
// device-resident batches use tandem_gpu.hpp).
struct ConstBuffer {
  const void* data = nullptr;
  std::size_t size = 0;
};
struct MutableBuffer {
  void* data = nullptr;
  std::size_t size = 0;  // capacity
};

// The outcome of one item: its status and the number of bytes it produced.
struct ItemResult {
  Status status;
  std::size_t size = 0;
};

struct BatchOptions {
  // gpu: items go through the GPU (their bytes are copied to the device and
  // back). automatic: the GPU for a batch of 16 MiB and more at a level it
  // has (see resolve_backend) when, by rates tandem measured, it outruns the
  // CPU's threads, which takes many items (on a 16-core host: some 700 items
  // to compress; decoding stays on the CPU); else, or when the device fails,
  // the CPU.
  Backend backend = Backend::automatic;
  // LZ4: 0..2 fast (acceleration 1), 3..12 high compression (HC), -N: fast
  // with acceleration N (faster, larger output).
  int level = 0;
  int threads = 0;  // 0 = all hardware threads
};

// Upper bound of the compressed size of one item of `input_size` bytes;
// 0 when the codec cannot take an item that large.
std::size_t max_compressed_size(Codec codec, std::size_t input_size);

// Compresses inputs[i] into outputs[i] for every i and fills results[i]. The
// three spans must have the same length. Returns ok when every item succeeded,
// else the status of the first failed item; invalid_argument when the spans
// disagree. An item whose output is too small fails with output_too_small;
// size outputs with max_compressed_size to avoid that.
Status compress_batch(Codec codec, std::span<const ConstBuffer> inputs,
                      std::span<const MutableBuffer> outputs, std::span<ItemResult> results,
                      const BatchOptions& options = {});

// Decompresses every item; outputs[i].size bounds what item i may produce.
Status decompress_batch(Codec codec, std::span<const ConstBuffer> inputs,
                        std::span<const MutableBuffer> outputs, std::span<ItemResult> results,
                        const BatchOptions& options = {});

// ------------------------------------------------------------- streams ----

// A byte source read front to back. ensure(n) makes at least n bytes (fewer
// only at the end of the input) available, contiguous, at data(); consume(n)
// drops the first n of them. Pointers from data() stay valid until the next
// ensure().
class Source {
 public:
  virtual ~Source() = default;
  // Sets *available to the number of bytes now available at data().
  virtual Status ensure(std::size_t n, std::size_t* available) = 0;
  virtual const std::uint8_t* data() const = 0;
  virtual void consume(std::size_t n) = 0;
  // Bytes consumed so far.
  virtual std::uint64_t position() const = 0;
  // Total size when known in advance (a memory buffer or a regular file), else -1.
  virtual std::int64_t size_hint() const { return -1; }
  // True when the bytes at data() stay where they are, unchanged, for the
  // life of the source (a memory buffer): readers may then keep pointers into
  // consumed input instead of copying it.
  virtual bool stable() const { return false; }
};

// A byte sink written front to back. reserve(n) returns room for n bytes;
// commit(m) appends the first m (m <= n) of them. Writing through pointers of
// an earlier reserve after a later reserve or commit is not allowed.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status reserve(std::size_t n, std::uint8_t** room) = 0;
  virtual Status commit(std::size_t n) = 0;
  // Pushes buffered bytes to their destination.
  virtual Status flush() { return {}; }
  // Bytes committed so far.
  virtual std::uint64_t position() const = 0;
  // Where bytes [position, position + n) of the output will lie, for a
  // writer that fills them ahead of the position: it commits them later, in
  // order, and reserve() then returns that same address, so that nothing is
  // copied. Null when the sink has no such fixed memory (a stream, a growing
  // vector) or the bytes would not fit; the default. Unlike the rest of a
  // sink, it may be called from another thread while reserve() and commit()
  // run: it must not depend on the sink's position.
  virtual std::uint8_t* place(std::uint64_t position, std::size_t n) {
    (void)position;
    (void)n;
    return nullptr;
  }
  // Convenience: reserve, copy, commit.
  Status write(const void* data, std::size_t n);
};

// A source over a caller's buffer, which must outlive it. No copies.
std::unique_ptr<Source> memory_source(ConstBuffer input);
// A source reading a file descriptor (a file, a pipe, stdin) through a buffer.
// The descriptor is not closed.
std::unique_ptr<Source> fd_source(int fd);
// A sink appending to *out, failing with output_limit beyond `limit` bytes in
// total. *out may hold reserved bytes past the committed ones until the sink
// is flushed or destroyed; its size is final then.
std::unique_ptr<Sink> vector_sink(std::vector<std::uint8_t>* out,
                                  std::uint64_t limit = UINT64_MAX);
// A sink filling a caller's buffer; output_too_small when it is full.
std::unique_ptr<Sink> buffer_sink(MutableBuffer output);
// A sink writing a file descriptor through a buffer. The descriptor is not closed.
std::unique_ptr<Sink> fd_sink(int fd);

// Called after each batch of blocks with the bytes read and written so far.
using ProgressFn = std::function<void(std::uint64_t bytes_in, std::uint64_t bytes_out)>;

// ---------------------------------------------------------- LZ4 frames ----

// Options of the LZ4 frame writer. The defaults write what `lz4` writes, plus
// the content size when it is known.
struct Lz4FrameOptions {
  int level = 0;                        // as BatchOptions::level
  std::size_t block_size = 4u << 20;    // 64 KiB, 256 KiB, 1 MiB or 4 MiB
  bool linked_blocks = false;           // blocks may refer to earlier blocks (smaller, serial)
  bool content_checksum = true;         // XXH32 of the whole content
  bool block_checksum = false;          // XXH32 of every block
  bool content_size = true;             // store the size when the source knows it
  bool legacy = false;                  // write the legacy format (lz4 -l): 8 MiB blocks, no checksums
  int threads = 0;                      // 0 = all hardware threads
  // Independent blocks go through the hybrid scheduler: host chunks of
  // chunk_size bytes, taken by CPU threads and a GPU worker as they free up.
  // cpu: CPU threads only. gpu: the GPU only (the CPU takes over, with a
  // warning in metrics, if the device fails). automatic: both, for inputs of
  // 8 MiB and more at a level the GPU has (see resolve_backend); the CPU
  // alone below. Linked blocks and the legacy format are on the CPU.
  Backend backend = Backend::automatic;
  ProgressFn progress;                  // may be empty
  // The hybrid scheduler's host chunk (independent blocks): a multiple of the
  // block size; 0 = 2 MiB (or one block, when blocks are larger).
  std::size_t chunk_size = 0;
  // When not null, receives the scheduler's figures for the run: bytes,
  // throughput and busy time per kind of worker, transfers and kernels,
  // waits, warnings (a GPU that failed) and a timeline of every worker.
  sched::RunMetrics* metrics = nullptr;
};

struct Lz4DecodeOptions {
  int threads = 0;                      // 0 = all hardware threads
  std::uint64_t max_output = UINT64_MAX;  // fail with output_limit beyond this many bytes
  bool verify_checksums = true;         // check block and content checksums when present
  // As Lz4FrameOptions::backend: frames of independent blocks decode through
  // the hybrid scheduler (the GPU takes frames of blocks up to 256 KiB);
  // checksums are verified on the CPU. Linked blocks and legacy frames decode
  // on the CPU.
  Backend backend = Backend::automatic;
  ProgressFn progress;                  // may be empty
  std::size_t chunk_size = 0;           // as Lz4FrameOptions::chunk_size, in decoded bytes
  sched::RunMetrics* metrics = nullptr;  // as Lz4FrameOptions::metrics
};

// Byte counts of a finished stream operation.
struct StreamStats {
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t frames = 0;             // frames decoded (skippable frames not counted)
};

// True for a block size the frame format allows (64 KiB, 256 KiB, 1 MiB, 4 MiB).
bool lz4_valid_block_size(std::size_t block_size);

// Upper bound of the size of one frame holding `input_size` bytes.
std::size_t lz4_frame_max_compressed_size(std::size_t input_size, const Lz4FrameOptions& options = {});

// Compresses everything `in` yields into one frame written to `out`. Work goes
// in batches of two blocks per thread, so memory stays bounded whatever the
// input's size (batches grow to about 64 MiB when the input is already in
// memory; with Backend::gpu, batches are 64 MiB, and up to 256 MiB in memory).
// Independent blocks are compressed in parallel.
Status lz4_compress_stream(Source& in, Sink& out, const Lz4FrameOptions& options = {},
                           StreamStats* stats = nullptr);

// Decompresses every frame of `in` (LZ4 frames, legacy frames, skippable
// frames, concatenated in any order) into `out`. Independent blocks decode in
// parallel; linked blocks decode in order.
Status lz4_decompress_stream(Source& in, Sink& out, const Lz4DecodeOptions& options = {},
                             StreamStats* stats = nullptr);

// In-memory conveniences over the streaming functions.
Status lz4_frame_compress(ConstBuffer input, std::vector<std::uint8_t>* frame,
                          const Lz4FrameOptions& options = {});
// Compresses into a caller's buffer (size it with lz4_frame_max_compressed_size);
// *size receives the frame's size.
Status lz4_frame_compress(ConstBuffer input, MutableBuffer frame, std::size_t* size,
                          const Lz4FrameOptions& options = {});
Status lz4_frame_decompress(ConstBuffer frame, std::vector<std::uint8_t>* output,
                            const Lz4DecodeOptions& options = {});
// Decompresses into a caller's buffer; *size receives the bytes written.
Status lz4_frame_decompress(ConstBuffer frame, MutableBuffer output, std::size_t* size,
                            const Lz4DecodeOptions& options = {});

const char* version();

}  // namespace tandem
