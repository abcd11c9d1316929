// .rans files on the CPU: the block-file engine (codec/block_file.hpp) over
// the CPU rANS coder (cpu/rans_cpu.hpp); see tandem/rans_file.hpp and
// docs/formats/rans.md.
#include "tandem/rans_file.hpp"

#include "codec/block_file.hpp"
#include "cpu/rans_cpu.hpp"

namespace tandem {

namespace {

rans::Params params_of(const RansFileOptions& o) { return rans::Params{o.chunk_kib, o.scale_bits, o.lanes}; }

Status check_options(const RansFileOptions& o) {
  if (!block_file::block_size_valid(o.block_size)) {
    return {StatusCode::invalid_argument, block_file::kRans.bad_option};
  }
  if (!rans::params_valid(params_of(o))) return {StatusCode::invalid_argument, "rANS parameters out of range"};
  return {};
}

block_file::Codec codec_of(const rans::Params& params) {
  block_file::Codec c;
  c.kind = &block_file::kRans;
  c.encode = [params](std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t* size) {
    return rans::encode(in, params, out, size);
  };
  c.decode = [](std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t* size) {
    return rans::decode(in, out, size);
  };
  return c;
}

}  // namespace

bool rans_file_magic(const void* data, std::size_t size) {
  return data && block_file::has_magic(block_file::kRans, static_cast<const std::uint8_t*>(data), size);
}

std::uint64_t rans_file_max_compressed_size(std::uint64_t input_size, const RansFileOptions& options) {
  if (!check_options(options)) return 0;
  return block_file::max_compressed_size(input_size, options.block_size);
}

Status rans_file_compress_stream(Source& in, Sink& out, const RansFileOptions& options, StreamStats* stats) {
  if (Status s = check_options(options); !s) return s;
  block_file::EncodeOptions e;
  e.block_size = options.block_size;
  e.threads = options.threads;
  e.progress = options.progress;
  return block_file::compress(in, out, codec_of(params_of(options)), e, stats);
}

Status rans_file_decompress_stream(Source& in, Sink& out, const RansFileDecodeOptions& options, StreamStats* stats,
                                   RansFileStats* file_stats) {
  return block_file::decompress(in, out, codec_of({}), options, stats, file_stats);
}

Status rans_file_compress(ConstBuffer input, std::vector<std::uint8_t>* output, const RansFileOptions& options) {
  return block_file::run_to_vector(input, output,
                                   [&](Source& in, Sink& out) { return rans_file_compress_stream(in, out, options); });
}

Status rans_file_decompress(ConstBuffer input, std::vector<std::uint8_t>* output,
                            const RansFileDecodeOptions& options, RansFileStats* file_stats) {
  return block_file::run_to_vector(input, output, [&](Source& in, Sink& out) {
    return rans_file_decompress_stream(in, out, options, nullptr, file_stats);
  });
}

Status rans_file_compress(ConstBuffer input, MutableBuffer output, std::size_t* size, const RansFileOptions& options) {
  return block_file::run_to_buffer(input, output, size,
                                   [&](Source& in, Sink& out) { return rans_file_compress_stream(in, out, options); });
}

Status rans_file_decompress(ConstBuffer input, MutableBuffer output, std::size_t* size,
                            const RansFileDecodeOptions& options) {
  return block_file::run_to_buffer(input, output, size, [&](Source& in, Sink& out) {
    return rans_file_decompress_stream(in, out, options);
  });
}

}  // namespace tandem
