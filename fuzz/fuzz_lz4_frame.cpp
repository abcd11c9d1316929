// Fuzz target: the LZ4 frame decoder on arbitrary bytes.
//
// The same input goes through three decoding paths, all on one thread with a
// 1 MiB output cap: the caller-buffer variant (a heap buffer of exactly 1 MiB,
// so ASan sees any write past it), the streaming API into a vector_sink
// capped by max_output, and the vector variant with checksum verification
// off. Besides "no crash, no sanitizer report", the paths must agree:
// the first two succeed or fail together and then produce the same bytes, and
// turning verification off never makes a good frame fail or change.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "tandem/tandem.hpp"

namespace {
constexpr std::size_t kCap = 1u << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::uint8_t* const buffer = new std::uint8_t[kCap];
  const tandem::ConstBuffer in{data, size};

  tandem::Lz4DecodeOptions o;
  o.threads = 1;
  o.backend = tandem::Backend::cpu;

  std::size_t got = 0;
  const tandem::Status a = tandem::lz4_frame_decompress(in, tandem::MutableBuffer{buffer, kCap}, &got, o);
  FUZZ_ASSERT(got <= kCap);

  std::vector<std::uint8_t> streamed;
  tandem::Lz4DecodeOptions capped = o;
  capped.max_output = kCap;
  auto src = tandem::memory_source(in);
  auto sink = tandem::vector_sink(&streamed);
  tandem::StreamStats stats;
  const tandem::Status b = tandem::lz4_decompress_stream(*src, *sink, capped, &stats);
  sink.reset();  // a vector_sink may hold reserved room in the vector until it goes
  FUZZ_ASSERT(streamed.size() <= kCap);

  FUZZ_ASSERT(a.ok() == b.ok());  // the buffer and stream paths agree
  if (a.ok()) {
    FUZZ_ASSERT(got == streamed.size());
    FUZZ_ASSERT(got == 0 || std::memcmp(buffer, streamed.data(), got) == 0);
    FUZZ_ASSERT(stats.bytes_in == size);
    FUZZ_ASSERT(stats.bytes_out == got);
  }

  std::vector<std::uint8_t> lax;
  tandem::Lz4DecodeOptions unchecked = capped;
  unchecked.verify_checksums = false;
  const tandem::Status c = tandem::lz4_frame_decompress(in, &lax, unchecked);
  FUZZ_ASSERT(lax.size() <= kCap);
  if (a.ok()) {
    FUZZ_ASSERT(c.ok());             // a frame that verifies also decodes without verification
    FUZZ_ASSERT(lax == streamed);    // and to the same bytes
  }
  return 0;
}
