// The LZ4 block encoder that the GPU runs, in steps that fill the device
// whatever the block size.
//
// Step 0, prime (a thread block per kPrimeGroup segments): a block is cut
// into segments of kSegmentSize bytes. In a block of more than one, each
// segment but the first gets a prime table: for each hash, the newest of
// every kPrimeStride-th position of the kPrimeBytes before it.
//
// Step 1, find (a warp per segment): every segment of every block gets its
// own warp. The warp first copies its segment's prime table into its hash
// table (so matches reach back across the segment boundary), then walks its
// segment
// 32 positions at a time: for all 32 at once it hashes the next 4 bytes,
// takes an earlier position with the same hash from the table (the first
// of the latest step before that had one) and verifies the candidate's
// bytes. A ballot gives the parse its next match start: the
// lowest verified position not inside the previous match. The match is
// extended forwards (never past the segment's end) and backwards (never
// before the previous match's end) and recorded as a SeqRecord (literal
// count, match length, offset). Every lane has already compared up to 8
// bytes past its candidate's first 4 and 4 before them, as words loaded with
// the verification, so most matches are extended without another wait on
// memory; the warp goes on 32 bytes at a time only past those. (On the H100,
// silesia7 in 64 KiB blocks: 39.3 GB/s when the warp extended every match
// byte by byte, 47.4 with the lanes' words.) Picking a step's matches one
// after another then takes a shuffle each; the lanes of the chosen ones
// work out the rest together (where their literals start, how far back
// they reach, their records and sizes): 47.3 GB/s when the warp did that
// match by match, 49.4 so. The parse is greedy like
// liblz4's, but tests every position instead of skipping ahead on misses, so
// its output is close to liblz4's default level in size.
//
// Steps 0 and 1 take a shape (FindShape): how far back the tables reach,
// which positions are primed, the tables' size, the bytes a hash reads and
// whether the parse is lazy. The LZ4 encoder's (and the deflate encoder's)
// is the constants below; the lzr encoder's (gpu/lzr_body.hpp) reaches 56
// KiB back, hashes 5 bytes and parses lazily.
//
// Each find warp also sums up its segment (SegmentSummary): its record
// count, where its last match ends, and the bytes its sequences take with
// their own literals.
//
// Step 2, emit (a warp per segment again): from the summaries of its block's
// segments the warp works out where its segment's first literals start (the
// end of the last match before it), where its output starts (a prefix sum of
// the segments' sizes, each segment's first sequence taking the literals
// left since that match) and the block's size. If the block fits the output,
// the warp writes its records 32 at a time, one per lane: each lane sizes its
// sequence, a warp prefix sum places it, and each lane writes its own token,
// lengths, offset and short literal run, while long literal runs are copied
// by the whole warp. The warp of the block's last segment writes the last
// literals and the block's size and status. The block is one standard LZ4
// block, as if one parse had made it.
//
// Output: the last match starts at least 12 bytes before the end and ends at
// least 5 bytes before it; offsets are below 64 KiB. It is a function of the
// input alone: the same item gives the same bytes in any batch, on the GPU and
// in the CPU emulation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gpu/simt.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu::lz4k {

using simt::Lanes;
using simt::Warp;

inline constexpr std::uint32_t kEncMinMatch = 4;
inline constexpr std::uint32_t kLastLiterals = 5;
inline constexpr std::uint32_t kMfLimit = 12;
inline constexpr std::uint32_t kMaxOffset = 65535;

// A segment's size, and how far before it its warp's hash table reaches.
// Positions in the table are relative to the start of that reach, so they fit
// 16 bits: kPrimeBytes + kSegmentSize <= 65536. Smaller segments give more
// warps, each with less to do, so a block's compression takes less time and
// the GPU has work to spread. Measured on the H100, silesia7 (compressed size
// against liblz4's default level; GB/s device-resident / host-resident):
//  - 16 KiB primed with 16 KiB, every 2nd position: 64K blocks 1.042x,
//    34.1 / 22.3; 256K 1.052x, 33.3 / 21.7; 16K 1.010x, 39.1 / 23.7.
//  - 8 KiB primed with 24 KiB, every 3rd: 64K 1.042x, 35.2 / 28.2; 256K
//    1.047x, 34.6 / 25.9; 16K 1.018x, 41.4 / 31.5 (this one).
//  - 8 KiB primed with 16 KiB, every 2nd: 64K 1.050x, 34.9 / 26.6.
//  - 16 KiB primed with 16 KiB, every 3rd: 64K 1.045x, 35.4 / 24.3.
// Earlier, with 2^13-entry tables: 4 KiB segments primed with 8 KiB gave
// 1.084x at 64K. Each warp then hashed the bytes before its segment itself;
// with a seed table of its own for each segment (each byte hashed once, not
// once for each of the 3 segments that look back at it), merged by the find
// warp, 8 KiB primed with 24 KiB went from 50.4 to 56.2 GB/s at 64K and from
// 49.0 to 56.3 at 256K, the same size; with the prime tables (prime_group)
// to 61.9 and 61.3.
inline constexpr std::uint32_t kSegmentSize = 8192;
inline constexpr std::uint32_t kPrimeBytes = 24576;
// Hash tables: 2^11 entries for blocks up to 4 KiB, 2^12 above. The encoder
// is limited by how many warps each multiprocessor keeps resident, and that
// by the tables' shared memory: on the H100, silesia7 in 64 KiB blocks
// compressed at 19.5 GB/s with 2^13 entries (12 warps per multiprocessor) and
// 28.5 GB/s with 2^12 (28 warps), for 1.8% more output (1.018x liblz4's
// default against 1.038x, both with every position primed). The shape
// follows each block's own size, never the batch's, so that a block
// compresses to the same bytes in any batch.
inline constexpr int kSmallHashLog = 11;
inline constexpr int kLargeHashLog = 12;
inline constexpr std::size_t kSmallTableLimit = 4096;
TANDEM_HD constexpr int hash_log_for(std::size_t n) { return n <= kSmallTableLimit ? kSmallHashLog : kLargeHashLog; }
TANDEM_HD constexpr std::size_t table_bytes(int hash_log) { return (std::size_t{1} << hash_log) * sizeof(std::uint16_t); }
// The primes hold every kPrimeStride-th position before the segment: a
// match into that stretch is still found, at most kPrimeStride - 1 bytes late
// (the backward extension recovers its start), unless it is that short.
// Measured on silesia7 in 64 KiB blocks (16 KiB segments) against liblz4's
// default level: every position 1.038x, every 2nd 1.042x, every 4th 1.051x,
// every 8th 1.062x.
inline constexpr std::uint32_t kPrimeStride = 3;
static_assert(kPrimeBytes + kSegmentSize <= 65536, "table positions are 16 bits");
static_assert(kSegmentSize < 65536, "a record's lengths are 16 bits");
static_assert(kPrimeBytes % kSegmentSize == 0, "a segment primes from whole segments");
static_assert(kSegmentSize > kSmallTableLimit, "blocks of more than one segment have the large tables");

