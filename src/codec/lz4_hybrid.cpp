// LZ4 frames through the hybrid scheduler (see lz4_hybrid.hpp).
#define XXH_STATIC_LINKING_ONLY
#include "codec/lz4_hybrid.hpp"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <system_error>
#include <thread>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codec/lz4_frame_blocks.hpp"
#include "cpu/lz4_block_cpu.hpp"
#include "format/lz4_frame_format.hpp"
#include "gpu/lz4_gpu_pipeline_host.hpp"
#include "sched/scheduler.hpp"

namespace tandem::hybrid {

namespace {

using lz4f::read_le32;
using lz4f::write_le32;

std::atomic<gpu::Lz4Pipeline*> g_test_pipeline{nullptr};

// The GPU decodes frames of blocks up to this size; larger blocks leave too
// few of them per batch to fill the device.
constexpr std::size_t kGpuDecodeMaxBlock = std::size_t{256} << 10;

sched::Policy policy_of(Backend b) {
  return b == Backend::cpu ? sched::Policy::cpu : b == Backend::gpu ? sched::Policy::gpu : sched::Policy::automatic;
}

// The host chunk: chunk_size rounded to whole blocks, at least one.
std::size_t chunk_blocks(std::size_t chunk_size, std::size_t block) {
  const std::size_t want = chunk_size ? chunk_size : sched::kDefaultChunkSize;
  return std::max<std::size_t>(1, want / block);
}

// Host memory for chunks of a source that does not keep its bytes: buffers
// of one size, reused once the writer is done with their chunk.
class ChunkPool {
 public:
  explicit ChunkPool(std::size_t size) : size_(size) {}
  std::unique_ptr<std::uint8_t[]> get() {
    std::lock_guard lk(mu_);
    if (free_.empty()) return std::unique_ptr<std::uint8_t[]>(new std::uint8_t[size_]);
    auto p = std::move(free_.back());
    free_.pop_back();
    return p;
  }
  void put(std::unique_ptr<std::uint8_t[]> p) {
    if (!p) return;
    std::lock_guard lk(mu_);
    free_.push_back(std::move(p));
  }

 private:
  std::size_t size_;
  std::mutex mu_;
  std::vector<std::unique_ptr<std::uint8_t[]>> free_;
};

// The GPUs a run may use: each pipeline locked for the run, or none. A
// pipeline that another run holds is left out rather than waited for.
struct GpuLeases {
  std::vector<gpu::Lz4Pipeline*> pipelines;
  std::vector<std::unique_lock<std::mutex>> locks;
};

GpuLeases lease_gpus(bool wanted) {
  GpuLeases l;
  if (!wanted) return l;
  auto take = [&](gpu::Lz4Pipeline* p) {
    auto lock = p->try_lock();
    if (!lock.owns_lock()) return;
    l.pipelines.push_back(p);
    l.locks.push_back(std::move(lock));
  };
  if (gpu::Lz4Pipeline* t = g_test_pipeline.load()) {
    take(t);
    return l;
  }
  const int n = backend_info().gpu_count;
  for (int g = 0; g < n; ++g) {
    gpu::Lz4Pipeline* p = nullptr;
    if (gpu::Lz4Pipeline::shared(g, &p) && p) take(p);
  }
  return l;
}

using CpuFn = std::function<Status(const sched::Chunk&, sched::ChunkOutput*)>;
using InFn = std::function<gpu::PipelineIn(const sched::Chunk&)>;

// Compression into a sink with fixed memory (Sink::place): the GPU copies a
// batch's frame blocks straight into their place in the output, so that the
// writer only commits them. A batch's place is known once every earlier
// chunk's size is: the ledger holds the first chunk whose place is not yet
// taken and where it starts. Workers report each chunk's size as soon as it
// is done, and the ledger moves on over every run of sizes it has; a batch
// that starts there takes its room and moves it past itself.
//
// A batch placed and then abandoned (the GPU failed) leaves the ledger past
// chunks that the CPU will compress again, to other sizes: the queue stops
// the ledger then, and nothing is placed for the rest of the run. Runs with
// one GPU only, so that no other GPU places a batch after such chunks before
// the ledger stops.
class Ledger {
 public:
  Ledger(Sink& out, std::uint64_t position) : out_(out), position_(position) {}
  // Room for chunks [first, end), `bytes` long, when chunk `first` starts
  // where the ledger stands and `accept` takes the room; else null. With
  // `wait`, waits up to kWait for the chunks before `first` to be sized:
  // those are the CPU's, being worked on (the GPU's are sized in order), so
  // that it is shorter to wait than to copy the batch through the writer.
  std::uint8_t* place(std::uint64_t first, std::uint64_t end, std::size_t bytes, bool wait,
                      const std::function<bool(const void*, std::size_t)>& accept) {
    static constexpr auto kWait = std::chrono::milliseconds(200);
    std::unique_lock lk(mu_);
    if (wait) sized_cv_.wait_for(lk, kWait, [&] { return stopped_ || next_ >= first; });
    if (stopped_ || first != next_) return nullptr;
    std::uint8_t* room = out_.place(position_, bytes);
    if (!room || !accept(room, bytes)) return nullptr;
    next_ = end;
    position_ += bytes;
    advance();
    return room;
  }
  void stop() {
    {
      const std::lock_guard lk(mu_);
      stopped_ = true;
    }
    sized_cv_.notify_all();
  }
  // Chunk `index` is done, with `size` bytes of output (a chunk already
  // placed, or any after stop(), is ignored).
  void sized(std::uint64_t index, std::size_t size) {
    {
      const std::lock_guard lk(mu_);
      if (stopped_ || index < next_) return;
      early_.emplace(index, size);
      advance();
    }
    sized_cv_.notify_all();
  }

