// The archive scanner's GPU path; see tandem/scan_gpu.hpp.
//
// A scan is a walk of each archive in the order scan() walks it (scan.cpp),
// over regions of bytes that live on the device (and on the host where the
// host must parse them). Decompressions are "ops" (a gzip member, an LZ4 or
// zstd input, a deflated ZIP entry), remembered by their input. The archives
// go up on a thread of their own (ArchiveUpload) while the first pass walks
// their host bytes (all but gzip archives whose layout gives them to the
// CPU, which the device never reads); the first dispatch's kernels wait for
// them. The walk runs in passes:
//   - a discovery pass walks every archive of the batch as far as the ops
//     decoded so far reach, and records each op it meets that is not decoded
//     yet (with the most it may produce: the ratio and output limits as far
//     as the pass can tell, never less than the final walk allows);
//   - the host parses the recorded ops' structure into block descriptors;
//     ops with a large decode unit (DeviceScanOptions::cpu_block_bytes), and
//     those the device cannot take, start at once on the CPU pool (from
//     another thread), while each decoder kind gets one dispatch for the
//     blocks of every other op of every archive (inflate, LZ4, the copy
//     kernel for stored and zstd raw and RLE blocks, "unsupported" for zstd
//     compressed blocks, whose frames libzstd decodes); the host checks the
//     blocks' statuses and sizes, the device takes the outputs' CRC-32s and
//     tells files from layers by their first bytes, and only layers (to be
//     parsed) and outputs with an xxHash to check come back to the host; an op whose blocks the device rejects
//     is decoded on the CPU too; the pool decodes into pinned memory where it
//     knows an output's size, and its outputs go up as each finishes
//     (CpuUploads), the rest in one upload after the pool's wait;
//   - passes repeat, one layer of nesting deeper each time, until a pass
//     records nothing (after the first dispatch, a walk decodes the new
//     inputs it meets itself, on the CPU, up to
//     DeviceScanOptions::walk_cpu_bytes: a nested layer's few small inputs
//     cost less there than a dispatch round); then the final pass walks
//     each archive exactly as scan() does, taking each op's result when it
//     succeeded within what the limits allow at that point of the walk,
//     and running scan()'s own CPU decoder where it did not (so statuses,
//     limits and bytes are scan()'s).
// Last, one copy dispatch gathers every ok entry's bytes into the result's
// allocation.
#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "codec/scan_walk.hpp"
#include "common/thread_pool.hpp"
#include "format/deflate_index.hpp"
#include "format/lz4_frame_format.hpp"
#include "format/tar_format.hpp"
#include "format/zstd_frame.hpp"
#include "gpu/gpu_device.hpp"
#include "gpu/scan_gpu.hpp"
#include "tandem/scan_gpu.hpp"
#include "tandem/zip.hpp"

