// `tandem zip` and `tandem unzip` (see cli_zip.hpp).
#include "cli/cli_zip.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/cli_args.hpp"
#include "cli/cli_output.hpp"
#include "tandem/scan.hpp"
#include "tandem/zip.hpp"

namespace tandem::cli {

namespace {

namespace fs = std::filesystem;

bool read_all(const fs::path& p, std::vector<std::uint8_t>* data, std::string* error) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    *error = std::strerror(errno);
    return false;
  }
  data->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = "read error";
    return false;
  }
  return true;
}

// Writes data to `target` through an AtomicOutput: a temporary file beside
// it, renamed into place (replacing an existing file only with `replace`).
bool write_atomically(const fs::path& target, const std::uint8_t* data, std::size_t n, mode_t mode, bool replace,
                      std::string* error) {
  AtomicOutput out;
  if (!out.open(target.string(), error)) return false;
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(out.fd(), data + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      *error = errno_message("write failed");
      return false;
    }
    done += static_cast<std::size_t>(w);
  }
  if (::fchmod(out.fd(), mode) != 0) {
    *error = errno_message("cannot set its permissions");
    return false;
  }
  return out.commit(replace, error);
}

// The entry name of a path given on the command line: relative, '/'
// separated, without "./" in front; false for a path with "..".
bool entry_name(const fs::path& p, std::string* name) {
  std::string s = p.generic_string();
  while (!s.empty() && s.front() == '/') s.erase(0, 1);
  while (s.rfind("./", 0) == 0) s.erase(0, 2);
  return zip::safe_relative_path(s, name);
}

int run_zip(const ZipCommands& z) {
  const fs::path archive(z.archive);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(archive, ec)) && !z.force) {
    std::fprintf(stderr, "tandem zip: %s: exists (use -f to replace it)\n", z.archive.c_str());
    return 1;
  }
  zip::Writer::Options options;
  options.level = z.level;
  zip::Writer writer(options);
  std::uint64_t files = 0, bytes = 0;
  bool failed = false;
  auto add_file = [&](const fs::path& p) {
    std::string name, error;
    if (fs::equivalent(p, archive, ec)) return;  // never the archive into itself
    if (!entry_name(p, &name)) {
      std::fprintf(stderr, "tandem zip: %s: not a name an archive may hold (\"..\"?); skipped\n", p.c_str());
      failed = true;
      return;
    }
    std::vector<std::uint8_t> data;
    if (!read_all(p, &data, &error)) {
      std::fprintf(stderr, "tandem zip: %s: %s\n", p.c_str(), error.c_str());
      failed = true;
      return;
    }
    struct stat st {};
    const std::uint32_t mode = ::stat(p.c_str(), &st) == 0 ? (0100000 | (st.st_mode & 0777)) : 0100644;
    if (Status s = writer.add_file(name, data, mode); !s) {
      std::fprintf(stderr, "tandem zip: %s: %s\n", p.c_str(), s.to_string().c_str());
      failed = true;
      return;
    }
    ++files;
    bytes += data.size();
    if (!z.quiet) std::fprintf(stderr, "  adding: %s\n", name.c_str());
  };
  for (const std::string& in : z.inputs) {
    const fs::path p(in);
    if (fs::is_directory(p, ec)) {
      std::string name;
      if (entry_name(p, &name)) (void)writer.add_directory(name);
      std::vector<fs::path> inside;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        inside.push_back(it->path());
      }
      if (ec) {
        std::fprintf(stderr, "tandem zip: %s: %s\n", in.c_str(), ec.message().c_str());
        failed = true;
      }
      std::sort(inside.begin(), inside.end());
      for (const fs::path& q : inside) {
        if (fs::is_directory(fs::symlink_status(q, ec))) {
          if (entry_name(q, &name)) (void)writer.add_directory(name);
        } else if (fs::is_regular_file(q, ec)) {
          add_file(q);
        }
      }
    } else if (fs::is_regular_file(p, ec)) {
      add_file(p);
    } else {
      std::fprintf(stderr, "tandem zip: %s: no such file or directory\n", in.c_str());
      failed = true;
    }
  }
  if (Status s = writer.finish(); !s) {
    std::fprintf(stderr, "tandem zip: %s\n", s.to_string().c_str());
    return 1;
  }
  std::string error;
  const auto& out = writer.bytes();
  if (!write_atomically(archive, out.data(), out.size(), 0644, z.force, &error)) {
    std::fprintf(stderr, "tandem zip: %s: %s\n", z.archive.c_str(), error.c_str());
    return 1;
  }
  if (!z.quiet) {
    std::fprintf(stderr, "tandem zip: %s: %llu files, %llu bytes -> %zu bytes\n", z.archive.c_str(),
                 static_cast<unsigned long long>(files), static_cast<unsigned long long>(bytes), out.size());
  }
  return failed ? 1 : 0;
}

