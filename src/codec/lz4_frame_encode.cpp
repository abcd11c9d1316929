// LZ4 frame writer: the frame format of lz4_frame_format.hpp around blocks
// compressed by liblz4, in batches of a few blocks per thread.
//
// Each batch takes a few blocks per thread of input (more when the input is
// already in memory) straight from the source (no copy for memory sources)
// and reserves room in the sink for the worst case: every block stored raw
// (a block never grows; when LZ4 cannot make it smaller it is stored as is).
// Block i is compressed into slot i of that room, then the slots are packed
// to the front and committed. The content
// checksum runs as one more task beside the block tasks of the same batch.
// Linked blocks compress one after another in a single task, since each one
// may refer to the one before.
//
// On the GPU, batches are larger (see gpu/lz4_gpu_engine.hpp) and the shared
// engine compresses the independent blocks of a batch straight into the same
// slots, each capped at its input's size less one, while the content checksum
// runs on a thread of its own; each block is framed (word, raw copy when the
// GPU could not shrink it, block checksum) as soon as the engine has finished
// it. A batch that the device fails is compressed again on the CPU.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <system_error>
#include <vector>

#include "common/thread_pool.hpp"
#include "cpu/lz4_block_cpu.hpp"
#include "codec/lz4_frame_blocks.hpp"
#include "codec/lz4_hybrid.hpp"
#include "format/lz4_frame_format.hpp"
#include "gpu/lz4_gpu_engine.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

namespace {

using lz4f::write_le32;

using lz4f::emit_block;
using lz4f::frame_block;
using lz4f::kSlotOverhead;

// Per-batch arrays of the GPU path, kept to reuse their memory.
struct GpuBatch {
  std::vector<ConstBuffer> inputs;
  std::vector<MutableBuffer> outputs;
  std::vector<ItemResult> results;
  std::vector<gpu::ItemStatus> statuses;
};

// Compresses the nb blocks of a batch (n bytes at src) on the GPU into their
// slots and frames them, setting used[i]. False when the device failed: the
// slots are then to be written again on the CPU.
bool compress_blocks_on_gpu(gpu::Lz4HostEngine& engine, const std::uint8_t* src, std::size_t n, std::size_t block,
                            std::uint8_t* room, std::size_t slot, bool block_checksum, int threads, GpuBatch* g,
                            std::vector<std::size_t>* used) {
  const std::size_t nb = (n + block - 1) / block;
  auto block_len = [&](std::size_t i) { return std::min(block, n - i * block); };
  g->inputs.resize(nb);
  g->outputs.resize(nb);
  g->results.resize(nb);
  g->statuses.resize(nb);
  for (std::size_t i = 0; i < nb; ++i) {
    // Capacity len - 1: a block that does not shrink fails output_too_small
    // and is stored raw, as on the CPU.
    g->inputs[i] = {src + i * block, block_len(i)};
    g->outputs[i] = {room + i * slot + 4, block_len(i) - 1};
  }
  std::size_t framed = 0;
  auto frame_done = [&](std::size_t done) {
    detail::parallel_for(done - framed, threads, [&](std::size_t k) {
      const std::size_t i = framed + k;
      const ItemResult& r = g->results[i];
      const bool shrunk = r.status && g->statuses[i] != gpu::ItemStatus::incompressible && r.size < block_len(i);
      (*used)[i] = frame_block(src + i * block, block_len(i), room + i * slot, shrunk ? r.size : 0, block_checksum);
    });
    framed = done;
  };
  Status s;
  {
    const auto lock = engine.lock();
    s = engine.compress(g->inputs, g->outputs, g->results, g->statuses, frame_done);
  }
  // Item failures other than the device's (output_too_small above all) were
  // framed raw; only a failed call remains.
  return s.code != StatusCode::device_error && framed == nb;
}

Status compress_legacy(Source& in, Sink& out, const Lz4FrameOptions& o, int threads, StreamStats* stats) {
  const std::size_t block = lz4f::kLegacyBlockSize;
  const std::size_t bound = cpu::lz4_block_bound(block);
  const std::size_t batch = detail::batch_items(threads);
  std::uint8_t magic[4];
  write_le32(magic, lz4f::kLegacyMagic);
  if (Status s = out.write(magic, 4); !s) return s;
  std::vector<std::size_t> used(batch);
  for (;;) {
    std::size_t avail = 0;
    if (Status s = in.ensure(batch * block, &avail); !s) return s;
    const std::size_t n = std::min(avail, batch * block);
    if (n == 0) break;
    const std::size_t nb = (n + block - 1) / block;
    // Full blocks take bound-sized slots; the last, maybe partial, block its own bound.
    const std::size_t last_len = n - (nb - 1) * block;
    std::uint8_t* room = nullptr;
    if (Status s = out.reserve((nb - 1) * (4 + bound) + 4 + cpu::lz4_block_bound(last_len), &room); !s) return s;
    const std::uint8_t* src = in.data();
    detail::parallel_for(nb, threads, [&](std::size_t i) {
      const std::size_t len = std::min(block, n - i * block);
      std::uint8_t* slot = room + i * (4 + bound);
      // The legacy format has no raw blocks: a block is always LZ4-compressed.
      const std::size_t size =
          cpu::lz4_compress_block(src + i * block, len, slot + 4, cpu::lz4_block_bound(len), o.level);
      write_le32(slot, static_cast<std::uint32_t>(size));
      used[i] = 4 + size;
    });
    std::size_t total = 0;
    for (std::size_t i = 0; i < nb; ++i) {
      if (used[i] == 4) return {StatusCode::bad_data, "LZ4 block compression failed"};
      std::memmove(room + total, room + i * (4 + bound), used[i]);
      total += used[i];
    }
    if (Status s = out.commit(total); !s) return s;
    in.consume(n);
    if (o.progress) o.progress(in.position(), out.position());
  }
  if (stats) {
    stats->bytes_in = in.position();
    stats->bytes_out = out.position();
  }
  return out.flush();
}

}  // namespace

