// The report's per-link rows (RunResult::links) from the counters of a packet-level fabric: PacketFabric,
// FpgaFabric, or the packet model inside the DPDK and socket fabrics. Links that carried nothing are left
// out; utilization is busy time over the run's total time. And the link utilization series behind them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "emulator/binned_series.h"
#include "emulator/report.h"
#include "emulator/time.h"
#include "emulator/topology.h"

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
    lr.tier = link_tier_name(links[id].tier);
    lr.bytes = st.bytes;
    lr.packets = st.packets;
    lr.busy = links[id].rate.ser(st.bytes);
    lr.utilization = total.ps() == 0 ? 0.0 : static_cast<double>(lr.busy.ps()) / static_cast<double>(total.ps());
    out.push_back(lr);
  }
  return out;
}

// The report's link_series from a fabric's recorded series (`series` null: none), over the run's bins
// up to `total`: links that carried nothing are left out.
template <class F>
LinkSeries link_series(const F& fabric, const BinnedSeries* series) {
  LinkSeries out;
  if (series == nullptr) return out;
  out.bin_ps = series->width_ps();
  const uint32_t bins = series->bins_used();
  const auto& links = fabric.topology().links();
  for (uint32_t id = 0; id < links.size() && id < series->channels(); ++id) {
    if (fabric.link_stats(id).packets == 0) continue;
    std::vector<uint64_t> busy(bins);
    for (uint32_t b = 0; b < bins; ++b) busy[b] = static_cast<uint64_t>(series->value(id, b));
    out.links.push_back(id);
    out.busy_ps.push_back(std::move(busy));
  }
  return out;
}

// Timeline counter tracks "link ID (FROM->TO) utilization" on the network process for the `most` links
// that carried the most bytes (ties: the lower id), one value per bin of `series` (busy time over the bin
// width, 0 to 1) and a last 0 where the series ends. Nothing when `series` is null.
template <class F>
void write_link_counters(const F& fabric, const BinnedSeries* series, size_t most, TimelineSink& timeline) {
  if (series == nullptr) return;
  const auto& links = fabric.topology().links();
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < links.size() && id < series->channels(); ++id) {
    if (fabric.link_stats(id).packets > 0) ids.push_back(id);
  }
  const auto busier = [&](uint32_t a, uint32_t b) {
    const uint64_t x = fabric.link_stats(a).bytes, y = fabric.link_stats(b).bytes;
    return x != y ? x > y : a < b;
  };
  if (ids.size() > most) {
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(most), ids.end(), busier);
    ids.resize(most);
  }
  std::sort(ids.begin(), ids.end());
  const uint32_t bins = series->bins_used();
  const uint64_t w = series->width_ps();
  for (const uint32_t id : ids) {
    const std::string name = "link " + std::to_string(id) + " (" + std::to_string(links[id].from) + "->" +
                             std::to_string(links[id].to) + ") utilization";
    for (uint32_t b = 0; b < bins; ++b) {
      const double busy = static_cast<double>(series->value(id, b)) / static_cast<double>(w);
      timeline.counter(-1, name, Time::from_ps(b * w), busy);
    }
    timeline.counter(-1, name, Time::from_ps(bins * w), 0);
  }
}

}  // namespace fabemu::emu
