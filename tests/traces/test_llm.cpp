// LLM workload synthesis (traces/llm.h): closed-form FLOPs of the presets, FLOPs written into the traces,
// DP all-reduce bytes and the 1F1B bubble through the emulator, cross-rank consistency over a grid of
// plans, placement order, and the errors for bad plans.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/emulator/walker_test_util.h"
#include "traces/attrs.h"
#include "traces/llm.h"
#include "traces/trace_set.h"
#include "traces/validate.h"

namespace fabemu::traces {
namespace {

using emu::walker_test::dim;
using emu::walker_test::network;
using emu::walker_test::run_walker;
using emu::walker_test::system_config;

// A small dense model whose per-layer weights (4 x 64^2 + 3 x 64 x 128 = 40960) divide evenly by 2, 4, 8.
LlmSpec small(int64_t tp = 1, int64_t pp = 1, int64_t dp = 1) {
  LlmSpec s;
  s.model = {.name = "small", .layers = 4, .hidden = 64, .ffn = 128, .heads = 8, .kv_heads = 4, .vocab = 256,
             .seq = 32};
  s.train = {.micro_batch = 1, .global_batch = 8, .dtype_bytes = 2};
  s.plan.tp = tp;
  s.plan.pp = pp;
  s.plan.dp = dp;
  s.jobs = 2;
  return s;
}

LlmSpec small_moe(int64_t tp, int64_t pp, int64_t dp, int64_t ep) {
  LlmSpec s = small(tp, pp, dp);
  s.model.experts = 4;
  s.model.top_k = 2;
  s.train.global_batch = 16;
  s.plan.ep = ep;
  return s;
}

std::vector<Node> read_all(const std::string& path) {
  std::vector<Node> out;
  TraceReader reader(path);
  Node n;
  while (reader.next(n)) out.push_back(n);
  return out;
}

// ---- closed forms of the presets
TEST(LlmPresets, FlopsAre6NTWithinTheAttentionTerm) {
  // Published parameter counts (billions; docs/workloads.md cites them) the preset shapes must reproduce.
  const std::map<std::string, std::pair<double, double>> published = {
      {"gpt3-175b", {175.0, 175.0}}, {"llama3-8b", {8.03, 8.03}},       {"llama3-70b", {70.6, 70.6}},
      {"llama3-405b", {405.8, 405.8}}, {"mixtral-8x7b", {46.7, 12.9}}};
  ASSERT_EQ(llm_preset_names().size(), published.size());
  for (const auto& name : llm_preset_names()) {
    SCOPED_TRACE(name);
    LlmSpec spec;
    spec.model = *llm_preset(name);
    spec.train.global_batch = llm_preset_global_batch(name) > 0 ? llm_preset_global_batch(name) : 64;
    const LlmFigures f = llm_figures(spec);
    const auto& M = spec.model;
    const auto L = static_cast<uint64_t>(M.layers), h = static_cast<uint64_t>(M.hidden),
               s = static_cast<uint64_t>(M.seq), V = static_cast<uint64_t>(M.vocab);
    // The exact formula implemented: 6 N per token, plus the attention scores (QK^T and AV: 4 s h per
    // layer forward, x3 for forward + backward), minus the embedding lookup, which has weights but no FLOPs.
    EXPECT_EQ(f.flops_per_token, 6 * f.active_params + 12 * L * s * h - 6 * V * h);
    const double ratio = static_cast<double>(f.flops_per_token) / (6.0 * static_cast<double>(f.active_params));
    const double attention_share = 2.0 * static_cast<double>(L * s * h) / static_cast<double>(f.active_params);
    const double embedding_share = static_cast<double>(V * h) / static_cast<double>(f.active_params);
    EXPECT_LE(ratio, 1.0 + attention_share);
    EXPECT_GE(ratio, 1.0 - embedding_share);
    EXPECT_NEAR(static_cast<double>(f.params) / 1e9, published.at(name).first, published.at(name).first * 0.01);
    EXPECT_NEAR(static_cast<double>(f.active_params) / 1e9, published.at(name).second,
                published.at(name).second * 0.01);
    EXPECT_EQ(f.tokens, spec.train.global_batch * M.seq);
  }
  // GPT-3 175B by hand: 96 x 12 x 12288^2 + 2 x 50257 x 12288 weights.
  LlmSpec g;
  g.model = *llm_preset("gpt3-175b");
  g.train.global_batch = 1536;
  EXPECT_EQ(llm_figures(g).params, 96ull * 12 * 12288 * 12288 + 2ull * 50257 * 12288);
}

// Sum of num_ops over every rank's COMP nodes (optimizer excluded) = the closed form x tokens.
TEST(LlmTraces, FlopsWrittenMatchTheClosedForm) {
  std::vector<LlmSpec> specs = {small(1, 1, 1), small(2, 2, 2), small_moe(2, 2, 1, 2), small_moe(1, 1, 2, 2)};
  specs[1].plan.sequence_parallel = true;
  for (const auto& spec : specs) {
    test::ScratchDir dir;
    const auto out = generate_llm(spec, dir.file("w"));
    const auto f = llm_figures(spec);
    uint64_t ops = 0, optimizer_nodes = 0;
    for (const auto& p : out.paths) {
      for (const Node& n : read_all(p)) {
        if (n.type() != ChakraProtoMsg::COMP_NODE) continue;
        ASSERT_TRUE(attr_int(n, "num_ops").has_value()) << n.name();
        ASSERT_TRUE(attr_int(n, "tensor_size").has_value()) << n.name();
        if (n.name() == "optimizer.step") {
          ++optimizer_nodes;
        } else {
          ops += static_cast<uint64_t>(*attr_int(n, "num_ops"));
        }
      }
    }
    EXPECT_EQ(ops, f.flops_per_token * static_cast<uint64_t>(f.tokens)) << spec.plan.tp << spec.plan.pp;
    EXPECT_EQ(optimizer_nodes, out.paths.size());
  }
}

// ---- through the emulator
emu::WalkerOptions roofline_options(emu::SystemConfig sys) {
  emu::WalkerOptions o;
  o.system = std::move(sys);
  o.compute_model = emu::ComputeModel::kRoofline;
  o.peak_tflops = 1;     // 1 op per ps
  o.mem_bw_gbps = 1000;  // 1 byte per ps
  return o;
}

TEST(LlmEmulated, DataParallelBytesAre2NMinus1OverNOfTheGradients) {
  for (const int zero : {0, 1}) {
    for (const int64_t n : {2, 4, 8}) {
      SCOPED_TRACE(::testing::Message() << "zero " << zero << " dp " << n);
      LlmSpec spec = small(1, 1, n);
      spec.train.global_batch = 2 * n;
      spec.plan.zero = zero;
      test::ScratchDir dir;
      const auto out = generate_llm(spec, dir.file("w"));
      const uint64_t grad_bytes = llm_figures(spec).stage_dense_params[0] * 2;
      const auto run = run_walker(network({dim(emu::DimTopology::kRing, n)}),
                                  roofline_options(system_config(emu::CollectiveAlgo::kRing, 1, 1)), out.paths);
      ASSERT_TRUE(run.result.stuck.empty()) << run.result.stuck.front();
      // Every rank sends 2(N-1)/N of its gradient bytes (all-reduce, or reduce-scatter + all-gather).
      const auto N = static_cast<uint64_t>(n);
      ASSERT_EQ(grad_bytes % N, 0u);
      EXPECT_EQ(run.result.message_bytes, N * (2 * (N - 1) * grad_bytes / N));
      // Gradient buckets: a layer's reduction runs while earlier layers' backward computes, so part of
      // the communication is hidden behind compute.
      for (const auto& r : run.result.ranks) {
        EXPECT_LT(r.exposed_comm.ps(), r.comm_busy.ps()) << "rank " << r.rank;
      }
    }
  }
}

TEST(LlmEmulated, OneFOneBBubbleIsPMinus1OverMPlusPMinus1) {
  for (const auto& [p, m] : std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {4, 8}, {4, 4}, {4, 2}, {8, 16}}) {
    SCOPED_TRACE(::testing::Message() << "p " << p << " m " << m);
    LlmSpec spec = small(1, p, 1);
    spec.model.layers = 2 * p;
    spec.model.embedding = false;  // equal stages
    spec.train.global_batch = m;
    test::ScratchDir dir;
    const auto out = generate_llm(spec, dir.file("w"));
    // Communication costs nothing: an infinitely fast link without latency and no endpoint delay.
    auto d = dim(emu::DimTopology::kRing, p, 50, 0);
    d.bandwidth = emu::Rate::from_ps_per_byte_q32(0);
    auto sys = system_config(emu::CollectiveAlgo::kRing, 1, 1, 1, 0);
    const auto run = run_walker(network({d}), roofline_options(sys), out.paths);
    ASSERT_TRUE(run.result.stuck.empty()) << run.result.stuck.front();
    const uint64_t params = llm_figures(spec).stage_dense_params[0];
    const uint64_t opt = std::max(params * 12, params * (24 + 2 * 2));  // roofline of optimizer.step, in ps
    const uint64_t busy = run.result.ranks[0].compute_busy.ps();
    for (const auto& r : run.result.ranks) EXPECT_EQ(r.compute_busy.ps(), busy) << "rank " << r.rank;
    const uint64_t iteration = run.result.total.ps() - opt;  // the pipelined part, optimizer excluded
    const uint64_t work = busy - opt;                         // m x (forward + backward) of one stage
    ASSERT_GT(work, 0u);
    // bubble / iteration = (p-1)/(m+p-1), exactly: iteration = (m+p-1)/m x work.
    EXPECT_EQ(iteration * static_cast<uint64_t>(m), work * static_cast<uint64_t>(m + p - 1));
    EXPECT_EQ((iteration - work) * static_cast<uint64_t>(m + p - 1), iteration * static_cast<uint64_t>(p - 1));
  }
}

// ---- cross-rank consistency over a grid of plans
struct Plan {
  int64_t tp, pp, dp, ep;
  int zero;
  bool sp;
  const char* order;
};

std::vector<Plan> grid_plans() {
  return {
      {1, 1, 1, 1, 0, false, "tp,ep,dp,pp"}, {2, 1, 1, 1, 0, false, "tp,ep,dp,pp"},
      {1, 4, 1, 1, 0, false, "tp,ep,dp,pp"}, {1, 1, 4, 1, 1, false, "tp,ep,dp,pp"},
      {2, 2, 2, 1, 0, false, "tp,ep,dp,pp"}, {2, 2, 2, 1, 1, true, "pp,dp,tp,ep"},
      {2, 2, 2, 1, 2, true, "dp,tp,pp,ep"},  {2, 1, 2, 1, 3, true, "tp,ep,dp,pp"},
      {1, 2, 2, 2, 1, false, "tp,ep,dp,pp"}, {2, 2, 1, 2, 0, true, "ep,tp,pp,dp"},
      {1, 1, 2, 4, 3, false, "tp,ep,dp,pp"}, {2, 2, 2, 2, 2, true, "tp,dp,ep,pp"}};
}

LlmSpec grid_spec(const Plan& pl) {
  LlmSpec spec = pl.ep > 1 ? small_moe(pl.tp, pl.pp, pl.dp, pl.ep) : small(pl.tp, pl.pp, pl.dp);
  spec.train.global_batch = 4 * pl.dp * pl.ep;
  spec.plan.zero = pl.zero;
  spec.plan.sequence_parallel = pl.sp;
  spec.plan.order = parse_axis_order(pl.order);
  return spec;
}

TEST(LlmConsistency, GridOfPlansIsConsistent) {
  for (const auto& pl : grid_plans()) {
    SCOPED_TRACE(::testing::Message() << "tp " << pl.tp << " pp " << pl.pp << " dp " << pl.dp << " ep " << pl.ep
                                      << " zero " << pl.zero << " sp " << pl.sp << " order " << pl.order);
    const LlmSpec spec = grid_spec(pl);
    test::ScratchDir dir;
    const auto out = generate_llm(spec, dir.file("w"));
    const int64_t world = pl.tp * pl.pp * pl.dp * pl.ep;
    ASSERT_EQ(static_cast<int64_t>(out.paths.size()), world);
    EXPECT_EQ(out.distinct_graphs, pl.pp);

    // The validator: every SEND has its RECV, group members agree, no dangling dependency.
    const auto report = validate_workload(find_rank_files(dir.file("w")));
    for (const auto& f : report.findings) ADD_FAILURE() << to_string(f);
    EXPECT_TRUE(report.ok());
    EXPECT_EQ(report.warnings, 0u);

    // Independently: SEND and RECV multisets agree; each group's members issue identical sequences.
    std::multiset<std::tuple<int64_t, int64_t, int64_t, uint64_t>> sends, recvs;
    std::map<std::string, std::map<int64_t, std::vector<std::pair<int, uint64_t>>>> seq;
    for (int64_t r = 0; r < world; ++r) {
      for (const Node& n : read_all(out.paths[static_cast<size_t>(r)])) {
        const CommInfo c = comm_info(n);
        if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) sends.insert({r, *c.dst, *c.tag, *c.size});
        if (n.type() == ChakraProtoMsg::COMM_RECV_NODE) recvs.insert({*c.src, r, *c.tag, *c.size});
        if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
          ASSERT_FALSE(c.pg.empty()) << n.name();
          seq[c.pg][r].emplace_back(static_cast<int>(*c.collective), *c.size);
        }
      }
    }
    EXPECT_EQ(sends, recvs);
    const auto m = spec.train.global_batch / (pl.dp * pl.ep);
    EXPECT_EQ(sends.size(), static_cast<size_t>(pl.pp > 1 ? 2 * m * (pl.pp - 1) * (world / pl.pp) : 0));
    const auto groups = nlohmann::json::parse(std::ifstream(out.comm_groups_path));
    EXPECT_EQ(groups.size(), seq.size());  // every declared group is used
    for (const auto& [name, ranks] : groups.items()) {
      const auto members = ranks.get<std::vector<int64_t>>();
      ASSERT_EQ(seq[name].size(), members.size()) << "group " << name;
      for (const int64_t r : members) EXPECT_EQ(seq[name][r], seq[name][members.front()]) << "group " << name;
    }

  }
}

