// The socket fabric on loopback UDP: the walker replays workloads as real datagrams between sockets of
// this process, and must report exactly the software packet model's times, every message reassembled
// once; also split over two fabric instances (two "hosts") on two threads, under injected loss and
// reordering, with a dead peer (stall timeout), and datagram decoding against every corrupted byte.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <netinet/in.h>

#include <boost/asio/ip/udp.hpp>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "host/config/astra_config.h"
#include "host/lab/datagram.h"
#include "host/lab/socket_fabric.h"
#include "host/lab/udp_transport.h"
#include "tests/dpdk/fabric_test_support.h"
#include "tests/lab/split_run_support.h"
#include "tests/emulator/walker_test_util.h"
#include "traces/generate.h"
#include "traces/trace_set.h"

namespace fs = std::filesystem;
namespace hd = fabemu::host::dpdk;
namespace lab = fabemu::lab;
using boost::asio::ip::udp;
using namespace fabemu::emu;
using namespace fabemu::emu::walker_test;

namespace {

using namespace fabemu::test;

std::vector<udp::endpoint> loopback(size_t n) {
  return std::vector<udp::endpoint>(n, udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
}

using SocketRun = fabemu::test::FabricRun<lab::SocketStats>;

SocketRun run_socket(const Workload& w, lab::SocketFabricOptions opt, const char* address = "127.0.0.1") {
  opt.model_mtu = kModelMtu;
  Topology topo(w.net);
  const size_t n = static_cast<size_t>(topo.npus());
  const std::vector<udp::endpoint> eps(n, udp::endpoint(boost::asio::ip::make_address(address), 0));
  lab::SocketFabric fabric(topo, eps, std::vector<bool>(n, true), opt);
  return fabemu::test::run_through(fabric, w, lab::format_socket_stats);
}

// All ranks local: every message between two ranks went on the wire once and was reassembled once.
void expect_all_local_exact(const SoftwareRun& sw, const SocketRun& s) {
  expect_same_times(sw.result, s.result);
  const lab::SocketStats& st = s.stats;
  const int32_t n = static_cast<int32_t>(sw.result.ranks.size());
  EXPECT_TRUE(s.drained);
  EXPECT_EQ(st.messages_sent, sw.from(0, n));
  EXPECT_EQ(st.messages_received, st.messages_sent);
  EXPECT_EQ(st.bytes_received, st.bytes_sent);
  EXPECT_EQ(st.messages_sent + st.local_messages, sw.result.messages);
  EXPECT_EQ(st.model_only_messages, 0u);
  EXPECT_EQ(st.deliveries, sw.result.messages);
  EXPECT_EQ(st.latency_ns.count(), st.messages_sent);
  EXPECT_EQ(st.not_ours, 0u);
  EXPECT_EQ(st.rx_invalid, 0u);
  EXPECT_LE(st.datagrams_rx, st.datagrams_tx);
  EXPECT_EQ(st.data_datagrams + st.retransmissions + st.acks + st.nacks, st.datagrams_tx) << "all feedback arrived";
}

// --- datagrams ---

hd::FabemuHeader data_header() {
  return hd::FabemuHeader{hd::PacketKind::kData, 0, 1, 2, 77, 1, 3, 3000, 1400, 123456789};
}

TEST(Datagram, RoundTripAndEveryCorruptedByteIsRejected) {
  const lab::DatagramRules rules{8, 1400, 2};
  std::vector<uint8_t> buf(2000);
  const size_t len = lab::encode_datagram(data_header(), 1400, {}, buf);
  ASSERT_EQ(len, 60u + 1400u);
  const std::span<const uint8_t> d(buf.data(), len);
  lab::DecodedDatagram out;
  ASSERT_EQ(lab::decode_datagram(d, rules, out), lab::DatagramVerdict::kOurs);
  EXPECT_EQ(out.hdr, data_header());
  EXPECT_EQ(out.payload_bytes, 1400u);
  // Every byte, header and payload, each with three corruptions: never ours.
  size_t rejected = 0;
  for (size_t i = 0; i < len; ++i) {
    for (const uint8_t x : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      std::vector<uint8_t> c(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len));
      c[i] ^= x;
      lab::DecodedDatagram o;
      const auto v = lab::decode_datagram(c, rules, o);
      EXPECT_NE(v, lab::DatagramVerdict::kOurs) << "byte " << i << " ^ " << int{x};
      rejected += v != lab::DatagramVerdict::kOurs;
      if (i >= 60) {
        EXPECT_EQ(v, lab::DatagramVerdict::kBadPayload);
      }
      if (i < 4) {
        EXPECT_EQ(v, lab::DatagramVerdict::kBadMagic);
      }
    }
  }
  EXPECT_EQ(rejected, len * 3);
  // The same for an ACK (header only).
  const hd::FabemuHeader ack{hd::PacketKind::kAck, 0, 5, 2, 9, 4, 4, 0, 4, 1};
  const size_t alen = lab::encode_datagram(ack, 0, {}, buf);
  ASSERT_EQ(alen, 60u);
  ASSERT_EQ(lab::decode_datagram({buf.data(), alen}, rules, out), lab::DatagramVerdict::kOurs);
  EXPECT_EQ(out.hdr, ack);
  for (size_t i = 0; i < alen; ++i) {
    std::vector<uint8_t> c(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(alen));
    c[i] ^= 0x10;
    EXPECT_NE(lab::decode_datagram(c, rules, out), lab::DatagramVerdict::kOurs) << "ACK byte " << i;
  }
  // Truncated by one byte, and one byte too long.
  EXPECT_EQ(lab::decode_datagram(d.first(59), rules, out), lab::DatagramVerdict::kTruncated);
  EXPECT_EQ(lab::decode_datagram(d.first(len - 1), rules, out), lab::DatagramVerdict::kBadFields);
  std::vector<uint8_t> longer(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len));
  longer.push_back(0);
  EXPECT_EQ(lab::decode_datagram(longer, rules, out), lab::DatagramVerdict::kBadFields);
}

