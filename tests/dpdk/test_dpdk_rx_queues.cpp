// The DPDK fabric with its receive side split over two lcores (README.md, "Several receive lcores"): EAL
// with three lcores (--lcores 0@0,1@1,2@1: this machine has two cores, so lcores 1 and 2 share one), two
// queues on each port, a receive path per queue, each on its own lcore. The reports must be exactly the
// software packet model's, every byte reassembled once, each path taking its share of the data frames,
// with and without injected loss and reordering, on a ring pair and on memif. Its own binary: EAL starts
// once per process, here with three lcores.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "host/dpdk/dpdk_env.h"
#include "host/dpdk/dpdk_fabric.h"
#include "tests/dpdk/dpdk_fabric_test_support.h"
#include "tests/dpdk/dpdk_test_support.h"
#include "tests/emulator/walker_test_util.h"

namespace fd = fabemu::host::dpdk;
using namespace fabemu::emu;
using namespace fabemu::emu::walker_test;
using namespace fabemu::test;

namespace {

const bool g_lcores = fabemu::test::request_eal_lcores("0@0,1@1,2@1");

fd::PortConfig two_queues() { return port_config(2, 2); }

fd::DpdkFabricOptions on_lcores_one_and_two() {
  fd::DpdkFabricOptions o;
  o.rx_lcores = {1, 2};
  return o;
}

// Path q ran on lcore q + 1 and polled queue q of port B; together the paths received every data frame
// (first transmissions and retransmissions), each a share of them: the frames of the ranks r with
// r mod 2 == q (every rank of these workloads sends).
void expect_two_paths(const DpdkRun& d) {
  const fd::DpdkStats& s = d.stats;
  EXPECT_EQ(s.main_lcore, 0u);
  EXPECT_EQ(s.rx_lcore, 1);
  ASSERT_EQ(s.rx_lcores.size(), 2u);
  for (unsigned q = 0; q < 2; ++q) {
    EXPECT_EQ(s.rx_lcores[q].lcore, q + 1);
    EXPECT_EQ(s.rx_lcores[q].queue, q);
    EXPECT_GT(s.rx_lcores[q].frames, 0u) << "queue " << q;
    EXPECT_GT(s.rx_lcores[q].polls, 0u) << "queue " << q;
  }
  EXPECT_EQ(s.rx_lcores[0].frames + s.rx_lcores[1].frames, s.data_frames + s.retransmissions);
  EXPECT_EQ(s.rx_lcore_frames, s.data_frames + s.retransmissions);
  EXPECT_EQ(s.rx_lcore_polls, s.rx_lcores[0].polls + s.rx_lcores[1].polls);
  ASSERT_EQ(s.rx_clocks.size(), 2u);
  EXPECT_EQ(s.rx_clocks[0].frames, s.rx_lcore_frames);
  EXPECT_EQ(s.rx_clocks[1].frames, s.acks + s.nacks);  // port A: the feedback of both paths, both queues
}

// The generated all-reduce on `ports` with two receive lcores: exactly the software model's times.
DpdkRun all_reduce_on_two_lcores(fd::DpdkPorts& ports, fd::DpdkFabricOptions opt = on_lcores_one_and_two()) {
  const GeneratedAllReduce ar;
  DpdkRun d = run_dpdk(ar.w, ports, opt);
  expect_exact(ar.sw, d);
  expect_two_paths(d);
  return d;
}

TEST(RxQueues, RingPairQueuesAreCrossConnectedQueueByQueue) {
  REQUIRE_EAL();
  fd::RingPair pair("rqpair", 1024, SOCKET_ID_ANY, 3);
  EXPECT_EQ(pair.queues(), 3);
  const fd::PortConfig c = port_config(3, 3);
  fd::Port a(pair.a(), c), b(pair.b(), c);
  EXPECT_FALSE(b.rss());  // rings do not hash: a frame stays on its queue's number
  for (uint16_t q = 0; q < 3; ++q) {
    const auto sent = static_cast<uint16_t>(1 + q % 2);  // 1, 2, 1 frames: the counts tell the queues apart
    const std::vector<uint16_t> got = frames_per_rx_queue(a, q, sent, b, 3);
    ASSERT_EQ(got.size(), 3u);
    for (uint16_t r = 0; r < 3; ++r) {
      EXPECT_EQ(got[r], r == q ? sent : 0) << "sent on queue " << q << ", received on queue " << r;
    }
    // And back: b's queue q to a's queue q.
    const std::vector<uint16_t> back = frames_per_rx_queue(b, q, 1, a, 3);
    ASSERT_EQ(back.size(), 3u);
    for (uint16_t r = 0; r < 3; ++r) {
      EXPECT_EQ(back[r], r == q ? 1 : 0);
    }
  }
}

TEST(RxQueues, TwoReceiveLcoresMatchTheSoftwareModel) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  ASSERT_GE(rte_lcore_count(), 3u) << "EAL was started without lcores 1 and 2";
  auto ports = fd::DpdkPorts::ring("rq1", two_queues(), 2);
  const DpdkRun d = all_reduce_on_two_lcores(ports);
  // No loss: a retransmission can only be spurious, and then its copy is detected as such.
  EXPECT_EQ(d.stats.rx_duplicates + d.stats.rx_stale, d.stats.retransmissions);
  EXPECT_EQ(d.stats.message_bytes, uint64_t{14} << 20);
  // The ring all-reduce's ranks all send the same: the two queues' shares (ranks 0, 2, 4, 6 and 1, 3, 5,
  // 7) are equal but for retransmissions.
  if (d.stats.retransmissions == 0) {
    EXPECT_EQ(d.stats.rx_lcores[0].frames, d.stats.rx_lcores[1].frames);
  }
}

