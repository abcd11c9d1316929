// LZ4 frame reader: LZ4 frames, legacy frames and skippable frames, in any
// order, from a Source to a Sink, treating every byte of input as hostile.
//
// A batch is a run of blocks (a few per thread, more when the input is
// already in memory) whose words have been read and checked (size within the
// frame's block maximum, all bytes present).
// Independent blocks of a batch decode in parallel straight into room
// reserved in the sink: block i gets a slot as large as it may decode to, and
// after decoding the blocks are packed to the front and committed. When the
// sink cannot give that much room at once (a caller's buffer near its end),
// the batch decodes block by block through a scratch buffer instead, so that
// only output that really does not fit is reported as output_too_small.
// Linked blocks decode one after another with the last 64 KiB as history.
//
// Frames of independent blocks are normally read by the hybrid scheduler
// (lz4_hybrid.hpp); this reader takes the rest of a stream from the first
// frame the scheduler does not take (a legacy frame, linked blocks).
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "codec/lz4_frame_blocks.hpp"
#include "codec/lz4_hybrid.hpp"
#include "common/thread_pool.hpp"
#include "cpu/lz4_block_cpu.hpp"
#include "format/lz4_frame_format.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

namespace {

using lz4f::read_le32;

struct BlockRef {
  std::size_t offset = 0;  // payload offset from the source's current position
  std::size_t size = 0;    // payload bytes
  bool raw = false;        // stored uncompressed
  std::uint32_t checksum = 0;
  bool has_checksum = false;
};

class FrameDecoder {
 public:
  FrameDecoder(Source& in, Sink& out, const Lz4DecodeOptions& o)
      : in_(in), out_(out), o_(o), threads_(detail::effective_threads(o.threads)),
        legacy_batch_(detail::batch_items(threads_)) {}

  Status run(StreamStats* stats);

 private:
  Status decode_frame();
  Status decode_legacy();
  // Reads the block words of `batch` blocks, and of more up to `max_batch`
  // while their bytes are already in memory; *end is set when the end mark
  // was read. Nothing is consumed.
  Status scan_blocks(const lz4f::FrameHeader& h, std::size_t batch, std::size_t max_batch,
                     std::vector<BlockRef>* blocks, std::size_t* scanned, bool* end);
  Status scan_legacy_blocks(std::vector<BlockRef>* blocks, std::size_t* scanned);
  // Decodes a scanned batch into the sink and consumes its input.
  // `expected` bounds what the batch may decode to when the frame states its
  // content size (UINT64_MAX otherwise).
  Status decode_batch(const std::vector<BlockRef>& blocks, std::size_t block_max, std::size_t scanned,
                      bool independent, std::uint64_t expected, XXH32_state_t* xxh, std::uint64_t* produced);
  template <class DecodeFn, class HashFn>
  void hash_while_decoding(std::size_t n, DecodeFn&& decode, const std::vector<Status>& status, HashFn&& hash);
  Status decode_batch_slow(const std::vector<BlockRef>& blocks, std::size_t block_max, bool independent,
                           XXH32_state_t* xxh, std::uint64_t* produced);
  Status decode_one(const BlockRef& b, const std::uint8_t* base, std::uint8_t* dst, std::size_t capacity,
                    bool independent, std::size_t* size);
  Status check_limit(std::uint64_t more) const {
    if (out_.position() - start_out_ + more > o_.max_output) {
      return {StatusCode::output_limit, "decompressed data exceeds the output limit"};
    }
    return {};
  }
  void progress() {
    if (o_.progress) o_.progress(in_.position(), out_.position());
  }

