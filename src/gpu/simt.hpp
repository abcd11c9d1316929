// One warp's code, written once, run two ways.
//
// On the device every thread of a warp runs the code and a `Lanes<T>` value is
// that thread's own register; warp collectives are the CUDA intrinsics. On the
// host (any compiler, and nvcc's host pass) the same code runs once per warp and
// a `Lanes<T>` holds all 32 values; `map` and `each` loop over the lanes. Values
// outside Lanes are uniform: every lane computes the same.
//
// Code that follows two rules behaves the same both ways:
//  - within one `each`/`map`, a lane never reads what another lane writes in
//    the same step (the host runs lane 0 to 31 in turn, the device all at once);
//  - between a step that writes memory and one that reads it, call sync().
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define TANDEM_HD __host__ __device__ __forceinline__
#else
#define TANDEM_HD inline
#endif

// Unrolls the next loop in device code, so that arrays of Lanes indexed by its
// counter stay in registers.
#if defined(__CUDA_ARCH__)
#define TANDEM_UNROLL _Pragma("unroll")
#else
#define TANDEM_UNROLL
#endif

namespace tandem::gpu::simt {

inline constexpr int kWarpSize = 32;
inline constexpr std::uint32_t kFullMask = 0xffffffffu;

// Lowest set bit's index, 32 when none.
TANDEM_HD int first_set(std::uint32_t mask) {
#if defined(__CUDA_ARCH__)
  return mask ? __ffs(static_cast<int>(mask)) - 1 : 32;
#else
  return mask ? __builtin_ctz(mask) : 32;
#endif
}

// Highest set bit's index; mask must not be 0.
TANDEM_HD int last_set(std::uint32_t mask) {
#if defined(__CUDA_ARCH__)
  return 31 - __clz(static_cast<int>(mask));
#else
  return 31 - __builtin_clz(mask);
#endif
}

// p, as a value the device compiler cannot see through: a pointer that
// stays one register pair (addresses from it take one wide product)
// rather than being rebuilt from the sums that made it at each use.
template <class T>
TANDEM_HD T* opaque(T* p) {
#if defined(__CUDA_ARCH__)
  asm("" : "+l"(p));
#endif
  return p;
}

// v, computed where it stands: the device compiler may not move its
// computation into a branch that alone uses it (a select of two computed
// values stays a select).
TANDEM_HD std::uint32_t computed(std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("" : "+r"(v));
#endif
  return v;
}

// *p = v, where p points into global memory (on the device a global
// store, which opaque() pointers would otherwise lose).
TANDEM_HD void store_global_u16(std::uint16_t* p, std::uint16_t v) {
#if defined(__CUDA_ARCH__)
  __stwb(reinterpret_cast<unsigned short*>(p), v);
#else
  *p = v;
#endif
}

TANDEM_HD int popcount(std::uint32_t mask) {
#if defined(__CUDA_ARCH__)
  return __popc(mask);
#else
  return __builtin_popcount(mask);
#endif
}

// Orders this thread's memory accesses before the fence ahead of those after
// it, as the other threads of its thread block see them.
TANDEM_HD void fence_block() {
#if defined(__CUDA_ARCH__)
  __threadfence_block();
#endif
}

// Adds v to *p (shared memory) atomically among the threads of the block;
// returns the value before.
TANDEM_HD std::uint32_t atomic_add_block(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicAdd_block(p, v);
#else
  const std::uint32_t before = *p;
  *p = before + v;
  return before;
#endif
}

// Sets the bits of v in *p (shared memory) atomically among the threads of
// the block.
TANDEM_HD void atomic_or_block(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  atomicOr_block(p, v);
#else
  *p |= v;
#endif
}

// Raises *p (shared memory) to v where v is larger, atomically among the
// threads of the block.
TANDEM_HD void atomic_max_block(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  atomicMax_block(p, v);
#else
  if (v > *p) *p = v;
#endif
}

// A load the compiler may not keep in a register: another warp may write it.
template <class T>
TANDEM_HD T load_volatile(const T* p) {
  return *static_cast<const volatile T*>(p);
}
template <class T>
TANDEM_HD void store_volatile(T* p, T v) {
  *static_cast<volatile T*>(p) = v;
}

// Asks for the cache line holding p to be brought into L1, without waiting.
TANDEM_HD void prefetch_l1(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}

// A load and a store of a T (4 or 8 bytes) at an address aligned to its size.
template <class T>
TANDEM_HD T load_aligned(const void* p) {
#if defined(__CUDA_ARCH__)
  return *static_cast<const T*>(p);
#else
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}
template <class T>
TANDEM_HD void store_aligned(void* p, T v) {
#if defined(__CUDA_ARCH__)
  *static_cast<T*>(p) = v;
#else
  std::memcpy(p, &v, sizeof v);
#endif
}
TANDEM_HD std::uint32_t load_aligned_u32(const std::uint8_t* p) { return load_aligned<std::uint32_t>(p); }
TANDEM_HD void store_aligned_u32(std::uint8_t* p, std::uint32_t v) { store_aligned<std::uint32_t>(p, v); }
TANDEM_HD std::uint64_t load_aligned_u64(const void* p) { return load_aligned<std::uint64_t>(p); }
TANDEM_HD void store_aligned_u64(void* p, std::uint64_t v) { store_aligned<std::uint64_t>(p, v); }
// Four words to 16-aligned p, one store on the device.
TANDEM_HD void store_aligned_u128(void* p, const std::uint32_t (&v)[4]) {
#if defined(__CUDA_ARCH__)
  *static_cast<uint4*>(p) = make_uint4(v[0], v[1], v[2], v[3]);
#else
  std::memcpy(p, v, sizeof v);
#endif
}

// Bytes [shift, shift + 4) of the little-endian 8 bytes lo:hi (shift 0..3).
TANDEM_HD std::uint32_t funnel(std::uint32_t lo, std::uint32_t hi, std::uint32_t shift) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(lo, hi, shift * 8);
#else
  return static_cast<std::uint32_t>(((static_cast<std::uint64_t>(hi) << 32) | lo) >> (shift * 8));
#endif
}

