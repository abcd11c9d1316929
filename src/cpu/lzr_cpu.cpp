// The CPU codec of the lzr format: the host side of each step (buffers, the
// rANS reference coder, the frame's assembly) around the shared warp bodies
// of gpu/lzr_body.hpp and gpu/lz4_gpu_encode.hpp, run here through the warp
// emulation.
#include "cpu/lzr_cpu.hpp"

#include <algorithm>
#include <vector>

#include "cpu/rans_cpu.hpp"
#include "gpu/lzr_body.hpp"

namespace tandem::lzr {

namespace body = gpu::lzrk;
namespace lz4k = gpu::lz4k;
using gpu::simt::Warp;

namespace {

Status fail(Error e, Error* error) {
  if (error) *error = e;
  return to_status(e);
}

// The streams of one block, as the encoder stores them.
struct EncodedBlock {
  std::uint32_t seqs = 0;
  std::uint32_t raw[kStreams] = {};
  std::uint32_t stored[kStreams] = {};
  bool coded[kStreams] = {};
  std::uint64_t bytes = 0;  // header and streams
};

// Buffers reused from block to block.
class BlockEncoder {
 public:
  explicit BlockEncoder(std::uint32_t block_size) {
    const std::size_t segments = lz4k::segment_count(block_size);
    records_.resize(segments * lz4k::kMaxSegmentRecords);
    sums_.resize(segments);
    counts_.resize(segments);
    table_.resize(body::kTableBytes / 2);
    if (segments > 1) {
      primes_.resize(segments * body::kPrimeEntries);
      running_.resize(body::kPrimeEntries);
    }
    streams_[kLiterals].resize(block_size);
    for (std::uint32_t k = 1; k < kStreams; ++k) streams_[k].resize(short_stream_capacity(block_size));
  }

  // Runs steps 1-4 on the block in[0, n).
  EncodedBlock encode(const std::uint8_t* in, std::uint32_t n) {
    const Warp w;
    const auto segments = static_cast<std::uint32_t>(lz4k::segment_count(n));
    if (segments > 1) {
      for (std::uint32_t g = 0; g < lz4k::prime_group_count<body::LzrFind>(segments); ++g) {
        lz4k::prime_group<body::LzrFind>(gpu::simt::Block<body::LzrFind::kPrimeWarps>{}, in, n, g, running_.data(),
                                         primes_.data());
      }
    }
    for (std::uint32_t s = 0; s < segments; ++s) {
      lz4k::SeqRecord* recs = records_.data() + static_cast<std::size_t>(s) * lz4k::kMaxSegmentRecords;
      lz4k::find_segment<body::LzrFind>(w, in, n, s, primes_.data(), table_.data(), recs, &sums_[s]);
      body::count_segment(w, recs, sums_[s].count, &counts_[s]);
    }
    body::StreamOut out{};
    for (std::uint32_t k = 0; k < kStreams; ++k) out.at[k] = streams_[k].data();
    EncodedBlock b;
    for (std::uint32_t s = 0; s < segments; ++s) {
      body::scatter_segment(w, in, n, records_.data(), sums_.data(), counts_.data(), segments, s, out, b.raw);
    }
    b.seqs = b.raw[kMatchLengths];
    b.bytes = kBlockHeaderBytes;
    for (std::uint32_t k = 0; k < kStreams; ++k) {
      const std::span<const std::uint8_t> raw(streams_[k].data(), b.raw[k]);
      const bool ok = rans::encode(raw, rans::Params{}, &coded_[k]).ok();
      b.coded[k] = body::store_coded(b.raw[k], coded_[k].size(), ok);
      b.stored[k] = b.coded[k] ? static_cast<std::uint32_t>(coded_[k].size()) : b.raw[k];
      b.bytes += b.stored[k];
    }
    return b;
  }

  // Writes the block that encode() made at out (b.bytes of room).
  void write(const EncodedBlock& b, std::uint8_t* out) const {
    body::write_block_header(out, b.seqs, b.stored, b.coded);
    std::uint8_t* p = out + kBlockHeaderBytes;
    for (std::uint32_t k = 0; k < kStreams; ++k) {
      const std::uint8_t* src = b.coded[k] ? coded_[k].data() : streams_[k].data();
      std::copy(src, src + b.stored[k], p);
      p += b.stored[k];
    }
  }

