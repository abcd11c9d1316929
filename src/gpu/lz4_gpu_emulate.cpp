// The GPU kernels' bodies, run on the CPU through simt::Warp's host form.
#include "gpu/lz4_gpu_emulate.hpp"

#include <memory>
#include <vector>

#include "gpu/lz4_gpu_decode.hpp"
#include "gpu/lz4_gpu_encode.hpp"
#include "gpu/lz4_gpu_gather.hpp"

namespace tandem::gpu {

namespace {
std::uint32_t clamp_capacity(std::size_t capacity, std::size_t most) {
  return static_cast<std::uint32_t>(capacity < most ? capacity : most);
}

// Runs the host's lanes in `order` while it lives.
class LanesInOrder {
 public:
  explicit LanesInOrder(LaneOrder order) : before_(simt::host_lanes_reversed()) {
    simt::host_lanes_reversed() = order == LaneOrder::down;
  }
  ~LanesInOrder() { simt::host_lanes_reversed() = before_; }
  LanesInOrder(const LanesInOrder&) = delete;
  LanesInOrder& operator=(const LanesInOrder&) = delete;

 private:
  bool before_;
};
}  // namespace

ItemStatus lz4_decode_block_emulated(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                     std::size_t capacity, std::size_t* out_size, DecodeShape shape,
                                     LaneOrder order) {
  *out_size = 0;
  if (in_size > kMaxItemSize || (!in && in_size) || (!out && capacity)) return ItemStatus::invalid_item;
  const std::uint32_t n = static_cast<std::uint32_t>(in_size);
  const std::uint32_t cap = clamp_capacity(capacity, kMaxItemSize);
  std::uint32_t size = 0;
  ItemStatus status;
  const LanesInOrder lanes_in_order(order);
  if (shape == DecodeShape::lanes) {
    status = lz4k::decode_block_lanes(simt::Warp{}, in, n, out, cap, &size);
  } else if (shape == DecodeShape::staged) {
    alignas(16) std::uint8_t stage[lz4k::kLaneStageBytes<lz4k::kStageBytes>];  // as the device's is
    status = lz4k::decode_block_lanes_staged<lz4k::kStageBytes>(simt::Warp{}, stage, in, n, out, cap, &size);
  } else if (shape == DecodeShape::gather) {
    const auto shared = std::make_unique<lz4k::GatherShared>();
    status = lz4k::decode_block_gather(simt::Block<lz4k::kGatherWarps>{}, *shared, in, n, out, cap, &size);
  } else if (shape == DecodeShape::window) {
    const auto shared = std::make_unique<lz4k::WindowShared<lz4k::kWindowWarps>>();
    status = lz4k::decode_block_window(simt::Block<lz4k::kWindowWarps>{}, *shared, in, n, out, cap, &size);
  } else {
    const auto shared = std::make_unique<lz4k::WideShared<lz4k::kWideWarps>>();
    status = lz4k::decode_block_wide(simt::Block<lz4k::kWideWarps>{}, *shared, in, n, out, cap, &size);
  }
  *out_size = size;
  return status;
}

ItemStatus lz4_encode_block_emulated(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                     std::size_t capacity, std::size_t* out_size) {
  *out_size = 0;
  if (in_size > kMaxItemSize || (!in && in_size) || (!out && capacity)) return ItemStatus::invalid_item;
  const simt::Warp w;
  const std::uint32_t n = static_cast<std::uint32_t>(in_size);
  const std::uint32_t cap = clamp_capacity(capacity, lz4k::max_block_size(in_size));
  const std::uint32_t segments = static_cast<std::uint32_t>(lz4k::segment_count(in_size));
  std::vector<lz4k::SeqRecord> records(static_cast<std::size_t>(segments) * lz4k::kMaxSegmentRecords);
  std::vector<lz4k::SegmentSummary> summaries(segments);
  std::vector<std::uint16_t> table(lz4k::table_bytes(lz4k::kLargeHashLog) / 2);
  std::vector<std::uint16_t> primes(segments > 1 ? static_cast<std::size_t>(segments) * lz4k::kPrimeEntries : 0);
  if (segments > 1) {
    std::vector<std::uint32_t> running(lz4k::kPrimeEntries);
    for (std::uint32_t g = 0; g < lz4k::prime_group_count(segments); ++g) {
      lz4k::prime_group(simt::Block<lz4k::kPrimeWarps>{}, in, n, g, running.data(), primes.data());
    }
  }
  for (std::uint32_t s = 0; s < segments; ++s) {
    lz4k::find_segment(w, in, n, s, primes.data(), table.data(),
                       records.data() + static_cast<std::size_t>(s) * lz4k::kMaxSegmentRecords, &summaries[s]);
  }
  // A warp per segment (one for a block without any); the last one answers.
  std::uint32_t size = 0;
  ItemStatus status = ItemStatus::ok;
  for (std::uint32_t s = 0; s < (segments > 0 ? segments : 1); ++s) {
    status = lz4k::emit_segment(w, in, n, out, cap, records.data(), summaries.data(), segments, s, &size);
  }
  *out_size = size;
  return status;
}

}  // namespace tandem::gpu
