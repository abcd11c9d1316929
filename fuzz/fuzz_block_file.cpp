// Fuzz target: the readers of tandem's block files, .rans
// (tandem/rans_file.hpp) and .lzr (tandem/lzr_file.hpp), from files taken as
// they are and from valid files with edits.
//
// Input: a first byte; bit 0 picks the mode, bit 1 the kind (rans, lzr).
//   raw:     the rest of the input is the file.
//   edited:  the next bytes pick the parameters, a content length (up to
//            160 KiB, so up to three 64 KiB blocks) and a pattern the
//            content is built from; the content is compressed, must read
//            back unchanged, then byte edits (position, xor) and an optional
//            cut apply.
// Every file is read twice: from memory (a stable source, large batches)
// and through a source that hands out exactly what is asked for, each time
// in an allocation of that size (ASan sees a read past it; small batches).
//
// Properties: no crash; output within the 1 MiB cap; both reads give the
// same status and, when ok, the same bytes; a file that reads with its
// checksum verified reads the same without; an unedited file reads to its
// content; statuses are only those the reader documents; compression is
// deterministic and within its bound.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "tandem/lzr_file.hpp"
#include "tandem/rans_file.hpp"

namespace {

using tandem::StatusCode;

constexpr std::uint64_t kCap = 1u << 20;

// A source that is not stable and gives exactly min(n, rest) bytes, copied
// into a fresh allocation of that size at every ensure().
class ExactSource final : public tandem::Source {
 public:
  explicit ExactSource(const std::vector<std::uint8_t>& in) : in_(in) {}
  tandem::Status ensure(std::size_t n, std::size_t* available) override {
    const std::size_t give = std::min(n, in_.size() - pos_);
    window_.reset(new std::uint8_t[give ? give : 1]);
    if (give) std::memcpy(window_.get(), in_.data() + pos_, give);
    size_ = give;
    *available = give;
    return {};
  }
  const std::uint8_t* data() const override { return window_.get(); }
  void consume(std::size_t n) override {
    FUZZ_ASSERT(n <= size_);
    pos_ += n;
    size_ = 0;  // a reader must ensure() again before reading
  }
  std::uint64_t position() const override { return pos_; }

