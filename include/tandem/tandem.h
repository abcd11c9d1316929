/*
 * tandem - C interface.
 *
 * A small C API for use from C and through FFI. It mirrors the C++ API in
 * tandem.hpp: status codes, LZ4 block batches and LZ4 frames in memory.
 * All buffers are host memory unless a function says otherwise. Every function
 * is thread-safe: it keeps no state between calls.
 *
 * Status codes are permanent: a value, once published, keeps its meaning.
 */
#ifndef TANDEM_TANDEM_H
#define TANDEM_TANDEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tandem_status {
  TANDEM_OK = 0,
  TANDEM_BAD_DATA = 1,           /* input is not valid for the format */
  TANDEM_OUTPUT_TOO_SMALL = 2,   /* the output buffer cannot hold the result */
  TANDEM_UNSUPPORTED = 3,        /* valid input or request that tandem does not support */
  TANDEM_IO_ERROR = 4,           /* reading or writing a file or stream failed */
  TANDEM_DEVICE_ERROR = 5,       /* a CUDA call failed */
  TANDEM_INVALID_ARGUMENT = 6,   /* the caller passed an invalid argument */
  TANDEM_CHECKSUM_MISMATCH = 7,  /* a checksum stored in the input does not match the data */
  TANDEM_TRUNCATED = 8,          /* the input ends before the format says it does */
  TANDEM_OUT_OF_MEMORY = 9,      /* an allocation failed */
  TANDEM_OUTPUT_LIMIT = 10,      /* the output would exceed the caller's size limit */
  TANDEM_NO_DEVICE = 11,         /* the GPU backend was requested but no usable GPU is present */
  TANDEM_NOT_FOUND = 12,         /* no item has the key that was asked for */
  TANDEM_STATUS_MAX_VALUE = 0x7FFFFFFF  /* not a status: makes any int a valid tandem_status */
} tandem_status;

typedef enum tandem_backend {
  TANDEM_BACKEND_CPU = 0,
  TANDEM_BACKEND_GPU = 1,
  TANDEM_BACKEND_AUTO = 2
} tandem_backend;

/* A short, static, human-readable description of a status code; "unknown
 * status" for values that are not codes. Never NULL. */
const char* tandem_status_message(tandem_status status);

/* The library version, "MAJOR.MINOR.PATCH". */
const char* tandem_version(void);

/* Upper bound of the compressed size of one LZ4 block of `input_size` bytes;
 * 0 when input_size is too large for one LZ4 block (over 0x7E000000 bytes). */
size_t tandem_lz4_max_compressed_size(size_t input_size);

/*
 * LZ4 block batches (raw LZ4 blocks, no framing). For item i:
 *   in_ptrs[i], in_sizes[i]    input bytes
 *   out_ptrs[i], out_caps[i]   output buffer and its capacity
 *   out_sizes[i]               written: bytes produced (0 on failure)
 *   statuses[i]                written: the item's status; may be NULL
 * level: 0..2 fast (acceleration 1), 3..12 high compression, negative -N:
 * fast with acceleration N. threads: 0 = all hardware threads.
 * Returns TANDEM_OK when every item succeeded, else the status of the first
 * failed item, or TANDEM_INVALID_ARGUMENT for bad arguments.
 */
tandem_status tandem_lz4_compress_batch(const void* const* in_ptrs, const size_t* in_sizes,
                                        void* const* out_ptrs, const size_t* out_caps,
                                        size_t* out_sizes, tandem_status* statuses, size_t count,
                                        int level, int threads);

tandem_status tandem_lz4_decompress_batch(const void* const* in_ptrs, const size_t* in_sizes,
                                          void* const* out_ptrs, const size_t* out_caps,
                                          size_t* out_sizes, tandem_status* statuses,
                                          size_t count, int threads);

/* Options of the LZ4 frame writer; tandem_lz4_frame_options_init fills the defaults. */
typedef struct tandem_lz4_frame_options {
  size_t struct_size;      /* sizeof(tandem_lz4_frame_options): lets the struct grow */
  int level;               /* as for the batch functions; default 0 */
  size_t block_size;       /* 65536, 262144, 1048576 or 4194304; default 4194304 */
  int linked_blocks;       /* blocks may refer to earlier blocks; default 0 */
  int content_checksum;    /* XXH32 of the content after the last block; default 1 */
  int block_checksum;      /* XXH32 of every block; default 0 */
  int content_size;        /* store the content size in the header; default 1 */
  int threads;             /* 0 = all hardware threads */
} tandem_lz4_frame_options;

void tandem_lz4_frame_options_init(tandem_lz4_frame_options* options);

/* Upper bound of the size of a frame holding `input_size` bytes. */
size_t tandem_lz4_frame_max_compressed_size(size_t input_size,
                                            const tandem_lz4_frame_options* options);

/* Compresses src into one LZ4 frame in dst. options may be NULL (defaults).
 * *dst_size receives the frame's size. */
tandem_status tandem_lz4_frame_compress(const void* src, size_t src_size, void* dst,
                                        size_t dst_capacity, size_t* dst_size,
                                        const tandem_lz4_frame_options* options);

/* Decompresses every frame in src (concatenated, skippable and legacy frames
 * included) into dst; *dst_size receives the decompressed size.
 * Returns TANDEM_OUTPUT_TOO_SMALL when dst cannot hold it all. threads: 0 = all. */
tandem_status tandem_lz4_frame_decompress(const void* src, size_t src_size, void* dst,
                                          size_t dst_capacity, size_t* dst_size, int threads);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_TANDEM_H */