// How the prime and find steps look for matches, as a type whose constants
// the steps read at compile time: FindShape is the LZ4 encoder's (and the
// deflate encoder's), the constants above; the lzr encoder has its own
// (lzrk::LzrFind, gpu/lzr_body.hpp). A shape gives:
//   kPrimeBytes      how far before its segment a find warp's table reaches
//   kPrimeStride     the prime tables hold every kPrimeStride-th position
//   kLargeHashLog    a find warp's table, and a prime table, in a block of
//                    more than kSmallTableLimit bytes, has 2^kLargeHashLog
//                    entries (smaller blocks 2^kSmallHashLog)
//   kHashBytes       4 or 5: the bytes at a position that its hash reads
//   kLazy            whether the parse defers a match by a byte when the next
//                    position's is longer (see find_segment_with)
//   kPrimeGroup      the segments a thread block of the prime step walks
//   kPrimeWarps      the warps of a prime thread block
//   kEarlyLoads      which of the find step's loads are issued early (the
//                    bits below); the output is the same either way, the
//                    speed is not: the loads in flight hold registers
inline constexpr std::uint32_t kEarlyCandidateBytes = 1;  // a step's candidates' bytes, before the table writes
inline constexpr std::uint32_t kEarlyOwnBytes = 2;        // the next step's own bytes, right after the parse
struct FindShape {
  static constexpr std::uint32_t kPrimeBytes = lz4k::kPrimeBytes;
  static constexpr std::uint32_t kPrimeStride = lz4k::kPrimeStride;
  static constexpr int kLargeHashLog = lz4k::kLargeHashLog;
  static constexpr std::uint32_t kHashBytes = 4;
  static constexpr bool kLazy = false;
  static constexpr std::uint32_t kPrimeGroup = 8;
  static constexpr int kPrimeWarps = 16;
  static constexpr std::uint32_t kEarlyLoads = 0;
};

// The constants of a shape that follow from the others, checked.
template <class Shape>
struct ShapeTraits {
  static constexpr std::uint32_t kEntries = 1u << Shape::kLargeHashLog;  // a prime table's entries
  static constexpr std::uint32_t kLead = Shape::kPrimeBytes / kSegmentSize;  // segments a prime table reaches back
  static_assert(Shape::kPrimeBytes + kSegmentSize <= kMaxOffset + 1, "table positions are 16 bits");
  static_assert(Shape::kPrimeBytes % kSegmentSize == 0, "a segment primes from whole segments");
  static_assert(Shape::kLargeHashLog >= kSmallHashLog, "small blocks have the smaller tables");
  static_assert(Shape::kHashBytes == 4 || Shape::kHashBytes == 5, "hashes of 4 or 5 bytes");
  static_assert(Shape::kPrimeStride >= 1, "a stride of at least 1");
  static_assert(Shape::kPrimeGroup >= 1 && Shape::kPrimeWarps >= 1 && Shape::kPrimeWarps <= 32, "prime blocks");
  static_assert(Shape::kEarlyLoads <= (kEarlyCandidateBytes | kEarlyOwnBytes), "early loads: the bits above");
};

// One sequence as step 1 found it: `lit` literals since the previous match's
// end (or the segment's start), then a match of `ml` bytes `offset` back.
struct SeqRecord {
  std::uint32_t lens;    // lit | ml << 16
  std::uint32_t offset;
};
// Every match is at least 4 bytes and matches do not overlap.
inline constexpr std::uint32_t kMaxSegmentRecords = kSegmentSize / kEncMinMatch;

// A segment as step 1 found it.
struct SegmentSummary {
  std::uint32_t count;  // records
  std::uint32_t end;    // where the last record's match ends (when count > 0)
  std::uint32_t bytes;  // the records' sequences, each with only its own literals
};

TANDEM_HD constexpr std::size_t segment_count(std::size_t n) { return (n + kSegmentSize - 1) / kSegmentSize; }

// The temporary storage of a compression call: for each of num_items items,
// room for the records and the summary of segment_count(max_item_size)
// segments; records first, then the summaries, then (when items have more
// than one segment) a prime table a segment (16-aligned), then (when there
// are segments) the counter from which the find kernel's warps take them.
// False when it would not fit a size_t.
struct EncodeTemp {
  std::size_t segments_per_item;
  std::size_t records_bytes;  // where the summaries start
  std::size_t primes_at;      // where the prime tables start (when segments_per_item > 1)
  std::size_t counter_at;     // where the counter is (8-aligned)
  std::size_t total_bytes;
};
inline constexpr std::uint32_t kPrimeEntries = 1u << kLargeHashLog;
inline bool encode_temp_layout(std::size_t num_items, std::size_t max_item_size, EncodeTemp* t) {
  t->segments_per_item = segment_count(max_item_size);
  const std::size_t prime_bytes = t->segments_per_item > 1 ? kPrimeEntries * sizeof(std::uint16_t) : 0;
  const std::size_t per_segment = kMaxSegmentRecords * sizeof(SeqRecord) + sizeof(SegmentSummary) + prime_bytes + 16;
  const std::size_t limit = ~std::size_t{0};
  if (t->segments_per_item != 0 && num_items > limit / t->segments_per_item / per_segment) return false;
  const std::size_t segments = num_items * t->segments_per_item;
  t->records_bytes = segments * kMaxSegmentRecords * sizeof(SeqRecord);
  t->primes_at = (t->records_bytes + segments * sizeof(SegmentSummary) + 15) / 16 * 16;
  t->counter_at = t->primes_at + segments * prime_bytes;
  t->total_bytes = segments > 0 ? t->counter_at + sizeof(unsigned long long) : 0;
  return true;
}

