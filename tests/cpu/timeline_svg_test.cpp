// The timeline SVG of a hand-built run: two CPU workers and one GPU whose
// spans overlap (three batches at once at the peak) with one span handed
// back. The document is checked for balanced tags and entities with a small
// scanner (no XML library in the build), for its rectangles counted by the
// rule timeline_svg.hpp states, for row labels in worker order and busy
// shares of the union of spans, and for escaping of caller text. The union
// helper is checked on disjoint, overlapping, nested, touching and broken
// spans; the writer on a fresh file, a missing directory and a destination
// that is a directory, leaving no temporary file behind.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "sched/timeline_svg.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::StatusCode;
using namespace tandem::sched;
namespace fs = std::filesystem;

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// "" when the document has one root element, every element opened is closed
// in order, attribute quotes pair up and each '&' starts a predefined
// entity; else what is wrong. Enough for what timeline_svg writes: no
// CDATA, no DOCTYPE, no '>' inside attribute values.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  int roots = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '&') {
      bool known = false;
      for (const char* e : {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"}) known = known || s.compare(i, std::strlen(e), e) == 0;
      if (!known) return "bare & at " + std::to_string(i);
      ++i;
      continue;
    }
    if (s[i] != '<') {
      ++i;
      continue;
    }
    if (s.compare(i, 2, "<?") == 0) {
      const std::size_t end = s.find("?>", i);
      if (end == std::string::npos) return "unclosed <?";
      i = end + 2;
      continue;
    }
    const std::size_t end = s.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (count(tag, "\"") % 2 != 0) return "odd quotes in <" + tag + ">";
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
      continue;
    }
    const bool empty_element = !tag.empty() && tag.back() == '/';
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (name.empty()) return "tag without a name";
    if (open.empty() && ++roots > 1) return "second root element <" + name + ">";
    if (!empty_element) open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return roots == 1 ? "" : "no root element";
}

Span span(std::uint64_t chunk, double start, double end, bool handed_back = false) {
  Span s;
  s.chunk = chunk;
  s.start_seconds = start;
  s.end_seconds = end;
  s.handed_back = handed_back;
  return s;
}

WorkerTimeline worker(WorkerKind kind, int id, std::vector<Span> spans) {
  WorkerTimeline w;
  w.kind = kind;
  w.id = id;
  w.spans = std::move(spans);
  return w;
}

// One second of wall time. cpu 0 busy 0.8 s, cpu 1 0.6 s; the GPU's first
// three spans overlap (the third nested in the first two), union 0.6 s, plus
// 0.1 s for the span handed back: 0.7 s. Listed out of row order on purpose.
tandem::sched::RunMetrics sample_run() {
  RunMetrics m;
  m.wall_seconds = 1.0;
  m.bytes_in = 4'100'000'000;
  m.bytes_out = 2'050'000'000;
  m.cpu.bytes_in = 3'000'000'000;
  m.gpu.bytes_in = 1'100'000'000;
  m.timeline.push_back(worker(WorkerKind::gpu, 0,
                              {span(3, 0.10, 0.50), span(4, 0.30, 0.70), span(5, 0.35, 0.45),
                               span(9, 0.80, 0.90, true)}));
  m.timeline.push_back(worker(WorkerKind::cpu, 1, {span(1, 0.05, 0.45), span(8, 0.80, 1.00)}));
  m.timeline.push_back(worker(WorkerKind::cpu, 0, {span(0, 0.00, 0.20), span(2, 0.25, 0.50), span(6, 0.60, 0.95)}));
  m.warnings.push_back("GPU 0 failed: device error <fake> & gone");
  return m;
}

// The fixed rectangles of timeline_svg.hpp: background and three legend swatches.
constexpr std::size_t kFixedRects = 4;

TEST(TimelineSvg, BusyUnionMergesOverlaps) {
  EXPECT_DOUBLE_EQ(busy_union_seconds({}), 0.0);
  EXPECT_DOUBLE_EQ(busy_union_seconds({span(0, 0, 1), span(1, 2, 3)}), 2.0);    // disjoint
  EXPECT_DOUBLE_EQ(busy_union_seconds({span(0, 0, 2), span(1, 1, 3)}), 3.0);    // overlapping
  EXPECT_DOUBLE_EQ(busy_union_seconds({span(0, 0, 10), span(1, 2, 3), span(2, 4, 5)}), 10.0);  // nested
  EXPECT_DOUBLE_EQ(busy_union_seconds({span(0, 0, 1), span(1, 1, 2)}), 2.0);    // touching
  EXPECT_DOUBLE_EQ(busy_union_seconds({span(0, 5, 6), span(1, 0, 1), span(2, 0.5, 5.5)}), 6.0);  // unordered
  EXPECT_DOUBLE_EQ(busy_union_seconds({span(0, 1, 1), span(1, 3, 2)}), 0.0);    // empty and reversed
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(busy_union_seconds({span(0, nan, 1), span(1, 0, inf), span(2, 2, 2.5)}), 0.5);
  // The sample GPU: [0.1, 0.7] and [0.8, 0.9].
  EXPECT_NEAR(busy_union_seconds(sample_run().timeline[0].spans), 0.7, 1e-12);
}

