// Shared by the GPU tests, which drive the device API with device buffers and
// streams of their own: CUDA_CHECK (a failed CUDA call throws, naming the
// call, its line and the error), device memory and a stream that free
// themselves, and copies to and from the device on a stream.
//
// Header-only, and empty in a build without CUDA (the tests compile to skips
// there).
#pragma once

#if TANDEM_HAVE_CUDA

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::test {

inline void cuda_check(cudaError_t e, const char* call, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(call) + " (line " + std::to_string(line) + "): " + cudaGetErrorString(e));
}

}  // namespace tandem::test

#define CUDA_CHECK(call) ::tandem::test::cuda_check((call), #call, __LINE__)

namespace tandem::test {

// Whether this machine has a usable CUDA device.
inline bool have_gpu() { return backend_info().gpu_count > 0; }

}  // namespace tandem::test

// In a test body: skips the test, saying why, where there is no CUDA device.
#define SKIP_WITHOUT_GPU()                                                                      \
  do {                                                                                          \
    if (!::tandem::test::have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped"; \
  } while (0)

namespace tandem::test {

// Device memory that frees itself.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) { CUDA_CHECK(cudaMalloc(&ptr_, bytes ? bytes : 1)); }
  ~DeviceBuffer() { (void)cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

// A CUDA stream that destroys itself.
class StreamHandle {
 public:
  StreamHandle() { CUDA_CHECK(cudaStreamCreate(&stream_)); }
  ~StreamHandle() { (void)cudaStreamDestroy(stream_); }
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Queues a copy of `bytes` host bytes at h to the device at d on s.
inline void upload(void* d, const void* h, std::size_t bytes, cudaStream_t s) {
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s));
}

// Queues a copy of v to the start of d on s.
template <class T>
void upload(const DeviceBuffer& d, const std::vector<T>& v, cudaStream_t s) {
  upload(d.get(), v.data(), v.size() * sizeof(T), s);
}

// The `count` values of type T at d, once s has done all it was given.
template <class T>
std::vector<T> download(const void* d, std::size_t count, cudaStream_t s) {
  std::vector<T> v(count);
  if (count) CUDA_CHECK(cudaMemcpyAsync(v.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return v;
}

// The first `count` values of type T in d, once s has done all it was given.
template <class T>
std::vector<T> download(const DeviceBuffer& d, std::size_t count, cudaStream_t s) {
  return download<T>(static_cast<const void*>(d.get()), count, s);
}

}  // namespace tandem::test

#endif  // TANDEM_HAVE_CUDA
