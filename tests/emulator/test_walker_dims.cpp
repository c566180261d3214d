// The rank walker on networks of several dimensions: a workload with fewer ranks than the network has
// NPUs (issue 44 items 1 and 2: heap corruption with the packet model, a false deadlock with the
// analytical one), the order in which hierarchical collectives visit the dimensions (item 3), and the
// roofline's fallback to durations (item 5), and the timeline's message limit (item 25).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "emulator/collective.h"
#include "tests/emulator/walker_test_util.h"
#include "traces/error.h"
#include "traces/generate.h"

namespace fabemu::emu {
namespace {

using namespace walker_test;
using std::chrono::seconds;

const std::vector<traces::CollectiveType> kAllTypes = {
    ChakraProtoMsg::ALL_REDUCE, ChakraProtoMsg::REDUCE,         ChakraProtoMsg::ALL_GATHER,
    ChakraProtoMsg::GATHER,     ChakraProtoMsg::SCATTER,        ChakraProtoMsg::BROADCAST,
    ChakraProtoMsg::ALL_TO_ALL, ChakraProtoMsg::REDUCE_SCATTER, ChakraProtoMsg::REDUCE_SCATTER_BLOCK,
    ChakraProtoMsg::BARRIER};

std::vector<std::string> gen(const test::ScratchDir &dir, traces::CollectiveType type, int64_t n, uint64_t bytes) {
  traces::CollectiveSpec spec;
  spec.type = type;
  spec.ranks = n;
  spec.size_bytes = bytes;
  return traces::generate_collective(spec, dir.file("w"));
}

WalkerOptions opts(SystemConfig s, bool closed_form = true) {
  WalkerOptions o;
  o.system = std::move(s);
  o.closed_form = closed_form;
  return o;
}

// A network with idle NPUs and the network its ranks actually occupy: the same dimensions, cut after the
// last one the ranks reach. Outer dimensions are switches, whose paths do not depend on their size.
struct Placement {
  const char *name;
  std::vector<NetworkDim> dims;
  int64_t ranks;
  std::vector<NetworkDim> occupied;  // empty: the ranks do not fill whole dimensions (run flat)
};

std::vector<Placement> placements() {
  const auto ring4 = dim(DimTopology::kRing, 4, 400, 250);
  const auto ring8 = dim(DimTopology::kRing, 8, 400, 250);
  const auto sw2 = dim(DimTopology::kSwitch, 2, 50, 1500);
  const auto sw4 = dim(DimTopology::kSwitch, 4, 50, 1500);
  const auto fc2 = dim(DimTopology::kFullyConnected, 2, 200, 700);
  const auto sw2b = dim(DimTopology::kSwitch, 2, 25, 2000);
  return {
      {"1-D ring 8, 4 ranks", {ring8}, 4, {ring8}},
      {"2-D 4x2, 4 ranks", {ring4, sw2}, 4, {ring4}},
      {"2-D 4x2, 2 ranks", {ring4, sw2}, 2, {ring4}},
      {"2-D 4x2, 6 ranks", {ring4, sw2}, 6, {}},
      {"2-D 8x4, 16 ranks", {ring8, sw4}, 16, {ring8, dim(DimTopology::kSwitch, 2, 50, 1500)}},
      {"3-D 2x2x2, 4 ranks", {fc2, fc2, sw2b}, 4, {fc2, fc2}},
      {"3-D 2x4x2, 4 ranks", {fc2, sw4, sw2b}, 4, {fc2, dim(DimTopology::kSwitch, 2, 50, 1500)}},
      {"3-D 4x2x2, 8 ranks", {ring4, fc2, sw2b}, 8, {ring4, fc2}},
  };
}

void expect_same_times(const RunResult &a, const RunResult &b) {
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) EXPECT_EQ(a.ranks[r].finish.ps(), b.ranks[r].finish.ps()) << "rank " << r;
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    EXPECT_EQ(a.collectives[i].messages, b.collectives[i].messages);
    EXPECT_EQ(a.collectives[i].message_bytes, b.collectives[i].message_bytes);
    EXPECT_EQ(a.collectives[i].algorithm, b.collectives[i].algorithm);
  }
}

