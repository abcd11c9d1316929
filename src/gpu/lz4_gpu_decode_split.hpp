// decode_block_split: a thread block of kSplitWarps warps per LZ4 block of up
// to kSplitMaxCap bytes of output, whose parse is not one warp's chain.
//
// The wide decoder (lz4_gpu_decode.hpp) follows the chain of tokens one warp
// at a time, some 120 cycles a sequence, and copies the matches that read
// the output of their own round in waves ordered by the lowest one left,
// each wave a round trip through L2. Here the block works in rounds of
// kSplitRoundBytes input bytes, each in these steps, all warps at once but
// for the walk:
//  1. Exits: in every window of 32 input bytes, each lane l works out where
//     the chain would leave the window if a token started at its byte, how
//     many sequences it would pass and how many bytes they would write:
//     quick_sequence at every byte, then pointer jumping over the window by
//     shuffles (split_exits). A chain stops early at a byte whose sequence is
//     not quick (a length extension of 255, or near the block's end).
//  2. Walk (warp 0): from the round's first token, one lookup a window
//     rather than one step a sequence; each window the chain passes through
//     becomes a run (its first token, its sequence count, its output and
//     list positions). A sequence that is not quick is read field by field
//     (parse_sequence) and goes straight into the list.
//  3. Runs: a warp per run finds the run's token positions (pointer
//     doubling), lane i reading sequence i, placing it (a prefix sum) and
//     checking its offset and lengths. The first sequence that fails is read
//     again field by field (step 3b), which gives its status, and the round
//     ends there.
//  4. Literals: every batch of 32 sequences copies its literals and marks
//     the bytes in a bitmap of written output.
//  5. Matches, in waves until none is left: a match is copied once its
//     source bytes are all marked written, or lie below the lowest match not
//     yet copied (the frontier: a wave always copies that one). Waves end
//     with a block barrier; a wave's copies are marked at the next.
// Same statuses, sizes and bytes as decode_block_lanes.
#pragma once

#include <cstdint>

#include "gpu/lz4_gpu_decode.hpp"
#include "gpu/simt.hpp"

