// zstd frames through libzstd's streaming API (tandem/zstd.hpp).
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "tandem/zstd.hpp"

namespace tandem {

namespace {

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// libzstd's error for a frame, in the library's codes.
Status zstd_error(std::size_t code) {
  switch (ZSTD_getErrorCode(code)) {
    case ZSTD_error_checksum_wrong:
      return {StatusCode::checksum_mismatch, "zstd: content checksum mismatch"};
    case ZSTD_error_memory_allocation:
      return {StatusCode::out_of_memory, "zstd: out of memory"};
    case ZSTD_error_frameParameter_windowTooLarge:
      return {StatusCode::unsupported, "zstd: window larger than 128 MiB"};
    default:
      return {StatusCode::bad_data, "zstd: malformed frame"};
  }
}

}  // namespace

Status zstd_compress_stream(Source& in, Sink& out, const ZstdOptions& options, StreamStats* stats) {
  if (options.level < 1 || options.level > ZSTD_maxCLevel()) {
    return {StatusCode::invalid_argument, "zstd level out of range"};
  }
  std::unique_ptr<ZSTD_CCtx, CCtxFree> c(ZSTD_createCCtx());
  if (!c) return {StatusCode::out_of_memory, "zstd: out of memory"};
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, options.level);
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_checksumFlag, options.checksum ? 1 : 0);
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A libzstd built without threads refuses workers: it then compresses on this thread.
  if (threads > 1) ZSTD_CCtx_setParameter(c.get(), ZSTD_c_nbWorkers, threads);
  if (in.size_hint() >= 0) ZSTD_CCtx_setPledgedSrcSize(c.get(), static_cast<unsigned long long>(in.size_hint()));
  const std::uint64_t out_start = out.position(), in_start = in.position();
  const std::size_t want = ZSTD_CStreamInSize();
  for (;;) {
    std::size_t avail = 0;
    if (Status s = in.ensure(want, &avail); !s) return s;
    const bool last = avail < want;  // ensure gives fewer only at the end
    ZSTD_inBuffer src{in.data(), avail, 0};
    std::size_t left = 0;
    do {
      std::uint8_t* room = nullptr;
      const std::size_t cap = ZSTD_CStreamOutSize();
      if (Status s = out.reserve(cap, &room); !s) return s;
      ZSTD_outBuffer dst{room, cap, 0};
      left = ZSTD_compressStream2(c.get(), &dst, &src, last ? ZSTD_e_end : ZSTD_e_continue);
      if (ZSTD_isError(left)) {
        switch (ZSTD_getErrorCode(left)) {
          case ZSTD_error_srcSize_wrong:
            return {StatusCode::invalid_argument, "zstd: the input's size changed while it was read"};
          case ZSTD_error_memory_allocation:
            return {StatusCode::out_of_memory, "zstd: out of memory"};
          default:
            return {StatusCode::invalid_argument, "zstd: libzstd refused to compress"};
        }
      }
      if (Status s = out.commit(dst.pos); !s) return s;
    } while (last ? left != 0 : src.pos < src.size);
    in.consume(src.pos);
    if (options.progress) options.progress(in.position() - in_start, out.position() - out_start);
    if (last) break;
  }
  if (stats) {
    stats->bytes_in = in.position() - in_start;
    stats->bytes_out = out.position() - out_start;
    stats->frames = 1;
  }
  return {};
}

Status zstd_decompress_stream(Source& in, Sink& out, const ZstdDecodeOptions& options, StreamStats* stats) {
  std::unique_ptr<ZSTD_DCtx, DCtxFree> d(ZSTD_createDCtx());
  if (!d) return {StatusCode::out_of_memory, "zstd: out of memory"};
  const std::uint64_t out_start = out.position(), in_start = in.position();
  std::uint64_t frames = 0, written = 0;
  bool open = false;      // libzstd is inside a frame (or its header): more input or output to come
  bool counted = false;   // that frame is a zstd frame (not a skippable one)
  bool any = false;
  // One call of libzstd on src; false with *status set on an error.
  const auto step = [&](ZSTD_inBuffer* src, std::size_t* produced, Status* status) {
    if (!open) {
      const std::size_t left = src->size - src->pos;
      const auto* p = static_cast<const std::uint8_t*>(src->src) + src->pos;
      counted = left >= 4 && (p[0] | p[1] << 8 | p[2] << 16 | static_cast<std::uint32_t>(p[3]) << 24) == ZSTD_MAGICNUMBER;
    }
    std::uint8_t* room = nullptr;
    const std::size_t cap = ZSTD_DStreamOutSize();
    if (Status s = out.reserve(cap, &room); !s) {
      *status = s;
      return false;
    }
    ZSTD_outBuffer dst{room, cap, 0};
    const std::size_t hint = ZSTD_decompressStream(d.get(), &dst, src);
    if (ZSTD_isError(hint)) {
      *status = zstd_error(hint);
      return false;
    }
    written += dst.pos;
    if (written > options.max_output) {
      *status = {StatusCode::output_limit, "zstd: output over the limit"};
      return false;
    }
    if (Status s = out.commit(dst.pos); !s) {
      *status = s;
      return false;
    }
    *produced = dst.pos;
    if (hint == 0) {  // a frame ended
      if (counted) ++frames;
      open = false;
    } else {
      open = true;
    }
    return true;
  };
  Status status;
  for (;;) {
    std::size_t avail = 0;
    if (Status s = in.ensure(ZSTD_DStreamInSize(), &avail); !s) return s;
    if (avail == 0) break;
    any = true;
    ZSTD_inBuffer src{in.data(), avail, 0};
    std::size_t produced = 0;
    // Until the input is taken and the output it gave is out (a full output
    // buffer may leave more of an unfinished frame inside libzstd).
    do {
      if (!step(&src, &produced, &status)) return status;
    } while (src.pos < src.size || (open && produced == ZSTD_DStreamOutSize()));
    in.consume(src.pos);
    if (options.progress) options.progress(in.position() - in_start, out.position() - out_start);
  }
  if (!any) return {StatusCode::bad_data, "zstd: no frame"};
  if (open) return {StatusCode::truncated, "zstd: the input ends inside a frame"};
  if (stats) {
    stats->bytes_in = in.position() - in_start;
    stats->bytes_out = out.position() - out_start;
    stats->frames = frames;
  }
  return {};
}

}  // namespace tandem
