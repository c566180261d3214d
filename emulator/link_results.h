// The report's per-link rows (RunResult::links) from the counters of a packet-level fabric: PacketFabric,
// FpgaFabric, or the packet model inside the DPDK and socket fabrics. Links that carried nothing are left
// out; utilization is busy time over the run's total time.
#pragma once

#include <cstdint>
#include <vector>

#include "emulator/report.h"
#include "emulator/time.h"

namespace fabemu::emu {

// `F` has topology() (a Topology) and link_stats(LinkId) (a LinkStats).
template <class F>
std::vector<LinkResult> link_results(const F& fabric, Time total) {
  std::vector<LinkResult> out;
  const auto& links = fabric.topology().links();
  for (uint32_t id = 0; id < links.size(); ++id) {
    const auto& st = fabric.link_stats(id);
    if (st.bytes == 0 && st.packets == 0) continue;
    LinkResult lr;
    lr.id = id;
    lr.from = links[id].from;
    lr.to = links[id].to;
    lr.dim = links[id].dim;
    lr.bytes = st.bytes;
    lr.packets = st.packets;
    lr.busy = links[id].rate.ser(st.bytes);
    lr.utilization = total.ps() == 0 ? 0.0 : static_cast<double>(lr.busy.ps()) / static_cast<double>(total.ps());
    out.push_back(lr);
  }
  return out;
}

}  // namespace fabemu::emu
