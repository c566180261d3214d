#include "host/fpga/fpga_msg_fabric.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace fabemu::host::fpga {

namespace {

std::string named(const emu::Message& m) {
  return "FpgaMsgFabric::send: message " + std::to_string(m.id) + " (rank " + std::to_string(m.src) + " to " +
         std::to_string(m.dst) + ")";
}

std::unique_ptr<MsgSchedDevice> loaded(std::unique_ptr<MsgSchedDevice> device, const emu::Topology& topology,
                                       uint32_t mtu) {
  if (!device) throw std::invalid_argument("FpgaMsgFabric: no device");
  if (mtu == 0) throw std::invalid_argument("FpgaMsgFabric: the MTU must be at least 1 byte");
  if (topology.links().empty()) throw std::invalid_argument("FpgaMsgFabric: the topology has no links");
  if (static_cast<uint64_t>(topology.npus()) > uint64_t{hw::msg::kMaxRank} + 1) {
    throw std::invalid_argument("FpgaMsgFabric: " + std::to_string(topology.npus()) +
                                " NPUs, more than the descriptor's 24-bit ranks hold");
  }
  std::vector<hw::sched::LinkEntry> table;
  for (std::size_t i = 0; i < topology.links().size(); ++i) {
    const emu::Link& l = topology.links()[i];
    if (l.latency.ps() == 0) {
      throw std::invalid_argument("FpgaMsgFabric: link " + std::to_string(i) +
                                  " has latency 0, and the message-level card needs at least 1 ps on every link "
                                  "(its lookahead); use --fpga-interface hops");
    }
    table.push_back(hw::sched::LinkEntry{l.rate.ps_per_byte_q32(), l.latency.ps(), 0});
  }
  device->load(table, mtu);
  return device;
}

}  // namespace

FpgaMsgFabric::FpgaMsgFabric(emu::Engine& engine, emu::Topology topology, uint32_t mtu,
                             std::unique_ptr<MsgSchedDevice> device)
    : engine_(engine),
      topology_(std::move(topology)),
      device_(loaded(std::move(device), topology_, mtu)),
      stats_(topology_.links().size()),
      route_buf_(topology_.max_hops()) {
  for (const emu::Link& l : topology_.links()) route_latency_.push_back(l.latency.ps());
}

void FpgaMsgFabric::send(const emu::Message& m, emu::Time ready) {
  if (m.src < 0 || m.src >= topology_.npus() || m.dst < 0 || m.dst >= topology_.npus()) {
    throw std::invalid_argument(named(m) + ": the topology has NPUs 0.." + std::to_string(topology_.npus() - 1));
  }
  if (ready < engine_.now()) throw std::invalid_argument(named(m) + ": ready time in the past");
  if (m.bytes > hw::msg::kMaxMsgBytes) {
    throw std::invalid_argument(named(m) + ": " + std::to_string(m.bytes) + " bytes, more than a descriptor holds (2^40 - 1)");
  }
  if (m.src == m.dst) {  // no link to cross: delivered at `ready`, as PacketFabric's loopback
    const uint32_t slot = pending_.acquire(m.id);
    engine_.at(ready, *this, ready > engine_.now() ? kLoopbackBit | slot : slot);
    return;
  }
  const auto route = topology_.route(m.src, m.dst, m.flow, route_buf_);
  if (route.size() > hw::msg::kMaxHops) {
    throw std::invalid_argument(named(m) + ": a route of " + std::to_string(route.size()) + " links, more than 255");
  }
  uint64_t latency = 0;
  for (const emu::LinkId l : route) latency += route_latency_[l];
  uint64_t card_id = m.id;
  if (track_) {
    card_id = wire_msgs_.size();
    wire_msgs_.push_back(WireMsg{m.id, m.coll, ready.ps(), m.bytes, 0});
  }
  staged_.push_back(hw::msg::MsgDesc{ready.ps(), card_id, m.bytes, static_cast<uint32_t>(route.size()),
                                     route_offset(route), static_cast<uint32_t>(m.src), static_cast<uint32_t>(m.dst)});
  bound_ = std::min(bound_, ready.ps() + latency);  // its delivery is unknown until the card records it
  arm_sync(bound_);
}

uint32_t FpgaMsgFabric::route_offset(std::span<const emu::LinkId> route) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the link ids
  for (const emu::LinkId l : route) h = (h ^ l) * 1099511628211ULL;
  const auto [first, last] = route_index_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const auto [offset, hops] = it->second;
    if (hops == route.size() && std::equal(route.begin(), route.end(), route_array_.begin() + offset)) return offset;
  }
  const auto offset = static_cast<uint32_t>(route_array_.size());
  route_array_.insert(route_array_.end(), route.begin(), route.end());
  staged_route_.insert(staged_route_.end(), route.begin(), route.end());
  route_index_.emplace(h, std::pair{offset, static_cast<uint32_t>(route.size())});
  ++routes_;
  return offset;
}

void FpgaMsgFabric::arm_sync(uint64_t bound) {
  if (bound == kNever) return;
  const uint64_t at = bound - 1;  // bound > now: the host has run nothing at or past it
  if (armed_at_ <= at) return;
  armed_at_ = at;
  engine_.at(emu::Time::from_ps(at), *this, kSyncBit | ++generation_);
}

