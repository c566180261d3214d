// The rank walker on the shared traces (../shared), against ASTRA-sim's
// published results
// (../shared/docs/REFERENCE.md). Every test skips itself when ../shared is
// absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "host/config/astra_config.h"
#include "tests/emulator/walker_test_util.h"
#include "traces/trace_set.h"

namespace fabemu::emu {
namespace {

namespace fs = std::filesystem;
using namespace walker_test;

std::vector<std::string> rank_files(const fs::path &prefix) {
  std::vector<std::string> out;
  for (const auto &f : traces::find_rank_files(prefix.string())) out.push_back(f.path);
  return out;
}

fs::path configs_dir(const fs::path &traces_dir) { return traces_dir.parent_path() / "configs" / "astra-sim"; }

WalkerOptions opts(SystemConfig s) {
  WalkerOptions o;
  o.system = std::move(s);
  return o;
}

void expect_within(uint64_t got_ps, double want_ns, double fraction, const std::string &what) {
  const double got_ns = static_cast<double>(got_ps) / 1000.0;
  EXPECT_LE(std::abs(got_ns - want_ns), want_ns * fraction)
      << what << ": got " << got_ns << " ns, ASTRA-sim " << want_ns << " ns";
}

// REFERENCE.md, "Results (ns)": unaware / aware per topology.
struct RefRow {
  const char *coll;
  int n;
  double ring_u, ring_a, sw_u, sw_a, fc_u, fc_a;
};
constexpr RefRow kReference[] = {
    {"all_reduce", 4, 43000, 43000, 55000, 84280, 43000, 43000},
    {"all_reduce", 8, 64440, 64440, 92440, 126600, 64440, 64440},
    {"all_reduce", 16, 99640, 99640, 159640, 196240, 99640, 99640},
    {"all_gather", 4, 64744, 64744, 70744, 129328, 64744, 64744},
    {"all_gather", 8, 151016, 151016, 165016, 301712, 151016, 151016},
    {"all_gather", 16, 323560, 323560, 353560, 646480, 323560, 323560},
    {"reduce_scatter", 4, 22240, 22240, 28240, 42880, 22240, 22240},
    {"reduce_scatter", 8, 33080, 33080, 47080, 64160, 33080, 33080},
    {"reduce_scatter", 16, 50740, 50740, 80740, 99040, 50740, 50740},
    {"all_to_all", 4, 41560, 41560, 53560, 82840, 41560, 41560},
    {"all_to_all", 8, 125480, 125480, 181480, 249800, 125480, 125480},
    {"all_to_all", 16, 391240, 391240, 631240, 777640, 391240, 391240},
};

// A shared microbenchmark of kReference on ASTRA-sim's ring of its size: rank files, network, a name.
struct RingMicrobenchmark {
  std::vector<std::string> files;
  NetworkConfig net;
  std::string what;
};
RingMicrobenchmark ring_microbenchmark(const fs::path &traces_dir, const RefRow &row) {
  const fs::path prefix = traces_dir / "astra-sim/examples/workload/microbenchmarks" / row.coll /
                          (std::to_string(row.n) + "npus_1MB") / row.coll;
  const std::string ring = "Ring_" + std::to_string(row.n) + "npus.yml";
  return {rank_files(prefix), host::load_network_yml((configs_dir(traces_dir) / ring).string()),
          std::string(row.coll) + " N=" + std::to_string(row.n)};
}

TEST(WalkerShared, MicrobenchmarksMatchAstraSim) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const fs::path cfg = configs_dir(traces_dir);
  const SystemConfig sys = host::load_system_json((cfg / "system_ring_4chunks.json").string(), 1);
  for (const auto &row : kReference) {
    const fs::path prefix = traces_dir / "astra-sim/examples/workload/microbenchmarks" / row.coll /
                            (std::to_string(row.n) + "npus_1MB") / row.coll;
    const auto files = rank_files(prefix);
    ASSERT_EQ(files.size(), static_cast<size_t>(row.n)) << prefix;
    const struct {
      const char *topo;
      double unaware, aware;
    } topos[] = {
        {"Ring", row.ring_u, row.ring_a}, {"Switch", row.sw_u, row.sw_a}, {"FullyConnected", row.fc_u, row.fc_a}};
    for (const auto &t : topos) {
      const std::string what = std::string(row.coll) + " N=" + std::to_string(row.n) + " " + t.topo;
      const auto net =
          host::load_network_yml((cfg / (std::string(t.topo) + "_" + std::to_string(row.n) + "npus.yml")).string());
      const auto a = run_walker(net, opts(sys), files, Model::kAnalytical);
      ASSERT_TRUE(a.result.stuck.empty()) << what;
      expect_within(a.result.total.ps(), t.unaware, 0.002, what + " analytical vs unaware");
      const auto p = run_walker(net, opts(sys), files, Model::kPacket);
      ASSERT_TRUE(p.result.stuck.empty()) << what;
      expect_within(p.result.total.ps(), t.aware, 0.002, what + " packet vs aware");
    }
  }
}

// A timeline that keeps nothing: with it the analytical model walks ring phases message by message
// (the closed form's general path), without it a ring phase is counted at once.
class NullTimeline final : public TimelineSink {
 public:
  void node_slice(int32_t, int32_t, const std::string &, const char *, uint64_t, Time, Time, uint64_t) override {}
  void message_slice(int32_t, int32_t, uint64_t, Time, Time, uint64_t) override {}
};

// Per-rank traffic (the report's sent/received messages and bytes) on every shared microbenchmark: the
// same on both models, with and without a timeline, summing to the totals, equal on every rank (the
// microbenchmarks are balanced), and for the 8-rank all-reduce the closed form: 4 chunks of 256 KiB, a
// ring of 8 sends 2 x 7 messages of 32 KiB per chunk, 56 messages and 1,835,008 bytes per rank.
TEST(WalkerShared, PerRankTrafficIsExactOnBothModels) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const fs::path cfg = configs_dir(traces_dir);
  const SystemConfig sys = host::load_system_json((cfg / "system_ring_4chunks.json").string(), 1);
  NullTimeline timeline;
  for (const auto &row : kReference) {
    const auto [files, net, what] = ring_microbenchmark(traces_dir, row);
    WalkerOptions with_timeline = opts(sys);
    with_timeline.timeline = &timeline;
    const RunResult runs[] = {run_walker(net, opts(sys), files, Model::kAnalytical).result,
                              run_walker(net, with_timeline, files, Model::kAnalytical).result,
                              run_walker(net, opts(sys), files, Model::kPacket).result};
    const RunResult &a = runs[0];
    ASSERT_EQ(a.ranks.size(), static_cast<size_t>(row.n)) << what;
    uint64_t sent = 0, sent_bytes = 0, received = 0, received_bytes = 0;
    for (const RankResult &k : a.ranks) {
      sent += k.sent_messages;
      sent_bytes += k.sent_bytes;
      received += k.received_messages;
      received_bytes += k.received_bytes;
      EXPECT_EQ(k.sent_messages, a.ranks[0].sent_messages) << what << " rank " << k.rank;
      EXPECT_EQ(k.sent_bytes, a.ranks[0].sent_bytes) << what << " rank " << k.rank;
      EXPECT_EQ(k.received_bytes, k.sent_bytes) << what << " rank " << k.rank;
    }
    EXPECT_GT(sent, 0u) << what;
    EXPECT_EQ(sent, a.messages) << what;
    EXPECT_EQ(received, a.messages) << what;
    EXPECT_EQ(sent_bytes, a.message_bytes) << what;
    EXPECT_EQ(received_bytes, a.message_bytes) << what;
    for (const RunResult &other : runs) {
      for (size_t r = 0; r < a.ranks.size(); ++r) {
        EXPECT_EQ(other.ranks[r].sent_messages, a.ranks[r].sent_messages) << what << " rank " << r;
        EXPECT_EQ(other.ranks[r].sent_bytes, a.ranks[r].sent_bytes) << what << " rank " << r;
        EXPECT_EQ(other.ranks[r].received_messages, a.ranks[r].received_messages) << what << " rank " << r;
        EXPECT_EQ(other.ranks[r].received_bytes, a.ranks[r].received_bytes) << what << " rank " << r;
      }
    }
    if (std::string(row.coll) == "all_reduce" && row.n == 8) {
      EXPECT_EQ(a.ranks[3].sent_messages, 56u);
      EXPECT_EQ(a.ranks[3].sent_bytes, 1835008u);
      EXPECT_EQ(a.ranks[3].received_messages, 56u);
    }
  }
}

