// FpgaFabric: the packet-level fabric of PacketFabric with the link arithmetic (departure, link_free,
// far-end arrival of every packet-hop) done by the FPGA scheduler kernel through a SchedDevice
// (XRT board, Verilator hw-emu or C++ model). The host keeps the events; the device does every hop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/packet_fabric.h"
#include "emulator/topology.h"
#include "host/fpga/sched_device.h"

namespace fabemu::host::fpga {

// Conservative windows: a packet entering a link at t reaches its far end no earlier than
// t + latency >= t + L (L = the smallest link latency), so every hop that enters during
// [t0, t0 + L) can go to the device as one batch, answered before the engine reaches t0 + L: the
// batch is flushed by an event at t0 + L - 1. With L = 0 each hop is a batch of its own.
//
// Event order: the link events PacketFabric would schedule when a packet enters an idle link are
// scheduled at the flush instead, in the same order among themselves, so runs whose sends are all
// known up front (or made from delivery callbacks) reproduce PacketFabric exactly. What can differ is
// the order at one picosecond between such a link event and an event another component scheduled
// during the same window; hw/README.md ("FpgaFabric") says when that matters.
class FpgaFabric final : public emu::Fabric, private emu::EventTarget {
 public:
  // Preconditions: mtu >= 1, topology.links().size() <= device->link_capacity() (std::invalid_argument
  // otherwise). `engine` must outlive the fabric.
  FpgaFabric(emu::Engine& engine, emu::Topology topology, uint32_t mtu, std::unique_ptr<SchedDevice> device);

  // Throws std::invalid_argument when src or dst is not an NPU of the topology or ready < now.
  void send(const emu::Message& m, emu::Time ready) override;
  using Fabric::send;
  emu::Engine& engine() override { return engine_; }
  void set_listener(emu::DeliveryListener* listener) override { listener_ = listener; }

  const emu::Topology& topology() const noexcept { return topology_; }
  uint64_t messages_delivered() const noexcept { return delivered_; }
  // Bytes and packets that entered each link (PacketFabric's statistics, for the report).
  const emu::LinkStats& link_stats(emu::LinkId link) const noexcept { return stats_[link]; }
  // Device runs (batches) and packet-hops sent to the device so far, and their kernel cycles.
  uint64_t device_runs() const noexcept { return runs_; }
  uint64_t device_hops() const noexcept { return hops_; }
  uint64_t device_cycles() const noexcept { return cycles_; }
  SchedDevice& device() noexcept { return *device_; }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  static constexpr uint64_t kInjectBit = uint64_t{1} << 63;
  static constexpr uint64_t kFlush = kInjectBit - 1;
  using Pools = emu::PacketPools;  // Packet::far_end_ps is kUnknown until its hop is answered
  struct LinkFifo {
    uint32_t head = kNone;
    uint32_t tail = kNone;
  };

  void on_event(uint64_t arg) override;
  void inject(const emu::Message& m);
  void enter(uint32_t link, uint32_t p);
  // Schedules link l's head event now if its time is known and cannot tie with a deferred one, else
  // queues it for the flush.
  void schedule_head(uint32_t l);
  void flush();

  emu::Engine& engine_;
  emu::Topology topology_;
  uint32_t mtu_;
  std::unique_ptr<SchedDevice> device_;
  emu::DeliveryListener* listener_ = nullptr;
  uint64_t lookahead_ps_ = 0;
  uint32_t loopback_;  // index of the zero-time pseudo link of src == dst messages
  std::vector<LinkFifo> links_;
  std::vector<emu::LinkStats> stats_;
  std::vector<LinkEntry> link_table_;
  bool links_loaded_ = false;
  Pools pools_;
  // The open batch: hops sent to the device at the next flush (tag = packet), their packets, and the
  // links whose head events wait for it, in PacketFabric's scheduling order.
  std::vector<HopDesc> batch_;
  std::vector<uint32_t> batch_packets_;
  std::vector<uint32_t> deferred_heads_;
  std::vector<Completion> answers_;
  uint64_t floor_ps_ = ~uint64_t{0};  // no deferred event can come before this time
  std::size_t device_capacity_ = 0;
  uint64_t delivered_ = 0;
  uint64_t runs_ = 0;
  uint64_t hops_ = 0;
  uint64_t cycles_ = 0;
};

// The factory the CLI uses for `--fabric fpga --device <spec> [--xclbin K.xclbin]`: opens the device
// (open_sched_device: "xrt:<n>", "hwemu", "model") and builds the fabric over it. `mtu` 0 means whole
// messages, as for PacketFabric. Throws what open_sched_device and the constructor throw.
std::unique_ptr<FpgaFabric> make_fpga_fabric(emu::Engine& engine, const emu::Topology& topology, uint32_t mtu,
                                             const std::string& device_spec, const std::string& xclbin = {});

}  // namespace fabemu::host::fpga
