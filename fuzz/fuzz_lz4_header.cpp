// Fuzz target: the LZ4 frame header parser (src/format/lz4_frame_format.hpp).
//
// The input is parsed as it is and again behind the frame magic (to reach the
// descriptor more often). Invariants: an accepted header fits in the input and
// describes a valid block size; a truncated one asks for more bytes than it
// had and no more than the largest header; an accepted header written back
// with write_frame_header parses to the same fields.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "format/lz4_frame_format.hpp"
#include "fuzz_check.hpp"

namespace lz4f = tandem::lz4f;

namespace {

void check(const std::uint8_t* p, std::size_t n) {
  lz4f::FrameHeader h;
  std::size_t needed = 0;
  const tandem::Status st = lz4f::parse_frame_header(p, n, &h, &needed);
  // Also with a null `needed`: the same answer.
  lz4f::FrameHeader h2;
  FUZZ_ASSERT(lz4f::parse_frame_header(p, n, &h2, nullptr).code == st.code);
  if (st.code == tandem::StatusCode::truncated) {
    FUZZ_ASSERT(needed > n);
    FUZZ_ASSERT(needed <= lz4f::kMaxHeaderSize);
    return;
  }
  if (!st.ok()) return;
  FUZZ_ASSERT(h.header_size >= lz4f::kMinHeaderSize && h.header_size <= lz4f::kMaxHeaderSize);
  FUZZ_ASSERT(h.header_size <= n);
  FUZZ_ASSERT(tandem::lz4_valid_block_size(h.block_max));
  FUZZ_ASSERT(!h.has_dict_id);  // dictionary ids are unsupported, never accepted
  std::uint8_t buf[lz4f::kMaxHeaderSize];
  const std::size_t w = lz4f::write_frame_header(h, buf);
  FUZZ_ASSERT(w == h.header_size);
  lz4f::FrameHeader back;
  FUZZ_ASSERT(lz4f::parse_frame_header(buf, w, &back).ok());
  FUZZ_ASSERT(back.block_max == h.block_max && back.independent_blocks == h.independent_blocks);
  FUZZ_ASSERT(back.block_checksum == h.block_checksum && back.content_checksum == h.content_checksum);
  FUZZ_ASSERT(back.has_content_size == h.has_content_size && back.content_size == h.content_size);
  FUZZ_ASSERT(std::memcmp(buf, p, w) == 0);  // an accepted descriptor has one encoding
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Exact-size copies so that a read past the given size is caught.
  std::unique_ptr<std::uint8_t[]> a(new std::uint8_t[size ? size : 1]);
  if (size) std::memcpy(a.get(), data, size);
  check(a.get(), size);
  std::unique_ptr<std::uint8_t[]> b(new std::uint8_t[size + 4]);
  lz4f::write_le32(b.get(), lz4f::kFrameMagic);
  if (size) std::memcpy(b.get() + 4, data, size);
  check(b.get(), size + 4);
  return 0;
}
