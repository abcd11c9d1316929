// The faults that tests inject into the LZ4 pipelines (inject_fault in
// lz4_gpu_pipeline.hpp): one armed fault for the whole process, shared by the
// CUDA pipeline and the emulated one.
//
// Each pipeline asks fault_fires(kind) once per batch at the spot where that
// kind of failure would happen: out_of_memory where submit() grows its
// buffers, copy before its host-to-device copy, kernel in complete(), and
// no_device once per begin() (there the count is of begin() calls). The armed
// fault counts the calls of its own kind: the one numbered after_batches
// (0 = the first after inject_fault) fires and disarms it.
#pragma once

#include "gpu/lz4_gpu_pipeline.hpp"
#include "tandem/tandem.hpp"

namespace tandem::gpu {

// True when the armed fault is `kind` and this is the call it fires in.
// Thread-safe.
bool fault_fires(Fault kind);

// The status a fired fault makes a pipeline return: no_device for
// Fault::no_device, device_error (reason "injected: ...") for the others.
Status injected_fault(Fault kind);

}  // namespace tandem::gpu
