// The DPDK fabric with its transmit side on lcores of its own (README.md, "Several transmit lcores"): EAL
// with four lcores (--lcores 0@0,1@1,2@1,3@1: this machine has two cores, so lcores 1 to 3 share one), the
// receive side on lcore 1, one or two transmit lanes on lcores 2 and 3, each with its own transmit queue
// of port A. The reports must be exactly the software packet model's, every byte reassembled once, with
// and without injected loss and reordering; each lane sends its links' frames (source rank mod the
// lanes), in order; the lanes' counters add up to the totals. Its own binary: EAL starts once per
// process, here with four lcores.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/dpdk/dpdk_env.h"
#include "host/dpdk/dpdk_fabric.h"
#include "tests/dpdk/dpdk_fabric_test_support.h"
#include "tests/dpdk/dpdk_test_support.h"
#include "tests/emulator/walker_test_util.h"
#include "tests/support/alloc_counter.h"

namespace fd = fabemu::host::dpdk;
using namespace fabemu::emu;
using namespace fabemu::emu::walker_test;
using namespace fabemu::test;

namespace {

const bool g_lcores = fabemu::test::request_eal_lcores("0@0,1@1,2@1,3@1");

// `lanes` transmit lcores (2, then 3), the receive side on lcore 1.
fd::DpdkFabricOptions on_tx_lcores(unsigned lanes) {
  fd::DpdkFabricOptions o;
  o.rx_lcore = 1;
  for (unsigned i = 0; i < lanes; ++i) o.tx_lcores.push_back(2 + i);
  return o;
}

// A ring pair for `lanes` transmit lanes: port A with a transmit queue per lane (one receive path).
fd::DpdkPorts ring_for(const std::string& name, unsigned lanes) {
  fd::PortConfig c = port_config(1, static_cast<uint16_t>(lanes));
  c.mbufs = c.mbufs_for(fd::DpdkFabric::frames_in_flight(16, 1, lanes), 32, 2 + lanes);
  return fd::DpdkPorts::ring(name, c);
}

// Each lane ran on its lcore, on its queue of port A, and sent a share of the frames; the shares add up
// exactly to the run's data frames and retransmissions (the receive side's ACKs/NACKs are the rest of
// frames_tx), its first transmissions and its messages.
void expect_lanes(const DpdkRun& d, unsigned lanes) {
  const fd::DpdkStats& s = d.stats;
  EXPECT_EQ(s.main_lcore, 0u);
  EXPECT_EQ(s.rx_lcore, 1);
  ASSERT_EQ(s.tx_lcores.size(), lanes);
  uint64_t frames = 0, data = 0, messages = 0, bytes = 0, feedback = 0;
  for (unsigned i = 0; i < lanes; ++i) {
    const fd::DpdkStats::TxLcore& l = s.tx_lcores[i];
    EXPECT_EQ(l.lcore, 2 + i);
    EXPECT_EQ(l.queue, i);
    EXPECT_EQ(l.queues, 1u);
    EXPECT_GT(l.frames, 0u) << "lane " << i;
    EXPECT_GT(l.messages, 0u) << "lane " << i;
    EXPECT_GT(l.polls, 0u) << "lane " << i;
    EXPECT_GT(l.bursts, 0u) << "lane " << i;
    EXPECT_GE(l.bytes, l.frames * 102) << "lane " << i;  // no frame is shorter than an ACK
    frames += l.frames;
    data += l.data_frames;
    messages += l.messages;
    bytes += l.bytes;
    feedback += l.feedback;
  }
  EXPECT_EQ(frames, s.data_frames + s.retransmissions);
  EXPECT_EQ(frames + s.acks + s.nacks, s.frames_tx);
  EXPECT_EQ(data, s.data_frames);
  EXPECT_EQ(messages, s.messages);
  EXPECT_LT(bytes, s.frame_bytes_tx);  // the rest: the ACK/NACK frames' bytes
  // Every ACK/NACK reached its sender's lane (late re-ACKs of copies may come after the lanes stopped).
  EXPECT_LE(feedback, s.acks + s.nacks);
  if (s.retransmissions == 0) {
    EXPECT_EQ(feedback, s.acks + s.nacks);
  }
  // The receive lcore got every data frame of both lanes.
  EXPECT_EQ(s.rx_lcore_frames, s.data_frames + s.retransmissions);
  // In order: a link's frames leave one lane's queue in their order, and the ring pair keeps it.
  if (s.injected_reorders == 0) {
    EXPECT_EQ(s.rx_reordered, 0u);
  }
}

TEST(TxLcores, RingPairTransmitQueuesFeedTheReceiveQueueOfTheirNumberModuloTheQueues) {
  REQUIRE_EAL();
  fd::RingPair pair("txqpair", 1024, SOCKET_ID_ANY, 2, {}, 4);  // a: 4 transmit queues, 2 receive; b: 2 and 2
  fd::Port a(pair.a(), port_config(2, 4)), b(pair.b(), port_config(2, 2));
  for (uint16_t t = 0; t < 4; ++t) {
    const auto sent = static_cast<uint16_t>(1 + t);  // the counts tell the queues apart
    const std::vector<uint16_t> got = frames_per_rx_queue(a, t, sent, b, 2);
    ASSERT_EQ(got.size(), 2u);
    for (uint16_t r = 0; r < 2; ++r) {
      EXPECT_EQ(got[r], r == t % 2 ? sent : 0) << "sent on queue " << t << ", received on queue " << r;
    }
  }
  EXPECT_THROW(fd::RingPair("txqbad", 1024, SOCKET_ID_ANY, 2, {}, 3), std::invalid_argument);  // not a multiple
}

// The generated all-reduce with one and two transmit lcores: the software model's times exactly, the
// lanes' shares adding up; the same run with the main lcore sending gives the same report.
TEST(TxLcores, GeneratedAllReduceMatchesTheSoftwareModel) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  ASSERT_GE(rte_lcore_count(), 4u) << "EAL was started without lcores 1 to 3";
  const GeneratedAllReduce ar;
  for (const unsigned lanes : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(lanes) + " transmit lcores");
    auto ports = ring_for("txar" + std::to_string(lanes), lanes);
    const DpdkRun d = run_dpdk(ar.w, ports, on_tx_lcores(lanes));
    expect_exact(ar.sw, d);
    expect_lanes(d, lanes);
    EXPECT_EQ(d.stats.rx_duplicates + d.stats.rx_stale, d.stats.retransmissions);
    EXPECT_EQ(d.stats.message_bytes, uint64_t{14} << 20);
    if (lanes == 2 && d.stats.retransmissions == 0) {
      // Ranks 0, 2, 4, 6 on lane 0, 1, 3, 5, 7 on lane 1: a ring all-reduce's ranks all send the same.
      EXPECT_EQ(d.stats.tx_lcores[0].frames, d.stats.tx_lcores[1].frames);
    }
    fd::DpdkFabricOptions off;
    off.rx_lcore = 1;
    const DpdkRun one = run_dpdk(ar.w, ports, off);
    expect_exact(ar.sw, one);
    EXPECT_TRUE(one.stats.tx_lcores.empty());
    EXPECT_EQ(one.stats.data_frames, d.stats.data_frames);
  }
}

