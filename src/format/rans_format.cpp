// Names and library-wide statuses of the rANS format's errors.
#include "format/rans_format.hpp"

namespace tandem::rans {

const char* error_name(Error e) {
  switch (e) {
    case Error::ok: return "ok";
    case Error::truncated: return "truncated";
    case Error::bad_magic: return "bad_magic";
    case Error::unsupported_version: return "unsupported_version";
    case Error::bad_params: return "bad_params";
    case Error::bad_chunk_count: return "bad_chunk_count";
    case Error::bad_table: return "bad_table";
    case Error::bad_directory: return "bad_directory";
    case Error::trailing_bytes: return "trailing_bytes";
    case Error::bad_states: return "bad_states";
    case Error::words_exhausted: return "words_exhausted";
    case Error::words_left_over: return "words_left_over";
    case Error::bad_final_state: return "bad_final_state";
    case Error::output_too_small: return "output_too_small";
    case Error::invalid_item: return "invalid_item";
  }
  return "unknown";
}

Status to_status(Error e) {
  switch (e) {
    case Error::ok: return {};
    case Error::truncated: return {StatusCode::truncated, "rANS stream ends before its header, table, directory or chunks"};
    case Error::bad_magic: return {StatusCode::bad_data, "not a tandem rANS stream (bad magic)"};
    case Error::unsupported_version: return {StatusCode::unsupported, "rANS stream of an unknown version"};
    case Error::bad_params: return {StatusCode::bad_data, "rANS scale bits, chunk size or lane count out of range"};
    case Error::bad_chunk_count:
      return {StatusCode::bad_data, "rANS chunk count does not match the length and chunk size"};
    case Error::bad_table: return {StatusCode::bad_data, "rANS frequency table is malformed or does not sum to the scale"};
    case Error::bad_directory: return {StatusCode::bad_data, "rANS chunk has an impossible lane or word count"};
    case Error::trailing_bytes: return {StatusCode::bad_data, "bytes follow the rANS stream's last chunk"};
    case Error::bad_states: return {StatusCode::bad_data, "rANS chunk states disagree with their size"};
    case Error::words_exhausted: return {StatusCode::bad_data, "rANS chunk needs more words than it holds"};
    case Error::words_left_over: return {StatusCode::bad_data, "rANS chunk decodes without using all its words"};
    case Error::bad_final_state: return {StatusCode::bad_data, "rANS lane does not end in its initial state"};
    case Error::output_too_small: return {StatusCode::output_too_small, "rANS stream decodes to more than the output holds"};
    case Error::invalid_item: return {StatusCode::invalid_argument, "null pointer or item too large"};
  }
  return {StatusCode::bad_data, "unknown rANS error"};
}

}  // namespace tandem::rans
