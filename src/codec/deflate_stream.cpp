// Deflate, zlib and gzip streams on the CPU; see tandem/deflate.hpp.
//
// Compression reads the input in batches of chunks, compresses a batch's
// chunks in parallel (deflate_cpu::compress_chunk), and writes them in order,
// with the running CRC-32 or Adler-32 combined from the chunks' own. A gzip
// member with an index keeps its compressed chunks until the input ends,
// since the index goes in the header; once the index could no longer fit in
// FEXTRA, the header goes out without it and the rest streams.
//
// Decompression, member by member:
//   indexed gzip member (a 'TD' subfield)  its chunks in batches, in parallel
//   BGZF members (a 'BC' subfield)          a batch of whole members in parallel
//   anything else                           zlib's streaming inflate
// and the checksums of each member, its trailer, what follows it.
#include "tandem/deflate.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "common/thread_pool.hpp"
#include "cpu/deflate_cpu.hpp"
#include "format/deflate_index.hpp"

namespace tandem {

namespace {

using format::DeflateIndex;

constexpr std::size_t kStreamBatchBytes = 8u << 20;  // a batch read from a stream
constexpr std::size_t kInflateIn = 256u << 10;
constexpr std::size_t kInflateOut = 256u << 10;
constexpr std::size_t kMaxBgzfContent = 16u << 20;  // larger claimed ISIZEs go the streaming way
constexpr std::uint64_t kMaxInflateRatio = 1032;
constexpr std::uint64_t kBgzfBatchContent = 64u << 20;  // decoded bytes of one batch of BGZF members

bool valid_chunk_size(std::size_t c) {
  return c >= (std::size_t{1} << format::kDeflateMinChunkLog2) &&
         c <= (std::size_t{1} << format::kDeflateMaxChunkLog2) && (c & (c - 1)) == 0;
}

std::uint32_t log2_of(std::size_t c) {
  std::uint32_t l = 0;
  while ((std::size_t{1} << l) < c) ++l;
  return l;
}

std::uint8_t gzip_xfl(int level) { return level >= 9 ? 2 : level <= 1 ? 4 : 0; }

// Reserves up to `want` bytes, fewer when the sink has less room.
Status reserve_some(Sink& out, std::size_t want, std::uint8_t** room, std::size_t* got) {
  for (std::size_t n = want;; n = n > 4096 ? 4096 : 1) {
    const Status s = out.reserve(n, room);
    if (s) {
      *got = n;
      return s;
    }
    if (s.code != StatusCode::output_too_small || n == 1) return s;
  }
}

// --------------------------------------------------------- compression ----

class Compressor {
 public:
  Compressor(Source& in, Sink& out, const DeflateOptions& o) : in_(in), out_(out), o_(o) {}

