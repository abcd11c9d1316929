// The LZ4 block decoder that the GPU runs: one warp per block, every length,
// offset and count checked against the input and the output capacity.
//
// Per sequence the warp loads 32 input bytes at the token in one coalesced
// step; the token, short literal runs and the offset come out of that window
// through shuffles, so a typical sequence costs one load of its header and the
// reads of its match. Long literal runs and non-overlapping matches are copied
// as aligned 4-byte words; a match that overlaps itself (offset < length)
// repeats its period, a lane per byte.
#pragma once

#include <cstdint>

#include "gpu/simt.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu::lz4k {

using simt::Lanes;
using simt::Warp;

inline constexpr std::uint32_t kMinMatch = 4;

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

// Decodes the block in[0, n) into out[0, cap); *out_size receives the bytes
// decoded (also on failure: how far it got). n and cap are at most
// kMaxItemSize.
TANDEM_HD ItemStatus decode_block(const Warp& w, const std::uint8_t* in, std::uint32_t n, std::uint8_t* out,
                                  std::uint32_t cap, std::uint32_t* out_size) {
  std::uint32_t ip = 0;
  std::uint32_t op = 0;
  ItemStatus status = ItemStatus::ok;
  if (n == 0) status = ItemStatus::corrupt_token;  // even an empty block has a token
  while (status == ItemStatus::ok) {
    const Lanes<std::uint32_t> win = w.map([&](int l) -> std::uint32_t {
      const std::uint32_t x = ip + static_cast<std::uint32_t>(l);
      return x < n ? in[x] : 0u;
    });
    const std::uint32_t token = w.shfl(win, 0);
    std::uint32_t p = ip + 1;
    std::uint32_t lit = token >> 4;
    if (lit == 15 && !read_length(w, in, n, &p, &lit, n)) {
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
    if (p == ip + 1) {
      // Short run (lit < 15): the literals are lanes 1..lit of the window.
      w.each([&](int l) {
        const std::uint32_t j = static_cast<std::uint32_t>(l) - 1;
        if (l >= 1 && j < lit) out[op + j] = static_cast<std::uint8_t>(win[l]);
      });
    } else {
      simt::warp_copy(w, out + op, in + p, lit, in, in + n);
    }
    op += lit;
    p += lit;
    if (p == n) break;  // the last sequence: literals only
    if (n - p < 2) {
      status = ItemStatus::corrupt_token;
      break;
    }
    std::uint32_t offset;
    if (p - ip + 1 < 32) {
      offset = w.shfl(win, static_cast<int>(p - ip)) | (w.shfl(win, static_cast<int>(p - ip + 1)) << 8);
    } else {
      offset = in[p] | (std::uint32_t{in[p + 1]} << 8);
    }
    p += 2;
    std::uint32_t ml = token & 15;
    if (ml == 15 && !read_length(w, in, n, &p, &ml, cap)) {
      status = ItemStatus::corrupt_token;
      break;
    }
    ml += kMinMatch;
    if (offset == 0 || offset > op) {
      status = ItemStatus::offset_out_of_range;
      break;
    }
    if (ml > cap - op) {
      status = ItemStatus::match_past_output_end;
      break;
    }
    w.sync();  // the literals just written may be the match's source
    std::uint8_t* dst = out + op;
    const std::uint8_t* src = dst - offset;
    if (offset >= ml) {
      simt::warp_copy(w, dst, src, ml, out, dst);
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
    op += ml;
    w.sync();
    ip = p;
    if (ip == n) status = ItemStatus::corrupt_token;  // a block must end with literals
  }
  w.sync();
  *out_size = op;
  return status;
}

}  // namespace tandem::gpu::lz4k
