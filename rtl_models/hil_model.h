// The C++ model of the card's whole hardware-in-the-loop path (issue 46 item 5, `--device model`;
// hw/sched/doc/sched_hil.md), the reference of SchedHilHwEmu: MsgSchedModel's departures, each scaled to its
// transmit cycle (hil_tx_cycle), numbered along its flow (HilFlowSeq, the IPv4 id), encoded as sched_fg
// builds it (hil_frame_spec) and put on the stream as sched_fg's timing contract says (first beat at the
// later of its cycle and the cycle after the previous frame's last beat, then when the MAC takes it; one beat
// a cycle), through the same HilMac and HilDevice, into the receive path's model (RxModel, by flow sequence).
// No cycle is stepped: a frame's beats are placed when its departure is released, the device's beats leave
// at max(earliest, the previous one's cycle + 1) (sched_rx always ready). Emulated time 0 is cycle c0 =
// lead (the clock starts at 0); the hw-emu's c0 is later (its resets), its cycles relative to c0 the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hw/sched/include/fabemu_msg_map.h"
#include "hw/sched/include/fabemu_sched_map.h"
#include "rtl_models/hil_wire.h"
#include "rtl_models/msg_sched_model.h"
#include "rtl_models/rx_model.h"

namespace fabemu::rtl {

// The wire: departures in release order in, frames, arrivals and the report out.
class HilWireModel {
 public:
  // std::invalid_argument for more than 1024 flows (npus^2, as the receive path's table) or a dilation out of
  // range.
  explicit HilWireModel(const HilOptions& options);

  // A departure released by the card (release order: MsgSchedModel::take_departures').
  void depart(const hw::msg::Departure& d);
  // Ends the run: every frame through the device and the receive path; the report. Idempotent.
  const HilReport& drain();

  const std::vector<HilFrame>& frames() const noexcept { return frames_; }
  const std::vector<HilFrame>& received() const noexcept { return received_; }
  const std::vector<HilArrival>& arrivals() const noexcept { return arrivals_; }
  uint64_t c0() const noexcept { return c0_; }
  uint64_t k_q48() const noexcept { return k_; }

 private:
  // Every beat the device lets go before `cycle` into the receive path.
  void deliver_before(uint64_t cycle);

  HilOptions opt_;
  uint64_t k_ = 0, c0_ = 0;
  HilMac mac_;
  HilDevice dev_;
  RxModel rx_;
  HilFlowSeq fseq_;
  std::vector<uint64_t> sent_;
  uint64_t next_start_ = 0;        // the stream is free from this cycle (the previous frame's last beat + 1)
  uint64_t rx_next_ = 0;           // the receive path takes its next beat from this cycle
  std::vector<uint8_t> buf_, rx_cur_;
  uint64_t rx_first_ = 0;
  std::size_t records_seen_ = 0;
  bool drained_ = false;
  std::vector<HilFrame> frames_, received_;
  std::vector<HilArrival> arrivals_;
  HilReport report_;
};

// The card with its wire behind MsgSchedModel's interface (append_route, push, advance, known_until, take,
// counters), as SchedHilHwEmu: FpgaMsgFabric drives it as a device (`--device model --dilation D`).
class HilModelCard {
 public:
  // As MsgSchedModel's and HilWireModel's constructors, and std::invalid_argument for an MTU above a frame's
  // payload (kHilMaxPayload).
  HilModelCard(std::span<const hw::sched::LinkEntry> links, uint32_t mtu, const HilOptions& options);

  void append_route(std::span<const uint32_t> link_ids) { card_.append_route(link_ids); }
  // As MsgSchedModel::push, and std::invalid_argument for a message of 2^32 packets or more (a frame's count).
  void push(const hw::msg::MsgDesc& d);
  // MsgSchedModel::advance; the departures it released go on the wire.
  void advance(uint64_t w);
  uint64_t known_until() const noexcept { return card_.known_until(); }
  std::size_t take(std::vector<hw::msg::Delivery>& out) { return card_.take(out); }
  // The departures put on the wire so far (as SchedHilHwEmu's, decoded from the frames there).
  std::size_t take_departures(std::vector<hw::msg::Departure>& out);
  const MsgSchedModel::LinkCounters& link_counters(uint32_t link) const noexcept { return card_.link_counters(link); }
  uint64_t events() const noexcept { return card_.events(); }
  uint64_t packet_hops() const noexcept { return card_.packet_hops(); }
  // Ends the run: every departure released and through the wire. Idempotent.
  const HilReport& drain();
  // As SchedHilHwEmu's (keep_frames): the frames at the MAC, as the receive path took them, its records.
  const std::vector<HilFrame>& frames() const noexcept { return wire_.frames(); }
  const std::vector<HilFrame>& received() const noexcept { return wire_.received(); }
  const std::vector<HilArrival>& arrivals() const noexcept { return wire_.arrivals(); }
  uint64_t c0() const noexcept { return wire_.c0(); }
  uint64_t k_q48() const noexcept { return wire_.k_q48(); }

 private:
  void to_wire();

  MsgSchedModel card_;
  HilWireModel wire_;
  uint32_t mtu_;
  std::vector<hw::msg::Departure> released_, deps_;
};

}  // namespace fabemu::rtl