namespace tandem {

// ------------------------------------------------------------- the result ----

DeviceScanResult::DeviceScanResult(DeviceScanResult&& o) noexcept
    : entries(std::move(o.entries)), stats(o.stats), bytes_(o.bytes_), size_(o.size_), on_device_(o.on_device_) {
  o.bytes_ = nullptr;
  o.size_ = 0;
}

DeviceScanResult& DeviceScanResult::operator=(DeviceScanResult&& o) noexcept {
  if (this != &o) {
    reset();
    entries = std::move(o.entries);
    stats = o.stats;
    bytes_ = o.bytes_;
    size_ = o.size_;
    on_device_ = o.on_device_;
    o.bytes_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

DeviceScanResult::~DeviceScanResult() { reset(); }

void DeviceScanResult::reset() {
  adopt(nullptr, 0, false);
  entries.clear();
}

void DeviceScanResult::adopt(void* bytes, std::uint64_t size, bool on_device) {
  if (bytes_) {
    if (on_device_) {
      gpu::free_cuda_scan_memory(bytes_);
    } else {
      std::free(bytes_);
    }
  }
  bytes_ = bytes;
  size_ = size;
  on_device_ = on_device;
}

Status DeviceScanResult::copy_to_host(std::vector<std::uint8_t>* out) const {
  if (!out) return {StatusCode::invalid_argument, "null output"};
  out->resize(static_cast<std::size_t>(size_));
  if (!size_) return {};
  if (!on_device_) {
    std::memcpy(out->data(), bytes_, out->size());
    return {};
  }
  std::unique_ptr<gpu::ScanDevice> dev;
  if (Status s = gpu::make_cuda_scan_device(nullptr, &dev); !s) return s;
  return dev->download(out->data(), bytes_, out->size());
}

namespace {

using namespace scan_detail;

// Bytes of the scan: on the host (whole, or only their head), on the device,
// or both.
struct Region {
  const std::uint8_t* host = nullptr;  // all bytes, or null
  const std::uint8_t* head = nullptr;  // the first min(size, 512) bytes, or null for a file (below)
  const std::uint8_t* dev = nullptr;   // device memory, or null (bytes the CPU produced)
  std::uint64_t size = 0;
  bool file = false;  // known to be a file (the device said so): no head needed
  // A piece of a region whose bytes are on the host.
  Region sub(std::uint64_t at, std::uint64_t n) const {
    return {host + at, host + at, dev ? dev + at : nullptr, n};
  }
  std::span<const std::uint8_t> span() const { return {host, static_cast<std::size_t>(size)}; }
};

enum class OpKind : std::uint8_t { gzip, lz4, zstd, zip_deflate, zip_stored };
enum class OpState : std::uint8_t { fresh, pending, ok, failed };

OpKind op_kind(Layer kind) {
  return kind == Layer::gzip ? OpKind::gzip : kind == Layer::lz4 ? OpKind::lz4 : OpKind::zstd;
}

// Where an op's output goes in a dispatch, and what its blocks must give.
struct Piece {
  enum Kind : std::uint8_t { inflate, lz4, copy, cpu } kind;
  std::size_t job = 0;            // index into the dispatch's list
  std::uint64_t out_at = 0;       // offset in the op's output
  std::uint64_t size = 0;         // bytes it must produce (at most, for the last LZ4 block)
  bool exact = true;              // false: the op's last piece, whose size is only bounded
  std::uint64_t in_size = 0;      // inflate: input bytes it must consume
  std::size_t host = 0;           // cpu: index of its bytes in the op's host pieces
  gpu::ScanCopyMode mode = gpu::ScanCopyMode::copy;  // copy pieces
};

// A checksum over part of an op's output.
struct Check {
  enum Kind : std::uint8_t { crc32, xxh32, xxh64_low32 } kind;
  std::uint64_t at = 0, size = 0;  // size UINT64_MAX: to the end of the output
  std::uint32_t want = 0;
};

// A list whose first element lives in place: most ops have one piece and
// one check, and a call has tens of thousands of ops (a heap block each
// was a malloc in the dispatch and a free in the next call's time).
template <class T>
class Few {
 public:
  void push_back(const T& v) {
    if (n_ == 0) {
      one_ = v;
    } else {
      if (more_.empty()) more_.push_back(one_);
      more_.push_back(v);
    }
    ++n_;
  }
  void clear() {
    n_ = 0;
    more_.clear();
  }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* begin() { return more_.empty() ? &one_ : more_.data(); }
  T* end() { return begin() + n_; }
  const T* begin() const { return more_.empty() ? &one_ : more_.data(); }
  const T* end() const { return begin() + n_; }
  T& back() { return begin()[n_ - 1]; }

 private:
  T one_{};
  std::vector<T> more_;  // all of them, once there are two
  std::size_t n_ = 0;
};

struct Op {
  OpKind kind = OpKind::gzip;
  Region in;
  std::size_t archive = 0;
  std::uint64_t cap = 0;       // the most it may produce (its limits as the recording pass saw them)
  std::uint64_t expected = 0;  // ZIP: the entry's size
  std::uint32_t crc = 0;       // ZIP: the entry's CRC-32
  OpState state = OpState::fresh;
  Region out;
  // Dispatch state.
  Few<Piece> pieces;
  Few<Check> checks;
  std::vector<std::vector<std::uint8_t>> host_pieces;  // zstd frames libzstd decoded
  std::uint64_t out_bytes = 0;                         // room in the dispatch's output
  bool on_cpu = false;                                 // decoded whole on the CPU
  bool by_policy = false;                              // on_cpu by the split (its decode unit's size)
  std::uint64_t expect = 0;  // on_cpu: the output its headers say (at most cap), room for it (0: unknown)
  std::vector<std::uint8_t> host_out;                  // the CPU's output, until it goes up
  // Host memory of `expect` bytes that transfers reach without staging
  // (ScanDevice::host_alloc), which the CPU decodes into when it can do so
  // in one call of that size (host_out stays empty then), or null.
  std::uint8_t* pinned = nullptr;
  std::uint64_t pinned_size = 0;  // the output's bytes in `pinned` (0: the output is host_out)
  const std::uint8_t* host_bytes() const { return pinned_size ? pinned : host_out.data(); }
  std::uint64_t host_size() const { return pinned_size ? pinned_size : host_out.size(); }
  // The CPU's output while the pool runs (CpuUploads).
  std::uint8_t* room = nullptr;  // device memory of `expect` bytes, or null
};

// How many CRC-32 pieces `size` bytes take.
std::size_t crc_pieces_of(std::uint64_t size) {
  return static_cast<std::size_t>((size + gpu::kScanCrcPiece - 1) / gpu::kScanCrcPiece);
}

// The CRC-32 pieces of `size` device bytes at `dev`, written from `at` on
// (crc_pieces_of(size) of them).
void put_crc_pieces(const std::uint8_t* dev, std::uint64_t size, gpu::ScanCrcPiece* at) {
  for (std::uint64_t off = 0; off < size; off += gpu::kScanCrcPiece, ++at) {
    at->data = dev + off;
    at->size = static_cast<std::uint32_t>(std::min<std::uint64_t>(gpu::kScanCrcPiece, size - off));
  }
}

// The CRC-32 of pieces [first, last), joined. The first piece's CRC-32 is
// the output's so far (joined to the CRC-32 of nothing it would stay the
// same), so most outputs, one piece long, need no combine at all.
std::uint32_t joined_crc(const std::vector<gpu::ScanCrcPiece>& pieces, std::size_t first, std::size_t last) {
  static const uLong join_piece = crc32_combine_gen(static_cast<z_off_t>(gpu::kScanCrcPiece));
  uLong crc = pieces[first].crc;
  for (std::size_t k = first + 1; k < last; ++k) {
    const uLong piece = pieces[k].crc;
    crc = pieces[k].size == gpu::kScanCrcPiece ? crc32_combine_op(crc, piece, join_piece)
                                               : crc32_combine(crc, piece, static_cast<z_off_t>(pieces[k].size));
  }
  return static_cast<std::uint32_t>(crc);
}

// An output checked in its decoders' dispatch (Batch::dispatch): the size
// its blocks must give, its layer job, and its CRC-32 pieces [crc_first,
// crc_last) (none without a CRC-32 to check).
struct Checked {
  std::uint64_t size = 0;
  std::size_t layer = SIZE_MAX;  // none: checked after the dispatch
  std::size_t crc_first = 0, crc_last = 0;
};

// How a device op is checked in its decoders' dispatch: not at all (layer
// SIZE_MAX) unless every piece is of an exact size, which fixes the
// output's; then over that size, with crc_last the number of CRC-32 pieces
// (0 without a CRC-32 to check). The dispatch numbers the layer job and the
// pieces.
Checked checks_in_dispatch(const Op& op) {
  Checked c;
  std::uint64_t end = 0;
  for (const Piece& p : op.pieces) {
    if (!p.exact) return c;
    if (p.kind != Piece::copy || p.mode != gpu::ScanCopyMode::unsupported) end = std::max(end, p.out_at + p.size);
  }
  if (end > op.out_bytes) return c;
  c.size = end;
  c.layer = 0;
  for (const Check& k : op.checks) {
    if (k.kind == Check::crc32) c.crc_last = crc_pieces_of(end);
  }
  return c;
}

// Where a gzip input of `n` bytes goes by its layout alone (its limits may
// still give it to the CPU, Batch::prepare_gzip): not one member the device
// can take (a header that does not parse, tandem's chunk index, no room for
// the trailer), a payload past the device's item size, a decode unit that
// reaches the split `cpu_block`, or the device. The device never reads the
// bytes of an input that goes anywhere but to it. Sets *h, *crc and *isize
// unless it is unreadable.
enum class GzipRoute : std::uint8_t { unreadable, too_large, split, device };
GzipRoute gzip_route(const std::uint8_t* p, std::uint64_t n, std::uint64_t cpu_block, format::GzipHeader* h,
                     std::uint32_t* crc, std::uint32_t* isize) {
  // A member with tandem's chunk index is read through its index on the CPU
  // (whose statuses then depend on the index), so it stays there.
  if (!format::parse_gzip_header(p, static_cast<std::size_t>(n), h) || h->has_index ||
      n < h->size + format::kGzipTrailerSize) {
    return GzipRoute::unreadable;
  }
  format::read_gzip_trailer(p + n - format::kGzipTrailerSize, crc, isize);
  const std::uint64_t payload = n - h->size - format::kGzipTrailerSize;
  if (payload > gpu::kMaxItemSize) return GzipRoute::too_large;
  return std::max<std::uint64_t>(*isize, payload) >= cpu_block ? GzipRoute::split : GzipRoute::device;
}

// An archive's ops, whose addresses stay: in blocks of 4, 8, ... up to 256
// ops (a deque's blocks hold one op each; most archives have a few ops, a
// few have thousands).
class OpStore {
 public:
  Op& emplace_back() {
    if (chunks_.empty() || used_ == size_) {
      size_ = chunks_.empty() ? 4 : std::min<std::size_t>(size_ * 2, 256);
      chunks_.push_back(std::make_unique<Op[]>(size_));
      used_ = 0;
    }
    return chunks_.back()[used_++];
  }

 private:
  std::vector<std::unique_ptr<Op[]>> chunks_;
  std::size_t size_ = 0, used_ = 0;
};

// Parsed containers, kept across passes.
struct ZipParse {
  Status status;
  std::vector<zip::Entry> entries;
  std::vector<Op*> ops;  // each deflated entry's op once met (by entry, so no lookup by bytes)
};
struct TarParse {
  Status status;
  std::vector<tar::Entry> entries;
};

// Bytes of the scan by where they lie and how long they are, and an op's by
// its kind too: the keys of an archive's parses and ops.
struct BytesKey {
  const void* at = nullptr;
  std::uint64_t size = 0;
  int kind = 0;
  bool operator==(const BytesKey&) const = default;
};
struct BytesKeyHash {
  std::size_t operator()(const BytesKey& k) const {
    std::uint64_t h = reinterpret_cast<std::uintptr_t>(k.at) * 0x9E3779B97F4A7C15ull;
    h ^= (k.size + static_cast<std::uint64_t>(k.kind)) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};
template <class T>
using BytesMap = std::unordered_map<BytesKey, T, BytesKeyHash>;

// What the walks of one archive keep across passes. Each archive's walks
// touch only its own state, so the walks of different archives run at once.
struct ArchiveState {
  OpStore op_store;
  BytesMap<Op*> ops;
  BytesMap<std::unique_ptr<ZipParse>> zips;
  BytesMap<std::unique_ptr<TarParse>> tars;
  BytesMap<bool> crcs;
  std::vector<Op*> pending;  // recorded by the last discovery walk, in walk order
  std::deque<std::vector<std::uint8_t>> kept;  // host bytes of its final walk
};

// Host state that a call leaves behind (its parses, ops, walkers, the
// CPU's outputs and the host copies of device outputs: tens of thousands of
// small blocks and tens of MiB of large ones), destroyed on a thread of its
// own so that the call need not wait for the frees (a call's release took
// 6.8 ms of 39 on an H200's host, 520 package archives). At most kMaxWaiting
// calls' state waits; past that a call frees its own, so that memory cannot
// pile up behind the thread.
class Disposal {
 public:
  // Destroys `state` later (or now, when too much waits already).
  static void later(std::shared_ptr<void> state) {
    if (!state) return;
    Disposal& d = instance();
    {
      const std::lock_guard<std::mutex> lock(d.mutex_);
      if (d.waiting_.size() < kMaxWaiting) {
        d.waiting_.push_back(std::move(state));
        d.cv_.notify_one();
        return;
      }
    }
    state.reset();
  }

 private:
  static constexpr std::size_t kMaxWaiting = 4;

  // Never destroyed, its thread detached: what still waits at exit is left
  // to the process's end.
  static Disposal& instance() {
    static Disposal* d = [] {
      auto* made = new Disposal();
      std::thread([made] { made->run(); }).detach();
      return made;
    }();
    return *d;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return !waiting_.empty(); });
      std::shared_ptr<void> next = std::move(waiting_.front());
      waiting_.pop_front();
      lock.unlock();
      next.reset();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<void>> waiting_;
};

// Host blocks that downloads land in (Batch::keep_raw), kept across calls:
// a fresh block's pages are mapped on first touch, on the thread that
// copies into it (a layer's tar archives are a few MiB, hundreds of page
// faults, for 520 package archives). Sizes go up to whole MiB so that calls
// alike reuse each other's blocks; at most kKeepBytes are kept.
class SpareBlocks {
 public:
  struct Block {
    std::unique_ptr<std::uint8_t[]> bytes;
    std::size_t size = 0;
  };

  // The smallest kept block of at least n bytes, else a new one.
  static Block take(std::size_t n) {
    SpareBlocks& s = instance();
    {
      const std::lock_guard<std::mutex> lock(s.mutex_);
      std::size_t best = s.blocks_.size();
      for (std::size_t i = 0; i < s.blocks_.size(); ++i) {
        if (s.blocks_[i].size >= n && (best == s.blocks_.size() || s.blocks_[i].size < s.blocks_[best].size)) best = i;
      }
      if (best != s.blocks_.size()) {
        Block b = std::move(s.blocks_[best]);
        s.blocks_.erase(s.blocks_.begin() + static_cast<std::ptrdiff_t>(best));
        s.kept_ -= b.size;
        return b;
      }
    }
    constexpr std::size_t kMiB = std::size_t{1} << 20;
    const std::size_t size = (std::max<std::size_t>(n, 1) + kMiB - 1) / kMiB * kMiB;
    return {std::make_unique_for_overwrite<std::uint8_t[]>(size), size};
  }

  // Keeps what fits under kKeepBytes; the rest is freed here.
  static void give(std::vector<Block>& blocks) {
    SpareBlocks& s = instance();
    const std::lock_guard<std::mutex> lock(s.mutex_);
    for (Block& b : blocks) {
      if (s.kept_ + b.size > kKeepBytes) continue;
      s.kept_ += b.size;
      s.blocks_.push_back(std::move(b));
    }
    blocks.clear();
  }

 private:
  static constexpr std::size_t kKeepBytes = std::size_t{256} << 20;
  static SpareBlocks& instance() {
    static SpareBlocks* s = new SpareBlocks();  // never destroyed: calls may run at exit
    return *s;
  }
  std::mutex mutex_;
  std::vector<Block> blocks_;
  std::size_t kept_ = 0;
};

// A call's time, phase after phase: lap(phase) adds the time since the last
// lap (or the start) to that phase, so that the phases cover the call whole
// and add up to its `seconds`.
class PhaseClock {
 public:
  explicit PhaseClock(DeviceScanStats* stats) : stats_(*stats) {}
  void lap(double DeviceScanStats::*phase) {
    const auto now = std::chrono::steady_clock::now();
    stats_.*phase += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  // The last lap ends the call.
  void finish() { stats_.seconds = std::chrono::duration<double>(last_ - start_).count(); }

 private:
  DeviceScanStats& stats_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
};

// The archives' upload (scan_to_device), on threads of their own through
// the device's uploaders while the first discovery walk runs: the walks read
// only the host bytes, and the first reads of the device copies (a
// dispatch's kernels, the final gather) come after wait() (Batch::uploaded),
// which orders them after the uploaders' copies. The archives are split
// into up to kParts runs of about equal bytes, each with a thread, a stream
// and a pinned stage of its own: one thread copying into pinned memory
// alone (the worker pool busy with the walk and then the CPU's decoding)
// held the first dispatch until 4.3 ms into a call of 32 MB of archives.
class ArchiveUpload {
 public:
  ArchiveUpload() = default;
  ArchiveUpload(const ArchiveUpload&) = delete;
  ArchiveUpload& operator=(const ArchiveUpload&) = delete;
  // Joins the threads on every path (before the device memory goes).
  ~ArchiveUpload() { (void)wait(); }

  // Starts the copies (no thread for none); `uploads` stays until wait().
  Status start(gpu::ScanDevice& dev, std::vector<gpu::ScanUpload> uploads) {
    if (uploads.empty()) return {};
    uploads_ = std::move(uploads);
    std::uint64_t total = 0;
    for (const gpu::ScanUpload& u : uploads_) total += u.bytes;
    const std::size_t parts = static_cast<std::size_t>(
        std::clamp<std::uint64_t>(total / kPartBytes, 1, std::min<std::uint64_t>(kParts, uploads_.size())));
    // Runs [begin, end) of the list, cut where the bytes so far pass each
    // part's share.
    std::size_t begin = 0;
    std::uint64_t so_far = 0;
    for (std::size_t p = 0; p < parts && begin < uploads_.size(); ++p) {
      std::size_t end = begin;
      const std::uint64_t share = total * (p + 1) / parts;
      while (end < uploads_.size() && (so_far < share || end == begin)) so_far += uploads_[end++].bytes;
      if (p + 1 == parts) end = uploads_.size();
      Part& part = parts_.emplace_back();
      if (Status s = dev.uploader(&part.side); !s) return s;
      // The thread ends its uploader too (its stream and stage go), so
      // that the wait joins a thread that is done.
      part.thread = std::thread([this, &part, begin, end] {
        part.status = part.side->upload_many(std::span(uploads_).subspan(begin, end - begin));
        part.side.reset();
      });
      begin = end;
    }
    return {};
  }
  // Waits for the copies: their status (the same at every later call).
  Status wait() {
    for (Part& p : parts_) {
      if (p.thread.joinable()) p.thread.join();
      if (status_ && !p.status) status_ = p.status;
    }
    parts_.clear();
    return status_;
  }

 private:
  static constexpr std::size_t kParts = 4;
  static constexpr std::uint64_t kPartBytes = std::uint64_t{4} << 20;  // fewer parts below this each
  struct Part {
    std::unique_ptr<gpu::ScanDevice> side;
    Status status;
    std::thread thread;
  };
  std::vector<gpu::ScanUpload> uploads_;
  std::deque<Part> parts_;  // (a deque: the threads hold their part's address)
  Status status_;
};

// The CPU pool's outputs going up as they finish (Batch::dispatch). The
// pool's ops that have room on the device (Op::room, in one allocation
// made before the pool starts) have it, and their pinned host memory, laid
// out in the order the pool takes them, so that they finish about in that
// order. A thread of its own sends each run of finished ops up at once, in
// order, while the device and the rest of the pool work: one DMA for the
// run's pinned range (pinned and room are laid out alike; the room of an op
// that failed gets whatever its pinned bytes hold, and no op reads it), and
// a copy for each output outside pinned memory. Ops that fail, have no
// room or outgrow it go up after the pool's wait, as those the device
// rejected do.
class CpuUploads {
 public:
  CpuUploads() = default;
  CpuUploads(const CpuUploads&) = delete;
  CpuUploads& operator=(const CpuUploads&) = delete;
  // Joins the thread on every path (before the device memory goes).
  ~CpuUploads() { (void)finish(); }

  // `order`: the pool's ops in the order of their room (and pinned memory,
  // if any), which stays until finish().
  Status start(gpu::ScanDevice& dev, std::span<Op* const> order) {
    order_ = order;
    finished_.assign(order.size(), 0);
    if (Status s = dev.uploader(&side_); !s) return s;
    thread_ = std::thread([this] { run(); });
    return {};
  }
  // From the pool, once order[k] is decoded.
  void done(std::size_t k) {
    if (!thread_.joinable()) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    finished_[k] = 1;
    if (k == next_) cv_.notify_one();
  }
  // No more ops (every op finished): the thread sends what is left, each
  // op that fits() (its bytes stay as they are until finish()).
  void close() {
    const std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    cv_.notify_one();
  }
  // close(), then waits for the uploads, and says how they went.
  Status finish() {
    close();
    if (thread_.joinable()) thread_.join();
    side_.reset();
    return status_;
  }

  // Whether a finished op goes up through the thread.
  static bool fits(const Op& op) { return op.room && op.state == OpState::ok && op.host_size() <= op.expect; }

 private:
  void run() {
    std::vector<gpu::ScanUpload> uploads;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return closed_ || (next_ < order_.size() && finished_[next_]); });
      std::size_t end = next_;
      while (end < order_.size() && finished_[end]) ++end;
      if (end == next_) {  // closed, and nothing more finished
        lock.unlock();
        side_.reset();  // its stream and stage go here, so that the join finds the thread done
        return;
      }
      const std::size_t begin = next_;
      lock.unlock();
      uploads.clear();
      // The run's pinned range: from the first op with room to the end of
      // the last one's.
      const Op* first = nullptr;
      const Op* last = nullptr;
      for (std::size_t k = begin; k < end; ++k) {
        const Op* op = order_[k];
        if (!op->room || !op->pinned) continue;
        if (!first) first = op;
        last = op;
      }
      if (first) {
        const std::uint64_t n = static_cast<std::uint64_t>(last->room - first->room) + last->expect;
        uploads.push_back({first->room, first->pinned, static_cast<std::size_t>(n), true});
      }
      for (std::size_t k = begin; k < end; ++k) {
        const Op* op = order_[k];
        if (fits(*op) && !op->pinned_size) uploads.push_back({op->room, op->host_bytes(), op->host_size(), true});
      }
      // After a failure the rest go up after the wait (which returns the failure first).
      if (status_ && !uploads.empty()) status_ = side_->upload_many(uploads);
      lock.lock();
      next_ = end;
    }
  }

  std::unique_ptr<gpu::ScanDevice> side_;
  std::span<Op* const> order_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<char> finished_;  // by index in order_
  std::size_t next_ = 0;        // the first op of order_ not sent yet
  bool closed_ = false;
  Status status_;  // the uploader thread's until it is joined
  std::thread thread_;
};

class Batch;

// The CPU pool's ops of a dispatch, largest first, handed out one at a time
// to whichever thread takes them: the background pool's workers, and the
// dispatching thread once the device is done.
class PoolWork {
 public:
  PoolWork(const std::vector<Op*>& order, CpuUploads& uploads) : order_(order), uploads_(uploads) {}
  // Decodes ops until none is left to start.
  void take(Batch& batch);
  // Until every op is decoded (or failed): a short spin, then a sleep.
  void wait() {
    const std::size_t n = order_.size();
    for (int k = 0; k < 4096 && finished_.load(std::memory_order_acquire) != n; ++k) {
      if (k % 64 == 63) std::this_thread::yield();
    }
    for (std::size_t f; (f = finished_.load(std::memory_order_acquire)) != n;) finished_.wait(f);
  }
  // Whether a decode threw (the pool's future holds the exception).
  bool failed() const { return failed_.load(); }

 private:
  const std::vector<Op*>& order_;
  CpuUploads& uploads_;
  std::atomic<std::size_t> next_{0}, finished_{0};
  std::atomic<bool> failed_{false};
};

// Everything one call shares across its archives and passes.
class Batch {
 public:
  Batch(gpu::ScanDevice& dev, const ScanLimits& limits, const DeviceScanOptions& options, std::size_t archives,
        DeviceScanStats* stats, PhaseClock& clock, ArchiveUpload* upload)
      : dev_(dev), upload_(upload), limits_(limits),
        threads_(detail::effective_threads(static_cast<int>(std::min(options.threads, 1u << 16)))),
        cpu_block_(options.cpu_block_bytes), walk_cpu_(options.walk_cpu_bytes), stats_(*stats), clock_(clock),
        host_(std::make_unique<HostState>(archives)), decoded_(archives, 0) {}
  // The device memory goes now, in order on the device's stream; the host
  // state later (Disposal).
  ~Batch() {
    cpu_uploads_.reset();  // its thread writes the memory below
    for (void* p : allocations_) dev_.free(p);
    for (std::uint8_t* p : pinned_) dev_.host_free(p);
    Disposal::later(std::shared_ptr<HostState>(std::move(host_)));
  }

  gpu::ScanDevice& dev() { return dev_; }
  DeviceScanStats& stats() { return stats_; }
  int threads() const { return threads_; }

  // `value`, held until the call ends and then destroyed with the call's
  // host state (Disposal).
  template <class T>
  T& hold(T value) {
    auto held = std::make_shared<T>(std::move(value));
    host_->held.push_back(held);
    return *held;
  }

  Op& op(OpKind kind, const Region& in, std::size_t archive) {
    ArchiveState& a = host_->archives[archive];
    Op*& slot = a.ops[{in.host, in.size, static_cast<int>(kind)}];
    if (!slot) {
      slot = &a.op_store.emplace_back();
      slot->kind = kind;
      slot->in = in;
      slot->archive = archive;
    }
    return *slot;
  }
  void record(Op* op) {
    op->state = OpState::pending;
    host_->archives[op->archive].pending.push_back(op);
  }
  // How many compressed bytes of new inputs an archive's walk may decode
  // itself in this pass: none before the first dispatch.
  std::uint64_t walk_cpu_bytes() const { return stats_.layers ? walk_cpu_ : 0; }
  bool has_pending() const {
    for (const ArchiveState& a : host_->archives) {
      if (!a.pending.empty()) return true;
    }
    return false;
  }

  // The op of a ZIP's deflated entry `i`, whose data is `in`.
  Op& zip_op(ZipParse& z, std::size_t i, const Region& in, std::size_t archive) {
    if (z.ops.empty()) z.ops.assign(z.entries.size(), nullptr);
    Op*& slot = z.ops[i];
    if (!slot) {
      slot = &host_->archives[archive].op_store.emplace_back();
      slot->kind = OpKind::zip_deflate;
      slot->in = in;
      slot->archive = archive;
    }
    return *slot;
  }
  ZipParse& zip_of(const Region& r, std::size_t archive) {
    auto& slot = host_->archives[archive].zips[{r.host, r.size, 0}];
    if (!slot) {
      slot = std::make_unique<ZipParse>();
      zip::ReadLimits rl;
      rl.max_entries = limits_.max_entries;
      slot->status = zip::read_directory(r.span(), &slot->entries, rl);
    }
    return *slot;
  }
  const TarParse& tar_of(const Region& r, std::size_t archive) {
    auto& slot = host_->archives[archive].tars[{r.host, r.size, 0}];
    if (!slot) {
      slot = std::make_unique<TarParse>();
      tar::Limits tl;
      tl.max_entries = limits_.max_entries;
      slot->status = tar::parse(r.host, static_cast<std::size_t>(r.size), &slot->entries, tl);
    }
    return *slot;
  }
  // Whether a stored ZIP entry's bytes hold its CRC-32.
  bool crc_holds(const Region& r, std::uint32_t crc, std::size_t archive) {
    auto [it, fresh] = host_->archives[archive].crcs.try_emplace({r.host, r.size, 0}, false);
    if (fresh) it->second = zip::crc32(r.span()) == crc;
    return it->second;
  }

  // Host bytes that live until the call ends: the batch's (one thread at a
  // time), and an archive's walk's.
  std::vector<std::uint8_t>& keep() { return host_->kept.emplace_back(); }
  std::vector<std::uint8_t>& keep(std::size_t archive) { return host_->archives[archive].kept.emplace_back(); }
  // `n` bytes left uninitialised, for transfers to fill (a vector's resize
  // would write them first), in a block kept across calls (SpareBlocks).
  std::uint8_t* keep_raw(std::size_t n) { return host_->raw.emplace_back(SpareBlocks::take(n)).bytes.get(); }

  Status alloc(std::size_t bytes, std::uint8_t** p) {
    void* v = nullptr;
    if (Status s = dev_.alloc(bytes, &v); !s) return s;
    allocations_.push_back(v);
    *p = static_cast<std::uint8_t*>(v);
    return {};
  }

  // Decodes every recorded op: one dispatch per decoder kind.
  Status dispatch();

  // Waits for the archives' upload, if it still runs, before the first read
  // of their device copies; the wait is the call's upload phase (the time
  // since the last lap goes to `phase`).
  // The same for the last dispatch's CPU outputs, whose uploads run on
  // while the walk reads their host bytes.
  Status uploaded(double DeviceScanStats::*phase) {
    if (!upload_ && !cpu_uploads_) return {};
    clock_.lap(phase);
    Status s;
    if (upload_) s = upload_->wait();
    upload_ = nullptr;
    if (cpu_uploads_) {
      const Status c = cpu_uploads_->uploads.finish();
      if (s) s = c;
      cpu_uploads_.reset();
    }
    clock_.lap(&DeviceScanStats::upload_seconds);
    return s;
  }

 private:
  void prepare(Op& op);
  void prepare_gzip(Op& op);
  void prepare_lz4(Op& op);
  void prepare_zstd(Op& op);
  bool verify_blocks(Op& op, const std::vector<gpu::ScanDecodeJob>& inflates,
                     const std::vector<gpu::ScanDecodeJob>& lz4s, const std::vector<gpu::ScanCopyJob>& copies);
  bool verify_checks(const Op& op, std::uint32_t device_crc);
  Status fetch_whole(const std::vector<Op*>& ops, const std::vector<char>& whole);
  Status device_checks(const std::vector<Region>& crc_of, std::vector<std::uint32_t>* crcs,
                       const std::vector<Region>& layer_of, std::vector<Layer>* layers);
  // fn(run, begin, end) over [0, n) in runs of kRun indices, the runs on
  // the pool: a pool task costs more than checking one op (a dispatch has
  // tens of thousands), so each takes a run.
  static constexpr std::size_t kRun = 64;
  static std::size_t runs(std::size_t n) { return (n + kRun - 1) / kRun; }
  template <class F>
  void for_runs(std::size_t n, F&& fn) {
    detail::parallel_for(runs(n), threads_, [&](std::size_t r) { fn(r, r * kRun, std::min(n, (r + 1) * kRun)); });
  }
  // Whether the split gives a decode unit of `out` expected and `in`
  // compressed bytes to the CPU.
  bool to_cpu(std::uint64_t out, std::uint64_t in) const { return std::max(out, in) >= cpu_block_; }
  static void give_cpu(Op& op) { op.on_cpu = op.by_policy = true; }
  // The output the op's headers say, as its room while the pool decodes it:
  // none past the op's cap, and past kRoomRatio times its input only while
  // the dispatch's kSpareRoom lasts (a lying header could claim the ratio
  // limit, 1000 by default, for every op of a batch; an output with no room
  // goes up after the pool's wait). From the dispatch's parallel passes.
  static constexpr std::uint64_t kRoomRatio = 64;
  static constexpr std::uint64_t kSpareRoom = std::uint64_t{64} << 20;
  void expect(Op& op, std::uint64_t bytes) {
    op.expect = 0;
    if (bytes > op.cap) return;
    if (bytes / kRoomRatio > op.in.size) {
      std::uint64_t used = spare_room_.load(std::memory_order_relaxed);
      do {
        if (bytes > kSpareRoom - used) return;
      } while (!spare_room_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    }
    op.expect = bytes;
  }
  void decode_on_cpu(Op& op);
  friend class PoolWork;  // decode_on_cpu
  Status upload_cpu_outputs(const std::vector<Op*>& ops);
  // A call of the device's, its time counted in stats().device_call_seconds
  // (from the dispatching thread only).
  template <class F>
  Status waited(F&& call) {
    const auto t = std::chrono::steady_clock::now();
    const Status s = call();
    stats_.device_call_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    return s;
  }

  gpu::ScanDevice& dev_;
  ArchiveUpload* upload_;  // null once waited for (or when there is none)
  const ScanLimits& limits_;
  int threads_;
  std::uint64_t cpu_block_;
  std::uint64_t walk_cpu_;
  DeviceScanStats& stats_;
  PhaseClock& clock_;
  // The call's host state, destroyed after the call (Disposal).
  struct HostState {
    explicit HostState(std::size_t archives) : archives(archives) {}
    HostState(const HostState&) = delete;
    HostState& operator=(const HostState&) = delete;
    ~HostState() { SpareBlocks::give(raw); }
    std::vector<ArchiveState> archives;
    std::deque<std::vector<std::uint8_t>> kept;  // the batch's (one thread at a time)
    std::vector<SpareBlocks::Block> raw;  // kept for later calls (SpareBlocks)
    std::vector<std::shared_ptr<void>> held;
  };
  std::unique_ptr<HostState> host_;
  std::vector<void*> allocations_;
  std::vector<std::uint8_t*> pinned_;  // host_alloc's, for the CPU pool's outputs
  // The last dispatch's CPU pool uploads, still running (uploaded() waits).
  struct CpuUploadsLeft {
    std::vector<Op*> order;
    CpuUploads uploads;
  };
  std::unique_ptr<CpuUploadsLeft> cpu_uploads_;
  std::atomic<std::uint64_t> spare_room_{0};  // the dispatch's room past kRoomRatio so far (expect)
  std::vector<std::uint64_t> decoded_;  // per archive: bytes all its ops produced (bounds the work)
};

// ------------------------------------------------------- the block layout ----

void Batch::prepare(Op& op) {
  op.pieces.clear();
  op.checks.clear();
  op.host_pieces.clear();
  op.out_bytes = 0;
  op.on_cpu = op.by_policy = false;
  op.expect = 0;
  op.room = nullptr;
  op.pinned = nullptr;
  op.pinned_size = 0;
  switch (op.kind) {
    case OpKind::gzip: prepare_gzip(op); break;
    case OpKind::lz4: prepare_lz4(op); break;
    case OpKind::zstd: prepare_zstd(op); break;
    case OpKind::zip_deflate:
      expect(op, op.expected);
      if (op.expected > op.cap || op.expected > gpu::kMaxItemSize || op.in.size > gpu::kMaxItemSize) {
        op.on_cpu = true;
        break;
      }
      if (to_cpu(op.expected, op.in.size)) {
        give_cpu(op);
        break;
      }
      op.pieces.push_back({Piece::inflate, 0, 0, op.expected, true, op.in.size, 0});
      op.checks.push_back({Check::crc32, 0, op.expected, op.crc});
      op.out_bytes = op.expected;
      break;
    case OpKind::zip_stored: break;
  }
  if (op.on_cpu) op.pieces.clear(), op.checks.clear(), op.host_pieces.clear(), op.out_bytes = 0;
}

// One gzip member, its trailer the input's last 8 bytes (anything else, such
// as several members, is decoded on the CPU), without tandem's chunk index.
void Batch::prepare_gzip(Op& op) {
  format::GzipHeader h;
  std::uint32_t crc = 0, isize = 0;
  const std::uint64_t n = op.in.size;
  const GzipRoute route = gzip_route(op.in.host, n, cpu_block_, &h, &crc, &isize);
  if (route == GzipRoute::unreadable) {
    op.on_cpu = true;
    return;
  }
  expect(op, isize);  // modulo 2^32, and the last member's only: a guess (room it outgrows is not used)
  if (route == GzipRoute::too_large || isize > op.cap) {
    op.on_cpu = true;
    return;
  }
  // ISIZE is the size modulo 2^32: a member that lies below the split goes
  // to the device, which then rejects it.
  if (route == GzipRoute::split) return give_cpu(op);
  const std::uint64_t payload = n - h.size - format::kGzipTrailerSize;
  Piece p{Piece::inflate, 0, 0, isize, true, payload, 0};
  p.job = h.size;  // the payload's offset until the dispatch numbers the job
  op.pieces.push_back(p);
  op.checks.push_back({Check::crc32, 0, isize, crc});
  op.out_bytes = isize;
}

// LZ4 frames of independent blocks (and skippable frames). A compressed
// block decodes to the frame's block size unless it is the frame's last;
// the last block of a frame that is not the input's last must be sized by
// the frame's content size. Anything else goes to the CPU.
void Batch::prepare_lz4(Op& op) {
  const std::uint8_t* p = op.in.host;
  const std::uint64_t n = op.in.size;
  std::uint64_t at = 0, out = 0;
  struct Pending {
    std::uint64_t in_at, in_size, out_at, size;
    bool compressed, exact;
  };
  std::vector<Pending> blocks;
  while (at < n) {
    if (n - at < 4) return void(op.on_cpu = true);
    const std::uint32_t magic = lz4f::read_le32(p + at);
    if (lz4f::is_skippable_magic(magic)) {
      if (n - at < 8 || lz4f::read_le32(p + at + 4) > n - at - 8) return void(op.on_cpu = true);
      at += 8 + lz4f::read_le32(p + at + 4);
      continue;
    }
    if (magic != lz4f::kFrameMagic) return void(op.on_cpu = true);
    lz4f::FrameHeader h;
    if (!lz4f::parse_frame_header(p + at, static_cast<std::size_t>(n - at), &h) || !h.independent_blocks) {
      return void(op.on_cpu = true);
    }
    at += h.header_size;
    const std::uint64_t frame_out = out;
    const std::size_t first = blocks.size();
    for (;;) {
      if (n - at < 4) return void(op.on_cpu = true);
      const std::uint32_t word = lz4f::read_le32(p + at);
      at += 4;
      if (word == 0) break;
      const std::uint64_t size = word & ~lz4f::kUncompressedBit;
      const bool compressed = (word & lz4f::kUncompressedBit) == 0;
      const std::uint64_t extra = h.block_checksum ? 4 : 0;
      if (size > h.block_max || n - at < size + extra) return void(op.on_cpu = true);
      if (h.block_checksum && XXH32(p + at, static_cast<std::size_t>(size), 0) != lz4f::read_le32(p + at + size)) {
        return void(op.on_cpu = true);
      }
      blocks.push_back({at, size, out, compressed ? h.block_max : size, compressed, true});
      out += blocks.back().size;
      at += size + extra;
    }
    if (blocks.size() > first && blocks.back().compressed) {
      Pending& last = blocks.back();
      if (h.has_content_size) {
        const std::uint64_t before = last.out_at - frame_out;
        if (h.content_size < before || h.content_size - before > h.block_max) return void(op.on_cpu = true);
        out += h.content_size - before - last.size;
        last.size = h.content_size - before;
      } else {
        last.exact = false;  // bounded by the block size; must be the input's last block
      }
    }
    if (h.has_content_size && out - frame_out != h.content_size) return void(op.on_cpu = true);
    if (h.content_checksum) {
      if (n - at < 4) return void(op.on_cpu = true);
      op.checks.push_back({Check::xxh32, frame_out, out - frame_out, lz4f::read_le32(p + at)});
      if (blocks.size() > first && !blocks.back().exact) op.checks.back().size = UINT64_MAX;
      at += 4;
    }
  }
  for (std::size_t i = 0; i + 1 < blocks.size(); ++i) {
    if (!blocks[i].exact) return void(op.on_cpu = true);
  }
  if (out > op.cap) return void(op.on_cpu = true);
  expect(op, out);
  for (const Pending& b : blocks) {
    if (b.compressed && to_cpu(b.exact ? b.size : b.in_size, b.in_size)) return give_cpu(op);
  }
  for (const Pending& b : blocks) {
    Piece pc{b.compressed ? Piece::lz4 : Piece::copy, 0, b.out_at, b.size, b.exact, b.in_size, 0};
    pc.job = static_cast<std::size_t>(b.in_at);
    op.pieces.push_back(pc);
  }
  op.out_bytes = out;
}

// zstd frames: raw and RLE blocks on the device; a frame with a compressed
// block is decoded whole by libzstd (its blocks depend on each other), its
// compressed blocks still described to the device, which says
// "unsupported".
void Batch::prepare_zstd(Op& op) {
  zstd_frame::Parsed parsed;
  if (!zstd_frame::parse(op.in.span(), &parsed)) return void(op.on_cpu = true);
  // The frames' content sizes, where every frame gives one.
  std::uint64_t content = 0;
  bool known = true;
  for (const zstd_frame::Frame& f : parsed.frames) {
    if (f.kind != zstd_frame::FrameKind::zstd) continue;
    known = known && f.header.has_content_size && f.header.content_size <= op.cap - std::min(op.cap, content);
    if (known) content += f.header.content_size;
  }
  if (known) expect(op, content);
  // A frame libzstd decodes is the decode unit: its content size (its
  // compressed size where the header gives none).
  for (const zstd_frame::Frame& f : parsed.frames) {
    if (f.kind != zstd_frame::FrameKind::zstd) continue;
    if (f.header.dict_id != 0) return void(op.on_cpu = true);
    if (f.compressed_blocks != 0 && to_cpu(f.header.has_content_size ? f.header.content_size : f.size, f.size)) {
      return give_cpu(op);
    }
  }
  std::uint64_t out = 0;
  for (const zstd_frame::Frame& f : parsed.frames) {
    if (f.kind != zstd_frame::FrameKind::zstd) continue;
    if (f.header.dict_id != 0) return void(op.on_cpu = true);
    const std::uint64_t frame_out = out;
    if (f.compressed_blocks == 0) {
      for (const zstd_frame::Block& b : parsed.blocks_of(f)) {
        Piece pc{Piece::copy, 0, out, b.decoded_size, true, b.payload_size, 0};
        pc.job = static_cast<std::size_t>(b.payload_offset);
        if (b.type == zstd_frame::BlockType::rle) pc.mode = gpu::ScanCopyMode::fill;
        op.pieces.push_back(pc);
        out += b.decoded_size;
        if (out > op.cap) return void(op.on_cpu = true);
      }
      if (f.header.has_checksum) op.checks.push_back({Check::xxh64_low32, frame_out, out - frame_out, f.checksum});
      continue;
    }
    for (const zstd_frame::Block& b : parsed.blocks_of(f)) {
      if (b.type != zstd_frame::BlockType::compressed) continue;
      Piece pc{Piece::copy, 0, 0, 0, true, b.payload_size, 0};  // a descriptor with no bytes
      pc.job = static_cast<std::size_t>(b.payload_offset);
      pc.mode = gpu::ScanCopyMode::unsupported;
      op.pieces.push_back(pc);
    }
    std::vector<std::uint8_t>& bytes = op.host_pieces.emplace_back();
    const auto frame = op.in.span().subspan(static_cast<std::size_t>(f.offset), static_cast<std::size_t>(f.size));
    if (!decompress_cpu(Layer::zstd, frame, op.cap - out, &bytes)) return void(op.on_cpu = true);
    op.pieces.push_back({Piece::cpu, 0, out, bytes.size(), true, 0, op.host_pieces.size() - 1});
    out += bytes.size();
  }
  op.out_bytes = out;
}

// ------------------------------------------------------------ dispatching ----

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Status Batch::dispatch() {
  std::vector<Op*> ops;
  for (ArchiveState& a : host_->archives) {
    ops.insert(ops.end(), a.pending.begin(), a.pending.end());
    a.pending.clear();
  }
  ++stats_.layers;
  spare_room_.store(0, std::memory_order_relaxed);
  // Each run of ops counts what it adds to each list (its place in them
  // then follows from the runs before it), so that the runs fill the lists
  // at once, in the ops' order.
  struct Count {
    std::uint64_t out = 0;   // device ops: their outputs, each 256-aligned
    std::uint64_t room = 0;  // the pool's ops: room for their outputs, each 256-aligned
    std::uint64_t host_bytes = 0;
    std::size_t inflates = 0, lz4s = 0, copies = 0, host = 0, pieces = 0, layers = 0, pool = 0;
    void add(const Count& o) {
      out += o.out, room += o.room, host_bytes += o.host_bytes;
      inflates += o.inflates, lz4s += o.lz4s, copies += o.copies, host += o.host;
      pieces += o.pieces, layers += o.layers, pool += o.pool;
    }
  };
  const auto aligned = [](std::uint64_t n) { return (n + 255) / 256 * 256; };
  std::vector<Count> at(runs(ops.size()) + 1);  // at[r]: what the runs before run r add
  std::vector<Checked> checked(ops.size());
  // Bound the work an archive's ops may do to its output limit: past it the
  // final walk decides on the CPU.
  for_runs(ops.size(), [&](std::size_t r, std::size_t begin, std::size_t end) {
    Count& c = at[r + 1];
    for (std::size_t i = begin; i < end; ++i) {
      Op& op = *ops[i];
      op.cap = std::min(op.cap, limits_.max_output - std::min(limits_.max_output, decoded_[op.archive]));
      prepare(op);
      if (op.on_cpu) {
        ++c.pool;
        c.room += aligned(op.expect);
        continue;
      }
      c.out += aligned(op.out_bytes);
      for (const Piece& p : op.pieces) {
        switch (p.kind) {
          case Piece::inflate: ++c.inflates; break;
          case Piece::lz4: ++c.lz4s; break;
          case Piece::copy: ++c.copies; break;
          case Piece::cpu: ++c.host, c.host_bytes += p.size; break;
        }
      }
      checked[i] = checks_in_dispatch(op);
      if (checked[i].layer == SIZE_MAX) continue;
      ++c.layers;
      c.pieces += checked[i].crc_last;  // the count, for now
    }
  });
  for (std::size_t r = 1; r < at.size(); ++r) at[r].add(at[r - 1]);
  const Count& sum = at.back();
  clock_.lap(&DeviceScanStats::prepare_seconds);

  // The pool's ops start first, on the background pool, from another
  // thread: it is the dispatch's longest part, and the device's lists are
  // laid out and the device driven from this one meanwhile (its bursts of
  // parallel work then preempt the pool's). Their room on the device, where
  // their sizes are known, lets each go up as it finishes (CpuUploads), from
  // the same layout in host memory that the uploads reach without a copy.
  // They read their op's input and write only its state and host output
  // (which CpuUploads then reads), which nothing below reads before the wait.
  std::uint8_t* room = nullptr;
  std::uint8_t* pinned = nullptr;
  if (sum.room) {
    if (Status s = alloc(static_cast<std::size_t>(sum.room), &room); !s) return s;
    if (Status s = dev_.host_alloc(static_cast<std::size_t>(sum.room), &pinned); !s) return s;
    if (pinned) pinned_.push_back(pinned);
  }
  std::vector<Op*> pool_ops;
  pool_ops.reserve(sum.pool);
  for (Op* op : ops) {
    if (op->on_cpu) pool_ops.push_back(op);
  }
  // The pool takes its ops largest input first, so that no long one starts
  // last and holds the wait (they are handed out one at a time); their room
  // goes in that order (CpuUploads).
  std::vector<Op*> by_size = pool_ops;
  std::stable_sort(by_size.begin(), by_size.end(), [](const Op* a, const Op* b) { return a->in.size > b->in.size; });
  std::uint64_t room_at = 0;
  for (Op* op : by_size) {
    if (!op->expect) continue;
    op->room = room + room_at;
    op->pinned = pinned ? pinned + room_at : nullptr;
    room_at += aligned(op->expect);
  }
  // Goes after the pool (declared before it), which hands it ops; kept
  // running past the dispatch (cpu_uploads_).
  auto left = std::make_unique<CpuUploadsLeft>();
  left->order = by_size;
  CpuUploads& uploads = left->uploads;
  if (sum.room) {
    if (Status s = uploads.start(dev_, left->order); !s) return s;
  }
  // The ops go out one at a time, to the pool's workers and, once it is done
  // with the device, to this thread too (which then waits for no wake-up).
  PoolWork work(by_size, uploads);
  const auto pool_t0 = std::chrono::steady_clock::now();
  // Its destructor waits, on every return below: it goes before what it
  // reads (work), declared before it.
  std::future<void> pool;
  if (!by_size.empty()) {
    pool = std::async(std::launch::async, [this, &work] {
      detail::parallel_for_background(static_cast<std::size_t>(threads_), threads_,
                                      [&](std::size_t) { work.take(*this); });
    });
  }

  // The device's ops get their offsets in one output allocation.
  std::uint8_t* base = nullptr;
  if (Status s = alloc(static_cast<std::size_t>(sum.out), &base); !s) return s;
  std::vector<gpu::ScanDecodeJob> inflates(sum.inflates), lz4s(sum.lz4s);
  std::vector<gpu::ScanCopyJob> copies(sum.copies);
  std::vector<gpu::ScanUpload> host_pieces(sum.host);  // zstd frames libzstd decoded: one upload
  // An output whose size its blocks fix before they run (every piece of an
  // exact size) is checked in the decoders' dispatch: the CRC-32 pieces and
  // the layer job over that size go with it, read only if the blocks give
  // exactly it. The rest are checked in a dispatch of their own afterwards.
  std::vector<gpu::ScanCrcPiece> crc_pieces(sum.pieces);
  std::vector<gpu::ScanLayerJob> layer_jobs(sum.layers);
  for_runs(ops.size(), [&](std::size_t r, std::size_t begin, std::size_t end) {
    Count c = at[r];
    for (std::size_t i = begin; i < end; ++i) {
      Op* op = ops[i];
      if (op->on_cpu) continue;
      std::uint8_t* out = base + c.out;
      c.out += aligned(op->out_bytes);
      op->out = {nullptr, nullptr, out, op->out_bytes};
      for (Piece& p : op->pieces) {
        const std::uint8_t* in = op->in.dev + p.job;
        switch (p.kind) {
          case Piece::inflate:
          case Piece::lz4: {
            const bool inflate = p.kind == Piece::inflate;
            p.job = inflate ? c.inflates++ : c.lz4s++;
            gpu::ScanDecodeJob& j = (inflate ? inflates : lz4s)[p.job];
            j.in = in;
            j.in_size = static_cast<std::size_t>(p.in_size);
            j.out = out + p.out_at;
            j.capacity = static_cast<std::size_t>(p.size);
            break;
          }
          case Piece::copy: {
            p.job = c.copies++;
            gpu::ScanCopyJob& j = copies[p.job];
            j.item.src = in;
            j.item.dst = p.mode == gpu::ScanCopyMode::unsupported ? nullptr : out + p.out_at;
            j.item.size = p.size;
            j.item.mode = p.mode;
            break;
          }
          case Piece::cpu:
            host_pieces[c.host++] = {out + p.out_at, op->host_pieces[p.host].data(),
                                     static_cast<std::size_t>(op->host_pieces[p.host].size())};
            break;
        }
      }
      Checked& k = checked[i];
      if (k.layer == SIZE_MAX) continue;
      k.layer = c.layers++;
      layer_jobs[k.layer] = {out, k.size};
      if (!k.crc_last) continue;
      k.crc_first = c.pieces;
      put_crc_pieces(out, k.size, crc_pieces.data() + c.pieces);
      c.pieces += k.crc_last;  // the count, until now
      k.crc_last = c.pieces;
    }
  });
  stats_.host_to_device_bytes += sum.host_bytes;
  if (!host_pieces.empty()) {
    if (Status s = waited([&] { return dev_.upload_many(host_pieces); }); !s) return s;
  }
  if (!inflates.empty()) ++stats_.dispatches;
  if (!lz4s.empty()) ++stats_.dispatches;
  if (!copies.empty()) ++stats_.dispatches;
  if (!crc_pieces.empty() || !layer_jobs.empty()) ++stats_.dispatches;
  if (Status s = uploaded(&DeviceScanStats::device_seconds); !s) return s;
  if (Status s = waited([&] { return dev_.decode_start(inflates, lz4s, copies, crc_pieces, layer_jobs); }); !s) {
    return s;
  }
  if (Status s = waited([&] { return dev_.decode_finish(); }); !s) return s;

  // Each output's blocks (and the tally of the pieces, for the stats), its
  // checks, and what the walks need of it: a good output that is no layer
  // to parse is a file (the walk goes no deeper for it, and needs none of
  // its bytes on the host); layers, and outputs with an xxHash to check
  // (on the host), come back whole. An op is settled (ok, or rejected to
  // the CPU) once its checks are known.
  struct Tally {
    std::uint64_t gpu_blocks = 0, gpu_bytes = 0, cpu_blocks = 0, cpu_bytes = 0, unsupported = 0, rejected = 0;
  };
  std::vector<Tally> tallies(runs(ops.size()));
  std::vector<char> whole(ops.size(), 0), reject(ops.size(), 0);
  std::vector<char> later(ops.size(), 0);    // good, and checked after the dispatch
  std::vector<char> on_host(ops.size(), 0);  // good, with a check on the host bytes
  std::vector<std::uint32_t> device_crc(ops.size(), 0);
  std::vector<Layer> layer(ops.size(), Layer::file);
  const auto verdict = [&](std::size_t i, bool ok, Tally& t, std::uint64_t* decoded) {
    Op& op = *ops[i];
    if (ok) {
      op.state = OpState::ok;
      t.gpu_bytes += op.out.size;
      *decoded += op.out.size;
      return;
    }
    ++t.rejected;
    op.on_cpu = true;
    reject[i] = 1;
    whole[i] = 0;
  };
  // A good op's whole flag, and its verdict unless it has checks on the
  // host, once its layer and CRC-32 are known.
  const auto settle = [&](std::size_t i, Tally& t, std::uint64_t* decoded) {
    Op& op = *ops[i];
    bool host_check = false;
    for (const Check& c : op.checks) host_check |= c.kind != Check::crc32;
    whole[i] = layer[i] != Layer::file || host_check;
    if (!whole[i]) {
      op.out.file = true;
      op.out.head = dev_.emulated() ? op.out.dev : nullptr;
    }
    if (host_check) {
      on_host[i] = 1;  // after the fetch
    } else {
      verdict(i, verify_checks(op, device_crc[i]), t, decoded);
    }
  };
  // Adds the ok outputs' bytes to their archive's tally.
  const auto add_decoded = [&](std::size_t archive, std::uint64_t& decoded) {
    if (decoded) std::atomic_ref<std::uint64_t>(decoded_[archive]).fetch_add(decoded, std::memory_order_relaxed);
    decoded = 0;
  };
  // A run adds to few archives' tallies (the ops come archive after archive).
  for_runs(ops.size(), [&](std::size_t r, std::size_t begin, std::size_t end) {
    Tally& t = tallies[r];
    std::size_t archive = SIZE_MAX;
    std::uint64_t decoded = 0;
    for (std::size_t i = begin; i < end; ++i) {
      Op& op = *ops[i];
      if (op.on_cpu) continue;
      const bool good = verify_blocks(op, inflates, lz4s, copies);
      for (const Piece& p : op.pieces) {
        if (p.kind == Piece::cpu) {
          ++t.cpu_blocks;
          t.cpu_bytes += p.size;
        } else if (p.kind == Piece::copy && p.mode == gpu::ScanCopyMode::unsupported) {
          ++t.unsupported;
        } else {
          ++t.gpu_blocks;
        }
      }
      if (op.archive != archive) {
        if (archive != SIZE_MAX) add_decoded(archive, decoded);
        archive = op.archive;
      }
      if (!good) {
        verdict(i, false, t, &decoded);
        continue;
      }
      const Checked& c = checked[i];
      if (c.layer == SIZE_MAX || op.out.size != c.size) {
        later[i] = 1;
        continue;
      }
      layer[i] = layer_jobs[c.layer].layer;
      if (c.crc_first != c.crc_last) device_crc[i] = joined_crc(crc_pieces, c.crc_first, c.crc_last);
      settle(i, t, &decoded);
    }
    if (archive != SIZE_MAX) add_decoded(archive, decoded);
  });
  // The rest of the checks (few ops, on this thread): the device classifies
  // the other good outputs and takes their CRC-32s; then the host checks
  // its own on the bytes that came back.
  const auto one = [&](std::size_t i, const auto& fn) {
    std::uint64_t decoded = 0;
    fn(i, tallies[i / kRun], &decoded);
    add_decoded(ops[i]->archive, decoded);
  };
  if (std::find(later.begin(), later.end(), 1) != later.end()) {
    std::vector<Region> crc(ops.size()), head(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!later[i]) continue;
      const Op& op = *ops[i];
      head[i] = op.out;
      for (const Check& c : op.checks) {
        if (c.kind == Check::crc32) crc[i] = op.out;
      }
    }
    if (Status s = device_checks(crc, &device_crc, head, &layer); !s) return s;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (later[i]) one(i, settle);
    }
  }
  if (Status s = fetch_whole(ops, whole); !s) return s;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!on_host[i]) continue;
    one(i, [&](std::size_t k, Tally& t, std::uint64_t* decoded) {
      verdict(k, verify_checks(*ops[k], device_crc[k]), t, decoded);
    });
  }
  std::vector<Op*> rejected;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (reject[i]) rejected.push_back(ops[i]);
  }
  for (const Tally& t : tallies) {
    stats_.gpu_blocks += t.gpu_blocks;
    stats_.gpu_bytes += t.gpu_bytes;
    stats_.cpu_blocks += t.cpu_blocks;
    stats_.cpu_bytes += t.cpu_bytes;
    stats_.unsupported_blocks += t.unsupported;
    stats_.rejected_blocks += t.rejected;
  }
  clock_.lap(&DeviceScanStats::device_seconds);

  // What the device rejected, the CPU decodes too; then the pool's ops are
  // waited for.
  detail::parallel_for(rejected.size(), threads_, [&](std::size_t i) { decode_on_cpu(*rejected[i]); });
  if (!by_size.empty()) {
    work.take(*this);
    work.wait();
    stats_.cpu_pool_seconds += seconds_since(pool_t0);
    if (work.failed()) pool.get();  // its exception
  }
  clock_.lap(&DeviceScanStats::cpu_seconds);

  std::vector<Op*> cpu = pool_ops;
  cpu.insert(cpu.end(), rejected.begin(), rejected.end());
  // The thread sends the rest while the next walk runs; the next read of
  // the device waits for it (uploaded()).
  uploads.close();
  cpu_uploads_ = std::move(left);
  if (Status s = upload_cpu_outputs(cpu); !s) return s;
  for (const Op* op : cpu) {
    if (op->by_policy) ++stats_.policy_blocks;
    if (op->state != OpState::ok) continue;
    ++stats_.cpu_blocks;
    stats_.cpu_bytes += op->out.size;
    if (op->by_policy) stats_.policy_bytes += op->out.size;
  }
  for (const Op* op : rejected) {
    if (op->state == OpState::ok) stats_.rejected_bytes += op->out.size;
  }
  for (const Op* op : cpu) {
    if (op->state != OpState::ok) continue;
    decoded_[op->archive] += op->out.size;
  }
  clock_.lap(&DeviceScanStats::device_seconds);
  return {};
}

