// Fuzz target: the tar reader (src/format/tar_format.hpp).
//
// Each input is read as an archive as it is, and as edits of a small valid
// archive built here (a GNU long name, a pax header with a path and a size,
// a ustar name with a prefix, a directory): the input's bytes are (offset,
// value) pairs that overwrite bytes of it, with the checksum of each header
// touched written again half of the time, so that the reader gets past the
// checksums to the fields. Invariants: every entry's data lies inside the
// archive after its header, in order, within the limits; the statuses are
// ok, truncated or bad_data; nothing is read outside the input (an
// exact-size copy, so ASan sees it).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "format/tar_format.hpp"
#include "fuzz_check.hpp"

namespace tar = tandem::tar;

namespace {

void put_octal(std::uint8_t* p, std::size_t width, std::uint64_t v) {
  for (std::size_t i = width - 1; i-- > 0;) {
    p[i] = static_cast<std::uint8_t>('0' + (v & 7));
    v >>= 3;
  }
  p[width - 1] = 0;
}

void seal(std::uint8_t* h) {
  std::memset(h + 148, ' ', 8);
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < tar::kBlockBytes; ++i) sum += h[i];
  put_octal(h + 148, 7, sum);
  h[155] = ' ';
}

void add(std::vector<std::uint8_t>* a, const std::string& name, char flag, const std::string& data,
         const std::string& prefix = "") {
  const std::size_t at = a->size();
  a->resize(at + tar::kBlockBytes, 0);
  std::uint8_t* h = a->data() + at;
  std::memcpy(h, name.data(), std::min<std::size_t>(name.size(), 100));
  put_octal(h + 100, 8, 0644);
  put_octal(h + 124, 12, data.size());
  put_octal(h + 136, 12, 1700000000);
  h[156] = static_cast<std::uint8_t>(flag);
  std::memcpy(h + 257, "ustar\0" "00", 8);
  std::memcpy(h + 345, prefix.data(), std::min<std::size_t>(prefix.size(), 155));
  seal(h);
  a->insert(a->end(), data.begin(), data.end());
  a->resize((a->size() + 511) / 512 * 512, 0);
}

const std::vector<std::uint8_t>& base() {
  static const std::vector<std::uint8_t> a = [] {
    std::vector<std::uint8_t> v;
    add(&v, "././@LongLink", 'L', std::string(130, 'n') + '\0');
    add(&v, "short", '0', "hello");
    add(&v, "PaxHeaders/x", 'x', "14 path=a/b/c\n11 size=70\n");
    add(&v, "f", '0', std::string(70, 'z'));
    add(&v, "name", '0', "data", "the/prefix");
    add(&v, "dir/", '5', "");
    v.resize(v.size() + 1024, 0);
    return v;
  }();
  return a;
}

void check(const std::uint8_t* p, std::size_t n) {
  std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[n ? n : 1]);
  if (n) std::memcpy(copy.get(), p, n);
  std::vector<tar::Entry> entries;
  tar::Limits limits;
  limits.max_entries = 64;
  limits.max_meta = 4096;
  const tandem::Status s = tar::parse(copy.get(), n, &entries, limits);
  FUZZ_ASSERT(s.code == tandem::StatusCode::ok || s.code == tandem::StatusCode::truncated ||
              s.code == tandem::StatusCode::bad_data);
  FUZZ_ASSERT(entries.size() <= limits.max_entries);
  std::uint64_t last = 0;
  for (const tar::Entry& e : entries) {
    FUZZ_ASSERT(e.data_at >= tar::kBlockBytes && e.data_at % tar::kBlockBytes == 0);
    FUZZ_ASSERT(e.data_at >= last);
    FUZZ_ASSERT(e.data_at <= n && n - e.data_at >= e.size);
    last = e.data_at + e.size;
  }
  if (n) (void)tar::looks_like_tar(copy.get(), n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(data, size);
  if (size < 1) return 0;
  std::vector<std::uint8_t> a = base();
  const bool reseal = data[0] & 1;
  for (std::size_t i = 1; i + 2 < size; i += 3) {
    const std::size_t at = (std::size_t{data[i]} | std::size_t{data[i + 1]} << 8) % a.size();
    a[at] = data[i + 2];
    if (reseal) seal(a.data() + at / tar::kBlockBytes * tar::kBlockBytes);
  }
  if (data[0] & 2) a.resize(a.size() - (data[0] >> 2) * 37 % a.size());
  check(a.data(), a.size());
  return 0;
}