  Status run(StreamStats* stats) {
    const int threads = detail::effective_threads(o_.threads);
    const std::size_t c = o_.chunk_size;
    const std::size_t batch = in_.stable() ? detail::max_batch_items(threads, c)
                                           : std::max(detail::batch_items(threads), kStreamBatchBytes / c);
    holding_ = o_.container == DeflateContainer::gzip && o_.index;
    index_.chunk_log2 = log2_of(c);
    if (holding_ && o_.rewrite_header && in_.size_hint() >= 0) {
      // Room for the index of the announced size, every entry at its bound.
      const std::uint64_t chunks = (static_cast<std::uint64_t>(in_.size_hint()) + c - 1) / c;
      const std::uint64_t most = 2 + format::varint_size(chunks) +
                                 chunks * format::varint_size(format::deflate_chunk_bound(index_.chunk_log2));
      if (most + 8 <= 0xffff) {
        holding_ = false;
        max_chunks_ = chunks;
        extra_size_ = static_cast<std::size_t>(most + 8);
      }
    }
    if (!holding_) {
      if (Status s = write_header(nullptr); !s) return s;
    }
    std::vector<std::vector<std::uint8_t>> parts(batch);
    std::vector<std::uint32_t> sums(batch);
    std::vector<std::size_t> sizes(batch);
    std::vector<Status> statuses(batch);
    for (;;) {
      std::size_t avail = 0;
      if (Status s = in_.ensure(batch * c, &avail); !s) return s;
      if (avail == 0) break;
      avail = std::min(avail, batch * c);  // a memory source offers all it has
      const std::uint8_t* data = in_.data();
      const std::size_t count = (avail + c - 1) / c;
      detail::parallel_for(count, threads, [&](std::size_t i) {
        const std::size_t n = std::min(c, avail - i * c);
        const std::uint8_t* p = data + i * c;
        sizes[i] = n;
        statuses[i] = deflate_cpu::compress_chunk(p, n, o_.level, &parts[i]);
        if (o_.container == DeflateContainer::gzip) sums[i] = deflate_cpu::crc32(0, p, n);
        if (o_.container == DeflateContainer::zlib) sums[i] = deflate_cpu::adler32(1, p, n);
      });
      for (std::size_t i = 0; i < count; ++i) {
        if (!statuses[i]) return statuses[i];
        crc_ = deflate_cpu::crc32_combine(crc_, sums[i], sizes[i]);
        adler_ = deflate_cpu::adler32_combine(adler_, sums[i], sizes[i]);
        if (Status s = emit(std::move(parts[i])); !s) return s;
        parts[i] = {};
      }
      in_.consume(avail);
      bytes_in_ += avail;
      if (o_.progress) o_.progress(bytes_in_, bytes_out_ + held_bytes_);
    }
    if (holding_) {
      if (Status s = write_header(&index_); !s) return s;
      for (auto& part : held_) {
        if (Status s = put(part.data(), part.size()); !s) return s;
        part = {};
      }
    }
    if (Status s = put(format::kDeflateEnd, sizeof format::kDeflateEnd); !s) return s;
    if (o_.container == DeflateContainer::gzip) {
      std::uint8_t trailer[format::kGzipTrailerSize];
      format::write_gzip_trailer(crc_, static_cast<std::uint32_t>(bytes_in_), trailer);
      if (Status s = put(trailer, sizeof trailer); !s) return s;
    } else if (o_.container == DeflateContainer::zlib) {
      std::uint8_t trailer[4];
      format::write_be32(adler_, trailer);
      if (Status s = put(trailer, sizeof trailer); !s) return s;
    }
    if (extra_size_ && index_.compressed_sizes.size() <= max_chunks_) {
      std::vector<std::uint8_t> header;
      if (Status s = header_bytes(&index_, &header); !s) return s;
      if (header.size() != header_size_) return {StatusCode::invalid_argument, "rewritten gzip header size"};
      if (Status s = out_.flush(); !s) return s;
      if (Status s = o_.rewrite_header(header.data(), header.size()); !s) return s;
    }
    if (stats) {
      stats->bytes_in = bytes_in_;
      stats->bytes_out = bytes_out_;
      stats->frames = 1;
    }
    return {};
  }

 private:
  Status put(const std::uint8_t* p, std::size_t n) {
    if (n == 0) return {};
    bytes_out_ += n;
    return out_.write(p, n);
  }

  Status header_bytes(const DeflateIndex* index, std::vector<std::uint8_t>* header) {
    if (o_.container == DeflateContainer::gzip) {
      format::GzipHeaderFields f;
      f.mtime = o_.mtime;
      f.xfl = gzip_xfl(o_.level);
      f.name = o_.name;
      f.index = index;
      f.extra_size = extra_size_;
      if (!format::write_gzip_header(f, header)) return {StatusCode::invalid_argument, "gzip header"};
    } else if (o_.container == DeflateContainer::zlib) {
      header->resize(format::kZlibHeaderSize);
      format::write_zlib_header(o_.level, header->data());
    }
    return {};
  }

  Status write_header(const DeflateIndex* index) {
    std::vector<std::uint8_t> header;
    if (Status s = header_bytes(index, &header); !s) return s;
    header_size_ = header.size();
    return put(header.data(), header.size());
  }