// Every collective, both models, ranks < NPUs on 1 to 3 dimensions: the run completes (it crashed or
// deadlocked before) and gives exactly the times of the network the ranks occupy. Runs under ASan/UBSan
// in the sanitizer suite, where the out-of-bounds member indices of the old code are caught.
TEST(WalkerIdleNpus, EveryCollectiveOnEveryPlacementEqualsTheOccupiedNetwork) {
  for (const auto &pl : placements()) {
    for (const auto type : kAllTypes) {
      for (const Model model : {Model::kAnalytical, Model::kPacket}) {
        SCOPED_TRACE(std::string(pl.name) + " " + traces::collective_name(type) +
                     (model == Model::kPacket ? " packet" : " analytical"));
        test::ScratchDir dir;
        const auto files = gen(dir, type, pl.ranks, 256 * 1024);
        const auto sys = system_config(CollectiveAlgo::kRing, 2, 1, pl.dims.size());
        const auto run = within(seconds(60), [&] {
          return run_walker(network(pl.dims), opts(sys), files, model, 4096);
        });
        ASSERT_TRUE(run.result.stuck.empty()) << joined(run.result.stuck);
        ASSERT_EQ(run.result.collectives.size(), 1u);
        EXPECT_EQ(run.result.collectives[0].members, pl.ranks);
        EXPECT_GT(run.result.total.ps(), 0u);
        if (pl.occupied.empty()) {
          // Flat over the ranks, on the first dimension's links and the second's: one phase.
          EXPECT_EQ(run.result.collectives[0].algorithm.find('+'), std::string::npos);
          continue;
        }
        const auto ref = run_walker(network(pl.occupied), opts(system_config(CollectiveAlgo::kRing, 2, 1,
                                                                             pl.occupied.size())),
                                    files, model, 4096);
        ASSERT_TRUE(ref.result.stuck.empty()) << joined(ref.result.stuck);
        expect_same_times(run.result, ref.result);
      }
    }
  }
}

// The repro: 4 ranks on 2x2 rings, 400 and 50 GB/s, 1 MiB all-gather, 1 chunk. ASTRA-sim runs
// it from the last dimension to the first (25,453 ns); fabemu ran it first to last (42,543.9 ns).
TEST(WalkerDimensionOrder, AllGatherRunsFromTheLastDimensionToTheFirst) {
  const uint64_t c = uint64_t{1} << 20;
  const Duration ep = Duration::from_ns(10);
  const auto d0 = dim(DimTopology::kRing, 2, 400, 500);
  const auto d1 = dim(DimTopology::kRing, 2, 50, 500);
  // Each phase of two members is one step: ep, the message, ep. Dimension 1 carries c, then dimension 0 2c.
  const Duration phase1 = ep + d1.latency + d1.bandwidth.ser(c) + ep;
  const Duration phase0 = ep + d0.latency + d0.bandwidth.ser(2 * c) + ep;
  const Time expected = Time::zero() + phase1 + phase0;
  EXPECT_EQ(expected.ps(), 25'454'063u);  // ASTRA-sim 2.x: 25,453 ns
  test::ScratchDir dir;
  const auto files = gen(dir, ChakraProtoMsg::ALL_GATHER, 4, c);
  for (const Model model : {Model::kAnalytical, Model::kPacket}) {
    for (const bool cf : {true, false}) {
      const auto run = run_walker(network({d0, d1}), opts(system_config(CollectiveAlgo::kRing, 1, 1, 2), cf), files,
                                  model);
      ASSERT_TRUE(run.result.stuck.empty()) << joined(run.result.stuck);
      EXPECT_EQ(run.result.total.ps(), expected.ps()) << (model == Model::kPacket ? "packet" : "analytical") << cf;
    }
  }
}