TEST(Datagram, NotLocalAndImpossibleLayoutsAreRejected) {
  std::vector<uint8_t> buf(2000);
  lab::DecodedDatagram out;
  size_t len = lab::encode_datagram(data_header(), 1400, {}, buf);
  // Valid, but for rank 2: not ours on rank 3's socket.
  EXPECT_EQ(lab::decode_datagram({buf.data(), len}, lab::DatagramRules{8, 1400, 3}, out), lab::DatagramVerdict::kNotLocal);
  // A sender with another payload size (every process of a run must agree).
  EXPECT_EQ(lab::decode_datagram({buf.data(), len}, lab::DatagramRules{8, 1024, 2}, out),
            lab::DatagramVerdict::kBadFields);
  // Ranks beyond the workload, src == dst, offset not seq * payload: valid CRC, still refused.
  const lab::DatagramRules rules{8, 1400, 2};
  for (auto mutate : std::vector<void (*)(hd::FabemuHeader&)>{
           [](hd::FabemuHeader& h) { h.src_rank = 8; }, [](hd::FabemuHeader& h) { h.src_rank = 2; },
           [](hd::FabemuHeader& h) { h.offset = 1399; }, [](hd::FabemuHeader& h) { h.count = 4; },
           [](hd::FabemuHeader& h) { h.flags = 2; }, [](hd::FabemuHeader& h) { h.kind = hd::PacketKind{4}; }}) {
    hd::FabemuHeader h = data_header();
    mutate(h);
    len = lab::encode_datagram(h, 1400, {}, buf);
    EXPECT_NE(lab::decode_datagram({buf.data(), len}, rules, out), lab::DatagramVerdict::kOurs);
  }
  // A NACK: its list must be increasing and within [cumulative, covered).
  const hd::FabemuHeader nack{hd::PacketKind::kNack, 0, 5, 2, 9, 3, 20, 0, 12, 1};
  const std::vector<uint32_t> good{3, 5, 11}, unsorted{5, 3}, beyond{3, 12};
  len = lab::encode_datagram(nack, 0, good, buf);
  ASSERT_EQ(lab::decode_datagram({buf.data(), len}, rules, out), lab::DatagramVerdict::kOurs);
  ASSERT_EQ(out.missing_count(), 3u);
  EXPECT_EQ(out.missing(2), 11u);
  len = lab::encode_datagram(nack, 0, unsorted, buf);
  EXPECT_EQ(lab::decode_datagram({buf.data(), len}, rules, out), lab::DatagramVerdict::kBadPayload);
  len = lab::encode_datagram(nack, 0, beyond, buf);
  EXPECT_EQ(lab::decode_datagram({buf.data(), len}, rules, out), lab::DatagramVerdict::kBadPayload);
}