 private:
  std::vector<lz4k::SeqRecord> records_;
  std::vector<lz4k::SegmentSummary> sums_;
  std::vector<body::SegmentCounts> counts_;
  std::vector<std::uint16_t> table_;
  std::vector<std::uint16_t> primes_;
  std::vector<std::uint32_t> running_;
  std::vector<std::uint8_t> streams_[kStreams];
  std::vector<std::uint8_t> coded_[kStreams];
};

Status check_params(std::span<const std::uint8_t> in, const Params& params) {
  if (!params_valid(params)) return {StatusCode::invalid_argument, "lzr block size out of range"};
  if ((in.size() >> 48) != 0) return {StatusCode::invalid_argument, "lzr frames hold less than 2^48 bytes"};
  return {};
}

}  // namespace

Status encode(std::span<const std::uint8_t> in, const Params& params, std::span<std::uint8_t> out,
              std::size_t* out_size) {
  if (!out_size) return {StatusCode::invalid_argument, "null out_size"};
  *out_size = 0;
  if (Status s = check_params(in, params); !s) return s;
  const Status too_small{StatusCode::output_too_small, "the lzr frame does not fit the output"};
  body::FrameHeader h;
  h.block_log = params.block_log;
  h.length = in.size();
  h.block_count = static_cast<std::uint32_t>(block_count(in.size(), params.block_log));
  std::uint64_t at = kFrameHeaderBytes + std::uint64_t{h.block_count} * kDirEntryBytes;
  if (at > out.size()) return too_small;
  body::write_frame_header(out.data(), h);
  if (h.block_count == 0) {
    *out_size = kFrameHeaderBytes;
    return {};
  }
  BlockEncoder enc(std::uint32_t{1} << params.block_log);
  for (std::uint32_t i = 0; i < h.block_count; ++i) {
    const std::uint32_t n = body::block_length(h, i);
    const EncodedBlock b = enc.encode(in.data() + (static_cast<std::size_t>(i) << params.block_log), n);
    if (b.bytes > out.size() - at) return too_small;
    enc.write(b, out.data() + at);
    body::store_u32le(out.data() + kFrameHeaderBytes + kDirEntryBytes * i, static_cast<std::uint32_t>(b.bytes));
    at += b.bytes;
  }
  *out_size = static_cast<std::size_t>(at);
  return {};
}

Status encode(std::span<const std::uint8_t> in, const Params& params, std::vector<std::uint8_t>* out) {
  if (!out) return {StatusCode::invalid_argument, "null output"};
  if (Status s = check_params(in, params); !s) return s;
  out->resize(max_encoded_size(in.size(), params));
  std::size_t size = 0;
  const Status s = encode(in, params, *out, &size);
  out->resize(s.ok() ? size : 0);
  return s;
}

Status measure(std::span<const std::uint8_t> in, const Params& params, StreamSizes* sizes) {
  if (!sizes) return {StatusCode::invalid_argument, "null sizes"};
  *sizes = StreamSizes{};
  if (Status s = check_params(in, params); !s) return s;
  body::FrameHeader h;
  h.block_log = params.block_log;
  h.length = in.size();
  h.block_count = static_cast<std::uint32_t>(block_count(in.size(), params.block_log));
  sizes->headers = kFrameHeaderBytes + std::uint64_t{h.block_count} * (kDirEntryBytes + kBlockHeaderBytes);
  if (h.block_count == 0) return {};
  BlockEncoder enc(std::uint32_t{1} << params.block_log);
  for (std::uint32_t i = 0; i < h.block_count; ++i) {
    const EncodedBlock b = enc.encode(in.data() + (static_cast<std::size_t>(i) << params.block_log),
                                      body::block_length(h, i));
    for (std::uint32_t k = 0; k < kStreams; ++k) {
      sizes->raw[k] += b.raw[k];
      sizes->stored[k] += b.stored[k];
    }
    sizes->sequences += b.seqs;
  }
  return {};
}

Status read_info(std::span<const std::uint8_t> in, FrameInfo* info) {
  if (!info) return {StatusCode::invalid_argument, "null info"};
  body::FrameHeader h;
  const Error e = body::parse_frame_header(in.data(), in.size(), &h);
  if (e != Error::ok) return to_status(e);
  info->params = Params{h.block_log};
  info->length = h.length;
  info->block_count = h.block_count;
  return {};
}

Status decode(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t* out_size, Error* error) {
  if (error) *error = Error::ok;
  if (!out_size) return {StatusCode::invalid_argument, "null out_size"};
  *out_size = 0;
  body::FrameHeader h;
  Error e = body::parse_frame_header(in.data(), in.size(), &h);
  if (e != Error::ok) return fail(e, error);
  if (h.length > out.size()) return fail(Error::output_too_small, error);
  // The directory lies inside the input (parse_frame_header), so the block
  // count is bounded by the input's size.
  const std::uint8_t* dir = in.data() + kFrameHeaderBytes;
  std::uint64_t end = kFrameHeaderBytes + std::uint64_t{h.block_count} * kDirEntryBytes;
  for (std::uint32_t i = 0; i < h.block_count; ++i) end += body::load_u32le(dir + kDirEntryBytes * i);
  if (end < in.size()) return fail(Error::trailing_bytes, error);
  if (end > in.size()) return fail(Error::truncated, error);
  if (h.block_count == 0) return {};

  const std::uint32_t block_size = std::uint32_t{1} << h.block_log;
  std::vector<std::uint8_t> decoded[kStreams];
  decoded[kLiterals].resize(block_size);
  for (std::uint32_t k = 1; k < kStreams; ++k) decoded[k].resize(short_stream_capacity(block_size));
  const Warp w;
  body::RebuildStage stage;
  std::uint64_t at = kFrameHeaderBytes + std::uint64_t{h.block_count} * kDirEntryBytes;
  for (std::uint32_t i = 0; i < h.block_count; ++i) {
    const std::uint32_t n = body::block_length(h, i);
    const std::uint32_t size = body::load_u32le(dir + kDirEntryBytes * i);
    const std::uint8_t* b = in.data() + at;
    at += size;
    body::BlockLayout lay;
    e = body::parse_block(b, size, n, &lay);
    if (e != Error::ok) return fail(e, error);
    body::StreamIn streams{};
    for (std::uint32_t k = 0; k < kStreams; ++k) {
      bool exact = false;
      const std::uint32_t cap = body::stream_capacity(k, lay.seqs, n, &exact);
      const std::span<const std::uint8_t> stored(b + lay.at[k], lay.stored[k]);
      std::uint64_t length = lay.stored[k];
      bool ok = true;
      if (lay.coded[k]) {
        std::size_t got = 0;
        ok = rans::decode(stored, std::span<std::uint8_t>(decoded[k].data(), cap), &got).ok();
        length = got;
        streams.at[k] = decoded[k].data();
      } else {
        streams.at[k] = stored.data();
      }
      e = body::check_stream(k, lay.seqs, n, ok, length);
      if (e != Error::ok) return fail(e, error);
      streams.length[k] = static_cast<std::uint32_t>(length);
    }
    e = body::reconstruct_block(w, streams, lay.seqs, out.data() + (static_cast<std::size_t>(i) << h.block_log), n,
                                &stage);
    if (e != Error::ok) return fail(e, error);
  }
  *out_size = static_cast<std::size_t>(h.length);
  return {};
}

Status decode(std::span<const std::uint8_t> in, std::vector<std::uint8_t>* out, std::size_t max_output,
              Error* error) {
  if (error) *error = Error::ok;
  if (!out) return {StatusCode::invalid_argument, "null output"};
  out->clear();
  body::FrameHeader h;
  const Error e = body::parse_frame_header(in.data(), in.size(), &h);
  if (e != Error::ok) return fail(e, error);
  if (h.length > max_output) return {StatusCode::output_limit, "the lzr frame decodes to more than the limit"};
  out->resize(static_cast<std::size_t>(h.length));
  std::size_t size = 0;
  const Status s = decode(in, *out, &size, error);
  if (!s.ok()) out->clear();
  return s;
}

}  // namespace tandem::lzr
