// What `tandem compress|decompress --stats / --json FILE` report: how the
// hybrid scheduler worked each file (bytes and speed of the CPU and GPU
// workers, device transfers and kernels, idle and queue times), and the
// warnings of a GPU that failed.
#pragma once

#include <string>
#include <vector>

#include "sched/scheduler.hpp"
#include "tandem/tandem.hpp"

namespace tandem::cli {

struct FileRun {
  std::string name;
  bool decompress = false;
  StreamStats stats;
  double seconds = 0;
  sched::RunMetrics metrics;
};

// The figures of one file, a few lines on stderr.
void print_run_stats(const FileRun& run);

// Every file's figures as a JSON document, written through a temporary file
// and a rename; false with the reason in *error when it cannot be written.
bool write_runs_json(const std::string& path, const std::vector<FileRun>& runs, std::string* error);

}  // namespace tandem::cli
