// zstd frames (RFC 8878) held in memory: where each frame, block and
// checksum lies, without decoding anything.
//
// This is the host half of tandem's zstd path: the parser finds every block
// of every frame, so that raw and RLE blocks (whose content is their payload,
// or one byte repeated) can be handed out apart from compressed blocks (which
// need libzstd, or later the GPU). docs/formats/zstd.md says what is checked
// and which status each failure gets.
//
//   input     := { zstd frame | skippable frame }+
//   frame     := magic 0xFD2FB528 (4) FHD (1) [window (1)] [dict id (0/1/2/4)]
//                [content size (0/1/2/4/8)] block+ [checksum (4)]
//   block     := header (3, little-endian: bit 0 last, bits 1-2 type,
//                bits 3-23 size) payload (raw: size, RLE: 1, compressed: size)
//   skippable := magic 0x184D2A50..0x184D2A5F (4) size (4) bytes (size)
//
// Every parser here takes its input as hostile: it reads only inside the
// span it is given, checks each length against what is left before using it,
// and allocates records in proportion to what it parsed, within Limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::zstd_frame {

inline constexpr std::uint32_t kMagic = 0xFD2FB528u;
inline constexpr std::uint32_t kSkippableMagicMin = 0x184D2A50u;
inline constexpr std::uint32_t kSkippableMagicMask = 0xFFFFFFF0u;
inline constexpr std::size_t kMinHeaderBytes = 6;   // magic + FHD + window descriptor or 1-byte content size
inline constexpr std::size_t kMaxHeaderBytes = 18;  // magic + FHD + window + dict id 4 + content size 8
inline constexpr std::size_t kSkippableHeaderBytes = 8;
inline constexpr std::size_t kBlockHeaderBytes = 3;
inline constexpr std::size_t kChecksumBytes = 4;
// The format's largest block, decoded or not (RFC 8878 3.1.1.2.3); a frame's
// own maximum is the smaller of this and its window size.
inline constexpr std::uint32_t kBlockSizeMax = 128u << 10;
// The window a reader accepts by default: 128 MiB, what libzstd's decoder
// accepts without being told more (ZSTD_d_windowLogMax 27). Every level of
// the zstd tool writes within it, --ultra -22 included; --long=28 and above
// need a larger limit.
inline constexpr std::uint64_t kDefaultMaxWindowSize = std::uint64_t{1} << 27;

inline constexpr bool is_skippable_magic(std::uint32_t magic) {
  return (magic & kSkippableMagicMask) == kSkippableMagicMin;
}

// What a parse accepts. The record counts bound what a parse allocates
// whatever the input says: at most max_frames Frame records and max_blocks
// Block records (32 bytes each), and never more than one Block per 3 input
// bytes or one Frame per 8.
struct Limits {
  // Window sizes above this are refused (unsupported). For a single-segment
  // frame the window is its content size.
  std::uint64_t max_window_size = kDefaultMaxWindowSize;
  // Blocks over all frames of one parse: 2^20 blocks hold at least 2^20
  // empty blocks' worth of input (3 MiB) and at most 128 GiB of content.
  std::size_t max_blocks = std::size_t{1} << 20;
  // Frames, skippable ones included, in one parse.
  std::size_t max_frames = std::size_t{1} << 20;
};

enum class BlockType : std::uint8_t { raw = 0, rle = 1, compressed = 2, reserved = 3 };

const char* block_type_name(BlockType type);  // "raw", "rle", "compressed", "reserved"

// What a frame header says (RFC 8878 3.1.1.1).
struct FrameHeader {
  std::uint64_t window_size = 0;   // bytes; the content size for a single-segment frame
  std::uint64_t content_size = 0;  // bytes; valid when has_content_size
  std::uint32_t dict_id = 0;       // 0 when absent (0 also means "no particular dictionary")
  std::uint32_t block_max = 0;     // min(window_size, kBlockSizeMax): no block's size, decoded or not, is larger
  std::uint8_t header_size = 0;    // bytes from the magic to the end of the header, 6..18
  std::uint8_t dict_id_bytes = 0;  // 0, 1, 2 or 4
  std::uint8_t content_size_bytes = 0;  // 0, 1, 2, 4 or 8
  bool single_segment = false;
  bool has_content_size = false;
  bool has_checksum = false;
};

