// The LZ4 block decoder that the GPU runs, every length, offset and count
// checked against the input and the output capacity: decode_block, W warps
// per LZ4 block (W = 1 for batches of small blocks, where the batch has
// blocks enough to fill the GPU; more for large blocks).
//
// Parsing an LZ4 block is a chain: where a sequence starts depends on every
// length before it. Copying is not, once each output byte's origin is known.
// So the block decodes in rounds of up to 32 sequences per copying warp, one
// sequence per lane:
//  - parse: one lane walks the round's sequence headers as plain scalar code
//    (the short serial chain: token, length extensions, offset) and records
//    each sequence in shared memory, checking every field;
//  - copy: each lane copies its sequence's literals from the input, and its
//    match. A match whose source lies in earlier rounds (complete by then) is
//    a plain copy. A byte whose source lies in this round's output is traced
//    back instead: a source byte in a literal run is read from the input; one
//    in a match stands for the byte `offset` before it (the period of a match
//    that overlaps itself is folded at once), and so on until a literal or an
//    earlier round. So no copy waits for another, and a round's copies run
//    all at once.
// With one warp (batches of small blocks, which fill the GPU by their number)
// the warp parses, then copies. With W warps, warp 0 parses round r + 1 while
// the others copy round r, two round buffers in turn.
//
// A lane copies its own short runs and matches (an average sequence is a few
// literals and a short match: a lane each keeps a warp's lanes busy, where a
// warp per sequence left most idle); long ones are copied by the whole warp.
#pragma once

#include <cstdint>

#include "gpu/simt.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu::lz4k {

using simt::Block;
using simt::Lanes;
using simt::Warp;

inline constexpr std::uint32_t kMinMatch = 4;
// Warps per LZ4 block for large blocks.
inline constexpr int kDecodeWarps = 4;
// Runs and matches longer than this are copied by the warp, shorter ones by their own lane.
inline constexpr std::uint32_t kLaneCopy = 32;

// One round's sequences, as the parse recorded them.
template <std::uint32_t R>
struct DecodeRound {
  static constexpr std::uint32_t kSequences = R;
  std::uint32_t lit_src[R];    // input position of the literals
  std::uint32_t out_pos[R];    // output position of the literals
  std::uint32_t lit_len[R];
  std::uint32_t offset[R];     // 0: literals only
  std::uint32_t match_len[R];  // 0: literals only
  std::uint32_t count;         // sequences
  std::uint32_t start_out;     // output position where the round starts
  std::uint32_t end_out;       // output position where the round ends (the block's size so far)
  ItemStatus status;           // ok, or what stopped the parse in this round
  std::uint32_t last;          // 1: the block ends (or failed) in this round
};

// The shared memory of a block of W warps: one round buffer for one warp,
// else two (parsed by warp 0 and copied by the other W - 1 in turn).
template <int W>
struct DecodeShared {
  static constexpr int kCopyWarps = W == 1 ? 1 : W - 1;
  static constexpr int kBuffers = W == 1 ? 1 : 2;
  using Round = DecodeRound<32u * kCopyWarps>;
  Round round[kBuffers];
};

// The parsing lane's place in the block between rounds.
struct DecodeCursor {
  std::uint32_t ip = 0;
  std::uint32_t op = 0;
};

// Adds an LZ4 length extension (bytes of 255 continue it, the first other byte
// ends it) starting at *p to *len. Returns false when the input ends first.
// A length past `limit` is kept at limit + 1 (no overflow; the caller's range
// check rejects it); the work is one step per input byte.
TANDEM_HD bool read_length(const std::uint8_t* in, std::uint32_t n, std::uint32_t* p, std::uint32_t* len,
                           std::uint32_t limit) {
  std::uint32_t q = *p;
  std::uint32_t v = *len;
  for (;;) {
    if (q >= n) return false;
    const std::uint32_t b = in[q++];
    v = v > limit ? v : v + b;
    if (b != 255) break;
  }
  if (v > limit) v = limit + 1;
  *p = q;
  *len = v;
  return true;
}