bool lz4_valid_block_size(std::size_t block_size) { return lz4f::block_size_id(block_size) != 0; }

std::size_t lz4_frame_max_compressed_size(std::size_t input_size, const Lz4FrameOptions& o) {
  if (o.legacy) {
    const std::size_t full = input_size / lz4f::kLegacyBlockSize;
    const std::size_t rest = input_size % lz4f::kLegacyBlockSize;
    return 4 + full * (4 + cpu::lz4_block_bound(lz4f::kLegacyBlockSize)) +
           (rest ? 4 + cpu::lz4_block_bound(rest) : 0);
  }
  const std::size_t block = lz4_valid_block_size(o.block_size) ? o.block_size : (4u << 20);
  const std::size_t blocks = (input_size + block - 1) / block;
  // header + blocks (raw at worst) + end mark + content checksum
  return lz4f::kMaxHeaderSize + input_size + blocks * kSlotOverhead + 4 + 4;
}

Status lz4_compress_stream(Source& in, Sink& out, const Lz4FrameOptions& o, StreamStats* stats) {
  if (!o.legacy && !lz4_valid_block_size(o.block_size)) {
    return {StatusCode::invalid_argument, "block size must be 64 KiB, 256 KiB, 1 MiB or 4 MiB"};
  }
  if (o.level > 12) return {StatusCode::invalid_argument, "LZ4 levels go up to 12"};
  Backend backend;
  if (Status s = hybrid::hybrid_backend(o.backend, o.level, &backend); !s) return s;
  const int threads = detail::effective_threads(o.threads);
  if (stats) *stats = {};
  if (o.legacy) return compress_legacy(in, out, o, threads, stats);
  if (!o.linked_blocks) {
    Lz4FrameOptions hybrid_options = o;
    hybrid_options.backend = backend;
    return hybrid::compress_frame(in, out, hybrid_options, stats);
  }

  lz4f::FrameHeader header;
  header.block_max = o.block_size;
  header.independent_blocks = !o.linked_blocks;
  header.block_checksum = o.block_checksum;
  header.content_checksum = o.content_checksum;
  const std::int64_t hint = in.size_hint();
  header.has_content_size = o.content_size && hint >= 0;
  header.content_size = header.has_content_size ? static_cast<std::uint64_t>(hint) : 0;
  std::uint8_t head[lz4f::kMaxHeaderSize];
  if (Status s = out.write(head, lz4f::write_frame_header(header, head)); !s) return s;

  const std::size_t block = o.block_size;
  const std::size_t slot = block + kSlotOverhead;
  // Independent blocks may go to the GPU: when asked for, or with `automatic`
  // for batches that suit it (the engine is created on the first such batch).
  // Only an explicit request enlarges the batches: `automatic` keeps the
  // CPU's memory bound.
  const bool gpu_wanted = backend == Backend::gpu && !o.linked_blocks;
  std::size_t batch = detail::batch_items(threads);
  std::size_t max_batch = detail::max_batch_items(threads, block);
  if (gpu_wanted) gpu::grow_batches_for_gpu(o.backend, block, &batch, &max_batch);
  gpu::Lz4HostEngine* engine = nullptr;
  bool engine_failed = false;
  GpuBatch gpu_scratch;
  std::vector<std::size_t> used(max_batch);
  XXH32_state_t xxh;
  XXH32_reset(&xxh, 0);
  std::unique_ptr<cpu::Lz4LinkedCompressor> linked;
  if (o.linked_blocks) linked = std::make_unique<cpu::Lz4LinkedCompressor>(o.level);
  const int level = o.level;
  auto compress_independent = [level](const std::uint8_t* s, std::size_t n, std::uint8_t* d, std::size_t cap) {
    return cpu::lz4_compress_block(s, n, d, cap, level);
  };
  auto compress_linked = [&linked](const std::uint8_t* s, std::size_t n, std::uint8_t* d, std::size_t cap) {
    return linked->compress(s, n, d, cap);
  };

  std::uint64_t content = 0;
  for (;;) {
    std::size_t avail = 0;
    if (Status s = in.ensure(batch * block, &avail); !s) return s;
    // Less than asked for: the end of the input. More: already in memory,
    // take up to max_batch whole blocks of it.
    const std::size_t n = avail < batch * block ? avail : std::min(avail / block, max_batch) * block;
    if (n == 0) break;
    const std::size_t nb = (n + block - 1) / block;
    // Every slot but the last holds a full block: the room is exactly the worst case.
    std::uint8_t* room = nullptr;
    if (Status s = out.reserve(n + nb * kSlotOverhead, &room); !s) return s;
    const std::uint8_t* src = in.data();
    auto block_len = [&](std::size_t i) { return std::min(block, n - i * block); };
    bool hashed = !o.content_checksum;
    bool on_gpu = false;
    const bool gpu_batch =
        gpu_wanted && !engine_failed && gpu::batch_on_gpu(o.backend, gpu::Direction::compress, nb, n, threads);
    if (gpu_batch) {
      if (!engine) engine_failed = !gpu::Lz4HostEngine::shared(&engine);
      if (engine) {
        // The checksum on a thread of its own, beside the engine's use of the pool.
        std::future<void> hashing;
        if (!hashed) {
          try {
            hashing = std::async(std::launch::async, [&] { XXH32_update(&xxh, src, n); });
            hashed = true;
          } catch (const std::system_error&) {
            // No thread to be had: the CPU task below hashes.
          }
        }
        on_gpu = compress_blocks_on_gpu(*engine, src, n, block, room, slot, o.block_checksum, threads, &gpu_scratch,
                                        &used);
        if (hashing.valid()) hashing.get();
      }
    }
    // Task 0 is the content checksum; the others are blocks (one chained task when linked).
    const std::size_t tasks = 1 + (on_gpu ? 0 : o.linked_blocks ? 1 : nb);
    detail::parallel_for(tasks, threads, [&](std::size_t t) {
      if (t == 0) {
        if (!hashed) XXH32_update(&xxh, src, n);
      } else if (o.linked_blocks) {
        for (std::size_t i = 0; i < nb; ++i) {
          used[i] = emit_block(src + i * block, block_len(i), room + i * slot, o.block_checksum, compress_linked);
        }
      } else {
        const std::size_t i = t - 1;
        used[i] = emit_block(src + i * block, block_len(i), room + i * slot, o.block_checksum, compress_independent);
      }
    });
    std::size_t total = used[0];
    for (std::size_t i = 1; i < nb; ++i) {
      std::memmove(room + total, room + i * slot, used[i]);
      total += used[i];
    }
    if (Status s = out.commit(total); !s) return s;
    in.consume(n);
    content += n;
    if (o.progress) o.progress(in.position(), out.position());
  }
  if (header.has_content_size && content != header.content_size) {
    return {StatusCode::io_error, "the input changed size while it was read"};
  }
  std::uint8_t tail[8];
  write_le32(tail, 0);
  std::size_t tail_size = 4;
  if (o.content_checksum) {
    write_le32(tail + 4, XXH32_digest(&xxh));
    tail_size = 8;
  }
  if (Status s = out.write(tail, tail_size); !s) return s;
  if (stats) {
    stats->bytes_in = content;
    stats->bytes_out = out.position();
    stats->frames = 1;
  }
  return out.flush();
}

Status lz4_frame_compress(ConstBuffer input, std::vector<std::uint8_t>* frame, const Lz4FrameOptions& options) {
  if (!frame || (!input.data && input.size)) return {StatusCode::invalid_argument, "null buffer"};
  frame->clear();
  try {
    frame->reserve(lz4_frame_max_compressed_size(input.size, options));
  } catch (const std::bad_alloc&) {
    return {StatusCode::out_of_memory, "frame buffer"};
  }
  auto in = memory_source(input);
  auto out = vector_sink(frame);
  return lz4_compress_stream(*in, *out, options);
}

Status lz4_frame_compress(ConstBuffer input, MutableBuffer frame, std::size_t* size, const Lz4FrameOptions& options) {
  if (!size || (!input.data && input.size) || (!frame.data && frame.size)) {
    return {StatusCode::invalid_argument, "null buffer"};
  }
  auto in = memory_source(input);
  auto out = buffer_sink(frame);
  const Status s = lz4_compress_stream(*in, *out, options);
  *size = s ? static_cast<std::size_t>(out->position()) : 0;
  return s;
}

}  // namespace tandem
