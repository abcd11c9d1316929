// The archive scanner on the CPU; see tandem/scan.hpp.
#include "tandem/scan.hpp"

#include <libdeflate.h>
#include <zstd.h>

#include <cstring>
#include <memory>
#include <span>

#include "codec/scan_walk.hpp"
#include "common/thread_pool.hpp"
#include "cpu/deflate_cpu.hpp"
#include "format/deflate_index.hpp"
#include "format/tar_format.hpp"
#include "tandem/deflate.hpp"
#include "tandem/zip.hpp"

namespace tandem {

namespace scan_detail {

std::string without_suffix(std::string_view name, Layer layer) {
  const auto ends = [&](std::string_view s) { return name.size() > s.size() && name.ends_with(s); };
  if (layer == Layer::gzip) {
    if (ends(".tgz")) return std::string(name.substr(0, name.size() - 4)) + ".tar";
    if (ends(".gz")) return std::string(name.substr(0, name.size() - 3));
  }
  if (layer == Layer::lz4 && ends(".lz4")) return std::string(name.substr(0, name.size() - 4));
  if (layer == Layer::zstd) {
    if (ends(".tzst")) return std::string(name.substr(0, name.size() - 5)) + ".tar";
    if (ends(".zst")) return std::string(name.substr(0, name.size() - 4));
  }
  return std::string(name);
}

namespace {

// Every frame of `in` (zstd and skippable frames, concatenated) by
// libzstd into *out, up to `allowed` bytes.
Status decompress_zstd(std::span<const std::uint8_t> in, std::uint64_t allowed, std::vector<std::uint8_t>* out) {
  const std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  if (!dctx) return {StatusCode::out_of_memory, "zstd decoder"};
  out->clear();
  std::vector<std::uint8_t> chunk(ZSTD_DStreamOutSize());
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  std::size_t pending = 0;  // not 0 while a frame is unfinished
  for (;;) {
    ZSTD_outBuffer dst{chunk.data(), chunk.size(), 0};
    pending = ZSTD_decompressStream(dctx.get(), &dst, &src);
    if (ZSTD_isError(pending)) return {StatusCode::bad_data, ZSTD_getErrorName(pending)};
    if (dst.pos > allowed - out->size()) return {StatusCode::output_limit, "zstd output over the limit"};
    out->insert(out->end(), chunk.data(), chunk.data() + dst.pos);
    // All input taken, and the last frame ended or all output flushed. (A
    // frame whose content ends exactly at the end of `chunk` ends with a
    // full chunk and 0; another call would start a frame and want its header.)
    if (src.pos == src.size && (pending == 0 || dst.pos < dst.size)) break;
  }
  if (pending != 0) return {StatusCode::truncated, "zstd frame cut short"};
  return {};
}

// The size a gzip input of one member gives in its trailer, as package
// tarballs are, for one call of libdeflate into a buffer of that size; 0
// for anything else (several members, tandem's chunk index, a malformed
// header), which deflate_decompress decodes and gives its status.
std::uint32_t one_member_size(std::span<const std::uint8_t> in) {
  format::GzipHeader h;
  if (in.size() < format::kGzipTrailerSize || !format::parse_gzip_header(in.data(), in.size(), &h) || h.has_index) {
    return 0;
  }
  std::uint32_t crc = 0, isize = 0;
  format::read_gzip_trailer(in.data() + in.size() - format::kGzipTrailerSize, &crc, &isize);
  return isize;
}

// Whether the member decodes to exactly out[0, size) with all its input (the
// thread's decompressor).
bool gunzip_into(std::span<const std::uint8_t> in, std::uint8_t* out, std::size_t size) {
  libdeflate_decompressor* const d = deflate_cpu::decompressor();
  if (!d) return false;
  std::size_t used = 0, got = 0;
  const libdeflate_result r = libdeflate_gzip_decompress_ex(d, in.data(), in.size(), out, size, &used, &got);
  return r == LIBDEFLATE_SUCCESS && used == in.size() && got == size;
}

}  // namespace

Status decompress_cpu(Layer kind, std::span<const std::uint8_t> in, std::uint64_t allowed,
                      std::vector<std::uint8_t>* out) {
  if (kind == Layer::gzip) {
    const std::uint32_t size = one_member_size(in);
    if (size != 0 && size <= allowed) {
      out->resize(size);
      if (gunzip_into(in, out->data(), size)) return {};
      out->clear();
    }
    DeflateDecodeOptions o;
    o.container = DeflateContainer::gzip;
    o.threads = 1;
    o.max_output = allowed;
    return deflate_decompress({in.data(), in.size()}, out, o);
  }
  if (kind == Layer::zstd) return decompress_zstd(in, allowed, out);
  Lz4DecodeOptions o;
  o.threads = 1;
  o.backend = Backend::cpu;
  o.max_output = allowed;
  return lz4_frame_decompress({in.data(), in.size()}, out, o);
}

bool decompress_cpu_into(Layer kind, std::span<const std::uint8_t> in, std::uint8_t* out, std::uint64_t size) {
  return kind == Layer::gzip && size != 0 && one_member_size(in) == size && gunzip_into(in, out, size);
}

}  // namespace scan_detail

namespace {

using namespace scan_detail;

class Scanner {
 public:
  Scanner(const ScanLimits& limits, ScanResult* result) : limits_(limits), result_(result), budget_(limits) {}