// --- the fabric ---

// The 12 shared microbenchmarks (all-reduce, all-gather, reduce-scatter, all-to-all on 4, 8 and 16 NPUs,
// 1 MiB) on the matching ASTRA-sim Ring network, every rank local on loopback: the packet model's times.
TEST(SocketFabric, SharedMicrobenchmarksOnLoopback) {
  if (!fabemu::test::shared_traces_dir()) GTEST_SKIP() << "../shared/traces is absent: shared-trace test skipped";
  int runs = 0;
  for_each_shared_microbenchmark([&](const Workload& w, int) {
    const SoftwareRun sw = run_counting_software(w);
    const SocketRun s = run_socket(w, lab::SocketFabricOptions{});
    expect_all_local_exact(sw, s);
    EXPECT_EQ(s.stats.bytes_sent, sw.result.message_bytes);
    ++runs;
  });
  EXPECT_EQ(runs, 12);
}

TEST(SocketFabric, OneDatagramPerCallGivesTheSameResult) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const SoftwareRun sw = run_counting_software(w);
  lab::SocketFabricOptions opt;
  opt.batch = 1;  // Boost.Asio send_to / receive_from
  const SocketRun s = run_socket(w, opt);
  expect_all_local_exact(sw, s);
  // 8 ranks x 2 x 7 steps of 1/8 MiB in 4 chunks each: 14 MiB.
  EXPECT_EQ(s.stats.bytes_sent, uint64_t{14} << 20);
}

// --wire-dscp / --wire-ecn and lab.yaml's dscp / ecn over kernel sockets: every datagram leaves with that
// traffic class (IP_TOS) and each one received is counted by the class it arrived with (IP_RECVTOS), in
// both receive paths (recvmmsg, recvmsg one at a time); loopback marks nothing. The default class is
// neither set nor counted.
TEST(SocketFabric, EveryDatagramCarriesTheTrafficClass) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const SoftwareRun sw = run_counting_software(w);
  for (const uint32_t batch : {32u, 1u}) {
    for (const auto& [dscp, ecn] : {std::pair{uint8_t{46}, hd::Ecn::kEct1}, std::pair{uint8_t{10}, hd::Ecn::kEct0},
                                    std::pair{uint8_t{0}, hd::Ecn::kNotEct}}) {
      SCOPED_TRACE(fmt::format("batch {}, DSCP {}, {}", batch, dscp, hd::to_string(ecn)));
      lab::SocketFabricOptions opt;
      opt.batch = batch;
      opt.dscp = dscp;
      opt.ecn = ecn;
      const SocketRun s = run_socket(w, opt);
      expect_all_local_exact(sw, s);
      const lab::SocketStats& st = s.stats;
      EXPECT_GT(st.datagrams_rx, 0u);
      // The default class is not asked for on receive (no control message per datagram): nothing counted.
      const bool counted = dscp != 0 || ecn != hd::Ecn::kNotEct;
      EXPECT_EQ(st.frames_by_ecn[static_cast<uint8_t>(ecn)], counted ? st.datagrams_rx : 0u);
      EXPECT_EQ(st.frames_by_ecn[0] + st.frames_by_ecn[1] + st.frames_by_ecn[2] + st.frames_by_ecn[3],
                counted ? st.datagrams_rx : 0u);
      EXPECT_EQ(st.frames_dscp_changed, 0u);
      EXPECT_EQ(st.transport, dscp == 0 ? std::string("UDP") : fmt::format("UDP DSCP {} ECN {}", dscp, hd::to_string(ecn)));
    }
  }
}

// What a switch on the way did, as the UDP transport sees it: datagrams sent to its socket from a plain
// socket whose TOS is what a switch would have left (CE on an ECN-capable datagram, another DSCP), in both
// receive paths. Loopback marks nothing itself, and this kernel has no marking qdisc (fq_codel, red, pie).
struct CountingSink final : lab::DatagramSink {
  void datagram(uint32_t, std::span<const uint8_t>, bool) override { ++n; }
  int n = 0;
};

