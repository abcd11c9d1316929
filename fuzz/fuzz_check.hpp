// FUZZ_ASSERT: a property of a fuzz target that must hold for every input.
// On failure it names the property and aborts, which libFuzzer (and the
// standalone driver, by dying) reports as a crash with the input saved.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_ASSERT(cond)                                                              \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
