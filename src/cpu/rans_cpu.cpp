// The CPU reference codec of tandem's rANS format: the host side of each step
// (histogram, stream assembly) around the shared warp bodies of
// gpu/rans_body.hpp, which run here through the warp emulation.
#include "cpu/rans_cpu.hpp"

#include <algorithm>
#include <array>

#include "gpu/rans_body.hpp"

namespace tandem::rans {

namespace body = gpu::ransk;
using gpu::simt::Warp;

namespace {

std::array<std::uint32_t, 256> count_symbols(std::span<const std::uint8_t> in) {
  // Four tables break the dependency between neighbouring equal bytes.
  std::array<std::array<std::uint32_t, 256>, 4> c{};
  std::size_t i = 0;
  for (; i + 4 <= in.size(); i += 4) {
    ++c[0][in[i]];
    ++c[1][in[i + 1]];
    ++c[2][in[i + 2]];
    ++c[3][in[i + 3]];
  }
  for (; i < in.size(); ++i) ++c[0][in[i]];
  std::array<std::uint32_t, 256> counts{};
  for (int s = 0; s < 256; ++s) counts[s] = c[0][s] + c[1][s] + c[2][s] + c[3][s];
  return counts;
}

Status fail(Error e, Error* error) {
  if (error) *error = e;
  return to_status(e);
}

}  // namespace

std::vector<std::uint32_t> frequencies(std::span<const std::uint8_t> in, std::uint32_t scale_bits) {
  std::vector<std::uint32_t> freq(256, 0);
  if (in.empty() || in.size() > kMaxLength || scale_bits < kMinScaleBits || scale_bits > kMaxScaleBits) return freq;
  const std::array<std::uint32_t, 256> counts = count_symbols(in);
  body::normalize(Warp{}, counts.data(), static_cast<std::uint32_t>(in.size()), scale_bits, freq.data());
  return freq;
}

Status encode(std::span<const std::uint8_t> in, const Params& params, std::span<std::uint8_t> out,
              std::size_t* out_size) {
  if (!out_size) return {StatusCode::invalid_argument, "null out_size"};
  *out_size = 0;
  if (!params_valid(params)) return {StatusCode::invalid_argument, "rANS parameters out of range"};
  if (in.size() > kMaxLength) return {StatusCode::invalid_argument, "rANS streams code at most 4 GiB - 1 bytes"};
  const Status too_small{StatusCode::output_too_small, "the rANS stream does not fit the output"};
  const auto n = static_cast<std::uint32_t>(in.size());

  body::Header h;
  h.scale_bits = params.scale_bits;
  h.chunk_size = params.chunk_kib * 1024;
  h.lanes = params.lanes;
  h.length = n;
  h.chunk_count = body::chunks_for(n, h.chunk_size);
  if (n == 0) {
    if (out.size() < kHeaderBytes) return too_small;
    body::write_header(out.data(), h);
    *out_size = kHeaderBytes;
    return {};
  }

  const Warp w;
  const std::array<std::uint32_t, 256> counts = count_symbols(in);
  std::uint32_t freq[256];
  body::normalize(w, counts.data(), n, params.scale_bits, freq);
  const body::TableCode code = body::best_table_code(w, freq);
  h.table_bytes = code.bytes;
  body::EncSym table[256];
  body::build_enc_table(w, freq, params.scale_bits, table);

  std::size_t at = body::payloads_at(h);
  if (at > out.size()) return too_small;
  body::write_header(out.data(), h);
  std::uint32_t scratch[body::kTableScratchWords];
  body::write_table(w, freq, code.order, scratch, out.data() + kHeaderBytes);
  std::uint8_t* dir = out.data() + body::directory_at(h);

  std::vector<std::uint16_t> words(h.chunk_size);
  std::uint32_t states[kMaxLanes];
  alignas(4) std::uint8_t ring[body::kEncRingBytes];
  for (std::uint32_t i = 0; i < h.chunk_count; ++i) {
    const std::uint32_t len = body::chunk_length(h, i);
    const std::uint32_t lanes = chunk_lanes(len, params.lanes);
    const std::uint8_t* chunk = in.data() + static_cast<std::size_t>(i) * h.chunk_size;
    const std::uint32_t count =
        body::encode_chunk(w, chunk, len, lanes, params.scale_bits, table, states, words.data() + len, ring);
    const std::uint32_t sb = body::state_bytes(states, lanes);
    const std::size_t payload = sb + 2 * std::size_t{count};
    if (payload > out.size() - at) return too_small;
    body::write_entry(dir, i, {lanes, sb, count});
    std::uint8_t* p = out.data() + at;
    body::pack_states(states, lanes, p);
    p += sb;
    const std::uint16_t* first = words.data() + len - count;
    for (std::uint32_t j = 0; j < count; ++j) body::store_u16le(p + 2 * j, first[j]);
    at += payload;
  }
  *out_size = at;
  return {};
}

Status encode(std::span<const std::uint8_t> in, const Params& params, std::vector<std::uint8_t>* out) {
  if (!out) return {StatusCode::invalid_argument, "null output"};
  const std::size_t bound = max_encoded_size(in.size(), params);
  if (bound == 0) {
    return params_valid(params) ? Status{StatusCode::invalid_argument, "rANS streams code at most 4 GiB - 1 bytes"}
                                : Status{StatusCode::invalid_argument, "rANS parameters out of range"};
  }
  out->resize(bound);
  std::size_t size = 0;
  const Status s = encode(in, params, *out, &size);
  out->resize(s.ok() ? size : 0);
  return s;
}

Status read_info(std::span<const std::uint8_t> in, StreamInfo* info) {
  if (!info) return {StatusCode::invalid_argument, "null info"};
  body::Header h;
  const Error e = body::parse_header(in.data(), in.size(), &h);
  if (e != Error::ok) return to_status(e);
  info->params = Params{h.chunk_size / 1024, h.scale_bits, h.lanes};
  info->length = h.length;
  info->chunk_count = h.chunk_count;
  return {};
}

Status decode(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t* out_size, Error* error) {
  if (error) *error = Error::ok;
  if (!out_size) return {StatusCode::invalid_argument, "null out_size"};
  *out_size = 0;
  body::Header h;
  Error e = body::parse_header(in.data(), in.size(), &h);
  if (e != Error::ok) return fail(e, error);
  // parse_header has checked that the directory lies inside the input, so
  // the chunk count is bounded by the input's size.
  std::vector<std::uint64_t> offsets(h.chunk_count);
  std::uint32_t freq[256];
  std::uint32_t head_words[body::kStageWords];
  alignas(4) std::uint8_t parse_scratch[body::kParseScratchBytes];
  const Warp w;
  e = body::prepare_stream(w, in.data(), in.size(), out.size(), &h, freq, head_words, parse_scratch, offsets.data());
  if (e != Error::ok) return fail(e, error);
  if (h.length == 0) return {};

  // The slots in the layout the GPU decoder uses at this scale, so that
  // both of decode_chunk's forms run here too.
  std::uint32_t fc[256];
  for (std::uint32_t s = 0, cum = 0; s < 256; ++s) {
    fc[s] = freq[s] | (cum << 16);
    cum += freq[s];
  }
  const auto decode_chunks = [&](auto slot_kind) {
    using Slot = decltype(slot_kind);
    const std::uint32_t scale = 1u << h.scale_bits;
    std::vector<Slot> slots(scale);
    body::fill_slots(w, fc, 0, scale, slots.data());
    const std::uint8_t* dir = in.data() + body::directory_at(h);
    alignas(4) std::uint8_t ring[body::kDecRingBytes];
    for (std::uint32_t i = 0; i < h.chunk_count; ++i) {
      const body::Entry entry = body::read_entry(dir, i);
      const Error ce = body::decode_chunk(w, in.data() + offsets[i], entry.lanes, entry.state_bytes, entry.words,
                                          body::chunk_length(h, i), h.scale_bits, slots.data(),
                                          out.data() + static_cast<std::size_t>(i) * h.chunk_size, ring);
      if (ce != Error::ok) return ce;
    }
    return Error::ok;
  };
  e = h.scale_bits <= body::kMaxWideScaleBits ? decode_chunks(body::WideSlot{}) : decode_chunks(std::uint32_t{});
  if (e != Error::ok) return fail(e, error);
  *out_size = h.length;
  return {};
}

Status decode(std::span<const std::uint8_t> in, std::vector<std::uint8_t>* out, std::size_t max_output,
              Error* error) {
  if (error) *error = Error::ok;
  if (!out) return {StatusCode::invalid_argument, "null output"};
  out->clear();
  body::Header h;
  const Error e = body::parse_header(in.data(), in.size(), &h);
  if (e != Error::ok) return fail(e, error);
  if (h.length > max_output) return {StatusCode::output_limit, "the rANS stream decodes to more than the limit"};
  out->resize(h.length);
  std::size_t size = 0;
  const Status s = decode(in, *out, &size, error);
  if (!s.ok()) out->clear();
  return s;
}

}  // namespace tandem::rans