// Makes the directories of `rel` under `root`, refusing any component that
// is a symbolic link or not a directory; *error says which.
bool make_parents(const fs::path& root, const std::string& rel, bool last_is_dir, std::string* error) {
  fs::path at = root;
  std::string_view rest = rel;
  for (;;) {
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos && !last_is_dir) return true;
    const std::string part(rest.substr(0, slash));
    at /= part;
    struct stat st {};
    if (::lstat(at.c_str(), &st) == 0) {
      if (S_ISLNK(st.st_mode)) {
        *error = at.string() + " is a symbolic link; not followed";
        return false;
      }
      if (!S_ISDIR(st.st_mode)) {
        *error = at.string() + " exists and is not a directory";
        return false;
      }
    } else if (::mkdir(at.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = at.string() + ": " + std::strerror(errno);
      return false;
    }
    if (slash == std::string_view::npos) return true;
    rest.remove_prefix(slash + 1);
  }
}

int run_unzip(const ZipCommands& z) {
  std::vector<std::uint8_t> archive;
  std::string error;
  if (!read_all(z.archive, &archive, &error)) {
    std::fprintf(stderr, "tandem unzip: %s: %s\n", z.archive.c_str(), error.c_str());
    return 1;
  }
  std::uint64_t limit = 0;
  if (!parse_size(z.max_output, &limit)) {
    std::fprintf(stderr, "tandem unzip: --max-output %s: not a size\n", z.max_output.c_str());
    return 2;
  }
  zip::ReadLimits limits;
  limits.max_total_size = limit;
  limits.max_entry_size = limit;
  std::vector<zip::Entry> entries;
  if (Status s = zip::read_directory(archive, &entries, limits); !s) {
    std::fprintf(stderr, "tandem unzip: %s: %s\n", z.archive.c_str(), s.to_string().c_str());
    return 1;
  }
  if (z.list) {
    std::printf("%12s %12s %-7s %s\n", "size", "compressed", "method", "name");
    for (const zip::Entry& e : entries) {
      std::printf("%12llu %12llu %-7s %s\n", static_cast<unsigned long long>(e.size),
                  static_cast<unsigned long long>(e.compressed_size),
                  e.method == zip::kDeflate ? "deflate" : e.method == zip::kStored ? "stored" : "other",
                  e.name.c_str());
    }
    return 0;
  }
  const fs::path root(z.dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (!fs::is_directory(root, ec)) {
    std::fprintf(stderr, "tandem unzip: %s: not a directory\n", z.dir.c_str());
    return 1;
  }
  bool failed = false;
  std::uint64_t written = 0;
  std::vector<std::uint8_t> data;
  for (const zip::Entry& e : entries) {
    auto refuse = [&](const std::string& why) {
      std::fprintf(stderr, "tandem unzip: %s: %s\n", e.name.c_str(), why.c_str());
      failed = true;
    };
    std::string rel;
    if (!zip::safe_relative_path(e.name, &rel)) {
      refuse("refused: the name would leave the directory");
      continue;
    }
    if (e.is_symlink()) {
      refuse("refused: symbolic links are not extracted");
      continue;
    }
    if (!make_parents(root, rel, e.is_directory(), &error)) {
      refuse("refused: " + error);
      continue;
    }
    if (e.is_directory()) continue;
    if (Status s = zip::extract(archive, e, &data, limit - std::min(limit, written)); !s) {
      refuse(s.to_string());
      continue;
    }
    const std::uint32_t unix_mode = e.unix_mode();
    const mode_t mode = unix_mode ? static_cast<mode_t>(unix_mode & 0777) : 0644;
    if (!write_atomically(root / rel, data.data(), data.size(), mode, z.force, &error)) {
      refuse(error);
      continue;
    }
    written += data.size();
    if (!z.quiet) std::fprintf(stderr, "  inflating: %s\n", rel.c_str());
  }
  return failed ? 1 : 0;
}

const char* code_name(StatusCode c) {
  switch (c) {
    case StatusCode::ok: return "ok";
    case StatusCode::truncated: return "truncated";
    case StatusCode::bad_data: return "bad_data";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::checksum_mismatch: return "checksum_mismatch";
    case StatusCode::output_limit: return "output_limit";
    default: return "error";
  }
}

int run_scan(const ZipCommands& z) {
  ScanLimits limits;
  std::uint64_t ratio = 0;
  if (!parse_size(z.max_output, &limits.max_output) || !parse_size(z.max_ratio, &ratio) || ratio == 0) {
    std::fprintf(stderr, "tandem scan: --max-output and --max-ratio take sizes (64G, 1000)\n");
    return 2;
  }
  limits.max_ratio = ratio;
  limits.max_depth = z.max_depth;
  const bool extract = !z.extract.empty();
  const fs::path root(z.extract);
  if (extract) {
    std::error_code ec;
    fs::create_directories(root, ec);
    if (!fs::is_directory(root, ec)) {
      std::fprintf(stderr, "tandem scan: %s: not a directory\n", z.extract.c_str());
      return 1;
    }
  }
  bool failed = false;
  nlohmann::json report = nlohmann::json::array();
  if (!extract && z.json.empty()) std::printf("%12s %5s %-28s %-12s %s\n", "size", "layer", "codec", "status", "path");
  for (const std::string& input : z.scan_inputs) {
    std::vector<std::uint8_t> archive;
    std::string error;
    if (!read_all(input, &archive, &error)) {
      std::fprintf(stderr, "tandem scan: %s: %s\n", input.c_str(), error.c_str());
      failed = true;
      continue;
    }
    ScanResult r;
    const std::string name = fs::path(input).filename().string();
    const Status s = scan({archive.data(), archive.size()}, name, limits, &r);
    if (!s) {
      std::fprintf(stderr, "tandem scan: %s: %s\n", input.c_str(), s.to_string().c_str());
      failed = true;
    }
    nlohmann::json entries = nlohmann::json::array();
    for (const ScanEntry& e : r.entries) {
      if (!e.status) {
        std::fprintf(stderr, "tandem scan: %s: %s\n", e.path.c_str(), e.status.to_string().c_str());
        failed = true;
      }
      entries.push_back({{"path", e.path},
                         {"layer", e.layer},
                         {"offset", e.offset},
                         {"size", e.size},
                         {"codec", e.codec},
                         {"status", code_name(e.status.code)},
                         {"reason", e.status.reason ? e.status.reason : ""}});
      if (!extract && z.json.empty()) {
        std::printf("%12llu %5d %-28s %-12s %s\n", static_cast<unsigned long long>(e.size), e.layer, e.codec.c_str(),
                    code_name(e.status.code), e.path.c_str());
      }
      if (!extract || !e.status) continue;
      std::string rel;
      if (!zip::safe_relative_path(e.path, &rel)) {
        std::fprintf(stderr, "tandem scan: %s: refused: the path would leave the directory\n", e.path.c_str());
        failed = true;
        continue;
      }
      if (!make_parents(root, rel, false, &error) ||
          !write_atomically(root / rel, r.bytes.data() + e.offset, static_cast<std::size_t>(e.size), 0644, z.force,
                            &error)) {
        std::fprintf(stderr, "tandem scan: %s: refused: %s\n", e.path.c_str(), error.c_str());
        failed = true;
        continue;
      }
      if (!z.quiet) std::fprintf(stderr, "  extracted: %s\n", rel.c_str());
    }
    report.push_back({{"archive", input}, {"entries", std::move(entries)}});
  }
  if (!z.json.empty()) {
    const std::string text = report.dump(2) + "\n";
    std::string error;
    if (z.json == "-") {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else if (!write_atomically(z.json, reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), 0644,
                                 z.force, &error)) {
      std::fprintf(stderr, "tandem scan: %s: %s\n", z.json.c_str(), error.c_str());
      return 1;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace

void add_zip_commands(CLI::App& app, ZipCommands* z) {
  z->zip = app.add_subcommand("zip", "Write FILES (directories recursively) into a new ZIP ARCHIVE");
  z->zip->add_option("ARCHIVE", z->archive, "The archive to write")->required();
  z->zip->add_option("FILES", z->inputs, "Files and directories")->required();
  z->zip->add_option("-l,--level", z->level, "Deflate level, 0 (store) to 12 (default 6)")
      ->check(CLI::Range(0, 12));
  z->zip->add_flag("-f,--force", z->force, "Replace an existing ARCHIVE");
  z->zip->add_flag("-q,--quiet", z->quiet, "Print nothing but errors");

  z->unzip = app.add_subcommand("unzip", "Extract a ZIP ARCHIVE under a directory, never outside it");
  z->unzip->add_option("ARCHIVE", z->archive, "The archive to read")->required();
  z->unzip->add_option("-d,--dir", z->dir, "Extract under DIR (default: the current directory)");
  z->unzip->add_option("--max-output", z->max_output, "Refuse archives that extract to more (default 64G)");
  z->unzip->add_flag("-f,--force", z->force, "Replace existing files");
  z->unzip->add_flag("-l,--list", z->list, "List the entries, extract nothing");
  z->unzip->add_flag("-q,--quiet", z->quiet, "Print nothing but errors");

  z->scan = app.add_subcommand(
      "scan", "List (or extract) every file inside ARCHIVES, through any nesting of gzip, zstd, LZ4, tar and ZIP");
  z->scan->add_option("ARCHIVES", z->scan_inputs, "Archives to scan")->required();
  z->scan->add_flag("-l,--list", z->list, "List the entries (the default without --json or --extract)");
  z->scan->add_option("--json", z->json, "Write the entry tables as JSON to FILE ('-' for stdout)")->type_name("FILE");
  z->scan->add_option("--extract", z->extract, "Write every file under DIR, never outside it")->type_name("DIR");
  z->scan->add_option("--max-output", z->max_output, "Stop decompressing an archive past this many bytes (64G)");
  z->scan->add_option("--max-ratio", z->max_ratio, "Stop a decompression past this many bytes a byte in (1000)");
  z->scan->add_option("--max-depth", z->max_depth, "Stop nesting this deep below an archive (8)")
      ->check(CLI::Range(0, 64));
  z->scan->add_flag("-f,--force", z->force, "Replace existing files (extracted ones, and the --json FILE)");
  z->scan->add_flag("-q,--quiet", z->quiet, "Print nothing but errors");
}

bool run_zip_commands(const ZipCommands& z, int* code) {
  if (z.zip && z.zip->parsed()) {
    *code = run_zip(z);
    return true;
  }
  if (z.unzip && z.unzip->parsed()) {
    *code = run_unzip(z);
    return true;
  }
  if (z.scan && z.scan->parsed()) {
    *code = run_scan(z);
    return true;
  }
  return false;
}

}  // namespace tandem::cli