// Copies a match of ml bytes at out[at] from `offset` bytes back. Its source,
// clipped to below out[at], is written; aligned loads may read up to
// out[ready).
TANDEM_HD void copy_match_at(const Warp& w, std::uint8_t* out, std::uint32_t at, std::uint32_t offset,
                             std::uint32_t ml, std::uint32_t ready) {
  std::uint8_t* dst = out + at;
  const std::uint8_t* src = dst - offset;
  if (offset >= ml) {
    simt::warp_copy(w, dst, src, ml, out, out + ready);
  } else if (offset < 32) {
    // The match repeats its first `offset` bytes; a whole number of periods
    // fits in a warp, so each lane repeats one byte of the pattern.
    const std::uint32_t period = (32 / offset) * offset;
    w.each([&](int l) {
      const std::uint32_t lane = static_cast<std::uint32_t>(l);
      if (lane < period) {
        const std::uint8_t b = src[lane % offset];
        for (std::uint32_t j = lane; j < ml; j += period) dst[j] = b;
      }
    });
  } else {
    // Overlapping with a period of 32 or more: copy one period at a time,
    // each copy reading only bytes written before it.
    for (std::uint32_t done = 0; done < ml; done += offset) {
      const std::uint32_t len = ml - done < offset ? ml - done : offset;
      simt::warp_copy(w, dst + done, src + done, len, out, dst + done);
      w.sync();
    }
  }
}

// One lane: parses up to Round::kSequences sequences from c into s,
// checking every field. A sequence that fails after its literals keeps them
// (the output counts them, as the block's size so far); one that fails before
// them is not recorded.
template <class Round>
TANDEM_HD void parse_round(const std::uint8_t* in, std::uint32_t n, std::uint32_t cap, DecodeCursor* c, Round* s) {
  std::uint32_t ip = c->ip;
  std::uint32_t op = c->op;
  std::uint32_t count = 0;
  ItemStatus status = ItemStatus::ok;
  bool last = false;
  const auto record = [&](std::uint32_t src, std::uint32_t at, std::uint32_t lit, std::uint32_t offset,
                          std::uint32_t ml) {
    s->lit_src[count] = src;
    s->out_pos[count] = at;
    s->lit_len[count] = lit;
    s->offset[count] = offset;
    s->match_len[count] = ml;
    ++count;
  };
  while (count < Round::kSequences) {
    if (ip >= n) {  // only an empty block gets here: a block must hold a token
      status = ItemStatus::corrupt_token;
      break;
    }
    const std::uint32_t token = in[ip];
    std::uint32_t p = ip + 1;
    std::uint32_t lit = token >> 4;
    if (lit == 15 && !read_length(in, n, &p, &lit, n)) {
      status = ItemStatus::corrupt_token;
      break;
    }
    if (lit > n - p) {
      status = ItemStatus::literal_past_input_end;
      break;
    }
    if (lit > cap - op) {
      status = ItemStatus::output_overflow;
      break;
    }
    const std::uint32_t lit_src = p;
    const std::uint32_t lit_at = op;
    op += lit;
    p += lit;
    if (p == n) {  // the last sequence: literals only
      record(lit_src, lit_at, lit, 0, 0);
      last = true;
      break;
    }
    if (n - p < 2) {
      record(lit_src, lit_at, lit, 0, 0);
      status = ItemStatus::corrupt_token;
      break;
    }
    const std::uint32_t offset = in[p] | (std::uint32_t{in[p + 1]} << 8);
    p += 2;
    std::uint32_t ml = token & 15;
    if (ml == 15 && !read_length(in, n, &p, &ml, cap)) {
      record(lit_src, lit_at, lit, 0, 0);
      status = ItemStatus::corrupt_token;
      break;
    }
    ml += kMinMatch;
    if (offset == 0 || offset > op) {
      record(lit_src, lit_at, lit, 0, 0);
      status = ItemStatus::offset_out_of_range;
      break;
    }
    if (ml > cap - op) {
      record(lit_src, lit_at, lit, 0, 0);
      status = ItemStatus::match_past_output_end;
      break;
    }
    record(lit_src, lit_at, lit, offset, ml);
    op += ml;
    ip = p;
    if (ip == n) {  // a block must end with literals
      status = ItemStatus::corrupt_token;
      break;
    }
  }
  if (status != ItemStatus::ok) last = true;
  s->count = count;
  s->start_out = c->op;
  s->end_out = op;
  s->status = status;
  s->last = last ? 1u : 0u;
  c->ip = ip;
  c->op = op;
}

