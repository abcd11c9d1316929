// .rans files on the CPU; see tandem/rans_file.hpp and docs/formats/rans.md.
//
// Compression reads a batch of blocks (batch_blocks), codes them in
// parallel with the CPU reference coder (cpu/rans_cpu.hpp) into per-block
// buffers of the block's own size - a stream that does not fit is not
// smaller than the block, which then goes raw - while one more task of the
// same parallel loop hashes the batch, and writes the blocks in order.
//
// Decompression reads block headers until a batch is gathered (its blocks'
// payloads in the source's window, at most 64 MiB of content), reserves the
// batch's content in the sink, decodes every block straight into its place
// in parallel, hashes it in order and commits it. A block's sizes are checked
// before anything is read or sized by them (content at most the block size,
// payload at most the content), so a lying header cannot make the reader
// stage more than a block's worth.
#include "tandem/rans_file.hpp"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "common/thread_pool.hpp"
#include "cpu/rans_cpu.hpp"
#include "format/rans_file_format.hpp"

namespace tandem {

namespace {

using rans_file::BlockHeader;
using rans_file::kBlockHeaderBytes;
using rans_file::kHeaderBytes;
using rans_file::kTrailerBytes;

constexpr std::uint64_t kBatchContent = std::uint64_t{64} << 20;  // decoded bytes a batch holds at most
constexpr std::size_t kStreamBatchBytes = 8u << 20;               // content of a batch read from a stream

// Blocks per batch: about 64 MiB from memory; from a stream, two per thread
// and at least 8 MiB, so that small blocks still make batches worth a wait.
std::size_t batch_blocks(const Source& in, int threads, std::size_t block) {
  return in.stable() ? detail::max_batch_items(threads, block)
                     : std::max(detail::batch_items(threads), kStreamBatchBytes / block);
}

bool block_size_valid(std::size_t b) {
  return b >= (std::size_t{1} << rans_file::kMinBlockLog2) && b <= (std::size_t{1} << rans_file::kMaxBlockLog2) &&
         (b & (b - 1)) == 0;
}

std::uint32_t log2_of(std::size_t b) {
  std::uint32_t l = 0;
  while ((std::size_t{1} << l) < b) ++l;
  return l;
}

rans::Params params_of(const RansFileOptions& o) { return rans::Params{o.chunk_kib, o.scale_bits, o.lanes}; }

Status check_options(const RansFileOptions& o) {
  if (!block_size_valid(o.block_size)) {
    return {StatusCode::invalid_argument, "rANS file block size not a power of two in 64 KiB .. 16 MiB"};
  }
  if (!rans::params_valid(params_of(o))) return {StatusCode::invalid_argument, "rANS parameters out of range"};
  return {};
}

class Hash {
 public:
  Hash() { XXH3_64bits_reset(&state_); }
  void update(const void* p, std::size_t n) { XXH3_64bits_update(&state_, p, n); }
  std::uint64_t digest() const { return XXH3_64bits_digest(&state_); }

