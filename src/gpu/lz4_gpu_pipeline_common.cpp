// What every build has of the LZ4 pipeline (lz4_gpu_pipeline.hpp): the fault
// injection, the host-side pieces of lz4_gpu_pipeline_host.hpp, and the
// emulated pipeline, which computes each batch on the CPU in submit() with
// the GPU encoder's twin (the same bytes as the device) and liblz4's safe
// decoder, and hands the results out in complete(), kPipelineDepth batches
// deep, as the device pipeline does. It honours injected faults at the same spots.
#include <lz4.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>

#include "common/thread_pool.hpp"
#include "cpu/lz4_twin.hpp"
#include "format/lz4_frame_format.hpp"
#include "gpu/lz4_gpu_fault.hpp"
#include "gpu/lz4_gpu_pipeline.hpp"
#include "gpu/lz4_gpu_pipeline_host.hpp"

namespace tandem::gpu {

// ------------------------------------------------------------- faults ----

namespace {

struct ArmedFault {
  std::mutex mutex;
  Fault kind = Fault::none;
  int remaining = 0;  // calls of fault_fires(kind) to let pass first
};

ArmedFault& armed() {
  static auto* a = new ArmedFault();  // never destroyed: pipelines may run at exit
  return *a;
}

}  // namespace

void inject_fault(Fault fault, int after_batches) {
  ArmedFault& a = armed();
  const std::lock_guard<std::mutex> lock(a.mutex);
  a.kind = fault;
  a.remaining = std::max(after_batches, 0);
}

bool parse_fault(const char* name, Fault* fault) {
  if (!name || !fault) return false;
  const std::string_view n(name);
  if (n == "no-device") {
    *fault = Fault::no_device;
  } else if (n == "oom") {
    *fault = Fault::out_of_memory;
  } else if (n == "kernel") {
    *fault = Fault::kernel;
  } else if (n == "copy") {
    *fault = Fault::copy;
  } else {
    return false;
  }
  return true;
}

bool fault_fires(Fault kind) {
  ArmedFault& a = armed();
  const std::lock_guard<std::mutex> lock(a.mutex);
  if (kind == Fault::none || a.kind != kind) return false;
  if (a.remaining > 0) {
    --a.remaining;
    return false;
  }
  a.kind = Fault::none;
  return true;
}

Status injected_fault(Fault kind) {
  switch (kind) {
    case Fault::no_device:
      return {StatusCode::no_device, "injected: no device"};
    case Fault::out_of_memory:
      return {StatusCode::device_error, "injected: out of device memory"};
    case Fault::kernel:
      return {StatusCode::device_error, "injected: kernel failed"};
    case Fault::copy:
      return {StatusCode::device_error, "injected: host-device copy failed"};
    case Fault::none:
      break;
  }
  return {};
}

// ----------------------------------------------------- host-side pieces ----

Status check_pipeline_options(const Lz4PipelineOptions& options) {
  if (options.block_size == 0 || options.block_size > kPipelineMaxBlockSize) {
    return {StatusCode::invalid_argument, "pipeline block size must be 1 byte to 4 MiB"};
  }
  return {};
}

Status parse_frame_blocks(std::span<const std::uint8_t> chunk, std::size_t block_size, bool block_checksum,
                          std::vector<FrameBlock>* blocks) {
  blocks->clear();
  const std::size_t tail = block_checksum ? 4 : 0;
  std::size_t pos = 0;
  while (pos < chunk.size()) {
    if (chunk.size() - pos < 4) {
      blocks->clear();
      return {StatusCode::bad_data, "frame block word cut short"};
    }
    const std::uint32_t word = lz4f::read_le32(chunk.data() + pos);
    pos += 4;
    const std::size_t size = word & ~lz4f::kUncompressedBit;
    if (word == 0) {
      blocks->clear();
      return {StatusCode::bad_data, "end mark inside a run of frame blocks"};
    }
    if (size > block_size) {
      blocks->clear();
      return {StatusCode::bad_data, "frame block larger than the block size"};
    }
    if (size > chunk.size() - pos || tail > chunk.size() - pos - size) {
      blocks->clear();
      return {StatusCode::bad_data, "frame block runs past its chunk"};
    }
    blocks->push_back({pos, size, (word & lz4f::kUncompressedBit) != 0});
    pos += size + tail;
  }
  return {};
}

std::size_t frame_blocks_area(std::span<const FrameBlock> blocks, std::size_t block_size) {
  if (blocks.empty()) return 0;
  const FrameBlock& last = blocks.back();
  return (blocks.size() - 1) * block_size + (last.raw ? last.size : block_size);
}

Status verify_block_checksums(std::span<const std::uint8_t> chunk, std::span<const FrameBlock> blocks) {
  for (const FrameBlock& b : blocks) {
    const std::uint8_t* payload = chunk.data() + b.payload;
    if (XXH32(payload, b.size, 0) != lz4f::read_le32(payload + b.size)) {
      return {StatusCode::checksum_mismatch, "frame block checksum differs"};
    }
  }
  return {};
}

void write_block_checksums(std::uint8_t* frames, const std::size_t* places, std::size_t m) {
  auto one = [&](std::size_t j) {
    std::uint8_t* payload = frames + places[j] + 4;
    const std::size_t size = places[j + 1] - places[j] - 8;
    lz4f::write_le32(payload + size, XXH32(payload, size, 0));
  };
  // About a millisecond a 4 MiB on one core: worth spreading from there.
  constexpr std::size_t kSerialBytes = std::size_t{4} << 20;
  if (m == 0) return;
  if (places[m] - places[0] < kSerialBytes) {
    for (std::size_t j = 0; j < m; ++j) one(j);
  } else {
    detail::parallel_for(m, 0, one);
  }
}

// ---------------------------------------------------- emulated pipeline ----

namespace {

// The outputs of one batch, kept alive by the PipelineOut::keep of its chunks.
struct EmulatedBatch {
  std::vector<std::vector<std::uint8_t>> bytes;  // per chunk (unless direct)
  std::vector<PipelineOut> outs;
  PlaceFn place;  // compression: the caller's room, asked at complete()
};

class EmulatedPipeline final : public Lz4Pipeline {
 public:
  Status begin(const Lz4PipelineOptions& options) override {
    abandon();
    begun_ = false;
    if (fault_fires(Fault::no_device)) return injected_fault(Fault::no_device);
    if (Status s = check_pipeline_options(options); !s) return s;
    options_ = options;
    begun_ = true;
    return {};
  }