// Three dimensions: all-gather visits 2, 1, 0 with input c, 2c, 4c; reduce-scatter visits 0, 1, 2 with
// c, c/2, c/4 (ASTRA-sim's Sys::generate_collective reverses the dimensions for all-gather only).
TEST(WalkerDimensionOrder, ThreeDimensionsAllGatherReversedReduceScatterForward) {
  const uint64_t c = uint64_t{1} << 20;
  const Duration ep = Duration::from_ns(10);
  const std::vector<NetworkDim> dims = {dim(DimTopology::kFullyConnected, 2, 400, 300),
                                        dim(DimTopology::kFullyConnected, 2, 100, 600),
                                        dim(DimTopology::kFullyConnected, 2, 25, 900)};
  auto phase = [&](size_t d, uint64_t bytes) { return ep + dims[d].latency + dims[d].bandwidth.ser(bytes) + ep; };
  test::ScratchDir dir;
  {
    const auto files = gen(dir, ChakraProtoMsg::ALL_GATHER, 8, c);
    const auto run = run_walker(network(dims), opts(system_config(CollectiveAlgo::kRing, 1, 1, 3)), files);
    ASSERT_TRUE(run.result.stuck.empty()) << joined(run.result.stuck);
    EXPECT_EQ(run.result.total.ps(), (Time::zero() + phase(2, c) + phase(1, 2 * c) + phase(0, 4 * c)).ps());
  }
  {
    test::ScratchDir dir2;
    const auto files = gen(dir2, ChakraProtoMsg::REDUCE_SCATTER, 8, c);
    const Rate mem = mem_rate(1600);
    // Ring reduce-scatter of two members: one step of half the input, then its reduction.
    auto rs = [&](size_t d, uint64_t in) { return phase(d, in / 2) + mem.ser(3 * (in / 2)); };
    const auto run = run_walker(network(dims), opts(system_config(CollectiveAlgo::kRing, 1, 1, 3)), files);
    ASSERT_TRUE(run.result.stuck.empty()) << joined(run.result.stuck);
    EXPECT_EQ(run.result.total.ps(), (Time::zero() + rs(0, c) + rs(1, c / 2) + rs(2, c / 4)).ps());
  }
}

// Issue 51 item 3: on 4 nodes of 8 (an 8 x 4 network, NVSwitch-like fully connected dimensions), tensor-parallel
// groups of 4 inside a node (ranks 0-3, 4-7, ...) and data-parallel groups of the ranks at the same tensor-parallel
// position (ranks j, j+4, ..., j+28: coordinates {j, j+4} x {0, 1, 2, 3}). Each rank all-reduces S_tp in its
// tensor-parallel group, then S in its data-parallel group. The tensor-parallel groups run flat (one dimension, as
// before); the data-parallel ones localBWAware over their grid: reduce-scatter over 2 members along dimension 0,
// all-reduce of half over 4 along dimension 1, all-gather over 2, each at its closed form (no link is shared).
// Flat over the 8 members (as ASTRA-sim 2.x runs a group) takes longer: every other ring hop crosses both
// dimensions.
TEST(WalkerGroupGrid, ADataParallelGroupAcrossTwoDimensionsRunsHierarchically) {
  const uint64_t S = uint64_t{1} << 22, S_tp = uint64_t{1} << 20;
  const auto d0 = dim(DimTopology::kFullyConnected, 8, 400, 200);
  const auto d1 = dim(DimTopology::kFullyConnected, 4, 50, 2000);
  const Duration ep = Duration::from_ns(10);
  const Rate mem = mem_rate(1600);
  // A ring phase over n members of `bytes`: ep, then per step the message and ep, plus the reductions.
  auto ring = [&](const NetworkDim &d, uint64_t msg, uint32_t steps, uint32_t reducing) {
    return ep + (d.latency + d.bandwidth.ser(msg) + ep) * steps + mem.ser(3 * msg) * reducing;
  };
  const Duration tp = ring(d0, S_tp / 4, 6, 3);
  const Duration dp = ring(d0, S / 2, 1, 1) + ring(d1, S / 8, 6, 3) + ring(d0, S / 2, 1, 0);
  test::ScratchDir dir;
  traces::ProcessGroups groups(32);
  std::vector<std::vector<Node>> ranks;
  for (int64_t g = 0; g < 8; ++g) groups.add("tp" + std::to_string(g), {4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3}, {.file = "t"});
  for (int64_t j = 0; j < 4; ++j) {
    std::vector<int64_t> members;
    for (int64_t k = 0; k < 8; ++k) members.push_back(j + 4 * k);
    groups.add("dp" + std::to_string(j), members, {.file = "t"});
  }
  for (int r = 0; r < 32; ++r) {
    ranks.push_back({coll(0, ChakraProtoMsg::ALL_REDUCE, S_tp, {}, "tp" + std::to_string(r / 4)),
                     coll(1, ChakraProtoMsg::ALL_REDUCE, S, {0}, "dp" + std::to_string(r % 4))});
  }
  const auto files = write_ranks(dir, "grid", ranks);
  auto sys = system_config(CollectiveAlgo::kRing, 1, 1, 2);
  sys.collective_optimization = CollectiveOptimization::kLocalBwAware;
  Time flat_end;
  for (const Model model : {Model::kAnalytical, Model::kPacket}) {
    for (const bool cf : {true, false}) {
      SCOPED_TRACE(std::string(model == Model::kPacket ? "packet" : "analytical") + (cf ? " closed form" : ""));
      const auto run = run_walker(network({d0, d1}), opts(sys, cf), files, model, ~uint32_t{0}, &groups);
      ASSERT_TRUE(run.result.stuck.empty()) << joined(run.result.stuck);
      ASSERT_EQ(run.result.collectives.size(), 12u);
      for (const auto &c : run.result.collectives) {
        EXPECT_EQ(c.algorithm, c.members == 8 ? "ring+ring+ring" : "ring") << c.group;
      }
      for (const auto &rk : run.result.ranks) EXPECT_EQ(rk.finish.ps(), (Time::zero() + tp + dp).ps());
      auto flat = opts(sys, cf);
      flat.hierarchical_groups = false;
      const auto flat_run = run_walker(network({d0, d1}), flat, files, model, ~uint32_t{0}, &groups);
      ASSERT_TRUE(flat_run.result.stuck.empty()) << joined(flat_run.result.stuck);
      EXPECT_GT(flat_run.result.total.ps(), run.result.total.ps());
      if (model == Model::kAnalytical && cf) flat_end = flat_run.result.total;
    }
  }
  // The figures of the closing note: hierarchical and flat.
  RecordProperty("hierarchical_ps", std::to_string((Time::zero() + tp + dp).ps()));
  RecordProperty("flat_ps", std::to_string(flat_end.ps()));
}

