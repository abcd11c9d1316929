// FUZZ_ASSERT: a property of a fuzz target that must hold for every input.
// On failure it names the property and aborts, which libFuzzer (and the
// standalone driver, by dying) reports as a crash with the input saved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

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
};

}  // namespace fuzz
