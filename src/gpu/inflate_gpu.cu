// The batched inflate of gpu/inflate_gpu.hpp on CUDA: one kernel, a warp per
// item. The warp runs inflate_body.hpp's warp form: every lane parses the
// same bits with the same tables (so the parse never diverges), the tables
// sit in shared memory (one set per item, about 4.9 KiB), and the lanes
// share the match and stored-block writes; with segment starts, the lanes
// decode an item's segments at once (inflate_segmented), a team of two warps
// an item when items may have more than 32 segments. Nothing runs on the
// host but the argument checks and the launch.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/gpu_memory.cuh"
#include "gpu/inflate_body.hpp"
#include "gpu/inflate_gpu.hpp"

namespace tandem::gpu {

namespace {

constexpr int kWarpThreads = 32;
constexpr int kWarpsPerBlock = 4;
constexpr int kThreads = kWarpsPerBlock * kWarpThreads;

// A team of W warps per item, kWarpsPerBlock / W items a block: one warp
// without segment starts or with at most 32 segments an item, else
// inflate::kSegmentWarps (a lane per segment).
template <int W>
__global__ void __launch_bounds__(kThreads) inflate_kernel(const void* const* in_ptrs, const std::size_t* in_sizes,
                                                           std::size_t num_items, void* const* out_ptrs,
                                                           const std::size_t* out_capacities, std::size_t* out_sizes,
                                                           InflateStatus* statuses, InflateEnd* ends,
                                                           std::size_t* in_used, InflateSegments segments,
                                                           SegmentMatch* records, std::size_t records_per_item) {
  constexpr int kTeams = kWarpsPerBlock / W;
  __shared__ inflate::InflateTables tables[kTeams];
  __shared__ inflate::SegmentShared shared[kTeams];
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const int team = warp / W;
  const std::size_t item = static_cast<std::size_t>(blockIdx.x) * kTeams + static_cast<std::size_t>(team);
  if (item >= num_items) return;  // the whole team
  const std::size_t in_size = in_sizes[item];
  const std::size_t capacity = out_capacities[item];
  inflate::InflateResult r;
  if (in_size > kMaxItemSize || capacity > kMaxItemSize) {
    r.status = InflateStatus::invalid_item;
  } else {
    const std::uint32_t count = inflate_segment_count(segments, capacity);
    const inflate::SegmentStarts starts{count ? segments.d_starts + item * segments.per_item : nullptr, count,
                                        segments.segment_bytes};
    r = inflate::inflate_segmented(simt::Team<W>{team * W, 1 + team}, warp,
                                   static_cast<const std::uint8_t*>(in_ptrs[item]), in_size,
                                   static_cast<std::uint8_t*>(out_ptrs[item]), capacity, tables[team], starts,
                                   count ? records + item * records_per_item : nullptr, shared[team]);
  }
  if (threadIdx.x % (W * kWarpThreads) == 0) {
    out_sizes[item] = r.out_size;
    if (statuses) statuses[item] = r.status;
    if (ends) ends[item] = r.end;
    if (in_used) in_used[item] = r.in_used;
  }
}

}  // namespace

Status inflate_temp_size(std::size_t num_items, std::size_t max_output_size, std::size_t* temp_bytes) {
  if (temp_bytes == nullptr) return {StatusCode::invalid_argument, "temp_bytes is null"};
  if (max_output_size > kMaxItemSize) return {StatusCode::invalid_argument, "max_output_size over kMaxItemSize"};
  const std::size_t per_item = inflate::segment_records(max_output_size) * sizeof(SegmentMatch);
  if (num_items > (std::size_t{1} << 62) / per_item) return {StatusCode::invalid_argument, "batch too large"};
  *temp_bytes = num_items * per_item;
  return {};
}

Status inflate_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t num_items, void* d_temp,
                     std::size_t temp_bytes, void* const* d_out_ptrs, const std::size_t* d_out_capacities,
                     std::size_t* d_out_sizes, InflateStatus* d_statuses, InflateEnd* d_ends, std::size_t* d_in_used,
                     Stream stream, const InflateSegments& segments) {
  if (num_items == 0) return {};
  if (!d_in_ptrs || !d_in_sizes || !d_out_ptrs || !d_out_capacities || !d_out_sizes)
    return {StatusCode::invalid_argument, "a required device array is null"};
  std::size_t records_per_item = 0;
  if (segments.d_starts != nullptr) {
    std::size_t need = 0;
    if (Status s = inflate_temp_size(num_items, segments.max_capacity, &need); !s) return s;
    if (d_temp == nullptr || temp_bytes < need)
      return {StatusCode::invalid_argument, "temporary storage too small for the segment starts"};
    records_per_item = inflate::segment_records(segments.max_capacity);
  }
  const auto launch = [&](auto kernel, int warps_per_item) {
    const std::size_t per_block = kWarpsPerBlock / warps_per_item;
    const std::size_t blocks = (num_items + per_block - 1) / per_block;
    if (blocks > 0x7fffffffu) return Status{StatusCode::invalid_argument, "too many items for one launch"};
    kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        d_in_ptrs, d_in_sizes, num_items, d_out_ptrs, d_out_capacities, d_out_sizes, d_statuses, d_ends, d_in_used,
        segments, static_cast<SegmentMatch*>(d_temp), records_per_item);
    return launch_status();
  };
  const bool team = segments.d_starts != nullptr &&
                    segments.max_capacity > std::size_t{kWarpThreads} * segments.segment_bytes;
  if (team) return launch(inflate_kernel<inflate::kSegmentWarps>, inflate::kSegmentWarps);
  return launch(inflate_kernel<1>, 1);
}

}  // namespace tandem::gpu
