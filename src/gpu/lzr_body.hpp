// The lzr codec's warp bodies (docs/formats/lzr.md), shared by the CUDA
// kernels (gpu/lzr_gpu.cu) and the CPU codec (cpu/lzr_cpu.cpp), which runs
// them through the warp emulation: so the CPU writes the GPU's bytes and
// gives its verdicts.
//
// Encoding a block (each block is an item of the LZ4 encoder's match finder,
// gpu/lz4_gpu_encode.hpp, whose prime and find steps run in lzr's shape,
// LzrFind below):
//  1. prime + find (lz4k): a warp per 8 KiB segment records its sequences.
//  2. count (a warp per segment): the segment's match bytes and extension
//     bytes, from its records.
//  3. scatter (a warp per segment): from every segment's summary and counts,
//     a prefix sum gives where the segment's sequences go in each stream;
//     the warp writes their codes, offsets, extensions and literals, and the
//     block's last warp the last literal run and the streams' lengths.
//  4. rANS (gpu/rans_gpu.hpp on the device, rans::encode on the CPU) codes
//     each stream; a stream is stored raw unless that makes it smaller.
//  5. assembly: block sizes, a prefix sum per frame, the bytes in place.
//
// Decoding a block: the frame and the block's header are checked, each
// rANS-coded stream decoded, then a warp rebuilds the block 32 sequences at
// a time (reconstruct_block).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/lzr_format.hpp"
#include "gpu/lz4_gpu_encode.hpp"
#include "gpu/simt.hpp"

