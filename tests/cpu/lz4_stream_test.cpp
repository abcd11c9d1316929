// Sources, sinks and the streaming LZ4 frame functions: memory and vector
// streams, file descriptors on files and on pipes, stats and progress, I/O
// errors that must come back as statuses, and minimal sources and sinks that
// hold the codec to the letter of the Source/Sink contract.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <thread>

#include "format/lz4_frame_format.hpp"
#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::ConstBuffer;
using tandem::Lz4DecodeOptions;
using tandem::Lz4FrameOptions;
using tandem::MutableBuffer;
using tandem::Status;
using tandem::StatusCode;
using tandem::test::Bytes;
using tandem::test::StingySource;
namespace lz4f = tandem::lz4f;

ConstBuffer cb(const Bytes& b) { return {b.data(), b.size()}; }

// ------------------------------------------------------ strict test streams ----

// Gives exactly the room reserve() asks for, in a fresh allocation, and
// checks commit() against it.
class StrictSink final : public tandem::Sink {
 public:
  Status reserve(std::size_t n, std::uint8_t** room) override {
    room_ = std::make_unique<std::uint8_t[]>(std::max<std::size_t>(n, 1));
    size_ = n;
    *room = room_.get();
    return {};
  }
  Status commit(std::size_t n) override {
    if (n > size_) {
      violations++;
      return {StatusCode::invalid_argument, "commit beyond reserve"};
    }
    out.insert(out.end(), room_.get(), room_.get() + n);
    size_ = 0;  // a second commit of the same room is not allowed
    return {};
  }
  std::uint64_t position() const override { return out.size(); }
  Bytes out;
  int violations = 0;

 private:
  std::unique_ptr<std::uint8_t[]> room_;
  std::size_t size_ = 0;
};

// Fails with io_error once `fail_at` bytes have gone through.
class FailingSink final : public tandem::Sink {
 public:
  explicit FailingSink(std::size_t fail_at) : fail_at_(fail_at) {}
  Status reserve(std::size_t n, std::uint8_t** room) override {
    buf_.resize(std::max<std::size_t>(n, 1));
    *room = buf_.data();
    return {};
  }
  Status commit(std::size_t n) override {
    if (pos_ + n > fail_at_) return {StatusCode::io_error, "test sink failure"};
    pos_ += n;
    return {};
  }
  std::uint64_t position() const override { return pos_; }

 private:
  std::size_t fail_at_, pos_ = 0;
  Bytes buf_;
};

class FailingSource final : public tandem::Source {
 public:
  FailingSource(const Bytes& in, std::size_t fail_at) : in_(in), fail_at_(fail_at) {}
  Status ensure(std::size_t n, std::size_t* available) override {
    if (pos_ + n > fail_at_) return {StatusCode::io_error, "test source failure"};
    *available = std::min(n, in_.size() - pos_);
    return {};
  }
  const std::uint8_t* data() const override { return in_.data() + pos_; }
  void consume(std::size_t n) override { pos_ += n; }
  std::uint64_t position() const override { return pos_; }

 private:
  const Bytes& in_;
  std::size_t fail_at_, pos_ = 0;
};

// --------------------------------------------------------- fd helpers ----

// A reader that stops early must not kill the test with SIGPIPE.
const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct Pipe {
  Fd r, w;
  Pipe() {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe");
    r.fd = p[0];
    w.fd = p[1];
  }
};

void write_all(int fd, const Bytes& b) {
  std::size_t at = 0;
  while (at < b.size()) {
    const ssize_t n = ::write(fd, b.data() + at, b.size() - at);
    if (n <= 0) return;
    at += static_cast<std::size_t>(n);
  }
}