TEST(UdpTransport, CountsEachDatagramByTheClassItArrivedWith) {
  using Sink = CountingSink;
  for (const uint32_t batch : {32u, 1u}) {
    SCOPED_TRACE(fmt::format("batch {}", batch));
    lab::UdpTransport t(loopback(1), {true}, batch, 1 << 20, 1500, 26, hd::Ecn::kEct0);
    EXPECT_EQ(t.describe(), "UDP DSCP 26 ECN ect0");
    boost::asio::io_context io;
    udp::socket tx(io, udp::v4());
    const std::array<uint8_t, 16> payload{};
    // (TOS, datagrams): 3 marked CE on the way (DSCP 26 kept), 2 as sent, 1 re-marked DSCP 0 and its ECN
    // cleared, 4 CE with DSCP 10.
    const std::pair<int, int> sends[] = {{0x6b, 3}, {0x6a, 2}, {0x00, 1}, {0x2b, 4}};
    for (const auto& [tos, count] : sends) {
      ASSERT_EQ(setsockopt(tx.native_handle(), IPPROTO_IP, IP_TOS, &tos, sizeof tos), 0);
      for (int i = 0; i < count; ++i) tx.send_to(boost::asio::buffer(payload), t.endpoints()[0]);
    }
    Sink sink;
    for (int round = 0; round < 1000 && sink.n < 10; ++round) {
      t.receive(sink);
      if (sink.n < 10) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(sink.n, 10);
    const lab::TransportStats st = t.stats();
    EXPECT_EQ(st.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kCe)], 7u);
    EXPECT_EQ(st.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kEct0)], 2u);
    EXPECT_EQ(st.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kNotEct)], 1u);
    EXPECT_EQ(st.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kEct1)], 0u);
    EXPECT_EQ(st.frames_dscp_changed, 5u);  // DSCP 0 once, DSCP 10 four times
  }
  // A transport of the default class counts nothing, whatever arrives.
  lab::UdpTransport plain(loopback(1), {true}, 32, 1 << 20, 1500);
  EXPECT_EQ(plain.describe(), "UDP");
  boost::asio::io_context io;
  udp::socket tx(io, udp::v4());
  const int ce = 0x03;
  ASSERT_EQ(setsockopt(tx.native_handle(), IPPROTO_IP, IP_TOS, &ce, sizeof ce), 0);
  tx.send_to(boost::asio::buffer(std::array<uint8_t, 16>{}), plain.endpoints()[0]);
  Sink sink;
  for (int round = 0; round < 1000 && sink.n < 1; ++round) {
    plain.receive(sink);
    if (sink.n < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(sink.n, 1);
  EXPECT_EQ(plain.stats().frames_by_ecn[3], 0u);
  EXPECT_THROW(lab::UdpTransport(loopback(1), {true}, 32, 1 << 20, 1500, 64), std::invalid_argument);
  EXPECT_THROW(lab::UdpTransport(loopback(1), {true}, 32, 1 << 20, 1500, 0, hd::Ecn::kCe), std::invalid_argument);
}

// The same over IPv6 (IPV6_TCLASS, IPV6_RECVTCLASS), where the host has ::1.
TEST(SocketFabric, TrafficClassOverIpv6) {
  {
    boost::asio::io_context io;
    udp::socket probe(io);
    boost::system::error_code ec;
    probe.open(udp::v6(), ec);
    if (!ec) probe.bind(udp::endpoint(boost::asio::ip::make_address("::1"), 0), ec);
    if (ec) GTEST_SKIP() << "no IPv6 loopback here: " << ec.message();
  }
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const SoftwareRun sw = run_counting_software(w);
  lab::SocketFabricOptions opt;
  opt.dscp = 26;
  opt.ecn = hd::Ecn::kEct0;
  const SocketRun s = run_socket(w, opt, "::1");
  expect_all_local_exact(sw, s);
  EXPECT_GT(s.stats.datagrams_rx, 0u);
  EXPECT_EQ(s.stats.frames_by_ecn[static_cast<uint8_t>(hd::Ecn::kEct0)], s.stats.datagrams_rx);
  EXPECT_EQ(s.stats.frames_dscp_changed, 0u);
}

TEST(SocketFabric, LossAndReorderingStillGiveTheModelledTimes) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const SoftwareRun sw = run_counting_software(w);
  lab::SocketFabricOptions opt;
  opt.faults = injected_faults();
  const SocketRun s = run_socket(w, opt);
  expect_same_times(sw.result, s.result);
  EXPECT_TRUE(s.drained);
  EXPECT_EQ(s.stats.messages_received, s.stats.messages_sent);
  EXPECT_EQ(s.stats.bytes_received, uint64_t{14} << 20);
  expect_faults_recovered(s.stats);
}

