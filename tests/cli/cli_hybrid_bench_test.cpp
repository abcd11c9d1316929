// `tandem bench --hybrid` run as a user would: on a small generated file
// repeated to 3 MiB, with --timeline and --json. Checks the exit status, that
// the JSON holds every policy (cpu always measured; gpu and auto measured
// where a CUDA device is present, marked as not run otherwise) and both
// liblz4 rows with positive throughputs, and that both SVG timelines exist.
// No timing is asserted: the machine running the tests may be busy.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

namespace fs = std::filesystem;
using tandem::test::sh_quote;
using nlohmann::json;

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A direction of a measured row: positive throughput and runs.
void expect_measured(const json& row, const char* direction) {
  SCOPED_TRACE(row.value("name", "?") + std::string(" ") + direction);
  ASSERT_TRUE(row.contains(direction));
  EXPECT_GT(row[direction].value("bytes_per_second", 0.0), 0.0);
  EXPECT_GE(row[direction].value("runs", 0), 1);
}

TEST(CliHybridBench, WritesJsonAndTimelines) {
  tandem::test::TempDir dir;
  tandem::test::TempDir logs;
  // 1 MiB: --size 3M (MiB) is the file three times over.
  tandem::test::write_file(dir / "sample.bin", tandem::test::mixed_bytes(1 << 20, 17));
  const fs::path err = logs / "stderr";
  std::string out;
  const int code = tandem::test::run(
      "cd " + sh_quote(dir.path().string()) + " && " + sh_quote(tandem::test::cli_path()) +
          " bench --hybrid --size 3M --timeline t.svg --json r.json --min-time 0.02 --runs 2 sample.bin 2>" +
          sh_quote(err.string()),
      &out);
  ASSERT_EQ(code, 0) << read_text(err);
  EXPECT_NE(out.find("input: 3145728 bytes = 3 x sample.bin"), std::string::npos) << out;

  std::ifstream f(dir / "r.json");
  ASSERT_TRUE(f.good());
  const json doc = json::parse(f, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded()) << "r.json is not valid JSON";
  EXPECT_EQ(doc["input"].value("bytes", 0u), 3u << 20);
  EXPECT_EQ(doc["input"].value("repetitions", 0u), 3u);

  const bool gpu = tandem::backend_info().gpu_count > 0;
  ASSERT_TRUE(doc["policies"].is_array());
  ASSERT_EQ(doc["policies"].size(), 3u);
  const char* const names[] = {"cpu", "gpu", "auto"};
  for (std::size_t i = 0; i < 3; ++i) {
    const json& p = doc["policies"][i];
    EXPECT_EQ(p.value("name", ""), names[i]);
    if (i == 0 || gpu) {
      ASSERT_TRUE(p.value("ran", false)) << names[i];
      expect_measured(p, "compress");
      expect_measured(p, "decompress");
      EXPECT_TRUE(p["compress"].contains("metrics")) << names[i];
    } else {
      EXPECT_FALSE(p.value("ran", true)) << names[i];
      EXPECT_FALSE(p.value("reason", "").empty()) << names[i];
    }
  }
  ASSERT_TRUE(doc["references"].is_array());
  ASSERT_FALSE(doc["references"].empty());
  for (const json& r : doc["references"]) {
    if (!r.value("ran", false)) continue;  // the N-thread row on a one-thread machine
    expect_measured(r, "compress");
    expect_measured(r, "decompress");
  }
  ASSERT_EQ(doc["small_input"]["policies"].size(), 2u);
  for (const json& p : doc["small_input"]["policies"]) expect_measured(p, "compress");

  for (const char* svg : {"t.svg", "t-decompress.svg"}) {
    ASSERT_TRUE(fs::exists(dir / svg)) << svg;
    EXPECT_EQ(read_text(dir / svg).rfind("<?xml", 0), 0u) << svg;
  }
}

// The options of the hybrid section are checked before anything is read.
TEST(CliHybridBench, RejectsBadSizeAndChunk) {
  tandem::test::TempDir dir;
  tandem::test::write_file(dir / "sample.bin", tandem::test::mixed_bytes(1000, 3));
  const std::string cli = "cd " + sh_quote(dir.path().string()) + " && " + sh_quote(tandem::test::cli_path());
  EXPECT_EQ(tandem::test::run(cli + " bench --hybrid --size 3X sample.bin 2>/dev/null"), 2);
  EXPECT_EQ(tandem::test::run(cli + " bench --hybrid --chunk 100K sample.bin 2>/dev/null"), 2);
}

}  // namespace
