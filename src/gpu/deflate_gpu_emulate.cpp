// The GPU deflate encoder's passes (gpu/deflate_enc_body.hpp, with the LZ4
// encoder's prime and find steps) run one after another on the CPU for one
// item, through simt's host warps and blocks: the bytes the GPU writes for it.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "gpu/deflate_gpu.hpp"

namespace tandem::gpu {

namespace enc = deflate_enc;

Status deflate_compress_emulated(const std::uint8_t* in, std::size_t n, std::vector<std::uint8_t>* out,
                                 std::vector<std::uint32_t>* segment_starts) {
  if (out == nullptr || (in == nullptr && n != 0)) return {StatusCode::invalid_argument, "null buffer"};
  if (n > kMaxDeflateItem) return {StatusCode::invalid_argument, "item larger than kMaxDeflateItem"};
  const simt::Warp w;
  const std::uint32_t size = static_cast<std::uint32_t>(n);
  const std::uint32_t segments = static_cast<std::uint32_t>(enc::segment_count(n));

  // 0, 1: the LZ4 encoder's prime tables and records.
  std::vector<lz4k::SeqRecord> records(static_cast<std::size_t>(segments) * enc::kMaxSegmentRecords);
  std::vector<lz4k::SegmentSummary> summaries(segments);
  std::vector<std::uint16_t> table(lz4k::table_bytes(lz4k::kLargeHashLog) / sizeof(std::uint16_t));
  std::vector<std::uint16_t> primes(segments > 1 ? static_cast<std::size_t>(segments) * lz4k::kPrimeEntries : 0);
  if (segments > 1) {
    std::vector<std::uint32_t> running(lz4k::kPrimeEntries);
    for (std::uint32_t g = 0; g < lz4k::prime_group_count(segments); ++g)
      lz4k::prime_group(simt::Block<lz4k::kPrimeWarps>{}, in, size, g, running.data(), primes.data());
  }
  for (std::uint32_t s = 0; s < segments; ++s) {
    lz4k::find_segment(w, in, size, s, primes.data(), table.data(),
                       records.data() + static_cast<std::size_t>(s) * enc::kMaxSegmentRecords, &summaries[s]);
  }

  // 2: tokens and histograms.
  std::vector<std::uint32_t> tokens(static_cast<std::size_t>(segments) * enc::kSegmentSize);
  std::vector<std::uint32_t> counts(segments);
  std::vector<std::uint32_t> seg_hists(static_cast<std::size_t>(segments) * enc::kHistSize);
  std::vector<std::uint32_t> hist(enc::kHistSize);
  for (std::uint32_t s = 0; s < segments; ++s) {
    enc::tokenize_segment(w, in, size, s, records.data() + static_cast<std::size_t>(s) * enc::kMaxSegmentRecords,
                          summaries[s], hist.data(), tokens.data() + static_cast<std::size_t>(s) * enc::kSegmentSize,
                          &counts[s], seg_hists.data() + static_cast<std::size_t>(s) * enc::kHistSize);
  }

  // 3: the plan and the segments' places.
  const auto plan = std::make_unique<enc::Plan>();
  const auto shared = std::make_unique<enc::PlanShared>();
  std::vector<std::uint64_t> seg_at(segments);
  enc::plan_item_block(simt::Block<enc::kPlanWarps>{}, *shared, size, seg_hists.data(), segments, plan.get(),
                       seg_at.data());

  // 4, 5: the codes, then the header, the end and the bytes.
  std::vector<std::uint32_t> words(enc::item_words(n), 0);
  std::uint32_t stage[enc::kStageWords];
  std::vector<std::uint32_t> starts(static_cast<std::size_t>(segments) * enc::kStartsPerSegment, 0);
  for (std::uint32_t s = 0; s < segments; ++s) {
    enc::pack_segment(w, *plan, tokens.data() + static_cast<std::size_t>(s) * enc::kSegmentSize, counts[s],
                      words.data(), seg_at[s], stage,
                      starts.data() + static_cast<std::size_t>(s) * enc::kStartsPerSegment);
  }
  enc::finish_words(*plan, words.data());
  out->resize(plan->out_bytes);
  for (std::uint64_t k = 0; k < plan->out_bytes; ++k) (*out)[k] = enc::output_byte(*plan, in, size, words.data(), k);
  if (segment_starts != nullptr) {
    starts.resize(enc::start_count(n));
    *segment_starts = std::move(starts);
  }
  return {};
}

}  // namespace tandem::gpu
