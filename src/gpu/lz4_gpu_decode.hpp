// The LZ4 block decoders that the GPU runs, every length, offset and count
// checked against the input and the output capacity: decode_block_lanes, one
// warp per LZ4 block, for batches of small blocks; decode_block_wide, a
// thread block of kWideWarps warps per LZ4 block, for larger ones; and
// decode_block_window, a thread block whose parse spreads over several
// warps, for the largest. (decode_block_gather, in lz4_gpu_gather.hpp,
// takes blocks of 32 to 64 KiB, and batches of few blocks over 8 KiB: its
// 1024 threads parse and gather a whole block at once.)
//
// Parsing an LZ4 block is a chain: where a sequence starts depends on every
// length before it. Copying mostly is not, so the decoders split the two.
// They work in batches of 32 sequences, lane i of a warp holding sequence i.
// In the lane and wide decoders the chain is followed through a window of
// input bytes by shuffles, then each lane reads and checks its own sequence
// (parse_batch). The lane decoder then copies the batch itself
// (copy_sequences), into shared memory for small blocks
// (decode_block_lanes_staged); the wide decoder's parsing warp hands batches
// to copying warps through shared memory (see there). The window decoder
// follows the chain from many places at once (see there).
//
// Short literal runs and matches are copied by their own lane; long literal
// runs and non-overlapping matches by the warp as aligned 4-byte words; a
// match that overlaps itself (offset < length) repeats its period, a lane
// per byte.
#pragma once

#include <cstdint>

#include "gpu/simt.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu::lz4k {

using simt::Block;
using simt::Lanes;
using simt::Warp;

inline constexpr std::uint32_t kMinMatch = 4;
// The lane decoder's longest copy by one lane.
inline constexpr std::uint32_t kLaneStep = 16;

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

// One batch of the lane decoder, lane i holding sequence i (lengths 0 on
// lanes without one; `at` does not decrease from lane to lane).
struct LaneBatch {
  Lanes<std::uint32_t> src;  // input position of the literals
  Lanes<std::uint32_t> at;   // output position of the literals
  Lanes<std::uint32_t> lit;
  Lanes<std::uint32_t> offset;
  Lanes<std::uint32_t> ml;  // 0: literals only
};

// The literal runs of a batch: a run of up to kLaneStep bytes by its own
// lane, longer runs by the whole warp, one after another. Sized: the lanes'
// copies take only as many bytes as the longest needs (lane_copies), which
// saves instructions where the warps issue all they can, but adds a step to
// the path of a warp that waits on others.
template <bool Sized>
TANDEM_HD void copy_literals(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                             const LaneBatch& b) {
  constexpr std::uint32_t step = kLaneStep;
  if constexpr (Sized) {
    simt::lane_copies<kLaneStep>(w, [&](int l) {
      return simt::LaneCopy{out + b.at[l], in + b.src[l], b.lit[l] <= step ? b.lit[l] : 0u};
    });
  } else {
    w.each([&](int l) {
      if (b.lit[l] <= step) simt::lane_copy<kLaneStep>(out + b.at[l], in + b.src[l], b.lit[l]);
    });
  }
  for (std::uint32_t wide = w.ballot(w.map([&](int l) { return b.lit[l] > step; })); wide != 0; wide &= wide - 1) {
    const int i = simt::first_set(wide);
    simt::warp_copy(w, out + w.shfl(b.at, i), in + w.shfl(b.src, i), w.shfl(b.lit, i), in, in + n);
  }
}

// A batch's matches, lane i holding the match of sequence i (ml 0: none) at
// out[dst], `offset` back; dst does not decrease from lane to lane.
struct LaneMatches {
  Lanes<std::uint32_t> dst;
  Lanes<std::uint32_t> offset;
  Lanes<std::uint32_t> ml;
  Lanes<std::uint32_t> need;  // output below this must be written before the match is copied
  Lanes<bool> by_lane;        // short and not overlapping itself: copied by its own lane
};

// Forwarding. A match whose source lies inside the output of another match
// of its batch reads the bytes that match copied, which are that match's own
// source bytes: it may copy them from there, its offset grown by the other
// match's. Followed along chains of such matches (by pointer jumping: at
// each step a match takes on the forwarding of the match it forwards to, so
// a chain of 32 takes 5 steps), this lets a run of matches that each copy the
// one before it, as repeated records with a byte changed in each give, be
// copied in one wave instead of one after another. The bytes written are the
// same; every source stays inside the output before its match. Returns the
// offsets, forwarded where they can be; dst: where each lane's match starts.
TANDEM_HD Lanes<std::uint32_t> forwarded_offsets(const Warp& w, const LaneBatch& b, const Lanes<std::uint32_t>& dst) {
  const Lanes<std::uint32_t> from = w.map([&](int l) { return dst[l] - b.offset[l]; });
  // The last lane whose match starts at or before each source starts (dst
  // does not decrease from lane to lane): a binary search by shuffles.
  Lanes<int> k = w.map([](int) { return 0; });
  for (int step = simt::kWarpSize / 2; step > 0; step /= 2) {
    const Lanes<std::uint32_t> d = w.shfl(dst, w.map([&](int l) { return k[l] + step; }));
    k = w.map([&](int l) { return d[l] <= from[l] ? k[l] + step : k[l]; });
  }
  const Lanes<std::uint32_t> start = w.shfl(dst, k);
  const Lanes<std::uint32_t> end = w.shfl(w.map([&](int l) { return dst[l] + b.ml[l]; }), k);
  // A match that overlaps itself is not forwarded: part of its source is
  // its own output.
  Lanes<int> link = w.map([&](int l) {
    const bool inside = b.ml[l] != 0 && b.offset[l] >= b.ml[l] && start[l] <= from[l] && from[l] + b.ml[l] <= end[l];
    return inside ? k[l] : -1;
  });
  Lanes<std::uint32_t> offset = b.offset;
  while (w.ballot(w.map([&](int l) { return link[l] >= 0; })) != 0) {
    const Lanes<int> to = w.map([&](int l) { return link[l] >= 0 ? link[l] : l; });
    const Lanes<std::uint32_t> more = w.shfl(offset, to);
    const Lanes<int> next = w.shfl(link, to);
    offset = w.map([&](int l) { return link[l] >= 0 ? offset[l] + more[l] : offset[l]; });
    link = w.map([&](int l) { return link[l] >= 0 ? next[l] : -1; });
  }
  return offset;
}