 private:
  // Over the sizes known from next_ on; mu_ held.
  void advance() {
    for (auto it = early_.begin(); it != early_.end() && it->first == next_; it = early_.erase(it)) {
      position_ += it->second;
      ++next_;
    }
  }

  Sink& out_;
  std::mutex mu_;
  std::condition_variable sized_cv_;
  std::uint64_t next_ = 0;
  std::uint64_t position_;
  std::map<std::uint64_t, std::size_t> early_;  // sizes of chunks after next_
  bool stopped_ = false;
};

// A scheduler GPU queue over a pipeline. The pipeline starts (begin) with the
// first batch, so that a device that fails then is a fault the scheduler hands
// back like any other. A chunk the device refuses is done again by the CPU
// function, whose verdict counts.
class PipelineQueue final : public sched::GpuQueue {
 public:
  PipelineQueue(gpu::Lz4Pipeline& p, const gpu::Lz4PipelineOptions& o, CpuFn redo, InFn in, Ledger* ledger)
      : p_(p), o_(o), redo_(std::move(redo)), in_(std::move(in)), ledger_(ledger) {}
  int depth() const override { return p_.depth(); }
  std::size_t batch_bytes() const override { return p_.batch_bytes(); }
  Status submit(std::span<const sched::Chunk> chunks) override {
    if (!begun_) {
      if (Status s = p_.begin(o_); !s) return s;
      begun_ = true;
    }
    ins_.clear();
    for (const sched::Chunk& c : chunks) ins_.push_back(in_(c));
    gpu::PlaceFn place;
    if (ledger_ && !chunks.empty()) {
      const std::uint64_t first = chunks.front().index, end = chunks.back().index + 1;
      place = [this, first, end](std::size_t bytes, bool wait) {
        return ledger_->place(first, end, bytes, wait,
                              [this](const void* p, std::size_t n) { return p_.placeable(p, n); });
      };
    }
    if (Status s = p_.submit(ins_, std::move(place)); !s) return s;
    flight_.emplace_back(chunks.begin(), chunks.end());
    return {};
  }
  Status complete(std::span<sched::ChunkOutput> outs, sched::GpuTimes* times) override {
    if (flight_.empty()) return {StatusCode::invalid_argument, "no batch in flight"};
    gpu::BatchTimes bt;
    if (Status s = p_.complete(&outs_, &bt); !s) return s;
    const std::vector<sched::Chunk> chunks = std::move(flight_.front());
    flight_.pop_front();
    if (outs_.size() != chunks.size() || outs.size() != chunks.size()) {
      return {StatusCode::device_error, "the GPU pipeline returned another number of chunks"};
    }
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      gpu::PipelineOut& o = outs_[i];
      if (o.status && !o.keep && o.bytes.data()) {
        outs[i].set_in_place(o.bytes);  // the caller's memory: decoded in place, or placed
      } else if (o.status) {
        outs[i].set_view(o.bytes, std::move(o.keep));
      } else if (Status s = redo_(chunks[i], &outs[i]); !s) {
        return s;
      }
      if (ledger_) ledger_->sized(chunks[i].index, outs[i].size());
    }
    outs_.clear();
    times->transfer_seconds = (bt.h2d_ms + bt.d2h_ms) / 1000;
    times->kernel_seconds = bt.kernel_ms / 1000;
    if (bt.timed) {
      times->device_timed = true;
      times->copy_in_start = bt.h2d_start;
      times->copy_in_end = bt.h2d_end;
      times->kernels_end = bt.kernel_end;
      times->copy_out_start = bt.d2h_start;
      times->copy_out_end = bt.d2h_end;
    }
    return {};
  }
  void abandon() override {
    if (ledger_) ledger_->stop();
    p_.abandon();
    flight_.clear();
    outs_.clear();
  }

