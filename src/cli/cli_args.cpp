// Command-line parsing of the `tandem` command: argv rewriting, the CLI11
// definitions of the three subcommands, and the checks CLI11 cannot express
// (levels, lz4-style -B block options, sizes).
//
// The rewriting step exists because CLI11 takes `-9` for an unknown option and
// needs a subcommand, while lz4 and zstd users type `tandem -9 file` and
// `tandem -dc file.lz4`. It turns
//   -N           into --level=N    (and `--level -N` into --level=-N)
//   --fast[=N]   into --level=-N   (N = 1 when absent)
// so that the last level given wins, puts `compress` in front when no
// subcommand is named (`-d` then selects decompression inside it), and takes
// everything after `--` as file names.
#include "cli/cli_args.hpp"

#include "tandem/pages.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>

namespace tandem::cli {

namespace {

constexpr int kMaxLevel = 12;
constexpr int kMaxZstdLevel = 19;  // as the zstd tool without --ultra
constexpr int kMinLevel = -65537;  // liblz4's largest acceleration

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool is_subcommand(std::string_view s) {
  return s == "compress" || s == "decompress" || s == "bench" || s == "pages" || s == "zip" || s == "unzip" ||
         s == "scan";
}

// Options whose value is the next argument: `-T -3` is a bad thread count for
// CLI11 to report, not level 3.
bool takes_value(std::string_view s) {
  for (const char* option : {"-o", "--output", "-T", "--threads", "-B", "--backend", "--codec", "--chunk",
                             "--chunks", "--json", "--min-time", "--runs", "--page-size", "--batches",
                             "--engines", "--size", "--timeline", "-d", "--dir", "--max-output", "--extract",
                             "--max-ratio", "--max-depth"}) {
    if (s == option) return true;
  }
  return false;
}

void usage_error(const std::string& message) {
  std::fprintf(stderr, "tandem: %s\nTry 'tandem --help' for more information.\n", message.c_str());
}

struct Rewritten {
  std::vector<std::string> args;      // for CLI11, argv[0] excluded
  std::vector<std::string> trailing;  // file names after `--`
  bool version = false;
  std::string error;                  // a usage error found while rewriting
};

Rewritten rewrite_args(int argc, char** argv) {
  const std::vector<std::string> in(argv + 1, argv + argc);
  Rewritten r;
  std::size_t i = 0;
  if (!in.empty() && is_subcommand(in[0])) {
    r.args.push_back(in[i++]);
  } else if (in.empty() || (in[0] != "-h" && in[0] != "--help")) {
    r.args.push_back("compress");
  }
  for (; i < in.size(); ++i) {
    const std::string& a = in[i];
    if (a == "--") {
      r.trailing.assign(in.begin() + static_cast<std::ptrdiff_t>(i) + 1, in.end());
      break;
    }
    if (a == "-V" || a == "--version") {
      r.version = true;
    } else if (a.size() >= 2 && a[0] == '-' && all_digits(std::string_view(a).substr(1)) &&
               !(i > 0 && takes_value(in[i - 1]))) {
      if (!r.args.empty() && r.args.back() == "--level") {
        r.args.back() = "--level=" + a;  // `--level -3`: a fast level
      } else {
        r.args.push_back("--level=" + a.substr(1));
      }
    } else if (a == "--fast") {
      r.args.push_back("--level=-1");
    } else if (a.starts_with("--fast=")) {
      const std::string n = a.substr(7);
      if (!all_digits(n) || n.find_first_not_of('0') == std::string::npos) {
        r.error = "--fast needs a positive number, not '" + n + "'";
      }
      r.args.push_back("--level=-" + n);
    } else {
      r.args.push_back(a);
    }
  }
  return r;
}

// One -B argument, lz4 style: any sequence of 4..7 (64 KiB .. 4 MiB), a size
// in bytes or with a K/M suffix, D (linked blocks) and X (block checksums),
// e.g. -B4, -B1M, -BD, -BX, -B6DX.
bool parse_block_spec(std::string_view spec, Lz4FrameOptions* frame, std::string* error) {
  if (spec.empty()) {
    *error = "-B needs an argument";
    return false;
  }
  std::size_t i = 0;
  while (i < spec.size()) {
    const char c = spec[i];
    if (c == 'D') {
      frame->linked_blocks = true;
      ++i;
    } else if (c == 'X') {
      frame->block_checksum = true;
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t end = i;
      while (end < spec.size() && std::isdigit(static_cast<unsigned char>(spec[end]))) ++end;
      const std::size_t digits_end = end;
      if (end < spec.size() && std::string_view("KkMm").find(spec[end]) != std::string_view::npos) {
        ++end;
        if (end < spec.size() && spec[end] == 'i') ++end;
        if (end < spec.size() && spec[end] == 'B') ++end;
      }
      const std::string_view token = spec.substr(i, end - i);
      std::uint64_t bytes = 0;
      if (end == digits_end && token.size() == 1 && token[0] >= '4' && token[0] <= '7') {
        bytes = std::uint64_t{1} << (8 + 2 * (token[0] - '0'));  // lz4's -B4..-B7
      } else if (!parse_size(token, &bytes)) {
        bytes = 0;
      }
      if (bytes == 0 || !lz4_valid_block_size(static_cast<std::size_t>(bytes))) {
        *error = "invalid block size '" + std::string(token) + "' (use -B4..-B7, -B64K, -B256K, -B1M or -B4M)";
        return false;
      }
      frame->block_size = static_cast<std::size_t>(bytes);
      i = end;
    } else {
      *error = "invalid -B argument '" + std::string(spec) + "' (expected 4..7, a block size, D or X)";
      return false;
    }
  }
  return true;
}

bool check_level(int level, std::string* error) {
  if (level > kMaxLevel) {
    *error = "compression level " + std::to_string(level) + " is above the maximum, " + std::to_string(kMaxLevel);
    return false;
  }
  if (level < kMinLevel) {
    *error = "--fast=" + std::to_string(-level) + " is above the maximum, " + std::to_string(-kMinLevel);
    return false;
  }
  return true;
}

// Values of the compress/decompress options before they are checked.
struct FileArgs {
  std::vector<std::string> files;
  std::string output;
  bool to_stdout = false, force = false, keep = false, remove = false;
  bool decompress = false, compress = false;
  bool quiet = false;
  int verbose = 0;
  int threads = 0;
  std::string backend = "auto";
  int level = 0;
  std::vector<std::string> block_specs;
  bool no_frame_crc = false, no_content_size = false, legacy = false;
  bool stats = false;
  std::string json;
  std::string codec;
};

const std::vector<std::string> kBackends = {"cpu", "gpu", "auto"};

// A validator whose description stays out of the help text, where the
// option's type name already says what it takes.
CLI::Validator silent(CLI::Validator v) {
  v.description("");
  return v;
}

// Accepts a number (an integer when `integer`) of at least `min`, with a
// short error message; CLI11's own range validators print DBL_MAX in full.
CLI::Validator at_least(double min, bool integer) {
  return CLI::Validator(
      [min, integer](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double value = integer ? static_cast<double>(std::strtoll(text.c_str(), &end, 10))
                                     : std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || errno != 0 || value < min) {
          char expected[64];
          std::snprintf(expected, sizeof expected, integer ? "an integer >= %.0f" : "a number >= %g", min);
          return std::string("expected ") + expected + ", not '" + text + "'";
        }
        return {};
      },
      "");
}

void add_file_options(CLI::App* app, FileArgs* a) {
  app->add_option("FILES", a->files, "Input files; none or '-' reads stdin and writes stdout");
  app->add_flag("-d,--decompress", a->decompress, "Decompress (tandem -d FILES)");
  app->add_flag("-z,--compress", a->compress, "Compress (the default)");
  app->add_option("-o,--output", a->output, "Write to FILE (one input only; '-' is stdout)")
      ->type_name("FILE");
  app->add_flag("-c,--stdout", a->to_stdout, "Write to stdout; several inputs are concatenated");
  app->add_flag("-f,--force", a->force,
                "Overwrite existing outputs; write compressed data to a terminal");
  auto* keep = app->add_flag("-k,--keep", a->keep, "Keep the inputs (the default)");
  app->add_flag("--rm", a->remove,
                "Remove each input after its output was written and verified")
      ->excludes(keep);
  app->add_option("--level", a->level,
                  "Compression level, usually written -N: -1 (default) .. -12 (zstd: -19); "
                  "--fast=N is level -N")
      ->type_name("N")
      ->take_last();
  app->add_option("-B", a->block_specs,
                  "Blocks: -B4..-B7 or -B64K, -B256K, -B1M, -B4M (size, default 4M); "
                  "-BD linked blocks; -BX block checksums")
      ->type_name("SPEC")
      ->allow_extra_args(false)
      ->take_all();
  app->add_flag("--no-frame-crc", a->no_frame_crc, "Do not write the content checksum");
  app->add_flag("--no-content-size", a->no_content_size, "Do not store the content size");
  app->add_flag("-l,--legacy", a->legacy, "Write the legacy LZ4 format (lz4 -l)");
  app->add_option("-T,--threads", a->threads, "Worker threads, 0 = all (default)")
      ->type_name("N")
      ->check(at_least(0, true))
      ->take_last();
  app->add_option("--backend", a->backend,
                  "Where to run: cpu, gpu or auto (default: the GPU where there is one and a batch "
                  "suits it); the GPU compresses at -1/-2 only")
      ->type_name("cpu|gpu|auto")
      ->check(silent(CLI::IsMember(kBackends)))
      ->take_last();
  app->add_flag("-q,--quiet", a->quiet, "No progress bar and no warnings");
  app->add_flag("-v,--verbose", a->verbose, "Print sizes, ratio and speed of every file");
  app->add_flag("--stats", a->stats,
                "Print how each file was worked: bytes and speed of the CPU and GPU workers, "
                "transfer, kernel, idle and queue times, ratio");
  app->add_option("--json", a->json, "Write those figures for every file as JSON to FILE")->type_name("FILE");
  app->add_option("--codec", a->codec,
                  "Format: lz4 (default), gzip (.gz), zlib (.zz), deflate (raw, .deflate), rans "
                  "(tandem's rANS entropy coder, .rans), lzr (tandem's LZ77 + rANS codec, .lzr) or zstd (.zst, "
                  "libzstd on the CPU); decompression recognises gzip, zlib, LZ4, zstd, rANS and lzr files by "
                  "their first bytes")
      ->type_name("NAME")
      ->check(silent(CLI::IsMember({"lz4", "gzip", "zlib", "deflate", "rans", "lzr", "zstd"})))
      ->take_last();
}

bool make_file_options(const FileArgs& a, bool decompress_command, FileOptions* o, std::string* error) {
  // -d and -z override the subcommand; given both, decompression wins like lz4's last -d.
  o->decompress = a.decompress || (decompress_command && !a.compress);
  o->inputs = a.files;
  if (o->inputs.empty()) o->inputs.push_back("-");
  o->output = a.output;
  o->to_stdout = a.to_stdout;
  o->force = a.force;
  o->remove_inputs = a.remove;
  o->verbosity = a.quiet ? 0 : 1 + (a.verbose > 0 ? 1 : 0);
  if (!parse_backend(a.backend, &o->backend)) {
    *error = "unknown backend '" + a.backend + "'";
    return false;
  }
  o->threads = a.threads;
  o->codec = a.codec;
  if (!o->decompress && o->codec.empty()) o->codec = "lz4";
  if (o->codec == "zstd") {
    if (a.level < 0 || a.level > kMaxZstdLevel) {
      *error = "zstd takes levels -1 .. -" + std::to_string(kMaxZstdLevel);
      return false;
    }
    o->zstd_level = a.level == 0 ? 3 : a.level;
  } else if (!check_level(a.level, error)) {
    return false;
  }
  o->frame.level = o->codec == "zstd" ? 0 : a.level;
  if (o->codec == "gzip" || o->codec == "zlib" || o->codec == "deflate") {
    if (a.level < 0) {
      *error = "--fast is an LZ4 level; " + o->codec + " takes levels -1 .. -12";
      return false;
    }
    o->deflate_level = a.level == 0 ? 6 : a.level;
  }
  if ((o->codec == "rans" || o->codec == "lzr") && !o->decompress && a.level != 0) {
    *error = o->codec + " has no compression levels";
    return false;
  }
  for (const auto& spec : a.block_specs) {
    if (!parse_block_spec(spec, &o->frame, error)) return false;
  }
  if ((o->codec == "rans" || o->codec == "lzr") && !a.block_specs.empty()) o->file_block_size = o->frame.block_size;
  o->frame.content_checksum = !a.no_frame_crc;
  o->frame.content_size = !a.no_content_size;
  o->frame.legacy = a.legacy;
  o->frame.threads = a.threads;
  o->frame.backend = o->backend;
  o->stats = a.stats;
  o->json_path = a.json;
  if (o->inputs.size() > 1 && !o->output.empty() && o->output != "-") {
    *error = "-o takes one input file, not " + std::to_string(o->inputs.size());
    return false;
  }
  if (o->to_stdout && !o->output.empty()) {
    *error = "-c and -o cannot be used together";
    return false;
  }
  return true;
}

// Values of the bench options before they are checked.
struct PagesArgs {
  std::string page_size = "4K";
  std::string batches;  // empty: the bench's default list
  std::string engines;  // empty: all
};

struct BenchArgs {
  std::string chunk = "4M";
  std::string chunks;  // GPU chunk sizes; empty: the bench's default list
  int level = 0;
  std::string size;    // --hybrid: the input's least size; empty: the default
};

const char* const kDescription =
    "tandem: LZ4 compression on the CPU and the GPU, in the format the lz4 tool reads and writes;\n"
    "gzip, zlib, raw deflate and tandem's rANS files on the CPU (--codec).\n"
    "\n"
    "  tandem [compress] [OPTIONS] [FILES...]   compress FILE to FILE.lz4\n"
    "  tandem decompress [OPTIONS] [FILES...]   decompress FILE.lz4 to FILE (also: tandem -d FILES)\n"
    "  tandem bench [OPTIONS] FILES|DIRS        measure tandem against liblz4\n"
    "  tandem --version                         print the version and the available backends\n"
    "\n"
    "Without FILES, or with '-', tandem reads stdin and writes stdout. Inputs are kept;\n"
    "existing outputs are not overwritten without -f. Levels: -1 (default) .. -12, --fast=N.\n"
    "Run 'tandem compress --help' or 'tandem bench --help' for the options.";

}  // namespace