namespace tandem::gpu::lz4k {

inline constexpr int kSplitWarps = 4;
// Blocks whose output capacity is at most this: the written-bytes bitmap
// covers the whole output.
inline constexpr std::uint32_t kSplitMaxCap = 64 * 1024;
inline constexpr std::uint32_t kSplitWindows = 32;  // windows of 32 input bytes a round
inline constexpr std::uint32_t kSplitRoundBytes = kSplitWindows * simt::kWarpSize;
// Sequences a round at most: a quick sequence takes at least 3 input bytes,
// so a round's 1 KiB holds at most 342; the walk stops the round when the
// list is full.
inline constexpr std::uint32_t kSplitBatches = 11;
inline constexpr std::uint32_t kSplitSeqs = kSplitBatches * simt::kWarpSize;
inline constexpr std::uint32_t kSplitRuns = 64;
// Sources up to this long are checked byte by byte against the bitmap;
// longer ones wait for the frontier.
inline constexpr std::uint32_t kSplitBitmapCheck = 64;
inline constexpr std::uint32_t kSplitNone = 0xffffffffu;

// A run of quick sequences inside one window (count > 0), or one sequence
// read field by field that the walk put in the list itself (count 0).
struct SplitRun {
  std::uint32_t ip;     // its first token
  std::uint32_t count;  // sequences
  std::uint32_t op;     // output position of its first literals
  std::uint32_t seq;    // list position of its first sequence
};

struct SplitShared {
  std::uint32_t written[kSplitMaxCap / 32];  // a bit per output byte
  // Per input byte of the round: where the chain leaves its window (bits
  // 0-9, relative to the window), the sequences passed (10-13) and their
  // output bytes (14-31).
  std::uint32_t exits[kSplitRoundBytes];
  // The round's sequences in order.
  std::uint32_t src[kSplitSeqs];  // input position of the literals
  std::uint32_t at[kSplitSeqs];   // output position of the literals
  std::uint32_t lit[kSplitSeqs];
  std::uint32_t offset[kSplitSeqs];
  std::uint32_t fwd[kSplitSeqs];  // the offset forwarded within its batch (forwarded_offsets)
  std::uint32_t ml[kSplitSeqs];   // 0: literals only
  SplitRun runs[kSplitRuns];
  std::uint32_t pending[kSplitBatches];  // per batch: matches not yet copied
  std::uint32_t copied[kSplitBatches];   // and copied in the last wave, to be marked
  std::uint32_t front[3];                // per wave, by thread 0 of 3: the lowest match left
  std::uint32_t run_count;
  std::uint32_t seq_count;
  std::uint32_t fail;  // list position of the first sequence that failed its checks
  // The parse's cursor between rounds.
  std::uint32_t ip;
  std::uint32_t op;
  ItemStatus status;
  std::uint32_t last;  // 1: the block ends (or failed) in this round
};

// A quick sequence's next token: past its offset and match length byte.
TANDEM_HD std::uint32_t quick_end(const QuickSequence& q) {
  return q.offset_at + 2 + (q.match_len >= 15 + kMinMatch ? 1u : 0u);
}

inline constexpr std::uint32_t kExitWindows = 4;  // windows a warp works on at once

// Step 1: the exits of windows first, first + step, ... (kExitWindows of
// them) of the round at base.
TANDEM_HD void split_exit_windows(const Warp& w, SplitShared& s, const std::uint8_t* in, std::uint32_t n,
                                  std::uint32_t base, std::uint32_t first, std::uint32_t step) {
  constexpr auto kW = static_cast<std::uint32_t>(simt::kWarpSize);
  Lanes<std::uint32_t> pos[kExitWindows], cnt[kExitWindows], sum[kExitWindows];
  TANDEM_UNROLL
  for (std::uint32_t k = 0; k < kExitWindows; ++k) {
    const std::uint32_t wbase = base + (first + k * step) * kW;
    w.each([&](int l) {
      const auto lane = static_cast<std::uint32_t>(l);
      const std::uint32_t p = wbase + lane;
      QuickSequence q;
      if (p < n && quick_sequence(in, n, p, &q)) {
        pos[k][l] = quick_end(q) - wbase;
        cnt[k][l] = 1;
        sum[k][l] = q.lit_len + q.match_len;
      } else {  // the chain stops here
        pos[k][l] = lane;
        cnt[k][l] = 0;
        sum[k][l] = 0;
      }
    });
  }
  // A step moves at least 3 bytes, so a chain passes at most 11 tokens of a
  // window: 4 rounds of pointer jumping.
  TANDEM_UNROLL
  for (int round = 0; round < 4; ++round) {
    TANDEM_UNROLL
    for (std::uint32_t k = 0; k < kExitWindows; ++k) {
      const Lanes<int> to = w.map([&](int l) { return pos[k][l] < kW ? static_cast<int>(pos[k][l]) : l; });
      const Lanes<std::uint32_t> p2 = w.shfl(pos[k], to);
      const Lanes<std::uint32_t> c2 = w.shfl(cnt[k], to);
      const Lanes<std::uint32_t> s2 = w.shfl(sum[k], to);
      w.each([&](int l) {
        if (pos[k][l] < kW) {
          pos[k][l] = p2[l];
          cnt[k][l] += c2[l];
          sum[k][l] += s2[l];
        }
      });
    }
  }
  TANDEM_UNROLL
  for (std::uint32_t k = 0; k < kExitWindows; ++k) {
    const std::uint32_t at = (first + k * step) * kW;
    w.each([&](int l) { s.exits[at + static_cast<std::uint32_t>(l)] = pos[k][l] | cnt[k][l] << 10 | sum[k][l] << 14; });
  }
}

// Step 2, warp 0: walks the round from s.ip, filling s.runs and the list
// entries of sequences read field by field, and moves the cursor on.
TANDEM_HD void split_walk(const Warp& w, SplitShared& s, const std::uint8_t* in, std::uint32_t n, std::uint32_t cap) {
  constexpr auto kW = static_cast<std::uint32_t>(simt::kWarpSize);
  const std::uint32_t base = s.ip;
  const std::uint32_t end = base + kSplitRoundBytes;
  std::uint32_t ip = base;
  std::uint32_t op = s.op;
  std::uint32_t runs = 0;
  std::uint32_t seqs = 0;
  ItemStatus status = ItemStatus::ok;
  bool last = false;
  const auto add_run = [&](std::uint32_t count) {
    const SplitRun r{ip, count, op, seqs};
    w.each([&](int l) {
      if (l == 0) s.runs[runs] = r;
    });
    ++runs;
  };
  while (!last && ip < end && runs < kSplitRuns) {
    const std::uint32_t e = s.exits[ip - base];
    const std::uint32_t window_end = base + ((ip - base) & ~(kW - 1)) + kW;
    const std::uint32_t exit = window_end - kW + (e & 1023u);
    const std::uint32_t count = (e >> 10) & 15u;
    if (count > 0) {
      if (seqs + count > kSplitSeqs) break;
      add_run(count);
      seqs += count;
      op += e >> 14;
      ip = exit;
      if (exit >= window_end) continue;
      if (runs == kSplitRuns) break;
    }
    // The sequence at ip is not quick: read it field by field.
    if (seqs == kSplitSeqs) break;
    const CheckedSequence q = parse_sequence(w, in, n, cap, ip, op);
    if (q.keep) {
      const std::uint32_t i = seqs;
      w.each([&](int l) {
        if (l != 0) return;
        s.src[i] = q.lit_src;
        s.at[i] = q.lit_at;
        s.lit[i] = q.lit_len;
        s.offset[i] = q.offset;
        s.ml[i] = q.match_len;
      });
      add_run(0);
      ++seqs;
    }
    ip = q.ip;
    op = q.op;
    status = q.status;
    last = q.last || q.status != ItemStatus::ok;
  }
  w.each([&](int l) {
    if (l != 0) return;
    s.run_count = runs;
    s.seq_count = seqs;
    s.fail = kSplitNone;
    s.ip = ip;
    s.op = op;
    s.status = status;
    s.last = last ? 1u : 0u;
  });
}

// Step 3: run r's sequences into the list, checked.
TANDEM_HD void split_expand_run(const Warp& w, SplitShared& s, const std::uint8_t* in, std::uint32_t n,
                                std::uint32_t cap, std::uint32_t base, const SplitRun& r) {
  constexpr auto kW = static_cast<std::uint32_t>(simt::kWarpSize);
  const std::uint32_t wbase = base + ((r.ip - base) & ~(kW - 1));
  // Each lane's quick sequence, and the next token (relative) where it stays
  // in the window; lanes off the chain may be anything.
  Lanes<std::uint32_t> src, lit, ml, off_at, jump;
  w.each([&](int l) {
    const auto lane = static_cast<std::uint32_t>(l);
    const std::uint32_t p = wbase + lane;
    QuickSequence q;
    const bool quick = p < n && quick_sequence(in, n, p, &q);
    const std::uint32_t next = quick ? quick_end(q) - wbase : lane;
    jump[l] = next < kW ? next : lane;
    src[l] = q.lit_src;
    lit[l] = q.lit_len;
    ml[l] = q.match_len;
    off_at[l] = q.offset_at;
  });
  // Pointer doubling: lane i finds the i-th token from the run's first
  // (count <= 11 < 16: four jumps, by the bits of i).
  Lanes<int> at = w.map([&](int) { return static_cast<int>(r.ip - wbase); });
  TANDEM_UNROLL
  for (int bit = 0; bit < 4; ++bit) {
    const Lanes<std::uint32_t> moved = w.shfl(jump, at);
    at = w.map([&](int l) { return (l >> bit) & 1 ? static_cast<int>(moved[l]) : at[l]; });
    const Lanes<std::uint32_t> twice = w.shfl(jump, w.map([&](int l) { return static_cast<int>(jump[l]); }));
    jump = twice;
  }
  const Lanes<bool> have = w.map([&](int l) { return static_cast<std::uint32_t>(l) < r.count; });
  const Lanes<std::uint32_t> q_src = w.shfl(src, at);
  const Lanes<std::uint32_t> q_lit = w.shfl(lit, at);
  const Lanes<std::uint32_t> q_ml = w.shfl(ml, at);
  const Lanes<std::uint32_t> q_off_at = w.shfl(off_at, at);
  const Lanes<std::uint32_t> sizes =
      w.exclusive_sum(w.map([&](int l) { return have[l] ? q_lit[l] + q_ml[l] : 0u; }));
  const Lanes<bool> bad = w.map([&](int l) {
    if (!have[l]) return false;
    const std::uint32_t offset = in[q_off_at[l]] | (std::uint32_t{in[q_off_at[l] + 1]} << 8);
    const std::uint32_t op = r.op + sizes[l];
    const std::uint32_t i = r.seq + static_cast<std::uint32_t>(l);
    s.src[i] = q_src[l];
    s.at[i] = op;
    s.lit[i] = q_lit[l];
    s.offset[i] = offset;
    s.ml[i] = q_ml[l];
    return offset == 0 || offset > op + q_lit[l] || op + q_lit[l] + q_ml[l] > cap;
  });
  const std::uint32_t failed = w.ballot(bad);
  if (failed != 0) {
    const auto f = static_cast<std::uint32_t>(simt::first_set(failed));
    w.each([&](int l) {
      if (l == 0) simt::atomic_min(&s.fail, r.seq + f);
    });
  }
}

// Step 3b, warp 0: the first sequence that failed its checks, read field by
// field; the round ends with it.
TANDEM_HD void split_repair(const Warp& w, SplitShared& s, const std::uint8_t* in, std::uint32_t n,
                            std::uint32_t cap) {
  const std::uint32_t f = s.fail;
  // A quick sequence's token: before its literals and their one extension byte.
  const std::uint32_t token = s.src[f] - 1 - (s.lit[f] >= 15 ? 1u : 0u);
  const CheckedSequence q = parse_sequence(w, in, n, cap, token, s.at[f]);
  w.each([&](int l) {
    if (l != 0) return;
    s.src[f] = q.keep ? q.lit_src : 0u;
    s.lit[f] = q.keep ? q.lit_len : 0u;
    s.offset[f] = q.keep ? q.offset : 0u;
    s.ml[f] = q.keep ? q.match_len : 0u;
    s.seq_count = f + 1;
    s.ip = q.ip;
    s.op = q.op;
    s.status = q.status;
    s.last = q.last || q.status != ItemStatus::ok ? 1u : 0u;
  });
}

// Marks out[a, a + len) written.
TANDEM_HD void mark_written(std::uint32_t* bits, std::uint32_t a, std::uint32_t len) {
  while (len > 0) {
    const std::uint32_t bit = a & 31;
    const std::uint32_t take = 32 - bit < len ? 32 - bit : len;
    const std::uint32_t mask = (take == 32 ? 0xffffffffu : (1u << take) - 1u) << bit;
    simt::atomic_or(bits + (a >> 5), mask);
    a += take;
    len -= take;
  }
}

// Whether out[a, a + len) is all marked written.
TANDEM_HD bool all_written(const std::uint32_t* bits, std::uint32_t a, std::uint32_t len) {
  while (len > 0) {
    const std::uint32_t bit = a & 31;
    const std::uint32_t take = 32 - bit < len ? 32 - bit : len;
    const std::uint32_t mask = (take == 32 ? 0xffffffffu : (1u << take) - 1u) << bit;
    if ((bits[a >> 5] & mask) != mask) return false;
    a += take;
    len -= take;
  }
  return true;
}

// Batch k of the round's list, lane i holding sequence 32k + i; lanes past
// the list hold lengths 0 at the round's end.
TANDEM_HD LaneBatch split_batch(const Warp& w, const SplitShared& s, std::uint32_t k) {
  const std::uint32_t first = k * simt::kWarpSize;
  const std::uint32_t count = s.seq_count;
  const std::uint32_t end = s.op;
  LaneBatch b;
  const auto field = [&](const std::uint32_t* f) {
    return w.map([&](int l) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      return i < count ? f[i] : 0u;
    });
  };
  b.src = field(s.src);
  b.lit = field(s.lit);
  b.offset = field(s.offset);
  b.ml = field(s.ml);
  b.at = w.map([&](int l) {
    const std::uint32_t i = first + static_cast<std::uint32_t>(l);
    return i < count ? s.at[i] : end;
  });
  return b;
}

