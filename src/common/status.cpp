// Status codes: names and messages, shared by the C++ and C interfaces.
#include <string>

#include "tandem/tandem.hpp"

namespace tandem {

const char* status_message(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return "success";
    case StatusCode::bad_data: return "bad data";
    case StatusCode::output_too_small: return "output buffer too small";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::io_error: return "I/O error";
    case StatusCode::device_error: return "GPU device error";
    case StatusCode::invalid_argument: return "invalid argument";
    case StatusCode::checksum_mismatch: return "checksum mismatch";
    case StatusCode::truncated: return "truncated input";
    case StatusCode::out_of_memory: return "out of memory";
    case StatusCode::output_limit: return "output exceeds the size limit";
    case StatusCode::no_device: return "no usable GPU";
    case StatusCode::not_found: return "not found";
  }
  return "unknown status";
}

const char* status_name(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::bad_data: return "bad_data";
    case StatusCode::output_too_small: return "output_too_small";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::io_error: return "io_error";
    case StatusCode::device_error: return "device_error";
    case StatusCode::invalid_argument: return "invalid_argument";
    case StatusCode::checksum_mismatch: return "checksum_mismatch";
    case StatusCode::truncated: return "truncated";
    case StatusCode::out_of_memory: return "out_of_memory";
    case StatusCode::output_limit: return "output_limit";
    case StatusCode::no_device: return "no_device";
    case StatusCode::not_found: return "not_found";
  }
  return "unknown";
}

std::string Status::to_string() const {
  std::string s = status_message(code);
  if (reason && *reason) {
    s += ": ";
    s += reason;
  }
  return s;
}

}  // namespace tandem