namespace tandem::gpu::lzrk {

using lz4k::SegmentSummary;
using lz4k::SeqRecord;
using lzr::Error;
using simt::Lanes;
using simt::Warp;

inline constexpr std::uint32_t kSegmentSize = lz4k::kSegmentSize;
inline constexpr std::uint32_t kMaxSegmentRecords = lz4k::kMaxSegmentRecords;

// How lzr's prime and find steps look for matches (lz4k::FindShape): a
// reach of 56 KiB before each 8 KiB segment (the most that 16-bit table
// positions allow), every 3rd position primed, tables of 2^12 entries as
// the LZ4 encoder's, keys of 5 bytes, a lazy parse. Each of these paid on
// silesia7 (docs/formats/lzr.md, "Why this shape"); the LZ4 encoder's shape
// stays as it was, for its own size and speed targets.
struct LzrFind {
  static constexpr std::uint32_t kPrimeBytes = 57344;
  static constexpr std::uint32_t kPrimeStride = 3;
  static constexpr int kLargeHashLog = 12;
  static constexpr std::uint32_t kHashBytes = 5;
  static constexpr bool kLazy = true;
  // Prime blocks of 32 warps, each walking 16 segments (a 128 KiB block's
  // all): the 7 segments before a group's first are hashed once a group,
  // so fewer groups hash fewer bytes twice. On the H200, silesia7 in 128
  // KiB blocks, three rounds (us a call): 8 segments and 16 warps (the LZ4
  // encoder's) 1636 / 1641 / 1636, 16 and 16 1621 / 1624 / 1624, 16 and 32
  // 1617 / 1620 / 1612, 4 and 16 1663 / 1657 / 1664.
  static constexpr std::uint32_t kPrimeGroup = 16;
  static constexpr int kPrimeWarps = 32;
  // Both of the find step's early loads. On the H200, silesia7 in 128 KiB
  // blocks, three rounds (us a call; 7-warp find blocks): none 1722 / 1729
  // / 1713, the candidates' bytes 1709 / 1720 / 1704, both 1691 / 1689 /
  // 1684. (The LZ4 encoder's shape keeps none: both cost it 3-5%.)
  static constexpr std::uint32_t kEarlyLoads = lz4k::kEarlyCandidateBytes | lz4k::kEarlyOwnBytes;
};
using FindTraits = lz4k::ShapeTraits<LzrFind>;
inline constexpr std::uint32_t kPrimeEntries = FindTraits::kEntries;
inline constexpr std::size_t kTableBytes = lz4k::table_bytes(LzrFind::kLargeHashLog);

TANDEM_HD void store_u32le(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
  p[2] = static_cast<std::uint8_t>(v >> 16);
  p[3] = static_cast<std::uint8_t>(v >> 24);
}
TANDEM_HD std::uint32_t load_u32le(const std::uint8_t* p) {
  return p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}

// The sum of x over the warp, in 64 bits (every lane gets it).
TANDEM_HD std::uint64_t sum64(const Warp& w, Lanes<std::uint64_t> x) {
  for (int d = 16; d > 0; d >>= 1) {
    const Lanes<std::uint64_t> y = w.shfl(x, w.map([&](int l) { return l ^ d; }));
    w.each([&](int l) { x[l] += y[l]; });
  }
  return w.shfl(x, 0);
}

// Per lane: the sum of x over lanes 0..lane-1, in 64 bits.
TANDEM_HD Lanes<std::uint64_t> exclusive_sum64(const Warp& w, const Lanes<std::uint64_t>& x) {
  Lanes<std::uint64_t> s = x;
  for (int d = 1; d < 32; d <<= 1) {
    const Lanes<std::uint64_t> y = w.shfl(s, w.map([&](int l) { return l >= d ? l - d : l; }));
    w.each([&](int l) {
      if (l >= d) s[l] += y[l];
    });
  }
  return w.map([&](int l) { return s[l] - x[l]; });
}

// ------------------------------------------------------------- frame ----

struct FrameHeader {
  std::uint32_t block_log = 0;
  std::uint64_t length = 0;
  std::uint32_t block_count = 0;
};

TANDEM_HD void write_frame_header(std::uint8_t* out, const FrameHeader& h) {
  out[0] = lzr::kMagic0;
  out[1] = lzr::kMagic1;
  out[2] = lzr::kMagic2;
  out[3] = lzr::kMagic3;
  out[4] = lzr::kVersion;
  out[5] = static_cast<std::uint8_t>(h.block_log);
  out[6] = 0;
  out[7] = 0;
  store_u32le(out + 8, static_cast<std::uint32_t>(h.length));
  store_u32le(out + 12, static_cast<std::uint32_t>(h.length >> 32));
  store_u32le(out + 16, h.block_count);
}

// Checks 1-5 and 7 of the format (magic, header size, version, block size
// and reserved bytes, block count, the directory inside the input).
TANDEM_HD Error parse_frame_header(const std::uint8_t* in, std::size_t size, FrameHeader* h) {
  const std::uint8_t magic[4] = {lzr::kMagic0, lzr::kMagic1, lzr::kMagic2, lzr::kMagic3};
  for (std::size_t i = 0; i < 4 && i < size; ++i) {
    if (in[i] != magic[i]) return Error::bad_magic;
  }
  if (size < lzr::kFrameHeaderBytes) return Error::truncated;
  if (in[4] != lzr::kVersion) return Error::unsupported_version;
  h->block_log = in[5];
  h->length = load_u32le(in + 8) | (std::uint64_t{load_u32le(in + 12)} << 32);
  h->block_count = load_u32le(in + 16);
  if (h->block_log < lzr::kMinBlockLog || h->block_log > lzr::kMaxBlockLog || in[6] != 0 || in[7] != 0) {
    return Error::bad_header;
  }
  // (A length of 2^62 or more cannot match a 32-bit block count.)
  if ((h->length >> 62) != 0 || lzr::block_count(h->length, h->block_log) != h->block_count) return Error::bad_header;
  if ((size - lzr::kFrameHeaderBytes) / lzr::kDirEntryBytes < h->block_count) return Error::truncated;
  return Error::ok;
}

// Block i's length in a frame.
TANDEM_HD std::uint32_t block_length(const FrameHeader& h, std::uint32_t i) {
  const std::uint64_t start = std::uint64_t{i} << h.block_log;
  const std::uint64_t rest = h.length - start;
  const std::uint64_t b = std::uint64_t{1} << h.block_log;
  return static_cast<std::uint32_t>(rest < b ? rest : b);
}

// ------------------------------------------------------------ encode ----

// What step 2 learns of a segment: its records' match bytes, their
// extension bytes but those of the first record's literal length (which
// depends on the literals that segments before it leave), and the first
// record's own literal count.
struct SegmentCounts {
  std::uint32_t match_bytes;
  std::uint32_t ext_rest;
  std::uint32_t first_lit;
  std::uint32_t low[lzr::kOffsetClasses];  // offsets of each class
};

// The lanes of a warp below lane l.
TANDEM_HD std::uint32_t lanes_below(int l) { return (1u << l) - 1u; }

// Step 2 for a segment with `count` records at recs.
TANDEM_HD void count_segment(const Warp& w, const SeqRecord* recs, std::uint32_t count, SegmentCounts* out) {
  Lanes<std::uint32_t> ml = w.map([](int) { return 0u; });
  Lanes<std::uint32_t> ext = w.map([](int) { return 0u; });
  std::uint32_t low[lzr::kOffsetClasses] = {0, 0, 0, 0};
  for (std::uint32_t g = 0; g < count; g += 32) {
    const Lanes<std::uint32_t> cls = w.map([&](int l) -> std::uint32_t {
      const std::uint32_t i = g + static_cast<std::uint32_t>(l);
      return i < count ? lzr::offset_class(recs[i].offset >> 8) : lzr::kOffsetClasses;
    });
    for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) {
      low[c] += static_cast<std::uint32_t>(simt::popcount(w.ballot(w.map([&](int l) { return cls[l] == c; }))));
    }
    w.each([&](int l) {
      const std::uint32_t i = g + static_cast<std::uint32_t>(l);
      if (i >= count) return;
      const std::uint32_t lens = recs[i].lens;
      const std::uint32_t m = lens >> 16;
      ml[l] += m;
      ext[l] += lzr::extension_bytes(m - lzr::kMinMatch) + (i > 0 ? lzr::extension_bytes(lens & 0xffffu) : 0u);
    });
  }
  const std::uint32_t match_bytes = w.sum(ml);
  const std::uint32_t ext_rest = w.sum(ext);
  const std::uint32_t first = count > 0 ? recs[0].lens & 0xffffu : 0u;
  w.each([&](int l) {
    if (l == 0) *out = SegmentCounts{match_bytes, ext_rest, first, {low[0], low[1], low[2], low[3]}};
  });
  w.sync();
}

