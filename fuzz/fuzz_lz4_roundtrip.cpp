// Fuzz target: compression is deterministic and lossless.
//
// Byte 0 and byte 1 choose the frame options (block size, linked blocks,
// checksums, content size, legacy, level); the rest is the data. The data is
// compressed twice (the frames must be identical and within
// lz4_frame_max_compressed_size), decompressed (it must come back), and also
// sent through compress_batch/decompress_batch as one raw block.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.hpp"
#include "tandem/tandem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static const int kLevels[8] = {-5, -1, 0, 1, 3, 6, 9, 12};
  static const std::size_t kBlocks[4] = {64u << 10, 256u << 10, 1u << 20, 4u << 20};
  const std::uint8_t f = data[0], g = data[1];
  const tandem::ConstBuffer in{data + 2, size - 2};

  tandem::Lz4FrameOptions o;
  o.block_size = kBlocks[f & 3];
  o.linked_blocks = f & 4;
  o.block_checksum = f & 8;
  o.content_checksum = f & 16;
  o.content_size = f & 32;
  o.legacy = (f & 0xC0) == 0xC0;
  o.level = kLevels[g & 7];
  o.threads = 1;
  o.backend = tandem::Backend::cpu;

  std::vector<std::uint8_t> one, two, back;
  FUZZ_ASSERT(tandem::lz4_frame_compress(in, &one, o).ok());
  FUZZ_ASSERT(tandem::lz4_frame_compress(in, &two, o).ok());
  FUZZ_ASSERT(one == two);  // deterministic
  FUZZ_ASSERT(one.size() <= tandem::lz4_frame_max_compressed_size(in.size, o));

  tandem::Lz4DecodeOptions d;
  d.threads = 1;
  d.backend = tandem::Backend::cpu;
  FUZZ_ASSERT(tandem::lz4_frame_decompress({one.data(), one.size()}, &back, d).ok());
  FUZZ_ASSERT(back.size() == in.size);
  FUZZ_ASSERT(in.size == 0 || std::memcmp(back.data(), in.data, in.size) == 0);

  // The same data as one raw block.
  const std::size_t bound = tandem::max_compressed_size(tandem::Codec::lz4, in.size);
  std::vector<std::uint8_t> block(bound), plain(in.size ? in.size : 1);
  tandem::MutableBuffer bo{block.data(), block.size()};
  tandem::ItemResult r;
  tandem::BatchOptions b;
  b.backend = tandem::Backend::cpu;
  b.threads = 1;
  b.level = o.level;
  FUZZ_ASSERT(tandem::compress_batch(tandem::Codec::lz4, {&in, 1}, {&bo, 1}, {&r, 1}, b).ok());
  FUZZ_ASSERT(r.size > 0 && r.size <= bound);
  const tandem::ConstBuffer bi{block.data(), r.size};
  tandem::MutableBuffer po{plain.data(), in.size};
  FUZZ_ASSERT(tandem::decompress_batch(tandem::Codec::lz4, {&bi, 1}, {&po, 1}, {&r, 1}, b).ok());
  FUZZ_ASSERT(r.size == in.size);
  FUZZ_ASSERT(in.size == 0 || std::memcmp(plain.data(), in.data, in.size) == 0);
  return 0;
}
