// BinnedSeries (bounded time series: bins merge in pairs as the run grows) against sums computed by hand,
// and PacketFabric's link series (--link-series) against the link contract's closed form.
#include "emulator/binned_series.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>

#include "emulator/link_results.h"
#include "emulator/packet_fabric.h"
#include "tests/emulator/fabric_test_util.h"

namespace fabemu::emu {
namespace {

using testing::dim;
using testing::Injector;
using testing::network;

uint64_t row_sum(const BinnedSeries& s, size_t c) {
  uint64_t sum = 0;
  for (uint32_t b = 0; b < s.bins(); ++b) sum += static_cast<uint64_t>(s.value(c, b));
  return sum;
}

// Overlap of [from, to) with [lo, hi).
uint64_t overlap(uint64_t from, uint64_t to, uint64_t lo, uint64_t hi) {
  const uint64_t a = std::max(from, lo), b = std::min(to, hi);
  return b > a ? b - a : 0;
}

TEST(BinnedSeries, SplitsAnIntervalOverTheBinsItSpans) {
  BinnedSeries s(2, 4, 100);
  s.add(1, 50, 270, 3);  // 50 ps in bin 0, 100 in bin 1, 70 in bin 2, weight 3
  EXPECT_EQ(s.width_ps(), 100u);
  EXPECT_EQ(s.bins_used(), 3u);
  EXPECT_EQ(static_cast<uint64_t>(s.value(1, 0)), 150u);
  EXPECT_EQ(static_cast<uint64_t>(s.value(1, 1)), 300u);
  EXPECT_EQ(static_cast<uint64_t>(s.value(1, 2)), 210u);
  EXPECT_EQ(static_cast<uint64_t>(s.value(1, 3)), 0u);
  EXPECT_EQ(row_sum(s, 0), 0u);
  s.add(0, 10, 10);  // empty: nothing
  EXPECT_EQ(row_sum(s, 0), 0u);
}

// Reaching past the last bin merges bins in pairs (twice here: 100 -> 400 ps) and keeps every sum.
TEST(BinnedSeries, WidensByMergingPairsAndKeepsTheTotals) {
  BinnedSeries s(1, 4, 100);
  s.add(0, 0, 100);
  s.add(0, 150, 250);
  s.add(0, 1500, 1550);  // past 400, then 800: the width becomes 400
  EXPECT_EQ(s.width_ps(), 400u);
  EXPECT_EQ(s.bins_used(), 4u);
  EXPECT_EQ(static_cast<uint64_t>(s.value(0, 0)), 200u);  // [0,100) and [150,250)
  EXPECT_EQ(static_cast<uint64_t>(s.value(0, 1)), 0u);
  EXPECT_EQ(static_cast<uint64_t>(s.value(0, 2)), 0u);
  EXPECT_EQ(static_cast<uint64_t>(s.value(0, 3)), 50u);
  EXPECT_EQ(row_sum(s, 0), 250u);
}

TEST(BinnedSeries, RefusesABadShape) {
  EXPECT_THROW(BinnedSeries(1, 3, 100), std::invalid_argument);
  EXPECT_THROW(BinnedSeries(1, 0, 100), std::invalid_argument);
  EXPECT_THROW(BinnedSeries(1, 131072, 100), std::invalid_argument);
  EXPECT_THROW(BinnedSeries(1, 4, 0), std::invalid_argument);
}

// One message of 10 packets of 4096 B over 3 hops at 20 ps per byte (s = 81,920 ps per packet): each of
// its links is busy 10 s in all, and the first link from 777 ps on without a gap, so its bins hold that
// interval's overlap with each of them. Links it did not cross are left out of the report's series.
TEST(BinnedSeries, PacketFabricRecordsEachLinksBusyTime) {
  const Duration L = Duration::from_ps(123'457);
  const uint64_t s = 4096 * 20;
  Engine engine;
  PacketFabric f(engine, Topology(network({dim(DimTopology::kRing, 8, Rate::from_gbps(400), L)})), 4096);
  f.record_link_series(8);
  Injector inj(f);
  inj.add(Time::from_ps(777), Message{42, 0, 3, 10 * 4096, 0});
  engine.run();
  const LinkSeries series = link_series(f, f.link_series());
  ASSERT_EQ(series.links.size(), 3u);
  const BinnedSeries& raw = *f.link_series();
  EXPECT_EQ(series.bin_ps, raw.width_ps());
  // The last link ends its last packet at 777 + 2 (s + L) + 10 s: 8 bins of 1 ns doubled up to that.
  const uint64_t end = 777 + 2 * (s + L.ps()) + 10 * s;
  uint64_t width = 1000;
  while (8 * width < end) width *= 2;
  EXPECT_EQ(series.bin_ps, width);
  for (size_t i = 0; i < series.links.size(); ++i) {
    uint64_t sum = 0;
    for (const uint64_t v : series.busy_ps[i]) sum += v;
    EXPECT_EQ(sum, 10 * s) << "link " << series.links[i];
    EXPECT_EQ(sum, f.link_stats(series.links[i]).packets * s);
  }
  LinkId hops[16];
  const uint32_t first = f.topology().route(0, 3, std::span<LinkId>(hops))[0];
  const auto it = std::find(series.links.begin(), series.links.end(), first);
  ASSERT_NE(it, series.links.end());
  const std::vector<uint64_t>& row = series.busy_ps[static_cast<size_t>(it - series.links.begin())];
  for (size_t b = 0; b < row.size(); ++b) {
    EXPECT_EQ(row[b], overlap(777, 777 + 10 * s, b * width, (b + 1) * width)) << "bin " << b;
  }
  EXPECT_EQ(row.size(), raw.bins_used());
}

TEST(BinnedSeries, APacketFabricWithoutItHasNone) {
  Engine engine;
  PacketFabric f(engine, Topology(network({dim(DimTopology::kRing, 4, Rate::from_gbps(400), Duration::from_ps(10))})),
                 4096);
  EXPECT_EQ(f.link_series(), nullptr);
  EXPECT_TRUE(link_series(f, f.link_series()).empty());
  EXPECT_THROW(f.record_link_series(5), std::invalid_argument);
}

}  // namespace
}  // namespace fabemu::emu
