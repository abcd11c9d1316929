// Deflate streams for the inflate tests (CPU and GPU): raw deflate from zlib
// and libdeflate, tandem's indexed streams cut into chunks (zlib with a full
// flush after each chunk, which resets the window and ends the chunk with an
// empty stored block, then the final block 03 00), and a bit writer for
// hand-built malformed blocks.
#pragma once

#include <libdeflate.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "support/test_support.hpp"

namespace tandem::test::inflate_streams {

using Bytes = std::vector<std::uint8_t>;

// Raw deflate of data by zlib at `level` with `strategy`.
inline Bytes zlib_raw(const Bytes& data, int level, int strategy = Z_DEFAULT_STRATEGY) {
  return test::zlib_deflate(data, -15, level, strategy);
}

// Raw deflate of data by libdeflate at `level` (1-12).
inline Bytes libdeflate_raw(const Bytes& data, int level) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(level);
  Bytes out(libdeflate_deflate_compress_bound(c, data.size()));
  const std::size_t n = libdeflate_deflate_compress(c, data.data(), data.size(), out.data(), out.size());
  libdeflate_free_compressor(c);
  if (n == 0) throw std::runtime_error("libdeflate_deflate_compress");
  out.resize(n);
  return out;
}

// tandem's indexed deflate stream: data cut into chunks of `chunk` bytes,
// each compressed alone and ending byte-aligned, then 03 00.
struct Chunked {
  Bytes stream;
  std::vector<std::size_t> compressed_sizes;  // of each chunk; the final 2 bytes are not in any
  std::vector<std::size_t> offsets;           // where each chunk starts in stream
};

inline Chunked zlib_chunked(const Bytes& data, std::size_t chunk, int level, int strategy = Z_DEFAULT_STRATEGY) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, -15, 8, strategy) != Z_OK) throw std::runtime_error("deflateInit2");
  Chunked c;
  Bytes buf(deflateBound(&z, chunk) + 64);
  for (std::size_t at = 0; at < data.size(); at += chunk) {
    const std::size_t n = std::min(chunk, data.size() - at);
    z.next_in = const_cast<Bytes::value_type*>(data.data() + at);
    z.avail_in = static_cast<uInt>(n);
    const std::size_t start = c.stream.size();
    do {
      z.next_out = buf.data();
      z.avail_out = static_cast<uInt>(buf.size());
      if (deflate(&z, Z_FULL_FLUSH) == Z_STREAM_ERROR) throw std::runtime_error("deflate");
      c.stream.insert(c.stream.end(), buf.data(), buf.data() + (buf.size() - z.avail_out));
    } while (z.avail_out == 0 || z.avail_in != 0);
    c.offsets.push_back(start);
    c.compressed_sizes.push_back(c.stream.size() - start);
  }
  deflateEnd(&z);
  c.stream.push_back(0x03);
  c.stream.push_back(0x00);
  return c;
}

// Inflates a whole raw deflate stream with zlib: the data, or throws.
inline Bytes zlib_inflate(const Bytes& stream, std::size_t expect) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) throw std::runtime_error("inflateInit2");
  Bytes out(expect + 1);
  z.next_in = const_cast<Bytes::value_type*>(stream.data());
  z.avail_in = static_cast<uInt>(stream.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const std::size_t n = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib inflate");
  out.resize(n);
  return out;
}

// Writes bits least significant first, as deflate packs them.
class BitWriter {
 public:
  void put(std::uint32_t value, int bits) {
    for (int i = 0; i < bits; ++i) put_bit((value >> i) & 1u);
  }
  // A Huffman code: its most significant bit first.
  void put_code(std::uint32_t code, int length) {
    for (int i = length - 1; i >= 0; --i) put_bit((code >> i) & 1u);
  }
  void align() {
    while (nbits_ != 0) put_bit(0);
  }
  void byte(std::uint8_t b) {
    align();
    out_.push_back(b);
  }
  Bytes bytes() const { return out_; }

 private:
  void put_bit(std::uint32_t b) {
    if (nbits_ == 0) out_.push_back(0);
    out_.back() |= static_cast<std::uint8_t>(b << nbits_);
    nbits_ = (nbits_ + 1) & 7;
  }
  Bytes out_;
  int nbits_ = 0;
};

// Canonical codes of a set of lengths (RFC 1951 3.2.2); codes of unused
// symbols are 0.
inline std::vector<std::uint32_t> canonical_codes(const std::vector<int>& lengths) {
  int count[16] = {};
  for (int l : lengths) ++count[l];
  count[0] = 0;
  std::uint32_t next[16] = {};
  std::uint32_t code = 0;
  for (int l = 1; l < 16; ++l) {
    code = (code + count[l - 1]) << 1;
    next[l] = code;
  }
  std::vector<std::uint32_t> codes(lengths.size(), 0);
  for (std::size_t s = 0; s < lengths.size(); ++s)
    if (lengths[s] != 0) codes[s] = next[lengths[s]]++;
  return codes;
}

// The fixed literal/length code of RFC 1951 3.2.6.
inline void put_fixed_litlen(BitWriter& w, int symbol) {
  if (symbol < 144) {
    w.put_code(0x30 + symbol, 8);
  } else if (symbol < 256) {
    w.put_code(0x190 + (symbol - 144), 9);
  } else if (symbol < 280) {
    w.put_code(symbol - 256, 7);
  } else {
    w.put_code(0xc0 + (symbol - 280), 8);
  }
}

// A precode under which every code length symbol 0-18 has a code: 0-12 of
// 4 bits, 13-18 of 5 bits (complete: 13/16 + 6/32 = 1).
inline std::vector<int> full_precode_lengths() {
  std::vector<int> l(19, 4);
  for (int s = 13; s < 19; ++s) l[s] = 5;
  return l;
}

// A dynamic block header: HLIT, HDIST, all 19 precode lengths as given (in
// the RFC's order), then `ops`, each a code length symbol and its extra bits'
// value, written with the precode.
struct LengthOp {
  int symbol;
  std::uint32_t extra = 0;
};
inline void put_dynamic_header(BitWriter& w, bool final_block, int hlit, int hdist,
                               const std::vector<int>& precode_lengths, const std::vector<LengthOp>& ops,
                               int hclen = 19) {
  static constexpr int kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  w.put(final_block ? 1 : 0, 1);
  w.put(2, 2);
  w.put(static_cast<std::uint32_t>(hlit - 257), 5);
  w.put(static_cast<std::uint32_t>(hdist - 1), 5);
  w.put(static_cast<std::uint32_t>(hclen - 4), 4);
  for (int i = 0; i < hclen; ++i) w.put(static_cast<std::uint32_t>(precode_lengths[kOrder[i]]), 3);
  const std::vector<std::uint32_t> codes = canonical_codes(precode_lengths);
  for (const LengthOp& op : ops) {
    w.put_code(codes[op.symbol], precode_lengths[op.symbol]);
    if (op.symbol == 16) w.put(op.extra, 2);
    if (op.symbol == 17) w.put(op.extra, 3);
    if (op.symbol == 18) w.put(op.extra, 7);
  }
}

// Ops that write the given lengths one symbol each.
inline std::vector<LengthOp> plain_ops(const std::vector<int>& lengths) {
  std::vector<LengthOp> ops;
  for (int l : lengths) ops.push_back({l, 0});
  return ops;
}

}  // namespace tandem::test::inflate_streams
