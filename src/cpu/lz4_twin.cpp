// The CPU twin of the GPU LZ4 encoder (see lz4_twin.hpp).
#include "cpu/lz4_twin.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "gpu/lz4_gpu_encode.hpp"

namespace tandem::cpu {

namespace {

namespace k = gpu::lz4k;
using gpu::ItemStatus;

static_assert(std::endian::native == std::endian::little, "the twin reads words as little-endian");
// Every candidate lies at or after its segment's prime base, so its offset
// never exceeds kMaxOffset: the GPU's offset test never fails, and the twin
// leaves it out.
static_assert(k::kPrimeBytes + k::kSegmentSize <= k::kMaxOffset + 1, "offsets fit without a test");

constexpr std::uint32_t kStep = 32;  // positions a step, a warp's lanes

inline std::uint32_t load32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Where the match whose first 4 bytes are at e - 4 (and e - 4 - off) ends:
// bytes equal in[x] == in[x - off] from x = e on while x < limit.
inline std::uint32_t extend_forward(const std::uint8_t* in, std::uint32_t e, std::uint32_t off, std::uint32_t limit) {
  while (e + 8 <= limit) {
    const std::uint64_t x = load64(in + e) ^ load64(in + e - off);
    if (x) return e + static_cast<std::uint32_t>(std::countr_zero(x)) / 8;
    e += 8;
  }
  while (e < limit && in[e] == in[e - off]) ++e;
  return e;
}

// Bytes equal in[q - j] == in[c - j] for j = 1..most (c < q, most <= c).
inline std::uint32_t extend_backward(const std::uint8_t* in, std::uint32_t q, std::uint32_t c, std::uint32_t most) {
  std::uint32_t j = 0;
  while (j + 8 <= most) {
    const std::uint64_t x = load64(in + q - j - 8) ^ load64(in + c - j - 8);
    if (x) return j + static_cast<std::uint32_t>(std::countl_zero(x)) / 8;
    j += 8;
  }
  while (j < most && in[q - j - 1] == in[c - j - 1]) ++j;
  return j;
}

// Writes the extension bytes of a length field holding v >= 15.
inline std::uint8_t* put_extension(std::uint8_t* o, std::uint32_t v) {
  v -= 15;
  if (v >= 255) {
    const std::uint32_t full = v / 255;
    std::memset(o, 255, full);
    o += full;
    v -= full * 255;
  }
  *o++ = static_cast<std::uint8_t>(v);
  return o;
}

// Copies len bytes from s to o, in 16-byte pieces where both sides have the
// room past len (the bytes past len in out are written over later or lie
// past the block, inside the capacity).
inline void copy_literals(std::uint8_t* o, const std::uint8_t* s, std::uint32_t len, const std::uint8_t* o_end,
                          const std::uint8_t* s_end) {
  if (len <= 16 && o_end - o >= 16 && s_end - s >= 16) {
    std::memcpy(o, s, 16);
  } else if (static_cast<std::size_t>(o_end - o) >= std::size_t{len} + 16 &&
             static_cast<std::size_t>(s_end - s) >= std::size_t{len} + 16) {
    for (std::uint32_t i = 0; i < len; i += 16) std::memcpy(o + i, s + i, 16);
  } else {
    std::memcpy(o, s, len);
  }
}

// The block's sequences as the parse finds them, written straight into out.
class Writer {
 public:
  Writer(const std::uint8_t* in, std::uint32_t n, std::uint8_t* out, std::uint32_t cap)
      : in_(in), in_end_(in + n), n_(n), out_(out), op_(out), end_(out + cap) {}

  // A match of in[p, e) at offset off, after the literals since the last
  // match. False when the block cannot fit: this sequence and the last
  // literals' token do not.
  bool sequence(std::uint32_t p, std::uint32_t e, std::uint32_t off) {
    const std::uint32_t lit = p - anchor_;
    const std::uint32_t mcode = e - p - k::kEncMinMatch;
    const std::uint8_t* src = in_ + anchor_;
    if (lit < 15 && mcode < 15 && end_ - op_ >= 20 && in_end_ - src >= 16) {
      // The common short sequence: a token, up to 14 literals (copied as 16
      // bytes), the offset; with room for it, its copy and the last token.
      std::uint8_t* o = op_;
      o[0] = static_cast<std::uint8_t>(lit << 4 | mcode);
      std::memcpy(o + 1, src, 16);
      o += 1 + lit;
      o[0] = static_cast<std::uint8_t>(off);
      o[1] = static_cast<std::uint8_t>(off >> 8);
      op_ = o + 2;
      anchor_ = e;
      return true;
    }
    const std::size_t size = k::sequence_bytes(lit, e - p);
    if (static_cast<std::size_t>(end_ - op_) < size + 1) return false;
    std::uint8_t* token = op_;
    std::uint8_t* o = op_ + 1;
    std::uint32_t t;
    if (lit >= 15) {
      t = 15u << 4;
      o = put_extension(o, lit);
    } else {
      t = lit << 4;
    }
    copy_literals(o, src, lit, end_, in_end_);
    o += lit;
    o[0] = static_cast<std::uint8_t>(off);
    o[1] = static_cast<std::uint8_t>(off >> 8);
    o += 2;
    if (mcode >= 15) {
      t |= 15u;
      o = put_extension(o, mcode);
    } else {
      t |= mcode;
    }
    *token = static_cast<std::uint8_t>(t);
    op_ = o;
    anchor_ = e;
    return true;
  }

