// The LZ4 block decoder that the GPU runs, every length, offset and count
// checked against the input and the output capacity: decode_block, W warps
// per LZ4 block (W = 1 for batches of small blocks, where the batch has
// blocks enough to fill the GPU; more for large blocks).
//
// Parsing an LZ4 block is a chain: where a sequence starts depends on every
// length before it. Copying mostly is not. So the block decodes in rounds of
// up to 32 * W sequences, one per thread:
//  1. parse: one lane walks the round's sequence headers as plain scalar
//     code (the short serial chain: token, length extensions, offset) and
//     records each sequence in shared memory, checking every field;
//  2. literals: each thread copies its sequence's literal run, and its match
//     too when the match reads only output of earlier rounds (the common
//     case: those rounds are complete);
//  3. matches, in passes: a match that reads output of this round waits
//     until every match of the round that writes bytes it reads is done; each
//     pass copies all matches that are ready. The lowest pending match is
//     always ready, so the passes end.
// A thread copies its own short runs and matches byte by byte (an average
// sequence is a few literals and a short match: a lane each keeps the warp's
// lanes busy, where a warp per sequence left most idle); long ones are copied
// by the whole warp, with aligned words.
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

// Sequence states within a round.
inline constexpr std::uint8_t kMatchDone = 0;
inline constexpr std::uint8_t kMatchPending = 1;
inline constexpr std::uint8_t kMatchReady = 2;

