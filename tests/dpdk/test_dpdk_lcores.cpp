// The DPDK fabric with its receive side on an lcore of its own (README.md, "Receive lcore"): EAL with
// -l 0-1, a ring pair; the RX worker on lcore 1 owns port B (decode, fault filter, reassembly, ACK/NACK)
// and passes completions to the main lcore over an SPSC ring. The reports must be exactly the software
// packet model's, every byte reassembled once, with and without injected loss and reordering. Its own
// binary: EAL starts once per process, here with two lcores.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

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

const bool g_lcores = fabemu::test::request_eal_lcores("0-1");

// The receive side ran on lcore 1 and received every frame of port B there; the arrival clock is the
// TSC (a ring pair has no RX timestamps).
void expect_on_lcore_one(const DpdkRun& d) {
  const fd::DpdkStats& s = d.stats;
  EXPECT_EQ(s.main_lcore, 0u);
  EXPECT_EQ(s.rx_lcore, 1);
  EXPECT_GT(s.rx_lcore_polls, 0u);
  // Port B carries the data frames (first transmissions and retransmissions); port A the ACKs/NACKs.
  EXPECT_EQ(s.rx_lcore_frames, s.data_frames + s.retransmissions);
  ASSERT_EQ(s.rx_clocks.size(), 2u);
  EXPECT_EQ(s.rx_clocks[0].clock, "tsc");
  EXPECT_EQ(s.rx_clocks[0].frames, s.rx_lcore_frames);
  EXPECT_EQ(s.rx_clocks[0].hw_timestamped, 0u);
  EXPECT_EQ(s.rx_clocks[1].frames, s.acks + s.nacks);
  EXPECT_EQ(s.nic_arrivals, 0u);
}

// The generated all-reduce through a DpdkFabric with `opt` on the ring pair `ring`: exactly the software
// model's times, the receive side on lcore 1.
DpdkRun all_reduce_on_lcore_one(const char* ring, const fd::DpdkFabricOptions& opt) {
  const GeneratedAllReduce ar;
  auto ports = fd::DpdkPorts::ring(ring, port_config());
  DpdkRun d = run_dpdk(ar.w, ports, opt);
  expect_exact(ar.sw, d);
  expect_on_lcore_one(d);
  return d;
}

TEST(RxLcore, GeneratedAllReduceOnLcoreOneMatchesTheSoftwareModel) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  ASSERT_GE(rte_lcore_count(), 2u) << "EAL was started without lcore 1";
  const GeneratedAllReduce ar;
  auto ports = fd::DpdkPorts::ring("lc1", port_config());
  const DpdkRun d = run_dpdk(ar.w, ports, fd::DpdkFabricOptions{});
  expect_exact(ar.sw, d);
  expect_on_lcore_one(d);
  // No loss: a retransmission can only be spurious (a timeout while the other lcore was descheduled on a
  // loaded machine), and then its copy is detected as such.
  EXPECT_EQ(d.stats.rx_duplicates + d.stats.rx_stale, d.stats.retransmissions);
  EXPECT_EQ(d.stats.message_bytes, uint64_t{14} << 20);
  // The same run with the receive side on the main lcore: the same report.
  fd::DpdkFabricOptions off;
  off.rx_lcore = fd::DpdkFabricOptions::kRxLcoreOff;
  const DpdkRun one = run_dpdk(ar.w, ports, off);
  expect_exact(ar.sw, one);
  EXPECT_EQ(one.stats.rx_lcore, -1);
  EXPECT_EQ(one.stats.rx_lcore_frames, 0u);
  EXPECT_EQ(one.stats.data_frames, d.stats.data_frames);
  EXPECT_EQ(one.stats.message_bytes, d.stats.message_bytes);
  EXPECT_EQ(one.stats.rx_duplicates + one.stats.rx_stale, one.stats.retransmissions);
}

// The 12 shared microbenchmarks with the receive side on lcore 1: the packet model's times, every
// message once, every byte reassembled once.
TEST(RxLcore, SharedMicrobenchmarksOnRingPair) {
  REQUIRE_EAL();
  if (!shared_traces_dir()) GTEST_SKIP() << "../shared/traces is absent";
  auto ring = fd::DpdkPorts::ring("lcmb", port_config());
  int runs = 0;
  for_each_shared_microbenchmark([&](const Workload& w, int) {
    const RunResult sw = run_software(w);
    const DpdkRun d = run_dpdk(w, ring, fd::DpdkFabricOptions{});
    expect_exact(sw, d);
    expect_on_lcore_one(d);
    EXPECT_EQ(d.stats.rx_duplicates + d.stats.rx_stale, d.stats.retransmissions);
    EXPECT_EQ(d.stats.message_bytes, sw.message_bytes);
    ++runs;
  });
  EXPECT_EQ(runs, 12);
}