// lz4_max_compressed_size, for device code.
TANDEM_HD std::size_t max_block_size(std::size_t n) { return n + n / 255 + 16; }

template <int HashLog>
TANDEM_HD std::uint32_t hash4(std::uint32_t seq) {
  return (seq * 2654435761u) >> (32 - HashLog);
}

// The hash of the bytes at a position under a shape: `lo` holds its first 4
// bytes, `fifth` the next one (read only by 5-byte hashes). The 5-byte hash
// is zstd's ZSTD_hash5 (the 5 bytes shifted to the top of a 64-bit word,
// times a 64-bit prime, its top bits).
template <class Shape, int HashLog>
TANDEM_HD std::uint32_t shape_hash(std::uint32_t lo, std::uint32_t fifth) {
  if constexpr (Shape::kHashBytes == 4) {
    (void)fifth;
    return hash4<HashLog>(lo);
  } else {
    const std::uint64_t v = (std::uint64_t{fifth & 0xffu} << 32 | lo) << 24;
    return static_cast<std::uint32_t>((v * 889523592379ull) >> (64 - HashLog));
  }
}

// Bytes that equal in[a + k] == in[b + k] for k = 0.. while a + k < limit (b < a).
TANDEM_HD std::uint32_t extend_forward(const Warp& w, const std::uint8_t* in, std::uint32_t a, std::uint32_t b,
                                       std::uint32_t limit) {
  for (std::uint32_t k = 0;; k += 32) {
    const std::uint32_t stop = w.ballot(w.map([&](int l) {
      const std::uint32_t x = a + k + static_cast<std::uint32_t>(l);
      return x >= limit || in[x] != in[b + k + static_cast<std::uint32_t>(l)];
    }));
    if (stop) return k + static_cast<std::uint32_t>(simt::first_set(stop));
  }
}

// Bytes that equal in[a - j] == in[b - j] for j = 1..most (b < a).
TANDEM_HD std::uint32_t extend_backward(const Warp& w, const std::uint8_t* in, std::uint32_t a, std::uint32_t b,
                                        std::uint32_t most) {
  if (most == 0 || in[a - 1] != in[b - 1]) return 0;
  for (std::uint32_t k = 0;; k += 32) {
    const std::uint32_t stop = w.ballot(w.map([&](int l) {
      const std::uint32_t j = k + static_cast<std::uint32_t>(l) + 1;
      return j > most || in[a - j] != in[b - j];
    }));
    if (stop) return k + static_cast<std::uint32_t>(simt::first_set(stop));
  }
}

// Per lane: x of the nearest lower lane whose bit is set in mask, or `none`
// where no lower lane's is.
TANDEM_HD Lanes<std::uint32_t> lower_lane_value(const Warp& w, std::uint32_t mask, const Lanes<std::uint32_t>& x,
                                                std::uint32_t none) {
  const Lanes<int> before = w.map([&](int l) {
    const std::uint32_t below = mask & ((1u << l) - 1u);
    return below ? simt::last_set(below) : l;
  });
  const Lanes<std::uint32_t> got = w.shfl(x, before);
  return w.map([&](int l) -> std::uint32_t { return (mask & ((1u << l) - 1u)) ? got[l] : none; });
}

// Length-extension bytes for a length field holding v (the token keeps 15 of it).
TANDEM_HD std::uint32_t extension_size(std::uint32_t v) { return v >= 15 ? (v - 15) / 255 + 1 : 0; }

// The bytes of a sequence of lit literals and a match of ml bytes: token,
// literal-length extension, literals, offset, match-length extension. Step 1
// sums these into SegmentSummary::bytes and step 2 places its sequences with
// them, so the two agree byte for byte.
TANDEM_HD std::uint32_t sequence_bytes(std::uint32_t lit, std::uint32_t ml) {
  return 3 + extension_size(lit) + lit + extension_size(ml - kEncMinMatch);
}

// One lane writes the e extension bytes of a field holding v at out: 255s, then the rest.
TANDEM_HD void lane_write_extension(std::uint8_t* out, std::uint32_t v, std::uint32_t e) {
  if (e == 0) return;
  for (std::uint32_t j = 0; j + 1 < e; ++j) out[j] = 255;
  out[e - 1] = static_cast<std::uint8_t>((v - 15) % 255);
}

// Sets the warp's hash table to zeros (a zero entry is a candidate like any
// other, verified before use).
template <int HashLog>
TANDEM_HD void clear_table(const Warp& w, std::uint16_t* table) {
  constexpr std::size_t kTableBytes = table_bytes(HashLog);
#if defined(__CUDA_ARCH__)
  uint4* t = reinterpret_cast<uint4*>(table);
  constexpr std::uint32_t kVectors = kTableBytes / sizeof(uint4);
  w.each([&](int l) {
    for (std::uint32_t i = static_cast<std::uint32_t>(l); i < kVectors; i += 32) t[i] = make_uint4(0, 0, 0, 0);
  });
#else
  (void)w;
  std::memset(table, 0, kTableBytes);
#endif
}

