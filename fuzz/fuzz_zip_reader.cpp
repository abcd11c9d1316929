// Fuzz target: the ZIP reader (src/format/zip_format.hpp).
//
// Each input is read as an archive as it is, and as edits to a small valid
// archive that tandem writes (two entries, one deflated, one stored, the
// second with ZIP64 records): pairs of (offset, value) bytes overwrite bytes
// of it, so that the reader sees archives close to real ones. Invariants: a
// directory that reads has entries that lie inside the archive, in front of
// the directory, without overlapping; every extraction either fails with a
// status or gives exactly the entry's size with its CRC-32; nothing is read
// outside the archive (the copies are exact-size, so ASan catches it).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "format/zip_format.hpp"
#include "fuzz_check.hpp"

namespace zip = tandem::zip;

namespace {

void check(const std::uint8_t* p, std::size_t n) {
  const std::span<const std::uint8_t> archive(p, n);
  std::vector<zip::Entry> entries;
  zip::ReadLimits limits;
  limits.max_entry_size = 1 << 20;
  limits.max_total_size = 4 << 20;
  if (!zip::read_directory(archive, &entries, limits).ok()) return;
  for (const zip::Entry& e : entries) {
    FUZZ_ASSERT(e.header_offset < e.data_offset);
    FUZZ_ASSERT(e.data_offset <= n && n - e.data_offset >= e.compressed_size);
    FUZZ_ASSERT(e.size <= limits.max_entry_size);
    std::vector<std::uint8_t> out;
    const tandem::Status s = zip::extract(archive, e, &out, 1 << 20);
    if (s.ok()) {
      FUZZ_ASSERT(out.size() == e.size);
      FUZZ_ASSERT(zip::crc32(out) == e.crc32);
    }
  }
}

const std::vector<std::uint8_t>& base_archive() {
  static const std::vector<std::uint8_t> archive = [] {
    std::vector<std::uint8_t> text(3000);
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<std::uint8_t>("tandem zip "[i % 11]);
    zip::Writer w;
    (void)w.add_file("a/text", text);
    w.force_zip64(true);
    (void)w.add_file("b", std::vector<std::uint8_t>{1, 2, 3, 4, 5});
    (void)w.finish();
    return w.take();
  }();
  return archive;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<std::uint8_t[]> a(new std::uint8_t[size ? size : 1]);
  if (size) std::memcpy(a.get(), data, size);
  check(a.get(), size);

  std::vector<std::uint8_t> edited = base_archive();
  for (std::size_t i = 0; i + 2 < size; i += 3) {
    const std::size_t at = (static_cast<std::size_t>(data[i]) << 8 | data[i + 1]) % edited.size();
    edited[at] = data[i + 2];
  }
  std::unique_ptr<std::uint8_t[]> b(new std::uint8_t[edited.size()]);
  std::memcpy(b.get(), edited.data(), edited.size());
  check(b.get(), edited.size());
  return 0;
}
