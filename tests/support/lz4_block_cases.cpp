#include "support/lz4_block_cases.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tandem::test {

using gpu::ItemStatus;

namespace {

Bytes bytes(std::initializer_list<int> v) {
  Bytes b;
  for (int x : v) b.push_back(static_cast<std::uint8_t>(x));
  return b;
}

Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes str(const std::string& s) { return Bytes(s.begin(), s.end()); }

}  // namespace

// A token byte holds the literal count in its high nibble and the match length
// minus 4 in its low one; a nibble of 15 continues in extension bytes (each
// added, 255 meaning "more follows"). Literals follow the literal length, then
// a 2-byte little-endian offset, then the match length extension. The last
// sequence stops after its literals (its match nibble is unused).
std::vector<Lz4BlockCase> lz4_block_cases() {
  std::vector<Lz4BlockCase> c;
  const auto ok = [&](std::string name, Bytes block, std::size_t cap, Bytes out) {
    c.push_back({std::move(name), std::move(block), cap, ItemStatus::ok, std::move(out)});
  };
  const auto bad = [&](std::string name, Bytes block, std::size_t cap, ItemStatus want) {
    c.push_back({std::move(name), std::move(block), cap, want, {}});
  };

  // ---- valid blocks ----
  // Token 0x00: no literals, and the block ends: an empty output.
  ok("empty output", bytes({0x00}), 0, {});
  // Token 0x30: 3 literals "abc", end. Capacity exactly the output.
  ok("literals only", bytes({0x30}) + str("abc"), 3, str("abc"));
  // Token 0x1F: 1 literal "a", end; the match nibble (15) of the last sequence is unused.
  ok("last token's match nibble is unused", bytes({0x1F}) + str("a"), 64, str("a"));
  // Token 0xF0 + extension 0x00: 15 + 0 literals.
  ok("literal length 15 with extension 0", bytes({0xF0, 0x00}) + Bytes(15, 'x'), 15, Bytes(15, 'x'));
  // Token 0xF0 + extensions 0xFF 0x01: 15 + 255 + 1 = 271 literals.
  ok("literal length extension 255 then 1", bytes({0xF0, 0xFF, 0x01}) + Bytes(271, 'y'), 271, Bytes(271, 'y'));
  // Token 0x1F: 1 literal "a"; offset 0x0001; match length 4 + 15 + 255 + 1 = 275
  // (extensions 0xFF 0x01), copying from one byte back: a run. Token 0x00: end.
  ok("overlapping match, offset 1, long extension", bytes({0x1F, 'a', 0x01, 0x00, 0xFF, 0x01, 0x00}), 276,
     Bytes(276, 'a'));
  // Token 0x40: literals "abcd"; offset 0x0004 (to the very first byte); match
  // length 4. Token 0x10: 1 literal "e", end.
  ok("offset to the first byte", bytes({0x40, 'a', 'b', 'c', 'd', 0x04, 0x00, 0x10, 'e'}), 64, str("abcdabcde"));
  // Token 0x12: 1 literal "a"; offset 1; match length 4 + 2 = 6. Token 0x00:
  // end. The match ends exactly at the capacity (liblz4 wants the last 5
  // bytes to be literals; this decoder only wants everything to fit).
  ok("match ends exactly at the capacity", bytes({0x12, 'a', 0x01, 0x00, 0x00}), 7, Bytes(7, 'a'));

  // ---- corrupt_token ----
  bad("empty block", {}, 64, ItemStatus::corrupt_token);
  // Token 0xF0: 15 literals and more to come, but no extension byte.
  bad("literal length extension missing", bytes({0xF0}), 64, ItemStatus::corrupt_token);
  // Token 0xF0, extension 0xFF ("more follows"), then the block ends.
  bad("literal length extension runs out", bytes({0xF0, 0xFF}), 64, ItemStatus::corrupt_token);
  // Token 0x14: 1 literal "a", match length 8; offset low byte 0x01, high byte missing.
  bad("offset cut in half", bytes({0x14, 'a', 0x01}), 64, ItemStatus::corrupt_token);
  // Token 0x1F: 1 literal "a"; offset 1; match length 4 + 15 + ..., extension missing.
  bad("match length extension missing", bytes({0x1F, 'a', 0x01, 0x00}), 64, ItemStatus::corrupt_token);
  // As above with extension 0xFF ("more follows"), then the block ends.
  bad("match length extension runs out", bytes({0x1F, 'a', 0x01, 0x00, 0xFF}), 64, ItemStatus::corrupt_token);
  // Token 0x10: 1 literal "a"; offset 1; match length 4; then nothing: the last
  // sequence must be literals only.
  bad("block ends after a match", bytes({0x10, 'a', 0x01, 0x00}), 64, ItemStatus::corrupt_token);

  // ---- offset_out_of_range ----
  // Token 0x10: 1 literal "a"; offset 0x0000; match length 4. Token 0x00: end.
  bad("offset 0", bytes({0x10, 'a', 0x00, 0x00, 0x00}), 64, ItemStatus::offset_out_of_range);
  // Token 0x10: 1 literal "a"; offset 2, one byte before the output's start. Token 0x00.
  bad("offset 2 after 1 byte", bytes({0x10, 'a', 0x02, 0x00, 0x00}), 64, ItemStatus::offset_out_of_range);
  // Token 0x40: literals "abcd"; offset 5 (one past the first byte). Token 0x00.
  bad("offset one past the first byte", bytes({0x40, 'a', 'b', 'c', 'd', 0x05, 0x00, 0x00}), 64,
      ItemStatus::offset_out_of_range);
  // Token 0x10: 1 literal "a"; offset 0xFFFF. Token 0x00.
  bad("offset 65535 after 1 byte", bytes({0x10, 'a', 0xFF, 0xFF, 0x00}), 64, ItemStatus::offset_out_of_range);
  // Token 0x00: no literals; offset 1 with nothing decoded yet. Token 0x00.
  bad("match before any output", bytes({0x00, 0x01, 0x00, 0x00}), 64, ItemStatus::offset_out_of_range);

  // ---- output_overflow ----
  // Token 0x30: literals "abc", into room for 2.
  bad("literals past the capacity", bytes({0x30}) + str("abc"), 2, ItemStatus::output_overflow);
  // Token 0x10: 1 literal "a"; into room for none.
  bad("literal into capacity 0", bytes({0x10}) + str("a"), 0, ItemStatus::output_overflow);
  // Token 0x10: "a", offset 1, match 4 (5 bytes out). Token 0x10: literal "b",
  // the sixth byte, into room for 5.
  bad("last literals past the capacity", bytes({0x10, 'a', 0x01, 0x00, 0x10, 'b'}), 5, ItemStatus::output_overflow);

  // ---- literal_past_input_end ----
  // Token 0x50: 5 literals, only "ab" present.
  bad("literal run past the input", bytes({0x50}) + str("ab"), 64, ItemStatus::literal_past_input_end);
  // Token 0xF0, extension 0x00: 15 literals, 14 present.
  bad("extended literal run past the input", bytes({0xF0, 0x00}) + Bytes(14, 'z'), 64,
      ItemStatus::literal_past_input_end);

  // ---- match_past_output_end ----
  // Token 0x10: "a", offset 1, match 4: 5 bytes out, into room for 4. Token 0x00.
  bad("match past the capacity", bytes({0x10, 'a', 0x01, 0x00, 0x00}), 4, ItemStatus::match_past_output_end);
  // The 276-byte run of "overlapping match, offset 1, long extension" into room for 275.
  bad("long match one past the capacity", bytes({0x1F, 'a', 0x01, 0x00, 0xFF, 0x01, 0x00}), 275,
      ItemStatus::match_past_output_end);
  return c;
}