// Step 0, prime (a thread block per kPrimeGroup segments of a block of more
// than one): for each segment but the first, the table its find warp starts
// from, so that matches reach back across the segment's start. For each
// hash it holds the newest of every kPrimeStride-th position of the
// kPrimeBytes before the segment, as a position after that stretch's start
// (base), 0 where there is none (a cleared table's entry, verified like any
// other before use). The thread block walks its segments in order, from
// kPrimeBytes / kSegmentSize segments before its first: all its threads
// hash a segment's positions into one running table, each entry the newest
// position with its hash so far (plus 1; an atomic maximum, so the same in
// any order), and the running table, less its entries older than the next
// segment's base, is that segment's prime table. Each byte is hashed once
// for all the segments that look back at it (twice where the lead-in of the
// group after its own covers it), and a find warp reads one table.
// Only blocks of more than one segment have prime tables, and they have
// tables of 2^kLargeHashLog entries. The tables are the ones the merged seed
// tables of each segment gave before (a warp a segment hashing its own, the
// find warp merging 3), the output the same; on the H100, silesia7 (GB/s,
// seed tables / prime tables of 8 and 16 warps): 16K 57.2 / 62.8 / 62.5, 64K
// 56.1 / 61.4 / 61.9, 256K 56.3 / 60.9 / 61.3, 1M 56.3 / 60.7 / 61.1.
inline constexpr std::uint32_t kPrimeGroup = FindShape::kPrimeGroup;
inline constexpr int kPrimeWarps = FindShape::kPrimeWarps;
inline constexpr std::uint32_t kPrimeLead = kPrimeBytes / kSegmentSize;

// Where the stretch a segment starting at `start` primes from begins: the
// positions of its prime table and of its find warp's table count from here.
template <class Shape = FindShape>
TANDEM_HD std::uint32_t prime_base(std::uint32_t start) {
  return start > Shape::kPrimeBytes ? start - Shape::kPrimeBytes : 0;
}

template <class Shape = FindShape>
TANDEM_HD std::uint32_t prime_group_count(std::size_t segments) {
  return static_cast<std::uint32_t>((segments + Shape::kPrimeGroup - 1) / Shape::kPrimeGroup);
}

// Group `group` of the block in[0, n) (segments [group * kPrimeGroup,
// (group + 1) * kPrimeGroup)): writes the prime tables of its segments but
// segment 0, each segment s's at primes + s * ShapeTraits<Shape>::kEntries.
// running: that many words of the thread block's shared memory.
template <class Shape = FindShape>
TANDEM_HD void prime_group(const simt::Block<Shape::kPrimeWarps>& b, const std::uint8_t* in, std::uint32_t n,
                           std::uint32_t group, std::uint32_t* running, std::uint16_t* primes) {
  constexpr std::uint32_t kEntries = ShapeTraits<Shape>::kEntries;
  constexpr std::uint32_t kStride = Shape::kPrimeStride;
  constexpr std::uint32_t kThreads = Shape::kPrimeWarps * simt::kWarpSize;
  // The positions of a segment that a thread hashes.
  constexpr std::uint32_t kPerThread = ((kSegmentSize + kStride - 1) / kStride + kThreads - 1) / kThreads;
  const std::uint32_t segments = static_cast<std::uint32_t>(segment_count(n));
  const std::uint32_t first = group * Shape::kPrimeGroup;
  const std::uint32_t last = first + Shape::kPrimeGroup < segments ? first + Shape::kPrimeGroup : segments;  // exclusive
  simt::block_threads(b, [&](std::uint32_t t) {
    for (std::uint32_t i = t; i < kEntries; i += kThreads) running[i] = 0;
  });
  b.sync();
  // Segment k is hashed to prime segment k + 1: from the first segment whose
  // positions the group's first prime table holds, to the one before its last.
  constexpr std::uint32_t kLead = ShapeTraits<Shape>::kLead;
  for (std::uint32_t k = first > kLead ? first - kLead : 0; k + 1 < last; ++k) {
    const std::uint32_t seg_start = k * kSegmentSize;
    // The positions hashed: the segment's whose 4 bytes lie inside the block
    // (all but where the block's last segment is shorter than 3 bytes). A
    // 5-byte hash reads its fifth byte where there is one (the hash of a
    // position without one is never looked up: no match starts there).
    const std::uint32_t seg_end = seg_start + kSegmentSize;  // k is not the block's last segment
    const std::uint32_t end = seg_end + 3 <= n ? seg_end : n - 3;  // n > kSegmentSize here
    simt::block_threads(b, [&](std::uint32_t t) {
      // The next segment's lines on their way while this one is hashed.
      const std::uint32_t ahead = seg_end + 128 * t;
      if (t < kSegmentSize / 128 && ahead < n) simt::prefetch_l1(in + ahead);
      // Every load of the thread first, then the atomics: the loads wait
      // on memory once, together.
      std::uint32_t word[kPerThread];
      std::uint32_t fifth[kPerThread];
      TANDEM_UNROLL
      for (std::uint32_t j = 0; j < kPerThread; ++j) {
        const std::uint32_t q = seg_start + kStride * (t + j * kThreads);
        word[j] = q < end ? simt::load_u32(in, n, q) : 0u;
        fifth[j] = Shape::kHashBytes > 4 && q + 4 < n ? in[q + 4] : 0u;
      }
      TANDEM_UNROLL
      for (std::uint32_t j = 0; j < kPerThread; ++j) {
        const std::uint32_t q = seg_start + kStride * (t + j * kThreads);
        if (q < end) {
          simt::atomic_max_block(&running[shape_hash<Shape, Shape::kLargeHashLog>(word[j], fifth[j])], q + 1);
        }
      }
    });
    b.sync();
    const std::uint32_t s = k + 1;
    if (s >= first) {
      const std::uint32_t base = prime_base<Shape>(s * kSegmentSize);
      std::uint16_t* table = primes + static_cast<std::size_t>(s) * kEntries;
      // 8 entries a thread at a time, one 16-byte store.
      simt::block_threads(b, [&](std::uint32_t t) {
        for (std::uint32_t i = 8 * t; i < kEntries; i += 8 * kThreads) {
          std::uint32_t packed[4];
          TANDEM_UNROLL
          for (std::uint32_t j = 0; j < 4; ++j) {
            const std::uint32_t lo = running[i + 2 * j];
            const std::uint32_t hi = running[i + 2 * j + 1];
            packed[j] = (lo > base ? lo - 1 - base : 0u) | (hi > base ? hi - 1 - base : 0u) << 16;
          }
          simt::store_aligned_u128(table + i, packed);
        }
      });
      b.sync();
    }
  }
}

