// collective_plan: the phases of a collective, asserted phase by phase (op, algorithm, dimension,
// members, bytes share, steps), without a walk.
#include "emulator/collective_plan.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace fabemu::emu {
namespace {

NetworkConfig network(std::vector<int64_t> npus) {
  NetworkConfig net;
  for (const int64_t n : npus) {
    NetworkDim d;
    d.npus = n;
    net.dims.push_back(d);
  }
  return net;
}

SystemConfig system(CollectiveAlgo algo, size_t dims) {
  SystemConfig s;
  for (auto* list : {&s.all_reduce, &s.all_gather, &s.reduce_scatter, &s.all_to_all}) {
    list->assign(dims, CollectiveImpl{algo, false, -1});
  }
  return s;
}

Phase phase(PhaseOp op, int32_t dim, int32_t n, int32_t stride, uint64_t mul, uint64_t div, uint32_t offset,
            uint32_t steps, bool closed_form = false) {
  return Phase{op, CollectiveAlgo::kRing, dim, n, stride, mul, div, offset, steps, closed_form};
}

// The grid of all ranks of a 4 x 2 network with `span`: strides 1 and 4.
MemberGrid grid_4x2(std::vector<int32_t> span) { return MemberGrid{std::move(span), {1, 4}}; }

TEST(CollectivePlan, DefaultGroupSpanFillsWholeDimensionsFromTheFirst) {
  std::set<std::string> warnings;
  const NetworkConfig net = network({4, 2});
  EXPECT_EQ(default_group_span(net, 8, warnings), (std::vector<int32_t>{4, 2}));
  EXPECT_EQ(default_group_span(net, 4, warnings), (std::vector<int32_t>{4, 1}));
  EXPECT_EQ(default_group_span(net, 2, warnings), (std::vector<int32_t>{2, 1}));
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(default_group_span(network({8}), 8, warnings).empty());  // one dimension: flat
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(dimension_strides(net), (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(dimension_strides(NetworkConfig{}), (std::vector<int32_t>{1}));
}

TEST(CollectivePlan, AllGatherRunsTheDimensionsLastToFirst) {
  const SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  std::set<std::string> warnings;
  PlanContext ctx{&sys, false};
  const MemberGrid grid = default_group_grid(network({4, 2}), 8, warnings);
  EXPECT_EQ(grid, grid_4x2({4, 2}));
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_GATHER, 8, &grid}, ctx, warnings);
  // Dimension 1 (2 NPUs) on the chunk, then dimension 0 (4 NPUs) on twice the chunk; ring all-gather: n-1 steps.
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kAllGather, 1, 2, 4, 1, 1, 0, 1),
                                             phase(PhaseOp::kAllGather, 0, 4, 1, 2, 1, 1, 3)}));
  EXPECT_EQ(plan.total_steps, 4u);
  EXPECT_TRUE(warnings.empty());
}

TEST(CollectivePlan, ReduceScatterRunsFirstToLastOnShrinkingShares) {
  const SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  std::set<std::string> warnings;
  PlanContext ctx{&sys, true};
  const MemberGrid grid = grid_4x2({4, 2});
  const CollectivePlan plan =
      plan_collective(CollectiveRequest{ChakraProtoMsg::REDUCE_SCATTER, 8, &grid}, ctx, warnings);
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kReduceScatter, 0, 4, 1, 1, 1, 0, 3, true),
                                             phase(PhaseOp::kReduceScatter, 1, 2, 4, 1, 4, 3, 1, true)}));
}

TEST(CollectivePlan, LocalBwAwareAllReduceIsReduceScatterAllReduceAllGather) {
  SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  sys.collective_optimization = CollectiveOptimization::kLocalBwAware;
  std::set<std::string> warnings;
  PlanContext ctx{&sys, false};
  const MemberGrid grid = grid_4x2({4, 2});
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, 8, &grid}, ctx, warnings);
  // Ring all-reduce over n: 2(n-1) steps.
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kReduceScatter, 0, 4, 1, 1, 1, 0, 3),
                                             phase(PhaseOp::kAllReduce, 1, 2, 4, 1, 4, 3, 2),
                                             phase(PhaseOp::kAllGather, 0, 4, 1, 1, 4, 5, 3)}));
  EXPECT_EQ(plan.total_steps, 8u);
  sys.collective_optimization = CollectiveOptimization::kBaseline;
  const CollectivePlan baseline =
      plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, 8, &grid}, ctx, warnings);
  EXPECT_EQ(baseline.phases, (std::vector<Phase>{phase(PhaseOp::kAllReduce, 0, 4, 1, 1, 1, 0, 6),
                                                 phase(PhaseOp::kAllReduce, 1, 2, 4, 1, 1, 6, 2)}));
}

TEST(CollectivePlan, RanksThatDoNotFillTheDimensionsRunFlat) {
  const SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  std::set<std::string> warnings;
  PlanContext ctx{&sys, false};
  const MemberGrid grid = default_group_grid(network({4, 2}), 6, warnings);
  EXPECT_TRUE(grid.span.empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings.begin()->find("6 ranks do not fill whole dimensions"), std::string::npos) << *warnings.begin();
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, 6, &grid}, ctx, warnings);
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kAllReduce, 0, 6, 0, 1, 1, 0, 10)}));
}

