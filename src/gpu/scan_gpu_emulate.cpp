// The archive scanner's device emulated on the CPU (see scan_gpu.hpp): host
// memory, memcpy for transfers, and the kernels' own bodies for the
// dispatches (inflate_emulated's warp form, the LZ4 decoder's emulation,
// scan_gpu_body.hpp), spread over the thread pool one job at a time.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include "common/thread_pool.hpp"
#include "gpu/inflate_gpu.hpp"
#include "gpu/lz4_gpu_emulate.hpp"
#include "gpu/scan_gpu.hpp"

namespace tandem::gpu {

namespace {

class EmulatedScanDevice final : public ScanDevice {
 public:
  explicit EmulatedScanDevice(unsigned threads)
      : threads_(detail::effective_threads(static_cast<int>(std::min<unsigned>(threads, 1u << 16)))) {}

  bool emulated() const override { return true; }

  Status alloc(std::size_t bytes, void** ptr) override {
    *ptr = std::aligned_alloc(256, (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256);
    return *ptr ? Status{} : Status{StatusCode::out_of_memory, "scan buffer"};
  }
  void free(void* ptr) override { std::free(ptr); }
  Status alloc_result(std::size_t bytes, void** ptr) override { return alloc(bytes, ptr); }
  Status host_alloc(std::size_t bytes, std::uint8_t** ptr) override {
    *ptr = static_cast<std::uint8_t*>(std::malloc(std::max<std::size_t>(bytes, 1)));
    return {};
  }
  void host_free(std::uint8_t* ptr) override { std::free(ptr); }

  Status upload(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return {};
  }
  Status download(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return {};
  }

  Status download_many(std::span<const ScanTransfer> transfers) override {
    for (const ScanTransfer& t : transfers) {
      if (t.bytes) std::memcpy(t.dst, t.src, t.bytes);
    }
    return {};
  }
  Status upload_many(std::span<const ScanUpload> uploads) override {
    for (const ScanUpload& u : uploads) {
      if (u.bytes) std::memcpy(u.dst, u.src, u.bytes);
    }
    return {};
  }

  Status uploader(std::unique_ptr<ScanDevice>* out) override {
    *out = std::make_unique<EmulatedScanDevice>(*this);
    return {};
  }

  // All at the start (the caller's thread is the device's).
  Status decode_finish() override { return {}; }
  Status decode_start(std::span<ScanDecodeJob> inflates, std::span<ScanDecodeJob> lz4s, std::span<ScanCopyJob> copies,
                      std::span<ScanCrcPiece> pieces, std::span<ScanLayerJob> layers) override {
    detail::parallel_for(inflates.size(), threads_, [&](std::size_t i) {
      ScanDecodeJob& j = inflates[i];
      InflateStatus st = InflateStatus::ok;
      InflateEnd end = InflateEnd::input_end;
      void* const out = j.out;
      inflate_emulated(&j.in, &j.in_size, 1, &out, &j.capacity, &j.out_size, &st, &end, &j.in_used);
      j.ok = st == InflateStatus::ok && end == InflateEnd::final_block;
    });
    detail::parallel_for(lz4s.size(), threads_, [&](std::size_t i) {
      ScanDecodeJob& j = lz4s[i];
      const ItemStatus st = lz4_decode_block_emulated(static_cast<const std::uint8_t*>(j.in), j.in_size,
                                                      static_cast<std::uint8_t*>(j.out), j.capacity, &j.out_size);
      j.ok = st == ItemStatus::ok;
      j.in_used = j.in_size;
    });
    detail::parallel_for(copies.size(), threads_, [&](std::size_t i) {
      ScanCopyJob& j = copies[i];
      j.status = scan_copy_status(j.item);
      if (j.status == ScanCopyStatus::ok) scan_copy_part(j.item, 0, 1);
    });
    static const std::array<std::uint32_t, 256> table = [] {
      std::array<std::uint32_t, 256> t{};
      for (std::uint32_t i = 0; i < 256; ++i) t[i] = scan_crc32_table_entry(i);
      return t;
    }();
    detail::parallel_for(pieces.size(), threads_, [&](std::size_t i) {
      pieces[i].crc = scan_crc32_warp(simt::Warp{}, table.data(), pieces[i].data, pieces[i].size);
    });
    for (ScanLayerJob& j : layers) j.layer = scan_layer_of(j.data, j.size);
    return {};
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<ScanDevice> make_emulated_scan_device(unsigned threads) {
  return std::make_unique<EmulatedScanDevice>(threads);
}

}  // namespace tandem::gpu