// Whether the device's blocks of `op` gave exactly what the format says:
// every block ok and of its size, all input consumed. Sets the output's size.
bool Batch::verify_blocks(Op& op, const std::vector<gpu::ScanDecodeJob>& inflates,
                          const std::vector<gpu::ScanDecodeJob>& lz4s, const std::vector<gpu::ScanCopyJob>& copies) {
  std::uint64_t end = 0;
  for (const Piece& p : op.pieces) {
    std::uint64_t got = p.size;
    switch (p.kind) {
      case Piece::inflate: {
        const gpu::ScanDecodeJob& j = inflates[p.job];
        if (!j.ok || j.out_size != p.size || j.in_used != p.in_size) return false;
        break;
      }
      case Piece::lz4: {
        const gpu::ScanDecodeJob& j = lz4s[p.job];
        if (!j.ok || (p.exact ? j.out_size != p.size : j.out_size > p.size)) return false;
        got = j.out_size;
        break;
      }
      case Piece::copy:
        if (p.mode == gpu::ScanCopyMode::unsupported) {
          if (copies[p.job].status != gpu::ScanCopyStatus::unsupported_on_gpu) return false;
          continue;
        }
        if (copies[p.job].status != gpu::ScanCopyStatus::ok) return false;
        break;
      case Piece::cpu: break;
    }
    end = std::max(end, p.out_at + got);
  }
  op.out.size = end;
  return true;
}

