// tandem's rANS stream format (docs/formats/rans.md): its constants, its
// parameters, the errors a decoder reports and the size bounds an encoder
// promises. Plain constants and small functions only, so that host code,
// the shared warp bodies (gpu/rans_body.hpp) and the CUDA kernels all read
// the same definitions.
//
// A stream codes one buffer of bytes with one order-0 frequency table; the
// buffer is cut into chunks of `chunk_kib` KiB (the last may be shorter),
// each coded by up to 32 interleaved rANS states (lanes) of 32 bits that
// renormalise by 16-bit words. Chunks are independent given the table, so a
// GPU gives each chunk a warp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/tandem.hpp"

// What device code calls as well: host and device functions under nvcc.
#if defined(__CUDACC__)
#define TANDEM_RANS_HD __host__ __device__
#else
#define TANDEM_RANS_HD
#endif

namespace tandem::rans {

// ---------------------------------------------------------------- wire ----

inline constexpr std::uint8_t kMagic0 = 'T', kMagic1 = 'N', kMagic2 = 'D', kMagic3 = 'R';
inline constexpr std::uint8_t kVersion = 1;

// magic[4] version scale_bits chunk_kib lanes length:u32 chunk_count:u32 table_bytes:u16
inline constexpr std::size_t kHeaderBytes = 18;
// The table starts with the code order and a 256-bit presence map.
inline constexpr std::size_t kTableHeadBytes = 33;
// A chunk's directory entry: lanes:u8 state_bytes:u8 words:u16.
inline constexpr std::size_t kDirEntryBytes = 4;

inline constexpr std::uint32_t kMinScaleBits = 8;  // 256 symbols need 256 slots
inline constexpr std::uint32_t kMaxScaleBits = 12;
inline constexpr std::uint32_t kMinChunkKiB = 1;
inline constexpr std::uint32_t kMaxChunkKiB = 64;
inline constexpr std::uint32_t kMaxLanes = 32;
// Exp-Golomb order of the frequency codes: 0..kMaxCodeOrder.
inline constexpr std::uint32_t kMaxCodeOrder = 12;
// A state after renormalisation lies in [kStateLow, 2^32).
inline constexpr std::uint32_t kStateLow = 1u << 16;
// A chunk's states are stored as a 4-bit length per lane, then each
// state's bits below its top bit (16 to 31 of them).
TANDEM_RANS_HD inline constexpr std::uint32_t min_state_bytes(std::uint32_t lanes) {
  return (lanes + 1) / 2 + (16 * lanes + 7) / 8;
}
TANDEM_RANS_HD inline constexpr std::uint32_t max_state_bytes(std::uint32_t lanes) {
  return (lanes + 1) / 2 + (31 * lanes + 7) / 8;
}
// Each lane's last (up to) kRawSymbols symbols travel as raw bytes in the
// state the decoder ends with: kStateLow | b0 | b1 << 8.
inline constexpr std::uint32_t kRawSymbols = 2;
// The table's size field is 16 bits; the largest table (256 symbols, each
// code at most 2 * 12 + 1 bits) is far below it.
inline constexpr std::size_t kMaxTableBytes = kTableHeadBytes + (256 * 25 + 7) / 8;

// ---------------------------------------------------------- parameters ----

// The defaults come from a sweep over Silesia (docs/formats/rans.md).
inline constexpr std::uint32_t kDefaultChunkKiB = 16;
inline constexpr std::uint32_t kDefaultScaleBits = 11;
inline constexpr std::uint32_t kDefaultLanes = 32;

struct Params {
  std::uint32_t chunk_kib = kDefaultChunkKiB;    // chunk size in KiB, 1..64
  std::uint32_t scale_bits = kDefaultScaleBits;  // frequencies sum to 2^scale_bits, 8..12
  std::uint32_t lanes = kDefaultLanes;           // most interleaved states per chunk, 1..32
};

TANDEM_RANS_HD inline constexpr bool params_valid(const Params& p) {
  return p.chunk_kib >= kMinChunkKiB && p.chunk_kib <= kMaxChunkKiB && p.scale_bits >= kMinScaleBits &&
         p.scale_bits <= kMaxScaleBits && p.lanes >= 1 && p.lanes <= kMaxLanes;
}

// The reference encoder gives a chunk of n bytes this many lanes: `lanes`,
// fewer for a short chunk, so that each lane codes at least kMinLaneSymbols
// symbols (a lane costs some 3.5 bytes of final state, which a short chunk would
// not earn back). The GPU encoder follows the same rule; decoders accept any
// count from 1 to min(lanes, n).
inline constexpr std::uint32_t kMinLaneSymbols = 64;
TANDEM_RANS_HD inline constexpr std::uint32_t chunk_lanes(std::uint32_t n, std::uint32_t lanes) {
  const std::uint32_t want = (n + kMinLaneSymbols - 1) / kMinLaneSymbols;
  return want < 1 ? 1 : (want < lanes ? want : lanes);
}

// Streams code at most this many bytes (the length field is 32 bits).
inline constexpr std::uint64_t kMaxLength = 0xFFFFFFFFu;

// Bytes a stream of n input bytes may take at most: header, the largest
// table, and per chunk its entry, its largest states and at most one word
// per symbol. 0 when n > kMaxLength or the parameters are invalid.
TANDEM_RANS_HD inline constexpr std::size_t max_encoded_size(std::uint64_t n, const Params& p) {
  if (!params_valid(p) || n > kMaxLength) return 0;
  if (n == 0) return kHeaderBytes;
  const std::uint64_t cs = std::uint64_t{p.chunk_kib} * 1024;
  const std::uint64_t chunks = (n + cs - 1) / cs;
  return static_cast<std::size_t>(kHeaderBytes + kMaxTableBytes + chunks * (kDirEntryBytes + max_state_bytes(p.lanes)) + 2 * n);
}

// ------------------------------------------------------------- errors ----

// What a decoder (or the GPU encoder) found wrong with one stream. Values
// are permanent: the GPU writes them to device memory.
enum class Error : std::int32_t {
  ok = 0,
  truncated = 1,            // the input ends before the header, table, directory or a payload
  bad_magic = 2,            // not a tandem rANS stream
  unsupported_version = 3,  // a version this decoder does not know
  bad_params = 4,           // scale bits, chunk size or lane count out of range
  bad_chunk_count = 5,      // the chunk count does not match the length and chunk size
  bad_table = 6,            // the frequency table is malformed or does not sum to the scale
  bad_directory = 7,        // a chunk's lane or word count is impossible for its length
  trailing_bytes = 8,       // bytes after the last chunk (or after an empty stream's header)
  bad_states = 9,           // a chunk's state lengths disagree with its state bytes, or padding is not zero
  words_exhausted = 10,     // a chunk needs more words than it has
  words_left_over = 11,     // a chunk decodes without using all its words
  bad_final_state = 12,     // a lane does not end in the state the encoder starts from
  output_too_small = 13,    // the decoded length exceeds the output capacity
  invalid_item = 14,        // GPU: a null pointer or an item over the size the call accepts
};

const char* error_name(Error e);
// The library-wide status of an error: truncated, bad_data, unsupported,
// output_too_small or invalid_argument, with a reason naming the error.
Status to_status(Error e);

}  // namespace tandem::rans
