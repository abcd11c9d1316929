// Slow round trips: 100 MB through the streaming API on files with bounded
// memory, and the Silesia corpus both ways against the `lz4` command.
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <memory>

#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::Lz4DecodeOptions;
using tandem::Lz4FrameOptions;
using tandem::StatusCode;
using tandem::test::Bytes;
using tandem::test::sh_quote;
using tandem::test::TempDir;
namespace fs = std::filesystem;

constexpr std::uint64_t kStreamBytes = 100'000'000;
constexpr std::size_t kChunk = 1u << 20;

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// XXH64 of a file, read a chunk at a time.
std::uint64_t hash_file(const fs::path& p, std::uint64_t* size) {
  Fd f(::open(p.c_str(), O_RDONLY));
  if (f.fd < 0) return 0;
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  Bytes buf(kChunk);
  *size = 0;
  for (;;) {
    const ssize_t n = ::read(f.fd, buf.data(), buf.size());
    if (n <= 0) break;
    XXH64_update(st, buf.data(), static_cast<std::size_t>(n));
    *size += static_cast<std::uint64_t>(n);
  }
  const std::uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

// Writes kStreamBytes of mixed data a chunk at a time (never all in memory);
// returns its XXH64.
std::uint64_t write_mixed_file(const fs::path& p) {
  Fd f(::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  EXPECT_GE(f.fd, 0);
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  std::uint64_t done = 0;
  for (std::uint64_t i = 0; done < kStreamBytes; ++i) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, kStreamBytes - done));
    const Bytes part = tandem::test::mixed_bytes(n, 5000 + i);
    XXH64_update(st, part.data(), part.size());
    EXPECT_EQ(::write(f.fd, part.data(), part.size()), static_cast<ssize_t>(part.size()));
    done += n;
  }
  const std::uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

void stream_file(const fs::path& in, const fs::path& out, bool compress, const Lz4FrameOptions& fo,
                 const Lz4DecodeOptions& dopt, tandem::StreamStats* stats) {
  Fd i(::open(in.c_str(), O_RDONLY));
  Fd o(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  ASSERT_GE(i.fd, 0);
  ASSERT_GE(o.fd, 0);
  auto src = tandem::fd_source(i.fd);
  auto sink = tandem::fd_sink(o.fd);
  if (compress) ASSERT_STATUS(tandem::lz4_compress_stream(*src, *sink, fo, stats), StatusCode::ok);
  else ASSERT_STATUS(tandem::lz4_decompress_stream(*src, *sink, dopt, stats), StatusCode::ok);
  ASSERT_STATUS(sink->flush(), StatusCode::ok);
}

class Slow100MB : public ::testing::TestWithParam<std::size_t> {};

TEST_P(Slow100MB, StreamRoundTripWithBoundedMemory) {
  const std::size_t block = GetParam();
  TempDir dir;
  const std::uint64_t want = write_mixed_file(dir / "in");
  // Memory bound: with 2 threads and blocks of `block`, "a few blocks per
  // thread" (in and out) over the process's baseline; always less than the
  // 100 MB that holding the stream would take.
  const std::uint64_t limit = std::min<std::uint64_t>(16u * block + (40u << 20), 96u << 20);
  const bool can_measure = tandem::test::reset_peak_rss();
  const std::uint64_t base = tandem::test::peak_rss_bytes();

  Lz4FrameOptions fo;
  fo.block_size = block;
  fo.threads = 2;
  fo.block_checksum = true;
  Lz4DecodeOptions dopt;
  dopt.threads = 2;
  tandem::StreamStats cstats, dstats;
  stream_file(dir / "in", dir / "in.lz4", true, fo, dopt, &cstats);
  if (HasFatalFailure()) return;
  EXPECT_EQ(cstats.bytes_in, kStreamBytes);
  const std::uint64_t after_compress = tandem::test::peak_rss_bytes();
  if (can_measure) tandem::test::reset_peak_rss();

  stream_file(dir / "in.lz4", dir / "out", false, fo, dopt, &dstats);
  if (HasFatalFailure()) return;
  const std::uint64_t after_decompress = tandem::test::peak_rss_bytes();
  EXPECT_EQ(dstats.bytes_out, kStreamBytes);
  EXPECT_EQ(dstats.bytes_in, cstats.bytes_out);
  EXPECT_EQ(dstats.frames, 1u);

  std::uint64_t size = 0;
  EXPECT_EQ(hash_file(dir / "out", &size), want);
  EXPECT_EQ(size, kStreamBytes);

  if (!can_measure) {
    std::cout << "peak RSS reset not available; memory bound not checked\n";
    return;
  }
#if defined(__SANITIZE_ADDRESS__)
  // ASan's quarantine keeps freed blocks resident; RSS says nothing here.
  std::cout << "AddressSanitizer build; memory bound not checked\n";
  return;
#endif
  RecordProperty("peak_rss_compress_MiB", static_cast<int>(after_compress >> 20));
  RecordProperty("peak_rss_decompress_MiB", static_cast<int>(after_decompress >> 20));
  std::cout << "block " << (block >> 10) << " KiB: baseline " << (base >> 20) << " MiB, peak compress "
            << (after_compress >> 20) << " MiB, peak decompress " << (after_decompress >> 20) << " MiB\n";
  // Growth over the baseline (the process before streaming).
  EXPECT_LT(after_compress - std::min(base, after_compress), limit)
      << "compression holds too much of the stream in memory";
  EXPECT_LT(after_decompress - std::min(base, after_decompress), limit)
      << "decompression holds too much of the stream in memory";
}

INSTANTIATE_TEST_SUITE_P(Lz4, Slow100MB, ::testing::Values(std::size_t{1u << 20}, std::size_t{4u << 20}),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return "block" + std::to_string(info.param >> 10) + "K";
                         });

