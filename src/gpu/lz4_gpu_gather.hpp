// decode_block_gather: an LZ4 block of up to 64 KiB decoded by a thread block
// of 1024 threads, none of which follows the block's whole chain of tokens.
//
// The other decoders follow the chain sequence by sequence on one warp, and
// a block takes as long as that chain: its blocks with the most sequences
// set the time of a batch that the GPU holds at once. Here every step works
// on the whole block at once, its threads separated by barriers:
//
//  0. The block's input is copied to shared memory, where every step reads
//     it.
//  1. Segments. The input is cut into segments of 32 or 64 bytes, one a
//     thread. Each thread follows the chain that would start at its
//     segment's first byte to the end of the segment, marking where tokens
//     would be (a bit a byte) and summing the output before each.
//  2. Joins. Each thread follows its chain on, past its segment, until it
//     lands on a mark of the segment it is in: from there its chain and that
//     segment's are one. Chains that start at different bytes meet soon (on
//     silesia, most within the next segment). It notes the first token in
//     each segment it passes on the way, and its output there.
//  3. The path. The block's chain is segment 0's; it joins segment k's, which
//     joins another's, and so on: the segments whose chains it takes are
//     found by pointer jumping, 32 segments a warp, then a walk over the 32
//     windows.
//  4. Entries. The notes of the segments on the path give, for every
//     segment, where the block's chain enters it and the output of the
//     block's sequences that start there (the notes' sums, and the sums of
//     step 1 from where a chain joins).
//  5. Sizes. A prefix sum over the segments gives each one's output
//     position.
//  6. Runs. Each thread follows its sequences again, checks each offset
//     against its output position, and marks where each run (a sequence's
//     literals, its match) starts in the output, with the source of the
//     run's first byte: for a literal, its input position; for a match, the
//     output byte `offset` back. Literal bytes are marked too.
//  7. Sources. Every other output byte gets its source from its run's first
//     (the run: the last start at or before it, from the marks and a running
//     maximum over their words); in a match that overlaps itself, the
//     repeated period's. A literal's entry becomes its value.
//  8. Gather. Every output byte follows its sources back to a value, halving
//     the path as it goes (each byte passed gets its source's source), and
//     writes it to global memory; the byte's own entry becomes the value,
//     where later chases stop.
//
// A source is always an earlier byte of the same value, so it does not
// matter in which order the chases of step 8 see each other's changes.
// A block that any step cannot vouch for (a bad sequence on the path, a
// chain that does not join within kGatherReach sequences, a bad offset, more
// input or output than the shared memory holds) is decoded by
// decode_block_lanes on the first warp: the same statuses, sizes and bytes
// as the other decoders, whatever the input.
//
// Measured on the H100, silesia7 in 64 KiB blocks (GB/s): the wide decoder
// 79.1, this one 125.3 (117.3 while step 8 took 4 bytes a thread, 115.4
// while literals' entries were also input positions and each hop of a chase
// read the literal bitmap). Where its time went with 4 bytes a thread
// (clock64 between barriers, an average block of 135,000 cycles): steps 0-5
// about 37%, step 6 13%, step 7 21%, step 8 29%.
#pragma once

#include <cstdint>

#include "gpu/lz4_gpu_decode.hpp"