// A find warp's table for segment seg > 0 of its block: the segment's prime table.
template <class Shape, int HashLog>
TANDEM_HD void load_prime(const Warp& w, const std::uint16_t* primes, std::uint32_t seg, std::uint16_t* table) {
  const std::uint16_t* from = primes + static_cast<std::size_t>(seg) * ShapeTraits<Shape>::kEntries;
  simt::warp_copy_phased(w, reinterpret_cast<std::uint8_t*>(table), reinterpret_cast<const std::uint8_t*>(from),
                         static_cast<std::uint32_t>(table_bytes(HashLog)));
}

// The find steps read their input without prefetches: asking for the line
// 2048 bytes ahead each step (which paid while the warp extended matches
// byte by byte) cost more than it saved once the lanes compared words. On
// the H100, silesia7 (GB/s, with / without): 4K 81.2 / 83.5, 16K 58.8 /
// 60.1, 64K 50.6 / 51.9.

// What a lane of a find step knows of its candidate (0: no match there):
// the bytes that match past the first 4 (ahead, up to 8) and before them
// (behind, up to 4), each with a flag set when a differing byte ends it;
// without the flag the parse extends the match further by the warp.
struct Window {
  std::uint32_t w[4];  // in[q - 4, q + 12)
};
inline constexpr std::uint32_t kLookAheadMask = 0xf;
inline constexpr std::uint32_t kLookAheadDone = 1u << 4;
inline constexpr std::uint32_t kLookBehindShift = 8;
inline constexpr std::uint32_t kLookBehindMask = 0x7;
inline constexpr std::uint32_t kLookBehindDone = 1u << 12;
inline constexpr std::uint32_t kLookHit = 1u << 16;

