// `tandem bench --codec scan`: the archive scanner (tandem/scan.hpp,
// tandem/scan_gpu.hpp) on a corpus of archives (scripts/package-corpus makes
// one of real npm tarballs, JARs and wheels).
//
// Every archive is read into host memory first. Then, the median of several
// runs each:
//   - scan_many on 1 thread, on 16 threads where the machine has at least 16,
//     and on all threads (--threads N sets another number);
//   - scan_to_device with the whole corpus as one batch, where a CUDA device
//     is present: the call's time (archives in host memory, every file's bytes
//     left in device memory: the host->device copy of the archives and the
//     structure copied back to be parsed are inside it), and the call plus
//     copy_to_host (the bytes back in host memory); then the call again with
//     the split off (DeviceScanOptions::cpu_block_bytes UINT64_MAX: no input
//     given to the CPU pool for its size), for comparison.
// Throughput is the files' bytes (every ok entry's, what the scan puts out)
// per second, and archives per second. The GPU's entries (path, layer, size,
// codec, status) and bytes are compared with the CPU's; "bytes equal: no"
// fails the run. Without a device (or a CUDA build) the GPU rows say
// "no device", and the scan through the kernels' CPU emulation is still
// compared once. Prints a table; --json FILE writes the same figures.
#pragma once

#include "bench/bench.hpp"

namespace tandem::bench {

int run_scan_bench(const BenchConfig& config);

}  // namespace tandem::bench
