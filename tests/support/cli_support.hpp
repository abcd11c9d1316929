// A fixture for tests of the `tandem` command, run as a user would run it:
// through /bin/sh in a fresh directory `dir` (whose listing a test may check
// for stray temporary files), with stderr captured in a second one, `logs`.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace tandem::test {

struct CliResult {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class CliTest : public ::testing::Test {
 protected:
  // Runs `tandem ARGS` in `dir`; ARGS is shell text (quote file names that need it).
  CliResult tandem(const std::string& args) {
    const std::filesystem::path err = logs / "stderr";
    const std::string cmd = "cd " + sh_quote(dir.path().string()) + " && " + sh_quote(cli_path()) + " " + args +
                            " 2>" + sh_quote(err.string());
    CliResult r;
    r.code = run(cmd, &r.out);
    std::ifstream f(err);
    r.err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return r;
  }
  // Runs a shell command in `dir`; returns its exit status.
  int shell(const std::string& cmd) { return run("cd " + sh_quote(dir.path().string()) + " && " + cmd + " 2>/dev/null"); }
  std::filesystem::path path(const std::string& name) const { return dir / name; }
  void write(const std::string& name, const Bytes& data) { write_file(path(name), data); }
  Bytes read(const std::string& name) { return read_file(path(name)); }
  bool exists(const std::string& name) const { return std::filesystem::exists(path(name)); }
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.insert(e.path().filename().string());
    return names;
  }
  std::string cli() const { return sh_quote(cli_path()); }

  TempDir dir;
  TempDir logs;
};

}  // namespace tandem::test
