// The C interface (tandem.h) over the C++ API.
#include <new>
#include <vector>

#include "tandem/tandem.h"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

tandem_status to_c(const Status& s) { return static_cast<tandem_status>(s.code); }

Lz4FrameOptions from_c(const tandem_lz4_frame_options* o) {
  Lz4FrameOptions r;
  if (!o) return r;
  r.level = o->level;
  r.block_size = o->block_size;
  r.linked_blocks = o->linked_blocks != 0;
  r.content_checksum = o->content_checksum != 0;
  r.block_checksum = o->block_checksum != 0;
  r.content_size = o->content_size != 0;
  r.threads = o->threads;
  return r;
}

template <class Fn>
tandem_status run_batch(Fn&& fn, const void* const* in_ptrs, const size_t* in_sizes, void* const* out_ptrs,
                        const size_t* out_caps, size_t* out_sizes, tandem_status* statuses, size_t count,
                        int level, int threads) {
  if (count == 0) return TANDEM_OK;
  if (!in_ptrs || !in_sizes || !out_ptrs || !out_caps || !out_sizes) return TANDEM_INVALID_ARGUMENT;
  try {
    std::vector<ConstBuffer> in(count);
    std::vector<MutableBuffer> out(count);
    std::vector<ItemResult> results(count);
    for (size_t i = 0; i < count; ++i) {
      in[i] = {in_ptrs[i], in_sizes[i]};
      out[i] = {out_ptrs[i], out_caps[i]};
    }
    BatchOptions options;
    options.level = level;
    options.threads = threads;
    const Status s = fn(in, out, results, options);
    for (size_t i = 0; i < count; ++i) {
      out_sizes[i] = results[i].size;
      if (statuses) statuses[i] = to_c(results[i].status);
    }
    return to_c(s);
  } catch (const std::bad_alloc&) {
    return TANDEM_OUT_OF_MEMORY;
  }
}

}  // namespace

extern "C" {

const char* tandem_status_message(tandem_status status) {
  return status_message(static_cast<StatusCode>(status));
}

const char* tandem_version(void) { return tandem::version(); }

size_t tandem_lz4_max_compressed_size(size_t input_size) { return max_compressed_size(Codec::lz4, input_size); }

tandem_status tandem_lz4_compress_batch(const void* const* in_ptrs, const size_t* in_sizes, void* const* out_ptrs,
                                        const size_t* out_caps, size_t* out_sizes, tandem_status* statuses,
                                        size_t count, int level, int threads) {
  auto fn = [](auto& in, auto& out, auto& results, const BatchOptions& o) {
    return compress_batch(Codec::lz4, in, out, results, o);
  };
  return run_batch(fn, in_ptrs, in_sizes, out_ptrs, out_caps, out_sizes, statuses, count, level, threads);
}

tandem_status tandem_lz4_decompress_batch(const void* const* in_ptrs, const size_t* in_sizes, void* const* out_ptrs,
                                          const size_t* out_caps, size_t* out_sizes, tandem_status* statuses,
                                          size_t count, int threads) {
  auto fn = [](auto& in, auto& out, auto& results, const BatchOptions& o) {
    return decompress_batch(Codec::lz4, in, out, results, o);
  };
  return run_batch(fn, in_ptrs, in_sizes, out_ptrs, out_caps, out_sizes, statuses, count, 0, threads);
}

void tandem_lz4_frame_options_init(tandem_lz4_frame_options* options) {
  if (!options) return;
  const Lz4FrameOptions d;
  options->struct_size = sizeof(*options);
  options->level = d.level;
  options->block_size = d.block_size;
  options->linked_blocks = d.linked_blocks;
  options->content_checksum = d.content_checksum;
  options->block_checksum = d.block_checksum;
  options->content_size = d.content_size;
  options->threads = d.threads;
}

size_t tandem_lz4_frame_max_compressed_size(size_t input_size, const tandem_lz4_frame_options* options) {
  return lz4_frame_max_compressed_size(input_size, from_c(options));
}

tandem_status tandem_lz4_frame_compress(const void* src, size_t src_size, void* dst, size_t dst_capacity,
                                        size_t* dst_size, const tandem_lz4_frame_options* options) {
  if (options && options->struct_size != sizeof(*options)) return TANDEM_INVALID_ARGUMENT;
  try {
    return to_c(lz4_frame_compress({src, src_size}, {dst, dst_capacity}, dst_size, from_c(options)));
  } catch (const std::bad_alloc&) {
    return TANDEM_OUT_OF_MEMORY;
  }
}

tandem_status tandem_lz4_frame_decompress(const void* src, size_t src_size, void* dst, size_t dst_capacity,
                                          size_t* dst_size, int threads) {
  Lz4DecodeOptions o;
  o.threads = threads;
  try {
    return to_c(lz4_frame_decompress({src, src_size}, {dst, dst_capacity}, dst_size, o));
  } catch (const std::bad_alloc&) {
    return TANDEM_OUT_OF_MEMORY;
  }
}

}  // extern "C"

namespace tandem {
const char* version() { return TANDEM_VERSION_STRING; }
}  // namespace tandem