// A batch's matches copied from `offset` back: b.offset, or offsets
// forwarded from it (forwarding never touches a match that overlaps itself,
// so either tells which do).
TANDEM_HD LaneMatches matches_from(const Warp& w, const LaneBatch& b, const Lanes<std::uint32_t>& offset) {
  constexpr std::uint32_t step = kLaneStep;
  LaneMatches m;
  m.dst = w.map([&](int l) { return b.at[l] + b.lit[l]; });
  m.offset = offset;
  m.ml = b.ml;
  // A match that overlaps itself reads bytes up to its own start.
  m.need = w.map([&](int l) { return b.offset[l] < b.ml[l] ? m.dst[l] : m.dst[l] - m.offset[l] + b.ml[l]; });
  m.by_lane = w.map([&](int l) { return b.offset[l] >= b.ml[l] && b.ml[l] <= step; });
  return m;
}

TANDEM_HD LaneMatches lane_matches(const Warp& w, const LaneBatch& b) {
  return matches_from(w, b, forwarded_offsets(w, b, w.map([&](int l) { return b.at[l] + b.lit[l]; })));
}

// Copies the matches of the lanes in `ready` at once: a match of up to
// kLaneStep bytes that does not overlap itself by its own lane, the others by
// the warp, one after another, its aligned loads reading no further than
// the end of its source. Sized: see copy_literals.
template <bool Sized>
TANDEM_HD void copy_ready_matches(const Warp& w, std::uint8_t* out, const LaneMatches& m, const Lanes<bool>& ready) {
  if constexpr (Sized) {
    simt::lane_copies<kLaneStep>(w, [&](int l) {
      return simt::LaneCopy{out + m.dst[l], out + m.dst[l] - m.offset[l], ready[l] && m.by_lane[l] ? m.ml[l] : 0u};
    });
  } else {
    w.each([&](int l) {
      if (ready[l] && m.by_lane[l]) simt::lane_copy<kLaneStep>(out + m.dst[l], out + m.dst[l] - m.offset[l], m.ml[l]);
    });
  }
  for (std::uint32_t wide = w.ballot(w.map([&](int l) { return ready[l] && !m.by_lane[l]; })); wide != 0;
       wide &= wide - 1) {
    const int i = simt::first_set(wide);
    copy_match_at(w, out, w.shfl(m.dst, i), w.shfl(m.offset, i), w.shfl(m.ml, i), w.shfl(m.need, i));
  }
  w.sync();
}

// Copies the matches of the lanes in `pending`, in waves: `first` is the
// output position of the lowest one not yet copied, everything below it is
// written, and every pending match whose source lies below it is copied in
// this wave; the lowest one always is.
template <bool Sized>
TANDEM_HD void copy_match_waves(const Warp& w, std::uint8_t* out, const LaneMatches& m, Lanes<bool> pending) {
  while (w.ballot(pending) != 0) {
    const std::uint32_t first = w.min(w.map([&](int l) { return pending[l] ? m.dst[l] : 0xffffffffu; }));
    const Lanes<bool> ready = w.map([&](int l) { return pending[l] && m.need[l] <= first; });
    copy_ready_matches<Sized>(w, out, m, ready);
    pending = w.map([&](int l) { return pending[l] && !ready[l]; });
  }
}

// Copies a batch: the literals, then the matches in waves.
template <bool Sized>
TANDEM_HD void copy_sequences(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                              const LaneBatch& b) {
  copy_literals<Sized>(w, in, n, out, b);
  w.sync();
  copy_match_waves<Sized>(w, out, lane_matches(w, b), w.map([&](int l) { return b.ml[l] != 0; }));
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
  std::uint32_t end = 0;        // input position of the next token
};

