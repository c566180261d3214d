// The NCCL cost model against hand-computed values of NCCL's formulas (docs/nccl.md): latencies, bandwidths,
// the tuner's choice at the crossovers, and the override lists.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "emulator/nccl_model.h"

namespace fabemu::emu::nccl {
namespace {

System a100_node() {  // 8 x A100 on NVSwitch, NCCL's model as published (no fitted values)
  System s;
  s.pure_nccl();
  s.gpus_per_node = 8;
  s.gpu = Gpu::kAmpere;
  s.channels = 12;
  s.channel_gbps = 20;
  return s;
}

void expect_option(const Model& m, Func f, Algo a, Proto p, double latency_us, double algbw_gbps) {
  const Option& o = m.option(f, a, p);
  EXPECT_NEAR(o.latency_us, latency_us, 1e-9) << algo_name(a) << "/" << proto_name(p);
  EXPECT_NEAR(o.algbw_gbps, algbw_gbps, 1e-9) << algo_name(a) << "/" << proto_name(p);
}

TEST(NcclModel, SingleNodeRingAndTreeOptionsAreNcclsFormulas) {
  const Model m(a100_node());
  // Ring: base + 14 steps x hop; bus bandwidth 12 x 20 = 240 GB/s, algbw = bus x 8 / 14.
  expect_option(m, Func::kAllReduce, Algo::kRing, Proto::kLL, 6.6 + 14 * 0.6, 87.7 * 8 / 14);  // LL's Ampere cap
  expect_option(m, Func::kAllReduce, Algo::kRing, Proto::kLL128, 14.0 + 14 * 1.9, 240 * 0.92 * 8 / 14);
  expect_option(m, Func::kAllReduce, Algo::kRing, Proto::kSimple, 8.4 + 14 * 3.4, 240.0 * 8 / 14);
  // Tree: base + 2 x 7 intra hops; bus min(240 x 0.92, 12 x 24) halved.
  expect_option(m, Func::kAllReduce, Algo::kTree, Proto::kSimple, 8.4 + 2 * 7 * 4.0, 240 * 0.92 * 0.5);
  // All-gather: 7 steps, algbw = bus x 8 / 7.
  expect_option(m, Func::kAllGather, Algo::kRing, Proto::kSimple, 8.4 + 7 * 3.4, 240.0 * 8 / 7);
  // No tree for all-gather, no NVLS on Ampere, nothing between nodes on one node.
  EXPECT_EQ(m.option(Func::kAllGather, Algo::kTree, Proto::kSimple).algbw_gbps, 0);
  EXPECT_EQ(m.option(Func::kAllReduce, Algo::kNvls, Proto::kSimple).algbw_gbps, 0);
  EXPECT_EQ(m.option(Func::kAllReduce, Algo::kNvlsTree, Proto::kSimple).algbw_gbps, 0);
}

TEST(NcclModel, TimeIsLatencyPlusBytesOverAlgbwInPicoseconds) {
  const Model m(a100_node());
  const auto c = m.evaluate(Func::kAllReduce, Algo::kRing, Proto::kSimple, uint64_t{1} << 30);
  ASSERT_TRUE(c);
  // 56 us + 2^30 B / 137.142857... GB/s = 56 us + 7,829,367.55 ns.
  const double expected_ps = 56e6 + std::ldexp(1.0, 30) / (240.0 * 8 / 14) * 1e3;
  EXPECT_NEAR(static_cast<double>(c->time.ps()), expected_ps, 2.0);
}

TEST(NcclModel, TheTunerSwitchesProtocolsAtTheCrossovers) {
  const Model m(a100_node());
  // LL until ~2.1 MB, LL128 until ~24 MB, Simple above (crossovers of the three lines above).
  for (const auto& [bytes, proto] : {std::pair{uint64_t{8}, Proto::kLL}, {uint64_t{1} << 20, Proto::kLL},
                                     {uint64_t{4} << 20, Proto::kLL128}, {uint64_t{16} << 20, Proto::kLL128},
                                     {uint64_t{32} << 20, Proto::kSimple}, {uint64_t{8} << 30, Proto::kSimple}}) {
    const auto c = m.choose(Func::kAllReduce, bytes);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->algo, Algo::kRing) << bytes;
    EXPECT_EQ(c->proto, proto) << bytes;
  }
}

TEST(NcclModel, NvlsOnHopperAndTheCallOverhead) {
  System s = a100_node();  // pure NCCL
  s.gpu = Gpu::kHopper;
  s.channels = 16;
  s.channel_gbps = 20.6;
  s.nvls = true;
  s.nvls_channels = 16;
  s.call_overhead_us = 10;
  const Model m(s);
  // NVLS: 16 channels x 20.6 x 0.85 x 15/16 x 2 (an all-reduce pipelines its halves) x 8/14; 25 us + the call.
  expect_option(m, Func::kAllReduce, Algo::kNvls, Proto::kSimple, 25 + 10, 16 * 20.6 * 0.85 * 15 / 16 * 2 * 8 / 14);
  EXPECT_EQ(m.option(Func::kAllReduce, Algo::kNvls, Proto::kLL).algbw_gbps, 0);  // Simple only
  EXPECT_EQ(m.choose(Func::kAllReduce, uint64_t{1} << 30)->algo, Algo::kNvls);
}

TEST(NcclModel, TwoNodesTreeUsesTwiceTheNicShareAndRingsPayNetworkSteps) {
  System s = a100_node();
  s.nodes = 2;
  s.channels = 8;
  s.net_channel_gbps = 6.25;
  const Model m(s);
  // Tree: per channel min(20, 2 x 6.25) = 12.5; bus min(8 x 12.5 x 0.92, 8 x 23.6) = 92, algbw 46.
  // Latency: 8.4 + 2 x (7 intra hops x 4.0 + log2(2) x 14 network).
  expect_option(m, Func::kAllReduce, Algo::kTree, Proto::kSimple, 8.4 + 2 * (7 * 4.0 + 14), 46);
  // Ring: per channel min(20, 6.25) x 8 = 50 GB/s bus, x 16/30; 30 steps of which 2 cross the network,
  // intra hops at least the network post overhead (3 us for Simple).
  expect_option(m, Func::kAllReduce, Algo::kRing, Proto::kSimple, 8.4 + 28 * 3.4 + 2 * 14.0, 50.0 * 16 / 30);
  // Above 64 B per channel and rank the ring's latency grows by 1.4 on Ampere (NCCL's ring plateau).
  const auto big = m.evaluate(Func::kAllReduce, Algo::kRing, Proto::kSimple, uint64_t{1} << 20);
  ASSERT_TRUE(big);
  EXPECT_NEAR(big->latency_us, (8.4 + 28 * 3.4 + 2 * 14.0) * 1.4, 1e-9);
}

TEST(NcclModel, OverrideListsAsNcclAlgoAndNcclProto) {
  System s = a100_node();
  apply_proto_list("^LL,LL128", s.protos);
  apply_algo_list("Tree", s.algos);
  const Model m(s);
  const auto c = m.choose(Func::kAllReduce, 8);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->algo, Algo::kTree);
  EXPECT_EQ(c->proto, Proto::kSimple);
  // Tree does not run an all-gather: nothing is left for it.
  EXPECT_FALSE(m.choose(Func::kAllGather, 8));
  AlgoEnables algos{};
  try {
    apply_algo_list("ring,rnig", algos);
    ADD_FAILURE() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown element \"rnig\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(algo_named("NVLSTree"), Algo::kNvlsTree);
  EXPECT_EQ(proto_named("simple"), Proto::kSimple);
  EXPECT_EQ(func_named("all_gather_perf"), Func::kAllGather);
  EXPECT_EQ(func_named("allreduce"), Func::kAllReduce);
}

// NCCL 2.24's lists per collective: "default;func:list;...", the first prefix optional (NCCL's own examples
// in src/tuning: "ring;allreduce:tree", "^LL128;allreduce:LL128").
TEST(NcclModel, ListsPerCollectiveAsNccl224) {
  const System plain = a100_node();
  const Model unchanged(plain);
  System s = plain;
  apply_algo_list("ring;AllReduce:Tree", s.algos);
  apply_proto_list("^LL128;allreduce:LL128", s.protos);
  const Model m(s);
  // All-reduce: tree only, LL128 only (NCCL's LL would win at 8 B).
  ASSERT_EQ(unchanged.choose(Func::kAllReduce, 8)->proto, Proto::kLL);
  const auto ar = m.choose(Func::kAllReduce, 8);
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->algo, Algo::kTree);
  EXPECT_EQ(ar->proto, Proto::kLL128);
  EXPECT_EQ(ar->time, m.evaluate(Func::kAllReduce, Algo::kTree, Proto::kLL128, 8)->time);
  // The others: ring, anything but LL128; at 8 B LL as before, at 64 MiB Simple.
  for (const Func f : {Func::kAllGather, Func::kReduceScatter, Func::kBroadcast, Func::kReduce}) {
    SCOPED_TRACE(std::string(func_name(f)));
    const auto small = m.choose(f, 8);
    const auto big = m.choose(f, uint64_t{64} << 20);
    ASSERT_TRUE(small && big);
    EXPECT_EQ(small->algo, Algo::kRing);
    EXPECT_EQ(small->proto, Proto::kLL);
    EXPECT_EQ(big->algo, Algo::kRing);
    EXPECT_EQ(big->proto, Proto::kSimple);
    EXPECT_FALSE(m.evaluate(f, Algo::kRing, Proto::kLL128, 8));
  }
  // A list for one collective only leaves the others as they were.
  System one = plain;
  apply_algo_list("allreduce:tree", one.algos);
  const Model only(one);
  EXPECT_EQ(only.choose(Func::kAllReduce, uint64_t{64} << 20)->algo, Algo::kTree);
  EXPECT_EQ(unchanged.choose(Func::kAllReduce, uint64_t{64} << 20)->algo, Algo::kRing);
  EXPECT_EQ(only.choose(Func::kAllGather, uint64_t{64} << 20)->time,
            unchanged.choose(Func::kAllGather, uint64_t{64} << 20)->time);
  // Refused, naming what is wrong.
  const auto refused = [](std::string_view value, std::string_view says) {
    AlgoEnables e = all_enabled<AlgoEnables>();
    try {
      apply_algo_list(value, e);
      ADD_FAILURE() << value << ": expected an error";
    } catch (const std::invalid_argument& x) {
      EXPECT_NE(std::string(x.what()).find(says), std::string::npos) << x.what();
    }
  };
  refused("ring;tree", "\"tree\" needs a collective");
  refused("alltoall:ring", "unknown collective \"alltoall\"");
  refused("ring;allreduce:rnig", "unknown element \"rnig\"");
  refused("allreduce:", "unknown element \"\"");
}