  Status walk(std::span<const std::uint8_t> data, const std::string& path, const std::string& codec, int layer,
              int depth) {
    const Layer kind = layer_of(data.data(), data.size());
    if (kind != Layer::file && depth > limits_.max_depth) {
      return add(path, codec, layer, {}, kDepthStatus);
    }
    switch (kind) {
      case Layer::gzip:
      case Layer::lz4:
      case Layer::zstd: {
        std::vector<std::uint8_t> inner;
        const char* name = layer_name(kind);
        const Status s = decompress(kind, data, &inner);
        if (!s) return add(path, join(codec, name), layer, {}, s);
        return walk(inner, without_suffix(path, kind), join(codec, name), layer, depth + 1);
      }
      case Layer::zip: return walk_zip(data, path, codec, layer, depth);
      case Layer::tar: return walk_tar(data, path, codec, layer, depth);
      case Layer::file: break;
    }
    return add(path, codec.empty() ? "stored" : codec, layer, data, {});
  }

 private:
  std::uint64_t left() const { return budget_.left(); }
  std::uint64_t budget(std::size_t input) const { return budget_.budget(input); }
  Status over_limits(Status s, std::uint64_t allowed) const { return budget_.over_limits(s, allowed); }

  Status decompress(Layer kind, std::span<const std::uint8_t> in, std::vector<std::uint8_t>* out) {
    const std::uint64_t allowed = budget(in.size());
    const Status s = decompress_cpu(kind, in, allowed, out);
    if (s) budget_.produced += out->size();
    return over_limits(s, allowed);
  }

  Status walk_zip(std::span<const std::uint8_t> data, const std::string& path, const std::string& codec, int layer,
                  int depth) {
    std::vector<zip::Entry> entries;
    zip::ReadLimits rl;
    rl.max_entries = limits_.max_entries;
    if (Status s = zip::read_directory(data, &entries, rl); !s) return add(path, join(codec, "zip"), layer, {}, s);
    for (const zip::Entry& e : entries) {
      if (e.is_directory() || e.is_symlink()) continue;
      const std::string member = member_path(path, e.name);
      const std::string how = join(codec, e.method == zip::kDeflate ? "zip:deflate" : "zip:stored");
      std::vector<std::uint8_t> bytes;
      const std::uint64_t allowed = e.method == zip::kStored ? e.size : budget(e.compressed_size);
      Status s = zip::extract(data, e, &bytes, allowed);
      if (s && e.method != zip::kStored) budget_.produced += bytes.size();
      s = over_limits(s, allowed);
      if (!s) {
        if (Status a = add(member, how, layer + 1, {}, s); !a) return a;
        continue;
      }
      if (Status w = walk(bytes, member, how, layer + 1, depth + 1); !w) return w;
    }
    return {};
  }

  Status walk_tar(std::span<const std::uint8_t> data, const std::string& path, const std::string& codec, int layer,
                  int depth) {
    std::vector<tar::Entry> entries;
    tar::Limits tl;
    tl.max_entries = limits_.max_entries;
    const Status s = tar::parse(data.data(), data.size(), &entries, tl);
    for (const tar::Entry& e : entries) {
      if (e.kind != tar::Kind::file) continue;
      const auto bytes = data.subspan(static_cast<std::size_t>(e.data_at), static_cast<std::size_t>(e.size));
      if (Status w = walk(bytes, member_path(path, e.path), join(codec, "tar"), layer + 1, depth + 1); !w) return w;
    }
    // The members before a failure are listed; the failure is the archive's.
    if (!s) return add(path, join(codec, "tar"), layer, {}, s);
    return {};
  }

  Status add(const std::string& path, const std::string& codec, int layer, std::span<const std::uint8_t> bytes,
             Status status) {
    if (result_->entries.size() >= limits_.max_entries) {
      return kEntriesStatus;
    }
    ScanEntry e;
    e.path = path;
    e.layer = layer;
    e.codec = codec;
    e.status = status;
    e.offset = result_->bytes.size();
    if (status) {
      e.size = bytes.size();
      result_->bytes.insert(result_->bytes.end(), bytes.begin(), bytes.end());
    }
    result_->entries.push_back(std::move(e));
    return {};
  }

  const ScanLimits& limits_;
  ScanResult* result_;
  Budget budget_;
};

}  // namespace

Status scan(ConstBuffer archive, std::string_view name, const ScanLimits& limits, ScanResult* result) {
  if (!result || (!archive.data && archive.size)) return {StatusCode::invalid_argument, "null buffer"};
  result->bytes.clear();
  result->entries.clear();
  Scanner s(limits, result);
  const std::span<const std::uint8_t> data(static_cast<const std::uint8_t*>(archive.data), archive.size);
  return s.walk(data, std::string(name), "", 0, 0);
}

Status scan_many(std::span<const ScanInput> archives, const ScanLimits& limits, unsigned threads,
                 std::vector<ScanResult>* results) {
  if (!results) return {StatusCode::invalid_argument, "null result"};
  results->clear();
  results->resize(archives.size());
  std::vector<Status> status(archives.size());
  const int t = detail::effective_threads(static_cast<int>(std::min<unsigned>(threads, 1u << 16)));
  detail::parallel_for(archives.size(), t, [&](std::size_t i) {
    status[i] = scan(archives[i].archive, archives[i].name, limits, &(*results)[i]);
  });
  for (const Status& s : status) {
    if (!s) return s;
  }
  return {};
}

}  // namespace tandem
