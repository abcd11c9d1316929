// The progress bar of `tandem compress` and `tandem decompress`.
//
// One line on stderr, redrawn with a carriage return at most ten times a
// second from the library's ProgressFn callbacks (which may come from worker
// threads), and erased by finish() so that later messages start on a clean
// line. Whether to show it at all is the caller's decision (see
// progress_wanted()).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "tandem/tandem.hpp"

namespace tandem::cli {

// Inputs at least this large get a progress bar; so does stdin, whose size is unknown.
inline constexpr std::int64_t kProgressMinBytes = std::int64_t{64} << 20;

// True when a bar should be drawn: not quiet, stderr is a terminal, and the
// input is large or of unknown size (total_bytes < 0).
bool progress_wanted(int verbosity, std::int64_t total_bytes);

class ProgressBar {
 public:
  // `total_bytes` is the input size, or -1 when unknown.
  ProgressBar(std::string label, std::int64_t total_bytes);
  ~ProgressBar() { finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // A callback for Lz4FrameOptions::progress / Lz4DecodeOptions::progress.
  // The bar must outlive every call of it.
  ProgressFn callback();
  // Erases the line if anything was drawn; idempotent.
  void finish();

 private:
  void update(std::uint64_t bytes_in, std::uint64_t bytes_out);

  std::mutex mutex_;
  std::string label_;
  std::int64_t total_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
  bool finished_ = false;
};

}  // namespace tandem::cli