// Step 1 for segment `seg` of the block in[0, n): fills recs (room for
// kMaxSegmentRecords) and *summary. table: the warp's 2^HashLog entries;
// primes: the block's prime tables (prime_group<Shape>), read for seg > 0.
template <int HashLog, class Shape = FindShape>
TANDEM_HD void find_segment_with(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t seg,
                                 const std::uint16_t* primes, std::uint16_t* table, SeqRecord* recs,
                                 SegmentSummary* summary) {
  const std::uint32_t seg_start = seg * kSegmentSize;
  const std::uint32_t seg_end = n - seg_start < kSegmentSize ? n : seg_start + kSegmentSize;
  std::uint32_t anchor = seg_start;  // where the literals of the next record start
  std::uint32_t count = 0;
  // Each lane sums the sizes of the sequences it records; the warp adds
  // them up once, at the end.
  Lanes<std::uint32_t> bytes = w.map([](int) { return 0u; });
  // A match starts at most at n - kMfLimit, and at least its first 4 bytes
  // lie before match_limit (the segment's end, and kLastLiterals before n).
  const std::uint32_t match_limit = n > kLastLiterals ? (seg_end < n - kLastLiterals ? seg_end : n - kLastLiterals) : 0;
  const std::uint32_t last_start =
      n > kMfLimit && match_limit >= kEncMinMatch
          ? (n - kMfLimit < match_limit - kEncMinMatch ? n - kMfLimit : match_limit - kEncMinMatch)
          : 0;
  if (n > kMfLimit && match_limit >= seg_start + kEncMinMatch && last_start >= seg_start) {
    const std::uint32_t base = prime_base<Shape>(seg_start);
    if (seg == 0) {
      clear_table<HashLog>(w, table);
    } else {
      load_prime<Shape, HashLog>(w, primes, seg, table);
    }
    w.sync();
    std::uint32_t cur = seg_start;  // positions before this one are inside the last match
    std::uint32_t tile = seg_start;
    // A step's own bytes: each lane reads in[q - 4, q + 12) around its
    // position q where it can (wide), the 4 bytes at q (narrow) otherwise.
    // Loaded as raw words (read_tile) and joined where they are used; under
    // kEarlyOwnBytes the next step's are loaded as soon as this step has
    // parsed, so that they are in flight while it writes its records.
    constexpr bool kEarlyOwn = (Shape::kEarlyLoads & kEarlyOwnBytes) != 0;
    constexpr bool kEarlyTheirs = (Shape::kEarlyLoads & kEarlyCandidateBytes) != 0;
    struct Tile {
      Lanes<bool> valid, wide;
      Lanes<simt::RawWindow> raw;
      Lanes<std::uint32_t> narrow;
    };
    const auto read_tile = [&](std::uint32_t at, Tile& t) {
      t.valid = w.map([&](int l) { return at + static_cast<std::uint32_t>(l) <= last_start; });
      t.wide = w.map([&](int l) {
        const std::uint32_t q = at + static_cast<std::uint32_t>(l);
        return t.valid[l] && q >= 8 && q + 16 <= n;
      });
      t.raw = w.map([&](int l) {
        return t.wide[l] ? simt::load_raw_window(in, at + static_cast<std::uint32_t>(l)) : simt::RawWindow{};
      });
      t.narrow = w.map([&](int l) -> std::uint32_t {
        return t.valid[l] && !t.wide[l] ? simt::load_u32(in, n, at + static_cast<std::uint32_t>(l)) : 0u;
      });
    };
    Tile now, next;
    if constexpr (kEarlyOwn) read_tile(tile, now);
    while (tile <= last_start) {
      if constexpr (!kEarlyOwn) read_tile(tile, now);
      const Lanes<bool>& valid = now.valid;
      const Lanes<bool>& wide = now.wide;
      const Lanes<Window> mine = w.map([&](int l) {
        Window x{};
        if (wide[l]) simt::window_words(now.raw[l], x.w);
        return x;
      });
      const Lanes<std::uint32_t> seq = w.map([&](int l) { return wide[l] ? mine[l].w[1] : now.narrow[l]; });
      // (Lanes past the end neither read nor write the table. A valid lane's
      // position is at most n - kMfLimit, so its fifth byte is in the block.)
      const Lanes<std::uint32_t> key = w.map([&](int l) -> std::uint32_t {
        if (!valid[l]) return 0u;
        if constexpr (Shape::kHashBytes == 4) {
          return hash4<HashLog>(seq[l]);
        } else {
          const std::uint32_t q = tile + static_cast<std::uint32_t>(l);
          return shape_hash<Shape, HashLog>(seq[l], wide[l] ? mine[l].w[2] : in[q + 4]);
        }
      });
      // Each lane's candidate: the table's position for its hash, read
      // before this step's positions go in.
      const Lanes<std::uint32_t> cand = w.map([&](int l) -> std::uint32_t {
        return valid[l] ? base + table[key[l]] : base;
      });
      // Whether a lane's candidate is worth verifying, and its bytes, read
      // (under kEarlyCandidateBytes) before the table writes below, so that
      // they are on their way meanwhile.
      const Lanes<bool> open = w.map([&](int l) {
        const std::uint32_t q = tile + static_cast<std::uint32_t>(l);
        const std::uint32_t c = cand[l];
        return valid[l] && q >= cur && c < q && q - c <= kMaxOffset;
      });
      const Lanes<bool> cand_wide = w.map([&](int l) { return open[l] && wide[l] && cand[l] >= 8; });
      Lanes<simt::RawWindow> their_raw;
      Lanes<std::uint32_t> their_narrow;
      const auto read_theirs = [&] {
        their_raw = w.map([&](int l) {
          return cand_wide[l] ? simt::load_raw_window(in, cand[l]) : simt::RawWindow{};
        });
        their_narrow = w.map([&](int l) -> std::uint32_t {
          return open[l] && !cand_wide[l] ? simt::load_u32(in, n, cand[l]) : 0u;
        });
      };
      if constexpr (kEarlyTheirs) read_theirs();
      // The first position of each hash in this step goes into the table:
      // every lane writes its own, and those that find a later one there (a
      // lane above with the same hash won) write theirs again, until none
      // does (the lanes of a hash, in as many rounds at most). The H100
      // lets the lowest of the lanes that store to one address win, so one
      // round nearly always does. The candidates are the table's: a repeat
      // within the step is found from the step before, at a larger offset,
      // or not at all. On the H100, silesia7 (GB/s, output against liblz4's
      // default), 64K: a match-any in every step giving each lane the newest
      // lower lane of its hash as its candidate and picking the newest lane
      // of each hash to write, 62.5, 1.042x; the newest position of each
      // hash through rounds as above, 63.3, 1.044x (2.3 rounds a step); the
      // first, 65.5, 1.041x. 4K: 87.6 and 90.8; 16K: 64.0, 1.021x, and
      // 65.9, 1.019x.
      w.sync();  // every lane has read the table before any lane writes it
      const auto write_own = [&](std::uint32_t lanes) {
        w.each([&](int l) {
          const std::uint32_t q = tile + static_cast<std::uint32_t>(l);
          if ((lanes >> l) & 1u) table[key[l]] = static_cast<std::uint16_t>(q - base);
        });
        w.sync();
      };
      write_own(w.ballot(valid));
      for (;;) {
        const std::uint32_t lost = w.ballot(w.map([&](int l) {
          const std::uint32_t q = tile + static_cast<std::uint32_t>(l);
          return valid[l] && table[key[l]] > q - base;
        }));
        if (!lost) break;
        w.sync();  // every lane has read the table before any lane writes it
        write_own(lost);
      }
      if constexpr (!kEarlyTheirs) read_theirs();
      // Each lane with a candidate verifies it and, where both are wide,
      // compares up to 8 more bytes forwards and 4 backwards at once, so that
      // the parse below extends most matches without reading memory.
      const Lanes<std::uint32_t> look = w.map([&](int l) -> std::uint32_t {
        const std::uint32_t q = tile + static_cast<std::uint32_t>(l);
        if (!open[l]) return 0u;
        if (!cand_wide[l]) return their_narrow[l] == seq[l] ? kLookHit : 0u;
        std::uint32_t theirs[4];
        simt::window_words(their_raw[l], theirs);
        if (theirs[1] != seq[l]) return 0u;
        std::uint32_t look_bits = kLookHit;
        if (q + 12 <= match_limit) {
          std::uint32_t ahead = simt::equal_low_bytes(mine[l].w[2], theirs[2]);
          if (ahead == 4) ahead += simt::equal_low_bytes(mine[l].w[3], theirs[3]);
          look_bits |= ahead | (ahead < 8 ? kLookAheadDone : 0u);
        }
        const std::uint32_t behind = simt::equal_high_bytes(mine[l].w[0], theirs[0]);
        return look_bits | behind << kLookBehindShift | (behind < 4 ? kLookBehindDone : 0u);
      });
      // The parse picks the step's matches one after another: the next one
      // starts at the lowest verified position at or past where the last
      // one ends. Each lane knows where its match would end (reach; the top
      // bit set where the warp must extend it further), so picking one takes
      // a shuffle; the rest of each match is worked out by its own lane
      // below, all at once.
      constexpr std::uint32_t kReachOpen = 1u << 31;
      const Lanes<std::uint32_t> reach = w.map([&](int l) -> std::uint32_t {
        const std::uint32_t end = tile + static_cast<std::uint32_t>(l) + kEncMinMatch + (look[l] & kLookAheadMask);
        return look[l] & kLookAheadDone ? end : end | kReachOpen;
      });
      Lanes<std::uint32_t> ends = reach;
      std::uint32_t starts = w.ballot(w.map([&](int l) { return look[l] != 0u; }));
      std::uint32_t chosen = 0;
      // A lazy parse leaves position f as a literal when the match at f + 1
      // is longer than f's: f's end is known (under 12 bytes) and f + 1's is
      // more than one byte past it, or at least 12 bytes long. Lane 31 looks
      // no further than its step. Every lane works out its own case at once
      // (defer), so that picking a match takes one shuffle, not three (the
      // bit of f + 1 in starts is the same then as now: picking clears only
      // bits below the next pick).
      std::uint32_t defer = 0;
      if constexpr (Shape::kLazy) {
        const Lanes<std::uint32_t> after = w.shfl(reach, w.map([](int l) { return l < 31 ? l + 1 : l; }));
        defer = w.ballot(w.map([&](int l) {
          return l < 31 && ((starts >> (l + 1)) & 1u) && !(reach[l] & kReachOpen) &&
                 ((after[l] & kReachOpen) || after[l] > reach[l] + 1);
        }));
      }
      while (starts) {
        const int first = simt::first_set(starts);
        const int f = first + static_cast<int>((defer >> first) & 1u);
        std::uint32_t e = w.shfl(reach, f);
        if (e & kReachOpen) {
          const std::uint32_t p = tile + static_cast<std::uint32_t>(f);
          const std::uint32_t c = w.shfl(cand, f);
          e &= ~kReachOpen;
          e += extend_forward(w, in, e, c + (e - p), match_limit);
        }
        w.each([&](int l) {
          if (l == f) ends[l] = e;
        });
        chosen |= 1u << f;
        cur = e;
        starts = cur - tile >= 32 ? 0u : starts & ~((1u << (cur - tile)) - 1u);
      }
      const std::uint32_t next_tile = cur > tile + 32 ? cur : tile + 32;
      if constexpr (kEarlyOwn) {
        if (next_tile <= last_start) read_tile(next_tile, next);
      }
      if (chosen) {
        // Each chosen lane: its literals start where the match before it
        // ends, and it extends backwards no further than that.
        const Lanes<std::uint32_t> from = lower_lane_value(w, chosen, ends, anchor);
        const Lanes<std::uint32_t> most = w.map([&](int l) -> std::uint32_t {
          const std::uint32_t q = tile + static_cast<std::uint32_t>(l);
          return q - from[l] < cand[l] ? q - from[l] : cand[l];
        });
        Lanes<std::uint32_t> back = w.map([&](int l) -> std::uint32_t {
          const std::uint32_t b = (look[l] >> kLookBehindShift) & kLookBehindMask;
          return b >= most[l] ? most[l] : b;
        });
        std::uint32_t further = w.ballot(w.map([&](int l) {
          return ((chosen >> l) & 1u) && !(look[l] & kLookBehindDone) && back[l] < most[l];
        }));
        while (further) {
          const int f = simt::first_set(further);
          const std::uint32_t q = tile + static_cast<std::uint32_t>(f);
          const std::uint32_t c = w.shfl(cand, f);
          const std::uint32_t b = w.shfl(back, f);
          const std::uint32_t more = extend_backward(w, in, q - b, c - b, w.shfl(most, f) - b);
          w.each([&](int l) {
            if (l == f) back[l] = b + more;
          });
          further &= further - 1;
        }
        const Lanes<std::uint32_t> size = w.map([&](int l) -> std::uint32_t {
          if (!((chosen >> l) & 1u)) return 0u;
          const std::uint32_t p = tile + static_cast<std::uint32_t>(l) - back[l];
          return sequence_bytes(p - from[l], ends[l] - p);
        });
        w.each([&](int l) {
          if (!((chosen >> l) & 1u)) return;
          const std::uint32_t q = tile + static_cast<std::uint32_t>(l);
          const std::uint32_t p = q - back[l];
          const std::uint32_t record = count + static_cast<std::uint32_t>(simt::popcount(chosen & ((1u << l) - 1u)));
          recs[record] = SeqRecord{(p - from[l]) | ((ends[l] - p) << 16), q - cand[l]};
        });
        w.each([&](int l) { bytes[l] += size[l]; });
        count += static_cast<std::uint32_t>(simt::popcount(chosen));
        anchor = cur;
      }
      w.sync();  // table writes land before the next step reads
      tile = next_tile;
      if constexpr (kEarlyOwn) now = next;
    }
  }
  const std::uint32_t total = w.sum(bytes);
  w.each([&](int l) {
    if (l == 0) *summary = SegmentSummary{count, anchor, total};
  });
  w.sync();
}

