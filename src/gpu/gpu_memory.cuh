// What the CUDA code shares: CUDA failures and failed launches as statuses,
// device and pinned buffers that grow and are reused, the engines' slot
// streams and creation, and how many thread blocks of a kernel the device
// holds at once.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "tandem/tandem.hpp"

namespace tandem::gpu {

// Carves a caller's temporary storage into pieces, in order, each starting
// at a multiple of `align` bytes: take(bytes) gives a piece's offset, size()
// the storage all of them need.
class TempCarver {
 public:
  explicit TempCarver(std::size_t align = 256) : align_(align) {}
  std::size_t take(std::size_t bytes) {
    const std::size_t here = at_;
    at_ += (bytes + align_ - 1) / align_ * align_;
    return here;
  }
  std::size_t size() const { return at_; }

 private:
  std::size_t align_;
  std::size_t at_ = 0;
};

// Status reasons are static strings. A CUDA failure's reason names the call
// and the error, so each distinct one is made once and kept for the life of
// the process (there are finitely many).
inline const char* intern(std::string text) {
  static std::mutex m;
  static auto* texts = new std::set<std::string>();  // never destroyed: reasons may be read at exit
  std::lock_guard<std::mutex> lock(m);
  return texts->insert(std::move(text)).first->c_str();
}

inline Status cuda_failure(cudaError_t e, const char* what) {
  (void)cudaGetLastError();  // clear an error that is not sticky, so that later calls may work
  return {StatusCode::device_error, intern(std::string(what) + ": " + cudaGetErrorString(e))};
}

#define TANDEM_CUDA_CHECK(call, what)                                            \
  do {                                                                           \
    const cudaError_t tandem_e_ = (call);                                        \
    if (tandem_e_ != cudaSuccess) return ::tandem::gpu::cuda_failure(tandem_e_, what); \
  } while (0)

// The status of the launches just made: device_error with the CUDA error's
// own text (a static string) when one failed, its error cleared.
inline Status launch_status() {
  const cudaError_t e = cudaPeekAtLastError();
  if (e == cudaSuccess) return {};
  (void)cudaGetLastError();
  return {StatusCode::device_error, cudaGetErrorString(e)};
}

// Makes `waiter` wait for the work enqueued on `stream` so far: an event
// recorded there, destroyed at once (the wait stays enqueued). `what` names
// the caller in a failure's reason.
inline Status stream_waits_for(cudaStream_t waiter, cudaStream_t stream, const char* what) {
  cudaEvent_t e = nullptr;
  TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), what);
  cudaError_t r = cudaEventRecord(e, stream);
  if (r == cudaSuccess) r = cudaStreamWaitEvent(waiter, e, 0);
  (void)cudaEventDestroy(e);
  TANDEM_CUDA_CHECK(r, what);
  return {};
}

// Allows Kernel Shared bytes of dynamic shared memory (a launch may ask for
// more than 48 KiB only so), once per process: that call's error.
template <auto Kernel, std::size_t Shared>
cudaError_t allow_dynamic_shared() {
  static const cudaError_t attribute =
      cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Shared));
  return attribute;
}

// Device (kPinned false) or pinned host memory that grows by half again when
// it must (in whole MiB) and is otherwise reused. Never null once reserved,
// even for an empty request.
template <bool kPinned>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  std::uint8_t* data() const { return data_; }

  Status reserve(std::size_t n) {
    n = std::max<std::size_t>(n, 16);
    if (n <= capacity_) return {};
    constexpr std::size_t kMiB = std::size_t{1} << 20;
    const std::size_t want = (std::max(n, capacity_ + capacity_ / 2) + kMiB - 1) / kMiB * kMiB;
    release();
    void* p = nullptr;
    const cudaError_t e = kPinned ? cudaMallocHost(&p, want) : cudaMalloc(&p, want);
    if (e != cudaSuccess) return cuda_failure(e, kPinned ? "cudaMallocHost (staging)" : "cudaMalloc");
    data_ = static_cast<std::uint8_t*>(p);
    capacity_ = want;
    return {};
  }

 private:
  void release() {
    if (!data_) return;
    if constexpr (kPinned) {
      (void)cudaFreeHost(data_);
    } else {
      (void)cudaFree(data_);
    }
    data_ = nullptr;
    capacity_ = 0;
  }

  std::uint8_t* data_ = nullptr;
  std::size_t capacity_ = 0;
};
using DeviceBuffer = Buffer<false>;
using PinnedBuffer = Buffer<true>;

// The slots of an engine (each with a `stream` and a `busy` flag): their
// streams made, waited for and destroyed together. Non-blocking streams:
// other code's work on the legacy default stream must not serialise with ours.
template <class Slot, std::size_t N>
Status create_streams(Slot (&slots)[N]) {
  TANDEM_CUDA_CHECK(cudaSetDevice(0), "cudaSetDevice");
  for (Slot& s : slots) {
    TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  return {};
}

// Waits for whatever a failed or interrupted call left on the streams.
template <class Slot, std::size_t N>
void drain_streams(Slot (&slots)[N]) {
  for (Slot& s : slots) {
    if (s.busy) (void)cudaStreamSynchronize(s.stream);
    s.busy = false;
  }
  (void)cudaGetLastError();
}

template <class Slot, std::size_t N>
void destroy_streams(Slot (&slots)[N]) {
  drain_streams(slots);
  for (Slot& s : slots) {
    if (s.stream) (void)cudaStreamDestroy(s.stream);
  }
}

// An engine on device 0 (Impl, with init()); no_device when there is none.
template <class Base, class Impl>
Status create_engine(std::unique_ptr<Base>* engine) {
  if (!engine) return {StatusCode::invalid_argument, "null engine"};
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return {StatusCode::no_device, "no CUDA device found"};
  }
  auto e = std::make_unique<Impl>();
  if (Status s = e->init(); !s) return s;
  *engine = std::move(e);
  return {};
}

// The process-wide engine that create makes on first use, never destroyed
// (the CUDA runtime may be gone at exit); the first attempt's status for ever.
template <class Base>
Status shared_engine(Base** engine, Status (*create)(std::unique_ptr<Base>*)) {
  if (!engine) return {StatusCode::invalid_argument, "null engine"};
  static std::once_flag once;
  static Base* instance = nullptr;
  static Status status;
  std::call_once(once, [create] {
    std::unique_ptr<Base> e;
    status = create(&e);
    instance = e.release();
  });
  if (!status) return status;
  *engine = instance;
  return {};
}

// Thread blocks of Kernel (Threads threads, Shared bytes of dynamic shared
// memory each) the current device holds at once: thread blocks a
// multiprocessor times multiprocessors, asked once per device; 0 when the
// device cannot tell.
template <auto Kernel, int Threads, std::size_t Shared>
std::size_t resident_blocks() {
  constexpr int kDevices = 64;
  static std::mutex mutex;
  static std::size_t fits[kDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) {
    (void)cudaGetLastError();
    return 0;
  }
  const std::lock_guard<std::mutex> lock(mutex);
  if (fits[device] == 0) {
    int sms = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, Threads, Shared) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    fits[device] = static_cast<std::size_t>(sms) * static_cast<std::size_t>(per_sm);
  }
  return fits[device];
}

}  // namespace tandem::gpu
