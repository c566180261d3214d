// MsgCardBench's functions that touch the Verilated top (msg_card_bench.h): included by the .cpp of a
// bench, after the Verilated class's header, with an explicit instantiation.
#pragma once

#include "rtl_models/msg_card_bench.h"

namespace fabemu::rtl {

template <class Bench, class V>
uint64_t MsgCardBench<Bench, V>::known_until() {
  sync();
  return top().known_until;
}

template <class Bench, class V>
typename MsgCardBench<Bench, V>::LinkCounters MsgCardBench<Bench, V>::link_counters(uint32_t link) {
  sync();
  top().cnt_addr = static_cast<uint16_t>(link);
  for (int i = 0; i < 3; ++i) bench().tick();
  return LinkCounters{top().cnt_bytes, top().cnt_packets};
}

template <class Bench, class V>
uint64_t MsgCardBench<Bench, V>::events() {
  sync();
  return top().n_events;
}

template <class Bench, class V>
uint64_t MsgCardBench<Bench, V>::packet_hops() {
  sync();
  return top().n_hops;
}

template <class Bench, class V>
void MsgCardBench<Bench, V>::load_links(std::span<const hw::sched::LinkEntry> links) {
  V& t = top();
  for (std::size_t l = 0; l < links.size(); ++l) {
    t.lt_wr = 1;
    t.lt_addr = static_cast<uint16_t>(l);
    t.lt_rate = links[l].rate_q32;
    t.lt_latency = links[l].latency_ps;
    t.lt_free = links[l].free_ps;
    bench().tick();
  }
  t.lt_wr = 0;
}

template <class Bench, class V>
void MsgCardBench<Bench, V>::drive(bool show_rt, bool show_d) {
  V& t = top();
  t.rt_valid = show_rt && !route_in_.empty();
  if (t.rt_valid) t.rt_link = static_cast<uint16_t>(route_in_.front());
  t.d_valid = show_d && route_in_.empty() && !desc_in_.empty();
  if (t.d_valid) {
    const hw::msg::MsgDesc& d = desc_in_.front();
    t.d_ready_ps = d.ready_ps;
    t.d_id = d.id;
    t.d_bytes = d.bytes;
    t.d_hops = static_cast<uint8_t>(d.hops);
    t.d_route = static_cast<uint16_t>(d.route);
    t.d_src = d.src;
    t.d_dst = d.dst;
  }
  t.wm_wr = wm_pending_ && desc_in_.empty() && route_in_.empty();
  t.wm = watermark_;
}

template <class Bench, class V>
void MsgCardBench<Bench, V>::observe() {
  const V& t = top();
  if (t.rt_valid && t.rt_ready) route_in_.pop_front();
  if (t.d_valid && t.d_ready) desc_in_.pop_front();
  if (t.wm_wr) wm_pending_ = false;
  if (t.r_valid && t.r_ready) out_.push_back(hw::msg::Delivery{t.r_id, t.r_time, hw::msg::kNoCycle, t.r_packets});
}

template <class Bench, class V>
void MsgCardBench<Bench, V>::sync() {
  const V& t = top();
  int quiet = 0;
  while (quiet < 3) {
    bench().tick();
    if (t.err_pool) {
      throw std::runtime_error(who_ + ": the packet pool (" + std::to_string(pool_slots_) +
                               " entries) ran out; the core stopped (sticky err_pool)");
    }
    const bool input = !route_in_.empty() || !desc_in_.empty() || wm_pending_;
    if (!desc_in_.empty() && route_in_.empty() && t.idle && !t.d_ready) {
      throw std::runtime_error(who_ + ": the message table (" + std::to_string(1u << kMsgAw) +
                               " messages) is full and nothing is left to process below the watermark " +
                               std::to_string(watermark_) + " ps");
    }
    quiet = !input && t.idle && !t.r_valid && bench().settled() ? quiet + 1 : 0;
  }
}

}  // namespace fabemu::rtl
