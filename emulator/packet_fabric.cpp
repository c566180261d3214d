#include "emulator/packet_fabric.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>
#include <utility>

namespace fabemu::emu {

namespace {

[[noreturn]] void throw_bad_endpoints(const Topology& topology, const Message& m, const char* who,
                                     const char* function) {
  throw std::invalid_argument(std::string(who) + "::" + function + ": message " + std::to_string(m.id) + " goes from " +
                              std::to_string(m.src) + " to " + std::to_string(m.dst) +
                              ", but the topology has NPUs 0.." + std::to_string(topology.npus() - 1));
}

// `who`::`function` starts the message. Inline, the message building out of line: it runs per message.
inline void check_endpoints(const Topology& topology, const Message& m, const char* who, const char* function) {
  if (m.src < 0 || m.src >= topology.npus() || m.dst < 0 || m.dst >= topology.npus()) [[unlikely]] {
    throw_bad_endpoints(topology, m, who, function);
  }
}

}  // namespace

// --- PacketFabric ------------------------------------------------------------------------------------

PacketFabric::PacketFabric(Engine& engine, Topology topology, uint32_t mtu, HopBatcher* batcher, const char* name)
    : engine_(engine),
      topology_(std::move(topology)),
      mtu_(mtu),
      batcher_(batcher),
      name_(name),
      pools_(name, topology_.max_hops()) {
  if (mtu_ == 0) throw std::invalid_argument(std::string(name_) + ": the MTU must be at least 1 byte");
  const auto& links = topology_.links();
  links_.resize(links.size() + 1);
  stats_.resize(links.size());
  route_cache_.resize(static_cast<std::size_t>(std::max(topology_.npus(), 0)));
  flow_picks_route_ = topology_.is_fat_tree();
  lookahead_ps_ = links.empty() ? 0 : kUnknown;
  for (const Link& l : links) lookahead_ps_ = std::min(lookahead_ps_, l.latency.ps());
}

void PacketFabric::send(const Message& m, Time ready) {
  check_endpoints(topology_, m, name_, "send");
  if (ready < engine_.now()) throw std::invalid_argument(std::string(name_) + "::send: ready time in the past");
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
  const auto route = route_of(m, pools_.route_storage(s));
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

std::span<LinkId> PacketFabric::route_of(const Message& m, std::span<LinkId> out) {
  CachedRoute& c = route_cache_[static_cast<std::size_t>(m.src)];
  if (c.dst == m.dst && (!flow_picks_route_ || c.flow == m.flow)) {
    std::copy_n(c.links.begin(), c.hops, out.begin());
    return out.first(c.hops);
  }
  const auto route = topology_.route(m.src, m.dst, m.flow, out);
  if (route.size() <= kCachedHops) {
    c.dst = m.dst;
    c.flow = m.flow;
    c.hops = static_cast<uint32_t>(route.size());
    std::copy(route.begin(), route.end(), c.links.begin());
  }
  return route;
}

template <bool kBatched>
void PacketFabric::enter(uint32_t l, uint32_t p) {
  LinkState& link = links_[l];
  Pools::Packet& pkt = pools_.packet(p);
  const Time now = engine_.now();
  if (l < stats_.size()) {
    stats_[l].bytes += pkt.bytes;
    ++stats_[l].packets;
    if constexpr (!kBatched) {
      const Link& spec = topology_.link(l);
      // The contract: depart at max(arrival, link_free); the link is busy for ser(n); then the latency.
      const Time depart = std::max(now, link.free_at);
      link.free_at = depart + spec.rate.ser(pkt.bytes);
      if (series_) series_->add(l, depart.ps(), link.free_at.ps());
      pkt.far_end_ps = (link.free_at + spec.latency).ps();
    } else {
      batch_hop(l, p);  // the far end is learnt at the window's flush
    }
  } else {
    pkt.far_end_ps = now.ps();  // loopback: no link to cross
  }
  pkt.next = kNone;
  if (link.tail == kNone) {
    link.head = link.tail = p;
    if constexpr (kBatched) {
      schedule_head(l);
    } else {
      engine_.at(Time::from_ps(pkt.far_end_ps), *this, l);
    }
  } else {
    // Without a batcher, free_at never decreases and the latency is constant, so the FIFO stays sorted
    // by far_end.
    assert(kBatched || pools_.packet(link.tail).far_end_ps <= pkt.far_end_ps);
    pools_.packet(link.tail).next = p;
    link.tail = p;
  }
  if (kBatched && lookahead_ps_ == 0) flush();
}

void PacketFabric::batch_hop(uint32_t l, uint32_t p) {
  const uint64_t now = engine_.now().ps();
  if (batch_packets_.empty()) {
    floor_ps_ = now + lookahead_ps_;
    if (lookahead_ps_ > 0) engine_.at(Time::from_ps(floor_ps_ - 1), *this, kFlush);
  }
  Pools::Packet& pkt = pools_.packet(p);
  pkt.far_end_ps = kUnknown;
  batcher_->add(l, now, pkt.bytes);
  batch_packets_.push_back(p);
}

void PacketFabric::schedule_head(uint32_t l) {
  const uint64_t t = pools_.packet(links_[l].head).far_end_ps;
  if (t != kUnknown && t < floor_ps_) {
    engine_.at(Time::from_ps(t), *this, l);
  } else {
    deferred_heads_.push_back(l);
  }
}

void PacketFabric::flush() {
  if (batch_packets_.empty()) return;
  answers_.resize(batch_packets_.size());
  batcher_->answer(answers_);
  for (std::size_t i = 0; i < answers_.size(); ++i) pools_.packet(batch_packets_[i]).far_end_ps = answers_[i];
  batch_packets_.clear();
  floor_ps_ = kUnknown;
  // In the order they would have been scheduled without a batcher.
  for (const uint32_t l : deferred_heads_) engine_.at(Time::from_ps(pools_.packet(links_[l].head).far_end_ps), *this, l);
  deferred_heads_.clear();
}

void PacketFabric::on_event(uint64_t arg) {
  if ((arg & kInjectBit) != 0) {
    if (arg == kFlush) {
      flush();
    } else {
      inject(pools_.unpark(arg & ~kInjectBit));
    }
    return;
  }
  const auto l = static_cast<uint32_t>(arg);
  LinkState& link = links_[l];
  const uint32_t p = link.head;
  assert(p != kNone && pools_.packet(p).far_end_ps == engine_.now().ps());
  link.head = pools_.packet(p).next;
  if (link.head == kNone) {
    link.tail = kNone;
  } else if (batcher_ == nullptr) {
    engine_.at(Time::from_ps(pools_.packet(link.head).far_end_ps), *this, l);
  } else {
    schedule_head(l);
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
  check_endpoints(topology_, m, "AnalyticalFabric", "delay");
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