 private:
  gpu::Lz4Pipeline& p_;
  gpu::Lz4PipelineOptions o_;
  CpuFn redo_;
  InFn in_;
  Ledger* ledger_;
  bool begun_ = false;
  std::vector<gpu::PipelineIn> ins_;
  std::vector<gpu::PipelineOut> outs_;
  std::deque<std::vector<sched::Chunk>> flight_;
};

// The scheduler run shared by both directions: queues over the leased
// pipelines, the options, the metrics.
Status run_scheduler(const sched::SchedulerOptions& so, sched::Work& work, GpuLeases& leases,
                     const gpu::Lz4PipelineOptions& po, const CpuFn& cpu, const InFn& in, Ledger* ledger,
                     sched::RunMetrics* metrics) {
  std::vector<std::unique_ptr<PipelineQueue>> queues;
  for (gpu::Lz4Pipeline* p : leases.pipelines) {
    queues.push_back(std::make_unique<PipelineQueue>(*p, po, cpu, in, ledger));
    work.gpus.push_back(queues.back().get());
  }
  return sched::run(so, work, metrics);
}

// The writer is one thread, and one thread's memcpy (some 6 GB/s from DRAM to
// DRAM) cannot keep up with the output of a GPU. So, in runs with a GPU, the
// writer copies large outputs with a crew of threads of its own, which sleep
// while the CPU workers work (the shared worker pool would compete with them
// and wake late). Each copy is cut into pieces taken from a counter by the
// crew and by the writer itself; copy() returns when every piece is done.
class CopyCrew {
 public:
  static constexpr std::size_t kPiece = std::size_t{64} << 10;
  static constexpr std::size_t kMinBytes = std::size_t{256} << 10;  // below: the writer alone

  explicit CopyCrew(int helpers) {
    try {
      for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { loop(); });
    } catch (const std::system_error&) {
      // Fewer helpers (or none): the writer copies more itself.
    }
  }
  ~CopyCrew() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  CopyCrew(const CopyCrew&) = delete;
  CopyCrew& operator=(const CopyCrew&) = delete;

  void copy(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
    if (threads_.empty() || n < kMinBytes) {
      std::memcpy(dst, src, n);
      return;
    }
    {
      std::lock_guard lk(mu_);
      dst_ = dst;
      src_ = src;
      n_ = n;
      pieces_ = (n + kPiece - 1) / kPiece;
      finished_ = 0;
      ++job_;
      next_.store((job_ & 0xFFFFFFFFu) << 32);
    }
    cv_.notify_all();
    work();
    std::unique_lock lk(mu_);
    done_cv_.wait(lk, [&] { return finished_ == pieces_; });
  }