TEST(NcclModel, ASystemNcclCouldNotRunIsRefusedByField) {
  System s = a100_node();
  s.channels = 0;
  EXPECT_THROW(Model{s}, std::invalid_argument);
  s = a100_node();
  s.nvls = true;
  s.nvls_channels = 16;
  try {
    Model m{s};
    ADD_FAILURE() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nvls needs a hopper"), std::string::npos) << e.what();
  }
  s = a100_node();
  s.nodes = 2;  // no net_channel_gbps
  EXPECT_THROW(Model{s}, std::invalid_argument);
}

TEST(NcclModel, TheCalibrationScalesHopsAndBandwidthAndAddsTheRamp) {
  System s = a100_node();
  s.hop_latency_scale = {2, 1, 1.5};
  s.bandwidth_efficiency = {1, 1, 0.5};
  s.ramp_bytes = {0, 0, 1e6};
  const Model m(s);
  // Ring/LL: base 6.6 unscaled, 14 hops x 0.6 x 2. Ring/Simple: 14 x 3.4 x 1.5, half the bandwidth.
  expect_option(m, Func::kAllReduce, Algo::kRing, Proto::kLL, 6.6 + 14 * 0.6 * 2, 87.7 * 8 / 14);
  expect_option(m, Func::kAllReduce, Algo::kRing, Proto::kSimple, 8.4 + 14 * 3.4 * 1.5, 240.0 * 8 / 14 * 0.5);
  // The ramp: 1 MB more at the option's bandwidth.
  const auto c = m.evaluate(Func::kAllReduce, Algo::kRing, Proto::kSimple, uint64_t{1} << 30);
  ASSERT_TRUE(c);
  const double algbw = 240.0 * 8 / 14 * 0.5;
  EXPECT_NEAR(static_cast<double>(c->time.ps()), (8.4 + 14 * 3.4 * 1.5) * 1e6 + (std::ldexp(1.0, 30) + 1e6) / algbw * 1e3,
              3.0);
  s.bandwidth_efficiency = {1, 1, 1.5};
  EXPECT_THROW(Model{s}, std::invalid_argument);
}

TEST(NcclModel, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(Func::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(Func::kAllGather, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Func::kBroadcast, 16), 1.0);
}

}  // namespace
}  // namespace fabemu::emu::nccl
