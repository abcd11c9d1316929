// Fuzz target: the gzip, zlib and raw deflate reader of tandem/deflate.hpp.
//
// The first byte picks what the rest is:
//   0 (mod 4)  a stream to read as it is (container detected), with a 1 MiB
//              output cap, checksums verified and not: a stream that verifies
//              also reads without verification, to the same bytes;
//   1, 2, 3    content that tandem compresses (gzip with its index, zlib,
//              raw; 4 KiB chunks, the level from the second byte), which must
//              read back unchanged; then one bit of the compressed stream,
//              picked by the second byte and the size, is flipped and the
//              result read (no crash, output within the cap).
// Modes 1..3 let the standalone driver, whose seeds are not gzip, reach the
// indexed-chunk, header and trailer checks.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.hpp"
#include "tandem/deflate.hpp"

namespace {

constexpr std::uint64_t kCap = 1u << 20;

tandem::Status read(const std::vector<std::uint8_t>& in, tandem::DeflateContainer c, bool verify,
                    std::vector<std::uint8_t>* out) {
  tandem::DeflateDecodeOptions o;
  o.container = c;
  o.threads = 1;
  o.max_output = kCap;
  o.verify_checksums = verify;
  const tandem::Status s = tandem::deflate_decompress({in.data(), in.size()}, out, o);
  FUZZ_ASSERT(out->size() <= kCap);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int mode = data[0] & 3;
  if (mode == 0) {
    const std::vector<std::uint8_t> in(data + 1, data + size);
    std::vector<std::uint8_t> checked, lax;
    const tandem::Status a = read(in, tandem::DeflateContainer::detect, true, &checked);
    const tandem::Status b = read(in, tandem::DeflateContainer::detect, false, &lax);
    if (a.ok()) {
      FUZZ_ASSERT(b.ok());
      FUZZ_ASSERT(checked == lax);
    }
    return 0;
  }
  const tandem::DeflateContainer c = mode == 1   ? tandem::DeflateContainer::gzip
                                     : mode == 2 ? tandem::DeflateContainer::zlib
                                                 : tandem::DeflateContainer::raw;
  tandem::DeflateOptions o;
  o.container = c;
  o.level = data[1] % 13;
  o.chunk_size = 4096;
  o.threads = 1;
  std::vector<std::uint8_t> z;
  FUZZ_ASSERT(tandem::deflate_compress({data + 2, size - 2}, &z, o).ok());
  const tandem::DeflateContainer read_as = c == tandem::DeflateContainer::raw ? c : tandem::DeflateContainer::detect;
  std::vector<std::uint8_t> back;
  FUZZ_ASSERT(read(z, read_as, true, &back).ok());
  FUZZ_ASSERT(back.size() == size - 2);
  FUZZ_ASSERT(back.empty() || std::memcmp(back.data(), data + 2, back.size()) == 0);
  const std::size_t bit = (static_cast<std::size_t>(data[1]) * 2654435761u + size) % (z.size() * 8);
  z[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
  (void)read(z, read_as, true, &back);
  return 0;
}