// Where segment s's share of each stream starts, and the block's totals.
struct SegmentPlace {
  std::uint32_t anchor;       // where its first record's literals start (the end of the last match before it)
  std::uint32_t seq_at;       // its first sequence's index
  std::uint32_t lit_at;       // its first literal's place in the literal stream
  std::uint32_t ext_at;       // its first extension byte's place
  std::uint32_t low_at[lzr::kOffsetClasses];  // its first low byte's place in each low-byte stream
  std::uint32_t low[lzr::kOffsetClasses];     // the block's low bytes in each
  std::uint32_t seqs;         // the block's sequences with a match
  std::uint32_t lits;         // the block's literals, the last run's included
  std::uint32_t exts;         // the block's extension bytes, the last run's included
  std::uint32_t last_anchor;  // where the block's last literal run starts
};

// Places segment s of a block of n bytes with `segments` segments (their
// summaries sums and counts): the warp reads them 32 at a time, a segment a
// lane. A segment with records takes as its first literals the ones left
// since the latest segment with records before it (as the LZ4 encoder's
// emit step does).
TANDEM_HD SegmentPlace place_segment(const Warp& w, std::uint32_t n, const SegmentSummary* sums,
                                     const SegmentCounts* counts, std::uint32_t segments, std::uint32_t s) {
  SegmentPlace p{};
  std::uint32_t anchor = 0, seqs = 0, lits = 0, exts = 0;
  std::uint32_t low[lzr::kOffsetClasses] = {0, 0, 0, 0};
  for (std::uint32_t first = 0; first < segments; first += 32) {
    const Lanes<SegmentSummary> sum = w.map([&](int l) -> SegmentSummary {
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      return i < segments ? sums[i] : SegmentSummary{0, 0, 0};
    });
    const Lanes<std::uint32_t> end = w.map([&](int l) { return sum[l].end; });
    const std::uint32_t busy = w.ballot(w.map([&](int l) { return sum[l].count > 0; }));
    const Lanes<std::uint32_t> from = lz4k::lower_lane_value(w, busy, end, anchor);
    const Lanes<std::uint32_t> seq = w.map([&](int l) { return sum[l].count; });
    const Lanes<std::uint32_t> lit = w.map([&](int l) -> std::uint32_t {
      if (sum[l].count == 0) return 0u;
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      return sum[l].end - from[l] - counts[i].match_bytes;
    });
    const Lanes<std::uint32_t> ext = w.map([&](int l) -> std::uint32_t {
      if (sum[l].count == 0) return 0u;
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      const std::uint32_t lead = i * kSegmentSize - from[l];
      return counts[i].ext_rest + lzr::extension_bytes(counts[i].first_lit + lead);
    });
    const Lanes<std::uint32_t> seq_at = w.exclusive_sum(seq);
    const Lanes<std::uint32_t> lit_at = w.exclusive_sum(lit);
    const Lanes<std::uint32_t> ext_at = w.exclusive_sum(ext);
    if (s >= first && s - first < 32) {
      const int l = static_cast<int>(s - first);
      p.anchor = w.shfl(from, l);
      p.seq_at = seqs + w.shfl(seq_at, l);
      p.lit_at = lits + w.shfl(lit_at, l);
      p.ext_at = exts + w.shfl(ext_at, l);
    }
    for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) {
      const Lanes<std::uint32_t> k = w.map([&](int l) -> std::uint32_t {
        const std::uint32_t i = first + static_cast<std::uint32_t>(l);
        return i < segments ? counts[i].low[c] : 0u;
      });
      const Lanes<std::uint32_t> k_at = w.exclusive_sum(k);
      if (s >= first && s - first < 32) p.low_at[c] = low[c] + w.shfl(k_at, static_cast<int>(s - first));
      low[c] += w.sum(k);
    }
    seqs += w.sum(seq);
    lits += w.sum(lit);
    exts += w.sum(ext);
    if (busy) anchor = w.shfl(end, simt::last_set(busy));
  }
  p.seqs = seqs;
  for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) p.low[c] = low[c];
  p.last_anchor = anchor;
  p.lits = lits + (n - anchor);
  p.exts = exts + lzr::extension_bytes(n - anchor);
  return p;
}