Bytes read_all(int fd) {
  Bytes out;
  std::uint8_t buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

Lz4FrameOptions frame_opts(std::size_t block = 64u << 10, int threads = 2) {
  Lz4FrameOptions o;
  o.block_size = block;
  o.threads = threads;
  o.backend = tandem::Backend::cpu;
  return o;
}
Lz4DecodeOptions decode_opts(int threads = 2) {
  Lz4DecodeOptions o;
  o.threads = threads;
  o.backend = tandem::Backend::cpu;
  return o;
}

// ------------------------------------------------------- memory streams ----

TEST(Streams, MemorySource) {
  const Bytes data = tandem::test::random_bytes(100, 1);
  auto src = tandem::memory_source(cb(data));
  EXPECT_EQ(src->size_hint(), 100);
  EXPECT_EQ(src->position(), 0u);
  std::size_t avail = 0;
  ASSERT_STATUS(src->ensure(10, &avail), StatusCode::ok);
  EXPECT_GE(avail, 10u);
  EXPECT_EQ(src->data(), data.data()) << "a memory source makes no copies";
  src->consume(30);
  EXPECT_EQ(src->position(), 30u);
  ASSERT_STATUS(src->ensure(1000, &avail), StatusCode::ok);
  EXPECT_EQ(avail, 70u) << "fewer than asked only at the end";
  EXPECT_EQ(src->data(), data.data() + 30);
  src->consume(70);
  ASSERT_STATUS(src->ensure(1, &avail), StatusCode::ok);
  EXPECT_EQ(avail, 0u);
  EXPECT_EQ(src->position(), 100u);
}

TEST(Streams, EmptyMemorySource) {
  auto src = tandem::memory_source({nullptr, 0});
  std::size_t avail = 99;
  ASSERT_STATUS(src->ensure(4, &avail), StatusCode::ok);
  EXPECT_EQ(avail, 0u);
  EXPECT_EQ(src->size_hint(), 0);
}

TEST(Streams, VectorSink) {
  Bytes out;
  auto sink = tandem::vector_sink(&out, 10);
  ASSERT_STATUS(sink->write("hello", 5), StatusCode::ok);
  std::uint8_t* room = nullptr;
  ASSERT_STATUS(sink->reserve(3, &room), StatusCode::ok);
  ASSERT_NE(room, nullptr);
  std::memcpy(room, "abc", 3);
  ASSERT_STATUS(sink->commit(2), StatusCode::ok);
  EXPECT_EQ(sink->position(), 7u);
  ASSERT_STATUS(sink->flush(), StatusCode::ok);
  EXPECT_EQ(std::string(out.begin(), out.end()), "helloab");
  ASSERT_STATUS(sink->write("xyz", 3), StatusCode::ok);  // exactly at the limit
  EXPECT_STATUS(sink->write("!", 1), StatusCode::output_limit);
  EXPECT_LE(out.size(), 10u);
}

TEST(Streams, VectorSinkAppends) {
  Bytes out{'a'};
  auto sink = tandem::vector_sink(&out);
  ASSERT_STATUS(sink->write("b", 1), StatusCode::ok);
  EXPECT_EQ(std::string(out.begin(), out.end()), "ab");
}

TEST(Streams, BufferSink) {
  Bytes buf(8, 0);
  auto sink = tandem::buffer_sink({buf.data(), buf.size()});
  ASSERT_STATUS(sink->write("12345678", 8), StatusCode::ok);
  EXPECT_EQ(sink->position(), 8u);
  EXPECT_STATUS(sink->write("9", 1), StatusCode::output_too_small);
  EXPECT_EQ(std::string(buf.begin(), buf.end()), "12345678");
  std::uint8_t* room = nullptr;
  EXPECT_STATUS(sink->reserve(1, &room), StatusCode::output_too_small);
}

TEST(Streams, StreamRoundTripThroughMemory) {
  const Bytes data = tandem::test::mixed_bytes(1500000, 2);
  Bytes frame, back;
  {
    auto src = tandem::memory_source(cb(data));
    auto sink = tandem::vector_sink(&frame);
    tandem::StreamStats stats;
    ASSERT_STATUS(tandem::lz4_compress_stream(*src, *sink, frame_opts(), &stats), StatusCode::ok);
    ASSERT_STATUS(sink->flush(), StatusCode::ok);
    EXPECT_EQ(stats.bytes_in, data.size());
    EXPECT_EQ(stats.bytes_out, frame.size());
  }
  {
    auto src = tandem::memory_source(cb(frame));
    auto sink = tandem::vector_sink(&back);
    tandem::StreamStats stats;
    ASSERT_STATUS(tandem::lz4_decompress_stream(*src, *sink, decode_opts(), &stats), StatusCode::ok);
    EXPECT_EQ(stats.bytes_in, frame.size());
    EXPECT_EQ(stats.bytes_out, data.size());
    EXPECT_EQ(stats.frames, 1u);
  }
  EXPECT_TRUE(back == data);
  // The in-memory convenience writes the same frame.
  Bytes direct;
  ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &direct, frame_opts()), StatusCode::ok);
  EXPECT_TRUE(direct == frame);
}

