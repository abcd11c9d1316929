// The test vectors of docs/formats/pages.md, byte for byte: each record is
// read from its 16 bytes as that page lays them out (little-endian, whatever
// this machine is), decoded with decompress_page and with the GPU's page
// steps (their CPU emulation), and the page compared with the one the vector
// describes; the LZ4 block built by hand is also decoded by liblz4. The
// invalid records listed there are refused by both, and leave the page all
// zeros; the two blocks on the edges of the LZ4 rules get one verdict from
// both.
#include <lz4.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/pages_gpu_emulate.hpp"
#include "support/test_support.hpp"
#include "tandem/pages.hpp"

namespace tandem {
namespace {

using test::Bytes;

constexpr std::size_t kPage = 4096;

// "03 00 1A ..." to bytes.
Bytes hex(const std::string& text) {
  Bytes b;
  std::istringstream in(text);
  std::string byte;
  while (in >> byte) b.push_back(static_cast<std::uint8_t>(std::stoul(byte, nullptr, 16)));
  return b;
}

// A record from its 16 bytes, field by field, as the format lays them out.
PageRecord record_from(const Bytes& b) {
  EXPECT_EQ(b.size(), 16u);
  PageRecord r;
  r.kind = static_cast<PageKind>(b[0]);
  for (int i = 0; i < 3; ++i) r.reserved[i] = b[1 + i];
  r.length = 0;
  for (int i = 0; i < 4; ++i) r.length |= static_cast<std::uint32_t>(b[4 + i]) << (8 * i);
  r.fill = 0;
  for (int i = 0; i < 8; ++i) r.fill |= static_cast<std::uint64_t>(b[8 + i]) << (8 * i);
  return r;
}

struct Decoded {
  Status cpu;
  gpu::ItemStatus gpu;
  Bytes cpu_page, gpu_page;
};

struct alignas(16) Chunk {
  std::uint8_t b[16];
};

// Decodes a record with its data (empty: none) both ways.
Decoded decode(const PageRecord& r, const Bytes& data) {
  Decoded d;
  d.cpu_page.assign(kPage, 0xEE);
  d.cpu = decompress_page(r, data.empty() ? nullptr : data.data(), kPage, d.cpu_page.data());
  // The GPU's steps take a slot and a page of page_size bytes, 16-byte aligned.
  std::vector<Chunk> slot(kPage / 16), page(kPage / 16);
  std::memset(slot.data(), 0, kPage);
  if (!data.empty()) std::memcpy(slot.data(), data.data(), std::min(data.size(), kPage));
  std::memset(page.data(), 0xEE, kPage);
  d.gpu = gpu::page_decompress_emulated(r, reinterpret_cast<const std::uint8_t*>(slot.data()), kPage,
                                        reinterpret_cast<std::uint8_t*>(page.data()));
  const auto* p = reinterpret_cast<const std::uint8_t*>(page.data());
  d.gpu_page.assign(p, p + kPage);
  return d;
}

bool all_zero(const Bytes& page) {
  return std::all_of(page.begin(), page.end(), [](std::uint8_t b) { return b == 0; });
}

void expect_decodes_to_record(const PageRecord& r, const Bytes& data, const Bytes& page) {
  const Decoded d = decode(r, data);
  EXPECT_TRUE(d.cpu.ok()) << d.cpu.to_string();
  EXPECT_TRUE(d.cpu_page == page) << "decompress_page gives another page";
  EXPECT_EQ(d.gpu, gpu::ItemStatus::ok) << gpu::item_status_name(d.gpu);
  EXPECT_TRUE(d.gpu_page == page) << "the GPU's steps give another page";
}

void expect_decodes_to(const std::string& record_hex, const Bytes& data, const Bytes& page) {
  expect_decodes_to_record(record_from(hex(record_hex)), data, page);
}

// Vector 3's data: s = s * 6364136223846793005 + 1442695040888963407 (mod
// 2^64) from s = 0, each byte the top 8 bits of s.
Bytes lcg_page() {
  Bytes b(kPage);
  std::uint64_t s = 0;
  for (std::uint8_t& x : b) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<std::uint8_t>(s >> 56);
  }
  return b;
}

const char* const kLz4Block = "1F 41 01 00 FF FF FF FF FF FF FF FF FF FF FF FF FF FF FF F6 50 31 32 33 34 35";

// 4,091 bytes of 'A', then "12345".
Bytes lz4_vector_page() {
  Bytes page(kPage - 5, 'A');
  for (const char c : {'1', '2', '3', '4', '5'}) page.push_back(static_cast<std::uint8_t>(c));
  return page;
}

TEST(PageVector, RecordLayout) {
  static_assert(offsetof(PageRecord, kind) == 0);
  static_assert(offsetof(PageRecord, reserved) == 1);
  static_assert(offsetof(PageRecord, length) == 4);
  static_assert(offsetof(PageRecord, fill) == 8);
  static_assert(sizeof(PageRecord) == 16);
  static_assert(static_cast<int>(PageKind::zero) == 0 && static_cast<int>(PageKind::same_fill) == 1 &&
                static_cast<int>(PageKind::stored) == 2 && static_cast<int>(PageKind::lz4) == 3);
  const Bytes b = hex("03 00 00 00  1A 00 00 00  11 22 33 44 55 66 77 88");
  const PageRecord r = record_from(b);
  EXPECT_EQ(r.kind, PageKind::lz4);
  EXPECT_EQ(r.length, 26u);
  EXPECT_EQ(r.fill, 0x8877665544332211ull);
  if constexpr (std::endian::native == std::endian::little) {
    // On a little-endian machine the struct is the 16 bytes as they are.
    PageRecord copied;
    std::memcpy(&copied, b.data(), 16);
    EXPECT_EQ(0, std::memcmp(&copied, &r, 16));
  }
}

TEST(PageVector, Zero) {
  expect_decodes_to("00 00 00 00  00 00 00 00  00 00 00 00 00 00 00 00", {}, Bytes(kPage, 0));
}

TEST(PageVector, SameFill) {
  Bytes page;
  for (std::size_t k = 0; k < kPage / 8; ++k) {
    for (const std::uint8_t b : {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}) page.push_back(b);
  }
  expect_decodes_to("01 00 00 00  00 00 00 00  11 22 33 44 55 66 77 88", {}, page);
}

TEST(PageVector, Stored) {
  const Bytes data = lcg_page();
  // The first and last bytes that the vector lists.
  EXPECT_TRUE(Bytes(data.begin(), data.begin() + 8) == hex("14 1A 9A 66 62 8F 14 5B"));
  EXPECT_TRUE(Bytes(data.end() - 8, data.end()) == hex("0F 3D 86 C1 A7 15 AE 1B"));
  expect_decodes_to("02 00 00 00  00 10 00 00  00 00 00 00 00 00 00 00", data, data);
}

TEST(PageVector, Lz4BlockBuiltByHand) {
  const Bytes block = hex(kLz4Block);
  ASSERT_EQ(block.size(), 26u);
  const Bytes page = lz4_vector_page();
  expect_decodes_to("03 00 00 00  1A 00 00 00  00 00 00 00 00 00 00 00", block, page);
  // liblz4, as a control.
  Bytes out(kPage);
  ASSERT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(block.data()), reinterpret_cast<char*>(out.data()),
                                static_cast<int>(block.size()), static_cast<int>(kPage)),
            static_cast<int>(kPage));
  EXPECT_TRUE(out == page);
}