// The six streams of a block being written: each at most its capacity
// (the literals n, the others lzr::short_stream_capacity(n)).
struct StreamOut {
  std::uint8_t* at[lzr::kStreams];
};

// One lane writes value v's extension bytes (if any) at out.
TANDEM_HD void lane_write_extension(std::uint8_t* out, std::uint32_t v) {
  const std::uint32_t k = lzr::extension_bytes(v);
  for (std::uint32_t j = 0; j < k; ++j) out[j] = static_cast<std::uint8_t>((v - lzr::kDirectCodes) >> (8 * j));
}

// Step 3 for segment s of the block in[0, n) (records recs of segment 0 on,
// kMaxSegmentRecords a segment; sums and counts of its segments): writes
// the segment's sequences into the streams, and, from the block's last
// segment, the last literal run and the streams' lengths into lengths[6].
TANDEM_HD void scatter_segment(const Warp& w, const std::uint8_t* in, std::uint32_t n, const SeqRecord* recs,
                               const SegmentSummary* sums, const SegmentCounts* counts, std::uint32_t segments,
                               std::uint32_t s, const StreamOut& out, std::uint32_t* lengths) {
  constexpr std::uint32_t kLaneLiterals = 16;
  const SegmentPlace place = place_segment(w, n, sums, counts, segments, s);
  const std::uint32_t count = sums[s].count;
  const SeqRecord* r = recs + static_cast<std::size_t>(s) * kMaxSegmentRecords;
  const std::uint32_t seg_start = s * kSegmentSize;
  std::uint32_t cursor = seg_start;  // input position where the group's first record's own literals start
  std::uint32_t seq_at = place.seq_at, lit_at = place.lit_at, ext_at = place.ext_at;
  std::uint32_t low_at[lzr::kOffsetClasses];
  for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) low_at[c] = place.low_at[c];
  for (std::uint32_t g = 0; g < count; g += 32) {
    const Lanes<bool> active = w.map([&](int l) { return g + static_cast<std::uint32_t>(l) < count; });
    const Lanes<SeqRecord> rec = w.map([&](int l) -> SeqRecord {
      return active[l] ? r[g + static_cast<std::uint32_t>(l)] : SeqRecord{0, 0};
    });
    const Lanes<std::uint32_t> span = w.map([&](int l) { return (rec[l].lens & 0xffffu) + (rec[l].lens >> 16); });
    const Lanes<std::uint32_t> own_at = w.exclusive_sum(span);
    const bool lead = g == 0;
    const Lanes<std::uint32_t> src = w.map([&](int l) -> std::uint32_t {
      return lead && l == 0 ? place.anchor : cursor + own_at[l];
    });
    const Lanes<std::uint32_t> lit = w.map([&](int l) -> std::uint32_t {
      return (rec[l].lens & 0xffffu) + (lead && l == 0 ? seg_start - place.anchor : 0u);
    });
    const Lanes<std::uint32_t> ext = w.map([&](int l) -> std::uint32_t {
      if (!active[l]) return 0u;
      return lzr::extension_bytes(lit[l]) + lzr::extension_bytes((rec[l].lens >> 16) - lzr::kMinMatch);
    });
    const Lanes<std::uint32_t> lit_to = w.exclusive_sum(lit);
    const Lanes<std::uint32_t> ext_to = w.exclusive_sum(ext);
    const Lanes<std::uint32_t> cls = w.map([&](int l) -> std::uint32_t {
      return active[l] ? lzr::offset_class(rec[l].offset >> 8) : lzr::kOffsetClasses;
    });
    std::uint32_t mask[lzr::kOffsetClasses];
    for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) mask[c] = w.ballot(w.map([&](int l) { return cls[l] == c; }));
    w.each([&](int l) {
      if (!active[l]) return;
      const std::uint32_t c = cls[l];
      const std::uint32_t low_i = low_at[c] + static_cast<std::uint32_t>(simt::popcount(mask[c] & lanes_below(l)));
      out.at[lzr::kOffsetLow + c][low_i] = static_cast<std::uint8_t>(rec[l].offset);
      const std::uint32_t i = seq_at + static_cast<std::uint32_t>(l);
      const std::uint32_t v = (rec[l].lens >> 16) - lzr::kMinMatch;
      out.at[lzr::kLitLengths][i] = static_cast<std::uint8_t>(lzr::length_code(lit[l]));
      out.at[lzr::kMatchLengths][i] = static_cast<std::uint8_t>(lzr::length_code(v));
      out.at[lzr::kOffsetHigh][i] = static_cast<std::uint8_t>(rec[l].offset >> 8);
      std::uint8_t* e = out.at[lzr::kExtensions] + ext_at + ext_to[l];
      lane_write_extension(e, lit[l]);
      lane_write_extension(e + lzr::extension_bytes(lit[l]), v);
      if (lit[l] <= kLaneLiterals) {
        simt::lane_copy<kLaneLiterals>(out.at[lzr::kLiterals] + lit_at + lit_to[l], in + src[l], lit[l]);
      }
    });
    std::uint32_t longs = w.ballot(w.map([&](int l) { return active[l] && lit[l] > kLaneLiterals; }));
    while (longs) {
      const int f = simt::first_set(longs);
      simt::warp_copy(w, out.at[lzr::kLiterals] + lit_at + w.shfl(lit_to, f), in + w.shfl(src, f), w.shfl(lit, f), in,
                      in + n);
      longs &= longs - 1;
    }
    seq_at += w.sum(w.map([&](int l) -> std::uint32_t { return active[l] ? 1u : 0u; }));
    for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) low_at[c] += static_cast<std::uint32_t>(simt::popcount(mask[c]));
    lit_at += w.sum(lit);
    ext_at += w.sum(ext);
    cursor += w.sum(span);
  }
  if (s + 1 >= segments) {
    // The last literal run: a literal-length code with no match after it.
    const std::uint32_t ll = n - place.last_anchor;
    const std::uint32_t ll_ext = lzr::extension_bytes(ll);
    w.each([&](int l) {
      if (l != 0) return;
      out.at[lzr::kLitLengths][place.seqs] = static_cast<std::uint8_t>(lzr::length_code(ll));
      lane_write_extension(out.at[lzr::kExtensions] + place.exts - ll_ext, ll);
      lengths[lzr::kLiterals] = place.lits;
      lengths[lzr::kLitLengths] = place.seqs + 1;
      lengths[lzr::kMatchLengths] = place.seqs;
      lengths[lzr::kOffsetHigh] = place.seqs;
      for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) lengths[lzr::kOffsetLow + c] = place.low[c];
      lengths[lzr::kExtensions] = place.exts;
    });
    simt::warp_copy(w, out.at[lzr::kLiterals] + place.lits - ll, in + place.last_anchor, ll, in, in + n);
  }
  w.sync();
}