TEST(TimelineSvg, DocumentOfHandBuiltRun) {
  const RunMetrics m = sample_run();
  const std::string svg = timeline_svg(m, {"LZ4 compress, policy auto, 4.1 GB", 1200});

  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
  EXPECT_EQ(count(svg, "<script"), 0u);
  EXPECT_NE(svg.find("viewBox=\"0 0 1200.00 "), std::string::npos);

  // 3 lanes, 9 spans, and the GPU row's union strip of 2 intervals.
  EXPECT_EQ(count(svg, "<rect"), kFixedRects + 3 + 9 + 2);
  // The handed-back span and its legend swatch.
  EXPECT_EQ(count(svg, "fill=\"url(#handed-back)\""), 2u);

  // Rows in worker order, whatever the timeline's order.
  const std::size_t cpu0 = svg.find(">cpu 0</text>");
  const std::size_t cpu1 = svg.find(">cpu 1</text>");
  const std::size_t gpu0 = svg.find(">gpu 0</text>");
  ASSERT_NE(cpu0, std::string::npos);
  ASSERT_NE(cpu1, std::string::npos);
  ASSERT_NE(gpu0, std::string::npos);
  EXPECT_LT(cpu0, cpu1);
  EXPECT_LT(cpu1, gpu0);

  // Busy shares: the GPU's overlapping spans count once (a plain sum would be 1.1 s).
  EXPECT_NE(svg.find(">80.0%</text>"), std::string::npos);
  EXPECT_NE(svg.find(">60.0%</text>"), std::string::npos);
  EXPECT_NE(svg.find(">70.0%</text>"), std::string::npos);
  EXPECT_LT(svg.find(">80.0%</text>"), svg.find(">60.0%</text>"));

  // Totals: 4100 MB in one second; 3000 of 4100 MB by the CPU.
  EXPECT_NE(svg.find("in 4100.0 MB, out 2050.0 MB, wall 1000.0 ms, 4100.0 MB/s"), std::string::npos);
  EXPECT_NE(svg.find("by CPU 73.2%, by GPU 26.8%"), std::string::npos);
  EXPECT_NE(svg.find("device error &lt;fake&gt; &amp; gone"), std::string::npos);

  // 0 to 1000 ms in steps of 100: 11 grid lines, plus the legend's line.
  EXPECT_EQ(count(svg, "<line"), 11u + 1);
  EXPECT_NE(svg.find(">1000</text>"), std::string::npos);
}

TEST(TimelineSvg, DeviceRowsFollowTheirGpu) {
  RunMetrics m = sample_run();
  // GPU 0's device, listed before the workers on purpose: two batches.
  m.timeline.insert(m.timeline.begin(),
                    {worker(WorkerKind::gpu_copy_out, 0, {span(3, 0.40, 0.45), span(4, 0.60, 0.65)}),
                     worker(WorkerKind::gpu_kernels, 0, {span(3, 0.15, 0.40), span(4, 0.40, 0.60)}),
                     worker(WorkerKind::gpu_copy_in, 0, {span(3, 0.10, 0.15), span(4, 0.30, 0.35)})});
  const std::string svg = timeline_svg(m, {"device rows", 1200});
  EXPECT_EQ(xml_problem(svg), "");
  // 6 lanes, 9 + 6 spans, the GPU row's union strip of 2, and two more swatches.
  EXPECT_EQ(count(svg, "<rect"), kFixedRects + 2 + 6 + 15 + 2);
  const std::size_t gpu0 = svg.find(">gpu 0</text>");
  const std::size_t in = svg.find(">gpu copy in 0</text>");
  const std::size_t kernels = svg.find(">gpu kernels 0</text>");
  const std::size_t out = svg.find(">gpu copy out 0</text>");
  ASSERT_NE(gpu0, std::string::npos);
  ASSERT_NE(in, std::string::npos);
  ASSERT_NE(kernels, std::string::npos);
  ASSERT_NE(out, std::string::npos);
  EXPECT_LT(svg.find(">cpu 1</text>"), gpu0);
  EXPECT_LT(gpu0, in);
  EXPECT_LT(in, kernels);
  EXPECT_LT(kernels, out);
  // The kernels' row is busy 0.45 s of the second; the legend names the device rows.
  EXPECT_NE(svg.find(">45.0%</text>"), std::string::npos);
  EXPECT_NE(svg.find("device kernels"), std::string::npos);
}

