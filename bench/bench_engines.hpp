// The engines that `tandem bench` measures, each behind one small interface.
//
// An engine is made for one input and one thread count. Everything it needs
// (output buffers, compression states, worker threads) is allocated and touched
// in its constructor, so that compress() and decompress() - the timed calls -
// run only the codec:
//
//   liblz4        the reference: raw LZ4 blocks over fixed chunks, no framing;
//                 N threads take chunks from a shared counter
//   tandem        tandem::lz4_frame_compress / lz4_frame_decompress, framing only
//   tandem+xxh    the same with the content checksum (XXH32) written and checked
//   liblz4-frame  liblz4's own frame API (LZ4F), content checksum on, one thread
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace tandem::bench {

enum class EngineKind { liblz4, tandem, tandem_xxh, liblz4_frame };

inline constexpr EngineKind kAllEngines[] = {EngineKind::liblz4, EngineKind::tandem,
                                             EngineKind::tandem_xxh, EngineKind::liblz4_frame};

const char* engine_name(EngineKind kind);
// Whether the engine has an N-thread figure (liblz4-frame runs on one thread).
bool engine_multithreaded(EngineKind kind);

struct EngineParams {
  int level = 0;                     // as tandem::BatchOptions::level
  std::size_t chunk = 4u << 20;      // block size of frames, chunk size of raw blocks
  int threads = 1;                   // threads of this measurement, >= 1
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Compresses the input given at construction; keeps the result for
  // decompress(). Returns false and sets error() on failure.
  virtual bool compress() = 0;
  // Bytes produced by the last compress().
  virtual std::size_t compressed_size() const = 0;
  // Decompresses the last compress() result into `output`, which has exactly
  // the input's size. Returns false and sets error() on failure (including a
  // size other than the input's).
  virtual bool decompress(std::span<std::uint8_t> output) = 0;
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

// `input` must outlive the engine. Never null; allocation failure throws.
std::unique_ptr<Engine> make_engine(EngineKind kind, std::span<const std::uint8_t> input,
                                    const EngineParams& params);

}  // namespace tandem::bench
