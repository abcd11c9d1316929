// Fuzz target: one raw LZ4 block through decompress_batch.
//
// Input: 2 bytes (little-endian) choose the output capacity, the rest is the
// block. The output buffer is a heap allocation of exactly that capacity, so
// ASan catches a write past it. The result is compared with liblz4's safe
// decoder, the reference for the block format: both accept or both refuse,
// and both produce the same bytes.
#include <lz4.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "fuzz_check.hpp"
#include "tandem/tandem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t cap = static_cast<std::size_t>(data[0]) | static_cast<std::size_t>(data[1]) << 8;
  const std::size_t n = size - 2;
  // The block in its own exact-size allocation, so reads past it are caught too.
  std::unique_ptr<std::uint8_t[]> block(new std::uint8_t[n ? n : 1]);
  if (n) std::memcpy(block.get(), data + 2, n);
  std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[cap ? cap : 1]);

  tandem::ConstBuffer in{block.get(), n};
  tandem::MutableBuffer ob{out.get(), cap};
  tandem::ItemResult result;
  tandem::BatchOptions o;
  o.backend = tandem::Backend::cpu;
  o.threads = 1;
  const tandem::Status st = tandem::decompress_batch(tandem::Codec::lz4, {&in, 1}, {&ob, 1}, {&result, 1}, o);
  FUZZ_ASSERT(st.code == result.status.code);  // a batch of one reports its item
  FUZZ_ASSERT(!st.ok() || result.size <= cap);

  std::unique_ptr<char[]> ref(new char[cap ? cap : 1]);
  const int r = LZ4_decompress_safe(reinterpret_cast<const char*>(block.get()), ref.get(), static_cast<int>(n),
                                    static_cast<int>(cap));
  FUZZ_ASSERT((r >= 0) == st.ok());  // tandem and liblz4 agree on validity
  if (r >= 0) {
    FUZZ_ASSERT(static_cast<std::size_t>(r) == result.size);
    FUZZ_ASSERT(r == 0 || std::memcmp(ref.get(), out.get(), static_cast<std::size_t>(r)) == 0);
  }
  return 0;
}
