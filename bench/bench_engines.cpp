// The engines of `tandem bench`; see bench_engines.hpp.
//
// The reference engines call liblz4 the way a careful user would: compression
// states and contexts are made once per engine and reused, never allocated
// inside a timed call. The N-thread reference runs on a team of plain
// std::threads started once per engine; each run wakes the team, every member
// takes chunk indices from one atomic counter until none are left, and the
// caller waits for all of them. So the reference pays a wake-up per run, as
// tandem's own pool does, but no thread creation.
#include "bench/bench_engines.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include <lz4.h>
#include <lz4hc.h>
#define LZ4F_STATIC_LINKING_ONLY  // LZ4F_compressFrame_usingCDict: reuses one context
#include <lz4frame.h>

#include "tandem/tandem.hpp"

namespace tandem::bench {

const char* engine_name(EngineKind kind) {
  switch (kind) {
    case EngineKind::liblz4: return "liblz4";
    case EngineKind::tandem: return "tandem";
    case EngineKind::tandem_xxh: return "tandem+xxh";
    case EngineKind::liblz4_frame: return "liblz4-frame";
  }
  return "?";
}

bool engine_multithreaded(EngineKind kind) { return kind != EngineKind::liblz4_frame; }

namespace {

// A byte buffer whose pages are all touched once, so that no timed call pays
// first-touch page faults on it.
std::vector<std::uint8_t> touched_buffer(std::size_t size) {
  return std::vector<std::uint8_t>(size, 0);  // value-initialised: every page written
}

// `size` participants (the caller and size-1 std::threads) run one job together.
class ThreadTeam {
 public:
  using Job = std::function<void(int member)>;