 private:
  // Takes pieces of the current job until none is left. The counter holds
  // the job's number in its high half, so that a helper that took its last
  // number during one job and looks at it during the next cannot mistake it
  // for a piece of the next (which would be copied twice, and counted twice).
  void work() {
    std::unique_lock lk(mu_, std::defer_lock);
    for (;;) {
      const std::uint64_t ticket = next_.fetch_add(1);
      lk.lock();
      if (ticket >> 32 != (job_ & 0xFFFFFFFFu) || (ticket & 0xFFFFFFFFu) >= pieces_) return;
      // The copy runs without the lock: the job's fields stay put until every
      // piece is counted.
      const std::size_t off = static_cast<std::size_t>(ticket & 0xFFFFFFFFu) * kPiece;
      std::uint8_t* const dst = dst_ + off;
      const std::uint8_t* const src = src_ + off;
      const std::size_t n = std::min(kPiece, n_ - off);
      lk.unlock();
      std::memcpy(dst, src, n);
      lk.lock();
      if (++finished_ == pieces_) done_cv_.notify_one();
      lk.unlock();
    }
  }
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return stop_ || job_ != seen; });
        if (stop_) return;
        seen = job_;
      }
      work();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> threads_;
  std::uint8_t* dst_ = nullptr;
  const std::uint8_t* src_ = nullptr;
  std::size_t n_ = 0;
  std::size_t pieces_ = 0;  // written under mu_ before a job is announced; read by its takers
  std::atomic<std::uint64_t> next_{0};  // job number << 32 | next piece
  std::size_t finished_ = 0;
  std::uint64_t job_ = 0;
  bool stop_ = false;
};

// Copies bytes into the sink, with the crew when there is one.
Status write_out(Sink& out, std::span<const std::uint8_t> bytes, CopyCrew* crew) {
  if (!crew || bytes.size() < CopyCrew::kMinBytes) return out.write(bytes.data(), bytes.size());
  std::uint8_t* room = nullptr;
  if (Status s = out.reserve(bytes.size(), &room); !s) return s;
  if (room != bytes.data()) crew->copy(room, bytes.data(), bytes.size());
  return out.commit(bytes.size());
}

// Helpers of the writer's crew in a run with GPU workers.
constexpr int kCrewHelpers = 5;

}  // namespace

void set_test_pipeline(gpu::Lz4Pipeline* pipeline) { g_test_pipeline.store(pipeline); }

Status hybrid_backend(Backend requested, int level, Backend* backend) {
  *backend = requested;
  if (requested == Backend::cpu) return {};
  if (!g_test_pipeline.load()) {
    Backend resolved;
    if (Status s = resolve_backend(Codec::lz4, requested, level, &resolved); !s) return s;
    if (resolved == Backend::cpu) *backend = Backend::cpu;
    return {};
  }
  // A test pipeline stands for a device: only the level can rule the GPU out.
  if (level > 2) {
    if (requested == Backend::gpu) return {StatusCode::unsupported, "the GPU's LZ4 encoder has no HC levels"};
    *backend = Backend::cpu;
  } else if (level < 0 && requested == Backend::automatic) {
    *backend = Backend::cpu;
  }
  return {};
}

// ------------------------------------------------------------ compress ----

