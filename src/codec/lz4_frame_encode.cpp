// LZ4 frame writer: the frame format of lz4_frame_format.hpp around blocks
// compressed by liblz4.
//
// Frames of independent blocks go through the hybrid scheduler
// (lz4_hybrid.hpp), on the CPU and the GPU. Here are the frames it does not
// take: linked blocks, each of which may refer to the one before, so that
// they compress one after another, and the legacy format.
//
// Linked blocks go in batches of a few blocks per thread of input straight
// from the source (no copy for memory sources), into room reserved in the sink
// for the worst case: every block stored raw (a block never grows; when LZ4
// cannot make it smaller it is stored as is). The blocks are compressed in one
// task into their slots of that room, while the content checksum runs as a
// second task; then the slots are packed to the front and committed.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/thread_pool.hpp"
#include "cpu/lz4_block_cpu.hpp"
#include "codec/lz4_frame_blocks.hpp"
#include "codec/lz4_hybrid.hpp"
#include "format/lz4_frame_format.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

namespace {

using lz4f::write_le32;

using lz4f::emit_block;
using lz4f::kSlotOverhead;

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
  if (Status s = lz4f::begin_frame(in, out, o, &header); !s) return s;

  const std::size_t block = o.block_size;
  const std::size_t slot = block + kSlotOverhead;
  const std::size_t batch = detail::batch_items(threads);
  const std::size_t max_batch = detail::max_batch_items(threads, block);
  std::vector<std::size_t> used(max_batch);
  XXH32_state_t xxh;
  XXH32_reset(&xxh, 0);
  cpu::Lz4LinkedCompressor linked(o.level);
  auto compress_linked = [&linked](const std::uint8_t* s, std::size_t n, std::uint8_t* d, std::size_t cap) {
    return linked.compress(s, n, d, cap);
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
    // Task 0 is the content checksum, task 1 the chain of blocks.
    detail::parallel_for(2, threads, [&](std::size_t t) {
      if (t == 0) {
        if (o.content_checksum) XXH32_update(&xxh, src, n);
        return;
      }
      for (std::size_t i = 0; i < nb; ++i) {
        used[i] = emit_block(src + i * block, std::min(block, n - i * block), room + i * slot, o.block_checksum,
                             compress_linked);
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
  return lz4f::end_frame(out, header, content, xxh, stats);
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
