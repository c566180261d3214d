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

Phase phase(PhaseOp op, int32_t dim, int32_t n, bool hier, uint64_t mul, uint64_t div, uint32_t offset,
            uint32_t steps, bool closed_form = false) {
  return Phase{op, CollectiveAlgo::kRing, dim, n, hier, mul, div, offset, steps, closed_form};
}

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
  PlanContext ctx{&sys, default_group_span(network({4, 2}), 8, warnings), false};
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_GATHER, true, 8}, ctx, warnings);
  // Dimension 1 (2 NPUs) on the chunk, then dimension 0 (4 NPUs) on twice the chunk; ring all-gather: n-1 steps.
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kAllGather, 1, 2, true, 1, 1, 0, 1),
                                             phase(PhaseOp::kAllGather, 0, 4, true, 2, 1, 1, 3)}));
  EXPECT_EQ(plan.total_steps, 4u);
  EXPECT_TRUE(warnings.empty());
}

TEST(CollectivePlan, ReduceScatterRunsFirstToLastOnShrinkingShares) {
  const SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  std::set<std::string> warnings;
  PlanContext ctx{&sys, {4, 2}, true};
  const CollectivePlan plan =
      plan_collective(CollectiveRequest{ChakraProtoMsg::REDUCE_SCATTER, true, 8}, ctx, warnings);
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kReduceScatter, 0, 4, true, 1, 1, 0, 3, true),
                                             phase(PhaseOp::kReduceScatter, 1, 2, true, 1, 4, 3, 1, true)}));
}

TEST(CollectivePlan, LocalBwAwareAllReduceIsReduceScatterAllReduceAllGather) {
  SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  sys.collective_optimization = CollectiveOptimization::kLocalBwAware;
  std::set<std::string> warnings;
  PlanContext ctx{&sys, {4, 2}, false};
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, true, 8}, ctx, warnings);
  // Ring all-reduce over n: 2(n-1) steps.
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kReduceScatter, 0, 4, true, 1, 1, 0, 3),
                                             phase(PhaseOp::kAllReduce, 1, 2, true, 1, 4, 3, 2),
                                             phase(PhaseOp::kAllGather, 0, 4, true, 1, 4, 5, 3)}));
  EXPECT_EQ(plan.total_steps, 8u);
  sys.collective_optimization = CollectiveOptimization::kBaseline;
  const CollectivePlan baseline =
      plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, true, 8}, ctx, warnings);
  EXPECT_EQ(baseline.phases, (std::vector<Phase>{phase(PhaseOp::kAllReduce, 0, 4, true, 1, 1, 0, 6),
                                                 phase(PhaseOp::kAllReduce, 1, 2, true, 1, 1, 6, 2)}));
}

TEST(CollectivePlan, RanksThatDoNotFillTheDimensionsRunFlat) {
  const SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  std::set<std::string> warnings;
  PlanContext ctx{&sys, default_group_span(network({4, 2}), 6, warnings), false};
  EXPECT_TRUE(ctx.span.empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings.begin()->find("6 ranks do not fill whole dimensions"), std::string::npos) << *warnings.begin();
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, true, 6}, ctx, warnings);
  EXPECT_EQ(plan.phases, (std::vector<Phase>{phase(PhaseOp::kAllReduce, 0, 6, false, 1, 1, 0, 10)}));
}

TEST(CollectivePlan, OneSpannedDimensionAndProcessGroupsRunFlat) {
  const SystemConfig sys = system(CollectiveAlgo::kRing, 2);
  std::set<std::string> warnings;
  // 4 ranks on 4x2 span [4, 1]: only dimension 0 takes part.
  PlanContext ctx{&sys, {4, 1}, false};
  EXPECT_EQ(plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, true, 4}, ctx, warnings).phases,
            (std::vector<Phase>{phase(PhaseOp::kAllReduce, 0, 4, true, 1, 1, 0, 6)}));
  // A process group of 3 runs over its members, whatever the network.
  ctx.span = {4, 2};
  EXPECT_EQ(plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, false, 3}, ctx, warnings).phases,
            (std::vector<Phase>{phase(PhaseOp::kAllReduce, 0, 3, false, 1, 1, 0, 4)}));
  // involved_dim leaves dimension 0 out: the collective runs along dimension 1 alone.
  const std::optional<std::vector<bool>> involved = std::vector<bool>{false, true};
  EXPECT_EQ(plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, true, 8, &involved}, ctx, warnings).phases,
            (std::vector<Phase>{phase(PhaseOp::kAllReduce, 1, 2, true, 1, 1, 0, 2)}));
  EXPECT_TRUE(warnings.empty());
}

TEST(CollectivePlan, ReplacedAlgorithmsAndMissingListsAreWarnedOf) {
  SystemConfig sys = system(CollectiveAlgo::kHalvingDoubling, 1);
  sys.all_to_all.clear();
  std::set<std::string> warnings;
  PlanContext ctx{&sys, {}, false};
  const CollectivePlan plan = plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_REDUCE, true, 6}, ctx, warnings);
  ASSERT_EQ(plan.phases.size(), 1u);
  EXPECT_NE(plan.phases[0].algo, CollectiveAlgo::kHalvingDoubling);  // not a power of two
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings.begin()->rfind("all-reduce over 6 ranks: ", 0), 0u) << *warnings.begin();
  warnings.clear();
  plan_collective(CollectiveRequest{ChakraProtoMsg::ALL_TO_ALL, true, 4}, ctx, warnings);
  EXPECT_EQ(warnings, (std::set<std::string>{"no all-to-all implementation configured: using ring"}));
}

}  // namespace
}  // namespace fabemu::emu