// The traffic matrix (fabemu run --html) on every shared microbenchmark: rows sum to each rank's sent
// messages and bytes, columns to its received ones; the same on both models (the analytical model counts a
// closed-form ring phase at once); not kept unless asked for. The 8-rank all-reduce on a ring: every rank
// sends only to the next, 56 messages and 1,835,008 bytes.
TEST(WalkerShared, TrafficMatrixIsExactOnBothModels) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const fs::path cfg = configs_dir(traces_dir);
  const SystemConfig sys = host::load_system_json((cfg / "system_ring_4chunks.json").string(), 1);
  for (const auto &row : kReference) {
    const auto [files, net, what] = ring_microbenchmark(traces_dir, row);
    WalkerOptions with_matrix = opts(sys);
    with_matrix.traffic_matrix = true;
    EXPECT_TRUE(run_walker(net, opts(sys), files, Model::kAnalytical).result.traffic.empty()) << what;
    const RunResult a = run_walker(net, with_matrix, files, Model::kAnalytical).result;
    const RunResult p = run_walker(net, with_matrix, files, Model::kPacket).result;
    const TrafficMatrix &m = a.traffic;
    ASSERT_EQ(m.side, static_cast<uint32_t>(row.n)) << what;
    ASSERT_EQ(m.block, 1u) << what;
    EXPECT_EQ(p.traffic.messages, m.messages) << what;
    EXPECT_EQ(p.traffic.bytes, m.bytes) << what;
    for (uint32_t r = 0; r < m.side; ++r) {
      uint64_t row_messages = 0, row_bytes = 0, col_messages = 0, col_bytes = 0;
      for (uint32_t c = 0; c < m.side; ++c) {
        row_messages += m.messages[r * m.side + c];
        row_bytes += m.bytes[r * m.side + c];
        col_messages += m.messages[c * m.side + r];
        col_bytes += m.bytes[c * m.side + r];
      }
      EXPECT_EQ(row_messages, a.ranks[r].sent_messages) << what << " rank " << r;
      EXPECT_EQ(row_bytes, a.ranks[r].sent_bytes) << what << " rank " << r;
      EXPECT_EQ(col_messages, a.ranks[r].received_messages) << what << " rank " << r;
      EXPECT_EQ(col_bytes, a.ranks[r].received_bytes) << what << " rank " << r;
    }
    if (std::string(row.coll) == "all_reduce" && row.n == 8) {
      for (uint32_t r = 0; r < 8; ++r) {
        for (uint32_t c = 0; c < 8; ++c) {
          const bool next = c == (r + 1) % 8;
          EXPECT_EQ(m.messages[r * 8 + c], next ? 56u : 0u) << "from " << r << " to " << c;
          EXPECT_EQ(m.bytes[r * 8 + c], next ? 1835008u : 0u) << "from " << r << " to " << c;
        }
      }
    }
  }
}