const std::vector<std::size_t>& lz4_edge_sizes() {
  static const std::vector<std::size_t> sizes = {0,   1,   2,    3,    4,     5,     11,    12,    13,
                                                 15,  16,  17,   31,   32,    33,    63,    64,    65,
                                                 255, 256, 4095, 4096, 65535, 65536, 65537, 262144};
  return sizes;
}

Bytes lz4_test_data(int kind, std::size_t n, std::uint64_t seed) {
  switch (kind) {
    case 0: return random_bytes(n, seed);
    case 1: return constant_bytes(n, static_cast<std::uint8_t>(seed * 0x9E3779B97F4A7C15ull >> 56));
    case 2: return text_like_bytes(n, seed);
    case 3: return mixed_bytes(n, seed);
    default: return record_bytes(n, seed);
  }
}

const char* lz4_data_kind_name(int kind) {
  static const char* const names[] = {"random", "constant", "text", "mixed", "records"};
  return names[std::clamp(kind, 0, kLz4DataKinds - 1)];
}

std::vector<Lz4Sequence> lz4_sequences(const Bytes& b) {
  std::vector<Lz4Sequence> seqs;
  std::size_t pos = 0, decoded = 0;
  const auto length = [&](std::size_t nibble) {
    std::size_t n = nibble;
    if (nibble == 15) {
      std::uint8_t e;
      do {
        if (pos >= b.size()) throw std::runtime_error("lz4_sequences: not a valid block");
        e = b[pos++];
        n += e;
      } while (e == 255);
    }
    return n;
  };
  while (true) {
    if (pos >= b.size()) throw std::runtime_error("lz4_sequences: not a valid block");
    Lz4Sequence s{};
    s.token = pos;
    const std::uint8_t token = b[pos++];
    const std::size_t lit = length(token >> 4);
    s.literals = pos;
    s.literals_end = pos + lit;
    decoded += lit;
    s.decoded_end = decoded;
    if (s.literals_end == b.size()) {
      seqs.push_back(s);
      return seqs;
    }
    if (s.literals_end + 2 > b.size()) throw std::runtime_error("lz4_sequences: not a valid block");
    s.offset = b[s.literals_end] | static_cast<std::uint32_t>(b[s.literals_end + 1]) << 8;
    seqs.push_back(s);
    pos = s.literals_end + 2;
    decoded += length(token & 15) + 4;
  }
}

