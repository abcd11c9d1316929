// The gather decoder: an LZ4 block of up to 64 KiB decoded by two kernels,
// none of whose threads follows the block's whole chain of tokens.
//
// The other decoders follow the chain sequence by sequence on one warp, and
// a block takes as long as that chain: its blocks with the most sequences
// set the time of a batch that the GPU holds at once. Here the chain is
// found by a light kernel, many blocks a multiprocessor at once, and the
// bytes are gathered by a heavy one, a block a multiprocessor:
//
// gather_plan (kPlanThreads threads a block) writes a GatherPlan: where the
// block's chain is at every kGatherThreads-th part of its sequences, in the
// input and in the output.
//  P0. The block's input is copied to shared memory.
//  P1. Segments. The input is cut into segments of a multiple of 32 bytes,
//      one a thread. Each thread follows the chain that would start at its
//      segment's first byte to the end of the segment, marking where its
//      tokens are (a bit a byte).
//  P2. Joins. Each thread follows its chain on, past its segment, until it
//      lands on a mark of the segment it is in: from there its chain and
//      that segment's are one (kPlanReach sequences at most).
//  P3. The path: the block's chain is segment 0's; it joins segment k's,
//      which joins another's, and so on; found by pointer jumping, 32
//      segments a warp, then a walk over the windows.
//  P4. Entries. Each segment on the path follows its join again and gives
//      each segment it enters the block's first position there.
//  P5. Each thread counts the sequences and output of the block's chain in
//      its segment; prefix sums give where each segment's start in both.
//  P6. Each thread follows its segment's part of the chain again and writes
//      the splits that fall in it.
//
// decode_block_gather (kGatherThreads threads a block), from the plan:
//  0. The block's input is copied to shared memory.
//  6. Runs. Each thread follows its share of the sequences (the same number
//     for every thread, from the plan), checks each offset against its
//     output position, and marks where each run (a sequence's literals, its
//     match) starts in the output, with the source of the run's first byte:
//     for a literal, its input position; for a match, the output byte
//     `offset` back. Literal bytes are marked too.
//  7. Sources. Every other output byte gets its source from its run's first
//     (the run: the last start at or before it, from the marks and a running
//     maximum over their words); in a match that overlaps itself, the
//     repeated period's. A literal's entry becomes its value.
//  8. Gather. Every output byte follows its sources back to a value, halving
//     the path as it goes (each byte passed gets its source's source), and
//     writes it to global memory; the byte's own entry becomes the value,
//     where later chases stop.
// (Steps 1 to 5 were the plan's, in the one kernel before.)
//
// A source is always an earlier byte of the same value, so it does not
// matter in which order the chases of step 8 see each other's changes.
// A block that either kernel cannot vouch for (a sequence on the chain that
// cannot be read, a chain that does not end at the input's end or that does
// not join within kPlanReach sequences, a bad offset, more input or output
// than the shared memory holds) is decoded by decode_block_lanes on the
// first warp: the same statuses, sizes and bytes as the other decoders,
// whatever the input.
//
// Measured on the H100, silesia7 in 64 KiB blocks (GB/s): the wide decoder
// 79.1; the gather decoder in one kernel, its 1024 threads parsing too,
// 117.3 (steps 1 to 6 took half of a block's 134,000 cycles, 29% of it
// waiting on the warp with the longest chain); in two kernels, 122.1 (the
// gather kernel about 84,000 cycles a block; the plan kernel, two thread
// blocks a multiprocessor, a third of the batch's time).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/lz4_gpu_decode.hpp"

