#include "rtl_models/sched_core_model.h"

#include <algorithm>
#include <iterator>
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
  for (auto& f : f_) f.valid = false;
  out_valid_ = false;
  skid_valid_ = false;
}

CoreOutputs SchedCoreModel::outputs() const noexcept {
  CoreOutputs o;
  o.s_ready = !skid_valid_;
  o.m_valid = out_valid_;
  o.m = out_;
  o.busy = out_valid_ || skid_valid_;
  for (int i = 1; i <= 9; ++i) o.busy = o.busy || s_[i].valid;
  return o;
}

void SchedCoreModel::tick(const CoreInputs& in) noexcept {
  const bool en = !skid_valid_;  // the skid buffer's registered ready
  const LinkEntry cfg_q = cfg_q_;
  const uint64_t free_q = free_q_;
  update_skid(in.m_ready);
  update_rams(in, en);
  if (en) advance(in, cfg_q, free_q);
}

// Both RAMs read at this edge the words from before its writes (read-old), two edges before use.
void SchedCoreModel::update_rams(const CoreInputs& in, bool en) noexcept {
  if (en) {
    cfg_q_ = cfg_latch_;
    cfg_latch_ = cfg_[in.hop.link & mask_];
    free_q_ = free_latch_;
    free_latch_ = free_[s_[5].link];
  }
  if (in.cfg_wr_en) {
    cfg_[in.cfg_wr_link & mask_] = LinkEntry{in.cfg.rate_q32, in.cfg.latency_ps, 0};
    free_[in.cfg_wr_link & mask_] = in.cfg.free_ps;
  } else if (en && s_[9].valid) {
    free_[s_[9].link] = s_[9].free;
  }
}

// The output skid buffer, whose input is S9 (taken whenever the skid register is empty).
void SchedCoreModel::update_skid(bool m_ready) noexcept {
  const Stage& s9 = s_[9];
  const Completion in{s9.depart, s9.free + s9.lat, s9.tag, s9.link, s9.bytes};
  if (!out_valid_ || m_ready) {
    if (skid_valid_) {
      out_ = skid_;
      skid_valid_ = false;
    } else {
      out_valid_ = s9.valid;
      out_ = in;
    }
  } else if (s9.valid && !skid_valid_) {
    skid_valid_ = true;
    skid_ = in;
  }
}

// One enabled edge: every stage takes its predecessor's hop, with the RTL's per-stage work, all of it
// computed from the registers before the edge (cfg_q, free_q: the RAMs' output registers).
void SchedCoreModel::advance(const CoreInputs& in, const LinkEntry& cfg_q, uint64_t free_q) noexcept {
  Stage old[10];
  std::copy(std::begin(s_), std::end(s_), std::begin(old));
  const Fwd f1 = f_[1];
  const Fwd f2 = f_[2];

  // S9 <- S8: the link update, the loop-carried computation.
  const Stage& s8 = old[8];
  const uint64_t free_cur = s8.hit[1] ? old[9].free : s8.other;
  s_[9] = s8;
  s_[9].depart = std::max(s8.time, free_cur);
  s_[9].free = s_[9].depart + s8.ser;
  f_[2] = f1;
  f_[1] = Fwd{old[9].valid, old[9].link, old[9].free};

  // S8 <- S7: ser; the newest of the hops two, three and four ahead on the same link, else the RAM word.
  const Stage& s7 = old[7];
  s_[8] = s7;
  s_[8].ser = ser_ps(s7.bytes, s7.rate);
  s_[8].other = s7.hit[2] ? old[9].free : s7.hit[3] ? f1.free : s7.hit[4] ? f2.free : free_q;

  // S7 <- S6: which hops ahead (in S7, S8, S9, the first forwarding register) share the link.
  const Stage& s6 = old[6];
  s_[7] = s6;
  s_[7].hit[1] = old[7].valid && old[7].link == s6.link;
  s_[7].hit[2] = old[8].valid && old[8].link == s6.link;
  s_[7].hit[3] = old[9].valid && old[9].link == s6.link;
  s_[7].hit[4] = f1.valid && f1.link == s6.link;

  // S6..S4 <- S5..S3: the multiplier's stages (the product is formed whole in S8's ser).
  for (int k = 6; k >= 4; --k) s_[k] = old[k - 1];
  // S3 <- S2: the cfg word from the RAM's output register.
  s_[3] = old[2];
  s_[3].rate = cfg_q.rate_q32;
  s_[3].lat = cfg_q.latency_ps;
  s_[2] = old[1];
  Stage n1;
  n1.valid = in.s_valid;
  n1.time = in.hop.time_ps;
  n1.bytes = in.hop.bytes;
  n1.link = in.hop.link & mask_;
  n1.tag = in.hop.tag;
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