  explicit ThreadTeam(int size) {
    for (int i = 1; i < size; ++i) workers_.emplace_back([this, i] { serve(i); });
  }
  ~ThreadTeam() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& worker : workers_) worker.join();
  }
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  // Runs job(0) on the caller and job(1..size-1) on the workers; returns when
  // all have returned.
  void run(const Job& job) {
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      pending_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    start_.notify_all();
    job(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void serve(int member) {
    std::uint64_t seen = 0;
    for (;;) {
      const Job* job = nullptr;
      {
        std::unique_lock lock(mutex_);
        start_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      (*job)(member);
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const Job* job_ = nullptr;
  std::uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// ------------------------------------------------------------- liblz4 ----

// Raw LZ4 blocks: chunk i of the input compresses to slot i (of
// LZ4_compressBound(chunk) bytes) of one buffer; its size goes to sizes_[i].
class Liblz4Raw final : public Engine {
 public:
  Liblz4Raw(std::span<const std::uint8_t> input, const EngineParams& params)
      : input_(input),
        chunk_(params.chunk),
        chunks_((input.size() + params.chunk - 1) / params.chunk),
        slot_(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(params.chunk)))),
        high_compression_(params.level > 2),
        level_(std::min(params.level, LZ4HC_CLEVEL_MAX)),
        acceleration_(params.level < 0 ? -params.level : 1),
        threads_(std::max(1, params.threads)),
        compressed_(touched_buffer(chunks_ * slot_)),
        sizes_(chunks_, 0) {
    const int state_size = high_compression_ ? LZ4_sizeofStateHC() : LZ4_sizeofState();
    for (int t = 0; t < threads_; ++t)  // uint64 words: aligned as LZ4 states need
      states_.emplace_back(static_cast<std::size_t>(state_size) / 8 + 1, 0);
    if (threads_ > 1) {
      team_ = std::make_unique<ThreadTeam>(threads_);
      compress_job_ = [this](int member) {
        for (std::size_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < chunks_;)
          compress_chunk(i, member);
      };
      decompress_job_ = [this](int member) {
        (void)member;
        for (std::size_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < chunks_;)
          decompress_chunk(i);
      };
    }
  }

  bool compress() override {
    failed_.store(false, std::memory_order_relaxed);
    if (team_) {
      next_.store(0, std::memory_order_relaxed);
      team_->run(compress_job_);
    } else {
      for (std::size_t i = 0; i < chunks_; ++i) compress_chunk(i, 0);
    }
    if (failed_.load()) {
      error_ = "LZ4 block compression failed";
      return false;
    }
    return true;
  }

  std::size_t compressed_size() const override {
    std::size_t total = 0;
    for (const int size : sizes_) total += static_cast<std::size_t>(size);
    return total;
  }

  bool decompress(std::span<std::uint8_t> output) override {
    if (output.size() != input_.size()) {
      error_ = "output size differs from the input size";
      return false;
    }
    output_ = output.data();
    failed_.store(false, std::memory_order_relaxed);
    if (team_) {
      next_.store(0, std::memory_order_relaxed);
      team_->run(decompress_job_);
    } else {
      for (std::size_t i = 0; i < chunks_; ++i) decompress_chunk(i);
    }
    if (failed_.load()) {
      error_ = "LZ4_decompress_safe failed or produced the wrong size";
      return false;
    }
    return true;
  }

 private:
  std::size_t chunk_size(std::size_t i) const { return std::min(chunk_, input_.size() - i * chunk_); }

  void compress_chunk(std::size_t i, int member) {
    const char* src = reinterpret_cast<const char*>(input_.data() + i * chunk_);
    char* dst = reinterpret_cast<char*>(compressed_.data() + i * slot_);
    const int n = static_cast<int>(chunk_size(i));
    void* state = states_[static_cast<std::size_t>(member)].data();
    const int r = high_compression_
                      ? LZ4_compress_HC_extStateHC(state, src, dst, n, static_cast<int>(slot_), level_)
                      : LZ4_compress_fast_extState(state, src, dst, n, static_cast<int>(slot_), acceleration_);
    if (r <= 0 && n > 0) failed_.store(true, std::memory_order_relaxed);
    sizes_[i] = r;
  }

  void decompress_chunk(std::size_t i) {
    const int n = static_cast<int>(chunk_size(i));
    const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(compressed_.data() + i * slot_),
                                      reinterpret_cast<char*>(output_ + i * chunk_), sizes_[i], n);
    if (r != n) failed_.store(true, std::memory_order_relaxed);
  }

  std::span<const std::uint8_t> input_;
  std::size_t chunk_;
  std::size_t chunks_;
  std::size_t slot_;
  bool high_compression_;
  int level_;
  int acceleration_;
  int threads_;
  std::vector<std::uint8_t> compressed_;
  std::vector<int> sizes_;
  std::vector<std::vector<std::uint64_t>> states_;
  std::uint8_t* output_ = nullptr;
  std::unique_ptr<ThreadTeam> team_;
  ThreadTeam::Job compress_job_;
  ThreadTeam::Job decompress_job_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> failed_{false};
};

// ------------------------------------------------------------- tandem ----

class TandemFrame final : public Engine {
 public:
  TandemFrame(std::span<const std::uint8_t> input, const EngineParams& params, bool content_checksum)
      : input_(input) {
    options_.level = params.level;
    options_.block_size = params.chunk;
    options_.content_checksum = content_checksum;
    options_.block_checksum = false;
    options_.threads = params.threads;
    options_.backend = Backend::cpu;
    decode_options_.threads = params.threads;
    decode_options_.verify_checksums = true;
    decode_options_.backend = Backend::cpu;
    frame_ = touched_buffer(lz4_frame_max_compressed_size(input.size(), options_));
  }

  bool compress() override {
    const Status status =
        lz4_frame_compress({input_.data(), input_.size()}, {frame_.data(), frame_.size()}, &frame_size_, options_);
    if (!status) {
      error_ = "lz4_frame_compress: " + status.to_string();
      return false;
    }
    return true;
  }

  std::size_t compressed_size() const override { return frame_size_; }

  bool decompress(std::span<std::uint8_t> output) override {
    std::size_t size = 0;
    const Status status = lz4_frame_decompress({frame_.data(), frame_size_}, {output.data(), output.size()},
                                               &size, decode_options_);
    if (!status) {
      error_ = "lz4_frame_decompress: " + status.to_string();
      return false;
    }
    if (size != input_.size()) {
      error_ = "lz4_frame_decompress produced " + std::to_string(size) + " bytes, expected " +
               std::to_string(input_.size());
      return false;
    }
    return true;
  }

 private:
  std::span<const std::uint8_t> input_;
  Lz4FrameOptions options_;
  Lz4DecodeOptions decode_options_;
  std::vector<std::uint8_t> frame_;
  std::size_t frame_size_ = 0;
};

// ------------------------------------------------------- liblz4-frame ----

LZ4F_blockSizeID_t lz4f_block_size_id(std::size_t block_size) {
  switch (block_size) {
    case 64u << 10: return LZ4F_max64KB;
    case 256u << 10: return LZ4F_max256KB;
    case 1u << 20: return LZ4F_max1MB;
    case 4u << 20: return LZ4F_max4MB;
    default: throw std::invalid_argument("liblz4-frame: block size must be 64 KiB, 256 KiB, 1 MiB or 4 MiB");
  }
}

// LZ4F's defaults except: the block size of the run, the content checksum on,
// the content size written, and independent blocks (LZ4F's default is linked
// blocks, which `lz4` does not write and tandem does not write here either).
class Liblz4Frame final : public Engine {
 public:
  Liblz4Frame(std::span<const std::uint8_t> input, const EngineParams& params) : input_(input) {
    preferences_ = LZ4F_INIT_PREFERENCES;
    preferences_.frameInfo.blockSizeID = lz4f_block_size_id(params.chunk);
    preferences_.frameInfo.blockMode = LZ4F_blockIndependent;
    preferences_.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    preferences_.frameInfo.contentSize = input.size();
    preferences_.compressionLevel = params.level;
    if (LZ4F_isError(LZ4F_createCompressionContext(&cctx_, LZ4F_VERSION)) ||
        LZ4F_isError(LZ4F_createDecompressionContext(&dctx_, LZ4F_VERSION))) {
      release();
      throw std::bad_alloc();
    }
    frame_ = touched_buffer(LZ4F_compressFrameBound(input.size(), &preferences_));
  }
  ~Liblz4Frame() override { release(); }

  bool compress() override {
    const std::size_t r = LZ4F_compressFrame_usingCDict(cctx_, frame_.data(), frame_.size(), input_.data(),
                                                        input_.size(), nullptr, &preferences_);
    if (LZ4F_isError(r)) {
      error_ = std::string("LZ4F_compressFrame: ") + LZ4F_getErrorName(r);
      frame_size_ = 0;
      return false;
    }
    frame_size_ = r;
    return true;
  }

  std::size_t compressed_size() const override { return frame_size_; }

  bool decompress(std::span<std::uint8_t> output) override {
    LZ4F_resetDecompressionContext(dctx_);
    LZ4F_decompressOptions_t options{};
    options.stableDst = 1;  // the whole output buffer stays put between calls
    std::size_t in = 0;
    std::size_t out = 0;
    for (;;) {
      std::size_t in_size = frame_size_ - in;
      std::size_t out_size = output.size() - out;
      const std::size_t r =
          LZ4F_decompress(dctx_, output.data() + out, &out_size, frame_.data() + in, &in_size, &options);
      if (LZ4F_isError(r)) {
        error_ = std::string("LZ4F_decompress: ") + LZ4F_getErrorName(r);
        return false;
      }
      in += in_size;
      out += out_size;
      if (r == 0) break;  // frame complete, checksum verified
      if (in_size == 0 && out_size == 0) {
        error_ = "LZ4F_decompress made no progress (truncated frame or output full)";
        return false;
      }
    }
    if (out != input_.size()) {
      error_ = "LZ4F_decompress produced " + std::to_string(out) + " bytes, expected " +
               std::to_string(input_.size());
      return false;
    }
    return true;
  }

 private:
  void release() {
    if (cctx_) LZ4F_freeCompressionContext(cctx_);
    if (dctx_) LZ4F_freeDecompressionContext(dctx_);
    cctx_ = nullptr;
    dctx_ = nullptr;
  }

  std::span<const std::uint8_t> input_;
  LZ4F_preferences_t preferences_;
  LZ4F_cctx* cctx_ = nullptr;
  LZ4F_dctx* dctx_ = nullptr;
  std::vector<std::uint8_t> frame_;
  std::size_t frame_size_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_engine(EngineKind kind, std::span<const std::uint8_t> input,
                                    const EngineParams& params) {
  if (params.chunk == 0 || params.chunk > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE))
    throw std::invalid_argument("chunk size out of range");
  switch (kind) {
    case EngineKind::liblz4: return std::make_unique<Liblz4Raw>(input, params);
    case EngineKind::tandem: return std::make_unique<TandemFrame>(input, params, false);
    case EngineKind::tandem_xxh: return std::make_unique<TandemFrame>(input, params, true);
    case EngineKind::liblz4_frame: return std::make_unique<Liblz4Frame>(input, params);
  }
  throw std::invalid_argument("unknown engine");
}

}  // namespace tandem::bench
