#include "rtl_models/msg_sched_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "rtl_models/sched_core_model.h"

namespace fabemu::rtl {

namespace {
constexpr uint64_t kHopClass = uint64_t{1} << 63;
std::string desc_name(const hw::msg::MsgDesc& d) {
  return "message " + std::to_string(d.id) + " (rank " + std::to_string(d.src) + " to " + std::to_string(d.dst) + ")";
}
}  // namespace

void check_msg_card(std::span<const hw::sched::LinkEntry> links, uint32_t mtu) {
  if (mtu == 0) throw std::invalid_argument("MsgSchedModel: the MTU must be at least 1 byte");
  if (links.empty()) throw std::invalid_argument("MsgSchedModel: the link table is empty");
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (links[i].latency_ps == 0) {
      throw std::invalid_argument("MsgSchedModel: link " + std::to_string(i) +
                                  " has latency 0; the message-level card needs every link latency >= 1 ps "
                                  "(its lookahead toward the host)");
    }
  }
}

void check_msg_route(std::span<const uint32_t> link_ids, std::size_t links) {
  for (const uint32_t l : link_ids) {
    if (l >= links) {
      throw std::invalid_argument("MsgSchedModel: route link " + std::to_string(l) + " is past the link table (" +
                                  std::to_string(links) + " links)");
    }
  }
}

void check_msg_desc(const hw::msg::MsgDesc& d, uint64_t watermark, std::size_t route_size) {
  if (d.ready_ps < watermark) {
    throw std::invalid_argument("MsgSchedModel: " + desc_name(d) + " is ready at " + std::to_string(d.ready_ps) +
                                " ps, below the watermark " + std::to_string(watermark) + " ps");
  }
  if (d.hops == 0 || d.hops > hw::msg::kMaxHops || d.route > route_size || d.hops > route_size - d.route) {
    throw std::invalid_argument("MsgSchedModel: " + desc_name(d) + " has route [" + std::to_string(d.route) + ", +" +
                                std::to_string(d.hops) + ") outside the route array of " +
                                std::to_string(route_size) + " links");
  }
  if (d.bytes > hw::msg::kMaxMsgBytes) {
    throw std::invalid_argument("MsgSchedModel: " + desc_name(d) + " has " + std::to_string(d.bytes) +
                                " bytes, more than the descriptor's 40-bit field");
  }
}

MsgSchedModel::MsgSchedModel(std::span<const hw::sched::LinkEntry> links, uint32_t mtu) : mtu_(mtu) {
  check_msg_card(links, mtu);
  for (const auto& l : links) links_.push_back(Link{l.rate_q32, l.latency_ps, l.free_ps});
  counters_.resize(links.size());
}

void MsgSchedModel::append_route(std::span<const uint32_t> link_ids) {
  check_msg_route(link_ids, links_.size());
  route_.insert(route_.end(), link_ids.begin(), link_ids.end());
}

void MsgSchedModel::push(const hw::msg::MsgDesc& d) {
  check_msg_desc(d, watermark_, route_.size());
  const uint32_t m = messages_.acquire();
  Message& msg = messages_[m];
  msg.d = d;
  msg.packets = d.bytes == 0 ? 1 : (d.bytes + mtu_ - 1) / mtu_;
  msg.packets_left = msg.packets;
  msg.last_packet = kNone;
  msg.recorded = false;
  msg.tail_latency = 0;
  for (uint32_t h = 0; h < d.hops; ++h) msg.tail_latency += links_[route_[d.route + h]].latency_ps;
  ++in_flight_;
  schedule(d.ready_ps, false, m);
}

void MsgSchedModel::advance(uint64_t w) {
  if (w <= watermark_) return;
  watermark_ = w;
  while (!heap_.empty() && heap_.front().time < w) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Event e = heap_.back();
    heap_.pop_back();
    ++events_;
    if ((e.key & kHopClass) == 0) {
      inject(e.what, e.time);
    } else {
      leave(e.what, e.time);
    }
  }
  release_departures(w);
}

void MsgSchedModel::add_run(const Message& msg, uint64_t start, uint64_t rate_q32) {
  const uint64_t rem = msg.d.bytes % mtu_;
  const uint64_t last = msg.d.bytes == 0 ? 0 : rem != 0 ? rem : mtu_;
  const PacketDeparture first{start, msg.d.id, msg.d.src, msg.d.dst, 0, msg.packets,
                              static_cast<uint32_t>(msg.packets == 1 ? last : mtu_), msg.d.bytes, 0};
  runs_.push_back(Run{first, run_seq_++, ser_ps(mtu_, rate_q32), last});
  std::push_heap(runs_.begin(), runs_.end(), run_later);
}

