#include "rtl_models/sched_core_model.h"

#include <algorithm>
#include <stdexcept>

namespace fabemu::rtl {

uint64_t ser_ps(uint32_t bytes, uint64_t rate_q32) noexcept {
  __extension__ using u128 = unsigned __int128;
  const u128 prod = u128{bytes} * rate_q32;
  return static_cast<uint64_t>(prod >> 32) + ((static_cast<uint64_t>(prod) & 0xffff'ffffu) != 0 ? 1 : 0);
}

SchedCoreModel::SchedCoreModel(unsigned link_addr_w) {
  if (link_addr_w < 1 || link_addr_w > 16) throw std::invalid_argument("SchedCoreModel: link_addr_w must be 1..16");
  mask_ = (uint32_t{1} << link_addr_w) - 1;
  cfg_.resize(std::size_t{mask_} + 1);
  free_.resize(std::size_t{mask_} + 1);
}

void SchedCoreModel::reset() noexcept {
  for (auto& s : s_) s.valid = false;
  fwd_valid_ = false;
}

CoreOutputs SchedCoreModel::outputs(bool m_ready) const noexcept {
  CoreOutputs o;
  const bool en = !s_[6].valid || m_ready;
  o.s_ready = en;
  o.m_valid = s_[6].valid;
  o.m = Completion{s_[6].depart, s_[6].free_or_arrive, s_[6].tag, s_[6].link, s_[6].bytes};
  o.busy = false;
  for (int i = 1; i <= 6; ++i) o.busy = o.busy || s_[i].valid;
  return o;
}

void SchedCoreModel::tick(const CoreInputs& in) noexcept {
  const bool en = !s_[6].valid || in.m_ready;
  // Stage 4's link update, from the registers before the edge.
  const Stage& s4 = s_[4];
  const uint64_t free_cur = (fwd_valid_ && fwd_link_ == s4.link) ? fwd_free_ : free_q_;
  const uint64_t depart = std::max(s4.time, free_cur);
  const uint64_t free_new = depart + s4.ser;

  // RAMs: reads see the words before this edge's writes (read-old), as the RTL's.
  const uint32_t in_link = in.hop.link & mask_;
  const LinkEntry cfg_q = cfg_q_;  // the word stage 1 holds, read at the previous edge
  if (en) {
    cfg_q_ = cfg_[in_link];
    free_q_ = free_[s_[3].link];
  }
  if (in.cfg_wr_en) {
    cfg_[in.cfg_wr_link & mask_] = LinkEntry{in.cfg.rate_q32, in.cfg.latency_ps, 0};
    free_[in.cfg_wr_link & mask_] = in.cfg.free_ps;
  } else if (en && s4.valid) {
    free_[s4.link] = free_new;
  }
  if (!en) return;

  const Stage old5 = s_[5];
  const Stage old4 = s_[4];
  const Stage old3 = s_[3];
  const Stage old2 = s_[2];
  const Stage old1 = s_[1];
  Stage n6 = old5;
  n6.free_or_arrive = old5.free_or_arrive + old5.lat;
  Stage n5 = old4;
  n5.depart = depart;
  n5.free_or_arrive = free_new;
  fwd_valid_ = old4.valid;
  fwd_link_ = old4.link;
  fwd_free_ = free_new;
  Stage n4 = old3;
  Stage n3 = old2;
  n3.ser = ser_ps(old2.bytes, old2.rate);
  Stage n2 = old1;
  n2.rate = cfg_q.rate_q32;
  n2.lat = cfg_q.latency_ps;
  Stage n1;
  n1.valid = in.s_valid;
  n1.time = in.hop.time_ps;
  n1.bytes = in.hop.bytes;
  n1.link = in_link;
  n1.tag = in.hop.tag;
  s_[6] = n6;
  s_[5] = n5;
  s_[4] = n4;
  s_[3] = n3;
  s_[2] = n2;
  s_[1] = n1;
}

std::vector<Completion> schedule_hops(std::vector<LinkEntry> links, const std::vector<HopDesc>& hops) {
  std::vector<Completion> out;
  out.reserve(hops.size());
  for (const HopDesc& h : hops) {
    if (h.link >= links.size()) throw std::out_of_range("schedule_hops: link id outside the link table");
    LinkEntry& l = links[h.link];
    const uint64_t depart = std::max(h.time_ps, l.free_ps);
    l.free_ps = depart + ser_ps(h.bytes, l.rate_q32);
    out.push_back(Completion{depart, l.free_ps + l.latency_ps, h.tag, h.link, h.bytes});
  }
  return out;
}

}  // namespace fabemu::rtl