// One block of a zstd frame. Offsets are from the start of the parsed input.
struct Block {
  std::uint64_t header_offset = 0;   // the 3-byte block header
  std::uint64_t payload_offset = 0;  // header_offset + 3
  std::uint32_t payload_size = 0;    // bytes in the input: Block_Size for raw and compressed, 1 for RLE
  // Content bytes the block decodes to: exact for raw and RLE (Block_Size);
  // for a compressed block unknown until decoded, 0 here, and at most the
  // frame's block_max.
  std::uint32_t decoded_size = 0;
  BlockType type = BlockType::raw;
  bool last = false;
  bool decoded_size_known() const { return type != BlockType::compressed; }
};
static_assert(sizeof(Block) <= 32);

enum class FrameKind : std::uint8_t { zstd = 0, skippable = 1 };

// One frame, zstd or skippable, in input order.
struct Frame {
  FrameKind kind = FrameKind::zstd;
  std::uint32_t magic = 0;
  std::uint64_t offset = 0;  // of the magic number in the input
  std::uint64_t size = 0;    // bytes in the input, magic to the last byte of the frame
  // zstd frames only.
  FrameHeader header;
  std::size_t first_block = 0;       // index into Parsed::blocks
  std::size_t block_count = 0;
  std::size_t compressed_blocks = 0;
  std::uint64_t known_content = 0;   // bytes that the raw and RLE blocks decode to
  std::uint64_t checksum_offset = 0; // when header.has_checksum
  std::uint32_t checksum = 0;        // the low 32 bits of XXH64 (seed 0) of the content
  // Skippable frames only: their user data, offset + 8 .. offset + size.
  std::uint64_t skippable_offset() const { return offset + kSkippableHeaderBytes; }
  std::uint64_t skippable_size() const { return size - kSkippableHeaderBytes; }
  // The content size when the blocks tell it without decoding (no compressed block).
  bool content_known() const { return kind == FrameKind::zstd && compressed_blocks == 0; }
};

// A whole input: its frames in order and all their blocks in order.
struct Parsed {
  std::vector<Frame> frames;
  std::vector<Block> blocks;
  // After a failed parse: the offset of the frame (or of the bytes after the
  // last good frame) where it failed; frames and blocks then hold what was
  // parsed before it. input size after a successful parse.
  std::uint64_t end_offset = 0;
  std::span<const Block> blocks_of(const Frame& f) const {
    return std::span<const Block>(blocks).subspan(f.first_block, f.block_count);
  }
};

// Parses the frame header at the start of `in` (a zstd frame's magic
// first). Statuses: truncated when `in` ends inside the header; bad_data for
// another magic (a skippable one included) or the reserved bit of the frame
// header descriptor set; unsupported for a window over limits.max_window_size.
Status parse_frame_header(std::span<const std::uint8_t> in, const Limits& limits, FrameHeader* header);

// Parses the one frame, zstd or skippable, that starts at in[offset]; appends
// its blocks to *blocks and fills *frame (first_block indexes *blocks).
// Statuses: parse_frame_header's, and truncated when the input ends inside
// a block header, a block payload, the checksum or a skippable frame;
// bad_data for a reserved block type, a block size over the frame's
// block_max, or blocks that cannot decode to the declared content size;
// unsupported when *blocks would pass limits.max_blocks. *blocks may hold
// part of the frame's blocks after a failure.
Status parse_frame(std::span<const std::uint8_t> in, std::size_t offset, const Limits& limits, Frame* frame,
                   std::vector<Block>* blocks);

// Parses a whole input: one or more frames back to back, each zstd or
// skippable, up to its last byte. Statuses: parse_frame's; truncated for an
// empty input or one that ends inside a magic number; bad_data for bytes
// after a frame that start no frame; unsupported past limits.max_frames.
Status parse(std::span<const std::uint8_t> in, const Limits& limits, Parsed* out);
inline Status parse(std::span<const std::uint8_t> in, Parsed* out) { return parse(in, Limits{}, out); }

// The checksum a frame records for its content: the low 32 bits of XXH64
// (seed 0).
std::uint32_t content_checksum(std::span<const std::uint8_t> content);

// Writes the content of blocks[0], blocks[1], ... in order into out while
// they are raw or RLE, stopping before the first compressed block (whose
// content, and so where the next block's goes, is not known here).
// `blocks` are records of a parse of `in` (a frame's blocks_of, or a tail of
// them). On return *done says how many blocks were written and *written how
// many bytes; blocks[*done] onwards remain. output_too_small when out has
// no room for the next block's content (*done and *written then say what
// was written before it); bad_data when a record does not lie inside `in`.
Status decode_known_blocks(std::span<const std::uint8_t> in, std::span<const Block> blocks,
                           std::span<std::uint8_t> out, std::size_t* done, std::size_t* written);

}  // namespace tandem::zstd_frame
