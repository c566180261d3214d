// hw-emu of the message-level card: the Verilated RTL core hw/sched/rtl/sched_msg.sv behind
// MsgSchedModel's interface (append_route, push, advance, known_until, take, counters), clocked cycle by
// cycle: route links and descriptors go in on their valid/ready streams (optionally with seeded random
// gaps), the watermark is a register write, delivery records come out on a valid/ready stream (optionally
// with seeded random back-pressure). Descriptors are checked as MsgSchedModel checks them (the same
// std::invalid_argument messages); what the card's tables cannot hold is a std::runtime_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "hw/sched/include/fabemu_msg_map.h"
#include "hw/sched/include/fabemu_sched_map.h"

class Vsched_msg;
class VerilatedContext;

namespace fabemu::rtl {

struct MsgHwEmuOptions {
  uint32_t in_stall_per_256 = 0;   // probability in 1/256 that an input stream shows no beat in a cycle
  uint32_t out_stall_per_256 = 0;  // ... that the record stream's ready is low in a cycle
  uint64_t seed = 1;
  uint32_t pool_slots = 0;         // packet pool entries the core may use (0: all 2^kPktAw)
};

class SchedMsgHwEmu {
 public:
  // The Verilated build's parameters (rtl_models/CMakeLists.txt).
  static constexpr unsigned kLinkAddrW = 10;
  static constexpr unsigned kRouteAw = 16;
  static constexpr unsigned kMsgAw = 12;
  static constexpr unsigned kPktAw = 14;

  struct LinkCounters {
    uint64_t bytes = 0;
    uint64_t packets = 0;
  };

  // As MsgSchedModel's constructor (the same std::invalid_argument), and std::invalid_argument for more
  // links than the core holds or an MTU wider than 32 bits cannot be (it is a uint32_t).
  SchedMsgHwEmu(std::span<const hw::sched::LinkEntry> links, uint32_t mtu, MsgHwEmuOptions options = {});
  ~SchedMsgHwEmu();
  SchedMsgHwEmu(const SchedMsgHwEmu&) = delete;
  SchedMsgHwEmu& operator=(const SchedMsgHwEmu&) = delete;

  void append_route(std::span<const uint32_t> link_ids);
  std::size_t route_size() const noexcept { return route_size_; }
  void push(const hw::msg::MsgDesc& d);
  // Streams in everything pending, writes the watermark, and clocks the core until it is idle (every event
  // before `w` processed, its bound up to date) with every record out. std::runtime_error if the packet
  // pool ran out (the core's sticky error; the records out before stay available to take()) or the message
  // table is full with nothing left to process below the watermark.
  void advance(uint64_t w);
  uint64_t known_until();
  std::size_t take(std::vector<hw::msg::Delivery>& out);
  LinkCounters link_counters(uint32_t link);
  uint64_t events();
  uint64_t packet_hops();
  uint64_t watermark() const noexcept { return watermark_; }
  bool pool_error() const;

  uint64_t cycles() const noexcept { return cycles_; }
  // Cycles the core spent with work to do (not idle) so far, and of those, computing its bound.
  uint64_t busy_cycles() const noexcept { return busy_cycles_; }
  uint64_t scan_cycles() const;

 private:
  void tick();
  void sync();  // all input in, core idle, every record out
  bool stall(uint32_t per_256);

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vsched_msg> top_;
  MsgHwEmuOptions opt_;
  std::mt19937_64 rng_;
  std::size_t links_ = 0;
  std::vector<uint64_t> latency_;
  std::size_t route_size_ = 0;
  std::deque<uint32_t> route_in_;
  std::deque<hw::msg::MsgDesc> desc_in_;
  std::vector<hw::msg::Delivery> out_;
  uint64_t watermark_ = 0;
  bool wm_pending_ = false;
  uint64_t cycles_ = 0;
  uint64_t busy_cycles_ = 0;
};

}  // namespace fabemu::rtl