TEST(TimelineSvg, TickCountStaysNearNine) {
  for (const double wall : {0.0004, 0.0123, 0.3, 1.7, 2.5, 9.99, 61.0, 3600.0}) {
    RunMetrics m;
    m.wall_seconds = wall;
    const std::string svg = timeline_svg(m, {});
    SCOPED_TRACE(wall);
    EXPECT_EQ(xml_problem(svg), "");
    const std::size_t ticks = count(svg, "<line") - 1;  // less the legend's line
    EXPECT_GE(ticks, 6u);
    EXPECT_LE(ticks, 11u);
  }
}

TEST(TimelineSvg, EscapesCallerText) {
  RunMetrics m = sample_run();
  const std::string svg = timeline_svg(m, {"a<b & c>d \"q\" 'r'", 1200});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  // Once in <title>, once drawn.
  EXPECT_EQ(count(svg, "a&lt;b &amp; c&gt;d &quot;q&quot; &apos;r&apos;"), 2u);

  // Invalid UTF-8 and a control character become U+FFFD; valid UTF-8 stays.
  const std::string odd = timeline_svg(m, {"x\xff\xc0\x80y\x01z \xc3\xa9\xe2\x82\xac", 1200});
  EXPECT_EQ(xml_problem(odd), "");
  EXPECT_NE(odd.find("x\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDy\xEF\xBF\xBDz \xc3\xa9\xe2\x82\xac"), std::string::npos);
}

TEST(TimelineSvg, EmptyAndBrokenRunsStillValid) {
  const std::string none = timeline_svg(RunMetrics{}, {});
  EXPECT_EQ(xml_problem(none), "");
  EXPECT_EQ(count(none, "<rect"), kFixedRects);
  EXPECT_NE(none.find("- MB/s"), std::string::npos);

  // Workers without spans, wall 0: lanes, no busy share.
  RunMetrics idle;
  idle.timeline.push_back(worker(WorkerKind::cpu, 0, {}));
  idle.timeline.push_back(worker(WorkerKind::gpu, 0, {}));
  const std::string svg = timeline_svg(idle, {"", 10});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<rect"), kFixedRects + 2);
  EXPECT_EQ(count(svg, ">-</text>"), 2u);
  EXPECT_NE(svg.find("width=\"640.00\""), std::string::npos);  // the least width

  // Non-finite and out-of-range times are drawn clamped, never written as such.
  RunMetrics broken = sample_run();
  broken.wall_seconds = std::numeric_limits<double>::quiet_NaN();
  broken.timeline[1].spans.push_back(span(20, -1.0, std::numeric_limits<double>::infinity()));
  broken.timeline[1].spans.push_back(span(21, 2.0, 1.5));
  const std::string b = timeline_svg(broken, {});
  EXPECT_EQ(xml_problem(b), "");
  EXPECT_EQ(count(b, "nan"), 0u);
  EXPECT_EQ(count(b, "inf"), 0u);
}

TEST(TimelineSvg, WriteCreatesWholeFile) {
  const tandem::test::TempDir dir;
  const RunMetrics m = sample_run();
  const TimelineSvgOptions o{"run", 900};
  const fs::path path = dir / "timeline.svg";
  ASSERT_TRUE(write_timeline_svg(path.string(), m, o).ok());
  const auto bytes = tandem::test::read_file(path);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), timeline_svg(m, o));

  // Replacing a file already there.
  ASSERT_TRUE(write_timeline_svg(path.string(), m, {"again", 900}).ok());
  const auto again = tandem::test::read_file(path);
  EXPECT_NE(std::string(again.begin(), again.end()).find(">again</text>"), std::string::npos);

  // Nothing but the file itself: no temporary file left over.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

TEST(TimelineSvg, WriteFailuresLeaveNothing) {
  const tandem::test::TempDir dir;
  const RunMetrics m = sample_run();

  const auto missing = write_timeline_svg((dir / "missing" / "timeline.svg").string(), m, {});
  EXPECT_EQ(missing.code, StatusCode::io_error);
  EXPECT_NE(missing.reason, nullptr);
  EXPECT_FALSE(fs::exists(dir / "missing"));

  // A directory where the file should go: the rename fails, the temporary file goes.
  fs::create_directory(dir / "taken");
  const auto taken = write_timeline_svg((dir / "taken").string(), m, {});
  EXPECT_EQ(taken.code, StatusCode::io_error);
  EXPECT_NE(taken.reason, nullptr);
  EXPECT_TRUE(fs::is_directory(dir / "taken"));
  EXPECT_TRUE(fs::is_empty(dir / "taken"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);

  EXPECT_EQ(write_timeline_svg("", m, {}).code, StatusCode::invalid_argument);
}

}  // namespace
