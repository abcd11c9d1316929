// LZ4 block batches on the CPU: every item is an independent raw LZ4 block,
// handed to the worker pool one at a time.
#include "common/thread_pool.hpp"
#include "cpu/lz4_block_cpu.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

namespace {

Status check_batch(Codec codec, std::size_t inputs, std::size_t outputs, std::size_t results,
                   const BatchOptions& options) {
  if (inputs != outputs || inputs != results) {
    return {StatusCode::invalid_argument, "inputs, outputs and results differ in length"};
  }
  Backend backend;
  return resolve_backend(codec, options.backend, &backend);
}

Status first_failure(std::span<const ItemResult> results) {
  for (const ItemResult& r : results) {
    if (!r.status) return r.status;
  }
  return {};
}

}  // namespace

std::size_t max_compressed_size(Codec codec, std::size_t input_size) {
  switch (codec) {
    case Codec::lz4: return cpu::lz4_block_bound(input_size);
  }
  return 0;
}

Status compress_batch(Codec codec, std::span<const ConstBuffer> inputs, std::span<const MutableBuffer> outputs,
                      std::span<ItemResult> results, const BatchOptions& options) {
  if (Status s = check_batch(codec, inputs.size(), outputs.size(), results.size(), options); !s) return s;
  detail::parallel_for(inputs.size(), options.threads, [&](std::size_t i) {
    const ConstBuffer in = inputs[i];
    const MutableBuffer out = outputs[i];
    ItemResult& r = results[i];
    r = {};
    if ((!in.data && in.size) || (!out.data && out.size)) {
      r.status = {StatusCode::invalid_argument, "null buffer"};
      return;
    }
    if (in.size > cpu::kLz4MaxInput) {
      r.status = {StatusCode::unsupported, "item larger than an LZ4 block can hold"};
      return;
    }
    r.size = cpu::lz4_compress_block(static_cast<const std::uint8_t*>(in.data), in.size,
                                     static_cast<std::uint8_t*>(out.data), out.size, options.level);
    if (r.size == 0) r.status = {StatusCode::output_too_small, "compressed item does not fit its output"};
  });
  return first_failure(results);
}

Status decompress_batch(Codec codec, std::span<const ConstBuffer> inputs, std::span<const MutableBuffer> outputs,
                        std::span<ItemResult> results, const BatchOptions& options) {
  if (Status s = check_batch(codec, inputs.size(), outputs.size(), results.size(), options); !s) return s;
  detail::parallel_for(inputs.size(), options.threads, [&](std::size_t i) {
    const ConstBuffer in = inputs[i];
    const MutableBuffer out = outputs[i];
    ItemResult& r = results[i];
    r = {};
    if ((!in.data && in.size) || (!out.data && out.size)) {
      r.status = {StatusCode::invalid_argument, "null buffer"};
      return;
    }
    r.status = cpu::lz4_decompress_block(static_cast<const std::uint8_t*>(in.data), in.size,
                                         static_cast<std::uint8_t*>(out.data), out.size, &r.size);
  });
  return first_failure(results);
}

}  // namespace tandem
