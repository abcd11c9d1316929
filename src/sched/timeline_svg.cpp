// The timeline picture (see timeline_svg.hpp).
//
// The document is built as one string from top to bottom: title and axis,
// then a row per worker, then legend and totals, each element placed at
// coordinates computed here (SVG 1.1 has no layout). Every number goes
// through std::to_chars, so the output does not change with the process's
// locale, and every non-finite value is replaced before it reaches an
// attribute, so a broken clock cannot make the document invalid. Text from
// the caller (title, warnings) is escaped and cleaned to valid UTF-8 without
// the control characters XML 1.0 forbids.
#include "sched/timeline_svg.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string_view>

namespace tandem::sched {
namespace {

// Layout, in pixels. The label column holds "cpu 127"; the busy column "100.0%".
constexpr int kMinWidth = 640;       // below this the legend runs off the picture
constexpr double kPad = 10;
constexpr double kLabelWidth = 100;   // left of the plot
constexpr double kBusyWidth = 70;    // right of the plot
constexpr double kTitleY = 24;
constexpr double kAxisLabelY = 48;
constexpr double kPlotTop = 56;
constexpr double kRowGap = 6;
constexpr double kRowHeight = 20;
constexpr double kStripHeight = 4;   // the union strip of a row with overlapping spans
constexpr double kMinSpanWidth = 1;  // a span shorter than a pixel still shows
constexpr double kLineHeight = 18;
constexpr int kMaxWarningLines = 5;

constexpr const char* kCpuColour = "#4e79a7";
constexpr const char* kGpuColour = "#59a14f";
constexpr const char* kCopyColour = "#edc948";    // a device's copies
constexpr const char* kKernelColour = "#e15759";  // a device's kernels
constexpr const char* kHandedBackColour = "#c62828";
constexpr const char* kStripColour = "#1b5e20";
constexpr const char* kLaneColour = "#f2f2f2";
constexpr const char* kGridColour = "#d0d0d0";
constexpr const char* kTextColour = "#222222";
constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

struct Interval {
  double start = 0;
  double end = 0;
};

// The spans' union as disjoint intervals in ascending order.
std::vector<Interval> union_of(const std::vector<Span>& spans) {
  std::vector<Interval> v;
  v.reserve(spans.size());
  for (const Span& s : spans) {
    if (std::isfinite(s.start_seconds) && std::isfinite(s.end_seconds) && s.end_seconds > s.start_seconds) {
      v.push_back({s.start_seconds, s.end_seconds});
    }
  }
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> merged;
  for (const Interval& i : v) {
    // Touching intervals merge too: no gap between them to draw.
    if (!merged.empty() && i.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, i.end);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

double finite_or(double v, double fallback) { return std::isfinite(v) ? v : fallback; }

// Fixed-point text of v, independent of the locale.
std::string fixed(double v, int decimals) {
  if (!std::isfinite(v) || v == 0) v = 0;  // also turns -0 into 0
  char buf[400];  // enough for any finite double in fixed notation with a few decimals
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  return r.ec == std::errc{} ? std::string(buf, r.ptr) : std::string("0");
}

std::string px(double v) { return fixed(v, 2); }

// Appends s as XML character data or attribute text: markup characters as
// entities; bytes that are not valid UTF-8, and characters XML 1.0 does not
// allow (controls other than tab, newline, return; U+FFFE, U+FFFF), as U+FFFD.
void append_escaped(std::string& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '&': out += "&amp;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default:
          if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            out += kReplacement;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: its length from the lead byte, then the
    // continuation bytes, then no overlong form, surrogate or value past U+10FFFF.
    std::size_t n = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4, cp = c & 0x07, min = 0x10000;
    }
    bool valid = n != 0 && i + n <= s.size();
    for (std::size_t k = 1; valid && k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      valid = (b & 0xC0) == 0x80;
      cp = (cp << 6) | (b & 0x3F);
    }
    valid = valid && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE &&
            cp != 0xFFFF;
    if (valid) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      // One replacement per bad lead byte; the bytes after it are looked at anew.
      out += kReplacement;
      ++i;
    }
  }
}

std::string escaped(std::string_view s) {
  std::string out;
  append_escaped(out, s);
  return out;
}

std::string megabytes(std::uint64_t bytes) {
  const double mb = static_cast<double>(bytes) / 1e6;
  return fixed(mb, mb < 10 ? 2 : 1) + " MB";
}

std::string percent(double part, double whole) {
  return whole > 0 && std::isfinite(part / whole) ? fixed(100 * part / whole, 1) + "%" : std::string("-");
}

// A tick step of 1, 2, 2.5 or 5 times a power of ten, so that the labels
// are round numbers, giving 8 to 10 ticks from 0 to range_ms where such a
// step exists (else the count nearest 9). decimals: what the labels need.
struct Ticks {
  double step_ms = 1;
  int count = 1;
  int decimals = 0;
};

Ticks choose_ticks(double range_ms) {
  Ticks best;
  int best_score = -1;
  const int top = static_cast<int>(std::floor(std::log10(range_ms)));
  for (int k = top - 2; k <= top + 1; ++k) {
    for (const double m : {1.0, 2.0, 2.5, 5.0}) {
      const double step = m * std::pow(10.0, k);
      // The epsilon keeps a tick exactly at range_ms despite rounding in the division.
      const int count = static_cast<int>(std::floor(range_ms / step + 1e-9)) + 1;
      const int score = count >= 8 && count <= 10 ? 0 : std::abs(count - 9);
      // Ascending steps; among equals the larger step, so fewer labels crowd the axis.
      if (best_score < 0 || score <= best_score) {
        best_score = score;
        best = {step, count, std::max(0, -k + (m == 2.5 ? 1 : 0))};
      }
    }
  }
  return best;
}

// Rows in order: CPU workers, then each GPU followed by its device rows.
int row_order(WorkerKind k) {
  switch (k) {
    case WorkerKind::cpu: return 0;
    case WorkerKind::gpu: return 1;
    case WorkerKind::gpu_copy_in: return 2;
    case WorkerKind::gpu_kernels: return 3;
    case WorkerKind::gpu_copy_out: return 4;
  }
  return 5;
}

const char* colour_of(WorkerKind k) {
  switch (k) {
    case WorkerKind::cpu: return kCpuColour;
    case WorkerKind::gpu: return kGpuColour;
    case WorkerKind::gpu_copy_in:
    case WorkerKind::gpu_copy_out: return kCopyColour;
    case WorkerKind::gpu_kernels: return kKernelColour;
  }
  return kGpuColour;
}

// Appends each piece in turn. Also keeps "literal" + std::string&& out of
// the helpers below, where GCC 12 warns, falsely, of an overlapping copy.
template <typename... Pieces>
void append(std::string& out, const Pieces&... pieces) {
  (out.append(std::string_view(pieces)), ...);
}

void text(std::string& out, double x, double y, std::string_view anchor, std::string_view attrs,
          std::string_view body_escaped) {
  append(out, "<text x=\"", px(x), "\" y=\"", px(y), "\"");
  if (anchor != "start") append(out, " text-anchor=\"", anchor, "\"");
  if (!attrs.empty()) append(out, " ", attrs);
  append(out, ">", body_escaped, "</text>\n");
}

void rect(std::string& out, double x, double y, double w, double h, std::string_view fill_attrs,
          std::string_view tooltip_escaped = {}) {
  append(out, "<rect x=\"", px(x), "\" y=\"", px(y), "\" width=\"", px(w), "\" height=\"", px(h), "\" ",
         fill_attrs);
  if (tooltip_escaped.empty()) {
    out += "/>\n";
  } else {
    append(out, "><title>", tooltip_escaped, "</title></rect>\n");
  }
}

// Each span's sub-lane: in order of start, the first lane whose last span has
// ended by then. Returns the number of lanes (1 for spans that never overlap).
int assign_lanes(const std::vector<Interval>& spans, std::vector<int>* lane) {
  std::vector<std::size_t> order(spans.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return spans[a].start < spans[b].start; });
  lane->assign(spans.size(), 0);
  std::vector<double> lane_end;
  for (const std::size_t i : order) {
    std::size_t l = 0;
    while (l < lane_end.size() && lane_end[l] > spans[i].start) ++l;
    if (l == lane_end.size()) lane_end.push_back(spans[i].end);
    lane_end[l] = spans[i].end;
    (*lane)[i] = static_cast<int>(l);
  }
  return std::max<int>(1, static_cast<int>(lane_end.size()));
}

}  // namespace

