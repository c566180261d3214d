// The closed form of one phase of one subgroup on a congestion-unaware fabric (AnalyticalFabric): once
// every member has started the phase, their whole schedule in one pass, with exactly the times the
// message-by-message walk gives. begin(x) is when position x begins its current step (its sends leave
// then); a step with receives ends at max(begin, last arrival) + endpoint delay + reduction, one without
// ends at once. Rings take a tight loop (and, when every edge has one delay, an O(n) sliding-window form).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "emulator/collective.h"
#include "emulator/collective_plan.h"
#include "emulator/packet_fabric.h"
#include "emulator/run_diagnostics.h"
#include "emulator/time.h"

namespace fabemu::emu {

class ClosedForm {
 public:
  ClosedForm(const AnalyticalFabric& fabric, StepCosts costs) : fabric_(fabric), costs_(costs) {}

  struct Totals {
    uint64_t messages = 0;
    uint64_t bytes = 0;
  };

  // Positions 0..n-1 of the subgroup: each one's rank and the time it begins its first step.
  void resize(size_t n) {
    begin_.resize(n);
    arrive_.resize(n);
    rank_of_.resize(n);
  }
  void set_position(size_t x, int32_t rank, Time begin) {
    rank_of_[x] = rank;
    begin_[x] = begin;
  }
  // Runs phase P (schedule S) to its end; afterwards end(x) is when position x ends it. Its messages go
  // to `log` (collective `coll`): one by one while the timeline wants them, else a ring's all at once.
  Totals run(const PhaseSchedule& S, const Phase& P, uint64_t flow, uint64_t coll, MessageLog& log);
  Time end(size_t x) const noexcept { return begin_[x]; }
  int32_t rank(size_t x) const noexcept { return rank_of_[x]; }

 private:
  __extension__ using i128 = __int128;  // quiet under -Wpedantic, as detail::u128

  Totals ring(const PhaseSchedule& S, const Phase& P, uint64_t flow);
  void ring_uniform(const PhaseSchedule& S, uint32_t steps);
  Totals general(const PhaseSchedule& S, const Phase& P, uint64_t flow, uint64_t coll, MessageLog& log);

  const AnalyticalFabric& fabric_;
  StepCosts costs_;
  // Scratch, reused from phase to phase.
  std::vector<Time> begin_, arrive_;
  std::vector<int32_t> rank_of_;
  std::vector<uint64_t> begin_ps_, edge_ps_;
  std::vector<std::pair<int64_t, i128>> window_;
  size_t window_head_ = 0;
};

}  // namespace fabemu::emu