  // One compressed chunk, in order: held for the index, or written.
  Status emit(std::vector<std::uint8_t> part) {
    if (extra_size_) index_.compressed_sizes.push_back(part.size());
    if (holding_) {
      index_bytes_ += format::varint_size(part.size());
      // Version, log2, and a count of at most 5 varint bytes, in a subfield of
      // at most 65535 - 4 bytes.
      if (index_bytes_ + 2 + 5 + 4 <= 0xffff) {
        index_.compressed_sizes.push_back(part.size());
        held_bytes_ += part.size();
        held_.push_back(std::move(part));
        return {};
      }
      // The index no longer fits: the member goes without it.
      holding_ = false;
      if (Status s = write_header(nullptr); !s) return s;
      for (auto& h : held_) {
        if (Status s = put(h.data(), h.size()); !s) return s;
      }
      held_.clear();
      held_bytes_ = 0;
    }
    return put(part.data(), part.size());
  }

  Source& in_;
  Sink& out_;
  const DeflateOptions& o_;
  bool holding_ = false;
  DeflateIndex index_;
  std::size_t index_bytes_ = 0;
  // A header with room for the index, rewritten at the end (rewrite_header).
  std::size_t extra_size_ = 0;
  std::uint64_t max_chunks_ = 0;
  std::size_t header_size_ = 0;
  std::vector<std::vector<std::uint8_t>> held_;
  std::uint64_t held_bytes_ = 0;
  std::uint32_t crc_ = 0;
  std::uint32_t adler_ = 1;
  std::uint64_t bytes_in_ = 0, bytes_out_ = 0;
};

// ------------------------------------------------------- decompression ----

class Decompressor {
 public:
  Decompressor(Source& in, Sink& out, const DeflateDecodeOptions& o)
      : in_(in), out_(out), o_(o), threads_(detail::effective_threads(o.threads)) {}

  Status run(StreamStats* stats, DeflateStats* dstats) {
    const std::uint64_t start = in_.position();
    Status s = dispatch();
    if (stats) {
      stats->bytes_in = in_.position() - start;
      stats->bytes_out = produced_;
      stats->frames = dstats_.members;
    }
    if (dstats) *dstats = dstats_;
    return s;
  }

 private:
  Status dispatch() {
    if (!inflater_.ok()) return {StatusCode::out_of_memory, "zlib inflater"};
    DeflateContainer c = o_.container;
    if (c == DeflateContainer::detect) {
      std::size_t avail = 0;
      if (Status s = in_.ensure(2, &avail); !s) return s;
      if (avail == 0) return {StatusCode::truncated, "empty input"};
      const std::uint8_t* p = in_.data();
      if (avail >= 2 && p[0] == format::kGzipId1 && p[1] == format::kGzipId2) {
        c = DeflateContainer::gzip;
      } else if (avail >= 2 && format::is_zlib_header(p[0], p[1])) {
        c = DeflateContainer::zlib;
      } else {
        c = DeflateContainer::raw;
      }
    }
    switch (c) {
      case DeflateContainer::gzip: return gzip();
      case DeflateContainer::zlib: return zlib();
      case DeflateContainer::raw: return raw();
      default: return {StatusCode::invalid_argument, "unknown container"};
    }
  }

  // Writes produced bytes, within the output limit.
  Status emit(const std::uint8_t* p, std::size_t n) {
    if (n > o_.max_output - produced_) return {StatusCode::output_limit, "output exceeds the limit"};
    produced_ += n;
    return out_.write(p, n);
  }

  void progress() {
    if (o_.progress) o_.progress(in_.position(), produced_);
  }