// Two "hosts" in one process: ranks 0-3 on one fabric, 4-7 on another, each with its own walker over the
// whole workload on its own thread. Both report the model's times; each side sends exactly the messages
// whose source it hosts and reassembles those whose destination it hosts.
TEST(SocketFabric, SplitOverTwoInstancesOnTwoThreads) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const Topology topo(w.net);
  lab::SocketFabricOptions opt;
  opt.model_mtu = kModelMtu;
  lab::SocketFabric a(topo, loopback(8), hosted(0, 4, 8), opt);
  lab::SocketFabric b(topo, loopback(8), hosted(4, 8, 8), opt);
  for (uint32_t r = 0; r < 8; ++r) {
    if (r < 4) {
      b.set_remote_endpoint(r, a.endpoints()[r]);
    } else {
      a.set_remote_endpoint(r, b.endpoints()[r]);
    }
  }
  run_split_and_check(a, b, w);
}

// A peer that never answers: once nothing has arrived for stall_timeout (not before, not much later) the
// run stops there, as on a stop request: the walk returns with the ranks that could not finish still
// running (none of them finished: every rank of the ring waits on the dead half, in its collective), stalled() names the
// message's ranks, the text and JSON sections carry the reason, and drain() waits for nothing.
TEST(SocketFabric, DeadPeerStopsTheRunAfterTheStallTimeout) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir, 64 * 1024);
  const Topology topo(w.net);
  boost::asio::io_context io;
  udp::socket dead(io, udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));  // never read
  std::vector<udp::endpoint> eps = loopback(8);
  std::vector<bool> local(8, false);
  for (size_t r = 0; r < 8; ++r) {
    if (r < 4) {
      local[r] = true;
    } else {
      eps[r] = dead.local_endpoint();
    }
  }
  lab::SocketFabricOptions opt;
  opt.model_mtu = kModelMtu;
  opt.stall_timeout = Duration::from_ms(300);
  lab::SocketFabric f(topo, eps, local, opt);
  fabemu::traces::ProcessGroups groups(8);
  Walker walker(f, w.net, w.files, groups, w.options());
  const auto t0 = std::chrono::steady_clock::now();
  const fabemu::emu::RunResult result = walker.run();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(f.stalled());
  EXPECT_FALSE(f.interrupted());
  const std::string what = f.stats().stall;
  std::printf("after %lld ms: %s\n", static_cast<long long>(ms), what.c_str());
  EXPECT_TRUE(what.find("rank 3 -> 4") != std::string::npos || what.find("rank 7 -> 0") != std::string::npos) << what;
  EXPECT_NE(what.find("but for 300 ms nothing arrived for it: it waits for "), std::string::npos) << what;
  EXPECT_TRUE(what.find("its ACKs from rank 4 at") != std::string::npos ||
              what.find("its datagrams from rank 7 at") != std::string::npos) << what;
  EXPECT_NE(what.find(fmt::format("127.0.0.1:{}", dead.local_endpoint().port())), std::string::npos) << what;
  EXPECT_GE(ms, 300);
  EXPECT_LT(ms, 3000);
  // The walk stopped short: every rank still waits in the all-reduce.
  ASSERT_EQ(result.ranks.size(), 8u);
  // Every rank and the collective they are in (its 8 members issued it).
  ASSERT_EQ(result.stuck.size(), 9u);
  for (size_t r = 0; r < 8; ++r) {
    EXPECT_EQ(result.stuck[r].rfind(fmt::format("rank {} (", r), 0), 0u) << result.stuck[r];
    EXPECT_NE(result.stuck[r].find("1 communication node(s) in flight"), std::string::npos) << result.stuck[r];
  }
  EXPECT_NE(result.stuck[8].find("collective #0 ALL_REDUCE of 65536 bytes"), std::string::npos) << result.stuck[8];
  EXPECT_NE(result.stuck[8].find("8 of 8 members issued it"), std::string::npos) << result.stuck[8];
  const auto d0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(f.drain());
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - d0).count(), 100);
  const std::string text = lab::format_socket_stats(f.stats());
  EXPECT_NE(text.find("  stalled             the run stopped: " + what), std::string::npos) << text;
  const std::string json = lab::socket_stats_to_json(f.stats());
  EXPECT_NE(json.find("\"stall\": \"message "), std::string::npos) << json;
}

