// What the two sources of fabemu_bench_dpdk_tx share: bench_dpdk_tx.cpp (the transmit loops on a device,
// EAL, main) and bench_wire_framing.cpp (the framing-only cases: encode, encode_run, encode_one, decode,
// sender; no mbufs, no device).
#pragma once

#include <cstdint>

#include "host/wire/frame.h"

namespace fabemu::bench::dpdk_tx {

inline constexpr uint16_t kBurst = 32;
inline constexpr uint32_t kRanks = 8;  // rank 0 sends to 1..7

// Rank `rank`'s endpoint: MAC 02:fe:00:00:00:<rank>, 198.18.0.1 + rank, UDP port 47000.
inline host::dpdk::Endpoint endpoint(uint32_t rank) {
  host::dpdk::Endpoint e;
  e.mac = {0x02, 0xfe, 0, 0, 0, static_cast<uint8_t>(rank)};
  e.ip = 0xC6120001 + rank;  // 198.18.0.1 + rank
  e.port = 47000;
  return e;
}

// Registers the framing-only cases (bench_wire_framing.cpp): sender/, encode/, encode_run/, encode_one/
// and decode/, in that order.
void register_framing_cases();

}  // namespace fabemu::bench::dpdk_tx