  int depth() const override { return kPipelineDepth; }
  std::size_t batch_bytes() const override { return kPipelineBatchBytes; }

  bool placeable(const void* p, std::size_t n) const override { return p != nullptr || n == 0; }

  Status submit(std::span<const PipelineIn> chunks, PlaceFn place) override {
    if (!begun_) return {StatusCode::invalid_argument, "submit before begin"};
    if (in_flight() >= depth()) return {StatusCode::invalid_argument, "submit beyond the pipeline's depth"};
    if (fault_fires(Fault::out_of_memory)) return injected_fault(Fault::out_of_memory);
    if (fault_fires(Fault::copy)) return injected_fault(Fault::copy);
    auto batch = std::make_shared<EmulatedBatch>();
    batch->bytes.resize(chunks.size());
    batch->outs.resize(chunks.size());
    detail::parallel_for(chunks.size(), 0, [&](std::size_t i) {
      if (options_.mode == PipelineMode::compress) {
        compress_chunk(chunks[i], &batch->bytes[i], &batch->outs[i]);
      } else {
        decompress_chunk(chunks[i], &batch->bytes[i], &batch->outs[i]);
      }
    });
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      PipelineOut& o = batch->outs[i];
      const bool direct = options_.mode == PipelineMode::decompress && chunks[i].direct;
      if (!o.bytes.empty() && !direct) o.keep = std::shared_ptr<const void>(batch, batch.get());
    }
    if (options_.mode == PipelineMode::compress) batch->place = std::move(place);
    fifo_.push_back(std::move(batch));
    return {};
  }

  Status complete(std::vector<PipelineOut>* outs, BatchTimes* times) override {
    if (fifo_.empty()) return {StatusCode::invalid_argument, "complete with no batch in flight"};
    std::shared_ptr<EmulatedBatch> batch = std::move(fifo_.front());
    fifo_.pop_front();
    if (times) *times = {};
    if (fault_fires(Fault::kernel)) return injected_fault(Fault::kernel);
    if (batch->place) place(*batch);
    // The outs keep the batch alive through their `keep`; the FIFO lets go.
    *outs = std::move(batch->outs);
    return {};
  }

  void abandon() override { fifo_.clear(); }
  int in_flight() const override { return static_cast<int>(fifo_.size()); }

