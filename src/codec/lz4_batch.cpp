// LZ4 block batches: every item is an independent raw LZ4 block. On the CPU
// the worker pool takes items one at a time; on the GPU the shared engine
// (gpu/lz4_gpu_engine.hpp) copies the batch to the device and back.
#include "common/thread_pool.hpp"
#include "cpu/lz4_block_cpu.hpp"
#include "gpu/lz4_gpu_engine.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

namespace {

using gpu::Direction;

// Checks the spans and picks where the batch runs: the GPU when asked for,
// or when `automatic` resolves to it and the batch suits it (see
// gpu::auto_prefers_gpu).
Status check_batch(Codec codec, Direction direction, std::span<const ConstBuffer> inputs, std::size_t outputs,
                   std::size_t results, const BatchOptions& options, bool* gpu) {
  if (inputs.size() != outputs || inputs.size() != results) {
    return {StatusCode::invalid_argument, "inputs, outputs and results differ in length"};
  }
  Backend backend;
  const Status s = direction == Direction::compress
                       ? resolve_backend(codec, options.backend, options.level, &backend)
                       : resolve_backend(codec, options.backend, &backend);
  if (!s) return s;
  *gpu = false;
  if (backend != Backend::gpu || inputs.empty()) return {};
  std::size_t bytes = 0;
  for (const ConstBuffer& in : inputs) bytes += in.size;
  *gpu = gpu::batch_on_gpu(options.backend, direction, inputs.size(), bytes,
                           detail::effective_threads(options.threads));
  return {};
}

// Runs the batch on the shared GPU engine. *done is false when the device
// failed and `automatic` may still run the batch on the CPU.
Status run_on_gpu(Direction direction, std::span<const ConstBuffer> inputs, std::span<const MutableBuffer> outputs,
                  std::span<ItemResult> results, const BatchOptions& options, bool* done) {
  gpu::Lz4HostEngine* engine = nullptr;
  Status s = gpu::Lz4HostEngine::shared(&engine);
  if (s) {
    const auto lock = engine->lock();
    s = direction == Direction::compress ? engine->compress(inputs, outputs, results, {})
                                         : engine->decompress(inputs, outputs, results, {});
  }
  const bool device_failed = s.code == StatusCode::device_error || s.code == StatusCode::no_device;
  *done = !device_failed || options.backend == Backend::gpu;
  return s;
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
  bool gpu = false;
  if (Status s = check_batch(codec, Direction::compress, inputs, outputs.size(), results.size(), options, &gpu); !s) {
    return s;
  }
  if (gpu) {
    bool done = false;
    const Status s = run_on_gpu(Direction::compress, inputs, outputs, results, options, &done);
    if (done) return s;
  }
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
  bool gpu = false;
  if (Status s = check_batch(codec, Direction::decompress, inputs, outputs.size(), results.size(), options, &gpu);
      !s) {
    return s;
  }
  if (gpu) {
    bool done = false;
    const Status s = run_on_gpu(Direction::decompress, inputs, outputs, results, options, &done);
    if (done) return s;
  }
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
