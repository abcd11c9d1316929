// The block-file engine; see block_file.hpp.
#include "codec/block_file.hpp"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "common/thread_pool.hpp"

namespace tandem::block_file {

namespace {

constexpr std::uint64_t kBatchContent = std::uint64_t{64} << 20;  // decoded bytes a batch holds at most
constexpr std::size_t kStreamBatchBytes = 8u << 20;               // content of a batch read from a stream

// Blocks per batch: about 64 MiB from memory; from a stream, two per thread
// and at least 8 MiB, so that small blocks still make batches worth a wait.
std::size_t batch_blocks(const Source& in, int threads, std::size_t block) {
  return in.stable() ? detail::max_batch_items(threads, block)
                     : std::max(detail::batch_items(threads), kStreamBatchBytes / block);
}

std::uint32_t log2_of(std::size_t b) {
  std::uint32_t l = 0;
  while ((std::size_t{1} << l) < b) ++l;
  return l;
}

class Hash {
 public:
  Hash() { XXH3_64bits_reset(&state_); }
  void update(const void* p, std::size_t n) { XXH3_64bits_update(&state_, p, n); }
  std::uint64_t digest() const { return XXH3_64bits_digest(&state_); }

 private:
  XXH3_state_t state_;
};

class Decompressor {
 public:
  Decompressor(Source& in, Sink& out, const Codec& codec, const BlockFileDecodeOptions& o)
      : in_(in), out_(out), codec_(codec), kind_(*codec.kind), o_(o), threads_(detail::effective_threads(o.threads)) {}

  Status run(StreamStats* stats, BlockFileStats* file_stats) {
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
      Header h;
      const Status s = parse_header(kind_, in_.data(), avail, &h);
      if (!first && s.code == StatusCode::bad_data && !has_magic(kind_, in_.data(), avail)) {
        return {StatusCode::bad_data, kind_.trailing};
      }
      if (!s) return s;
      in_.consume(kHeaderBytes);
      if (Status m = member(h); !m) return m;
      ++fstats_.members;
    }
  }

  Status member(const Header& h) {
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
    if (avail < kTrailerBytes) return {StatusCode::truncated, kind_.cut_checksum};
    if (o_.verify_checksum && read_le64(in_.data()) != hash.digest()) {
      return {StatusCode::checksum_mismatch, kind_.checksum};
    }
    in_.consume(kTrailerBytes);
    return {};
  }

  // Reads the block header at `offset` in the window and makes its payload
  // available; appends the block, or sets *end at the end marker.
  Status next_block(const Header& h, std::size_t offset, std::uint64_t content, std::vector<Block>* blocks,
                    bool* end) {
    std::size_t avail = 0;
    if (Status s = in_.ensure(offset + kBlockHeaderBytes, &avail); !s) return s;
    if (avail < offset + kBlockHeaderBytes) return {StatusCode::truncated, kind_.cut_block_header};
    BlockHeader b;
    if (Status s = parse_block_header(kind_, in_.data() + offset, h, &b); !s) return s;
    if (b.end()) {
      *end = true;
      return {};
    }
    if (b.decoded > o_.max_output - produced_ - content) return {StatusCode::output_limit, "output exceeds the limit"};
    const std::size_t next = offset + kBlockHeaderBytes + b.payload;
    if (Status s = in_.ensure(next, &avail); !s) return s;
    if (avail < next) return {StatusCode::truncated, kind_.cut_payload};
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
      Status s = codec_.decode({data + k.payload_at, k.h.payload}, {dst, k.h.decoded}, &got);
      if (s.code == StatusCode::output_too_small) {
        s = {StatusCode::bad_data, kind_.decodes_more};
      } else if (s && got != k.h.decoded) {
        s = {StatusCode::bad_data, kind_.decodes_less};
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
  const Codec& codec_;
  const Kind& kind_;
  const BlockFileDecodeOptions& o_;
  const int threads_;
  std::uint64_t produced_ = 0;
  BlockFileStats fstats_;
};

}  // namespace

bool block_size_valid(std::size_t b) {
  return b >= (std::size_t{1} << kMinBlockLog2) && b <= (std::size_t{1} << kMaxBlockLog2) && (b & (b - 1)) == 0;
}

std::uint64_t max_compressed_size(std::uint64_t input_size, std::size_t block_size) {
  const std::uint64_t blocks = (input_size + block_size - 1) / block_size;
  return kHeaderBytes + blocks * kBlockHeaderBytes + input_size + kBlockHeaderBytes + kTrailerBytes;
}

Status compress(Source& in, Sink& out, const Codec& codec, const EncodeOptions& o, StreamStats* stats) {
  const Kind& kind = *codec.kind;
  const int threads = detail::effective_threads(o.threads);
  const std::size_t b = o.block_size;
  const std::size_t batch = batch_blocks(in, threads, b);
  std::uint64_t bytes_in = 0, bytes_out = 0;
  auto put = [&](const void* p, std::size_t n) {
    bytes_out += n;
    return out.write(p, n);
  };

  std::uint8_t header[kHeaderBytes];
  write_header(kind, {log2_of(b)}, header);
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
          statuses[i] = {StatusCode::out_of_memory, kind.buffer};
          return;
        }
      }
      // A payload that does not fit in n - 1 bytes is not smaller than the
      // block: the block is then stored raw (coded_size 0).
      std::size_t size = 0;
      const Status s = codec.encode({data + i * b, n}, {dst.data(), n - 1}, &size);
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
      write_block_header(h, bh);
      if (Status s = put(bh, sizeof bh); !s) return s;
      if (Status s = put(h.raw ? data + i * b : coded[i].data(), h.payload); !s) return s;
    }
    in.consume(avail);
    bytes_in += avail;
    if (o.progress) o.progress(bytes_in, bytes_out);
  }
  std::uint8_t end[kBlockHeaderBytes + kTrailerBytes];
  write_block_header({}, end);
  write_le64(hash.digest(), end + kBlockHeaderBytes);
  if (Status s = put(end, sizeof end); !s) return s;
  if (stats) {
    stats->bytes_in = bytes_in;
    stats->bytes_out = bytes_out;
    stats->frames = 1;
  }
  return {};
}

Status decompress(Source& in, Sink& out, const Codec& codec, const BlockFileDecodeOptions& options,
                  StreamStats* stats, BlockFileStats* file_stats) {
  Decompressor d(in, out, codec, options);
  return d.run(stats, file_stats);
}

Status run_to_vector(ConstBuffer input, std::vector<std::uint8_t>* output, const StreamFn& run) {
  if (!output || (!input.data && input.size)) return {StatusCode::invalid_argument, "null buffer"};
  output->clear();
  auto source = memory_source(input);
  auto sink = vector_sink(output);
  Status s = run(*source, *sink);
  if (Status f = sink->flush(); s && !f) s = f;
  sink.reset();  // it trims the vector when it goes
  if (!s) output->clear();
  return s;
}

Status run_to_buffer(ConstBuffer input, MutableBuffer output, std::size_t* size, const StreamFn& run) {
  if (!size || (!input.data && input.size) || (!output.data && output.size)) {
    return {StatusCode::invalid_argument, "null buffer"};
  }
  auto source = memory_source(input);
  auto sink = buffer_sink(output);
  const Status s = run(*source, *sink);
  *size = s ? static_cast<std::size_t>(sink->position()) : 0;
  return s;
}

}  // namespace tandem::block_file