 private:
  // The batch's frame bytes, one chunk after another, into the caller's room
  // when it gives one, as the device would copy them there.
  static void place(EmulatedBatch& batch) {
    std::size_t total = 0;
    for (const PipelineOut& o : batch.outs) total += o.bytes.size();
    std::uint8_t* room = batch.place(total, true);
    if (!room) return;
    for (PipelineOut& o : batch.outs) {
      if (!o.bytes.empty()) std::memcpy(room, o.bytes.data(), o.bytes.size());
      o.bytes = {room, o.bytes.size()};
      o.keep.reset();
      room += o.bytes.size();
    }
  }

  void compress_chunk(const PipelineIn& in, std::vector<std::uint8_t>* bytes, PipelineOut* out) const {
    const std::size_t bs = options_.block_size;
    const std::size_t n = in.data.size();
    const std::size_t nb = pipeline_block_count(n, bs);
    const std::size_t tail = options_.block_checksum ? 4 : 0;
    bytes->resize(n + nb * (4 + tail));
    std::size_t pos = 0;
    for (std::size_t k = 0; k < nb; ++k) {
      const std::uint8_t* block = in.data.data() + k * bs;
      const std::size_t size = std::min(bs, n - k * bs);
      std::uint8_t* word = bytes->data() + pos;
      std::uint8_t* payload = word + 4;
      // Capacity size - 1: a block that does not shrink does not fit, and is
      // stored raw, as on the device.
      std::size_t packed = 0;
      const ItemStatus st = cpu::lz4_twin_compress(block, size, payload, size - 1, &packed);
      if (st == ItemStatus::ok && packed > 0 && packed < size) {
        lz4f::write_le32(word, static_cast<std::uint32_t>(packed));
      } else {
        packed = size;
        std::memcpy(payload, block, size);
        lz4f::write_le32(word, static_cast<std::uint32_t>(size) | lz4f::kUncompressedBit);
      }
      if (tail) lz4f::write_le32(payload + packed, XXH32(payload, packed, 0));
      pos += 4 + packed + tail;
    }
    bytes->resize(pos);
    out->status = {};
    out->bytes = {bytes->data(), bytes->size()};
  }

  void decompress_chunk(const PipelineIn& in, std::vector<std::uint8_t>* bytes, PipelineOut* out) const {
    const std::size_t bs = options_.block_size;
    std::vector<FrameBlock> blocks;
    out->bytes = {};
    out->status = parse_frame_blocks(in.data, bs, options_.block_checksum, &blocks);
    if (!out->status) return;
    const std::size_t area = frame_blocks_area(blocks, bs);
    if (area > kPipelineMaxBatchOutput) {
      out->status = {StatusCode::output_too_small, "chunk decodes to more than a pipeline batch holds"};
      return;
    }
    if (options_.verify_checksums && options_.block_checksum) {
      out->status = verify_block_checksums(in.data, blocks);
      if (!out->status) return;
    }
    std::uint8_t* dst = in.direct;
    std::size_t cap = in.direct_capacity;
    if (!dst) {
      bytes->resize(area);
      dst = bytes->data();
      cap = area;
    }
    std::size_t pos = 0;
    std::vector<std::uint8_t> scratch;
    for (const FrameBlock& b : blocks) {
      const std::uint8_t* payload = in.data.data() + b.payload;
      if (b.raw) {
        if (b.size > cap - pos) {
          out->status = {StatusCode::output_too_small, "decoded chunk does not fit its direct output"};
          return;
        }
        if (b.size) std::memcpy(dst + pos, payload, b.size);
        pos += b.size;
        continue;
      }
      const std::size_t room = std::min(bs, cap - pos);
      const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(payload), reinterpret_cast<char*>(dst + pos),
                                          static_cast<int>(b.size), static_cast<int>(room));
      if (got >= 0) {
        pos += static_cast<std::size_t>(got);
        continue;
      }
      // Short of room or bad: the block decides, decoded with all of its room.
      if (room < bs) {
        scratch.resize(bs);
        if (LZ4_decompress_safe(reinterpret_cast<const char*>(payload), reinterpret_cast<char*>(scratch.data()),
                                static_cast<int>(b.size), static_cast<int>(bs)) >= 0) {
          out->status = {StatusCode::output_too_small, "decoded chunk does not fit its direct output"};
          return;
        }
      }
      out->status = {StatusCode::bad_data, "LZ4 block does not decode to at most the block size"};
      return;
    }
    out->bytes = {dst, pos};
  }

  Lz4PipelineOptions options_;
  bool begun_ = false;
  std::deque<std::shared_ptr<EmulatedBatch>> fifo_;
};

}  // namespace

std::unique_ptr<Lz4Pipeline> Lz4Pipeline::emulated() { return std::make_unique<EmulatedPipeline>(); }

}  // namespace tandem::gpu