// A batch's matches as the waves copy them: offsets forwarded (fwd).
TANDEM_HD LaneMatches split_matches(const Warp& w, const SplitShared& s, const LaneBatch& b, std::uint32_t k) {
  constexpr std::uint32_t step = kLaneStep;
  LaneMatches m;
  m.dst = w.map([&](int l) { return b.at[l] + b.lit[l]; });
  m.offset = w.map([&](int l) { return s.fwd[k * simt::kWarpSize + static_cast<std::uint32_t>(l)]; });
  m.ml = b.ml;
  m.need = w.map([&](int l) { return b.offset[l] < b.ml[l] ? m.dst[l] : m.dst[l] - m.offset[l] + b.ml[l]; });
  m.by_lane = w.map([&](int l) { return b.offset[l] >= b.ml[l] && b.ml[l] <= step; });
  return m;
}

// Marks the matches of this warp's batches that the last wave copied.
template <int W>
TANDEM_HD void split_mark_copied(const Warp& w, SplitShared& s, int wi) {
  for (auto k = static_cast<std::uint32_t>(wi); k < kSplitBatches; k += W) {
    const std::uint32_t copied = s.copied[k];
    if (copied == 0) continue;
    const std::uint32_t first = k * simt::kWarpSize;
    w.each([&](int l) {
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      if ((copied >> l) & 1u) mark_written(s.written, s.at[i] + s.lit[i], s.ml[i]);
    });
    w.sync();
    w.each([&](int l) {
      if (l == 0) s.copied[k] = 0;
    });
  }
}

