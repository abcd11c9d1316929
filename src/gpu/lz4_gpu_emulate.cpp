// The GPU kernels' bodies, run on the CPU through simt::Warp's host form.
#include "gpu/lz4_gpu_emulate.hpp"

#include <memory>
#include <vector>

#include "gpu/lz4_gpu_decode.hpp"
#include "gpu/lz4_gpu_encode.hpp"

namespace tandem::gpu {

namespace {
std::uint32_t clamp_capacity(std::size_t capacity, std::size_t most) {
  return static_cast<std::uint32_t>(capacity < most ? capacity : most);
}
}  // namespace

ItemStatus lz4_decode_block_emulated(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                     std::size_t capacity, std::size_t* out_size, DecodeShape shape) {
  *out_size = 0;
  if (in_size > kMaxItemSize || (!in && in_size) || (!out && capacity)) return ItemStatus::invalid_item;
  const std::uint32_t n = static_cast<std::uint32_t>(in_size);
  const std::uint32_t cap = clamp_capacity(capacity, kMaxItemSize);
  std::uint32_t size = 0;
  ItemStatus status;
  if (shape == DecodeShape::warp) {
    status = lz4k::decode_block_warp(simt::Warp{}, in, n, out, cap, &size);
  } else {
    const auto shared = std::make_unique<lz4k::DecodeShared>();
    status = lz4k::decode_block(simt::Block<lz4k::kDecodeWarps>{}, *shared, in, n, out, cap, &size);
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
  const std::uint32_t cap = clamp_capacity(capacity, lz4_max_compressed_size(kMaxItemSize));
  std::uint32_t size = 0;
  ItemStatus status;
  std::vector<std::uint32_t> table(lz4k::table_bytes(2) / 4);
  status = lz4k::encode_block_any(w, in, n, out, cap, table.data(), &size);
  *out_size = size;
  return status;
}

}  // namespace tandem::gpu