#if defined(__CUDA_ARCH__)

template <class T>
struct Lanes {
  T v;
  __device__ __forceinline__ T& operator[](int) { return v; }
  __device__ __forceinline__ const T& operator[](int) const { return v; }
};

struct Warp {
  int lane_ = static_cast<int>(threadIdx.x) & 31;

  __device__ __forceinline__ int lane() const { return lane_; }
  template <class F>
  __device__ __forceinline__ auto map(F f) const -> Lanes<decltype(f(0))> {
    return {f(lane_)};
  }
  template <class F>
  __device__ __forceinline__ void each(F f) const {
    f(lane_);
  }
  __device__ __forceinline__ std::uint32_t ballot(const Lanes<bool>& p) const { return __ballot_sync(kFullMask, p.v); }
  template <class T>
  __device__ __forceinline__ T shfl(const Lanes<T>& x, int src) const {
    return __shfl_sync(kFullMask, x.v, src);
  }
  // Per lane: x of the lane that src names for it.
  template <class T>
  __device__ __forceinline__ Lanes<T> shfl(const Lanes<T>& x, const Lanes<int>& src) const {
    return {__shfl_sync(kFullMask, x.v, src.v)};
  }
  // Per lane: the sum of x over lanes 0..lane-1.
  __device__ __forceinline__ Lanes<std::uint32_t> exclusive_sum(const Lanes<std::uint32_t>& x) const {
    std::uint32_t s = x.v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const std::uint32_t t = __shfl_up_sync(kFullMask, s, d);
      if (lane_ >= d) s += t;
    }
    return {s - x.v};
  }
  __device__ __forceinline__ std::uint32_t sum(const Lanes<std::uint32_t>& x) const {
    return __reduce_add_sync(kFullMask, x.v);
  }
  __device__ __forceinline__ std::uint32_t min(const Lanes<std::uint32_t>& x) const {
    return __reduce_min_sync(kFullMask, x.v);
  }
  __device__ __forceinline__ std::uint32_t max(const Lanes<std::uint32_t>& x) const {
    return __reduce_max_sync(kFullMask, x.v);
  }
  __device__ __forceinline__ std::uint32_t bit_or(const Lanes<std::uint32_t>& x) const {
    return __reduce_or_sync(kFullMask, x.v);
  }
  __device__ __forceinline__ void sync() const { __syncwarp(); }
};