// Step 4 for this warp's batches: literals copied and marked, offsets
// forwarded, matches pending.
template <int W>
TANDEM_HD void split_literals(const Warp& w, SplitShared& s, const std::uint8_t* in, std::uint32_t n,
                              std::uint8_t* out, int wi) {
  const std::uint32_t batches = (s.seq_count + simt::kWarpSize - 1) / simt::kWarpSize;
  for (auto k = static_cast<std::uint32_t>(wi); k < batches; k += W) {
    const LaneBatch b = split_batch(w, s, k);
    copy_literals<false>(w, in, n, out, b);
    w.each([&](int l) { mark_written(s.written, b.at[l], b.lit[l]); });
    const Lanes<std::uint32_t> dst = w.map([&](int l) { return b.at[l] + b.lit[l]; });
    const Lanes<std::uint32_t> fwd = forwarded_offsets(w, b, dst);
    const std::uint32_t pending = w.ballot(w.map([&](int l) { return b.ml[l] != 0; }));
    w.each([&](int l) {
      s.fwd[k * simt::kWarpSize + static_cast<std::uint32_t>(l)] = fwd[l];
      if (l == 0) s.pending[k] = pending;
    });
  }
}

// Step 5, one wave for this warp's batches: marks the last wave's copies,
// copies the matches that are ready, and adds the lowest one left to
// s.front[slot].
template <int W>
TANDEM_HD void split_wave(const Warp& w, SplitShared& s, std::uint8_t* out, std::uint32_t cap, int wi,
                          std::uint32_t frontier, std::uint32_t slot) {
  split_mark_copied<W>(w, s, wi);
  std::uint32_t lowest = kSplitNone;
  const std::uint32_t batches = (s.seq_count + simt::kWarpSize - 1) / simt::kWarpSize;
  for (auto k = static_cast<std::uint32_t>(wi); k < batches; k += W) {
    const std::uint32_t pending = s.pending[k];
    if (pending == 0) continue;
    const LaneBatch b = split_batch(w, s, k);
    const LaneMatches m = split_matches(w, s, b, k);
    const Lanes<bool> ready = w.map([&](int l) {
      if (((pending >> l) & 1u) == 0) return false;
      if (m.need[l] <= frontier) return true;
      // The source: what precedes a match that overlaps itself, else its
      // (forwarded) source.
      const bool overlaps = b.offset[l] < b.ml[l];
      const std::uint32_t from = m.dst[l] - m.offset[l];
      const std::uint32_t len = overlaps ? m.offset[l] : m.ml[l];
      return len <= kSplitBitmapCheck && all_written(s.written, from, len);
    });
    copy_ready_matches<false>(w, out, m, ready, cap);
    const std::uint32_t done = w.ballot(ready);
    const std::uint32_t left = pending & ~done;
    const std::uint32_t low = w.min(w.map([&](int l) { return (left >> l) & 1u ? m.dst[l] : kSplitNone; }));
    lowest = low < lowest ? low : lowest;
    w.each([&](int l) {
      if (l != 0) return;
      s.pending[k] = left;
      s.copied[k] = done;
    });
  }
  w.each([&](int l) {
    if (l == 0 && lowest != kSplitNone) simt::atomic_min(&s.front[slot], lowest);
  });
}

