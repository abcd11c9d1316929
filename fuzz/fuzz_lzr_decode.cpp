// Fuzz target: decoding tandem lzr frames (tandem/lzr.hpp's CPU decoder,
// whose block checks and rebuild are the GPU kernels' own warp bodies,
// gpu/lzr_body.hpp), from frames taken as they are and from valid frames
// with edits.
//
// Input: a first byte; bit 0 picks the mode.
//   raw:     the rest of the input is the frame; the output capacity is the
//            next two bytes times 16 (up to 1 MiB).
//   edited:  bits 1-2 pick the block size, the next bytes a data length (up
//            to 192 KiB) and a pattern; the data is encoded, then byte edits
//            (position, xor) and an optional cut or new length apply.
// The frame sits in an allocation of exactly its size (ASan sees a read past
// it); the output is followed by guard bytes.
//
// Properties: no crash; the guard stays intact; every status is one a
// decoder may give and agrees with the format's error; decoding twice into
// differently filled outputs gives the same verdict and, when ok, the same
// bytes; the vector decoder agrees; an unedited frame decodes to its data;
// encoding is deterministic and within max_encoded_size.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_guard.hpp"
#include "tandem/lzr.hpp"

namespace {

using tandem::StatusCode;
namespace lzr = tandem::lzr;

struct Verdict {
  tandem::Status status;
  lzr::Error error;
  std::vector<std::uint8_t> out;
};

Verdict decode(const std::vector<std::uint8_t>& frame, std::size_t cap, std::uint8_t fill) {
  std::unique_ptr<std::uint8_t[]> in(new std::uint8_t[frame.size() ? frame.size() : 1]);
  if (!frame.empty()) std::memcpy(in.get(), frame.data(), frame.size());
  std::vector<std::uint8_t> buf = tandem::fuzz::guarded_buffer(cap, fill);
  std::size_t size = 12345;
  Verdict v;
  v.error = lzr::Error::invalid_item;
  v.status = lzr::decode({in.get(), frame.size()}, {buf.data(), cap}, &size, &v.error);
  FUZZ_ASSERT(tandem::fuzz::guard_intact(buf, cap));
  FUZZ_ASSERT(v.status.ok() == (v.error == lzr::Error::ok));
  FUZZ_ASSERT(v.status.code == lzr::to_status(v.error).code);
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

void check(const std::vector<std::uint8_t>& frame, std::size_t cap, const std::vector<std::uint8_t>* original) {
  const Verdict a = decode(frame, cap, 0x00);
  const Verdict b = decode(frame, cap, 0xFF);
  FUZZ_ASSERT(a.error == b.error);
  FUZZ_ASSERT(a.out == b.out);
  std::vector<std::uint8_t> out;
  const tandem::Status v = lzr::decode(frame, &out, cap);
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
  lzr::Params p;
  p.block_log = lzr::kMinBlockLog + ((head >> 1) & 3) % (lzr::kMaxBlockLog - lzr::kMinBlockLog + 1);
  const std::size_t n = in.le(3) % (192 * 1024 + 1);
  const std::size_t k = 1 + in.byte() % 32;
  std::vector<std::uint8_t> pattern(k);
  for (std::uint8_t& b : pattern) b = in.byte();
  const std::uint8_t spread = in.byte();
  std::vector<std::uint8_t> original(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Repeats of the pattern with some drift: matches at many offsets.
    original[i] = static_cast<std::uint8_t>(pattern[(i + i / (1 + spread % 64)) % k] + (i % (spread | 1) == 0));
  }
  std::vector<std::uint8_t> frame, again;
  FUZZ_ASSERT(lzr::encode(original, p, &frame).ok());
  FUZZ_ASSERT(frame.size() <= lzr::max_encoded_size(n, p));
  FUZZ_ASSERT(lzr::encode(original, p, &again).ok());
  FUZZ_ASSERT(frame == again);

  bool edited = in.edit(&frame);
  const std::uint8_t flags = in.byte();
  if (flags & 1) {
    const std::size_t cut = in.le(3) % (frame.size() + 1);
    edited = edited || cut < frame.size();
    frame.resize(cut);
  }
  if ((flags & 2) && frame.size() >= 16) {
    const std::uint32_t length = in.le(3);
    edited = edited || length != n;
    for (int i = 0; i < 4; ++i) frame[8 + i] = static_cast<std::uint8_t>(length >> (8 * i));
  }
  const std::size_t cap = (flags & 4) ? in.le(3) % (1u << 20) : n;
  check(frame, cap, edited || cap < n ? nullptr : &original);
  return 0;
}