// Step 5: a stream is stored rANS-coded when its coding worked and is
// smaller than its raw bytes.
TANDEM_HD bool store_coded(std::uint32_t raw, std::uint64_t coded, bool coded_ok) {
  return coded_ok && coded < raw;
}

// The block header: the sequence count and each stream's entry.
TANDEM_HD void write_block_header(std::uint8_t* out, std::uint32_t seqs, const std::uint32_t* stored,
                                  const bool* coded) {
  store_u32le(out, seqs);
  for (std::uint32_t k = 0; k < lzr::kStreams; ++k) {
    store_u32le(out + 4 + 4 * k, stored[k] | (coded[k] ? lzr::kRansFlag : 0u));
  }
}

// ------------------------------------------------------------ decode ----

// A block's header as checked by parse_block.
struct BlockLayout {
  std::uint32_t seqs;
  std::uint32_t stored[lzr::kStreams];  // bytes in the block
  std::uint32_t at[lzr::kStreams];      // where each stream starts, from the block's start
  bool coded[lzr::kStreams];
};

// Check 9: the block of `size` bytes (as the directory says) decoding to n
// bytes has a header whose sequence count is possible and whose streams
// fill it exactly.
TANDEM_HD Error parse_block(const std::uint8_t* b, std::uint64_t size, std::uint32_t n, BlockLayout* lay) {
  if (size < lzr::kBlockHeaderBytes) return Error::bad_block;
  lay->seqs = load_u32le(b);
  if (lay->seqs > lzr::max_sequences(n)) return Error::bad_block;
  std::uint64_t at = lzr::kBlockHeaderBytes;
  for (std::uint32_t k = 0; k < lzr::kStreams; ++k) {
    const std::uint32_t e = load_u32le(b + 4 + 4 * k);
    lay->coded[k] = (e & lzr::kRansFlag) != 0;
    lay->stored[k] = e & ~lzr::kRansFlag;
    lay->at[k] = static_cast<std::uint32_t>(at < size ? at : size);
    at += lay->stored[k];
  }
  return at == size ? Error::ok : Error::bad_block;
}