// The walker replays every plan to the end with one communication stream per rank. Regression test of
// a walker bug: collectives of two disjoint process groups on one network dimension, with a pipeline
// making their timing differ (tp 2 x pp 2: TP groups {0,1} and {2,3}), made a rank take a stale entry of
// the dimension's "started" queue for the new collective reusing its instance slot (a crash, a
// deadlock, or "DependencyResolver::finish: node N was not issued"). Entries now carry the slot's
// generation.
TEST(LlmConsistency, GridOfPlansRunsInTheWalker) {
  const std::vector<Plan> plans = {{2, 2, 1, 1, 0, false, "tp,ep,dp,pp"}, {1, 2, 2, 1, 0, false, "tp,ep,dp,pp"},
                                   {2, 2, 2, 1, 1, true, "pp,dp,tp,ep"},  {1, 2, 2, 2, 1, false, "tp,ep,dp,pp"},
                                   {2, 1, 2, 1, 3, true, "tp,ep,dp,pp"}};
  for (const auto& pl : plans) {
    SCOPED_TRACE(::testing::Message() << "tp " << pl.tp << " pp " << pl.pp << " dp " << pl.dp << " ep " << pl.ep);
    LlmSpec spec = pl.ep > 1 ? small_moe(pl.tp, pl.pp, pl.dp, pl.ep) : small(pl.tp, pl.pp, pl.dp);
    spec.train.global_batch = 4 * pl.dp * pl.ep;
    spec.plan.zero = pl.zero;
    spec.plan.sequence_parallel = pl.sp;
    spec.plan.order = parse_axis_order(pl.order);
    test::ScratchDir dir;
    const auto out = generate_llm(spec, dir.file("w"));
    const int64_t world = pl.tp * pl.pp * pl.dp * pl.ep;
    try {
      const auto run = run_walker(network({dim(emu::DimTopology::kSwitch, world)}),
                                  roofline_options(system_config(emu::CollectiveAlgo::kRing, 1, 1)), out.paths);
      EXPECT_TRUE(run.result.stuck.empty()) << run.result.stuck.front();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the walker failed: " << e.what();
    }
  }
}