TEST(WalkerShared, HgxH100) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const fs::path cfg = configs_dir(traces_dir);
  const auto net = host::load_network_yml((cfg / "hgx_h100.yml").string());
  const SystemConfig sys = host::load_system_json((cfg / "system_hgx_h100.json").string(), 1);
  const auto files = rank_files(traces_dir /
                                "astra-sim/examples/workload/microbenchmarks/"
                                "all_reduce/8npus_1MB/all_reduce");
  const auto a = run_walker(net, opts(sys), files, Model::kAnalytical);
  expect_within(a.result.total.ps(), 55222, 0.002, "hgx_h100 analytical vs unaware");
  const auto p = run_walker(net, opts(sys), files, Model::kPacket);
  expect_within(p.result.total.ps(), 57426, 0.002, "hgx_h100 packet vs aware");
}

TEST(WalkerShared, CustomRingAllReduceSendRecv) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const fs::path cfg = configs_dir(traces_dir);
  const auto net = host::load_network_yml((cfg / "Ring_8npus.yml").string());
  SystemConfig sys = system_config(CollectiveAlgo::kRing, 1, 1);
  sys.scheduling_policy = SchedulingPolicy::kFifo;
  const auto files = rank_files(traces_dir /
                                "astra-sim/examples/system/custom_collectives/"
                                "custom_ring_allreduce_8npus_1MB/custom_allreduce");
  ASSERT_EQ(files.size(), 8u);
  for (const auto model : {Model::kAnalytical, Model::kPacket}) {
    const auto r = run_walker(net, opts(sys), files, model);
    ASSERT_TRUE(r.result.stuck.empty());
    expect_within(r.result.total.ps(), 90174, 0.001, "custom ring all-reduce");
    EXPECT_EQ(r.result.p2p.sends, 8u * 14u);
    for (const RankResult &k : r.result.ranks) {  // SEND/RECV traffic per rank: 14 sends and 14 receives
      EXPECT_EQ(k.sent_messages, 14u) << "rank " << k.rank;
      EXPECT_EQ(k.received_messages, 14u) << "rank " << k.rank;
      EXPECT_EQ(k.sent_bytes, r.result.p2p.bytes / 8) << "rank " << k.rank;
    }
  }
}

