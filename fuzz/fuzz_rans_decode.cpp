// Fuzz target: decoding tandem rANS streams (cpu/rans_cpu.hpp, whose chunk
// and table code is the GPU kernels' own, gpu/rans_body.hpp), from streams
// taken as they are and from valid streams with edits.
//
// Input: a first byte; bit 0 picks the mode.
//   raw:     the rest of the input is the stream; the output capacity is
//            the next two bytes times 16 (up to 1 MiB).
//   edited:  bits 1-7 and the next bytes pick the parameters and a data
//            length (up to 64 KiB); data built from a pattern of input bytes
//            is encoded, then byte edits (position, xor) and an optional cut
//            or new length field apply.
// The stream sits in an allocation of exactly its size (ASan sees a read
// past it); the output is followed by guard bytes.
//
// Properties: no crash; the guard stays intact; every status is one a
// decoder may give and agrees with the format's error; decoding twice into
// differently filled outputs gives the same verdict and, when ok, the same
// bytes; the vector decoder gives the same verdict; an unedited stream
// decodes to its data; encoding is deterministic.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu/rans_cpu.hpp"
#include "fuzz_check.hpp"
#include "fuzz_guard.hpp"

namespace {

using tandem::StatusCode;
namespace rans = tandem::rans;

struct Verdict {
  tandem::Status status;
  rans::Error error;
  std::vector<std::uint8_t> out;
};

Verdict decode(const std::vector<std::uint8_t>& stream, std::size_t cap, std::uint8_t fill) {
  std::unique_ptr<std::uint8_t[]> in(new std::uint8_t[stream.size() ? stream.size() : 1]);
  if (!stream.empty()) std::memcpy(in.get(), stream.data(), stream.size());
  std::vector<std::uint8_t> buf = tandem::fuzz::guarded_buffer(cap, fill);
  std::size_t size = 12345;
  Verdict v;
  v.error = rans::Error::invalid_item;
  v.status = rans::decode({in.get(), stream.size()}, {buf.data(), cap}, &size, &v.error);
  FUZZ_ASSERT(tandem::fuzz::guard_intact(buf, cap));
  FUZZ_ASSERT(v.status.ok() == (v.error == rans::Error::ok));
  FUZZ_ASSERT(v.status.code == rans::to_status(v.error).code);
  switch (v.status.code) {
    case StatusCode::ok:
    case StatusCode::bad_data:
    case StatusCode::truncated:
    case StatusCode::unsupported:
    case StatusCode::output_too_small: break;
    default: FUZZ_ASSERT(false);
  }
  if (v.status.ok()) {
    FUZZ_ASSERT(size <= cap);
    v.out.assign(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(size));
  } else {
    FUZZ_ASSERT(size == 0);
  }
  return v;
}

void check(const std::vector<std::uint8_t>& stream, std::size_t cap, const std::vector<std::uint8_t>* original) {
  const Verdict a = decode(stream, cap, 0x00);
  const Verdict b = decode(stream, cap, 0xFF);
  FUZZ_ASSERT(a.error == b.error);
  FUZZ_ASSERT(a.out == b.out);
  std::vector<std::uint8_t> out;
  const tandem::Status v = rans::decode(stream, &out, cap);
  if (a.status.code == StatusCode::output_too_small) {
    FUZZ_ASSERT(v.code == StatusCode::output_limit);
  } else {
    FUZZ_ASSERT(v.code == a.status.code);
    FUZZ_ASSERT(out == a.out);
  }
  if (original) {
    FUZZ_ASSERT(a.status.ok());
    FUZZ_ASSERT(a.out == *original);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  fuzz::Reader in{data, size};
  const std::uint8_t head = in.byte();
  if (!(head & 1)) {
    const std::size_t cap = std::size_t{in.le(2)} * 16;
    check(std::vector<std::uint8_t>(data + in.at, data + size), cap, nullptr);
    return 0;
  }
  rans::Params p;
  p.chunk_kib = 1 + ((head >> 1) & 3) * ((head >> 3) & 1 ? 5 : 1);  // 1..4, or 1, 6, 11, 16
  p.scale_bits = rans::kMinScaleBits + in.byte() % (rans::kMaxScaleBits - rans::kMinScaleBits + 1);
  p.lanes = 1 + in.byte() % rans::kMaxLanes;
  const std::size_t n = in.le(2);
  const std::size_t k = 1 + in.byte() % 32;
  std::vector<std::uint8_t> pattern(k);
  for (std::uint8_t& b : pattern) b = in.byte();
  const std::uint8_t spread = in.byte();
  std::vector<std::uint8_t> original(n);
  for (std::size_t i = 0; i < n; ++i) {
    original[i] = static_cast<std::uint8_t>(pattern[(i * 2654435761u >> (spread % 24)) % k] + (i % (spread | 1) == 0));
  }
  std::vector<std::uint8_t> stream, again;
  FUZZ_ASSERT(rans::encode(original, p, &stream).ok());
  FUZZ_ASSERT(stream.size() <= rans::max_encoded_size(n, p));
  FUZZ_ASSERT(rans::encode(original, p, &again).ok());
  FUZZ_ASSERT(stream == again);

  bool edited = in.edit(&stream);
  const std::uint8_t flags = in.byte();
  if (flags & 1) {
    const std::size_t cut = in.le(3) % (stream.size() + 1);
    edited = edited || cut < stream.size();
    stream.resize(cut);
  }
  if ((flags & 2) && stream.size() >= 12) {
    const std::uint32_t length = in.le(3);
    edited = edited || length != n;
    for (int i = 0; i < 4; ++i) stream[8 + i] = static_cast<std::uint8_t>(length >> (8 * i));
  }
  const std::size_t cap = (flags & 4) ? in.le(2) : n;
  check(stream, cap, edited || cap < n ? nullptr : &original);
  return 0;
}
