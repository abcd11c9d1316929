// The GPU deflate encoder's passes (gpu/deflate_enc_body.hpp) run one after
// another on the CPU for one item: the bytes the GPU writes for it.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "gpu/deflate_gpu.hpp"

namespace tandem::gpu {

namespace enc = deflate_enc;

Status deflate_compress_emulated(const std::uint8_t* in, std::size_t n, std::vector<std::uint8_t>* out,
                                 const enc::MatchParams& params) {
  if (out == nullptr || (in == nullptr && n != 0)) return {StatusCode::invalid_argument, "null buffer"};
  if (n > kMaxDeflateItem) return {StatusCode::invalid_argument, "item larger than kMaxDeflateItem"};
  if (!enc::params_valid(params)) return {StatusCode::invalid_argument, "match finder parameters out of range"};
  const std::uint32_t seg = params.segment_size;

  const std::uint32_t size = static_cast<std::uint32_t>(n);
  const std::size_t segments = enc::segment_count(n, params);
  std::vector<std::uint32_t> tokens(segments * seg);
  std::vector<std::uint32_t> counts(segments);
  std::vector<std::uint32_t> hists(segments * enc::kHistSize);
  std::vector<std::uint16_t> head(std::size_t{1} << params.hash_log);
  std::vector<std::uint16_t> prev(params.prime_bytes + seg);
  for (std::size_t s = 0; s < segments; ++s) {
    const std::uint32_t begin = static_cast<std::uint32_t>(s * seg);
    const std::uint32_t end = std::min<std::uint32_t>(size, begin + seg);
    counts[s] = enc::find_segment(in, size, begin, end, params, head.data(), prev.data(), tokens.data() + s * seg,
                                  hists.data() + s * enc::kHistSize);
  }
  std::vector<std::uint32_t> hist(enc::kHistSize, 0);
  for (std::size_t s = 0; s < segments; ++s)
    for (int i = 0; i < enc::kHistSize; ++i) hist[i] += hists[s * enc::kHistSize + i];
  enc::Plan plan;
  enc::plan_item(size, hist.data(), &plan);

  std::vector<std::uint32_t> words(enc::item_words(n), 0);
  std::uint64_t at = plan.header_bits;  // the prefix sum of the segments' bits
  for (std::size_t s = 0; s < segments; ++s) {
    const std::uint32_t* t = tokens.data() + s * seg;
    enc::pack_segment(plan, t, counts[s], words.data(), at);
    at += enc::segment_bits(plan, t, counts[s]);
  }
  enc::finish_words(plan, words.data());
  out->resize(plan.out_bytes);
  for (std::uint64_t k = 0; k < plan.out_bytes; ++k) (*out)[k] = enc::output_byte(plan, in, size, words.data(), k);
  return {};
}

}  // namespace tandem::gpu
