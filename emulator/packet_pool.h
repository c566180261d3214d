// The slot pools of the packet-level fabrics (PacketFabric, and FpgaFabric which runs the same contract
// on the FPGA kernel): packets in flight, messages in flight with their routes, and messages waiting for
// their ready time. Free slots are threaded into free lists and never returned, so once a run reaches
// its high-water mark nothing is allocated per message or packet.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulator/fabric.h"
#include "emulator/topology.h"

namespace fabemu::emu {

class PacketPools {
 public:
  static constexpr uint32_t kNone = ~uint32_t{0};
  struct Packet {
    uint64_t far_end_ps;  // when it reaches the far end of the link it is on
    uint32_t msg;         // its message's slot
    uint32_t next;        // next packet on the same link FIFO, or next free packet
    uint32_t bytes;
    uint32_t hop;         // index into the message's route of the link it is on
  };
  struct MessageState {
    uint64_t id;
    uint64_t packets_left;  // packets not yet at dst; on the free list, the next free slot
    uint32_t route_begin;   // offset of its route in the route table (route_capacity() entries per slot)
    uint32_t hops;
  };

  // `owner` names the fabric in the errors thrown when a pool would outgrow its 32-bit slot numbers;
  // `max_hops` is the topology's longest route.
  PacketPools(const char* owner, std::size_t max_hops) : owner_(owner), per_slot_(std::max<std::size_t>(1, max_hops)) {}

  uint32_t new_packet() {
    if (free_packet_ != kNone) {
      const uint32_t p = free_packet_;
      free_packet_ = packets_[p].next;
      return p;
    }
    if (packets_.size() >= kNone) throw std::length_error(std::string(owner_) + ": more than 2^32 packets in flight");
    packets_.emplace_back();
    return static_cast<uint32_t>(packets_.size() - 1);
  }
  void free_packet(uint32_t p) noexcept {
    packets_[p].next = free_packet_;
    free_packet_ = p;
  }

  uint32_t new_message() {
    if (free_msg_ != kNone) {
      const uint32_t s = free_msg_;
      free_msg_ = static_cast<uint32_t>(msgs_[s].packets_left);
      return s;
    }
    if (msgs_.size() >= kNone || (msgs_.size() + 1) * per_slot_ > kNone) {
      throw std::length_error(std::string(owner_) + ": too many messages in flight");
    }
    msgs_.push_back(MessageState{0, 0, static_cast<uint32_t>(msgs_.size() * per_slot_), 0});
    routes_.resize(msgs_.size() * per_slot_);
    return static_cast<uint32_t>(msgs_.size() - 1);
  }
  void free_message(uint32_t s) noexcept {
    msgs_[s].packets_left = free_msg_;
    free_msg_ = s;
  }

  Packet& packet(uint32_t p) noexcept { return packets_[p]; }
  MessageState& message(uint32_t s) noexcept { return msgs_[s]; }
  // Message slot s's route storage (route_capacity() entries), for Topology::route to fill.
  std::span<LinkId> route_storage(uint32_t s) noexcept {
    return std::span<LinkId>(routes_).subspan(msgs_[s].route_begin, per_slot_);
  }
  // The link of hop `hop` of message m's route.
  LinkId link_of(const MessageState& m, uint32_t hop) const noexcept { return routes_[m.route_begin + hop]; }
  std::size_t route_capacity() const noexcept { return per_slot_; }

  // Packet p has reached the far end of the link it is on. When its route goes on, it advances to the next
  // hop and `next_link` is that hop's link; at its destination it is recycled (next_link == kNone), and
  // with its message's last packet the message too (`delivered`, with the message's id).
  struct Arrival {
    uint32_t next_link;
    bool delivered;
    uint64_t id;
  };
  Arrival arrive(uint32_t p) noexcept {
    Packet& pkt = packets_[p];
    const uint32_t s = pkt.msg;
    MessageState& msg = msgs_[s];
    if (pkt.hop + 1 < msg.hops) {
      ++pkt.hop;
      return {link_of(msg, pkt.hop), false, 0};
    }
    free_packet(p);
    if (--msg.packets_left > 0) return {kNone, false, 0};
    const uint64_t id = msg.id;
    free_message(s);
    return {kNone, true, id};
  }

  // A message sent with a later ready time waits in a slot until its injection event.
  uint64_t park(const Message& m) {
    uint64_t slot = free_waiting_;
    if (slot != ~uint64_t{0}) {
      free_waiting_ = waiting_[slot].id;
      waiting_[slot] = m;
    } else {
      slot = waiting_.size();
      waiting_.push_back(m);
    }
    return slot;
  }
  Message unpark(uint64_t slot) noexcept {
    const Message m = waiting_[slot];
    waiting_[slot].id = free_waiting_;
    free_waiting_ = slot;
    return m;
  }

  // Packets allocated so far (the pool's high-water mark): it stops growing in steady state.
  std::size_t packet_pool_size() const noexcept { return packets_.size(); }

 private:
  const char* owner_;
  std::size_t per_slot_;
  std::vector<Packet> packets_;
  uint32_t free_packet_ = kNone;
  std::vector<MessageState> msgs_;
  std::vector<LinkId> routes_;
  uint32_t free_msg_ = kNone;
  std::vector<Message> waiting_;  // a free slot's id is the next free slot
  uint64_t free_waiting_ = ~uint64_t{0};
};

}  // namespace fabemu::emu
