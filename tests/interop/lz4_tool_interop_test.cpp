// Interoperability with the reference `lz4` command: every frame option that
// `lz4` writes is read by tandem's library, and every frame tandem writes is
// read (`lz4 -d`) and tested (`lz4 -t`) by `lz4`. Files live in a TempDir; the
// tandem side uses the library API only (the CLI has its own tests).
#include <sstream>

#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::Lz4DecodeOptions;
using tandem::Lz4FrameOptions;
using tandem::StatusCode;
using tandem::test::Bytes;
using tandem::test::sh_quote;
using tandem::test::TempDir;

#define REQUIRE_LZ4()                                                              \
  do {                                                                             \
    if (!tandem::test::have_tool("lz4"))                                           \
      GTEST_SKIP() << "the `lz4` command is not installed; interop tests skipped"; \
  } while (0)

// Test data that spans several blocks of every size, of mixed kinds.
const Bytes& big_data() {
  static const Bytes data = [] {
    Bytes d = tandem::test::mixed_bytes((5u << 20) + 4321, 1);
    const Bytes t = tandem::test::text_like_bytes(700000, 2);
    d.insert(d.end(), t.begin(), t.end());
    return d;
  }();
  return data;
}

// Runs `lz4 <args> <in> <out>` (quiet, overwrite); returns its exit status.
int lz4(const std::string& args, const std::filesystem::path& in, const std::filesystem::path& out) {
  std::string output;
  const std::string cmd =
      "lz4 -q -f " + args + " " + sh_quote(in.string()) + " " + sh_quote(out.string()) + " 2>&1";
  const int rc = tandem::test::run(cmd, &output);
  if (rc != 0) ADD_FAILURE() << cmd << " -> " << rc << ": " << output;
  return rc;
}

Bytes tandem_decode(const Bytes& frame, tandem::Status* st, int threads = 2) {
  Lz4DecodeOptions o;
  o.threads = threads;
  Bytes out;
  *st = tandem::lz4_frame_decompress({frame.data(), frame.size()}, &out, o);
  return out;
}

// ------------------------------------------------- lz4 writes, tandem reads ----

struct ToolCase {
  const char* name;
  const char* args;
};

void PrintTo(const ToolCase& c, std::ostream* os) { *os << "lz4 " << c.args; }

class Lz4WritesTandemReads : public ::testing::TestWithParam<ToolCase> {};

TEST_P(Lz4WritesTandemReads, Decodes) {
  REQUIRE_LZ4();
  TempDir dir;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{65536}, big_data().size()}) {
    SCOPED_TRACE(testing::Message() << GetParam().args << ", " << n << " bytes");
    const Bytes data(big_data().begin(), big_data().begin() + static_cast<std::ptrdiff_t>(n));
    tandem::test::write_file(dir / "in", data);
    ASSERT_EQ(lz4(GetParam().args, dir / "in", dir / "in.lz4"), 0);
    const Bytes frame = tandem::test::read_file(dir / "in.lz4");
    for (int threads : {1, 4}) {
      tandem::Status st;
      const Bytes out = tandem_decode(frame, &st, threads);
      ASSERT_STATUS(st, StatusCode::ok) << "threads " << threads;
      EXPECT_EQ(out.size(), data.size());
      EXPECT_TRUE(out == data) << "threads " << threads;
    }
  }
}

const ToolCase kToolCases[] = {
    {"default", ""},
    {"B4", "-B4"},
    {"B5", "-B5"},
    {"B6", "-B6"},
    {"B7", "-B7"},
    {"BD", "-BD"},
    {"B4_BD", "-B4 -BD"},
    {"BX", "-BX"},
    {"B4_BD_BX", "-B4 -BD -BX"},
    {"no_frame_crc", "--no-frame-crc"},
    {"content_size", "--content-size"},
    {"content_size_BX_no_crc", "--content-size -BX --no-frame-crc -B5"},
    {"legacy", "-l"},
    {"legacy_9", "-l -9"},
    {"level1", "-1"},
    {"level9", "-9"},
    {"level12", "-12"},
    {"level12_BD", "-12 -BD -B4"},
    {"fast5", "--fast=5"},
};

INSTANTIATE_TEST_SUITE_P(Interop, Lz4WritesTandemReads, ::testing::ValuesIn(kToolCases),
                         [](const ::testing::TestParamInfo<ToolCase>& info) { return std::string(info.param.name); });