  // Streams one raw deflate stream from the source; the checksum of its
  // output (CRC-32 or Adler-32) goes to *sum, its size to *size.
  Status inflate_stream(bool adler, std::uint32_t* sum, std::uint64_t* size) {
    inflater_.reset();
    std::uint32_t check = adler ? 1 : 0;
    std::uint64_t total = 0;
    bool finished = false;
    while (!finished) {
      std::size_t avail = 0;
      if (Status s = in_.ensure(kInflateIn, &avail); !s) return s;
      std::uint8_t* room = nullptr;
      std::size_t room_size = 0;
      if (Status s = reserve_some(out_, kInflateOut, &room, &room_size); !s) return s;
      std::size_t used = avail, got = room_size;
      if (Status s = inflater_.step(in_.data(), &used, room, &got, &finished); !s) return s;
      if (got > o_.max_output - produced_) return {StatusCode::output_limit, "output exceeds the limit"};
      if (o_.verify_checksums && got) check = adler ? deflate_cpu::adler32(check, room, got) : deflate_cpu::crc32(check, room, got);
      if (Status s = out_.commit(got); !s) return s;
      produced_ += got;
      total += got;
      in_.consume(used);
      if (!finished && used == 0 && got == 0) {
        if (avail < kInflateIn) return {StatusCode::truncated, "deflate stream cut short"};
        return {StatusCode::bad_data, "deflate stream makes no progress"};
      }
      progress();
    }
    *sum = check;
    *size = total;
    return {};
  }

  Status raw() {
    dstats_.members = 1;
    std::uint32_t sum = 0;
    std::uint64_t size = 0;
    if (Status s = inflate_stream(false, &sum, &size); !s) return s;
    return expect_end("data after the deflate stream");
  }

  Status zlib() {
    dstats_.members = 1;
    std::size_t avail = 0;
    if (Status s = in_.ensure(format::kZlibHeaderSize, &avail); !s) return s;
    if (Status s = format::parse_zlib_header(in_.data(), avail); !s) return s;
    in_.consume(format::kZlibHeaderSize);
    std::uint32_t sum = 0;
    std::uint64_t size = 0;
    if (Status s = inflate_stream(true, &sum, &size); !s) return s;
    if (Status s = in_.ensure(format::kZlibTrailerSize, &avail); !s) return s;
    if (avail < format::kZlibTrailerSize) return {StatusCode::truncated, "zlib trailer cut short"};
    if (o_.verify_checksums && format::read_be32(in_.data()) != sum) {
      return {StatusCode::checksum_mismatch, "Adler-32 mismatch"};
    }
    in_.consume(format::kZlibTrailerSize);
    return expect_end("data after the zlib stream");
  }

  Status expect_end(const char* reason) {
    std::size_t avail = 0;
    if (Status s = in_.ensure(1, &avail); !s) return s;
    if (avail != 0) return {StatusCode::bad_data, reason};
    return {};
  }

  // Reads the member header at the source's position (not consumed).
  Status read_gzip_header(format::GzipHeader* h) {
    std::size_t want = 512;
    for (;;) {
      std::size_t avail = 0;
      if (Status s = in_.ensure(want, &avail); !s) return s;
      const Status s = format::parse_gzip_header(in_.data(), avail, h, o_.verify_checksums);
      if (s.code != StatusCode::truncated || avail < want) return s;
      want *= 2;
    }
  }

  Status gzip() {
    for (bool first = true;; first = false) {
      std::size_t avail = 0;
      if (Status s = in_.ensure(2, &avail); !s) return s;
      if (!first) {
        if (avail == 0) return {};
        if (in_.data()[0] != format::kGzipId1 || (avail >= 2 && in_.data()[1] != format::kGzipId2)) {
          return trailing_zeros();
        }
      }
      format::GzipHeader h;
      if (Status s = read_gzip_header(&h); !s) return s;
      Status s;
      if (h.has_bgzf && bgzf_batch(&s)) {
        if (!s) return s;
        continue;
      }
      in_.consume(h.size);
      ++dstats_.members;
      s = h.has_index ? indexed_member(h.index) : streamed_member();
      if (!s) return s;
      progress();
    }
  }

