// hw-emu of the card's whole hardware-in-the-loop path (issue 46 item 5; hw/sched/doc/sched_hil.md): the
// Verilated top sched_hil (the message-level core, its departure expander, the scaling of departures to
// transmit cycles, the 512-bit frame generator) -> the MAC (HilMac: 100 GbE) -> the stand-in device under
// test (HilDevice) -> the Verilated receive path sched_rx, all on one clock: the 322.265625 MHz transmit
// clock, whose cycle counter is the wall clock. Behind MsgSchedModel's interface (append_route, push,
// advance, known_until, take, counters), so FpgaMsgFabric drives it as a device.
//
// The real-time rule: emulated time t is transmit cycle c0 + ceil(t * D / period) (hil_tx_cycle), and the
// clock may only advance to the cycle of a time the host has handed every message ready before, less the
// lead: advance(W) lets the card process everything before W (the clock runs meanwhile, as on a board) and
// then runs the clock to hil_tx_cycle(W) - lead, no further. c0 = the first cycle + lead, so the card has
// `lead` cycles to turn a message ready at t into a frame at t's cycle; frames that miss it are late
// (counted). drain() ends the run: every departure released, every frame through the device and sched_rx.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hw/sched/include/fabemu_msg_map.h"
#include "hw/sched/include/fabemu_sched_map.h"
#include "rtl_models/hil_wire.h"
#include "rtl_models/msg_card_bench.h"

class Vsched_hil;
class Vsched_rx;
class VerilatedContext;

namespace fabemu::rtl {

class SchedHilHwEmu;
extern template class MsgCardBench<SchedHilHwEmu, Vsched_hil>;

class SchedHilHwEmu final : public MsgCardBench<SchedHilHwEmu, Vsched_hil> {
 public:
  // As SchedMsgHwEmu's constructor, and std::invalid_argument for an MTU above a frame's payload
  // (kHilMaxPayload), more than 1024 flows (npus^2) or a dilation out of range.
  SchedHilHwEmu(std::span<const hw::sched::LinkEntry> links, uint32_t mtu, const HilOptions& options);
  ~SchedHilHwEmu();
  SchedHilHwEmu(const SchedHilHwEmu&) = delete;
  SchedHilHwEmu& operator=(const SchedHilHwEmu&) = delete;

  // As SchedMsgHwEmu::push, and std::invalid_argument for a message of 2^32 packets or more (a frame's count).
  void push(const hw::msg::MsgDesc& d);
  // As SchedMsgHwEmu::advance (without waiting for the departures: they go out on their cycles), then the
  // real-time rule: the clock runs to hil_tx_cycle(w) - lead.
  void advance(uint64_t w);
  // The departures whose frames have left the MAC so far, decoded from the frames.
  std::size_t take_departures(std::vector<hw::msg::Departure>& out);

  // Ends the run (no push after it): releases every departure and clocks until every frame went through
  // the device and sched_rx; then reads sched_rx's counters, flows and histogram. Idempotent.
  const HilReport& drain();
  const std::vector<HilFrame>& frames() const noexcept { return frames_; }
  // The frames sched_rx accepted, as the device forwarded them (`first`: the receive side's cycle input,
  // the transmit cycle - c0; `sched` unused) (keep_frames).
  const std::vector<HilFrame>& received() const noexcept { return received_; }
  const std::vector<HilArrival>& arrivals() const noexcept { return arrivals_; }
  uint64_t cycle() const noexcept;
  uint64_t c0() const noexcept { return c0_; }
  uint64_t k_q48() const noexcept { return k_; }

 private:
  friend class MsgCardBench<SchedHilHwEmu, Vsched_hil>;
  Vsched_hil& top() { return *top_; }
  void tick();
  bool settled() const { return true; }
  void run_to(uint64_t cycle);
  void on_beat(uint64_t cycle);
  bool rx_step(const Beat* beat, uint64_t cycle);
  std::array<uint64_t, 6> rx_read(uint32_t space, uint32_t addr);
  void read_receive_side();

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vsched_hil> top_;
  std::unique_ptr<Vsched_rx> rx_;
  HilOptions opt_;
  uint64_t k_ = 0, c0_ = 0;
  uint32_t mtu_ = 0;
  std::vector<hw::msg::Departure> deps_;
  bool drained_ = false;
  HilMac mac_;
  HilDevice dev_;
  std::vector<uint8_t> cur_;       // the frame at the MAC
  uint64_t cur_first_ = 0;
  std::vector<HilFrame> frames_, received_;
  std::vector<uint8_t> rx_cur_;
  uint64_t rx_first_ = 0;
  std::vector<HilArrival> arrivals_;
  std::vector<uint64_t> sent_;     // frames sent per flow (src * npus + dst), counted at the MAC
  HilReport report_;
  // sched_rx's host port
  bool h_accepted_ = false, h_got_ = false;
  std::array<uint64_t, 6> h_rsp_{};
};

}  // namespace fabemu::rtl
