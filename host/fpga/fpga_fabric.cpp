#include "host/fpga/fpga_fabric.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace fabemu::host::fpga {

namespace {

constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();  // far end not answered yet

}  // namespace

FpgaFabric::FpgaFabric(emu::Engine& engine, emu::Topology topology, uint32_t mtu, std::unique_ptr<SchedDevice> device)
    : engine_(engine),
      topology_(std::move(topology)),
      mtu_(mtu),
      device_(std::move(device)),
      pools_("FpgaFabric", topology_.max_hops()) {
  if (mtu_ == 0) throw std::invalid_argument("FpgaFabric: the MTU must be at least 1 byte");
  if (!device_) throw std::invalid_argument("FpgaFabric: no device");
  const auto& links = topology_.links();
  if (links.size() > device_->link_capacity()) {
    throw std::invalid_argument("FpgaFabric: the topology has " + std::to_string(links.size()) +
                                " links, but the kernel of " + device_->describe() + " holds " +
                                std::to_string(device_->link_capacity()) + " (rebuild it with a larger LINK_ADDR_W)");
  }
  lookahead_ps_ = links.empty() ? 0 : kUnknown;
  for (const emu::Link& l : links) {
    link_table_.push_back(LinkEntry{l.rate.ps_per_byte_q32(), l.latency.ps(), 0});
    lookahead_ps_ = std::min(lookahead_ps_, l.latency.ps());
  }
  loopback_ = static_cast<uint32_t>(links.size());
  links_.resize(links.size() + 1);
  stats_.resize(links.size());
}

void FpgaFabric::send(const emu::Message& m, emu::Time ready) {
  if (m.src < 0 || m.src >= topology_.npus() || m.dst < 0 || m.dst >= topology_.npus()) {
    throw std::invalid_argument("FpgaFabric::send: message " + std::to_string(m.id) + " goes from " +
                                std::to_string(m.src) + " to " + std::to_string(m.dst) +
                                ", but the topology has NPUs 0.." + std::to_string(topology_.npus() - 1));
  }
  if (ready < engine_.now()) throw std::invalid_argument("FpgaFabric::send: ready time in the past");
  if (ready > engine_.now()) {
    engine_.at(ready, *this, kInjectBit | pools_.park(m));
    return;
  }
  inject(m);
}

void FpgaFabric::inject(const emu::Message& m) {
  const uint64_t n_packets = m.bytes == 0 ? 1 : (m.bytes + mtu_ - 1) / mtu_;
  const uint32_t s = pools_.new_message();
  Pools::MessageState& msg = pools_.message(s);
  const auto route =
      topology_.route(m.src, m.dst, m.flow, pools_.route_storage(s));
  msg.id = m.id;
  msg.packets_left = n_packets;
  msg.hops = static_cast<uint32_t>(route.size());
  const uint32_t first = route.empty() ? loopback_ : route[0];
  uint64_t left = m.bytes;
  for (uint64_t i = 0; i < n_packets; ++i) {
    const uint32_t p = pools_.new_packet();
    const auto bytes = static_cast<uint32_t>(std::min<uint64_t>(left, mtu_));
    left -= bytes;
    pools_.packet(p) = Pools::Packet{kUnknown, s, kNone, bytes, 0};
    enter(first, p);
  }
}

void FpgaFabric::enter(uint32_t l, uint32_t p) {
  const uint64_t now = engine_.now().ps();
  Pools::Packet& pkt = pools_.packet(p);
  if (l == loopback_) {
    pkt.far_end_ps = now;
  } else {
    if (batch_.empty()) {
      floor_ps_ = now + lookahead_ps_;
      if (lookahead_ps_ > 0) engine_.at(emu::Time::from_ps(floor_ps_ - 1), *this, kFlush);
    }
    pkt.far_end_ps = kUnknown;
    stats_[l].bytes += pkt.bytes;
    ++stats_[l].packets;
    batch_.push_back(HopDesc{now, pkt.bytes, l, batch_.size()});
    batch_packets_.push_back(p);
  }
  pkt.next = kNone;
  LinkFifo& fifo = links_[l];
  if (fifo.tail == kNone) {
    fifo.head = fifo.tail = p;
    schedule_head(l);
  } else {
    pools_.packet(fifo.tail).next = p;
    fifo.tail = p;
  }
  if (lookahead_ps_ == 0 && !batch_.empty()) flush();
}

void FpgaFabric::schedule_head(uint32_t l) {
  const uint64_t t = pools_.packet(links_[l].head).far_end_ps;
  if (t != kUnknown && t < floor_ps_) {
    engine_.at(emu::Time::from_ps(t), *this, l);
  } else {
    deferred_heads_.push_back(l);
  }
}

void FpgaFabric::flush() {
  if (batch_.empty()) return;
  const std::size_t n = batch_.size();
  if (n > device_capacity_) {
    device_capacity_ = std::max(n, 2 * device_capacity_);
    device_->allocate(link_table_.size(), device_capacity_);
    if (!links_loaded_) device_->write_links(link_table_);
  }
  device_->write_descriptors(batch_);
  device_->start(links_loaded_ ? 0 : static_cast<uint32_t>(link_table_.size()), static_cast<uint32_t>(n));
  device_->wait();
  links_loaded_ = true;
  answers_.resize(n);
  device_->read_completions(answers_);
  for (std::size_t i = 0; i < n; ++i) {
    if (answers_[i].tag != i || answers_[i].link != batch_[i].link) {
      throw std::runtime_error("FpgaFabric: " + device_->describe() + " answered hop " + std::to_string(i) +
                               " with the completion of hop " + std::to_string(answers_[i].tag));
    }
    pools_.packet(batch_packets_[i]).far_end_ps = answers_[i].arrive_ps;
  }
  ++runs_;
  hops_ += n;
  cycles_ += device_->last_run_cycles();
  batch_.clear();
  batch_packets_.clear();
  floor_ps_ = kUnknown;
  // In the order PacketFabric would have scheduled them.
  for (const uint32_t l : deferred_heads_) engine_.at(emu::Time::from_ps(pools_.packet(links_[l].head).far_end_ps), *this, l);
  deferred_heads_.clear();
}

void FpgaFabric::on_event(uint64_t arg) {
  if (arg == kFlush) {
    flush();
    return;
  }
  if ((arg & kInjectBit) != 0) {
    const uint64_t slot = arg & ~kInjectBit;
    inject(pools_.unpark(slot));
    return;
  }
  const auto l = static_cast<uint32_t>(arg);
  LinkFifo& fifo = links_[l];
  const uint32_t p = fifo.head;
  fifo.head = pools_.packet(p).next;
  if (fifo.head == kNone) {
    fifo.tail = kNone;
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
  if (listener_ != nullptr) listener_->on_delivered(arrival.id, engine_.now());
}

std::unique_ptr<FpgaFabric> make_fpga_fabric(emu::Engine& engine, const emu::Topology& topology, uint32_t mtu,
                                             const std::string& device_spec, const std::string& xclbin) {
  return std::make_unique<FpgaFabric>(engine, topology, mtu == 0 ? ~uint32_t{0} : mtu,
                                      open_sched_device(device_spec, xclbin));
}

}  // namespace fabemu::host::fpga
