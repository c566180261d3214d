// The lab fabric over DPDK ports (host/lab/dpdk_transport.h): two "hosts" in one process, each a socket
// fabric over one end of a ring pair (rte_eth_from_rings), each walking the whole workload on its own
// thread. Both must report the packet model's times, send exactly the messages whose source they host
// (their local pairs staying inside the host) and count a frame addressed to a rank they do not host
// without taking it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host/dpdk/address_plan.h"
#include "host/dpdk/dpdk_env.h"
#include "host/lab/datagram.h"
#include "host/lab/dpdk_transport.h"
#include "host/lab/socket_fabric.h"
#include "tests/dpdk/dpdk_test_support.h"
#include "tests/dpdk/fabric_test_support.h"
#include "tests/lab/split_run_support.h"

namespace hd = fabemu::host::dpdk;
namespace lab = fabemu::lab;
using namespace fabemu::test;

namespace {

// Rank r on the port of host A (ranks 0-3) or B (4-7).
std::vector<hd::Endpoint> plan(const hd::MacAddr& a, const hd::MacAddr& b) {
  std::vector<hd::Endpoint> e;
  for (uint32_t r = 0; r < 8; ++r) e.push_back(lab::lab_dpdk_endpoint(r, r < 4 ? a : b));
  return e;
}

struct TwoHosts {
  explicit TwoHosts(const std::string& name)
      : ring(name),
        a(lab::open_lab_data_port("net_ring_" + name + "_a", {})),
        b(lab::open_lab_data_port("net_ring_" + name + "_b", {})) {}
  hd::RingPair ring;  // outlives the ports
  std::unique_ptr<lab::LabDataPort> a, b;
};

void run_two_hosts(const std::string& name, lab::SocketFabricOptions opt, bool stray_frame,
                   hd::WireMode mode = hd::WireMode::kFabemu) {
  ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const fabemu::emu::Topology topo(w.net);
  TwoHosts hosts(name);
  ASSERT_NE(hosts.a->mac(), hosts.b->mac());
  const std::vector<hd::Endpoint> eps = plan(hosts.a->mac(), hosts.b->mac());
  EXPECT_EQ(hd::format_ip(eps[5].ip), "198.18.0.6");
  EXPECT_EQ(eps[5].port, 47000);
  opt.model_mtu = kModelMtu;
  if (mode == hd::WireMode::kRoceV2) opt.payload = static_cast<uint32_t>(hd::max_payload_for_mtu(mode, 1500));
  const uint32_t max = lab::SocketFabric::max_datagram(opt);
  lab::SocketFabric a(topo, hosts.a->open(eps, hosted(0, 4, 8), max, mode), hosted(0, 4, 8), opt);
  lab::SocketFabric b(topo, hosts.b->open(eps, hosted(4, 8, 8), max, mode), hosted(4, 8, 8), opt);
  if (stray_frame) {
    // A valid fabemu frame at A's MAC for rank 5, which B hosts: sent by a transport on B's port that
    // (wrongly) places rank 5 behind A. A counts it and never hands it to its fabric.
    std::vector<hd::Endpoint> wrong = eps;
    wrong[5].mac = hosts.a->mac();
    auto stray = hosts.b->open(wrong, hosted(4, 5, 8), max, mode);
    const hd::FabemuHeader h{hd::PacketKind::kData, 0, 4, 5, 0, 0, 1, 100, 0, 0};
    std::vector<uint8_t> d(lab::kDatagramHeaderBytes + 100);
    ASSERT_EQ(lab::encode_datagram(h, 100, {}, d), d.size());
    const lab::TxDatagram one{d.data(), static_cast<uint32_t>(d.size()), 5};
    ASSERT_EQ(stray->send(4, {&one, 1}), 1u);
    EXPECT_EQ(stray->stats().send_errors, 0u);
  }
  run_split_and_check(a, b, w);
  const lab::SocketStats& x = a.stats();
  const lab::SocketStats& y = b.stats();
  EXPECT_EQ(x.transport, "DPDK net_ring_" + name + "_a " + hd::format_mac(hosts.a->mac()) +
                             (mode == hd::WireMode::kRoceV2 ? " RoCEv2" : ""));
  EXPECT_EQ(x.frames_not_ours, stray_frame ? 1u : 0u);
  EXPECT_EQ(y.frames_not_ours, 0u);
  EXPECT_EQ(x.send_errors + y.send_errors, 0u);
  if (opt.faults.drop_rate > 0) {
    // Each side drops what the other sent: both resent, both saw reordering; the exact times and counts
    // above say that nothing was lost.
    for (const lab::SocketStats* s : {&x, &y}) {
      EXPECT_GT(s->injected_drops, 0u);
      EXPECT_GT(s->injected_reorders, 0u);
      EXPECT_GT(s->retransmissions, 0u);
      EXPECT_GT(s->rx_reordered, 0u);
    }
  }
}

TEST(DpdkTransport, TwoHostsOnARingPairGiveTheModelledTimes) {
  REQUIRE_EAL();
  run_two_hosts("labt1", {}, true);
}

// lab.yaml `wire: roce`: the same run in RoCEv2 frames (UDP 4791, BTH, ICRC), 1396 message bytes a packet.
TEST(DpdkTransport, RoceFramesGiveTheSameRun) {
  REQUIRE_EAL();
  run_two_hosts("labt4", {}, true, hd::WireMode::kRoceV2);
}

TEST(DpdkTransport, LossAndReorderingAreRecovered) {
  REQUIRE_EAL();
  lab::SocketFabricOptions opt;
  opt.faults = injected_faults();
  run_two_hosts("labt2", opt, false);
}

TEST(DpdkTransport, DatagramsLongerThanTheMtuAreRefused) {
  REQUIRE_EAL();
  TwoHosts hosts("labt3");
  const std::vector<hd::Endpoint> eps = plan(hosts.a->mac(), hosts.b->mac());
  // IP 20 + UDP 8 + datagram must fit the port's 1500-byte MTU.
  EXPECT_NO_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1472, hd::WireMode::kFabemu));
  EXPECT_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1473, hd::WireMode::kFabemu), std::invalid_argument);
  // RoCEv2: 12 bytes of BTH and 4 of ICRC more.
  EXPECT_NO_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1456, hd::WireMode::kRoceV2));
  EXPECT_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1457, hd::WireMode::kRoceV2), std::invalid_argument);
  EXPECT_THROW(hosts.a->open(eps, hosted(0, 4, 7), 1400, hd::WireMode::kFabemu), std::invalid_argument);
}

}  // namespace