// A run that does not stall says so: `stall` is null and absent from the text.
TEST(SocketFabric, AHealthyRunHasNoStall) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir, 64 * 1024);
  lab::SocketFabricOptions opt;
  const SocketRun s = run_socket(w, opt);
  EXPECT_EQ(s.stats.stall, "");
  EXPECT_EQ(lab::format_socket_stats(s.stats).find("stalled"), std::string::npos);
  EXPECT_NE(lab::socket_stats_to_json(s.stats).find("\"stall\": null,"), std::string::npos);
}

// D > 0: the same times, frames paced to their modelled departures, and the run takes the dilated time.
TEST(SocketFabric, DilatedRunKeepsModelledTimesAndTakesTheWallTime) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir, 256 * 1024);
  const SoftwareRun sw = run_counting_software(w);
  lab::SocketFabricOptions opt;
  opt.dilation = 200;
  const auto t0 = std::chrono::steady_clock::now();
  const SocketRun s = run_socket(w, opt);
  const auto wall_ps = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()) * 1000;
  expect_all_local_exact(sw, s);
  EXPECT_GE(wall_ps, sw.result.total.ps() * 200);
  EXPECT_GE(s.stats.wall.ps(), sw.result.total.ps() * 200);
  EXPECT_EQ(s.stats.jitter_ns.count(), s.stats.data_datagrams);
  EXPECT_EQ(s.stats.late + s.stats.on_time, s.stats.messages_received);
}

// A rank that sends on several links at once must not serialize them (one sender per first link, as
// in the DPDK fabric; with one sender per rank, datagrams due on one link waited behind those held for
// their departure on another). A direct all-to-all on FullyConnected(4) at 250 Mb/s, dilation 4: each
// rank sends 1 MiB (33.6 ms emulated) on each of its three links at once. With one sender per rank
// every message arrived late, the worst by 120 ms (emulated); now the worst is a few microseconds. The
// bound is 10 ms, with up to three attempts against stalls of this shared machine.
TEST(SocketFabric, ARankSendsOnItsLinksInParallel) {
  fabemu::test::ScratchDir dir;
  const Workload w = parallel_links_all_to_all(dir, 2);
  const SoftwareRun sw = run_counting_software(w);
  lab::SocketFabricOptions opt;
  opt.dilation = 4;
  for (int attempt = 1;; ++attempt) {
    const SocketRun s = run_socket(w, opt);
    expect_all_local_exact(sw, s);
    EXPECT_EQ(s.stats.messages_sent, 24u);
    EXPECT_EQ(s.stats.late + s.stats.on_time, 24u);
    const uint64_t worst_ns = s.stats.late > 0 ? s.stats.lateness_ns.max() : 0;
    std::printf("attempt %d: %llu of 24 messages late, worst by %llu ns (emulated)\n", attempt,
                static_cast<unsigned long long>(s.stats.late), static_cast<unsigned long long>(worst_ns));
    if (worst_ns >= 10'000'000 && attempt < 3) continue;
    EXPECT_LT(worst_ns, 10'000'000u) << lab::format_socket_stats(s.stats);
    break;
  }
}

