// .lzr files on the CPU: the block-file engine (codec/block_file.hpp) over
// the CPU lzr codec; see tandem/lzr_file.hpp and docs/formats/lzr.md.
#include "tandem/lzr_file.hpp"

#include "codec/block_file.hpp"

namespace tandem {

namespace {

Status check_options(const LzrFileOptions& o) {
  if (!block_file::block_size_valid(o.block_size)) {
    return {StatusCode::invalid_argument, block_file::kLzr.bad_option};
  }
  if (lzr::max_encoded_size(0, o.params) == 0) return {StatusCode::invalid_argument, "lzr parameters out of range"};
  return {};
}

block_file::Codec codec_of(const lzr::Params& params) {
  block_file::Codec c;
  c.kind = &block_file::kLzr;
  c.encode = [params](std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t* size) {
    return lzr::encode(in, params, out, size);
  };
  c.decode = [](std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t* size) {
    return lzr::decode(in, out, size);
  };
  return c;
}

}  // namespace

bool lzr_file_magic(const void* data, std::size_t size) {
  return data && block_file::has_magic(block_file::kLzr, static_cast<const std::uint8_t*>(data), size);
}

std::uint64_t lzr_file_max_compressed_size(std::uint64_t input_size, const LzrFileOptions& options) {
  if (!check_options(options)) return 0;
  return block_file::max_compressed_size(input_size, options.block_size);
}

Status lzr_file_compress_stream(Source& in, Sink& out, const LzrFileOptions& options, StreamStats* stats) {
  if (Status s = check_options(options); !s) return s;
  block_file::EncodeOptions e;
  e.block_size = options.block_size;
  e.threads = options.threads;
  e.progress = options.progress;
  return block_file::compress(in, out, codec_of(options.params), e, stats);
}

Status lzr_file_decompress_stream(Source& in, Sink& out, const LzrFileDecodeOptions& options, StreamStats* stats,
                                  LzrFileStats* file_stats) {
  return block_file::decompress(in, out, codec_of({}), options, stats, file_stats);
}

Status lzr_file_compress(ConstBuffer input, std::vector<std::uint8_t>* output, const LzrFileOptions& options) {
  return block_file::run_to_vector(input, output,
                                   [&](Source& in, Sink& out) { return lzr_file_compress_stream(in, out, options); });
}

Status lzr_file_decompress(ConstBuffer input, std::vector<std::uint8_t>* output, const LzrFileDecodeOptions& options,
                           LzrFileStats* file_stats) {
  return block_file::run_to_vector(input, output, [&](Source& in, Sink& out) {
    return lzr_file_decompress_stream(in, out, options, nullptr, file_stats);
  });
}

}  // namespace tandem
