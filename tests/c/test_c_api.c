/*
 * The C interface (tandem.h) used from plain C11: status messages, LZ4 block
 * batches, LZ4 frames, and corrupted frames that must fail with the exact
 * status of the decoder's contract. Exits non-zero with a message on failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem/tandem.h"

static int failures = 0;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                        \
    }                                                                    \
  } while (0)

#define CHECK_STATUS(expr, want)                                                       \
  do {                                                                                 \
    const tandem_status got_ = (expr);                                                 \
    if (got_ != (want)) {                                                              \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__, __LINE__, \
              #expr, (int)got_, tandem_status_message(got_), (int)(want),              \
              tandem_status_message(want));                                            \
      failures++;                                                                      \
    }                                                                                  \
  } while (0)

/* Deterministic test data: text-like runs mixed with noise (xorshift64). */
static void fill(unsigned char* p, size_t n, uint64_t seed) {
  static const char* const words[] = {"tandem ", "frame ", "block ", "data ", "lz4 ", "and "};
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  size_t i = 0;
  while (i < n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    if (x % 4 == 0) {
      p[i++] = (unsigned char)(x >> 24);
    } else {
      const char* w = words[(x >> 8) % 6];
      for (; *w && i < n; ++w) p[i++] = (unsigned char)*w;
    }
  }
}

static void test_status_messages(void) {
  int s;
  for (s = TANDEM_OK; s <= TANDEM_NOT_FOUND; ++s) {
    const char* m = tandem_status_message((tandem_status)s);
    CHECK(m != NULL);
    if (m) CHECK(strlen(m) > 0);
  }
  CHECK(tandem_status_message((tandem_status)999) != NULL);
  CHECK(tandem_version() != NULL);
  CHECK(TANDEM_OK == 0 && TANDEM_BAD_DATA == 1 && TANDEM_CHECKSUM_MISMATCH == 7 &&
        TANDEM_TRUNCATED == 8 && TANDEM_NO_DEVICE == 11 && TANDEM_NOT_FOUND == 12);
}

static void test_batch(void) {
  enum { N = 5 };
  static const size_t sizes[N] = {0, 1, 1000, 65536, 300001};
  unsigned char* in[N];
  unsigned char* comp[N];
  unsigned char* back[N];
  const void* in_ptrs[N];
  size_t in_sizes[N], caps[N], out_sizes[N], comp_sizes[N];
  void* out_ptrs[N];
  tandem_status st[N];
  size_t i;
  for (i = 0; i < N; ++i) {
    in[i] = malloc(sizes[i] + 1);
    fill(in[i], sizes[i], i + 1);
    caps[i] = tandem_lz4_max_compressed_size(sizes[i]);
    CHECK(caps[i] >= sizes[i]);
    comp[i] = malloc(caps[i]);
    back[i] = malloc(sizes[i] + 1);
    in_ptrs[i] = in[i];
    in_sizes[i] = sizes[i];
    out_ptrs[i] = comp[i];
  }
  CHECK_STATUS(tandem_lz4_compress_batch(in_ptrs, in_sizes, out_ptrs, caps, out_sizes, st, N, 0, 2),
               TANDEM_OK);
  for (i = 0; i < N; ++i) {
    CHECK(st[i] == TANDEM_OK);
    CHECK(out_sizes[i] > 0 && out_sizes[i] <= caps[i]);
    comp_sizes[i] = out_sizes[i];
  }
  /* Decompress; the statuses array may be NULL. */
  for (i = 0; i < N; ++i) {
    in_ptrs[i] = comp[i];
    in_sizes[i] = comp_sizes[i];
    out_ptrs[i] = back[i];
    caps[i] = sizes[i];
  }
  CHECK_STATUS(tandem_lz4_decompress_batch(in_ptrs, in_sizes, out_ptrs, caps, out_sizes, NULL, N, 0),
               TANDEM_OK);
  for (i = 0; i < N; ++i) {
    CHECK(out_sizes[i] == sizes[i]);
    CHECK(memcmp(back[i], in[i], sizes[i]) == 0);
  }
  /* HC level compresses text smaller than the fast level. */
  {
    size_t fast = 0, hc = 0;
    const void* ip = in[4];
    size_t isz = sizes[4], cap = tandem_lz4_max_compressed_size(sizes[4]);
    void* op = comp[4];
    CHECK_STATUS(tandem_lz4_compress_batch(&ip, &isz, &op, &cap, &fast, NULL, 1, 0, 1), TANDEM_OK);
    CHECK_STATUS(tandem_lz4_compress_batch(&ip, &isz, &op, &cap, &hc, NULL, 1, 9, 1), TANDEM_OK);
    CHECK(hc < fast);
  }
  /* An output too small for one item: only that item fails, with 0 bytes. */
  {
    const void* ip[2] = {in[3], in[2]};
    size_t isz[2] = {sizes[3], sizes[2]};
    size_t cap[2] = {16, tandem_lz4_max_compressed_size(sizes[2])};
    void* op[2] = {comp[3], comp[2]};
    size_t osz[2] = {99, 99};
    tandem_status s2[2];
    CHECK_STATUS(tandem_lz4_compress_batch(ip, isz, op, cap, osz, s2, 2, 0, 1), TANDEM_OUTPUT_TOO_SMALL);
    CHECK(s2[0] == TANDEM_OUTPUT_TOO_SMALL);
    CHECK(osz[0] == 0);
    CHECK(s2[1] == TANDEM_OK);
    CHECK(osz[1] > 0);
  }
  CHECK(tandem_lz4_max_compressed_size((size_t)-1) == 0);
  for (i = 0; i < N; ++i) {
    free(in[i]);
    free(comp[i]);
    free(back[i]);
  }
}