TEST(Interop, ConcatenatedLz4Files) {
  REQUIRE_LZ4();
  TempDir dir;
  const Bytes a = tandem::test::mixed_bytes(300000, 3);
  const Bytes b = tandem::test::text_like_bytes(200000, 4);
  const Bytes c = tandem::test::random_bytes(70000, 5);
  tandem::test::write_file(dir / "a", a);
  tandem::test::write_file(dir / "b", b);
  tandem::test::write_file(dir / "c", c);
  ASSERT_EQ(lz4("-B4 -BD", dir / "a", dir / "a.lz4"), 0);
  ASSERT_EQ(lz4("-l", dir / "b", dir / "b.lz4"), 0);
  ASSERT_EQ(lz4("--content-size -BX", dir / "c", dir / "c.lz4"), 0);
  ASSERT_EQ(tandem::test::run("cat " + sh_quote((dir / "a.lz4").string()) + " " + sh_quote((dir / "b.lz4").string()) +
                              " " + sh_quote((dir / "c.lz4").string()) + " " + sh_quote((dir / "a.lz4").string()) +
                              " > " + sh_quote((dir / "all.lz4").string())),
            0);
  Bytes want = a;
  want.insert(want.end(), b.begin(), b.end());
  want.insert(want.end(), c.begin(), c.end());
  want.insert(want.end(), a.begin(), a.end());
  // The control: lz4 itself reads the concatenation.
  ASSERT_EQ(lz4("-d", dir / "all.lz4", dir / "all.out"), 0);
  ASSERT_TRUE(tandem::test::read_file(dir / "all.out") == want);
  tandem::Status st;
  const Bytes out = tandem_decode(tandem::test::read_file(dir / "all.lz4"), &st);
  ASSERT_STATUS(st, StatusCode::ok);
  EXPECT_TRUE(out == want);
  // And the streaming API counts the frames.
  const Bytes all = tandem::test::read_file(dir / "all.lz4");
  auto src = tandem::memory_source({all.data(), all.size()});
  Bytes streamed;
  auto sink = tandem::vector_sink(&streamed);
  tandem::StreamStats stats;
  ASSERT_STATUS(tandem::lz4_decompress_stream(*src, *sink, {}, &stats), StatusCode::ok);
  EXPECT_EQ(stats.frames, 4u);
  EXPECT_TRUE(streamed == want);
}

TEST(Interop, SkippableFrameInFront) {
  REQUIRE_LZ4();
  TempDir dir;
  const Bytes data = tandem::test::mixed_bytes(400000, 6);
  tandem::test::write_file(dir / "in", data);
  ASSERT_EQ(lz4("", dir / "in", dir / "in.lz4"), 0);
  Bytes file{0x5A, 0x2A, 0x4D, 0x18, 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'};  // magic 0x184D2A5A, 5 bytes
  const Bytes frame = tandem::test::read_file(dir / "in.lz4");
  file.insert(file.end(), frame.begin(), frame.end());
  tandem::test::write_file(dir / "skip.lz4", file);
  ASSERT_EQ(lz4("-d", dir / "skip.lz4", dir / "skip.out"), 0) << "control: lz4 skips it";
  ASSERT_TRUE(tandem::test::read_file(dir / "skip.out") == data);
  tandem::Status st;
  const Bytes out = tandem_decode(file, &st);
  ASSERT_STATUS(st, StatusCode::ok);
  EXPECT_TRUE(out == data);
}

// ------------------------------------------------- tandem writes, lz4 reads ----

struct WriteCase {
  std::string name;
  Lz4FrameOptions options;
};

std::vector<WriteCase> write_cases() {
  std::vector<WriteCase> v;
  auto add = [&](std::string name, auto tweak) {
    Lz4FrameOptions o;
    tweak(o);
    v.push_back({std::move(name), o});
  };
  add("default", [](Lz4FrameOptions&) {});
  add("B64K", [](Lz4FrameOptions& o) { o.block_size = 64u << 10; });
  add("B256K", [](Lz4FrameOptions& o) { o.block_size = 256u << 10; });
  add("B1M", [](Lz4FrameOptions& o) { o.block_size = 1u << 20; });
  add("B4M", [](Lz4FrameOptions& o) { o.block_size = 4u << 20; });
  add("linked_B64K", [](Lz4FrameOptions& o) {
    o.block_size = 64u << 10;
    o.linked_blocks = true;
  });
  add("linked_B4M", [](Lz4FrameOptions& o) { o.linked_blocks = true; });
  add("block_checksum", [](Lz4FrameOptions& o) {
    o.block_checksum = true;
    o.block_size = 256u << 10;
  });
  add("no_content_checksum", [](Lz4FrameOptions& o) { o.content_checksum = false; });
  add("no_content_size", [](Lz4FrameOptions& o) { o.content_size = false; });
  add("everything_off", [](Lz4FrameOptions& o) {
    o.content_size = false;
    o.content_checksum = false;
    o.block_size = 1u << 20;
  });
  add("everything_on", [](Lz4FrameOptions& o) {
    o.linked_blocks = true;
    o.block_checksum = true;
    o.block_size = 64u << 10;
  });
  add("legacy", [](Lz4FrameOptions& o) { o.legacy = true; });
  add("legacy_level9", [](Lz4FrameOptions& o) {
    o.legacy = true;
    o.level = 9;
  });
  for (int level : {-5, 1, 3, 9, 12}) {
    add("level" + std::string(level < 0 ? "Minus" : "") + std::to_string(std::abs(level)), [level](Lz4FrameOptions& o) {
      o.level = level;
      o.block_size = 1u << 20;
    });
  }
  add("level12_linked", [](Lz4FrameOptions& o) {
    o.level = 12;
    o.linked_blocks = true;
    o.block_size = 64u << 10;
  });
  add("threads1", [](Lz4FrameOptions& o) {
    o.threads = 1;
    o.block_size = 256u << 10;
  });
  add("threads4", [](Lz4FrameOptions& o) {
    o.threads = 4;
    o.block_size = 256u << 10;
  });
  return v;
}

void PrintTo(const WriteCase& c, std::ostream* os) {
  const Lz4FrameOptions& o = c.options;
  *os << c.name << ": level " << o.level << ", block " << o.block_size << ", linked " << o.linked_blocks
      << ", content checksum " << o.content_checksum << ", block checksum " << o.block_checksum
      << ", content size " << o.content_size << ", legacy " << o.legacy << ", threads " << o.threads;
}

class TandemWritesLz4Reads : public ::testing::TestWithParam<WriteCase> {};

TEST_P(TandemWritesLz4Reads, Decodes) {
  REQUIRE_LZ4();
  TempDir dir;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{65536}, big_data().size()}) {
    SCOPED_TRACE(testing::Message() << GetParam().name << ", " << n << " bytes");
    const Bytes data(big_data().begin(), big_data().begin() + static_cast<std::ptrdiff_t>(n));
    Bytes frame;
    ASSERT_STATUS(tandem::lz4_frame_compress({data.data(), data.size()}, &frame, GetParam().options), StatusCode::ok);
    tandem::test::write_file(dir / "t.lz4", frame);
    std::string out;
    EXPECT_EQ(tandem::test::run("lz4 -t -q " + sh_quote((dir / "t.lz4").string()) + " 2>&1", &out), 0)
        << "lz4 -t: " << out;
    ASSERT_EQ(lz4("-d", dir / "t.lz4", dir / "t.out"), 0);
    const Bytes back = tandem::test::read_file(dir / "t.out");
    EXPECT_EQ(back.size(), data.size());
    EXPECT_TRUE(back == data);
  }
}

