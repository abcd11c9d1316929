// Deflate chunks on the CPU; see deflate_cpu.hpp.
#include "cpu/deflate_cpu.hpp"

#include <libdeflate.h>
#include <zlib.h>

#include <array>
#include <cstring>
#include <memory>

#include "format/deflate_index.hpp"

namespace tandem::deflate_cpu {

namespace {

struct CompressorFree {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};
struct DecompressorFree {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

libdeflate_compressor* compressor(int level) {
  thread_local std::array<std::unique_ptr<libdeflate_compressor, CompressorFree>, 13> cache;
  auto& slot = cache[static_cast<std::size_t>(level)];
  if (!slot) slot.reset(libdeflate_alloc_compressor(level));
  return slot.get();
}

// A raw zlib inflater and an output buffer for the block walk, per thread.
struct Walker {
  z_stream z{};
  bool ready = false;
  std::vector<std::uint8_t> out;
  Walker() { ready = inflateInit2(&z, -15) == Z_OK; }
  ~Walker() {
    if (ready) inflateEnd(&z);
  }
};

Walker& walker() {
  thread_local Walker w;
  return w;
}

// Bit positions in a compressed chunk: where its last block begins, and
// where the stream ends. Also checks that it inflates to exactly `size` bytes.
Status walk_blocks(const std::uint8_t* in, std::size_t n, std::size_t size, std::uint64_t* last_block,
                   std::uint64_t* end) {
  Walker& w = walker();
  if (!w.ready) return {StatusCode::out_of_memory, "zlib inflater"};
  if (w.out.size() < size + 1) w.out.resize(size + 1);
  inflateReset(&w.z);
  w.z.next_in = const_cast<Bytef*>(in);
  w.z.avail_in = static_cast<uInt>(n);
  w.z.next_out = w.out.data();
  w.z.avail_out = static_cast<uInt>(size + 1);
  // inflate(Z_BLOCK) returns after every end-of-block code with 128 in
  // data_type (plus 64 after the final block's), and the count of unused
  // bits of the last byte it took in data_type's low bits. At Z_STREAM_END it
  // has dropped the final byte's padding, so the end is taken before that.
  std::uint64_t start = 0;
  bool have_end = false;
  for (;;) {
    const uInt before_in = w.z.avail_in, before_out = w.z.avail_out;
    const int ret = inflate(&w.z, Z_BLOCK);
    const std::uint64_t bit = (n - w.z.avail_in) * std::uint64_t{8} - static_cast<unsigned>(w.z.data_type & 7);
    if (ret == Z_STREAM_END) {
      if (!have_end) *end = bit;
      break;
    }
    if (ret != Z_OK) return {StatusCode::bad_data, "compressed chunk does not inflate"};
    if (w.z.data_type & 128) {
      if (w.z.data_type & 64) {
        *end = bit;  // the final block ended here
        have_end = true;
      } else {
        start = bit;  // a block ended: the next one starts here
      }
    } else if (w.z.avail_in == before_in && w.z.avail_out == before_out) {
      return {StatusCode::bad_data, "compressed chunk does not inflate"};
    }
  }
  if (w.z.total_out != size || w.z.avail_in != 0) return {StatusCode::bad_data, "compressed chunk has the wrong size"};
  *last_block = start;
  return {};
}

}  // namespace

libdeflate_decompressor* decompressor() {
  thread_local std::unique_ptr<libdeflate_decompressor, DecompressorFree> cache(libdeflate_alloc_decompressor());
  return cache.get();
}

Status compress_chunk(const std::uint8_t* in, std::size_t n, int level, std::vector<std::uint8_t>* out) {
  if (n == 0 || level < 0 || level > 12) return {StatusCode::invalid_argument, "empty chunk or bad level"};
  libdeflate_compressor* c = compressor(level);
  if (!c) return {StatusCode::out_of_memory, "libdeflate compressor"};
  const std::size_t bound = libdeflate_deflate_compress_bound(c, n);
  out->resize(bound + 8);
  const std::size_t size = libdeflate_deflate_compress(c, in, n, out->data(), bound);
  if (size == 0) return {StatusCode::bad_data, "libdeflate could not compress the chunk"};
  std::uint64_t last = 0, end = 0;
  if (Status s = walk_blocks(out->data(), size, n, &last, &end); !s) return s;
  std::uint8_t* p = out->data();
  p[last / 8] &= static_cast<std::uint8_t>(~(1u << (last % 8)));  // BFINAL of the last block
  // Three zero bits (a non-final stored block) after the end, then zeros to
  // the byte boundary: clear every bit from `end` on up to that boundary.
  const std::size_t stored_end = static_cast<std::size_t>((end + 3 + 7) / 8);
  for (std::size_t i = size; i < stored_end; ++i) p[i] = 0;
  p[end / 8] &= static_cast<std::uint8_t>((1u << (end % 8)) - 1);
  for (std::size_t i = static_cast<std::size_t>(end / 8) + 1; i < stored_end; ++i) p[i] = 0;
  std::memcpy(p + stored_end, format::kSyncMarker, sizeof format::kSyncMarker);
  out->resize(stored_end + sizeof format::kSyncMarker);
  return {};
}

Status inflate_chunk(const std::uint8_t* in, std::size_t n, std::uint8_t* out, std::size_t capacity,
                     std::size_t* produced) {
  *produced = 0;
  if (n < sizeof format::kSyncMarker || std::memcmp(in + n - 4, format::kSyncMarker, 4) != 0) {
    return {StatusCode::bad_data, "chunk does not end with an empty stored block"};
  }
  // libdeflate wants a final block: the chunk followed by the stream's end.
  thread_local std::vector<std::uint8_t> staged;
  staged.resize(n + sizeof format::kDeflateEnd);
  std::memcpy(staged.data(), in, n);
  std::memcpy(staged.data() + n, format::kDeflateEnd, sizeof format::kDeflateEnd);
  libdeflate_decompressor* d = decompressor();
  if (!d) return {StatusCode::out_of_memory, "libdeflate decompressor"};
  std::size_t used = 0, got = 0;
  const libdeflate_result r = libdeflate_deflate_decompress_ex(d, staged.data(), staged.size(), out, capacity, &used, &got);
  if (r == LIBDEFLATE_INSUFFICIENT_SPACE) return {StatusCode::bad_data, "chunk inflates to more than the chunk size"};
  if (r != LIBDEFLATE_SUCCESS) return {StatusCode::bad_data, "chunk does not inflate alone"};
  // Consuming the appended end exactly proves the chunk's own blocks were all
  // non-final and ended at its last byte.
  if (used != staged.size()) return {StatusCode::bad_data, "chunk holds a final block"};
  *produced = got;
  return {};
}

Status inflate_exact(const std::uint8_t* in, std::size_t n, std::uint8_t* out, std::size_t expected) {
  libdeflate_decompressor* d = decompressor();
  if (!d) return {StatusCode::out_of_memory, "libdeflate decompressor"};
  std::size_t used = 0, got = 0;
  const libdeflate_result r = libdeflate_deflate_decompress_ex(d, in, n, out, expected, &used, &got);
  if (r == LIBDEFLATE_INSUFFICIENT_SPACE) return {StatusCode::checksum_mismatch, "member longer than its ISIZE"};
  if (r != LIBDEFLATE_SUCCESS) return {StatusCode::bad_data, "member does not inflate"};
  if (used != n) return {StatusCode::bad_data, "member's deflate stream ends before its size"};
  if (got != expected) return {StatusCode::checksum_mismatch, "member shorter than its ISIZE"};
  return {};
}

StreamInflater::StreamInflater() {
  auto* z = new z_stream{};
  if (inflateInit2(z, -15) != Z_OK) {
    delete z;
    return;
  }
  state_ = z;
}

StreamInflater::~StreamInflater() {
  if (auto* z = static_cast<z_stream*>(state_)) {
    inflateEnd(z);
    delete z;
  }
}

void StreamInflater::reset() {
  if (state_) inflateReset(static_cast<z_stream*>(state_));
}

Status StreamInflater::step(const std::uint8_t* in, std::size_t* in_size, std::uint8_t* out, std::size_t* out_size,
                            bool* finished) {
  auto* z = static_cast<z_stream*>(state_);
  *finished = false;
  const uInt in_n = static_cast<uInt>(std::min<std::size_t>(*in_size, 1u << 30));
  const uInt out_n = static_cast<uInt>(std::min<std::size_t>(*out_size, 1u << 30));
  z->next_in = const_cast<Bytef*>(in);
  z->avail_in = in_n;
  z->next_out = out;
  z->avail_out = out_n;
  const int ret = inflate(z, Z_NO_FLUSH);
  *in_size = in_n - z->avail_in;
  *out_size = out_n - z->avail_out;
  switch (ret) {
    case Z_STREAM_END: *finished = true; return {};
    case Z_OK:
    case Z_BUF_ERROR: return {};  // no progress possible with these buffers: the caller decides
    case Z_MEM_ERROR: return {StatusCode::out_of_memory, "zlib inflater"};
    default: return {StatusCode::bad_data, z->msg ? "invalid deflate stream" : "invalid deflate stream"};
  }
}

std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t n) { return libdeflate_crc32(crc, data, n); }
std::uint32_t adler32(std::uint32_t adler, const void* data, std::size_t n) {
  return libdeflate_adler32(adler, data, n);
}
std::uint32_t crc32_combine(std::uint32_t a, std::uint32_t b, std::uint64_t b_size) {
  return static_cast<std::uint32_t>(::crc32_combine(a, b, static_cast<z_off_t>(b_size)));
}
std::uint32_t adler32_combine(std::uint32_t a, std::uint32_t b, std::uint64_t b_size) {
  return static_cast<std::uint32_t>(::adler32_combine(a, b, static_cast<z_off_t>(b_size)));
}

}  // namespace tandem::deflate_cpu