/* XXH32 (seed 0), enough to rebuild a header checksum in plain C. */
static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t rd32(const unsigned char* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t xxh32(const unsigned char* p, size_t len) {
  const uint32_t P1 = 2654435761u, P2 = 2246822519u, P3 = 3266489917u, P4 = 668265263u, P5 = 374761393u;
  const unsigned char* end = p + len;
  uint32_t h;
  if (len >= 16) {
    uint32_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0u - P1;
    while (p + 16 <= end) {
      v1 = rotl32(v1 + rd32(p) * P2, 13) * P1;
      v2 = rotl32(v2 + rd32(p + 4) * P2, 13) * P1;
      v3 = rotl32(v3 + rd32(p + 8) * P2, 13) * P1;
      v4 = rotl32(v4 + rd32(p + 12) * P2, 13) * P1;
      p += 16;
    }
    h = rotl32(v1, 1) + rotl32(v2, 7) + rotl32(v3, 12) + rotl32(v4, 18);
  } else {
    h = P5;
  }
  h += (uint32_t)len;
  while (p + 4 <= end) {
    h = rotl32(h + rd32(p) * P3, 17) * P4;
    p += 4;
  }
  while (p < end) {
    h = rotl32(h + (*p) * P5, 11) * P1;
    p++;
  }
  h ^= h >> 15;
  h *= P2;
  h ^= h >> 13;
  h *= P3;
  h ^= h >> 16;
  return h;
}

static void test_frames(void) {
  const size_t n = 700000;
  unsigned char* data = malloc(n);
  unsigned char* back = malloc(n + 16);
  tandem_lz4_frame_options o;
  size_t cap, fsize = 0, dsize = 0;
  unsigned char* frame;
  fill(data, n, 42);

  memset(&o, 0x7F, sizeof o);
  tandem_lz4_frame_options_init(&o);
  CHECK(o.struct_size == sizeof o);
  CHECK(o.level == 0);
  CHECK(o.block_size == 4194304);
  CHECK(o.linked_blocks == 0 && o.content_checksum == 1 && o.block_checksum == 0 && o.content_size == 1);

  o.block_size = 65536;
  o.block_checksum = 1;
  o.linked_blocks = 1;
  o.threads = 2;
  cap = tandem_lz4_frame_max_compressed_size(n, &o);
  CHECK(cap >= n);
  frame = malloc(cap);
  CHECK_STATUS(tandem_lz4_frame_compress(data, n, frame, cap, &fsize, &o), TANDEM_OK);
  CHECK(fsize > 19 && fsize < n);
  CHECK(rd32(frame) == 0x184D2204u);
  CHECK_STATUS(tandem_lz4_frame_decompress(frame, fsize, back, n, &dsize, 2), TANDEM_OK);
  CHECK(dsize == n);
  CHECK(memcmp(back, data, n) == 0);

  /* Defaults with NULL options. */
  CHECK_STATUS(tandem_lz4_frame_compress(data, n, frame, cap, &fsize, NULL), TANDEM_OK);
  CHECK_STATUS(tandem_lz4_frame_decompress(frame, fsize, back, n, &dsize, 0), TANDEM_OK);
  CHECK(dsize == n && memcmp(back, data, n) == 0);

  /* Output one byte short. */
  CHECK_STATUS(tandem_lz4_frame_decompress(frame, fsize, back, n - 1, &dsize, 1), TANDEM_OUTPUT_TOO_SMALL);
  /* Destination too small for the frame. */
  CHECK_STATUS(tandem_lz4_frame_compress(data, n, frame, 10, &fsize, NULL), TANDEM_OUTPUT_TOO_SMALL);

  /* An empty input compresses to a frame that decodes to nothing. */
  CHECK_STATUS(tandem_lz4_frame_compress(data, 0, frame, cap, &fsize, NULL), TANDEM_OK);
  CHECK_STATUS(tandem_lz4_frame_decompress(frame, fsize, back, 0, &dsize, 1), TANDEM_OK);
  CHECK(dsize == 0);
  /* ...while no input at all is truncated. */
  CHECK_STATUS(tandem_lz4_frame_decompress(frame, 0, back, n, &dsize, 1), TANDEM_TRUNCATED);

  free(frame);
  free(data);
  free(back);
}

/* Corrupted frames: exact codes. The frame is written by tandem with 64 KiB
 * blocks, block checksums and a content checksum. */
static void test_corrupted_frames(void) {
  const size_t n = 200000;
  unsigned char* data = malloc(n);
  unsigned char* back = malloc(n);
  tandem_lz4_frame_options o;
  size_t cap, fsize = 0, dsize = 0, hsize;
  unsigned char* frame;
  unsigned char* copy;
  uint32_t first_block;
  fill(data, n, 7);
  tandem_lz4_frame_options_init(&o);
  o.block_size = 65536;
  o.block_checksum = 1;
  o.content_size = 0;
  cap = tandem_lz4_frame_max_compressed_size(n, &o);
  frame = malloc(cap);
  copy = malloc(cap + 8);
  CHECK_STATUS(tandem_lz4_frame_compress(data, n, frame, cap, &fsize, &o), TANDEM_OK);
  hsize = 7; /* magic, FLG, BD, HC: no content size */
  CHECK((frame[4] & 0x08) == 0);
  first_block = rd32(frame + hsize) & 0x7FFFFFFFu;
  CHECK(first_block > 8 && hsize + 4 + first_block + 4 < fsize);

  /* Wrong header checksum. */
  memcpy(copy, frame, fsize);
  copy[hsize - 1] ^= 0x01;
  CHECK_STATUS(tandem_lz4_frame_decompress(copy, fsize, back, n, &dsize, 1), TANDEM_CHECKSUM_MISMATCH);

  /* A byte of the first block's data: the block checksum catches it (or the
   * block decoder, when the byte breaks the LZ4 sequence). */
  memcpy(copy, frame, fsize);
  copy[hsize + 4 + first_block / 2] ^= 0x20;
  {
    const tandem_status s = tandem_lz4_frame_decompress(copy, fsize, back, n, &dsize, 1);
    if (s != TANDEM_CHECKSUM_MISMATCH && s != TANDEM_BAD_DATA) {
      fprintf(stderr, "corrupted block: got %d (%s)\n", (int)s, tandem_status_message(s));
      failures++;
    }
  }

  /* The block checksum itself. */
  memcpy(copy, frame, fsize);
  copy[hsize + 4 + first_block] ^= 0x01;
  CHECK_STATUS(tandem_lz4_frame_decompress(copy, fsize, back, n, &dsize, 1), TANDEM_CHECKSUM_MISMATCH);

  /* The content checksum (the last 4 bytes). */
  memcpy(copy, frame, fsize);
  copy[fsize - 1] ^= 0x01;
  CHECK_STATUS(tandem_lz4_frame_decompress(copy, fsize, back, n, &dsize, 1), TANDEM_CHECKSUM_MISMATCH);

  /* A block word announcing more than 64 KiB. */
  memcpy(copy, frame, fsize);
  copy[hsize + 2] = 0x01; /* word = first_block | 0x10000 ... > 65536 */
  copy[hsize + 3] = 0x00;
  CHECK_STATUS(tandem_lz4_frame_decompress(copy, fsize, back, n, &dsize, 1), TANDEM_BAD_DATA);

  /* Reserved BD bit, with a correct HC. */
  memcpy(copy, frame, fsize);
  copy[5] |= 0x01;
  copy[6] = (unsigned char)(xxh32(copy + 4, 2) >> 8);
  CHECK_STATUS(tandem_lz4_frame_decompress(copy, fsize, back, n, &dsize, 1), TANDEM_BAD_DATA);

  /* Version 10, with a correct HC. */
  memcpy(copy, frame, fsize);
  copy[4] = (unsigned char)((copy[4] & 0x3F) | 0x80);
  copy[6] = (unsigned char)(xxh32(copy + 4, 2) >> 8);
  CHECK_STATUS(tandem_lz4_frame_decompress(copy, fsize, back, n, &dsize, 1), TANDEM_UNSUPPORTED);

  /* Unknown magic; trailing garbage. */
  memcpy(copy, frame, fsize);
  copy[0] ^= 0xFF;
  CHECK_STATUS(tandem_lz4_frame_decompress(copy, fsize, back, n, &dsize, 1), TANDEM_BAD_DATA);
  memcpy(copy, frame, fsize);
  memcpy(copy + fsize, "GARBAGE!", 8);
  CHECK_STATUS(tandem_lz4_frame_decompress(copy, fsize + 8, back, n, &dsize, 1), TANDEM_BAD_DATA);

  /* Cut inside the end mark. */
  CHECK_STATUS(tandem_lz4_frame_decompress(frame, fsize - 6, back, n, &dsize, 1), TANDEM_TRUNCATED);

  /* The untouched frame still decodes: the faults above were the only reason. */
  CHECK_STATUS(tandem_lz4_frame_decompress(frame, fsize, back, n, &dsize, 1), TANDEM_OK);
  CHECK(dsize == n && memcmp(back, data, n) == 0);

  free(copy);
  free(frame);
  free(data);
  free(back);
}

int main(void) {
  test_status_messages();
  test_batch();
  test_frames();
  test_corrupted_frames();
  if (failures) {
    fprintf(stderr, "test_c_api: %d check(s) failed\n", failures);
    return 1;
  }
  printf("test_c_api: all checks passed\n");
  return 0;
}