INSTANTIATE_TEST_SUITE_P(Interop, TandemWritesLz4Reads, ::testing::ValuesIn(write_cases()),
                         [](const ::testing::TestParamInfo<WriteCase>& info) { return info.param.name; });

TEST(Interop, TandemFramesConcatenatedWithSkippableFrames) {
  REQUIRE_LZ4();
  TempDir dir;
  const Bytes a = tandem::test::mixed_bytes(250000, 7);
  const Bytes b = tandem::test::text_like_bytes(100000, 8);
  Bytes file, fa, fb;
  Lz4FrameOptions oa;
  oa.block_size = 64u << 10;
  oa.linked_blocks = true;
  Lz4FrameOptions ob;
  ob.legacy = true;
  ASSERT_STATUS(tandem::lz4_frame_compress({a.data(), a.size()}, &fa, oa), StatusCode::ok);
  ASSERT_STATUS(tandem::lz4_frame_compress({b.data(), b.size()}, &fb, ob), StatusCode::ok);
  const Bytes skip{0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'};
  file.insert(file.end(), fa.begin(), fa.end());
  file.insert(file.end(), skip.begin(), skip.end());
  file.insert(file.end(), fa.begin(), fa.end());
  file.insert(file.end(), fb.begin(), fb.end());
  tandem::test::write_file(dir / "cat.lz4", file);
  ASSERT_EQ(lz4("-d", dir / "cat.lz4", dir / "cat.out"), 0);
  Bytes want = a;
  want.insert(want.end(), a.begin(), a.end());
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_TRUE(tandem::test::read_file(dir / "cat.out") == want);
  tandem::Status st;
  EXPECT_TRUE(tandem_decode(file, &st) == want);
  EXPECT_STATUS(st, StatusCode::ok);
}

TEST(Interop, Lz4RejectsWhatTandemRejects) {
  // A control for the malformed-input contract: a corrupted tandem frame is
  // refused by both.
  REQUIRE_LZ4();
  TempDir dir;
  const Bytes data = tandem::test::text_like_bytes(200000, 9);
  Bytes frame;
  ASSERT_STATUS(tandem::lz4_frame_compress({data.data(), data.size()}, &frame), StatusCode::ok);
  frame[frame.size() / 2] ^= 0x55;
  tandem::test::write_file(dir / "bad.lz4", frame);
  std::string out;
  EXPECT_NE(tandem::test::run("lz4 -t -q " + sh_quote((dir / "bad.lz4").string()) + " 2>&1", &out), 0);
  tandem::Status st;
  tandem_decode(frame, &st);
  EXPECT_TRUE(st.code == StatusCode::bad_data || st.code == StatusCode::checksum_mismatch) << st.to_string();
}

}  // namespace