  // gzip ignores zero bytes after the last member (padding of tapes and
  // blocks); anything else is an error.
  Status trailing_zeros() {
    for (;;) {
      std::size_t avail = 0;
      if (Status s = in_.ensure(kInflateIn, &avail); !s) return s;
      if (avail == 0) return {};
      const std::uint8_t* p = in_.data();
      if (std::any_of(p, p + avail, [](std::uint8_t b) { return b != 0; })) {
        return {StatusCode::bad_data, "data after the last gzip member"};
      }
      in_.consume(avail);
    }
  }

  Status check_trailer(std::uint32_t crc, std::uint64_t size) {
    std::size_t avail = 0;
    if (Status s = in_.ensure(format::kGzipTrailerSize, &avail); !s) return s;
    if (avail < format::kGzipTrailerSize) return {StatusCode::truncated, "gzip trailer cut short"};
    std::uint32_t stored_crc = 0, isize = 0;
    format::read_gzip_trailer(in_.data(), &stored_crc, &isize);
    if (o_.verify_checksums) {
      if (stored_crc != crc) return {StatusCode::checksum_mismatch, "CRC-32 mismatch"};
      if (isize != static_cast<std::uint32_t>(size)) return {StatusCode::checksum_mismatch, "ISIZE mismatch"};
    }
    in_.consume(format::kGzipTrailerSize);
    return {};
  }

  Status streamed_member() {
    std::uint32_t crc = 0;
    std::uint64_t size = 0;
    if (Status s = inflate_stream(false, &crc, &size); !s) return s;
    return check_trailer(crc, size);
  }

  // A member with tandem's index: batches of chunks inflated in parallel.
  Status indexed_member(const DeflateIndex& index) {
    ++dstats_.indexed_members;
    const std::size_t c = std::size_t{1} << index.chunk_log2;
    const std::size_t n = index.compressed_sizes.size();
    // Two chunks per thread, at most 256 MiB of them (large chunks), and at
    // least 8 MiB (small ones).
    const std::size_t batch = std::max(kStreamBatchBytes / c,
                                       std::min(detail::batch_items(threads_), std::max<std::size_t>(1, (256u << 20) / c)));
    std::vector<std::size_t> produced(batch);
    std::vector<std::uint32_t> crcs(batch);
    std::vector<Status> statuses(batch);
    std::uint32_t crc = 0;
    std::uint64_t total = 0;
    for (std::size_t first = 0; first < n; first += batch) {
      const std::size_t count = std::min(batch, n - first);
      std::vector<std::size_t> offsets(count + 1, 0);
      for (std::size_t i = 0; i < count; ++i) {
        // Deflate yields at most 1032 bytes per input byte (a 258-byte match
        // in two bits): a chunk too small for its C bytes is a lie, refused
        // before C bytes of staging are taken for it.
        const bool last_chunk = first + i + 1 == n;
        if (!last_chunk && index.compressed_sizes[first + i] * kMaxInflateRatio + 1024 < c) {
          return {StatusCode::bad_data, "chunk index entry too small for its chunk"};
        }
        const std::uint64_t next = offsets[i] + index.compressed_sizes[first + i];
        if (next > SIZE_MAX / 2) return {StatusCode::bad_data, "chunk index sizes overflow"};
        offsets[i + 1] = static_cast<std::size_t>(next);
      }
      // Every chunk but the member's last yields exactly c bytes.
      const bool has_last = first + count == n;
      const std::uint64_t least = (count - 1) * std::uint64_t{c} + 1;
      if (least > o_.max_output - produced_) return {StatusCode::output_limit, "output exceeds the limit"};
      std::size_t avail = 0;
      if (Status s = in_.ensure(offsets[count], &avail); !s) return s;
      if (avail < offsets[count]) return {StatusCode::truncated, "gzip member cut short (indexed chunks)"};
      const std::uint8_t* data = in_.data();
      try {
        staging_.resize(count * c);
      } catch (const std::bad_alloc&) {
        return {StatusCode::out_of_memory, "inflate staging"};
      }
      detail::parallel_for(count, threads_, [&](std::size_t i) {
        std::uint8_t* dst = staging_.data() + i * c;
        statuses[i] = deflate_cpu::inflate_chunk(data + offsets[i], offsets[i + 1] - offsets[i], dst, c, &produced[i]);
        if (statuses[i] && o_.verify_checksums) crcs[i] = deflate_cpu::crc32(0, dst, produced[i]);
      });
      for (std::size_t i = 0; i < count; ++i) {
        if (!statuses[i]) return statuses[i];
        const bool last = has_last && i + 1 == count;
        if (!last && produced[i] != c) return {StatusCode::bad_data, "chunk shorter than the index's chunk size"};
        crc = deflate_cpu::crc32_combine(crc, crcs[i], produced[i]);
        if (Status s = emit(staging_.data() + i * c, produced[i]); !s) return s;
        total += produced[i];
      }
      in_.consume(offsets[count]);
      progress();
    }
    std::size_t avail = 0;
    if (Status s = in_.ensure(sizeof format::kDeflateEnd, &avail); !s) return s;
    if (avail < sizeof format::kDeflateEnd) return {StatusCode::truncated, "gzip member cut short (stream end)"};
    if (std::memcmp(in_.data(), format::kDeflateEnd, sizeof format::kDeflateEnd) != 0) {
      return {StatusCode::bad_data, "indexed stream does not end where its index says"};
    }
    in_.consume(sizeof format::kDeflateEnd);
    return check_trailer(crc, total);
  }