void FpgaMsgFabric::sync() {
  ++syncs_;
  armed_at_ = kNever;
  // The card may pass neither a time the host still has an event at nor a delivery it has not recorded.
  const uint64_t watermark = std::min(engine_.next_time().ps(), bound_);
  if (!staged_route_.empty()) device_->append_route(staged_route_);
  staged_route_.clear();
  if (!staged_.empty()) device_->push(staged_);
  pushed_ += staged_.size();
  staged_.clear();
  device_->doorbell(watermark);
  records_.clear();
  const uint64_t card_bound = device_->poll(records_);
  for (const hw::msg::Delivery& d : records_) {
    uint64_t id = d.id;
    if (track_) {
      wire_msgs_[d.id].delivered_ps = d.time_ps;
      id = wire_msgs_[d.id].id;
    }
    engine_.at(emu::Time::from_ps(d.time_ps), *this, pending_.acquire(id));
  }
  bound_ = card_bound;  // nothing is staged now; kNever when every record is out
  arm_sync(bound_);
}

void FpgaMsgFabric::on_event(uint64_t arg) {
  if ((arg & kSyncBit) != 0) {
    if ((arg & ~kSyncBit) == generation_) sync();
    return;
  }
  if ((arg & kLoopbackBit) != 0) {  // a loopback's ready time: delivered in an event of its own
    engine_.at(engine_.now(), *this, arg & ~kLoopbackBit);
    return;
  }
  const auto slot = static_cast<uint32_t>(arg);
  const uint64_t id = pending_[slot];
  pending_.release(slot);
  ++delivered_;
  if (listener_ != nullptr) listener_->on_delivered(id, engine_.now());
}

void FpgaMsgFabric::finish() {
  wire_ = device_->finish_wire();
  if (track_ && wire_ != nullptr) collect_wire_collectives();
  const std::vector<LinkCount> counts = device_->read_link_counters();
  for (std::size_t l = 0; l < stats_.size() && l < counts.size(); ++l) {
    stats_[l] = emu::LinkStats{counts[l].bytes, counts[l].packets};
  }
}

void FpgaMsgFabric::collect_wire_collectives() {
  struct Acc {
    uint64_t messages = 0, arrived = 0, bytes = 0, first_ready = kNever, modelled_end = 0, measured_end = 0,
             late_cycles = 0;
  };
  std::vector<Acc> acc;
  const auto of = [&](uint64_t card_id) -> Acc* {  // the collective's accumulator of a card id (none: p2p)
    if (card_id >= wire_msgs_.size() || wire_msgs_[card_id].coll == emu::Message::kNoCollective) return nullptr;
    const uint32_t c = wire_msgs_[card_id].coll;
    if (c >= acc.size()) acc.resize(std::size_t{c} + 1);
    return &acc[c];
  };
  for (uint64_t i = 0; i < wire_msgs_.size(); ++i) {
    if (Acc* a = of(i)) {
      const WireMsg& m = wire_msgs_[i];
      ++a->messages;
      a->bytes += m.bytes;
      a->first_ready = std::min(a->first_ready, m.ready_ps);
      a->modelled_end = std::max(a->modelled_end, m.delivered_ps);
    }
  }
  for (const rtl::HilArrival& r : wire_->arrivals) {
    if (Acc* a = of(r.msg)) {
      ++a->arrived;
      a->measured_end = std::max(a->measured_end, rtl::rx_arrival_ps(r.last_cycle, q32_));
    }
  }
  for (const rtl::HilLateStart& l : wire_->late_starts) {
    if (Acc* a = of(l.msg)) a->late_cycles = std::max(a->late_cycles, l.cycles);
  }
  wire_colls_.clear();
  for (std::size_t c = 0; c < acc.size(); ++c) {
    const Acc& a = acc[c];
    if (a.messages == 0) continue;
    WireCollective w;
    w.coll = static_cast<uint32_t>(c);
    w.messages = a.messages;
    w.arrived = a.arrived;
    w.bytes = a.bytes;
    w.modelled_ps = a.modelled_end > a.first_ready ? a.modelled_end - a.first_ready : 0;
    w.measured_ps = a.measured_end > a.first_ready ? a.measured_end - a.first_ready : 0;
    w.late_start_ps = rtl::rx_arrival_ps(a.late_cycles, q32_);
    w.deviation = w.modelled_ps == 0 ? 0.0 : static_cast<double>(w.measured_ps) / static_cast<double>(w.modelled_ps) - 1.0;
    wire_colls_.push_back(w);
  }
}

std::unique_ptr<FpgaMsgFabric> make_fpga_msg_fabric(emu::Engine& engine, const emu::Topology& topology, uint32_t mtu,
                                                    const std::string& device_spec) {
  return std::make_unique<FpgaMsgFabric>(engine, topology, mtu == 0 ? ~uint32_t{0} : mtu, open_msg_device(device_spec));
}

std::unique_ptr<FpgaMsgFabric> make_fpga_hil_fabric(emu::Engine& engine, const emu::Topology& topology, uint32_t mtu,
                                                    const std::string& device_spec, rtl::HilOptions hil) {
  if (mtu == 0 || mtu > rtl::kHilMaxPayload) {
    throw std::invalid_argument("--fabric fpga --dilation: the MTU (--mtu) must be 1 to " +
                                std::to_string(rtl::kHilMaxPayload) + " bytes, a frame's payload; it is " +
                                (mtu == 0 ? std::string("0 (whole messages)") : std::to_string(mtu)));
  }
  hil.npus = static_cast<uint32_t>(topology.npus());
  auto f = std::make_unique<FpgaMsgFabric>(engine, topology, mtu, open_msg_device(device_spec, hil));
  f->track_wire(rtl::hil_ps_per_cycle_q32(hil.dilation_q16));
  return f;
}

}  // namespace fabemu::host::fpga