TEST(Streams, StingySourceAndStrictSink) {
  // The codec must work with a source that never gives more than asked and a
  // sink that never gives more room than asked, for every frame shape.
  const Bytes data = tandem::test::mixed_bytes(400000, 3);
  for (int shape = 0; shape < 6; ++shape) {
    SCOPED_TRACE(testing::Message() << "shape " << shape);
    Lz4FrameOptions o = frame_opts(64u << 10, 1 + shape % 3);
    o.linked_blocks = shape & 1;
    o.block_checksum = shape & 2;
    o.legacy = shape == 5;
    StingySource src(data, shape % 2 ? static_cast<std::int64_t>(data.size()) : -1);
    StrictSink frame;
    ASSERT_STATUS(tandem::lz4_compress_stream(src, frame, o), StatusCode::ok);
    EXPECT_EQ(src.violations, 0);
    EXPECT_EQ(frame.violations, 0);
    if (!o.legacy) {
      lz4f::FrameHeader h;
      ASSERT_STATUS(lz4f::parse_frame_header(frame.out.data(), frame.out.size(), &h), StatusCode::ok);
      EXPECT_EQ(h.has_content_size, src.size_hint() >= 0) << "content size only when the source knows it";
    }
    StingySource fsrc(frame.out);
    StrictSink back;
    ASSERT_STATUS(tandem::lz4_decompress_stream(fsrc, back, decode_opts(1 + shape % 3)), StatusCode::ok);
    EXPECT_EQ(fsrc.violations, 0);
    EXPECT_EQ(back.violations, 0);
    EXPECT_TRUE(back.out == data);
  }
}

TEST(Streams, SinkErrorsComeBack) {
  const Bytes data = tandem::test::mixed_bytes(500000, 4);
  for (std::size_t at : {std::size_t{0}, std::size_t{3}, std::size_t{1000}, std::size_t{100000}}) {
    auto src = tandem::memory_source(cb(data));
    FailingSink sink(at);
    EXPECT_STATUS(tandem::lz4_compress_stream(*src, sink, frame_opts()), StatusCode::io_error) << at;
  }
  Bytes frame;
  ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &frame, frame_opts()), StatusCode::ok);
  for (std::size_t at : {std::size_t{0}, std::size_t{1000}, std::size_t{300000}}) {
    auto src = tandem::memory_source(cb(frame));
    FailingSink sink(at);
    EXPECT_STATUS(tandem::lz4_decompress_stream(*src, sink, decode_opts()), StatusCode::io_error) << at;
  }
}

TEST(Streams, SourceErrorsComeBack) {
  const Bytes data = tandem::test::mixed_bytes(500000, 5);
  for (std::size_t at : {std::size_t{0}, std::size_t{1000}, std::size_t{200000}}) {
    FailingSource src(data, at);
    Bytes out;
    auto sink = tandem::vector_sink(&out);
    EXPECT_STATUS(tandem::lz4_compress_stream(src, *sink, frame_opts()), StatusCode::io_error) << at;
  }
  Bytes frame;
  ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &frame, frame_opts()), StatusCode::ok);
  for (std::size_t at : {std::size_t{0}, std::size_t{10}, std::size_t{100000}}) {
    FailingSource src(frame, at);
    Bytes out;
    auto sink = tandem::vector_sink(&out);
    EXPECT_STATUS(tandem::lz4_decompress_stream(src, *sink, decode_opts()), StatusCode::io_error) << at;
  }
}

TEST(Streams, CompressStreamHonoursTheSinkLimit) {
  const Bytes data = tandem::test::random_bytes(300000, 6);
  auto src = tandem::memory_source(cb(data));
  Bytes out;
  auto sink = tandem::vector_sink(&out, 1000);
  EXPECT_STATUS(tandem::lz4_compress_stream(*src, *sink, frame_opts()), StatusCode::output_limit);
  EXPECT_LE(out.size(), 1000u);
}

// ------------------------------------------------------ file descriptors ----

