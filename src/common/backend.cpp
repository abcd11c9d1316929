// Codec and backend names, and the choice of backend for a request.
#include <mutex>

#include "gpu/gpu_device.hpp"
#include "tandem/tandem.hpp"

namespace tandem {

const char* codec_name(Codec codec) {
  switch (codec) {
    case Codec::lz4: return "lz4";
  }
  return "unknown";
}

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::cpu: return "cpu";
    case Backend::gpu: return "gpu";
    case Backend::automatic: return "auto";
  }
  return "unknown";
}

bool parse_backend(std::string_view text, Backend* backend) {
  if (text == "cpu") *backend = Backend::cpu;
  else if (text == "gpu") *backend = Backend::gpu;
  else if (text == "auto") *backend = Backend::automatic;
  else return false;
  return true;
}

BackendInfo backend_info() {
  static std::once_flag once;
  static BackendInfo info;
  std::call_once(once, [] {
    info.cuda_compiled = gpu::compiled();
    info.gpu_count = gpu::device_count(&info.gpu_name);
  });
  return info;
}

Status resolve_backend(Codec codec, Backend requested, Backend* resolved) {
  if (codec != Codec::lz4) return {StatusCode::invalid_argument, "unknown codec"};
  switch (requested) {
    case Backend::cpu:
    case Backend::automatic:
      // Every codec has a CPU path; the GPU joins `auto` once a codec has kernels.
      *resolved = Backend::cpu;
      return {};
    case Backend::gpu: {
      const BackendInfo info = backend_info();
      if (!info.cuda_compiled) return {StatusCode::no_device, "this build of tandem has no CUDA backend"};
      if (info.gpu_count == 0) return {StatusCode::no_device, "no CUDA device found"};
      return {StatusCode::unsupported, "the GPU backend has no LZ4 kernels yet; use --backend cpu or auto"};
    }
  }
  return {StatusCode::invalid_argument, "unknown backend"};
}

}  // namespace tandem