#else

template <class T>
struct Lanes {
  T v[kWarpSize];
  T& operator[](int lane) { return v[lane]; }
  const T& operator[](int lane) const { return v[lane]; }
};

// The order in which the host runs a warp's lanes in map and each: 0 to 31,
// or 31 to 0. Code that keeps the rules above gives the same results either
// way; the emulation tests run both, to find code that does not.
inline bool& host_lanes_reversed() {
  static thread_local bool reversed = false;
  return reversed;
}

struct Warp {
  template <class F>
  auto map(F f) const -> Lanes<decltype(f(0))> {
    Lanes<decltype(f(0))> r;
    each([&](int l) { r.v[l] = f(l); });
    return r;
  }
  template <class F>
  void each(F f) const {
    const bool reversed = host_lanes_reversed();
    for (int i = 0; i < kWarpSize; ++i) f(reversed ? kWarpSize - 1 - i : i);
  }
  std::uint32_t ballot(const Lanes<bool>& p) const {
    std::uint32_t m = 0;
    for (int l = 0; l < kWarpSize; ++l) m |= static_cast<std::uint32_t>(p.v[l]) << l;
    return m;
  }
  template <class T>
  T shfl(const Lanes<T>& x, int src) const {
    return x.v[src & 31];
  }
  template <class T>
  Lanes<T> shfl(const Lanes<T>& x, const Lanes<int>& src) const {
    Lanes<T> r;
    for (int l = 0; l < kWarpSize; ++l) r.v[l] = x.v[src.v[l] & 31];
    return r;
  }
  Lanes<std::uint32_t> exclusive_sum(const Lanes<std::uint32_t>& x) const {
    Lanes<std::uint32_t> r;
    std::uint32_t s = 0;
    for (int l = 0; l < kWarpSize; ++l) {
      r.v[l] = s;
      s += x.v[l];
    }
    return r;
  }
  std::uint32_t sum(const Lanes<std::uint32_t>& x) const {
    std::uint32_t s = 0;
    for (int l = 0; l < kWarpSize; ++l) s += x.v[l];
    return s;
  }
  std::uint32_t min(const Lanes<std::uint32_t>& x) const {
    std::uint32_t m = x.v[0];
    for (int l = 1; l < kWarpSize; ++l) m = x.v[l] < m ? x.v[l] : m;
    return m;
  }
  std::uint32_t max(const Lanes<std::uint32_t>& x) const {
    std::uint32_t m = x.v[0];
    for (int l = 1; l < kWarpSize; ++l) m = x.v[l] > m ? x.v[l] : m;
    return m;
  }
  std::uint32_t bit_or(const Lanes<std::uint32_t>& x) const {
    std::uint32_t m = 0;
    for (int l = 0; l < kWarpSize; ++l) m |= x.v[l];
    return m;
  }
  void sync() const {}
};

#endif

