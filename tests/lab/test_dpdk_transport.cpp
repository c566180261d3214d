// The lab fabric over DPDK ports (host/lab/dpdk_transport.h): two "hosts" in one process, each a socket
// fabric over one end of a ring pair (rte_eth_from_rings), each walking the whole workload on its own
// thread. Both must report the packet model's times, send exactly the messages whose source they host
// (their local pairs staying inside the host) and count a frame addressed to a rank they do not host
// without taking it.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdio>

#include <string>
#include <vector>

#include "host/wire/address_plan.h"
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
  explicit TwoHosts(const std::string& name, hd::RingDevice device = {})
      : ring(name, 4096, SOCKET_ID_ANY, 1, device),
        a(lab::open_lab_data_port("net_ring_" + name + "_a", {})),
        b(lab::open_lab_data_port("net_ring_" + name + "_b", {})) {}
  hd::RingPair ring;  // outlives the ports
  std::unique_ptr<lab::LabDataPort> a, b;
};

// The stats of both hosts after a run, and what the ring pair's device did (if it had one).
struct TwoHostRun {
  lab::SocketStats a, b;
  uint64_t device_frames = 0, device_ce = 0;
};

void run_two_hosts(const std::string& name, lab::SocketFabricOptions opt, bool stray_frame, lab::LabWire wire = {},
                   hd::RingDevice device = {}, TwoHostRun* out = nullptr) {
  const hd::WireMode mode = wire.mode;
  ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const fabemu::emu::Topology topo(w.net);
  TwoHosts hosts(name, device);
  ASSERT_NE(hosts.a->mac(), hosts.b->mac());
  const std::vector<hd::Endpoint> eps = plan(hosts.a->mac(), hosts.b->mac());
  EXPECT_EQ(hd::format_ip(eps[5].ip), "198.18.0.6");
  EXPECT_EQ(eps[5].port, 47000);
  opt.model_mtu = kModelMtu;
  if (mode == hd::WireMode::kRoceV2) opt.payload = static_cast<uint32_t>(hd::max_payload_for_mtu(mode, 1500));
  const uint32_t max = lab::SocketFabric::max_datagram(opt);
  lab::SocketFabric a(topo, hosts.a->open(eps, hosted(0, 4, 8), max, wire), hosted(0, 4, 8), opt);
  lab::SocketFabric b(topo, hosts.b->open(eps, hosted(4, 8, 8), max, wire), hosted(4, 8, 8), opt);
  if (stray_frame) {
    // A valid fabemu frame at A's MAC for rank 5, which B hosts: sent by a transport on B's port that
    // (wrongly) places rank 5 behind A. A counts it and never hands it to its fabric.
    std::vector<hd::Endpoint> wrong = eps;
    wrong[5].mac = hosts.a->mac();
    auto stray = hosts.b->open(wrong, hosted(4, 5, 8), max, wire);
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
  const bool tos = wire.dscp != 0 || wire.ecn != hd::Ecn::kNotEct;
  EXPECT_EQ(x.transport, "DPDK net_ring_" + name + "_a " + hd::format_mac(hosts.a->mac()) +
                             (mode == hd::WireMode::kRoceV2 ? " RoCEv2" : "") +
                             (tos ? fmt::format(" DSCP {} ECN {}", wire.dscp, hd::to_string(wire.ecn)) : ""));
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
  // No device on the way rewrites the DSCP, and only the ring pair's device marks CE (on A -> B).
  EXPECT_EQ(x.frames_dscp_changed + y.frames_dscp_changed, 0u);
  EXPECT_EQ(x.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kCe)], 0u);
  if (device.ecn_bytes == 0) {
    EXPECT_EQ(y.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kCe)], 0u);
  }
  if (out != nullptr) *out = {x, y, hosts.ring.delayed_frames(), hosts.ring.ce_marked()};
}

uint64_t frames_in(const lab::SocketStats& s) {
  return s.frames_by_ecn[0] + s.frames_by_ecn[1] + s.frames_by_ecn[2] + s.frames_by_ecn[3];
}

TEST(DpdkTransport, TwoHostsOnARingPairGiveTheModelledTimes) {
  REQUIRE_EAL();
  run_two_hosts("labt1", {}, true);
}