// The most bytes stream k of a block of n bytes with `seqs` sequences may
// decode to, and whether it must decode to exactly that many.
TANDEM_HD std::uint32_t stream_capacity(std::uint32_t k, std::uint32_t seqs, std::uint32_t n, bool* exact) {
  *exact = k == lzr::kLitLengths || k == lzr::kMatchLengths || k == lzr::kOffsetHigh;
  if (k == lzr::kLiterals) return n;
  if (k == lzr::kExtensions) return lzr::max_extension_bytes(n);
  return k == lzr::kLitLengths ? seqs + 1 : seqs;
}

// Check 10 for stream k: its decoded length (a raw stream's stored size, or
// the rANS decoder's length when it decoded, coded_ok) fits its capacity,
// exactly where it must.
TANDEM_HD Error check_stream(std::uint32_t k, std::uint32_t seqs, std::uint32_t n, bool coded_ok,
                             std::uint64_t length) {
  bool exact = false;
  const std::uint32_t cap = stream_capacity(k, seqs, n, &exact);
  if (!coded_ok || length > cap || (exact && length != cap)) return Error::bad_stream;
  return Error::ok;
}

// A length code's value, its extension bytes at ext (k of them, all inside the stream).
TANDEM_HD std::uint32_t code_value(std::uint32_t code, const std::uint8_t* ext) {
  if (code < lzr::kDirectCodes) return code;
  std::uint32_t v = 0;
  for (std::uint32_t j = 0; j < code - lzr::kDirectCodes + 1; ++j) v |= std::uint32_t{ext[j]} << (8 * j);
  return lzr::kDirectCodes + v;
}
TANDEM_HD std::uint32_t code_extension_bytes(std::uint32_t code) {
  return code < lzr::kDirectCodes ? 0u : code - lzr::kDirectCodes + 1;
}

// The decoded streams of a block.
struct StreamIn {
  const std::uint8_t* at[lzr::kStreams];
  std::uint32_t length[lzr::kStreams];
};

// What reconstruct_block reads its codes from (a warp's shared memory on
// the GPU): the literal-length and match-length codes and the offset high
// bytes of kStageCodes sequences, and a window of each low-byte stream, so
// that a group of 32 sequences waits on memory for its copies only.
inline constexpr std::uint32_t kStageCodes = 1024;
inline constexpr std::uint32_t kStageLow = 256;
struct RebuildStage {
  std::uint8_t lit_codes[kStageCodes];
  std::uint8_t match_codes[kStageCodes];
  std::uint8_t high[kStageCodes];
  std::uint8_t low[lzr::kOffsetClasses][kStageLow];
};