// The 12 shared microbenchmarks with one and two transmit lcores: the packet model's times.
TEST(TxLcores, SharedMicrobenchmarksOnRingPair) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  if (!shared_traces_dir()) GTEST_SKIP() << "../shared/traces is absent";
  for (const unsigned lanes : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(lanes) + " transmit lcores");
    auto ring = ring_for("txmb" + std::to_string(lanes), lanes);
    int runs = 0;
    for_each_shared_microbenchmark([&](const Workload& w, int) {
      const RunResult sw = run_software(w);
      const DpdkRun d = run_dpdk(w, ring, on_tx_lcores(lanes));
      expect_exact(sw, d);
      expect_lanes(d, lanes);
      EXPECT_EQ(d.stats.rx_duplicates + d.stats.rx_stale, d.stats.retransmissions);
      EXPECT_EQ(d.stats.message_bytes, sw.message_bytes);
      ++runs;
    });
    EXPECT_EQ(runs, 12);
  }
}

// 1% drop and 5% reorder (1% duplicate) with `lanes` transmit lcores, on the generated all-reduce and the
// shared microbenchmarks: still exactly the model's times, every loss retransmitted, the NACKs passed to
// the lanes that own the senders.
void loss_and_reordering_on(unsigned lanes) {
  const GeneratedAllReduce ar;
  auto ring = ring_for("txloss" + std::to_string(lanes), lanes);
  fd::DpdkFabricOptions opt = on_tx_lcores(lanes);
  opt.faults = injected_faults();
  const DpdkRun d = run_dpdk(ar.w, ring, opt);
  expect_exact(ar.sw, d);
  expect_lanes(d, lanes);
  expect_faults_recovered(d.stats);
  EXPECT_GT(d.stats.nack_retransmissions, 0u);
  if (!shared_traces_dir()) return;
  int runs = 0;
  for_each_shared_microbenchmark([&](const Workload& w, int) {
    const DpdkRun m = run_dpdk(w, ring, opt);
    expect_exact(run_software(w), m);
    expect_lanes(m, lanes);
    EXPECT_GE(m.stats.retransmissions, m.stats.injected_drops);
    ++runs;
  });
  EXPECT_EQ(runs, 12);
}

