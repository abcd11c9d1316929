// Fuzz target: the inflate body (gpu/inflate_body.hpp), one-thread and warp
// forms, on deflate streams taken as they are and on valid streams with edits.
//
// Input: a first byte; bit 0 picks the mode.
//   raw:     the next two bytes times 16 are the output capacity (up to 1 MiB);
//            the rest is the stream.
//   edited:  bits 1-2 pick zlib's level (1, 6, 9 or 0) and bit 3 a chunked
//            stream (a full flush every 4 KiB, then 03 00); the next two bytes
//            give a data length (up to 64 KiB) of data patterned on the rest of
//            the input, which is compressed, then edited: byte xors at
//            positions from the input, and perhaps a cut.
// The stream sits in an allocation of exactly its size (ASan sees a read past
// it); the output is followed by guard bytes.
//
// Properties: no crash; the guard is intact; sizes within bounds; the warp
// form gives the one-thread form's status, size, end, input count and bytes;
// when zlib inflates the stream to its end within the capacity, the body gives
// ok, a final block and zlib's bytes; when the body stops ok on a final block,
// zlib inflates the same bytes; an unedited stream inflates to its data.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_guard.hpp"
#include "gpu/inflate_body.hpp"

namespace {

namespace inf = tandem::gpu::inflate;
using Bytes = std::vector<std::uint8_t>;

struct Reader {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
  std::uint32_t le16() { return byte() | (static_cast<std::uint32_t>(byte()) << 8); }
};

struct Verdict {
  inf::InflateResult r;
  Bytes out;
};

template <class Writer>
Verdict run(const Bytes& stream, std::size_t cap, std::uint8_t fill, const Writer& w) {
  std::unique_ptr<std::uint8_t[]> in(new std::uint8_t[stream.size() ? stream.size() : 1]);
  if (!stream.empty()) std::memcpy(in.get(), stream.data(), stream.size());
  Bytes buf = tandem::fuzz::guarded_buffer(cap, fill);
  auto tables = std::make_unique<inf::InflateTables>();
  Verdict v;
  v.r = inf::inflate_stream(in.get(), stream.size(), buf.data(), cap, *tables, w);
  FUZZ_ASSERT(tandem::fuzz::guard_intact(buf, cap));
  FUZZ_ASSERT(v.r.out_size <= cap);
  FUZZ_ASSERT(v.r.in_used <= stream.size());
  FUZZ_ASSERT(static_cast<int>(v.r.status) >= 0 && static_cast<int>(v.r.status) < inf::kInflateStatusCount);
  v.out.assign(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(v.r.out_size));
  return v;
}

// zlib's inflate of a raw stream into `cap` bytes: Z_STREAM_END or another code.
int zlib_inflate(const Bytes& stream, std::size_t cap, Bytes* out) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) std::abort();
  out->assign(cap + 1, 0);
  z.next_in = const_cast<std::uint8_t*>(stream.data());
  z.avail_in = static_cast<uInt>(stream.size());
  z.next_out = out->data();
  z.avail_out = static_cast<uInt>(out->size());
  const int rc = inflate(&z, Z_FINISH);
  out->resize(z.total_out);
  inflateEnd(&z);
  return rc;
}

Bytes compress(const Bytes& data, int level, bool chunked) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  Bytes out;
  Bytes buf(deflateBound(&z, data.size()) + 64);
  const std::size_t step = chunked ? 4096 : std::max<std::size_t>(data.size(), 1);
  std::size_t at = 0;
  do {
    const std::size_t n = std::min(step, data.size() - at);
    z.next_in = const_cast<std::uint8_t*>(data.data() + at);
    z.avail_in = static_cast<uInt>(n);
    at += n;
    const int flush = chunked ? Z_FULL_FLUSH : Z_FINISH;
    do {
      z.next_out = buf.data();
      z.avail_out = static_cast<uInt>(buf.size());
      deflate(&z, flush);
      out.insert(out.end(), buf.data(), buf.data() + (buf.size() - z.avail_out));
    } while (z.avail_out == 0);
  } while (at < data.size());
  deflateEnd(&z);
  if (chunked) {
    out.push_back(0x03);
    out.push_back(0x00);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader rd{data, size};
  const std::uint8_t mode = rd.byte();
  Bytes stream;
  std::size_t cap;
  Bytes original;
  bool edited = false;
  if ((mode & 1) == 0) {
    cap = static_cast<std::size_t>(rd.le16()) * 16;
    stream.assign(data + rd.at, data + size);
  } else {
    static constexpr int kLevels[4] = {1, 6, 9, 0};
    const int level = kLevels[(mode >> 1) & 3];
    const bool chunked = (mode & 8) != 0;
    const std::size_t n = rd.le16();
    const std::size_t pattern_at = rd.at;
    original.resize(n);
    const std::size_t plen = size > pattern_at ? size - pattern_at : 0;
    for (std::size_t i = 0; i < n; ++i)
      original[i] = plen ? static_cast<std::uint8_t>(data[pattern_at + (i * 7 + i / 97) % plen] + (i / 1024))
                         : static_cast<std::uint8_t>(i);
    stream = compress(original, level, chunked);
    cap = n + (mode >> 4);
    const int edits = (mode >> 4) & 3;
    for (int e = 0; e < edits && !stream.empty(); ++e) {
      const std::size_t pos = (rd.le16() * 131u) % stream.size();
      const std::uint8_t x = rd.byte();
      stream[pos] ^= x;
      edited = edited || x != 0;
    }
    if ((mode & 0x40) && !stream.empty()) {
      stream.resize(rd.le16() % stream.size());
      edited = true;
    }
  }

  const Verdict a = run(stream, cap, 0x00, inf::ThreadWriter{});
  const Verdict b = run(stream, cap, 0xff, inf::WarpWriter{});
  FUZZ_ASSERT(a.r.status == b.r.status);
  FUZZ_ASSERT(a.r.out_size == b.r.out_size);
  FUZZ_ASSERT(a.r.in_used == b.r.in_used);
  FUZZ_ASSERT(a.r.end == b.r.end || a.r.status != inf::InflateStatus::ok);
  FUZZ_ASSERT(a.out == b.out);

  if ((mode & 1) && !edited) {
    FUZZ_ASSERT(a.r.status == inf::InflateStatus::ok);
    FUZZ_ASSERT(a.r.end == inf::InflateEnd::final_block);
    FUZZ_ASSERT(a.out == original);
  }

  Bytes z;
  const int rc = zlib_inflate(stream, cap, &z);
  if (rc == Z_STREAM_END && z.size() <= cap) {
    FUZZ_ASSERT(a.r.status == inf::InflateStatus::ok);
    FUZZ_ASSERT(a.r.end == inf::InflateEnd::final_block);
    FUZZ_ASSERT(a.out == z);
  }
  if (a.r.status == inf::InflateStatus::ok && a.r.end == inf::InflateEnd::final_block) {
    FUZZ_ASSERT(rc == Z_STREAM_END);
    FUZZ_ASSERT(a.out == z);
  }
  return 0;
}
