// `tandem scan` as a user runs it: a tar.gz inside a ZIP inside a tar.gz
// listed, written as JSON and extracted byte for byte; extraction that never
// leaves its directory, and neither it nor the JSON report replaces anything
// without -f; a gzip bomb stopped
// by --max-ratio with a message and exit code 1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/cli_support.hpp"
#include "support/test_support.hpp"

namespace {

using tandem::test::Bytes;
using Result = tandem::test::CliResult;

class ScanCli : public tandem::test::CliTest {
 protected:
  // outer.tgz: mid.zip (in.tar.gz: a.txt, d/n.bin; b.txt), c.txt.
  void make_nested() {
    write("a.txt", tandem::test::text_like_bytes(20000, 1));
    write("n.bin", tandem::test::random_bytes(5000, 2));
    write("b.txt", tandem::test::text_like_bytes(3000, 3));
    write("c.txt", tandem::test::text_like_bytes(700, 4));
    ASSERT_EQ(shell("mkdir -p d && mv n.bin d/ && tar czf in.tar.gz a.txt d"), 0);
    ASSERT_EQ(tandem("zip -q mid.zip in.tar.gz b.txt").code, 0);
    ASSERT_EQ(shell("tar czf outer.tgz mid.zip c.txt"), 0);
  }
};

TEST_F(ScanCli, ListsJsonAndExtractsNestedArchives) {
  if (!tandem::test::have_tool("tar")) GTEST_SKIP() << "tar is not installed";
  make_nested();
  const Result list = tandem("scan outer.tgz");
  ASSERT_EQ(list.code, 0) << list.err;
  for (const char* path : {"outer.tar/mid.zip/in.tar/a.txt", "outer.tar/mid.zip/in.tar/d/n.bin",
                           "outer.tar/mid.zip/b.txt", "outer.tar/c.txt"}) {
    EXPECT_NE(list.out.find(path), std::string::npos) << path << " in\n" << list.out;
  }
  const Result json = tandem("scan --json report.json outer.tgz");
  ASSERT_EQ(json.code, 0) << json.err;
  const Bytes text = read("report.json");
  const nlohmann::json report = nlohmann::json::parse(text.begin(), text.end());
  ASSERT_EQ(report.size(), 1u);
  ASSERT_EQ(report[0]["entries"].size(), 4u);
  const std::string codec = report[0]["entries"][0]["codec"];
  EXPECT_TRUE(codec == "gzip+tar+zip:stored+gzip+tar" || codec == "gzip+tar+zip:deflate+gzip+tar") << codec;
  EXPECT_EQ(report[0]["entries"][0]["status"], "ok");
  // The report replaces no file without -f (a path given to --json that
  // names an archive keeps it).
  const Bytes archive = read("outer.tgz");
  const Result clobber = tandem("scan --json outer.tgz mid.zip");
  EXPECT_EQ(clobber.code, 1);
  EXPECT_NE(clobber.err.find("already exists"), std::string::npos) << clobber.err;
  EXPECT_EQ(read("outer.tgz"), archive);
  ASSERT_EQ(tandem("scan -f --json report.json outer.tgz").code, 0);

  const Result x = tandem("scan -q --extract out outer.tgz");
  ASSERT_EQ(x.code, 0) << x.err;
  EXPECT_EQ(read("out/outer.tar/mid.zip/in.tar/a.txt"), read("a.txt"));
  EXPECT_EQ(read("out/outer.tar/mid.zip/in.tar/d/n.bin"), read("d/n.bin"));
  EXPECT_EQ(read("out/outer.tar/mid.zip/b.txt"), read("b.txt"));
  EXPECT_EQ(read("out/outer.tar/c.txt"), read("c.txt"));
  // Nothing is replaced without -f.
  write("out/outer.tar/c.txt", Bytes{'k', 'e', 'e', 'p'});
  const Result again = tandem("scan -q --extract out outer.tgz");
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  EXPECT_EQ(read("out/outer.tar/c.txt"), (Bytes{'k', 'e', 'e', 'p'}));
  ASSERT_EQ(tandem("scan -q -f --extract out outer.tgz").code, 0);
  EXPECT_EQ(read("out/outer.tar/c.txt"), read("c.txt"));
}

TEST_F(ScanCli, NeverWritesOutsideItsDirectory) {
  if (!tandem::test::have_tool("tar")) GTEST_SKIP() << "tar is not installed";
  write("x", Bytes{'x'});
  ASSERT_EQ(shell("mkdir -p sub && cd sub && tar -P -cf ../evil.tar ../x"), 0);
  ASSERT_EQ(shell("rm x && mkdir out"), 0);
  const Result r = tandem("scan -q --extract out/in evil.tar");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("refused"), std::string::npos) << r.err;
  EXPECT_FALSE(exists("x"));
  EXPECT_FALSE(exists("out/x"));
}

TEST_F(ScanCli, BombsStopAtTheRatioLimit) {
  ASSERT_EQ(shell("head -c 20000000 /dev/zero | gzip > z.gz"), 0);
  const Result r = tandem("scan --max-ratio 50 z.gz");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("ratio limit"), std::string::npos) << r.err;
  const Result ok = tandem("scan --max-ratio 5000 z.gz");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("20000000"), std::string::npos) << ok.out;
  const Result usage = tandem("scan --max-ratio zero z.gz");
  EXPECT_EQ(usage.code, 2);
}

}  // namespace
