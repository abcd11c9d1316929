// The `tandem` command: compress, decompress and benchmark LZ4, gzip, zlib
// and deflate files, write and extract ZIP archives (`tandem zip`, `tandem
// unzip`), and benchmark page compression (`tandem pages bench`).
//
// main() only dispatches: cli_args parses the command line (lz4/zstd
// conventions included), cli_files does the compress/decompress work with safe
// outputs and progress, cli_zip the archives, and bench/ runs the benchmark.
// Only the public API (tandem/*.hpp) and bench/ are used.
#include <cstdio>

#include "bench/bench.hpp"
#include "bench/pages_bench.hpp"
#include "cli/cli_args.hpp"
#include "cli/cli_files.hpp"
#include "tandem/tandem.hpp"

namespace {

int print_version() {
  const tandem::BackendInfo info = tandem::backend_info();
  std::printf("tandem %s\n", tandem::version());
  if (!info.cuda_compiled) {
    std::printf("backends: cpu; gpu not compiled in (built without CUDA)\n");
  } else if (info.gpu_count == 0) {
    std::printf("backends: cpu; gpu compiled in, no usable GPU found\n");
  } else {
    std::printf("backends: cpu; gpu compiled in, %d GPU%s (%s)\n", info.gpu_count, info.gpu_count == 1 ? "" : "s",
                info.gpu_name.c_str());
  }
  std::printf("threads: %d\n", tandem::hardware_threads());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const tandem::cli::CommandLine command = tandem::cli::parse_command_line(argc, argv);
  switch (command.action) {
    case tandem::cli::Action::files: return tandem::cli::run_files(command.files);
    case tandem::cli::Action::bench: return tandem::bench::run(command.bench);
    case tandem::cli::Action::pages_bench: return tandem::bench::run_pages(command.pages);
    case tandem::cli::Action::zip: {
      int code = 2;
      tandem::cli::run_zip_commands(command.zip, &code);
      return code;
    }
    case tandem::cli::Action::version: return print_version();
    case tandem::cli::Action::exit: break;
  }
  return command.exit_code;
}
