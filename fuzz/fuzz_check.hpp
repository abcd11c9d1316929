// FUZZ_ASSERT: a property of a fuzz target that must hold for every input.
// On failure it names the property and aborts, which libFuzzer (and the
// standalone driver, by dying) reports as a crash with the input saved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define FUZZ_ASSERT(cond)                                                              \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace fuzz {

// Takes a fuzz target's input a byte or a little-endian value at a time;
// past its end it gives zeros.
struct Reader {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
  std::uint32_t le(int bytes) {
    std::uint32_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint32_t>(byte()) << (8 * i);
    return v;
  }
  // Up to 3 edits of *b (not empty), each a position and a byte to xor
  // there; true when one changed a byte.
  bool edit(std::vector<std::uint8_t>* b) {
    bool edited = false;
    for (int e = byte() % 4; e > 0; --e) {
      const std::size_t at = le(3) % b->size();
      const std::uint8_t x = byte();
      (*b)[at] ^= x;
      edited = edited || x != 0;
    }
    return edited;
  }
};

}  // namespace fuzz
