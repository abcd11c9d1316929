// Fuzz target: the archive scanner (tandem/scan.hpp) on arbitrary bytes,
// under small limits, so that gzip, LZ4, ZIP and tar layers found in the
// input (or made by libFuzzer from seeds) are walked in any nesting.
// Invariants: no crash and no read outside the input (an exact-size copy,
// so ASan sees it); every ok entry's bytes lie inside the result, back to
// back in order; entries that failed hold no bytes; no more entries than
// the limit; layers within the depth limit.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "fuzz_check.hpp"
#include "tandem/scan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  tandem::ScanLimits limits;
  limits.max_output = 1u << 20;
  limits.max_ratio = 200;
  limits.max_depth = 4;
  limits.max_entries = 256;
  tandem::ScanResult r;
  const tandem::Status s = tandem::scan({copy.get(), size}, "input", limits, &r);
  FUZZ_ASSERT(s.ok() || s.code == tandem::StatusCode::bad_data);
  FUZZ_ASSERT(r.entries.size() <= limits.max_entries);
  std::uint64_t at = 0;
  for (const tandem::ScanEntry& e : r.entries) {
    FUZZ_ASSERT(e.offset == at);
    FUZZ_ASSERT(e.status.ok() || e.size == 0);
    FUZZ_ASSERT(e.layer >= 0 && e.layer <= limits.max_depth + 1);
    at += e.size;
  }
  FUZZ_ASSERT(at == r.bytes.size());
  return 0;
}
