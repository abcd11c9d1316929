// Inflate of one raw deflate stream (RFC 1951), or of one chunk of tandem's
// indexed deflate stream, on the host or the device (one thread).
//
// A chunk of an indexed stream starts on a byte with a block header, makes no
// match reaching before its first byte, and ends with a non-final empty stored
// block, byte-aligned; so it inflates alone and the body stops at the end of
// its input on a block boundary. A whole stream stops at its final block. The
// result says which.
//
// Input is untrusted. The body never reads past in[in_size) nor writes past
// out[capacity), refuses matches that reach before out[0], and gives a status
// for each error class (InflateStatus). Work is bounded by the output
// capacity and the input size: every symbol decoded consumes input bits or
// writes output, except the end-of-block code, which needs at least 7 bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/huffman_decode.hpp"
#include "gpu/simt.hpp"

namespace tandem::gpu::inflate {

// One stream's outcome. Values are permanent.
enum class InflateStatus : std::int32_t {
  ok = 0,
  // The input ends inside a block (or inside a block header).
  truncated = 1,
  // BTYPE 3.
  reserved_block_type = 2,
  // A stored block's NLEN is not the complement of its LEN.
  stored_length_mismatch = 3,
  // HLIT over 286 or HDIST over 30.
  too_many_codes = 4,
  // The code length code is over-subscribed, incomplete or empty.
  bad_precode = 5,
  // A repeat code runs past HLIT + HDIST lengths, or repeats a length when
  // there is none before it.
  bad_code_lengths = 6,
  // The literal/length code is over-subscribed or incomplete, or has no
  // end-of-block code.
  bad_litlen_code = 7,
  // The distance code is over-subscribed or incomplete.
  bad_distance_code = 8,
  // A code that no symbol has (the unused half of a one-code set), or a
  // literal/length symbol 286-287 or a distance symbol 30-31 (fixed code).
  invalid_symbol = 9,
  // A match distance reaches before the start of the output.
  distance_too_far = 10,
  // A literal, a match or a stored block would go past the output capacity.
  output_overflow = 11,
  // Null pointers, or an item larger than the call accepts.
  invalid_item = 12,
};

inline constexpr int kInflateStatusCount = 13;

// "ok", "truncated", ...
TANDEM_HD const char* inflate_status_name(InflateStatus s) {
  switch (s) {
    case InflateStatus::ok: return "ok";
    case InflateStatus::truncated: return "truncated";
    case InflateStatus::reserved_block_type: return "reserved_block_type";
    case InflateStatus::stored_length_mismatch: return "stored_length_mismatch";
    case InflateStatus::too_many_codes: return "too_many_codes";
    case InflateStatus::bad_precode: return "bad_precode";
    case InflateStatus::bad_code_lengths: return "bad_code_lengths";
    case InflateStatus::bad_litlen_code: return "bad_litlen_code";
    case InflateStatus::bad_distance_code: return "bad_distance_code";
    case InflateStatus::invalid_symbol: return "invalid_symbol";
    case InflateStatus::distance_too_far: return "distance_too_far";
    case InflateStatus::output_overflow: return "output_overflow";
    case InflateStatus::invalid_item: return "invalid_item";
  }
  return "unknown";
}

// How an ok inflate stopped.
enum class InflateEnd : std::uint8_t {
  final_block = 0,  // after a block with BFINAL set (input may follow it)
  input_end = 1,    // at the end of the input, after a non-final block (a chunk)
};

struct InflateResult {
  InflateStatus status = InflateStatus::ok;
  InflateEnd end = InflateEnd::input_end;
  std::size_t out_size = 0;  // bytes written (on failure: those written before it)
  std::size_t in_used = 0;   // input bytes read, the last one perhaps in part
  bool by_segments = false;  // the first block was decoded by segments (inflate_segmented)
};

// Bits come from the input least significant bit first. The buffer holds up
// to 64 bits; past the end of the input, peeks see zero bits, and `avail`
// tells how many bits are real.
struct BitReader {
  const std::uint8_t* in;
  std::size_t size;
  std::size_t pos = 0;  // next byte to load
  std::uint64_t buf = 0;
  std::uint32_t avail = 0;
  // The word at in[pos], loaded one refill early so that a refill does not
  // wait on memory (valid while size - pos >= 4).
  std::uint32_t ahead = 0;

  TANDEM_HD BitReader(const std::uint8_t* p, std::size_t n) : in(p), size(n) { load_ahead(); }

