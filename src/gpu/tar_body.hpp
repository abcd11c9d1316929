// The checks of a tar header block that tell a tar archive from other
// bytes, written once for the host's tar parser (format/tar_format.cpp) and
// the scanner's device, which classifies the outputs it decoded
// (scan_gpu_body.hpp) so that only archives come back to the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/simt.hpp"

namespace tandem::tar_body {

inline constexpr std::uint32_t kBlockBytes = 512;
inline constexpr std::uint32_t kChecksumAt = 148, kChecksumSize = 8;

// A number field of `size` bytes at p: octal digits after optional spaces,
// ended by a space or NUL (or the field's end); or GNU's base 256, a first
// byte with its top bit set followed by a big-endian value. False when
// malformed, negative or over 63 bits, and for no digits unless
// `empty_is_zero`.
TANDEM_HD bool number(const std::uint8_t* p, std::uint32_t size, bool empty_is_zero, std::uint64_t* value) {
  if (p[0] & 0x80) {
    if (p[0] & 0x40) return false;  // negative
    std::uint64_t v = p[0] & 0x3F;
    for (std::uint32_t i = 1; i < size; ++i) {
      if (v >> 55) return false;
      v = (v << 8) | p[i];
    }
    *value = v;
    return true;
  }
  std::uint32_t i = 0;
  while (i < size && p[i] == ' ') ++i;
  std::uint64_t v = 0;
  std::uint32_t digits = 0;
  for (; i < size && p[i] >= '0' && p[i] <= '7'; ++i, ++digits) {
    if (v >> 60) return false;
    v = v * 8 + static_cast<std::uint64_t>(p[i] - '0');
  }
  for (; i < size; ++i) {
    if (p[i] != ' ' && p[i] != 0) return false;
  }
  if (digits == 0 && !empty_is_zero) return false;
  *value = v;
  return true;
}

// Whether the block at h is all zeros.
TANDEM_HD bool zero_block(const std::uint8_t* h) {
  for (std::uint32_t i = 0; i < kBlockBytes; ++i) {
    if (h[i] != 0) return false;
  }
  return true;
}

// The header's checksum holds: the sum of its bytes with the checksum field
// taken as spaces, as unsigned bytes (POSIX) or as signed ones (some old
// writers).
TANDEM_HD bool checksum_holds(const std::uint8_t* h) {
  std::uint64_t stored = 0;
  if (!number(h + kChecksumAt, kChecksumSize, false, &stored)) return false;
  std::uint64_t sum = 0;
  std::int64_t signed_sum = 0;
  for (std::uint32_t i = 0; i < kBlockBytes; ++i) {
    const bool in_field = i >= kChecksumAt && i < kChecksumAt + kChecksumSize;
    const std::uint8_t b = in_field ? static_cast<std::uint8_t>(' ') : h[i];
    sum += b;
    signed_sum += static_cast<std::int8_t>(b);
  }
  return stored == sum || static_cast<std::int64_t>(stored) == signed_sum;
}

// Whether n bytes at p start with a tar header.
TANDEM_HD bool looks_like_tar(const std::uint8_t* p, std::uint64_t n) {
  return p && n >= kBlockBytes && !zero_block(p) && checksum_holds(p);
}

}  // namespace tandem::tar_body
