// Compressing and decompressing files; see cli_files.hpp.
//
// --rm removes an input only after its output was checked on disk:
//   compress    the input is hashed (XXH3) as the codec consumes it; the
//               written frame is read back, decompressed and hashed; the two
//               must agree.
//   decompress  the content is hashed as the codec produces it (after the
//               library checked the frame's own checksums); the written file
//               is read back and hashed; the two must agree.
// The output is then fsync'ed and renamed, its directory fsync'ed, and only
// then is the input unlinked.
#include "cli/cli_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_output.hpp"
#include "cli/cli_progress.hpp"
#include "cli/cli_stats.hpp"
#include "codec/lz4_hybrid.hpp"
#include "tandem/deflate.hpp"
#include "tandem/lzr_file.hpp"
#include "tandem/rans_file.hpp"
#include "tandem/zstd.hpp"
#include "gpu/lz4_gpu_pipeline.hpp"

namespace tandem::cli {

namespace {

constexpr std::size_t kReadBack = 1u << 20;

// The formats of compress and decompress. The deflate family goes through
// tandem/deflate.hpp, LZ4 through the frame API, rANS and lzr files through
// tandem/rans_file.hpp and tandem/lzr_file.hpp, zstd through tandem/zstd.hpp. A codec is a row of kFormats (its --codec name and
// its files' suffix), a case in decompress_as and one in process_file's
// compression, and its magic in detect_format.
enum class Format { lz4, gzip, zlib, deflate, rans, lzr, zstd };

struct FormatInfo {
  Format format;
  std::string_view codec;   // the --codec name
  std::string_view suffix;  // of the files compress writes
};
constexpr FormatInfo kFormats[] = {
    {Format::lz4, "lz4", ".lz4"},
    {Format::gzip, "gzip", ".gz"},
    {Format::zlib, "zlib", ".zz"},
    {Format::deflate, "deflate", ".deflate"},
    {Format::rans, "rans", ".rans"},
    {Format::lzr, "lzr", ".lzr"},
    {Format::zstd, "zstd", ".zst"},
};

Format format_of(std::string_view codec) {
  for (const FormatInfo& f : kFormats) {
    if (f.codec == codec) return f.format;
  }
  return Format::lz4;
}

std::string_view suffix_of(Format format) {
  for (const FormatInfo& f : kFormats) {
    if (f.format == format) return f.suffix;
  }
  return ".lz4";
}

DeflateContainer container_of(Format f) {
  return f == Format::gzip ? DeflateContainer::gzip : f == Format::zlib ? DeflateContainer::zlib : DeflateContainer::raw;
}

// The format of a compressed input, from its first bytes, else its name:
// gzip and zlib by their headers, LZ4 frames, rANS and lzr files by their magic
// numbers (what is none goes to the LZ4 reader, which names the problem).
Format detect_format(Source& source, const std::string& input, const FileOptions& options) {
  if (!options.codec.empty()) return format_of(options.codec);
  std::size_t avail = 0;
  if (source.ensure(4, &avail) && avail >= 2) {
    const std::uint8_t* p = source.data();
    if (rans_file_magic(p, avail)) return Format::rans;
    if (lzr_file_magic(p, avail)) return Format::lzr;
    if (avail >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd) return Format::zstd;
    if (p[0] == 0x1f && p[1] == 0x8b) return Format::gzip;
    const bool lz4_magic = avail >= 4 && p[1] == 0x2a && p[2] == 0x4d && p[3] == 0x18;
    const bool lz4_frame = avail >= 4 && ((p[0] == 0x04 && p[1] == 0x22) || (p[0] == 0x02 && p[1] == 0x21)) &&
                           p[2] == 0x4d && p[3] == 0x18;
    if (!lz4_magic && !lz4_frame && ((p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7 && ((p[0] << 8) | p[1]) % 31 == 0)) {
      return Format::zlib;
    }
    if (lz4_magic || lz4_frame) return Format::lz4;
  }
  if (input.ends_with(".deflate")) return Format::deflate;
  if (input.ends_with(".rans")) return Format::rans;  // its reader then says what is wrong
  if (input.ends_with(".lzr")) return Format::lzr;
  if (input.ends_with(".zst")) return Format::zstd;
  return Format::lz4;
}

bool is_deflate(Format f) { return f == Format::gzip || f == Format::zlib || f == Format::deflate; }

void report(const std::string& who, const std::string& message) {
  std::fprintf(stderr, "tandem: %s: %s\n", who.c_str(), message.c_str());
}

// A running XXH3-64 of a byte stream and its length.
class ContentHash {
 public:
  ContentHash() { XXH3_64bits_reset(&state_); }
  void update(const void* data, std::size_t n) {
    XXH3_64bits_update(&state_, data, n);
    bytes_ += n;
  }
  std::uint64_t digest() const { return XXH3_64bits_digest(&state_); }
  std::uint64_t bytes() const { return bytes_; }
  bool operator==(const ContentHash& other) const {
    return bytes_ == other.bytes_ && digest() == other.digest();
  }

 private:
  XXH3_state_t state_;
  std::uint64_t bytes_ = 0;
};

// A Source that hashes every byte the codec consumes from another source.
class HashingSource final : public Source {
 public:
  explicit HashingSource(Source& inner) : inner_(inner) {}
  Status ensure(std::size_t n, std::size_t* available) override {
    const Status s = inner_.ensure(n, available);
    available_ = s ? *available : 0;
    return s;
  }
  const std::uint8_t* data() const override { return inner_.data(); }
  void consume(std::size_t n) override {
    n = std::min(n, available_);
    hash_.update(inner_.data(), n);
    available_ -= n;
    inner_.consume(n);
  }
  std::uint64_t position() const override { return inner_.position(); }
  std::int64_t size_hint() const override { return inner_.size_hint(); }
  const ContentHash& hash() const { return hash_; }

 private:
  Source& inner_;
  std::size_t available_ = 0;
  ContentHash hash_;
};

// A Sink that hashes every byte committed to another sink.
class HashingSink final : public Sink {
 public:
  explicit HashingSink(Sink& inner) : inner_(inner) {}
  Status reserve(std::size_t n, std::uint8_t** room) override {
    const Status s = inner_.reserve(n, room);
    room_ = s ? *room : nullptr;
    return s;
  }
  Status commit(std::size_t n) override {
    if (n) hash_.update(room_, n);
    room_ += n;
    return inner_.commit(n);
  }
  Status flush() override { return inner_.flush(); }
  std::uint64_t position() const override { return inner_.position(); }
  const ContentHash& hash() const { return hash_; }

 private:
  Sink& inner_;
  std::uint8_t* room_ = nullptr;
  ContentHash hash_;
};

// A Sink that only hashes what it is given.
class HashOnlySink final : public Sink {
 public:
  Status reserve(std::size_t n, std::uint8_t** room) override {
    if (buffer_.size() < n) buffer_.resize(n);
    *room = buffer_.data();
    return {};
  }
  Status commit(std::size_t n) override {
    hash_.update(buffer_.data(), n);
    return {};
  }
  std::uint64_t position() const override { return hash_.bytes(); }
  const ContentHash& hash() const { return hash_; }

 private:
  std::vector<std::uint8_t> buffer_;
  ContentHash hash_;
};

// Closes a descriptor we opened.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ > STDERR_FILENO) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Decompresses `source`, in `format`, into `sink`: the decompression of
// process_file and the check of --rm alike. `progress` may be empty;
// `metrics` (LZ4 only) may be null.
Status decompress_as(Format format, Source& source, Sink& sink, const FileOptions& options, std::uint64_t max_output,
                     ProgressFn progress, StreamStats* stats, sched::RunMetrics* metrics) {
  switch (format) {
    case Format::gzip:
    case Format::zlib:
    case Format::deflate: {
      DeflateDecodeOptions decode;
      decode.container = container_of(format);
      decode.threads = options.threads;
      decode.max_output = max_output;
      decode.progress = std::move(progress);
      return deflate_decompress_stream(source, sink, decode, stats);
    }
    case Format::rans:
    case Format::lzr: {
      BlockFileDecodeOptions decode;
      decode.threads = options.threads;
      decode.max_output = max_output;
      decode.progress = std::move(progress);
      return format == Format::rans ? rans_file_decompress_stream(source, sink, decode, stats)
                                    : lzr_file_decompress_stream(source, sink, decode, stats);
    }
    case Format::zstd: {
      ZstdDecodeOptions decode;
      decode.max_output = max_output;
      decode.progress = std::move(progress);
      return zstd_decompress_stream(source, sink, decode, stats);
    }
    case Format::lz4: break;
  }
  Lz4DecodeOptions decode;
  decode.threads = options.threads;
  decode.backend = options.backend;
  decode.max_output = max_output;
  decode.metrics = metrics;
  decode.progress = std::move(progress);
  return lz4_decompress_stream(source, sink, decode, stats);
}

// Reads `fd` back from its start and decompresses it; true when that gives
// exactly the content `expected` describes.
bool verify_compressed(int fd, const ContentHash& expected, const FileOptions& options, Format format,
                       std::string* error) {
  if (lseek(fd, 0, SEEK_SET) != 0) {
    *error = errno_message("cannot read it back");
    return false;
  }
  auto source = fd_source(fd);
  HashOnlySink check;
  const Status s = decompress_as(format, *source, check, options, expected.bytes(), {}, nullptr, nullptr);
  if (!s) {
    *error = "verification failed, the output does not decompress: " + s.to_string();
    return false;
  }
  if (!(check.hash() == expected)) {
    *error = "verification failed: the output does not decompress to the input";
    return false;
  }
  return true;
}

// Reads `fd` back from its start; true when it holds the content `expected` describes.
bool verify_written(int fd, const ContentHash& expected, std::string* error) {
  if (lseek(fd, 0, SEEK_SET) != 0) {
    *error = errno_message("cannot read it back");
    return false;
  }
  std::vector<std::uint8_t> buffer(kReadBack);
  ContentHash written;
  for (;;) {
    const ssize_t got = read(fd, buffer.data(), buffer.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      *error = errno_message("cannot read it back");
      return false;
    }
    if (got == 0) break;
    written.update(buffer.data(), static_cast<std::size_t>(got));
  }
  if (!(written == expected)) {
    *error = "verification failed: the file on disk differs from what was written";
    return false;
  }
  return true;
}

// The output path of `input`, or empty for stdout. False when there is none.
bool pick_destination(const std::string& input, const FileOptions& options, std::string* destination,
                      std::string* error) {
  destination->clear();
  if (options.to_stdout || options.output == "-" || (input == "-" && options.output.empty())) return true;
  if (!options.output.empty()) {
    *destination = options.output;
    return true;
  }
  if (!options.decompress) {
    *destination = input + std::string(suffix_of(format_of(options.codec)));
    return true;
  }
  // Any known suffix is taken off, whatever the content turns out to be:
  // each format's, and .tgz becomes .tar.
  std::vector<std::string_view> suffixes;
  for (const FormatInfo& f : kFormats) suffixes.push_back(f.suffix);
  suffixes.push_back(".tgz");
  std::string known;
  for (const std::string_view suffix : suffixes) {
    const std::string stem = input.substr(0, input.size() - std::min(input.size(), suffix.size()));
    if (input.ends_with(suffix) && !stem.empty() && !stem.ends_with('/')) {
      *destination = suffix == ".tgz" ? stem + ".tar" : stem;
      return true;
    }
    if (suffix != ".tgz") known += std::string(known.empty() ? "" : ", ") + std::string(suffix);
  }
  *error = "unknown suffix, expected " + known + " (use -o FILE or -c)";
  return false;
}

void print_summary(const std::string& name, const std::string& destination, const FileOptions& options,
                   const StreamStats& stats, double seconds) {
  const std::uint64_t plain = options.decompress ? stats.bytes_out : stats.bytes_in;
  const std::uint64_t packed = options.decompress ? stats.bytes_in : stats.bytes_out;
  char ratio[32] = "-";
  if (plain) std::snprintf(ratio, sizeof ratio, "%.2f%%", 100.0 * static_cast<double>(packed) / static_cast<double>(plain));
  const double mbps = seconds > 0 ? static_cast<double>(plain) / seconds / 1e6 : 0.0;
  std::fprintf(stderr, "%s -> %s: %llu -> %llu bytes (%s), %.1f MB/s\n", name.c_str(),
               destination.empty() ? "stdout" : destination.c_str(),
               static_cast<unsigned long long>(stats.bytes_in), static_cast<unsigned long long>(stats.bytes_out),
               ratio, mbps);
}

// Compresses or decompresses one input. Reports its own errors.
bool process_file(const std::string& input, const FileOptions& options, std::vector<FileRun>* runs) {
  const bool from_stdin = input == "-";
  const std::string name = from_stdin ? "stdin" : input;
  std::string error;

  const FileDescriptor in(from_stdin ? STDIN_FILENO : open(input.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (in.get() < 0) {
    report(name, strerror(errno));
    return false;
  }
  struct stat in_stat {};
  if (fstat(in.get(), &in_stat) != 0) {
    report(name, strerror(errno));
    return false;
  }
  if (S_ISDIR(in_stat.st_mode)) {
    report(name, "is a directory");
    return false;
  }
  const bool regular_input = !from_stdin && S_ISREG(in_stat.st_mode);

  std::string destination;
  if (!pick_destination(input, options, &destination, &error)) {
    report(name, error);
    return false;
  }
  const bool to_stdout = destination.empty();
  if (!to_stdout) {
    struct stat out_stat {};
    if (lstat(destination.c_str(), &out_stat) == 0) {
      struct stat target {};
      if (stat(destination.c_str(), &target) == 0 && target.st_dev == in_stat.st_dev &&
          target.st_ino == in_stat.st_ino) {
        report(name, "the input and the output " + destination + " are the same file");
        return false;
      }
      if (!options.force) {
        report(destination, "already exists (use -f to overwrite)");
        return false;
      }
      if (S_ISDIR(out_stat.st_mode)) {
        report(destination, "is a directory");
        return false;
      }
    }
  }

  // Declared before the sinks so that they are destroyed, and flushed, first.
  AtomicOutput output;
  if (!to_stdout && !output.open(destination, &error)) {
    report(destination, error);
    return false;
  }
  const bool remove_input = options.remove_inputs && regular_input && !to_stdout;

  auto file_source = fd_source(in.get());
  auto file_sink = fd_sink(to_stdout ? STDOUT_FILENO : output.fd());
  HashingSource hashing_source(*file_source);
  HashingSink hashing_sink(*file_sink);
  // Hash only when --rm will need it.
  Source& source = remove_input && !options.decompress ? static_cast<Source&>(hashing_source) : *file_source;
  Sink& sink = remove_input && options.decompress ? static_cast<Sink&>(hashing_sink) : *file_sink;

  std::optional<ProgressBar> bar;
  if (const std::int64_t total = file_source->size_hint(); progress_wanted(options.verbosity, total)) {
    bar.emplace(name, total);
  }
  FileRun run;
  run.name = name;
  run.decompress = options.decompress;
  StreamStats& stats = run.stats;
  Status status;
  const auto start = std::chrono::steady_clock::now();
  const Format format = options.decompress ? detect_format(source, input, options) : format_of(options.codec);
  const ProgressFn progress = bar ? bar->callback() : ProgressFn{};
  if (options.decompress) {
    status = decompress_as(format, source, sink, options, UINT64_MAX, progress, &stats, &run.metrics);
  } else if (is_deflate(format)) {
    DeflateOptions encode;
    encode.container = container_of(format);
    encode.level = options.deflate_level;
    encode.threads = options.threads;
    if (regular_input) {
      const std::size_t slash = input.find_last_of('/');
      encode.name = slash == std::string::npos ? input : input.substr(slash + 1);
      encode.mtime = static_cast<std::uint32_t>(in_stat.st_mtime > 0 ? in_stat.st_mtime : 0);
    }
    encode.progress = progress;
    if (!to_stdout) {
      // A file's header is rewritten with the index at the end, so that the
      // compressed chunks are not held in memory until then.
      const int fd = output.fd();
      encode.rewrite_header = [fd](const std::uint8_t* header, std::size_t size) -> Status {
        std::size_t done = 0;
        while (done < size) {
          const ssize_t w = pwrite(fd, header + done, size - done, static_cast<off_t>(done));
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) return {StatusCode::io_error, "cannot rewrite the gzip header"};
          done += static_cast<std::size_t>(w);
        }
        return {};
      };
    }
    status = deflate_compress_stream(source, sink, encode, &stats);
  } else if (format == Format::rans) {
    RansFileOptions encode;
    if (options.file_block_size) encode.block_size = options.file_block_size;
    encode.threads = options.threads;
    encode.progress = progress;
    status = rans_file_compress_stream(source, sink, encode, &stats);
  } else if (format == Format::lzr) {
    LzrFileOptions encode;
    if (options.file_block_size) encode.block_size = options.file_block_size;
    encode.threads = options.threads;
    encode.progress = progress;
    status = lzr_file_compress_stream(source, sink, encode, &stats);
  } else if (format == Format::zstd) {
    ZstdOptions encode;
    encode.level = options.zstd_level;
    encode.threads = options.threads;
    encode.progress = progress;
    status = zstd_compress_stream(source, sink, encode, &stats);
  } else {
    Lz4FrameOptions frame = options.frame;
    frame.metrics = &run.metrics;
    frame.progress = progress;
    status = lz4_compress_stream(source, sink, frame, &stats);
  }
  if (status) status = sink.flush();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.seconds = seconds;
  if (bar) bar->finish();
  // A GPU that failed was replaced by the CPU: the output is complete, but say so.
  if (options.verbosity > 0) {
    for (const std::string& w : run.metrics.warnings) report(name, "warning: " + w);
  }
  if (!status) {
    report(name, status.to_string());
    return false;
  }

  if (!to_stdout) {
    if (remove_input) {
      const bool verified = options.decompress
                                ? verify_written(output.fd(), hashing_sink.hash(), &error)
                                : verify_compressed(output.fd(), hashing_source.hash(), options, format, &error);
      if (!verified) {
        report(destination, error + "; " + name + " kept");
        return false;
      }
    }
    const bool metadata_ok = regular_input ? output.copy_metadata(in_stat, &error) : output.set_default_mode(&error);
    if (!metadata_ok || (remove_input && !output.sync(&error)) || !output.commit(options.force, &error)) {
      report(destination, error);
      return false;
    }
  }
  if (remove_input) {
    sync_parent_directory(destination);
    if (unlink(input.c_str()) != 0) {
      report(name, errno_message("cannot remove the input"));
      return false;
    }
  }
  if (options.verbosity >= 2) print_summary(name, destination, options, stats, seconds);
  if (options.stats) print_run_stats(run);
  if (runs) runs->push_back(std::move(run));
  return true;
}

// Test hooks, from the environment: TANDEM_TEST_GPU=emulated gives the
// scheduler a GPU worker that runs on the CPU (the GPU encoder's twin), and
// TANDEM_TEST_GPU_FAULT=KIND@N makes the GPU fail in its batch N (KIND:
// no-device, oom, kernel, copy), so that the hand-back to the CPU can be
// tested on any machine.
void install_test_hooks() {
  if (const char* gpu = std::getenv("TANDEM_TEST_GPU"); gpu && std::string_view(gpu) == "emulated") {
    static const std::unique_ptr<gpu::Lz4Pipeline> emulated = gpu::Lz4Pipeline::emulated();
    hybrid::set_test_pipeline(emulated.get());
  }
  if (const char* fault = std::getenv("TANDEM_TEST_GPU_FAULT")) {
    const std::string text(fault);
    const std::size_t at = text.find('@');
    gpu::Fault kind;
    if (at != std::string::npos && gpu::parse_fault(text.substr(0, at).c_str(), &kind)) {
      gpu::inject_fault(kind, std::atoi(text.c_str() + at + 1));
    }
  }
}

}  // namespace

int run_files(const FileOptions& options) {
  // Fail early, once, when the backend cannot run here (no GPU, or a level
  // the GPU lacks). The library gets the request itself: with `auto` it picks
  // per batch (small inputs stay on the CPU).
  install_test_hooks();
  Backend resolved = Backend::cpu;
  // Every codec but LZ4 runs on the CPU.
  const bool cpu_codec = !options.codec.empty() && format_of(options.codec) != Format::lz4;
  if (cpu_codec && options.backend == Backend::gpu) {
    std::fprintf(stderr, "tandem: --backend gpu: unsupported: %s runs on the CPU\n", options.codec.c_str());
    return 1;
  }
  const Status s = cpu_codec ? Status{}
                                  : hybrid::hybrid_backend(options.backend,
                                                           options.decompress ? 0 : options.frame.level, &resolved);
  if (!s) {
    std::fprintf(stderr, "tandem: --backend %s: %s\n", backend_name(options.backend), s.to_string().c_str());
    return 1;
  }

  bool reads_stdin = false;
  for (const auto& input : options.inputs) reads_stdin |= input == "-";
  const bool writes_stdout = options.to_stdout || options.output == "-" || (reads_stdin && options.output.empty());
  if (!options.force) {
    if (writes_stdout && !options.decompress && isatty(STDOUT_FILENO)) {
      std::fprintf(stderr, "tandem: stdout is a terminal; refusing to write compressed data to it (use -f to force)\n");
      return 1;
    }
    if (reads_stdin && isatty(STDIN_FILENO)) {
      std::fprintf(stderr, "tandem: stdin is a terminal; refusing to read %s from it (use -f to force)\n",
                   options.decompress ? "compressed data" : "data to compress");
      return 1;
    }
  }
  if (options.remove_inputs && (options.to_stdout || options.output == "-") && options.verbosity > 0) {
    std::fprintf(stderr, "tandem: warning: --rm ignored, inputs written to stdout are kept\n");
  }

  install_signal_cleanup();
  bool all_ok = true;
  std::vector<FileRun> runs;
  for (const auto& input : options.inputs) all_ok &= process_file(input, options, &runs);
  if (!options.json_path.empty()) {
    std::string error;
    if (!write_runs_json(options.json_path, runs, &error)) {
      report(options.json_path, error);
      return 1;
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace tandem::cli
