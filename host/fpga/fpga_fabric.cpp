#include "host/fpga/fpga_fabric.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace fabemu::host::fpga {

namespace {

// The MTU is checked first, as PacketFabric would, before the device is.
const emu::Topology& with_mtu_checked(const emu::Topology& topology, uint32_t mtu) {
  if (mtu == 0) throw std::invalid_argument("FpgaFabric: the MTU must be at least 1 byte");
  return topology;
}

}  // namespace

DeviceHopBatcher::DeviceHopBatcher(const emu::Topology& topology, std::unique_ptr<SchedDevice> device)
    : device_(std::move(device)) {
  if (!device_) throw std::invalid_argument("FpgaFabric: no device");
  const auto& links = topology.links();
  if (links.size() > device_->link_capacity()) {
    throw std::invalid_argument("FpgaFabric: the topology has " + std::to_string(links.size()) +
                                " links, but the kernel of " + device_->describe() + " holds " +
                                std::to_string(device_->link_capacity()) + " (rebuild it with a larger LINK_ADDR_W)");
  }
  for (const emu::Link& l : links) link_table_.push_back(LinkEntry{l.rate.ps_per_byte_q32(), l.latency.ps(), 0});
}

void DeviceHopBatcher::add(uint32_t link, uint64_t enter_ps, uint32_t bytes) {
  batch_.push_back(HopDesc{enter_ps, bytes, link, batch_.size()});
}

void DeviceHopBatcher::answer(std::span<uint64_t> far_end_ps) {
  const std::size_t n = batch_.size();
  if (far_end_ps.size() != n) throw std::logic_error("DeviceHopBatcher: answers asked for a batch of another size");
  if (n > device_capacity_) {
    device_capacity_ = std::max(n, 2 * device_capacity_);
    device_->allocate(link_table_.size(), device_capacity_);
    if (!links_loaded_) device_->write_links(link_table_);
  }
  device_->write_descriptors(batch_);
  device_->start(links_loaded_ ? 0 : static_cast<uint32_t>(link_table_.size()), static_cast<uint32_t>(n));
  device_->wait();
  links_loaded_ = true;
  completions_.resize(n);
  device_->read_completions(completions_);
  for (std::size_t i = 0; i < n; ++i) {
    if (completions_[i].tag != i || completions_[i].link != batch_[i].link) {
      throw std::runtime_error("FpgaFabric: " + device_->describe() + " answered hop " + std::to_string(i) +
                               " with the completion of hop " + std::to_string(completions_[i].tag));
    }
    far_end_ps[i] = completions_[i].arrive_ps;
  }
  ++runs_;
  hops_ += n;
  cycles_ += device_->last_run_cycles();
  batch_.clear();
}

FpgaFabric::FpgaFabric(emu::Engine& engine, emu::Topology topology, uint32_t mtu, std::unique_ptr<SchedDevice> device)
    : batcher_(with_mtu_checked(topology, mtu), std::move(device)),
      packets_(engine, std::move(topology), mtu, &batcher_, "FpgaFabric") {}

std::unique_ptr<FpgaFabric> make_fpga_fabric(emu::Engine& engine, const emu::Topology& topology, uint32_t mtu,
                                             const std::string& device_spec, const std::string& xclbin) {
  return std::make_unique<FpgaFabric>(engine, topology, mtu == 0 ? ~uint32_t{0} : mtu,
                                      open_sched_device(device_spec, xclbin));
}

}  // namespace fabemu::host::fpga