// Regression test of the same walker bug at the shape of the published runs (TP inside a node, PP and DP
// across nodes): TP 2 x PP 4 x DP 2 with 8 micro-batches per pipeline, one communication stream per rank
// and dimension, on a 2-D network (Ring(2) inside a "node" x Switch(8) between them, TP innermost so TP
// pairs share a ring), through both the analytical (closed-form collectives) and the packet fabric. Every
// rank finishes, every collective and SEND of the traces ran, and each of the 16 process groups ran
// exactly as many collectives as the generator's schedule gives it.
TEST(LlmEmulated, PipelinePlanWithManyGroupsRunsWithOneStreamOnBothFabrics) {
  constexpr int64_t kTp = 2, kPp = 4, kDp = 2, kM = 8;
  LlmSpec spec = small(kTp, kPp, kDp);  // 4 layers: one per stage; stage 0 has the embedding, 3 the output
  spec.train.global_batch = kM * kDp;
  test::ScratchDir dir;
  const auto out = generate_llm(spec, dir.file("w"));
  ASSERT_EQ(llm_figures(spec).microbatches, kM);
  const int64_t world = kTp * kPp * kDp;
  ASSERT_EQ(static_cast<int64_t>(out.paths.size()), world);

  // The schedule in closed form, per member: TP all-reduces = 4 per layer and micro-batch (attention and
  // FFN, forward and input gradient) + 1 per micro-batch for the output layer's input gradient (last
  // stage); DP all-reduces (ZeRO-0) = one bucket per layer, + embedding (first stage), + output (last).
  const auto plan = nlohmann::json::parse(std::ifstream(out.plan_path));
  const auto groups = nlohmann::json::parse(std::ifstream(out.comm_groups_path));
  const auto stage_of = [&](int64_t rank) { return rank / (kTp * kDp); };  // order tp,ep,dp,pp
  std::map<std::string, uint64_t> expected;  // group name -> collectives per member
  for (const auto& name : plan["groups_by_kind"]["tp"]) {
    const std::string g = name.get<std::string>();
    const auto members = groups[g].get<std::vector<int64_t>>();
    ASSERT_EQ(static_cast<int64_t>(members.size()), kTp);
    expected[g] = 4 * kM + (stage_of(members[0]) == kPp - 1 ? kM : 0);
  }
  for (const auto& name : plan["groups_by_kind"]["dp"]) {
    const std::string g = name.get<std::string>();
    const auto members = groups[g].get<std::vector<int64_t>>();
    ASSERT_EQ(static_cast<int64_t>(members.size()), kDp);
    const int64_t st = stage_of(members[0]);
    expected[g] = 1 + (st == 0 ? 1 : 0) + (st == kPp - 1 ? 1 : 0);
  }
  ASSERT_EQ(expected.size(), static_cast<size_t>(world / kTp + world / kDp));  // 8 TP + 8 DP groups
  // ... and as the trace files hold them.
  std::map<std::string, std::map<int64_t, uint64_t>> in_traces;
  uint64_t colls = 0, sends = 0;
  for (int64_t r = 0; r < world; ++r) {
    for (const Node& n : read_all(out.paths[static_cast<size_t>(r)])) {
      if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
        ++in_traces[comm_info(n).pg][r];
        ++colls;
      }
      sends += n.type() == ChakraProtoMsg::COMM_SEND_NODE ? 1 : 0;
    }
  }
  ASSERT_EQ(in_traces.size(), expected.size());
  for (const auto& [g, per_rank] : in_traces) {
    for (const auto& [r, count] : per_rank) EXPECT_EQ(count, expected.at(g)) << "group " << g << " rank " << r;
  }
  EXPECT_EQ(sends, static_cast<uint64_t>(2 * kM * (kPp - 1) * (world / kPp)));

  auto options = roofline_options(system_config(emu::CollectiveAlgo::kRing, 2, 1, 2));
  options.comm_streams = 1;
  const auto net = network({dim(emu::DimTopology::kRing, kTp, 400, 500), dim(emu::DimTopology::kSwitch, 8, 50, 2000)});
  for (const auto model : {emu::walker_test::Model::kAnalytical, emu::walker_test::Model::kPacket}) {
    SCOPED_TRACE(model == emu::walker_test::Model::kPacket ? "packet" : "analytical");
    const auto run = emu::walker_test::within(std::chrono::seconds(60), [&] {
      return run_walker(net, options, out.paths, model, model == emu::walker_test::Model::kPacket ? 4096 : ~0u);
    });
    ASSERT_TRUE(run.result.stuck.empty()) << run.result.stuck.front();
    ASSERT_EQ(run.result.ranks.size(), static_cast<size_t>(world));
    uint64_t member_instances = 0;
    std::map<std::string, uint64_t> per_group;
    for (const auto& c : run.result.collectives) {
      member_instances += static_cast<uint64_t>(c.members);
      EXPECT_EQ(c.members, c.group.empty() ? world : static_cast<int32_t>(groups[c.group].size())) << c.name;
      ++per_group[c.group];
    }
    EXPECT_EQ(member_instances, colls);
    EXPECT_EQ(per_group, expected);
    EXPECT_EQ(run.result.p2p.sends, sends);
    // Every rank walked its whole file and computed: the finish times are those of real work.
    for (const auto& r : run.result.ranks) {
      EXPECT_EQ(r.nodes, read_all(out.paths[static_cast<size_t>(r.rank)]).size()) << "rank " << r.rank;
      EXPECT_GT(r.compute_busy.ps(), 0u);
      EXPECT_LE(r.finish.ps(), run.result.total.ps());
    }
  }
}

