// FpgaMsgFabric: the fabric whose packet model runs on the card, behind the message-level interface
// (`--fabric fpga --fpga-interface messages`; hw/sched/doc/msg_interface.md). The host hands the card one
// descriptor per message (and each route once) and takes back one delivery record per message; the
// packets, their hops, the link FIFOs and their events are the card's. The walker's engine keeps running
// while the card works: the two are kept consistent by conservative synchronisation on watermarks, not by
// kernel runs. The host promises a watermark W (every message ready before W is pushed) and the card
// answers a bound K (every delivery of the messages it holds that happens before K has been recorded); the
// host runs its events below min(K, the earliest delivery of a message it has not pushed yet) and syncs again
// one picosecond before that, only while a delivery is unknown. W is the earliest of the host's next event and
// the earliest delivery still unknown, so a sync never lets the card pass a time the host could still
// send at.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/packet_fabric.h"
#include "emulator/slot_pool.h"
#include "emulator/topology.h"
#include "host/fpga/msg_device.h"

namespace fabemu::host::fpga {

class FpgaMsgFabric final : public emu::Fabric, private emu::EventTarget {
 public:
  // Loads the link table and the MTU into `device`. std::invalid_argument for mtu 0, no device, a
  // topology without links or with a link of latency 0 (the card's lookahead), or more ranks than the
  // descriptor holds. `engine` must outlive the fabric.
  FpgaMsgFabric(emu::Engine& engine, emu::Topology topology, uint32_t mtu, std::unique_ptr<MsgSchedDevice> device);

  // std::invalid_argument when src or dst is not an NPU of the topology, ready < now, or the message does
  // not fit a descriptor (bytes >= 2^40, a route longer than 255 links), naming the message.
  void send(const emu::Message& m, emu::Time ready) override;
  using Fabric::send;
  emu::Engine& engine() override { return engine_; }
  void set_listener(emu::DeliveryListener* listener) override { listener_ = listener; }

  // After the run: ends the wire's run when the card has one (MsgSchedDevice::finish_wire) and reads the
  // card's per-link counters (link_stats).
  void finish();
  // What the wire measured (hardware in the loop), after finish(); nullptr without a wire.
  const rtl::HilReport* wire() const noexcept { return wire_; }
  // Measured vs modelled per collective on the wire (the DPDK fabric's contract, docs/report.md), emulated
  // ps: `modelled` from the earliest ready time of one of its wire messages (src != dst) to the latest
  // modelled delivery; `measured` from that ready time (the host hands messages to the card ahead of the
  // wire, so a message is never handed over late) to the latest arrival at the card's receive path of the
  // last frame of one of its messages (rx time of the cycle: the MAC and the stand-in device instead of the
  // modelled route); deviation = measured / modelled - 1; `late_start` the most one of its messages' first
  // frame left the MAC after its scheduled cycle. `arrived`: messages whose every frame arrived (a message
  // with a dropped frame has no arrival record, and is not measured).
  struct WireCollective {
    uint32_t coll = 0;  // position in RunResult::collectives
    uint64_t messages = 0, arrived = 0, bytes = 0;
    uint64_t modelled_ps = 0, measured_ps = 0, late_start_ps = 0;
    double deviation = 0;
  };
  // Keeps per wire message what wire_collectives() needs (make_fpga_hil_fabric: `ps_per_cycle_q32` is the
  // receive path's, hil_ps_per_cycle_q32). Before the first send. The card's message ids are then the
  // messages' positions in the order they were pushed (0, 1, 2, ...), not the walker's ids, which the walker
  // reuses once a message is delivered: on the wire a message is told from the next by its id (the receive
  // path's arrival records, sched_rx.md), so ids must not repeat along a flow; the deliveries go to the
  // listener with the walker's ids.
  void track_wire(uint64_t ps_per_cycle_q32) noexcept {
    track_ = true;
    q32_ = ps_per_cycle_q32;
  }
  // After finish(), with a wire and track_wire: the collectives with wire messages, by index.
  const std::vector<WireCollective>& wire_collectives() const noexcept { return wire_colls_; }
  const emu::Topology& topology() const noexcept { return topology_; }
  const emu::LinkStats& link_stats(emu::LinkId link) const noexcept { return stats_[link]; }
  uint64_t messages_delivered() const noexcept { return delivered_; }
  uint64_t messages_pushed() const noexcept { return pushed_; }
  uint64_t routes_loaded() const noexcept { return routes_; }
  uint64_t syncs() const noexcept { return syncs_; }
  MsgSchedDevice& device() noexcept { return *device_; }