// find_segment_with the table of the block's size; table has at least
// table_bytes(n <= kSmallTableLimit ? kSmallHashLog : Shape::kLargeHashLog)
// bytes (table_bytes(hash_log_for(n)) for the LZ4 encoder's shape).
template <class Shape = FindShape>
TANDEM_HD void find_segment(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint32_t seg,
                            const std::uint16_t* primes, std::uint16_t* table, SeqRecord* recs,
                            SegmentSummary* summary) {
  if (n <= kSmallTableLimit) {
    find_segment_with<kSmallHashLog, Shape>(w, in, n, seg, primes, table, recs, summary);
  } else {
    find_segment_with<Shape::kLargeHashLog, Shape>(w, in, n, seg, primes, table, recs, summary);
  }
}

// Where a segment's sequences go, from the summaries of its block's segments.
struct SegmentPlace {
  std::uint32_t anchor;       // where its first record's literals start: the end of the last match before it
  std::uint32_t at;           // where its first sequence goes in the output
  std::uint32_t last_anchor;  // where the block's last literals start
  std::uint32_t last_at;      // where the last sequence (literals only) goes
  std::uint32_t total;        // the block's size
};

// Places segment s of the block in[0, n) whose `segments` segments have the
// records recs (segment i's at recs + i * kMaxSegmentRecords) and the
// summaries sums. The warp reads the summaries 32 at a time, a segment per
// lane: a segment with records starts its literals where the latest segment
// with records before it ended, and its first sequence takes the literals in
// between, which may lengthen its literal-length extension.
TANDEM_HD SegmentPlace place_segment(const Warp& w, std::uint32_t n, const SeqRecord* recs,
                                     const SegmentSummary* sums, std::uint32_t segments, std::uint32_t s) {
  SegmentPlace place{0, 0, 0, 0, 0};
  std::uint32_t anchor = 0;  // the end of the last match so far
  std::uint32_t at = 0;      // the output of the segments so far
  for (std::uint32_t first = 0; first < segments; first += 32) {
    const Lanes<SegmentSummary> sum = w.map([&](int l) -> SegmentSummary {
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      return i < segments ? sums[i] : SegmentSummary{0, 0, 0};
    });
    const Lanes<std::uint32_t> end = w.map([&](int l) { return sum[l].end; });
    const std::uint32_t busy = w.ballot(w.map([&](int l) { return sum[l].count > 0; }));
    const Lanes<std::uint32_t> from = lower_lane_value(w, busy, end, anchor);
    const Lanes<std::uint32_t> size = w.map([&](int l) -> std::uint32_t {
      if (sum[l].count == 0) return 0u;
      const std::uint32_t i = first + static_cast<std::uint32_t>(l);
      const std::uint32_t lead = i * kSegmentSize - from[l];
      if (lead == 0) return sum[l].bytes;  // always so for a block's first segment
      const std::uint32_t own = recs[static_cast<std::size_t>(i) * kMaxSegmentRecords].lens & 0xffffu;
      return sum[l].bytes + lead + extension_size(own + lead) - extension_size(own);
    });
    const Lanes<std::uint32_t> at_lane = w.exclusive_sum(size);
    if (s >= first && s - first < 32) {
      place.anchor = w.shfl(from, static_cast<int>(s - first));
      place.at = at + w.shfl(at_lane, static_cast<int>(s - first));
    }
    at += w.sum(size);
    if (busy) anchor = w.shfl(end, simt::last_set(busy));
  }
  const std::uint32_t ll = n - anchor;
  place.last_anchor = anchor;
  place.last_at = at;
  place.total = at + 1 + extension_size(ll) + ll;
  return place;
}