// ------------------------------------------------------------- blocks ----
//
// A thread block of W warps that work on one item together. The block's code
// is a sequence of steps separated by sync(): in a step, `warps(f)` runs f for
// each warp with the warp's index (on the device each warp runs its own call;
// on the host the calls run one after another, warp 0 first). Within a step a
// warp never reads what another warp writes in that step; state that outlives
// a step and is shared between warps lives in memory the caller provides
// (shared memory on the device). Loop conditions around steps must be
// computed the same by every warp, from that memory, after a sync().
template <int W>
struct Block {
  static constexpr int kWarps = W;
#if defined(__CUDA_ARCH__)
  template <class F>
  __device__ __forceinline__ void warps(F f) const {
    f(Warp{}, static_cast<int>(threadIdx.x) / kWarpSize);
  }
  __device__ __forceinline__ void sync() const { __syncthreads(); }
#else
  template <class F>
  void warps(F f) const {
    for (int i = 0; i < W; ++i) f(Warp{}, i);
  }
  void sync() const {}
#endif
};

// Runs f(thread) for each thread of the block (thread: warp * kWarpSize +
// lane), in one step.
template <int W, class F>
TANDEM_HD void block_threads(const Block<W>& b, F f) {
  b.warps([&](const Warp& w, int warp) {
    w.each([&](int l) { f(static_cast<std::uint32_t>(warp) * kWarpSize + static_cast<std::uint32_t>(l)); });
  });
}

// ------------------------------------------------------------- teams ----
//
// A team: N warps of a thread block, warps [first, first + N), that work on
// one task in sub-steps separated by sync(), the team's own barrier (named
// barrier `id`, 1 to 15), while the block's other warps go on with theirs.
// On the device each warp runs the team's code for itself; on the host the
// call of the team's first warp runs every member, sub-step by sub-step
// (members(f) loops over them), and the other warps' calls do nothing
// (runs() is false for them). Between sub-steps a member keeps its state in
// memory the caller provides, not in variables.
template <int N>
struct Team {
  static constexpr int kWarps = N;
  int first;
  int id;
#if defined(__CUDA_ARCH__)
  __device__ __forceinline__ bool runs(int) const { return true; }
  template <class F>
  __device__ __forceinline__ void members(int warp, F f) const {
    f(Warp{}, warp - first);
  }
  // A team of one warp syncs as a warp: a named barrier whose id is known
  // only at run time makes ptxas reserve all 16 of a block's, which caps an
  // SM at 4 such blocks.
  __device__ __forceinline__ void sync() const {
    if constexpr (N == 1) {
      __syncwarp();
    } else {
      asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(N * kWarpSize) : "memory");
    }
  }
#else
  bool runs(int warp) const { return warp == first; }
  template <class F>
  void members(int, F f) const {
    for (int m = 0; m < N; ++m) f(Warp{}, m);
  }
  void sync() const {}
#endif
};

// The 4 bytes at in[q], little-endian, for q + 4 <= n: two aligned loads
// where both stay inside in[0, n), bytes otherwise.
TANDEM_HD std::uint32_t load_u32(const std::uint8_t* in, std::uint32_t n, std::uint32_t q) {
  const std::uint32_t shift = static_cast<std::uint32_t>((reinterpret_cast<std::uintptr_t>(in) + q) & 3);
  // The aligned words from in[q - shift] stay inside in[0, n) (checked in
  // 32 bits: q < n <= kMaxItemSize).
  if (q >= shift && q - shift + (shift ? 8u : 4u) <= n) {
    const std::uint8_t* b = in + (q - shift);
    return funnel(load_aligned_u32(b), shift ? load_aligned_u32(b + 4) : 0, shift);
  }
  const std::uint8_t* b = in + q;
  return b[0] | (std::uint32_t{b[1]} << 8) | (std::uint32_t{b[2]} << 16) | (std::uint32_t{b[3]} << 24);
}