namespace tandem::gpu::lz4k {

inline constexpr int kGatherWarps = 32;
inline constexpr std::uint32_t kGatherThreads = kGatherWarps * simt::kWarpSize;
inline constexpr std::uint32_t kGatherMaxIn = 64 * 1024;
inline constexpr std::uint32_t kGatherMaxOut = 64 * 1024;  // sources are 16-bit
// Sources a chase of step 8 follows in one pass.
inline constexpr std::uint32_t kGatherHops = 1024;

// Where a chain stops other than at a token position (positions are below
// kGatherMaxIn).
inline constexpr std::uint32_t kChainLast = 0x80000000u;  // at the block's last sequence
inline constexpr std::uint32_t kChainBad = 0x80000001u;   // at a sequence that cannot be read
inline constexpr std::uint32_t kChainTooLong = 0x80000002u;  // not joined within kPlanReach sequences


// A sequence as the chains read it: its lengths, its offset, and where the
// next token is. Checks what the input alone can tell; the offset against the
// output position is checked in step 6.
struct GatherSequence {
  std::uint32_t lit_src = 0;
  std::uint32_t lit = 0;
  std::uint32_t offset = 0;
  std::uint32_t ml = 0;
  std::uint32_t next = 0;  // the next token, or kChainLast / kChainBad
};

// Adds an LZ4 length extension at in[*q] to *len; false when the input ends
// first or the length passes `limit`.
TANDEM_HD bool gather_length(const std::uint8_t* in, std::uint32_t n, std::uint32_t* q, std::uint32_t* len,
                             std::uint32_t limit) {
  for (;;) {
    if (*q >= n) return false;
    const std::uint32_t b = in[(*q)++];
    *len += b;
    if (b != 255) return *len <= limit;
    if (*len > limit) return false;
  }
}

// The sequence at in[p], p < n. `in` is the block's copy in shared memory,
// readable for 12 bytes past any position before n.
TANDEM_HD GatherSequence gather_sequence(const std::uint8_t* in, std::uint32_t n, std::uint32_t p) {
  GatherSequence s;
  // Most sequences: no length extensions, up to 4 literals, so that the
  // token and the offset lie in the 8 bytes from p; the next token inside
  // the input.
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(in + p);
  const std::uint32_t shift = static_cast<std::uint32_t>(at & 3);
  const std::uint8_t* words = reinterpret_cast<const std::uint8_t*>(at - shift);
  const std::uint32_t w1 = simt::load_aligned_u32(words + 4);
  const std::uint32_t lo = simt::funnel(simt::load_aligned_u32(words), w1, shift);
  const std::uint32_t hi = simt::funnel(w1, simt::load_aligned_u32(words + 8), shift);
  const std::uint32_t token = lo & 0xff;
  std::uint32_t lit = token >> 4;
  if (lit <= 4 && (token & 15) != 15 && p + 3 + lit < n) {
    const std::uint64_t v = (static_cast<std::uint64_t>(hi) << 32) | lo;
    s.lit_src = p + 1;
    s.lit = lit;
    s.offset = static_cast<std::uint32_t>(v >> (8 * (lit + 1))) & 0xffff;
    s.ml = (token & 15) + kMinMatch;
    s.next = p + 3 + lit;
    return s;
  }
  // The others, field by field.
  s.next = kChainBad;
  std::uint32_t q = p + 1;
  if (lit == 15 && !gather_length(in, n, &q, &lit, n)) return s;
  if (lit > n - q) return s;
  s.lit_src = q;
  s.lit = lit;
  q += lit;
  if (q == n) {
    s.next = kChainLast;
    return s;
  }
  if (n - q < 2) return s;
  s.offset = in[q] | (std::uint32_t{in[q + 1]} << 8);
  q += 2;
  std::uint32_t ml = token & 15;
  if (ml == 15 && !gather_length(in, n, &q, &ml, kGatherMaxOut)) return s;
  ml += kMinMatch;
  if (ml > kGatherMaxOut || q >= n) return s;  // q == n: a block must end with literals
  s.ml = ml;
  s.next = q;
  return s;
}

// Where the next token is after the sequence at in[p], p < n (or a kChain
// stop), and its output bytes, as gather_sequence gives them: here when each
// length has one extension byte at most and the next token lies inside the
// input (the reads stay below n, or at p + 1), else by gather_sequence.
TANDEM_HD std::uint32_t gather_next(const std::uint8_t* in, std::uint32_t n, std::uint32_t p, std::uint32_t* bytes) {
  const std::uint32_t token = in[p];
  std::uint32_t lit = token >> 4;
  std::uint32_t ml = token & 15;
  std::uint32_t q = p + 1;
  bool quick = true;
  if (lit == 15) {
    const std::uint32_t e = in[q++];
    lit += e;
    quick = e != 255;
  }
  q += lit;  // the offset
  if (quick && q + 2 < n) {
    q += 2;
    if (ml == 15) {
      const std::uint32_t e = in[q++];
      ml += e;
      quick = e != 255 && q < n;
    }
    if (quick) {
      *bytes = lit + ml + kMinMatch;
      return q;
    }
  }
  const GatherSequence g = gather_sequence(in, n, p);
  *bytes = g.lit + g.ml;
  return g.next;
}

inline constexpr std::uint32_t kGatherWords = kGatherMaxOut / 32;

struct GatherShared {
  // The block's input, from byte `phase` (its address modulo 16) on, and 16
  // bytes for gather_sequence to read past it.
  alignas(16) std::uint8_t input[kGatherMaxIn + 32];
  // Each output byte's source: for a literal, its input position (its value
  // from step 7 on; see gather_is_value); for a match byte, an earlier output
  // byte of the same value (or, once a chase has found it, its value).
  std::uint16_t source[kGatherMaxOut];
  std::uint32_t literal[kGatherWords];  // bit i: output byte i is a literal
  std::uint32_t starts[kGatherWords];   // bit i: a run (literals or a match) starts at output byte i
  std::uint16_t last_start[kGatherWords];  // the last start in the words from its warp's first to w
  std::uint32_t warp_total[kGatherWarps];  // a warp's last start (step 7)
  std::uint32_t fail;
  std::uint32_t more[3];  // step 8: a chase is left unfinished, by pass modulo 3
};

// The lane decoder, for blocks the gather decoder cannot vouch for: a call of
// its own on the device, so that its registers do not weigh on the rest.
#if defined(__CUDACC__)
__host__ __device__ __noinline__
#else
inline
#endif
    ItemStatus
    gather_fallback(const std::uint8_t* in, std::uint32_t n, std::uint8_t* out, std::uint32_t cap,
                    std::uint32_t* out_size) {
  return decode_block_lanes(Warp{}, in, n, out, cap, out_size);
}


// A byte's entry in source[] once step 7 has run: its value, kGatherValue |
// the byte, or an earlier byte of the same value. Below kGatherValue an entry
// of kGatherValue or more can only be a value; in the last 256 bytes of a
// 64 KiB block, where it can be an earlier byte too, only literals' entries
// are values (nothing writes a value into any other entry there).
inline constexpr std::uint32_t kGatherValue = 0xff00;

// The entry that holds `byte` as its value.
TANDEM_HD std::uint32_t gather_value(std::uint32_t byte) { return kGatherValue | byte; }

TANDEM_HD bool gather_is_value(const GatherShared& s, std::uint32_t x, std::uint32_t entry) {
  return entry >= kGatherValue && (x < kGatherValue || ((s.literal[x / 32] >> (x % 32)) & 1));
}

// Sets bits [lo, hi) of a bitmap.
TANDEM_HD void gather_set_bits(std::uint32_t* bits, std::uint32_t lo, std::uint32_t hi) {
  while (lo < hi) {
    const std::uint32_t end = (lo | 31) + 1 < hi ? (lo | 31) + 1 : hi;
    const std::uint32_t width = end - lo;
    const std::uint32_t mask = (width == 32 ? 0xffffffffu : ((std::uint32_t{1} << width) - 1)) << (lo & 31);
    simt::atomic_or_block(&bits[lo / 32], mask);
    lo = end;
  }
}


// ------------------------------------------------------------- the plan ----

// Warps of gather_plan's thread block. Its shared memory (PlanShared, about
// 84 KiB) lets a multiprocessor hold two.
#ifdef TANDEM_PLAN_WARPS
inline constexpr int kPlanWarps = TANDEM_PLAN_WARPS;
#else
inline constexpr int kPlanWarps = 16;
#endif
inline constexpr std::uint32_t kPlanThreads = kPlanWarps * simt::kWarpSize;
// Sequences a chain follows past its segment before step P2 gives up on it
// (and, if the block's chain needs it, the plan leaves the block to the
// lane decoder).
inline constexpr std::uint32_t kPlanReach = 256;

// Where a thread of step 6 starts: its first token in the input and that
// sequence's output position.
struct GatherSplit {
  std::uint32_t in;
  std::uint32_t out;
};

// What gather_plan hands decode_block_gather for one block, in the
// decompression's temporary storage. Thread t of step 6 takes the sequences
// from split[t] to split[t + 1] (the last: to the chain's end), the same
// number for every thread but the last.
struct GatherPlan {
  std::uint32_t ok;       // 1: the chain was followed to the input's end and its output fits 64 KiB
  std::uint32_t total;    // the block's output bytes
  std::uint32_t threads;  // threads with sequences: split[0, threads)
  std::uint32_t pad;
  GatherSplit split[kGatherThreads];
};

// Batches whose blocks decode to more than this, and at most kGatherMaxOut,
// may run the gather decoder, and have a GatherPlan a block in the
// temporary storage.
inline constexpr std::size_t kGatherPlanMin = 8 * 1024;

// The temporary storage of a batch: its plans. False when num_items is too
// large to count them.
inline bool gather_plan_bytes(std::size_t num_items, std::size_t max_output_size, std::size_t* bytes) {
  *bytes = 0;
  if (max_output_size <= kGatherPlanMin || max_output_size > kGatherMaxOut) return true;
  if (num_items > (std::size_t{1} << 32)) return false;
  *bytes = num_items * sizeof(GatherPlan);
  return true;
}

struct PlanShared {
  // The block's input, as in GatherShared.
  alignas(16) std::uint8_t input[kGatherMaxIn + 32];
  std::uint32_t marks[kGatherMaxIn / 32];  // bit p: a token of the chain of p's segment
  // Per segment:
  std::uint32_t leave[kPlanThreads];  // where its own chain leaves it, or a kChain stop
  std::uint32_t join[kPlanThreads];   // where its chain joins another segment's, or a kChain stop
  std::uint32_t reach[kPlanThreads];  // the path from it within its window of 32
  std::uint32_t exit[kPlanThreads];   // where that path leaves the window
  std::uint32_t entry[kPlanThreads];  // the block's chain's first position in it (or past it)
  std::uint32_t count[kPlanThreads];  // the block's sequences in it (P5), then before it
  std::uint32_t bytes[kPlanThreads];  // their output, then the output before it
  std::uint32_t path[kPlanWarps];     // the path's segments, a window each
  std::uint32_t warp_count[kPlanWarps];
  std::uint32_t warp_bytes[kPlanWarps];
  std::uint32_t broken;  // P3: the path does not end at the input's end
  std::uint32_t sequences;
  std::uint32_t total;
};

// Bytes a segment of the plan for a block of n input bytes: n / kPlanThreads
// rounded up to a multiple of 32, so that each thread's marks are words of
// its own.
TANDEM_HD std::uint32_t plan_segment_size(std::uint32_t n) {
  const std::uint32_t each = (n + kPlanThreads - 1) / kPlanThreads;
  return (each + 31) & ~31u;
}

TANDEM_HD void gather_plan(const Block<kPlanWarps>& b, PlanShared& s, const std::uint8_t* in, std::uint32_t n,
                           GatherPlan* plan) {
  const auto give_up = [&]() {
    simt::block_threads(b, [&](std::uint32_t t) {
      if (t == 0) plan->ok = 0;
    });
  };
  if (n == 0 || n > kGatherMaxIn) return give_up();
  const std::uint32_t size = plan_segment_size(n);
  const std::uint32_t segments = (n + size - 1) / size;
  const auto segment_end = [&](std::uint32_t j) { return (j + 1) * size < n ? (j + 1) * size : n; };
  const std::uint32_t phase = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(in) & 15);
  std::uint8_t* const copy = s.input + phase;

