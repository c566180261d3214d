// Cycle-level C++ model of hw/sched/rtl/sched_hop_core.sv: the same nine pipeline stages, the same
// global stall (on the output skid buffer's registered ready), the same block-RAM read timing (latency
// 2, read-old) and the same four-deep forwarding of link_free, so that for any input/back-pressure
// sequence it produces the RTL's outputs on the same cycles (test_fpga_rtl_core checks).
#pragma once

#include <cstdint>
#include <vector>

#include "hw/sched/include/fabemu_sched_map.h"

namespace fabemu::rtl {

using hw::sched::Completion;
using hw::sched::HopDesc;
using hw::sched::LinkEntry;

// The ceil(bytes * q / 2^32) of DESIGN.md, as the RTL computes it (96-bit product, low 64 bits kept).
uint64_t ser_ps(uint32_t bytes, uint64_t rate_q32) noexcept;

// The core's input wires for one cycle.
struct CoreInputs {
  bool cfg_wr_en = false;
  uint32_t cfg_wr_link = 0;
  LinkEntry cfg;
  bool s_valid = false;
  HopDesc hop;
  bool m_ready = true;
};

// The core's output wires during one cycle (functions of its registers only: the skid buffer).
struct CoreOutputs {
  bool s_ready = false;
  bool m_valid = false;
  Completion m;
  bool busy = false;
};

class SchedCoreModel {
 public:
  // link_addr_w: log2 of the link-table capacity (the RTL's LINK_ADDR_W, 1..16).
  explicit SchedCoreModel(unsigned link_addr_w);

  // The outputs of the current cycle, before the clock edge (functions of registers only).
  CoreOutputs outputs() const noexcept;
  // One rising edge with `in` on the inputs.
  void tick(const CoreInputs& in) noexcept;
  void reset() noexcept;

  // Cycles from acceptance to the completion on the output: nine stages and the skid's output register.
  static constexpr unsigned kLatency = 10;

 private:
  struct Stage {
    bool valid = false;
    uint64_t time = 0;
    uint32_t bytes = 0;
    uint32_t link = 0;
    uint64_t tag = 0;
    uint64_t lat = 0;       // s3..s9
    uint64_t rate = 0;      // s3..s7: the product's second factor (the RTL keeps partial products)
    uint64_t ser = 0;       // s8
    bool hit[5] = {};       // s7: hit[k], the hop k ahead is on the same link (k = 1..4); s8: hit[1] = sel
    uint64_t other = 0;     // s8: link_free unless the hop one ahead is on the same link
    uint64_t depart = 0;    // s9
    uint64_t free = 0;      // s9: the new link_free
  };
  struct Fwd {              // a hop that left S9: its RAM write may be missed by a read in S5
    bool valid = false;
    uint32_t link = 0;
    uint64_t free = 0;
  };
  void update_rams(const CoreInputs& in, bool en) noexcept;
  void update_skid(bool m_ready) noexcept;
  void advance(const CoreInputs& in, const LinkEntry& cfg_q, uint64_t free_q) noexcept;

  uint32_t mask_;
  std::vector<LinkEntry> cfg_;   // rate, latency (free unused)
  std::vector<uint64_t> free_;
  LinkEntry cfg_latch_, cfg_q_;  // cfg RAM read latch and output register (cfg_q_ is S2's word)
  uint64_t free_latch_ = 0;      // free RAM read latch and output register (free_q_ is S7's word)
  uint64_t free_q_ = 0;
  Stage s_[10];                  // s_[1..9]
  Fwd f_[3];                     // f_[1], f_[2]
  bool out_valid_ = false;       // output skid buffer: output register and skid register
  bool skid_valid_ = false;
  Completion out_, skid_;
};

// Functional run of a descriptor stream through the core, in order: what the RTL computes, without
// cycles. `links` is the link table (index = link id).
std::vector<Completion> schedule_hops(std::vector<LinkEntry> links, const std::vector<HopDesc>& hops);

}  // namespace fabemu::rtl
