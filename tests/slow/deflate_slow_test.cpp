// Large deflate round trips: the Silesia files one by one and concatenated,
// and an input larger than a compression batch read from memory (regression:
// a memory source offers all its bytes at once, and the compressor once took
// them all as one batch and wrote past its per-chunk arrays).
#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "tandem/deflate.hpp"

namespace {

using tandem::DeflateContainer;
using tandem::test::Bytes;

void round_trip(const Bytes& in, DeflateContainer c, int level) {
  tandem::DeflateOptions o;
  o.container = c;
  o.level = level;
  Bytes z, back;
  ASSERT_TRUE(tandem::deflate_compress({in.data(), in.size()}, &z, o).ok());
  tandem::DeflateDecodeOptions d;
  d.container = c == DeflateContainer::raw ? c : DeflateContainer::detect;
  tandem::DeflateStats stats;
  ASSERT_TRUE(tandem::deflate_decompress({z.data(), z.size()}, &back, d, &stats).ok());
  EXPECT_TRUE(back == in);
  EXPECT_EQ(stats.indexed_members, c == DeflateContainer::gzip ? 1u : 0u);
}

TEST(DeflateSlow, InputsLargerThanABatch) {
  const Bytes in = tandem::test::mixed_bytes(100u << 20, 81);
  round_trip(in, DeflateContainer::gzip, 1);
  round_trip(in, DeflateContainer::zlib, 1);
}

TEST(DeflateSlow, SilesiaFilesAndTheirConcatenation) {
  const auto dir = tandem::test::silesia_dir();
  if (dir.empty()) GTEST_SKIP() << "the Silesia corpus is not available";
  Bytes all;
  for (const std::string& name : tandem::test::silesia_names()) {
    SCOPED_TRACE(name);
    const Bytes file = tandem::test::read_file(dir / name);
    round_trip(file, DeflateContainer::gzip, 6);
    all.insert(all.end(), file.begin(), file.end());
  }
  round_trip(all, DeflateContainer::gzip, 1);
  round_trip(all, DeflateContainer::raw, 9);
}

}  // namespace
