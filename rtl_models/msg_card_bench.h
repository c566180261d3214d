// The host side of a Verilated message-level card: the streams and calls of MsgSchedModel's interface on any
// top with sched_msg's ports (sched_msg_tx for SchedMsgHwEmu, sched_hil for SchedHilHwEmu). Route links and
// descriptors go in on their valid/ready streams (routes first: a descriptor may name any route appended
// before it), the watermark is a register write after every descriptor before it, delivery records come
// out on a valid/ready stream. CRTP: `Bench` clocks the top in its tick(), calling drive() before the
// evaluation with the clock low and observe() after it, and says in settled() what else a finished sync
// waits for. Descriptors are checked as MsgSchedModel checks them (the same std::invalid_argument); what
// the card's tables cannot hold is a std::runtime_error. The functions that touch the top are in
// msg_card_bench_impl.h, instantiated by the bench's .cpp (the Verilated class is complete only there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hw/sched/include/fabemu_msg_map.h"
#include "rtl_models/msg_sched_model.h"

namespace fabemu::rtl {

template <class Bench, class V>
class MsgCardBench {
 public:
  // The Verilated builds' parameters (rtl_models/CMakeLists.txt).
  static constexpr unsigned kLinkAddrW = 10;
  static constexpr unsigned kRouteAw = 16;
  static constexpr unsigned kMsgAw = 12;
  static constexpr unsigned kPktAw = 14;

  struct LinkCounters {
    uint64_t bytes = 0;
    uint64_t packets = 0;
  };

  void append_route(std::span<const uint32_t> link_ids) {
    check_msg_route(link_ids, links_);
    if (route_size_ + link_ids.size() > (std::size_t{1} << kRouteAw)) {
      throw std::runtime_error(who_ + ": the route array holds " + std::to_string(1u << kRouteAw) + " link ids");
    }
    route_in_.insert(route_in_.end(), link_ids.begin(), link_ids.end());
    route_size_ += link_ids.size();
  }
  std::size_t route_size() const noexcept { return route_size_; }
  void push(const hw::msg::MsgDesc& d) {
    check_msg_desc(d, watermark_, route_size_);
    desc_in_.push_back(d);
  }
  uint64_t known_until();
  std::size_t take(std::vector<hw::msg::Delivery>& out) {
    const std::size_t n = out_.size();
    out.insert(out.end(), out_.begin(), out_.end());
    out_.clear();
    return n;
  }
  LinkCounters link_counters(uint32_t link);
  uint64_t events();
  uint64_t packet_hops();
  uint64_t watermark() const noexcept { return watermark_; }

 protected:
  // `who` names the bench in errors; `pool_slots` the packet pool entries the core may use.
  MsgCardBench(std::string who, std::size_t links, uint32_t pool_slots)
      : who_(std::move(who)), links_(links), pool_slots_(pool_slots) {
    if (links > (std::size_t{1} << kLinkAddrW)) {
      throw std::invalid_argument(who_ + ": " + std::to_string(links) + " links, the core holds " +
                                  std::to_string(1u << kLinkAddrW));
    }
  }
  ~MsgCardBench() = default;

  // Writes the link table, one entry a cycle (after reset).
  void load_links(std::span<const hw::sched::LinkEntry> links);
  // The streams' inputs for this cycle; `show_rt`/`show_d` false: that stream shows no beat (random gaps).
  void drive(bool show_rt, bool show_d);
  // After the evaluation with the clock low: what the streams transferred at the coming edge.
  void observe();
  // A new watermark, written after the descriptors before it (false: not above the last one).
  bool set_watermark(uint64_t w) {
    if (w <= watermark_) return false;
    watermark_ = w;
    wm_pending_ = true;
    return true;
  }
  // Clocks until every input is in, the core idle (every event before the watermark processed, its bound up
  // to date), every record out and the bench settled. Idle is trusted after three quiet cycles (it is
  // registered from the state the last input left).
  void sync();
  uint32_t pool_slots() const noexcept { return pool_slots_; }

 private:
  Bench& bench() { return static_cast<Bench&>(*this); }
  V& top() { return bench().top(); }

  std::string who_;
  std::size_t links_ = 0;
  uint32_t pool_slots_ = 0;
  std::size_t route_size_ = 0;
  std::deque<uint32_t> route_in_;
  std::deque<hw::msg::MsgDesc> desc_in_;
  std::vector<hw::msg::Delivery> out_;
  uint64_t watermark_ = 0;
  bool wm_pending_ = false;
};

}  // namespace fabemu::rtl
