// The LZ4 block decoders that the GPU runs, every length, offset and count
// checked against the input and the output capacity: decode_block_lanes, one
// warp per LZ4 block, for batches of small blocks, and decode_block, a thread
// block of kDecodeWarps warps per LZ4 block, for larger ones.
//
// Parsing an LZ4 block is a chain: where a sequence starts depends on every
// length before it. Copying mostly is not, so both decoders split the two.
//
// decode_block runs them as a pipeline over rounds of up to kRoundSequences
// sequences. In step r, warp 0 parses round r + 1's headers into a table in
// shared memory (checking every field); the copying warps copy round r's
// literal runs and those of its matches whose source ends before round r - 1
// (output that is complete by then), all independent of each other; and warp
// 1 copies, in order, the matches of round r - 1 that were left: those that
// read output of round r - 1 itself or of the round before it. Each step ends
// with one barrier.
//
// decode_block_lanes follows the chain 32 sequences at a time, each lane then
// keeping one sequence, reading and checking it, and copying it (see there).
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
// The lane decoder's longest copy by one lane.
inline constexpr int kLaneStep = 16;

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

// One sequence at in[ip] (op: its output position), read field by field,
// every field checked. A sequence that fails after its literals keeps them
// (the output counts them, as the block's size so far); one that fails before
// them keeps nothing.
struct CheckedSequence {
  std::uint32_t lit_src = 0;  // input position of the literals
  std::uint32_t lit_at = 0;   // output position of the literals
  std::uint32_t lit_len = 0;
  std::uint32_t offset = 0;
  std::uint32_t match_len = 0;  // 0: literals only
  bool keep = false;            // the sequence, or its literals, is part of the output
  bool last = false;            // the block's last sequence: literals only
  ItemStatus status = ItemStatus::ok;
  std::uint32_t ip = 0;  // past what it keeps: input
  std::uint32_t op = 0;  // and output
};

