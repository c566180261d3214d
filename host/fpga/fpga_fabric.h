// FpgaFabric: PacketFabric (emulator/packet_fabric.h) with the link arithmetic of every packet-hop
// (departure, link_free, far-end arrival) done by the FPGA scheduler kernel through a SchedDevice (XRT
// board, Verilator hw-emu or C++ model). PacketFabric keeps the packets, the link FIFOs and the events,
// and batches the hops in its conservative windows (its HopBatcher seam); this file keeps only the
// device: a batch becomes one kernel run.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/packet_fabric.h"
#include "emulator/topology.h"
#include "host/fpga/sched_device.h"

namespace fabemu::host::fpga {

// The HopBatcher of a SchedDevice: the hops of a window are the descriptors of one kernel run (tag = the
// hop's place in the batch); the link table is loaded by the first run and kept by the kernel after.
class DeviceHopBatcher final : public emu::HopBatcher {
 public:
  // std::invalid_argument when there is no device or the topology has more links than its kernel holds.
  DeviceHopBatcher(const emu::Topology& topology, std::unique_ptr<SchedDevice> device);

  void add(uint32_t link, uint64_t enter_ps, uint32_t bytes) override;
  // One kernel run. std::runtime_error when the device fails or answers out of order.
  void answer(std::span<uint64_t> far_end_ps) override;

  SchedDevice& device() noexcept { return *device_; }
  uint64_t runs() const noexcept { return runs_; }
  uint64_t hops() const noexcept { return hops_; }
  uint64_t cycles() const noexcept { return cycles_; }

 private:
  std::unique_ptr<SchedDevice> device_;
  std::vector<LinkEntry> link_table_;
  bool links_loaded_ = false;
  std::vector<HopDesc> batch_;
  std::vector<Completion> completions_;
  std::size_t device_capacity_ = 0;  // descriptors the device buffers hold
  uint64_t runs_ = 0;
  uint64_t hops_ = 0;
  uint64_t cycles_ = 0;
};

class FpgaFabric final : public emu::Fabric {
 public:
  // Preconditions: mtu >= 1, topology.links().size() <= device->link_capacity() (std::invalid_argument
  // otherwise). `engine` must outlive the fabric.
  FpgaFabric(emu::Engine& engine, emu::Topology topology, uint32_t mtu, std::unique_ptr<SchedDevice> device);

  // Throws std::invalid_argument when src or dst is not an NPU of the topology or ready < now.
  void send(const emu::Message& m, emu::Time ready) override { packets_.send(m, ready); }
  using Fabric::send;
  emu::Engine& engine() override { return packets_.engine(); }
  void set_listener(emu::DeliveryListener* listener) override { packets_.set_listener(listener); }

  const emu::Topology& topology() const noexcept { return packets_.topology(); }
  uint64_t messages_delivered() const noexcept { return packets_.messages_delivered(); }
  // Bytes and packets that entered each link (PacketFabric's statistics, for the report).
  const emu::LinkStats& link_stats(emu::LinkId link) const noexcept { return packets_.link_stats(link); }
  // Device runs (batches) and packet-hops sent to the device so far, and their kernel cycles.
  uint64_t device_runs() const noexcept { return batcher_.runs(); }
  uint64_t device_hops() const noexcept { return batcher_.hops(); }
  uint64_t device_cycles() const noexcept { return batcher_.cycles(); }
  SchedDevice& device() noexcept { return batcher_.device(); }

 private:
  DeviceHopBatcher batcher_;
  emu::PacketFabric packets_;
};

// The factory the CLI uses for `--fabric fpga --device <spec> [--xclbin K.xclbin]`: opens the device
// (open_sched_device: "xrt:<n>", "hwemu", "model") and builds the fabric over it. `mtu` 0 means whole
// messages, as for PacketFabric. Throws what open_sched_device and the constructor throw.
std::unique_ptr<FpgaFabric> make_fpga_fabric(emu::Engine& engine, const emu::Topology& topology, uint32_t mtu,
                                             const std::string& device_spec, const std::string& xclbin = {});

}  // namespace fabemu::host::fpga