Status compress_frame(Source& in, Sink& out, const Lz4FrameOptions& o, StreamStats* stats) {
  const std::size_t block = o.block_size;
  const std::size_t per_chunk = chunk_blocks(o.chunk_size, block);
  const std::size_t chunk = per_chunk * block;
  const sched::Policy policy = policy_of(o.backend);

  lz4f::FrameHeader header;
  if (Status s = lz4f::begin_frame(in, out, o, &header); !s) return s;
  const std::int64_t hint = in.size_hint();

  sched::SchedulerOptions so;
  so.policy = policy;
  so.cpu_workers = o.threads;
  so.chunk_size = chunk;
  if (hint >= 0) so.input_size = static_cast<std::uint64_t>(hint);
  const bool small = hint >= 0 && static_cast<std::uint64_t>(hint) < so.cpu_only_below;
  GpuLeases leases = lease_gpus(policy != sched::Policy::cpu && !(policy == sched::Policy::automatic && small));
  std::unique_ptr<CopyCrew> crew;
  if (!leases.pipelines.empty()) {
    crew = std::make_unique<CopyCrew>(kCrewHelpers);
    // The crew and the GPU worker's thread need cores of their own: a GPU
    // compresses several times faster than all the CPU workers together, and
    // waits whenever the writer falls behind.
    if (o.threads == 0) {
      so.cpu_workers = std::max(1, hardware_threads() - static_cast<int>(leases.pipelines.size()) - kCrewHelpers);
    }
  }

  // Chunks that the source does not keep are copied into pool buffers, which
  // their notes hold until the writer is done with them.
  struct Note {
    std::unique_ptr<std::uint8_t[]> owned;
  };
  std::deque<Note> notes;
  const bool stable = in.stable();
  ChunkPool pool(chunk);
  XXH32_state_t xxh;
  XXH32_reset(&xxh, 0);
  std::uint64_t content = 0;

  sched::Work work;
  work.source = [&](sched::SourceChunk* next, bool* end) -> Status {
    std::size_t avail = 0;
    if (Status s = in.ensure(chunk, &avail); !s) return s;
    const std::size_t n = std::min(avail, chunk);
    *end = n == 0;
    if (*end) return {};
    const std::uint8_t* data = in.data();
    if (!stable) {
      notes.emplace_back();
      notes.back().owned = pool.get();
      std::memcpy(notes.back().owned.get(), data, n);
      data = notes.back().owned.get();
      next->note = &notes.back();
    }
    if (o.content_checksum) XXH32_update(&xxh, data, n);
    next->data = {data, n};
    in.consume(n);
    content += n;
    return {};
  };
  const int level = o.level;
  const bool block_checksum = o.block_checksum;
  CpuFn cpu = [=](const sched::Chunk& c, sched::ChunkOutput* out_chunk) -> Status {
    const std::size_t n = c.data.size();
    const std::size_t nb = (n + block - 1) / block;
    out_chunk->bytes.resize(n + nb * lz4f::kSlotOverhead);
    std::size_t used = 0;
    for (std::size_t i = 0; i < nb; ++i) {
      const std::size_t len = std::min(block, n - i * block);
      used += lz4f::emit_block(c.data.data() + i * block, len, out_chunk->bytes.data() + used, block_checksum,
                               [level](const std::uint8_t* s, std::size_t k, std::uint8_t* d, std::size_t cap) {
                                 return cpu::lz4_compress_block(s, k, d, cap, level);
                               });
    }
    out_chunk->bytes.resize(used);
    return {};
  };
  // Placement needs fixed memory behind the sink, and one GPU (see Ledger).
  std::optional<Ledger> ledger;
  if (leases.pipelines.size() == 1 && out.place(out.position(), 0)) ledger.emplace(out, out.position());
  // A CPU chunk that fails (or throws) stops the run, and the ledger, so
  // that no batch waits for its size.
  work.cpu = [&ledger, cpu](const sched::Chunk& c, sched::ChunkOutput* done) -> Status {
    Status s;
    try {
      s = cpu(c, done);
    } catch (...) {
      if (ledger) ledger->stop();
      throw;
    }
    if (ledger) s ? ledger->sized(c.index, done->size()) : ledger->stop();
    return s;
  };
  work.sink = [&](const sched::Chunk& c, sched::ChunkOutput&& done) -> Status {
    const auto bytes = done.data();
    if (Status s = write_out(out, bytes, crew.get()); !s) return s;
    if (c.note) {
      pool.put(std::move(const_cast<Note*>(static_cast<const Note*>(c.note))->owned));
    }
    if (o.progress) o.progress(c.offset + c.data.size(), out.position());
    return {};
  };
  gpu::Lz4PipelineOptions po;
  po.mode = gpu::PipelineMode::compress;
  po.block_size = block;
  po.block_checksum = block_checksum;
  const InFn gpu_in = [](const sched::Chunk& c) { return gpu::PipelineIn{c.data, nullptr, 0}; };
  sched::RunMetrics local;
  sched::RunMetrics* m = o.metrics ? o.metrics : &local;
  if (Status s = run_scheduler(so, work, leases, po, cpu, gpu_in, ledger ? &*ledger : nullptr, m); !s) return s;

  return lz4f::end_frame(out, header, content, xxh, stats);
}

// ---------------------------------------------------------- decompress ----

