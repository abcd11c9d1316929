// The parts of gpu/inflate_gpu.hpp that every build has: the CPU emulation of
// the batched kernel and the status mapping.
#include <memory>
#include <vector>

#include "gpu/inflate_gpu.hpp"

namespace tandem::gpu {

void inflate_emulated(const void* const* in_ptrs, const std::size_t* in_sizes, std::size_t num_items,
                      void* const* out_ptrs, const std::size_t* out_capacities, std::size_t* out_sizes,
                      InflateStatus* statuses, InflateEnd* ends, std::size_t* in_used,
                      const InflateSegments& segments) {
  auto tables = std::make_unique<inflate::InflateTables>();
  auto shared = std::make_unique<inflate::SegmentShared>();
  std::vector<SegmentMatch> records;
  InflateSegments host = segments;
  host.max_capacity = kMaxItemSize;
  for (std::size_t i = 0; i < num_items; ++i) {
    inflate::InflateResult r;
    if (in_sizes[i] > kMaxItemSize || out_capacities[i] > kMaxItemSize) {
      r.status = InflateStatus::invalid_item;
    } else {
      const std::uint32_t count = inflate_segment_count(host, out_capacities[i]);
      if (count != 0) records.resize(inflate::segment_records(out_capacities[i]));
      const inflate::SegmentStarts starts{count ? segments.d_starts + i * segments.per_item : nullptr, count,
                                          segments.segment_bytes};
      r = inflate::inflate_segmented(simt::Team<inflate::kSegmentWarps>{0, 1}, 0,
                                     static_cast<const std::uint8_t*>(in_ptrs[i]), in_sizes[i],
                                     static_cast<std::uint8_t*>(out_ptrs[i]), out_capacities[i], *tables, starts,
                                     count ? records.data() : nullptr, *shared);
    }
    out_sizes[i] = r.out_size;
    if (statuses) statuses[i] = r.status;
    if (ends) ends[i] = r.end;
    if (in_used) in_used[i] = r.in_used;
  }
}

Status inflate_status_to_status(InflateStatus status) {
  switch (status) {
    case InflateStatus::ok: return {};
    case InflateStatus::truncated: return {StatusCode::truncated, "deflate stream ends inside a block"};
    case InflateStatus::output_overflow: return {StatusCode::output_too_small, "inflated data exceeds the output"};
    case InflateStatus::invalid_item: return {StatusCode::invalid_argument, "null pointer or item too large"};
    default: return {StatusCode::bad_data, inflate::inflate_status_name(status)};
  }
}

}  // namespace tandem::gpu
