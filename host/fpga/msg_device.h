// The host's view of the message-level FPGA scheduler (hw/sched/doc/msg_interface.md): streams, not
// kernel runs. The host loads the link table once, appends each route the first time a message takes it,
// pushes message descriptors into the card's queue, rings a doorbell with its watermark, and polls the
// card's delivery records and known-until bound. Every byte and transfer that crosses the host-card
// boundary is counted (MsgTraffic), so that the hop-level and message-level interfaces can be compared.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hw/sched/include/fabemu_msg_map.h"
#include "hw/sched/include/fabemu_sched_map.h"
#include "rtl_models/hil_wire.h"

namespace fabemu::host::fpga {

// Host-card traffic: bytes each way and transfers (one DMA burst or one register access each).
struct MsgTraffic {
  uint64_t bytes_to_card = 0;
  uint64_t bytes_from_card = 0;
  uint64_t transfers = 0;
  uint64_t doorbells = 0;  // watermark writes (posted: the host does not wait for them)
  uint64_t polls = 0;      // reads of the card's status (known-until bound and record count)
};

struct LinkCount {
  uint64_t bytes = 0;
  uint64_t packets = 0;
};

class MsgSchedDevice {
 public:
  MsgSchedDevice() = default;
  MsgSchedDevice(const MsgSchedDevice&) = delete;
  MsgSchedDevice& operator=(const MsgSchedDevice&) = delete;
  virtual ~MsgSchedDevice() = default;

  virtual std::string describe() const = 0;
  // Once, before anything else: the link table and the MTU.
  virtual void load(std::span<const hw::sched::LinkEntry> links, uint32_t mtu) = 0;
  // Route records: link ids appended to the card's route array.
  virtual void append_route(std::span<const uint32_t> link_ids) = 0;
  // Descriptors into the card's queue, in order (one DMA burst).
  virtual void push(std::span<const hw::msg::MsgDesc> msgs) = 0;
  // The doorbell: every message with ready time below `watermark` has been pushed.
  virtual void doorbell(uint64_t watermark) = 0;
  // The card's status and the delivery records it has written since the last poll (appended to `out`);
  // returns the card's known-until bound: every delivery before it is in `out` or was in an earlier one.
  virtual uint64_t poll(std::vector<hw::msg::Delivery>& out) = 0;
  // Per link, the bytes and packets the card has put on it (read once, at the end of a run: 16 bytes a link).
  virtual std::vector<LinkCount> read_link_counters() = 0;
  // The packets the card has put on the wire (each leaving its first link), in release order, since the last
  // call (appended to `out`; issue 46 item 5). Card-internal: not counted as host-card traffic.
  virtual std::size_t take_departures(std::vector<hw::msg::Departure>& out) = 0;
  // A card with a wire (hardware in the loop, sched_hil.md): ends the run (every frame sent and received)
  // and returns what the wire measured; nullptr for a card without one.
  virtual const rtl::HilReport* finish_wire() { return nullptr; }
  // Card-side counters: events processed and packet-hops scheduled.
  virtual uint64_t card_events() = 0;
  virtual uint64_t card_packet_hops() = 0;

  const MsgTraffic& traffic() const noexcept { return traffic_; }

 protected:
  MsgTraffic traffic_;
};

// "model": the card's C++ reference (rtl_models/msg_sched_model.h) behind this interface; the counted
// traffic is what the protocol would move. "hwemu" (builds with Verilator): the RTL core sched_msg,
// Verilated and clocked (rtl_models/sched_msg_hwemu.h), with the same traffic counted. "xrt:N" (and
// "hwemu" without Verilator): std::runtime_error (--fpga-interface hops runs them).
std::unique_ptr<MsgSchedDevice> open_msg_device(const std::string& spec);
// With `hil`: the card with its wire, hardware in the loop (`--fabric fpga --dilation D`): "hwemu" is
// sched_hil and sched_rx under Verilator with the C++ MAC and device (rtl_models/sched_hil_hwemu.h);
// "model", "xrt:N" and "hwemu" without Verilator: std::runtime_error naming what to use.
std::unique_ptr<MsgSchedDevice> open_msg_device(const std::string& spec, const rtl::HilOptions& hil);

}  // namespace fabemu::host::fpga