// Every plan of the grid runs to the end in the walker when each rank has enough communication streams
// (64) that collectives of different groups never wait for each other's slot (the test above runs one
// stream).
TEST(LlmEmulated, GridOfPlansRunsWithManyCommStreams) {
  for (const auto& pl : grid_plans()) {
    SCOPED_TRACE(::testing::Message() << "tp " << pl.tp << " pp " << pl.pp << " dp " << pl.dp << " ep " << pl.ep
                                      << " zero " << pl.zero << " sp " << pl.sp << " order " << pl.order);
    const LlmSpec spec = grid_spec(pl);
    test::ScratchDir dir;
    const auto out = generate_llm(spec, dir.file("w"));
    const int64_t world = pl.tp * pl.pp * pl.dp * pl.ep;
    auto options = roofline_options(system_config(emu::CollectiveAlgo::kRing, 1, 1));
    options.comm_streams = 64;
    const auto run = run_walker(network({dim(emu::DimTopology::kSwitch, world < 2 ? 2 : world)}), options, out.paths);
    ASSERT_TRUE(run.result.stuck.empty()) << run.result.stuck.front();
    uint64_t colls = 0, p2p = 0;
    for (const auto& p : out.paths) {
      for (const Node& n : read_all(p)) {
        colls += n.type() == ChakraProtoMsg::COMM_COLL_NODE ? 1 : 0;
        p2p += n.type() == ChakraProtoMsg::COMM_SEND_NODE ? 1 : 0;
      }
    }
    uint64_t member_instances = 0;
    for (const auto& c : run.result.collectives) member_instances += static_cast<uint64_t>(c.members);
    EXPECT_EQ(member_instances, colls);
    EXPECT_EQ(run.result.p2p.sends, p2p);
  }
}