 private:
  static constexpr uint64_t kNever = ~uint64_t{0};
  static constexpr uint64_t kSyncBit = uint64_t{1} << 63;     // | generation: a sync (stale ones are skipped)
  static constexpr uint64_t kLoopbackBit = uint64_t{1} << 62; // | slot: a src == dst message becomes ready
  // arg: kSyncBit | generation, kLoopbackBit | slot, or a slot of a delivery (or a loopback delivered).
  void on_event(uint64_t arg) override;
  void sync();
  void arm_sync(uint64_t bound);
  // The offset of `route` in the card's route array, staging it on first use.
  uint32_t route_offset(std::span<const emu::LinkId> route);

  emu::Engine& engine_;
  emu::Topology topology_;
  std::unique_ptr<MsgSchedDevice> device_;
  emu::DeliveryListener* listener_ = nullptr;
  std::vector<emu::LinkStats> stats_;
  std::vector<emu::LinkId> route_buf_;
  std::vector<uint64_t> route_latency_;          // per link
  // Routes the card holds: hash of the link ids -> (offset, links) with that hash; the card's array mirrored.
  std::unordered_multimap<uint64_t, std::pair<uint32_t, uint32_t>> route_index_;
  std::vector<uint32_t> route_array_;
  std::vector<uint32_t> staged_route_;           // appended at the next sync, before the descriptors
  std::vector<hw::msg::MsgDesc> staged_;
  std::vector<hw::msg::Delivery> records_;
  emu::SlotPool<uint64_t> pending_;              // message ids of scheduled deliveries and parked loopbacks
  uint64_t bound_ = kNever;     // every delivery before this is known (kNever: nothing is in flight)
  uint64_t armed_at_ = kNever;  // time of the live sync event
  uint64_t generation_ = 0;
  uint64_t delivered_ = 0, pushed_ = 0, routes_ = 0, syncs_ = 0;
  const rtl::HilReport* wire_ = nullptr;
  // track_wire: each wire message by its card id (the walker's id, its collective, ready time, bytes and
  // modelled delivery).
  struct WireMsg {
    uint64_t id;
    uint32_t coll;
    uint64_t ready_ps, bytes, delivered_ps;
  };
  void collect_wire_collectives();
  bool track_ = false;
  uint64_t q32_ = 0;
  std::vector<WireMsg> wire_msgs_;
  std::vector<WireCollective> wire_colls_;
};

// `--fabric fpga --fpga-interface messages --device <spec>`: open_msg_device(spec) and the fabric over it.
// `mtu` 0 means whole messages, as for PacketFabric.
std::unique_ptr<FpgaMsgFabric> make_fpga_msg_fabric(emu::Engine& engine, const emu::Topology& topology, uint32_t mtu,
                                                    const std::string& device_spec);
// `--fabric fpga --dilation D --device <spec>`: the card with its wire (hardware in the loop); `hil.npus`
// is set from the topology.
std::unique_ptr<FpgaMsgFabric> make_fpga_hil_fabric(emu::Engine& engine, const emu::Topology& topology, uint32_t mtu,
                                                    const std::string& device_spec, rtl::HilOptions hil);

}  // namespace fabemu::host::fpga