// Whether the output holds its checksums: a CRC-32 (all over the output:
// gzip's, a ZIP entry's) by the device's, `device_crc`; xxHashes on the
// host copy.
bool Batch::verify_checks(const Op& op, std::uint32_t device_crc) {
  const std::uint64_t end = op.out.size;
  for (const Check& c : op.checks) {
    const std::uint64_t size = c.size == UINT64_MAX ? end - std::min(end, c.at) : c.size;
    if (c.at > end || size > end - c.at) return false;
    if (c.kind == Check::crc32) {
      if (c.at != 0 || size != end || device_crc != c.want) return false;
      continue;
    }
    if (!op.out.host) return false;
    const std::span<const std::uint8_t> bytes(op.out.host + c.at, static_cast<std::size_t>(size));
    const bool holds = c.kind == Check::xxh32 ? XXH32(bytes.data(), bytes.size(), 0) == c.want
                                              : zstd_frame::content_checksum(bytes) == c.want;
    if (!holds) return false;
  }
  return true;
}

// Whole copies of the outputs marked (good ones), on the host; the others
// keep none. On a device one copy dispatch packs them back to back, into
// pinned host memory that the device writes itself where it can be had
// (one wait), else into device memory that one download then brings back:
// hundreds of downloads to pageable memory, each waited for, cost more
// than the extra copy on the device.
Status Batch::fetch_whole(const std::vector<Op*>& ops, const std::vector<char>& whole) {
  // Each output 16-aligned, as the outputs are on the device (the copy
  // moves 16 bytes a step where both sides share their alignment).
  const auto aligned = [](std::uint64_t n) { return (n + 15) / 16 * 16; };
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (whole[i]) total += aligned(ops[i]->out.size);
  }
  std::uint8_t* host = nullptr;
  std::uint8_t* packed = nullptr;
  if (!dev_.emulated() && total) {
    if (dev_.kernels_reach_host()) {
      if (Status s = dev_.host_alloc(static_cast<std::size_t>(total), &host); !s) return s;
    }
    if (host) {
      pinned_.push_back(host);
      packed = host;
    } else {
      host = keep_raw(static_cast<std::size_t>(total));
      if (Status s = alloc(static_cast<std::size_t>(total), &packed); !s) return s;
    }
  }
  std::vector<gpu::ScanCopyJob> jobs;
  std::uint64_t at = 0, fetched = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!whole[i]) continue;  // its host bytes stay null (the dispatch's layout set them so)
    Op& op = *ops[i];
    if (dev_.emulated()) {
      op.out.host = op.out.head = op.out.dev;
      continue;
    }
    if (op.out.size) {
      gpu::ScanCopyJob j;
      j.item.src = op.out.dev;
      j.item.dst = packed + at;
      j.item.size = op.out.size;
      jobs.push_back(j);
    }
    op.out.host = op.out.head = host + at;
    at += aligned(op.out.size);
    fetched += op.out.size;
  }
  if (jobs.empty()) return {};
  if (Status s = waited([&] { return dev_.copy(jobs); }); !s) return s;
  for (const gpu::ScanCopyJob& j : jobs) {
    if (j.status != gpu::ScanCopyStatus::ok) return {StatusCode::device_error, "the copy of outputs to fetch failed"};
  }
  stats_.device_to_host_bytes += fetched;
  if (packed == host) return {};
  return waited([&] { return dev_.download(host, packed, static_cast<std::size_t>(at)); });
}