// Step 2 for segment s of the block in[0, n) (see place_segment for recs,
// sums and segments; s is 0 for a block without segments, an empty one):
// writes the segment's sequences into out[0, cap) if the whole block fits,
// and the last literals if s is the last segment. Returns the block's status
// and sets *out_size to its size (0 unless it fits); both are the block's
// answer only from the last segment's warp.
TANDEM_HD ItemStatus emit_segment(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                  std::uint32_t cap, const SeqRecord* recs, const SegmentSummary* sums,
                                  std::uint32_t segments, std::uint32_t s, std::uint32_t* out_size) {
  // Literal runs up to this long are copied by their own lane; longer ones by
  // the warp.
  constexpr std::uint32_t kLaneLiterals = 16;
  const SegmentPlace place = place_segment(w, n, recs, sums, segments, s);
  const bool fits = place.total <= cap;
  const std::uint32_t count = fits && s < segments ? sums[s].count : 0u;
  const SeqRecord* r = recs + static_cast<std::size_t>(s) * kMaxSegmentRecords;
  const std::uint32_t seg_start = s * kSegmentSize;
  std::uint32_t op = place.at;
  std::uint32_t cursor = seg_start;  // input position where the group's first record's own literals start
  for (std::uint32_t g = 0; g < count; g += 32) {
    const Lanes<bool> active = w.map([&](int l) { return g + static_cast<std::uint32_t>(l) < count; });
    const Lanes<std::uint32_t> lens = w.map([&](int l) -> std::uint32_t {
      return active[l] ? r[g + static_cast<std::uint32_t>(l)].lens : 0u;
    });
    const Lanes<std::uint32_t> offset = w.map([&](int l) -> std::uint32_t {
      return active[l] ? r[g + static_cast<std::uint32_t>(l)].offset : 0u;
    });
    const Lanes<std::uint32_t> span = w.map([&](int l) { return (lens[l] & 0xffffu) + (lens[l] >> 16); });
    const Lanes<std::uint32_t> own_at = w.exclusive_sum(span);
    // The segment's first record also takes the literals left before it.
    const Lanes<std::uint32_t> src = w.map([&](int l) -> std::uint32_t {
      return g == 0 && l == 0 ? place.anchor : cursor + own_at[l];
    });
    const Lanes<std::uint32_t> lit = w.map([&](int l) -> std::uint32_t {
      return (lens[l] & 0xffffu) + (g == 0 && l == 0 ? seg_start - place.anchor : 0u);
    });
    const Lanes<std::uint32_t> size = w.map([&](int l) -> std::uint32_t {
      if (!active[l]) return 0u;
      return sequence_bytes(lit[l], lens[l] >> 16);
    });
    const Lanes<std::uint32_t> at = w.exclusive_sum(size);
    w.each([&](int l) {
      if (!active[l]) return;
      const std::uint32_t ll = lit[l];
      const std::uint32_t mcode = (lens[l] >> 16) - kEncMinMatch;
      const std::uint32_t lit_ext = extension_size(ll);
      std::uint8_t* o = out + op + at[l];
      o[0] = static_cast<std::uint8_t>(((ll < 15 ? ll : 15) << 4) | (mcode < 15 ? mcode : 15));
      lane_write_extension(o + 1, ll, lit_ext);
      std::uint8_t* m = o + 1 + lit_ext + ll;
      if (ll <= kLaneLiterals) simt::lane_copy<kLaneLiterals>(o + 1 + lit_ext, in + src[l], ll);
      m[0] = static_cast<std::uint8_t>(offset[l]);
      m[1] = static_cast<std::uint8_t>(offset[l] >> 8);
      lane_write_extension(m + 2, mcode, extension_size(mcode));
    });
    std::uint32_t longs = w.ballot(w.map([&](int l) { return active[l] && lit[l] > kLaneLiterals; }));
    while (longs) {
      const int f = simt::first_set(longs);
      const std::uint32_t ll = w.shfl(lit, f);
      std::uint8_t* o = out + op + w.shfl(at, f) + 1 + extension_size(ll);
      simt::warp_copy(w, o, in + w.shfl(src, f), ll, in, in + n);
      longs &= longs - 1;
    }
    op += w.sum(size);
    cursor += w.sum(span);
  }
  if (fits && s + 1 >= segments) {
    // The last sequence: the remaining literals, no match.
    const std::uint32_t ll = n - place.last_anchor;
    const std::uint32_t lit_ext = extension_size(ll);
    std::uint8_t* o = out + place.last_at;
    w.each([&](int l) {
      if (l == 0) {
        o[0] = static_cast<std::uint8_t>((ll < 15 ? ll : 15) << 4);
        lane_write_extension(o + 1, ll, lit_ext);
      }
    });
    simt::warp_copy(w, o + 1 + lit_ext, in + place.last_anchor, ll, in, in + n);
  }
  w.sync();
  *out_size = fits ? place.total : 0;
  if (!fits) return ItemStatus::output_overflow;
  return place.total >= n ? ItemStatus::incompressible : ItemStatus::ok;
}

}  // namespace tandem::gpu::lz4k
