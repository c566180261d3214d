// The rank walker: exact closed-form times, closed form vs message-by-message,
// the packet model, determinism, conservation, deadlocks, bad input, every
// collective type, stragglers, roofline and process groups. Every expected time
// is computed here from the schedule's formula with the same Rate / Duration
// arithmetic the emulator uses (never copied from a run).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "emulator/collective.h"
#include "emulator/report_json.h"
#include "tests/emulator/walker_test_util.h"
#include "traces/error.h"
#include "traces/generate.h"
#include "traces/validate.h"

namespace fabemu::emu {
namespace {

using namespace walker_test;
using std::chrono::seconds;
using traces::CollectiveSpec;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Link and system parameters of the formulas.
struct P {
  Rate link = Rate::from_astra_gbps(50);
  Duration lat = Duration::from_ns(500);
  Duration ep = Duration::from_ns(10);
  Rate mem = mem_rate(1600);
  Duration d(uint64_t hops, uint64_t bytes) const { return lat * hops + link.ser(bytes); }
};

std::vector<std::string> gen(const test::ScratchDir &dir, traces::CollectiveType type, int64_t n, uint64_t bytes,
                             const std::string &name = "w") {
  CollectiveSpec spec;
  spec.type = type;
  spec.ranks = n;
  spec.size_bytes = bytes;
  return traces::generate_collective(spec, dir.file(name));
}

WalkerOptions opts(SystemConfig s, bool closed_form = true) {
  WalkerOptions o;
  o.system = std::move(s);
  o.closed_form = closed_form;
  return o;
}

void expect_all_finish_at(const RunResult &r, Time t) {
  ASSERT_TRUE(r.stuck.empty()) << r.stuck.front();
  for (const auto &rr : r.ranks) EXPECT_EQ(rr.finish.ps(), t.ps()) << "rank " << rr.rank;
  EXPECT_EQ(r.total.ps(), t.ps());
}

// ---- 1. closed forms, analytical model
// ----------------------------------------------------------------
class ClosedForm : public ::testing::TestWithParam<bool> {};

TEST_P(ClosedForm, RingAllReduceOnRing) {
  const bool cf = GetParam();
  for (const int64_t n : {4, 8}) {
    test::ScratchDir dir;
    const uint64_t S = kMiB, k = 4;
    const auto files = gen(dir, ChakraProtoMsg::ALL_REDUCE, n, S);
    const auto run =
        run_walker(network({dim(DimTopology::kRing, n)}), opts(system_config(CollectiveAlgo::kRing, k, 1), cf), files);
    P p;
    const uint64_t m = S / (k * static_cast<uint64_t>(n));
    const auto N1 = static_cast<uint64_t>(n - 1);
    const Duration chunk = p.ep + (p.d(1, m) + p.ep) * (2 * N1) + p.mem.ser(3 * m) * N1;
    expect_all_finish_at(run.result, Time::zero() + chunk * k);
    EXPECT_EQ(run.result.messages, k * 2 * N1 * static_cast<uint64_t>(n));
    EXPECT_EQ(run.result.collectives_closed_form > 0, cf);
  }
}

TEST_P(ClosedForm, RingAllReduceUnevenChunks) {
  // chunk j = S/k + (j < S%k): 250004 x 3 and 250003 bytes; per-member messages floor(c/N) = 62501, 62500.
  const bool cf = GetParam();
  const int64_t n = 4;
  const uint64_t S = 1000015, k = 4, N1 = 3;
  test::ScratchDir dir;
  const auto files = gen(dir, ChakraProtoMsg::ALL_REDUCE, n, S);
  const auto run =
      run_walker(network({dim(DimTopology::kRing, n)}), opts(system_config(CollectiveAlgo::kRing, k, 1), cf), files);
  P p;
  Duration total;
  uint64_t bytes = 0;
  for (uint64_t j = 0; j < k; ++j) {
    const uint64_t c = S / k + (j < S % k ? 1 : 0);
    const uint64_t m = c / n;
    total += p.ep + (p.d(1, m) + p.ep) * (2 * N1) + p.mem.ser(3 * m) * N1;
    bytes += 2 * N1 * n * m;
  }
  expect_all_finish_at(run.result, Time::zero() + total);
  EXPECT_EQ(run.result.message_bytes, bytes);
}

TEST_P(ClosedForm, RingReduceScatterAndAllGatherOnRing) {
  const bool cf = GetParam();
  const int64_t n = 8;
  const uint64_t S = kMiB, k = 4, N1 = 7;
  P p;
  {
    test::ScratchDir dir;
    const auto files = gen(dir, ChakraProtoMsg::REDUCE_SCATTER, n, S);
    const auto run =
        run_walker(network({dim(DimTopology::kRing, n)}), opts(system_config(CollectiveAlgo::kRing, k, 1), cf), files);
    const uint64_t m = S / (k * n);
    const Duration chunk = p.ep + (p.d(1, m) + p.ep + p.mem.ser(3 * m)) * N1;
    expect_all_finish_at(run.result, Time::zero() + chunk * k);
  }
  {
    test::ScratchDir dir;
    const auto files = gen(dir, ChakraProtoMsg::ALL_GATHER, n, S);
    const auto run =
        run_walker(network({dim(DimTopology::kRing, n)}), opts(system_config(CollectiveAlgo::kRing, k, 1), cf), files);
    const uint64_t c = S / k;  // all-gather: the message is the chunk itself
    const Duration chunk = p.ep + (p.d(1, c) + p.ep) * N1;
    expect_all_finish_at(run.result, Time::zero() + chunk * k);
    EXPECT_EQ(run.result.message_bytes, k * N1 * n * c);
  }
}

TEST_P(ClosedForm, DirectAllToAllOnFullyConnected) {
  const bool cf = GetParam();
  for (const int64_t n : {4, 8}) {
    test::ScratchDir dir;
    const uint64_t S = kMiB, k = 4;
    const auto files = gen(dir, ChakraProtoMsg::ALL_TO_ALL, n, S);
    const auto run = run_walker(network({dim(DimTopology::kFullyConnected, n)}),
                                opts(system_config(CollectiveAlgo::kDirect, k, 1), cf), files);
    P p;
    const uint64_t c = S / k;
    const Duration chunk = p.ep + p.d(1, c / n) + p.ep;
    expect_all_finish_at(run.result, Time::zero() + chunk * k);
    EXPECT_EQ(run.result.messages, k * n * (n - 1));
  }
}

TEST_P(ClosedForm, HalvingDoublingAllReduceOnSwitch) {
  const bool cf = GetParam();
  const int64_t n = 8;
  const uint32_t lg = 3;
  test::ScratchDir dir;
  const uint64_t S = kMiB, k = 4;
  const auto files = gen(dir, ChakraProtoMsg::ALL_REDUCE, n, S);
  const auto run = run_walker(network({dim(DimTopology::kSwitch, n)}),
                              opts(system_config(CollectiveAlgo::kHalvingDoubling, k, 1), cf), files);
  P p;
  const uint64_t c = S / k;
  Duration chunk = p.ep;
  for (uint32_t j = 0; j < lg; ++j) chunk += p.d(2, c >> (j + 1)) + p.ep + p.mem.ser(3 * (c >> (j + 1)));
  for (uint32_t j = 0; j < lg; ++j) chunk += p.d(2, c >> (lg - j)) + p.ep;
  expect_all_finish_at(run.result, Time::zero() + chunk * k);
  ASSERT_EQ(run.result.collectives.size(), 1u);
  EXPECT_EQ(run.result.collectives[0].algorithm, "halvingDoubling");
}

INSTANTIATE_TEST_SUITE_P(Walker, ClosedForm, ::testing::Bool(), [](const ::testing::TestParamInfo<bool> &p) {
  return p.param ? "closed_form" : "message_by_message";
});

// ---- 2. packet model
// ----------------------------------------------------------------------------------
Duration ring_allreduce_time(const P &p, uint64_t S, uint64_t k, uint64_t n) {
  const uint64_t m = S / (k * n);
  return (p.ep + (p.d(1, m) + p.ep) * (2 * (n - 1)) + p.mem.ser(3 * m) * (n - 1)) * k;
}

TEST(WalkerPacket, WholeMessagesEqualAnalyticalOnRingAndFullyConnected) {
  for (const auto topo : {DimTopology::kRing, DimTopology::kFullyConnected}) {
    test::ScratchDir dir;
    const int64_t n = 8;
    const auto files = gen(dir, ChakraProtoMsg::ALL_REDUCE, n, kMiB);
    const auto run =
        run_walker(network({dim(topo, n)}), opts(system_config(CollectiveAlgo::kRing, 4, 1)), files, Model::kPacket);
    expect_all_finish_at(run.result, Time::zero() + ring_allreduce_time(P{}, kMiB, 4, n));
    EXPECT_EQ(run.result.collectives_closed_form, 0u);
  }
}

TEST(WalkerPacket, Mtu4096StaysWithinPacketRoundingOfTheFormula) {
  test::ScratchDir dir;
  const uint64_t n = 8, k = 4, S = kMiB, mtu = 4096;
  const auto files = gen(dir, ChakraProtoMsg::ALL_REDUCE, static_cast<int64_t>(n), S);
  const auto run =
      run_walker(network({dim(DimTopology::kRing, static_cast<int64_t>(n))}),
                 opts(system_config(CollectiveAlgo::kRing, k, 1)), files, Model::kPacket, static_cast<uint32_t>(mtu));
  ASSERT_TRUE(run.result.stuck.empty());
  const Duration formula = ring_allreduce_time(P{}, S, k, n);
  const uint64_t m = S / (k * n);
  const uint64_t packets = (m + mtu - 1) / mtu;
  // Each message: packets x ceil(ser(mtu)) instead of one ceil(ser(m)): at most
  // `packets` ps more per step.
  const uint64_t bound = packets * k * 2 * (n - 1);
  const uint64_t got = run.result.total.ps();
  EXPECT_GE(got, formula.ps());
  EXPECT_LE(got - std::min(got, formula.ps()), bound) << "formula " << formula.ps() << " got " << got;
  EXPECT_EQ(run.delivered, run.result.messages);
}

// ---- 3. closed form == message by message on randomized start times
// ------------------------------------
struct Combo {
  traces::CollectiveType type;
  CollectiveAlgo algo;
  std::vector<NetworkDim> dims;
  int64_t chunks;
  int64_t active;
  CollectiveOptimization optimization = CollectiveOptimization::kBaseline;
};

std::string describe(const Combo &c) {
  std::string s = std::string(traces::collective_name(c.type)) + " " + algo_name(c.algo) + " dims";
  for (const auto &d : c.dims) s += " " + std::to_string(static_cast<int>(d.topology)) + "x" + std::to_string(d.npus);
  return s + " chunks " + std::to_string(c.chunks) + " active " + std::to_string(c.active) +
         (c.optimization == CollectiveOptimization::kLocalBwAware ? " localBWAware" : " baseline");
}

void compare_closed_form(const Combo &c, uint64_t seed) {
  SCOPED_TRACE(describe(c));
  test::ScratchDir dir;
  const auto net = network(c.dims);
  const auto n = static_cast<size_t>(net.total_npus());
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> us(0, 50);
  std::vector<std::vector<Node>> ranks(n);
  for (size_t r = 0; r < n; ++r) {
    ranks[r].push_back(comp(0, us(rng)));
    ranks[r].push_back(coll(1, c.type, 3 * kMiB / 4 + 12, {0}));  // not a multiple of chunks x ranks
  }
  const auto files = write_ranks(dir, "rand", ranks);
  auto sys = system_config(c.algo, c.chunks, c.active, c.dims.size());
  sys.collective_optimization = c.optimization;
  const auto a = run_walker(net, opts(sys, true), files);
  const auto b = run_walker(net, opts(sys, false), files);
  ASSERT_TRUE(a.result.stuck.empty());
  ASSERT_TRUE(b.result.stuck.empty());
  EXPECT_GT(a.result.collectives_closed_form, 0u);
  EXPECT_EQ(b.result.collectives_closed_form, 0u);
  ASSERT_EQ(a.result.ranks.size(), b.result.ranks.size());
  for (size_t r = 0; r < n; ++r)
    EXPECT_EQ(a.result.ranks[r].finish.ps(), b.result.ranks[r].finish.ps()) << "rank " << r;
  ASSERT_EQ(a.result.collectives.size(), b.result.collectives.size());
  for (size_t i = 0; i < a.result.collectives.size(); ++i) {
    EXPECT_EQ(a.result.collectives[i].finished.ps(), b.result.collectives[i].finished.ps());
    EXPECT_EQ(a.result.collectives[i].messages, b.result.collectives[i].messages);
    EXPECT_EQ(a.result.collectives[i].message_bytes, b.result.collectives[i].message_bytes);
  }
  EXPECT_EQ(a.result.messages, b.result.messages);
  EXPECT_EQ(a.result.message_bytes, b.result.message_bytes);
}

TEST(WalkerClosedForm, EqualsMessageByMessageOnRandomStartTimes) {
  uint64_t seed = 12345;
  for (const auto type : {ChakraProtoMsg::ALL_REDUCE, ChakraProtoMsg::REDUCE_SCATTER, ChakraProtoMsg::ALL_GATHER,
                          ChakraProtoMsg::ALL_TO_ALL}) {
    for (const auto algo : {CollectiveAlgo::kRing, CollectiveAlgo::kDirect, CollectiveAlgo::kHalvingDoubling}) {
      for (const auto topo : {DimTopology::kRing, DimTopology::kSwitch, DimTopology::kFullyConnected}) {
        for (const int64_t n : {4, 8}) {
          for (const int64_t chunks : {1, 4}) {
            for (const int64_t active : {1, 2}) {
              compare_closed_form(Combo{type, algo, {dim(topo, n)}, chunks, active}, seed++);
            }
          }
        }
      }
    }
  }
}

TEST(WalkerClosedForm, EqualsMessageByMessageOnTwoDimensions) {
  uint64_t seed = 777;
  for (const auto type : {ChakraProtoMsg::ALL_REDUCE, ChakraProtoMsg::REDUCE_SCATTER, ChakraProtoMsg::ALL_GATHER,
                          ChakraProtoMsg::ALL_TO_ALL}) {
    for (const auto algo : {CollectiveAlgo::kRing, CollectiveAlgo::kDirect, CollectiveAlgo::kHalvingDoubling}) {
      for (const auto opt : {CollectiveOptimization::kLocalBwAware, CollectiveOptimization::kBaseline}) {
        for (const int64_t chunks : {1, 4}) {
          for (const int64_t active : {1, 2}) {
            compare_closed_form(Combo{type,
                                      algo,
                                      {dim(DimTopology::kRing, 4), dim(DimTopology::kSwitch, 2, 100, 700)},
                                      chunks,
                                      active,
                                      opt},
                                seed++);
          }
        }
      }
    }
  }
}

// ---- 4 / 5. determinism and conservation (packet model)
// -----------------------------------------------
constexpr uint64_t kP2pBytes = 10000;

std::vector<std::string> mixed_workload(const test::ScratchDir &dir, int64_t n) {
  std::mt19937_64 rng(99);
  std::vector<std::vector<Node>> ranks(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    auto &v = ranks[static_cast<size_t>(r)];
    v.push_back(comp(0, rng() % 20));
    v.push_back(coll(1, ChakraProtoMsg::ALL_REDUCE, 64 * 1024, {0}));
    v.push_back(send(2, (r + 1) % n, 7, kP2pBytes, {1}));
    v.push_back(recv(3, (r + n - 1) % n, 7, kP2pBytes, {1}));
    v.push_back(coll(4, ChakraProtoMsg::ALL_GATHER, 16 * 1024, {2, 3}));
    v.push_back(comp(5, 3, {4}));
    v.push_back(coll(6, ChakraProtoMsg::ALL_TO_ALL, 32 * 1024 + 5, {4}));
    v.push_back(send(7, (r + 2) % n, 9, kP2pBytes + static_cast<uint64_t>(r), {5}));
    v.push_back(recv(8, (r + n - 2) % n, 9, kP2pBytes + static_cast<uint64_t>((r + n - 2) % n), {5}));
  }
  return write_ranks(dir, "mixed", ranks);
}

TEST(WalkerDeterminism, TwoPacketRunsGiveIdenticalReports) {
  test::ScratchDir dir;
  const auto files = mixed_workload(dir, 4);
  const auto net = network({dim(DimTopology::kRing, 4)});
  const auto sys = system_config(CollectiveAlgo::kRing, 4, 2);
  const auto a = run_walker(net, opts(sys), files, Model::kPacket, 1024);
  const auto b = run_walker(net, opts(sys), files, Model::kPacket, 1024);
  ASSERT_TRUE(a.result.stuck.empty());
  EXPECT_EQ(a.result.collectives.size(), 3u);
  EXPECT_EQ(report_to_json(a.result), report_to_json(b.result));
}

TEST(WalkerConservation, PacketFabricDeliversEveryMessage) {
  test::ScratchDir dir;
  const int64_t n = 4;
  const auto files = mixed_workload(dir, n);
  const auto net = network({dim(DimTopology::kSwitch, n)});
  Engine engine;
  PacketFabric fabric(engine, Topology(net), 512);
  traces::ProcessGroups groups(n);
  Walker w(fabric, net, files, groups, opts(system_config(CollectiveAlgo::kRing, 4, 2)));
  const RunResult r = w.run();
  ASSERT_TRUE(r.stuck.empty());
  EXPECT_EQ(fabric.messages_delivered(), r.messages);
  uint64_t send_bytes = 0;
  for (int64_t k = 0; k < n; ++k) send_bytes += kP2pBytes + kP2pBytes + static_cast<uint64_t>(k);
  EXPECT_EQ(r.p2p.sends, 2u * n);
  EXPECT_EQ(r.p2p.bytes, send_bytes);
  uint64_t coll_msgs = 0, coll_bytes = 0;
  for (const auto &c : r.collectives) {
    coll_msgs += c.messages;
    coll_bytes += c.message_bytes;
  }
  EXPECT_EQ(coll_msgs + r.p2p.sends, r.messages);
  EXPECT_EQ(coll_bytes + r.p2p.bytes, r.message_bytes);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

// ---- 6. deadlocks end with a report
// -------------------------------------------------------------------
bool any_contains(const std::vector<std::string> &v, std::initializer_list<std::string> parts) {
  return std::any_of(v.begin(), v.end(), [&](const std::string &s) {
    return std::all_of(parts.begin(), parts.end(),
                       [&](const std::string &p) { return s.find(p) != std::string::npos; });
  });
}

TEST(WalkerDeadlock, RecvWithoutSendIsReported) {
  test::ScratchDir dir;
  const auto files = write_ranks(dir, "dl", {{comp(0, 1), recv(1, 1, 5, 100, {0})}, {comp(0, 2)}});
  const auto net = network({dim(DimTopology::kRing, 2)});
  for (const auto model : {Model::kAnalytical, Model::kPacket}) {
    const RunResult r = within(seconds(30), [&] {
      return run_walker(net, opts(system_config(CollectiveAlgo::kRing, 1, 1)), files, model).result;
    });
    ASSERT_FALSE(r.stuck.empty());
    EXPECT_TRUE(any_contains(r.stuck, {"rank 0", "RECV", "from rank 1"})) << joined(r.stuck);
    EXPECT_EQ(r.ranks[1].finish, Time::from_us(2));
  }
}

TEST(WalkerDeadlock, CollectiveARankNeverIssuesIsReported) {
  test::ScratchDir dir;
  std::vector<std::vector<Node>> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back({comp(0, 1), coll(1, ChakraProtoMsg::ALL_REDUCE, kMiB, {0})});
  ranks.push_back({comp(0, 1)});
  const auto files = write_ranks(dir, "dl", ranks);
  const auto net = network({dim(DimTopology::kRing, 4)});
  for (const bool cf : {true, false}) {
    const RunResult r = within(seconds(30), [&] {
      return run_walker(net, opts(system_config(CollectiveAlgo::kRing, 4, 1), cf), files).result;
    });
    ASSERT_FALSE(r.stuck.empty());
    EXPECT_TRUE(any_contains(r.stuck, {"ALL_REDUCE", "3 of 4", "never issued by ranks 3"})) << joined(r.stuck);
  }
}

// ---- 7. bad input
// -------------------------------------------------------------------------------------
TEST(WalkerBadInput, SendRecvSizeMismatchNamesFileRankAndNode) {
  test::ScratchDir dir;
  const auto files = write_ranks(dir, "bad", {{send(10, 1, 3, 100)}, {recv(21, 0, 3, 200)}});
  const auto net = network({dim(DimTopology::kRing, 2)});
  try {
    run_walker(net, opts(system_config(CollectiveAlgo::kRing, 1, 1)), files);
    FAIL() << "expected traces::TraceError";
  } catch (const traces::TraceError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(files[1]), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1"), std::string::npos) << what;
    EXPECT_NE(what.find("21"), std::string::npos) << what;
    EXPECT_NE(what.find("100"), std::string::npos) << what;
    EXPECT_NE(what.find("200"), std::string::npos) << what;
  }
}

TEST(WalkerBadInput, CollectiveTypeMismatchNamesBoth) {
  test::ScratchDir dir;
  const auto files = write_ranks(
      dir, "bad", {{coll(5, ChakraProtoMsg::ALL_REDUCE, 4096)}, {coll(6, ChakraProtoMsg::ALL_GATHER, 4096)}});
  const auto net = network({dim(DimTopology::kRing, 2)});
  try {
    run_walker(net, opts(system_config(CollectiveAlgo::kRing, 1, 1)), files);
    FAIL() << "expected traces::TraceError";
  } catch (const traces::TraceError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ALL_REDUCE"), std::string::npos) << what;
    EXPECT_NE(what.find("ALL_GATHER"), std::string::npos) << what;
    EXPECT_NE(what.find(files[0]), std::string::npos) << what;
    EXPECT_NE(what.find(files[1]), std::string::npos) << what;
  }
}

// ---- 8. all ten collective types
// ----------------------------------------------------------------------
TEST(WalkerCollectives, AllTenTypesCompleteWithTheRightMessageCounts) {
  const int64_t n = 8;
  const uint64_t k = 4;
  const auto n1 = static_cast<uint64_t>(n - 1);
  const std::vector<traces::CollectiveType> types = {
      ChakraProtoMsg::ALL_REDUCE, ChakraProtoMsg::REDUCE,         ChakraProtoMsg::ALL_GATHER,
      ChakraProtoMsg::GATHER,     ChakraProtoMsg::SCATTER,        ChakraProtoMsg::BROADCAST,
      ChakraProtoMsg::ALL_TO_ALL, ChakraProtoMsg::REDUCE_SCATTER, ChakraProtoMsg::REDUCE_SCATTER_BLOCK,
      ChakraProtoMsg::BARRIER};
  for (const auto algo : {CollectiveAlgo::kRing, CollectiveAlgo::kDirect, CollectiveAlgo::kHalvingDoubling,
                          CollectiveAlgo::kDoubleBinaryTree}) {
    for (const auto type : types) {
      SCOPED_TRACE(std::string(algo_name(algo)) + " " + traces::collective_name(type));
      test::ScratchDir dir;
      const auto files = gen(dir, type, n, kMiB);
      const auto run = within(seconds(30), [&] {
        return run_walker(network({dim(DimTopology::kRing, n)}), opts(system_config(algo, k, 1)), files);
      });
      const auto &r = run.result;
      ASSERT_TRUE(r.stuck.empty()) << joined(r.stuck);
      ASSERT_EQ(r.collectives.size(), 1u);
      const auto &c = r.collectives[0];
      EXPECT_GT(r.total.ps(), 0u);
      EXPECT_EQ(c.members, n);
      const bool rooted = type == ChakraProtoMsg::REDUCE || type == ChakraProtoMsg::GATHER ||
                          type == ChakraProtoMsg::SCATTER || type == ChakraProtoMsg::BROADCAST;
      if (rooted) {
        EXPECT_EQ(c.chunks, k);
        EXPECT_EQ(c.messages, k * n1);
      }
      if (type == ChakraProtoMsg::ALL_REDUCE && algo == CollectiveAlgo::kDoubleBinaryTree) {
        EXPECT_EQ(c.messages, k * 2 * n1);
        EXPECT_EQ(c.algorithm, "doubleBinaryTree");
      }
      if (type == ChakraProtoMsg::BARRIER) {
        EXPECT_GT(c.messages, 0u);
        EXPECT_EQ(c.message_bytes, 0u);
        EXPECT_EQ(c.chunks, 1u);
      } else {
        EXPECT_GT(c.message_bytes, 0u);
      }
    }
  }
}

// ---- 9. stragglers
// ------------------------------------------------------------------------------------
TEST(WalkerStraggler, ComputeScaleDelaysTheCollectiveForBoth) {
  test::ScratchDir dir;
  const auto files = write_ranks(dir, "strag",
                                 {{comp(0, 10), coll(1, ChakraProtoMsg::ALL_REDUCE, kMiB, {0})},
                                  {comp(0, 10), coll(1, ChakraProtoMsg::ALL_REDUCE, kMiB, {0})}});
  for (const bool cf : {true, false}) {
    auto o = opts(system_config(CollectiveAlgo::kRing, 4, 1), cf);
    o.compute_scale = {1.0, 2.0};
    const auto run = run_walker(network({dim(DimTopology::kRing, 2)}), o, files);
    ASSERT_TRUE(run.result.stuck.empty());
    // A collective starts once every member issued it: both start at 20 us and end together.
    const Time end = Time::from_us(20) + ring_allreduce_time(P{}, kMiB, 4, 2);
    expect_all_finish_at(run.result, end);
    EXPECT_EQ(run.result.ranks[1].compute_busy, Duration::from_us(20));
    EXPECT_EQ(run.result.ranks[0].compute_busy, Duration::from_us(10));
    EXPECT_EQ(run.result.ranks[1].compute_scale, 2.0);
    ASSERT_EQ(run.result.collectives.size(), 1u);
    EXPECT_EQ(run.result.collectives[0].issued_first, Time::from_us(10));
    EXPECT_EQ(run.result.collectives[0].issued_last, Time::from_us(20));
    EXPECT_EQ(run.result.collectives[0].finished.ps(), end.ps());
  }
}

// ---- 10. roofline
// -------------------------------------------------------------------------------------
TEST(WalkerRoofline, MaxOfComputeAndMemoryTime) {
  test::ScratchDir dir;
  Node n = test::make_node(0, ChakraProtoMsg::COMP_NODE);
  set_int(n, "num_ops", 2'000'000'000'000);
  set_int(n, "tensor_size", 1'000'000'000);
  const auto files = write_ranks(dir, "roof", {{n}});
  const auto net = network({dim(DimTopology::kRing, 1)});
  auto o = opts(system_config(CollectiveAlgo::kRing, 1, 1));
  o.peak_tflops = 1000;
  o.mem_bw_gbps = 1000;
  const auto run = run_walker(net, o, files);
  // The same Q32.32 arithmetic as the walker: 10^15 ops/s is 0.001 ps per op,
  // which Q32.32 cannot hold exactly (raw 4294967.296 -> 4294967), so 2e12 ops
  // come out slightly under 2 ms.
  const Duration t_ops = Rate::from_bytes_per_sec(1'000'000'000'000'000).ser(2'000'000'000'000);
  const Duration t_mem = Rate::from_bytes_per_sec(1'000'000'000'000).ser(1'000'000'000);
  EXPECT_EQ(t_mem, Duration::from_ms(1));
  EXPECT_EQ(run.result.total.ps(), std::max(t_ops, t_mem).ps());
  EXPECT_NEAR(static_cast<double>(run.result.total.ps()), 2e9,
              1000.0);  // 2 ms within 1 ns
  EXPECT_EQ(run.result.ranks[0].compute_busy.ps(), run.result.total.ps());

  o.compute_model = ComputeModel::kDuration;
  const auto dur = run_walker(net, o, files);
  EXPECT_EQ(dur.result.total, Time::zero());
}

// ---- 11. process groups
// -------------------------------------------------------------------------------
Duration ring_allreduce_fc(uint64_t S, uint64_t k, uint64_t n) { return ring_allreduce_time(P{}, S, k, n); }

void expect_two_groups(const RunResult &r, uint64_t S, uint64_t k) {
  ASSERT_TRUE(r.stuck.empty()) << joined(r.stuck);
  expect_all_finish_at(r, Time::zero() + ring_allreduce_fc(S, k, 4));
  ASSERT_EQ(r.collectives.size(), 2u);
  for (const auto &c : r.collectives) EXPECT_EQ(c.members, 4);
}

TEST(WalkerGroups, TwoGroupsFromProcessGroupsAdd) {
  test::ScratchDir dir;
  const uint64_t S = kMiB, k = 4;
  std::vector<std::vector<Node>> ranks;
  for (int r = 0; r < 8; ++r) ranks.push_back({coll(0, ChakraProtoMsg::ALL_REDUCE, S, {}, r < 4 ? "1" : "2")});
  const auto files = write_ranks(dir, "pg", ranks);
  traces::ProcessGroups groups(8);
  groups.add("1", {0, 1, 2, 3}, {.file = "test"});
  groups.add("2", {4, 5, 6, 7}, {.file = "test"});
  // FullyConnected: every member's ring neighbour is one hop away, as on a
  // 4-rank ring.
  const auto run =
      run_walker(network({dim(DimTopology::kFullyConnected, 8)}), opts(system_config(CollectiveAlgo::kRing, k, 1)),
                 files, Model::kAnalytical, ~uint32_t{0}, &groups);
  expect_two_groups(run.result, S, k);
}

TEST(WalkerGroups, TwoGroupsFromMetadataNodes) {
  test::ScratchDir dir;
  const uint64_t S = kMiB, k = 4;
  std::vector<std::vector<Node>> ranks;
  for (int r = 0; r < 8; ++r) {
    Node meta = test::make_node(0, ChakraProtoMsg::METADATA_NODE);
    meta.mutable_inputs()->set_values(
        "[{'pg_name': '0', 'ranks': [], 'group_size': 8}, {'pg_name': '1', "
        "'ranks': [0, 1, 2, 3], 'group_size': 4}, "
        "{'pg_name': '2', 'ranks': [4, 5, 6, 7], 'group_size': 4}]");
    ranks.push_back({meta, coll(1, ChakraProtoMsg::ALL_REDUCE, S, {0}, r < 4 ? "1" : "2")});
  }
  const auto files = write_ranks(dir, "pgm", ranks);
  for (const bool cf : {true, false}) {
    const auto run = run_walker(network({dim(DimTopology::kFullyConnected, 8)}),
                                opts(system_config(CollectiveAlgo::kRing, k, 1), cf), files);
    expect_two_groups(run.result, S, k);
  }
}

// Issue 44 item 8: `validate` and `run` match a group's collectives by one rule, file order. Two ranks,
// an all-reduce A and an all-gather B each. Case "dependency": rank 1 holds A, B in file order but issues
// B first (A waits for a compute); validate says valid, and run used to fail matching B with A. Case
// "swapped": rank 1 holds B, A in file order but issues A first (B waits for A); validate reports the
// mismatch, and run used to succeed.
TEST(WalkerOrder, CollectivesMatchInFileOrderAsValidateChecks) {
  const auto net = network({dim(DimTopology::kRing, 2)});
  auto validate = [](const std::vector<std::string> &files) {
    return traces::validate_workload({{0, files[0]}, {1, files[1]}});
  };
  {
    test::ScratchDir dir;
    const auto files = write_ranks(dir, "dep", {{coll(0, ChakraProtoMsg::ALL_REDUCE, kMiB),
                                                 coll(1, ChakraProtoMsg::ALL_GATHER, 4096, {0})},
                                                {comp(0, 100), coll(1, ChakraProtoMsg::ALL_REDUCE, kMiB, {0}),
                                                 coll(2, ChakraProtoMsg::ALL_GATHER, 4096)}});
    EXPECT_TRUE(validate(files).ok());
    const auto run = run_walker(net, opts(system_config(CollectiveAlgo::kRing, 1, 1)), files);
    ASSERT_TRUE(run.result.stuck.empty()) << joined(run.result.stuck);
    ASSERT_EQ(run.result.collectives.size(), 2u);  // before: rank 1's B was matched with rank 0's A (an error)
    EXPECT_EQ(run.result.collectives[0].type, "ALL_REDUCE");
    EXPECT_EQ(run.result.collectives[1].type, "ALL_GATHER");
    // Rank 1's B ran at once, rank 0's only after A: the all-gather finished after the all-reduce.
    EXPECT_GT(run.result.collectives[1].finished, run.result.collectives[0].finished);
  }
  {
    test::ScratchDir dir;
    const auto files = write_ranks(dir, "swap", {{coll(0, ChakraProtoMsg::ALL_REDUCE, kMiB),
                                                  coll(1, ChakraProtoMsg::ALL_GATHER, 4096, {0})},
                                                 {coll(1, ChakraProtoMsg::ALL_GATHER, 4096, {2}),
                                                  coll(2, ChakraProtoMsg::ALL_REDUCE, kMiB)}});
    const auto report = validate(files);
    EXPECT_FALSE(report.ok());
    // Rank 1's all-reduce is its group's collective #1, rank 0's #0: neither completes (as NCCL would hang).
    const auto run = within(seconds(30), [&] {
      return run_walker(net, opts(system_config(CollectiveAlgo::kRing, 1, 1)), files);
    });
    EXPECT_TRUE(any_contains(run.result.stuck, {"collective #0 ALL_REDUCE", "1 of 2 members", "never issued by ranks 1"}))
        << joined(run.result.stuck);
    EXPECT_TRUE(any_contains(run.result.stuck, {"collective #1 ALL_REDUCE", "1 of 2 members", "never issued by ranks 0"}))
        << joined(run.result.stuck);
  }
}

// Issue 44 item 4: a comm-group file that numbers its groups from 0 does not replace the default group.
// A 4-rank all-reduce without pg_name runs on all four ranks beside a group "0" of two; one with pg_name
// "0" runs on the file's group.
TEST(WalkerGroups, GroupZeroOfAFileLeavesTheDefaultGroupAlone) {
  test::ScratchDir dir;
  const uint64_t S = kMiB;
  std::vector<std::vector<Node>> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back({coll(0, ChakraProtoMsg::ALL_REDUCE, S)});
    if (r < 2) ranks.back().push_back(coll(1, ChakraProtoMsg::ALL_GATHER, S, {0}, "0"));
  }
  const auto files = write_ranks(dir, "pg0", ranks);
  traces::ProcessGroups groups(4);
  test::write_bytes(dir.file("groups.json"), R"({"0": [0, 1], "1": [2, 3]})");
  groups.load_file(dir.file("groups.json"));
  const auto run = run_walker(network({dim(DimTopology::kFullyConnected, 4)}),
                              opts(system_config(CollectiveAlgo::kRing, 1, 1)), files, Model::kAnalytical,
                              ~uint32_t{0}, &groups);
  ASSERT_TRUE(run.result.stuck.empty()) << joined(run.result.stuck);
  ASSERT_EQ(run.result.collectives.size(), 2u);
  EXPECT_EQ(run.result.collectives[0].group, "");
  EXPECT_EQ(run.result.collectives[0].members, 4);
  EXPECT_EQ(run.result.collectives[1].group, "0");
  EXPECT_EQ(run.result.collectives[1].members, 2);
}

}  // namespace
}  // namespace fabemu::emu