// The CRC-32 of every output in `crc_of` (device bytes; those without are
// skipped: the device reads them faster than one host thread, and in
// parallel pieces, which are joined here), and the layer of every output in
// `layer_of` (those without device bytes keep theirs), in one dispatch.
Status Batch::device_checks(const std::vector<Region>& crc_of, std::vector<std::uint32_t>* crcs,
                            const std::vector<Region>& layer_of, std::vector<Layer>* layers) {
  std::vector<gpu::ScanCrcPiece> pieces;
  std::vector<std::pair<std::size_t, std::size_t>> range(crc_of.size(), {0, 0});
  for (std::size_t i = 0; i < crc_of.size(); ++i) {
    const Region& out = crc_of[i];
    if (!out.dev) continue;
    range[i].first = pieces.size();
    pieces.resize(pieces.size() + crc_pieces_of(out.size));
    put_crc_pieces(out.dev, out.size, pieces.data() + range[i].first);
    range[i].second = pieces.size();
  }
  std::vector<gpu::ScanLayerJob> jobs;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < layer_of.size(); ++i) {
    if (!layer_of[i].dev) continue;
    jobs.push_back({layer_of[i].dev, layer_of[i].size});
    which.push_back(i);
  }
  if (pieces.empty() && jobs.empty()) return {};
  ++stats_.dispatches;
  if (Status s = waited([&] { return dev_.check(pieces, jobs); }); !s) return s;
  for (std::size_t k = 0; k < jobs.size(); ++k) (*layers)[which[k]] = jobs[k].layer;
  for_runs(crc_of.size(), [&](std::size_t, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      if (range[i].first != range[i].second) (*crcs)[i] = joined_crc(pieces, range[i].first, range[i].second);
    }
  });
  return {};
}