  // Consecutive whole BGZF members at the source's position, inflated in
  // parallel. False when the first is not a whole, plausible BGZF member
  // (it then goes the streaming way); else *status is the batch's outcome.
  bool bgzf_batch(Status* status) {
    struct Member {
      std::size_t offset, header, size;
      std::uint32_t crc, isize;
    };
    const std::size_t most = std::max<std::size_t>(detail::batch_items(threads_), 256);
    std::vector<Member> members;
    std::size_t offset = 0;
    std::uint64_t content = 0;
    while (members.size() < most) {
      std::size_t avail = 0;
      if (Status s = in_.ensure(offset + 65536 + format::kGzipTrailerSize, &avail); !s) {
        if (members.empty()) return false;
        break;
      }
      if (avail - offset < 2) break;
      format::GzipHeader h;
      const std::uint8_t* p = in_.data() + offset;
      if (!format::parse_gzip_header(p, avail - offset, &h, o_.verify_checksums) || !h.has_bgzf) break;
      const std::size_t size = h.bgzf_member_size;
      if (size < h.size + format::kGzipTrailerSize || size > avail - offset) break;
      std::uint32_t crc = 0, isize = 0;
      format::read_gzip_trailer(p + size - format::kGzipTrailerSize, &crc, &isize);
      // An ISIZE that its compressed bytes cannot yield, or a batch that
      // would hold too much, stops the batch (the streaming way then reads
      // what is left), so that a small file cannot claim large staging.
      const std::uint64_t body = size - h.size - format::kGzipTrailerSize;
      if (isize > kMaxBgzfContent || isize > body * kMaxInflateRatio + 1024) break;
      if (!members.empty() && content + isize > kBgzfBatchContent) break;
      members.push_back({offset, h.size, size, crc, isize});
      offset += size;
      content += isize;
    }
    if (members.empty()) return false;
    if (content > o_.max_output - produced_) {
      *status = {StatusCode::output_limit, "output exceeds the limit"};
      return true;
    }
    std::vector<std::size_t> out_offsets(members.size() + 1, 0);
    for (std::size_t i = 0; i < members.size(); ++i) out_offsets[i + 1] = out_offsets[i] + members[i].isize;
    try {
      staging_.resize(std::max<std::size_t>(1, out_offsets.back()));
    } catch (const std::bad_alloc&) {
      *status = {StatusCode::out_of_memory, "inflate staging"};
      return true;
    }
    const std::uint8_t* data = in_.data();
    std::vector<Status> statuses(members.size());
    detail::parallel_for(members.size(), threads_, [&](std::size_t i) {
      const Member& m = members[i];
      std::uint8_t* dst = staging_.data() + out_offsets[i];
      statuses[i] = deflate_cpu::inflate_exact(data + m.offset + m.header, m.size - m.header - format::kGzipTrailerSize,
                                              dst, m.isize);
      if (statuses[i] && o_.verify_checksums && deflate_cpu::crc32(0, dst, m.isize) != m.crc) {
        statuses[i] = {StatusCode::checksum_mismatch, "CRC-32 mismatch"};
      }
    });
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (!statuses[i]) {
        // With ISIZE taken at its word, a lying ISIZE shows as a size
        // mismatch; without verification the member is streamed instead.
        if (!o_.verify_checksums && statuses[i].code == StatusCode::checksum_mismatch) {
          in_.consume(members[i].offset);
          *status = Status{};
          if (i == 0) return false;
          return true;
        }
        *status = statuses[i];
        return true;
      }
      if (Status s = emit(staging_.data() + out_offsets[i], members[i].isize); !s) {
        *status = s;
        return true;
      }
      ++dstats_.members;
      ++dstats_.bgzf_members;
    }
    in_.consume(offset);
    progress();
    *status = Status{};
    return true;
  }

