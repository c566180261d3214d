// `collective_semantics: nccl` in a walk: every collective NCCL has ends at its last member's issue + the NCCL
// model's time for its group's shape (emulator/nccl_semantics.h), equal to `fabemu bench collective`'s; the
// others run in ASTRA-sim's semantics; the fabric file's key and the run's refusals.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/nccl_model.h"
#include "emulator/packet_fabric.h"
#include "emulator/walker.h"
#include "host/config/fabric_config.h"
#include "tests/support/test_support.h"
#include "traces/error.h"
#include "traces/generate.h"
#include "traces/process_groups.h"
#include "tests/emulator/walker_test_util.h"

namespace fabemu::emu::nccl {
namespace {

using walker_test::coll;
using walker_test::Node;
using walker_test::write_ranks;

std::string preset(const std::string& name) { return std::string(FABEMU_SOURCE_DIR) + "/traces/systems/" + name; }

struct Walked {
  RunResult result;
  System machine;
};

// One collective on the preset's machine in NCCL's semantics (optionally over a process group).
Walked walk(const std::string& system, traces::CollectiveType type, uint64_t bytes,
            std::optional<std::vector<int64_t>> pg = std::nullopt) {
  test::ScratchDir dir;
  const auto f = host::load_fabric_yaml(preset(system));
  traces::CollectiveSpec spec;
  spec.type = type;
  spec.ranks = f.network.total_npus();
  spec.size_bytes = bytes;
  spec.pg_ranks = pg;
  const auto files = traces::generate_collective(spec, dir.file("c"));
  traces::ProcessGroups groups(spec.ranks);
  if (pg) groups.load_file(dir.file("c.comm_groups.json"));
  Engine engine;
  AnalyticalFabric fabric(engine, Topology(f.network));
  WalkerOptions opt;
  opt.system = f.system;
  opt.nccl = *f.nccl;
  Walker w(fabric, f.network, files, groups, opt);
  return Walked{w.run(), *f.nccl};
}

TEST(NcclSemantics, AWholeMachineCollectiveTakesTheModelsTimeOnEveryMember) {
  const Walked r = walk("a100_8x_nvswitch.yaml", ChakraProtoMsg::ALL_REDUCE, 1 << 20);
  ASSERT_TRUE(r.result.stuck.empty());
  const auto c = Model(r.machine).choose(Func::kAllReduce, 1 << 20);
  ASSERT_TRUE(c);
  for (const auto& rank : r.result.ranks) EXPECT_EQ(rank.finish.ps(), c->time.ps());
  ASSERT_EQ(r.result.collectives.size(), 1u);
  EXPECT_EQ(r.result.collectives[0].algorithm, "nccl:ring/LL");
  EXPECT_EQ(r.result.collectives[0].duration().ps(), c->time.ps());
  EXPECT_EQ(r.result.messages, 0u);  // the model times it; nothing is sent
}

TEST(NcclSemantics, ACommunicatorsCollectivesRunOneAfterAnotherOnItsStream) {
  // Two all-reduces that depend on nothing, issued at once by every rank: NCCL runs them one after the other
  // on the communicator's stream, so the second ends at twice the model's time.
  test::ScratchDir dir;
  const auto f = host::load_fabric_yaml(preset("a100_8x_nvswitch.yaml"));
  std::vector<std::vector<Node>> ranks(8);
  for (auto& r : ranks) r = {coll(1, ChakraProtoMsg::ALL_REDUCE, 1 << 20), coll(2, ChakraProtoMsg::ALL_REDUCE, 1 << 20)};
  const auto files = write_ranks(dir, "two", ranks);
  Engine engine;
  AnalyticalFabric fabric(engine, Topology(f.network));
  WalkerOptions opt;
  opt.system = f.system;
  opt.nccl = *f.nccl;
  Walker w(fabric, f.network, files, traces::ProcessGroups(8), opt);
  const RunResult r = w.run();
  const auto c = Model(*f.nccl).choose(Func::kAllReduce, 1 << 20);
  ASSERT_EQ(r.collectives.size(), 2u);
  EXPECT_EQ(r.collectives[0].finished.ps(), c->time.ps());
  EXPECT_EQ(r.collectives[1].finished.ps(), 2 * c->time.ps());
  for (const auto& rank : r.ranks) EXPECT_EQ(rank.finish.ps(), 2 * c->time.ps());
}

TEST(NcclSemantics, AnAllGathersSizeIsTheGatheredWhole) {
  const Walked r = walk("p5_2node_efa.yaml", ChakraProtoMsg::ALL_GATHER, 1 << 20);  // 1 MiB per rank, 16 ranks
  const auto c = Model(r.machine).choose(Func::kAllGather, uint64_t{16} << 20);
  ASSERT_TRUE(c);
  EXPECT_EQ(r.result.collectives.at(0).duration().ps(), c->time.ps());
}

TEST(NcclSemantics, AGroupRunsOnTheModelOfItsShape) {
  // Ranks 0 and 8 of two 8-GPU nodes: NCCL's communicator has 1 GPU per node on 2 nodes, with 1/8 of the
  // node's network bandwidth and no NVLS.
  const Walked across = walk("p5_2node_efa.yaml", ChakraProtoMsg::ALL_REDUCE, 1 << 24, std::vector<int64_t>{0, 8});
  System s = across.machine;
  s.gpus_per_node = 1;
  s.nodes = 2;
  s.net_channel_gbps = across.machine.net_channel_gbps / 8;
  s.nvls = false;
  EXPECT_EQ(across.result.collectives.at(0).algorithm.find("nvls"), std::string::npos);
  EXPECT_EQ(across.result.collectives.at(0).duration().ps(), Model(s).choose(Func::kAllReduce, 1 << 24)->time.ps());
  // Ranks 8..15: one node of 8.
  const Walked inside = walk("p5_2node_efa.yaml", ChakraProtoMsg::ALL_REDUCE, 1 << 24,
                          std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15});
  s = inside.machine;
  s.gpus_per_node = 8;
  s.nodes = 1;
  const auto c = Model(s).choose(Func::kAllReduce, 1 << 24);
  EXPECT_EQ(inside.result.collectives.at(0).duration().ps(), c->time.ps());
  EXPECT_EQ(inside.result.collectives.at(0).algorithm,
            std::string("nccl:") + std::string(algo_name(c->algo)) + "/" + std::string(proto_name(c->proto)));
}

TEST(NcclSemantics, AllToAllRunsInAstraSimsSemantics) {
  const Walked r = walk("a100_8x_nvswitch.yaml", ChakraProtoMsg::ALL_TO_ALL, 1 << 20);
  ASSERT_TRUE(r.result.stuck.empty());
  EXPECT_EQ(r.result.collectives.at(0).algorithm.rfind("nccl:", 0), std::string::npos);
  EXPECT_GT(r.result.messages, 0u);
}

TEST(NcclSemantics, TheFabricFilesKeyNeedsTheNcclSection) {
  test::ScratchDir dir;
  const std::string path = dir.file("f.yaml");
  test::write_bytes(path, "topology: [{type: Switch, npus: 8, bandwidth_gbps: 2400, latency_ns: 500}]\n"
                          "collective_semantics: nccl\n");
  try {
    host::load_fabric_yaml(path);
    ADD_FAILURE() << "expected an error";
  } catch (const traces::TraceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path + ": line 2: key \"collective_semantics\": nccl needs the \"nccl:\" section"),
              std::string::npos)
        << msg;
  }
  test::write_bytes(path, "topology: [{type: Switch, npus: 8, bandwidth_gbps: 2400, latency_ns: 500}]\n"
                          "collective_semantics: NCCL\n");
  EXPECT_THROW(host::load_fabric_yaml(path), traces::TraceError);
}

}  // namespace
}  // namespace fabemu::emu::nccl