 private:
  const std::vector<std::uint8_t>& in_;
  std::unique_ptr<std::uint8_t[]> window_;
  std::size_t size_ = 0, pos_ = 0;
};

struct Verdict {
  tandem::Status status;
  std::vector<std::uint8_t> out;
};

// The two kinds' calls, by a tag.
struct Rans {};
struct Lzr {};
tandem::Status decompress(Rans, const std::vector<std::uint8_t>& file, std::vector<std::uint8_t>* out,
                          const tandem::BlockFileDecodeOptions& o) {
  return tandem::rans_file_decompress({file.data(), file.size()}, out, o);
}
tandem::Status decompress(Lzr, const std::vector<std::uint8_t>& file, std::vector<std::uint8_t>* out,
                          const tandem::BlockFileDecodeOptions& o) {
  return tandem::lzr_file_decompress({file.data(), file.size()}, out, o);
}
tandem::Status decompress_stream(Rans, tandem::Source& in, tandem::Sink& out,
                                 const tandem::BlockFileDecodeOptions& o) {
  return tandem::rans_file_decompress_stream(in, out, o);
}
tandem::Status decompress_stream(Lzr, tandem::Source& in, tandem::Sink& out,
                                 const tandem::BlockFileDecodeOptions& o) {
  return tandem::lzr_file_decompress_stream(in, out, o);
}
tandem::Status compress(const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>* out,
                        const tandem::RansFileOptions& o) {
  return tandem::rans_file_compress({in.data(), in.size()}, out, o);
}
tandem::Status compress(const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>* out,
                        const tandem::LzrFileOptions& o) {
  return tandem::lzr_file_compress({in.data(), in.size()}, out, o);
}
std::uint64_t max_size(std::size_t n, const tandem::RansFileOptions& o) {
  return tandem::rans_file_max_compressed_size(n, o);
}
std::uint64_t max_size(std::size_t n, const tandem::LzrFileOptions& o) {
  return tandem::lzr_file_max_compressed_size(n, o);
}

template <class Kind>
Verdict read(const std::vector<std::uint8_t>& file, bool stable, bool verify) {
  tandem::BlockFileDecodeOptions o;
  o.threads = 1;
  o.max_output = kCap;
  o.verify_checksum = verify;
  Verdict v;
  if (stable) {
    v.status = decompress(Kind{}, file, &v.out, o);
  } else {
    ExactSource src(file);
    {
      auto sink = tandem::vector_sink(&v.out);
      v.status = decompress_stream(Kind{}, src, *sink, o);
    }  // the sink trims the vector to what was committed when it goes
    if (!v.status) v.out.clear();
  }
  FUZZ_ASSERT(v.out.size() <= kCap);
  switch (v.status.code) {
    case StatusCode::ok:
    case StatusCode::bad_data:
    case StatusCode::truncated:
    case StatusCode::unsupported:
    case StatusCode::checksum_mismatch:
    case StatusCode::output_limit: break;
    default: FUZZ_ASSERT(false);
  }
  return v;
}

template <class Kind>
void check(const std::vector<std::uint8_t>& file, const std::vector<std::uint8_t>* original) {
  const Verdict a = read<Kind>(file, true, true);
  const Verdict b = read<Kind>(file, false, true);
  FUZZ_ASSERT(a.status.code == b.status.code);
  FUZZ_ASSERT(a.out == b.out);
  if (a.status.ok()) {
    const Verdict lax = read<Kind>(file, true, false);
    FUZZ_ASSERT(lax.status.ok());
    FUZZ_ASSERT(lax.out == a.out);
    if (original) FUZZ_ASSERT(a.out == *original);
  }
}

// Options of the edited mode's compression, from the input.
tandem::RansFileOptions encode_options(fuzz::Reader& in, Rans) {
  tandem::RansFileOptions o;
  o.threads = 1;
  o.chunk_kib = 1 + in.byte() % 16;
  o.scale_bits = 8 + in.byte() % 5;
  o.lanes = 1 + in.byte() % 32;
  return o;
}
tandem::LzrFileOptions encode_options(fuzz::Reader& in, Lzr) {
  tandem::LzrFileOptions o;
  o.threads = 1;
  o.block_size = std::size_t{64} << 10;
  o.params.block_log = tandem::lzr::kMinBlockLog + in.byte() % 3;
  return o;
}

template <class Kind>
void run(fuzz::Reader& in, bool raw) {
  if (raw) {
    check<Kind>(std::vector<std::uint8_t>(in.data + in.at, in.data + in.size), nullptr);
    return;
  }
  const auto o = encode_options(in, Kind{});
  const std::size_t n = in.le(3) % (160u << 10);
  const std::size_t k = 1 + in.byte() % 32;
  std::vector<std::uint8_t> pattern(k);
  for (std::uint8_t& b : pattern) b = in.byte();
  const std::uint8_t spread = in.byte();
  std::vector<std::uint8_t> original(n);
  for (std::size_t i = 0; i < n; ++i) {
    original[i] = static_cast<std::uint8_t>(pattern[(i * 2654435761u >> (spread % 24)) % k] +
                                            ((i >> (spread % 17)) % 3 == 0 ? i * 31 : 0));
  }
  std::vector<std::uint8_t> file, again;
  FUZZ_ASSERT(compress(original, &file, o).ok());
  FUZZ_ASSERT(file.size() <= max_size(n, o));
  FUZZ_ASSERT(compress(original, &again, o).ok());
  FUZZ_ASSERT(file == again);
  std::vector<std::uint8_t> back;
  FUZZ_ASSERT(decompress(Kind{}, file, &back, {}).ok());
  FUZZ_ASSERT(back == original);

  bool edited = in.edit(&file);
  if (in.byte() & 1) {
    const std::size_t cut = in.le(3) % (file.size() + 1);
    edited = edited || cut < file.size();
    file.resize(cut);
  }
  // An edited file that still reads would be a checksum collision; libFuzzer
  // can make one (it copies compared values into its inputs), so only an
  // unedited file is held to its content.
  check<Kind>(file, edited ? nullptr : &original);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  fuzz::Reader in{data, size};
  const std::uint8_t head = in.byte();
  if (head & 2) {
    run<Lzr>(in, !(head & 1));
  } else {
    run<Rans>(in, !(head & 1));
  }
  return 0;
}
