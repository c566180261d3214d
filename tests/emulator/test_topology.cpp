// Topology: link layout, exact routes and hop counts of small Ring / FullyConnected / Switch networks
// and their products, and structural properties (every route a connected path) on larger ones.
#include "emulator/topology.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "tests/emulator/fabric_test_util.h"
#include "tests/emulator/print.h"

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

}  // namespace
}  // namespace fabemu::emu
