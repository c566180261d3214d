// Shared by the FPGA tests: randomized message workloads on several topologies, and HopRecorder, which
// runs a workload exactly as PacketFabric does (same engine, same event order) and records every
// packet-hop it takes, in processing order: the descriptor stream the kernel must reproduce.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "emulator/config.h"
#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/packet_fabric.h"
#include "emulator/topology.h"
#include "hw/sched/include/fabemu_sched_map.h"

namespace fabemu::fpga_test {

using emu::Duration;
using emu::Rate;
using emu::Time;
using hw::sched::Completion;
using hw::sched::HopDesc;
using hw::sched::LinkEntry;

inline emu::NetworkDim dim(emu::DimTopology kind, int64_t npus, Rate rate, Duration latency) {
  emu::NetworkDim d;
  d.topology = kind;
  d.npus = npus;
  d.bandwidth = rate;
  d.latency = latency;
  return d;
}

// Topologies with rates that are not powers of two (nor whole ps per byte) and odd latencies.
inline emu::NetworkConfig ring8() {
  emu::NetworkConfig c;
  c.dims = {dim(emu::DimTopology::kRing, 8, Rate::from_gbps(300), Duration::from_ps(1'234))};
  return c;
}
inline emu::NetworkConfig switch16() {
  emu::NetworkConfig c;
  c.dims = {dim(emu::DimTopology::kSwitch, 16, Rate::from_astra_gbps(37.5), Duration::from_ps(777))};
  return c;
}
inline emu::NetworkConfig ring4_fc4() {
  emu::NetworkConfig c;
  c.dims = {dim(emu::DimTopology::kRing, 4, Rate::from_gbps(7), Duration::from_ps(3'001)),
            dim(emu::DimTopology::kFullyConnected, 4, Rate::from_gbps(123.456), Duration::from_ps(501))};
  return c;
}
inline emu::NetworkConfig fat_tree_4x3x2() {
  emu::FatTreeConfig ft;
  ft.hosts_per_leaf = 4;
  ft.leaves = 3;
  ft.spines = 2;
  ft.host_link_rate = Rate::from_gbps(200);
  ft.host_link_latency = Duration::from_ps(650);
  ft.spine_link_rate = Rate::from_gbps(333);
  ft.spine_link_latency = Duration::from_ps(1'100);
  emu::NetworkConfig c;
  c.dims = {dim(emu::DimTopology::kFatTree, 12, ft.host_link_rate, ft.host_link_latency)};
  c.dims[0].fat_tree = ft;
  return c;
}

// The randomized workloads every FPGA fabric is held to PacketFabric on: a topology, an MTU, and whether
// the messages converge on one destination (incast).
struct WorkloadCase {
  const char* name;
  emu::NetworkConfig (*config)();
  uint32_t mtu;
  bool incast;
};
inline constexpr WorkloadCase kWorkloadCases[] = {{"ring8", ring8, 1024, false},
                                                  {"switch16_incast", switch16, 512, true},
                                                  {"ring4_fc4", ring4_fc4, 4096, false},
                                                  {"fat_tree", fat_tree_4x3x2, 1500, false}};

inline std::vector<LinkEntry> link_table(const emu::Topology& t) {
  std::vector<LinkEntry> v;
  for (const emu::Link& l : t.links()) v.push_back(LinkEntry{l.rate.ps_per_byte_q32(), l.latency.ps(), 0});
  return v;
}

struct TimedMessage {
  emu::Message m;
  Time ready;
};

// `count` messages between distinct random NPUs, ready in [0, horizon_ps), 1..max_bytes bytes; with
// `incast`, every message goes to NPU 0 (heavy contention on its last link).
inline std::vector<TimedMessage> random_messages(const emu::Topology& t, uint64_t seed, std::size_t count,
                                                 uint64_t horizon_ps, uint64_t max_bytes, bool incast) {
  std::mt19937_64 rng(seed);
  std::vector<TimedMessage> v;
  const auto n = static_cast<uint64_t>(t.npus());
  for (std::size_t i = 0; i < count; ++i) {
    const auto dst = static_cast<int32_t>(incast ? 0 : rng() % n);
    auto src = static_cast<int32_t>(rng() % n);
    if (src == dst) src = static_cast<int32_t>((static_cast<uint64_t>(src) + 1 + rng() % (n - 1)) % n);
    const uint64_t bytes = 1 + rng() % max_bytes;
    v.push_back(TimedMessage{emu::Message{i, src, dst, bytes, rng() % 64}, Time::from_ps(rng() % horizon_ps)});
  }
  // send() wants ready >= now: hand them over in ready order (stable, so equal times keep id order).
  std::stable_sort(v.begin(), v.end(), [](const TimedMessage& a, const TimedMessage& b) { return a.ready < b.ready; });
  return v;
}

// PacketFabric's deliveries, in delivery order.
inline std::vector<std::pair<uint64_t, Time>> packet_fabric_deliveries(const emu::NetworkConfig& config, uint32_t mtu,
                                                                       const std::vector<TimedMessage>& msgs) {
  struct Log final : emu::DeliveryListener {
    void on_delivered(uint64_t id, Time at) override { v.emplace_back(id, at); }
    std::vector<std::pair<uint64_t, Time>> v;
  } log;
  emu::Engine engine;
  emu::PacketFabric fabric(engine, emu::Topology(config), mtu);
  fabric.set_listener(&log);
  for (const auto& tm : msgs) fabric.send(tm.m, tm.ready);
  engine.run();
  return log.v;
}

// PacketFabric's algorithm, step for step (the same engine calls in the same order, so the same tie
// order), recording each packet-hop as a HopDesc (tag = index) and the contract's answer for it.
class HopRecorder final : private emu::EventTarget {
 public:
  struct HopInfo {
    uint64_t msg;    // message id
    bool last_hop;   // the hop into dst
  };

  HopRecorder(const emu::NetworkConfig& config, uint32_t mtu) : topology_(config), mtu_(mtu) {
    links_.resize(topology_.links().size());
  }

  void run(const std::vector<TimedMessage>& msgs) {
    for (const auto& tm : msgs) {
      if (tm.ready > engine_.now()) {
        waiting_.push_back(tm.m);
        engine_.at(tm.ready, *this, kInject | (waiting_.size() - 1));
      } else {
        inject(tm.m);
      }
    }
    engine_.run();
  }

  const emu::Topology& topology() const { return topology_; }
  std::vector<HopDesc> hops;
  std::vector<Completion> expected;
  std::vector<HopInfo> info;
  std::vector<std::pair<uint64_t, Time>> deliveries;

 private:
  static constexpr uint64_t kInject = uint64_t{1} << 63;
  struct Packet {
    uint64_t far_end;
    uint64_t msg;
    uint32_t bytes;
    uint32_t hop;
    std::vector<emu::LinkId>* route;
  };
  struct LinkState {
    uint64_t free = 0;
    std::deque<Packet> fifo;
  };

  void inject(const emu::Message& m) {
    const uint64_t n = m.bytes == 0 ? 1 : (m.bytes + mtu_ - 1) / mtu_;
    routes_.push_back(topology_.route(m.src, m.dst, m.flow));
    left_[m.id] = n;
    uint64_t rest = m.bytes;
    for (uint64_t i = 0; i < n; ++i) {
      const auto b = static_cast<uint32_t>(std::min<uint64_t>(rest, mtu_));
      rest -= b;
      enter(Packet{0, m.id, b, 0, &routes_.back()});
    }
  }

  void enter(Packet p) {
    const emu::LinkId l = (*p.route)[p.hop];
    LinkState& s = links_[l];
    const emu::Link& spec = topology_.link(l);
    const uint64_t now = engine_.now().ps();
    const uint64_t depart = std::max(now, s.free);
    s.free = depart + spec.rate.ser(p.bytes).ps();
    p.far_end = s.free + spec.latency.ps();
    hops.push_back(HopDesc{now, p.bytes, l, hops.size()});
    expected.push_back(Completion{depart, p.far_end, hops.size() - 1, l, p.bytes});
    info.push_back(HopInfo{p.msg, p.hop + 1 == p.route->size()});
    s.fifo.push_back(p);
    if (s.fifo.size() == 1) engine_.at(Time::from_ps(p.far_end), *this, l);
  }

  void on_event(uint64_t arg) override {
    if ((arg & kInject) != 0) {
      inject(waiting_[arg & ~kInject]);
      return;
    }
    LinkState& s = links_[arg];
    Packet p = s.fifo.front();
    s.fifo.pop_front();
    if (!s.fifo.empty()) engine_.at(Time::from_ps(s.fifo.front().far_end), *this, arg);
    if (p.hop + 1 < p.route->size()) {
      ++p.hop;
      enter(p);
      return;
    }
    if (--left_[p.msg] == 0) deliveries.emplace_back(p.msg, engine_.now());
  }

  emu::Engine engine_;
  emu::Topology topology_;
  uint32_t mtu_;
  std::vector<LinkState> links_;
  std::deque<std::vector<emu::LinkId>> routes_;  // stable addresses
  std::map<uint64_t, uint64_t> left_;
  std::vector<emu::Message> waiting_;
};

// Message delivery times computed from kernel completions alone: the latest last-hop arrival of each
// message's packets.
inline std::map<uint64_t, uint64_t> deliveries_from(const std::vector<HopRecorder::HopInfo>& info,
                                                    const std::vector<Completion>& done) {
  std::map<uint64_t, uint64_t> d;
  for (std::size_t i = 0; i < done.size(); ++i) {
    if (!info[done[i].tag].last_hop) continue;
    uint64_t& t = d[info[done[i].tag].msg];
    t = std::max(t, done[i].arrive_ps);
  }
  return d;
}

}  // namespace fabemu::fpga_test