TEST(CollectivePlan, OneSpannedDimensionAndGroupsWithoutAGridRunFlat) {
  const SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  std::set<std::string> warnings;
  // 4 ranks on 4x2 span [4, 1]: only dimension 0 takes part.
  PlanContext ctx{&sys, false};
  const MemberGrid four = grid_4x2({4, 1});
  EXPECT_EQ(plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, 4, &four}, ctx, warnings).phases,
            (std::vector<Phase>{phase(PhaseOp::kAllReduce, 0, 4, 1, 1, 1, 0, 6)}));
  // A process group of 3 without a grid runs over its members, whatever the network.
  const MemberGrid eight = grid_4x2({4, 2});
  EXPECT_EQ(plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, 3}, ctx, warnings).phases,
            (std::vector<Phase>{phase(PhaseOp::kAllReduce, 0, 3, 0, 1, 1, 0, 4)}));
  // involved_dim leaves dimension 0 out: the collective runs along dimension 1 alone.
  const std::optional<std::vector<bool>> involved = std::vector<bool>{false, true};
  EXPECT_EQ(plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, 8, &eight, &involved}, ctx, warnings).phases,
            (std::vector<Phase>{phase(PhaseOp::kAllReduce, 1, 2, 4, 1, 1, 0, 2)}));
  EXPECT_TRUE(warnings.empty());
}

TEST(CollectivePlan, AGroupOfSeveralDimensionsIsAGridOfItsCoordinates) {
  std::set<std::string> warnings;
  const NetworkConfig net = network({8, 4});
  // Every 4th rank of an 8 x 4 network (a data-parallel group beside tensor-parallel groups of 4): coordinates
  // {0, 4} along dimension 0 and {0, 1, 2, 3} along dimension 1.
  EXPECT_EQ(group_grid(net, "dp", {0, 4, 8, 12, 16, 20, 24, 28}, warnings),
            (MemberGrid{{2, 4}, {1, 2}}));
  EXPECT_EQ(group_grid(net, "dp1", {3, 7, 11, 15, 19, 23, 27, 31}, warnings), (MemberGrid{{2, 4}, {1, 2}}));
  // A 2 x 2 block: {0, 1} x {0, 1}.
  EXPECT_EQ(group_grid(net, "block", {0, 1, 8, 9}, warnings), (MemberGrid{{2, 2}, {1, 2}}));
  EXPECT_TRUE(warnings.empty());
  // Along one dimension only (a tensor-parallel group, a group across nodes): no grid, flat as before.
  EXPECT_TRUE(group_grid(net, "tp", {0, 1, 2, 3}, warnings).span.empty());
  EXPECT_TRUE(group_grid(net, "across", {2, 10, 18, 26}, warnings).span.empty());
  EXPECT_TRUE(group_grid(network({8}), "one-dim", {0, 1}, warnings).span.empty());
  EXPECT_TRUE(warnings.empty());
  // Several dimensions but no product (3 of a 2 x 2 block), or not in increasing rank order: flat, and said.
  EXPECT_TRUE(group_grid(net, "three", {0, 1, 8}, warnings).span.empty());
  EXPECT_TRUE(group_grid(net, "shuffled", {0, 8, 1, 9}, warnings).span.empty());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings.begin()->find("process group \"shuffled\" spreads along 2 dimensions"), std::string::npos)
      << *warnings.begin();
}

TEST(CollectivePlan, AGroupOnAGridRunsDimensionByDimensionInItsOwnMemberIndices) {
  SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  sys.collective_optimization = CollectiveOptimization::kLocalBwAware;
  std::set<std::string> warnings;
  PlanContext ctx{&sys, false};
  const MemberGrid dp{{2, 4}, {1, 2}};
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, 8, &dp}, ctx, warnings);
  // Reduce-scatter over the 2 members along dimension 0, all-reduce of the half over the 4 along dimension 1,
  // all-gather back: the default group's localBWAware phases on the group's own grid.
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kReduceScatter, 0, 2, 1, 1, 1, 0, 1),
                                             phase(PhaseOp::kAllReduce, 1, 4, 2, 1, 2, 1, 6),
                                             phase(PhaseOp::kAllGather, 0, 2, 1, 1, 2, 7, 1)}));
  // Member 5 (rank 20: coordinates 4 and 2) is at position 1 along dimension 0 (its peer there is member 4)
  // and at position 2 along dimension 1 (members 1, 3, 5, 7).
  EXPECT_EQ(phase_index(plan.phases[0], 5), 1);
  EXPECT_EQ(phase_member(plan.phases[0], 5, 0), 4);
  EXPECT_EQ(phase_index(plan.phases[1], 5), 2);
  EXPECT_EQ(phase_member(plan.phases[1], 5, 0), 1);
  EXPECT_EQ(phase_member(plan.phases[1], 5, 3), 7);
  EXPECT_EQ(subgroup_of(plan.phases[1], 5), 1);
  EXPECT_TRUE(warnings.empty());
}

TEST(CollectivePlan, ReplacedAlgorithmsAndMissingListsAreWarnedOf) {
  SystemConfig sys = system(CollectiveAlgo::kHalvingDoubling, 1);
  sys.all_to_all.clear();
  std::set<std::string> warnings;
  PlanContext ctx{&sys, false};
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, 6}, ctx, warnings);
  ASSERT_EQ(plan.phases.size(), 1u);
  EXPECT_NE(plan.phases[0].algo, CollectiveAlgo::kHalvingDoubling);  // not a power of two
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings.begin()->rfind("all-reduce over 6 ranks: ", 0), 0u) << *warnings.begin();
  warnings.clear();
  plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_TO_ALL, 4}, ctx, warnings);
  EXPECT_EQ(warnings, (std::set<std::string>{"no all-to-all implementation configured: using ring"}));
}

}  // namespace
}  // namespace fabemu::emu