  TANDEM_HD void load_ahead() {
    if (size - pos < 4) return;
#if defined(__CUDA_ARCH__)
    // Device items are at most kMaxItemSize bytes: positions fit 32 bits.
    ahead = simt::load_u32(in, static_cast<std::uint32_t>(size), static_cast<std::uint32_t>(pos));
#else
    const std::uint8_t* b = in + pos;
    ahead = b[0] | (std::uint32_t{b[1]} << 8) | (std::uint32_t{b[2]} << 16) | (std::uint32_t{b[3]} << 24);
#endif
  }
  // Loads input until more than 32 bits are held or the input ends: a word
  // at a time, the last bytes one by one.
  TANDEM_HD void refill() {
    if (avail > 32) return;
    if (size - pos >= 4) {
      buf |= static_cast<std::uint64_t>(ahead) << avail;
      pos += 4;
      avail += 32;
      load_ahead();
      return;
    }
    while (avail <= 56 && pos < size) {
      buf |= static_cast<std::uint64_t>(in[pos++]) << avail;
      avail += 8;
    }
  }
  // The next n bits (n <= 32) without consuming them; only the low `avail`
  // of them are input.
  TANDEM_HD std::uint32_t peek(int n) const { return static_cast<std::uint32_t>(buf & ((std::uint64_t{1} << n) - 1)); }
  TANDEM_HD void drop(std::uint32_t n) {
    buf >>= n;
    avail -= n;
  }
  // Bits left in the input, held or not.
  TANDEM_HD std::uint64_t bits_left() const { return avail + 8 * static_cast<std::uint64_t>(size - pos); }
  // Moves to the next byte boundary and gives back the whole bytes held, so
  // that in[pos] is the next input byte.
  TANDEM_HD void align_and_unload() {
    drop(avail & 7u);
    pos -= avail >> 3;
    buf = 0;
    avail = 0;
  }
  // Goes on reading at in[p], with nothing held (after align_and_unload).
  TANDEM_HD void restart_at(std::size_t p) {
    pos = p;
    load_ahead();
  }
  TANDEM_HD std::size_t bytes_used() const { return pos - (avail >> 3); }
  // Bits consumed since in[0].
  TANDEM_HD std::uint64_t bit_position() const { return 8 * static_cast<std::uint64_t>(pos) - avail; }
  // Goes on reading at bit b of the input; false (nothing changed) when b
  // lies past its end.
  TANDEM_HD bool seek_bit(std::uint64_t b) {
    if (b > 8 * static_cast<std::uint64_t>(size)) return false;
    pos = static_cast<std::size_t>(b / 8);
    buf = 0;
    avail = 0;
    load_ahead();
    refill();
    drop(static_cast<std::uint32_t>(b % 8));
    return true;
  }
};

// Length symbols 257..285 (index i = symbol - 257) and distance symbols
// 0..29: base values and extra bits of RFC 1951 3.2.5, computed (no tables,
// which the device would keep in local memory).
TANDEM_HD std::uint32_t length_extra(std::uint32_t i) { return (i < 8 || i == 28) ? 0u : (i - 4) / 4; }
TANDEM_HD std::uint32_t length_base(std::uint32_t i) {
  if (i < 8) return 3 + i;
  if (i == 28) return 258;
  return ((4u + (i & 3u)) << length_extra(i)) + 3u;
}
TANDEM_HD std::uint32_t distance_extra(std::uint32_t i) { return i < 4 ? 0u : (i - 2) / 2; }
TANDEM_HD std::uint32_t distance_base(std::uint32_t i) {
  if (i < 4) return 1 + i;
  return ((2u + (i & 1u)) << distance_extra(i)) + 1u;
}

// The warp form decodes a Huffman block's symbols in batches of up to 32
// tokens (a literal or a match each) whose output fits the stage buffer: one
// match of at most 258 bytes more never overflows it once a batch stops at
// kStageBytes - 258.
inline constexpr std::uint32_t kBatchTokens = 32;
inline constexpr std::uint32_t kStageBytes = 1280;

// What one inflate keeps besides its registers: about 4.9 KiB, on the
// caller's stack or in shared memory (one set per warp). `lengths` holds a
// dynamic block's code lengths while its tables are built; `stage`, the
// output of the warp form's current batch.
struct InflateTables {
  LitLenTable litlen;
  DistanceTable distance;
  PrecodeTable precode;
  std::uint8_t lengths[288 + 32];
  std::uint8_t stage[kStageBytes];
};

namespace detail {
template <class Writer>
TANDEM_HD InflateStatus inflate_codes(BitReader& br, const InflateTables& t, std::uint8_t* out, std::size_t capacity,
                                      std::size_t& at, const Writer& w);
TANDEM_HD InflateStatus warp_codes(BitReader& br, InflateTables& t, std::uint8_t* out, std::size_t capacity,
                                   std::size_t& at);
}  // namespace detail

// How the body writes its output. The body's parse is the same in every
// form; a writer decides which threads decode which symbols and write which
// bytes.
//
// ThreadWriter: one thread does everything, symbol by symbol.
struct ThreadWriter {
  TANDEM_HD void sync() const {}
  // This thread's share of a table build: all of it.
  TANDEM_HD std::uint32_t build_lane() const { return 0; }
  TANDEM_HD std::uint32_t build_lanes() const { return 1; }
  TANDEM_HD void literal(std::uint8_t* out, std::size_t at, std::uint8_t b) const { out[at] = b; }
  // out[at + j] = out[at - distance + j] for j < length, as LZ77 means it
  // (the source may overlap the bytes being written).
  TANDEM_HD void match(std::uint8_t* out, std::size_t at, std::uint32_t distance, std::uint32_t length) const {
    const std::uint8_t* src = out + (at - distance);
    std::uint8_t* dst = out + at;
    for (std::uint32_t i = 0; i < length; ++i) dst[i] = src[i];
  }
  TANDEM_HD void stored(std::uint8_t* dst, const std::uint8_t* src, std::uint32_t n) const {
    for (std::uint32_t i = 0; i < n; ++i) dst[i] = src[i];
  }
  // A Huffman block's symbols, up to its end-of-block code.
  TANDEM_HD InflateStatus codes(BitReader& br, InflateTables& t, std::uint8_t* out, std::size_t capacity,
                                std::size_t& at) const {
    return detail::inflate_codes(br, t, out, capacity, at, *this);
  }
};

// WarpWriter: the 32 threads of a warp run the parse together (every lane
// decodes the same symbols from the same tables, so the warp never
// diverges), a batch of tokens at a time (detail::warp_codes); then the
// lanes write the batch's bytes together. Stored blocks are copied by the
// lanes together, lane k taking bytes k, k + 32, ... On the host (tests, the
// emulation) one thread plays the 32 lanes (simt::Warp) and writes the same
// bytes.
struct WarpWriter {
  static constexpr std::uint32_t kLanes = 32;
  std::uint32_t lane = 0;  // on the device, this thread's lane