 private:
  XXH3_state_t state_;
};

// --------------------------------------------------------- compression ----

Status compress(Source& in, Sink& out, const RansFileOptions& o, StreamStats* stats) {
  const int threads = detail::effective_threads(o.threads);
  const std::size_t b = o.block_size;
  const std::size_t batch = batch_blocks(in, threads, b);
  const rans::Params params = params_of(o);
  std::uint64_t bytes_in = 0, bytes_out = 0;
  auto put = [&](const void* p, std::size_t n) {
    bytes_out += n;
    return out.write(p, n);
  };

  std::uint8_t header[kHeaderBytes];
  rans_file::write_header({log2_of(b)}, header);
  if (Status s = put(header, sizeof header); !s) return s;

  Hash hash;
  std::vector<std::vector<std::uint8_t>> coded(batch);
  std::vector<std::size_t> coded_size(batch);
  std::vector<Status> statuses(batch);
  for (;;) {
    std::size_t avail = 0;
    if (Status s = in.ensure(batch * b, &avail); !s) return s;
    if (avail == 0) break;
    avail = std::min(avail, batch * b);  // a memory source offers all it has
    const std::uint8_t* data = in.data();
    const std::size_t count = (avail + b - 1) / b;
    // Item `count` hashes the batch while the others code it.
    detail::parallel_for(count + 1, threads, [&](std::size_t i) {
      if (i == count) {
        hash.update(data, avail);
        return;
      }
      const std::size_t n = std::min(b, avail - i * b);
      std::vector<std::uint8_t>& dst = coded[i];
      if (dst.size() < n) {
        try {
          dst.resize(n);
        } catch (const std::bad_alloc&) {
          statuses[i] = {StatusCode::out_of_memory, "rANS file block buffer"};
          return;
        }
      }
      // A stream that does not fit in n - 1 bytes is not smaller than the
      // block: the block is then stored raw (coded_size 0).
      std::size_t size = 0;
      const Status s = rans::encode({data + i * b, n}, params, {dst.data(), n - 1}, &size);
      statuses[i] = s.code == StatusCode::output_too_small ? Status{} : s;
      coded_size[i] = s ? size : 0;
    });
    for (std::size_t i = 0; i < count; ++i) {
      if (!statuses[i]) return statuses[i];
      const std::size_t n = std::min(b, avail - i * b);
      BlockHeader h;
      h.decoded = static_cast<std::uint32_t>(n);
      h.raw = coded_size[i] == 0;
      h.payload = static_cast<std::uint32_t>(h.raw ? n : coded_size[i]);
      std::uint8_t bh[kBlockHeaderBytes];
      rans_file::write_block_header(h, bh);
      if (Status s = put(bh, sizeof bh); !s) return s;
      if (Status s = put(h.raw ? data + i * b : coded[i].data(), h.payload); !s) return s;
    }
    in.consume(avail);
    bytes_in += avail;
    if (o.progress) o.progress(bytes_in, bytes_out);
  }
  std::uint8_t end[kBlockHeaderBytes + kTrailerBytes];
  rans_file::write_block_header({}, end);
  rans_file::write_le64(hash.digest(), end + kBlockHeaderBytes);
  if (Status s = put(end, sizeof end); !s) return s;
  if (stats) {
    stats->bytes_in = bytes_in;
    stats->bytes_out = bytes_out;
    stats->frames = 1;
  }
  return {};
}

// ------------------------------------------------------- decompression ----

class Decompressor {
 public:
  Decompressor(Source& in, Sink& out, const RansFileDecodeOptions& o)
      : in_(in), out_(out), o_(o), threads_(detail::effective_threads(o.threads)) {}

  Status run(StreamStats* stats, RansFileStats* file_stats) {
    Status s = members();
    if (stats) {
      stats->bytes_in = in_.position();
      stats->bytes_out = produced_;
      stats->frames = fstats_.members;
    }
    if (file_stats) *file_stats = fstats_;
    return s;
  }

 private:
  struct Block {
    std::size_t payload_at;  // in the source's window
    std::uint64_t out_at;    // in the batch's content
    BlockHeader h;
  };

  Status members() {
    for (bool first = true;; first = false) {
      std::size_t avail = 0;
      if (Status s = in_.ensure(kHeaderBytes, &avail); !s) return s;
      if (!first && avail == 0) return {};
      rans_file::Header h;
      const Status s = rans_file::parse_header(in_.data(), avail, &h);
      if (!first && s.code == StatusCode::bad_data && !rans_file::has_magic(in_.data(), avail)) {
        return {StatusCode::bad_data, "data after the end of the rANS file"};
      }
      if (!s) return s;
      in_.consume(kHeaderBytes);
      if (Status m = member(h); !m) return m;
      ++fstats_.members;
    }
  }

