// Command-line parsing of the `tandem` command.
//
// parse_command_line() first rewrites the lz4/zstd conventions that CLI11
// cannot parse by itself (`-1`..`-12`, `--fast=N`, `tandem FILES` and
// `tandem -d FILES` without a subcommand, everything after `--`), then lets
// CLI11 parse the rest into a CommandLine: what to do and how. Help, version
// and usage errors are printed here; the caller only runs the work.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench.hpp"
#include "bench/pages_bench.hpp"
#include "cli/cli_zip.hpp"
#include "tandem/tandem.hpp"

namespace tandem::cli {

// What compress and decompress need; see `tandem compress --help`.
struct FileOptions {
  bool decompress = false;
  std::vector<std::string> inputs;  // "-" is stdin; never empty (stdin alone when none were named)
  std::string output;               // -o; empty when not given, "-" for stdout
  bool to_stdout = false;           // -c
  bool force = false;               // -f: overwrite outputs, write compressed data to a terminal
  bool remove_inputs = false;       // --rm: remove each input after a verified success
  int verbosity = 1;                // 0 quiet (-q), 1 normal, 2 verbose (-v)
  Backend backend = Backend::automatic;  // as requested; resolved by the caller
  Lz4FrameOptions frame;            // level, block size, flags and threads for compression
  // --codec: "lz4" (the default when compressing), "gzip", "zlib", "deflate"
  // (raw), "rans" (.rans files) or "lzr" (.lzr files). Empty when
  // decompressing without --codec: each input's first bytes tell (gzip,
  // zlib, LZ4, rANS, lzr), else a .deflate name means raw deflate.
  std::string codec;
  int deflate_level = 6;            // levels of gzip, zlib and deflate: 1..12
  int zstd_level = 3;               // levels of zstd: 1..19
  std::size_t file_block_size = 0;  // rans, lzr: bytes per block from -B; 0 = the library's default
  int threads = 0;                  // 0 = all hardware threads
  bool stats = false;               // --stats: the scheduler's figures of each file on stderr
  std::string json_path;            // --json FILE: those figures of every file as JSON
};

enum class Action {
  files,    // compress or decompress: CommandLine::files
  bench,    // run the benchmark: CommandLine::bench
  pages_bench,  // run the pages benchmark: CommandLine::pages
  zip,      // zip or unzip: CommandLine::zip
  version,  // print the version and the backends
  exit,     // nothing more to do: help was printed or the command line was wrong
};

struct CommandLine {
  Action action = Action::exit;
  int exit_code = 0;  // for Action::exit: 0 after help, 2 after a usage error
  FileOptions files;
  bench::BenchConfig bench;
  bench::PagesBenchConfig pages;
  ZipCommands zip;
};

// Parses argv. Prints help, and usage errors as "tandem: <message>", itself.
CommandLine parse_command_line(int argc, char** argv);

// Parses a byte count: "65536", "64K", "64KiB", "64KB", "1M", "4MiB", "1G"
// (K, M and G are powers of 1024). Returns false on anything else.
bool parse_size(std::string_view text, std::uint64_t* bytes);

}  // namespace tandem::cli
