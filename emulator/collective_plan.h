// Collective planning: a pure function from a collective (its type, its group, the dimensions it
// involves), the network and the system options to its phases — which collective runs over which
// dimension with which algorithm, on what share of the chunk, and whether it may be evaluated in
// closed form. Also the geometry the walker needs to find a member's peers in a phase.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emulator/collective.h"
#include "emulator/config.h"
#include "emulator/time.h"
#include "traces/attrs.h"

namespace fabemu::emu {

// One phase of a collective: a PhaseSchedule over the members of one subgroup.
struct Phase {
  PhaseOp op;
  CollectiveAlgo algo;
  int32_t dim;        // the network dimension it runs on (its communication streams)
  int32_t n;          // members per subgroup
  bool hier;          // subgroup = ranks along dimension `dim` (default group only); else the whole group
  uint64_t mul, div;  // phase bytes = chunk bytes * mul / div
  uint32_t step_offset;  // steps of the earlier phases
  uint32_t steps;
  bool closed_form;
  friend bool operator==(const Phase&, const Phase&) = default;
};

struct CollectivePlan {
  std::vector<Phase> phases;
  uint32_t total_steps = 0;  // over all phases
};

// What a member spends after a step's receives are in, before its next step: the endpoint delay and,
// in reducing steps, the local reduction (read two operands, write one, at local memory bandwidth).
struct StepCosts {
  Duration endpoint_delay;
  Rate mem_rate = Rate::from_ps_per_byte_q32(0);
  Duration reduce(uint64_t bytes) const { return mem_rate.ser(3 * bytes); }
  Duration after_step(uint64_t reduce_bytes) const { return endpoint_delay + reduce(reduce_bytes); }
};

// What planning needs to know of one collective.
struct CollectiveRequest {
  traces::CollectiveType type;
  bool default_group;  // the group of all ranks (hierarchical over the dimensions its ranks span)
  int32_t members;
  const std::optional<std::vector<bool>>* involved_dim = nullptr;  // nullptr or absent: all dimensions
};

// What planning needs to know of the network, the workload and the run.
struct PlanContext {
  const SystemConfig* system;
  // default_group_span(): ranks of the default group along each dimension; empty = flat.
  std::vector<int32_t> span;
  // The fabric evaluates step-synchronous phases in closed form (AnalyticalFabric, closed_form on).
  bool closed_form = false;
};

// The single-phase operation a collective type runs (BARRIER: an all-reduce of nothing).
PhaseOp flat_op(traces::CollectiveType type);

// Where the default group's ranks 0..ranks-1 sit on a network of several dimensions: span[d] ranks
// along dimension d. They fill whole dimensions from the first, and at most one more in part (4 ranks on
// 4x2 span [4, 1], 2 ranks [2, 1], 8 ranks [4, 2]); hierarchical collectives of all ranks run over the
// dimensions they span. Any other placement (6 ranks on 4x2) runs them flat over the ranks (empty span,
// and a warning in `warnings`).
std::vector<int32_t> default_group_span(const NetworkConfig& network, int64_t ranks, std::set<std::string>& warnings);

// Rank distance between neighbours along each dimension (1 for a network without dimensions).
std::vector<int32_t> dimension_strides(const NetworkConfig& network);

// Fills `out` (its vectors reused) with the phases of `c`; why an algorithm is replaced or missing goes
// to `warnings`.
void plan_collective(const CollectiveRequest& c, const PlanContext& ctx, CollectivePlan& out,
                     std::set<std::string>& warnings);
CollectivePlan plan_collective(const CollectiveRequest& c, const PlanContext& ctx, std::set<std::string>& warnings);

// How many chunks a collective of `bytes` per member is cut into: `splits` (preferred-dataset-splits), at most
// one per byte; one for a barrier or a collective of nothing.
inline uint32_t collective_chunks(traces::CollectiveType type, uint64_t bytes, int64_t splits) {
  if (bytes == 0 || type == ChakraProtoMsg::BARRIER) return 1;
  const auto chunks = static_cast<uint32_t>(std::max<int64_t>(1, splits));
  return chunks > bytes ? static_cast<uint32_t>(bytes) : chunks;
}
// Bytes of chunk c of `bytes` cut into `chunks`: the first bytes % chunks chunks carry one byte more.
inline uint64_t chunk_share(uint64_t bytes, uint32_t chunks, uint32_t c) {
  return bytes / chunks + (c < bytes % chunks ? 1 : 0);
}
// The schedule of phase P for chunk c of `chunk_bytes` (the double binary tree's two trees take turns by chunk).
inline PhaseSchedule phase_schedule(const Phase& P, uint64_t chunk_bytes, uint32_t c) {
  return PhaseSchedule(P.op, P.algo, P.n, chunk_bytes * P.mul / P.div, 0, static_cast<int>(c & 1));
}

// Member positions inside a phase. `strides` is dimension_strides(); m is a member of the collective.
// Position of member m in phase P:
inline int32_t phase_index(const Phase& P, const std::vector<int32_t>& strides, int32_t m) {
  if (!P.hier) return m;
  return (m / strides[static_cast<size_t>(P.dim)]) % P.n;
}
// The member at position x of m's subgroup in phase P:
inline int32_t phase_member(const Phase& P, const std::vector<int32_t>& strides, int32_t m, int32_t x) {
  if (!P.hier) return x;
  const int32_t stride = strides[static_cast<size_t>(P.dim)];
  return m - phase_index(P, strides, m) * stride + x * stride;
}
// The first member of m's subgroup in phase P (0 for a flat phase): names the subgroup.
inline int32_t subgroup_of(const Phase& P, const std::vector<int32_t>& strides, int32_t m) {
  return P.hier ? phase_member(P, strides, m, 0) : 0;
}

}  // namespace fabemu::emu