  Status member(const rans_file::Header& h) {
    Hash hash;
    const std::size_t most = batch_blocks(in_, threads_, std::size_t{1} << h.block_log2);
    std::vector<Block> blocks;
    std::vector<Status> statuses;
    for (bool end = false; !end;) {
      // Gather a batch: whole blocks in the window, up to the end marker. A
      // failure found here is reported after the blocks before it decoded,
      // so that the first failure in file order is the one reported,
      // whatever the batches.
      blocks.clear();
      std::size_t offset = 0;
      std::uint64_t content = 0;
      Status pending;
      while (blocks.size() < most) {
        pending = next_block(h, offset, content, &blocks, &end);
        if (!pending || end) break;
        const Block& last = blocks.back();
        if (last.out_at + last.h.decoded > kBatchContent && blocks.size() > 1) {
          blocks.pop_back();  // for the next batch
          break;
        }
        offset = last.payload_at + last.h.payload;
        content += last.h.decoded;
      }
      if (!blocks.empty()) {
        if (Status s = decode_batch(blocks, content, &statuses, &hash); !s) return s;
      }
      if (!pending) return pending;
      if (end) offset += kBlockHeaderBytes;
      in_.consume(offset);
      if (o_.progress) o_.progress(in_.position(), produced_);
    }
    std::size_t avail = 0;
    if (Status s = in_.ensure(kTrailerBytes, &avail); !s) return s;
    if (avail < kTrailerBytes) return {StatusCode::truncated, "rANS file cut short (checksum)"};
    if (o_.verify_checksum && rans_file::read_le64(in_.data()) != hash.digest()) {
      return {StatusCode::checksum_mismatch, "rANS file content checksum (XXH3-64) mismatch"};
    }
    in_.consume(kTrailerBytes);
    return {};
  }

  // Reads the block header at `offset` in the window and makes its payload
  // available; appends the block, or sets *end at the end marker.
  Status next_block(const rans_file::Header& h, std::size_t offset, std::uint64_t content, std::vector<Block>* blocks,
                    bool* end) {
    std::size_t avail = 0;
    if (Status s = in_.ensure(offset + kBlockHeaderBytes, &avail); !s) return s;
    if (avail < offset + kBlockHeaderBytes) return {StatusCode::truncated, "rANS file cut short (block header)"};
    BlockHeader b;
    if (Status s = rans_file::parse_block_header(in_.data() + offset, h, &b); !s) return s;
    if (b.end()) {
      *end = true;
      return {};
    }
    if (b.decoded > o_.max_output - produced_ - content) return {StatusCode::output_limit, "output exceeds the limit"};
    const std::size_t next = offset + kBlockHeaderBytes + b.payload;
    if (Status s = in_.ensure(next, &avail); !s) return s;
    if (avail < next) return {StatusCode::truncated, "rANS file cut short (block payload)"};
    blocks->push_back({offset + kBlockHeaderBytes, content, b});
    return {};
  }

  Status decode_batch(const std::vector<Block>& blocks, std::uint64_t content, std::vector<Status>* statuses,
                      Hash* hash) {
    std::uint8_t* room = nullptr;
    if (Status s = out_.reserve(static_cast<std::size_t>(content), &room); !s) return s;
    const std::uint8_t* data = in_.data();
    statuses->assign(blocks.size(), Status{});
    detail::parallel_for(blocks.size(), threads_, [&](std::size_t i) {
      const Block& k = blocks[i];
      std::uint8_t* dst = room + k.out_at;
      if (k.h.raw) {
        std::memcpy(dst, data + k.payload_at, k.h.decoded);
        return;
      }
      std::size_t got = 0;
      Status s = rans::decode({data + k.payload_at, k.h.payload}, {dst, k.h.decoded}, &got);
      if (s.code == StatusCode::output_too_small) {
        s = {StatusCode::bad_data, "rANS file block's stream decodes to more than its header says"};
      } else if (s && got != k.h.decoded) {
        s = {StatusCode::bad_data, "rANS file block's stream decodes to less than its header says"};
      }
      (*statuses)[i] = s;
    });
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (!(*statuses)[i]) return (*statuses)[i];
      ++fstats_.blocks;
      if (blocks[i].h.raw) ++fstats_.raw_blocks;
    }
    if (o_.verify_checksum) hash->update(room, static_cast<std::size_t>(content));
    if (Status s = out_.commit(static_cast<std::size_t>(content)); !s) return s;
    produced_ += content;
    return {};
  }