// ----------------------------------------------------------------- Silesia ----

class Silesia : public ::testing::TestWithParam<std::string> {};

int run_lz4(const std::string& args, const fs::path& in, const fs::path& out) {
  std::string output;
  const std::string cmd =
      "lz4 -q -f " + args + " " + sh_quote(in.string()) + " " + sh_quote(out.string()) + " 2>&1";
  const int rc = tandem::test::run(cmd, &output);
  if (rc != 0) ADD_FAILURE() << cmd << " -> " << rc << ": " << output;
  return rc;
}

TEST_P(Silesia, BothWaysAgainstLz4) {
  const fs::path corpus = tandem::test::silesia_dir();
  if (corpus.empty()) GTEST_SKIP() << "Silesia corpus not found (set TANDEM_CORPUS or provide ../shared/corpus)";
  if (!tandem::test::have_tool("lz4")) GTEST_SKIP() << "the `lz4` command is not installed";
  const fs::path file = corpus / GetParam();
  ASSERT_TRUE(fs::exists(file)) << file;
  const Bytes data = tandem::test::read_file(file);
  TempDir dir;

  // tandem compresses, lz4 decompresses.
  for (int shape = 0; shape < 4; ++shape) {
    SCOPED_TRACE(testing::Message() << "tandem shape " << shape);
    Lz4FrameOptions o;
    o.linked_blocks = shape == 1;
    o.block_checksum = shape == 2;
    o.block_size = shape == 1 ? (64u << 10) : (4u << 20);
    o.level = shape == 3 ? 9 : 0;
    Bytes frame;
    ASSERT_STATUS(tandem::lz4_frame_compress({data.data(), data.size()}, &frame, o), StatusCode::ok);
    tandem::test::write_file(dir / "t.lz4", frame);
    ASSERT_EQ(run_lz4("-d", dir / "t.lz4", dir / "t.out"), 0);
    const Bytes back = tandem::test::read_file(dir / "t.out");
    EXPECT_EQ(back.size(), data.size());
    EXPECT_TRUE(back == data);
    RecordProperty("tandem_shape" + std::to_string(shape) + "_bytes", static_cast<int>(frame.size()));
  }

  // lz4 compresses, tandem decompresses.
  for (const char* args : {"", "-BD", "-BX", "-BD -BX -B4", "-9", "-l"}) {
    SCOPED_TRACE(testing::Message() << "lz4 " << args);
    ASSERT_EQ(run_lz4(args, file, dir / "r.lz4"), 0);
    const Bytes frame = tandem::test::read_file(dir / "r.lz4");
    Bytes back;
    ASSERT_STATUS(tandem::lz4_frame_decompress({frame.data(), frame.size()}, &back), StatusCode::ok);
    EXPECT_EQ(back.size(), data.size());
    EXPECT_TRUE(back == data);
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, Silesia, ::testing::ValuesIn(tandem::test::silesia_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