namespace {

// A frame as the reader found it; the writer keeps its running checks.
struct Frame {
  lz4f::FrameHeader header;
  std::uint32_t stored_checksum = 0;  // read after the end mark
  // The writer's, in order:
  XXH32_state_t xxh;
  std::uint64_t produced = 0;
};

// A chunk of blocks of one frame.
struct DecodeNote {
  Frame* frame = nullptr;
  bool last = false;  // holds the frame's last block: the frame ends after it
  std::unique_ptr<std::uint8_t[]> owned;
  std::uint8_t* direct = nullptr;  // where to decode, when the output is the caller's buffer
  std::size_t capacity = 0;        // what the chunk may decode to
};

// Decodes the blocks of a chunk (their words already checked by the reader;
// parsed again as the GPU pipeline parses them) into dst, which has room for
// all of them. *size receives the bytes. Each block's checksum is checked
// before it is decoded, so the first bad block decides the status.
Status decode_chunk(std::span<const std::uint8_t> in, const lz4f::FrameHeader& h, bool verify, std::uint8_t* dst,
                    std::size_t capacity, std::size_t* size) {
  thread_local std::vector<gpu::FrameBlock> blocks;
  if (Status s = gpu::parse_frame_blocks(in, h.block_max, h.block_checksum, &blocks); !s) return s;
  std::size_t produced = 0;
  for (const gpu::FrameBlock& b : blocks) {
    if (h.block_checksum && verify) {
      if (Status s = gpu::verify_block_checksums(in, {&b, 1}); !s) return s;
    }
    const std::uint8_t* payload = in.data() + b.payload;
    const std::size_t room = std::min(h.block_max, capacity - produced);
    std::size_t got = 0;
    if (b.raw) {
      if (b.size > room) return {StatusCode::bad_data, "block decodes to more than the frame's block maximum"};
      std::memcpy(dst + produced, payload, b.size);
      got = b.size;
    } else {
      const Status s = cpu::lz4_decompress_block(payload, b.size, dst + produced, room, &got);
      if (s.code == StatusCode::output_too_small) {
        return {StatusCode::bad_data, "block decodes to more than the frame's block maximum"};
      }
      if (!s) return s;
    }
    produced += got;
  }
  *size = produced;
  return {};
}

}  // namespace