  // P0.
  simt::block_threads(b, [&](std::uint32_t t) { simt::copy_phased_share(copy, in, n, t, kPlanThreads); });
  b.sync();
  // P1: each segment's own chain.
  simt::block_threads(b, [&](std::uint32_t j) {
    if (j >= segments) return;
    const std::uint32_t end = segment_end(j);
    for (std::uint32_t k = j * size / 32; k < (end + 31) / 32; ++k) s.marks[k] = 0;
    std::uint32_t p = j * size;
    while (p < end) {
      s.marks[p / 32] |= std::uint32_t{1} << (p % 32);
      std::uint32_t bytes;
      p = gather_next(copy, n, p, &bytes);
    }
    s.leave[j] = p;
  });
  b.sync();

  // P2: joins. Each segment's chain, followed on from where it leaves the
  // segment, until it lands on a token of the chain of the segment it is in:
  // from there the two are one.
  simt::block_threads(b, [&](std::uint32_t j) {
    if (j >= segments) return;
    std::uint32_t p = s.leave[j];
    for (std::uint32_t steps = 0; p < kChainLast; ++steps) {
      if ((s.marks[p / 32] >> (p % 32)) & 1) break;
      if (steps == kPlanReach) {
        p = kChainTooLong;
        break;
      }
      std::uint32_t bytes;
      p = gather_next(copy, n, p, &bytes);
    }
    s.join[j] = p;
  });
  b.sync();