double busy_union_seconds(const std::vector<Span>& spans) {
  double total = 0;
  for (const Interval& i : union_of(spans)) total += i.end - i.start;
  return total;
}

std::string timeline_svg(const RunMetrics& m, const TimelineSvgOptions& o) {
  const double width = std::max(o.width, kMinWidth);
  const double wall = std::max(0.0, finite_or(m.wall_seconds, 0));

  // Rows: CPU workers, then GPUs, each by number, whatever order they started
  // in; a GPU's device rows follow it.
  std::vector<const WorkerTimeline*> rows;
  for (const WorkerTimeline& w : m.timeline) rows.push_back(&w);
  std::stable_sort(rows.begin(), rows.end(), [](const WorkerTimeline* a, const WorkerTimeline* b) {
    const bool ca = a->kind == WorkerKind::cpu, cb = b->kind == WorkerKind::cpu;
    if (ca != cb) return ca;
    if (a->id != b->id) return a->id < b->id;
    return row_order(a->kind) < row_order(b->kind);
  });

  // The axis runs to the wall time, or further if a span ends later; a run
  // with nothing to show gets a 1 ms axis so the scale stays finite.
  double axis_end = wall;
  for (const WorkerTimeline* w : rows) {
    for (const Span& s : w->spans) {
      axis_end = std::max({axis_end, finite_or(s.start_seconds, 0), finite_or(s.end_seconds, 0)});
    }
  }
  if (!(axis_end > 0)) axis_end = 1e-3;
  const double plot_x0 = kPad + kLabelWidth;
  const double plot_x1 = width - kPad - kBusyWidth;
  const auto x_of = [&](double t) { return plot_x0 + (plot_x1 - plot_x0) * (t / axis_end); };

  const double rows_bottom = kPlotTop + kRowGap + static_cast<double>(rows.size()) * (kRowHeight + kRowGap);
  const double legend_y = rows_bottom + 24;
  const double footer_y = legend_y + kLineHeight + 4;
  const int warning_lines =
      static_cast<int>(std::min<std::size_t>(m.warnings.size(), kMaxWarningLines)) +
      (m.warnings.size() > kMaxWarningLines ? 1 : 0);
  const double height = footer_y + kLineHeight * warning_lines + 12;

  std::string out;
  out.reserve(4096 + 160 * m.timeline.size() + [&] {
    std::size_t n = 0;
    for (const WorkerTimeline& w : m.timeline) n += w.spans.size();
    return 200 * n;
  }());
  const std::string title = escaped(o.title);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + px(width) + "\" height=\"" +
         px(height) + "\" viewBox=\"0 0 " + px(width) + " " + px(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\" fill=\"" + kTextColour + "\">\n";
  out += "<title>" + title + "</title>\n";
  // Hatching for spans handed back: diagonal stripes, transparent between
  // them, so the lane shows through and the span reads as "not done here".
  out += std::string("<defs><pattern id=\"handed-back\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                     "patternTransform=\"rotate(45)\"><path d=\"M0,0 L0,6\" stroke=\"") +
         kHandedBackColour + "\" stroke-width=\"3\"/></pattern></defs>\n";
  rect(out, 0, 0, width, height, "fill=\"#ffffff\"");
  text(out, kPad, kTitleY, "start", "font-size=\"15\" font-weight=\"bold\"", title);

  // The axis: a grid line and a label per tick, the unit in the label column.
  const Ticks ticks = choose_ticks(axis_end * 1e3);
  text(out, kPad, kAxisLabelY, "start", "", "time, ms");
  text(out, width - kPad, kAxisLabelY, "end", "", "busy");
  for (int i = 0; i < ticks.count; ++i) {
    const double t_ms = i * ticks.step_ms;
    const double x = x_of(t_ms / 1e3);
    out += "<line x1=\"" + px(x) + "\" y1=\"" + px(kPlotTop) + "\" x2=\"" + px(x) + "\" y2=\"" + px(rows_bottom) +
           "\" stroke=\"" + kGridColour + "\" stroke-width=\"1\"/>\n";
    text(out, x, kAxisLabelY, "middle", "", fixed(t_ms, ticks.decimals));
  }

  for (std::size_t r = 0; r < rows.size(); ++r) {
    const WorkerTimeline& w = *rows[r];
    const double top = kPlotTop + kRowGap + static_cast<double>(r) * (kRowHeight + kRowGap);
    const std::string label = std::string(worker_kind_name(w.kind)) + " " + std::to_string(w.id);
    text(out, kPad, top + kRowHeight - 5, "start", "", label);
    rect(out, plot_x0, top, plot_x1 - plot_x0, kRowHeight, std::string("fill=\"") + kLaneColour + "\"");

    // Spans clamped to the axis; a non-finite end becomes a zero-length span.
    std::vector<Interval> spans;
    spans.reserve(w.spans.size());
    for (const Span& s : w.spans) {
      const double start = std::clamp(finite_or(s.start_seconds, 0), 0.0, axis_end);
      spans.push_back({start, std::clamp(finite_or(s.end_seconds, start), start, axis_end)});
    }
    std::vector<int> lane;
    const int lanes = assign_lanes(spans, &lane);
    const double strip = lanes > 1 ? kStripHeight : 0;
    const double lane_height = (kRowHeight - strip) / lanes;
    const char* colour = colour_of(w.kind);
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const Span& s = w.spans[i];
      const double x = x_of(spans[i].start);
      const double wpx = std::max(kMinSpanWidth, x_of(spans[i].end) - x);
      const std::string tip = "chunk " + std::to_string(s.chunk) + ", " + fixed(spans[i].start * 1e3, 3) + " to " +
                              fixed(spans[i].end * 1e3, 3) + " ms" + (s.handed_back ? ", handed back" : "");
      const std::string fill =
          s.handed_back ? std::string("fill=\"url(#handed-back)\" stroke=\"") + kHandedBackColour + "\" stroke-width=\"1\""
                        : std::string("fill=\"") + colour + "\"";
      rect(out, x, top + lane[i] * lane_height, wpx, lane_height, fill, tip);
    }
    if (lanes > 1) {
      for (const Interval& u : union_of(w.spans)) {
        const double x = x_of(std::clamp(u.start, 0.0, axis_end));
        const double wpx = std::max(kMinSpanWidth, x_of(std::clamp(u.end, 0.0, axis_end)) - x);
        rect(out, x, top + kRowHeight - strip, wpx, strip, std::string("fill=\"") + kStripColour + "\"");
      }
    }
    text(out, width - kPad, top + kRowHeight - 5, "end", "", percent(busy_union_seconds(w.spans), wall));
  }

  // Legend: three swatches and the union strip's line.
  double x = kPad;
  const double sw_y = legend_y - 10;
  rect(out, x, sw_y, 12, 12, std::string("fill=\"") + kCpuColour + "\"");
  text(out, x + 17, legend_y, "start", "", "CPU");
  x += 70;
  rect(out, x, sw_y, 12, 12, std::string("fill=\"") + kGpuColour + "\"");
  text(out, x + 17, legend_y, "start", "", "GPU");
  x += 70;
  rect(out, x, sw_y, 12, 12,
       std::string("fill=\"url(#handed-back)\" stroke=\"") + kHandedBackColour + "\" stroke-width=\"1\"");
  text(out, x + 17, legend_y, "start", "", "handed back to the CPU (GPU fault)");
  x += 240;
  out += "<line x1=\"" + px(x) + "\" y1=\"" + px(legend_y - 2) + "\" x2=\"" + px(x + 12) + "\" y2=\"" +
         px(legend_y - 2) + "\" stroke=\"" + kStripColour + "\" stroke-width=\"4\"/>\n";
  text(out, x + 17, legend_y, "start", "", "at least one batch in flight (overlapping spans)");
  // The device rows' colours, when there are such rows.
  if (std::any_of(rows.begin(), rows.end(), [](const WorkerTimeline* w) { return row_order(w->kind) > 1; })) {
    x += 330;
    rect(out, x, sw_y, 12, 12, std::string("fill=\"") + kCopyColour + "\"");
    text(out, x + 17, legend_y, "start", "", "device copies");
    x += 110;
    rect(out, x, sw_y, 12, 12, std::string("fill=\"") + kKernelColour + "\"");
    text(out, x + 17, legend_y, "start", "", "device kernels (queued or running)");
  }

  // Totals. The shares are of the bytes the kinds did (a chunk handed back
  // counts where it was redone), so they add up to 100%.
  const double kind_bytes = static_cast<double>(m.cpu.bytes_in) + static_cast<double>(m.gpu.bytes_in);
  std::string footer = "in " + megabytes(m.bytes_in) + ", out " + megabytes(m.bytes_out) + ", wall " +
                       fixed(wall * 1e3, 1) + " ms, ";
  footer += wall > 0 ? fixed(static_cast<double>(m.bytes_in) / 1e6 / wall, 1) + " MB/s" : std::string("- MB/s");
  footer += "; bytes in by CPU " + percent(static_cast<double>(m.cpu.bytes_in), kind_bytes) + ", by GPU " +
            percent(static_cast<double>(m.gpu.bytes_in), kind_bytes);
  text(out, kPad, footer_y, "start", "", footer);
  for (int i = 0; i < warning_lines; ++i) {
    const double y = footer_y + kLineHeight * (i + 1);
    const std::string line = i < kMaxWarningLines
                                 ? "warning: " + escaped(m.warnings[static_cast<std::size_t>(i)])
                                 : "and " + std::to_string(m.warnings.size() - kMaxWarningLines) + " more warnings";
    text(out, kPad, y, "start", std::string("fill=\"") + kHandedBackColour + "\"", line);
  }
  out += "</svg>\n";
  return out;
}

Status write_timeline_svg(const std::string& path, const RunMetrics& m, const TimelineSvgOptions& o) {
  if (path.empty()) return {StatusCode::invalid_argument, "empty path for the timeline SVG"};
  const std::string svg = timeline_svg(m, o);

  // A name of our own beside the destination (so the rename stays on one
  // file system); O_EXCL, so a file of that name left by anyone is never
  // written into. Mode 0666 less the umask, as any new file.
  static std::atomic<unsigned> serial{0};
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return {StatusCode::io_error, "cannot create a temporary file beside the timeline SVG"};

  const auto fail = [&](const char* reason) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    return Status{StatusCode::io_error, reason};
  };
  std::size_t done = 0;
  while (done < svg.size()) {
    const ssize_t n = ::write(fd, svg.data() + done, svg.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write the timeline SVG");
    done += static_cast<std::size_t>(n);
  }
  // Flushed before the rename, so a crash cannot leave the name on an empty file.
  if (::fsync(fd) != 0) return fail("cannot flush the timeline SVG to disk");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return fail("cannot close the timeline SVG");
  if (std::rename(temp.c_str(), path.c_str()) != 0) return fail("cannot rename the timeline SVG into place");
  return {};
}

}  // namespace tandem::sched
