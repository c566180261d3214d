#include "rtl_models/sched_kernel_model.h"

#include <algorithm>
#include <stdexcept>

namespace fabemu::rtl {

namespace hs = hw::sched;

SchedKernelModel::SchedKernelModel(DeviceMemory& memory, unsigned link_addr_w) : mem_(memory) {
  if (link_addr_w < 1 || link_addr_w > 16) throw std::invalid_argument("SchedKernelModel: link_addr_w must be 1..16");
  links_.resize(std::size_t{1} << link_addr_w);
}

void SchedKernelModel::write_reg(uint32_t offset, uint32_t value) {
  if (offset % 4 != 0 || offset / 4 >= regs_.size()) return;  // as the RTL: ignored
  if (offset == hs::REG_CTRL) {
    if ((value >> hs::CTRL_AP_START) & 1) run();
    return;
  }
  regs_[offset / 4] = value;
}

uint32_t SchedKernelModel::read_reg(uint32_t offset) {
  switch (offset) {
    case hs::REG_CTRL: {
      const uint32_t v = (uint32_t{done_} << hs::CTRL_AP_DONE) | (1u << hs::CTRL_AP_IDLE) |
                         (uint32_t{done_} << hs::CTRL_AP_READY);
      done_ = false;
      return v;
    }
    case hs::REG_CYCLES_LO: return static_cast<uint32_t>(cycles_);
    case hs::REG_CYCLES_HI: return static_cast<uint32_t>(cycles_ >> 32);
    case hs::REG_LINK_CAP: return link_capacity();
    case hs::REG_VERSION: return hs::MAP_VERSION;
    case hs::REG_STATUS: return 0;  // device memory of the model never fails
    default: return (offset % 4 == 0 && offset / 4 < regs_.size()) ? regs_[offset / 4] : 0;
  }
}

void SchedKernelModel::wait_done() {
  if (((read_reg(hs::REG_CTRL) >> hs::CTRL_AP_DONE) & 1) == 0) {
    throw std::logic_error("SchedKernelModel::wait_done: no run was started");
  }
}

void SchedKernelModel::run() {
  const auto reg64 = [&](uint32_t lo) { return uint64_t{regs_[lo / 4]} | uint64_t{regs_[lo / 4 + 1]} << 32; };
  const uint64_t links_addr = reg64(hs::REG_LINKS_ADDR_LO);
  const uint64_t desc_addr = reg64(hs::REG_DESC_ADDR_LO);
  const uint64_t cmpl_addr = reg64(hs::REG_CMPL_ADDR_LO);
  const uint32_t num_links = regs_[hs::REG_NUM_LINKS / 4];
  const uint32_t num_desc = regs_[hs::REG_NUM_DESC / 4];
  const uint64_t mask = links_.size() - 1;

  hs::Record r;
  for (uint32_t i = 0; i < num_links; ++i) {
    mem_.read(links_addr + uint64_t{i} * hs::RECORD_BYTES, r.data(), r.size());
    links_[i & mask] = hs::decode_link(r);
  }
  for (uint32_t i = 0; i < num_desc; ++i) {
    mem_.read(desc_addr + uint64_t{i} * hs::RECORD_BYTES, r.data(), r.size());
    hs::HopDesc d = hs::decode_desc(r);
    d.link = static_cast<uint32_t>(d.link & mask);  // the RTL keeps LINK_ADDR_W bits
    LinkEntry& l = links_[d.link];
    const uint64_t depart = std::max(d.time_ps, l.free_ps);
    l.free_ps = depart + ser_ps(d.bytes, l.rate_q32);
    const hs::Completion c{depart, l.free_ps + l.latency_ps, d.tag, d.link, d.bytes};
    r = hs::encode(c);
    mem_.write(cmpl_addr + uint64_t{i} * hs::RECORD_BYTES, r.data(), r.size());
  }
  cycles_ = run_cycles(num_links, num_desc);
  done_ = true;
}

}  // namespace fabemu::rtl