struct InvalidCase {
  const char* what;
  const char* record;
  Bytes data;
};

// The invalid records of docs/formats/pages.md, with their data.
std::vector<InvalidCase> invalid_cases() {
  const Bytes block = hex(kLz4Block);
  Bytes short_page = block, long_page = block;
  short_page[19] = 0xF5;  // the match length's last extension byte: 4,095 bytes out
  long_page[19] = 0xF7;   // 4,097 bytes out
  return {
      {"zero with a fill", "00 00 00 00  00 00 00 00  01 00 00 00 00 00 00 00", {}},
      {"same_fill with a length", "01 00 00 00  08 00 00 00  11 22 33 44 55 66 77 88", Bytes(8, 0x11)},
      {"stored, length 4,095", "02 00 00 00  FF 0F 00 00  00 00 00 00 00 00 00 00", lcg_page()},
      {"lz4, length 0", "03 00 00 00  00 00 00 00  00 00 00 00 00 00 00 00", block},
      {"lz4, length 3,585", "03 00 00 00  01 0E 00 00  00 00 00 00 00 00 00 00", Bytes(3585, 0)},
      {"lz4, the block cut one byte short", "03 00 00 00  19 00 00 00  00 00 00 00 00 00 00 00",
       Bytes(block.begin(), block.end() - 1)},
      {"lz4, decodes to 4,095 bytes", "03 00 00 00  1A 00 00 00  00 00 00 00 00 00 00 00", short_page},
      {"lz4, would decode to 4,097 bytes", "03 00 00 00  1A 00 00 00  00 00 00 00 00 00 00 00", long_page},
      {"unknown kind", "04 00 00 00  00 00 00 00  00 00 00 00 00 00 00 00", {}},
  };
}