TEST(TxLcores, LossAndReorderingOnOneTransmitLcore) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  loss_and_reordering_on(1);
}

TEST(TxLcores, LossAndReorderingOnTwoTransmitLcores) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  loss_and_reordering_on(2);
}

// Paced (dilation 500) on two transmit lcores: the model's times; every link's frames in order (no
// packet arrived below one already received) and paced: every first transmission timed against its
// link's schedule as it left, no link faster than its target, every link with frames in busy periods.
TEST(TxLcores, PacedLinksKeepTheirOrderAndSchedule) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  const GeneratedAllReduce ar;
  auto ports = ring_for("txpace", 2);
  fd::DpdkFabricOptions opt = on_tx_lcores(2);
  opt.dilation = 500;
  const DpdkRun d = run_dpdk(ar.w, ports, opt);
  expect_exact(ar.sw, d);
  expect_lanes(d, 2);
  const fd::DpdkStats& s = d.stats;
  EXPECT_EQ(s.rx_reordered, 0u);
  EXPECT_EQ(s.jitter_ns.count(), s.data_frames);  // every first transmission timed as it left
  ASSERT_EQ(s.links.size(), 8u);  // the ring's 8 first links, each on its source rank's lane
  uint64_t link_frames = 0;
  for (const fd::DpdkStats::Link& l : s.links) {
    EXPECT_GT(l.busy_periods, 0u) << "link " << l.link;
    EXPECT_LE(l.ratio, 1.0 + 1e-9) << "link " << l.link;  // no frame left before it was due
    EXPECT_GT(l.ratio, 0.0) << "link " << l.link;
    link_frames += l.frames;
  }
  EXPECT_EQ(link_frames, s.data_frames);
  EXPECT_GT(s.pacing_ratio, 0.0);
}

TEST(TxLcores, NoAllocationPerMessageInSteadyState) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  if (!counting_allocations()) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  auto ports = ring_for("txnoalloc", 2);
  // As RxLcore.NoAllocationPerMessageInSteadyState: with other lcores, the second wave may hold a few more
  // messages in flight than the first (a slot more, once); an allocation per message would be 600 or more.
  expect_second_wave_allocates_nothing(ports, on_tx_lcores(2), 150);
}

// Refused: the main lcore, a receive lcore, an lcore EAL lacks, one listed twice, one device looping
// frames back, --pcap, and port A without a transmit queue per lane; each names --dpdk-tx-lcore.
TEST(TxLcores, ChoiceOfTheLcores) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  auto ports = ring_for("txchoice", 2);
  const auto refused = [](fd::DpdkPorts& p, const fd::DpdkFabricOptions& o, const std::string& says) {
    const std::string why = refusal(p, o);
    EXPECT_NE(why.find("--dpdk-tx-lcore"), std::string::npos) << why << "; expected: " << says;
    EXPECT_NE(why.find(says), std::string::npos) << why;
  };
  const auto with = [](std::vector<unsigned> ids) {
    fd::DpdkFabricOptions o;
    o.rx_lcore = 1;
    o.tx_lcores = std::move(ids);
    return o;
  };
  refused(ports, with({0}), "not an idle worker lcore");
  refused(ports, with({1}), "is a receive lcore");
  refused(ports, with({9}), "not an idle worker lcore");
  refused(ports, with({2, 2}), "listed twice");
  fd::DpdkFabricOptions pcap = with({2});
  pcap.pcap = "/tmp/never-written.pcap";
  refused(ports, pcap, "--pcap");
  auto one_queue = fd::DpdkPorts::ring("txchoice1", port_config());
  refused(one_queue, with({2, 3}), "need 2 transmit queues");
  {
    auto loop = fd::DpdkPorts::devargs("net_null_txc", "", port_config());
    fd::DpdkFabricOptions o;
    o.rx_lcore = fd::DpdkFabricOptions::kRxLcoreOff;
    o.tx_lcores = {2};
    refused(loop, o, "need two ports");
  }
  // Accepted: two lanes, and one.
  EXPECT_EQ(ring4_fabric(ports, with({2, 3}))->tx_lanes(), 2u);
  EXPECT_EQ(ring4_fabric(ports, with({3}))->tx_lanes(), 1u);
  EXPECT_EQ(ring4_fabric(ports, with({}))->tx_lanes(), 1u);
}

}  // namespace
