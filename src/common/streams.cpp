// Sources and sinks over memory buffers and file descriptors.
//
// The fd source keeps unconsumed bytes contiguous in one growable buffer so a
// decoder can look at a whole batch of blocks at once; the fd sink hands out
// room in its buffer and writes it out once enough has been committed, so the
// codecs write straight into the bytes that go to the file.
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "tandem/tandem.hpp"

namespace tandem {

Status Sink::write(const void* data, std::size_t n) {
  std::uint8_t* room = nullptr;
  if (Status s = reserve(n, &room); !s) return s;
  if (n) std::memcpy(room, data, n);
  return commit(n);
}

namespace {

constexpr std::size_t kReadChunk = 1u << 20;
constexpr std::size_t kFlushThreshold = 4u << 20;

class MemorySource final : public Source {
 public:
  explicit MemorySource(ConstBuffer in) : p_(static_cast<const std::uint8_t*>(in.data)), size_(in.size) {}
  Status ensure(std::size_t, std::size_t* available) override {
    *available = size_ - pos_;
    return {};
  }
  const std::uint8_t* data() const override { return p_ + pos_; }
  void consume(std::size_t n) override { pos_ += std::min(n, size_ - pos_); }
  std::uint64_t position() const override { return pos_; }
  std::int64_t size_hint() const override { return static_cast<std::int64_t>(size_); }
  bool stable() const override { return true; }

 private:
  const std::uint8_t* p_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

class FdSource final : public Source {
 public:
  explicit FdSource(int fd) : fd_(fd) {
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      const off_t here = lseek(fd, 0, SEEK_CUR);
      if (here >= 0 && here <= st.st_size) size_hint_ = st.st_size - here;
    }
  }

  Status ensure(std::size_t n, std::size_t* available) override {
    while (end_ - begin_ < n && !eof_) {
      if (begin_ > 0 && buf_.size() - begin_ < n) {
        // Move the unconsumed bytes to the front before growing.
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      const std::size_t want = std::max(n - (end_ - begin_), kReadChunk);
      if (buf_.size() < end_ + want) {
        try {
          buf_.resize(end_ + want);
        } catch (const std::bad_alloc&) {
          return {StatusCode::out_of_memory, "read buffer"};
        }
      }
      const ssize_t got = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
      if (got < 0) {
        if (errno == EINTR) continue;
        return {StatusCode::io_error, "read failed"};
      }
      if (got == 0) eof_ = true;
      end_ += static_cast<std::size_t>(got);
    }
    *available = end_ - begin_;
    return {};
  }
  const std::uint8_t* data() const override { return buf_.data() + begin_; }
  void consume(std::size_t n) override {
    n = std::min(n, end_ - begin_);
    begin_ += n;
    pos_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  std::uint64_t position() const override { return pos_; }
  std::int64_t size_hint() const override { return size_hint_; }

 private:
  int fd_;
  std::vector<std::uint8_t> buf_;
  std::size_t begin_ = 0, end_ = 0;
  std::uint64_t pos_ = 0;
  bool eof_ = false;
  std::int64_t size_hint_ = -1;
};

class VectorSink final : public Sink {
 public:
  VectorSink(std::vector<std::uint8_t>* out, std::uint64_t limit) : out_(out), limit_(limit), base_(out->size()) {}
  Status reserve(std::size_t n, std::uint8_t** room) override {
    const std::size_t used = base_ + pos_;
    try {
      if (out_->size() < used + n) {
        if (out_->capacity() < used + n) out_->reserve(std::max(used + n, out_->capacity() * 3 / 2));
        out_->resize(used + n);
      }
    } catch (const std::bad_alloc&) {
      return {StatusCode::out_of_memory, "output vector"};
    }
    *room = out_->data() + used;
    return {};
  }
  // The vector keeps its reserved tail until flush() or destruction, so bytes
  // are zero-filled once, not at every reserve.
  ~VectorSink() override { trim(); }
  Status commit(std::size_t n) override {
    if (pos_ + n > limit_) {
      trim();
      return {StatusCode::output_limit, "output exceeds the limit"};
    }
    pos_ += n;
    return {};
  }
  Status flush() override {
    trim();
    return {};
  }
  std::uint64_t position() const override { return pos_; }

 private:
  void trim() { out_->resize(base_ + pos_); }

  std::vector<std::uint8_t>* out_;
  std::uint64_t limit_;
  std::size_t base_;
  std::uint64_t pos_ = 0;
};

class BufferSink final : public Sink {
 public:
  explicit BufferSink(MutableBuffer out) : p_(static_cast<std::uint8_t*>(out.data)), cap_(out.size) {}
  Status reserve(std::size_t n, std::uint8_t** room) override {
    if (n > cap_ - pos_) return {StatusCode::output_too_small, "output buffer is full"};
    *room = p_ + pos_;
    return {};
  }
  Status commit(std::size_t n) override {
    if (n > cap_ - pos_) return {StatusCode::output_too_small, "output buffer is full"};
    pos_ += n;
    return {};
  }
  std::uint64_t position() const override { return pos_; }
  std::uint8_t* place(std::uint64_t position, std::size_t n) override {
    // The buffer's fixed fields only: callers may be on another thread.
    if (position > cap_ || n > cap_ - position) return nullptr;
    return p_ + position;
  }

 private:
  std::uint8_t* p_;
  std::size_t cap_;
  std::size_t pos_ = 0;
};

class FdSink final : public Sink {
 public:
  explicit FdSink(int fd) : fd_(fd) {}
  ~FdSink() override { (void)flush(); }
  Status reserve(std::size_t n, std::uint8_t** room) override {
    try {
      if (buf_.size() < used_ + n) buf_.resize(used_ + n);
    } catch (const std::bad_alloc&) {
      return {StatusCode::out_of_memory, "write buffer"};
    }
    *room = buf_.data() + used_;
    return {};
  }
  Status commit(std::size_t n) override {
    used_ += n;
    pos_ += n;
    if (used_ >= kFlushThreshold) return flush();
    return {};
  }
  Status flush() override {
    std::size_t done = 0;
    while (done < used_) {
      const ssize_t w = ::write(fd_, buf_.data() + done, used_ - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        used_ = 0;
        return {StatusCode::io_error, errno == ENOSPC ? "no space left on device" : "write failed"};
      }
      done += static_cast<std::size_t>(w);
    }
    used_ = 0;
    return {};
  }
  std::uint64_t position() const override { return pos_; }

 private:
  int fd_;
  std::vector<std::uint8_t> buf_;
  std::size_t used_ = 0;
  std::uint64_t pos_ = 0;
};

}  // namespace

std::unique_ptr<Source> memory_source(ConstBuffer input) { return std::make_unique<MemorySource>(input); }
std::unique_ptr<Source> fd_source(int fd) { return std::make_unique<FdSource>(fd); }
std::unique_ptr<Sink> vector_sink(std::vector<std::uint8_t>* out, std::uint64_t limit) {
  return std::make_unique<VectorSink>(out, limit);
}
std::unique_ptr<Sink> buffer_sink(MutableBuffer output) { return std::make_unique<BufferSink>(output); }
std::unique_ptr<Sink> fd_sink(int fd) { return std::make_unique<FdSink>(fd); }

}  // namespace tandem
