// Topology: link layout, exact routes and hop counts of small Ring / FullyConnected / Switch networks
// and their products, and structural properties (every route a connected path) on larger ones.
// Fat-tree (leaf-spine): layout, exact routes, ECMP determinism and spread, and the packet and
// analytical fabrics over it against closed forms.
#include "emulator/topology.h"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <utility>
#include <vector>

#include "emulator/packet_fabric.h"
#include "tests/emulator/fabric_test_util.h"
#include "tests/emulator/print.h"
#include "tests/support/alloc_counter.h"

namespace fabemu::emu {
namespace {

using testing::dim;
using testing::network;

// The (from, to) pairs of a route, which is what the tests can state independently of link indexes.
std::vector<std::pair<int32_t, int32_t>> path(const Topology& t, int32_t src, int32_t dst) {
  std::vector<std::pair<int32_t, int32_t>> p;
  for (const LinkId l : t.route(src, dst)) p.emplace_back(t.link(l).from, t.link(l).to);
  return p;
}

using Path = std::vector<std::pair<int32_t, int32_t>>;

// ecmp_spine(0, 5, 0) and ecmp_spine(3, 6, 12345) of a 4-spine fat-tree, computed independently (splitmix64
// finalizer of the pair, xor the flow, finalized again, mod 4) in Python.
constexpr int32_t kPinnedSpine05 = 1;
constexpr int32_t kPinnedSpine36 = 3;

TEST(Topology, Ring8ShorterWayTiesClockwise) {
  const Topology t(network({dim(DimTopology::kRing, 8)}));
  EXPECT_EQ(t.npus(), 8);
  EXPECT_EQ(t.nodes(), 8);
  EXPECT_EQ(t.links().size(), 16u);  // one link each way between neighbours
  EXPECT_EQ(t.max_hops(), 4u);
  EXPECT_EQ(path(t, 0, 3), (Path{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(path(t, 0, 5), (Path{{0, 7}, {7, 6}, {6, 5}}));
  EXPECT_EQ(path(t, 0, 4), (Path{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
  EXPECT_EQ(path(t, 6, 1), (Path{{6, 7}, {7, 0}, {0, 1}}));  // clockwise across the wrap
  EXPECT_EQ(path(t, 2, 1), (Path{{2, 1}}));
  EXPECT_EQ(t.hops(0, 3), 3u);
  EXPECT_EQ(t.hops(0, 5), 3u);
  EXPECT_EQ(t.hops(0, 4), 4u);
  EXPECT_EQ(t.hops(5, 5), 0u);
  EXPECT_TRUE(t.route(5, 5).empty());
}

TEST(Topology, RingOfTwoHasOneLinkEachWay) {
  const Topology t(network({dim(DimTopology::kRing, 2)}));
  EXPECT_EQ(t.links().size(), 2u);
  EXPECT_EQ(path(t, 0, 1), (Path{{0, 1}}));
  EXPECT_EQ(path(t, 1, 0), (Path{{1, 0}}));
}

TEST(Topology, Switch4IsTwoHopsViaTheSwitch) {
  const Topology t(network({dim(DimTopology::kSwitch, 4)}));
  EXPECT_EQ(t.npus(), 4);
  EXPECT_EQ(t.nodes(), 5);  // the switch is node 4
  EXPECT_EQ(t.links().size(), 8u);
  EXPECT_EQ(path(t, 0, 2), (Path{{0, 4}, {4, 2}}));
  EXPECT_EQ(path(t, 3, 1), (Path{{3, 4}, {4, 1}}));
  EXPECT_EQ(t.hops(3, 1), 2u);
}

TEST(Topology, FullyConnectedIsOneHop) {
  const Topology t(network({dim(DimTopology::kFullyConnected, 4)}));
  EXPECT_EQ(t.links().size(), 12u);  // one link each way between every pair
  for (int32_t s = 0; s < 4; ++s) {
    for (int32_t d = 0; d < 4; ++d) {
      if (s == d) continue;
      EXPECT_EQ(path(t, s, d), (Path{{s, d}})) << s << "->" << d;
      EXPECT_EQ(t.hops(s, d), 1u);
    }
  }
}

TEST(Topology, TwoDimRingCrossesDimensionZeroFirst) {
  const Rate fast = Rate::from_gbps(800);
  const Rate slow = Rate::from_gbps(100);
  const Topology t(network({dim(DimTopology::kRing, 4, fast, Duration::from_ns(1)),
                            dim(DimTopology::kRing, 2, slow, Duration::from_ns(7))}));
  // ASTRA-sim numbering: id = c0 + 4 * c1.
  EXPECT_EQ(t.npus(), 8);
  EXPECT_EQ(t.links().size(), 8u * 2 + 8u * 1);
  // 0 = (0,0) -> 6 = (2,1): dimension 0 first (a tie in a ring of 4 goes clockwise), then dimension 1.
  EXPECT_EQ(path(t, 0, 6), (Path{{0, 1}, {1, 2}, {2, 6}}));
  // 7 = (3,1) -> 0 = (0,0): 3 -> 0 clockwise in dimension 0 (one step over the wrap), then down.
  EXPECT_EQ(path(t, 7, 0), (Path{{7, 4}, {4, 0}}));
  const auto r = t.route(0, 6);
  ASSERT_EQ(r.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(t.link(r[i]).dim, 0);
    EXPECT_EQ(t.link(r[i]).rate, fast);
    EXPECT_EQ(t.link(r[i]).latency, Duration::from_ns(1));
  }
  EXPECT_EQ(t.link(r[2]).dim, 1);
  EXPECT_EQ(t.link(r[2]).rate, slow);
  EXPECT_EQ(t.link(r[2]).latency, Duration::from_ns(7));
}

TEST(Topology, MultiDimSwitchesOnePerGroup) {
  // Switch(2) x Switch(3): 6 NPUs; dimension 0 has 3 groups {0,1},{2,3},{4,5} (switches 6, 7, 8),
  // dimension 1 has 2 groups {0,2,4},{1,3,5} (switches 9, 10).
  const Topology t(network({dim(DimTopology::kSwitch, 2), dim(DimTopology::kSwitch, 3)}));
  EXPECT_EQ(t.nodes(), 11);
  EXPECT_EQ(path(t, 2, 3), (Path{{2, 7}, {7, 3}}));
  EXPECT_EQ(path(t, 1, 5), (Path{{1, 10}, {10, 5}}));
  EXPECT_EQ(path(t, 0, 5), (Path{{0, 6}, {6, 1}, {1, 10}, {10, 5}}));
  EXPECT_EQ(t.max_hops(), 4u);
}

// Every route of a few products is a connected path from src to dst, as long as hops() says, no
// longer than max_hops(), crossing dimensions in increasing order.
TEST(Topology, RoutesAreConnectedDimensionOrderedPaths) {
  const std::vector<NetworkConfig> configs = {
      network({dim(DimTopology::kRing, 5), dim(DimTopology::kFullyConnected, 3), dim(DimTopology::kSwitch, 2)}),
      network({dim(DimTopology::kSwitch, 4), dim(DimTopology::kRing, 6)}),
      network({dim(DimTopology::kFullyConnected, 2), dim(DimTopology::kRing, 2), dim(DimTopology::kRing, 7)}),
  };
  for (const NetworkConfig& c : configs) {
    const Topology t(c);
    std::vector<LinkId> buf(t.max_hops());
    for (int32_t s = 0; s < t.npus(); ++s) {
      for (int32_t d = 0; d < t.npus(); ++d) {
        const auto r = t.route(s, d, buf);
        ASSERT_EQ(r.size(), t.hops(s, d));
        ASSERT_LE(r.size(), t.max_hops());
        int32_t at = s;
        int32_t last_dim = 0;
        for (const LinkId l : r) {
          ASSERT_LT(l, t.links().size());
          ASSERT_EQ(t.link(l).from, at) << s << "->" << d;
          ASSERT_GE(t.link(l).dim, last_dim);
          last_dim = t.link(l).dim;
          at = t.link(l).to;
        }
        ASSERT_EQ(at, d);
      }
    }
  }
}

TEST(Topology, RejectsBadNetworks) {
  EXPECT_THROW(Topology(network({})), std::invalid_argument);
  EXPECT_THROW(Topology(network({dim(DimTopology::kRing, 0)})), std::invalid_argument);
  EXPECT_THROW(Topology(network({dim(DimTopology::kRing, 1 << 16), dim(DimTopology::kRing, 1 << 16)})),
               std::invalid_argument);
}

// --- fat-tree ----------------------------------------------------------------------------------------

NetworkConfig fat_tree(int32_t hosts_per_leaf, int32_t leaves, int32_t spines, Rate host = Rate::from_gbps(400),
                       Duration host_lat = Duration::from_ns(1), Rate spine = Rate::from_gbps(400),
                       Duration spine_lat = Duration::from_ns(1)) {
  FatTreeConfig ft;
  ft.hosts_per_leaf = hosts_per_leaf;
  ft.leaves = leaves;
  ft.spines = spines;
  ft.host_link_rate = host;
  ft.host_link_latency = host_lat;
  ft.spine_link_rate = spine;
  ft.spine_link_latency = spine_lat;
  NetworkConfig c = network({dim(DimTopology::kFatTree, int64_t{hosts_per_leaf} * leaves, host, host_lat)});
  c.dims[0].fat_tree = ft;
  return c;
}

TEST(FatTree, LayoutAndLinkCount) {
  // 3 leaves of 4 hosts, 2 spines: NPUs 0..11, leaves 12..14, spines 15..16.
  const Rate host = Rate::from_gbps(400);
  const Rate spine = Rate::from_gbps(100);
  const Topology t(fat_tree(4, 3, 2, host, Duration::from_ps(500), spine, Duration::from_ps(700)));
  EXPECT_TRUE(t.is_fat_tree());
  EXPECT_EQ(t.npus(), 12);
  EXPECT_EQ(t.nodes(), 12 + 3 + 2);
  EXPECT_EQ(t.links().size(), 2u * 12 + 2u * 3 * 2);  // 2N + 2LS
  EXPECT_EQ(t.max_hops(), 4u);
  // Host links first: 2h up, 2h+1 down.
  EXPECT_EQ(t.link(10).from, 5);
  EXPECT_EQ(t.link(10).to, 13);
  EXPECT_EQ(t.link(11).from, 13);
  EXPECT_EQ(t.link(11).to, 5);
  EXPECT_EQ(t.link(10).rate, host);
  EXPECT_EQ(t.link(10).latency, Duration::from_ps(500));
  // Then 2N + 2(l*S + s): leaf 2 -> spine 1 is 24 + 2*5 = 34, back 35.
  EXPECT_EQ(t.link(34).from, 14);
  EXPECT_EQ(t.link(34).to, 16);
  EXPECT_EQ(t.link(35).from, 16);
  EXPECT_EQ(t.link(35).to, 14);
  EXPECT_EQ(t.link(34).rate, spine);
  EXPECT_EQ(t.link(34).latency, Duration::from_ps(700));
  for (const Link& l : t.links()) EXPECT_EQ(l.dim, 0);
  EXPECT_EQ(t.link(10).tier, LinkTier::kLeaf);
  EXPECT_EQ(t.link(35).tier, LinkTier::kSpine);
  // 4 * 400 / (2 * 100) = 8:1.
  EXPECT_DOUBLE_EQ(fat_tree(4, 3, 2, host, {}, spine, {}).dims[0].fat_tree->oversubscription(), 8.0);
}

TEST(FatTree, SameLeafAndCrossLeafRoutes) {
  const Topology t(fat_tree(4, 3, 2));
  // Same leaf: up to leaf 12, down to 2.
  EXPECT_EQ(t.route(1, 2, uint64_t{77}), (std::vector<LinkId>{2, 5}));
  EXPECT_EQ(path(t, 1, 2), (Path{{1, 12}, {12, 2}}));
  EXPECT_EQ(t.hops(1, 2), 2u);
  EXPECT_EQ(t.hops(3, 3), 0u);
  EXPECT_TRUE(t.route(3, 3).empty());
  // Cross leaf 1 (leaf 0) -> 9 (leaf 2), through spine sp (node 15 + sp).
  for (uint64_t flow = 0; flow < 8; ++flow) {
    const int32_t sp = t.ecmp_spine(1, 9, flow);
    ASSERT_GE(sp, 0);
    ASSERT_LT(sp, 2);
    const auto s = static_cast<LinkId>(sp);
    EXPECT_EQ(t.route(1, 9, flow), (std::vector<LinkId>{2, 24 + 2 * (0 * 2 + s), 24 + 2 * (2 * 2 + s) + 1, 19}));
    Path p;
    for (const LinkId l : t.route(1, 9, flow)) p.emplace_back(t.link(l).from, t.link(l).to);
    EXPECT_EQ(p, (Path{{1, 12}, {12, 15 + sp}, {15 + sp, 14}, {14, 9}}));
  }
  EXPECT_EQ(t.hops(1, 9), 4u);
  // The 3-argument route is flow 0.
  std::array<LinkId, 4> a{};
  std::array<LinkId, 4> b{};
  const auto ra = t.route(1, 9, a);
  const auto rb = t.route(1, 9, uint64_t{0}, b);
  EXPECT_EQ(std::vector<LinkId>(ra.begin(), ra.end()), std::vector<LinkId>(rb.begin(), rb.end()));
}

// Every route of flows 0..flows-1 between every pair is a path of hops(s, d) links from s to d.
void expect_every_route_connected(const Topology& t, uint64_t flows) {
  std::vector<LinkId> buf(t.max_hops());
  for (int32_t s = 0; s < t.npus(); ++s) {
    for (int32_t d = 0; d < t.npus(); ++d) {
      for (uint64_t flow = 0; flow < flows; ++flow) {
        const auto r = t.route(s, d, flow, buf);
        ASSERT_EQ(r.size(), t.hops(s, d));
        int32_t at = s;
        for (const LinkId l : r) {
          ASSERT_EQ(t.link(l).from, at);
          at = t.link(l).to;
        }
        ASSERT_EQ(at, d);
      }
    }
  }
}

TEST(FatTree, EveryRouteIsAConnectedPath) { expect_every_route_connected(Topology(fat_tree(3, 4, 3)), 5); }

TEST(FatTree, EcmpIsDeterministicAndSpreads) {
  const Topology t(fat_tree(4, 2, 4));
  const Topology u(fat_tree(4, 2, 4));
  std::array<int, 4> count{};
  for (uint64_t flow = 0; flow < 1024; ++flow) {
    const int32_t sp = t.ecmp_spine(0, 5, flow);
    ASSERT_EQ(sp, t.ecmp_spine(0, 5, flow));  // same flow, same spine
    ASSERT_EQ(sp, u.ecmp_spine(0, 5, flow));  // in another topology object too
    ASSERT_EQ(t.route(0, 5, flow), u.route(0, 5, flow));
    ++count[static_cast<std::size_t>(sp)];
  }
  for (const int c : count) {
    EXPECT_GT(c, 0);
    EXPECT_LE(c, 1024 * 40 / 100);
  }
  // Flow 0 of different pairs spreads too (a collective's messages usually share one tag).
  std::array<int, 4> pairs{};
  for (int32_t s = 0; s < 4; ++s) {
    for (int32_t d = 4; d < 8; ++d) ++pairs[static_cast<std::size_t>(t.ecmp_spine(s, d, 0))];
  }
  for (const int c : pairs) EXPECT_GT(c, 0);
  // The hash is part of the results: pinned, so that a change is deliberate.
  EXPECT_EQ(t.ecmp_spine(0, 5, 0), kPinnedSpine05);
  EXPECT_EQ(t.ecmp_spine(3, 6, 12345), kPinnedSpine36);
}

// 4 hosts per leaf at 400 Gb/s, 2 spines at 400 Gb/s: 2:1 oversubscribed. Hosts 0 and 1 (leaf 0)
// send one packet of B bytes each at t = 0 to hosts 4 and 5 (leaf 1). s = ser(B) = 20 B ps.
// Through different spines nothing is shared after the host links: both arrive at
//   4 s + 2 Lh + 2 Ls.
// Forced through one spine (flows that hash to it), both reach the leaf 0 -> spine link at s + Lh; the
// first (sent first) departs then, the second waits s; on spine -> leaf 1 the second arrives exactly
// when the first frees it; so the first arrives at 4 s + 2 Lh + 2 Ls and the second s later.
TEST(FatTree, PacketFabricOversubscribedSpineFollowsTheFifoContract) {
  const Duration Lh = Duration::from_ps(1'000);
  const Duration Ls = Duration::from_ps(3'000);
  const uint64_t B = 10'000;
  const uint64_t s = B * 20;
  const NetworkConfig config = fat_tree(4, 2, 2, Rate::from_gbps(400), Lh, Rate::from_gbps(400), Ls);
  EXPECT_DOUBLE_EQ(config.dims[0].fat_tree->oversubscription(), 2.0);
  const Topology t(config);
  // Flows for 0->4 and 1->5 on the same spine, and a flow for 1->5 on the other one.
  const uint64_t fa = 0;
  const int32_t spine_a = t.ecmp_spine(0, 4, fa);
  uint64_t same = 0;
  while (t.ecmp_spine(1, 5, same) != spine_a) ++same;
  uint64_t other = 0;
  while (t.ecmp_spine(1, 5, other) == spine_a) ++other;
  const uint64_t alone = 4 * s + 2 * (Lh.ps() + Ls.ps());
  ASSERT_EQ(alone, 808'000u);

  for (const bool shared : {true, false}) {
    Engine engine;
    PacketFabric f(engine, Topology(config), static_cast<uint32_t>(B));
    testing::Recorder rec;
    f.set_listener(&rec);
    f.send(Message{1, 0, 4, B, fa});
    f.send(Message{2, 1, 5, B, shared ? same : other});
    engine.run();
    ASSERT_EQ(rec.log.size(), 2u);
    EXPECT_EQ(rec.log[0], std::make_pair(uint64_t{1}, Time::from_ps(alone))) << shared;
    EXPECT_EQ(rec.log[1], std::make_pair(uint64_t{2}, Time::from_ps(shared ? alone + s : alone))) << shared;
    // The spine link leaf 0 -> spine_a carried both packets, or one.
    const LinkId up = 2 * 8 + 2 * static_cast<LinkId>(spine_a);
    EXPECT_EQ(f.link_stats(up).packets, shared ? 2u : 1u);
    EXPECT_EQ(f.link_stats(up).bytes, shared ? 2 * B : B);
  }
}

TEST(FatTree, PacketFabricNoAllocationInSteadyState) {
  if (!test::counting_allocations()) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  Engine engine;
  PacketFabric f(engine, Topology(fat_tree(4, 4, 3)), 1500);
  uint64_t id = 0;
  const auto wave = [&] {
    for (int32_t src = 0; src < 16; ++src) {
      for (uint64_t flow = 0; flow < 4; ++flow) {
        f.send(Message{id++, src, (src * 7 + static_cast<int32_t>(flow) + 1) % 16, 5'000 + 100 * flow, flow});
      }
    }
    engine.run();
  };
  wave();
  const uint64_t before = test::allocations();
  wave();
  EXPECT_EQ(test::allocations() - before, 0u);
  EXPECT_EQ(f.messages_delivered(), 2u * 16 * 4);
}

// Analytical: 2 host latencies + 2 spine latencies + ser at the slowest link (the spine here).
TEST(FatTree, AnalyticalCrossAndSameLeaf) {
  const Duration Lh = Duration::from_ps(500);
  const Duration Ls = Duration::from_ps(700);
  Engine engine;
  AnalyticalFabric f(engine, Topology(fat_tree(4, 2, 2, Rate::from_gbps(400), Lh, Rate::from_gbps(100), Ls)));
  for (uint64_t flow = 0; flow < 4; ++flow) {
    EXPECT_EQ(f.delay(Message{0, 1, 6, 1'000, flow}), Duration::from_ps(2 * 500 + 2 * 700 + 1'000 * 80));
  }
  EXPECT_EQ(f.delay(Message{0, 1, 2, 1'000, 0}), Duration::from_ps(2 * 500 + 1'000 * 20));
  EXPECT_EQ(f.delay(Message{0, 3, 3, 1'000, 0}), Duration::zero());
}

TEST(FatTree, RejectsBadFatTrees) {
  // A FatTree dimension without its description, and a description on a Ring.
  NetworkConfig bare = fat_tree(2, 2, 1);
  bare.dims[0].fat_tree.reset();
  EXPECT_THROW(Topology{bare}, std::invalid_argument);
  NetworkConfig ring = fat_tree(2, 2, 1);
  ring.dims[0].topology = DimTopology::kRing;
  EXPECT_THROW(Topology{ring}, std::invalid_argument);
  try {
    Topology{ring};
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 0 has a fat-tree description but is not of topology FatTree"),
              std::string::npos)
        << e.what();
  }
  // npus disagreeing with hosts_per_leaf * leaves; no spine.
  NetworkConfig npus = fat_tree(2, 2, 1);
  npus.dims[0].npus = 5;
  EXPECT_THROW(Topology{npus}, std::invalid_argument);
  EXPECT_THROW(Topology{fat_tree(2, 2, 0)}, std::invalid_argument);
  // One leaf: 2 hops at most.
  EXPECT_EQ(Topology(fat_tree(4, 1, 1)).max_hops(), 2u);
}

// Issue 51 item 4: 4 GPUs on a switch x a fat-tree of 6 nodes (3 per leaf, 2 leaves, 2 spines) between the
// nodes: one fat-tree per GPU position (a rail). NPU p = gpu + 4 * node.
NetworkConfig switch_by_fat_tree() {
  NetworkConfig c = fat_tree(3, 2, 2, Rate::from_gbps(400), Duration::from_ns(1), Rate::from_gbps(200),
                             Duration::from_ns(2));
  c.dims.insert(c.dims.begin(), dim(DimTopology::kSwitch, 4, Rate::from_gbps(3600), Duration::from_ns(3)));
  return c;
}

TEST(FatTreeInAProduct, LayoutLinkCountAndTiers) {
  const NetworkConfig config = switch_by_fat_tree();
  const Topology t(config);
  EXPECT_TRUE(t.is_fat_tree());
  EXPECT_EQ(t.npus(), 24);
  // 6 node switches, then per rail (4) 2 leaves and 2 spines: 24 + 6 + 16 nodes.
  EXPECT_EQ(t.nodes(), 24 + 6 + 4 * 4);
  // Switch: 2 per NPU (48); fat-tree: 2 per NPU (48), then per rail 2LS = 8 (32).
  EXPECT_EQ(t.links().size(), 48u + 48u + 32u);
  const TopologySize size = topology_size(config);
  EXPECT_EQ(size.links, 128);
  EXPECT_EQ(size.switches, 22);
  EXPECT_EQ(t.max_hops(), 2u + 4u);
  // NPU 13 (GPU 1 of node 3, rail 1, leaf 1 of its rail): up-link 48 + 26 = 74, to the rail's leaf 1 =
  // node 30 + 1 * 4 + 1 = 35.
  EXPECT_EQ(t.link(74).from, 13);
  EXPECT_EQ(t.link(74).to, 35);
  EXPECT_EQ(t.link(74).tier, LinkTier::kLeaf);
  EXPECT_EQ(t.link(74).dim, 1);
  EXPECT_EQ(t.link(0).tier, LinkTier::kNone);
  // Rail 1's leaf 1 -> spine 0: 96 + 1 * 8 + 2 * (1 * 2 + 0) = 108, node 35 -> 30 + 4 + 2 = 36.
  EXPECT_EQ(t.link(108).from, 35);
  EXPECT_EQ(t.link(108).to, 36);
  EXPECT_EQ(t.link(108).tier, LinkTier::kSpine);
  EXPECT_EQ(t.link(108).rate, Rate::from_gbps(200));
  EXPECT_EQ(t.link(108).latency, Duration::from_ns(2));
}

TEST(FatTreeInAProduct, RoutesAreDimensionOrderedAndConnected) {
  const Topology t(switch_by_fat_tree());
  // GPU 0 of node 0 to GPU 1 of node 4 (leaf 1): the node switch to GPU 1, then rail 1's fat-tree, across.
  const auto r = t.route(0, 17, uint64_t{5});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(t.link(r[0]).to, 24);  // node 0's switch
  EXPECT_EQ(t.link(r[1]).to, 1);
  EXPECT_EQ(t.link(r[2]).tier, LinkTier::kLeaf);
  EXPECT_EQ(t.link(r[3]).tier, LinkTier::kSpine);
  EXPECT_EQ(t.link(r[3]).to, 30 + 4 + 2 + t.ecmp_spine(1, 17, 5));
  EXPECT_EQ(t.hops(0, 17), 6u);
  // Same leaf (nodes 0 and 2, GPU 3): 2 hops.
  EXPECT_EQ(t.hops(3, 11), 2u);
  expect_every_route_connected(t, 3);
}

}  // namespace
}  // namespace fabemu::emu
