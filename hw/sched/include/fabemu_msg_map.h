// The records of the message-level interface of the FPGA scheduler (issue 46, item 1): what the host
// streams to the card (message descriptors, route records, its watermark) and what the card streams back
// (delivery records, its known-until bound). hw/sched/doc/msg_interface.md gives the protocol; the card's
// C++ reference is rtl_models/msg_sched_model.h. Records are 32 bytes, little-endian, one 256-bit AXI beat,
// as the hop-level records of fabemu_sched_map.h.
#pragma once

#include <cstdint>

#include "hw/sched/include/fabemu_sched_map.h"

namespace fabemu::hw::msg {

using sched::Record;
using sched::RECORD_BYTES;

// --- message descriptor (host -> card) ---------------------------------------------------------------
inline constexpr uint32_t MSG_READY_LSB = 0;       // 64 bits: ps at which the message is handed to its first link
inline constexpr uint32_t MSG_ID_LSB = 64;         // 64 bits: the host's id, echoed in the delivery record
inline constexpr uint32_t MSG_BYTES_LSB = 128;     // 40 bits: message length (0: one empty packet)
inline constexpr uint32_t MSG_HOPS_LSB = 168;      // 8 bits: links on the route, 1..255
inline constexpr uint32_t MSG_ROUTE_LSB = 176;     // 32 bits: index of the first link id in the route array
inline constexpr uint32_t MSG_SRC_LSB = 208;       // 24 bits: source rank (frames, counters)
inline constexpr uint32_t MSG_DST_LSB = 232;       // 24 bits: destination rank
inline constexpr uint64_t kMaxMsgBytes = (uint64_t{1} << 40) - 1;
inline constexpr uint32_t kMaxHops = 255;
inline constexpr uint32_t kMaxRank = (uint32_t{1} << 24) - 1;

// --- route record (host -> card): 8 link ids of the route array, the unused ones ~0 ----------------
inline constexpr uint32_t ROUTE_LINKS_PER_RECORD = 8;

// --- delivery record (card -> host) ----------------------------------------------------------------
inline constexpr uint32_t DLV_ID_LSB = 0;          // 64 bits: the descriptor's id
inline constexpr uint32_t DLV_TIME_LSB = 64;       // 64 bits: modelled delivery (last byte at dst), ps
inline constexpr uint32_t DLV_CYCLE_LSB = 128;     // 64 bits: measured arrival cycle of the last frame; kNoCycle without a wire
inline constexpr uint32_t DLV_PACKETS_LSB = 192;   // 32 bits: packets of the message
inline constexpr uint64_t kNoCycle = ~uint64_t{0};

struct MsgDesc {
  uint64_t ready_ps = 0;
  uint64_t id = 0;
  uint64_t bytes = 0;
  uint32_t hops = 0;
  uint32_t route = 0;
  uint32_t src = 0;
  uint32_t dst = 0;
  friend bool operator==(const MsgDesc&, const MsgDesc&) = default;
};

struct Delivery {
  uint64_t id = 0;
  uint64_t time_ps = 0;
  uint64_t arrival_cycle = kNoCycle;
  uint32_t packets = 0;
  friend bool operator==(const Delivery&, const Delivery&) = default;
};

// One packet leaving its message's first link: what the card puts on the wire (issue 46 item 5; the rest
// of the route stays modelled). Card-internal (sched_msg_dep's stream into the frame generator), no record
// format: the host sees its frames and the counters. A message entering its first link at `now` is a run of
// packets back to back: packet k departs at max(now, link_free) + k * ser(MTU). The card releases them in
// the order (time, run sequence), runs numbered as they enter their first link, each once every departure
// before it is known (below the watermark; hw/sched/doc/sched_msg_dep.md).
struct Departure {
  uint64_t time_ps = 0;
  uint64_t id = 0;
  uint32_t src = 0, dst = 0;
  uint64_t seq = 0, count = 0;  // packet index, packets of the message
  uint32_t bytes = 0;           // payload of this packet
  uint64_t msg_bytes = 0, offset = 0;
  friend bool operator==(const Departure&, const Departure&) = default;
};

namespace detail {
inline void put_bits(Record& r, uint32_t lsb, uint32_t bits, uint64_t v) noexcept {
  for (uint32_t i = 0; i < bits; i += 8) r[(lsb + i) / 8] = static_cast<uint8_t>(v >> i);
}
inline uint64_t get_bits(const Record& r, uint32_t lsb, uint32_t bits) noexcept {
  uint64_t v = 0;
  for (uint32_t i = 0; i < bits; i += 8) v |= uint64_t{r[(lsb + i) / 8]} << i;
  return v;
}
}  // namespace detail

// Fields wider than their slot are truncated: the host checks them first (kMaxMsgBytes, kMaxHops, kMaxRank).
inline Record encode(const MsgDesc& d) noexcept {
  Record r{};
  detail::put_bits(r, MSG_READY_LSB, 64, d.ready_ps);
  detail::put_bits(r, MSG_ID_LSB, 64, d.id);
  detail::put_bits(r, MSG_BYTES_LSB, 40, d.bytes);
  detail::put_bits(r, MSG_HOPS_LSB, 8, d.hops);
  detail::put_bits(r, MSG_ROUTE_LSB, 32, d.route);
  detail::put_bits(r, MSG_SRC_LSB, 24, d.src);
  detail::put_bits(r, MSG_DST_LSB, 24, d.dst);
  return r;
}
inline MsgDesc decode_msg(const Record& r) noexcept {
  MsgDesc d;
  d.ready_ps = detail::get_bits(r, MSG_READY_LSB, 64);
  d.id = detail::get_bits(r, MSG_ID_LSB, 64);
  d.bytes = detail::get_bits(r, MSG_BYTES_LSB, 40);
  d.hops = static_cast<uint32_t>(detail::get_bits(r, MSG_HOPS_LSB, 8));
  d.route = static_cast<uint32_t>(detail::get_bits(r, MSG_ROUTE_LSB, 32));
  d.src = static_cast<uint32_t>(detail::get_bits(r, MSG_SRC_LSB, 24));
  d.dst = static_cast<uint32_t>(detail::get_bits(r, MSG_DST_LSB, 24));
  return d;
}
inline Record encode(const Delivery& d) noexcept {
  Record r{};
  detail::put_bits(r, DLV_ID_LSB, 64, d.id);
  detail::put_bits(r, DLV_TIME_LSB, 64, d.time_ps);
  detail::put_bits(r, DLV_CYCLE_LSB, 64, d.arrival_cycle);
  detail::put_bits(r, DLV_PACKETS_LSB, 32, d.packets);
  return r;
}
inline Delivery decode_delivery(const Record& r) noexcept {
  Delivery d;
  d.id = detail::get_bits(r, DLV_ID_LSB, 64);
  d.time_ps = detail::get_bits(r, DLV_TIME_LSB, 64);
  d.arrival_cycle = detail::get_bits(r, DLV_CYCLE_LSB, 64);
  d.packets = static_cast<uint32_t>(detail::get_bits(r, DLV_PACKETS_LSB, 32));
  return d;
}

}  // namespace fabemu::hw::msg
