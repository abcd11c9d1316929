// The CPU reference codec of tandem's rANS format (docs/formats/rans.md).
//
// It runs the format's shared warp bodies (gpu/rans_body.hpp) through the
// host emulation of a warp, so its bytes are the GPU encoder's bytes and
// its verdicts the GPU decoder's. One thread per call; calls are
// independent and may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "format/rans_format.hpp"
#include "tandem/tandem.hpp"

namespace tandem::rans {

// Encodes `in` into out (capacity out.size()); *out_size gets the stream's
// size. invalid_argument for bad parameters or an input over kMaxLength;
// output_too_small when the stream does not fit (max_encoded_size always
// does), out then holds no valid stream.
Status encode(std::span<const std::uint8_t> in, const Params& params, std::span<std::uint8_t> out,
              std::size_t* out_size);
// The same into a vector sized to fit.
Status encode(std::span<const std::uint8_t> in, const Params& params, std::vector<std::uint8_t>* out);

// What a stream's header says, checked as far as the header goes.
struct StreamInfo {
  Params params;
  std::uint32_t length = 0;       // bytes it decodes to
  std::uint32_t chunk_count = 0;
};
Status read_info(std::span<const std::uint8_t> in, StreamInfo* info);

// Decodes the stream `in` into out; *out_size gets its length. The input is
// untrusted: every failure is a status (truncated, bad_data, unsupported,
// output_too_small when its length exceeds out.size()), and nothing outside
// out[0, length) is written (on failure that range holds unspecified bytes).
// *error, when not null, gets the format's own error (as the GPU reports it).
Status decode(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t* out_size,
              Error* error = nullptr);
// The same into a vector; output_limit when the stream's length exceeds
// max_output (the vector is not grown past it).
Status decode(std::span<const std::uint8_t> in, std::vector<std::uint8_t>* out,
              std::size_t max_output = std::numeric_limits<std::size_t>::max(), Error* error = nullptr);

// The normalised frequencies (256 entries) the encoder would use for `in`
// (empty input: all zero). For tests and measurements.
std::vector<std::uint32_t> frequencies(std::span<const std::uint8_t> in, std::uint32_t scale_bits);

}  // namespace tandem::rans