Status decompress_frames(Source& in, Sink& out, const Lz4DecodeOptions& o, MutableBuffer direct,
                         StreamStats* stats) {
  const std::uint64_t start_in = in.position();
  const std::uint64_t start_out = out.position();
  std::deque<Frame> frames;
  std::deque<DecodeNote> notes;
  std::size_t block_max = 0;  // of the run's first frame; 0 before it
  bool block_checksum = false;
  Frame* frame = nullptr;      // the frame being read; null between frames
  std::uint64_t expected = 0;  // where the next chunk's output would start in `direct`
  std::uint64_t frame_count = 0;
  std::unique_ptr<ChunkPool> pool;
  std::unique_ptr<CopyCrew> crew;  // with GPU workers, for outputs not decoded in place
  std::size_t per_chunk = 0;
  const bool stable = in.stable();

  // The first frame decides the run's block maximum; peek at it here.
  {
    std::size_t avail = 0;
    if (Status s = in.ensure(lz4f::kMaxHeaderSize, &avail); !s) return s;
    std::size_t pos = 0;
    // Skippable frames first are fine: find the first real frame's header in
    // what is buffered (else the reader learns it when it gets there).
    while (avail - pos >= 8 && lz4f::is_skippable_magic(read_le32(in.data() + pos))) {
      const std::uint64_t skip = 8 + std::uint64_t{read_le32(in.data() + pos + 4)};
      if (skip > avail - pos) break;
      pos += static_cast<std::size_t>(skip);
    }
    lz4f::FrameHeader h;
    if (avail - pos >= 4 && read_le32(in.data() + pos) == lz4f::kFrameMagic &&
        lz4f::parse_frame_header(in.data() + pos, avail - pos, &h)) {
      block_max = h.block_max;
      block_checksum = h.block_checksum;
    }
  }
  if (block_max == 0) block_max = std::size_t{4} << 20;
  per_chunk = chunk_blocks(o.chunk_size, block_max);
  const std::size_t max_chunk_bytes = per_chunk * (block_max + 4 + (block_checksum ? 4 : 0));
  if (!stable) pool = std::make_unique<ChunkPool>(max_chunk_bytes);

  // Reads the next chunk: a frame header where one starts, then up to
  // per_chunk blocks of it. Ends at the end of the input or before a frame
  // this run does not take.
  auto source = [&](sched::SourceChunk* next, bool* end) -> Status {
    std::size_t avail = 0;
    while (!frame) {
      if (Status s = in.ensure(4, &avail); !s) return s;
      if (avail == 0) {
        *end = true;
        return {};
      }
      if (avail < 4) return {StatusCode::truncated, "input ends inside a frame magic number"};
      const std::uint32_t magic = read_le32(in.data());
      if (lz4f::is_skippable_magic(magic)) {
        if (Status s = lz4f::skip_skippable_frame(in); !s) return s;
        continue;
      }
      if (magic != lz4f::kFrameMagic) {
        if (magic == lz4f::kLegacyMagic) {
          *end = true;  // the caller's other decoder takes it from here
          return {};
        }
        return {StatusCode::bad_data, frame_count || in.position() != start_in ? "unknown data after the last frame"
                                                                               : "not an LZ4 frame (unknown magic number)"};
      }
      if (Status s = in.ensure(lz4f::kMaxHeaderSize, &avail); !s) return s;
      lz4f::FrameHeader h;
      if (Status s = lz4f::parse_frame_header(in.data(), avail, &h); !s) return s;
      if (!h.independent_blocks || h.block_max != block_max || h.block_checksum != block_checksum) {
        *end = true;  // left for the caller, unread
        return {};
      }
      const std::uint64_t so_far = out.position() - start_out;  // a bound: the writer lags
      if (h.has_content_size && h.content_size > o.max_output - std::min(o.max_output, so_far)) {
        return {StatusCode::output_limit, "the frame's content size exceeds the output limit"};
      }
      in.consume(h.header_size);
      frames.emplace_back();
      frame = &frames.back();
      frame->header = h;
      XXH32_reset(&frame->xxh, 0);
      ++frame_count;
    }
    const lz4f::FrameHeader& h = frame->header;
    const std::size_t checksum_size = h.block_checksum ? 4 : 0;
    std::size_t off = 0, blocks = 0;
    bool last = false;
    while (blocks < per_chunk) {
      if (Status s = in.ensure(off + 4, &avail); !s) return s;
      if (avail < off + 4) return {StatusCode::truncated, "input ends inside a block header"};
      const std::uint32_t word = read_le32(in.data() + off);
      if (word == 0) {
        last = true;
        break;
      }
      const std::size_t n = word & ~lz4f::kUncompressedBit;
      if (n > lz4f::max_block_payload(h.block_max)) {
        return {StatusCode::bad_data, "block size exceeds the frame's block maximum"};
      }
      if (Status s = in.ensure(off + 4 + n + checksum_size, &avail); !s) return s;
      if (avail < off + 4 + n + checksum_size) return {StatusCode::truncated, "input ends inside a block"};
      off += 4 + n + checksum_size;
      ++blocks;
    }
    if (!last) {  // a full chunk: is the end mark next?
      if (Status s = in.ensure(off + 4, &avail); !s) return s;
      if (avail < off + 4) return {StatusCode::truncated, "input ends inside a block header"};
      last = read_le32(in.data() + off) == 0;
    }
    notes.emplace_back();
    DecodeNote& note = notes.back();
    note.frame = frame;
    note.last = last;
    note.capacity = blocks * h.block_max;
    const std::uint8_t* data = in.data();
    if (!stable && off > 0) {
      note.owned = pool->get();
      std::memcpy(note.owned.get(), data, off);
      data = note.owned.get();
    }
    if (direct.data && expected + note.capacity <= direct.size) {
      note.direct = static_cast<std::uint8_t*>(direct.data) + expected;
    }
    expected += note.capacity;
    in.consume(off);
    if (last) {
      in.consume(4);  // the end mark
      if (h.content_checksum) {
        if (Status s = in.ensure(4, &avail); !s) return s;
        if (avail < 4) return {StatusCode::truncated, "input ends inside the content checksum"};
        frame->stored_checksum = read_le32(in.data());
        in.consume(4);
      }
      frame = nullptr;
    }
    next->data = {data, off};
    next->note = &note;
    return {};
  };

  const bool verify = o.verify_checksums;
  CpuFn cpu = [verify](const sched::Chunk& c, sched::ChunkOutput* done) -> Status {
    const auto* note = static_cast<const DecodeNote*>(c.note);
    std::uint8_t* dst = note->direct;
    if (!dst) {
      done->bytes.resize(note->capacity);
      dst = done->bytes.data();
    }
    std::size_t size = 0;
    if (Status s = decode_chunk(c.data, note->frame->header, verify, dst, note->capacity, &size); !s) return s;
    if (note->direct) {
      done->set_in_place({dst, size});
    } else {
      done->bytes.resize(size);
    }
    return {};
  };
  sched::Work work;
  work.source = source;
  work.cpu = cpu;
  std::uint64_t produced = 0;
  work.sink = [&](const sched::Chunk& c, sched::ChunkOutput&& done) -> Status {
    auto* note = const_cast<DecodeNote*>(static_cast<const DecodeNote*>(c.note));
    Frame& f = *note->frame;
    const auto bytes = done.data();
    if (bytes.size() > o.max_output - std::min(o.max_output, produced)) {
      return {StatusCode::output_limit, "decompressed data exceeds the output limit"};
    }
    f.produced += bytes.size();
    if (f.header.has_content_size && f.produced > f.header.content_size) {
      return {StatusCode::bad_data, "content is larger than the frame's content size"};
    }
    if (f.header.content_checksum && verify) XXH32_update(&f.xxh, bytes.data(), bytes.size());
    if (note->direct && !bytes.empty()) {
      // Decoded in place, or a little past its place (an earlier short block):
      // the regions may overlap.
      std::uint8_t* room = nullptr;
      if (Status s = out.reserve(bytes.size(), &room); !s) return s;
      if (room != bytes.data()) std::memmove(room, bytes.data(), bytes.size());
      if (Status s = out.commit(bytes.size()); !s) return s;
    } else if (Status s = write_out(out, bytes, crew.get()); !s) {
      return s;
    }
    produced += bytes.size();
    if (pool) pool->put(std::move(note->owned));
    if (note->last) {
      if (f.header.has_content_size && f.produced != f.header.content_size) {
        return {StatusCode::bad_data, "content is smaller than the frame's content size"};
      }
      if (f.header.content_checksum && verify && XXH32_digest(&f.xxh) != f.stored_checksum) {
        return {StatusCode::checksum_mismatch, "content checksum"};
      }
    }
    if (o.progress) o.progress(in.position(), out.position());
    return {};
  };

  sched::SchedulerOptions so;
  so.policy = policy_of(o.backend);
  so.cpu_workers = o.threads;
  so.chunk_size = std::max<std::size_t>(max_chunk_bytes, 1);
  const std::int64_t hint = in.size_hint();
  if (hint >= 0) so.input_size = static_cast<std::uint64_t>(hint);
  // In decoded bytes: an LZ4 stream decodes to about twice its size and more.
  so.cpu_only_below = so.cpu_only_below / 2;
  const bool small = hint >= 0 && static_cast<std::uint64_t>(hint) < so.cpu_only_below;
  GpuLeases leases = lease_gpus(so.policy != sched::Policy::cpu && block_max <= kGpuDecodeMaxBlock &&
                                !(so.policy == sched::Policy::automatic && small));
  if (!leases.pipelines.empty() && !direct.data) crew = std::make_unique<CopyCrew>(kCrewHelpers);
  gpu::Lz4PipelineOptions po;
  po.mode = gpu::PipelineMode::decompress;
  po.block_size = block_max;
  po.block_checksum = block_checksum;
  po.verify_checksums = verify;
  const InFn gpu_in = [](const sched::Chunk& c) {
    const auto* note = static_cast<const DecodeNote*>(c.note);
    return gpu::PipelineIn{c.data, note->direct, note->direct ? note->capacity : 0};
  };
  sched::RunMetrics local;
  sched::RunMetrics* m = o.metrics ? o.metrics : &local;
  if (Status s = run_scheduler(so, work, leases, po, cpu, gpu_in, nullptr, m); !s) return s;
  if (stats) {
    stats->bytes_in = in.position() - start_in;
    stats->bytes_out = out.position() - start_out;
    stats->frames = frame_count;
  }
  return {};
}

}  // namespace tandem::hybrid