// Reads the sequence at in[ip] (ip <= n) if it is a quick one.
TANDEM_HD bool quick_sequence(const std::uint8_t* in, std::uint32_t n, std::uint32_t ip, QuickSequence* q) {
  if (n - ip < 2) return false;
  const std::uint32_t token = in[ip];
  const std::uint32_t lit_ext = in[ip + 1];  // loaded with the token, not after it
  std::uint32_t lit = token >> 4;
  std::uint32_t ml = token & 15;
  std::uint32_t p = ip + 1;
  if (lit == 15) {
    if (lit_ext == 255) return false;
    lit += lit_ext;
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
  q->end = p;
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

// Where the lane decoder's parse stands between batches.
struct LaneCursor {
  std::uint32_t ip = 0;
  std::uint32_t op = 0;
  ItemStatus status = ItemStatus::ok;
  bool last = false;  // the block ended or failed
};

// The next batch of up to 32 sequences at c, read and checked (see
// decode_block_lanes); moves c past it.
TANDEM_HD LaneBatch parse_batch(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t cap,
                                LaneCursor* c) {
  constexpr auto kBatch = static_cast<std::uint32_t>(simt::kWarpSize);
  std::uint32_t ip = c->ip;
  const std::uint32_t op = c->op;
  // The chain: token_at[i] for sequences 0..count-1, and where it goes on.
  Lanes<std::uint32_t> token_at = w.map([](int) { return 0u; });
  std::uint32_t count = 0;
  while (count < kBatch && ip < n) {
    const std::uint32_t base = ip;
    // Relative to base, as is p.
    const Lanes<std::uint32_t> next =
        w.map([&](int l) { return quick_next(in, n, base + static_cast<std::uint32_t>(l)) - base; });
    // Two tokens on where the next one leaves the window at once: the chain
    // then takes one shuffle on its serial path for every two sequences.
    const Lanes<std::uint32_t> next2 = w.map(
        [&, after = w.shfl(next, w.map([&](int l) { return next[l] < kBatch ? static_cast<int>(next[l]) : l; }))](
            int l) { return next[l] < kBatch ? after[l] : next[l]; });
    const std::uint32_t end = n - base < kBatch ? n - base : kBatch;
    const auto record = [&](std::uint32_t at) {
      const std::uint32_t i = count;
      w.each([&](int l) {
        if (static_cast<std::uint32_t>(l) == i) token_at[l] = at;
      });
      ++count;
    };
    std::uint32_t p = 0;
    while (p < end && count < kBatch) {
      record(base + p);
      const std::uint32_t q = w.shfl(next, static_cast<int>(p));
      const std::uint32_t q2 = w.shfl(next2, static_cast<int>(p));
      if (q < end && count < kBatch) {
        record(base + q);
        p = q2;
      } else {
        p = q;
      }
    }
    ip = base + p;
  }
  // Each lane its own sequence.
  LaneBatch b;
  b.src = w.map([](int) { return 0u; });
  b.lit = b.src;
  b.ml = b.src;
  b.offset = b.src;
  const Lanes<bool> quick = w.map([&](int l) {
    if (static_cast<std::uint32_t>(l) >= count) return false;
    QuickSequence q;
    if (!quick_sequence(in, n, token_at[l], &q)) return false;
    b.src[l] = q.lit_src;
    b.lit[l] = q.lit_len;
    b.ml[l] = q.match_len;
    b.offset[l] = in[q.offset_at] | (std::uint32_t{in[q.offset_at + 1]} << 8);
    return true;
  });
  const auto output_at = [&] {
    const Lanes<std::uint32_t> sizes = w.exclusive_sum(w.map([&](int l) { return b.lit[l] + b.ml[l]; }));
    return w.map([&](int l) { return op + sizes[l]; });
  };
  b.at = output_at();
  // parse_sequence's checks (none overflows: positions and lengths stay far
  // below 2^32). Lane `count`, when the chain ended early, holds no
  // sequence: the one there is read field by field.
  std::uint32_t stop = w.ballot(w.map([&](int l) {
    return static_cast<std::uint32_t>(l) < count &&
           (!quick[l] || b.offset[l] == 0 || b.offset[l] > b.at[l] + b.lit[l] || b.at[l] + b.lit[l] + b.ml[l] > cap);
  }));
  if (count < kBatch) stop |= 1u << count;
  if (stop != 0) {
    const int f = simt::first_set(stop);
    const std::uint32_t f_ip = static_cast<std::uint32_t>(f) < count ? w.shfl(token_at, f) : ip;
    const CheckedSequence q = parse_sequence(w, in, n, cap, f_ip, w.shfl(b.at, f));
    w.each([&](int l) {
      if (l < f) return;
      const bool keep = l == f && q.keep;
      b.src[l] = keep ? q.lit_src : 0u;
      b.lit[l] = keep ? q.lit_len : 0u;
      b.ml[l] = keep ? q.match_len : 0u;
      b.offset[l] = keep ? q.offset : 0u;
    });
    ip = q.ip;
    c->status = q.status;
    c->last = q.last || q.status != ItemStatus::ok;
    b.at = output_at();  // lanes past f: where the batch now ends
  }
  c->ip = ip;
  // Lanes without a sequence hold lengths 0 at the batch's end.
  constexpr int kLast = simt::kWarpSize - 1;
  c->op = w.shfl(b.at, kLast) + w.shfl(b.lit, kLast) + w.shfl(b.ml, kLast);
  return b;
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
// Same statuses, sizes and bytes as decode_block_wide.
template <bool Sized = false>
TANDEM_HD ItemStatus decode_block_lanes(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                        std::uint32_t cap, std::uint32_t* out_size) {
  LaneCursor c;
  while (!c.last) {
    const LaneBatch b = parse_batch(w, in, n, cap, &c);
    copy_sequences<Sized>(w, in, n, out, b);
  }
  *out_size = c.op;
  return c.status;
}

// The lane decoder with its block's output staged in shared memory, for
// blocks of up to StageBytes: a match then reads output from shared memory,
// where it was just written, rather than through the caches from global
// memory, and the output reaches global memory once, in 16-byte words.
// `stage`: kLaneStageBytes<StageBytes>, 16-aligned. Larger blocks decode in
// place. Its lanes' copies are sized (see copy_literals): the kernels stage
// only where the warps issue nearly all they can. Same statuses, sizes and
// bytes as decode_block_lanes.
template <std::uint32_t StageBytes>
inline constexpr std::uint32_t kLaneStageBytes = StageBytes + 16;
// The kernels stage blocks of up to this and of up to twice this (see
// lz4_gpu_kernels.cu); the CPU emulation stages at this.
inline constexpr std::uint32_t kStageBytes = 4096;

template <std::uint32_t StageBytes>
TANDEM_HD ItemStatus decode_block_lanes_staged(const Warp& w, std::uint8_t* stage, const std::uint8_t* in,
                                               std::uint32_t n, std::uint8_t* out, std::uint32_t cap,
                                               std::uint32_t* out_size) {
  const bool staged = cap <= StageBytes;
  // At out's address modulo 16, so that the copy out is by whole words.
  std::uint8_t* to = staged ? stage + (reinterpret_cast<std::uintptr_t>(out) & 15) : out;
  std::uint32_t size = 0;
  const ItemStatus status = decode_block_lanes<true>(w, in, n, to, cap, &size);
  if (staged) {
    w.sync();
    simt::warp_copy_phased(w, out, to, size);
  }
  *out_size = size;
  return status;
}

// ------------------------------------------------- the wide lane decoder ----
//
// decode_block_wide: a thread block of W warps per LZ4 block, for larger
// blocks, with the lane decoder's batches. It works in rounds of W - 2
// batches of 32 sequences. In step r:
//  - warp 0 parses round r + 1 (parse_batch, batch after batch) into a table
//    in shared memory;
//  - copying warp k (warp k + 2) copies batch k of round r: its literals, and
//    those of its matches whose source lies before round r - 1 (output that
//    is complete by then);
//  - warp 1 copies the other matches of round r - 1, batch after batch, in
//    waves (copy_match_waves): everything below a wave's lowest match is
//    written by then, since round r - 1's literals and its other matches were
//    copied in step r - 1 and round r - 2 is complete.
// Each step ends with one barrier. Same statuses, sizes and bytes as
// decode_block_lanes.
inline constexpr int kWideWarps = 4;

// One round's batches, as warp 0 parsed them: batch k's sequence i at
// k * 32 + i, each batch's unused entries with lengths 0.
template <int W>
struct WideRound {
  static constexpr std::uint32_t kBatches = W - 2;
  static constexpr std::uint32_t kSequences = kBatches * simt::kWarpSize;
  std::uint32_t src[kSequences];
  std::uint32_t at[kSequences];  // does not decrease
  std::uint32_t lit[kSequences];
  std::uint32_t offset[kSequences];
  std::uint32_t ml[kSequences];
  std::uint32_t batches;
  std::uint32_t complete;  // output below this is written when the round is copied
  std::uint32_t start;     // output position where the round starts
  std::uint32_t end;       // and where it ends
  ItemStatus status;       // ok, or what stopped the parse in this round
  std::uint32_t last;      // 1: the block ends (or failed) in this round
};

template <int W>
struct WideShared {
  WideRound<W> round[3];
};

// How far ahead of its parse the parsing warp asks for input lines in L1:
// the parse's loads then wait on L1 rather than L2, and the copying warps
// find the literals there a step later. Measured on silesia7 (H100, GB/s,
// none / 512 / 1024 / 2048 bytes ahead): 32K 100.6 / 103.2 / 102.9 / 102.7,
// 64K 73.7 / 74.9 / 74.0 / 74.3, 256K 25.0 / 28.9 / 28.9 / 28.9.
inline constexpr std::uint32_t kParsePrefetch = 512;

// Warp 0: the next round from c into r.
template <int W>
TANDEM_HD void parse_wide_round(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t cap,
                                LaneCursor* c, std::uint32_t complete, WideRound<W>* r) {
  const std::uint32_t start = c->op;
  std::uint32_t batches = 0;
  // A round parses a few hundred input bytes: four lines, that far ahead.
  w.each([&](int l) {
    const std::uint32_t a = c->ip + kParsePrefetch + 128 * static_cast<std::uint32_t>(l);
    if (l < 4 && a < n) simt::prefetch_l1(in + a);
  });
  while (batches < WideRound<W>::kBatches && !c->last) {
    const LaneBatch b = parse_batch(w, in, n, cap, c);
    const std::uint32_t first = batches * simt::kWarpSize;
    w.each([&](int l) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      r->src[i] = b.src[l];
      r->at[i] = b.at[l];
      r->lit[i] = b.lit[l];
      r->offset[i] = b.offset[l];
      r->ml[i] = b.ml[l];
    });
    ++batches;
  }
  const LaneCursor done = *c;
  w.each([&](int l) {
    if (l != 0) return;
    r->batches = batches;
    r->complete = complete;
    r->start = start;
    r->end = done.op;
    r->status = done.status;
    r->last = done.last ? 1u : 0u;
  });
}

// Batch k of round r (a WideRound or a WindowRound), lane i holding its
// sequence i.
template <class Round>
TANDEM_HD LaneBatch round_batch(const Warp& w, const Round& r, std::uint32_t k) {
  const std::uint32_t first = k * simt::kWarpSize;
  const auto entry = [&](const std::uint32_t* field) {
    return w.map([&](int l) { return field[first + static_cast<std::uint32_t>(l)]; });
  };
  LaneBatch b;
  b.src = entry(r.src);
  b.at = entry(r.at);
  b.lit = entry(r.lit);
  b.offset = entry(r.offset);
  b.ml = entry(r.ml);
  return b;
}

// Which matches of a batch read only output that is complete before its
// round is copied.
TANDEM_HD Lanes<bool> complete_source(const Warp& w, const LaneMatches& m, std::uint32_t complete) {
  return w.map([&](int l) { return m.ml[l] != 0 && m.need[l] <= complete; });
}

// Copying warp k: batch k of round r, if there is one, but for the matches
// that read output of round r - 1 or r.
template <int W>
TANDEM_HD void copy_wide_batch(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                               const WideRound<W>& r, std::uint32_t k) {
  if (k >= r.batches) return;
  const LaneBatch b = round_batch(w, r, k);
  copy_literals<false>(w, in, n, out, b);
  const LaneMatches m = lane_matches(w, b);
  copy_ready_matches<false>(w, out, m, complete_source(w, m, r.complete));
}

// Warp 1: the matches of round r that its copying warps left, in order.
// First it asks for the first source line of each match whose source ends
// past r.complete in L1, all at once, so that the waves' copies do not each
// wait on L2 for bytes written a step before. The line is that of the
// source as parsed: working out the forwarded one (lane_matches) costs
// shuffles, and a prefetch is only a hint. Measured on silesia7 (H100,
// GB/s, without / with): 32K 103.0 / 106.4, 64K 74.7 / 78.0, 256K 28.9 /
// 29.2. (The parsing warp asking for every match's source as it parses it
// as well: 64K 77.3 / 78.0, 32K 106.4 / 106.1; left out.)
template <int W>
TANDEM_HD void order_wide_round(const Warp& w, std::uint8_t* out, const WideRound<W>& r) {
  for (std::uint32_t k = 0; k < r.batches; ++k) {
    w.each([&](int l) {
      const std::uint32_t i = k * simt::kWarpSize + static_cast<std::uint32_t>(l);
      const std::uint32_t from = r.at[i] + r.lit[i] - r.offset[i];
      if (r.ml[i] != 0 && from + r.ml[i] > r.complete) simt::prefetch_l1(out + from);
    });
  }
  for (std::uint32_t k = 0; k < r.batches; ++k) {
    const LaneBatch b = round_batch(w, r, k);
    const LaneMatches m = lane_matches(w, b);
    const Lanes<bool> done = complete_source(w, m, r.complete);
    copy_match_waves<false>(w, out, m, w.map([&](int l) { return m.ml[l] != 0 && !done[l]; }));
  }
}

// Decodes the block in[0, n) into out[0, cap) with the block's warps; *out_size
// receives the bytes decoded (also on failure: how far it got). n and cap are
// at most kMaxItemSize.
template <int W>
TANDEM_HD ItemStatus decode_block_wide(const Block<W>& b, WideShared<W>& s, const std::uint8_t* in, std::uint32_t n,
                                       std::uint8_t* out, std::uint32_t cap, std::uint32_t* out_size) {
  static_assert(W >= 3, "a parsing warp, an ordering warp and copying warps");
  LaneCursor cursor;  // warp 0's
  b.warps([&](const Warp& w, int wi) {
    if (wi == 0) parse_wide_round(w, in, n, cap, &cursor, 0, &s.round[0]);
  });
  b.sync();
  // Step r: parse round r + 1, copy round r, finish round r - 1.
  for (std::uint32_t r = 0;; ++r) {
    WideRound<W>* next = &s.round[(r + 1) % 3];
    const WideRound<W>& cur = s.round[r % 3];
    const WideRound<W>& prev = s.round[(r + 2) % 3];
    const bool have_prev = r > 0;
    const bool have_cur = !have_prev || prev.last == 0;
    const bool parse = have_cur && cur.last == 0;
    b.warps([&](const Warp& w, int wi) {
      if (wi == 0) {
        if (parse) parse_wide_round(w, in, n, cap, &cursor, cur.start, next);
      } else if (wi == 1) {
        if (have_prev) order_wide_round(w, out, prev);
      } else if (have_cur) {
        copy_wide_batch(w, in, n, out, cur, static_cast<std::uint32_t>(wi - 2));
      }
    });
    b.sync();
    if (!have_cur) {
      *out_size = prev.end;
      return prev.status;
    }
  }
}

// ------------------------------------------------------ the window decoder --
//
// decode_block_window: a thread block of kWindowWarps warps per LZ4 block,
// for the largest blocks, where there are few to a batch and each block's
// own time is the batch's; its parse spreads over several warps. Its warps
// form two teams (simt::Team) that work on alternate rounds: in step r the
// parsing team (kParseWarps warps) parses round r + 1 while the copying
// team (kCopyWarps warps) copies round r, whole; each step ends with one
// block barrier.
//
// The parse: a round is a window of kWindowBytes of input, lane k of the
// team taking the k-th kSegmentBytes of it. Rather than following the token
// chain sequence after sequence, the team follows it from every segment at
// once (parse_window):
//  1. each lane follows the chain that would start at its segment's first
//     byte to the end of its segment, keeping where it stops as a mask;
//  2. each lane follows its chain on, through the segments after its own,
//     until it lands on a position in the mask of the segment it is in:
//     from there the two chains are one (chains that start at different
//     bytes soon meet);
//  3. the window's first lane starts at a token. Where its chain meets lane
//     j's, lane j's chain is the block's from there on; and so on: the lanes
//     on that path (pointer jumping over each warp's lanes) walk step 2
//     again, marking where they pass, which with their masks gives the
//     window's tokens;
//  4. the tokens are read in batches of 32, a lane each (lane_sequence),
//     and, once every batch's output size is known, placed and checked as
//     parse_batch does; from the first sequence that is not read whole or
//     fails a check, the round is cut and that sequence read field by field
//     (parse_sequence), which gives its status.
// The chain stops at a sequence that is not read whole (the block's last, a
// corrupt one, or one with a length extension of more than kLaneExtension
// bytes): the round ends with it.
//
// The copy: the team copies the round's literals and the matches that read
// only earlier rounds, then, after the team's barrier, the other matches:
// each once every sequence whose output its source reads is written, which
// a flag per sequence in shared memory tells (copy_pending_step).
//
// Same statuses, sizes and bytes as decode_block_lanes.

// Warps of the two teams, and batches a round holds (a window with more
// sequences is cut there and parsed again from that point). Measured on
// silesia7 (H100, GB/s, decompression, 64K / 128K / 256K / 1M / 4M blocks):
// 2 + 4 warps and rounds of 16 batches 64.2 / 51.4 / 35.5 / 10.1 / 2.75;
// 3 + 5 and 24 batches 67.4 / 54.5 / 38.0 / 11.5 / 3.11; the wide decoder
// 80.1 / 49.9 / 28.1 / 7.2 / 1.83.
inline constexpr int kParseWarps = 3;
inline constexpr int kCopyWarps = 5;
inline constexpr int kWindowWarps = kParseWarps + kCopyWarps;
inline constexpr std::uint32_t kSegmentBytes = simt::kWarpSize;  // a segment's tokens: a 32-bit mask
inline constexpr std::uint32_t kWindowSegments = kParseWarps * simt::kWarpSize;
inline constexpr std::uint32_t kWindowBytes = kSegmentBytes * kWindowSegments;
inline constexpr std::uint32_t kRoundBatches = 24;
inline constexpr std::uint32_t kRoundSequences = kRoundBatches * simt::kWarpSize;
static_assert(kRoundBatches <= simt::kWarpSize, "a lane per batch");
inline constexpr std::uint32_t kChainStop = 0xffffffffu;
inline constexpr std::uint32_t kNoLane = 0xffffffffu;

// The largest power of two not above x (x > 0): binary searches start there.
constexpr std::uint32_t floor_pow2(std::uint32_t x) { return x & (x - 1) ? floor_pow2(x & (x - 1)) : x; }
inline constexpr std::uint32_t kRoundSearch = floor_pow2(kRoundSequences);

// The longest length extension one lane reads: longer ones (lengths of more
// than 15 + 8 * 255) stop the chain.
inline constexpr std::uint32_t kLaneExtension = 8;

// Adds the extension bytes at in[*p] to *len, the first already loaded as b.
TANDEM_HD bool lane_length(const std::uint8_t* in, std::uint32_t n, std::uint32_t* p, std::uint32_t* len,
                           std::uint32_t b) {
  for (std::uint32_t k = 0;; ++k) {
    *len += b;
    ++*p;
    if (b != 255) return true;
    if (k + 1 == kLaneExtension || *p >= n) return false;
    b = in[*p];
  }
}

// Reads the sequence at in[x] (x < n) whole, one lane alone, if another
// token follows it and its extensions are at most kLaneExtension bytes each.
TANDEM_HD bool lane_sequence(const std::uint8_t* in, std::uint32_t n, std::uint32_t x, QuickSequence* q) {
  if (n - x < 2) return false;
  const std::uint32_t token = in[x];
  const std::uint32_t first = in[x + 1];  // loaded with the token, not after it
  std::uint32_t lit = token >> 4;
  std::uint32_t p = x + 1;
  if (lit == 15 && !lane_length(in, n, &p, &lit, first)) return false;
  // The literals, the offset and at least one byte after.
  if (lit > n - p || n - p - lit < 3) return false;
  q->lit_src = p;
  q->lit_len = lit;
  p += lit;
  q->offset_at = p;
  p += 2;
  std::uint32_t ml = token & 15;
  if (ml == 15 && !lane_length(in, n, &p, &ml, in[p])) return false;
  if (p >= n) return false;
  q->match_len = ml + kMinMatch;
  q->end = p;
  return true;
}

// Where the chain goes from a token at in[x] (x < n): kChainStop where the
// sequence there is not read whole.
TANDEM_HD std::uint32_t chain_next(const std::uint8_t* in, std::uint32_t n, std::uint32_t x) {
  QuickSequence q;
  return lane_sequence(in, n, x, &q) ? q.end : kChainStop;
}

// One round: batch k's sequence i at k * 32 + i, each batch's unused entries
// with lengths 0 at the batch's end.
template <int W>
struct WindowRound {
  std::uint32_t src[kRoundSequences];
  std::uint32_t at[kRoundSequences];  // does not decrease
  std::uint32_t lit[kRoundSequences];
  std::uint32_t offset[kRoundSequences];  // the copying team forwards them (forwarded_offsets)
  std::uint32_t ml[kRoundSequences];
  std::uint32_t batches;
  std::uint32_t start;  // output position where the round starts
  std::uint32_t end;    // and where it ends
  ItemStatus status;    // ok, or what stopped the parse in this round
  std::uint32_t last;   // 1: the block ends (or failed) in this round
};

// The parsing team's memory; lane k of the team is lane k % 32 of member k / 32.
struct WindowParse {
  std::uint32_t own[kWindowSegments];      // where the lane's own chain stops in its segment
  std::uint32_t exit_at[kWindowSegments];  // where it leaves the segment (kChainStop: it stops)
  std::uint32_t joined[kWindowSegments];   // the lane whose chain it meets (kNoLane: none in the window)
  std::uint32_t meet[kWindowSegments];     // where
  std::uint32_t walked[kWindowSegments];   // where the block's chain passes, marked by the walks
  std::uint32_t tokens[kWindowSegments];   // the block's tokens in each segment
  std::uint32_t path[kParseWarps];         // each member's lanes on the block's chain
  std::uint32_t member_tokens[kParseWarps];
  std::uint32_t token_at[kRoundSequences];
  std::uint32_t end_at[kRoundSequences];  // past the sequence (0: not read whole)
  std::uint32_t batch_size[kRoundBatches];
  std::uint32_t batch_stop[kRoundBatches];  // its first sequence that stops the round (32: none)
  LaneCursor cursor;
};

// The copying team's memory.
inline constexpr std::uint16_t kPending = 0xffff;
struct WindowCopy {
  std::uint16_t done[kRoundSequences];  // kPending while the match waits to be copied
  std::uint16_t dep_lo[kRoundSequences];  // the sequences whose output its source reads
  std::uint16_t dep_hi[kRoundSequences];
  std::uint32_t next[kCopyWarps];  // each member's first batch with a match not copied
};

template <int W>
struct WindowShared {
  WindowRound<W> round[2];
  WindowParse parse;
  WindowCopy copy;
};

using ParseTeam = simt::Team<kParseWarps>;
using CopyTeam = simt::Team<kCopyWarps>;

// The parsing team: the round at p.cursor into r, and p.cursor past it.
template <int W>
TANDEM_HD void parse_window(const ParseTeam& team, int warp, const std::uint8_t* in, std::uint32_t n,
                            std::uint32_t cap, WindowParse& p, WindowRound<W>& r) {
  constexpr std::uint32_t kL = kSegmentBytes;
  constexpr auto kW = static_cast<std::uint32_t>(simt::kWarpSize);
  const auto lane_of = [](int m, int l) { return kW * static_cast<std::uint32_t>(m) + static_cast<std::uint32_t>(l); };
  // 1. Each lane's own chain through its segment.
  team.members(warp, [&](const Warp& w, int m) {
    const std::uint32_t ip = p.cursor.ip;
    w.each([&](int l) {
      const std::uint32_t g = lane_of(m, l);
      const std::uint32_t seg = ip + kL * g;
      std::uint32_t mask = 0;
      std::uint32_t x = seg < n ? seg : kChainStop;
      for (; x - seg < kL; x = chain_next(in, n, x)) mask |= 1u << (x - seg);
      p.own[g] = mask;
      p.exit_at[g] = x;
      p.walked[g] = 0;
    });
  });
  team.sync();
  // 2. On until it meets the chain of the segment it is in.
  team.members(warp, [&](const Warp& w, int m) {
    const std::uint32_t ip = p.cursor.ip;
    const std::uint32_t end = ip + kWindowBytes;
    w.each([&](int l) {
      const std::uint32_t g = lane_of(m, l);
      std::uint32_t x = p.exit_at[g];
      std::uint32_t joined = kNoLane;
      while (x < end) {
        const std::uint32_t j = (x - ip) / kL;
        if ((p.own[j] >> ((x - ip) % kL)) & 1) {
          joined = j;
          break;
        }
        x = chain_next(in, n, x);
      }
      p.joined[g] = joined;
      p.meet[g] = x;
    });
  });
  team.sync();
  // 3. The lanes on the block's chain, and where it passes between them.
  team.members(warp, [&](const Warp& w, int m) {
    const std::uint32_t ip = p.cursor.ip;
    const std::uint32_t end = ip + kWindowBytes;
    // Within member a: the lane each lane's chain joins there (itself where
    // it joins none there).
    const auto hops_in = [&](int a) {
      return w.map([&](int l) {
        const std::uint32_t j = p.joined[lane_of(a, l)];
        return j != kNoLane && j / kW == static_cast<std::uint32_t>(a) ? static_cast<int>(j % kW) : l;
      });
    };
    // The block's chain from lane 0, member by member, to this member: its
    // first lane here (kNoLane: none).
    std::uint32_t entry = 0;
    for (int a = 0; a < m && entry != kNoLane; ++a) {
      if (entry / kW != static_cast<std::uint32_t>(a)) continue;  // it passes member a by
      Lanes<int> h = hops_in(a);
      TANDEM_UNROLL
      for (int i = 0; i < 5; ++i) h = w.shfl(h, h);  // 32 hops: the last lane on it in member a
      entry = p.joined[lane_of(a, w.shfl(h, static_cast<int>(entry % kW)))];
    }
    std::uint32_t path = 0;
    if (entry != kNoLane && entry / kW == static_cast<std::uint32_t>(m)) {
      Lanes<int> hops[5];
      hops[0] = hops_in(m);
      TANDEM_UNROLL
      for (int i = 1; i < 5; ++i) hops[i] = w.shfl(hops[i - 1], hops[i - 1]);
      path = 1u << (entry % kW);
      TANDEM_UNROLL
      for (int i = 4; i >= 0; --i) {
        path |= w.bit_or(w.map([&](int l) { return (path >> l) & 1 ? 1u << hops[i][l] : 0u; }));
      }
    }
    w.each([&](int l) {
      if (l == 0) p.path[m] = path;
    });
    // The lanes on the path walk again, marking where they pass and where
    // they meet the next one. The walks cover segments no other walk does.
    w.each([&](int l) {
      if (((path >> l) & 1) == 0) return;
      const std::uint32_t g = lane_of(m, l);
      const std::uint32_t meet = p.meet[g];
      for (std::uint32_t x = p.exit_at[g]; x < end && x != meet; x = chain_next(in, n, x)) {
        p.walked[(x - ip) / kL] |= 1u << ((x - ip) % kL);
      }
      if (p.joined[g] != kNoLane) p.walked[p.joined[g]] |= 1u << ((meet - ip) % kL);
    });
  });
  team.sync();
  // 4. The tokens: where the walks passed, and on the path, the lane's own
  // chain from where the walk met it (the walk's last mark in its segment).
  team.members(warp, [&](const Warp& w, int m) {
    const std::uint32_t path = p.path[m];
    const Lanes<std::uint32_t> tokens = w.map([&](int l) {
      const std::uint32_t g = lane_of(m, l);
      const std::uint32_t passed = p.walked[g];
      if (g == 0) return p.own[0];
      if (((path >> l) & 1) == 0 || passed == 0) return passed;
      return passed | (p.own[g] & (~0u << simt::last_set(passed)));
    });
    w.each([&](int l) { p.tokens[lane_of(m, l)] = tokens[l]; });
    const std::uint32_t count =
        w.sum(w.map([&](int l) { return static_cast<std::uint32_t>(simt::popcount(tokens[l])); }));
    w.each([&](int l) {
      if (l == 0) p.member_tokens[m] = count;
    });
  });
  team.sync();
  // Each lane writes where its segment's tokens are, in order: token i's
  // position at token_at[i].
  team.members(warp, [&](const Warp& w, int m) {
    const std::uint32_t ip = p.cursor.ip;
    std::uint32_t before = 0;
    for (int a = 0; a < m; ++a) before += p.member_tokens[a];
    const Lanes<std::uint32_t> firsts = w.exclusive_sum(
        w.map([&](int l) { return static_cast<std::uint32_t>(simt::popcount(p.tokens[lane_of(m, l)])); }));
    w.each([&](int l) {
      const std::uint32_t g = lane_of(m, l);
      std::uint32_t i = before + firsts[l];
      for (std::uint32_t bits = p.tokens[g]; bits != 0 && i < kRoundSequences; bits &= bits - 1, ++i) {
        p.token_at[i] = ip + kL * g + static_cast<std::uint32_t>(simt::first_set(bits));
      }
    });
  });
  team.sync();
  std::uint32_t total = 0;
  for (int a = 0; a < kParseWarps; ++a) total += p.member_tokens[a];
  const std::uint32_t limit = total < kRoundSequences ? total : kRoundSequences;
  const std::uint32_t batches = (limit + kW - 1) / kW;
  // 5. Batch t by member t % kParseWarps, lane i reading sequence 32 t + i.
  team.members(warp, [&](const Warp& w, int m) {
    for (std::uint32_t t = static_cast<std::uint32_t>(m); t < batches; t += kParseWarps) {
      const Lanes<std::uint32_t> size = w.map([&](int l) {
        const std::uint32_t i = kW * t + static_cast<std::uint32_t>(l);
        const std::uint32_t token = i < limit ? p.token_at[i] : 0u;
        QuickSequence q;
        const bool whole = i < limit && lane_sequence(in, n, token, &q);
        r.src[i] = whole ? q.lit_src : 0u;
        r.lit[i] = whole ? q.lit_len : 0u;
        r.ml[i] = whole ? q.match_len : 0u;
        r.offset[i] = whole ? in[q.offset_at] | (std::uint32_t{in[q.offset_at + 1]} << 8) : 0u;
        p.end_at[i] = whole ? q.end : 0u;
        return r.lit[i] + r.ml[i];
      });
      const std::uint32_t bytes = w.sum(size);
      w.each([&](int l) {
        if (l == 0) p.batch_size[t] = bytes;
      });
    }
  });
  team.sync();
  // Each batch placed (a prefix sum over the batches, then over its lanes)
  // and checked as parse_batch does.
  team.members(warp, [&](const Warp& w, int m) {
    const Lanes<std::uint32_t> sizes_before = w.exclusive_sum(
        w.map([&](int l) { return static_cast<std::uint32_t>(l) < batches ? p.batch_size[l] : 0u; }));
    for (std::uint32_t t = static_cast<std::uint32_t>(m); t < batches; t += kParseWarps) {
      const std::uint32_t op = p.cursor.op + w.shfl(sizes_before, static_cast<int>(t));
      const Lanes<std::uint32_t> before =
          w.exclusive_sum(w.map([&](int l) { return r.lit[kW * t + l] + r.ml[kW * t + l]; }));
      const std::uint32_t stop = w.ballot(w.map([&](int l) {
        const std::uint32_t i = kW * t + static_cast<std::uint32_t>(l);
        const std::uint32_t at = op + before[l];
        r.at[i] = at;
        return i < limit && (p.end_at[i] == 0 || r.offset[i] == 0 || r.offset[i] > at + r.lit[i] ||
                             at + r.lit[i] + r.ml[i] > cap);
      }));
      w.each([&](int l) {
        if (l == 0) p.batch_stop[t] = static_cast<std::uint32_t>(simt::first_set(stop));
      });
    }
  });
  team.sync();
  // 6. Member 0 ends the round: at the first sequence that stops it, read
  // field by field, or after the last token.
  team.members(warp, [&](const Warp& w, int m) {
    if (m != 0) return;
    LaneCursor c = p.cursor;
    const std::uint32_t start = c.op;
    const Lanes<std::uint32_t> sizes = w.map([&](int l) { return static_cast<std::uint32_t>(l) < batches ? p.batch_size[l] : 0u; });
    const Lanes<std::uint32_t> sizes_before = w.exclusive_sum(sizes);
    // The first batch with a sequence that stops the round; an empty block's
    // missing token stops it at once.
    const std::uint32_t t = total == 0 ? 0u : static_cast<std::uint32_t>(simt::first_set(w.ballot(w.map(
                                                  [&](int l) { return static_cast<std::uint32_t>(l) < batches && p.batch_stop[l] != kW; }))));
    std::uint32_t kept = batches;
    if (t < batches || total == 0) {
      const std::uint32_t f = total == 0 ? 0u : p.batch_stop[t];
      const std::uint32_t base = kW * t;
      const std::uint32_t op = c.op + w.shfl(sizes_before, static_cast<int>(t));
      const std::uint32_t f_ip = total == 0 ? c.ip : p.token_at[base + f];
      const std::uint32_t f_at = total == 0 ? c.op : r.at[base + f];
      const CheckedSequence q = parse_sequence(w, in, n, cap, f_ip, f_at);
      w.each([&](int l) {
        if (static_cast<std::uint32_t>(l) < f) return;
        const std::uint32_t i = base + static_cast<std::uint32_t>(l);
        const bool keep = static_cast<std::uint32_t>(l) == f && q.keep;
        r.src[i] = keep ? q.lit_src : 0u;
        r.lit[i] = keep ? q.lit_len : 0u;
        r.ml[i] = keep ? q.match_len : 0u;
        r.offset[i] = keep ? q.offset : 0u;
      });
      const Lanes<std::uint32_t> lens = w.map([&](int l) { return r.lit[base + l] + r.ml[base + l]; });
      const Lanes<std::uint32_t> before = w.exclusive_sum(lens);
      w.each([&](int l) { r.at[base + l] = op + before[l]; });
      c.ip = q.ip;
      c.op = op + w.sum(lens);
      c.status = q.status;
      c.last = q.last || q.status != ItemStatus::ok;
      kept = t + 1;
    } else {
      c.ip = p.end_at[limit - 1];
      c.op += w.sum(sizes);
    }
    w.each([&](int l) {
      if (l != 0) return;
      r.batches = kept;
      r.start = start;
      r.end = c.op;
      r.status = c.status;
      r.last = c.last ? 1u : 0u;
      p.cursor = c;
    });
  });
}

// The last sequence of r (of its first `count`) whose output starts at or
// before x (0 when none does): a binary search.
template <int W>
TANDEM_HD std::uint32_t sequence_at(const WindowRound<W>& r, std::uint32_t count, std::uint32_t x) {
  std::uint32_t k = 0;
  for (std::uint32_t step = kRoundSearch; step > 0; step /= 2) {
    if (k + step < count && r.at[k + step] <= x) k += step;
  }
  return k;
}

// One step of member m of the copying team through the matches that wait:
// in its first batch with any, it copies those whose sources are written (no
// sequence whose output they read is a match that waits). Returns false
// once none of its matches waits.
template <int W>
TANDEM_HD bool copy_pending_step(const Warp& w, int m, std::uint8_t* out, const WindowRound<W>& r, WindowCopy& cp) {
  constexpr auto kW = static_cast<std::uint32_t>(simt::kWarpSize);
  std::uint32_t k = cp.next[m];
  Lanes<bool> wait;
  for (;; k += kCopyWarps) {
    if (k >= r.batches) return false;
    wait = w.map([&](int l) { return cp.done[kW * k + l] == kPending; });
    if (w.ballot(wait) != 0) break;
  }
  const Lanes<bool> ready = w.map([&](int l) {
    if (!wait[l]) return false;
    const std::uint32_t i = kW * k + static_cast<std::uint32_t>(l);
    for (std::uint32_t j = cp.dep_lo[i]; j <= cp.dep_hi[i]; ++j) {
      if (simt::load_volatile(&cp.done[j]) == kPending) return false;
    }
    return true;
  });
  if (w.ballot(ready) != 0) {
    simt::fence_block();  // the sources' bytes after their flags
    // r.offset holds the offsets copy_round forwarded.
    const LaneBatch b = round_batch(w, r, k);
    const LaneMatches lm = matches_from(w, b, b.offset);
    copy_ready_matches<false>(w, out, lm, ready);
    simt::fence_block();  // the bytes before the flags
    w.each([&](int l) {
      if (ready[l]) simt::store_volatile(&cp.done[kW * k + l], std::uint16_t{1});
    });
    w.sync();
  }
  w.each([&](int l) {
    if (l == 0) cp.next[m] = k;
  });
  w.sync();
  return true;
}

// The copying team: round r, whole.
template <int W>
TANDEM_HD void copy_round(const CopyTeam& team, int warp, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                          WindowRound<W>& r, WindowCopy& cp) {
  constexpr auto kW = static_cast<std::uint32_t>(simt::kWarpSize);
  // The literals and the matches that read earlier rounds only; for the
  // others, the sequences whose output they read.
  team.members(warp, [&](const Warp& w, int m) {
    const std::uint32_t count = r.batches * kW;
    for (std::uint32_t k = static_cast<std::uint32_t>(m); k < r.batches; k += kCopyWarps) {
      const LaneBatch b = round_batch(w, r, k);
      copy_literals<false>(w, in, n, out, b);
      const LaneMatches lm = lane_matches(w, b);
      const Lanes<bool> now = w.map([&](int l) { return lm.ml[l] != 0 && lm.need[l] <= r.start; });
      copy_ready_matches<false>(w, out, lm, now);
      const Lanes<bool> wait = w.map([&](int l) { return lm.ml[l] != 0 && !now[l]; });
      w.each([&](int l) {
        const std::uint32_t i = kW * k + static_cast<std::uint32_t>(l);
        r.offset[i] = lm.offset[l];
        cp.done[i] = wait[l] ? kPending : 0;
        if (!wait[l]) return;
        const std::uint32_t lo = sequence_at(r, count, lm.dst[l] - lm.offset[l]);
        std::uint32_t hi = lo;
        while (hi + 1 < count && r.at[hi + 1] < lm.need[l]) ++hi;
        // Only sequences before this one (its own literals are written).
        cp.dep_lo[i] = static_cast<std::uint16_t>(i == 0 ? 1 : lo);
        cp.dep_hi[i] = static_cast<std::uint16_t>(i == 0 ? 0 : hi < i ? hi : i - 1);
      });
    }
    w.each([&](int l) {
      if (l == 0) cp.next[m] = static_cast<std::uint32_t>(m);
    });
  });
  team.sync();
  // The other matches: each member goes through its batches in order,
  // copying a match once every sequence whose output its source reads is
  // written, and waiting (on the device, spinning, not at a barrier) while
  // none of its batch's is ready. Matches read only sequences before them,
  // and a member finishes its batches in order, so the lowest match not
  // copied is always ready.
#if defined(__CUDA_ARCH__)
  team.members(warp, [&](const Warp& w, int m) {
    while (copy_pending_step(w, m, out, r, cp)) {
    }
  });
#else
  for (bool more = true; more;) {
    more = false;
    team.members(warp, [&](const Warp& w, int m) { more = copy_pending_step(w, m, out, r, cp) || more; });
  }
#endif
}

// Decodes the block in[0, n) into out[0, cap) with the block's warps; *out_size
// receives the bytes decoded (also on failure: how far it got). n and cap are
// at most kMaxItemSize.
template <int W>
TANDEM_HD ItemStatus decode_block_window(const Block<W>& b, WindowShared<W>& s, const std::uint8_t* in, std::uint32_t n,
                                       std::uint8_t* out, std::uint32_t cap, std::uint32_t* out_size) {
  static_assert(W == kWindowWarps, "a parsing team and a copying team");
  const ParseTeam parse{0, 1};
  const CopyTeam copy{kParseWarps, 2};
  b.warps([&](const Warp& w, int wi) {
    if (wi == 0) {
      w.each([&](int l) {
        if (l == 0) s.parse.cursor = LaneCursor{};
      });
    }
  });
  b.sync();
  b.warps([&](const Warp&, int wi) {
    if (wi < kParseWarps && parse.runs(wi)) parse_window(parse, wi, in, n, cap, s.parse, s.round[0]);
  });
  b.sync();
  // Step r: parse round r + 1, copy round r.
  for (std::uint32_t r = 0;; ++r) {
    WindowRound<W>& cur = s.round[r & 1];
    WindowRound<W>& next = s.round[(r + 1) & 1];
    const bool more = cur.last == 0;
    b.warps([&](const Warp&, int wi) {
      if (wi < kParseWarps) {
        if (more && parse.runs(wi)) parse_window(parse, wi, in, n, cap, s.parse, next);
      } else if (copy.runs(wi)) {
        copy_round(copy, wi, in, n, out, cur, s.copy);
      }
    });
    b.sync();
    if (!more) {
      *out_size = cur.end;
      return cur.status;
    }
  }
}

}  // namespace tandem::gpu::lz4k