  // The last literals; false when they do not fit. Then the block's size.
  bool finish() {
    const std::uint32_t ll = n_ - anchor_;
    const std::size_t size = 1 + std::size_t{k::extension_size(ll)} + ll;
    if (static_cast<std::size_t>(end_ - op_) < size) return false;
    std::uint8_t* o = op_;
    if (ll >= 15) {
      *o = 15u << 4;
      o = put_extension(o + 1, ll);
    } else {
      *o++ = static_cast<std::uint8_t>(ll << 4);
    }
    if (ll) std::memcpy(o, in_ + anchor_, ll);
    op_ = o + ll;
    return true;
  }
  std::size_t size() const { return static_cast<std::size_t>(op_ - out_); }

 private:
  const std::uint8_t* in_;
  const std::uint8_t* in_end_;
  std::uint32_t n_;
  std::uint8_t* out_;
  std::uint8_t* op_;
  std::uint8_t* end_;
  std::uint32_t anchor_ = 0;  // where the next literals start: the end of the last match
};

// The tables of a thread; entries of table hold positions after the
// segment's prime base, as the warp's do.
struct Tables {
  alignas(64) std::uint16_t table[k::kPrimeEntries];
  alignas(64) std::uint32_t running[k::kPrimeEntries];  // newest prime position of each hash, plus 1
};
thread_local Tables tables;

// The first half of a step of tile's count positions (Count of them, or 0
// when count says): every position reads its candidate before any writes,
// and whether the candidate's 4 bytes equal its own is bit i of the result
// (the warp's ballot); then the step's first position of each hash goes in
// (written from the last down, the lowest writes last). Loads and stores
// only, without branches; full steps have their loops unrolled.
template <int HashLog, std::uint32_t Count>
[[gnu::always_inline]] inline std::uint32_t read_step(const std::uint8_t* in, std::uint32_t tile, std::uint32_t count,
                                                      std::uint32_t base, std::uint16_t* table, std::uint32_t* keys,
                                                      std::uint32_t* cands) {
  std::uint32_t hits = 0;
  const auto read = [&](std::uint32_t i) {
    const std::uint32_t seq = load32(in + tile + i);
    const std::uint32_t key = k::hash4<HashLog>(seq);
    const std::uint32_t c = base + table[key];  // <= tile + i
    keys[i] = key;
    cands[i] = c;
    hits |= static_cast<std::uint32_t>(load32(in + c) == seq) << i;
  };
  const std::uint16_t at = static_cast<std::uint16_t>(tile - base);
  if constexpr (Count != 0) {
#pragma GCC unroll 32
    for (std::uint32_t i = 0; i < Count; ++i) read(i);
#pragma GCC unroll 32
    for (std::uint32_t j = 1; j <= Count; ++j) table[keys[Count - j]] = static_cast<std::uint16_t>(at + Count - j);
  } else {
    for (std::uint32_t i = 0; i < count; ++i) read(i);
    for (std::uint32_t i = count; i-- > 0;) table[keys[i]] = static_cast<std::uint16_t>(at + i);
  }
  return hits;
}

// find_segment_with, scalar: parses segment seg of in[0, n) from table and
// writes its sequences. False when the block will not fit.
template <int HashLog>
bool parse_segment(const std::uint8_t* in, std::uint32_t n, std::uint32_t seg, std::uint16_t* table, Writer& out) {
  const std::uint32_t seg_start = seg * k::kSegmentSize;
  const std::uint32_t seg_end = n - seg_start < k::kSegmentSize ? n : seg_start + k::kSegmentSize;
  const std::uint32_t match_limit =
      n > k::kLastLiterals ? (seg_end < n - k::kLastLiterals ? seg_end : n - k::kLastLiterals) : 0;
  const std::uint32_t last_start =
      n > k::kMfLimit && match_limit >= k::kEncMinMatch
          ? (n - k::kMfLimit < match_limit - k::kEncMinMatch ? n - k::kMfLimit : match_limit - k::kEncMinMatch)
          : 0;
  if (!(n > k::kMfLimit && match_limit >= seg_start + k::kEncMinMatch && last_start >= seg_start)) return true;
  const std::uint32_t base = k::prime_base(seg_start);
  std::uint32_t cur = seg_start;  // positions before this one are inside the last match
  std::uint32_t tile = seg_start;
  // Each position's hash and the candidate it read, for the step's writes
  // and its parse.
  std::uint32_t keys[kStep];
  std::uint32_t cands[kStep];
  while (tile <= last_start) {
    const std::uint32_t count = last_start - tile < kStep ? last_start - tile + 1 : kStep;
    std::uint32_t hits = count == kStep ? read_step<HashLog, kStep>(in, tile, kStep, base, table, keys, cands)
                                        : read_step<HashLog, 0>(in, tile, count, base, table, keys, cands);
    // A candidate lies before its position, but for the cleared entry
    // (position 0) in the block's first step.
    if (tile == 0) hits &= ~1u;
    // Then the parse: the lowest hit at or past the last match's end starts
    // the next match.
    while (hits) {
      const std::uint32_t i = static_cast<std::uint32_t>(std::countr_zero(hits));
      const std::uint32_t q = tile + i;
      const std::uint32_t c = cands[i];
      const std::uint32_t off = q - c;
      const std::uint32_t e = extend_forward(in, q + k::kEncMinMatch, off, match_limit);
      const std::uint32_t most = q - cur < c ? q - cur : c;
      const std::uint32_t back = extend_backward(in, q, c, most);
      if (!out.sequence(q - back, e, off)) return false;
      cur = e;
      const std::uint32_t past = e - tile;  // > i
      hits = past < kStep ? hits & (~0u << past) : 0u;
    }
    tile = cur > tile + kStep ? cur : tile + kStep;
  }
  return true;
}

// The positions of segment seg that prime the segments after it, hashed into
// running (as prime_group does for a segment that is not the block's last).
void hash_prime_positions(const std::uint8_t* in, std::uint32_t n, std::uint32_t seg, std::uint32_t* running) {
  const std::uint32_t seg_start = seg * k::kSegmentSize;
  const std::uint32_t seg_end = seg_start + k::kSegmentSize;
  const std::uint32_t end = seg_end + 3 <= n ? seg_end : n - 3;
  for (std::uint32_t q = seg_start; q < end; q += k::kPrimeStride) {
    running[k::hash4<k::kLargeHashLog>(load32(in + q))] = q + 1;  // q grows: the newest
  }
}

// Segment s's prime table from running: the entries at or after its base.
void load_prime(const std::uint32_t* running, std::uint32_t s, std::uint16_t* table) {
  const std::uint32_t base = k::prime_base(s * k::kSegmentSize);
  for (std::uint32_t h = 0; h < k::kPrimeEntries; ++h) {
    const std::uint32_t r = running[h];
    table[h] = static_cast<std::uint16_t>(r > base ? r - 1 - base : 0u);
  }
}

}  // namespace

ItemStatus lz4_twin_compress(const std::uint8_t* in, std::size_t n, std::uint8_t* out, std::size_t capacity,
                             std::size_t* out_size) {
  *out_size = 0;
  if (n > gpu::kMaxItemSize || (!in && n) || (!out && capacity)) return ItemStatus::invalid_item;
  const std::size_t bound = k::max_block_size(n);
  const std::uint32_t cap = static_cast<std::uint32_t>(capacity < bound ? capacity : bound);
  const std::uint32_t size = static_cast<std::uint32_t>(n);
  Writer w(in, size, out, cap);
  Tables& t = tables;
  const std::uint32_t segments = static_cast<std::uint32_t>(k::segment_count(n));
  bool fits = true;
  if (segments == 1 && k::hash_log_for(n) == k::kSmallHashLog) {
    std::fill_n(t.table, std::size_t{1} << k::kSmallHashLog, std::uint16_t{0});
    fits = parse_segment<k::kSmallHashLog>(in, size, 0, t.table, w);
  } else if (segments >= 1) {
    std::fill_n(t.table, k::kPrimeEntries, std::uint16_t{0});
    if (segments > 1) std::fill_n(t.running, k::kPrimeEntries, 0u);
    for (std::uint32_t s = 0; s < segments && fits; ++s) {
      if (s > 0) load_prime(t.running, s, t.table);
      fits = parse_segment<k::kLargeHashLog>(in, size, s, t.table, w);
      if (s + 1 < segments) hash_prime_positions(in, size, s, t.running);
    }
  }
  if (!fits || !w.finish()) return ItemStatus::output_overflow;
  *out_size = w.size();
  return w.size() >= n ? ItemStatus::incompressible : ItemStatus::ok;
}

}  // namespace tandem::cpu
