// Fuzz target: the scanner's GPU path (tandem/scan_gpu.hpp) through its CPU
// emulation, against scan(): the descriptor building (gzip members, LZ4
// frame blocks, zstd frames, ZIP entries, tar members), the dispatches, the
// checks and the CPU fallbacks must give exactly scan()'s entries (paths,
// order, layers, codecs, statuses with their reasons, sizes) and bytes.
//
// Input: a first byte; bit 0 picks the mode, bits 1-2 the limits, bits 3-4
// the split between the device and the CPU pool (cpu_block_bytes: none on
// the CPU, all on it, 1 KiB, the default), bits 5-6 what the walks of
// nested layers decode themselves (walk_cpu_bytes: nothing, 1 KiB, the
// default, everything).
//   raw:    the rest of the input is one archive.
//   built:  the next bytes pick a content (the input's tail, or runs of one
//           byte) and up to four layers around it (gzip, LZ4 frames of every
//           option shape, zstd frames at a level with or without a
//           checksum, a ZIP of it stored or deflated beside a small member),
//           then byte edits; the batch holds it twice, edited differently.
// Properties: no crash; scan_to_device's status, entries and bytes equal
// scan()'s for every archive of the batch.
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "tandem/deflate.hpp"
#include "tandem/scan.hpp"
#include "tandem/scan_gpu.hpp"
#include "tandem/zip.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes wrap(fuzz::Reader& in, const Bytes& content) {
  const std::uint8_t pick = in.byte();
  Bytes out;
  switch (pick % 4) {
    case 0: {
      tandem::DeflateOptions o;
      o.container = tandem::DeflateContainer::gzip;
      o.level = 1 + (pick >> 2) % 9;
      if (!tandem::deflate_compress({content.data(), content.size()}, &out, o)) return content;
      return out;
    }
    case 1: {
      tandem::Lz4FrameOptions o;
      o.block_size = (pick & 8) ? 64u << 10 : 256u << 10;
      o.block_checksum = (pick & 16) != 0;
      o.content_checksum = (pick & 32) != 0;
      o.content_size = (pick & 64) != 0;
      o.linked_blocks = (pick & 128) != 0;
      o.threads = 1;
      o.backend = tandem::Backend::cpu;
      if (!tandem::lz4_frame_compress({content.data(), content.size()}, &out, o)) return content;
      return out;
    }
    case 2: {
      out.resize(ZSTD_compressBound(content.size()));
      ZSTD_CCtx* c = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1 + (pick >> 3) % 19);
      ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, (pick >> 2) & 1);
      const std::size_t n = ZSTD_compress2(c, out.data(), out.size(), content.data(), content.size());
      ZSTD_freeCCtx(c);
      if (ZSTD_isError(n)) return content;
      out.resize(n);
      return out;
    }
    default: {
      tandem::zip::Writer::Options o;
      o.level = (pick & 4) ? 0 : 6;
      tandem::zip::Writer w(o);
      const Bytes small = {'o', 'k'};
      if (!w.add_file((pick & 8) ? "x.tgz" : "d/x", content) || !w.add_file("s", small) || !w.finish()) {
        return content;
      }
      return w.take();
    }
  }
}

void compare(const std::vector<Bytes>& archives, const tandem::ScanLimits& limits, std::uint64_t cpu_block_bytes,
             std::uint64_t walk_cpu_bytes) {
  std::vector<tandem::ScanInput> in;
  for (std::size_t i = 0; i < archives.size(); ++i) {
    in.push_back({{archives[i].data(), archives[i].size()}, "a" + std::to_string(i) + ".tgz"});
  }
  tandem::DeviceScanOptions o;
  o.gpu = false;
  o.threads = 1;
  o.cpu_block_bytes = cpu_block_bytes;
  o.walk_cpu_bytes = walk_cpu_bytes;
  tandem::DeviceScanResult got;
  const tandem::Status gs = tandem::scan_to_device(in, limits, o, &got);
  Bytes bytes;
  FUZZ_ASSERT(got.copy_to_host(&bytes).ok());
  FUZZ_ASSERT(bytes.size() == got.size());
  tandem::Status want_call;
  std::size_t k = 0;
  for (std::size_t i = 0; i < archives.size(); ++i) {
    tandem::ScanResult want;
    const tandem::Status s = tandem::scan(in[i].archive, in[i].name, limits, &want);
    if (!s && want_call) want_call = s;
    for (const tandem::ScanEntry& w : want.entries) {
      FUZZ_ASSERT(k < got.entries.size());
      const tandem::ScanEntry& g = got.entries[k++];
      if (g.path != w.path || g.codec != w.codec || g.status.to_string() != w.status.to_string() || g.size != w.size) {
        std::fprintf(stderr, "scan():         %s %s %s %llu\nscan_to_device: %s %s %s %llu\n", w.path.c_str(),
                     w.codec.c_str(), w.status.to_string().c_str(), static_cast<unsigned long long>(w.size),
                     g.path.c_str(), g.codec.c_str(), g.status.to_string().c_str(),
                     static_cast<unsigned long long>(g.size));
      }
      FUZZ_ASSERT(g.archive == i && g.path == w.path && g.layer == w.layer && g.codec == w.codec);
      FUZZ_ASSERT(g.status.code == w.status.code && g.status.to_string() == w.status.to_string());
      FUZZ_ASSERT(g.size == w.size && g.offset + g.size <= bytes.size());
      FUZZ_ASSERT(w.size == 0 || std::memcmp(bytes.data() + g.offset, want.bytes.data() + w.offset, w.size) == 0);
    }
  }
  FUZZ_ASSERT(k == got.entries.size());
  FUZZ_ASSERT(gs.code == want_call.code);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Reader in{data, size};
  const std::uint8_t mode = in.byte();
  tandem::ScanLimits limits;
  limits.max_output = (mode & 2) ? 1u << 20 : 64u << 10;
  limits.max_ratio = (mode & 4) ? 1000 : 50;
  limits.max_depth = 4;
  limits.max_entries = 64;
  const std::uint64_t splits[4] = {UINT64_MAX, 0, 1024, tandem::DeviceScanOptions::kDefaultCpuBlockBytes};
  const std::uint64_t split = splits[(mode >> 3) & 3];
  const std::uint64_t walk_cpus[4] = {0, 1024, tandem::DeviceScanOptions::kDefaultWalkCpuBytes, UINT64_MAX};
  const std::uint64_t walk_cpu = walk_cpus[(mode >> 5) & 3];
  if ((mode & 1) == 0) {
    compare({Bytes(data + in.at, data + size)}, limits, split, walk_cpu);
    return 0;
  }
  const std::uint8_t kind = in.byte();
  Bytes content;
  if (kind & 1) {
    content.assign(std::size_t{in.byte()} << 8, in.byte());
  } else {
    content.assign(data + std::min(size, in.at + 8), data + size);
  }
  Bytes archive = content;
  for (int layers = 1 + (kind >> 1) % 4; layers > 0; --layers) archive = wrap(in, archive);
  Bytes second = archive;
  if (!archive.empty()) {
    in.edit(&archive);
    in.edit(&second);
  }
  compare({archive, second}, limits, split, walk_cpu);
  return 0;
}
