// PacketFabric against closed forms of DESIGN.md's link contract (to the picosecond), determinism,
// conservation, pool reuse, its hop timing seam (HopBatcher); AnalyticalFabric against its closed form.
#include "emulator/packet_fabric.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdint>
#include <new>
#include <random>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "tests/emulator/fabric_test_util.h"
#include "tests/emulator/print.h"
#include "tests/support/alloc_counter.h"

namespace fabemu::emu {
namespace {

using testing::dim;
using testing::Injector;
using testing::network;
using testing::Recorder;
using Log = std::vector<std::pair<uint64_t, Time>>;

// 400 Gb/s is exactly 20 ps per byte, so the arithmetic of the closed forms is plain.
const Rate k20psPerByte = Rate::from_gbps(400);

// One message of P packets over H equal hops. Store-and-forward with equal rates: full packets stream
// without waiting after the first hop, so the last full packet arrives at inject + H*(s+L) + (P-1)*s
// (s = ser(mtu)). A shorter last packet (s' < s) finishes hop 1 at (P-1)*s + s' and then waits at
// every later hop behind the last full packet, so it arrives at inject + H*L + (P+H-2)*s + s' (P >= 2).
TEST(PacketFabric, OneMessagePipelinesOverHops) {
  const Duration L = Duration::from_ps(123'457);
  const uint32_t mtu = 4096;
  const uint64_t s = 4096 * 20;
  for (const uint64_t bytes : {uint64_t{10} * 4096, uint64_t{10} * 4096 + 100, uint64_t{1}, uint64_t{4096}}) {
    Engine engine;
    PacketFabric f(engine, Topology(network({dim(DimTopology::kRing, 8, k20psPerByte, L)})), mtu);
    Recorder rec;
    f.set_listener(&rec);
    Injector inj(f);
    const Time inject = Time::from_ps(777);
    inj.add(inject, Message{42, 0, 3, bytes, 0});  // 3 hops clockwise
    engine.run();
    const uint64_t H = 3;
    const uint64_t P = (bytes + mtu - 1) / mtu;
    const uint64_t last = bytes - (P - 1) * mtu;
    const uint64_t s_last = last * 20;
    // A lone packet has nothing to wait behind: H * (s' + L).
    const Time expected = inject + Duration::from_ps(P == 1 ? H * (s_last + L.ps())
                                                            : H * L.ps() + (P + H - 2) * s + s_last);
    if (last == mtu) {
      EXPECT_EQ(expected, inject + Duration::from_ps(H * (s + L.ps()) + (P - 1) * s));
    }
    ASSERT_EQ(rec.log.size(), 1u) << bytes;
    EXPECT_EQ(rec.log[0], std::make_pair(uint64_t{42}, expected)) << bytes << " bytes";
    for (const LinkId l : f.topology().route(0, 3)) {
      EXPECT_EQ(f.link_stats(l).bytes, bytes);
      EXPECT_EQ(f.link_stats(l).packets, P);
    }
  }
}

// Two messages injected together onto the same first link: FIFO, the second waits for all of the first.
// Ring 8, s = ser(1000) = 20'000 ps, L = 1'000 ps. A = 2 packets 0->1; B = 1 packet 0->2 (via 1).
TEST(PacketFabric, SameFirstLinkIsFifo) {
  const Duration L = Duration::from_ps(1'000);
  for (const bool a_first : {true, false}) {
    Engine engine;
    PacketFabric f(engine, Topology(network({dim(DimTopology::kRing, 8, k20psPerByte, L)})), 1000);
    Recorder rec;
    f.set_listener(&rec);
    const Message a{1, 0, 1, 2000, 0};
    const Message b{2, 0, 2, 1000, 0};
    if (a_first) {
      f.send(a);
      f.send(b);
    } else {
      f.send(b);
      f.send(a);
    }
    EXPECT_TRUE(rec.log.empty()) << "delivery never happens inside send()";
    engine.run();
    if (a_first) {
      // A: departs 0 and 20'000, last arrives 40'000 + 1'000. B: departs link 0->1 at 40'000, reaches
      // node 1 at 61'000, crosses 1->2 by 81'000, arrives 82'000.
      EXPECT_EQ(rec.log, (Log{{1, Time::from_ps(41'000)}, {2, Time::from_ps(82'000)}}));
    } else {
      // B: 0->1 by 20'000, at node 1 at 21'000, 1->2 by 41'000, arrives 42'000. A: departs 20'000 and
      // 40'000, last arrives 61'000.
      EXPECT_EQ(rec.log, (Log{{2, Time::from_ps(42'000)}, {1, Time::from_ps(61'000)}}));
    }
  }
}

// Two packets reaching one link at the same picosecond from different upstream links: the one whose
// event was scheduled first goes first, and the other waits exactly one ser().
// Switch 4: NPUs 0 and 1 both send 1000 bytes to NPU 2; both packets reach the switch at 21'000 and
// the down link 4->2 serves 0's first (sent first): 21'000 + 20'000 + 1'000, then 20'000 later.
TEST(PacketFabric, EqualTimeTieFollowsInsertionOrder) {
  const Duration L = Duration::from_ps(1'000);
  Engine engine;
  PacketFabric f(engine, Topology(network({dim(DimTopology::kSwitch, 4, k20psPerByte, L)})), 1000);
  Recorder rec;
  f.set_listener(&rec);
  f.send(Message{10, 0, 2, 1000, 0});
  f.send(Message{11, 1, 2, 1000, 0});
  engine.run();
  EXPECT_EQ(rec.log, (Log{{10, Time::from_ps(42'000)}, {11, Time::from_ps(62'000)}}));
}

// A rate that is not a whole number of ps per byte: 2400 Gb/s = 10/3 ps/byte. Each packet's ser()
// rounds up on its own, so 3 packets of 1000 bytes take 3 * 3334 ps, not ceil(3000 * 10/3) = 10'000.
TEST(PacketFabric, NonPowerOfTwoRateRoundsUpPerPacket) {
  const Rate r = Rate::from_gbps(2400);
  // The raw value written out: round(8000 * 2^32 / 2400), ties up.
  constexpr detail::u128 num = detail::u128{8000} << 32;
  constexpr auto raw = static_cast<uint64_t>((2 * num + 2400) / (2 * 2400));
  ASSERT_EQ(r.ps_per_byte_q32(), raw);
  const auto ceil_ser = [](uint64_t n) {
    const detail::u128 p = detail::u128{n} * raw;
    return static_cast<uint64_t>((p >> 32) + ((p & 0xffffffffu) != 0 ? 1 : 0));
  };
  ASSERT_EQ(ceil_ser(1000), 3334u);
  ASSERT_EQ(ceil_ser(3000), 10'000u);

  const Duration L = Duration::from_ps(500);
  Engine engine;
  PacketFabric f(engine, Topology(network({dim(DimTopology::kFullyConnected, 2, r, L)})), 1000);
  Recorder rec;
  f.set_listener(&rec);
  f.send(Message{1, 0, 1, 3000, 0});
  engine.run();
  EXPECT_EQ(rec.log, (Log{{1, Time::from_ps(3 * 3334 + 500)}}));
}

// A src == dst message is delivered at its injection time, in an event of its own.
TEST(PacketFabric, LocalMessageIsDeliveredAtOnce) {
  Engine engine;
  PacketFabric f(engine, Topology(network({dim(DimTopology::kRing, 4)})), 1000);
  Recorder rec;
  f.set_listener(&rec);
  Injector inj(f);
  inj.add(Time::from_ps(5), Message{7, 2, 2, 5000, 0});
  inj.add(Time::from_ps(9), Message{8, 2, 2, 0, 0});
  engine.run();
  EXPECT_EQ(rec.log, (Log{{7, Time::from_ps(5)}, {8, Time::from_ps(9)}}));
}

// A listener that answers each delivery with a new message (ping-pong), as the walker does: 1-packet
// messages over 2 hops, so each leg takes 2 * (ser + L) exactly.
class PingPong final : public DeliveryListener {
 public:
  PingPong(Fabric& f, int rounds) : fabric_(f), rounds_(rounds) {}
  void on_delivered(uint64_t id, Time at) override {
    log.emplace_back(id, at);
    if (static_cast<int>(id) + 1 < rounds_) {
      const bool even = (id + 1) % 2 == 0;
      fabric_.send(Message{id + 1, even ? 0 : 2, even ? 2 : 0, 500, 0});
    }
  }
  Log log;

 private:
  Fabric& fabric_;
  int rounds_;
};

TEST(PacketFabric, ListenerMaySendFromDelivery) {
  const Duration L = Duration::from_ps(3'000);
  Engine engine;
  PacketFabric f(engine, Topology(network({dim(DimTopology::kRing, 8, k20psPerByte, L)})), 1000);
  PingPong pp(f, 6);
  f.set_listener(&pp);
  f.send(Message{0, 0, 2, 500, 0});
  engine.run();
  ASSERT_EQ(pp.log.size(), 6u);
  const uint64_t leg = 2 * (500 * 20 + 3'000);
  for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(pp.log[i], std::make_pair(i, Time::from_ps((i + 1) * leg)));
}

struct Workload {
  std::vector<std::pair<Time, Message>> sends;
};

Workload random_workload(int32_t npus, int count, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Workload w;
  for (int i = 0; i < count; ++i) {
    const auto src = static_cast<int32_t>(rng() % static_cast<uint64_t>(npus));
    const auto dst = static_cast<int32_t>(rng() % static_cast<uint64_t>(npus));
    const uint64_t bytes = rng() % 20'000;
    const Time at = Time::from_ps(rng() % 200'000);
    w.sends.emplace_back(at, Message{static_cast<uint64_t>(i), src, dst, bytes, rng()});
  }
  return w;
}

NetworkConfig mixed_network() {
  return network({dim(DimTopology::kRing, 4, Rate::from_gbps(2400), Duration::from_ps(700)),
                  dim(DimTopology::kSwitch, 3, Rate::from_gbps(400), Duration::from_ns(2)),
                  dim(DimTopology::kFullyConnected, 2, Rate::from_astra_gbps(50), Duration::from_ps(1'234))});
}

Log run_workload(const Workload& w, std::vector<LinkStats>* stats = nullptr) {
  Engine engine;
  PacketFabric f(engine, Topology(mixed_network()), 1500);
  Recorder rec;
  f.set_listener(&rec);
  Injector inj(f);
  for (const auto& [at, m] : w.sends) inj.add(at, m);
  engine.run();
  if (stats != nullptr) {
    for (LinkId l = 0; l < f.topology().links().size(); ++l) stats->push_back(f.link_stats(l));
  }
  return rec.log;
}

TEST(PacketFabric, DeterministicAndConserving) {
  const Workload w = random_workload(24, 400, 1234);
  std::vector<LinkStats> stats;
  const Log first = run_workload(w, &stats);
  const Log second = run_workload(w);
  EXPECT_EQ(first, second);

  // Every message delivered exactly once, never before its injection plus its pure latency.
  ASSERT_EQ(first.size(), w.sends.size());
  std::set<uint64_t> seen;
  const Topology t(mixed_network());
  for (const auto& [id, at] : first) {
    EXPECT_TRUE(seen.insert(id).second) << "message " << id << " delivered twice";
    const auto& [sent, m] = w.sends[id];
    Duration floor;
    for (const LinkId l : t.route(m.src, m.dst)) floor += t.link(l).latency;
    EXPECT_GE(at, sent + floor) << "message " << id;
  }
  // Per link: the bytes and packets of exactly the messages routed over it.
  std::vector<LinkStats> expected(t.links().size());
  for (const auto& [sent, m] : w.sends) {
    for (const LinkId l : t.route(m.src, m.dst)) {
      expected[l].bytes += m.bytes;
      expected[l].packets += m.bytes == 0 ? 1 : (m.bytes + 1499) / 1500;
    }
  }
  for (LinkId l = 0; l < t.links().size(); ++l) {
    EXPECT_EQ(stats[l].bytes, expected[l].bytes) << "link " << l;
    EXPECT_EQ(stats[l].packets, expected[l].packets) << "link " << l;
  }
}

// PacketFabric keeps each NPU's last route (up to kCachedHops links): runs of messages to one peer, with
// the flow (ECMP key) changing on a fat-tree, peers changing, and routes too long to keep (ring of 40: up
// to 20 hops), must cross exactly the links Topology::route gives for their (src, dst, flow).
TEST(PacketFabric, RouteCacheGivesTopologyRoutes) {
  FatTreeConfig ft;
  ft.hosts_per_leaf = 4;
  ft.leaves = 3;
  ft.spines = 3;
  ft.host_link_rate = ft.spine_link_rate = k20psPerByte;
  ft.host_link_latency = ft.spine_link_latency = Duration::from_ns(1);
  NetworkConfig fat = network({dim(DimTopology::kFatTree, 12, k20psPerByte, Duration::from_ns(1))});
  fat.dims[0].fat_tree = ft;
  // A fat-tree as the second dimension of a product (2 x 12): routes of up to 6 links, the flow picks the spine.
  NetworkConfig product = fat;
  product.dims.insert(product.dims.begin(), dim(DimTopology::kSwitch, 2, k20psPerByte, Duration::from_ns(1)));
  for (const NetworkConfig& net :
       {fat, product, network({dim(DimTopology::kRing, 40, k20psPerByte, Duration::from_ns(1))})}) {
    const Topology t(net);
    Engine engine;
    PacketFabric f(engine, Topology(net), 1500);
    Recorder rec;
    f.set_listener(&rec);
    std::mt19937_64 rng(7);
    std::vector<LinkStats> expected(t.links().size());
    uint64_t id = 0;
    for (int run = 0; run < 300; ++run) {
      const auto src = static_cast<int32_t>(rng() % static_cast<uint64_t>(t.npus()));
      const auto dst = static_cast<int32_t>(rng() % static_cast<uint64_t>(t.npus()));
      for (int k = 0, n = static_cast<int>(rng() % 4) + 1; k < n; ++k) {  // a run to one peer
        const uint64_t flow = rng() % 3;
        const uint64_t bytes = 1 + rng() % 4000;
        f.send(Message{id++, src, dst, bytes, flow});
        for (const LinkId l : t.route(src, dst, flow)) {
          expected[l].bytes += bytes;
          expected[l].packets += (bytes + 1499) / 1500;
        }
      }
      engine.run();
    }
    EXPECT_EQ(rec.log.size(), id);
    for (LinkId l = 0; l < t.links().size(); ++l) {
      EXPECT_EQ(f.link_stats(l).bytes, expected[l].bytes) << "link " << l;
      EXPECT_EQ(f.link_stats(l).packets, expected[l].packets) << "link " << l;
    }
  }
}

// The packet pool stops growing: the same workload again after the first has drained needs no new
// packets, and gives the same times shifted by the offset.
TEST(PacketFabric, PoolIsReusedAndRunsShiftInTime) {
  const Workload w = random_workload(24, 200, 99);
  Engine engine;
  PacketFabric f(engine, Topology(mixed_network()), 1500);
  Recorder rec;
  f.set_listener(&rec);
  Injector inj(f);
  for (const auto& [at, m] : w.sends) inj.add(at, m);
  engine.run();
  const std::size_t pool = f.packet_pool_size();
  EXPECT_GT(pool, 0u);
  const Log first = rec.log;
  rec.log.clear();
  const Duration offset = engine.now().since_start() + Duration::from_ns(1);
  for (const auto& [at, m] : w.sends) inj.add(at + offset, m);
  engine.run();
  EXPECT_EQ(f.packet_pool_size(), pool);
  ASSERT_EQ(rec.log.size(), first.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(rec.log[i].first, first[i].first);
    EXPECT_EQ(rec.log[i].second, first[i].second + offset);
  }
  EXPECT_EQ(f.messages_delivered(), 2 * w.sends.size());
}

// No allocation per packet or message in steady state: a second, identical wave of traffic (the
// first one grew the pools and the engine's queue to their peaks) allocates nothing at all.
TEST(PacketFabric, NoAllocationInSteadyState) {
  if (!test::counting_allocations()) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  const Workload w = random_workload(24, 300, 7);
  Engine engine;
  PacketFabric f(engine, Topology(mixed_network()), 1500);
  Recorder rec;
  rec.log.reserve(2 * w.sends.size());
  f.set_listener(&rec);
  Injector inj(f);
  inj.reserve(2 * w.sends.size());
  for (const auto& [at, m] : w.sends) inj.add(at, m);
  const uint64_t first_wave = test::allocations();
  engine.run();
  EXPECT_GT(test::allocations(), first_wave) << "the counter counts (the first wave fills the pools)";
  const Duration offset = engine.now().since_start() + Duration::from_ns(1);
  for (const auto& [at, m] : w.sends) inj.add(at + offset, m);
  const uint64_t before = test::allocations();
  engine.run();
  EXPECT_EQ(test::allocations() - before, 0u);
  EXPECT_EQ(rec.log.size(), 2 * w.sends.size());
}

// The hop timing seam: an oracle of the link contract written apart from PacketFabric, answering in
// batches as a device would.
class ContractBatcher final : public HopBatcher {
 public:
  explicit ContractBatcher(const Topology& t) : topology_(t), link_free_(t.links().size()) {}
  void add(uint32_t link, uint64_t enter_ps, uint32_t bytes) override {
    const Link& l = topology_.link(link);
    link_free_[link] = std::max(enter_ps, link_free_[link]) + l.rate.ser(bytes).ps();
    open_.push_back(link_free_[link] + l.latency.ps());
    ++hops;
  }
  void answer(std::span<uint64_t> far_end_ps) override {
    ASSERT_EQ(far_end_ps.size(), open_.size());
    std::copy(open_.begin(), open_.end(), far_end_ps.begin());
    open_.clear();
    ++batches;
  }
  uint64_t hops = 0;
  uint64_t batches = 0;

 private:
  const Topology& topology_;
  std::vector<uint64_t> link_free_;
  std::vector<uint64_t> open_;
};

struct SeamRun {
  Log log;
  uint64_t events = 0;
  uint64_t hops = 0;
  uint64_t batches = 0;
};

// The workload sent up front, with the batcher or (nullptr) without.
SeamRun run_through_seam(const NetworkConfig& net, const Workload& w, bool batched) {
  Engine engine;
  const Topology topology(net);
  ContractBatcher batcher(topology);
  PacketFabric f(engine, topology, 1500, batched ? &batcher : nullptr);
  Recorder rec;
  f.set_listener(&rec);
  for (const auto& [at, m] : w.sends) f.send(m, at);
  engine.run();
  return {rec.log, engine.events_run(), batcher.hops, batcher.batches};
}

// Deliveries identical to the picosecond with the hops timed in windows of the smallest latency (700 ps
// here), one more engine event per window; with a zero-latency link each hop is a window of its own.
TEST(PacketFabric, HopTimingSeamGivesTheSameDeliveries) {
  const Workload w = random_workload(24, 400, 4242);
  const SeamRun alone = run_through_seam(mixed_network(), w, false);
  const SeamRun batched = run_through_seam(mixed_network(), w, true);
  ASSERT_EQ(batched.log.size(), w.sends.size());
  EXPECT_EQ(batched.log, alone.log);
  EXPECT_EQ(batched.events, alone.events + batched.batches);
  EXPECT_GT(batched.batches, 0u);
  EXPECT_LT(batched.batches * 2, batched.hops) << "windows of 700 ps hold several hops";

  const NetworkConfig zero = network({dim(DimTopology::kRing, 6, Rate::from_gbps(400), Duration::zero())});
  const Workload w6 = random_workload(6, 200, 17);
  const SeamRun zero_alone = run_through_seam(zero, w6, false);
  const SeamRun zero_batched = run_through_seam(zero, w6, true);
  EXPECT_EQ(zero_batched.log, zero_alone.log);
  EXPECT_EQ(zero_batched.batches, zero_batched.hops);
  EXPECT_EQ(zero_batched.events, zero_alone.events);  // no window, no flush event
}

TEST(PacketFabric, RejectsBadInput) {
  Engine engine;
  EXPECT_THROW(PacketFabric(engine, Topology(network({dim(DimTopology::kRing, 4)})), 0), std::invalid_argument);
  PacketFabric f(engine, Topology(network({dim(DimTopology::kRing, 4)})), 1000);
  EXPECT_THROW(f.send(Message{1, 0, 4, 10, 0}), std::invalid_argument);
  EXPECT_THROW(f.send(Message{1, -1, 0, 10, 0}), std::invalid_argument);
}

// AnalyticalFabric: inject + sum of the route's latencies + ser(bytes) at its slowest link.
TEST(AnalyticalFabric, ClosedForm) {
  const Rate fast = Rate::from_gbps(800);  // 10 ps/byte
  const Rate slow = Rate::from_gbps(100);  // 80 ps/byte
  Engine engine;
  AnalyticalFabric f(engine, Topology(network({dim(DimTopology::kRing, 4, fast, Duration::from_ps(1'000)),
                                               dim(DimTopology::kRing, 2, slow, Duration::from_ps(7'000))})));
  Recorder rec;
  f.set_listener(&rec);
  Injector inj(f);
  inj.add(Time::from_ps(100), Message{1, 0, 6, 10'000, 0});  // 0->1->2 fast, 2->6 slow
  inj.add(Time::from_ps(100), Message{2, 0, 2, 10'000, 0});  // 2 fast hops
  inj.add(Time::from_ps(100), Message{3, 0, 2, 10'000, 0});  // no queueing: same time as 2
  inj.add(Time::from_ps(50), Message{4, 3, 3, 10'000, 0});   // local
  engine.run();
  EXPECT_EQ(rec.log, (Log{{4, Time::from_ps(50)},
                          {2, Time::from_ps(100 + 2 * 1'000 + 10'000 * 10)},
                          {3, Time::from_ps(100 + 2 * 1'000 + 10'000 * 10)},
                          {1, Time::from_ps(100 + 2 * 1'000 + 7'000 + 10'000 * 80)}}));
  // One rate and latency: DESIGN.md's hops * latency + ser(bytes); 2400 Gb/s rounds up once.
  Engine e2;
  const Rate r = Rate::from_gbps(2400);
  AnalyticalFabric g(e2, Topology(network({dim(DimTopology::kRing, 8, r, Duration::from_ps(900))})));
  EXPECT_EQ(g.delay(Message{0, 0, 3, 3000, 0}), Duration::from_ps(3 * 900) + r.ser(3000));
  EXPECT_EQ(r.ser(3000), Duration::from_ps(10'000));
  EXPECT_EQ(g.messages_delivered(), 0u);
}

}  // namespace
}  // namespace fabemu::emu