void PoolWork::take(Batch& batch) {
  const std::size_t n = order_.size();
  const auto finish = [&](std::size_t i) {
    uploads_.done(i);
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) finished_.notify_all();
  };
  for (std::size_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n;) {
    try {
      batch.decode_on_cpu(*order_[i]);
    } catch (...) {
      failed_ = true;
      finish(i);
      throw;
    }
    finish(i);
  }
}

// The op's whole input through the CPU decoder, up to its cap, into
// op.host_out (host work only: it runs on the pool beside the device's).
void Batch::decode_on_cpu(Op& op) {
  std::vector<std::uint8_t>& bytes = op.host_out;
  bytes.clear();
  op.pinned_size = 0;
  Status s;
  if (op.kind == OpKind::zip_deflate) {
    zip::Entry e;
    e.method = zip::kDeflate;
    e.compressed_size = op.in.size;
    e.size = op.expected;
    e.crc32 = op.crc;
    if (op.expected > op.cap) {
      s = {StatusCode::output_limit};
    } else if (op.pinned && op.expect == op.expected) {
      s = zip::extract_into(op.in.span(), e, op.pinned, op.cap);
      if (s) op.pinned_size = op.expected;
    } else {
      s = zip::extract(op.in.span(), e, &bytes, op.cap);
    }
  } else {
    const Layer kind = op.kind == OpKind::gzip ? Layer::gzip : op.kind == OpKind::lz4 ? Layer::lz4 : Layer::zstd;
    if (op.pinned && decompress_cpu_into(kind, op.in.span(), op.pinned, op.expect)) {
      op.pinned_size = op.expect;
      op.state = OpState::ok;
      return;
    }
    s = decompress_cpu(kind, op.in.span(), op.cap, &bytes);
  }
  if (!s) {
    op.state = OpState::failed;  // the final walk asks the CPU again, under its own limits
    op.pinned_size = 0;
    std::vector<std::uint8_t>().swap(bytes);
    return;
  }
  op.state = OpState::ok;
}

