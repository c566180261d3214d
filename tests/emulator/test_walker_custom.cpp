// Custom collective implementations in the walker (system.json's "*-implementation-custom",
// docs/custom_collectives.md): ASTRA-sim's published custom all-reduce on both models, the same algorithm
// from its MSCCL-IR XML, an algorithm of our own against its closed form, and the located errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "host/config/astra_config.h"
#include "tests/emulator/walker_test_util.h"
#include "traces/trace_set.h"

namespace fabemu::emu {
namespace {

namespace fs = std::filesystem;
using namespace walker_test;

const fs::path kSource = FABEMU_SOURCE_DIR;
const fs::path kDirectXml = kSource / "tests/emulator/custom/direct_allreduce_4gpus.xml";

std::vector<std::string> rank_files(const fs::path& prefix) {
  std::vector<std::string> out;
  for (const auto& f : traces::find_rank_files(prefix.string())) out.push_back(f.path);
  return out;
}

WalkerOptions opts(SystemConfig s) {
  WalkerOptions o;
  o.system = std::move(s);
  return o;
}

// REFERENCE.md: the all_reduce/8npus_1MB microbenchmark on Ring_8npus.yml with system_custom_allreduce.json.
struct SharedRun {
  NetworkConfig net;
  SystemConfig sys;
  std::vector<std::string> files;
  fs::path custom;  // the folder of the custom implementation's .et files and .xml
};
SharedRun shared_run(const fs::path& traces_dir) {
  const fs::path cfg = traces_dir.parent_path() / "configs" / "astra-sim";
  const auto net = host::load_network_yml((cfg / "Ring_8npus.yml").string());
  return {net, host::load_system_json((cfg / "system_custom_allreduce.json").string(), net.dims.size()),
          rank_files(traces_dir / "astra-sim/examples/workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce"),
          traces_dir / "astra-sim/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB"};
}

constexpr double kAstraSimNs = 90174;  // REFERENCE.md, both of ASTRA-sim's analytical backends

void expect_astra_sim(const RunResult& r, const std::string& what) {
  ASSERT_TRUE(r.stuck.empty()) << what << ": " << joined(r.stuck);
  const double ns = static_cast<double>(r.total.ps()) / 1000.0;
  EXPECT_LE(std::abs(ns - kAstraSimNs), kAstraSimNs * 0.002) << what << ": " << ns << " ns vs ASTRA-sim's 90,174";
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].algorithm, "custom");
  EXPECT_EQ(r.collectives[0].chunks, 1u);
  // Its graphs' messages: 8 members x 14 SENDs of 1 MiB / 8, the collective's, none a SEND/RECV of the trace.
  EXPECT_EQ(r.collectives[0].messages, 8u * 14u);
  EXPECT_EQ(r.collectives[0].message_bytes, 8u * 14u * 131072u);
  EXPECT_EQ(r.p2p.sends, 0u);
  EXPECT_EQ(joined(r.warnings).find("custom"), std::string::npos) << joined(r.warnings);
}

TEST(WalkerCustom, SharedAllReduceMatchesAstraSimOnBothModels) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const SharedRun s = shared_run(traces_dir);
  // The key names a path relative to the system file's folder; the reader resolved it.
  EXPECT_EQ(fs::path(s.sys.all_reduce_custom).lexically_normal(), (s.custom / "custom_allreduce").lexically_normal());
  // The same graphs run as the workload itself (SEND/RECV nodes): one implementation of SEND/RECV, one time.
  SystemConfig p2p = s.sys;
  p2p.all_reduce_custom.clear();
  for (const auto model : {Model::kAnalytical, Model::kPacket}) {
    const auto r = run_walker(s.net, opts(s.sys), s.files, model);
    expect_astra_sim(r.result, model == Model::kPacket ? "packet" : "analytical");
    const auto direct = run_walker(s.net, opts(p2p), rank_files(s.custom / "custom_allreduce"), model);
    EXPECT_EQ(r.result.total, direct.result.total);
    for (const RankResult& k : r.result.ranks) {
      EXPECT_EQ(k.sent_messages, 14u) << "rank " << k.rank;
      EXPECT_EQ(k.received_bytes, 14u * 131072u) << "rank " << k.rank;
    }
  }
}

TEST(WalkerCustom, SharedXmlGivesTheSameTotalAsItsEtFiles) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const SharedRun s = shared_run(traces_dir);
  SystemConfig xml = s.sys;
  xml.all_reduce_custom = (s.custom / "custom_allreduce.xml").string();
  for (const auto model : {Model::kAnalytical, Model::kPacket}) {
    const auto et = run_walker(s.net, opts(s.sys), s.files, model);
    const auto x = run_walker(s.net, opts(xml), s.files, model);
    expect_astra_sim(x.result, "xml");
    EXPECT_EQ(x.result.total, et.result.total);
  }
}

