// `tandem compress` and `tandem decompress`: the files, one at a time.
//
// For each input: pick the destination (FILE.lz4, .gz, .zz or .deflate by
// --codec; FILE without its suffix; -o; or stdout), refuse an existing one
// without -f, stream the input through the LZ4 frame or deflate stream API
// (decompression recognises gzip, zlib and LZ4 by their first bytes) into an
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