// One round's sequences as the parse recorded them, and the round's state.
template <int W>
struct DecodeShared {
  static constexpr std::uint32_t kRound = 32u * W;
  std::uint32_t lit_src[kRound];    // input position of the literals
  std::uint32_t out_pos[kRound];    // output position of the literals
  std::uint32_t lit_len[kRound];
  std::uint32_t offset[kRound];     // 0: literals only
  std::uint32_t match_len[kRound];  // 0: literals only
  std::uint8_t state[kRound];       // kMatch*
  std::uint32_t pending[W];         // per warp: matches not done at the start of a pass
  std::uint32_t count;              // sequences
  std::uint32_t end_out;            // output position where the round ends (the block's size so far)
  ItemStatus status;                // ok, or what stopped the parse in this round
  std::uint32_t last;               // 1: the block ends (or failed) in this round
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

// One lane: parses up to DecodeShared<W>::kRound sequences from c into s,
// checking every field. A sequence that fails after its literals keeps them
// (the output counts them, as the block's size so far); one that fails before
// them is not recorded.
template <int W>
TANDEM_HD void parse_round(const std::uint8_t* in, std::uint32_t n, std::uint32_t cap, DecodeCursor* c,
                           DecodeShared<W>* s) {
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
  while (count < DecodeShared<W>::kRound) {
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

// True when sequence i's match reads only bytes that are final: output of
// earlier rounds, literals of this round (copied before any match), and
// matches of this round that are done.
template <int W>
TANDEM_HD bool match_ready(const DecodeShared<W>& s, std::uint32_t i) {
  const std::uint32_t dst = s.out_pos[i] + s.lit_len[i];
  const std::uint32_t src = dst - s.offset[i];
  const std::uint32_t src_end = src + s.match_len[i];
  const std::uint32_t lim = src_end < dst ? src_end : dst;  // beyond dst it reads its own output
  if (lim <= s.out_pos[0]) return true;
  // The first sequence that ends after src: sequences are contiguous in the output.
  std::uint32_t lo = 0, hi = i;
  while (lo < hi) {
    const std::uint32_t mid = (lo + hi) / 2;
    if (s.out_pos[mid] + s.lit_len[mid] + s.match_len[mid] > src) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  for (std::uint32_t j = lo; j < i; ++j) {
    const std::uint32_t m = s.out_pos[j] + s.lit_len[j];
    if (m >= lim) break;
    if (s.state[j] != kMatchDone && m + s.match_len[j] > src) return false;
  }
  return true;
}

// Copies, for each lane whose `mine` is set, its sequence's match; short ones
// by the lane, long ones by the warp. Marks them done.
template <int W>
TANDEM_HD void copy_matches(const Warp& w, int wi, DecodeShared<W>& s, std::uint8_t* out, const Lanes<bool>& mine) {
  w.each([&](int l) {
    const std::uint32_t i = static_cast<std::uint32_t>(wi * 32 + l);
    if (mine[l] && s.match_len[i] <= kLaneCopy) {
      lane_copy_match(out, s.out_pos[i] + s.lit_len[i], s.offset[i], s.match_len[i]);
    }
  });
  std::uint32_t longs = w.ballot(w.map([&](int l) {
    return mine[l] && s.match_len[static_cast<std::uint32_t>(wi * 32 + l)] > kLaneCopy;
  }));
  while (longs) {
    const std::uint32_t i = static_cast<std::uint32_t>(wi * 32 + simt::first_set(longs));
    const std::uint32_t at = s.out_pos[i] + s.lit_len[i];
    copy_match_at(w, out, at, s.offset[i], s.match_len[i], at);
    longs &= longs - 1;
  }
  w.sync();
  w.each([&](int l) {
    if (mine[l]) s.state[wi * 32 + l] = kMatchDone;
  });
}

// Decodes the block in[0, n) into out[0, cap) with the block's W warps;
// *out_size receives the bytes decoded (also on failure: how far it got). n
// and cap are at most kMaxItemSize. s is the block's shared memory.
template <int W>
TANDEM_HD ItemStatus decode_block(const Block<W>& b, DecodeShared<W>& s, const std::uint8_t* in, std::uint32_t n,
                                  std::uint8_t* out, std::uint32_t cap, std::uint32_t* out_size) {
  DecodeCursor cursor;  // the parsing lane's
  for (;;) {
    b.warps([&](const Warp& w, int wi) {
      if (wi != 0) return;
      // The round reads its headers one after another: have the next 4 KiB
      // of input on the way at once, rather than a cache miss at every line.
      const std::uint32_t ip = cursor.ip;
      w.each([&](int l) {
        const std::uint32_t x = ip + 128 * static_cast<std::uint32_t>(l);
        if (x < n) simt::prefetch_l1(in + x);
      });
      w.each([&](int l) {
        if (l == 0) parse_round(in, n, cap, &cursor, &s);
      });
    });
    b.sync();
    const std::uint32_t count = s.count;
    // Literals, and the matches that read only earlier rounds.
    b.warps([&](const Warp& w, int wi) {
      const Lanes<bool> has = w.map([&](int l) { return static_cast<std::uint32_t>(wi * 32 + l) < count; });
      w.each([&](int l) {
        const std::uint32_t i = static_cast<std::uint32_t>(wi * 32 + l);
        if (has[l] && s.lit_len[i] <= kLaneCopy) {
          for (std::uint32_t k = 0; k < s.lit_len[i]; ++k) out[s.out_pos[i] + k] = in[s.lit_src[i] + k];
        }
      });
      std::uint32_t longs = w.ballot(w.map([&](int l) {
        return has[l] && s.lit_len[static_cast<std::uint32_t>(wi * 32 + l)] > kLaneCopy;
      }));
      while (longs) {
        const std::uint32_t i = static_cast<std::uint32_t>(wi * 32 + simt::first_set(longs));
        simt::warp_copy(w, out + s.out_pos[i], in + s.lit_src[i], s.lit_len[i], in, in + n);
        longs &= longs - 1;
      }
      const Lanes<bool> early = w.map([&](int l) {
        const std::uint32_t i = static_cast<std::uint32_t>(wi * 32 + l);
        if (!has[l] || s.match_len[i] == 0) return false;
        const std::uint32_t dst = s.out_pos[i] + s.lit_len[i];
        const std::uint32_t src_end = dst - s.offset[i] + s.match_len[i];
        return (src_end < dst ? src_end : dst) <= s.out_pos[0];
      });
      w.each([&](int l) {
        const std::uint32_t i = static_cast<std::uint32_t>(wi * 32 + l);
        if (has[l]) s.state[i] = s.match_len[i] != 0 && !early[l] ? kMatchPending : kMatchDone;
      });
      w.sync();
      copy_matches(w, wi, s, out, early);
    });
    b.sync();
    // The matches that read this round's output, in passes.
    for (;;) {
      b.warps([&](const Warp& w, int wi) {
        const Lanes<bool> pending = w.map([&](int l) {
          const std::uint32_t i = static_cast<std::uint32_t>(wi * 32 + l);
          return i < count && s.state[i] != kMatchDone;
        });
        const Lanes<bool> ready = w.map([&](int l) {
          return pending[l] && match_ready(s, static_cast<std::uint32_t>(wi * 32 + l));
        });
        const std::uint32_t waiting = w.ballot(pending);
        w.sync();  // every lane has read the states before any lane changes one
        w.each([&](int l) {
          if (ready[l]) s.state[wi * 32 + l] = kMatchReady;
          if (l == 0) s.pending[wi] = static_cast<std::uint32_t>(simt::popcount(waiting));
        });
      });
      b.sync();
      std::uint32_t waiting = 0;
      for (int k = 0; k < W; ++k) waiting += s.pending[k];
      if (waiting == 0) break;
      b.warps([&](const Warp& w, int wi) {
        const Lanes<bool> mine = w.map([&](int l) {
          const std::uint32_t i = static_cast<std::uint32_t>(wi * 32 + l);
          return i < count && s.state[i] == kMatchReady;
        });
        copy_matches(w, wi, s, out, mine);
      });
      b.sync();
    }
    if (s.last) {
      *out_size = s.end_out;
      return s.status;
    }
    b.sync();  // every thread has read the round before the next parse rewrites it
  }
}

}  // namespace tandem::gpu::lz4k
