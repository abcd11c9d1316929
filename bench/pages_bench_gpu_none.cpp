// The device-resident pages measurement in a build without CUDA: there is none.
#include "bench/pages_bench_gpu.hpp"

namespace tandem::bench {

std::shared_ptr<std::uint8_t> pinned_bytes(std::size_t) { return nullptr; }

std::unique_ptr<PagesDeviceTrial> make_pages_device_trial(std::span<const std::uint8_t>, std::size_t, std::size_t,
                                                          const std::vector<std::size_t>&, std::string* error) {
  *error = "this build of tandem has no CUDA backend";
  return nullptr;
}

}  // namespace tandem::bench
