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

namespace {

// Whether the GPU can run here; its reason when not.
Status gpu_usable() {
  const BackendInfo info = backend_info();
  if (!info.cuda_compiled) return {StatusCode::no_device, "this build of tandem has no CUDA backend"};
  if (info.gpu_count == 0) return {StatusCode::no_device, "no CUDA device found"};
  return {};
}

}  // namespace

Status resolve_backend(Codec codec, Backend requested, Backend* resolved) {
  if (codec != Codec::lz4) return {StatusCode::invalid_argument, "unknown codec"};
  switch (requested) {
    case Backend::cpu:
      *resolved = Backend::cpu;
      return {};
    case Backend::automatic:
      *resolved = gpu_usable() ? Backend::gpu : Backend::cpu;
      return {};
    case Backend::gpu:
      if (Status s = gpu_usable(); !s) return s;
      *resolved = Backend::gpu;
      return {};
  }
  return {StatusCode::invalid_argument, "unknown backend"};
}

Status resolve_backend(Codec codec, Backend requested, int level, Backend* resolved) {
  if (Status s = resolve_backend(codec, requested, resolved); !s) return s;
  // The GPU encoder is LZ4 fast at acceleration 1: levels 0..2.
  const bool hc = level >= 3;
  if (requested == Backend::gpu && hc) {
    return {StatusCode::unsupported, "the GPU encoder has no HC levels (3 and up); use --backend cpu"};
  }
  if (requested == Backend::automatic && (hc || level < 0)) *resolved = Backend::cpu;
  return {};
}

}  // namespace tandem