  // Around a table build (each lane builds the tables in shared memory, all
  // alike): no lane may still read the old tables, or read the new ones early.
  TANDEM_HD void sync() const {
#if defined(__CUDA_ARCH__)
    __syncwarp();
#endif
  }
  // The lanes split the primary lookups of a table build (the host, one
  // thread, builds it all).
  TANDEM_HD std::uint32_t build_lane() const {
#if defined(__CUDA_ARCH__)
    return lane;
#else
    return 0;
#endif
  }
  TANDEM_HD std::uint32_t build_lanes() const {
#if defined(__CUDA_ARCH__)
    return kLanes;
#else
    return 1;
#endif
  }
  TANDEM_HD void stored(std::uint8_t* dst, const std::uint8_t* src, std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    for (std::uint32_t j = lane; j < n; j += kLanes) dst[j] = src[j];
    __syncwarp();
#else
    for (std::uint32_t j = 0; j < n; ++j) dst[j] = src[j];
#endif
  }
  TANDEM_HD InflateStatus codes(BitReader& br, InflateTables& t, std::uint8_t* out, std::size_t capacity,
                                std::size_t& at) const {
    return detail::warp_codes(br, t, out, capacity, at);
  }
};

namespace detail {

// The fixed code of RFC 1951 3.2.6.
TANDEM_HD void build_fixed(InflateTables& t, std::uint32_t lane, std::uint32_t lanes) {
  std::uint8_t* const lengths = t.lengths;
  for (int i = 0; i < 144; ++i) lengths[i] = 8;
  for (int i = 144; i < 256; ++i) lengths[i] = 9;
  for (int i = 256; i < 280; ++i) lengths[i] = 7;
  for (int i = 280; i < 288; ++i) lengths[i] = 8;
  (void)t.litlen.build(lengths, 288, CodeKind::litlen, lane, lanes);
  // The distance lengths after the literal/length ones, so that no lane
  // overwrites lengths another may still be reading.
  for (int i = 288; i < 320; ++i) lengths[i] = 5;
  (void)t.distance.build(lengths + 288, 32, CodeKind::distance, lane, lanes);
}

// Reads a dynamic block's code lengths and builds its tables.
template <class Writer>
TANDEM_HD InflateStatus read_dynamic(BitReader& br, InflateTables& t, const Writer& w) {
  const std::uint32_t lane = w.build_lane();
  const std::uint32_t lanes = w.build_lanes();
  br.refill();
  if (br.avail < 14) return InflateStatus::truncated;
  const std::uint32_t hlit = br.peek(5) + 257;
  const std::uint32_t hdist = ((br.peek(10) >> 5) & 31u) + 1;
  const std::uint32_t hclen = ((br.peek(14) >> 10) & 15u) + 4;
  br.drop(14);
  if (hlit > 286 || hdist > 30) return InflateStatus::too_many_codes;
  constexpr std::uint8_t kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  // In the warp form every lane writes the same lengths to the same shared
  // bytes and reads back only what it wrote itself.
  std::uint8_t* const lengths = t.lengths;
  for (int i = 0; i < 19; ++i) lengths[i] = 0;
  w.sync();  // every lane's zeros before any lane's lengths
  for (std::uint32_t i = 0; i < hclen; ++i) {
    br.refill();
    if (br.avail < 3) return InflateStatus::truncated;
    lengths[kOrder[i]] = static_cast<std::uint8_t>(br.peek(3));
    br.drop(3);
  }
  const HuffmanStatus pre = t.precode.build(lengths, 19, CodeKind::precode, lane, lanes);
  w.sync();
  if (pre != HuffmanStatus::ok) return InflateStatus::bad_precode;
  const std::uint32_t total = hlit + hdist;
  std::uint32_t n = 0;
  while (n < total) {
    br.refill();
    const Decoded d = t.precode.decode(br.peek(16));
    if (d.length == 0) return InflateStatus::invalid_symbol;  // a complete precode has none
    if (d.length > br.avail) return InflateStatus::truncated;
    br.drop(d.length);
    if (d.symbol < 16) {
      lengths[n++] = static_cast<std::uint8_t>(d.symbol);
      continue;
    }
    std::uint32_t repeat;
    std::uint8_t value = 0;
    if (d.symbol == 16) {
      if (br.avail < 2) return InflateStatus::truncated;
      if (n == 0) return InflateStatus::bad_code_lengths;
      value = lengths[n - 1];
      repeat = 3 + br.peek(2);
      br.drop(2);
    } else if (d.symbol == 17) {
      if (br.avail < 3) return InflateStatus::truncated;
      repeat = 3 + br.peek(3);
      br.drop(3);
    } else {
      if (br.avail < 7) return InflateStatus::truncated;
      repeat = 11 + br.peek(7);
      br.drop(7);
    }
    if (repeat > total - n) return InflateStatus::bad_code_lengths;
    for (std::uint32_t i = 0; i < repeat; ++i) lengths[n++] = value;
  }
  if (lengths[256] == 0) return InflateStatus::bad_litlen_code;
  if (t.litlen.build(lengths, static_cast<int>(hlit), CodeKind::litlen, lane, lanes) != HuffmanStatus::ok)
    return InflateStatus::bad_litlen_code;
  if (t.distance.build(lengths + hlit, static_cast<int>(hdist), CodeKind::distance, lane, lanes) !=
      HuffmanStatus::ok)
    return InflateStatus::bad_distance_code;
  return InflateStatus::ok;
}

// A Huffman block's tables (type 1: fixed, 2: dynamic, read from `br`),
// built by the writer's lanes between two syncs.
template <class Writer>
TANDEM_HD InflateStatus read_tables(BitReader& br, InflateTables& t, const Writer& w, std::uint32_t type) {
  w.sync();
  InflateStatus s = InflateStatus::ok;
  if (type == 1) {
    build_fixed(t, w.build_lane(), w.build_lanes());
  } else {
    s = read_dynamic(br, t, w);
  }
  w.sync();
  return s;
}

// One token of a Huffman block: a literal (length 1, value its byte), a
// match (length 3..258, value its distance) or the end of the block
// (length 0).
struct Token {
  std::uint32_t length;
  std::uint32_t value;
};

// Decodes the next token; the caller checks a match's distance against its
// output and the token against the capacity.
TANDEM_HD InflateStatus next_token(BitReader& br, const InflateTables& t, Token* token) {
  // A refill holds more than 32 bits unless the input ends: enough for a
  // length code (15) and its extra bits (5); another before the distance
  // code (15) and its extra bits (13).
  br.refill();
  Decoded d = t.litlen.decode(br.peek(15));
  if (d.length == 0) return InflateStatus::invalid_symbol;
  if (d.length > br.avail) return InflateStatus::truncated;
  br.drop(d.length);
  if (d.symbol < 256) {
    *token = {1, d.symbol};
    return InflateStatus::ok;
  }
  if (d.symbol == 256) {
    *token = {0, 0};
    return InflateStatus::ok;
  }
  const std::uint32_t li = d.symbol - 257;
  if (li >= 29) return InflateStatus::invalid_symbol;
  const std::uint32_t lx = length_extra(li);
  if (lx > br.avail) return InflateStatus::truncated;
  const std::uint32_t length = length_base(li) + br.peek(static_cast<int>(lx));
  br.drop(lx);
  br.refill();
  d = t.distance.decode(br.peek(15));
  if (d.length == 0) return InflateStatus::invalid_symbol;
  if (d.length > br.avail) return InflateStatus::truncated;
  br.drop(d.length);
  if (d.symbol >= 30) return InflateStatus::invalid_symbol;
  const std::uint32_t dx = distance_extra(d.symbol);
  if (dx > br.avail) return InflateStatus::truncated;
  *token = {length, distance_base(d.symbol) + br.peek(static_cast<int>(dx))};
  br.drop(dx);
  return InflateStatus::ok;
}

// Whether token k fits the output at `at` of `capacity`: ok,
// distance_too_far or output_overflow.
TANDEM_HD InflateStatus check_token(const Token& k, std::size_t at, std::size_t capacity) {
  if (k.length == 1) return at < capacity ? InflateStatus::ok : InflateStatus::output_overflow;
  if (k.value > at) return InflateStatus::distance_too_far;
  if (k.length > capacity - at) return InflateStatus::output_overflow;
  return InflateStatus::ok;
}

// Decodes one Huffman-coded block's symbols until its end-of-block code,
// token by token.
template <class Writer>
TANDEM_HD InflateStatus inflate_codes(BitReader& br, const InflateTables& t, std::uint8_t* out, std::size_t capacity,
                                      std::size_t& at, const Writer& w) {
  for (;;) {
    Token k;
    InflateStatus s = next_token(br, t, &k);
    if (s != InflateStatus::ok) return s;
    if (k.length == 0) return InflateStatus::ok;
    s = check_token(k, at, capacity);
    if (s != InflateStatus::ok) return s;
    if (k.length == 1) {
      w.literal(out, at, static_cast<std::uint8_t>(k.value));
    } else {
      w.match(out, at, k.value, k.length);
    }
    at += k.length;
  }
}

// Writes a batch of tokens (token j in lane j: length | value << 16; lanes
// past the batch hold 0) of `total` bytes to out[0, total), where out[-d]
// for d <= the batch's longest distance is earlier output; `stage` gets the
// same bytes. Every byte is found by its own lane, kLanes * 4 bytes at a
// step: its token (a binary search over the tokens' starts), then its value:
// a literal's byte (of a pair of literals, the one at its offset); for a
// match, the byte it copies, taken back to the match's first period
// (out[-distance + offset % distance] when the match overlaps itself), so
// that the source is always before the match. Sources
// before the batch are loaded from out (the step's loads all in flight
// together), those in an earlier round of the batch from stage, those in the
// same round from their lanes once known.
TANDEM_HD void write_batch(const simt::Warp& w, const simt::Lanes<std::uint32_t>& tok, std::uint32_t total,
                           std::uint8_t* out, std::uint8_t* stage) {
  constexpr int kRounds = 4;
  const simt::Lanes<std::uint32_t> len = w.map([&](int l) { return tok[l] & 0xffffu; });
  const simt::Lanes<std::uint32_t> start = w.exclusive_sum(len);
  for (std::uint32_t base = 0; base < total; base += kRounds * simt::kWarpSize) {
    simt::Lanes<std::uint32_t> v[kRounds];
    simt::Lanes<std::int32_t> q[kRounds];  // the source in the batch; -1 when v is the value
    TANDEM_UNROLL
    for (int u = 0; u < kRounds; ++u) {
      const std::uint32_t round = base + static_cast<std::uint32_t>(u) * simt::kWarpSize;
      simt::Lanes<int> k = w.map([](int) { return 0; });
      TANDEM_UNROLL
      for (int step = 16; step >= 1; step >>= 1) {
        const simt::Lanes<int> cand = w.map([&](int l) { return k[l] + step; });
        const simt::Lanes<std::uint32_t> cs = w.shfl(start, cand);
        w.each([&](int l) {
          if (cs[l] <= round + static_cast<std::uint32_t>(l)) k[l] = cand[l];
        });
      }
      const simt::Lanes<std::uint32_t> ot = w.shfl(tok, k);
      const simt::Lanes<std::uint32_t> os = w.shfl(start, k);
      w.each([&](int l) {
        const std::uint32_t off = round + static_cast<std::uint32_t>(l);
        v[u][l] = 0;
        q[u][l] = -1;
        if (off >= total) return;
        const std::uint32_t length = ot[l] & 0xffffu;
        const std::uint32_t value = ot[l] >> 16;
        if (length <= 2) {  // a literal, or a pair of them (fast_token)
          v[u][l] = (value >> (8 * (off - os[l]))) & 0xffu;
          return;
        }
        const std::uint32_t rel = off - os[l];
        const std::uint32_t fold = rel < value ? rel : rel % value;
        const std::int32_t src = static_cast<std::int32_t>(os[l] + fold) - static_cast<std::int32_t>(value);
        if (src < 0) {
          v[u][l] = out[src];
        } else {
          q[u][l] = src;
        }
      });
    }
    TANDEM_UNROLL
    for (int u = 0; u < kRounds; ++u) {
      const std::uint32_t round = base + static_cast<std::uint32_t>(u) * simt::kWarpSize;
      w.each([&](int l) {
        if (q[u][l] >= 0 && static_cast<std::uint32_t>(q[u][l]) < round) {
          v[u][l] = stage[q[u][l]];
          q[u][l] = -1;
        }
      });
      // A source in this round lies in a lower lane; the lowest lane still
      // waiting takes its value from one that is not, so each pass ends one
      // wait at least.
      while (w.ballot(w.map([&](int l) { return q[u][l] >= 0; }))) {
        const simt::Lanes<int> from =
            w.map([&](int l) { return q[u][l] >= 0 ? static_cast<int>(q[u][l] - static_cast<std::int32_t>(round)) : l; });
        const simt::Lanes<std::uint32_t> fv = w.shfl(v[u], from);
        const simt::Lanes<std::int32_t> fq = w.shfl(q[u], from);
        w.each([&](int l) {
          if (q[u][l] >= 0 && fq[l] < 0) {
            v[u][l] = fv[l];
            q[u][l] = -1;
          }
        });
      }
      w.each([&](int l) {
        const std::uint32_t off = round + static_cast<std::uint32_t>(l);
        if (off < total) {
          stage[off] = static_cast<std::uint8_t>(v[u][l]);
          out[off] = static_cast<std::uint8_t>(v[u][l]);
        }
      });
      w.sync();
    }
  }
}

// fast_token's answer for the end-of-block code (never a packed token: a
// token's length is at least 1).
inline constexpr std::uint32_t kEndOfBlock = 0xffff0000u;

// The common token quickly: a code of the primary lookups, with all its bits
// held, valid and fitting the output at `here`. Gives the token packed
// (length | value << 16) or kEndOfBlock, having consumed it; or 0, with `br`
// as it was, for the caller's next_token to decode with every check. The
// checks are those of next_token and check_token, so both give the same
// tokens. With kPairs, a literal whose next code is another literal in the
// primary lookup, all its bits held and fitting the output, comes back with
// it as one token of length 2, the first byte low in its value (no match is
// that short): the warp form's batches then carry up to twice the literals
// for one pass of the parse loop each.
template <bool kPairs = false>
TANDEM_HD std::uint32_t fast_token(BitReader& br, const InflateTables& t, std::size_t here, std::size_t capacity) {
  const BitReader start = br;
  br.refill();
  const std::uint32_t e = t.litlen.primary[br.buf & LitLenTable::kMask];
  const std::uint32_t len = e >> 9;
  const std::uint32_t sym = e & 0x1ffu;
  if (e >= LitLenTable::kLong || len == 0 || len > br.avail) {
    br = start;
    return 0;
  }
  if (sym < 256) {
    if (here >= capacity) {
      br = start;
      return 0;
    }
    br.drop(len);
    if (kPairs && here + 1 < capacity) {
      const std::uint32_t e1 = t.litlen.primary[br.buf & LitLenTable::kMask];
      const std::uint32_t len1 = e1 >> 9;
      if (e1 < LitLenTable::kLong && len1 != 0 && len1 <= br.avail && (e1 & 0x1ffu) < 256) {
        br.drop(len1);
        return 2u | ((sym | ((e1 & 0xffu) << 8)) << 16);
      }
    }
    return 1u | (sym << 16);
  }
  if (sym == 256) {
    br.drop(len);
    return kEndOfBlock;
  }
  const std::uint32_t li = sym - 257;
  const std::uint32_t lx = length_extra(li);
  if (li < 29 && len + lx <= br.avail) {
    br.drop(len);
    const std::uint32_t length = length_base(li) + br.peek(static_cast<int>(lx));
    br.drop(lx);
    br.refill();
    const std::uint32_t e2 = t.distance.primary[br.buf & DistanceTable::kMask];
    const std::uint32_t len2 = e2 >> 9;
    const std::uint32_t dsym = e2 & 0x1ffu;
    const std::uint32_t dx = distance_extra(dsym);
    if (e2 < DistanceTable::kLong && len2 != 0 && dsym < 30 && len2 + dx <= br.avail) {
      br.drop(len2);
      const std::uint32_t distance = distance_base(dsym) + br.peek(static_cast<int>(dx));
      br.drop(dx);
      if (distance <= here && length <= capacity - here) return length | (distance << 16);
    }
  }
  br = start;
  return 0;
}

// The next token, packed (length | value << 16), or kEndOfBlock: by the
// fast path when it takes the token, else (a long code, too few bits left,
// an error) by next_token and check_token from the token's start.
template <bool kPairs = false>
TANDEM_HD InflateStatus packed_token(BitReader& br, const InflateTables& t, std::size_t here, std::size_t capacity,
                                     std::uint32_t* packed) {
  *packed = fast_token<kPairs>(br, t, here, capacity);
  if (*packed != 0) return InflateStatus::ok;
  Token k;
  InflateStatus s = next_token(br, t, &k);
  if (s != InflateStatus::ok) return s;
  if (k.length == 0) {
    *packed = kEndOfBlock;
    return InflateStatus::ok;
  }
  s = check_token(k, here, capacity);
  if (s == InflateStatus::ok) *packed = k.length | (k.value << 16);
  return s;
}

// The warp form's Huffman block: batches of up to kBatchTokens tokens, each
// decoded by every lane alike and then written by the lanes together. An
// error ends the batch before the token that has it; the tokens before it
// are written, as the thread form writes them.
TANDEM_HD InflateStatus warp_codes(BitReader& br, InflateTables& t, std::uint8_t* out, std::size_t capacity,
                                   std::size_t& at) {
  const simt::Warp w{};
  for (;;) {
    simt::Lanes<std::uint32_t> tok = w.map([](int) { return 0u; });
    std::uint32_t count = 0;
    std::uint32_t total = 0;
    InflateStatus s = InflateStatus::ok;
    bool end = false;
    while (count < kBatchTokens && total + 258 <= kStageBytes) {
      std::uint32_t packed = 0;
      s = packed_token<true>(br, t, at + total, capacity, &packed);
      if (s != InflateStatus::ok) break;
      if (packed == kEndOfBlock) {
        end = true;
        break;
      }
      w.each([&](int l) {
        if (l == static_cast<int>(count)) tok[l] = packed;
      });
      ++count;
      total += packed & 0xffffu;
    }
    if (count > 0) write_batch(w, tok, total, out + at, t.stage);
    at += total;
    if (s != InflateStatus::ok) return s;
    if (end) return InflateStatus::ok;
  }
}

}  // namespace detail

template <class Writer>
TANDEM_HD InflateResult inflate_from(BitReader& br, std::size_t at, const std::uint8_t* in, std::size_t in_size,
                                     std::uint8_t* out, std::size_t capacity, InflateTables& t, const Writer& w);

// Inflates in[0 .. in_size) into out[0 .. capacity), with `t` as the tables'
// storage. Stops after a final block, or, after a non-final block, when fewer
// than 8 input bits remain (every deflate block needs at least 10 bits, so
// those bits can only be a chunk's padding).
template <class Writer>
TANDEM_HD InflateResult inflate_stream(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                       std::size_t capacity, InflateTables& t, const Writer& w) {
  InflateResult r;
  if ((in == nullptr && in_size != 0) || (out == nullptr && capacity != 0)) {
    r.status = InflateStatus::invalid_item;
    return r;
  }
  BitReader br(in, in_size);
  return inflate_from(br, 0, in, in_size, out, capacity, t, w);
}

// The one-thread form.
TANDEM_HD InflateResult inflate_stream(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                       std::size_t capacity, InflateTables& t) {
  return inflate_stream(in, in_size, out, capacity, t, ThreadWriter{});
}

// inflate_stream's blocks from where `br` stands, `at` bytes of output
// already written (a block boundary of the same stream).
template <class Writer>
TANDEM_HD InflateResult inflate_from(BitReader& br, std::size_t at, const std::uint8_t* in, std::size_t in_size,
                                     std::uint8_t* out, std::size_t capacity, InflateTables& t, const Writer& w) {
  InflateResult r;
  InflateStatus s = InflateStatus::ok;
  for (;;) {
    br.refill();
    if (br.bits_left() < 8) {
      r.end = InflateEnd::input_end;
      break;
    }
    if (br.avail < 3) {
      s = InflateStatus::truncated;
      break;
    }
    const std::uint32_t header = br.peek(3);
    br.drop(3);
    const bool final_block = (header & 1u) != 0;
    const std::uint32_t type = header >> 1;
    if (type == 0) {
      br.align_and_unload();
      if (in_size - br.pos < 4) {
        s = InflateStatus::truncated;
        break;
      }
      const std::uint32_t len = in[br.pos] | (static_cast<std::uint32_t>(in[br.pos + 1]) << 8);
      const std::uint32_t nlen = in[br.pos + 2] | (static_cast<std::uint32_t>(in[br.pos + 3]) << 8);
      if ((len ^ 0xffffu) != nlen) {
        s = InflateStatus::stored_length_mismatch;
        break;
      }
      br.pos += 4;
      if (in_size - br.pos < len) {
        s = InflateStatus::truncated;
        break;
      }
      if (len > capacity - at) {
        s = InflateStatus::output_overflow;
        break;
      }
      w.stored(out + at, in + br.pos, len);
      at += len;
      br.restart_at(br.pos + len);
    } else if (type == 3) {
      s = InflateStatus::reserved_block_type;
      break;
    } else {
      s = detail::read_tables(br, t, w, type);
      if (s != InflateStatus::ok) break;
      s = w.codes(br, t, out, capacity, at);
      if (s != InflateStatus::ok) break;
    }
    if (final_block) {
      r.end = InflateEnd::final_block;
      break;
    }
  }
  r.status = s;
  r.out_size = at;
  r.in_used = br.bytes_used();
  return r;
}

// ------------------------------------------------------- segmented form ----
//
// tandem's GPU encoder writes a chunk as one Huffman block whose tokens come
// in segments of a fixed number of output bytes (the last segment: the
// rest), and it knows the bit where each segment's tokens start. With those
// starts, the lanes of a team of warps decode the segments at once, each
// lane one segment (the parse, which is the slow part, in parallel); then
// the team's first warp copies the matches in output order. The starts are
// untrusted, and nothing depends on them but speed:
//  - segment 0 must start where the block header ends, and segment k's
//    tokens must fill exactly its bytes and end exactly at segment k + 1's
//    start bit, so each lane's tokens are the ones a decode from the start
//    of the block meets there;
//  - every check of the one-thread form applies to each token (a match's
//    distance against the output before it, the output's capacity);
//  - when any of that fails, for whatever reason, the item is inflated
//    again from its first byte by the warp form, so statuses and bytes are
//    always those of inflate_stream.
// A decoded match waits as a SegmentMatch in the caller's records until the
// literals of every segment are written.

// Segments of at least this many bytes (smaller ones are not taken), at
// most kMaxSegments of them (a lane each of a team of kSegmentWarps warps).
inline constexpr std::uint32_t kMinSegmentBytes = 1024;
inline constexpr int kSegmentWarps = 2;
inline constexpr std::uint32_t kMaxSegments = kSegmentWarps * simt::kWarpSize;

// Where an item's segments start: starts[k], for k < count, is the bit (from
// the item's first byte) where segment k's first token starts; segment k
// holds output bytes [k * segment_bytes, (k + 1) * segment_bytes), the last
// one up to the end of the block.
struct SegmentStarts {
  const std::uint32_t* starts = nullptr;
  std::uint32_t count = 0;
  std::uint32_t segment_bytes = 0;
};

// A match waiting for its copy: its first output byte, then its length and
// its distance (length | distance << 16).
struct SegmentMatch {
  std::uint32_t dst;
  std::uint32_t length_distance;
};

// Records an item of up to `capacity` output bytes needs: segment k's go at
// floor(k * segment_bytes / 3) on, and a segment of S bytes has at most S / 3
// matches, so the lists never meet.
TANDEM_HD constexpr std::size_t segment_records(std::size_t capacity) { return capacity / 3 + 1; }

namespace detail {

// One lane's segment: tokens from `br` into out[pos, end) (the last segment:
// up to its end-of-block code, within out[pos, end)), literals written,
// matches recorded in recs. ok only when the segment is whole: a segment
// other than the last ends exactly at `end`.
TANDEM_HD InflateStatus decode_segment(BitReader& br, const InflateTables& t, std::uint8_t* out, std::uint32_t& pos,
                                       std::uint32_t end, bool last, SegmentMatch* recs, std::uint32_t* count) {
  std::uint32_t n = 0;
  InflateStatus s = InflateStatus::ok;
  for (;;) {
    if (!last && pos == end) break;
    std::uint32_t packed = 0;
    s = packed_token(br, t, pos, end, &packed);
    if (s != InflateStatus::ok) break;
    if (packed == kEndOfBlock) {
      if (!last) s = InflateStatus::truncated;
      break;
    }
    const std::uint32_t len = packed & 0xffffu;
    if (len == 1) {
      out[pos] = static_cast<std::uint8_t>(packed >> 16);
    } else {
      recs[n++] = {pos, packed};
    }
    pos += len;
  }
  *count = n;
  return s;
}

}  // namespace detail

// The warp form's writer for this lane.
TANDEM_HD WarpWriter warp_writer(const simt::Warp& w) {
#if defined(__CUDA_ARCH__)
  return WarpWriter{static_cast<std::uint32_t>(w.lane())};
#else
  (void)w;
  return WarpWriter{};
#endif
}

// What the warps of an item's team share while they take its segments (in
// shared memory on the device).
struct SegmentShared {
  std::uint32_t count[kMaxSegments];  // the matches each segment recorded
  std::uint32_t end_bit;              // where the last segment's tokens end
  std::uint32_t end_out;              // and the output byte after them
  std::uint32_t header;               // the first block's 3 header bits
  std::uint32_t header_bad;           // nonzero: the header does not lead to segment 0
  std::uint32_t segments_bad;         // nonzero: a segment did not hold up
};

// Inflates an item as inflate_stream's warp form does (the same statuses,
// sizes and bytes), its first block by segments where `seg` holds up (see
// above), with a team of W warps: the segments go a lane each, the first
// warp does the rest. `warp` is the calling warp's index in its block; the
// result is the team's first warp's. recs: segment_records(capacity)
// records, or null (no segments).
template <int W>
TANDEM_HD InflateResult inflate_segmented(const simt::Team<W>& team, int warp, const std::uint8_t* in,
                                          std::size_t in_size, std::uint8_t* out, std::size_t capacity,
                                          InflateTables& t, const SegmentStarts& seg, SegmentMatch* recs,
                                          SegmentShared& sh) {
  static_assert(W >= 1 && W * simt::kWarpSize <= static_cast<int>(kMaxSegments), "a lane a segment");
  const std::uint32_t k_count = seg.count;
  const bool usable = recs != nullptr && seg.starts != nullptr && k_count >= 2 &&
                      k_count <= static_cast<std::uint32_t>(W * simt::kWarpSize) &&
                      seg.segment_bytes >= kMinSegmentBytes && in != nullptr && out != nullptr &&
                      capacity <= 0xffffffffu &&
                      capacity > static_cast<std::size_t>(k_count - 1) * seg.segment_bytes;
  InflateResult r;
  // The first warp inflates the item from its first byte: without segments,
  // or when they do not hold up.
  const auto whole = [&] {
    team.members(warp, [&](const simt::Warp& w, int m) {
      if (m == 0) r = inflate_stream(in, in_size, out, capacity, t, warp_writer(w));
    });
    return r;
  };
  if (!usable) return whole();

  // 0. The first block's header, read by the first warp's lanes alike (as
  // inflate_stream reads it), its tables built in t.
  team.members(warp, [&](const simt::Warp& w, int m) {
    if (m != 0) return;
    BitReader br(in, in_size);
    br.refill();
    const std::uint32_t header = br.avail >= 3 ? br.peek(3) : 0u;
    const std::uint32_t type = header >> 1;
    bool bad = type != 1 && type != 2;
    if (!bad) {
      br.drop(3);
      bad = detail::read_tables(br, t, warp_writer(w), type) != InflateStatus::ok ||
            br.bit_position() != seg.starts[0];
    }
    w.each([&](int l) {
      if (l != 0) return;
      sh.header = header;
      sh.header_bad = bad ? 1u : 0u;
      sh.segments_bad = 0;
    });
  });
  team.sync();
  if (sh.header_bad != 0) return whole();

  // 1. Each lane its segment: the literals written, the matches recorded.
  const auto cap32 = static_cast<std::uint32_t>(capacity);
  team.members(warp, [&](const simt::Warp& w, int m) {
    w.each([&](int l) {
      const auto k = static_cast<std::uint32_t>(m * simt::kWarpSize + l);
      if (k >= k_count) return;
      const bool last = k + 1 == k_count;
      std::uint32_t pos = k * seg.segment_bytes;
      const std::uint32_t end = last ? cap32 : pos + seg.segment_bytes;
      BitReader lane_br(in, in_size);
      bool good = lane_br.seek_bit(seg.starts[k]);
      std::uint32_t count = 0;
      if (good) {
        const InflateStatus s =
            detail::decode_segment(lane_br, t, out, pos, end, last, recs + (k * seg.segment_bytes) / 3, &count);
        const auto end_bit = static_cast<std::uint32_t>(lane_br.bit_position());
        good = s == InflateStatus::ok && (last || end_bit == seg.starts[k + 1]);
        if (last) {
          sh.end_bit = end_bit;
          sh.end_out = pos;
        }
      }
      sh.count[k] = count;
      if (!good) simt::atomic_or_block(&sh.segments_bad, 1u);
    });
  });
  team.sync();  // every segment's literals are written before any match reads them
  if (sh.segments_bad != 0) return whole();

  team.members(warp, [&](const simt::Warp& w, int m) {
    if (m != 0) return;
    // 2. The matches in output order, 32 at a time, a match a lane, in
    // rounds: a match goes once every lower match of its group whose bytes
    // it reads (other than its own) has gone; the lowest waiting one always
    // can.
    for (std::uint32_t k = 0; k < k_count; ++k) {
      const std::uint32_t n = sh.count[k];
      const SegmentMatch* list = recs + (k * seg.segment_bytes) / 3;
      for (std::uint32_t g = 0; g < n; g += simt::kWarpSize) {
        const simt::Lanes<SegmentMatch> mt = w.map([&](int l) -> SegmentMatch {
          const std::uint32_t i = g + static_cast<std::uint32_t>(l);
          return i < n ? list[i] : SegmentMatch{0, 0};
        });
        const simt::Lanes<std::uint32_t> dst = w.map([&](int l) { return mt[l].dst; });
        const simt::Lanes<std::uint32_t> dst_end =
            w.map([&](int l) { return mt[l].dst + (mt[l].length_distance & 0xffffu); });
        // What a match reads that it does not write itself: [src, read_end).
        const simt::Lanes<std::uint32_t> src = w.map([&](int l) { return mt[l].dst - (mt[l].length_distance >> 16); });
        const simt::Lanes<std::uint32_t> read_end = w.map([&](int l) {
          return dst_end[l] - (mt[l].length_distance >> 16) < mt[l].dst ? dst_end[l] - (mt[l].length_distance >> 16)
                                                                          : mt[l].dst;
        });
        // The lower matches each one reads from.
        simt::Lanes<std::uint32_t> needs = w.map([](int) { return 0u; });
        for (int j = 0; j < simt::kWarpSize - 1; ++j) {
          const std::uint32_t jd = w.shfl(dst, j);
          const std::uint32_t je = w.shfl(dst_end, j);
          w.each([&](int l) {
            if (j < l && jd < read_end[l] && je > src[l]) needs[l] |= 1u << j;
          });
        }
        std::uint32_t waiting = w.ballot(w.map([&](int l) { return g + static_cast<std::uint32_t>(l) < n; }));
        while (waiting != 0u) {
          const std::uint32_t go = w.ballot(
              w.map([&](int l) { return ((waiting >> l) & 1u) != 0u && (needs[l] & waiting) == 0u; }));
          w.each([&](int l) {
            if ((go >> l) & 1u)
              simt::lane_match(out, mt[l].dst, mt[l].length_distance >> 16, mt[l].length_distance & 0xffffu);
          });
          w.sync();
          waiting &= ~go;
        }
      }
    }

    // 3. The rest of the stream (the chunk's closing stored block, or more
    // blocks), as inflate_stream goes on after a block.
    BitReader br(in, in_size);
    br.seek_bit(sh.end_bit);
    if ((sh.header & 1u) != 0) {
      r.end = InflateEnd::final_block;
      r.out_size = sh.end_out;
      r.in_used = br.bytes_used();
    } else {
      r = inflate_from(br, sh.end_out, in, in_size, out, capacity, t, warp_writer(w));
    }
    r.by_segments = true;
  });
  return r;
}

}  // namespace tandem::gpu::inflate