  Source& in_;
  Sink& out_;
  const DeflateDecodeOptions& o_;
  const int threads_;
  deflate_cpu::StreamInflater inflater_;
  std::vector<std::uint8_t> staging_;
  std::uint64_t produced_ = 0;
  DeflateStats dstats_;
};

}  // namespace

const char* deflate_container_name(DeflateContainer container) {
  switch (container) {
    case DeflateContainer::raw: return "raw";
    case DeflateContainer::zlib: return "zlib";
    case DeflateContainer::gzip: return "gzip";
    case DeflateContainer::detect: return "detect";
  }
  return "unknown";
}

std::uint64_t deflate_max_compressed_size(std::uint64_t input_size, const DeflateOptions& options) {
  const std::size_t c = valid_chunk_size(options.chunk_size) ? options.chunk_size : 64u << 10;
  const std::uint64_t chunks = (input_size + c - 1) / c;
  const std::uint64_t per_chunk = format::deflate_chunk_bound(log2_of(c));
  return chunks * per_chunk + 2 + 18 + 0xffff + options.name.size() + 1;
}

Status deflate_compress_stream(Source& in, Sink& out, const DeflateOptions& options, StreamStats* stats) {
  if (options.level < 0 || options.level > 12) return {StatusCode::invalid_argument, "deflate level outside 0..12"};
  if (!valid_chunk_size(options.chunk_size)) {
    return {StatusCode::invalid_argument, "deflate chunk size not a power of two in 4 KiB .. 64 MiB"};
  }
  if (options.container == DeflateContainer::detect) return {StatusCode::invalid_argument, "no container to write"};
  if (options.name.find('\0') != std::string::npos) return {StatusCode::invalid_argument, "gzip name holds a NUL"};
  Compressor c(in, out, options);
  return c.run(stats);
}

Status deflate_decompress_stream(Source& in, Sink& out, const DeflateDecodeOptions& options, StreamStats* stats,
                                 DeflateStats* deflate_stats) {
  Decompressor d(in, out, options);
  return d.run(stats, deflate_stats);
}

Status deflate_compress(ConstBuffer input, std::vector<std::uint8_t>* output, const DeflateOptions& options) {
  output->clear();
  auto source = memory_source(input);
  auto sink = vector_sink(output);
  const Status s = deflate_compress_stream(*source, *sink, options);
  (void)sink->flush();
  return s;
}

Status deflate_decompress(ConstBuffer input, std::vector<std::uint8_t>* output, const DeflateDecodeOptions& options,
                          DeflateStats* deflate_stats) {
  output->clear();
  auto source = memory_source(input);
  auto sink = vector_sink(output);
  const Status s = deflate_decompress_stream(*source, *sink, options, nullptr, deflate_stats);
  (void)sink->flush();
  return s;
}

}  // namespace tandem