// Plans without pipeline parallelism or ZeRO-3 prefetch (groups' collectives in step) run with one stream.
TEST(LlmEmulated, PlansWithoutPipelineRunToTheEnd) {
  const std::vector<Plan> plans = {{2, 1, 2, 1, 0, false, "tp,ep,dp,pp"}, {2, 1, 2, 1, 1, true, "dp,tp,pp,ep"},
                                   {4, 1, 2, 1, 2, false, "tp,ep,dp,pp"}, {1, 1, 4, 1, 3, false, "tp,ep,dp,pp"},
                                   {1, 1, 2, 2, 0, false, "tp,ep,dp,pp"}, {2, 1, 1, 2, 1, true, "tp,ep,dp,pp"}};
  for (const auto& pl : plans) {
    SCOPED_TRACE(::testing::Message() << "tp " << pl.tp << " dp " << pl.dp << " ep " << pl.ep << " zero " << pl.zero);
    LlmSpec spec = pl.ep > 1 ? small_moe(pl.tp, pl.pp, pl.dp, pl.ep) : small(pl.tp, pl.pp, pl.dp);
    spec.train.global_batch = 4 * pl.dp * pl.ep;
    spec.plan.zero = pl.zero;
    spec.plan.sequence_parallel = pl.sp;
    spec.plan.order = parse_axis_order(pl.order);
    test::ScratchDir dir;
    const auto out = generate_llm(spec, dir.file("w"));
    const int64_t world = pl.tp * pl.dp * pl.ep;
    const auto run = run_walker(network({dim(emu::DimTopology::kSwitch, world)}),
                                roofline_options(system_config(emu::CollectiveAlgo::kRing, 1, 1)), out.paths);
    ASSERT_TRUE(run.result.stuck.empty()) << run.result.stuck.front();
    // Every collective written ran: per rank, as many collective nodes as the trace holds.
    uint64_t colls = 0;
    for (const auto& p : out.paths) {
      for (const Node& n : read_all(p)) colls += n.type() == ChakraProtoMsg::COMM_COLL_NODE ? 1 : 0;
    }
    uint64_t member_instances = 0;
    for (const auto& c : run.result.collectives) member_instances += static_cast<uint64_t>(c.members);
    EXPECT_EQ(member_instances, colls);
    for (const auto& r : run.result.ranks) EXPECT_GE(r.compute_busy.ps(), 1u);
  }
}