// Every pair of 4 NPUs has its own link, of exactly 20 ps per byte (50 GB/s) and 500 ns.
NetworkConfig fully_connected_4() {
  NetworkDim d = dim(DimTopology::kFullyConnected, 4, 50, 500);
  d.bandwidth = Rate::from_bytes_per_sec(50'000'000'000);
  return network({d});
}

// One all-reduce of `bytes` per rank (`count` of them, independent), n ranks.
std::vector<std::string> all_reduces(const test::ScratchDir& dir, int n, uint64_t bytes, int count = 1) {
  std::vector<std::vector<Node>> per_rank(static_cast<size_t>(n));
  for (auto& nodes : per_rank) {
    for (int k = 0; k < count; ++k) nodes.push_back(coll(static_cast<uint64_t>(k), ChakraProtoMsg::ALL_REDUCE, bytes));
  }
  return write_ranks(dir, "w", per_rank);
}

// tests/emulator/custom/direct_allreduce_4gpus.xml: each GPU sends every peer its chunk (S/4) at once on its own
// link, reduces the three it receives one after another (rrc: c = floor(3 floor(S/4 / 50) / 1000) us each, the
// converter's rule), then sends its reduced chunk to every peer at once. DESIGN.md's link contract, one hop:
// a message of m bytes takes L + ser(m), ser(m) = 20 m ps exactly; so T = 2 (L + ser(S/4)) + 3 c on both models
// (no two messages share a link; the packet model's packets of one message follow each other on their link).
TEST(WalkerCustom, DirectAllReduceXmlMatchesClosedForm) {
  test::ScratchDir dir;
  constexpr uint64_t kBytes = 4u << 20;
  const auto files = all_reduces(dir, 4, kBytes);
  SystemConfig sys = system_config(CollectiveAlgo::kRing, 4, 1);
  sys.all_reduce_custom = kDirectXml.string();
  const uint64_t chunk = kBytes / 4;
  const uint64_t c_us = 3 * (chunk / 50) / 1000;  // 62 us
  const uint64_t want = 2 * (500'000 + 20 * chunk) + 3 * c_us * 1'000'000;
  for (const auto& [model, mtu] : {std::pair{Model::kAnalytical, ~uint32_t{0}}, std::pair{Model::kPacket, ~uint32_t{0}},
                                   std::pair{Model::kPacket, 65536u}}) {
    const auto r = run_walker(fully_connected_4(), opts(sys), files, model, mtu);
    ASSERT_TRUE(r.result.stuck.empty()) << joined(r.result.stuck);
    EXPECT_EQ(r.result.total.ps(), want) << "mtu " << mtu;
    EXPECT_EQ(r.result.collectives[0].messages, 4u * 6u);
    for (const RankResult& k : r.result.ranks) EXPECT_EQ(k.finish.since_start().ps(), want) << "rank " << k.rank;
  }
}

// Two all-reduces at once (two streams): their graphs' messages have the same (src, dst, tag) and are kept
// apart by collective; on the congestion-unaware model both end at the closed form.
TEST(WalkerCustom, ConcurrentCustomCollectivesDoNotMix) {
  test::ScratchDir dir;
  constexpr uint64_t kBytes = 4u << 20;
  const auto files = all_reduces(dir, 4, kBytes, 2);
  SystemConfig sys = system_config(CollectiveAlgo::kRing, 1, 2);
  sys.all_reduce_custom = kDirectXml.string();
  const uint64_t chunk = kBytes / 4;
  const uint64_t want = 2 * (500'000 + 20 * chunk) + 3 * (3 * (chunk / 50) / 1000) * 1'000'000;
  const auto a = run_walker(fully_connected_4(), opts(sys), files, Model::kAnalytical);
  ASSERT_TRUE(a.result.stuck.empty()) << joined(a.result.stuck);
  ASSERT_EQ(a.result.collectives.size(), 2u);
  EXPECT_EQ(a.result.collectives[0].finished.since_start().ps(), want);
  EXPECT_EQ(a.result.collectives[1].finished.since_start().ps(), want);
  const auto p = run_walker(fully_connected_4(), opts(sys), files, Model::kPacket);
  ASSERT_TRUE(p.result.stuck.empty()) << joined(p.result.stuck);
  EXPECT_GT(p.result.total.ps(), want);  // the two share every link
}

// ---- errors: file, position (rank) and node named --------------------------------------------------------
std::string run_error(const std::vector<std::vector<Node>>& graphs, int ranks, uint64_t bytes,
                      const std::string& extra_file = "") {
  test::ScratchDir dir;
  write_ranks(dir, "impl", graphs);
  if (!extra_file.empty()) test::write_trace(dir.file(extra_file), {comp(0, 1)});
  const auto files = all_reduces(dir, ranks, bytes);
  SystemConfig sys = system_config(CollectiveAlgo::kRing, 1, 1);
  sys.all_reduce_custom = dir.file("impl");
  NetworkConfig net = network({dim(DimTopology::kRing, ranks)});
  return test::error_of([&] { run_walker(net, opts(sys), files); }).what();
}

TEST(WalkerCustom, SendWithoutRecvIsLocated) {
  const std::string e = run_error({{send(7, 1, 0, 100)}, {}}, 2, 100);
  EXPECT_NE(e.find("impl.0.et: rank 0: node id 7: SEND #0 to position 1 tag 0 (100 bytes) has no RECV"),
            std::string::npos) << e;
}

TEST(WalkerCustom, RecvOfAnotherSizeIsLocated) {
  const std::string e = run_error({{send(0, 1, 3, 100)}, {recv(5, 0, 3, 64)}}, 2, 100);
  EXPECT_NE(e.find("impl.1.et: rank 1: node id 5: RECV #0 from position 0 tag 3 is of 64 bytes"), std::string::npos)
      << e;
}

TEST(WalkerCustom, MissingAndExtraFilesAreNamed) {
  const std::string missing = run_error({{}}, 2, 0);
  EXPECT_NE(missing.find("impl.1.et: rank 1: no such file"), std::string::npos) << missing;
  const std::string extra = run_error({{}, {}}, 2, 0, "impl.2.et");
  EXPECT_NE(extra.find("impl.2.et: rank 2: the custom implementation"), std::string::npos) << extra;
  EXPECT_NE(extra.find("more members than the collective's group has (2)"), std::string::npos) << extra;
}

TEST(WalkerCustom, PeerOutsideTheGroupIsLocated) {
  const std::string e = run_error({{send(3, 2, 0, 100)}, {}}, 2, 100);
  EXPECT_NE(e.find("impl.0.et: rank 0: node id 3: comm_dst 2: expected a member position in 0..1"), std::string::npos)
      << e;
}

// An all-reduce of 1000 bytes needs every member to send and receive at least 1000; this graph moves 400.
TEST(WalkerCustom, TooFewBytesForTheCollectiveIsLocated) {
  const std::string e = run_error({{send(0, 1, 0, 400), recv(1, 1, 0, 400)}, {send(0, 0, 0, 400), recv(1, 0, 0, 400)}},
                                  2, 1000);
  EXPECT_NE(e.find("impl.0.et: rank 0: its graph sends 400 bytes, but in a ALL_REDUCE of 1000 bytes over 2 members"),
            std::string::npos) << e;
  EXPECT_NE(e.find("at least 1000"), std::string::npos) << e;
}

TEST(WalkerCustom, XmlForAnotherGroupSizeIsRefused) {
  test::ScratchDir dir;
  const auto files = all_reduces(dir, 2, 1000);
  SystemConfig sys = system_config(CollectiveAlgo::kRing, 1, 1);
  sys.all_reduce_custom = kDirectXml.string();
  const std::string e =
      test::error_of([&] { run_walker(network({dim(DimTopology::kRing, 2)}), opts(sys), files); }).what();
  EXPECT_NE(e.find("direct_allreduce_4gpus.xml: line 1: element <algo>: ngpus=\"4\", but the collective's group has 2"),
            std::string::npos) << e;
}

TEST(WalkerCustom, PerNodeKeyIsRefused) {
  test::ScratchDir dir;
  SystemConfig sys = system_config(CollectiveAlgo::kRing, 1, 1);
  sys.per_node_custom_implementation = "per_node.yaml";
  Engine engine(16);
  const NetworkConfig net = network({dim(DimTopology::kRing, 2)});
  Topology topo(net);
  AnalyticalFabric fabric(engine, topo);
  traces::ProcessGroups groups(2);
  try {
    Walker w(fabric, net, all_reduces(dir, 2, 8), groups, opts(sys));
    FAIL() << "per-node-custom-implementation was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("per-node-custom-implementation (per_node.yaml) is not supported"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fabemu::emu
