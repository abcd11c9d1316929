// What the archive scanner's two paths share (scan.cpp on the CPU,
// scan_device.cpp for scan_to_device): how a layer is recognised, the names
// compression layers give their content, the output and ratio budget, and
// the CPU decoders with their limits. Keeping them in one place keeps the
// two paths' paths, statuses and limits the same.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/scan_gpu_body.hpp"
#include "tandem/scan.hpp"

namespace tandem::scan_detail {

using Layer = gpu::ScanLayer;

// What `n` bytes at p are, from at most their first 512 bytes.
inline Layer layer_of(const std::uint8_t* p, std::size_t n) { return gpu::scan_layer_of(p, n); }

// A compression layer's content name: "x.tgz" -> "x.tar", "x.gz" -> "x",
// "x.tzst" -> "x.tar", "x.zst" -> "x", "x.lz4" -> "x".
std::string without_suffix(std::string_view name, Layer layer);

inline const char* layer_name(Layer kind) {
  return kind == Layer::gzip ? "gzip" : kind == Layer::lz4 ? "lz4" : "zstd";
}

inline std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "+" + b; }
// The path of a container's member: "container/member", in one allocation.
inline std::string member_path(const std::string& container, const std::string& member) {
  std::string path;
  path.reserve(container.size() + 1 + member.size());
  path.append(container).push_back('/');
  path.append(member);
  return path;
}

inline constexpr Status kDepthStatus{StatusCode::unsupported, "nested deeper than the scan's depth limit"};
inline constexpr Status kEntriesStatus{StatusCode::bad_data, "more entries than the scan's limit"};

// The output limit and the ratio limit of one archive's scan.
class Budget {
 public:
  explicit Budget(const ScanLimits& limits) : limits_(limits) {}

  // What the output limit leaves to all decompressions still to come.
  std::uint64_t left() const { return limits_.max_output - std::min(limits_.max_output, produced); }

  // What one more decompression of `input` bytes may produce.
  std::uint64_t budget(std::size_t input) const {
    const std::uint64_t ratio = input > limits_.max_output / std::max<std::uint64_t>(limits_.max_ratio, 1)
                                    ? limits_.max_output
                                    : std::max<std::uint64_t>(input, 1) * limits_.max_ratio;
    return std::min(left(), ratio);
  }

  // output_limit named after the limit that `allowed` came from.
  Status over_limits(Status s, std::uint64_t allowed) const {
    if (s.code != StatusCode::output_limit) return s;
    return allowed < left()
               ? Status{StatusCode::output_limit, "decompresses past the scan's ratio limit (a bomb?)"}
               : Status{StatusCode::output_limit, "decompresses past the scan's output limit"};
  }

  std::uint64_t produced = 0;

 private:
  const ScanLimits& limits_;
};

// A whole gzip, LZ4 or zstd input (every member or frame) decompressed on
// the CPU into *out, up to `allowed` bytes (output_limit past it).
Status decompress_cpu(Layer kind, std::span<const std::uint8_t> in, std::uint64_t allowed,
                      std::vector<std::uint8_t>* out);
// Whether the input decodes to exactly `size` bytes in out[0, size) in one
// call (a gzip member whose trailer says `size`); false for anything else,
// which decompress_cpu decodes (and gives its status).
bool decompress_cpu_into(Layer kind, std::span<const std::uint8_t> in, std::uint8_t* out, std::uint64_t size);

}  // namespace tandem::scan_detail