// The 16 bytes at in[x - 4, x + 12), for 8 <= x and x + 16 <= n, as they
// are loaded: five aligned words, every one inside in[0, n), and the shift
// that joins them (window_words). A caller that joins them later than it
// loads them has the loads in flight meanwhile.
struct RawWindow {
  std::uint32_t a[5];
  std::uint32_t shift;
};
TANDEM_HD RawWindow load_raw_window(const std::uint8_t* in, std::uint32_t x) {
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(in) + x - 4;
  RawWindow r;
  r.shift = static_cast<std::uint32_t>(at & 3);
  const std::uint8_t* b = reinterpret_cast<const std::uint8_t*>(at - r.shift);
  TANDEM_UNROLL
  for (int k = 0; k < 5; ++k) r.a[k] = load_aligned_u32(b + 4 * k);
  return r;
}
// The window as four little-endian words.
TANDEM_HD void window_words(const RawWindow& r, std::uint32_t w[4]) {
  TANDEM_UNROLL
  for (int k = 0; k < 4; ++k) w[k] = funnel(r.a[k], r.a[k + 1], r.shift);
}
// The 16 bytes at in[x - 4, x + 12) as four little-endian words, for
// 8 <= x and x + 16 <= n.
TANDEM_HD void load_window(const std::uint8_t* in, std::uint32_t x, std::uint32_t w[4]) {
  window_words(load_raw_window(in, x), w);
}

// Of the 4 bytes of two little-endian words, how many are equal from the
// first (lowest) on, and from the last (highest) on.
TANDEM_HD std::uint32_t equal_low_bytes(std::uint32_t x, std::uint32_t y) {
  const std::uint32_t d = x ^ y;
  return d ? static_cast<std::uint32_t>(first_set(d)) / 8 : 4u;
}
TANDEM_HD std::uint32_t equal_high_bytes(std::uint32_t x, std::uint32_t y) {
  const std::uint32_t d = x ^ y;
  return d ? static_cast<std::uint32_t>(31 - last_set(d)) / 8 : 4u;
}

// ------------------------------------------------------- warp copies ----

// Copies len <= N bytes from src to dst, one lane alone (no overlap): every
// byte is loaded before any is stored, so the loads wait on memory once,
// together, not once per byte behind a store they might alias. (The zeroed
// buffer is what lets the compiler keep it in registers.)
template <std::uint32_t N>
TANDEM_HD void lane_copy(std::uint8_t* dst, const std::uint8_t* src, std::uint32_t len) {
  std::uint8_t b[N] = {};
  TANDEM_UNROLL
  for (std::uint32_t k = 0; k < N; ++k) {
    if (k < len) b[k] = src[k];
  }
  TANDEM_UNROLL
  for (std::uint32_t k = 0; k < N; ++k) {
    if (k < len) dst[k] = b[k];
  }
}

// A copy of up to N bytes by one lane (len 0: none).
struct LaneCopy {
  std::uint8_t* dst;
  const std::uint8_t* src;
  std::uint32_t len;
};

// Each lane makes its own copy, copy_of(lane), of up to N bytes: in as many
// bytes (a multiple of 4) as the warp's longest copy needs, not N.
template <std::uint32_t N, class F>
TANDEM_HD void lane_copies(const Warp& w, F copy_of) {
  static_assert(N % 4 == 0 && N <= 16, "lane copies come in steps of 4 bytes, 16 at most");
  const std::uint32_t longest = w.max(w.map([&](int l) { return copy_of(l).len; }));
  const auto copy = [&](auto bytes) {
    w.each([&](int l) {
      const LaneCopy c = copy_of(l);
      lane_copy<decltype(bytes)::value>(c.dst, c.src, c.len);
    });
  };
  if (longest == 0) return;
  if (longest <= 4) {
    copy(std::integral_constant<std::uint32_t, 4>{});
  } else if (longest <= 8 || N == 8) {
    copy(std::integral_constant<std::uint32_t, (N < 8 ? N : 8)>{});
  } else if (longest <= 12 || N == 12) {
    copy(std::integral_constant<std::uint32_t, (N < 12 ? N : 12)>{});
  } else {
    copy(std::integral_constant<std::uint32_t, N>{});
  }
}

