#include "emulator/packet_fabric.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>
#include <utility>

namespace fabemu::emu {

namespace {

void check_endpoints(const Topology& topology, const Message& m, const char* who) {
  if (m.src < 0 || m.src >= topology.npus() || m.dst < 0 || m.dst >= topology.npus()) {
    throw std::invalid_argument(std::string(who) + ": message " + std::to_string(m.id) + " goes from " +
                                std::to_string(m.src) + " to " + std::to_string(m.dst) +
                                ", but the topology has NPUs 0.." + std::to_string(topology.npus() - 1));
  }
}

}  // namespace

// --- PacketFabric ------------------------------------------------------------------------------------

PacketFabric::PacketFabric(Engine& engine, Topology topology, uint32_t mtu)
    : engine_(engine), topology_(std::move(topology)), mtu_(mtu), pools_("PacketFabric", topology_.max_hops()) {
  if (mtu_ == 0) throw std::invalid_argument("PacketFabric: the MTU must be at least 1 byte");
  links_.resize(topology_.links().size() + 1);
  stats_.resize(topology_.links().size());
}

void PacketFabric::send(const Message& m, Time ready) {
  check_endpoints(topology_, m, "PacketFabric::send");
  if (ready < engine_.now()) throw std::invalid_argument("PacketFabric::send: ready time in the past");
  if (ready > engine_.now()) {
    engine_.at(ready, *this, kInjectBit | pools_.park(m));
    return;
  }
  inject(m);
}

void PacketFabric::inject(const Message& m) {
  const uint64_t n_packets = m.bytes == 0 ? 1 : (m.bytes + mtu_ - 1) / mtu_;
  const uint32_t s = pools_.new_message();
  Pools::MessageState& msg = pools_.message(s);
  // m.flow is the ECMP key: the messages of one flow take one path where the topology has several.
  const auto route =
      topology_.route(m.src, m.dst, m.flow, pools_.route_storage(s));
  msg.id = m.id;
  msg.packets_left = n_packets;
  msg.hops = static_cast<uint32_t>(route.size());
  const uint32_t first = route.empty() ? static_cast<uint32_t>(links_.size() - 1) : route[0];
  uint64_t left = m.bytes;
  for (uint64_t i = 0; i < n_packets; ++i) {
    const uint32_t p = pools_.new_packet();
    const auto bytes = static_cast<uint32_t>(std::min<uint64_t>(left, mtu_));
    left -= bytes;
    pools_.packet(p) = Pools::Packet{0, s, kNone, bytes, 0};
    enter(first, p);
  }
}

void PacketFabric::enter(uint32_t l, uint32_t p) {
  LinkState& link = links_[l];
  Pools::Packet& pkt = pools_.packet(p);
  const Time now = engine_.now();
  if (l < stats_.size()) {
    const Link& spec = topology_.link(l);
    // The contract: depart at max(arrival, link_free); the link is busy for ser(n); then the latency.
    const Time depart = std::max(now, link.free_at);
    link.free_at = depart + spec.rate.ser(pkt.bytes);
    pkt.far_end_ps = (link.free_at + spec.latency).ps();
    stats_[l].bytes += pkt.bytes;
    ++stats_[l].packets;
  } else {
    pkt.far_end_ps = now.ps();  // loopback: no link to cross
  }
  pkt.next = kNone;
  // free_at never decreases and the latency is constant, so the FIFO stays sorted by far_end.
  if (link.tail == kNone) {
    link.head = link.tail = p;
    engine_.at(Time::from_ps(pkt.far_end_ps), *this, l);
  } else {
    assert(pools_.packet(link.tail).far_end_ps <= pkt.far_end_ps);
    pools_.packet(link.tail).next = p;
    link.tail = p;
  }
}

void PacketFabric::on_event(uint64_t arg) {
  if ((arg & kInjectBit) != 0) {
    const uint64_t slot = arg & ~kInjectBit;
    inject(pools_.unpark(slot));
    return;
  }
  const auto l = static_cast<uint32_t>(arg);
  LinkState& link = links_[l];
  const uint32_t p = link.head;
  assert(p != kNone && pools_.packet(p).far_end_ps == engine_.now().ps());
  link.head = pools_.packet(p).next;
  if (link.head == kNone) {
    link.tail = kNone;
  } else {
    engine_.at(Time::from_ps(pools_.packet(link.head).far_end_ps), *this, l);
  }

  const Pools::Arrival arrival = pools_.arrive(p);
  if (arrival.next_link != kNone) {
    enter(arrival.next_link, p);
    return;
  }
  if (!arrival.delivered) return;
  ++delivered_;
  // Last: the listener may send, which may grow the pools and move what they hold.
  if (listener_ != nullptr) listener_->on_delivered(arrival.id, engine_.now());
}

// --- AnalyticalFabric --------------------------------------------------------------------------------

AnalyticalFabric::AnalyticalFabric(Engine& engine, Topology topology)
    : engine_(engine), topology_(std::move(topology)), route_buf_(topology_.max_hops()) {
  const auto& links = topology_.links();
  uniform_ = !links.empty() && std::all_of(links.begin(), links.end(), [&](const Link& l) {
    return l.rate == links.front().rate && l.latency == links.front().latency;
  });
}

Duration AnalyticalFabric::delay(const Message& m) const {
  check_endpoints(topology_, m, "AnalyticalFabric::delay");
  if (uniform_) {  // every link alike: no need to walk the route
    const Link& any = topology_.links().front();
    const uint64_t hops = topology_.hops(m.src, m.dst);
    return hops == 0 ? Duration::zero() : any.latency * hops + any.rate.ser(m.bytes);
  }
  Duration latency;
  uint64_t slowest = 0;  // the largest ps per byte (Q32.32) of the route
  for (const LinkId l : topology_.route(m.src, m.dst, m.flow, route_buf_)) {
    const Link& link = topology_.link(l);
    latency += link.latency;
    slowest = std::max(slowest, link.rate.ps_per_byte_q32());
  }
  return latency + Rate::from_ps_per_byte_q32(slowest).ser(m.bytes);
}

void AnalyticalFabric::send(const Message& m, Time ready) {
  if (ready < engine_.now()) throw std::invalid_argument("AnalyticalFabric::send: ready time in the past");
  const Duration d = delay(m);
  engine_.at(ready + d, *this, pending_.acquire(m.id));
}

void AnalyticalFabric::on_event(uint64_t slot) {
  const auto s = static_cast<uint32_t>(slot);
  const uint64_t id = pending_[s];
  pending_.release(s);
  ++delivered_;
  if (listener_ != nullptr) listener_->on_delivered(id, engine_.now());
}

}  // namespace fabemu::emu
