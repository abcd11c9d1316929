// `tandem zip ARCHIVE FILES...`, `tandem unzip ARCHIVE [-d DIR]` and
// `tandem scan ARCHIVE... [--list] [--json FILE] [--extract DIR]`.
//
// zip writes the files (directories recursively) into a new archive: entries
// deflated as tandem's indexed deflate streams (stored when that is not
// smaller), written to a temporary file beside ARCHIVE and renamed into
// place; an existing ARCHIVE is replaced only with -f.
//
// unzip extracts every entry under DIR (default: the current directory) and
// never outside it: names that are absolute, hold "..", "." or empty
// components, backslashes or drive letters are refused; no symbolic link is
// created, and none already under DIR is followed; an existing file is
// replaced only with -f (through a temporary file and a rename, so a link in
// its place is replaced, not followed). Each refused or failed entry is
// reported and the others go on; the exit code is then 1. --list prints the
// entries instead.
//
// scan lists every file inside each ARCHIVE through any nesting of gzip,
// zstd, LZ4, tar and ZIP (tandem/scan.hpp), with the limits that stop bombs;
// --json writes the entry tables, --extract writes each file under DIR at
// its path through the containers, with unzip's rules (never outside DIR,
// no link followed, nothing replaced without -f). An entry that failed or
// was refused is reported; the exit code is then 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tandem::cli {

struct ZipCommands {
  CLI::App* zip = nullptr;    // set when the subcommands are added
  CLI::App* unzip = nullptr;
  CLI::App* scan = nullptr;
  std::vector<std::string> scan_inputs;  // scan
  std::string json;                      // scan --json FILE
  std::string extract;                   // scan --extract DIR
  std::string max_ratio = "1000";        // scan: most output per input byte of one decompression
  int max_depth = 8;                     // scan: nesting below each archive
  std::string archive;
  std::vector<std::string> inputs;  // zip
  std::string dir = ".";            // unzip
  std::string max_output = "64G";   // unzip, scan: most bytes extracted from one archive
  int level = 6;
  bool force = false;
  bool list = false;
  bool quiet = false;
};

// Adds the zip, unzip and scan subcommands to `app`, their options bound to `z`.
void add_zip_commands(CLI::App& app, ZipCommands* z);
// When one of them was given: runs it and sets *code to the exit code.
bool run_zip_commands(const ZipCommands& z, int* code);

}  // namespace tandem::cli
