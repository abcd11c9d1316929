// Frame blocks (word, payload, optional checksum) as the LZ4 frame writer and
// the hybrid scheduler's CPU and GPU workers write them.
#pragma once

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>

#include "format/lz4_frame_format.hpp"
#include "tandem/tandem.hpp"

namespace tandem::lz4f {

// A block's slot: word, payload (at most the block itself), block checksum.
inline constexpr std::size_t kSlotOverhead = 8;

// Completes the frame block in `slot` for the n input bytes at `in`, whose
// payload (at slot + 4) already holds `size` < n compressed bytes, or which is
// stored raw when `size` is 0: word, payload and, when asked, its checksum.
// Returns the bytes used.
inline std::size_t frame_block(const std::uint8_t* in, std::size_t n, std::uint8_t* slot, std::size_t size,
                               bool block_checksum) {
  std::uint8_t* payload = slot + 4;
  if (size == 0) {
    std::memcpy(payload, in, n);
    size = n;
    write_le32(slot, static_cast<std::uint32_t>(n) | kUncompressedBit);
  } else {
    write_le32(slot, static_cast<std::uint32_t>(size));
  }
  std::size_t used = 4 + size;
  if (block_checksum) {
    write_le32(slot + used, XXH32(payload, size, 0));
    used += 4;
  }
  return used;
}

// Writes the block at `in` (n bytes) into `slot` as a frame block, compressed
// when that makes it smaller.
template <class CompressFn>
std::size_t emit_block(const std::uint8_t* in, std::size_t n, std::uint8_t* slot, bool block_checksum,
                       CompressFn&& compress) {
  // A capacity of n - 1 makes liblz4 give up early on incompressible data.
  return frame_block(in, n, slot, n > 1 ? compress(in, n, slot + 4, n - 1) : 0, block_checksum);
}

// Skips the skippable frame that starts at in.data() (its magic checked by
// the caller), reading its bytes a piece at a time.
inline Status skip_skippable_frame(Source& in) {
  std::size_t avail = 0;
  if (Status s = in.ensure(8, &avail); !s) return s;
  if (avail < 8) return {StatusCode::truncated, "input ends inside a skippable frame header"};
  std::uint64_t left = read_le32(in.data() + 4);
  in.consume(8);
  while (left > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, 1u << 20));
    if (Status s = in.ensure(want, &avail); !s) return s;
    if (avail == 0) return {StatusCode::truncated, "input ends inside a skippable frame"};
    const std::size_t take = std::min(avail, want);
    in.consume(take);
    left -= take;
  }
  return {};
}

// Writes the header of a frame of `o`'s blocks, with the content size when
// asked for and the source knows it; *header receives what was written.
inline Status begin_frame(const Source& in, Sink& out, const Lz4FrameOptions& o, FrameHeader* header) {
  *header = FrameHeader{};
  header->block_max = o.block_size;
  header->independent_blocks = !o.linked_blocks;
  header->block_checksum = o.block_checksum;
  header->content_checksum = o.content_checksum;
  const std::int64_t hint = in.size_hint();
  header->has_content_size = o.content_size && hint >= 0;
  header->content_size = header->has_content_size ? static_cast<std::uint64_t>(hint) : 0;
  std::uint8_t head[kMaxHeaderSize];
  return out.write(head, write_frame_header(*header, head));
}

// Ends the frame of `header` after `content` bytes hashed into xxh: checks
// that the source kept its size, writes the end mark and the content
// checksum, fills stats (may be null) and flushes.
inline Status end_frame(Sink& out, const FrameHeader& header, std::uint64_t content, const XXH32_state_t& xxh,
                        StreamStats* stats) {
  if (header.has_content_size && content != header.content_size) {
    return {StatusCode::io_error, "the input changed size while it was read"};
  }
  std::uint8_t tail[8];
  write_le32(tail, 0);
  std::size_t tail_size = 4;
  if (header.content_checksum) {
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

}  // namespace tandem::lz4f
