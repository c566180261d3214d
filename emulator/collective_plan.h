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
  int32_t stride;     // member-index distance between neighbours of a subgroup along `dim`; 0: the subgroup is
                      // the whole collective (a flat phase)
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

// Where a collective's members sit on the network's dimensions: span[d] members along dimension d (1: the
// members do not spread along it) and stride[d], the distance in member indices between neighbours along it
// (member m's position along d is (m / stride[d]) % span[d]). An empty span: the members are no grid (flat).
struct MemberGrid {
  std::vector<int32_t> span;
  std::vector<int32_t> stride;
  friend bool operator==(const MemberGrid&, const MemberGrid&) = default;
};

// What planning needs to know of one collective.
struct CollectiveRequest {
  traces::CollectiveType type;
  int32_t members;
  // The members' grid (default_group_grid() for the group of all ranks, group_grid() for a smaller one):
  // hierarchical over the dimensions it spans; nullptr or an empty span: one flat phase over the members.
  const MemberGrid* grid = nullptr;
  const std::optional<std::vector<bool>>* involved_dim = nullptr;  // nullptr or absent: all dimensions
};

// What planning needs to know of the system and the run.
struct PlanContext {
  const SystemConfig* system;
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

// The default group's grid: default_group_span() with dimension_strides() (its member indices are ranks).
MemberGrid default_group_grid(const NetworkConfig& network, int64_t ranks, std::set<std::string>& warnings);

// The grid of a process group smaller than all ranks (`ranks` in the group's member order), when it spreads
// along two or more dimensions: its ranks must be the product of one set of coordinates per dimension, listed
// in increasing rank order (dimension 0 varies fastest; e.g. ranks {0, 4, 8, 12, ..., 28} of an 8 x 4
// network: coordinates {0, 4} x {0, 1, 2, 3}, span [2, 4], stride [1, 2]). Anything else (a group along one
// dimension, or ranks that are no such product) gives an empty grid: its collectives run flat over the
// members, as they always did (a group of several dimensions that is no product is noted in `warnings`).
MemberGrid group_grid(const NetworkConfig& network, const std::string& group, const std::vector<int64_t>& ranks,
                      std::set<std::string>& warnings);

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

// Member positions inside a phase; m is a member of the collective (an index into its members).
// Position of member m in phase P:
inline int32_t phase_index(const Phase& P, int32_t m) {
  if (P.stride == 0) return m;
  return (m / P.stride) % P.n;
}
// The member at position x of m's subgroup in phase P:
inline int32_t phase_member(const Phase& P, int32_t m, int32_t x) {
  if (P.stride == 0) return x;
  return m - phase_index(P, m) * P.stride + x * P.stride;
}
// The first member of m's subgroup in phase P (0 for a flat phase): names the subgroup.
inline int32_t subgroup_of(const Phase& P, int32_t m) { return P.stride != 0 ? phase_member(P, m, 0) : 0; }

}  // namespace fabemu::emu
