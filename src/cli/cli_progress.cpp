// The progress bar: throttled redraws of one stderr line; see cli_progress.hpp.
#include "cli/cli_progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tandem::cli {

namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
constexpr int kBarWidth = 20;

int terminal_width() {
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

bool progress_wanted(int verbosity, std::int64_t total_bytes) {
  return verbosity > 0 && isatty(STDERR_FILENO) && (total_bytes < 0 || total_bytes >= kProgressMinBytes);
}

ProgressBar::ProgressBar(std::string label, std::int64_t total_bytes)
    : label_(std::move(label)), total_(total_bytes), start_(std::chrono::steady_clock::now()) {}

ProgressFn ProgressBar::callback() {
  return [this](std::uint64_t in, std::uint64_t out) { update(in, out); };
}

void ProgressBar::update(std::uint64_t bytes_in, std::uint64_t bytes_out) {
  const std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (finished_ || (drawn_ && now - last_draw_ < kRedrawInterval)) return;
  last_draw_ = now;

  std::string line = label_ + " ";
  if (total_ > 0) {
    const double fraction = std::min(1.0, static_cast<double>(bytes_in) / static_cast<double>(total_));
    const int filled = static_cast<int>(fraction * kBarWidth);
    line += '[';
    line.append(static_cast<std::size_t>(filled), '=');
    line.append(static_cast<std::size_t>(kBarWidth - filled), ' ');
    line += "] ";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3d%% ", static_cast<int>(fraction * 100));
    line += pct;
  }
  line += mib(bytes_in) + " -> " + mib(bytes_out);
  const double seconds = std::chrono::duration<double>(now - start_).count();
  if (seconds > 0) {
    char rate[32];
    std::snprintf(rate, sizeof rate, ", %.0f MB/s", static_cast<double>(bytes_in) / seconds / 1e6);
    line += rate;
  }
  // Keep the line shorter than the terminal so it never wraps: \r only
  // returns to the start of the last row.
  const std::size_t width = static_cast<std::size_t>(terminal_width());
  if (line.size() >= width) line.resize(width > 1 ? width - 1 : 0);
  std::fprintf(stderr, "\r%s\033[K", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  const std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (drawn_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

}  // namespace tandem::cli
