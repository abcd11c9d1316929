// tandem - lzr: LZ77 matches split into literal, length and offset streams,
// each coded with tandem's rANS format (docs/formats/lzr.md).
//
// An lzr frame cuts its input into blocks (64, 128 or 256 KiB) that decode
// independently. The GPU compresses a batch of buffers in one submission on
// the caller's stream: match finding, the split into streams, rANS and the
// frame's assembly all stay in device memory. The CPU encoder runs the GPU's
// own kernel bodies through a warp emulation, so both write the same bytes;
// frames decode on either.
//
// Host calls are safe to make from several threads at once. Device calls
// follow tandem_gpu.hpp's shape: a temporary-size query, then an
// asynchronous call on the caller's stream and temporary storage, with a
// size and an error per item written to device memory; no allocation and no
// host synchronisation. Every pointer named d_* is device memory. Without
// CUDA in the build the device calls return no_device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "tandem/tandem.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::lzr {

// Block sizes a frame may have: 2^16 .. 2^18 bytes. 128 KiB by default:
// the GPU decodes it some 1.6 times as fast as 256 KiB blocks (twice the
// blocks in flight) for 1.6% more bytes (docs/formats/lzr.md); 256 KiB
// gives the smallest output.
inline constexpr std::uint32_t kMinBlockLog = 16;
inline constexpr std::uint32_t kMaxBlockLog = 18;
inline constexpr std::uint32_t kDefaultBlockLog = 17;

struct Params {
  std::uint32_t block_log = kDefaultBlockLog;  // blocks of 2^block_log bytes
};

// What a decoder (or the GPU encoder) found wrong with one frame. Values are
// permanent: the GPU writes them to device memory.
enum class Error : std::int32_t {
  ok = 0,
  truncated = 1,            // the input ends inside the header, the directory, a block or a stream
  bad_magic = 2,            // not an lzr frame
  unsupported_version = 3,  // a version this decoder does not know
  bad_header = 4,           // block size out of range, reserved bytes not zero, or the block count wrong
  trailing_bytes = 5,       // bytes after the last block
  bad_block = 6,            // a block's sizes disagree: its streams do not fill it, or a count is impossible
  bad_stream = 7,           // a stream's rANS coding is malformed or decodes to the wrong length
  bad_code = 8,             // a length code above the largest one, or its extension bytes run out
  bad_sequence = 9,         // a match reaches before the block or past its end, or the literals run out
  bad_totals = 10,          // the sequences do not use exactly the block's literal and extension bytes
  output_too_small = 11,    // the frame decodes to more than the output holds
  invalid_item = 12,        // GPU: a null pointer or an item over the size the call accepts
};

const char* error_name(Error e);
// The library-wide status of an error (truncated, bad_data, unsupported,
// output_too_small, invalid_argument), with a reason naming the error.
Status to_status(Error e);

// Bytes an lzr frame of n input bytes takes at most; 0 for bad parameters.
std::size_t max_encoded_size(std::uint64_t n, const Params& params = {});

// ------------------------------------------------------------- CPU ----

// Encodes `in` into out (capacity out.size()); *out_size gets the frame's
// size. invalid_argument for bad parameters; output_too_small when the frame
// does not fit (max_encoded_size always does).
Status encode(std::span<const std::uint8_t> in, const Params& params, std::span<std::uint8_t> out,
              std::size_t* out_size);
Status encode(std::span<const std::uint8_t> in, const Params& params, std::vector<std::uint8_t>* out);

// What a frame's header says (checked as far as the header goes).
struct FrameInfo {
  Params params;
  std::uint64_t length = 0;  // bytes it decodes to
  std::uint32_t block_count = 0;
};
Status read_info(std::span<const std::uint8_t> in, FrameInfo* info);

// Decodes the frame `in` into out; *out_size gets its length. The input is
// untrusted: every failure is a status (truncated, bad_data, unsupported,
// output_too_small when its length exceeds out.size()), and nothing outside
// out[0, length) is written (unspecified bytes there on failure). *error,
// when not null, gets the format's own error, as the GPU reports it.
Status decode(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t* out_size,
              Error* error = nullptr);
// The same into a vector; output_limit when the frame's length exceeds
// max_output (the vector is not grown past it).
Status decode(std::span<const std::uint8_t> in, std::vector<std::uint8_t>* out,
              std::size_t max_output = std::numeric_limits<std::size_t>::max(), Error* error = nullptr);

}  // namespace tandem::lzr

namespace tandem::gpu {

// Temporary device storage that lzr_compress_async needs for num_items
// items of at most max_item_size bytes (about 19 bytes per byte of
// num_items * max_item_size: the matches, the streams, their rANS codings).
// invalid_argument for bad parameters or max_item_size over kMaxItemSize.
Status lzr_compress_temp_size(std::size_t num_items, std::size_t max_item_size, const lzr::Params& params,
                              std::size_t* temp_bytes);

// Encodes item i, d_in_ptrs[i] of d_in_sizes[i] bytes, into one lzr frame at
// d_out_ptrs[i] for every i < num_items: the CPU encoder's bytes.
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   max_item_size            host: no d_in_sizes[i] is larger (a larger item gets invalid_item)
//   params                   host: the frame parameters, as the CPU encoder's
//   d_temp, temp_bytes       device, at least lzr_compress_temp_size
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items], or null: lzr::max_encoded_size of each input
//   d_out_sizes              device array [num_items]: frame bytes (0 on failure)
//   d_errors                 device array [num_items], or null: ok, invalid_item or
//                            output_too_small (the output then holds no valid frame)
Status lzr_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                          std::size_t num_items, const lzr::Params& params, void* d_temp, std::size_t temp_bytes,
                          void* const* d_out_ptrs, const std::size_t* d_out_capacities, std::size_t* d_out_sizes,
                          lzr::Error* d_errors, Stream stream);

// Temporary device storage that lzr_decompress_async needs for num_items
// frames decoding to at most max_output_size bytes each (about 3.3 bytes per
// byte of num_items * max_output_size).
Status lzr_decompress_temp_size(std::size_t num_items, std::size_t max_output_size, std::size_t* temp_bytes);

// Decodes the frame d_in_ptrs[i] of d_in_sizes[i] bytes into d_out_ptrs[i]
// for every i < num_items. Frames are untrusted: a malformed one gets the
// error the CPU decoder gives it, and nothing is read or written outside the
// given buffers (a failed item's output holds unspecified bytes).
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   max_output_size          host: the largest of d_out_capacities (larger capacities count as it)
//   d_temp, temp_bytes       device, at least lzr_decompress_temp_size
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items]
//   d_out_sizes              device array [num_items]: bytes decoded (0 on failure)
//   d_errors                 device array [num_items], or null
Status lzr_decompress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_output_size,
                            std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                            const std::size_t* d_out_capacities, std::size_t* d_out_sizes, lzr::Error* d_errors,
                            Stream stream);

}  // namespace tandem::gpu