TEST(PageVector, InvalidRecordsAreRefused) {
  for (const InvalidCase& c : invalid_cases()) {
    SCOPED_TRACE(c.what);
    const Decoded d = decode(record_from(hex(c.record)), c.data);
    EXPECT_PRED_FORMAT2(test::StatusIs, d.cpu, StatusCode::bad_data);
    EXPECT_NE(d.gpu, gpu::ItemStatus::ok);
  }
}

// A refused record leaves its page all zeros (the page was 0xEE before), on
// the CPU backend and on the GPU's steps alike, whether the reader refused
// it before writing a byte or partway through the block.
TEST(PageVector, RefusedRecordsLeaveThePageZero) {
  for (const InvalidCase& c : invalid_cases()) {
    SCOPED_TRACE(c.what);
    const Decoded d = decode(record_from(hex(c.record)), c.data);
    ASSERT_FALSE(d.cpu.ok());
    ASSERT_NE(d.gpu, gpu::ItemStatus::ok);
    EXPECT_TRUE(all_zero(d.cpu_page)) << "decompress_page leaves other bytes than zeros";
    EXPECT_TRUE(all_zero(d.gpu_page)) << "the GPU's steps leave other bytes than zeros";
  }
}

// docs/formats/pages.md, "Every reader gives one verdict": vector 4's block
// with its match offset made 0 (forbidden by the LZ4 format; liblz4 alone
// would let it through) is refused by the CPU backend and by the GPU's
// steps, and both leave the page zeros.
TEST(PageVector, OffsetZeroIsRefusedByBothReaders) {
  Bytes block = hex(kLz4Block);
  block[2] = 0x00;
  const Decoded d = decode(record_from(hex("03 00 00 00  1A 00 00 00  00 00 00 00 00 00 00 00")), block);
  EXPECT_EQ(d.gpu, gpu::ItemStatus::offset_out_of_range);
  EXPECT_PRED_FORMAT2(test::StatusIs, d.cpu, StatusCode::bad_data);
  EXPECT_TRUE(all_zero(d.cpu_page)) << "decompress_page leaves other bytes than zeros";
  EXPECT_TRUE(all_zero(d.gpu_page)) << "the GPU's steps leave other bytes than zeros";
  // liblz4, as a control: it takes the block.
  Bytes out(kPage);
  EXPECT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(block.data()), reinterpret_cast<char*>(out.data()),
                                static_cast<int>(block.size()), static_cast<int>(kPage)),
            static_cast<int>(kPage));
}

// The same section: a block whose match runs to the end of the page breaks
// LZ4's end-of-block rules (liblz4 alone would refuse it), but it decodes to
// exactly a page, so the CPU backend and the GPU's steps both accept it and
// give the same page: 4,096 bytes of 'A'.
TEST(PageVector, EndOfBlockRulesGetOneVerdict) {
  // 1 literal 'A', a match at offset 1 of 4,095 bytes (4 + 15 + 15 * 255 +
  // 251), then an empty last sequence.
  Bytes block = hex("1F 41 01 00");
  block.insert(block.end(), 15, 0xFF);
  block.push_back(0xFB);
  block.push_back(0x00);
  PageRecord r = record_from(hex("03 00 00 00  00 00 00 00  00 00 00 00 00 00 00 00"));
  r.length = static_cast<std::uint32_t>(block.size());
  expect_decodes_to_record(r, block, Bytes(kPage, 'A'));
  // liblz4, as a control: it refuses the block.
  Bytes out(kPage);
  EXPECT_LT(LZ4_decompress_safe(reinterpret_cast<const char*>(block.data()), reinterpret_cast<char*>(out.data()),
                                static_cast<int>(block.size()), static_cast<int>(kPage)),
            0);
}

}  // namespace
}  // namespace tandem
