// Fuzz target: the zstd stream reader (tandem/zstd.hpp), on inputs taken as
// they are and on frames written here with edits.
//
// Input: a first byte; bit 0 picks the mode, bits 1-3 the output limit.
//   raw:     the rest of the input is read as zstd frames.
//   edited:  the next bytes pick a level and a content (a run, text-like
//            bytes or the input's own bytes); the frame libzstd writes for
//            it must read back to the content; then byte edits and a cut
//            apply.
// The input sits in an allocation of exactly its size (ASan sees a read past
// it).
//
// Properties: no crash; every status is ok, bad_data, truncated,
// checksum_mismatch, unsupported or output_limit, with a reason; the output
// never passes the limit; an ok read equals libzstd's own decoding of the
// same bytes, and counts the input's every byte.
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "tandem/zstd.hpp"

namespace {

using tandem::StatusCode;
using Bytes = std::vector<std::uint8_t>;

// libzstd's decoding of every frame of p[0, n), or false where it fails.
bool reference(const std::uint8_t* p, std::size_t n, std::uint64_t limit, Bytes* out) {
  out->clear();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_inBuffer in{p, n, 0};
  std::size_t hint = 0;
  Bytes room(ZSTD_DStreamOutSize());
  bool ok = true;
  for (;;) {
    ZSTD_outBuffer o{room.data(), room.size(), 0};
    hint = ZSTD_decompressStream(d, &o, &in);
    if (ZSTD_isError(hint)) {
      ok = false;
      break;
    }
    out->insert(out->end(), room.begin(), room.begin() + static_cast<std::ptrdiff_t>(o.pos));
    if (out->size() > limit) {
      ok = false;
      break;
    }
    if (in.pos == in.size && o.pos < o.size) break;
  }
  ZSTD_freeDCtx(d);
  return ok && hint == 0 && n > 0;
}

void check(const std::uint8_t* data, std::size_t size, std::uint64_t limit) {
  std::unique_ptr<std::uint8_t[]> exact(new std::uint8_t[size ? size : 1]);
  if (size) std::memcpy(exact.get(), data, size);
  Bytes out;
  auto src = tandem::memory_source({exact.get(), size});
  auto sink = tandem::vector_sink(&out);
  tandem::ZstdDecodeOptions o;
  o.max_output = limit;
  tandem::StreamStats stats;
  tandem::Status s = tandem::zstd_decompress_stream(*src, *sink, o, &stats);
  if (s.ok()) s = sink->flush();
  sink.reset();
  FUZZ_ASSERT(s.code == StatusCode::ok || s.code == StatusCode::bad_data || s.code == StatusCode::truncated ||
              s.code == StatusCode::checksum_mismatch || s.code == StatusCode::unsupported ||
              s.code == StatusCode::output_limit);
  FUZZ_ASSERT(s.ok() || s.reason != nullptr);
  FUZZ_ASSERT(out.size() <= limit);
  if (s.ok()) {
    Bytes want;
    FUZZ_ASSERT(reference(exact.get(), size, limit, &want));
    FUZZ_ASSERT(out == want);
    FUZZ_ASSERT(stats.bytes_in == size && stats.bytes_out == out.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    check(data, 0, 1u << 20);
    return 0;
  }
  const std::uint64_t limit = std::uint64_t{1} << (10 + 2 * ((data[0] >> 1) & 7));
  if (!(data[0] & 1)) {
    check(data + 1, size - 1, limit);
    return 0;
  }
  fuzz::Reader r{data + 1, size - 1};
  const int level = 1 + r.byte() % 19;
  const std::size_t n = r.le(2) % 20000;
  Bytes content(n);
  const std::uint8_t kind = r.byte() % 3;
  for (std::size_t i = 0; i < n; ++i) {
    content[i] = kind == 0 ? 'a' : kind == 1 ? static_cast<std::uint8_t>("the cat sat "[i % 12]) : data[i % size];
  }
  Bytes frame(ZSTD_compressBound(n));
  const std::size_t m = ZSTD_compress(frame.data(), frame.size(), content.data(), n, level);
  FUZZ_ASSERT(!ZSTD_isError(m));
  frame.resize(m);
  Bytes back;
  FUZZ_ASSERT(reference(frame.data(), frame.size(), UINT64_MAX, &back) && back == content);
  r.edit(&frame);
  if (const std::uint8_t cut = r.byte(); cut & 1) frame.resize(frame.size() - (cut >> 1) % frame.size());
  check(frame.data(), frame.size(), limit);
  return 0;
}
