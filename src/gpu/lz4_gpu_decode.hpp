// The LZ4 block decoders that the GPU runs, every length, offset and count
// checked against the input and the output capacity: decode_block, a thread
// block of kDecodeWarps warps per LZ4 block, and decode_block_warp, one warp
// per block, for batches of small blocks.
//
// Parsing an LZ4 block is a chain: where a sequence starts depends on every
// length before it. Copying mostly is not, so the block splits the two and
// runs them as a pipeline over rounds of up to kRoundSequences sequences. In
// step r, warp 0 parses round r + 1's headers into a table in shared memory
// (checking every field); the copying warps copy round r's literal runs and
// those of its matches whose source ends before round r - 1 (output that is
// complete by then), all independent of each other; and warp 1 copies, in
// order, the matches of round r - 1 that were left: those that read output of
// round r - 1 itself or of the round before it. Each step ends with one
// barrier.
//
// Long literal runs and non-overlapping matches are copied as aligned 4-byte
// words; a match that overlaps itself (offset < length) repeats its period, a
// lane per byte.
#pragma once

#include <cstdint>

#include "gpu/simt.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu::lz4k {

using simt::Block;
using simt::Lanes;
using simt::Warp;

inline constexpr std::uint32_t kMinMatch = 4;
inline constexpr int kDecodeWarps = 4;
inline constexpr std::uint32_t kRoundSequences = 128;

// One round's sequences, as warp 0 parsed them.
struct DecodeRound {
  std::uint32_t lit_src[kRoundSequences];  // input position of the literals
  std::uint32_t out_pos[kRoundSequences];  // output position of the literals
  std::uint32_t lit_len[kRoundSequences];
  std::uint32_t offset[kRoundSequences];     // 0: literals only
  std::uint32_t match_len[kRoundSequences];  // 0: literals only
  std::uint16_t dep[kRoundSequences];        // sequences whose match waits for warp 1, in order
  std::uint32_t count;                       // sequences
  std::uint32_t dep_count;
  std::uint32_t complete;   // output below this is written when the round is copied
  std::uint32_t end_out;    // output position where the round ends (the block's size so far)
  ItemStatus status;        // ok, or what stopped the parse in this round
  std::uint32_t last;       // 1: the block ends (or failed) in this round
};

// The block's shared memory: the rounds being parsed, copied and finished.
struct DecodeShared {
  DecodeRound round[3];
};

// Warp 0's place in the block between rounds.
struct DecodeCursor {
  std::uint32_t ip = 0;
  std::uint32_t op = 0;
  std::uint32_t round_start = 0;  // where the previous round's output starts
};

