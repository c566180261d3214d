#include "rtl_models/sched_msg_hwemu.h"

#include <stdexcept>
#include <string>

#include "Vsched_msg.h"
#include "rtl_models/msg_sched_model.h"
#include "verilated.h"

namespace fabemu::rtl {

SchedMsgHwEmu::SchedMsgHwEmu(std::span<const hw::sched::LinkEntry> links, uint32_t mtu, MsgHwEmuOptions options)
    : ctx_(std::make_unique<VerilatedContext>()), opt_(options), rng_(options.seed), links_(links.size()) {
  check_msg_card(links, mtu);
  if (links.size() > (std::size_t{1} << kLinkAddrW)) {
    throw std::invalid_argument("sched_msg hw-emu: " + std::to_string(links.size()) + " links, the core holds " +
                                std::to_string(1u << kLinkAddrW));
  }
  if (opt_.pool_slots == 0 || opt_.pool_slots > (1u << kPktAw)) opt_.pool_slots = 1u << kPktAw;
  top_ = std::make_unique<Vsched_msg>(ctx_.get(), "sched_msg");
  Vsched_msg& t = *top_;
  t.cfg_mtu = mtu;
  t.cfg_pool_slots = static_cast<uint16_t>(opt_.pool_slots);
  t.rst = 1;
  t.clk = 0;
  t.eval();
  for (int i = 0; i < 4; ++i) tick();
  t.rst = 0;
  for (std::size_t l = 0; l < links.size(); ++l) {
    t.lt_wr = 1;
    t.lt_addr = static_cast<uint16_t>(l);
    t.lt_rate = links[l].rate_q32;
    t.lt_latency = links[l].latency_ps;
    t.lt_free = links[l].free_ps;
    tick();
    latency_.push_back(links[l].latency_ps);
  }
  t.lt_wr = 0;
  tick();
}

SchedMsgHwEmu::~SchedMsgHwEmu() {
  if (top_) top_->final();
}

bool SchedMsgHwEmu::stall(uint32_t per_256) { return per_256 != 0 && (rng_() & 0xff) < per_256; }

void SchedMsgHwEmu::tick() {
  Vsched_msg& t = *top_;
  const bool rt_show = !route_in_.empty() && !stall(opt_.in_stall_per_256);
  t.rt_valid = rt_show;
  if (rt_show) t.rt_link = static_cast<uint16_t>(route_in_.front());
  // A descriptor may name any route appended before it: the routes go in first.
  const bool d_show = route_in_.empty() && !desc_in_.empty() && !stall(opt_.in_stall_per_256);
  t.d_valid = d_show;
  if (d_show) {
    const hw::msg::MsgDesc& d = desc_in_.front();
    t.d_ready_ps = d.ready_ps;
    t.d_id = d.id;
    t.d_bytes = d.bytes;
    t.d_hops = static_cast<uint8_t>(d.hops);
    t.d_route = static_cast<uint16_t>(d.route);
  }
  // The watermark follows every descriptor pushed before it.
  t.wm_wr = wm_pending_ && desc_in_.empty() && route_in_.empty();
  t.wm = watermark_;
  t.r_ready = !stall(opt_.out_stall_per_256);
  t.clk = 0;
  t.eval();
  if (!t.idle) ++busy_cycles_;
  if (t.rt_valid && t.rt_ready) route_in_.pop_front();
  if (t.d_valid && t.d_ready) desc_in_.pop_front();
  if (t.wm_wr) wm_pending_ = false;
  if (t.r_valid && t.r_ready) {
    out_.push_back(hw::msg::Delivery{t.r_id, t.r_time, hw::msg::kNoCycle, t.r_packets});
  }
  t.clk = 1;
  t.eval();
  ++cycles_;
}

void SchedMsgHwEmu::sync() {
  Vsched_msg& t = *top_;
  // Idle is trusted two cycles after the last input (it is registered from the state the input left).
  int quiet = 0;
  while (quiet < 3) {
    tick();
    if (t.err_pool) {
      throw std::runtime_error("sched_msg hw-emu: the packet pool (" + std::to_string(opt_.pool_slots) +
                               " entries) ran out; the core stopped (sticky err_pool)");
    }
    const bool input = !route_in_.empty() || !desc_in_.empty() || wm_pending_;
    if (!desc_in_.empty() && route_in_.empty() && t.idle && !t.d_ready) {
      throw std::runtime_error("sched_msg hw-emu: the message table (" + std::to_string(1u << kMsgAw) +
                               " messages) is full and nothing is left to process below the watermark " +
                               std::to_string(watermark_) + " ps");
    }
    quiet = !input && t.idle && !t.r_valid ? quiet + 1 : 0;
  }
}

void SchedMsgHwEmu::append_route(std::span<const uint32_t> link_ids) {
  check_msg_route(link_ids, links_);
  if (route_size_ + link_ids.size() > (std::size_t{1} << kRouteAw)) {
    throw std::runtime_error("sched_msg hw-emu: the route array holds " + std::to_string(1u << kRouteAw) +
                             " link ids");
  }
  route_in_.insert(route_in_.end(), link_ids.begin(), link_ids.end());
  route_size_ += link_ids.size();
}

void SchedMsgHwEmu::push(const hw::msg::MsgDesc& d) {
  check_msg_desc(d, watermark_, route_size_);
  desc_in_.push_back(d);
}

void SchedMsgHwEmu::advance(uint64_t w) {
  if (w <= watermark_) return;
  watermark_ = w;
  wm_pending_ = true;
  sync();
}

uint64_t SchedMsgHwEmu::known_until() {
  sync();
  return top_->known_until;
}

std::size_t SchedMsgHwEmu::take(std::vector<hw::msg::Delivery>& out) {
  const std::size_t n = out_.size();
  out.insert(out.end(), out_.begin(), out_.end());
  out_.clear();
  return n;
}

SchedMsgHwEmu::LinkCounters SchedMsgHwEmu::link_counters(uint32_t link) {
  sync();
  top_->cnt_addr = static_cast<uint16_t>(link);
  for (int i = 0; i < 3; ++i) tick();
  return LinkCounters{top_->cnt_bytes, top_->cnt_packets};
}

uint64_t SchedMsgHwEmu::events() {
  sync();
  return top_->n_events;
}

uint64_t SchedMsgHwEmu::packet_hops() {
  sync();
  return top_->n_hops;
}

uint64_t SchedMsgHwEmu::scan_cycles() const { return top_->n_scan; }

bool SchedMsgHwEmu::pool_error() const { return top_->err_pool != 0; }

}  // namespace fabemu::rtl