  Source& in_;
  Sink& out_;
  const RansFileDecodeOptions& o_;
  const int threads_;
  std::uint64_t produced_ = 0;
  RansFileStats fstats_;
};

}  // namespace

bool rans_file_magic(const void* data, std::size_t size) {
  return data && rans_file::has_magic(static_cast<const std::uint8_t*>(data), size);
}

std::uint64_t rans_file_max_compressed_size(std::uint64_t input_size, const RansFileOptions& options) {
  if (!check_options(options)) return 0;
  const std::uint64_t blocks = (input_size + options.block_size - 1) / options.block_size;
  return kHeaderBytes + blocks * kBlockHeaderBytes + input_size + kBlockHeaderBytes + kTrailerBytes;
}

Status rans_file_compress_stream(Source& in, Sink& out, const RansFileOptions& options, StreamStats* stats) {
  if (Status s = check_options(options); !s) return s;
  return compress(in, out, options, stats);
}

Status rans_file_decompress_stream(Source& in, Sink& out, const RansFileDecodeOptions& options, StreamStats* stats,
                                   RansFileStats* file_stats) {
  Decompressor d(in, out, options);
  return d.run(stats, file_stats);
}

Status rans_file_compress(ConstBuffer input, std::vector<std::uint8_t>* output, const RansFileOptions& options) {
  if (!output || (!input.data && input.size)) return {StatusCode::invalid_argument, "null buffer"};
  output->clear();
  auto source = memory_source(input);
  auto sink = vector_sink(output);
  Status s = rans_file_compress_stream(*source, *sink, options);
  if (Status f = sink->flush(); s && !f) s = f;
  sink.reset();  // it trims the vector when it goes
  if (!s) output->clear();
  return s;
}

Status rans_file_decompress(ConstBuffer input, std::vector<std::uint8_t>* output,
                            const RansFileDecodeOptions& options, RansFileStats* file_stats) {
  if (!output || (!input.data && input.size)) return {StatusCode::invalid_argument, "null buffer"};
  output->clear();
  auto source = memory_source(input);
  auto sink = vector_sink(output);
  Status s = rans_file_decompress_stream(*source, *sink, options, nullptr, file_stats);
  if (Status f = sink->flush(); s && !f) s = f;
  sink.reset();  // it trims the vector when it goes
  if (!s) output->clear();
  return s;
}

Status rans_file_compress(ConstBuffer input, MutableBuffer output, std::size_t* size, const RansFileOptions& options) {
  if (!size || (!input.data && input.size) || (!output.data && output.size)) {
    return {StatusCode::invalid_argument, "null buffer"};
  }
  auto source = memory_source(input);
  auto sink = buffer_sink(output);
  const Status s = rans_file_compress_stream(*source, *sink, options);
  *size = s ? static_cast<std::size_t>(sink->position()) : 0;
  return s;
}

Status rans_file_decompress(ConstBuffer input, MutableBuffer output, std::size_t* size,
                            const RansFileDecodeOptions& options) {
  if (!size || (!input.data && input.size) || (!output.data && output.size)) {
    return {StatusCode::invalid_argument, "null buffer"};
  }
  auto source = memory_source(input);
  auto sink = buffer_sink(output);
  const Status s = rans_file_decompress_stream(*source, *sink, options);
  *size = s ? static_cast<std::size_t>(sink->position()) : 0;
  return s;
}

}  // namespace tandem
