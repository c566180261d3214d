// The socket fabric's datagrams: what follows the UDP header of a fabemu-mode DPDK frame (host/dpdk/
// README.md, "fabemu header"): the 60-byte fabemu header, then a data packet's message bytes as zeros, or
// a NACK's missing seqs (u32 each). Encoded into and decoded from caller buffers, no allocation. A
// datagram that is not a valid one for the receiving rank is classified with the reason, never taken for
// ours. host/lab/README.md, "Socket fabric".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "host/wire/frame.h"

namespace fabemu::lab {

inline constexpr size_t kDatagramHeaderBytes = host::dpdk::kFabemuHeaderBytes;  // 60

// Writes the 60-byte header (magic, version, fields, header CRC) at `out`.
void write_datagram_header(const host::dpdk::FabemuHeader& h, uint8_t* out) noexcept;

// The whole datagram: the header, then `data_bytes` zeros (kData) or `missing` (kNack; nothing for kAck).
// Returns its length, or 0 when `out` is too small.
size_t encode_datagram(const host::dpdk::FabemuHeader& h, uint32_t data_bytes, std::span<const uint32_t> missing,
                       std::span<uint8_t> out) noexcept;

// Why a datagram is not ours, in the order decode_datagram() checks.
enum class DatagramVerdict : uint8_t {
  kOurs,
  kTruncated,      // shorter than the header, or cut by the receive buffer
  kBadMagic,
  kBadVersion,
  kBadHeaderCrc,
  kBadFields,      // unknown kind or flags, ranks out of range, a layout the sender cannot have produced
  kNotLocal,       // the destination rank is not the rank of the socket it arrived on
  kBadPayload,     // a data packet's payload is not all zeros, a NACK list out of order or out of range
};
inline constexpr size_t kDatagramVerdictCount = 8;
std::string_view to_string(DatagramVerdict v) noexcept;

// What the receiving socket accepts.
struct DatagramRules {
  uint32_t ranks = 0;        // ranks of the workload: src and dst must be below
  uint32_t payload = 1400;   // message bytes per data packet (every process of a run uses the same)
  uint32_t local_rank = 0;   // the rank of the receiving socket: the header's destination must be it
};

struct DecodedDatagram {
  host::dpdk::FabemuHeader hdr;
  uint32_t payload_bytes = 0;          // bytes after the header
  std::span<const uint8_t> payload;    // points into the datagram
  size_t missing_count() const noexcept {
    return hdr.kind == host::dpdk::PacketKind::kNack ? payload_bytes / 4 : 0;
  }
  uint32_t missing(size_t i) const noexcept;
};

// Classifies `d`; fills `out` only when the verdict is kOurs. Data packets must have the layout the
// Sender gives them for `rules.payload` (count, offset, bytes), so that a corrupted byte anywhere, header
// or payload, is caught even where the header CRC does not reach.
DatagramVerdict decode_datagram(std::span<const uint8_t> d, const DatagramRules& rules, DecodedDatagram& out) noexcept;

}  // namespace fabemu::lab
