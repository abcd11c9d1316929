// A hybrid-scheduler run's timeline drawn as a standalone SVG 1.1 picture.
//
// One row per worker (the CPU workers by number, then the GPUs), each span of
// the row a rectangle on a shared time axis in milliseconds. A GPU worker may
// have several batches in flight, so its spans may overlap: spans that
// overlap go into thin sub-lanes of the row (the first lane free at a span's
// start), and a strip along the row's foot shows the union, when at least one
// was in flight. The right-hand column gives each worker's busy share, the
// union of its spans over the wall time, so overlapping spans count once.
// Under the rows: a legend, a line of totals and the run's warnings.
//
// The picture depends only on the timeline, the wall time, the byte counts
// and the warnings of RunMetrics; it has no script and names no font file.
//
// A GPU worker whose device timed its batches has three more rows under its
// own: the batches' copies to the device, their kernels and their copies
// back, as the device's clock saw them.
//
// Rectangles, for whoever counts them (the tests do): one background, one
// lane per row and three legend swatches, always (two more when there are
// device rows); one per span; and, for each row whose spans overlap, one per
// interval of their union.
#pragma once

#include <string>
#include <vector>

#include "sched/scheduler.hpp"
#include "tandem/tandem.hpp"

namespace tandem::sched {

struct TimelineSvgOptions {
  std::string title;  // any bytes; escaped, and invalid UTF-8 replaced
  int width = 1200;   // pixels; values under 640 draw at 640
};

// The SVG document, starting with its XML declaration. Spans outside
// [0, wall_seconds] widen the axis rather than fall off it; a run with no
// workers or a wall time of 0 still gives a valid (mostly empty) picture.
std::string timeline_svg(const RunMetrics& m, const TimelineSvgOptions& o);

// Writes timeline_svg(m, o) to `path` through a temporary file beside it,
// renamed into place once complete (replacing a file already there), so
// `path` holds the whole picture or is left as it was; the temporary file is
// removed on failure. io_error with a reason when the directory is missing or
// not writable or a write fails; invalid_argument for an empty path.
Status write_timeline_svg(const std::string& path, const RunMetrics& m, const TimelineSvgOptions& o);

// Seconds covered by at least one span: overlapping and nested spans merged,
// so this is at most the sum of their lengths. Spans with end <= start or a
// non-finite time cover nothing. Order does not matter.
double busy_union_seconds(const std::vector<Span>& spans);

}  // namespace tandem::sched