// Loss, duplication and reordering injected on the receive lcore: still exactly the model's times, every
// loss retransmitted.
TEST(RxLcore, LossAndReorderingOnTheReceiveLcore) {
  REQUIRE_EAL();
  fd::DpdkFabricOptions opt;
  opt.faults = injected_faults();
  const DpdkRun d = all_reduce_on_lcore_one("lc2", opt);
  expect_faults_recovered(d.stats);
  EXPECT_GT(d.stats.nack_retransmissions, 0u);  // the receive lcore's NACK check runs
}

// The receive lcore times arrivals by a NIC's clock (here simulated: PortConfig::simulated_nic_clock, as
// DpdkFabric.ArrivalsTimedByASimulatedNicClock inline), with loss and reordering: its clock samples and
// fit run on lcore 1, every message's arrival is the NIC's, and the times are the model's.
TEST(RxLcore, ArrivalsTimedByASimulatedNicClockOnTheReceiveLcore) {
  REQUIRE_EAL();
  const GeneratedAllReduce ar;
  fd::PortConfig cfg = port_config();
  cfg.simulated_nic_clock = {3, 1, 12345};
  auto ports = fd::DpdkPorts::ring("lcnic", cfg);
  fd::DpdkFabricOptions opt;
  opt.faults = injected_faults();
  const DpdkRun d = run_dpdk(ar.w, ports, opt);
  expect_exact(ar.sw, d);
  expect_faults_recovered(d.stats);
  EXPECT_EQ(d.stats.rx_lcore, 1);
  ASSERT_EQ(d.stats.rx_clocks.size(), 2u);
  const fd::DpdkStats::PortClock& b = d.stats.rx_clocks[0];
  EXPECT_EQ(b.clock, "nic");
  EXPECT_EQ(b.frames, d.stats.rx_lcore_frames);
  EXPECT_EQ(b.hw_timestamped, b.frames);
  EXPECT_EQ(d.stats.nic_arrivals, d.stats.messages);
  EXPECT_NEAR(b.fit_tsc_per_nic_tick, 1.0 / 3.0, 1e-4 / 3.0);  // 100 ppm
}

// Every data frame dropped on the receive lcore: no ACK comes back, and the run stops after the stall
// timeout (as inline: DpdkFabric.EveryFrameDroppedStopsTheRunAfterTheStallTimeout), the receive lcore
// joined and its counters in the stats.
TEST(RxLcore, EveryFrameDroppedStopsTheRunAfterTheStallTimeout) {
  REQUIRE_EAL();
  ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  auto ports = fd::DpdkPorts::ring("lcstall", port_config());
  fd::DpdkFabricOptions opt;
  opt.stall_timeout = fabemu::emu::Duration::from_ms(300);
  opt.faults.drop_rate = 1.0;
  const DpdkRun d = run_dpdk(w, ports, opt);
  EXPECT_EQ(d.stats.rx_lcore, 1);
  EXPECT_NE(d.stats.stall.find("for 300 ms (--drop-rate 1: the fault injection drops all of"), std::string::npos)
      << d.stats.stall;
  EXPECT_FALSE(d.drained);
  EXPECT_FALSE(d.result.stuck.empty());
  EXPECT_EQ(d.stats.messages_completed, 0u);
  EXPECT_GT(d.stats.timeout_retransmissions, 0u);
  EXPECT_EQ(d.stats.injected_drops, d.stats.frames_rx);
  EXPECT_GT(d.stats.injected_drops, 0u);
}

// Dilated: arrivals the receive lcore timed give the per-collective measurement.
TEST(RxLcore, DilatedRunMeasuresTheCollective) {
  REQUIRE_EAL();
  fd::DpdkFabricOptions opt;
  opt.dilation = 500;
  const DpdkRun d = all_reduce_on_lcore_one("lc3", opt);
  EXPECT_EQ(d.stats.late + d.stats.on_time, d.stats.messages);
  ASSERT_EQ(d.stats.collectives.size(), 1u);
  EXPECT_GT(d.stats.collectives[0].measured.ps(), 0u);
  EXPECT_EQ(d.stats.collectives[0].messages, d.stats.messages);
}

// --pcap with the receive side on lcore 1: each lcore writes its own frames, merged at the end into one
// capture in time order: every frame sent, data frames from the main lcore, ACKs from lcore 1.
TEST(RxLcore, CaptureOfBothLcoresIsMergedInTimeOrder) {
  REQUIRE_EAL();
  TempDir tmp;
  fd::DpdkFabricOptions opt;
  opt.pcap = (tmp.path / "both.pcap").string();
  const DpdkRun d = all_reduce_on_lcore_one("lc5", opt);
  expect_capture_of(opt.pcap, fd::WireMode::kFabemu, d.stats);
  EXPECT_FALSE(std::filesystem::exists(opt.pcap + ".rx-lcore"));
  EXPECT_FALSE(std::filesystem::exists(opt.pcap + ".merging"));
}