// Decodes the block in[0, n) into out[0, cap) (cap <= kSplitMaxCap) with the
// block's warps; *out_size receives the bytes decoded (also on failure: how
// far it got).
template <int W>
TANDEM_HD ItemStatus decode_block_split(const simt::Block<W>& blk, SplitShared& s, const std::uint8_t* in,
                                        std::uint32_t n, std::uint8_t* out, std::uint32_t cap,
                                        std::uint32_t* out_size) {
  static_assert(kSplitWindows % (W * kExitWindows) == 0, "whole groups of windows per warp");
  const std::uint32_t words = (cap + 31) / 32;
  blk.warps([&](const Warp& w, int wi) {
    w.each([&](int l) {
      for (std::uint32_t i = static_cast<std::uint32_t>(wi * simt::kWarpSize + l); i < words;
           i += W * simt::kWarpSize) {
        s.written[i] = 0;
      }
      if (wi != 0) return;
      if (static_cast<std::uint32_t>(l) < kSplitBatches) s.copied[l] = 0;
      if (l == 0) {
        s.ip = 0;
        s.op = 0;
        s.status = ItemStatus::ok;
        s.last = 0;
      }
    });
  });
  blk.sync();
  for (;;) {
    // 1: exits (and the marks of the last round's last wave).
    const std::uint32_t base = s.ip;
    blk.warps([&](const Warp& w, int wi) {
      split_mark_copied<W>(w, s, wi);
      for (auto first = static_cast<std::uint32_t>(wi); first < kSplitWindows; first += W * kExitWindows) {
        split_exit_windows(w, s, in, n, base, first, W);
      }
    });
    blk.sync();
    // 2: the walk.
    blk.warps([&](const Warp& w, int wi) {
      if (wi == 0) split_walk(w, s, in, n, cap);
    });
    blk.sync();
    // 3: the runs.
    const std::uint32_t runs = s.run_count;
    blk.warps([&](const Warp& w, int wi) {
      for (auto r = static_cast<std::uint32_t>(wi); r < runs; r += W) {
        const SplitRun run = s.runs[r];
        if (run.count > 0) split_expand_run(w, s, in, n, cap, base, run);
      }
    });
    blk.sync();
    if (s.fail != kSplitNone) {
      blk.warps([&](const Warp& w, int wi) {
        if (wi == 0) split_repair(w, s, in, n, cap);
      });
      blk.sync();
    }
    // 4: literals.
    blk.warps([&](const Warp& w, int wi) {
      split_literals<W>(w, s, in, n, out, wi);
      w.each([&](int l) {
        if (wi == 0 && l < 3) s.front[l] = kSplitNone;
      });
    });
    blk.sync();
    // 5: matches. Everything below the round's first output is written.
    std::uint32_t frontier = s.seq_count > 0 ? s.at[0] : 0;
    for (std::uint32_t wave = 0;; ++wave) {
      const std::uint32_t slot = wave % 3;
      blk.warps([&](const Warp& w, int wi) {
        split_wave<W>(w, s, out, cap, wi, frontier, slot);
        w.each([&](int l) {
          if (wi == 0 && l == 0) s.front[(wave + 1) % 3] = kSplitNone;
        });
      });
      blk.sync();
      frontier = s.front[slot];
      if (frontier == kSplitNone) break;
    }
    if (s.last != 0) break;
  }
  *out_size = s.op;
  return s.status;
}

}  // namespace tandem::gpu::lz4k