  // P3: the path, the segments whose chains the block's chain takes:
  // segment 0's, then the one it joins, and so on. Within each window of 32
  // segments, by pointer jumping, the path from each segment and where it
  // leaves the window ...
  b.warps([&](const Warp& w, int warp) {
    const std::uint32_t first = static_cast<std::uint32_t>(warp) * simt::kWarpSize;
    // The segment each chain joins, or its kChain stop.
    const Lanes<std::uint32_t> join = w.map([&](int l) {
      const std::uint32_t j = first + static_cast<std::uint32_t>(l);
      const std::uint32_t at = j < segments ? s.join[j] : kChainBad;
      return at < kChainLast ? at / size : at;
    });
    // The next segment of the path within the window; itself at its end.
    Lanes<int> next = w.map([&](int l) {
      return join[l] >= first && join[l] < first + simt::kWarpSize ? static_cast<int>(join[l] - first) : l;
    });
    Lanes<std::uint32_t> reach = w.map([&](int l) { return std::uint32_t{1} << l; });
    for (int step = 0; step < 5; ++step) {
      const Lanes<std::uint32_t> further = w.shfl(reach, next);
      const Lanes<int> jump = w.shfl(next, next);
      w.each([&](int l) {
        reach[l] |= further[l];
        next[l] = jump[l];
      });
    }
    const Lanes<std::uint32_t> exit = w.shfl(join, next);
    w.each([&](int l) {
      const std::uint32_t j = first + static_cast<std::uint32_t>(l);
      s.reach[j] = reach[l];
      s.exit[j] = exit[l];
    });
  });
  b.sync();
  // ... then window by window from segment 0.
  simt::block_threads(b, [&](std::uint32_t t) {
    if (t != 0) return;
    for (std::uint32_t w = 0; w < kPlanWarps; ++w) s.path[w] = 0;
    std::uint32_t k = 0;
    while (k < segments) {
      s.path[k / simt::kWarpSize] = s.reach[k];
      k = s.exit[k];
    }
    s.broken = k == kChainLast ? 0 : 1;  // the chain ends with the input, at its last sequence
  });
  b.sync();
  if (s.broken) return give_up();