TEST(Streams, FdSourceAndSinkOnFiles) {
  tandem::test::TempDir dir;
  const Bytes data = tandem::test::mixed_bytes(3000000, 7);
  tandem::test::write_file(dir / "in", data);

  {
    Fd in(::open((dir / "in").c_str(), O_RDONLY));
    ASSERT_GE(in.fd, 0);
    auto src = tandem::fd_source(in.fd);
    EXPECT_EQ(src->size_hint(), static_cast<std::int64_t>(data.size())) << "a regular file knows its size";
    Fd out(::open((dir / "in.lz4").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    ASSERT_GE(out.fd, 0);
    auto sink = tandem::fd_sink(out.fd);
    tandem::StreamStats stats;
    ASSERT_STATUS(tandem::lz4_compress_stream(*src, *sink, frame_opts(256u << 10), &stats), StatusCode::ok);
    ASSERT_STATUS(sink->flush(), StatusCode::ok);
    EXPECT_EQ(stats.bytes_in, data.size());
    EXPECT_EQ(src->position(), data.size());
  }
  const Bytes frame = tandem::test::read_file(dir / "in.lz4");
  lz4f::FrameHeader h;
  ASSERT_STATUS(lz4f::parse_frame_header(frame.data(), frame.size(), &h), StatusCode::ok);
  EXPECT_TRUE(h.has_content_size) << "fd_source on a regular file knows the size";
  EXPECT_EQ(h.content_size, data.size());

  {
    Fd in(::open((dir / "in.lz4").c_str(), O_RDONLY));
    Fd out(::open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    ASSERT_GE(in.fd, 0);
    ASSERT_GE(out.fd, 0);
    auto src = tandem::fd_source(in.fd);
    auto sink = tandem::fd_sink(out.fd);
    tandem::StreamStats stats;
    ASSERT_STATUS(tandem::lz4_decompress_stream(*src, *sink, decode_opts(), &stats), StatusCode::ok);
    ASSERT_STATUS(sink->flush(), StatusCode::ok);
    EXPECT_EQ(stats.bytes_in, frame.size());
    EXPECT_EQ(stats.bytes_out, data.size());
  }
  EXPECT_TRUE(tandem::test::read_file(dir / "out") == data);
}

TEST(Streams, FdSourceReadsFromTheCurrentOffset) {
  tandem::test::TempDir dir;
  const Bytes data = tandem::test::text_like_bytes(10000, 8);
  tandem::test::write_file(dir / "f", data);
  Fd in(::open((dir / "f").c_str(), O_RDONLY));
  ASSERT_GE(in.fd, 0);
  ASSERT_EQ(::lseek(in.fd, 100, SEEK_SET), 100);
  auto src = tandem::fd_source(in.fd);
  std::size_t avail = 0;
  ASSERT_STATUS(src->ensure(20000, &avail), StatusCode::ok);
  ASSERT_EQ(avail, data.size() - 100);
  EXPECT_EQ(std::memcmp(src->data(), data.data() + 100, avail), 0);
}

TEST(Streams, FdSinkOnAReadOnlyDescriptorIsAnIoError) {
  tandem::test::TempDir dir;
  tandem::test::write_file(dir / "ro", Bytes(10, 1));
  Fd fd(::open((dir / "ro").c_str(), O_RDONLY));
  ASSERT_GE(fd.fd, 0);
  const Bytes data = tandem::test::mixed_bytes(300000, 9);
  auto src = tandem::memory_source(cb(data));
  auto sink = tandem::fd_sink(fd.fd);
  Status st = tandem::lz4_compress_stream(*src, *sink, frame_opts());
  if (st.ok()) st = sink->flush();  // a buffered sink may only find out here
  EXPECT_STATUS(st, StatusCode::io_error);
}

TEST(Streams, FdSourceOnAWriteOnlyDescriptorIsAnIoError) {
  tandem::test::TempDir dir;
  Fd fd(::open((dir / "wo").c_str(), O_WRONLY | O_CREAT, 0644));
  ASSERT_GE(fd.fd, 0);
  auto src = tandem::fd_source(fd.fd);
  Bytes out;
  auto sink = tandem::vector_sink(&out);
  EXPECT_STATUS(tandem::lz4_decompress_stream(*src, *sink, decode_opts()), StatusCode::io_error);
}

TEST(Streams, PipesBothWays) {
  // raw -> pipe -> compress -> pipe -> (reader thread) frame;
  // frame -> pipe -> decompress -> pipe -> (reader thread) back.
  // Several MiB so that every pipe fills and blocks many times.
  const Bytes data = tandem::test::mixed_bytes(6000000, 10);
  for (bool linked : {false, true}) {
    SCOPED_TRACE(linked ? "linked" : "independent");
    Bytes frame;
    {
      Pipe in, out;
      std::thread feeder([&] {
        write_all(in.w.fd, data);
        in.w.reset();
      });
      std::thread drainer([&] { frame = read_all(out.r.fd); });
      auto src = tandem::fd_source(in.r.fd);
      EXPECT_EQ(src->size_hint(), -1) << "a pipe has no size";
      Status st;
      {
        auto sink = tandem::fd_sink(out.w.fd);
        Lz4FrameOptions o = frame_opts(256u << 10, 2);
        o.linked_blocks = linked;
        st = tandem::lz4_compress_stream(*src, *sink, o);
        if (st.ok()) st = sink->flush();
      }
      out.w.reset();
      feeder.join();
      drainer.join();
      ASSERT_STATUS(st, StatusCode::ok);
    }
    lz4f::FrameHeader h;
    ASSERT_STATUS(lz4f::parse_frame_header(frame.data(), frame.size(), &h), StatusCode::ok);
    EXPECT_FALSE(h.has_content_size) << "a pipe's size is not known in advance";
    EXPECT_EQ(h.independent_blocks, !linked);

    Bytes back;
    {
      Pipe in, out;
      std::thread feeder([&] {
        write_all(in.w.fd, frame);
        in.w.reset();
      });
      std::thread drainer([&] { back = read_all(out.r.fd); });
      Status st;
      {
        auto src = tandem::fd_source(in.r.fd);
        auto sink = tandem::fd_sink(out.w.fd);
        st = tandem::lz4_decompress_stream(*src, *sink, decode_opts(2));
        if (st.ok()) st = sink->flush();
      }
      out.w.reset();
      feeder.join();
      drainer.join();
      ASSERT_STATUS(st, StatusCode::ok);
    }
    EXPECT_EQ(back.size(), data.size());
    EXPECT_TRUE(back == data);
  }
}

TEST(Streams, TruncatedFrameThroughAPipe) {
  const Bytes data = tandem::test::mixed_bytes(500000, 11);
  Bytes frame;
  ASSERT_STATUS(tandem::lz4_frame_compress(cb(data), &frame, frame_opts()), StatusCode::ok);
  frame.resize(frame.size() - 1);
  Pipe in;
  std::thread feeder([&] {
    write_all(in.w.fd, frame);
    in.w.reset();
  });
  Bytes out;
  Status st;
  {
    auto src = tandem::fd_source(in.r.fd);
    auto sink = tandem::vector_sink(&out);
    st = tandem::lz4_decompress_stream(*src, *sink, decode_opts());
  }
  in.r.reset();  // should the decoder stop early, let the feeder finish
  feeder.join();
  EXPECT_STATUS(st, StatusCode::truncated);
}

TEST(Streams, EmptyStreams) {
  Bytes frame;
  {
    auto src = tandem::memory_source({nullptr, 0});
    auto sink = tandem::vector_sink(&frame);
    ASSERT_STATUS(tandem::lz4_compress_stream(*src, *sink, frame_opts()), StatusCode::ok);
  }
  EXPECT_GE(frame.size(), lz4f::kMinHeaderSize + 4);
  Bytes back{1, 2, 3};
  back.clear();
  auto src = tandem::memory_source(cb(frame));
  auto sink = tandem::vector_sink(&back);
  tandem::StreamStats stats;
  ASSERT_STATUS(tandem::lz4_decompress_stream(*src, *sink, decode_opts(), &stats), StatusCode::ok);
  EXPECT_TRUE(back.empty());
  EXPECT_EQ(stats.frames, 1u);
  // An empty input is not a frame.
  auto empty = tandem::memory_source({nullptr, 0});
  EXPECT_STATUS(tandem::lz4_decompress_stream(*empty, *sink, decode_opts()), StatusCode::truncated);
}

}  // namespace