  Source& in_;
  Sink& out_;
  const Lz4DecodeOptions& o_;
  const int threads_;
  const std::size_t legacy_batch_;
  std::uint64_t start_out_ = 0;
  std::uint64_t frames_ = 0;
  cpu::Lz4LinkedDecompressor linked_;
  std::vector<std::uint8_t> scratch_;
};

Status FrameDecoder::run(StreamStats* stats) {
  start_out_ = out_.position();
  const std::uint64_t start_in = in_.position();
  bool any = false;
  for (;;) {
    std::size_t avail = 0;
    if (Status s = in_.ensure(4, &avail); !s) return s;
    if (avail == 0) {
      if (!any) return {StatusCode::truncated, "empty input"};
      break;
    }
    if (avail < 4) return {StatusCode::truncated, "input ends inside a frame magic number"};
    const std::uint32_t magic = read_le32(in_.data());
    Status s;
    if (magic == lz4f::kFrameMagic) {
      s = decode_frame();
      ++frames_;
    } else if (magic == lz4f::kLegacyMagic) {
      s = decode_legacy();
      ++frames_;
    } else if (lz4f::is_skippable_magic(magic)) {
      s = lz4f::skip_skippable_frame(in_);
    } else {
      s = {StatusCode::bad_data, any ? "unknown data after the last frame" : "not an LZ4 frame (unknown magic number)"};
    }
    if (!s) return s;
    any = true;
  }
  if (stats) {
    stats->bytes_in = in_.position() - start_in;
    stats->bytes_out = out_.position() - start_out_;
    stats->frames = frames_;
  }
  return out_.flush();
}

Status FrameDecoder::scan_blocks(const lz4f::FrameHeader& h, std::size_t batch, std::size_t max_batch,
                                 std::vector<BlockRef>* blocks, std::size_t* scanned, bool* end) {
  blocks->clear();
  *end = false;
  std::size_t off = 0, avail = 0;
  const std::size_t checksum_size = h.block_checksum ? 4 : 0;
  while (blocks->size() < max_batch) {
    const bool extra = blocks->size() >= batch;  // only if no read is needed
    if (extra && avail < off + 4) break;
    if (Status s = in_.ensure(off + 4, &avail); !s) return s;
    if (avail < off + 4) return {StatusCode::truncated, "input ends inside a block header"};
    const std::uint32_t word = read_le32(in_.data() + off);
    if (word == 0) {
      off += 4;
      *end = true;
      break;
    }
    BlockRef b;
    b.raw = (word & lz4f::kUncompressedBit) != 0;
    b.size = word & ~lz4f::kUncompressedBit;
    if (b.size > lz4f::max_block_payload(h.block_max)) {
      return {StatusCode::bad_data, "block size exceeds the frame's block maximum"};
    }
    if (extra && avail < off + 4 + b.size + checksum_size) break;
    off += 4;
    if (Status s = in_.ensure(off + b.size + checksum_size, &avail); !s) return s;
    if (avail < off + b.size + checksum_size) return {StatusCode::truncated, "input ends inside a block"};
    b.offset = off;
    if (h.block_checksum) {
      b.has_checksum = true;
      b.checksum = read_le32(in_.data() + off + b.size);
    }
    off += b.size + checksum_size;
    blocks->push_back(b);
  }
  *scanned = off;
  return {};
}

Status FrameDecoder::decode_one(const BlockRef& b, const std::uint8_t* base, std::uint8_t* dst,
                                std::size_t capacity, bool independent, std::size_t* size) {
  const std::uint8_t* payload = base + b.offset;
  if (b.has_checksum && o_.verify_checksums && XXH32(payload, b.size, 0) != b.checksum) {
    return {StatusCode::checksum_mismatch, "block checksum"};
  }
  if (b.raw) {
    if (b.size > capacity) return {StatusCode::output_too_small, "block does not fit"};
    if (b.size) std::memcpy(dst, payload, b.size);
    if (!independent) linked_.remember(dst, b.size);
    *size = b.size;
    return {};
  }
  if (!independent) return linked_.decompress(payload, b.size, dst, capacity, size);
  return cpu::lz4_decompress_block(payload, b.size, dst, capacity, size);
}

// Runs decode(i) for every block on the pool and hash(i) for every decoded
// block in order, so that the content checksum (sequential by nature) overlaps
// with decoding instead of following it. Task 0 is the hasher: it hashes the
// next block once it is decoded and, while it waits, decodes free blocks
// itself; tasks 1..n each decode one block unless someone took it first.
// Hashing stops at the first failed block (the batch fails then anyway).
template <class DecodeFn, class HashFn>
void FrameDecoder::hash_while_decoding(std::size_t n, DecodeFn&& decode, const std::vector<Status>& status,
                                       HashFn&& hash) {
  enum : int { kFree = 0, kTaken = 1, kDone = 2 };
  std::unique_ptr<std::atomic<int>[]> state(new std::atomic<int>[n]);
  for (std::size_t i = 0; i < n; ++i) state[i].store(kFree, std::memory_order_relaxed);
  auto take = [&](std::size_t i) {
    int expected = kFree;
    if (!state[i].compare_exchange_strong(expected, kTaken, std::memory_order_acq_rel)) return false;
    decode(i);
    state[i].store(kDone, std::memory_order_release);
    return true;
  };
  detail::parallel_for(n + 1, threads_, [&](std::size_t t) {
    if (t > 0) {
      take(t - 1);
      return;
    }
    std::size_t free_hint = 0;
    for (std::size_t next = 0; next < n;) {
      if (state[next].load(std::memory_order_acquire) == kDone) {
        if (!status[next]) return;
        hash(next++);
        continue;
      }
      // Not decoded yet: decode a free block meanwhile, or yield if none is left.
      bool worked = false;
      for (free_hint = std::max(free_hint, next); free_hint < n && !worked; ++free_hint) worked = take(free_hint);
      if (!worked) std::this_thread::yield();
    }
  });
}

Status FrameDecoder::decode_batch(const std::vector<BlockRef>& blocks, std::size_t block_max, std::size_t scanned,
                                  bool independent, std::uint64_t expected, XXH32_state_t* xxh,
                                  std::uint64_t* produced) {
  if (!blocks.empty()) {
    // Slot i holds what block i may decode to: its payload when raw, else block_max.
    std::vector<std::size_t> start(blocks.size() + 1, 0);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      start[i + 1] = start[i] + (blocks[i].raw ? blocks[i].size : block_max);
    }
    // A stated content size bounds the room (the last block is usually short),
    // so that a caller's exactly sized buffer takes the fast path. Linked
    // blocks cannot retry a batch, so they reserve the full bound or go slow.
    std::size_t room_size = start.back();
    if (independent && expected < room_size) room_size = static_cast<std::size_t>(expected);
    std::uint8_t* room = nullptr;
    // No room at all (a content size of 0 before blocks) goes the checked slow way.
    Status reserved = room_size == 0 ? Status{StatusCode::output_too_small}
                                     : out_.reserve(room_size, &room);
    std::vector<std::size_t> got(blocks.size(), 0);
    std::vector<Status> status(blocks.size());
    XXH32_state_t xxh_before;
    if (xxh) xxh_before = *xxh;
    if (reserved) {
      const std::uint8_t* base = in_.data();
      auto one = [&](std::size_t i) {
        const bool inside = start[i] < room_size;
        const std::size_t cap = inside ? std::min(start[i + 1], room_size) - start[i] : 0;
        status[i] = decode_one(blocks[i], base, inside ? room + start[i] : room, cap, independent, &got[i]);
      };
      if (independent && xxh) {
        hash_while_decoding(blocks.size(), one, status, [&](std::size_t i) {
          XXH32_update(xxh, room + start[i], got[i]);
        });
      } else if (independent) {
        detail::parallel_for(blocks.size(), threads_, one);
      } else {
        for (std::size_t i = 0; i < blocks.size(); ++i) {
          one(i);
          if (!status[i]) break;
        }
      }
      for (const Status& s : status) {
        // A short room (from the content size) may be too small: decode again, block by block.
        if (s.code == StatusCode::output_too_small && room_size < start.back()) {
          reserved = s;
          break;
        }
        if (s.code == StatusCode::output_too_small) {
          return {StatusCode::bad_data, "block decodes to more than the frame's block maximum"};
        }
        if (!s) return s;
      }
    }
    if (reserved.code == StatusCode::output_too_small) {
      if (xxh) *xxh = xxh_before;  // forget what the fast attempt hashed
      if (Status s = decode_batch_slow(blocks, block_max, independent, xxh, produced); !s) return s;
      in_.consume(scanned);
      progress();
      return {};
    }
    if (!reserved) return reserved;
    std::size_t total = got[0];
    for (std::size_t i = 1; i < blocks.size(); ++i) {
      if (start[i] != total) std::memmove(room + total, room + start[i], got[i]);
      total += got[i];
    }
    if (Status s = check_limit(total); !s) return s;
    if (xxh && !independent) XXH32_update(xxh, room, total);
    if (Status s = out_.commit(total); !s) return s;
    *produced += total;
  }
  in_.consume(scanned);
  progress();
  return {};
}

