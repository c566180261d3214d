// `fabemu trace analyze` and `trace graph` on small traces whose answers are worked out by hand here:
// collective instances and who deviates, the point-to-point and collective traffic matrices cell by cell,
// compute spread, the longest chain, and the graph window's nodes and edges.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "host/analyze/graph_view.h"
#include "host/analyze/implied_traffic.h"
#include "host/analyze/trace_analysis.h"
#include "host/config/run_config.h"
#include "host/report/html_page.h"
#include "tests/emulator/walker_test_util.h"
#include "traces/info.h"

namespace fabemu::analyze {
namespace {

using emu::walker_test::coll;
using emu::walker_test::comp;
using emu::walker_test::recv;
using emu::walker_test::send;

// Four ranks. Rank r: COMP 1 (10 us); SEND 2 of 1000 (r + 1) bytes to rank r + 1, after 1; COMP 3 (5 + r us)
// after 1; RECV 6 from rank r - 1; ALL_REDUCE 4 of 4096 bytes (`rank2_bytes` on rank 2) after 2 and 3;
// COMP 5 (7 us) with a ctrl_dep on 4.
std::vector<std::string> write_ring(const test::ScratchDir& dir, uint64_t rank2_bytes) {
  std::vector<std::vector<traces::Node>> ranks(4);
  for (int64_t r = 0; r < 4; ++r) {
    auto& nodes = ranks[static_cast<size_t>(r)];
    nodes.push_back(comp(1, 10));
    nodes.push_back(send(2, (r + 1) % 4, 0, 1000 * static_cast<uint64_t>(r + 1), {1}));
    nodes.push_back(comp(3, 5 + static_cast<uint64_t>(r), {1}));
    nodes.push_back(recv(6, (r + 3) % 4, 0, 1000 * static_cast<uint64_t>((r + 3) % 4 + 1)));
    nodes.push_back(coll(4, ChakraProtoMsg::ALL_REDUCE, r == 2 ? rank2_bytes : 4096, {2, 3}));
    nodes.push_back(test::make_node(5, ChakraProtoMsg::COMP_NODE, {}, {4}));
    nodes.back().set_duration_micros(7);
  }
  return emu::walker_test::write_ranks(dir, "ring", ranks);
}

TraceAnalysis analyze_dir(const test::ScratchDir& dir) {
  const std::string prefix = dir.file("ring");
  return analyze_workload(prefix, traces::find_rank_files(prefix));
}

TEST(TraceAnalyze, NamesTheDeviatingRankAndNode) {
  test::ScratchDir dir;
  write_ring(dir, 8192);
  const TraceAnalysis a = analyze_dir(dir);
  ASSERT_EQ(a.collectives.size(), 1u);
  ASSERT_EQ(a.worst_first.size(), 1u);
  const CollectiveInstance& I = a.collectives[0];
  EXPECT_EQ(I.type, ChakraProtoMsg::ALL_REDUCE);
  EXPECT_EQ(I.members.size(), 4u);
  EXPECT_EQ(I.group_size, 4u);
  EXPECT_EQ(I.typical_bytes, 4096u);
  ASSERT_EQ(I.deviating.size(), 1u);
  EXPECT_EQ(I.deviating[0].rank, 2);
  EXPECT_EQ(I.deviating[0].node_id, 4u);
  EXPECT_EQ(I.deviating[0].bytes, 8192u);
  // 4096, 4096, 8192, 4096: mean 5120, standard deviation sqrt(3) x 1024, CV sqrt(3)/5.
  EXPECT_DOUBLE_EQ(I.bytes.mean, 5120.0);
  EXPECT_NEAR(I.bytes.cv, std::sqrt(3.0) / 5.0, 1e-12);
  EXPECT_DOUBLE_EQ(I.max_over_mean(), 1.6);
  ASSERT_EQ(a.by_type.size(), 1u);
  EXPECT_EQ(a.by_type[0].imbalanced, 1u);
  EXPECT_EQ(a.by_type[0].bytes, 4096u * 3 + 8192u);
}

TEST(TraceAnalyze, BalancedIsCvZero) {
  test::ScratchDir dir;
  write_ring(dir, 4096);
  const TraceAnalysis a = analyze_dir(dir);
  EXPECT_TRUE(a.worst_first.empty());
  EXPECT_EQ(a.collectives[0].bytes.cv, 0.0);
  EXPECT_EQ(a.collective_bytes.cv, 0.0);
}

TEST(TraceAnalyze, PointToPointMatrixCellByCell) {
  test::ScratchDir dir;
  write_ring(dir, 4096);
  const TraceAnalysis a = analyze_dir(dir);
  ASSERT_EQ(a.p2p.size(), 4u);  // r -> r+1 only
  for (int32_t r = 0; r < 4; ++r) {
    const auto it = a.p2p.find({r, (r + 1) % 4});
    ASSERT_NE(it, a.p2p.end()) << "rank " << r;
    EXPECT_EQ(it->second.bytes, 1000u * static_cast<uint64_t>(r + 1));
    EXPECT_EQ(it->second.messages, 1u);
    EXPECT_EQ(a.ranks[static_cast<size_t>(r)].recv_bytes, 1000u * static_cast<uint64_t>((r + 3) % 4 + 1));
  }
}

TEST(TraceAnalyze, ComputeSpreadAndLongestChain) {
  test::ScratchDir dir;
  write_ring(dir, 4096);
  const TraceAnalysis a = analyze_dir(dir);
  // Compute: 10 + (5 + r) + 7 = 22 + r us; the chain 1 -> 3 -> 4 -> 5 weighs the same.
  for (int32_t r = 0; r < 4; ++r) {
    const RankAnalysis& R = a.ranks[static_cast<size_t>(r)];
    EXPECT_EQ(R.compute_us, 22u + static_cast<uint64_t>(r));
    EXPECT_EQ(R.comp_nodes, 3u);
    EXPECT_EQ(R.chain_us, 22u + static_cast<uint64_t>(r));
    EXPECT_EQ(R.chain_ids, (std::vector<uint64_t>{1, 3, 4, 5}));
  }
  EXPECT_DOUBLE_EQ(a.compute_us.min, 22);
  EXPECT_DOUBLE_EQ(a.compute_us.max, 25);
  EXPECT_EQ(a.compute_us.max_rank, 3);
}

// A ring all-reduce of 4096 bytes over 4 ranks on a 4-NPU ring: 2 (n - 1) = 6 steps, in each every rank sends
// 4096 / 4 = 1024 bytes to one neighbour: 4 cells of 6 messages and 6144 bytes.
TEST(TraceAnalyze, CollectiveMatrixUnderRing) {
  test::ScratchDir dir;
  write_ring(dir, 4096);
  const TraceAnalysis a = analyze_dir(dir);
  const emu::NetworkConfig net = emu::walker_test::network({emu::walker_test::dim(emu::DimTopology::kRing, 4)});
  emu::SystemConfig sys;
  host::default_algorithms(sys, 1);
  const ImpliedTraffic t = implied_traffic(a, net, sys);
  ASSERT_EQ(t.matrix.size(), 4u);
  uint64_t messages = 0;
  for (const auto& [pair, cell] : t.matrix) {
    EXPECT_EQ(cell.bytes, 6144u) << pair.first << "->" << pair.second;
    EXPECT_EQ(cell.messages, 6u);
    EXPECT_EQ(std::abs(pair.first - pair.second) % 2, 1) << "ring neighbours";
    messages += cell.messages;
  }
  EXPECT_EQ(messages, 24u);
  EXPECT_EQ(t.algorithms, "ALL_REDUCE: ring");
  emu::NetworkConfig small = emu::walker_test::network({emu::walker_test::dim(emu::DimTopology::kRing, 2)});
  EXPECT_THROW(implied_traffic(a, small, sys), std::invalid_argument);
}

// Issue 51 item 3: data-parallel groups {j, j+4, ..., j+28} of an 8 x 4 network run hierarchically in `run`, and
// `trace analyze` implies the same traffic: exactly the walker's sender x receiver bytes, and only between ranks
// of one node (dimension 0) or of one GPU position (dimension 1), never the flat ring's diagonal hops.
TEST(TraceAnalyze, GroupOverTwoDimensionsImpliesTheWalkersTraffic) {
  test::ScratchDir dir;
  std::string pgs = "[";
  for (int j = 0; j < 4; ++j) {
    pgs += fmt::format("{}{{'pg_name': 'dp{}', 'ranks': [{}, {}, {}, {}, {}, {}, {}, {}], 'group_size': 8}}", j == 0 ? "" : ", ", j,
                       j, j + 4, j + 8, j + 12, j + 16, j + 20, j + 24, j + 28);
  }
  pgs += "]";
  std::vector<std::vector<traces::Node>> ranks;
  for (int r = 0; r < 32; ++r) {
    traces::Node meta = test::make_node(0, ChakraProtoMsg::METADATA_NODE);
    meta.mutable_inputs()->set_values(pgs);
    ranks.push_back({meta, coll(1, ChakraProtoMsg::ALL_REDUCE, 1 << 20, {0}, "dp" + std::to_string(r % 4))});
  }
  const auto files = emu::walker_test::write_ranks(dir, "ring", ranks);
  const emu::NetworkConfig net = emu::walker_test::network({emu::walker_test::dim(emu::DimTopology::kFullyConnected, 8),
                                                            emu::walker_test::dim(emu::DimTopology::kFullyConnected, 4)});
  emu::SystemConfig sys = emu::walker_test::system_config(emu::CollectiveAlgo::kRing, 2, 1, 2);
  sys.collective_optimization = emu::CollectiveOptimization::kLocalBwAware;
  const ImpliedTraffic t = implied_traffic(analyze_dir(dir), net, sys);
  EXPECT_EQ(t.algorithms, "ALL_REDUCE: ring+ring+ring");
  emu::WalkerOptions opt;
  opt.system = sys;
  opt.traffic_matrix = true;
  const auto run = emu::walker_test::run_walker(net, opt, files);
  ASSERT_TRUE(run.result.stuck.empty()) << emu::walker_test::joined(run.result.stuck);
  const emu::TrafficMatrix& walked = run.result.traffic;
  ASSERT_EQ(walked.block, 1u);
  uint64_t cells = 0;
  for (int32_t a = 0; a < 32; ++a) {
    for (int32_t b = 0; b < 32; ++b) {
      const auto it = t.matrix.find({a, b});
      const uint64_t implied = it == t.matrix.end() ? 0 : it->second.bytes;
      EXPECT_EQ(implied, walked.bytes[static_cast<size_t>(a) * walked.side + static_cast<size_t>(b)]) << a << "->" << b;
      if (implied == 0) continue;
      ++cells;
      EXPECT_TRUE(a / 8 == b / 8 || a % 8 == b % 8) << a << "->" << b << ": neither one node nor one GPU position";
    }
  }
  // Per member: its one dimension-0 peer (reduce-scatter, all-gather) and its 3 dimension-1 peers' ring (one
  // successor): 2 cells, over 32 members.
  EXPECT_EQ(cells, 64u);
}

// What `trace analyze` counts per rank is what `trace info` (traces/info.h, a separate reading) counts; the shared
// microbenchmarks and ResNet-50 are balanced; chakra.0.et's CPU-side collectives are not matched.
void expect_same_as_info(const std::string& prefix) {
  const auto files = traces::find_rank_files(prefix);
  const TraceAnalysis a = analyze_workload(prefix, files);
  const traces::WorkloadSummary info = traces::summarize_workload(files);
  ASSERT_EQ(a.ranks.size(), info.ranks.size());
  uint64_t untyped = 0;
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    const auto& mine = a.ranks[r];
    const auto& theirs = info.ranks[r];
    EXPECT_EQ(mine.nodes, theirs.nodes) << prefix << " rank " << r;
    EXPECT_EQ(mine.collective_bytes, theirs.collective_bytes) << prefix << " rank " << r;
    EXPECT_EQ(mine.send_bytes, theirs.send_bytes) << prefix << " rank " << r;
    EXPECT_EQ(mine.compute_us, theirs.compute_micros) << prefix << " rank " << r;
    untyped += theirs.untyped_collectives;
  }
  EXPECT_EQ(a.untyped_collectives, untyped) << prefix;
}

TEST(TraceAnalyze, SharedTracesAgreeWithTraceInfoAndBalance) {
  FABEMU_REQUIRE_SHARED(shared);
  const std::vector<std::string> balanced = {
      (shared / "astra-sim/examples/workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce").string(),
      (shared / "astra-sim/examples/workload/microbenchmarks/all_gather/16npus_1MB/all_gather").string(),
      (shared / "astra-sim-text/resnet50_dp_N64/resnet50").string()};
  for (const auto& prefix : balanced) {
    expect_same_as_info(prefix);
    const TraceAnalysis a = analyze_workload(prefix, traces::find_rank_files(prefix));
    EXPECT_FALSE(a.collectives.empty()) << prefix;
    EXPECT_TRUE(a.worst_first.empty()) << prefix;
    for (const auto& I : a.collectives) EXPECT_EQ(I.bytes.cv, 0.0) << prefix;
  }
  const std::string chakra = (shared / "mlcommons-chakra/chakra.0.et").string();
  expect_same_as_info(chakra);
  const TraceAnalysis a = analyze_workload(chakra, traces::find_rank_files(chakra));
  EXPECT_EQ(a.collectives.size(), 7u);  // 5 ALL_REDUCE and 2 BROADCAST with a comm_type; 14 CPU-side records
  EXPECT_EQ(a.untyped_collectives, 14u);
  // Golden figures of its longest chain (from this code, 2026-12-07): 18,349 us over 419 of 3,664 nodes.
  EXPECT_EQ(a.ranks[0].chain_us, 18349u);
  EXPECT_EQ(a.ranks[0].chain_ids.size(), 419u);
}

TEST(TraceGraph, WholeRankAndWindows) {
  test::ScratchDir dir;
  const auto files = write_ring(dir, 4096);
  const RankGraph g = load_rank_graph(files[0], 0, true);
  const GraphDot all = graph_dot(g, 0, files[0], {});
  EXPECT_EQ(all.nodes, 6u);
  EXPECT_EQ(all.edges, 5u);  // 1->2, 1->3, 2->4, 3->4 (data), 4->5 (ctrl)
  EXPECT_EQ(all.chain_nodes_drawn, 4u);
  EXPECT_NE(all.dot.find("n4 -> n5 [style=dashed"), std::string::npos);
  const GraphDot around = graph_dot(g, 0, files[0], {.around = 1, .depth = 1});
  EXPECT_EQ(around.nodes, 3u);  // 1, 2, 3
  EXPECT_EQ(around.edges, 2u);
  const GraphDot range = graph_dot(g, 0, files[0], {.id_range = std::pair<uint64_t, uint64_t>{2, 4}});
  EXPECT_EQ(range.nodes, 3u);  // 2, 3, 4
  EXPECT_EQ(range.edges, 2u);
  EXPECT_THROW(graph_dot(g, 0, files[0], {.around = 99}), std::invalid_argument);
  EXPECT_THROW(graph_dot(g, 0, files[0], {.id_range = std::pair<uint64_t, uint64_t>{100, 200}}), std::invalid_argument);
  EXPECT_THROW(graph_dot(g, 0, files[0], {.max_nodes = 5}), std::invalid_argument);
  EXPECT_THROW(parse_id_range("5..2"), std::invalid_argument);
  EXPECT_THROW(parse_id_range("a..b"), std::invalid_argument);
  EXPECT_EQ(parse_id_range("3..7"), (std::pair<uint64_t, uint64_t>{3, 7}));
}

TEST(HtmlPage, ChartsCarryTheirPointsAndNoUrl) {
  report::HtmlPage page("t <&>");
  page.bar_chart({.title = "b", .labels = {"a", "b", "c"}, .values = {1, 0, 3}, .unit = "bytes"});
  page.heatmap({.title = "h", .row_labels = {"0", "1"}, .col_labels = {"0", "1"}, .values = {{0, 5}, {2, 0}}});
  page.stacked_bars({.title = "s", .labels = {"x", "y"}, .series = {{"p", {1, 2}}, {"q", {0, 4}}}});
  const std::string html = page.html();
  EXPECT_NE(html.find("data-points=\"3\""), std::string::npos);  // bars, zero included
  EXPECT_NE(html.find("data-points=\"2\""), std::string::npos);  // heatmap's two non-zero cells
  EXPECT_NE(html.find("data-points=\"3\""), std::string::npos);  // stacked: three non-zero segments
  EXPECT_NE(html.find("t &lt;&amp;&gt;"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex("https?://")));
  EXPECT_FALSE(std::regex_search(html, std::regex("<script")));
}

}  // namespace
}  // namespace fabemu::analyze
