// RoCEv2 (InfiniBand over UDP 4791): the Base Transport Header a sender fills in, the RC SEND opcodes, and
// the invariant CRC (ICRC, IBTA annex A17). The frame layout is in host/dpdk/README.md ("RoCEv2 mode").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "host/wire/crc.h"

namespace fabemu::host::dpdk {

inline constexpr uint16_t kRoceV2Port = 4791;
inline constexpr size_t kBthBytes = 12;
inline constexpr size_t kIcrcBytes = 4;
inline constexpr uint16_t kDefaultPkey = 0xFFFF;

// RC SEND opcodes of the BTH, as a RoCE-aware switch or capture tool reads them.
inline constexpr uint8_t kRcSendFirst = 0x00;
inline constexpr uint8_t kRcSendMiddle = 0x01;
inline constexpr uint8_t kRcSendLast = 0x02;
inline constexpr uint8_t kRcSendOnly = 0x04;

// The fields of the InfiniBand Base Transport Header a sender chooses (RoCEv2 mode). The pad count is
// not here: encode() derives it from the payload length.
struct Bth {
  uint8_t opcode = kRcSendOnly;
  bool solicited = false;   // SE
  bool mig_req = true;      // M (1: no migration in progress, as RDMA NICs send it)
  uint8_t tver = 0;         // transport header version, 4 bits
  uint16_t pkey = kDefaultPkey;
  uint32_t dest_qp = 0;     // 24 bits
  bool ack_req = false;     // A
  uint32_t psn = 0;         // 24 bits
  friend bool operator==(const Bth&, const Bth&) = default;
};

// The RC SEND opcode of packet `seq` of `count`: Only, First, Middle or Last.
constexpr uint8_t rc_send_opcode(uint32_t seq, uint32_t count) noexcept {
  if (count <= 1) return kRcSendOnly;
  if (seq == 0) return kRcSendFirst;
  return seq + 1 == count ? kRcSendLast : kRcSendMiddle;
}

// The BTH fields of data packet `seq` of `count` (RC SEND): opcode, PSN (seq mod 2^24), A on the last.
constexpr void set_data_bth(Bth& b, uint32_t seq, uint32_t count) noexcept {
  b.opcode = rc_send_opcode(seq, count);
  b.psn = seq & 0xFFFFFF;
  b.ack_req = seq + 1 == count;
}

// The RoCEv2 ICRC of a full frame (Ethernet header included, ICRC bytes at its end excluded), as IBTA
// annex A17 defines it: CRC-32 over 8 bytes of 0xFF, the IPv4 header with TOS, TTL and checksum set to
// all ones, the UDP header with checksum all ones, the BTH with its reserved byte all ones, and the rest
// (by crc32_update's engine: the receive side checks every RoCEv2 frame's ICRC with it).
uint32_t roce_icrc(std::span<const uint8_t> frame_without_icrc, CrcEngine engine = best_crc_engine()) noexcept;

}  // namespace fabemu::host::dpdk
