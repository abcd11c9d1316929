// Names and library-wide statuses of the lzr format's errors, and its size bound.
#include "format/lzr_format.hpp"

namespace tandem::lzr {

const char* error_name(Error e) {
  switch (e) {
    case Error::ok: return "ok";
    case Error::truncated: return "truncated";
    case Error::bad_magic: return "bad_magic";
    case Error::unsupported_version: return "unsupported_version";
    case Error::bad_header: return "bad_header";
    case Error::trailing_bytes: return "trailing_bytes";
    case Error::bad_block: return "bad_block";
    case Error::bad_stream: return "bad_stream";
    case Error::bad_code: return "bad_code";
    case Error::bad_sequence: return "bad_sequence";
    case Error::bad_totals: return "bad_totals";
    case Error::output_too_small: return "output_too_small";
    case Error::invalid_item: return "invalid_item";
  }
  return "unknown";
}

Status to_status(Error e) {
  switch (e) {
    case Error::ok: return {};
    case Error::truncated: return {StatusCode::truncated, "lzr frame ends inside its header, directory or a block"};
    case Error::bad_magic: return {StatusCode::bad_data, "not an lzr frame (bad magic)"};
    case Error::unsupported_version: return {StatusCode::unsupported, "lzr frame of an unknown version"};
    case Error::bad_header: return {StatusCode::bad_data, "lzr block size, reserved bytes or block count wrong"};
    case Error::trailing_bytes: return {StatusCode::bad_data, "bytes follow the lzr frame's last block"};
    case Error::bad_block: return {StatusCode::bad_data, "lzr block header disagrees with the block's size"};
    case Error::bad_stream: return {StatusCode::bad_data, "lzr stream is malformed or has the wrong length"};
    case Error::bad_code: return {StatusCode::bad_data, "lzr length code invalid or its extension bytes run out"};
    case Error::bad_sequence: return {StatusCode::bad_data, "lzr match or literal run reaches outside the block"};
    case Error::bad_totals: return {StatusCode::bad_data, "lzr sequences do not use exactly the block's streams"};
    case Error::output_too_small: return {StatusCode::output_too_small, "lzr frame decodes to more than the output holds"};
    case Error::invalid_item: return {StatusCode::invalid_argument, "null pointer or item too large"};
  }
  return {StatusCode::bad_data, "unknown lzr error"};
}

std::size_t max_encoded_size(std::uint64_t n, const Params& params) {
  if (!params_valid(params) || (n >> 48) != 0) return 0;
  return static_cast<std::size_t>(frame_bound(n, params.block_log));
}

}  // namespace tandem::lzr