Status FrameDecoder::decode_batch_slow(const std::vector<BlockRef>& blocks, std::size_t block_max, bool independent,
                                       XXH32_state_t* xxh, std::uint64_t* produced) {
  if (scratch_.size() < block_max) scratch_.resize(block_max);
  const std::uint8_t* base = in_.data();
  for (const BlockRef& b : blocks) {
    std::size_t got = 0;
    Status s = decode_one(b, base, scratch_.data(), block_max, independent, &got);
    if (s.code == StatusCode::output_too_small) {
      return {StatusCode::bad_data, "block decodes to more than the frame's block maximum"};
    }
    if (!s) return s;
    if (Status l = check_limit(got); !l) return l;
    if (xxh) XXH32_update(xxh, scratch_.data(), got);
    if (Status w = out_.write(scratch_.data(), got); !w) return w;
    *produced += got;
  }
  return {};
}

Status FrameDecoder::decode_frame() {
  std::size_t avail = 0;
  if (Status s = in_.ensure(lz4f::kMaxHeaderSize, &avail); !s) return s;
  lz4f::FrameHeader h;
  if (Status s = lz4f::parse_frame_header(in_.data(), avail, &h); !s) return s;
  in_.consume(h.header_size);
  if (h.has_content_size && h.content_size > o_.max_output - std::min(o_.max_output, out_.position() - start_out_)) {
    return {StatusCode::output_limit, "the frame's content size exceeds the output limit"};
  }
  linked_ = cpu::Lz4LinkedDecompressor();
  XXH32_state_t xxh;
  XXH32_reset(&xxh, 0);
  XXH32_state_t* content_hash = (h.content_checksum && o_.verify_checksums) ? &xxh : nullptr;
  std::uint64_t produced = 0;
  std::vector<BlockRef> blocks;
  const std::size_t batch = detail::batch_items(threads_);
  const std::size_t max_batch = detail::max_batch_items(threads_, h.block_max);
  for (bool end = false; !end;) {
    std::size_t scanned = 0;
    if (Status s = scan_blocks(h, batch, max_batch, &blocks, &scanned, &end); !s) return s;
    const std::uint64_t expected = h.has_content_size ? h.content_size - produced : UINT64_MAX;
    if (Status s = decode_batch(blocks, h.block_max, scanned, h.independent_blocks, expected, content_hash,
                                &produced);
        !s) {
      return s;
    }
    if (h.has_content_size && produced > h.content_size) {
      return {StatusCode::bad_data, "content is larger than the frame's content size"};
    }
  }
  if (h.has_content_size && produced != h.content_size) {
    return {StatusCode::bad_data, "content is smaller than the frame's content size"};
  }
  if (h.content_checksum) {
    if (Status s = in_.ensure(4, &avail); !s) return s;
    if (avail < 4) return {StatusCode::truncated, "input ends inside the content checksum"};
    const std::uint32_t stored = read_le32(in_.data());
    in_.consume(4);
    if (content_hash && XXH32_digest(content_hash) != stored) {
      return {StatusCode::checksum_mismatch, "content checksum"};
    }
  }
  return {};
}