TEST(RxQueues, LossAndReorderingOnEachReceiveLcore) {
  REQUIRE_EAL();
  auto ports = fd::DpdkPorts::ring("rq2", two_queues(), 2);
  fd::DpdkFabricOptions opt = on_lcores_one_and_two();
  opt.faults = injected_faults();
  const DpdkRun d = all_reduce_on_two_lcores(ports, opt);
  expect_faults_recovered(d.stats);
  EXPECT_GT(d.stats.nack_retransmissions, 0u);
}

TEST(RxQueues, MemifWithTwoQueuePairs) {
  REQUIRE_EAL();
  TempDir tmp;
  auto ports = fd::DpdkPorts::memif((tmp.path / "rq.sock").string(), two_queues());
  all_reduce_on_two_lcores(ports);
}

TEST(RxQueues, DilatedRunMeasuresTheCollective) {
  REQUIRE_EAL();
  auto ports = fd::DpdkPorts::ring("rq3", two_queues(), 2);
  fd::DpdkFabricOptions opt = on_lcores_one_and_two();
  opt.dilation = 500;
  const DpdkRun d = all_reduce_on_two_lcores(ports, opt);
  EXPECT_EQ(d.stats.late + d.stats.on_time, d.stats.messages);
  ASSERT_EQ(d.stats.collectives.size(), 1u);
  EXPECT_GT(d.stats.collectives[0].measured.ps(), 0u);
}

// --pcap: the main lcore's data frames and each receive lcore's ACKs/NACKs, three captures merged into
// one in time order; no side file left.
TEST(RxQueues, CaptureOfThreeLcoresIsMergedInTimeOrder) {
  REQUIRE_EAL();
  TempDir tmp;
  auto ports = fd::DpdkPorts::ring("rq4", two_queues(), 2);
  fd::DpdkFabricOptions opt = on_lcores_one_and_two();
  opt.pcap = (tmp.path / "three.pcap").string();
  const DpdkRun d = all_reduce_on_two_lcores(ports, opt);
  expect_capture_of(opt.pcap, fd::WireMode::kFabemu, d.stats);
  for (const char* side : {".rx-lcore1", ".rx-lcore2", ".rx-lcore", ".merging"}) {
    EXPECT_FALSE(std::filesystem::exists(opt.pcap + side)) << side;
  }
}

TEST(RxQueues, BadChoicesAreRefusedWithTheReason) {
  REQUIRE_EAL();
  auto two = fd::DpdkPorts::ring("rq5", two_queues(), 2);
  fd::DpdkFabricOptions o;
  o.rx_lcores = {1, 1};
  EXPECT_EQ(refusal(two, o), "receive lcore 1 is listed twice");
  o.rx_lcores = {0, 1};
  EXPECT_NE(refusal(two, o).find("receive lcore 0: not an idle worker lcore of EAL (main lcore 0"), std::string::npos);
  o.rx_lcores = {1, 9};
  EXPECT_NE(refusal(two, o).find("receive lcore 9: not an idle worker lcore"), std::string::npos);
  // Two queues a port, one receive path: frames on queue 1 would never be read.
  EXPECT_NE(refusal(two, fd::DpdkFabricOptions{}).find("1 receive path needs 1 receive and transmit queue on each "
                                                       "port; net_ring_rq5_a has 2 receive and 2 transmit"),
            std::string::npos)
      << refusal(two, fd::DpdkFabricOptions{});
  // Two paths on ports of one queue.
  auto one = fd::DpdkPorts::ring("rq6", port_config());
  o.rx_lcores = {1, 2};
  EXPECT_NE(refusal(one, o).find("2 receive paths need 2 receive and transmit queues on each port; net_ring_rq6_a "
                                 "has 1 receive and 1 transmit"),
            std::string::npos)
      << refusal(one, o);
  // One device looping frames back: no port of its own for the receive side.
  auto loop = fd::DpdkPorts::devargs("net_null_rq7", "", two_queues());
  EXPECT_NE(refusal(loop, o).find("the receive side needs a port of its own"), std::string::npos);
  // The lcores are free again after each refusal: a good choice still runs.
  EXPECT_EQ(ring4_fabric(two, on_lcores_one_and_two())->rx_paths(), 2u);
}

}  // namespace
