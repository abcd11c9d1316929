// Output buffers for the fuzz targets that are followed by guard bytes (a
// write past the capacity changes them, with or without ASan), and an LZ4
// block encoder run into one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_check.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::fuzz {

inline constexpr std::size_t kGuard = 64;
inline constexpr std::uint8_t kGuardValue = 0xA5;

// `cap` bytes of `fill`, then kGuard guard bytes.
inline std::vector<std::uint8_t> guarded_buffer(std::size_t cap, std::uint8_t fill) {
  std::vector<std::uint8_t> buf(cap + kGuard, kGuardValue);
  std::fill_n(buf.begin(), cap, fill);
  return buf;
}

// Whether the n bytes at b are all guard bytes.
inline bool guard_intact(const std::uint8_t* b, std::size_t n) {
  return std::all_of(b, b + n, [](std::uint8_t x) { return x == kGuardValue; });
}

// Whether the bytes of buf past its first `cap` are all guard bytes.
inline bool guard_intact(const std::vector<std::uint8_t>& buf, std::size_t cap) {
  return guard_intact(buf.data() + cap, buf.size() - cap);
}

// What an LZ4 block encoder gave.
struct Encoded {
  gpu::ItemStatus status;
  std::size_t size;                 // as the encoder set it
  std::vector<std::uint8_t> block;  // its first `size` bytes, when ok or incompressible
};

// Runs fn(in, n, out, cap, &size), an LZ4 block encoder, into `cap` bytes of
// `fill` followed by guard bytes, with size set to `size_before` first.
// Properties: the guard is intact; a block (ok or incompressible) fits cap.
template <class Encode>
Encoded encode_guarded(Encode&& fn, const std::uint8_t* in, std::size_t n, std::size_t cap, std::uint8_t fill,
                       std::size_t size_before) {
  std::vector<std::uint8_t> buf = guarded_buffer(cap, fill);
  std::size_t size = size_before;
  const gpu::ItemStatus st = fn(in, n, buf.data(), cap, &size);
  FUZZ_ASSERT(guard_intact(buf, cap));
  Encoded e{st, size, {}};
  if (st == gpu::ItemStatus::ok || st == gpu::ItemStatus::incompressible) {
    FUZZ_ASSERT(size <= cap);
    e.block.assign(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(size));
  }
  return e;
}

}  // namespace tandem::fuzz
