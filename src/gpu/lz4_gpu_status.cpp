// Host-side pieces of the GPU API that need no device: names, size queries.
#include "gpu/lz4_gpu_encode.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

const char* item_status_name(ItemStatus status) {
  switch (status) {
    case ItemStatus::ok: return "ok";
    case ItemStatus::incompressible: return "incompressible";
    case ItemStatus::corrupt_token: return "corrupt_token";
    case ItemStatus::offset_out_of_range: return "offset_out_of_range";
    case ItemStatus::output_overflow: return "output_overflow";
    case ItemStatus::literal_past_input_end: return "literal_past_input_end";
    case ItemStatus::match_past_output_end: return "match_past_output_end";
    case ItemStatus::invalid_item: return "invalid_item";
    case ItemStatus::bad_record: return "bad_record";
  }
  return "unknown";
}

Status item_status_to_status(ItemStatus status) {
  switch (status) {
    case ItemStatus::ok:
    case ItemStatus::incompressible: return {};
    case ItemStatus::corrupt_token: return {StatusCode::bad_data, "malformed LZ4 sequence"};
    case ItemStatus::offset_out_of_range: return {StatusCode::bad_data, "LZ4 match offset out of range"};
    case ItemStatus::output_overflow: return {StatusCode::output_too_small, "LZ4 block does not fit its output"};
    case ItemStatus::literal_past_input_end: return {StatusCode::bad_data, "LZ4 literal run past the end of the block"};
    case ItemStatus::match_past_output_end: return {StatusCode::output_too_small, "LZ4 match past the end of the output"};
    case ItemStatus::invalid_item: return {StatusCode::invalid_argument, "item too large or null"};
    case ItemStatus::bad_record: return {StatusCode::bad_data, "page record does not fit its kind or page"};
  }
  return {StatusCode::invalid_argument, "unknown item status"};
}

std::size_t lz4_max_compressed_size(std::size_t input_size) {
  if (input_size > kMaxItemSize) return 0;
  return lz4k::max_block_size(input_size);
}

Status lz4_compress_temp_size(std::size_t num_items, std::size_t max_item_size, std::size_t* temp_bytes) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  if (max_item_size > kMaxItemSize) return {StatusCode::invalid_argument, "item larger than kMaxItemSize"};
  lz4k::EncodeTemp layout;
  if (!lz4k::encode_temp_layout(num_items, max_item_size, &layout)) return {StatusCode::invalid_argument, "too many items"};
  *temp_bytes = layout.total_bytes;
  return {};
}

Status lz4_decompress_temp_size(std::size_t, std::size_t, std::size_t* temp_bytes) {
  if (!temp_bytes) return {StatusCode::invalid_argument, "null temp_bytes"};
  *temp_bytes = 0;
  return {};
}

}  // namespace tandem::gpu