// LiveMetrics follow the run: after drain() they hold the final counters, the model's per-link bytes,
// and running is false again.
TEST(SocketFabric, LiveMetricsFollowTheRun) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir, 256 * 1024);
  const Topology topo(w.net);
  lab::LiveMetrics live(topo.links().size());
  lab::SocketFabricOptions opt;
  opt.model_mtu = kModelMtu;
  opt.live = &live;
  lab::SocketFabric f(topo, loopback(8), std::vector<bool>(8, true), opt);
  fabemu::traces::ProcessGroups groups(8);
  Walker walker(f, w.net, w.files, groups, w.options());
  const RunResult r = walker.run();
  ASSERT_TRUE(r.stuck.empty());
  ASSERT_TRUE(f.drain());
  const lab::SocketStats& s = f.stats();
  EXPECT_FALSE(live.running.load());
  EXPECT_EQ(live.messages_sent.load(), s.messages_sent);
  EXPECT_EQ(live.bytes_sent.load(), uint64_t{14} << 18);
  EXPECT_EQ(live.messages_received.load(), s.messages_received);
  EXPECT_EQ(live.bytes_received.load(), s.bytes_received);
  EXPECT_EQ(live.frames_sent.load(), s.datagrams_tx);
  EXPECT_EQ(live.frames_received.load(), s.datagrams_rx);
  EXPECT_EQ(live.retransmissions.load(), s.retransmissions);
  EXPECT_GT(live.emulated_ps.load(), 0);
  EXPECT_LE(live.emulated_ps.load(), static_cast<int64_t>(r.total.ps()));
  uint64_t link_total = 0;
  for (size_t l = 0; l < live.link_bytes.size(); ++l) {
    EXPECT_EQ(live.link_bytes[l].load(), f.model().link_stats(static_cast<LinkId>(l)).bytes) << "link " << l;
    link_total += live.link_bytes[l].load();
  }
  EXPECT_EQ(link_total, uint64_t{14} << 18);  // one hop per message on a ring all-reduce
}

// stop_requested ends the run early: no error, interrupted() says so.
TEST(SocketFabric, StopRequestedEndsTheRun) {
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const Topology topo(w.net);
  lab::SocketFabricOptions opt;
  opt.model_mtu = kModelMtu;
  int polls = 0;
  opt.stop_requested = [&polls] { return ++polls > 50; };
  lab::SocketFabric f(topo, loopback(8), std::vector<bool>(8, true), opt);
  fabemu::traces::ProcessGroups groups(8);
  Walker walker(f, w.net, w.files, groups, w.options());
  walker.run();
  EXPECT_TRUE(f.interrupted());
  EXPECT_LT(f.stats().deliveries, 448u);
}

TEST(SocketFabric, BadOptionsAreRejected) {
  const Topology topo(network({dim(DimTopology::kRing, 4)}));
  EXPECT_THROW(lab::SocketFabric(topo, loopback(3), std::vector<bool>(4, true), {}), std::invalid_argument);
  EXPECT_THROW(lab::SocketFabric(topo, loopback(4), std::vector<bool>(3, true), {}), std::invalid_argument);
  lab::SocketFabricOptions o;
  o.payload = 0;
  EXPECT_THROW(lab::SocketFabric(topo, loopback(4), std::vector<bool>(4, true), o), std::invalid_argument);
  o = {};
  o.window = 1000;
  EXPECT_THROW(lab::SocketFabric(topo, loopback(4), std::vector<bool>(4, true), o), std::invalid_argument);
  o = {};
  o.dilation = -1;
  EXPECT_THROW(lab::SocketFabric(topo, loopback(4), std::vector<bool>(4, true), o), std::invalid_argument);
  o = {};
  o.dscp = 64;  // 6 bits
  EXPECT_THROW(lab::SocketFabric(topo, loopback(4), std::vector<bool>(4, true), o), std::invalid_argument);
  o = {};
  o.ecn = hd::Ecn::kCe;  // a switch's mark, never a sender's
  EXPECT_THROW(lab::SocketFabric(topo, loopback(4), std::vector<bool>(4, true), o), std::invalid_argument);
  // A port already taken.
  lab::SocketFabric first(topo, loopback(4), std::vector<bool>(4, true), {});
  std::vector<udp::endpoint> eps = loopback(4);
  eps[2] = first.endpoints()[1];
  EXPECT_THROW(lab::SocketFabric(topo, eps, std::vector<bool>(4, true), {}), boost::system::system_error);
  EXPECT_THROW(first.set_remote_endpoint(1, eps[0]), std::logic_error);
}

}  // namespace