TEST(LlmPlacement, OrderDecidesGroupMembers) {
  LlmSpec spec = small(2, 2, 2);
  spec.plan.order = parse_axis_order("dp,tp,pp,ep");  // dp innermost: TP peers are 2 apart
  test::ScratchDir dir;
  const auto out = generate_llm(spec, dir.file("w"));
  const auto plan = nlohmann::json::parse(std::ifstream(out.plan_path));
  const auto groups = nlohmann::json::parse(std::ifstream(out.comm_groups_path));
  const std::string tp0 = plan["groups_by_kind"]["tp"][0];
  const std::string dp0 = plan["groups_by_kind"]["dp"][0];
  EXPECT_EQ(groups[tp0].get<std::vector<int64_t>>(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(groups[dp0].get<std::vector<int64_t>>(), (std::vector<int64_t>{0, 1}));
  // Pipeline peers are 4 apart: rank 0 sends its activations to rank 4.
  bool found = false;
  for (const Node& n : read_all(out.paths[0])) {
    if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) {
      EXPECT_EQ(comm_info(n).dst, 4);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  // Default order: TP innermost.
  LlmSpec d = small(2, 2, 2);
  test::ScratchDir dir2;
  const auto out2 = generate_llm(d, dir2.file("w"));
  const auto plan2 = nlohmann::json::parse(std::ifstream(out2.plan_path));
  const auto groups2 = nlohmann::json::parse(std::ifstream(out2.comm_groups_path));
  const std::string tp = plan2["groups_by_kind"]["tp"][1];
  EXPECT_EQ(groups2[tp].get<std::vector<int64_t>>(), (std::vector<int64_t>{2, 3}));
}

TEST(LlmSymmetry, RanksOfAStageShareOneGraph) {
  LlmSpec spec = small(2, 2, 4);
  test::ScratchDir dir;
  const auto out = generate_llm(spec, dir.file("w"));
  EXPECT_EQ(out.distinct_graphs, 2);
  // Ranks 0 and 4 (stage 0, other DP replica) differ only in their group names and peers.
  const auto a = read_all(out.paths[0]), b = read_all(out.paths[4]);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id(), b[i].id());
    EXPECT_EQ(a[i].type(), b[i].type());
    EXPECT_EQ(a[i].name(), b[i].name());
  }
  uint64_t total = 0;
  for (const auto& p : out.paths) total += static_cast<uint64_t>(std::filesystem::file_size(p));
  EXPECT_EQ(total, out.bytes);
}

TEST(LlmOutput, GzipHoldsTheSameNodes) {
  LlmSpec spec = small(2, 2, 1);
  test::ScratchDir dir;
  const auto plain = generate_llm(spec, dir.file("p"));
  spec.gzip = true;
  const auto gz = generate_llm(spec, dir.file("g"));
  ASSERT_EQ(gz.paths.size(), plain.paths.size());
  EXPECT_EQ(gz.paths[1], dir.file("g") + ".1.et.gz");
  EXPECT_LT(gz.bytes, plain.bytes);
  for (size_t r = 0; r < gz.paths.size(); ++r) {
    const auto a = read_all(plain.paths[r]), b = read_all(gz.paths[r]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].SerializeAsString(), b[i].SerializeAsString());
  }
  EXPECT_TRUE(validate_workload(find_rank_files(dir.file("g"))).ok());
}