TEST(WalkerShared, Demo1TwoDimensions) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  test::ScratchDir dir;
  const std::string yml = dir.file("net2.yml");
  {
    std::ofstream out(yml);
    out << "topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ "
           "50.0, 25.0 ]\nlatency: [ 500.0, 700.0 ]\n";
  }
  const auto net = host::load_network_yml(yml);
  ASSERT_EQ(net.dims.size(), 2u);
  SystemConfig sys = system_config(CollectiveAlgo::kRing, 4, 1, 2);
  sys.collective_optimization = CollectiveOptimization::kLocalBwAware;
  const auto files = rank_files(traces_dir / "astra-sim-tutorials/demo1/allreduce");
  ASSERT_EQ(files.size(), 8u);
  for (const auto model : {Model::kAnalytical, Model::kPacket}) {
    const auto r = run_walker(net, opts(sys), files, model);
    ASSERT_TRUE(r.result.stuck.empty());
    ASSERT_EQ(r.result.collectives.size(), 1u);
    const std::string algo = r.result.collectives[0].algorithm;
    EXPECT_EQ(std::count(algo.begin(), algo.end(), '+'), 2) << algo;
    EXPECT_GT(r.result.total.ps(), 0u);
  }
}

TEST(WalkerShared, ChakraPyTorchTrace) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const auto net = host::load_network_yml((configs_dir(traces_dir) / "Ring_4npus.yml").string());
  const SystemConfig sys = host::load_system_json((configs_dir(traces_dir) / "system_ring_4chunks.json").string(), 1);
  const auto r = run_walker(net, opts(sys), {(traces_dir / "mlcommons-chakra/chakra.0.et").string()});
  ASSERT_TRUE(r.result.stuck.empty());
  ASSERT_EQ(r.result.ranks.size(), 1u);
  EXPECT_EQ(r.result.ranks[0].nodes, 3664u);
  EXPECT_EQ(r.result.ranks[0].comp_nodes, 3643u);
  EXPECT_EQ(r.result.ranks[0].comm_nodes, 21u);
  EXPECT_FALSE(r.result.warnings.empty());  // the dangling dependencies are reported
}

TEST(WalkerShared, Resnet50DataParallel64) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  test::ScratchDir dir;
  const std::string yml = dir.file("ring64.yml");
  {
    std::ofstream out(yml);
    out << "topology: [ Ring ]\nnpus_count: [ 64 ]\nbandwidth: [ 50.0 "
           "]\nlatency: [ 500.0 ]\n";
  }
  const auto net = host::load_network_yml(yml);
  const SystemConfig sys = host::load_system_json((configs_dir(traces_dir) / "system_ring_4chunks.json").string(), 1);
  const auto files = rank_files(traces_dir / "astra-sim-text/resnet50_dp_N64/resnet50");
  ASSERT_EQ(files.size(), 64u);
  const auto r = run_walker(net, opts(sys), files);
  ASSERT_TRUE(r.result.stuck.empty());
  expect_within(r.result.total.ps(), 1082708088, 0.0001, "resnet50 N=64 total");
  expect_within(r.result.ranks[0].exposed_comm.ps(), 258088, 0.01, "resnet50 N=64 rank 0 exposed comm");
}

}  // namespace
}  // namespace fabemu::emu