// Word q of a copy's source s (s = from + shift, from 4-aligned): joined
// from the two aligned words at from + 4q where both lie inside [lo, hi),
// else read byte by byte.
TANDEM_HD std::uint32_t source_word(const std::uint8_t* from, std::uint32_t shift, std::uint32_t q,
                                    const std::uint8_t* lo, const std::uint8_t* hi) {
  const std::uint8_t* a = from + 4 * q;
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(a);
  if (at >= reinterpret_cast<std::uintptr_t>(lo) && at + (shift ? 8u : 4u) <= reinterpret_cast<std::uintptr_t>(hi)) {
    return funnel(load_aligned_u32(a), shift ? load_aligned_u32(a + 4) : 0u, shift);
  }
  const std::uint8_t* b = a + shift;
  return b[0] | (std::uint32_t{b[1]} << 8) | (std::uint32_t{b[2]} << 16) | (std::uint32_t{b[3]} << 24);
}

// Copies len bytes from src to dst (no overlap), the whole warp together.
// Short runs go a byte per lane; long runs as aligned 4-byte stores, each
// built from two aligned 4-byte loads, whenever those loads stay inside
// [src_lo, src_hi) (the caller's readable range around src); a lane whose
// loads would leave it copies its word byte by byte. Call sync() before
// anything reads dst.
TANDEM_HD void warp_copy(const Warp& w, std::uint8_t* dst, const std::uint8_t* src, std::uint32_t len,
                         const std::uint8_t* src_lo, const std::uint8_t* src_hi) {
  if (len < 64) {
    w.each([&](int l) {
      for (std::uint32_t j = static_cast<std::uint32_t>(l); j < len; j += kWarpSize) dst[j] = src[j];
    });
    return;
  }
  // Head: bytes until dst is 4-aligned; tail: what follows the last whole word.
  const std::uint32_t head = static_cast<std::uint32_t>((4 - (reinterpret_cast<std::uintptr_t>(dst) & 3)) & 3);
  const std::uint32_t words = (len - head) / 4;
  const std::uint32_t tail_start = head + words * 4;
  const std::uint8_t* s = src + head;
  const std::uint32_t shift = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(s) & 3);
  const std::uint8_t* sa = reinterpret_cast<const std::uint8_t*>(reinterpret_cast<std::uintptr_t>(s) - shift);
  std::uint8_t* d = dst + head;
  w.each([&](int l) {
    if (static_cast<std::uint32_t>(l) < head) dst[l] = src[l];
    if (static_cast<std::uint32_t>(l) < len - tail_start) dst[tail_start + l] = src[tail_start + l];
    for (std::uint32_t k = static_cast<std::uint32_t>(l); k < words; k += kWarpSize) {
      store_aligned_u32(d + 4 * k, source_word(sa, shift, k, src_lo, src_hi));
    }
  });
}