// The outputs of `ops` that the CPU decoded go to the device: those the
// pool's uploads take (CpuUploads::fits: in their room, which the next read
// of the device waits for), and one allocation and one upload for the rest.
// Their host copies stay, for the walks. (Nothing here writes what the
// uploads' thread reads.)
Status Batch::upload_cpu_outputs(const std::vector<Op*>& ops) {
  std::uint64_t total = 0;
  for (const Op* op : ops) {
    if (op->state == OpState::ok && !CpuUploads::fits(*op)) total += (op->host_size() + 255) / 256 * 256;
  }
  std::uint8_t* d = nullptr;
  if (!dev_.emulated() && total) {
    if (Status s = alloc(static_cast<std::size_t>(total), &d); !s) return s;
  }
  std::vector<gpu::ScanUpload> uploads;
  std::uint64_t at = 0;
  for (Op* op : ops) {
    if (op->state != OpState::ok) continue;
    // Pinned bytes stay where they are until the call ends, and so do the
    // bytes of a vector that the uploads' thread reads (in the op, which the
    // call's host state holds); the others go into the call's host state.
    const bool going = CpuUploads::fits(*op);
    const std::uint8_t* host = op->host_bytes();
    std::uint64_t n = op->host_size();
    if (!op->pinned_size && !going) {
      std::vector<std::uint8_t>& kept = keep();
      kept = std::move(op->host_out);
      host = kept.data();
      n = kept.size();
    }
    const std::uint8_t* dev = host;
    if (going) {
      dev = op->room;  // (host memory as well when emulated)
      if (!dev_.emulated()) stats_.host_to_device_bytes += n;
    } else if (!dev_.emulated()) {
      uploads.push_back({d + at, host, static_cast<std::size_t>(n), true});
      dev = d + at;
      stats_.host_to_device_bytes += n;
      at += (n + 255) / 256 * 256;
    }
    op->out = {host, host, dev, n};
  }
  if (uploads.empty()) return {};
  // Queued: the walks after the dispatch read the host copies, and the
  // gather, later on the stream, the device's.
  return waited([&] { return dev_.upload_queued(uploads); });
}

// ---------------------------------------------------------------- the walk ----

// One archive walked as scan() walks it. A final walk lists every entry,
// with the CPU deciding where an op's result does not stand. A walk that
// tries (each pass's) is a final walk until it meets an op that no dispatch
// has seen, whose input is on the device: from there on it is a discovery
// walk, which records the ops it meets undecoded, leaves what is below them
// for a later pass, and lists nothing. A walk that recorded nothing is the
// archive's final walk.
class Walker {
 public:
  enum class Mode : std::uint8_t { trying, final };
  Walker(Batch& batch, const ScanLimits& limits, std::size_t archive, Mode mode)
      : batch_(batch),
        limits_(limits),
        archive_(archive),
        trying_(mode == Mode::trying),
        budget_(limits),
        cpu_left_(batch.walk_cpu_bytes()) {}
  // Whether the walk recorded ops (and so listed nothing).
  bool recorded() const { return !final_; }

  Status walk(const Region& data, std::string path, const std::string& codec, int layer, int depth) {
    const Layer kind = data.file ? Layer::file : layer_of(data.head, static_cast<std::size_t>(data.size));
    if (kind != Layer::file && depth > limits_.max_depth) return add(std::move(path), codec, layer, {}, kDepthStatus);
    switch (kind) {
      case Layer::gzip:
      case Layer::lz4:
      case Layer::zstd: return walk_compressed(kind, data, path, codec, layer, depth);
      case Layer::zip: return walk_zip(data, path, codec, layer, depth);
      case Layer::tar: return walk_tar(data, path, codec, layer, depth);
      case Layer::file: break;
    }
    if (!final_) return add(std::move(path), codec, layer, data, {});
    return add(std::move(path), codec.empty() ? "stored" : codec, layer, data, {});
  }

  std::vector<ScanEntry> entries;
  std::vector<Region> sources;  // each entry's bytes (empty for a failed one)
  std::uint64_t bytes = 0;
  std::size_t on_device = 0;  // entries with bytes on the device (the gather's jobs)
  std::uint64_t cpu_inputs = 0;  // new inputs this walk decoded itself (Batch::walk_cpu_bytes)

 private:
  // Host bytes the CPU produced: no device copy, the gather uploads them.
  Region host_region(std::vector<std::uint8_t>&& v) {
    std::vector<std::uint8_t>& kept = batch_.keep(archive_);
    kept = std::move(v);
    return {kept.data(), kept.data(), nullptr, kept.size()};
  }

  // Whether the walk records `op` instead of deciding it on the CPU: in a
  // discovery walk always (record() skips those already seen); in a trying
  // one when no dispatch has seen it and the device has its input, unless
  // the walk may still decode that many bytes itself (a nested layer's
  // small inputs, not worth a dispatch).
  bool records(const Op& op) {
    if (!final_) return true;
    if (!trying_ || op.state != OpState::fresh || !op.in.dev) return false;
    if (op.in.size > cpu_left_) return true;
    cpu_left_ -= op.in.size;
    ++cpu_inputs;
    return false;
  }
  // Records `op` if it is new, with the most the walk allows it (the final
  // walk never allows more); a trying walk is a discovery walk from now on.
  void record(Op& op, std::uint64_t allowed) {
    if (final_) {
      final_ = false;
      entries.clear();
      sources.clear();
      bytes = 0;
      on_device = 0;
    }
    if (op.state != OpState::fresh) return;
    op.cap = allowed;
    batch_.record(&op);
  }

  Status walk_compressed(Layer kind, const Region& data, const std::string& path, const std::string& codec,
                         int layer, int depth) {
    // Discovery walks list no entries, so they build no names.
    const std::string how = final_ ? join(codec, layer_name(kind)) : std::string();
    const std::uint64_t allowed = budget_.budget(static_cast<std::size_t>(data.size));
    Op& op = batch_.op(op_kind(kind), data, archive_);
    if (op.state == OpState::ok && op.out.size <= allowed) {
      budget_.produced += op.out.size;
      return walk(op.out, final_ ? without_suffix(path, kind) : std::string(), how, layer, depth + 1);
    }
    if (records(op)) {
      record(op, allowed);
      return {};
    }
    std::vector<std::uint8_t> inner;
    Status s = decompress_cpu(kind, data.span(), allowed, &inner);
    if (s) budget_.produced += inner.size();
    s = budget_.over_limits(s, allowed);
    if (!s) return add(path, how, layer, {}, s);
    return walk(host_region(std::move(inner)), without_suffix(path, kind), how, layer, depth + 1);
  }

  Status walk_zip(const Region& data, const std::string& path, const std::string& codec, int layer, int depth) {
    ZipParse& z = batch_.zip_of(data, archive_);
    if (!z.status) return add(path, join(codec, "zip"), layer, {}, z.status);
    expect_entries(z.entries.size());
    const std::string deflated = join(codec, "zip:deflate"), stored = join(codec, "zip:stored");
    for (std::size_t i = 0; i < z.entries.size(); ++i) {
      const zip::Entry& e = z.entries[i];
      if (e.is_directory() || e.is_symlink()) continue;
      std::string member = final_ ? member_path(path, e.name) : std::string();
      const std::string& how = e.method == zip::kDeflate ? deflated : stored;
      const bool inside = e.data_offset <= data.size && data.size - e.data_offset >= e.compressed_size;
      const std::uint64_t allowed = e.method == zip::kStored ? e.size : budget_.budget(e.compressed_size);
      if (inside && e.method == zip::kStored && e.compressed_size == e.size) {
        const Region bytes = data.sub(e.data_offset, e.size);
        if (batch_.crc_holds(bytes, e.crc32, archive_)) {
          if (Status w = walk(bytes, std::move(member), how, layer + 1, depth + 1); !w) return w;
          continue;
        }
      }
      if (inside && e.method == zip::kDeflate) {
        Op& op = batch_.zip_op(z, i, data.sub(e.data_offset, e.compressed_size), archive_);
        op.expected = e.size;
        op.crc = e.crc32;
        if (op.state == OpState::ok && e.size <= allowed) {
          budget_.produced += op.out.size;
          if (Status w = walk(op.out, std::move(member), how, layer + 1, depth + 1); !w) return w;
          continue;
        }
        if (records(op)) record(op, allowed);
      }
      if (!final_) continue;
      // scan()'s own extraction decides.
      std::vector<std::uint8_t> out;
      Status s = zip::extract(data.span(), e, &out, allowed);
      if (s && e.method != zip::kStored) budget_.produced += out.size();
      s = budget_.over_limits(s, allowed);
      if (!s) {
        if (Status a = add(std::move(member), how, layer + 1, {}, s); !a) return a;
        continue;
      }
      if (Status w = walk(host_region(std::move(out)), std::move(member), how, layer + 1, depth + 1); !w) return w;
    }
    return {};
  }

  Status walk_tar(const Region& data, const std::string& path, const std::string& codec, int layer, int depth) {
    const TarParse& t = batch_.tar_of(data, archive_);
    const std::string how = final_ ? join(codec, "tar") : std::string();
    expect_entries(t.entries.size());
    for (const tar::Entry& e : t.entries) {
      if (e.kind != tar::Kind::file) continue;
      if (Status w = walk(data.sub(e.data_at, e.size), final_ ? member_path(path, e.path) : std::string(), how, layer + 1,
                          depth + 1);
          !w) {
        return w;
      }
    }
    if (!t.status) return add(path, how, layer, {}, t.status);
    return {};
  }

  // Room for a container's `n` members in a final walk's lists.
  void expect_entries(std::size_t n) {
    if (!final_) return;
    entries.reserve(entries.size() + n);
    sources.reserve(sources.size() + n);
  }

  Status add(std::string path, const std::string& codec, int layer, const Region& data, Status status) {
    if (count_ >= limits_.max_entries) return kEntriesStatus;
    ++count_;
    if (!final_) return {};
    ScanEntry e;
    e.path = std::move(path);
    e.layer = layer;
    e.codec = codec;
    e.status = status;
    e.archive = archive_;
    e.offset = bytes;
    if (status) {
      e.size = data.size;
      bytes += data.size;
      on_device += data.size && data.dev;
      sources.push_back(data);
    } else {
      sources.push_back({});
    }
    entries.push_back(std::move(e));
    return {};
  }

  Batch& batch_;
  const ScanLimits& limits_;
  std::size_t archive_;
  bool trying_;
  bool final_ = true;
  Budget budget_;
  std::uint64_t cpu_left_;  // compressed bytes of new inputs the walk may still decode itself
  std::uint64_t count_ = 0;
};

struct Root {
  Region region;
  std::string name;
};