Status FrameDecoder::scan_legacy_blocks(std::vector<BlockRef>* blocks, std::size_t* scanned) {
  blocks->clear();
  std::size_t off = 0, avail = 0;
  const std::size_t max_payload = cpu::lz4_block_bound(lz4f::kLegacyBlockSize);
  while (blocks->size() < legacy_batch_) {
    if (Status s = in_.ensure(off + 4, &avail); !s) return s;
    if (avail == off) break;  // the end of the input ends the frame
    if (avail < off + 4) return {StatusCode::truncated, "input ends inside a block header"};
    const std::uint32_t word = read_le32(in_.data() + off);
    // A legacy frame has no end mark: a word too large for a block is the
    // magic number of the next frame.
    if (word > max_payload) break;
    if (Status s = in_.ensure(off + 4 + word, &avail); !s) return s;
    if (avail < off + 4 + word) return {StatusCode::truncated, "input ends inside a block"};
    BlockRef b;
    b.offset = off + 4;
    b.size = word;
    blocks->push_back(b);
    off += 4 + word;
  }
  *scanned = off;
  return {};
}

Status FrameDecoder::decode_legacy() {
  in_.consume(4);
  std::vector<BlockRef> blocks;
  std::uint64_t produced = 0;
  for (;;) {
    std::size_t scanned = 0;
    if (Status s = scan_legacy_blocks(&blocks, &scanned); !s) return s;
    if (blocks.empty()) break;
    const bool full_batch = blocks.size() == legacy_batch_;
    if (Status s = decode_batch(blocks, lz4f::kLegacyBlockSize, scanned, true, UINT64_MAX, nullptr, &produced);
        !s) {
      return s;
    }
    if (!full_batch) break;
  }
  return {};
}

}  // namespace

