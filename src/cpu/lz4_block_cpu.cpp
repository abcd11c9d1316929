// LZ4 blocks on the CPU through liblz4 (see lz4_block_cpu.hpp).
#include "cpu/lz4_block_cpu.hpp"

#define LZ4_HC_STATIC_LINKING_ONLY
#include <lz4.h>
#include <lz4hc.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

namespace tandem::cpu {

namespace {

constexpr int kFirstHcLevel = 3;

// Per-thread compression states, allocated once per thread.
void* fast_state() {
  thread_local std::vector<std::uint8_t> state(static_cast<std::size_t>(LZ4_sizeofState()));
  return state.data();
}
void* hc_state() {
  thread_local std::vector<std::uint8_t> state(static_cast<std::size_t>(LZ4_sizeofStateHC()));
  return state.data();
}

int acceleration(int level) { return level < 0 ? -level : 1; }

int clamp_int(std::size_t n) { return static_cast<int>(std::min<std::size_t>(n, INT_MAX)); }

}  // namespace

std::size_t lz4_block_bound(std::size_t n) {
  if (n > kLz4MaxInput) return 0;
  return static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(n)));
}

std::size_t lz4_compress_block(const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t capacity,
                               int level) {
  if (n > kLz4MaxInput) return 0;
  if (n == 0) {
    // The empty block is a single token with no literals and no match.
    if (capacity == 0) return 0;
    dst[0] = 0;
    return 1;
  }
  const char* s = reinterpret_cast<const char*>(src);
  char* d = reinterpret_cast<char*>(dst);
  int r;
  if (level >= kFirstHcLevel) {
    r = LZ4_compress_HC_extStateHC(hc_state(), s, d, static_cast<int>(n), clamp_int(capacity), level);
  } else {
    r = LZ4_compress_fast_extState(fast_state(), s, d, static_cast<int>(n), clamp_int(capacity),
                                   acceleration(level));
  }
  return r > 0 ? static_cast<std::size_t>(r) : 0;
}

bool lz4_validate_block(const std::uint8_t* src, std::size_t n, std::size_t dict_size, std::uint64_t* decoded_size) {
  std::size_t i = 0;
  std::uint64_t out = 0;
  // Reads a length continued by 255-bytes; false when the input ends first.
  auto extend = [&](std::uint64_t* len) {
    for (;;) {
      if (i >= n) return false;
      const std::uint8_t b = src[i++];
      *len += b;
      if (b != 255) return true;
    }
  };
  for (;;) {
    if (i >= n) return false;
    const std::uint8_t token = src[i++];
    std::uint64_t lit = token >> 4;
    if (lit == 15 && !extend(&lit)) return false;
    if (lit > n - i) return false;
    i += lit;
    out += lit;
    if (i == n) break;  // the last sequence holds literals only
    if (n - i < 2) return false;
    const std::uint32_t offset = src[i] | static_cast<std::uint32_t>(src[i + 1]) << 8;
    i += 2;
    if (offset == 0 || offset > out + dict_size) return false;
    std::uint64_t match = token & 15;
    if (match == 15 && !extend(&match)) return false;
    out += match + 4;
  }
  *decoded_size = out;
  return true;
}

Status lz4_decompress_block(const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t capacity,
                            std::size_t* size, const std::uint8_t* dict, std::size_t dict_size) {
  if (n == 0 || n > static_cast<std::size_t>(INT_MAX)) return {StatusCode::bad_data, "invalid LZ4 block size"};
  const char* s = reinterpret_cast<const char*>(src);
  char* d = reinterpret_cast<char*>(dst);
  const int cap = clamp_int(capacity);
  const int r = dict_size ? LZ4_decompress_safe_usingDict(s, d, static_cast<int>(n), cap,
                                                          reinterpret_cast<const char*>(dict),
                                                          clamp_int(dict_size))
                          : LZ4_decompress_safe(s, d, static_cast<int>(n), cap);
  if (r >= 0) {
    *size = static_cast<std::size_t>(r);
    return {};
  }
  std::uint64_t decoded = 0;
  if (lz4_validate_block(src, n, dict_size, &decoded) && decoded > capacity) {
    return {StatusCode::output_too_small, "LZ4 block decodes to more than the output holds"};
  }
  return {StatusCode::bad_data, "corrupt LZ4 block"};
}

// ------------------------------------------------------------ linked ----

struct Lz4LinkedCompressor::State {
  int level = 0;
  LZ4_stream_t* fast = nullptr;
  LZ4_streamHC_t* hc = nullptr;
  std::vector<char> dict = std::vector<char>(kLz4Window);
};

Lz4LinkedCompressor::Lz4LinkedCompressor(int level) : state_(std::make_unique<State>()) {
  state_->level = level;
  if (level >= kFirstHcLevel) {
    state_->hc = LZ4_createStreamHC();
    if (state_->hc) LZ4_resetStreamHC_fast(state_->hc, level);
  } else {
    state_->fast = LZ4_createStream();
  }
}

Lz4LinkedCompressor::~Lz4LinkedCompressor() {
  if (state_->fast) LZ4_freeStream(state_->fast);
  if (state_->hc) LZ4_freeStreamHC(state_->hc);
}

std::size_t Lz4LinkedCompressor::compress(const std::uint8_t* src, std::size_t n, std::uint8_t* dst,
                                          std::size_t capacity) {
  if (n == 0 || n > kLz4MaxInput || (!state_->fast && !state_->hc)) return 0;
  const char* s = reinterpret_cast<const char*>(src);
  char* d = reinterpret_cast<char*>(dst);
  int r;
  if (state_->hc) {
    r = LZ4_compress_HC_continue(state_->hc, s, d, static_cast<int>(n), clamp_int(capacity));
    LZ4_saveDictHC(state_->hc, state_->dict.data(), static_cast<int>(kLz4Window));
  } else {
    r = LZ4_compress_fast_continue(state_->fast, s, d, static_cast<int>(n), clamp_int(capacity),
                                   acceleration(state_->level));
    LZ4_saveDict(state_->fast, state_->dict.data(), static_cast<int>(kLz4Window));
  }
  return r > 0 ? static_cast<std::size_t>(r) : 0;
}

Lz4LinkedDecompressor::Lz4LinkedDecompressor() : history_(new std::uint8_t[kLz4Window]) {}

Status Lz4LinkedDecompressor::decompress(const std::uint8_t* src, std::size_t n, std::uint8_t* dst,
                                         std::size_t capacity, std::size_t* size) {
  std::size_t got = 0;
  Status s = lz4_decompress_block(src, n, dst, capacity, &got, history_.get(), history_size_);
  if (!s) return s;
  remember(dst, got);
  *size = got;
  return {};
}

void Lz4LinkedDecompressor::remember(const std::uint8_t* data, std::size_t n) {
  if (n >= kLz4Window) {
    std::memcpy(history_.get(), data + n - kLz4Window, kLz4Window);
    history_size_ = kLz4Window;
    return;
  }
  const std::size_t keep = std::min(history_size_, kLz4Window - n);
  std::memmove(history_.get(), history_.get() + history_size_ - keep, keep);
  std::memcpy(history_.get() + keep, data, n);
  history_size_ = keep + n;
}

}  // namespace tandem::cpu