ItemStatus lz4_truncated_status(const std::vector<Lz4Sequence>& seqs, std::size_t cut, std::size_t* decoded) {
  for (const Lz4Sequence& s : seqs) {
    if (cut == s.literals_end) {
      *decoded = s.decoded_end;
      return ItemStatus::ok;
    }
    if (cut >= s.literals && cut < s.literals_end) return ItemStatus::literal_past_input_end;
  }
  // Empty, or inside a literal length, an offset or a match length, or right
  // after a match.
  return ItemStatus::corrupt_token;
}

bool is_decoder_status(ItemStatus s) {
  switch (s) {
    case ItemStatus::ok:
    case ItemStatus::corrupt_token:
    case ItemStatus::offset_out_of_range:
    case ItemStatus::output_overflow:
    case ItemStatus::literal_past_input_end:
    case ItemStatus::match_past_output_end: return true;
    default: return false;
  }
}

GuardedBuffer::GuardedBuffer(std::size_t capacity, std::uint8_t fill)
    : mem_(capacity + kGuardBytes, kGuardValue), capacity_(capacity) {
  std::fill(mem_.begin(), mem_.begin() + static_cast<std::ptrdiff_t>(capacity), fill);
}

bool GuardedBuffer::guard_intact() const {
  return std::all_of(mem_.begin() + static_cast<std::ptrdiff_t>(capacity_), mem_.end(),
                     [](std::uint8_t b) { return b == kGuardValue; });
}

PageEndCopy::PageEndCopy(const Bytes& b) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t pages = (b.size() + page - 1) / page + 1;
  size_ = pages * page;
  void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
  base_ = static_cast<std::uint8_t*>(m);
  std::uint8_t* guard = base_ + (pages - 1) * page;
  if (mprotect(guard, page, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
  if (!b.empty()) std::memcpy(guard - b.size(), b.data(), b.size());
  data_ = guard - b.size();
}

PageEndCopy::~PageEndCopy() { munmap(base_, size_); }

}  // namespace tandem::test