// Adds an LZ4 length extension (bytes of 255 continue it, the first other byte
// ends it) starting at *p to *len. Returns false when the input ends first.
// Stops early, returning true, once *len exceeds `limit`: the caller's range
// check then rejects it.
TANDEM_HD bool read_length(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t* p,
                           std::uint32_t* len, std::uint32_t limit) {
  for (;;) {
    const std::uint32_t q = *p;
    const Lanes<std::uint32_t> v = w.map([&](int l) -> std::uint32_t {
      const std::uint32_t x = q + static_cast<std::uint32_t>(l);
      return x < n ? in[x] : 256u;  // 256: past the end
    });
    const std::uint32_t stop = w.ballot(w.map([&](int l) { return v[l] != 255u; }));
    if (stop == 0) {
      *len += 255u * 32;
      *p = q + 32;
      if (*len > limit) return true;
      continue;
    }
    const int f = simt::first_set(stop);
    const std::uint32_t b = w.shfl(v, f);
    if (b == 256u) return false;
    *len += 255u * static_cast<std::uint32_t>(f) + b;
    *p = q + static_cast<std::uint32_t>(f) + 1;
    return true;
  }
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

// The 32 input bytes at in[at], a byte per lane (0 past the end).
TANDEM_HD Lanes<std::uint32_t> load_window(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t at) {
  return w.map([&](int l) -> std::uint32_t {
    const std::uint32_t x = at + static_cast<std::uint32_t>(l);
    return x < n ? in[x] : 0u;
  });
}

// One sequence at *ipp, read field by field, every field checked; moves *ipp
// and *opp past what it keeps. A sequence that fails after its literals keeps
// them (the output counts them, as the block's size so far); one that fails
// before them keeps nothing.
struct CheckedSequence {
  std::uint32_t lit_src = 0;  // input position of the literals
  std::uint32_t lit_at = 0;   // output position of the literals
  std::uint32_t lit_len = 0;
  std::uint32_t offset = 0;
  std::uint32_t match_len = 0;  // 0: literals only
  bool keep = false;            // the sequence, or its literals, is part of the output
  bool last = false;            // the block's last sequence: literals only
  ItemStatus status = ItemStatus::ok;
};

TANDEM_HD CheckedSequence parse_sequence(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t cap,
                                         std::uint32_t* ipp, std::uint32_t* opp) {
  CheckedSequence q;
  const auto fail = [&](ItemStatus status) {
    q.status = status;
    return q;
  };
  const std::uint32_t ip = *ipp;
  std::uint32_t op = *opp;
  if (ip >= n) return fail(ItemStatus::corrupt_token);  // only an empty block gets here: it must hold a token
  const std::uint32_t token = in[ip];
  std::uint32_t p = ip + 1;
  std::uint32_t lit = token >> 4;
  if (lit == 15 && !read_length(w, in, n, &p, &lit, n)) return fail(ItemStatus::corrupt_token);
  if (lit > n - p) return fail(ItemStatus::literal_past_input_end);
  if (lit > cap - op) return fail(ItemStatus::output_overflow);
  q.keep = true;
  q.lit_src = p;
  q.lit_at = op;
  q.lit_len = lit;
  op += lit;
  p += lit;
  *opp = op;
  if (p == n) {  // the last sequence: literals only
    q.last = true;
    *ipp = p;
    return q;
  }
  if (n - p < 2) return fail(ItemStatus::corrupt_token);
  const std::uint32_t offset = in[p] | (std::uint32_t{in[p + 1]} << 8);
  p += 2;
  std::uint32_t ml = token & 15;
  if (ml == 15 && !read_length(w, in, n, &p, &ml, cap)) return fail(ItemStatus::corrupt_token);
  ml += kMinMatch;
  if (offset == 0 || offset > op) return fail(ItemStatus::offset_out_of_range);
  if (ml > cap - op) return fail(ItemStatus::match_past_output_end);
  q.offset = offset;
  q.match_len = ml;
  *opp = op + ml;
  *ipp = p;
  if (p == n) q.status = ItemStatus::corrupt_token;  // a block must end with literals
  return q;
}

// One sequence of the one-warp decoder, any sequence (parse_sequence checks
// it). Moves *ip and *op past it. Returns ok to go on; *done is set when the
// sequence ended the block.
TANDEM_HD ItemStatus decode_sequence_warp(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                          std::uint32_t cap, std::uint32_t* ipp, std::uint32_t* opp, bool* done) {
  const CheckedSequence q = parse_sequence(w, in, n, cap, ipp, opp);
  if (q.keep) simt::warp_copy(w, out + q.lit_at, in + q.lit_src, q.lit_len, in, in + n);
  *done = q.last;
  if (q.match_len != 0) {
    w.sync();  // the literals just written may be the match's source
    const std::uint32_t at = q.lit_at + q.lit_len;
    copy_match_at(w, out, at, q.offset, q.match_len, at);
  }
  w.sync();
  return q.status;
}

// The one-warp decoder, for small blocks, where a batch has many blocks to
// keep the GPU busy and a block's rounds would not fill a pipeline. The warp
// holds the 32 input bytes at the next token, a byte per lane. Most sequences
// take the short path: both lengths fit the token (no extension bytes), the
// whole sequence lies inside the window and the output has room for 32 more
// bytes, so the token, the literals and the offset come out of the window
// through shuffles, one check covers the offset, the next window is on its way
// before the copies, and the match (at most 18 bytes) is a lane per byte, its
// bytes from this sequence's literals taken from the window. Every other
// sequence goes through decode_sequence_warp, which checks each field on its
// own. Same statuses and output as decode_block. Decodes in[0, n) into
// out[0, cap); *out_size receives the bytes decoded (also on failure: how far
// it got).
TANDEM_HD ItemStatus decode_block_warp(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                       std::uint32_t cap, std::uint32_t* out_size) {
  constexpr std::uint32_t kShortMax = 32;  // input bytes of the window; output bytes of a short sequence at most
  std::uint32_t ip = 0;
  std::uint32_t op = 0;
  ItemStatus status = ItemStatus::ok;
  if (n == 0) status = ItemStatus::corrupt_token;  // even an empty block has a token
  // Short sequences start at or below ip_short and op_short.
  const bool may_short = n >= kShortMax && cap >= kShortMax;
  const std::uint32_t ip_short = may_short ? n - kShortMax : 0;
  const std::uint32_t op_short = may_short ? cap - kShortMax : 0;
  Lanes<std::uint32_t> win = load_window(w, in, n, ip);
  while (status == ItemStatus::ok) {
    const std::uint32_t token = w.shfl(win, 0);
    const std::uint32_t lit = token >> 4;
    const std::uint32_t mcode = token & 15;
    const std::uint32_t offset =
        w.shfl(win, static_cast<int>((1 + lit) & 31)) | (w.shfl(win, static_cast<int>((2 + lit) & 31)) << 8);
    if (!(may_short && ip <= ip_short && op <= op_short && lit < 15 && mcode < 15 && offset != 0 &&
          offset <= op + lit)) {
      bool done = false;
      status = decode_sequence_warp(w, in, n, out, cap, &ip, &op, &done);
      if (done) break;
      if (status == ItemStatus::ok) win = load_window(w, in, n, ip);
      continue;
    }
    const std::uint32_t next_ip = ip + 3 + lit;
    const Lanes<std::uint32_t> next = load_window(w, in, n, next_ip);
    const std::uint32_t ml = mcode + kMinMatch;
    const std::uint32_t mp = op + lit;  // where the match goes
    w.each([&](int l) {
      const std::uint32_t j = static_cast<std::uint32_t>(l) - 1;
      if (l >= 1 && j < lit) out[op + j] = static_cast<std::uint8_t>(win[l]);
    });
    // Lane l < ml: the byte at out[mp + l] repeats out[mp - offset + (l mod offset)],
    // written before: by an earlier sequence, or this one's literals (in the window).
    Lanes<std::uint32_t> src = w.map([&](int l) { return mp - offset + static_cast<std::uint32_t>(l); });
    if (offset < ml) src = w.map([&](int l) { return mp - offset + static_cast<std::uint32_t>(l) % offset; });
    const Lanes<std::uint32_t> from_window = w.shfl(win, w.map([&](int l) -> int {
      return src[l] >= op ? static_cast<int>(1 + src[l] - op) & 31 : 0;
    }));
    w.each([&](int l) {
      if (static_cast<std::uint32_t>(l) < ml) {
        out[mp + static_cast<std::uint32_t>(l)] =
            src[l] >= op ? static_cast<std::uint8_t>(from_window[l]) : out[src[l]];
      }
    });
    op = mp + ml;
    ip = next_ip;
    win = next;
    w.sync();  // the next sequence's match may read these bytes
  }
  w.sync();
  *out_size = op;
  return status;
}

// Warp 0: parses up to kRoundSequences sequences from c into r, checking
// every field. A sequence that fails after its literals keeps them (the
// output counts them, as the block's size so far); one that fails before
// them is not recorded.
TANDEM_HD void parse_round(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t cap,
                           DecodeCursor* c, DecodeRound* r) {
  std::uint32_t ip = c->ip;
  std::uint32_t op = c->op;
  const std::uint32_t complete = c->round_start;
  c->round_start = op;
  std::uint32_t count = 0;
  std::uint32_t deps = 0;
  ItemStatus status = ItemStatus::ok;
  bool last = false;
  // The round reads its headers one after another: have the next 4 KiB of
  // input on the way at once, rather than a cache miss at every new line.
  w.each([&](int l) {
    const std::uint32_t x = ip + 128 * static_cast<std::uint32_t>(l);
    if (x < n) simt::prefetch_l1(in + x);
  });
  const auto record = [&](std::uint32_t src, std::uint32_t at, std::uint32_t lit, std::uint32_t offset,
                          std::uint32_t ml) {
    w.each([&](int l) {
      if (l != 0) return;
      r->lit_src[count] = src;
      r->out_pos[count] = at;
      r->lit_len[count] = lit;
      r->offset[count] = offset;
      r->match_len[count] = ml;
    });
  };
  // A match that reads output the copying warps may not have written yet
  // (past `complete`) is left to warp 1, in order.
  const auto note_dependency = [&](std::uint32_t match_at, std::uint32_t offset, std::uint32_t ml) {
    if (match_at - offset + ml <= complete) return;
    w.each([&](int l) {
      if (l == 0) r->dep[deps] = static_cast<std::uint16_t>(count);
    });
    ++deps;
  };
  // Short sequences (as in decode_block_warp: lengths inside the token, the
  // whole sequence inside the 32-byte window at its token) are read from the
  // window; the others field by field.
  const bool may_short = n >= 32;
  const std::uint32_t ip_short = may_short ? n - 32 : 0;
  Lanes<std::uint32_t> win = load_window(w, in, n, ip);
  while (count < kRoundSequences) {
    {
      const std::uint32_t token = w.shfl(win, 0);
      const std::uint32_t lit = token >> 4;
      const std::uint32_t ml = (token & 15) + kMinMatch;
      const std::uint32_t offset =
          w.shfl(win, static_cast<int>((1 + lit) & 31)) | (w.shfl(win, static_cast<int>((2 + lit) & 31)) << 8);
      if (may_short && ip <= ip_short && lit < 15 && ml < 15 + kMinMatch && offset != 0 && offset <= op + lit &&
          lit + ml <= cap - op) {
        ip += 3 + lit;
        win = load_window(w, in, n, ip);
        record(ip - 2 - lit, op, lit, offset, ml);
        note_dependency(op + lit, offset, ml);
        op += lit + ml;
        ++count;
        continue;
      }
    }
    const CheckedSequence q = parse_sequence(w, in, n, cap, &ip, &op);
    if (q.keep) {
      record(q.lit_src, q.lit_at, q.lit_len, q.offset, q.match_len);
      if (q.match_len != 0) note_dependency(q.lit_at + q.lit_len, q.offset, q.match_len);
      ++count;
    }
    status = q.status;
    last = q.last;
    if (last || status != ItemStatus::ok) break;
    win = load_window(w, in, n, ip);
  }
  if (status != ItemStatus::ok) last = true;
  w.each([&](int l) {
    if (l != 0) return;
    r->count = count;
    r->dep_count = deps;
    r->complete = complete;
    r->end_out = op;
    r->status = status;
    r->last = last ? 1u : 0u;
  });
  c->ip = ip;
  c->op = op;
}

// Copies the match of sequence i of r (see copy_match_at).
TANDEM_HD void copy_match(const Warp& w, const DecodeRound& r, std::uint32_t i, std::uint8_t* out,
                          std::uint32_t ready) {
  copy_match_at(w, out, r.out_pos[i] + r.lit_len[i], r.offset[i], r.match_len[i], ready);
}

// A copying warp (index k of `copiers`): the literals of its share of the
// round's sequences, and their matches whose source is complete.
TANDEM_HD void copy_independent(const Warp& w, int k, int copiers, const std::uint8_t* in, std::uint32_t n,
                                std::uint8_t* out, const DecodeRound& r) {
  const std::uint32_t count = r.count;
  const std::uint32_t complete = r.complete;
  for (std::uint32_t i = static_cast<std::uint32_t>(k); i < count; i += static_cast<std::uint32_t>(copiers)) {
    const std::uint32_t at = r.out_pos[i];
    const std::uint32_t lit = r.lit_len[i];
    simt::warp_copy(w, out + at, in + r.lit_src[i], lit, in, in + n);
    const std::uint32_t ml = r.match_len[i];
    if (ml != 0 && at + lit - r.offset[i] + ml <= complete) copy_match(w, r, i, out, complete);
  }
}

// Warp 1: the round's remaining matches, in order. Everything before each
// one's destination is written by then: earlier rounds, this round's literals
// and independent matches, and the remaining matches before it.
TANDEM_HD void copy_dependent(const Warp& w, std::uint8_t* out, const DecodeRound& r) {
  const std::uint32_t deps = r.dep_count;
  for (std::uint32_t j = 0; j < deps; ++j) {
    const std::uint32_t i = r.dep[j];
    copy_match(w, r, i, out, r.out_pos[i] + r.lit_len[i]);
    w.sync();  // the next match may read this one
  }
}

// Decodes the block in[0, n) into out[0, cap) with the block's warps; *out_size
// receives the bytes decoded (also on failure: how far it got). n and cap are
// at most kMaxItemSize.
template <int W>
TANDEM_HD ItemStatus decode_block(const Block<W>& b, DecodeShared& s, const std::uint8_t* in, std::uint32_t n,
                                  std::uint8_t* out, std::uint32_t cap, std::uint32_t* out_size) {
  static_assert(W >= 3, "a parsing warp, an ordering warp and copying warps");
  DecodeCursor cursor;  // warp 0's
  b.warps([&](const Warp& w, int wi) {
    if (wi == 0) parse_round(w, in, n, cap, &cursor, &s.round[0]);
  });
  b.sync();
  // Step r: parse round r + 1, copy round r, finish round r - 1.
  for (std::uint32_t r = 0;; ++r) {
    DecodeRound* next = &s.round[(r + 1) % 3];
    DecodeRound* cur = &s.round[r % 3];
    DecodeRound* prev = &s.round[(r + 2) % 3];
    const bool have_prev = r > 0;
    const bool have_cur = !have_prev || prev->last == 0;
    const bool parse = have_cur && cur->last == 0;
    b.warps([&](const Warp& w, int wi) {
      if (wi == 0) {
        if (parse) parse_round(w, in, n, cap, &cursor, next);
      } else if (wi == 1) {
        if (have_prev) copy_dependent(w, out, *prev);
      } else if (have_cur) {
        copy_independent(w, wi - 2, W - 2, in, n, out, *cur);
      }
    });
    b.sync();
    if (!have_cur) {
      *out_size = prev->end_out;
      return prev->status;
    }
  }
}

}  // namespace tandem::gpu::lz4k