void MsgSchedModel::release_departures(uint64_t before) {
  while (!runs_.empty() && runs_.front().next.time_ps < before) {
    std::pop_heap(runs_.begin(), runs_.end(), run_later);
    Run& r = runs_.back();
    departures_.push_back(r.next);
    PacketDeparture& n = r.next;
    if (++n.seq == n.count) {
      runs_.pop_back();
      continue;
    }
    n.time_ps += r.ser_ps;
    n.offset += mtu_;
    n.bytes = static_cast<uint32_t>(n.seq + 1 == n.count ? r.last_bytes : mtu_);
    std::push_heap(runs_.begin(), runs_.end(), run_later);
  }
}

std::size_t MsgSchedModel::take_departures(std::vector<PacketDeparture>& out) {
  const std::size_t n = departures_.size();
  out.insert(out.end(), departures_.begin(), departures_.end());
  departures_.clear();
  return n;
}

uint64_t MsgSchedModel::known_until() const noexcept {
  uint64_t k = ~uint64_t{0};
  for (uint32_t m = 0; m < messages_.size(); ++m) {  // free slots have no packets left
    const Message& msg = messages_[m];
    if (msg.packets_left > 0 && !msg.recorded) k = std::min(k, earliest_delivery(m));
  }
  return k;
}

uint64_t MsgSchedModel::earliest_delivery(uint32_t m) const noexcept {
  const Message& msg = messages_[m];
  if (msg.last_packet == kNone) return msg.d.ready_ps + msg.tail_latency;  // not injected yet
  // The last packet is at the far end of hop `hop` at far_end_ps; the links after it add their latency.
  const Packet& p = packets_[msg.last_packet];
  uint64_t t = p.far_end_ps;
  for (uint32_t h = p.hop + 1; h < msg.d.hops; ++h) t += links_[route_[msg.d.route + h]].latency_ps;
  return t;
}

std::size_t MsgSchedModel::take(std::vector<hw::msg::Delivery>& out) {
  const std::size_t n = out_.size();
  out.insert(out.end(), out_.begin(), out_.end());
  out_.clear();
  return n;
}

void MsgSchedModel::schedule(uint64_t time, bool hop_class, uint32_t what) {
  heap_.push_back(Event{time, (hop_class ? kHopClass : 0) | sequence_++, what});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

void MsgSchedModel::inject(uint32_t m, uint64_t now) {
  const uint64_t n = messages_[m].packets;
  uint64_t left = messages_[m].d.bytes;
  const Link& first = links_[route_[messages_[m].d.route]];
  add_run(messages_[m], std::max(now, first.free_ps), first.rate_q32);
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t p = packets_.acquire();
    const auto bytes = static_cast<uint32_t>(std::min<uint64_t>(left, mtu_));
    left -= bytes;
    packets_[p] = Packet{0, kNone, m, bytes, 0, i + 1 == n};
    if (i + 1 == n) messages_[m].last_packet = p;
    enter(route_[messages_[m].d.route], p, now);
  }
}

void MsgSchedModel::enter(uint32_t l, uint32_t p, uint64_t now) {
  Link& link = links_[l];
  Packet& pkt = packets_[p];
  const uint64_t depart = std::max(now, link.free_ps);
  link.free_ps = depart + ser_ps(pkt.bytes, link.rate_q32);
  pkt.far_end_ps = link.free_ps + link.latency_ps;
  pkt.next = kNone;
  counters_[l].bytes += pkt.bytes;
  ++counters_[l].packets;
  ++hops_;
  Message& msg = messages_[pkt.msg];
  if (pkt.last && pkt.hop + 1 == msg.d.hops) {
    // Packets of a message follow one route through FIFOs: the last one in is the last one out.
    out_.push_back(hw::msg::Delivery{msg.d.id, pkt.far_end_ps, hw::msg::kNoCycle, static_cast<uint32_t>(msg.packets)});
    msg.recorded = true;
  }
  if (link.tail == kNone) {
    link.head = link.tail = p;
    schedule(pkt.far_end_ps, true, l);
  } else {
    packets_[link.tail].next = p;
    link.tail = p;
  }
}

void MsgSchedModel::leave(uint32_t l, uint64_t now) {
  Link& link = links_[l];
  const uint32_t p = link.head;
  link.head = packets_[p].next;
  if (link.head == kNone) {
    link.tail = kNone;
  } else {
    schedule(packets_[link.head].far_end_ps, true, l);
  }
  Packet& pkt = packets_[p];
  Message& msg = messages_[pkt.msg];
  if (++pkt.hop < msg.d.hops) {
    enter(route_[msg.d.route + pkt.hop], p, now);
    return;
  }
  packets_.release(p);
  if (--msg.packets_left == 0) {
    messages_.release(pkt.msg);
    --in_flight_;
  }
}

}  // namespace fabemu::rtl
