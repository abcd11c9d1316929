// Fuzz target: the segmented inflate (gpu/inflate_body.hpp's
// inflate_segmented) gives the warp form's status, sizes and bytes whatever
// the stream and whatever the segment starts, and never writes past its
// capacity.
//
// Input: a control byte, then data of up to 96 KiB. The data is compressed
// by the GPU deflate encoder's emulation, which also gives the segment
// starts. The control byte picks what is inflated: the chunk as written
// (which must give back the data, by segments when it is Huffman-coded in
// 2 to kMaxSegments segments), the chunk with bytes flipped, the chunk cut
// short, the starts moved, a capacity above or below the data's size, or
// the data itself as a stream under the chunk's starts.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_guard.hpp"
#include "gpu/deflate_gpu.hpp"
#include "gpu/inflate_body.hpp"

namespace {

namespace inf = tandem::gpu::inflate;
using tandem::fuzz::guard_intact;
using tandem::fuzz::guarded_buffer;

struct Outcome {
  inf::InflateResult r;
  std::vector<std::uint8_t> out;
};

Outcome inflate(const std::vector<std::uint8_t>& in, std::size_t cap, const std::vector<std::uint32_t>* starts) {
  Outcome o;
  o.out = guarded_buffer(cap, 0);
  auto tables = std::make_unique<inf::InflateTables>();
  std::vector<inf::SegmentMatch> recs(inf::segment_records(cap));
  const std::uint8_t* src = in.empty() ? nullptr : in.data();
  if (starts == nullptr) {
    o.r = inf::inflate_stream(src, in.size(), o.out.data(), cap, *tables, inf::WarpWriter{});
  } else {
    const auto count = static_cast<std::uint32_t>((cap + tandem::gpu::kDeflateSegmentBytes - 1) /
                                                  tandem::gpu::kDeflateSegmentBytes);
    const inf::SegmentStarts seg{starts->data(), count <= starts->size() ? count : 0u,
                                 tandem::gpu::kDeflateSegmentBytes};
    auto shared = std::make_unique<inf::SegmentShared>();
    o.r = inf::inflate_segmented(tandem::gpu::simt::Team<inf::kSegmentWarps>{0, 1}, 0, src, in.size(), o.out.data(),
                                 cap, *tables, seg, recs.data(), *shared);
  }
  FUZZ_ASSERT(guard_intact(o.out, cap));
  FUZZ_ASSERT(o.r.out_size <= cap);
  o.out.resize(o.r.out_size);
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t control = data[0];
  const std::size_t n = std::min<std::size_t>(size - 1, 96u << 10);
  const std::uint8_t* d = data + 1;
  std::vector<std::uint8_t> chunk;
  std::vector<std::uint32_t> starts;
  FUZZ_ASSERT(tandem::gpu::deflate_compress_emulated(d, n, &chunk, &starts).ok());
  std::vector<std::uint8_t> in = chunk;
  std::size_t cap = n;
  // Edits drawn from the data's bytes, so that the fuzzer steers them.
  auto pick = [&](std::size_t k) { return n ? static_cast<std::size_t>(d[k % n]) * 251u + k : k; };
  switch (control % 7) {
    case 0:
      break;
    case 1:
      for (std::size_t e = 0; e < 3 && !in.empty(); ++e) in[pick(e) % in.size()] ^= static_cast<std::uint8_t>(1u << (e + control % 5));
      break;
    case 2:
      in.resize(in.empty() ? 0 : pick(0) % in.size());
      break;
    case 3:
      if (!starts.empty()) starts[pick(1) % starts.size()] += static_cast<std::uint32_t>(pick(2) % 64) - 32u;
      break;
    case 4:
      cap = n + pick(3) % 9000;
      starts.resize(starts.size() + 2, starts.empty() ? 0u : starts.back());
      break;
    case 5:
      cap = n ? n - pick(4) % n : 0;
      break;
    default:
      in.assign(d, d + n);
      break;
  }
  const Outcome seg = inflate(in, cap, &starts);
  const Outcome warp = inflate(in, cap, nullptr);
  FUZZ_ASSERT(seg.r.status == warp.r.status);
  FUZZ_ASSERT(seg.r.out_size == warp.r.out_size);
  FUZZ_ASSERT(seg.r.in_used == warp.r.in_used);
  FUZZ_ASSERT(seg.r.status != inf::InflateStatus::ok || seg.r.end == warp.r.end);
  FUZZ_ASSERT(seg.out == warp.out);
  if (control % 7 == 0) {
    FUZZ_ASSERT(seg.r.status == inf::InflateStatus::ok);
    FUZZ_ASSERT(seg.out.size() == n && (n == 0 || std::memcmp(seg.out.data(), d, n) == 0));
    const bool huffman = !starts.empty() && starts[0] != 0;
    FUZZ_ASSERT(seg.r.by_segments == (huffman && starts.size() >= 2 && starts.size() <= inf::kMaxSegments));
  }
  return 0;
}