  // P4: the entries. Each segment on the path follows its join again and
  // gives each segment it enters its first position there (segments a
  // literal run passes get the position after it, where they have no token).
  simt::block_threads(b, [&](std::uint32_t j) {
    if (j == 0) s.entry[0] = 0;
    if (j >= segments || !((s.path[j / simt::kWarpSize] >> (j % simt::kWarpSize)) & 1)) return;
    const std::uint32_t join = s.join[j];
    std::uint32_t p = s.leave[j];
    std::uint32_t seg = j;
    for (;;) {
      const std::uint32_t k = p < kChainLast ? p / size : segments - 1;
      while (seg < k) s.entry[++seg] = p;
      if (p == join || p >= kChainLast) break;
      std::uint32_t bytes;
      p = gather_next(copy, n, p, &bytes);
    }
  });
  b.sync();

  // P5: sequences and output a segment, then the prefix sums, within a warp ...
  simt::block_threads(b, [&](std::uint32_t j) {
    std::uint32_t c = 0;
    std::uint32_t o = 0;
    if (j < segments) {
      const std::uint32_t end = segment_end(j);
      std::uint32_t x = s.entry[j];
      while (x < end && o <= kGatherMaxOut) {
        std::uint32_t bytes;
        x = gather_next(copy, n, x, &bytes);
        ++c;
        o += bytes;
      }
    }
    s.count[j] = c;
    s.bytes[j] = o;
  });
  b.sync();
  b.warps([&](const Warp& w, int warp) {
    const std::uint32_t first = static_cast<std::uint32_t>(warp) * simt::kWarpSize;
    const Lanes<std::uint32_t> c = w.map([&](int l) { return s.count[first + static_cast<std::uint32_t>(l)]; });
    const Lanes<std::uint32_t> o = w.map([&](int l) { return s.bytes[first + static_cast<std::uint32_t>(l)]; });
    const Lanes<std::uint32_t> c_before = w.exclusive_sum(c);
    const Lanes<std::uint32_t> o_before = w.exclusive_sum(o);
    w.each([&](int l) {
      s.count[first + static_cast<std::uint32_t>(l)] = c_before[l];
      s.bytes[first + static_cast<std::uint32_t>(l)] = o_before[l];
    });
    const std::uint32_t c_sum = w.sum(c);
    const std::uint32_t o_sum = w.sum(o);
    w.each([&](int l) {
      if (l == 0) {
        s.warp_count[warp] = c_sum;
        s.warp_bytes[warp] = o_sum;
      }
    });
  });
  b.sync();
  // ... and over the warps.
  b.warps([&](const Warp& w, int warp) {
    const Lanes<std::uint32_t> c = w.map([&](int l) { return l < kPlanWarps ? s.warp_count[l] : 0u; });
    const Lanes<std::uint32_t> o = w.map([&](int l) { return l < kPlanWarps ? s.warp_bytes[l] : 0u; });
    const std::uint32_t c_before = w.shfl(w.exclusive_sum(c), warp);
    const std::uint32_t o_before = w.shfl(w.exclusive_sum(o), warp);
    const std::uint32_t first = static_cast<std::uint32_t>(warp) * simt::kWarpSize;
    w.each([&](int l) {
      s.count[first + static_cast<std::uint32_t>(l)] += c_before;
      s.bytes[first + static_cast<std::uint32_t>(l)] += o_before;
    });
    if (warp == 0) {
      const std::uint32_t sequences = w.sum(c);
      const std::uint32_t total = w.sum(o);
      w.each([&](int l) {
        if (l == 0) {
          s.sequences = sequences;
          s.total = total;
        }
      });
    }
  });
  b.sync();
  const std::uint32_t total = s.total;
  const std::uint32_t sequences = s.sequences;
  if (total > kGatherMaxOut || sequences == 0) return give_up();