// The scan of `roots`, its phases timed on `clock` up to the gather (the
// caller times what its return frees). `upload`, when not null, still
// copies the roots' bytes to the device.
Status scan_roots(std::vector<Root>& roots, const ScanLimits& limits, gpu::ScanDevice& dev,
                  const DeviceScanOptions& options, DeviceScanResult* result, PhaseClock& clock,
                  ArchiveUpload* upload) {
  DeviceScanStats& stats = result->stats;
  Batch batch(dev, limits, options, roots.size(), &stats, clock, upload);
  // Passes, a layer of nesting deeper each, until nothing is new: each
  // walks the archives that recorded ops in the last (all, the first time),
  // trying to be their final walk, and dispatches what they recorded.
  std::vector<gpu::ScanCopyJob> gather;
  std::vector<std::pair<std::uint64_t, Region>> uploads;  // (offset in the result, host bytes)
  std::uint64_t total = 0;
  // Held by the batch: their sources and names go with its host state.
  std::vector<std::optional<Walker>>& walkers = batch.hold(std::vector<std::optional<Walker>>(roots.size()));
  std::vector<Status> walked(roots.size());
  std::vector<char> listed(roots.size(), 0);  // the archive's final walk is done
  // The walks take the largest archives first, so that no long walk starts
  // last and holds the pass (they are handed out one at a time).
  std::vector<std::size_t> order(roots.size());
  for (std::size_t a = 0; a < roots.size(); ++a) order[a] = a;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return roots[x].region.size > roots[y].region.size; });
  for (std::int64_t pass = 0;; ++pass) {
    detail::parallel_for(roots.size(), batch.threads(), [&](std::size_t k) {
      const std::size_t a = order[k];
      if (listed[a]) return;
      Walker& w = walkers[a].emplace(batch, limits, a, Walker::Mode::trying);
      walked[a] = w.walk(roots[a].region, roots[a].name, "", 0, 0);
      listed[a] = !w.recorded();
    });
    for (std::optional<Walker>& w : walkers) {
      if (!w) continue;
      stats.walk_cpu_blocks += w->cpu_inputs;
      w->cpu_inputs = 0;  // counted
    }
    clock.lap(&DeviceScanStats::walk_seconds);
    if (!batch.has_pending()) break;
    if (Status s = batch.dispatch(); !s) return s;
    if (pass > static_cast<std::int64_t>(limits.max_depth) + 2) break;  // cannot happen: each pass goes a layer deeper
  }
  // The final walks of any archive left (the CPU decides what no dispatch
  // did), and the gather of every entry's bytes.
  Status call;
  if (std::find(listed.begin(), listed.end(), 0) != listed.end()) {
    detail::parallel_for(roots.size(), batch.threads(), [&](std::size_t k) {
      const std::size_t a = order[k];
      if (listed[a]) return;
      Walker& w = walkers[a].emplace(batch, limits, a, Walker::Mode::final);
      walked[a] = w.walk(roots[a].region, roots[a].name, "", 0, 0);
    });
  }
  clock.lap(&DeviceScanStats::final_walk_seconds);
  // Each archive's entries, gather jobs and bytes go where the archives
  // before it end, so that the archives fill the table at once.
  struct Place {
    std::size_t entry = 0, job = 0;
    std::uint64_t offset = 0;
  };
  std::vector<Place> place(roots.size() + 1);
  for (std::size_t a = 0; a < roots.size(); ++a) {
    const Walker& w = *walkers[a];
    if (!walked[a] && call) call = walked[a];
    place[a + 1] = {place[a].entry + w.entries.size(), place[a].job + w.on_device, place[a].offset + w.bytes};
  }
  total = place.back().offset;
  // The entry table, filled from a thread of its own while the gather's
  // jobs are laid out and run (tens of thousands of entries, whose fresh
  // memory the first touch pages in), the archives at once: it moves the
  // walkers' entries, which nothing reads from here on (the gather reads
  // their sources). Waited for on every path (the future's destructor).
  std::future<void> table = std::async(std::launch::async, [&] {
    std::vector<ScanEntry>& table = result->entries;
    table.resize(place.back().entry);
    detail::parallel_for(roots.size(), batch.threads(), [&](std::size_t a) {
      std::vector<ScanEntry>& from = walkers[a]->entries;
      for (std::size_t i = 0; i < from.size(); ++i) {
        ScanEntry& e = table[place[a].entry + i];
        e = std::move(from[i]);
        e.offset += place[a].offset;
      }
    });
  });
  // The result's allocation (a cudaMalloc of tens of MiB takes a few
  // hundred microseconds) runs beside the jobs' layout, which uses no
  // device call, and the result owns it at once; it is waited for on every
  // path (the future's destructor).
  void* out = nullptr;
  std::future<Status> allocated;
  if (total) {
    allocated = std::async(std::launch::async, [&dev, &out, result, total] {
      Status s = dev.alloc_result(static_cast<std::size_t>(total), &out);
      if (s) result->adopt(out, total, !dev.emulated());
      return s;
    });
  }
  // Each ok entry's bytes follow the archive's ok entries before it; a
  // source is empty for a failed entry (and an empty file).
  gather.resize(place.back().job);
  std::vector<std::vector<std::pair<std::uint64_t, Region>>> host_bytes(roots.size());
  detail::parallel_for(roots.size(), batch.threads(), [&](std::size_t a) {
    std::size_t job = place[a].job;
    std::uint64_t offset = place[a].offset;
    for (const Region& r : walkers[a]->sources) {
      if (!r.size) continue;
      if (r.dev) {
        gpu::ScanCopyJob& j = gather[job++];
        j.item.src = r.dev;
        j.item.size = r.size;
        j.item.dst = reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(offset));  // placed below
      } else {
        host_bytes[a].emplace_back(offset, r);
      }
      offset += r.size;
    }
  });
  for (const auto& h : host_bytes) uploads.insert(uploads.end(), h.begin(), h.end());
  // The gather reads entries' bytes in the archives (when no dispatch has).
  if (Status s = batch.uploaded(&DeviceScanStats::entry_table_seconds); !s) return s;
  clock.lap(&DeviceScanStats::entry_table_seconds);
  if (total) {
    if (Status s = allocated.get(); !s) return s;
  }
  clock.lap(&DeviceScanStats::result_alloc_seconds);
  std::uint8_t* const base = static_cast<std::uint8_t*>(out);
  if (!uploads.empty()) {
    // Host bytes go up in one transfer, then join the gather.
    std::uint64_t staged = 0;
    for (const auto& u : uploads) staged += u.second.size;
    std::uint8_t* d = nullptr;
    if (dev.emulated()) {
      for (const auto& u : uploads) std::memcpy(base + u.first, u.second.host, static_cast<std::size_t>(u.second.size));
    } else {
      if (Status s = batch.alloc(static_cast<std::size_t>(staged), &d); !s) return s;
      std::vector<gpu::ScanUpload> copies;
      std::uint64_t at = 0;
      for (const auto& u : uploads) {
        copies.push_back({d + at, u.second.host, static_cast<std::size_t>(u.second.size)});
        at += u.second.size;
      }
      if (Status s = dev.upload_queued(copies); !s) return s;  // the gather follows on the stream
      stats.host_to_device_bytes += staged;
      at = 0;
      for (const auto& u : uploads) {
        gpu::ScanCopyJob j;
        j.item.src = d + at;
        j.item.size = u.second.size;
        j.item.dst = reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(u.first));
        gather.push_back(j);
        at += u.second.size;
      }
    }
  }
  for (gpu::ScanCopyJob& j : gather) j.item.dst = base + reinterpret_cast<std::uintptr_t>(j.item.dst);
  if (!gather.empty()) {
    ++stats.dispatches;
    if (Status s = dev.copy(gather); !s) return s;
    for (const gpu::ScanCopyJob& j : gather) {
      if (j.status != gpu::ScanCopyStatus::ok) return {StatusCode::device_error, "the gather of entries failed"};
    }
  }
  table.get();
  clock.lap(&DeviceScanStats::gather_seconds);
  return call;
}

// The device the options ask for: CUDA when wanted and present, else the
// emulation.
std::unique_ptr<gpu::ScanDevice> pick_device(const DeviceScanOptions& options) {
  std::unique_ptr<gpu::ScanDevice> dev;
  if (options.gpu && gpu::make_cuda_scan_device(options.stream, &dev)) return dev;
  return gpu::make_emulated_scan_device(options.threads);
}

}  // namespace

Status scan_to_device(std::span<const ScanInput> archives, const ScanLimits& limits, const DeviceScanOptions& options,
                      DeviceScanResult* result) {
  if (!result) return {StatusCode::invalid_argument, "null result"};
  result->reset();
  result->stats = {};
  for (const ScanInput& a : archives) {
    if (!a.archive.data && a.archive.size) return {StatusCode::invalid_argument, "null buffer"};
  }
  PhaseClock clock(&result->stats);
  std::unique_ptr<gpu::ScanDevice> dev = pick_device(options);
  result->stats.emulated = dev->emulated();
  std::vector<Root> roots(archives.size());
  void* up = nullptr;
  std::uint64_t total = 0;
  for (const ScanInput& a : archives) total += (a.archive.size + 255) / 256 * 256;
  if (!dev->emulated() && total) {
    if (Status s = dev->alloc(static_cast<std::size_t>(total), &up); !s) return s;
  }
  std::unique_ptr<void, std::function<void(void*)>> up_owner(up, [&](void* p) {
    if (p) dev->free(p);
  });
  clock.lap(&DeviceScanStats::setup_seconds);
  std::uint64_t at = 0;
  std::vector<gpu::ScanUpload> uploads;  // one thread for all, beside the first walk
  for (std::size_t i = 0; i < archives.size(); ++i) {
    const auto* h = static_cast<const std::uint8_t*>(archives[i].archive.data);
    const std::uint64_t n = archives[i].archive.size;
    const std::uint8_t* d = h;
    if (!dev->emulated() && n) {
      d = static_cast<std::uint8_t*>(up) + at;
      at += (n + 255) / 256 * 256;
      // A gzip archive that the CPU decodes by its layout (a package's
      // tarball past the split, most often) is read on the host alone: its
      // device copy keeps its place, unwritten.
      format::GzipHeader gh;
      std::uint32_t crc = 0, isize = 0;
      const bool host_only = layer_of(h, static_cast<std::size_t>(n)) == Layer::gzip &&
                             gzip_route(h, n, options.cpu_block_bytes, &gh, &crc, &isize) != GzipRoute::device;
      if (!host_only) {
        uploads.push_back({const_cast<std::uint8_t*>(d), h, static_cast<std::size_t>(n), true});
        result->stats.host_to_device_bytes += n;
      }
    }
    roots[i] = {{h, h, d, n}, archives[i].name};
  }
  // Joined before the archives' memory goes, on every path.
  ArchiveUpload upload;
  if (Status s = upload.start(*dev, std::move(uploads)); !s) return s;
  clock.lap(&DeviceScanStats::upload_seconds);
  const Status s = scan_roots(roots, limits, *dev, options, result, clock, &upload);
  (void)upload.wait();  // waited already, unless scan_roots failed before it read the copies
  up_owner.reset();
  dev.reset();
  clock.lap(&DeviceScanStats::release_seconds);
  clock.finish();
  return s;
}

Status scan_device_archive(const void* d_archive, std::uint64_t size, std::string_view name,
                           const ScanLimits& limits, const DeviceScanOptions& options, DeviceScanResult* result) {
  if (!result || (!d_archive && size)) return {StatusCode::invalid_argument, "null buffer"};
  result->reset();
  result->stats = {};
  PhaseClock clock(&result->stats);
  std::unique_ptr<gpu::ScanDevice> dev = pick_device(options);
  result->stats.emulated = dev->emulated();
  // Left uninitialised for the download, and freed after the call (Disposal).
  std::shared_ptr<std::uint8_t[]> host = std::make_unique_for_overwrite<std::uint8_t[]>(static_cast<std::size_t>(size));
  clock.lap(&DeviceScanStats::setup_seconds);
  if (Status s = dev->download(host.get(), d_archive, static_cast<std::size_t>(size)); !s) return s;
  result->stats.device_to_host_bytes += size;
  clock.lap(&DeviceScanStats::upload_seconds);
  std::vector<Root> roots(1);
  roots[0] = {{host.get(), host.get(), static_cast<const std::uint8_t*>(d_archive), size}, std::string(name)};
  const Status s = scan_roots(roots, limits, *dev, options, result, clock, nullptr);
  Disposal::later(std::move(host));
  dev.reset();
  clock.lap(&DeviceScanStats::release_seconds);
  clock.finish();
  return s;
}

}  // namespace tandem