// Checks 11-13: rebuilds the block of n bytes with `seqs` sequences from
// its streams into out[0, n), 32 sequences at a time: each lane decodes its
// sequence's codes and extension bytes, prefix sums place its literals and
// its output, the lowest failing lane's error is the block's (the error a
// decoder taking the sequences one at a time meets first), the lanes copy
// their literals, and then their matches in rounds.
TANDEM_HD Error reconstruct_block(const Warp& w, const StreamIn& s, std::uint32_t seqs, std::uint8_t* out,
                                  std::uint32_t n, RebuildStage* stage) {
  constexpr std::uint32_t kLaneLiterals = 16;
  const std::uint8_t* lits = s.at[lzr::kLiterals];
  std::uint32_t out_at = 0, lit_at = 0, ext_at = 0;
  std::uint32_t low_at[lzr::kOffsetClasses] = {0, 0, 0, 0};
  std::uint32_t low_base[lzr::kOffsetClasses] = {0, 0, 0, 0};
  const auto fill = [&](std::uint8_t* to, std::uint32_t k, std::uint32_t from, std::uint32_t most) {
    const std::uint32_t len = s.length[k] - from < most ? s.length[k] - from : most;
    simt::warp_copy(w, to, s.at[k] + from, len, s.at[k], s.at[k] + s.length[k]);
  };
  for (std::uint32_t g = 0; g <= seqs; g += 32) {
    // Stage the codes kStageCodes sequences at a time, and each low-byte
    // stream from the next byte it gives whenever a group might run past
    // what is staged of it.
    if (g % kStageCodes == 0) {
      fill(stage->lit_codes, lzr::kLitLengths, g, kStageCodes);
      fill(stage->match_codes, lzr::kMatchLengths, g, kStageCodes);
      fill(stage->high, lzr::kOffsetHigh, g, kStageCodes);
    }
    for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) {
      if (g == 0 || low_at[c] + 32 > low_base[c] + kStageLow) {
        low_base[c] = low_at[c];
        fill(stage->low[c], lzr::kOffsetLow + c, low_at[c], kStageLow);
      }
    }
    w.sync();
    const std::uint32_t at = g % kStageCodes;
    const Lanes<bool> active = w.map([&](int l) { return g + static_cast<std::uint32_t>(l) <= seqs; });
    const Lanes<bool> matched = w.map([&](int l) { return g + static_cast<std::uint32_t>(l) < seqs; });
    const Lanes<std::uint32_t> lc = w.map([&](int l) -> std::uint32_t {
      return active[l] ? stage->lit_codes[at + static_cast<std::uint32_t>(l)] : 0u;
    });
    const Lanes<std::uint32_t> mc = w.map([&](int l) -> std::uint32_t {
      return matched[l] ? stage->match_codes[at + static_cast<std::uint32_t>(l)] : 0u;
    });
    const Lanes<bool> bad_codes = w.map([&](int l) { return lc[l] > lzr::kMaxCode || mc[l] > lzr::kMaxCode; });
    const Lanes<std::uint32_t> ext = w.map([&](int l) -> std::uint32_t {
      return bad_codes[l] ? 0u : code_extension_bytes(lc[l]) + code_extension_bytes(mc[l]);
    });
    const Lanes<std::uint32_t> ext_to = w.exclusive_sum(ext);
    const Lanes<bool> ext_out = w.map([&](int l) {
      return ext_at + ext_to[l] + ext[l] > s.length[lzr::kExtensions];
    });
    const Lanes<std::uint32_t> lit = w.map([&](int l) -> std::uint32_t {
      if (bad_codes[l] || ext_out[l]) return 0u;
      return code_value(lc[l], s.at[lzr::kExtensions] + ext_at + ext_to[l]);
    });
    const Lanes<std::uint32_t> ml = w.map([&](int l) -> std::uint32_t {
      if (!matched[l] || bad_codes[l] || ext_out[l]) return 0u;
      return lzr::kMinMatch +
             code_value(mc[l], s.at[lzr::kExtensions] + ext_at + ext_to[l] + code_extension_bytes(lc[l]));
    });
    const Lanes<std::uint32_t> high = w.map([&](int l) -> std::uint32_t {
      return matched[l] ? stage->high[at + static_cast<std::uint32_t>(l)] : 0u;
    });
    const Lanes<std::uint32_t> cls = w.map([&](int l) -> std::uint32_t {
      return matched[l] ? lzr::offset_class(high[l]) : lzr::kOffsetClasses;
    });
    std::uint32_t mask[lzr::kOffsetClasses];
    for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) mask[c] = w.ballot(w.map([&](int l) { return cls[l] == c; }));
    // Each matched lane's place in its low-byte stream; past the stream's end it has none.
    const Lanes<std::uint32_t> low_i = w.map([&](int l) -> std::uint32_t {
      if (!matched[l]) return 0u;
      const std::uint32_t c = cls[l];
      return low_at[c] + static_cast<std::uint32_t>(simt::popcount(mask[c] & lanes_below(l)));
    });
    const Lanes<bool> low_out = w.map([&](int l) {
      return matched[l] && low_i[l] >= s.length[lzr::kOffsetLow + cls[l]];
    });
    const Lanes<std::uint32_t> offset = w.map([&](int l) -> std::uint32_t {
      if (!matched[l] || low_out[l]) return 0u;
      return stage->low[cls[l]][low_i[l] - low_base[cls[l]]] | (high[l] << 8);
    });
    // Values are below 2^25 each, so 32 of them sum within 32 bits.
    const Lanes<std::uint32_t> lit_to = w.exclusive_sum(lit);
    const Lanes<std::uint32_t> out_to = w.exclusive_sum(w.map([&](int l) { return lit[l] + ml[l]; }));
    const Lanes<std::uint32_t> err = w.map([&](int l) -> std::uint32_t {
      if (!active[l]) return 0u;
      if (bad_codes[l] || ext_out[l] || low_out[l]) return static_cast<std::uint32_t>(Error::bad_code);
      const std::uint64_t from = std::uint64_t{lit_at} + lit_to[l];
      const std::uint64_t dst = std::uint64_t{out_at} + out_to[l] + lit[l];
      if (from + lit[l] > s.length[lzr::kLiterals] || dst > n) return static_cast<std::uint32_t>(Error::bad_sequence);
      if (matched[l] && (dst + ml[l] > n || offset[l] == 0 || offset[l] > dst)) {
        return static_cast<std::uint32_t>(Error::bad_sequence);
      }
      return 0u;
    });
    const std::uint32_t failing = w.ballot(w.map([&](int l) { return err[l] != 0u; }));
    if (failing) return static_cast<Error>(w.shfl(err, simt::first_set(failing)));

    // Literals first, every lane its own run (the long ones by the warp);
    // a short match whose source lies before the group's output is copied
    // with its lane's literals, its loads issued with theirs, so that the
    // lane waits on memory once for both.
    const Lanes<std::uint32_t> dst = w.map([&](int l) { return out_at + out_to[l] + lit[l]; });
    const Lanes<std::uint32_t> end = w.map([&](int l) { return dst[l] + ml[l]; });
    const Lanes<bool> early = w.map([&](int l) {
      return matched[l] && lit[l] <= kLaneLiterals && ml[l] <= kLaneLiterals && dst[l] - offset[l] + ml[l] <= out_at;
    });
    w.each([&](int l) {
      if (lit[l] > kLaneLiterals) return;
      std::uint8_t a[kLaneLiterals] = {};
      std::uint8_t b[kLaneLiterals] = {};
      const std::uint8_t* from = lits + lit_at + lit_to[l];
      const std::uint8_t* src = out + dst[l] - offset[l];
      const std::uint32_t m = early[l] ? ml[l] : 0u;
      TANDEM_UNROLL
      for (std::uint32_t k = 0; k < kLaneLiterals; ++k) {
        if (k < lit[l]) a[k] = from[k];
        if (k < m) b[k] = src[k];
      }
      std::uint8_t* to = out + out_at + out_to[l];
      TANDEM_UNROLL
      for (std::uint32_t k = 0; k < kLaneLiterals; ++k) {
        if (k < lit[l]) to[k] = a[k];
        if (k < m) to[lit[l] + k] = b[k];
      }
    });
    std::uint32_t longs = w.ballot(w.map([&](int l) { return lit[l] > kLaneLiterals; }));
    while (longs) {
      const int f = simt::first_set(longs);
      simt::warp_copy(w, out + out_at + w.shfl(out_to, f), lits + lit_at + w.shfl(lit_to, f), w.shfl(lit, f), lits,
                      lits + s.length[lzr::kLiterals]);
      longs &= longs - 1;
    }
    w.sync();
    // Then the other matches, in rounds: a round copies every match whose
    // source overlaps no match still waiting in a lower lane (it ends before
    // the lowest waiting match starts, or starts after the nearest waiting
    // one below ends), each by its own lane. The lowest waiting match always
    // goes, and most groups need a round or two where one match after
    // another by the warp took a round trip to memory each. On the H100,
    // silesia7 in 128 KiB blocks decoded at 21.6 GB/s with matches one
    // after another (those reading only bytes before the group's first
    // match by their lanes), 25.2 in rounds, 26.6 with the codes staged in
    // shared memory, 27.2 with the short early matches beside the literals.
    std::uint32_t waiting = w.ballot(w.map([&](int l) { return matched[l] && !early[l]; }));
    while (waiting) {
      const std::uint32_t lowest = w.shfl(dst, simt::first_set(waiting));
      const Lanes<std::uint32_t> below = lz4k::lower_lane_value(w, waiting, end, 0u);
      const std::uint32_t ready = w.ballot(w.map([&](int l) {
        const std::uint32_t src = dst[l] - offset[l];
        return ((waiting >> l) & 1u) && (src + ml[l] <= lowest || src >= below[l]);
      }));
      w.each([&](int l) {
        if ((ready >> l) & 1u) simt::lane_match(out, dst[l], offset[l], ml[l]);
      });
      w.sync();
      waiting &= ~ready;
    }
    out_at += w.sum(w.map([&](int l) { return lit[l] + ml[l]; }));
    lit_at += w.sum(lit);
    ext_at += w.sum(ext);
    for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) low_at[c] += static_cast<std::uint32_t>(simt::popcount(mask[c]));
    w.sync();  // every lane has read the stage before it is refilled
  }
  if (out_at != n || lit_at != s.length[lzr::kLiterals] || ext_at != s.length[lzr::kExtensions]) {
    return Error::bad_totals;
  }
  for (std::uint32_t c = 0; c < lzr::kOffsetClasses; ++c) {
    if (low_at[c] != s.length[lzr::kOffsetLow + c]) return Error::bad_totals;
  }
  return Error::ok;
}

}  // namespace tandem::gpu::lzrk