// Item 5: roofline asked for, COMP nodes without num_ops/tensor_size: a warning with their count, and an
// error naming file, rank and node under --strict.
TEST(WalkerRoofline, DurationFallbackIsWarnedAndAnErrorUnderStrict) {
  test::ScratchDir dir;
  std::vector<std::vector<traces::Node>> ranks(2);
  for (auto &r : ranks) {
    r.push_back(comp(0, 5));
    r.push_back(comp(1, 7, {0}));
  }
  set_int(ranks[0][1], "num_ops", 1'000'000);
  const auto files = write_ranks(dir, "roof", ranks);
  auto o = opts(system_config(CollectiveAlgo::kRing, 1, 1));
  o.compute_model = ComputeModel::kRoofline;
  o.peak_tflops = 1;
  o.mem_bw_gbps = 1000;
  const auto run = run_walker(network({dim(DimTopology::kRing, 2)}), o, files);
  ASSERT_TRUE(run.result.stuck.empty());
  EXPECT_EQ(run.result.ranks[1].finish.ps(), Duration::from_us(12).ps());
  const std::string want = "3 COMP nodes have no num_ops and no tensor_size: they ran for their duration_micros";
  EXPECT_NE(joined(run.result.warnings).find(want), std::string::npos) << joined(run.result.warnings);
  o.strict = true;
  try {
    run_walker(network({dim(DimTopology::kRing, 2)}), o, files);
    FAIL() << "accepted under --strict";
  } catch (const traces::TraceError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("roof.0.et"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0: node id 0"), std::string::npos) << what;
    EXPECT_NE(what.find("no num_ops and no tensor_size"), std::string::npos) << what;
  }
}

// Item 25: --timeline-messages 10 kept 8 (a closed-form ring phase that did not fit whole was left out
// whole); now exactly the first 10 messages are written and the rest counted.
TEST(WalkerTimeline, MessageLimitKeepsExactlyThatMany) {
  struct Counter : TimelineSink {
    uint64_t messages = 0;
    void node_slice(int32_t, int32_t, const std::string &, const char *, uint64_t, Time, Time, uint64_t) override {}
    void message_slice(int32_t, int32_t, uint64_t, Time, Time, uint64_t) override { ++messages; }
  };
  test::ScratchDir dir;
  const auto files = gen(dir, ChakraProtoMsg::ALL_REDUCE, 8, 1 << 20);
  for (const bool cf : {true, false}) {
    Counter timeline;
    auto o = opts(system_config(CollectiveAlgo::kRing, 1, 1), cf);
    o.timeline = &timeline;
    o.timeline_message_limit = 10;
    const auto run = run_walker(network({dim(DimTopology::kRing, 8)}), o, files);
    ASSERT_TRUE(run.result.stuck.empty());
    EXPECT_EQ(timeline.messages, 10u);
    // A ring all-reduce of 8 members: 14 steps of 8 messages.
    EXPECT_NE(joined(run.result.warnings).find("the timeline holds the first 10 messages; 102 more were left out"),
              std::string::npos)
        << joined(run.result.warnings);
  }
}

}  // namespace
}  // namespace fabemu::emu