// Thread t's share, of `threads` threads, of a copy of len bytes from src to
// dst (no overlap), reading nothing outside [src_lo, src_hi): whole aligned
// 4-byte words of dst, each joined from the two aligned source words that
// hold its bytes, kBatch of them in flight a thread before their stores (a
// copy waits on memory once a batch, not once a word); dst's first and last
// (up to 3) bytes go one at a time. Where the aligned source words would
// reach outside [src_lo, src_hi), the words are read byte by byte.
template <std::uint32_t kBatch>
TANDEM_HD void copy_words_share(std::uint8_t* dst, const std::uint8_t* src, std::uint32_t len,
                                const std::uint8_t* src_lo, const std::uint8_t* src_hi, std::uint32_t t,
                                std::uint32_t threads) {
  const std::uint32_t to_aligned = (4u - static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(dst) & 3u)) & 3u;
  const std::uint32_t head = len < to_aligned ? len : to_aligned;
  const std::uint32_t words = (len - head) / 4;
  const std::uint32_t tail = head + 4 * words;
  if (t < head) dst[t] = src[t];
  if (t < len - tail) dst[tail + t] = src[tail + t];
  if (words == 0) return;
  const std::uint8_t* s = src + head;
  const std::uint32_t shift = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(s) & 3u);
  const std::uint8_t* from = s - shift;  // aligned
  std::uint8_t* to = dst + head;         // aligned
  const std::uintptr_t reach = reinterpret_cast<std::uintptr_t>(from) + 4u * words + (shift ? 4u : 0u);
  const bool inside = reinterpret_cast<std::uintptr_t>(from) >= reinterpret_cast<std::uintptr_t>(src_lo) &&
                      reach <= reinterpret_cast<std::uintptr_t>(src_hi);
  if (!inside) {  // a word at a time, each tested
    for (std::uint32_t q = t; q < words; q += threads) {
      store_aligned_u32(to + 4 * q, source_word(from, shift, q, src_lo, src_hi));
    }
    return;
  }
  for (std::uint32_t q0 = 0; q0 < words; q0 += threads * kBatch) {
    std::uint32_t lo[kBatch], hi[kBatch];
    TANDEM_UNROLL
    for (std::uint32_t j = 0; j < kBatch; ++j) {
      const std::uint32_t q = q0 + j * threads + t;
      lo[j] = q < words ? load_aligned_u32(from + 4 * q) : 0u;
      hi[j] = q < words && shift ? load_aligned_u32(from + 4 * q + 4) : 0u;
    }
    TANDEM_UNROLL
    for (std::uint32_t j = 0; j < kBatch; ++j) {
      const std::uint32_t q = q0 + j * threads + t;
      if (q < words) store_aligned_u32(to + 4 * q, funnel(lo[j], hi[j], shift));
    }
  }
}

// Thread t's share, of `threads` threads, of a copy of len bytes from src to
// dst (no overlap) as 16-byte words; src and dst must lie at the same address
// modulo 16. The bytes before the first whole word and after the last go a
// byte a thread.
TANDEM_HD void copy_phased_share(std::uint8_t* dst, const std::uint8_t* src, std::uint32_t len, std::uint32_t t,
                                 std::uint32_t threads) {
  const auto phase = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(src) & 15);
  const std::uint32_t head = phase == 0 ? 0 : (16 - phase < len ? 16 - phase : len);
  const std::uint32_t words = (len - head) / 16;
  const std::uint32_t tail = head + words * 16;
  if (t < head) dst[t] = src[t];
  if (t < len - tail) dst[tail + t] = src[tail + t];
  for (std::uint32_t k = t; k < words; k += threads) {
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint4*>(dst + head + 16 * k) = *reinterpret_cast<const uint4*>(src + head + 16 * k);
#else
    std::memcpy(dst + head + 16 * k, src + head + 16 * k, 16);
#endif
  }
}

// The same by the whole warp together.
TANDEM_HD void warp_copy_phased(const Warp& w, std::uint8_t* dst, const std::uint8_t* src, std::uint32_t len) {
  w.each([&](int l) { copy_phased_share(dst, src, len, static_cast<std::uint32_t>(l), kWarpSize); });
}

// One lane copies a match of len bytes, offset back, at out[dst]: 16 bytes
// at a time from a distance that is a multiple of the offset and at least
// 16 (a short offset repeats its last bytes, so any multiple of it reads the
// same bytes), byte by byte until that distance is reached.
TANDEM_HD void lane_match(std::uint8_t* out, std::uint32_t dst, std::uint32_t offset, std::uint32_t len) {
  const std::uint32_t far = offset >= 16 ? offset : offset * ((16 + offset - 1) / offset);
  std::uint32_t k = 0;
  for (; k < len && k + offset < far; ++k) out[dst + k] = out[dst + k - offset];
  for (; k < len; k += 16) simt::lane_copy<16>(out + dst + k, out + dst + k - far, len - k < 16 ? len - k : 16u);
}

}  // namespace tandem::gpu::simt