// Copies ml bytes to out[at] from `offset` bytes back, one lane, forwards (so
// a match that overlaps itself repeats its period).
TANDEM_HD void lane_copy_match(std::uint8_t* out, std::uint32_t at, std::uint32_t offset, std::uint32_t ml) {
  std::uint8_t* dst = out + at;
  const std::uint8_t* src = dst - offset;
  for (std::uint32_t k = 0; k < ml; ++k) dst[k] = src[k];
}

// The byte that output position y (in round r, before sequence `below`'s
// match end) will hold, from the input or from earlier rounds only: a byte in
// a match is the byte `offset` before it, with a match's own period folded.
// Every step moves y down, so the trace ends.
template <class Round>
TANDEM_HD std::uint8_t trace_byte(const Round& r, const std::uint8_t* in, const std::uint8_t* out, std::uint32_t y,
                                  std::uint32_t below) {
  for (;;) {
    if (y < r.start_out) return out[y];
    // The last sequence at or before y (positions increase with the index).
    std::uint32_t lo = 0, hi = below;
    while (lo < hi) {
      const std::uint32_t mid = (lo + hi + 1) / 2;
      if (r.out_pos[mid] <= y) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const std::uint32_t m = r.out_pos[lo] + r.lit_len[lo];
    if (y < m) return in[r.lit_src[lo] + (y - r.out_pos[lo])];
    const std::uint32_t k = y - m;
    const std::uint32_t off = r.offset[lo];
    y = m - off + (k < off ? k : k % off);
    below = lo;
  }
}

// Copying warp k of the block copies its lanes' sequences of round r.
template <class Round>
TANDEM_HD void copy_round(const Warp& w, int k, const Round& r, const std::uint8_t* in, std::uint32_t n,
                          std::uint8_t* out) {
  const std::uint32_t count = r.count;
  const std::uint32_t start = r.start_out;
  const auto index = [&](int l) { return static_cast<std::uint32_t>(k * 32 + l); };
  const Lanes<bool> has = w.map([&](int l) { return index(l) < count; });
  // A match reads only earlier rounds when its source ends (clipped to its
  // own start, beyond which it repeats itself) before the round starts.
  const Lanes<bool> early = w.map([&](int l) {
    const std::uint32_t i = index(l);
    if (!has[l] || r.match_len[i] == 0) return true;
    const std::uint32_t dst = r.out_pos[i] + r.lit_len[i];
    const std::uint32_t src_end = dst - r.offset[i] + r.match_len[i];
    return (src_end < dst ? src_end : dst) <= start;
  });
  w.each([&](int l) {
    if (!has[l]) return;
    const std::uint32_t i = index(l);
    const std::uint32_t lit = r.lit_len[i];
    if (lit <= kLaneCopy) {
      for (std::uint32_t j = 0; j < lit; ++j) out[r.out_pos[i] + j] = in[r.lit_src[i] + j];
    }
    const std::uint32_t ml = r.match_len[i];
    if (ml == 0 || ml > kLaneCopy) return;
    const std::uint32_t dst = r.out_pos[i] + lit;
    if (early[l]) {
      lane_copy_match(out, dst, r.offset[i], ml);
    } else {
      for (std::uint32_t j = 0; j < ml; ++j) out[dst + j] = trace_byte(r, in, out, dst + j - r.offset[i], i);
    }
  });
  std::uint32_t long_lits = w.ballot(w.map([&](int l) { return has[l] && r.lit_len[index(l)] > kLaneCopy; }));
  while (long_lits) {
    const std::uint32_t i = index(simt::first_set(long_lits));
    simt::warp_copy(w, out + r.out_pos[i], in + r.lit_src[i], r.lit_len[i], in, in + n);
    long_lits &= long_lits - 1;
  }
  std::uint32_t long_early = w.ballot(w.map([&](int l) { return has[l] && early[l] && r.match_len[index(l)] > kLaneCopy; }));
  while (long_early) {
    const std::uint32_t i = index(simt::first_set(long_early));
    const std::uint32_t dst = r.out_pos[i] + r.lit_len[i];
    // Aligned loads may read up to dst; only earlier rounds' bytes are kept.
    copy_match_at(w, out, dst, r.offset[i], r.match_len[i], dst);
    long_early &= long_early - 1;
  }
  std::uint32_t long_traced =
      w.ballot(w.map([&](int l) { return has[l] && !early[l] && r.match_len[index(l)] > kLaneCopy; }));
  while (long_traced) {
    const std::uint32_t i = index(simt::first_set(long_traced));
    const std::uint32_t dst = r.out_pos[i] + r.lit_len[i];
    const std::uint32_t ml = r.match_len[i];
    const std::uint32_t off = r.offset[i];
    w.each([&](int l) {
      for (std::uint32_t j = static_cast<std::uint32_t>(l); j < ml; j += 32) {
        out[dst + j] = trace_byte(r, in, out, dst + j - off, i);
      }
    });
    long_traced &= long_traced - 1;
  }
}

// Decodes the block in[0, n) into out[0, cap) with the block's W warps;
// *out_size receives the bytes decoded (also on failure: how far it got). n
// and cap are at most kMaxItemSize. s is the block's shared memory.
template <int W>
TANDEM_HD ItemStatus decode_block(const Block<W>& b, DecodeShared<W>& s, const std::uint8_t* in, std::uint32_t n,
                                  std::uint8_t* out, std::uint32_t cap, std::uint32_t* out_size) {
  DecodeCursor cursor;  // the parsing lane's
  const auto parse = [&](const Warp& w, typename DecodeShared<W>::Round* r) {
    // The round reads its headers one after another: have the next 4 KiB of
    // input on the way at once, rather than a cache miss at every line.
    const std::uint32_t ip = cursor.ip;
    w.each([&](int l) {
      const std::uint32_t x = ip + 128 * static_cast<std::uint32_t>(l);
      if (x < n) simt::prefetch_l1(in + x);
    });
    w.each([&](int l) {
      if (l == 0) parse_round(in, n, cap, &cursor, r);
    });
  };
  if constexpr (W == 1) {
    typename DecodeShared<W>::Round& r = s.round[0];
    for (;;) {
      b.warps([&](const Warp& w, int) { parse(w, &r); });
      b.sync();
      b.warps([&](const Warp& w, int) { copy_round(w, 0, r, in, n, out); });
      b.sync();
      if (r.last) {
        *out_size = r.end_out;
        return r.status;
      }
    }
  } else {
    b.warps([&](const Warp& w, int wi) {
      if (wi == 0) parse(w, &s.round[0]);
    });
    b.sync();
    // Step k: warp 0 parses round k + 1 while the others copy round k.
    for (std::uint32_t k = 0;; ++k) {
      const typename DecodeShared<W>::Round& cur = s.round[k % 2];
      typename DecodeShared<W>::Round* next = &s.round[(k + 1) % 2];
      const bool more = cur.last == 0;
      b.warps([&](const Warp& w, int wi) {
        if (wi == 0) {
          if (more) parse(w, next);
        } else {
          copy_round(w, wi - 1, cur, in, n, out);
        }
      });
      b.sync();
      if (!more) {
        *out_size = cur.end_out;
        return cur.status;
      }
    }
  }
}

}  // namespace tandem::gpu::lz4k
