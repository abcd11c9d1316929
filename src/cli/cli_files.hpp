// `tandem compress` and `tandem decompress`: the files, one at a time.
//
// For each input: pick the destination (FILE.lz4, .gz, .zz, .deflate or
// .rans by --codec; FILE without its suffix; -o; or stdout), refuse an
// existing one without -f, stream the input through the LZ4 frame, deflate
// or rANS file stream API (decompression recognises gzip, zlib, LZ4 and rANS
// files by their first bytes) into an
// AtomicOutput (the output appears whole or not at all), copy the input's mode and
// times, and with --rm verify the output before removing the input. A failed
// file is reported as "tandem: <file>: <message>" and the next one is still
// processed.
#pragma once

#include "cli/cli_args.hpp"

namespace tandem::cli {

// Processes every input of `options`. Returns the exit code: 0 when all
// succeeded, 1 when anything failed.
int run_files(const FileOptions& options);

}  // namespace tandem::cli