// No allocation per message in steady state with the receive side on lcore 1 too (its Receivers, feedback
// and completion ring). Its ACKs come back while the main lcore runs on, so the second of the two equal
// waves may hold a few more messages in flight than the first did, and a sender then makes one more
// message slot (5 allocations, once: its arrays). Measured: 5 in most runs, up to 20 (14 runs, 8 of them
// with both cores busy). How many more a loaded machine holds in flight has no firm bound (the receive
// lcore may be descheduled between a completion and its ACK), so the bound is a quarter of the wave: 150.
// An allocation per message or frame would be 600 or more (1,131 before the pooled records).
TEST(RxLcore, NoAllocationPerMessageInSteadyState) {
  REQUIRE_EAL();
  ASSERT_TRUE(g_lcores);
  if (!counting_allocations()) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  auto ports = fd::DpdkPorts::ring("lcnoalloc", port_config());
  expect_second_wave_allocates_nothing(ports, fd::DpdkFabricOptions{}, 150);
}

TEST(RxLcore, ChoiceOfTheLcore) {
  REQUIRE_EAL();
  auto ports = fd::DpdkPorts::ring("lc4", port_config());
  const auto make = [&](int lcore, std::string pcap = {}) {
    fd::DpdkFabricOptions o;
    o.rx_lcore = lcore;
    o.pcap = std::move(pcap);
    return ring4_fabric(ports, o);
  };
  EXPECT_EQ(make(fd::DpdkFabricOptions::kRxLcoreAuto)->rx_lcore(), 1);
  EXPECT_EQ(make(1)->rx_lcore(), 1);
  EXPECT_EQ(make(fd::DpdkFabricOptions::kRxLcoreOff)->rx_lcore(), -1);
  EXPECT_THROW(make(0), std::invalid_argument);   // the main lcore
  EXPECT_THROW(make(7), std::invalid_argument);   // not enabled
  EXPECT_THROW(make(-5), std::invalid_argument);
  TempDir tmp;
  const std::string pcap = (tmp.path / "x.pcap").string();
  EXPECT_EQ(make(fd::DpdkFabricOptions::kRxLcoreAuto, pcap)->rx_lcore(), 1);  // each lcore captures its own frames
  // One device looping frames back: no port of its own for the receive side.
  {
    auto loop = fd::DpdkPorts::devargs("net_null_lc4", "", port_config());
    fd::DpdkFabricOptions o;
    o.rx_lcore = 1;
    EXPECT_THROW(ring4_fabric(loop, o), std::invalid_argument);
  }
}

// The data frames' pool (Port::Recycle): on a ring pair whose receive side runs on lcore 1, that lcore
// frees the very mbufs sent, so they come from port A's zero pool without lcore caches (handed back oldest
// first); with the receive side inline, or on devices that do not hand the sender's mbufs over, from the
// cached one.
TEST(RxLcore, DataFramesComeFromTheFifoPoolWhenTheReceiveLcoreFreesThem) {
  REQUIRE_EAL();
  const auto make = [&](fd::DpdkPorts& ports, int lcore) {
    fd::DpdkFabricOptions o;
    o.rx_lcore = lcore;
    return ring4_fabric(ports, o);
  };
  auto ring = fd::DpdkPorts::ring("lc5", port_config());
  rte_mempool* fifo = ring.a().zero_pool(UINT32_MAX, fd::Port::Recycle::kOtherLcore);
  rte_mempool* cached = ring.a().zero_pool(UINT32_MAX, fd::Port::Recycle::kSameLcore);
  ASSERT_NE(fifo, nullptr);
  ASSERT_NE(cached, nullptr);
  EXPECT_NE(fifo, cached);
  EXPECT_EQ(fifo->cache_size, 0u);
  EXPECT_GT(cached->cache_size, 0u);
  // Made once each: later calls (of any size) return them.
  EXPECT_EQ(ring.a().zero_pool(63, fd::Port::Recycle::kOtherLcore), fifo);
  EXPECT_EQ(ring.a().zero_pool(63), cached);
  {
    const auto f = make(ring, fd::DpdkFabricOptions::kRxLcoreAuto);
    ASSERT_EQ(f->rx_lcore(), 1);
    EXPECT_EQ(f->data_pool(), fifo);
  }
  EXPECT_EQ(make(ring, fd::DpdkFabricOptions::kRxLcoreOff)->data_pool(), cached);
  // Two ports of their own but not in process (net_null: the transmit side frees what it sends): cached.
  auto nulls = fd::DpdkPorts::devargs("net_null_lc5a", "net_null_lc5b", port_config());
  const auto f = make(nulls, fd::DpdkFabricOptions::kRxLcoreAuto);
  ASSERT_EQ(f->rx_lcore(), 1);
  EXPECT_EQ(f->data_pool(), nulls.a().zero_pool());
  EXPECT_GT(f->data_pool()->cache_size, 0u);
}

}  // namespace
