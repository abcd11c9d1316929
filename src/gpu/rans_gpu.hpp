// tandem rANS streams (docs/formats/rans.md) on the GPU, device-resident: a
// batch of buffers in device memory in, a stream per buffer in device memory
// out, and the reverse; the calls take the shape of tandem_gpu.hpp's (size
// queries, then an asynchronous call on the caller's stream and temporary
// storage, a size and an error per item written to device memory; no
// allocation, no host synchronisation).
//
// The encoder writes the bytes the CPU reference (cpu/rans_cpu.hpp) writes;
// the decoder gives, item by item, the CPU decoder's error. Both run the
// warp bodies of gpu/rans_body.hpp: a warp per chunk, the chunk's lanes a
// thread each.
//
// Every pointer named d_* is device memory. The host Status covers what the
// call can see without the device (bad arguments, no CUDA, a failed launch);
// each item's outcome is in d_errors once the stream reaches that point.
// Without CUDA in the build every call returns no_device.
#pragma once

#include <cstddef>

#include "format/rans_format.hpp"
#include "tandem/tandem.hpp"
#include "tandem/tandem_gpu.hpp"

namespace tandem::gpu {

// Temporary device storage that rans_compress_async needs for `num_items`
// items of at most `max_item_size` bytes coded with `params`: about 2 bytes
// per byte of num_items * max_item_size (the chunks' words wait there to be
// placed), so give the real largest item. invalid_argument for bad
// parameters or max_item_size over kMaxItemSize.
Status rans_compress_temp_size(std::size_t num_items, std::size_t max_item_size, const rans::Params& params,
                               std::size_t* temp_bytes);

// Encodes item i, d_in_ptrs[i] of d_in_sizes[i] bytes, into one rANS stream
// at d_out_ptrs[i] for every i < num_items.
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   max_item_size            host: no d_in_sizes[i] is larger (a larger item gets invalid_item)
//   params                   host: the stream parameters, as the CPU encoder's
//   d_temp, temp_bytes       device, at least rans_compress_temp_size
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items], or null: rans::max_encoded_size of each input
//   d_out_sizes              device array [num_items]: stream bytes (0 on failure)
//   d_errors                 device array [num_items], or null: ok, invalid_item (null
//                            pointer, item too large) or output_too_small (the stream
//                            does not fit; the output then holds no valid stream)
Status rans_compress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_item_size,
                           std::size_t num_items, const rans::Params& params, void* d_temp, std::size_t temp_bytes,
                           void* const* d_out_ptrs, const std::size_t* d_out_capacities, std::size_t* d_out_sizes,
                           rans::Error* d_errors, Stream stream);

// Temporary device storage that rans_decompress_async needs for `num_items`
// streams decoding to at most `max_output_size` bytes each.
Status rans_decompress_temp_size(std::size_t num_items, std::size_t max_output_size, std::size_t* temp_bytes);

// Decodes the stream d_in_ptrs[i] of d_in_sizes[i] bytes into d_out_ptrs[i]
// for every i < num_items. Streams are untrusted: a malformed one gets the
// error the CPU decoder gives it, and nothing is read or written outside the
// given buffers (a failed item's output holds unspecified bytes).
//   d_in_ptrs, d_in_sizes    device arrays [num_items]
//   max_output_size          host: the largest of d_out_capacities (larger capacities count as it)
//   d_temp, temp_bytes       device, at least rans_decompress_temp_size
//   d_out_ptrs               device array [num_items] of device buffers
//   d_out_capacities         device array [num_items]
//   d_out_sizes              device array [num_items]: bytes decoded (0 on failure)
//   d_errors                 device array [num_items], or null
Status rans_decompress_async(const void* const* d_in_ptrs, const std::size_t* d_in_sizes, std::size_t max_output_size,
                             std::size_t num_items, void* d_temp, std::size_t temp_bytes, void* const* d_out_ptrs,
                             const std::size_t* d_out_capacities, std::size_t* d_out_sizes, rans::Error* d_errors,
                             Stream stream);

}  // namespace tandem::gpu
