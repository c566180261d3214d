// The 60-byte fabemu header (README.md, "fabemu header"), written and parsed in one place for both
// carriers: the DPDK frames (frame.cpp, after UDP or the RoCEv2 BTH) and the socket fabric's UDP payloads
// (host/lab/datagram.cpp). The field stores are inline: FrameTemplate's fill path (the DPDK transmit loop)
// uses them with its own cached CRC.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "host/wire/frame.h"

namespace fabemu::host::dpdk {

// --- big-endian loads and stores, one move each ---
inline void store_be16(uint8_t* p, uint16_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void store_be32(uint8_t* p, uint32_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void store_be64(uint8_t* p, uint64_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline uint32_t load_be32(const uint8_t* p) noexcept {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}
// One load and a byte swap (GCC 12 did not merge the bytes of two load_be32s, nor inline them).
inline uint64_t load_be64(const uint8_t* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  return v;
}

// Byte offsets in the header of the fields FrameTemplate patches per packet, and of the header CRC.
inline constexpr size_t kHeaderIdAt = 16, kHeaderSeqAt = 24, kHeaderOffsetAt = 40, kHeaderTimeAt = 48;
inline constexpr size_t kHeaderCrcAt = 56;  // CRC-32 of bytes [0, 56)

// Bytes 4..7 of the header as one big-endian word: version, kind, flags.
inline uint32_t header_kind_word(const FabemuHeader& h) noexcept {
  return uint32_t{kFabemuVersion} << 24 | uint32_t{static_cast<uint8_t>(h.kind)} << 16 | h.flags;
}

// Writes bytes [0, kHeaderCrcAt) of the header (magic, version and the fields), not the CRC. Returns
// header_kind_word(h), read before any store (the stores may alias `h`, so a second read would reload it).
inline uint32_t store_header_fields(uint8_t* p, const FabemuHeader& h) noexcept {
  const uint32_t kind_word = header_kind_word(h);
  store_be32(p + 0, kFabemuMagic);
  store_be32(p + 4, kind_word);
  store_be32(p + 8, h.src_rank);
  store_be32(p + 12, h.dst_rank);
  store_be64(p + kHeaderIdAt, h.message_id);
  store_be32(p + kHeaderSeqAt, h.seq);
  store_be32(p + 28, h.count);
  store_be64(p + 32, h.message_length);
  store_be64(p + kHeaderOffsetAt, h.offset);
  store_be64(p + kHeaderTimeAt, h.tx_time_ps);
  return kind_word;
}

// Message bytes after the header: `data_bytes` for kData, the missing list (4 bytes a seq) for kNack,
// none for kAck (or an unknown kind).
inline size_t header_payload_bytes(PacketKind kind, uint32_t data_bytes, std::span<const uint32_t> missing) noexcept {
  return kind == PacketKind::kData ? data_bytes : kind == PacketKind::kNack ? missing.size() * 4 : 0;
}

// Writes a NACK's missing seqs (u32 each, big-endian) at `p`.
inline void store_missing(uint8_t* p, std::span<const uint32_t> missing) noexcept {
  for (size_t i = 0; i < missing.size(); ++i) store_be32(p + 4 * i, missing[i]);
}

// Writes the whole header: fields, then the CRC of bytes [0, 56).
void write_fabemu_header(const FabemuHeader& h, std::span<uint8_t, kFabemuHeaderBytes> out) noexcept;

// Why a header is not a valid one, in the order parse_fabemu_header() checks (a subset of decode()'s
// Verdict and of the socket fabric's DatagramVerdict, with the same meanings).
enum class HeaderVerdict : uint8_t {
  kOk,
  kTruncated,      // fewer than 60 bytes
  kBadMagic,       // checked first when there are at least 4 bytes
  kBadVersion,
  kBadHeaderCrc,
  kBadFields,      // unknown kind, seq >= count, offset + bytes > length, ACK with a payload, NACK list
                   // not whole u32s, cumulative or covered beyond count
};

// Parses the header at the start of `bytes` (header then payload: payload bytes = bytes.size() - 60) and
// validates it: magic, version, CRC, then the fields' consistency with each other and the payload length.
// Fills `out` when the verdict is kOk or kBadFields (left unspecified otherwise).
HeaderVerdict parse_fabemu_header(std::span<const uint8_t> bytes, FabemuHeader& out) noexcept;

}  // namespace fabemu::host::dpdk
