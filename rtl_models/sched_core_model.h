// Cycle-level C++ model of hw/sched/rtl/sched_hop_core.sv: the same six pipeline stages, the same
// global stall, the same block-RAM read timing and the same one-deep forwarding, so that for any
// input/back-pressure sequence it produces the RTL's outputs on the same cycles (test_fpga_core checks).
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

// The core's output wires during one cycle (a function of its registers and m_ready).
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

  // The outputs of the current cycle, before the clock edge.
  CoreOutputs outputs(bool m_ready) const noexcept;
  // One rising edge with `in` on the inputs.
  void tick(const CoreInputs& in) noexcept;
  void reset() noexcept;

  static constexpr unsigned kLatency = 6;  // cycles from acceptance to the completion on the output

 private:
  struct Stage {
    bool valid = false;
    uint64_t time = 0;
    uint32_t bytes = 0;
    uint32_t link = 0;
    uint64_t tag = 0;
    uint64_t lat = 0;
    uint64_t ser = 0;       // s3, s4
    uint64_t rate = 0;      // s2: the product's second factor (the RTL keeps the product)
    uint64_t depart = 0;    // s5, s6
    uint64_t free_or_arrive = 0;  // s5: new link_free; s6: arrival
  };
  uint32_t mask_;
  std::vector<LinkEntry> cfg_;   // rate, latency (free unused)
  std::vector<uint64_t> free_;
  LinkEntry cfg_q_;              // cfg RAM read register
  uint64_t free_q_ = 0;          // free RAM read register
  Stage s_[7];                   // s_[1..6]
  bool fwd_valid_ = false;
  uint32_t fwd_link_ = 0;
  uint64_t fwd_free_ = 0;
};

// Functional run of a descriptor stream through the core, in order: what the RTL computes, without
// cycles. `links` is the link table (index = link id).
std::vector<Completion> schedule_hops(std::vector<LinkEntry> links, const std::vector<HopDesc>& hops);

}  // namespace fabemu::rtl