TANDEM_HD CheckedSequence parse_sequence(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t cap,
                                         std::uint32_t ip, std::uint32_t op) {
  CheckedSequence q;
  q.ip = ip;
  q.op = op;
  const auto fail = [&](ItemStatus status) {
    q.status = status;
    return q;
  };
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
  q.op = op;
  if (p == n) {  // the last sequence: literals only
    q.last = true;
    q.ip = p;
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
  q.op = op + ml;
  q.ip = p;
  if (p == n) q.status = ItemStatus::corrupt_token;  // a block must end with literals
  return q;
}

// Parses up to max_count sequences from *ipp and *opp, every field checked,
// and calls record(i, lit_src, lit_at, lit_len, offset, match_len) for the
// i-th sequence kept (offset and match_len are 0 for literals only). Short
// sequences (lengths inside the token, the whole sequence inside the 32-byte
// window at its token, not the block's last) are read from the window; the
// others field by field (parse_sequence). A sequence that fails after its
// literals is kept (the output counts them, as the block's size so far); one
// that fails before them is not. Returns the number kept; *status gets ok or
// what stopped the parse, *last whether the block ended or failed. Moves *ipp
// and *opp past what it kept.
template <class Record>
TANDEM_HD std::uint32_t parse_sequences(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t cap,
                                        std::uint32_t max_count, std::uint32_t* ipp, std::uint32_t* opp,
                                        ItemStatus* status, bool* last, Record record) {
  std::uint32_t ip = *ipp;
  std::uint32_t op = *opp;
  std::uint32_t count = 0;
  ItemStatus st = ItemStatus::ok;
  bool end = false;
  const bool may_short = n >= 32;
  const std::uint32_t ip_short = may_short ? n - 32 : 0;
  Lanes<std::uint32_t> win = load_window(w, in, n, ip);
  while (count < max_count) {
    {
      const std::uint32_t token = w.shfl(win, 0);
      const std::uint32_t lit = token >> 4;
      const std::uint32_t ml = (token & 15) + kMinMatch;
      const std::uint32_t offset =
          w.shfl(win, static_cast<int>((1 + lit) & 31)) | (w.shfl(win, static_cast<int>((2 + lit) & 31)) << 8);
      if (may_short && ip <= ip_short && lit < 15 && ml < 15 + kMinMatch && offset != 0 && offset <= op + lit &&
          lit + ml <= cap - op) {
        const std::uint32_t lit_src = ip + 1;
        ip += 3 + lit;
        win = load_window(w, in, n, ip);
        record(count, lit_src, op, lit, offset, ml);
        op += lit + ml;
        ++count;
        continue;
      }
    }
    const CheckedSequence q = parse_sequence(w, in, n, cap, ip, op);
    ip = q.ip;
    op = q.op;
    if (q.keep) {
      record(count, q.lit_src, q.lit_at, q.lit_len, q.offset, q.match_len);
      ++count;
    }
    st = q.status;
    end = q.last;
    if (end || st != ItemStatus::ok) break;
    win = load_window(w, in, n, ip);
  }
  *ipp = ip;
  *opp = op;
  *status = st;
  *last = end || st != ItemStatus::ok;
  return count;
}

// Warp 0: parses up to kRoundSequences sequences from c into r (see
// parse_sequences), noting the matches that must wait for warp 1.
TANDEM_HD void parse_round(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t cap,
                           DecodeCursor* c, DecodeRound* r) {
  const std::uint32_t complete = c->round_start;
  c->round_start = c->op;
  // The round reads its headers one after another: have the next 4 KiB of
  // input on the way at once, rather than a cache miss at every new line.
  const std::uint32_t ip = c->ip;
  w.each([&](int l) {
    const std::uint32_t x = ip + 128 * static_cast<std::uint32_t>(l);
    if (x < n) simt::prefetch_l1(in + x);
  });
  // A match that reads output the copying warps may not have written yet
  // (past `complete`) is left to warp 1, in order.
  std::uint32_t deps = 0;
  ItemStatus status = ItemStatus::ok;
  bool last = false;
  const std::uint32_t count = parse_sequences(
      w, in, n, cap, kRoundSequences, &c->ip, &c->op, &status, &last,
      [&w, r, &deps, complete](std::uint32_t i, std::uint32_t src, std::uint32_t at, std::uint32_t lit,
                               std::uint32_t offset, std::uint32_t ml) {
        const bool dependent = ml != 0 && at + lit - offset + ml > complete;
        const std::uint32_t d = deps;
        w.each([&](int l) {
          if (l != 0) return;
          r->lit_src[i] = src;
          r->out_pos[i] = at;
          r->lit_len[i] = lit;
          r->offset[i] = offset;
          r->match_len[i] = ml;
          if (dependent) r->dep[d] = static_cast<std::uint16_t>(i);
        });
        if (dependent) ++deps;
      });
  const std::uint32_t end_out = c->op;
  w.each([&](int l) {
    if (l != 0) return;
    r->count = count;
    r->dep_count = deps;
    r->complete = complete;
    r->end_out = end_out;
    r->status = status;
    r->last = last ? 1u : 0u;
  });
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

// Copies up to 32 parsed sequences, lane i holding sequence i (lengths 0 on
// lanes without one). Literals first: a run of up to kLaneStep bytes by its own
// lane, longer runs by the whole warp, one after another. Then the matches,
// in waves: `first` is the output position of the lowest match not yet
// copied, everything below it is written, and every match whose source lies
// below it (bytes up to its own start, for a match that overlaps itself) is
// copied in this wave; the lowest one always is. A match of up to kLaneStep
// bytes that does not overlap itself goes by its own lane, the others by the
// warp.
TANDEM_HD void copy_sequences(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                              const Lanes<std::uint32_t>& src, const Lanes<std::uint32_t>& at,
                              const Lanes<std::uint32_t>& lit, const Lanes<std::uint32_t>& offset,
                              const Lanes<std::uint32_t>& ml) {
  constexpr auto step = static_cast<std::uint32_t>(kLaneStep);
  w.each([&](int l) {
    if (lit[l] <= step) simt::lane_copy<kLaneStep>(out + at[l], in + src[l], lit[l]);
  });
  for (std::uint32_t wide = w.ballot(w.map([&](int l) { return lit[l] > step; })); wide != 0; wide &= wide - 1) {
    const int i = simt::first_set(wide);
    simt::warp_copy(w, out + w.shfl(at, i), in + w.shfl(src, i), w.shfl(lit, i), in, in + n);
  }
  w.sync();
  const Lanes<std::uint32_t> dst = w.map([&](int l) { return at[l] + lit[l]; });
  // Output below `need` must be written before the match is copied.
  const Lanes<std::uint32_t> need =
      w.map([&](int l) { return offset[l] < ml[l] ? dst[l] : dst[l] - offset[l] + ml[l]; });
  const Lanes<bool> by_lane = w.map([&](int l) { return offset[l] >= ml[l] && ml[l] <= step; });
  Lanes<bool> pending = w.map([&](int l) { return ml[l] != 0; });
  while (w.ballot(pending) != 0) {
    const std::uint32_t first = w.min(w.map([&](int l) { return pending[l] ? dst[l] : 0xffffffffu; }));
    const Lanes<bool> ready = w.map([&](int l) { return pending[l] && need[l] <= first; });
    w.each([&](int l) {
      if (ready[l] && by_lane[l]) simt::lane_copy<kLaneStep>(out + dst[l], out + dst[l] - offset[l], ml[l]);
    });
    for (std::uint32_t wide = w.ballot(w.map([&](int l) { return ready[l] && !by_lane[l]; })); wide != 0;
         wide &= wide - 1) {
      const int i = simt::first_set(wide);
      copy_match_at(w, out, w.shfl(dst, i), w.shfl(offset, i), w.shfl(ml, i), first);
    }
    w.sync();
    pending = w.map([&](int l) { return pending[l] && !ready[l]; });
  }
}

// A sequence as the lane decoder's quick parse reads it: each length in its
// token or with one extension byte, the whole sequence and the token after it
// inside the input. Its offset is read later, by its own lane, and its
// offset and lengths are checked then (against the output position, which
// the quick parse does not track).
struct QuickSequence {
  std::uint32_t lit_src = 0;    // input position of the literals
  std::uint32_t lit_len = 0;
  std::uint32_t match_len = 0;
  std::uint32_t offset_at = 0;  // input position of the offset
  std::uint32_t next = 0;       // input position of the next token
};

// Reads the sequence at in[ip] (ip <= n) if it is a quick one.
TANDEM_HD bool quick_sequence(const std::uint8_t* in, std::uint32_t n, std::uint32_t ip, QuickSequence* q) {
  if (n - ip < 2) return false;
  const std::uint32_t token = in[ip];
  std::uint32_t lit = token >> 4;
  std::uint32_t ml = token & 15;
  std::uint32_t p = ip + 1;
  if (lit == 15) {
    const std::uint32_t e = in[p];
    if (e == 255) return false;
    lit += e;
    ++p;
  }
  // The literals, the offset, an extension byte and the next token.
  if (lit + 4 > n - p) return false;
  q->lit_src = p;
  q->lit_len = lit;
  p += lit;
  q->offset_at = p;
  p += 2;
  if (ml == 15) {
    const std::uint32_t e = in[p];
    if (e == 255) return false;
    ml += e;
    ++p;
  }
  q->match_len = ml + kMinMatch;
  q->next = p;
  return true;
}

// Where the next token would be if a sequence started at in[x], from the
// token and the byte after it (the lengths' extension bytes are assumed to be
// one each where the token says there are any).
TANDEM_HD std::uint32_t quick_next(const std::uint8_t* in, std::uint32_t n, std::uint32_t x) {
  const std::uint32_t token = x < n ? in[x] : 0u;
  const std::uint32_t e = x + 1 < n ? in[x + 1] : 0u;
  const std::uint32_t lit = token >> 4;
  const std::uint32_t ext = lit == 15 ? 1u : 0u;
  return x + 1 + ext + lit + (ext ? e : 0u) + 2 + ((token & 15) == 15 ? 1u : 0u);
}

// The lane decoder: one warp per block, for batches of small blocks, where
// there are enough of them to fill the GPU. It works in batches of 32
// sequences, lane i holding sequence i.
//  - The chain of tokens, taken as quick sequences: in a window of 32 input
//    bytes, lane l works out where the next token would be if one started at
//    its byte, and the warp follows the chain through the window by shuffles,
//    a new window where it leaves this one.
//  - Each lane reads its sequence (quick_sequence) and checks its offset and
//    lengths against its output position (a prefix sum over the lanes).
//  - From the first sequence that is not quick or fails a check, the batch is
//    cut; that sequence is read again field by field (parse_sequence), which
//    gives its status, and the batch ends with it.
//  - copy_sequences copies the batch.
// Same statuses, sizes and bytes as decode_block.
TANDEM_HD ItemStatus decode_block_lanes(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                        std::uint32_t cap, std::uint32_t* out_size) {
  constexpr auto kBatch = static_cast<std::uint32_t>(simt::kWarpSize);
  std::uint32_t ip = 0;
  std::uint32_t op = 0;
  ItemStatus status = ItemStatus::ok;
  bool last = false;
  while (!last) {
    // The chain: token_at[i] for sequences 0..count-1, and where it goes on.
    Lanes<std::uint32_t> token_at = w.map([](int) { return 0u; });
    std::uint32_t count = 0;
    while (count < kBatch && ip < n) {
      const std::uint32_t base = ip;
      const Lanes<std::uint32_t> next = w.map([&](int l) { return quick_next(in, n, base + static_cast<std::uint32_t>(l)); });
      std::uint32_t p = 0;  // relative to base
      while (p < kBatch && count < kBatch && base + p < n) {
        const std::uint32_t c = count;
        const std::uint32_t at = base + p;
        w.each([&](int l) {
          if (static_cast<std::uint32_t>(l) == c) token_at[l] = at;
        });
        ++count;
        p = w.shfl(next, static_cast<int>(p)) - base;
      }
      ip = base + p;
    }
    // Each lane its own sequence.
    Lanes<std::uint32_t> src = w.map([](int) { return 0u; });
    Lanes<std::uint32_t> lit = src;
    Lanes<std::uint32_t> ml = src;
    Lanes<std::uint32_t> offset = src;
    const Lanes<bool> quick = w.map([&](int l) {
      if (static_cast<std::uint32_t>(l) >= count) return false;
      QuickSequence q;
      if (!quick_sequence(in, n, token_at[l], &q)) return false;
      src[l] = q.lit_src;
      lit[l] = q.lit_len;
      ml[l] = q.match_len;
      offset[l] = in[q.offset_at] | (std::uint32_t{in[q.offset_at + 1]} << 8);
      return true;
    });
    const Lanes<std::uint32_t> at = w.map([&, sizes = w.exclusive_sum(w.map([&](int l) { return lit[l] + ml[l]; }))](
                                              int l) { return op + sizes[l]; });
    // parse_sequence's checks (none overflows: positions and lengths stay far
    // below 2^32). Lane `count`, when the chain ended early, holds no
    // sequence: the one there is read field by field.
    std::uint32_t stop = w.ballot(w.map([&](int l) {
      return static_cast<std::uint32_t>(l) < count &&
             (!quick[l] || offset[l] == 0 || offset[l] > at[l] + lit[l] || at[l] + lit[l] + ml[l] > cap);
    }));
    if (count < kBatch) stop |= 1u << count;
    if (stop != 0) {
      const int f = simt::first_set(stop);
      const std::uint32_t f_ip = static_cast<std::uint32_t>(f) < count ? w.shfl(token_at, f) : ip;
      const CheckedSequence c = parse_sequence(w, in, n, cap, f_ip, w.shfl(at, f));
      w.each([&](int l) {
        if (l < f) return;
        const bool keep = l == f && c.keep;
        src[l] = keep ? c.lit_src : 0u;
        lit[l] = keep ? c.lit_len : 0u;
        ml[l] = keep ? c.match_len : 0u;
        offset[l] = keep ? c.offset : 0u;
      });
      ip = c.ip;
      status = c.status;
      last = c.last || status != ItemStatus::ok;
    }
    op += w.sum(w.map([&](int l) { return lit[l] + ml[l]; }));
    copy_sequences(w, in, n, out, src, at, lit, offset, ml);
  }
  *out_size = op;
  return status;
}

}  // namespace tandem::gpu::lz4k