// ---- bad input: the message names the option
void expect_error(const LlmSpec& spec, const std::string& needle) {
  try {
    llm_figures(spec);
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(LlmBadInput, ErrorsNameTheOption) {
  LlmSpec s = small(3, 1, 1);
  expect_error(s, "--heads 8 is not divisible by --tp 3");
  s = small(8, 1, 1);
  expect_error(s, "--kv-heads 4 is not divisible by --tp 8");
  s = small(1, 3, 1);
  expect_error(s, "--layers 4 is not divisible by --pp 3");
  s = small(2, 2, 2);
  s.plan.world = 12;
  expect_error(s, "--ranks 12 is not tp x pp x dp x ep = 2 x 2 x 2 x 1 = 8");
  s = small(2, 2, 0);
  s.plan.world = 10;
  expect_error(s, "--ranks 10 is not a multiple of tp x pp x ep = 2 x 2 x 1 = 4");
  s = small(1, 1, 3);
  expect_error(s, "--global-batch 8 is not a multiple of --micro-batch x dp x ep");
  s = small(1, 1, 1);
  s.plan.ep = 2;
  expect_error(s, "--ep 2 needs a mixture-of-experts model");
  s = small_moe(1, 1, 1, 3);
  s.train.global_batch = 12;
  expect_error(s, "--experts 4 is not divisible by --ep 3");
  s = small(1, 2, 1);
  s.plan.zero = 3;
  expect_error(s, "--zero 3 cannot be combined with --pp 2");
  s = small(1, 1, 1);
  s.model.hidden = 60;
  expect_error(s, "--hidden 60 is not divisible by --heads 8");
  s = small(1, 1, 1);
  s.train.global_batch = 0;
  expect_error(s, "--global-batch must be at least 1");
  EXPECT_THROW(parse_axis_order("tp,dp,pp"), std::invalid_argument);
  try {
    parse_axis_order("tp,tp,dp,pp");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--order"), std::string::npos);
  }
  // Derived DP from the world size.
  s = small(2, 2, 0);
  s.plan.world = 16;
  EXPECT_EQ(llm_figures(s).dp, 4);
}

}  // namespace
}  // namespace fabemu::traces
