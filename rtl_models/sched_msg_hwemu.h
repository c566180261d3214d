// hw-emu of the message-level card: the Verilated RTL core hw/sched/rtl/sched_msg.sv with its departure
// expander (sched_msg_tx) behind MsgSchedModel's interface (append_route, push, advance, known_until, take,
// take_departures, counters), clocked cycle by cycle (msg_card_bench.h): optionally with seeded random gaps
// on the input streams and seeded random back-pressure on the record and departure streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "hw/sched/include/fabemu_msg_map.h"
#include "hw/sched/include/fabemu_sched_map.h"
#include "rtl_models/msg_card_bench.h"

class Vsched_msg_tx;
class VerilatedContext;

namespace fabemu::rtl {

struct MsgHwEmuOptions {
  uint32_t in_stall_per_256 = 0;   // probability in 1/256 that an input stream shows no beat in a cycle
  uint32_t out_stall_per_256 = 0;  // ... that the record and departure streams' ready is low in a cycle
  uint64_t seed = 1;
  uint32_t pool_slots = 0;         // packet pool entries the core may use (0: all 2^kPktAw)
};

class SchedMsgHwEmu;
extern template class MsgCardBench<SchedMsgHwEmu, Vsched_msg_tx>;

class SchedMsgHwEmu final : public MsgCardBench<SchedMsgHwEmu, Vsched_msg_tx> {
 public:
  // As MsgSchedModel's constructor (the same std::invalid_argument), and std::invalid_argument for more
  // links than the core holds.
  SchedMsgHwEmu(std::span<const hw::sched::LinkEntry> links, uint32_t mtu, MsgHwEmuOptions options = {});
  ~SchedMsgHwEmu();
  SchedMsgHwEmu(const SchedMsgHwEmu&) = delete;
  SchedMsgHwEmu& operator=(const SchedMsgHwEmu&) = delete;

  // Streams in everything pending, writes the watermark, and clocks the core until it is idle (every event
  // before `w` processed, its bound up to date) with every record and every departure below `w` out.
  // std::runtime_error if the packet pool ran out (the core's sticky error; the records out before stay
  // available to take()) or the message table is full with nothing left to process below the watermark.
  void advance(uint64_t w);
  // The departures (sched_msg_dep's stream) out so far, as MsgSchedModel::take_departures.
  std::size_t take_departures(std::vector<PacketDeparture>& out);
  uint64_t runs();
  bool pool_error() const;

  uint64_t cycles() const noexcept { return cycles_; }
  // Cycles the core spent with work to do (not idle) so far, and of those, computing its bound.
  uint64_t busy_cycles() const noexcept { return busy_cycles_; }
  uint64_t scan_cycles() const;

 private:
  friend class MsgCardBench<SchedMsgHwEmu, Vsched_msg_tx>;
  Vsched_msg_tx& top() { return *top_; }
  void tick();
  bool settled() const;  // the departure expander has nothing left below the watermark
  bool stall(uint32_t per_256);

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vsched_msg_tx> top_;
  MsgHwEmuOptions opt_;
  std::mt19937_64 rng_;
  std::vector<PacketDeparture> deps_;
  uint64_t cycles_ = 0;
  uint64_t busy_cycles_ = 0;
};

}  // namespace fabemu::rtl