namespace {

// Frames of independent blocks go through the hybrid scheduler, a run per
// group of alike frames; from the first frame it does not take (a legacy
// frame, linked blocks) the frame decoder above reads the rest.
Status decompress_stream(Source& in, Sink& out, const Lz4DecodeOptions& options, MutableBuffer direct,
                         StreamStats* stats) {
  Backend backend;
  if (Status s = hybrid::hybrid_backend(options.backend, 0, &backend); !s) return s;
  if (stats) *stats = {};
  Lz4DecodeOptions o = options;
  o.backend = backend;
  const std::uint64_t start_in = in.position();
  const std::uint64_t start_out = out.position();
  std::uint64_t frames = 0;
  for (;;) {
    std::size_t avail = 0;
    if (Status s = in.ensure(4, &avail); !s) return s;
    if (avail == 0) {
      if (in.position() == start_in) return {StatusCode::truncated, "empty input"};
      break;
    }
    const std::uint64_t before = in.position();
    const std::uint64_t produced = out.position() - start_out;
    Lz4DecodeOptions run = o;
    run.max_output = o.max_output - std::min(o.max_output, produced);
    MutableBuffer rest{};
    if (direct.data && produced <= direct.size) {
      rest = {static_cast<std::uint8_t*>(direct.data) + produced, direct.size - static_cast<std::size_t>(produced)};
    }
    StreamStats st;
    if (Status s = hybrid::decompress_frames(in, out, run, rest, &st); !s) return s;
    frames += st.frames;
    if (in.position() != before) continue;
    // A frame the scheduler does not take: the frame decoder reads from here on.
    FrameDecoder decoder(in, out, run);
    if (Status s = decoder.run(&st); !s) return s;
    frames += st.frames;
    break;
  }
  if (stats) {
    stats->bytes_in = in.position() - start_in;
    stats->bytes_out = out.position() - start_out;
    stats->frames = frames;
  }
  return out.flush();
}

}  // namespace

Status lz4_decompress_stream(Source& in, Sink& out, const Lz4DecodeOptions& options, StreamStats* stats) {
  return decompress_stream(in, out, options, {}, stats);
}

Status lz4_frame_decompress(ConstBuffer frame, std::vector<std::uint8_t>* output, const Lz4DecodeOptions& options) {
  if (!output || (!frame.data && frame.size)) return {StatusCode::invalid_argument, "null buffer"};
  output->clear();
  auto in = memory_source(frame);
  auto out = vector_sink(output, options.max_output);
  return lz4_decompress_stream(*in, *out, options);
}

Status lz4_frame_decompress(ConstBuffer frame, MutableBuffer output, std::size_t* size,
                            const Lz4DecodeOptions& options) {
  if (!size || (!frame.data && frame.size) || (!output.data && output.size)) {
    return {StatusCode::invalid_argument, "null buffer"};
  }
  auto in = memory_source(frame);
  auto out = buffer_sink(output);
  const Status s = decompress_stream(*in, *out, options, output, nullptr);
  *size = static_cast<std::size_t>(out->position());
  return s;
}

}  // namespace tandem