bool parse_size(std::string_view text, std::uint64_t* bytes) {
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  int shift = 0;
  if (i < text.size()) {
    switch (text[i]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: return false;
    }
    ++i;
    if (i < text.size() && text[i] == 'i') ++i;
    if (i < text.size() && (text[i] == 'B' || text[i] == 'b')) ++i;
    if (i != text.size()) return false;
  }
  if (shift && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return false;
  *bytes = value << shift;
  return true;
}

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine result;
  Rewritten rw = rewrite_args(argc, argv);
  if (rw.version) {
    result.action = Action::version;
    return result;
  }
  if (!rw.error.empty()) {
    usage_error(rw.error);
    result.exit_code = 2;
    return result;
  }

  CLI::App app(kDescription, "tandem");
  app.require_subcommand(0, 1);
  app.footer("Exit status: 0 success, 1 a file failed (the others are still processed), 2 usage error.");

  FileArgs compress_args, decompress_args;
  CLI::App* compress = app.add_subcommand("compress", "Compress FILES to FILE.lz4 (the default command)");
  add_file_options(compress, &compress_args);
  CLI::App* decompress = app.add_subcommand("decompress", "Decompress FILE.lz4 to FILE (also tandem -d)");
  add_file_options(decompress, &decompress_args);
  for (CLI::App* sub : {compress, decompress}) {
    sub->footer(
        "Levels: -1 (default) and -2 are fast; -3 .. -12 use LZ4 HC, slower and smaller;\n"
        "--fast=N is faster and larger as N grows. The last level given wins.\n"
        "Several -B may be combined: -B6 -BD -BX, or -B6DX.\n"
        "gzip, zlib, deflate: levels -1 .. -12 of libdeflate (default -6), 64 KiB chunks in parallel.\n"
        "zstd: levels -1 .. -19 of libzstd (default -3), on the CPU, its worker threads; .zst files.\n"
        "rans: order-0 rANS entropy coding, no levels, 64 KiB blocks (-B sets another size) in parallel,\n"
        "XXH3-64 checksum.\n"
        "lzr: LZ77 + rANS streams (the GPU encoder's frames, coded here on the CPU), no levels,\n"
        "4 MiB blocks (-B sets another size) in parallel, XXH3-64 checksum.\n"
        "A progress bar appears on a terminal for inputs of 64 MiB or more, and for stdin.");
  }

  BenchArgs bench_args;
  bench::BenchConfig& bench = result.bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Measure tandem and liblz4 on FILES and DIRS");
  bench_cmd->add_option("FILES", bench.paths, "Files, and directories whose regular files are read")
      ->required();
  bench_cmd->add_option("--codec", bench.codec,
                        "Codec: lz4 (the default); rans (tandem's rANS format); deflate (GPU deflate and inflate); lzr "
                        "(tandem's LZ77 + rANS format, against zstd -1 and -3); scan (the archive scanner on FILES and DIRS "
                        "of archives, CPU threads against the GPU batch)")
      ->type_name("NAME")
      ->check(silent(CLI::IsMember({"lz4", "rans", "deflate", "lzr", "scan"})));
  bench_cmd->add_option("--backend", bench.backend, "Where tandem runs: cpu, gpu or auto (default)")
      ->type_name("cpu|gpu|auto")
      ->check(silent(CLI::IsMember(kBackends)));
  bench_cmd->add_option("--chunk", bench_args.chunk, "Block size: 64K, 256K, 1M or 4M (default)")
      ->type_name("SIZE");
  bench_cmd->add_option("--chunks", bench_args.chunks, "GPU chunk sizes, e.g. 4K,16K,64K,256K (the default)")
      ->type_name("SIZES");
  bench_cmd->add_option("-T,--threads", bench.threads, "Threads of the all-threads figures, 0 = all")
      ->type_name("N")
      ->check(at_least(0, true));
  bench_cmd->add_option("--level", bench_args.level, "Compression level, also -N and --fast=N")
      ->type_name("N")
      ->take_last();
  bench_cmd->add_option("--json", bench.json_path, "Also write the results as JSON to FILE")
      ->type_name("FILE");
  bench_cmd->add_option("--min-time", bench.min_seconds, "Repeat each measurement for this long")
      ->type_name("SECONDS")
      ->check(at_least(0, false));
  bench_cmd->add_option("--runs", bench.min_runs, "...and at least this many times; the median is kept")
      ->type_name("N")
      ->check(at_least(1, true));
  bench_cmd->add_flag("-q,--quiet", bench.quiet, "No progress lines on stderr");
  bench_cmd->add_flag("--hybrid", bench.hybrid,
                      "Instead: LZ4 frames through the hybrid scheduler (cpu, gpu, auto) against liblz4, "
                      "64K blocks, on FILES repeated to --size; --chunk sets the host chunk (default 2M)");
  bench_cmd->add_option("--size", bench_args.size, "--hybrid: input of at least SIZE bytes (default 4000000000)")
      ->type_name("SIZE");
  bench_cmd->add_option("--timeline", bench.timeline_path,
                        "--hybrid: SVG timeline of the auto compression to FILE, of decompression to FILE-decompress")
      ->type_name("FILE");

  PagesArgs pages_args;
  bench::PagesBenchConfig& pages = result.pages;
  CLI::App* pages_cmd = app.add_subcommand("pages", "Memory pages, compressed as compressed swap does");
  pages_cmd->require_subcommand(1, 1);
  CLI::App* pages_bench = pages_cmd->add_subcommand(
      "bench", "Read FILES as memory pages (a core dump, say); measure each engine in batches, and a zram-like baseline");
  pages_bench->add_option("FILES", pages.paths, "Files, read as one sequence of pages")->required();
  pages_bench->add_option("--page-size", pages_args.page_size, "Page size: 4K (default), 16K or 64K")
      ->type_name("SIZE");
  pages_bench->add_option("--batches", pages_args.batches, "Pages per batch, default 1,16,256,1000,10000,100000")
      ->type_name("N,...");
  pages_bench->add_option("--engines", pages_args.engines,
                          "Engines, default zram,cpu-1,cpu,gpu-host,gpu-pageable,gpu-device")
      ->type_name("NAMES");
  pages_bench->add_option("-T,--threads", pages.threads, "Threads of the cpu engine, 0 = all")
      ->type_name("N")
      ->check(at_least(0, true));
  pages_bench->add_option("--json", pages.json_path, "Also write the results as JSON to FILE")->type_name("FILE");
  pages_bench->add_option("--min-time", pages.min_seconds, "Repeat each measurement for this long")
      ->type_name("SECONDS")
      ->check(at_least(0, false));
  pages_bench->add_option("--runs", pages.min_runs, "...and at least this many times; the median is kept")
      ->type_name("N")
      ->check(at_least(1, true));
  pages_bench->add_flag("-q,--quiet", pages.quiet, "No progress lines on stderr");

  add_zip_commands(app, &result.zip);

  std::vector<std::string> args = rw.args;
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      result.exit_code = app.exit(e, std::cout, std::cerr);
      return result;
    }
    usage_error(e.what());
    result.exit_code = 2;
    return result;
  }

  std::string error;
  if (*result.zip.zip || *result.zip.unzip || *result.zip.scan) {
    if (*result.zip.zip) result.zip.inputs.insert(result.zip.inputs.end(), rw.trailing.begin(), rw.trailing.end());
    if (*result.zip.scan) {
      result.zip.scan_inputs.insert(result.zip.scan_inputs.end(), rw.trailing.begin(), rw.trailing.end());
    }
    result.action = Action::zip;
    return result;
  }
  if (*pages_bench) {
    pages.paths.insert(pages.paths.end(), rw.trailing.begin(), rw.trailing.end());
    std::uint64_t page_size = 0;
    if (!parse_size(pages_args.page_size, &page_size) || !valid_page_size(static_cast<std::size_t>(page_size))) {
      usage_error("invalid --page-size '" + pages_args.page_size + "' (use 4K, 16K or 64K)");
      result.exit_code = 2;
      return result;
    }
    pages.page_size = static_cast<std::size_t>(page_size);
    if ((!pages_args.batches.empty() && !bench::parse_batch_list(pages_args.batches, &pages.batches, &error)) ||
        (!pages_args.engines.empty() && !bench::parse_engine_list(pages_args.engines, &pages.engines, &error))) {
      usage_error(error);
      result.exit_code = 2;
      return result;
    }
    result.action = Action::pages_bench;
    return result;
  }
  if (*bench_cmd) {
    bench.paths.insert(bench.paths.end(), rw.trailing.begin(), rw.trailing.end());
    if (bench.hybrid) {
      // The host chunk holds whole 64 KiB blocks; the frame's block size is fixed.
      std::uint64_t hybrid_chunk = 0;
      if (bench_cmd->count("--chunk") > 0) {
        if (!parse_size(bench_args.chunk, &hybrid_chunk) || hybrid_chunk == 0 || hybrid_chunk % (64u << 10) != 0) {
          usage_error("invalid --chunk '" + bench_args.chunk + "' with --hybrid (a multiple of 64K)");
          result.exit_code = 2;
          return result;
        }
        bench.hybrid_chunk = static_cast<std::size_t>(hybrid_chunk);
      }
      if (!bench_args.size.empty() && (!parse_size(bench_args.size, &bench.hybrid_size) || bench.hybrid_size == 0)) {
        usage_error("invalid --size '" + bench_args.size + "'");
        result.exit_code = 2;
        return result;
      }
      result.action = Action::bench;
      return result;
    }
    std::uint64_t chunk = 0;
    if (!parse_size(bench_args.chunk, &chunk) || !lz4_valid_block_size(static_cast<std::size_t>(chunk))) {
      usage_error("invalid --chunk '" + bench_args.chunk + "' (use 64K, 256K, 1M or 4M)");
      result.exit_code = 2;
      return result;
    }
    if (!check_level(bench_args.level, &error)) {
      usage_error(error);
      result.exit_code = 2;
      return result;
    }
    if (!bench_args.chunks.empty() && !bench::parse_chunk_list(bench_args.chunks, &bench.gpu_chunks, &error)) {
      usage_error("--chunks: " + error);
      result.exit_code = 2;
      return result;
    }
    bench.chunk = static_cast<std::size_t>(chunk);
    bench.level = bench_args.level;
    result.action = Action::bench;
    return result;
  }
  if (!*compress && !*decompress) {  // only reachable through options of the top level
    std::cout << app.help();
    result.exit_code = 2;
    return result;
  }
  FileArgs& a = *compress ? compress_args : decompress_args;
  a.files.insert(a.files.end(), rw.trailing.begin(), rw.trailing.end());
  if (!make_file_options(a, static_cast<bool>(*decompress), &result.files, &error)) {
    usage_error(error);
    result.exit_code = 2;
    return result;
  }
  result.action = Action::files;
  return result;
}

}  // namespace tandem::cli