  // P6: the splits, every per-th sequence.
  const std::uint32_t per = (sequences + kGatherThreads - 1) / kGatherThreads;
  simt::block_threads(b, [&](std::uint32_t j) {
    if (j == 0) {
      plan->ok = 1;
      plan->total = total;
      plan->threads = (sequences + per - 1) / per;
      plan->pad = 0;
    }
    if (j >= segments) return;
    const std::uint32_t end = segment_end(j);
    std::uint32_t x = s.entry[j];
    std::uint32_t g = s.count[j];
    std::uint32_t o = s.bytes[j];
    std::uint32_t split = (g + per - 1) / per;
    while (x < end) {
      if (g == split * per) {
        plan->split[split++] = GatherSplit{x, o};
      }
      std::uint32_t bytes;
      x = gather_next(copy, n, x, &bytes);
      o += bytes;
      ++g;
    }
  });
}

// ------------------------------------------------------------ the gather ----

TANDEM_HD ItemStatus decode_block_gather(const Block<kGatherWarps>& b, GatherShared& s, const GatherPlan& plan,
                                         const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                         std::uint32_t cap, std::uint32_t* out_size) {
  const auto fallback = [&]() {
    ItemStatus status = ItemStatus::ok;
    b.warps([&](const Warp& w, int warp) {
      (void)w;
      if (warp == 0) status = gather_fallback(in, n, out, cap, out_size);
    });
    return status;
  };
  // (Every thread reads the same plan, so they all fall back or none does.)
  const std::uint32_t total = plan.total;
  if (!plan.ok || n == 0 || n > kGatherMaxIn || total > cap || total > kGatherMaxOut) return fallback();
  const std::uint32_t threads = plan.threads;
  // The input's copy, at in's address modulo 16.
  const std::uint32_t phase = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(in) & 15);
  std::uint8_t* const copy = s.input + phase;

  // Step 0.
  simt::block_threads(b, [&](std::uint32_t t) {
    simt::copy_phased_share(copy, in, n, t, kGatherThreads);
    for (std::uint32_t k = t; k < kGatherWords; k += kGatherThreads) {
      s.literal[k] = 0;
      s.starts[k] = 0;
    }
    if (t == 0) {
      s.fail = 0;
      s.more[0] = s.more[1] = s.more[2] = 0;
    }
  });
  b.sync();

  // Step 6: the source of each run's first byte, and where runs start.
  simt::block_threads(b, [&](std::uint32_t t) {
    if (t >= threads) return;
    const bool last = t + 1 == threads;
    const GatherSplit first = plan.split[t];
    const std::uint32_t stop = last ? n : plan.split[t + 1].in;
    std::uint32_t p = first.in;
    std::uint32_t at = first.out;
    // A run at `at` whose first byte's source is `first`.
    const auto run = [&](std::uint32_t from) {
      s.source[at] = static_cast<std::uint16_t>(from);
      simt::atomic_or_block(&s.starts[at / 32], std::uint32_t{1} << (at % 32));
    };
    while (p < stop) {
      const GatherSequence q = gather_sequence(copy, n, p);
      if (q.lit + q.ml > total - at) {  // not the plan's sequence: never, unless the input changed
        s.fail = 1;
        return;
      }
      if (q.lit != 0) {
        run(q.lit_src);
        gather_set_bits(s.literal, at, at + q.lit);
        at += q.lit;
      }
      if (q.ml != 0) {
        if (q.offset == 0 || q.offset > at) {
          s.fail = 1;
          return;
        }
        run(at - q.offset);
        at += q.ml;
      }
      p = q.next;
    }
    if (p != (last ? kChainLast : stop)) s.fail = 1;
  });
  b.sync();
  if (s.fail) return fallback();
  // Step 7: the last start in each word and the words before it: the
  // highest set bit, then a running maximum over the words (byte 0 always
  // starts a run) ...
  b.warps([&](const Warp& w, int warp) {
    constexpr std::uint32_t kPerLane = kGatherWords / kGatherThreads;
    const auto first_word = [&](int l) {
      return (static_cast<std::uint32_t>(warp) * simt::kWarpSize + static_cast<std::uint32_t>(l)) * kPerLane;
    };
    const Lanes<std::uint32_t> last = w.map([&](int l) {
      const std::uint32_t first = first_word(l);
      std::uint32_t m = 0;
      for (std::uint32_t k = first; k < first + kPerLane; ++k) {
        if (s.starts[k]) m = 32 * k + static_cast<std::uint32_t>(simt::last_set(s.starts[k]));
        s.last_start[k] = static_cast<std::uint16_t>(m);
      }
      return m;
    });
    // Inclusive running maximum over the lanes.
    Lanes<std::uint32_t> run = last;
    for (int d = 1; d < simt::kWarpSize; d *= 2) {
      const Lanes<std::uint32_t> before = w.shfl(run, w.map([&](int l) { return l >= d ? l - d : l; }));
      w.each([&](int l) { run[l] = before[l] > run[l] ? before[l] : run[l]; });
    }
    const Lanes<std::uint32_t> prior = w.shfl(run, w.map([&](int l) { return l > 0 ? l - 1 : 0; }));
    w.each([&](int l) {
      const std::uint32_t first = first_word(l);
      const std::uint32_t before = l > 0 ? prior[l] : 0;
      for (std::uint32_t k = first; k < first + kPerLane; ++k) {
        if (s.last_start[k] < before) s.last_start[k] = static_cast<std::uint16_t>(before);
      }
    });
    const std::uint32_t top = w.max(run);
    w.each([&](int l) {
      if (l == 0) s.warp_total[warp] = top;
    });
  });
  b.sync();
  // ... then every byte of a run after its first: its source from the run's
  // first byte (a match that overlaps itself repeats its first `offset`
  // bytes). A thread takes 4 bytes at a time, their sources one 8-byte word.
  simt::block_threads(b, [&](std::uint32_t t) {
    for (std::uint32_t i0 = 4 * t; i0 < total; i0 += 4 * kGatherThreads) {
      const std::uint32_t word = s.starts[i0 / 32];
      const std::uint32_t here = (word >> (i0 % 32)) & 15;
      if (here == 15) continue;
      const std::uint32_t literal = (s.literal[i0 / 32] >> (i0 % 32)) & 15;
      // The start of byte i0's run.
      std::uint32_t r = i0;
      const std::uint32_t below = word & ((std::uint32_t{1} << (i0 % 32)) - 1);
      if (here & 1) {
      } else if (below) {
        r = (i0 & ~31u) + static_cast<std::uint32_t>(simt::last_set(below));
      } else {
        // The last start in the words before, among those of the warp that
        // scanned them; none there (a run of thousands of bytes): the last
        // of an earlier warp's.
        const std::uint32_t w = i0 / 32 - 1;  // i0 >= 32 here: byte 0 starts a run
        r = s.last_start[w];
        for (std::uint32_t k = w / (kGatherWords / kGatherWarps); r == 0 && k > 0; --k) r = s.warp_total[k - 1];
      }
      // The 4 sources as they stand (a run's first byte's is final), and
      // those of the others from their run's first. (i0 + 4 <= kGatherMaxOut:
      // the load stays inside the array.)
      const std::uint64_t old = simt::load_aligned_u64(s.source + i0);
      std::uint32_t first = (here & 1) ? static_cast<std::uint32_t>(old & 0xffff) : s.source[r];
      // Without branches (their divergence cost more than the arithmetic);
      // a byte of a match that repeats its period is redone after.
      std::uint64_t sources = 0;
      std::uint32_t repeats = 0;
      std::uint32_t runs[4];
      std::uint32_t firsts[4];
      TANDEM_UNROLL
      for (std::uint32_t k = 0; k < 4; ++k) {
        const std::uint32_t i = i0 + k;
        const bool start = (here >> k) & 1;
        r = start ? i : r;
        first = start ? static_cast<std::uint32_t>(old >> (16 * k)) & 0xffff : first;
        runs[k] = r;
        firsts[k] = first;
        const std::uint32_t d = i - r;
        const bool lit = (literal >> k) & 1;
        repeats |= static_cast<std::uint32_t>(!lit && d != 0 && d >= r - first) << k;
        // A literal byte's value, but at a run's start (its entry is read
        // for the run's other bytes; step 7c gives its value).
        const std::uint32_t source = (first + d) & 0xffff;
        const std::uint32_t entry = lit && !start ? gather_value(copy[source]) : source;
        sources |= static_cast<std::uint64_t>(entry) << (16 * k);
      }
      if (repeats) {
        for (std::uint32_t k = 0; k < 4; ++k) {
          const std::uint32_t i = i0 + k;
          if (!((repeats >> k) & 1) || i >= total) continue;
          const std::uint32_t offset = runs[k] - firsts[k];
          const std::uint64_t v = (firsts[k] + (i - runs[k]) % offset) & 0xffff;
          sources = (sources & ~(std::uint64_t{0xffff} << (16 * k))) | (v << (16 * k));
        }
      }
      if (i0 + 4 <= total) {
        simt::store_aligned_u64(s.source + i0, sources);
      } else {
        for (std::uint32_t k = 0; i0 + k < total; ++k) {
          s.source[i0 + k] = static_cast<std::uint16_t>(sources >> (16 * k));
        }
      }
    }
  });
  b.sync();

  // Step 7c: the value of each literal run's first byte.
  simt::block_threads(b, [&](std::uint32_t t) {
    for (std::uint32_t k = t; k * 32 < total; k += kGatherThreads) {
      std::uint32_t firsts = s.starts[k] & s.literal[k];
      while (firsts) {
        const std::uint32_t i = 32 * k + static_cast<std::uint32_t>(simt::last_set(firsts));
        firsts &= ~(std::uint32_t{1} << (i % 32));
        s.source[i] = static_cast<std::uint16_t>(gather_value(copy[s.source[i]]));
      }
    }
  });
  b.sync();

  // Step 8: passes until every chase ends at a value (one, unless a chase
  // takes more than kGatherHops entries). A chase halves the path it
  // follows: each entry it passes gets its source's source. A byte below
  // kGatherValue that a chase resolves gets its value, which later chases
  // then stop at.
  const bool aligned = (reinterpret_cast<std::uintptr_t>(out) & 3) == 0;
  for (std::uint32_t pass = 0;; ++pass) {
    simt::block_threads(b, [&](std::uint32_t t) {
      if (t == 0) s.more[(pass + 1) % 3] = 0;
      bool done = true;
      for (std::uint32_t i0 = 4 * t; i0 < total; i0 += 4 * kGatherThreads) {
        const std::uint32_t count = total - i0 < 4 ? total - i0 : 4;
        // (Entries past the output are read but not used.)
        const std::uint64_t entries = simt::load_aligned_u64(s.source + i0);
        std::uint32_t word = 0;
        bool whole = true;
        TANDEM_UNROLL
        for (std::uint32_t k = 0; k < 4; ++k) {
          if (k >= count) break;
          const std::uint32_t i = i0 + k;
          const std::uint32_t own = static_cast<std::uint32_t>(entries >> (16 * k)) & 0xffff;
          std::uint32_t e = own;
          // (gather_is_value(s, i, e) spelled out below kGatherValue: the
          // call here made the whole decoder 4% slower on the H100, 112.5
          // against 117.3 GB/s.)
          if (i < kGatherValue ? e < kGatherValue : !gather_is_value(s, i, e)) {
            std::uint32_t x = e;
            bool reached;
            if (i < kGatherValue) {
              // Follows the entries from byte i to a value, halving the
              // path (every byte on it lies below i, and so below
              // kGatherValue: an entry of kGatherValue or more is a value).
              e = s.source[x];
              for (std::uint32_t hops = 0; e < kGatherValue && hops < kGatherHops; hops += 2) {
                const std::uint32_t z = s.source[e];
                s.source[x] = static_cast<std::uint16_t>(z);
                if (z >= kGatherValue) {
                  e = z;
                  break;
                }
                x = z;
                e = s.source[x];
              }
              reached = e >= kGatherValue;
            } else {
              // The same in the last 256 bytes of 64 KiB, where an entry of
              // kGatherValue or more can also be an earlier byte.
              e = s.source[x];
              for (std::uint32_t hops = 0; !gather_is_value(s, x, e) && hops < kGatherHops; ++hops) {
                x = e;
                e = s.source[x];
              }
              reached = gather_is_value(s, x, e);
            }
            if (!reached) {
              // Byte i's entry changes only if the chase went further.
              if (x != own) s.source[i] = static_cast<std::uint16_t>(x);
              whole = false;
              continue;
            }
            if (i < kGatherValue) s.source[i] = static_cast<std::uint16_t>(e);
          }
          word |= (e & 0xff) << (8 * k);
        }
        if (!whole) {
          done = false;
        } else if (aligned && count == 4) {
          simt::store_aligned_u32(out + i0, word);
        } else {
          for (std::uint32_t k = 0; k < count; ++k) out[i0 + k] = static_cast<std::uint8_t>(word >> (8 * k));
        }
      }
      if (!done) s.more[pass % 3] = 1;
    });
    b.sync();
    if (!s.more[pass % 3]) break;
    // Entries only ever lead to earlier bytes, so every chase ends within
    // kGatherMaxOut / (kGatherHops / 2) passes; past that, take no chance.
    if (pass + 1 == kGatherMaxOut / (kGatherHops / 2)) return fallback();
  }
 
  *out_size = total;
  return ItemStatus::ok;
}

}  // namespace tandem::gpu::lz4k
