// Fuzz target: the canonical Huffman table builder and decoder
// (gpu/huffman_decode.hpp) against a slow reference written here from RFC
// 1951 3.2.2: codes assigned by length then symbol, decoded one bit at a time.
//
// Input: a first byte picks the code kind (precode, literal/length,
// distance) and how lengths are made: grown (a complete set split at places
// the input picks, spread over the symbols, then now and then a length or two changed)
// or raw (a byte per length, mostly 0-15, sometimes larger); the next byte
// is the symbol count; what is left are bit patterns to decode.
//
// Properties: no crash; the builder's verdict is the reference's (length too
// long, over-subscribed, incomplete unless deflate allows that set, empty);
// a table built by 32 lanes in turn (as a warp builds it) equals the one
// built whole; for an accepted set every symbol's code decodes to the symbol and its
// length whatever bits follow, and every bit pattern decodes as the
// reference decodes it (a symbol and length, or none).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "gpu/huffman_decode.hpp"

namespace {

namespace inf = tandem::gpu::inflate;

struct Reader {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
  bool more() const { return at < size; }
};

struct Reference {
  std::vector<int> lengths;
  std::vector<std::uint32_t> codes;

  inf::HuffmanStatus verdict(inf::CodeKind kind) const {
    long long kraft = 0;  // in units of 2^-15
    int used = 0, ones = 0;
    for (int l : lengths) {
      if (l > 15) return inf::HuffmanStatus::length_too_long;
    }
    for (int l : lengths) {
      if (l == 0) continue;
      kraft += 1LL << (15 - l);
      ++used;
      ones += l == 1;
    }
    if (kraft > (1LL << 15)) return inf::HuffmanStatus::oversubscribed;
    if (used == 0) return kind == inf::CodeKind::distance ? inf::HuffmanStatus::ok : inf::HuffmanStatus::empty;
    if (kraft < (1LL << 15)) {
      if (kind != inf::CodeKind::precode && used == 1 && ones == 1) return inf::HuffmanStatus::ok;
      return inf::HuffmanStatus::incomplete;
    }
    return inf::HuffmanStatus::ok;
  }

  void assign_codes() {
    codes.assign(lengths.size(), 0);
    std::uint32_t code = 0;
    for (int l = 1; l <= 15; ++l) {
      for (std::size_t s = 0; s < lengths.size(); ++s) {
        if (lengths[s] == l) codes[s] = code++;
      }
      code <<= 1;
    }
  }

  // One bit at a time: the first (symbol, length) whose code equals the
  // first `length` bits read, most significant first.
  inf::Decoded decode(std::uint32_t bits) const {
    std::uint32_t code = 0;
    for (int l = 1; l <= 15; ++l) {
      code = (code << 1) | ((bits >> (l - 1)) & 1u);
      for (std::size_t s = 0; s < lengths.size(); ++s)
        if (lengths[s] == l && codes[s] == code) return {static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(l)};
    }
    return {0, 0};
  }
};

template <class Table>
void check(Reader& rd, int max_symbols, inf::CodeKind kind, bool grown) {
  const int n = rd.byte() % (max_symbols + 1);
  Reference ref;
  if (grown) {
    // A complete set grown by splitting codes the input picks, then a few
    // lengths changed, and zeros (unused symbols) between.
    std::vector<int> leaves = {1, 1};
    while (static_cast<int>(leaves.size()) < n / 2 + 2 && rd.more()) {
      const std::size_t i = rd.byte() % leaves.size();
      if (leaves[i] >= 15) continue;
      ++leaves[i];
      leaves.push_back(leaves[i]);
    }
    if (static_cast<int>(leaves.size()) > n) leaves.resize(static_cast<std::size_t>(n));
    std::size_t next = 0;
    for (int i = 0; i < n; ++i) {
      const bool must = static_cast<std::size_t>(n - i) <= leaves.size() - next;
      ref.lengths.push_back(next < leaves.size() && (must || (rd.byte() & 1)) ? leaves[next++] : 0);
    }
    const int changes = rd.byte() % 4 == 0 ? 1 + rd.byte() % 2 : 0;
    for (int c = 0; c < changes && n > 0; ++c) ref.lengths[rd.byte() % n] = rd.byte() % 16;
  } else {
    for (int i = 0; i < n; ++i) {
      const std::uint8_t b = rd.byte();
      ref.lengths.push_back(b >= 0xf8 ? 16 + (b & 7) : b % 16 == 0 ? 0 : (b % 3 == 0 ? 0 : b % 16));
    }
  }
  std::vector<std::uint8_t> l8(ref.lengths.begin(), ref.lengths.end());
  auto table = std::make_unique<Table>();
  const inf::HuffmanStatus got = table->build(l8.data(), n, kind);
  const inf::HuffmanStatus want = ref.verdict(kind);
  FUZZ_ASSERT(got == want);
  if (got != inf::HuffmanStatus::ok) return;
  // Built by 32 lanes in turn, as a warp splits it: the same table.
  auto split = std::make_unique<Table>();
  std::memset(split.get(), 0x5a, sizeof(Table));
  for (std::uint32_t lane = 0; lane < 32; ++lane) FUZZ_ASSERT(split->build(l8.data(), n, kind, lane, 32) == got);
  FUZZ_ASSERT(std::memcmp(split->primary, table->primary, sizeof table->primary) == 0);
  for (int s = 0; s < n; ++s) FUZZ_ASSERT(split->decode(static_cast<std::uint32_t>(s) * 2654435761u & 0x7fffu).length ==
                                          table->decode(static_cast<std::uint32_t>(s) * 2654435761u & 0x7fffu).length);
  ref.assign_codes();
  std::uint32_t salt = 0x9e3779b9u;
  for (int s = 0; s < n; ++s) {
    if (ref.lengths[s] == 0) continue;
    salt = salt * 1664525u + 1013904223u;
    const std::uint32_t bits =
        (inf::reverse_bits(ref.codes[s], ref.lengths[s]) | (salt << ref.lengths[s])) & 0x7fffu;
    const inf::Decoded d = table->decode(bits);
    FUZZ_ASSERT(d.symbol == static_cast<std::uint32_t>(s));
    FUZZ_ASSERT(d.length == static_cast<std::uint32_t>(ref.lengths[s]));
  }
  for (int k = 0; k < 64; ++k) {
    std::uint32_t bits = rd.more() ? (rd.byte() | (static_cast<std::uint32_t>(rd.byte()) << 8)) : (salt >> 7);
    salt = salt * 1664525u + 1013904223u;
    bits &= 0x7fffu;
    const inf::Decoded d = table->decode(bits);
    const inf::Decoded r = ref.decode(bits);
    FUZZ_ASSERT(d.length == r.length);
    if (r.length != 0) FUZZ_ASSERT(d.symbol == r.symbol);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader rd{data, size};
  const std::uint8_t first = rd.byte();
  const bool grown = (first & 0x80) == 0;
  switch (first % 3) {
    case 0: check<inf::PrecodeTable>(rd, 19, inf::CodeKind::precode, grown); break;
    case 1: check<inf::LitLenTable>(rd, 288, inf::CodeKind::litlen, grown); break;
    default: check<inf::DistanceTable>(rd, 32, inf::CodeKind::distance, grown); break;
  }
  return 0;
}