// lab.yaml `wire: roce`: the same run in RoCEv2 frames (UDP 4791, BTH, ICRC), 1396 message bytes a packet.
TEST(DpdkTransport, RoceFramesGiveTheSameRun) {
  REQUIRE_EAL();
  run_two_hosts("labt4", {}, true, lab::LabWire{hd::WireMode::kRoceV2});
}

// lab.yaml `dscp: 26`, `ecn: ect0`: every frame either host received carries them; the run is the same.
TEST(DpdkTransport, EveryFrameCarriesTheRunsTrafficClass) {
  REQUIRE_EAL();
  TwoHostRun r, d;
  run_two_hosts("labt5", {}, false, lab::LabWire{hd::WireMode::kRoceV2, 26, hd::Ecn::kEct0}, {}, &r);
  for (const lab::SocketStats* s : {&r.a, &r.b}) {
    EXPECT_GT(frames_in(*s), 0u);
    EXPECT_EQ(s->frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kEct0)], frames_in(*s));
  }
  // The default TOS: every frame not-ECT.
  run_two_hosts("labt6", {}, false, {}, {}, &d);
  for (const lab::SocketStats* s : {&d.a, &d.b}) {
    EXPECT_GT(frames_in(*s), 0u);
    EXPECT_EQ(s->frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kNotEct)], frames_in(*s));
  }
}

// A switch that marks ECN-capable frames CE when its queue builds up: the ring pair's device on A -> B
// (1 GB/s, marking behind 6,000 bytes). B counts the CE frames the device marked; the run is the same.
TEST(DpdkTransport, FramesASwitchMarksAreCounted) {
  REQUIRE_EAL();
  hd::RingDevice device;
  device.bytes_per_sec = 1'000'000'000;
  device.ecn_bytes = 6000;
  TwoHostRun r;
  run_two_hosts("labt7", {}, false, lab::LabWire{hd::WireMode::kFabemu, 0, hd::Ecn::kEct1}, device, &r);
  const uint64_t ce = r.b.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kCe)];
  std::printf("device: %llu frames, %llu marked CE; B: %llu frames in, %llu CE, %llu ECT(1)\n",
              static_cast<unsigned long long>(r.device_frames), static_cast<unsigned long long>(r.device_ce),
              static_cast<unsigned long long>(frames_in(r.b)), static_cast<unsigned long long>(ce),
              static_cast<unsigned long long>(r.b.frames_by_ecn[1]));
  EXPECT_GT(ce, 0u);
  // B counted every frame the device marked, but for frames the device handed over after B stopped
  // reading (the last ACKs of A's final polls, if any; none in practice: 1,120 of 1,400 both ways).
  EXPECT_LE(frames_in(r.b), r.device_frames);
  EXPECT_LE(ce, r.device_ce);
  EXPECT_GE(ce + (r.device_frames - frames_in(r.b)), r.device_ce);
  EXPECT_EQ(r.b.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kEct1)] + ce, frames_in(r.b));
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
  EXPECT_NO_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1472, lab::LabWire{hd::WireMode::kFabemu}));
  EXPECT_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1473, lab::LabWire{hd::WireMode::kFabemu}), std::invalid_argument);
  // RoCEv2: 12 bytes of BTH and 4 of ICRC more.
  EXPECT_NO_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1456, lab::LabWire{hd::WireMode::kRoceV2}));
  EXPECT_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1457, lab::LabWire{hd::WireMode::kRoceV2}), std::invalid_argument);
  EXPECT_THROW(hosts.a->open(eps, hosted(0, 4, 7), 1400, lab::LabWire{hd::WireMode::kFabemu}), std::invalid_argument);
  // A DSCP wider than 6 bits, or frames sent already CE-marked.
  EXPECT_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1400, lab::LabWire{hd::WireMode::kFabemu, 64}), std::invalid_argument);
  EXPECT_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1400, lab::LabWire{hd::WireMode::kFabemu, 0, hd::Ecn::kCe}),
               std::invalid_argument);
  EXPECT_NO_THROW(hosts.a->open(eps, hosted(0, 4, 8), 1400, lab::LabWire{hd::WireMode::kFabemu, 63, hd::Ecn::kEct1}));
}

}  // namespace