namespace tandem::gpu::lz4k {

inline constexpr int kGatherWarps = 32;
inline constexpr std::uint32_t kGatherThreads = kGatherWarps * simt::kWarpSize;
// Input bytes a segment (a bit each in a 64-bit mask): 64, or 32 for
// blocks of at most kGatherThreads * 32 input bytes, so that their threads
// follow shorter chains in steps 1 and 6 (gather_segment_log). On the H100,
// silesia7 in 64 KiB blocks: 106.6 GB/s with 64 always, 108.3 so, 106.7
// with 16 for blocks of at most 16 KiB too.
inline constexpr std::uint32_t kGatherSegment = 64;
inline constexpr std::uint32_t kGatherMaxIn = kGatherThreads * kGatherSegment;
inline constexpr std::uint32_t kGatherMaxOut = 64 * 1024;  // sources are 16-bit
// Sequences a chain follows past its segment before step 2 gives up on it.
inline constexpr std::uint32_t kGatherReach = 256;
// Sources a chase of step 8 follows in one pass.
inline constexpr std::uint32_t kGatherHops = 1024;

// Where a chain stops other than at a token position (positions are below
// kGatherMaxIn, segment numbers below kGatherThreads).
inline constexpr std::uint32_t kChainLast = 0x80000000u;     // at the block's last sequence
inline constexpr std::uint32_t kChainBad = 0x80000001u;      // at a sequence that cannot be read
inline constexpr std::uint32_t kChainTooLong = 0x80000002u;  // not joined within kGatherReach
// No token in a segment. (A token at input byte 65535 can only be the
// block's last, an empty literal run; its segment writes nothing either way.)
inline constexpr std::uint32_t kNoEntry = 0xffff;
// Entries that step 2 notes for step 4, a chain; one that passes more
// segments before it joins is followed again in step 4.
inline constexpr std::uint32_t kGatherNoted = 6;
// Tokens of a chain within its segment: 3 bytes a sequence at least, but the
// last (64 / 3, rounded up).
inline constexpr std::uint32_t kGatherTokens = 22;
// A chain's output in its segment that its 16-bit sums cannot hold.
inline constexpr std::uint32_t kTooManyBytes = 0xffffffffu;

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
// stop), and its output bytes: from the token alone when neither length
// has an extension and the next token lies inside the input, as for
// gather_sequence.
TANDEM_HD std::uint32_t gather_next(const std::uint8_t* in, std::uint32_t n, std::uint32_t p, std::uint32_t* bytes) {
  const std::uint32_t token = in[p];
  const std::uint32_t lit = token >> 4;
  if (lit != 15 && (token & 15) != 15 && p + 3 + lit < n) {
    *bytes = lit + (token & 15) + kMinMatch;
    return p + 3 + lit;
  }
  const GatherSequence q = gather_sequence(in, n, p);
  *bytes = q.lit + q.ml;
  return q.next;
}

inline constexpr std::uint32_t kGatherWords = kGatherMaxOut / 32;

struct GatherShared {
  // The block's input, from byte `phase` (its address modulo 16) on, and 16
  // bytes for gather_sequence to read past it.
  alignas(16) std::uint8_t input[kGatherMaxIn + 32];
  union {
    // Steps 6-8: each output byte's source: for a literal, its input position
    // (its value from step 7 on; see gather_is_value); for a match byte, an
    // earlier output byte of the same value (or, once a chase has found it,
    // its value).
    std::uint16_t source[kGatherMaxOut];
    // Steps 1-4, per segment.
    struct {
      std::uint64_t marks[kGatherThreads];  // where its chain has tokens
      std::uint32_t leave[kGatherThreads];  // where its chain leaves it, or a kChain stop
      std::uint32_t join[kGatherThreads];   // where its chain joins another segment's, or a kChain stop
      std::uint16_t before[kGatherTokens][kGatherThreads];  // output of its chain's tokens before the t-th
      std::uint32_t bytes[kGatherThreads];  // output of its chain's tokens in it, or kTooManyBytes
      std::uint32_t reach[kGatherThreads];  // the path from it within its window of 32
      std::uint32_t exit[kGatherThreads];   // where that path leaves the window
      std::uint32_t path[kGatherWarps];     // the path's segments, a window each
      std::uint32_t noted[kGatherNoted][kGatherThreads];        // the entries its join passes
      std::uint32_t noted_bytes[kGatherNoted][kGatherThreads];  // and its output in each before it leaves
      std::uint32_t notes[kGatherThreads];                      // how many
    } chains;
  };
  std::uint32_t literal[kGatherWords];  // bit i: output byte i is a literal
  std::uint32_t starts[kGatherWords];   // bit i: a run (literals or a match) starts at output byte i
  std::uint16_t last_start[kGatherWords];  // the last start in the words from its warp's first to w
  std::uint16_t entry[kGatherThreads];  // the block's first token in each segment, or kNoEntry
  std::uint32_t at[kGatherThreads];     // each segment's output: its size, then its position
  std::uint32_t warp_total[kGatherWarps];  // a warp's: output (step 5), then last start (step 7)
  std::uint32_t total;
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

// log2 of the segment size for a block of n input bytes.
TANDEM_HD std::uint32_t gather_segment_log(std::uint32_t n) {
  return n <= kGatherThreads * (kGatherSegment / 2) ? 5 : 6;
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

TANDEM_HD bool gather_marked(const GatherShared& s, std::uint32_t log, std::uint32_t p) {
  return (s.chains.marks[p >> log] >> (p & ((1u << log) - 1))) & 1;
}

// The output of segment k's chain from its token at y on (y marked in k), or
// kTooManyBytes.
TANDEM_HD std::uint32_t gather_suffix(const GatherShared& s, std::uint32_t log, std::uint32_t k, std::uint32_t y) {
  const std::uint32_t bytes = s.chains.bytes[k];
  if (bytes == kTooManyBytes) return kTooManyBytes;
  const std::uint64_t below = s.chains.marks[k] & ((std::uint64_t{1} << (y & ((1u << log) - 1))) - 1);
  const auto t = static_cast<std::uint32_t>(simt::popcount(static_cast<std::uint32_t>(below)) +
                                            simt::popcount(static_cast<std::uint32_t>(below >> 32)));
  return bytes - s.chains.before[t][k];
}

// Adds a chain's output in segment k to the segment's size; false when too
// large for the sums.
TANDEM_HD bool gather_add(GatherShared& s, std::uint32_t k, std::uint32_t bytes) {
  if (bytes == kTooManyBytes) return false;
  s.at[k] += bytes;
  return true;
}

// Step 4 for a segment on the path whose join passed more segments than
// step 2 noted: follows its chain from where it leaves the segment to the
// join again, noting the first token in each segment it passes and its
// output there. False when the sums cannot hold it.
TANDEM_HD bool gather_entries(GatherShared& s, std::uint32_t log, const std::uint8_t* in, std::uint32_t n,
                              std::uint32_t j) {
  std::uint32_t p = s.chains.leave[j];
  std::uint32_t seg = j;
  std::uint32_t sum = 0;
  while (p < kChainLast) {
    const std::uint32_t k = p >> log;
    if (k != seg) {
      if (seg != j) s.at[seg] += sum;
      sum = 0;
      s.entry[k] = static_cast<std::uint16_t>(p);
      seg = k;
    }
    if (gather_marked(s, log, p)) {
      const std::uint32_t suffix = gather_suffix(s, log, k, p);
      return suffix != kTooManyBytes && gather_add(s, k, sum + suffix);
    }
    std::uint32_t bytes;
    p = gather_next(in, n, p, &bytes);
    sum += bytes;
  }
  if (seg != j) s.at[seg] += sum;
  return true;
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

TANDEM_HD ItemStatus decode_block_gather(const Block<kGatherWarps>& b, GatherShared& s, const std::uint8_t* in,
                                         std::uint32_t n, std::uint8_t* out, std::uint32_t cap,
                                         std::uint32_t* out_size) {
  const auto fallback = [&]() {
    ItemStatus status = ItemStatus::ok;
    b.warps([&](const Warp& w, int warp) {
      (void)w;
      if (warp == 0) status = gather_fallback(in, n, out, cap, out_size);
    });
    return status;
  };
  if (n == 0 || n > kGatherMaxIn) return fallback();
  const std::uint32_t log = gather_segment_log(n);
  const std::uint32_t segments = (n + (1u << log) - 1) >> log;
  // The input's copy, at in's address modulo 16.
  const std::uint32_t phase = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(in) & 15);
  std::uint8_t* const copy = s.input + phase;

  // Steps 0 and 1.
  simt::block_threads(b, [&](std::uint32_t t) {
    simt::copy_phased_share(copy, in, n, t, kGatherThreads);
    for (std::uint32_t k = t; k < kGatherWords; k += kGatherThreads) {
      s.literal[k] = 0;
      s.starts[k] = 0;
    }
    s.entry[t] = static_cast<std::uint16_t>(t == 0 ? 0 : kNoEntry);
    s.at[t] = 0;
    if (t == 0) {
      s.fail = 0;
      s.more[0] = s.more[1] = s.more[2] = 0;
    }
  });
  b.sync();
  simt::block_threads(b, [&](std::uint32_t j) {
    if (j >= segments) return;
    const std::uint32_t start = j << log;
    const std::uint32_t end = start + (1u << log) < n ? start + (1u << log) : n;
    std::uint64_t marks = 0;
    std::uint32_t p = start;
    std::uint32_t sum = 0;
    std::uint32_t t = 0;
    while (p < end) {
      marks |= std::uint64_t{1} << (p - start);
      s.chains.before[t++][j] = static_cast<std::uint16_t>(sum);
      std::uint32_t bytes;
      p = gather_next(copy, n, p, &bytes);
      sum += bytes;
    }
    s.chains.marks[j] = marks;
    s.chains.leave[j] = p;
    s.chains.bytes[j] = sum > 0xffff ? kTooManyBytes : sum;
  });
  b.sync();

  // Step 2, noting the first token in each segment the chain passes.
  simt::block_threads(b, [&](std::uint32_t j) {
    if (j >= segments) return;
    std::uint32_t p = s.chains.leave[j];
    std::uint32_t seg = j;
    std::uint32_t notes = 0;
    std::uint32_t steps = 0;
    std::uint32_t sum = 0;
    while (p < kChainLast) {
      const std::uint32_t k = p >> log;
      if (k != seg) {
        if (notes > 0 && notes <= kGatherNoted) s.chains.noted_bytes[notes - 1][j] = sum;
        sum = 0;
        if (notes < kGatherNoted) s.chains.noted[notes][j] = p;
        ++notes;
        seg = k;
      }
      if (gather_marked(s, log, p)) break;
      if (++steps > kGatherReach) {
        p = kChainTooLong;
        break;
      }
      std::uint32_t bytes;
      p = gather_next(copy, n, p, &bytes);
      sum += bytes;
    }
    if (notes > 0 && notes <= kGatherNoted) s.chains.noted_bytes[notes - 1][j] = sum;
    s.chains.join[j] = p;
    s.chains.notes[j] = notes;
  });
  b.sync();

  // Step 3: within each window of 32 segments, by pointer jumping, the path
  // from each segment and where it leaves the window ...
  b.warps([&](const Warp& w, int warp) {
    const std::uint32_t first = static_cast<std::uint32_t>(warp) * simt::kWarpSize;
    // The segment each chain joins, or its kChain stop.
    const Lanes<std::uint32_t> join = w.map([&](int l) {
      const std::uint32_t j = first + static_cast<std::uint32_t>(l);
      const std::uint32_t at = j < segments ? s.chains.join[j] : kChainBad;
      return at < kChainLast ? at >> log : at;
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
      s.chains.reach[j] = reach[l];
      s.chains.exit[j] = exit[l];
    });
  });
  b.sync();
  // ... then window by window from segment 0.
  simt::block_threads(b, [&](std::uint32_t j) {
    if (j != 0) return;
    for (std::uint32_t w = 0; w < kGatherWarps; ++w) s.chains.path[w] = 0;
    std::uint32_t k = 0;
    while (k < segments) {
      s.chains.path[k / simt::kWarpSize] = s.chains.reach[k];
      k = s.chains.exit[k];
    }
    if (k != kChainLast) s.fail = 1;
  });
  b.sync();
  if (s.fail) return fallback();

  // Step 4, and each segment's output: what the chains on the path put in
  // it (segment 0's chain all its own).
  simt::block_threads(b, [&](std::uint32_t j) {
    if (j >= segments || !((s.chains.path[j / simt::kWarpSize] >> (j % simt::kWarpSize)) & 1)) return;
    if (j == 0 && !gather_add(s, 0, s.chains.bytes[0])) s.fail = 1;
    const std::uint32_t notes = s.chains.notes[j];
    if (notes > kGatherNoted) {
      if (!gather_entries(s, log, copy, n, j)) s.fail = 1;
      return;
    }
    for (std::uint32_t k = 0; k < notes; ++k) {
      const std::uint32_t p = s.chains.noted[k][j];
      s.entry[p >> log] = static_cast<std::uint16_t>(p);
      s.at[p >> log] += s.chains.noted_bytes[k][j];
    }
    const std::uint32_t y = s.chains.join[j];
    if (y < kChainLast && !gather_add(s, y >> log, gather_suffix(s, log, y >> log, y))) s.fail = 1;
  });
  b.sync();
  if (s.fail) return fallback();

  // Step 5: the prefix sum of the segments' sizes, within a warp ...
  b.warps([&](const Warp& w, int warp) {
    const Lanes<std::uint32_t> size = w.map([&](int l) { return s.at[warp * simt::kWarpSize + l]; });
    const Lanes<std::uint32_t> before = w.exclusive_sum(size);
    w.each([&](int l) { s.at[warp * simt::kWarpSize + l] = before[l]; });
    const std::uint32_t sum = w.sum(size);
    w.each([&](int l) {
      if (l == 0) s.warp_total[warp] = sum;
    });
  });
  b.sync();
  // ... and over the warps.
  b.warps([&](const Warp& w, int warp) {
    const Lanes<std::uint32_t> totals = w.map([&](int l) { return s.warp_total[l]; });
    const std::uint32_t before = w.shfl(w.exclusive_sum(totals), warp);
    w.each([&](int l) { s.at[warp * simt::kWarpSize + l] += before; });
    if (warp == 0) {
      const std::uint32_t total = w.sum(totals);
      w.each([&](int l) {
        if (l == 0) s.total = total;
      });
    }
  });
  b.sync();
  const std::uint32_t total = s.total;
  if (total > cap || total > kGatherMaxOut) return fallback();

  // Step 6: the source of each run's first byte, and where runs start.
  simt::block_threads(b, [&](std::uint32_t j) {
    std::uint32_t p = s.entry[j];
    if (j >= segments || p == kNoEntry) return;
    const std::uint32_t end = (j + 1) << log;
    std::uint32_t at = s.at[j];
    // A run at `at` whose first byte's source is `first`.
    const auto run = [&](std::uint32_t first) {
      s.source[at] = static_cast<std::uint16_t>(first);
      simt::atomic_or_block(&s.starts[at / 32], std::uint32_t{1} << (at % 32));
    };
    while (p < end) {
      const GatherSequence q = gather_sequence(copy, n, p);
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
  //
  // A thread takes one byte at a time, so the block's threads chase 1 KiB
  // of output at once: the fewer bytes in flight, the more of a byte's
  // sources are values already. On the H100, silesia7 in 64 KiB blocks:
  // 125.3 GB/s, against 118.1 with two bytes a thread and 117.3 with four
  // (read as one 8-byte word, written as one 4-byte word); 124.7 without
  // halving. Offline, on the GPU encoder's blocks, without halving and with
  // each 1 KiB, 2 KiB or 4 KiB seeing only the values of those before it,
  // the warps' chase loops run 158, 239 and 367 times a block.
  for (std::uint32_t pass = 0;; ++pass) {
    simt::block_threads(b, [&](std::uint32_t t) {
      if (t == 0) s.more[(pass + 1) % 3] = 0;
      bool done = true;
      for (std::uint32_t i = t; i < total; i += kGatherThreads) {
        const std::uint32_t own = s.source[i];
        std::uint32_t e = own;
        // (gather_is_value(s, i, e) spelled out below kGatherValue: the
        // call here made the whole decoder 4% slower on the H100, 112.5
        // against 117.3 GB/s, measured while a thread took 4 bytes.)
        if (i < kGatherValue ? e < kGatherValue : !gather_is_value(s, i, e)) {
          std::uint32_t x = e;
          bool reached;
          if (i < kGatherValue) {
            // Follows the entries from byte i to a value, halving the path
            // (every byte on it lies below i, and so below kGatherValue: an
            // entry of kGatherValue or more is a value).
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
            done = false;
            continue;
          }
          if (i < kGatherValue) s.source[i] = static_cast<std::uint16_t>(e);
        }
        out[i] = static_cast<std::uint8_t>(e);
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
