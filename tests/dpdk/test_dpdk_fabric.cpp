// The DPDK fabric end to end on virtual devices: the walker replays workloads as real frames through a
// ring pair or memif, and must report exactly the times of the software packet model (deliveries happen
// at modelled times once the wire has brought every packet), with every message delivered once and every
// byte reassembled, also under injected loss, duplication and reordering. One EAL per process; every test
// skips with the reason when EAL cannot start. Traffic goes only to rings and memif sockets in a temp dir.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "emulator/dilation.h"
#include "host/config/astra_config.h"
#include "tests/dpdk/dpdk_fabric_test_support.h"
#include "tests/dpdk/dpdk_test_support.h"
#include "host/dpdk/dpdk_env.h"
#include "host/dpdk/dpdk_fabric.h"
#include "host/dpdk/link_pacer.h"
#include "tests/emulator/walker_test_util.h"
#include "tests/support/sanitizers.h"
#include "tests/support/alloc_counter.h"
#include "traces/generate.h"
#include "traces/trace_set.h"

namespace fd = fabemu::host::dpdk;
namespace fs = std::filesystem;
using namespace fabemu::emu;
using namespace fabemu::emu::walker_test;
using namespace fabemu::test;

namespace {


// The shared custom ring all-reduce (SEND/RECV), or nullopt when ../shared is absent.
std::optional<Workload> custom_ring_all_reduce() {
  const auto traces_dir = fabemu::test::shared_traces_dir();
  if (!traces_dir) return std::nullopt;
  const fs::path prefix = *traces_dir /
                          "astra-sim/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce";
  const fs::path yml = traces_dir->parent_path() / "configs" / "astra-sim" / "Ring_8npus.yml";
  if (!fs::exists(yml) || !fs::exists(prefix.string() + ".0.et")) return std::nullopt;
  Workload w;
  w.net = fabemu::host::load_network_yml(yml.string());
  w.sys = system_config(CollectiveAlgo::kRing, 1, 1);
  w.sys.scheduling_policy = SchedulingPolicy::kFifo;
  for (const auto& f : fabemu::traces::find_rank_files(prefix.string())) w.files.push_back(f.path);
  return w;
}

// Without pacing the data frames come from port A's zero pool, whose payloads are never written: after a
// run every mbuf of it must still be zero beyond a fabemu-mode frame head (102 bytes), and it must have
// carried the run's frames (their heads are left in the mbufs). Returns the mbufs that carried a frame.
unsigned expect_zero_pool_clean(fd::Port& a, fd::WireMode mode = fd::WireMode::kFabemu, uint32_t wire_mtu = 1500) {
  struct Scan {
    size_t head = 0, icrc = 0;  // RoCEv2: a full frame's ICRC at [icrc, icrc + 4)
    unsigned used = 0, dirty = 0;
  } scan;
  scan.head = fd::kEthHeaderBytes + fd::kIpv4HeaderBytes + fd::kUdpHeaderBytes + fd::kFabemuHeaderBytes;
  if (mode == fd::WireMode::kRoceV2) {
    // Only full frames: the ICRC right after the largest payload and its pad.
    scan.head += fd::kBthBytes;
    scan.icrc = fd::frame_bytes(mode, fd::max_payload_for_mtu(mode, wire_mtu)) - fd::kIcrcBytes;
  }
  rte_mempool_obj_iter(
      a.zero_pool(),
      [](rte_mempool*, void* arg, void* obj, unsigned) {
        auto& sc = *static_cast<Scan*>(arg);
        const auto* m = static_cast<const rte_mbuf*>(obj);
        const auto* room = static_cast<const uint8_t*>(m->buf_addr) + RTE_PKTMBUF_HEADROOM;
        const size_t len = m->buf_len - RTE_PKTMBUF_HEADROOM;
        const auto nonzero = [](uint8_t b) { return b != 0; };
        sc.used += std::any_of(room, room + sc.head, nonzero);
        if (sc.icrc == 0) {
          sc.dirty += std::any_of(room + sc.head, room + len, nonzero);
        } else {
          sc.dirty += std::any_of(room + sc.head, room + sc.icrc, nonzero) ||
                      std::any_of(room + sc.icrc + fd::kIcrcBytes, room + len, nonzero);
        }
      },
      &scan);
  EXPECT_EQ(scan.dirty, 0u) << "mbufs of the zero pool with bytes written beyond a frame head (and ICRC)";
  return scan.used;
}

// The mbufs of `pool` that hold a frame (a non-zero byte in an Ethernet header's place). A pool's buffers
// are zero when it is made (EAL memory is zeroed when a pool's memory is freed, and fresh pages are).
unsigned frames_in(rte_mempool* pool) {
  unsigned n = 0;
  rte_mempool_obj_iter(
      pool,
      [](rte_mempool*, void* arg, void* obj, unsigned) {
        const auto* m = static_cast<const rte_mbuf*>(obj);
        const auto* room = static_cast<const uint8_t*>(m->buf_addr) + RTE_PKTMBUF_HEADROOM;
        *static_cast<unsigned*>(arg) += std::any_of(room, room + fd::kEthHeaderBytes, [](uint8_t b) { return b != 0; });
      },
      &n);
  return n;
}

TEST(DpdkFabric, GeneratedAllReduceOnRingPairMatchesTheSoftwareModel) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fab1", port_config());
  const DpdkRun d = run_dpdk(w, ports, fd::DpdkFabricOptions{});
  expect_exact(sw, d);
  EXPECT_EQ(d.stats.retransmissions, 0u);
  // 8 ranks x 2 x 7 steps of 1/8 MiB in 4 chunks each: 14 MiB, in frames of at most 1442 bytes.
  EXPECT_EQ(d.stats.message_bytes, uint64_t{14} << 20);
  EXPECT_EQ(d.stats.data_frames, d.stats.frames_tx - d.stats.acks - d.stats.nacks - d.stats.retransmissions);
  EXPECT_GE(expect_zero_pool_clean(ports.a()), 64u);
}

TEST(DpdkFabric, CustomRingAllReduceOnRingPairMatchesTheSoftwareModel) {
  REQUIRE_EAL();
  const auto w = custom_ring_all_reduce();
  if (!w) GTEST_SKIP() << "../shared custom ring all-reduce or Ring_8npus.yml is absent";
  const RunResult sw = run_software(*w);
  auto ports = fd::DpdkPorts::ring("fab2", port_config());
  const DpdkRun d = run_dpdk(*w, ports, fd::DpdkFabricOptions{});
  expect_exact(sw, d);
  EXPECT_EQ(d.result.p2p.sends, 8u * 14u);
}

TEST(DpdkFabric, LossAndReorderingStillGiveTheModelledTimes) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fab3", port_config());
  fd::DpdkFabricOptions opt;
  opt.faults = injected_faults();
  const DpdkRun d = run_dpdk(w, ports, opt);
  expect_exact(sw, d);
  EXPECT_GT(d.stats.retransmissions, 0u);
  // Holes below a message's highest packet are NACKed (the receive side's NACK check runs), not left to
  // the senders' timeouts.
  EXPECT_GT(d.stats.nack_retransmissions, 0u);
  expect_faults_recovered(d.stats);
  EXPECT_GE(expect_zero_pool_clean(ports.a()), 64u);  // retransmissions too come from it
}

// Lost tails: with 5% of the data frames dropped, some messages lose their last packets, which no NACK
// lists (a NACK covers up to the highest packet received). The senders' tail-loss probes (Sender::on_nack
// with a tail age: SRTT + 4 RTTVAR of the message latency, at least the NACK delay, at most the RTO) send
// those again on NACK instead of waiting for the RTO (10 ms here); the run still gives the model's times.
TEST(DpdkFabric, LostTailsAreProbedOnNack) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fabtail", port_config());
  fd::DpdkFabricOptions opt;
  opt.faults.drop_rate = 0.05;
  const DpdkRun d = run_dpdk(w, ports, opt);
  expect_exact(sw, d);
  EXPECT_GT(d.stats.tail_retransmissions, 0u);
  EXPECT_LE(d.stats.tail_retransmissions, d.stats.nack_retransmissions);
  EXPECT_GE(d.stats.tail_age_min.ps(), opt.nack_delay.ps());
  EXPECT_LE(d.stats.tail_age_min.ps(), opt.rto.ps());
  EXPECT_NE(fd::format_dpdk_stats(d.stats).find("a lost tail on NACK after down to "), std::string::npos);
  EXPECT_NE(fd::dpdk_stats_to_json(d.stats).find("\"tail_retransmissions\": "), std::string::npos);
}

TEST(DpdkFabric, CustomRingAllReduceWithLossMatches) {
  REQUIRE_EAL();
  const auto w = custom_ring_all_reduce();
  if (!w) GTEST_SKIP() << "../shared custom ring all-reduce or Ring_8npus.yml is absent";
  const RunResult sw = run_software(*w);
  auto ports = fd::DpdkPorts::ring("fab4", port_config());
  fd::DpdkFabricOptions opt;
  opt.faults.drop_rate = 0.01;
  opt.faults.reorder_rate = 0.05;
  opt.faults.seed = 11;
  const DpdkRun d = run_dpdk(*w, ports, opt);
  expect_exact(sw, d);
  EXPECT_GT(d.stats.retransmissions, 0u);
  EXPECT_GT(d.stats.nack_retransmissions, 0u);
}

TEST(DpdkFabric, ThroughMemif) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  TempDir tmp;
  std::optional<fd::DpdkPorts> ports;
  try {
    ports.emplace(fd::DpdkPorts::memif((tmp.path / "memif.sock").string(), port_config()));
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "memif did not come up: " << e.what();
  }
  const DpdkRun clean = run_dpdk(w, *ports, fd::DpdkFabricOptions{});
  expect_exact(sw, clean);
  // Not an in-process ring pair: the payloads are checked (memif copies the frames through its rings).
  ASSERT_EQ(clean.stats.rx_clocks.size(), 2u);
  EXPECT_EQ(clean.stats.rx_clocks[0].checksums, "fabemu");
  EXPECT_EQ(clean.stats.rx_clocks[1].checksums, "fabemu");
  fd::DpdkFabricOptions opt;
  opt.faults.drop_rate = 0.01;
  opt.faults.reorder_rate = 0.05;
  opt.faults.seed = 3;
  const DpdkRun lossy = run_dpdk(w, *ports, opt);
  expect_exact(sw, lossy);
  EXPECT_GT(lossy.stats.retransmissions, 0u);
}

// The shared microbenchmarks (issue 4's loopback test): the 12 workloads of ../shared (all-reduce,
// all-gather, reduce-scatter, all-to-all on 4, 8 and 16 NPUs, 1 MiB) on the matching ASTRA-sim Ring
// network with system_ring_4chunks.json, through a ring pair, and the 8-NPU ones through memif too:
// the software packet model's times exactly, every message delivered once and every byte reassembled
// once (the receivers count bytes completed; duplicates would show as rx_duplicates or stale copies).
TEST(DpdkFabric, SharedMicrobenchmarksOnRingPairAndMemif) {
  REQUIRE_EAL();
  if (!fabemu::test::shared_traces_dir()) GTEST_SKIP() << "../shared/traces is absent";
  auto ring = fd::DpdkPorts::ring("fabmb", port_config());
  TempDir tmp;
  std::optional<fd::DpdkPorts> memif;
  try {
    memif.emplace(fd::DpdkPorts::memif((tmp.path / "memif.sock").string(), port_config()));
  } catch (const std::runtime_error& e) {
    std::printf("memif did not come up (%s): ring pair only\n", e.what());
  }
  int runs = 0;
  for_each_shared_microbenchmark([&](const Workload& w, int n) {
    const RunResult sw = run_software(w);
    const DpdkRun d = run_dpdk(w, ring, fd::DpdkFabricOptions{});
    expect_exact(sw, d);
    EXPECT_EQ(d.stats.rx_duplicates + d.stats.rx_stale, d.stats.retransmissions);
    EXPECT_EQ(d.stats.message_bytes, sw.message_bytes);
    ++runs;
    if (memif && n == 8) {
      const DpdkRun m = run_dpdk(w, *memif, fd::DpdkFabricOptions{});
      expect_exact(sw, m);
      EXPECT_EQ(m.stats.message_bytes, sw.message_bytes);
      ++runs;
    }
  });
  EXPECT_EQ(runs, memif ? 16 : 12);
}

TEST(DpdkFabric, RoceFramesCapturedToPcap) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fab5", port_config());
  TempDir tmp;
  fd::DpdkFabricOptions opt;
  opt.mode = fd::WireMode::kRoceV2;
  opt.pcap = (tmp.path / "frames.pcap").string();
  const DpdkRun d = run_dpdk(w, ports, opt);
  expect_exact(sw, d);
  // Read the capture back: every frame sent, each one ours in RoCEv2 mode (and so addressed to 4791).
  expect_capture_of(opt.pcap, fd::WireMode::kRoceV2, d.stats);
  // Full frames came from the zero pool (their payloads not written), the shorter ones did not.
  EXPECT_GE(expect_zero_pool_clean(ports.a(), fd::WireMode::kRoceV2), 64u);
}

TEST(DpdkFabric, DilatedRealTimeKeepsModelledTimesAndTakesTheWallTime) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fab6", port_config());
  fd::DpdkFabricOptions opt;
  opt.dilation = 500;  // ~130 us of emulated time: ~65 ms of wall time
  const DpdkRun d = run_dpdk(w, ports, opt);
  expect_exact(sw, d);
  // The last delivery waited for the wall clock to reach its modelled time.
  EXPECT_GE(d.stats.wall.ps(), sw.total.ps() * 500 / 2);  // the walker's end may follow a local step
  EXPECT_GT(d.stats.pacing_ratio, 0.0);
  EXPECT_GT(d.stats.jitter_ns.count(), 0u);
  EXPECT_EQ(d.stats.jitter_ns.count(), d.stats.data_frames);  // every first transmission timed as it left
  // Paced frames come from the zero pool too, every one of them: none was built in port A's own pool. (How
  // many distinct zero-pool mbufs carried one is how many were in flight at once, as the lcore cache
  // hands the same ones back: 41-58 here, below the 64 the unpaced tests see.)
  EXPECT_GE(expect_zero_pool_clean(ports.a()), 8u);
  EXPECT_EQ(frames_in(ports.a().pool()), 0u);
}

// Issue 47, item 3: paced at dilation 10000, the frames of a message leave a frame time x 10000 apart (a
// frame of 1412 bytes of payload on a 25 GB/s link: 56.5 ns, 565 us of wall time), more than the 200 us default NACK delay,
// so every receiver NACKed each message while its next frame was merely not due yet (89 NACKs for the 96 data
// frames here before). The NACK delay is now at least four frame times of the slowest link: no NACK on a clean path.
TEST(DpdkFabric, NoNackOnACleanPathAtDilation10000) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  Workload w;
  w.net = network({dim_at(DimTopology::kRing, 2, 25'000'000'000)});  // 25 GB/s
  w.sys = system_config(CollectiveAlgo::kRing, 1, 1);
  fabemu::traces::CollectiveSpec spec;
  spec.type = ChakraProtoMsg::ALL_REDUCE;
  spec.ranks = 2;
  spec.size_bytes = uint64_t{64} << 10;  // two steps of 24 frames each way: ~30 ms of wall time
  w.files = fabemu::traces::generate_collective(spec, dir.file("allreduce2"));
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fabnack", port_config());
  fd::DpdkFabricOptions opt;
  opt.dilation = 10'000;
  const DpdkRun d = run_dpdk(w, ports, opt);
  expect_exact(sw, d);
  EXPECT_EQ(d.stats.data_frames, 96u);
  // None on an idle machine. A polling lcore descheduled for more than four frame times (2.3 ms; seen here
  // with the load average at 7) sends the next frames that late, and the receiver's NACK is then right: a few
  // are allowed, where before every message was NACKed while it arrived.
  EXPECT_LE(d.stats.nacks, d.stats.data_frames / 20) << d.stats.poll_stalls << " polling stalls";
  // 4 frame times (1412 bytes of payload at 25 GB/s: 56.48 ns) x 10000 on the wall clock: 2.259 ms.
  const uint64_t payload = fd::max_payload_for_mtu(fd::WireMode::kFabemu, 1500);
  EXPECT_EQ(payload, 1412u);
  EXPECT_EQ(d.stats.settings.nack_delay.ps(), 4 * Rate::from_bytes_per_sec(25'000'000'000).ser(payload).ps() * 10'000);
  if (d.stats.nacks * 100 <= d.stats.data_frames) {
    EXPECT_EQ(fd::wire_nack_warning(d.stats, d.stats.data_frames, "DPDK fabric", ""), "");
  }
  fd::DpdkStats noisy = d.stats;
  noisy.data_frames = 1000;
  noisy.nacks = 20;
  EXPECT_EQ(fd::wire_nack_warning(noisy, 2000, "DPDK fabric", ""), "");  // 20 of 2000 (1%) does not warn, 20 of 1000 does
  EXPECT_EQ(fd::wire_nack_warning(noisy, noisy.data_frames, "DPDK fabric", "200 us"),
            fmt::format("DPDK fabric: {} NACKs for {} data frames (2.0%): frames were lost or reordered on the way, or a "
                        "message's frames arrived further apart than the NACK delay (200 us); a clean path sends none, "
                        "and each NACK is a frame on the wire",
                        noisy.nacks, noisy.data_frames));
}

// Issue 4, "Pacing": at a target rate far below the device's (a ring pair moves several Gb/s here), each
// first link carries its target rate within 1% over its busy periods, and the walker's times stay the
// software model's. 2 ranks, 16 ring all-reduces of 256 KiB one after the other at 1 Gb/s, dilation 1,
// one chunk: per link 32 messages of 128 KiB, each its own busy period of ~1.05 ms; ~40 ms of wall.
// Busy periods in which the polling thread was descheduled for longer than the pacer's burst allowance
// are "disturbed" (the OS, not the pacer, set their rate) and left out; on a machine so loaded that
// fewer than 3 periods are undisturbed in three attempts the test is skipped, saying so.
TEST(DpdkFabric, PacingAchievesTheTargetRateWithinOnePercent) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  Workload w;
  w.net = network({dim_at(DimTopology::kRing, 2, 125'000'000)});  // 1 Gb/s
  w.sys = system_config(CollectiveAlgo::kRing, 1, 1);
  fabemu::traces::CollectiveSpec spec;
  spec.type = ChakraProtoMsg::ALL_REDUCE;
  spec.ranks = 2;
  spec.size_bytes = uint64_t{256} << 10;
  spec.count = 16;
  w.files = fabemu::traces::generate_collective(spec, dir.file("allreduce2"));
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fabp", port_config());
  fd::DpdkFabricOptions opt;
  opt.dilation = 1;
  for (int attempt = 1;; ++attempt) {
    const DpdkRun d = run_dpdk(w, ports, opt);
    expect_exact(sw, d);
    ASSERT_EQ(d.stats.links.size(), 2u);
    uint64_t frames = 0;
    for (const fd::DpdkStats::Link& l : d.stats.links) {
      EXPECT_NEAR(l.target_gbps, 1.0, 1e-6) << "link " << l.link;
      EXPECT_EQ(l.bytes, uint64_t{32} * (128 << 10)) << "link " << l.link;
      frames += l.frames;
    }
    EXPECT_EQ(frames, d.stats.data_frames);
    EXPECT_EQ(d.stats.jitter_ns.count(), d.stats.data_frames);
    // Per collective: the wire's last arrival vs the model's last delivery, 32 collectives.
    EXPECT_EQ(d.stats.collectives.size(), 16u);
    const uint64_t undisturbed = d.stats.pacing_periods - d.stats.pacing_disturbed_periods;
    std::printf("attempt %d: pacing median %.5f over %llu undisturbed periods (all %.5f); %llu stalls, longest %llu ns\n",
                attempt, d.stats.pacing_median_ratio, static_cast<unsigned long long>(undisturbed), d.stats.pacing_ratio,
                static_cast<unsigned long long>(d.stats.poll_stalls),
                static_cast<unsigned long long>(d.stats.poll_gap_max_ns));
    if (undisturbed < 3) {
      if (attempt < 3) continue;
      GTEST_SKIP() << "this machine is too loaded to measure pacing: " << d.stats.pacing_disturbed_periods << " of "
                   << d.stats.pacing_periods << " busy periods were disturbed by stalls of the polling thread (longest "
                   << d.stats.poll_gap_max_ns << " ns) in each of three attempts";
    }
    // Frames never leave before their schedule: the ratio is at most 1 (+ rounding of the ps clock).
    EXPECT_GE(d.stats.pacing_median_ratio, 0.99) << fd::format_dpdk_stats(d.stats);
    EXPECT_LE(d.stats.pacing_median_ratio, 1.0 + 1e-9) << fd::format_dpdk_stats(d.stats);
    // The fidelity verdict is this run's: its all-periods ratio against 0.99, its median jitter (D = 1).
    const fd::Fidelity f = fd::fidelity(d.stats);
    EXPECT_EQ(f.verdict, d.stats.pacing_ratio >= fd::kKeptPaceRatio ? fd::Fidelity::Verdict::kKeptPace
                                                                     : fd::Fidelity::Verdict::kFellBehind);
    EXPECT_EQ(f.rate_ratio, d.stats.pacing_ratio);
    EXPECT_EQ(f.undisturbed_ratio, d.stats.pacing_median_ratio);
    EXPECT_EQ(f.departure_lateness_ns, static_cast<double>(d.stats.jitter_ns.quantile(0.5)));
    // Its undisturbed periods kept pace (checked above): a shortfall can only be the stalls', or the ring
    // pair's (full for a stall of the receive side long enough to fill its 4,096 frames).
    const bool refused = d.stats.tx_full > 0 && static_cast<double>(d.stats.tx_full) >=
                                                    fd::kDeviceFullShare * static_cast<double>(d.stats.tx_flushes);
    EXPECT_EQ(f.cause, f.verdict != fd::Fidelity::Verdict::kFellBehind ? fd::Fidelity::Cause::kNone
                       : refused                                       ? fd::Fidelity::Cause::kDevice
                                                                       : fd::Fidelity::Cause::kStalls);
    // A collective's stalled time lies within its measured span, and there is none without a stall.
    for (const fd::DpdkStats::Collective& c : d.stats.collectives) {
      EXPECT_LE(c.stalled.ps(), c.measured.ps()) << "collective " << c.coll;
      if (d.stats.poll_stalls + d.stats.rx_poll_stalls == 0) {
        EXPECT_EQ(c.stalled.ps(), 0u) << "collective " << c.coll;
      }
    }
    break;
  }
}

// Build-ahead (host/dpdk/README.md, "Build-ahead"): with DpdkFabricOptions::ahead the fabric hands a
// message to its sender and builds its frames up to that long before they are due, and holds them until
// then. Sparse one-frame messages: 4 ranks on a 100 Gb/s ring, 8 all-to-alls of 4 KiB (1 KiB a pair, one
// frame each); a rank's two messages on a first link are a busy period of two frames 80 ns (emulated)
// apart, 800 us of wall at D = 10000, so the second is due well after the first and is built ahead and held.
// The walker's times are the software model's either way; no frame leaves before its schedule (a held
// frame let go early would make a period's span shorter than scheduled: a ratio above 1); every mbuf comes
// back. Without it (ahead 0) nothing is held.
// A transmit lcore that falls behind its schedule by more than the ahead time stops building ahead (by
// design: tx_behind_), which a loaded machine can cause for a whole run (CI under ASan: every frame 69 us
// late at D = 1000 with 20 us ahead, none built ahead). So D = 10000 and 200 us ahead (under three busy loops
// on this 2-core machine, ASan: 8-17 frames ahead in each of 10 runs), and up to three runs for one that
// builds ahead; every run is checked for everything else.
TEST(DpdkFabric, BuildAheadHoldsFramesUntilTheyAreDue) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  Workload w;
  w.net = network({dim_at(DimTopology::kRing, 4, 12'500'000'000)});  // 100 Gb/s
  w.sys = system_config(CollectiveAlgo::kDirect, 1, 1);
  fabemu::traces::CollectiveSpec spec;
  spec.type = ChakraProtoMsg::ALL_TO_ALL;
  spec.ranks = 4;
  spec.size_bytes = 4096;
  spec.count = 8;
  w.files = fabemu::traces::generate_collective(spec, dir.file("a2a4"));
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fabba", port_config());
  for (const uint64_t ahead_us : {200, 0}) {
    const int attempts = ahead_us == 0 ? 1 : 3;
    uint64_t most_ahead = 0;
    for (int attempt = 1; attempt <= attempts && most_ahead == 0; ++attempt) {
      SCOPED_TRACE(testing::Message() << "ahead " << ahead_us << " us, run " << attempt);
      fd::DpdkFabricOptions opt;
      opt.dilation = 10000;
      opt.ahead = Duration::from_us(ahead_us);
      const DpdkRun d = run_dpdk(w, ports, opt);
      expect_exact(sw, d);
      EXPECT_EQ(d.stats.jitter_ns.count(), d.stats.data_frames);
      EXPECT_EQ(d.stats.settings.ahead.ps(), ahead_us * 1'000'000);
      EXPECT_LE(d.stats.frames_ahead, d.stats.data_frames);
      if (ahead_us == 0) {
        EXPECT_EQ(d.stats.frames_ahead, 0u);
      }
      most_ahead = std::max(most_ahead, d.stats.frames_ahead);
      ASSERT_GT(d.stats.pacing_periods, 0u) << fd::format_dpdk_stats(d.stats);
      EXPECT_LE(d.stats.pacing_ratio, 1.0 + 1e-9) << fd::format_dpdk_stats(d.stats);
      EXPECT_LE(d.stats.pacing_median_ratio, 1.0 + 1e-9) << fd::format_dpdk_stats(d.stats);
      EXPECT_EQ(frames_in(ports.a().pool()), 0u);
      if (ahead_us > 0 && most_ahead == 0) {
        std::printf("ahead %llu us, run %d built no frame ahead:\n%s\n", static_cast<unsigned long long>(ahead_us),
                    attempt, fd::format_dpdk_stats(d.stats).c_str());
      }
    }
    if (ahead_us > 0) {
      EXPECT_GT(most_ahead, 0u) << "in " << attempts << " runs";
    }
  }
}

// The fidelity verdict (dpdk_fabric.h): not paced at D = 0 or without paced frames, unmeasured without a
// back-to-back period, kept pace from 0.99 of the target rate up, fell behind below; the median departure
// jitter in emulated ns (wall / D). The summary line and the report's object say the same.
TEST(DpdkStats, FidelityVerdicts) {
  using V = fd::Fidelity::Verdict;
  using C = fd::Fidelity::Cause;
  fd::DpdkStats s;
  s.dilation = 2;
  for (uint64_t v : {40, 100, 200, 220, 250}) s.jitter_ns.record(v);  // median 200 ns wall: 100 ns emulated
  s.poll_stalls = 48;
  s.poll_gap_max_ns = 3'420'150;
  s.rx_lcore = 1;
  s.rx_poll_stalls = 14;
  s.rx_poll_gap_max_ns = 869'690;
  const auto json_of = [](const fd::DpdkStats& st) {
    return nlohmann::json::parse("{\"dpdk\": " + fd::dpdk_stats_to_json(st) + "}").at("dpdk").at("fidelity");
  };
  struct Case {
    double dilation, ratio, undisturbed;
    uint64_t disturbed;  // busy periods a stall disturbed
    bool jitter;
    V verdict;
    C cause;
    const char* name;
    const char* cause_name;
    const char* line;  // in the summary ("" : no fidelity line)
  };
  const char* const stalls =
      ": the OS took the polling lcores' cores (main lcore 48 stalls over 100 us, longest 3.420 ms; receive lcore "
      "14, longest 0.870 ms). Run nothing else on those cores (e.g. isolcpus=, no other busy process), or raise "
      "--dilation above 2\n";
  const std::string kept_stalls = std::string("The busy periods no stall disturbed kept pace (median 0.99000)") + stalls;
  const std::string all_stalls = std::string("Every one of the 7 busy periods was disturbed by a stall") + stalls;
  const Case cases[] = {
      {0, 0.995, 0.995, 0, true, V::kNotPaced, C::kNone, "not_paced", "none", ""},
      {2, 0.995, 0.995, 0, false, V::kNotPaced, C::kNone, "not_paced", "none", ""},
      {2, 0, 0, 0, true, V::kUnmeasured, C::kNone, "unmeasured", "none",
       "fidelity            unmeasured: no first link carried two frames"},
      {2, 0.995, 0.996, 0, true, V::kKeptPace, C::kNone, "kept_pace", "none",
       "fidelity            the senders kept pace: their first links carried 0.99500 of their target rate (>= 0.99) "
       "and frames left a median 100.0 ns (emulated)"},
      {2, 0.99, 0.98, 3, true, V::kKeptPace, C::kNone, "kept_pace", "none",
       "carried 0.99000 of their target rate (>= 0.99)"},
      // Too slow: even the undisturbed periods fell short (their median just below the line).
      {2, 0.98999, 0.98999, 0, true, V::kFellBehind, C::kSpeed, "fell_behind", "speed",
       "fidelity            the senders fell behind: their first links carried 0.98999 of their target rate (< 0.99) "
       "and frames left a median 100.0 ns (emulated) after their scheduled departure; the measured times include "
       "fabemu's own delay. Even the busy periods no stall disturbed reached only a median 0.98999 of the target "
       "rate: raise --dilation above 2 until this line says they kept pace\n"},
      // The stalls did it: the undisturbed periods kept the rate (exactly at the line).
      {2, 0.93, 0.99, 356, true, V::kFellBehind, C::kStalls, "fell_behind", "stalls", kept_stalls.c_str()},
      // Every period disturbed: no undisturbed median.
      {2, 0.5, 0, 7, true, V::kFellBehind, C::kStalls, "fell_behind", "stalls", all_stalls.c_str()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + " at D = " + std::to_string(c.dilation) + ", ratio " + std::to_string(c.ratio) +
                 ", undisturbed " + std::to_string(c.undisturbed));
    fd::DpdkStats t = s;
    t.dilation = c.dilation;
    t.pacing_ratio = c.ratio;
    t.pacing_median_ratio = c.undisturbed;
    t.pacing_disturbed_periods = c.disturbed;
    if (!c.jitter) t.jitter_ns.clear();
    const fd::Fidelity f = fd::fidelity(t);
    EXPECT_EQ(f.verdict, c.verdict);
    EXPECT_EQ(f.cause, c.cause);
    EXPECT_STREQ(fd::to_string(f.verdict), c.name);
    EXPECT_STREQ(fd::to_string(f.cause), c.cause_name);
    const std::string text = fd::format_dpdk_stats(t);
    if (*c.line == 0) {
      EXPECT_EQ(text.find("fidelity"), std::string::npos) << text;
    } else {
      EXPECT_NE(text.find(c.line), std::string::npos) << text;
    }
    const nlohmann::json j = json_of(t);
    EXPECT_EQ(j.at("verdict"), c.name);
    EXPECT_EQ(j.at("cause"), c.cause_name);
    EXPECT_DOUBLE_EQ(j.at("kept_pace_ratio").get<double>(), 0.99);
    if (c.verdict != V::kNotPaced) {
      EXPECT_DOUBLE_EQ(j.at("rate_ratio").get<double>(), c.ratio);
      EXPECT_DOUBLE_EQ(j.at("undisturbed_median_ratio").get<double>(), c.undisturbed);
      EXPECT_DOUBLE_EQ(j.at("median_departure_lateness_ns").get<double>(), 100.0);
    }
    EXPECT_EQ(j.at("late_collectives"), 0u);
  }
  // Kept pace, but one of two collectives started late (a late start above 1% of its modelled span; the
  // other's exactly at 1% is not): the line says so, and the report counts it.
  {
    fd::DpdkStats t = s;
    t.pacing_ratio = t.pacing_median_ratio = 0.995;
    fd::DpdkStats::Collective c;
    c.modelled = Duration::from_ns(100'000);
    c.late_start = Duration::from_ns(1'000);
    t.collectives.push_back(c);
    c.coll = 1;
    c.late_start = Duration::from_ps(1'000'001);
    t.collectives.push_back(c);
    EXPECT_FALSE(fd::started_late(t.collectives[0]));
    EXPECT_TRUE(fd::started_late(t.collectives[1]));
    const fd::Fidelity f = fd::fidelity(t);
    EXPECT_EQ(f.verdict, V::kKeptPace);
    EXPECT_EQ(f.late_collectives, 1u);
    const std::string text = fd::format_dpdk_stats(t);
    EXPECT_NE(text.find("(emulated) after their scheduled departure; but 1 of 2 collectives started late (a stall or a "
                        "cold start set some of their messages back: Measured vs modelled, column late start), so "
                        "their deviations are partly fabemu's own\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(json_of(t).at("late_collectives"), 1u);
  }
  // With a capture whose writer made the lcores wait, the stalls are put down to it first; the capture
  // line and the report's object give its counts.
  fd::DpdkStats t = s;
  t.pacing_ratio = 0.5;
  t.pacing_median_ratio = 0;
  t.pacing_disturbed_periods = 7;
  EXPECT_NE(fd::dpdk_stats_to_json(t).find("\"pcap\": null"), std::string::npos);  // null without a capture
  EXPECT_EQ(fd::format_dpdk_stats(t).find("capture"), std::string::npos);
  t.pcap = "/tmp/run.pcap";
  t.pcap_frames = 11008;
  t.pcap_waits = 13;
  t.pcap_wait_ns = 5'420'000;
  const std::string text = fd::format_dpdk_stats(t);
  EXPECT_NE(text.find("  capture             11008 frames to /tmp/run.pcap; the polling lcores waited for its writer "
                      "13 times, 5.420 ms in all\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Every one of the 7 busy periods was disturbed by a stall: the polling lcores stalled (main "
                      "lcore 48 stalls over 100 us, longest 3.420 ms; receive lcore 14, longest 0.870 ms), 13 times "
                      "waiting for the --pcap capture's writer (5.420 ms in all; the file took frames slower than the "
                      "wire made them). Capture to a faster file system (e.g. tmpfs), or raise --dilation above 2\n"),
            std::string::npos)
      << text;
  const nlohmann::json pcap = nlohmann::json::parse("{\"dpdk\": " + fd::dpdk_stats_to_json(t) + "}").at("dpdk").at("pcap");
  EXPECT_EQ(pcap, nlohmann::json::parse(
                      R"({"path": "/tmp/run.pcap", "frames": 11008, "waits": 13, "wait_ns": 5420000, "error": null,
                          "dropped": 0})"));
  // A ratio of 0 over busy periods that were measured (a dilation so small the target's times round to 0
  // ps) fell behind; it is unmeasured only without periods.
  {
    fd::DpdkStats z = s;
    z.pacing_ratio = z.pacing_median_ratio = 0;
    z.pacing_periods = 280;
    EXPECT_EQ(fd::fidelity(z).verdict, V::kFellBehind);
    z.pacing_periods = 0;
    EXPECT_EQ(fd::fidelity(z).verdict, V::kUnmeasured);
  }
  // Without a receive lcore the main lcore's stalls are all there are: no receive lcore in the line.
  t.rx_lcore = -1;
  t.rx_poll_stalls = 0;
  t.rx_poll_gap_max_ns = 0;
  const std::string inline_text = fd::format_dpdk_stats(t);
  EXPECT_NE(inline_text.find("the polling lcores stalled (main lcore 48 stalls over 100 us, longest 3.420 ms), 13 "
                             "times waiting"),
            std::string::npos)
      << inline_text;
  EXPECT_EQ(inline_text.find("receive lcore"), std::string::npos) << inline_text;
  // A capture that failed: its line and its JSON say so.
  t.pcap_error = "pcap /tmp/run.pcap: cannot write: File too large";
  t.pcap_dropped = 70;
  EXPECT_NE(fd::format_dpdk_stats(t).find("  capture failed      pcap /tmp/run.pcap: cannot write: File too large: the "
                                          "file is incomplete (the frames in memory then are lost too), 70 frames sent "
                                          "after it were not captured; the run went on\n"),
            std::string::npos);
  const nlohmann::json failed =
      nlohmann::json::parse("{\"dpdk\": " + fd::dpdk_stats_to_json(t) + "}").at("dpdk").at("pcap");
  EXPECT_EQ(failed.at("error"), t.pcap_error);
  EXPECT_EQ(failed.at("dropped"), 70);
  // The device refused frames (its transmit queue full) in at least 1% of the flushes: the device is
  // blamed, before the stalls or the speed; below 1%, as before; a run that kept pace blames nothing.
  {
    fd::DpdkStats dev = s;
    dev.pacing_ratio = 0.93;
    dev.pacing_median_ratio = 0.99;
    dev.pacing_disturbed_periods = 356;
    dev.tx_flushes = 1000;
    dev.tx_full = 10;
    EXPECT_EQ(fd::fidelity(dev).cause, C::kDevice);
    EXPECT_STREQ(fd::to_string(C::kDevice), "device");
    const std::string dev_text = fd::format_dpdk_stats(dev);
    EXPECT_NE(dev_text.find("the measured times include the frames' waits for the device. The device took the "
                            "frames slower than the target rate: its transmit queue was full in 10 of 1000 flushes, "
                            "and the frames waited. A lab NIC slower than the target at this dilation: raise "
                            "--dilation above 2; the device under test: that is its rate\n"),
              std::string::npos)
        << dev_text;
    const nlohmann::json d = nlohmann::json::parse("{\"dpdk\": " + fd::dpdk_stats_to_json(dev) + "}").at("dpdk");
    EXPECT_EQ(d.at("fidelity").at("cause"), "device");
    EXPECT_EQ(d.at("tx_full"), 10u);
    EXPECT_EQ(d.at("tx_flushes"), 1000u);
    dev.tx_full = 9;
    EXPECT_EQ(fd::fidelity(dev).cause, C::kStalls);
    dev.tx_full = 500;
    dev.pacing_ratio = 0.995;
    EXPECT_EQ(fd::fidelity(dev).verdict, V::kKeptPace);
    EXPECT_EQ(fd::fidelity(dev).cause, C::kNone);
  }
}

// merge_spans and covered_within: the stalls of both polling lcores as one set of disjoint spans, and how
// much of a collective's span they cover (each stalled instant once).
TEST(DpdkStats, StalledTimeWithinASpan) {
  std::vector<fd::Span> spans = {{50, 60}, {10, 20}, {15, 30}, {30, 35}, {70, 70}, {100, 200}, {40, 45}};
  fd::merge_spans(spans);
  ASSERT_EQ(spans.size(), 4u);  // {10, 35} (overlapping and touching), {40, 45}, {50, 60}, {100, 200}; {70, 70} empty
  EXPECT_EQ(spans[0].from, 10u);
  EXPECT_EQ(spans[0].to, 35u);
  EXPECT_EQ(spans[3].from, 100u);
  EXPECT_EQ(spans[3].to, 200u);
  EXPECT_EQ(fd::covered_within(spans, 0, 1000), 25u + 5 + 10 + 100);
  EXPECT_EQ(fd::covered_within(spans, 20, 42), 15u + 2);
  EXPECT_EQ(fd::covered_within(spans, 35, 40), 0u);   // between two spans (ends are open)
  EXPECT_EQ(fd::covered_within(spans, 150, 160), 10u);  // inside one
  EXPECT_EQ(fd::covered_within(spans, 60, 50), 0u);   // an empty span
  EXPECT_EQ(fd::covered_within({}, 0, 1000), 0u);
  // Against a count of covered instants, on random spans.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<fd::Span> r;
    std::vector<bool> covered(300, false);
    for (int i = 0; i < 6; ++i) {
      const uint64_t a = rng() % 300, b = rng() % 300;
      r.push_back(fd::Span{std::min(a, b), std::max(a, b)});
      for (uint64_t t = std::min(a, b); t < std::max(a, b); ++t) covered[t] = true;
    }
    fd::merge_spans(r);
    for (size_t i = 1; i < r.size(); ++i) ASSERT_LT(r[i - 1].to, r[i].from) << "round " << round;
    const uint64_t from = rng() % 300, to = rng() % 300;
    uint64_t want = 0;
    for (uint64_t t = from; t < to; ++t) want += covered[t];
    EXPECT_EQ(fd::covered_within(r, from, to), want) << "round " << round << ": [" << from << ", " << to << ")";
  }
  // In the summary and the report: the column, and how many collectives overlapped a stall.
  fd::DpdkStats s;
  s.dilation = 10;
  fd::DpdkStats::Collective c;
  c.coll = 0;
  c.messages = 2;
  c.modelled = Duration::from_ns(1000);
  c.measured = Duration::from_ns(1500);
  c.deviation = 0.5;
  c.stalled = Duration::from_ns(400);
  s.collectives.push_back(c);
  c.coll = 1;
  c.stalled = Duration::zero();
  s.collectives.push_back(c);
  const std::string text = fd::format_measured_vs_modelled(s, RunResult{});
  EXPECT_NE(text.find("1 of 2 collectives overlapped stalls of a polling lcore"), std::string::npos) << text;
  EXPECT_NE(text.find("stalled (ns)"), std::string::npos) << text;
  EXPECT_NE(text.find("+50.000%        400.000"), std::string::npos) << text;
  EXPECT_EQ(text.find("column late start"), std::string::npos) << text;
  EXPECT_NE(text.find("+50.000%        400.000            0.000"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse("{\"dpdk\": " + fd::dpdk_stats_to_json(s) + "}").at("dpdk");
  EXPECT_EQ(j.at("collectives").at(0).at("stalled_ps"), 400'000u);
  EXPECT_EQ(j.at("collectives").at(1).at("stalled_ps"), 0u);
  EXPECT_EQ(j.at("collectives").at(1).at("late_start_ps"), 0u);
  EXPECT_EQ(j.at("rx_poll_stalls"), 0u);
}

// A collective whose message left late because of fabemu (here: the walker's thread away for 30 ms
// after handing the message over, as a cold start or a stall would keep it) says so: its late start is
// at least that (emulated, D = 1), the summary names it, and the JSON report has it. Before, the
// deviation (+30 ms on a 80 us message) read as the path's.
// Two ranks on one 1 Gb/s link at dilation 1, with one 10,000-byte message of collective 0 from rank 0 to
// rank 1 handed to the fabric at time 0 (its clock starts then; nothing polls until its engine runs).
// `base`: the other options (its dilation is set to 1).
static std::unique_ptr<fd::DpdkFabric> fabric_with_one_message(fd::DpdkPorts& ports,
                                                               const fd::DpdkFabricOptions& base = {}) {
  fd::DpdkFabricOptions opt = base;
  opt.dilation = 1;
  auto f = std::make_unique<fd::DpdkFabric>(Topology(network({dim_at(DimTopology::kFullyConnected, 2, 125'000'000)})),
                                            fd::AddressPlan::make_default(2), ports, opt);
  Message m{1, 0, 1, 10'000, 0};
  m.coll = 0;
  f->send(m, Time::zero());
  return f;
}

// fabric_with_one_message run to its end on `ports` (drained), its stats printed.
static fd::DpdkStats one_message_through(fd::DpdkPorts& ports, const fd::DpdkFabricOptions& base = {}) {
  const auto fabric = fabric_with_one_message(ports, base);
  fabric->engine().run();
  EXPECT_TRUE(fabric->drain());
  fd::DpdkStats s = fabric->stats();
  std::printf("%s", fd::format_dpdk_stats(s).c_str());
  return s;
}

TEST(DpdkFabric, AMessageThatLeavesLateGivesItsCollectiveALateStart) {
  REQUIRE_EAL();
  auto ports = fd::DpdkPorts::ring("fablate", port_config());
  const auto fabric = fabric_with_one_message(ports);
  fd::DpdkFabric& f = *fabric;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  f.engine().run();
  const fd::DpdkStats& s = f.stats();
  ASSERT_EQ(s.collectives.size(), 1u) << fd::format_dpdk_stats(s);
  const fd::DpdkStats::Collective& c = s.collectives[0];
  EXPECT_GE(c.late_start.ps(), Duration::from_ms(30).ps());
  // It left late and then crossed the ring pair: the measured span holds the late start (a receive lcore
  // may read its arrival a little before the main lcore reads the TSC after the tx_burst: 50 us slack).
  EXPECT_GE(c.measured.ps() + Duration::from_us(50).ps(), c.late_start.ps());
  EXPECT_LT(c.late_start.ps(), c.measured.ps() + Duration::from_ms(1).ps());
  EXPECT_GT(c.deviation, 100.0);  // 30 ms against 80 us
  RunResult rr;
  rr.collectives.resize(1);
  rr.collectives[0].type = "ALL_REDUCE";
  rr.collectives[0].name = "late";
  const std::string text = fd::format_measured_vs_modelled(s, rr);
  EXPECT_NE(text.find("1 of 1 collectives had a message leave later than its modelled departure by more than 1% of "
                      "the modelled span (column late start)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("late start (ns)"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse("{\"dpdk\": " + fd::dpdk_stats_to_json(s) + "}").at("dpdk");
  EXPECT_EQ(j.at("collectives").at(0).at("late_start_ps"), c.late_start.ps());
}

// A device under test of known latency (a ring pair whose a -> b frames a delay line holds 2 ms) is what
// a user validating a prototype measures: one 10,000-byte message (8 frames) from rank 0 to rank 1 over
// a 1 Gb/s link, dilation 1, modelled at 80 us plus the link latency. Its frames cannot arrive before the
// delay: the wire latency, the lateness against the model and the collective's measured span all hold
// it (less 50 us: a frame may be taken off the ring before the main lcore reads the TSC after its
// tx_burst), and the deviation is the delay's over the modelled span.
TEST(DpdkFabric, ADeviceOfKnownLatencyIsMeasured) {
  REQUIRE_EAL();
  constexpr uint64_t kDelayNs = 2'000'000;
  const uint64_t slack_ns = 50'000;
  auto ports = fd::DpdkPorts::ring("fabdly", port_config(), 1, fd::RingDevice{kDelayNs, 0});
  EXPECT_NE(ports.describe().find("a -> b through a device of 2000.000 us latency,"), std::string::npos)
      << ports.describe();
  const fd::DpdkStats s = one_message_through(ports);
  ASSERT_EQ(s.messages, 1u);
  EXPECT_EQ(s.settings.ring_device.delay_ns, kDelayNs);
  EXPECT_EQ(s.data_frames, 8u);  // 1,412 message bytes a frame at a 1500-byte MTU
  // Every frame a -> b crosses the device: the 8 and any the sender sent again (a stall of the polling
  // lcore of more than the 10 ms first RTO makes it time out before it reads the ACK: CI under ASan).
  EXPECT_EQ(ports.ring_pair()->delayed_frames(), 8u + s.retransmissions);
  EXPECT_EQ(s.late, 1u);
  EXPECT_GE(s.latency_ns.min() + slack_ns, kDelayNs);
  EXPECT_LT(s.latency_ns.max(), kDelayNs + 1'000'000'000u);  // against a gross failure only
  ASSERT_EQ(s.collectives.size(), 1u);
  const fd::DpdkStats::Collective& c = s.collectives[0];
  const uint64_t modelled_ps = c.modelled.ps();
  EXPECT_GE(modelled_ps, Duration::from_us(80).ps());  // 10,000 bytes at 125 MB/s, and the latency
  EXPECT_LT(modelled_ps, Duration::from_us(90).ps());
  EXPECT_GE(c.measured.ps() + slack_ns * 1000, kDelayNs * 1000);
  // Late by at least the delay less the modelled span (the first frame left at or after time 0).
  EXPECT_GE(s.lateness_ns.min() + slack_ns + modelled_ps / 1000, kDelayNs);
  EXPECT_GE(c.deviation, static_cast<double>(kDelayNs * 1000 - slack_ns * 1000) / static_cast<double>(modelled_ps) - 1);
}

// A device slower than the link (10 MB/s against the link's 125 MB/s, no latency): the one message's 8
// frames (10,816 bytes) cross it one behind the other, so its last frame cannot arrive before the
// device's time for all of them (1.08 ms), and the collective is measured that much later than the 80-90 us
// the model gives it.
TEST(DpdkFabric, ADeviceSlowerThanTheLinkIsMeasured) {
  REQUIRE_EAL();
  constexpr uint64_t kBytesPerSec = 10'000'000;
  auto ports = fd::DpdkPorts::ring("fabrate", port_config(), 1, fd::RingDevice{0, kBytesPerSec});
  EXPECT_NE(ports.describe().find("a -> b through a device of 0.080 Gb/s,"), std::string::npos) << ports.describe();
  const fd::DpdkStats s = one_message_through(ports);
  EXPECT_EQ(s.settings.ring_device.bytes_per_sec, kBytesPerSec);
  ASSERT_EQ(s.data_frames, 8u);
  const uint64_t frame_bytes = 10'000 + 8 * fd::frame_bytes(fd::WireMode::kFabemu, 0);  // 8 heads of 102 bytes
  const uint64_t device_ns = frame_bytes * 1'000'000'000 / kBytesPerSec;  // 1,081,600 ns
  // The first frame was taken off the ring after the send stamp was read at the earliest 50 us before.
  EXPECT_GE(s.latency_ns.min() + 50'000, device_ns);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_GE(s.collectives[0].measured.ps() + Duration::from_us(50).ps(), device_ns * 1000);
  EXPECT_GT(s.collectives[0].deviation, 10.0);  // 1.08 ms against 80-90 us
  EXPECT_EQ(s.late, 1u);
}

// A switch prototype that marks ECN: the one message's 8 frames (7 of 1,514 bytes, a last one of 218) sent
// ECT(0) in DSCP 26 through a 1 MB/s device (1.5 ms a full frame) that marks a frame finding 2.5 full
// frames' bytes queued ahead. The frames leave 12 us apart at the link's 1 Gb/s, so frame i finds i frames
// ahead (less what the device let through meanwhile: a frame's worth only after 1.5 ms): frames 3..7 arrive
// CE, 0..2 ECT(0). The DPDK section counts them by codepoint, the collective has its 5, the device says it
// marked 5, and the summary's traffic class line says so. Sent Not-ECT, nothing is marked.
TEST(DpdkFabric, FramesAnEcnSwitchMarksAreCountedPerCollective) {
  REQUIRE_EAL();
  constexpr uint64_t kFull = 1514;
  auto ports = fd::DpdkPorts::ring("fabecn", port_config(), 1, fd::RingDevice{0, 1'000'000, kFull * 5 / 2});
  EXPECT_NE(ports.describe().find("a -> b through a device of 0.008 Gb/s marking ECN-capable frames CE behind 3785 "
                                  "bytes queued"),
            std::string::npos)
      << ports.describe();
  fd::DpdkFabricOptions opt;
  opt.dscp = 26;
  opt.ecn = fd::Ecn::kEct0;
  // The frames come through 1.5 ms apart: no NACK of a message idle that long, no RTO under the 11 ms the
  // device takes for all of them (their copies would count too).
  opt.nack_delay = Duration::from_ms(100);
  opt.rto = Duration::from_ms(1000);
  const fd::DpdkStats s = one_message_through(ports, opt);
  ASSERT_EQ(s.data_frames, 8u);
  ASSERT_EQ(s.retransmissions, 0u);
  EXPECT_EQ(s.data_by_ecn[static_cast<int>(fd::Ecn::kEct0)], 3u);
  EXPECT_EQ(s.data_by_ecn[static_cast<int>(fd::Ecn::kCe)], 5u);
  EXPECT_EQ(s.data_by_ecn[static_cast<int>(fd::Ecn::kNotEct)] + s.data_by_ecn[static_cast<int>(fd::Ecn::kEct1)], 0u);
  EXPECT_EQ(s.dscp_changed, 0u);
  EXPECT_EQ(s.ring_ce_marked, 5u);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].ce_frames, 5u);
  const std::string text = fd::format_dpdk_stats(s);
  EXPECT_NE(text.find("  traffic class       sent DSCP 26, ECT(0); data frames received: 3 ECT(0), 5 CE (62.50%: "
                      "marked by a switch whose queue built up); DSCP rewritten on 0 (the ring pair's device marked 5 "
                      "frames CE)\n"),
            std::string::npos)
      << text;
  RunResult rr;
  rr.collectives.resize(1);
  const std::string table = fd::format_measured_vs_modelled(s, rr);
  EXPECT_NE(table.find("late start (ns)         CE\n"), std::string::npos) << table;
  EXPECT_NE(table.find("column CE: the collective's data frames that arrived marked CE"), std::string::npos) << table;
  const nlohmann::json j = nlohmann::json::parse("{\"dpdk\": " + fd::dpdk_stats_to_json(s) + "}").at("dpdk");
  EXPECT_EQ(j.at("settings").at("dscp"), 26);
  EXPECT_EQ(j.at("settings").at("ecn"), "ect0");
  EXPECT_EQ(j.at("settings").at("ring_ecn_bytes"), kFull * 5 / 2);
  EXPECT_EQ(j.at("data_by_ecn").at("ce"), 5u);
  EXPECT_EQ(j.at("data_by_ecn").at("ect0"), 3u);
  EXPECT_EQ(j.at("ring_ce_marked"), 5u);
  EXPECT_EQ(j.at("collectives").at(0).at("ce_frames"), 5u);

  // Not ECN-capable: the same device marks nothing, and the line says what left and came back.
  auto plain = fd::DpdkPorts::ring("fabecn2", port_config(), 1, fd::RingDevice{0, 1'000'000, kFull * 5 / 2});
  opt.ecn = fd::Ecn::kNotEct;
  const fd::DpdkStats n = one_message_through(plain, opt);
  EXPECT_EQ(n.data_by_ecn[static_cast<int>(fd::Ecn::kNotEct)], 8u);
  EXPECT_EQ(n.ring_ce_marked, 0u);
  EXPECT_EQ(n.collectives.at(0).ce_frames, 0u);
  EXPECT_NE(fd::format_dpdk_stats(n).find("  traffic class       sent DSCP 26, Not-ECT; data frames received: 8 Not-ECT; "
                                          "DSCP rewritten on 0 (the ring pair's device marked 0 frames CE)\n"),
            std::string::npos)
      << fd::format_dpdk_stats(n);
  EXPECT_EQ(fd::format_measured_vs_modelled(n, rr).find("CE"), std::string::npos);
}

// The TOS the fabric refuses: a DSCP beyond 6 bits, and CE (a switch's mark, not a sender's).
TEST(DpdkFabric, ADscpOrEcnNoFrameCanCarryIsRefused) {
  REQUIRE_EAL();
  auto ports = fd::DpdkPorts::ring("fabtos", port_config());
  fd::DpdkFabricOptions opt;
  opt.dscp = 64;
  EXPECT_THROW(fabric_with_one_message(ports, opt), std::invalid_argument);
  opt.dscp = 63;
  opt.ecn = fd::Ecn::kCe;
  EXPECT_THROW(fabric_with_one_message(ports, opt), std::invalid_argument);
  // The default TOS that came back as it left: no traffic class line.
  fd::DpdkStats s;
  s.data_by_ecn[0] = 10;
  EXPECT_EQ(fd::format_traffic_class(s), "");
  s.dscp_changed = 1;  // a device rewrote a DSCP of 0
  EXPECT_NE(fd::format_traffic_class(s).find("DSCP rewritten on 1"), std::string::npos);
  s.dscp_changed = 0;
  s.data_by_ecn[0] = 8;
  s.data_by_ecn[3] = 2;  // CE on frames sent Not-ECT: a device that marks what it must not
  EXPECT_EQ(fd::format_traffic_class(s), "  traffic class       sent DSCP 0, Not-ECT; data frames received: 8 Not-ECT, 2 "
                                         "CE (20.00%: marked by a switch whose queue built up); DSCP rewritten on 0\n");
  s.settings.ecn = fd::Ecn::kEct1;
  s.data_by_ecn[1] = 5;  // and the ECT(1) frames of a run sent ECT(1), three cleared on the way
  s.data_by_ecn[0] = 3;
  s.data_by_ecn[3] = 0;
  EXPECT_EQ(fd::format_traffic_class(s), "  traffic class       sent DSCP 0, ECT(1); data frames received: 5 ECT(1), 3 "
                                         "Not-ECT (their ECN cleared on the way); DSCP rewritten on 0\n");
}

// A collective that could only start once an earlier one's frames came through a slow device inherits
// that delay, and it is not its own: message A (collective 0, rank 0 -> 1) through a 20 ms device, and
// message B (collective 1, rank 1 -> 0) handed over when A is delivered (dilation 1: the walker waits for
// A's frames, 20 ms after A's modelled delivery at about 80 us). B is measured from its hand-over, so both
// collectives are measured at about the device's 20 ms (not B at 40 ms, from its modelled start), and B did
// not start late by fabemu's doing (it left as soon as it was handed over; it was 20 ms after its
// modelled departure only because the walker waited for the wire).
TEST(DpdkFabric, ACollectiveThatWaitedForTheWireIsMeasuredFromItsRealStart) {
  REQUIRE_EAL();
  constexpr uint64_t kDelayNs = 20'000'000;
  auto ports = fd::DpdkPorts::ring("fabdly3", port_config(), 1, fd::RingDevice{kDelayNs, 0});
  const auto fabric = fabric_with_one_message(ports);  // A: id 1, 0 -> 1, collective 0
  fd::DpdkFabric& f = *fabric;
  struct Then final : DeliveryListener {
    fd::DpdkFabric* f = nullptr;
    void on_delivered(uint64_t id, Time at) override {
      if (id != 1) return;
      Message b{2, 1, 0, 10'000, 0};
      b.coll = 1;
      f->send(b, at);
    }
  } then;
  then.f = &f;
  f.set_listener(&then);
  f.engine().run();
  ASSERT_TRUE(f.drain());
  const fd::DpdkStats& s = f.stats();
  std::printf("%s", fd::format_dpdk_stats(s).c_str());
  ASSERT_EQ(s.collectives.size(), 2u);
  const fd::DpdkStats::Collective& a = s.collectives[0];
  const fd::DpdkStats::Collective& b = s.collectives[1];
  EXPECT_EQ(s.late, 2u);
  const uint64_t delay_ps = kDelayNs * 1000;
  // The wire latency of each message (one per collective: the histogram's min and max are theirs), first
  // frame taken by the device to last frame received: the device's 20 ms, plus whatever stalls of this
  // host (a busy CI machine takes the polling core for 10 ms and more) added. The bounds are in terms of
  // it, so that a stall moves them along with the measurement.
  ASSERT_EQ(s.latency_ns.count(), 2u);
  const uint64_t wire_min_ps = s.latency_ns.min() * 1000, wire_max_ps = s.latency_ns.max() * 1000;
  EXPECT_GE(wire_min_ps + Duration::from_us(50).ps(), delay_ps);
  for (const auto* c : {&a, &b}) {
    EXPECT_GE(c->measured.ps() + Duration::from_us(50).ps(), delay_ps) << "collective " << c->coll;
    // Its own message's wire latency and the lateness of its first frame (fabemu's delay in putting it on
    // the wire), with 2 ms to spare: B from its hand-over, not from its modelled start, which would add A's
    // whole wire latency (at least wire_min).
    EXPECT_LE(c->measured.ps(), c->late_start.ps() + wire_max_ps + Duration::from_ms(2).ps())
        << "collective " << c->coll;
  }
  EXPECT_LT(b.measured.ps(), 2 * wire_min_ps) << "B measured from its modelled start, with A's wire latency";
  // B left when it was handed over, a wire latency after its modelled departure by the wire's doing: its
  // lateness is at most a stall of the polling thread, never A's wire latency.
  EXPECT_LT(b.late_start.ps(), wire_min_ps / 2);
}

// A device that cannot take the frames as fast as the link sends them refuses them once its queues are
// full, and the fidelity line blames it, not fabemu: one 2 MB message over a 1 GB/s link (dilation 1)
// into a ring pair of 256-frame rings whose device carries 100 MB/s (it holds 512 frames, a's transmit
// ring 256 more): after about 768 frames the device's queue is full and the rest leave at its rate.
TEST(DpdkFabric, ADeviceThatRefusesFramesIsBlamedForTheLateness) {
  REQUIRE_EAL();
  auto ports = fd::DpdkPorts::ring("fabfull", port_config(), 1, fd::RingDevice{0, 100'000'000}, 256);
  fd::DpdkFabricOptions opt;
  opt.dilation = 1;
  fd::DpdkFabric f(Topology(network({dim_at(DimTopology::kFullyConnected, 2, 1'000'000'000)})),
                   fd::AddressPlan::make_default(2), ports, opt);
  Message m{1, 0, 1, 2'000'000, 0};
  m.coll = 0;
  f.send(m, Time::zero());
  f.engine().run();
  ASSERT_TRUE(f.drain());
  const fd::DpdkStats& s = f.stats();
  const std::string text = fd::format_dpdk_stats(s);
  std::printf("%s", text.c_str());
  EXPECT_GT(s.tx_full, 0u);
  const fd::Fidelity fid = fd::fidelity(s);
  EXPECT_EQ(fid.verdict, fd::Fidelity::Verdict::kFellBehind);
  EXPECT_EQ(fid.cause, fd::Fidelity::Cause::kDevice);
  EXPECT_NE(text.find("The device took the frames slower than the target rate"), std::string::npos);
  EXPECT_NE(text.find("  device full         the transmit queue was full in "), std::string::npos);
  // The message crossed the device at its rate: 2 MB and the frame heads at 100 MB/s, at least 20 ms.
  EXPECT_GE(s.latency_ns.max() + 50'000, 20'000'000u);
}

// The same device under a whole workload (the 8-rank ring all-reduce of 1 MiB at dilation 100, a 300 us
// device): the walker's report stays exactly the software model's (a slow device changes what is measured,
// never the modelled times), every message arrives late, none faster than the device, and every
// collective's measured span exceeds its modelled one.
TEST(DpdkFabric, ADeviceOfKnownLatencyChangesTheMeasurementsNotTheReport) {
  REQUIRE_EAL();
  constexpr uint64_t kDelayNs = 300'000;
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fabdly2", port_config(), 1, fd::RingDevice{kDelayNs, 0});
  fd::DpdkFabricOptions opt;
  opt.dilation = 100;
  const DpdkRun d = run_dpdk(w, ports, opt);
  expect_exact(sw, d);
  EXPECT_EQ(d.stats.late, d.stats.messages);
  EXPECT_GE(d.stats.latency_ns.min() + 50'000, kDelayNs);
  EXPECT_EQ(ports.ring_pair()->delayed_frames(), d.stats.data_frames + d.stats.retransmissions);
  ASSERT_FALSE(d.stats.collectives.empty());
  for (const auto& c : d.stats.collectives) EXPECT_GT(c.deviation, 0.0) << "collective " << c.coll;
}

// The summary's deviation median over an even count of collectives is the mean of the two middle ones
// (it was the upper one: +40% here), and over an odd count the middle one.
TEST(DpdkFabric, DeviationMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  fd::DpdkStats s;
  s.dilation = 10;
  fd::DpdkStats::Collective c;
  c.messages = 1;
  c.modelled = Duration::from_ns(1000);
  for (const double d : {0.8, 0.1, 0.4, 0.2}) {
    c.deviation = d;
    c.measured = Duration::from_ns(static_cast<uint64_t>(1000 * (1 + d)));
    s.collectives.push_back(c);
    ++c.coll;
  }
  std::string text = fd::format_measured_vs_modelled(s, RunResult{});
  EXPECT_NE(text.find("4 collectives: deviation median +30.000%, min +10.000%, max +80.000%"), std::string::npos)
      << text;
  c.deviation = 0.05;
  s.collectives.push_back(c);
  text = fd::format_measured_vs_modelled(s, RunResult{});
  EXPECT_NE(text.find("5 collectives: deviation median +20.000%, min +5.000%, max +80.000%"), std::string::npos)
      << text;
}

// A rank that sends on several links at once must not serialize them. With one sender per rank, the
// frames of its message on one link, waiting for their paced departures, held back its messages on its
// other links, which then caught up only by the pacer's burst allowance (64 frames): the quick-start
// sample at --dilation 1000 measured +8.5% median and +37% worst deviation on a perfect ring pair, and
// this test +445% median with every message late. Senders are per first link now: -0.06% here.
//
// The workload is a direct all-to-all on FullyConnected(4) at 250 Mb/s: each rank sends 1 MiB (751
// frames, far more than the burst allowance) on each of its three links at once, 33.6 ms each. Polling
// stalls of this shared machine can make a collective late too. So the bound is on the median of 4
// collectives, with up to three attempts.
TEST(DpdkFabric, ARankSendsOnItsLinksInParallel) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = parallel_links_all_to_all(dir, 4);
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fabpar", port_config());
  fd::DpdkFabricOptions opt;
  opt.dilation = 1;
  for (int attempt = 1;; ++attempt) {
    // The share of a core this thread (which polls the ports) got during the run: under 0.8 the host
    // took the core from it (other jobs, or ctest -j on two cores), and the timing says nothing.
    const auto wall0 = std::chrono::steady_clock::now();
    timespec cpu0{}, cpu1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    const DpdkRun d = run_dpdk(w, ports, opt);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    const double share =
        (static_cast<double>(cpu1.tv_sec - cpu0.tv_sec) + static_cast<double>(cpu1.tv_nsec - cpu0.tv_nsec) * 1e-9) / wall_s;
    expect_exact(sw, d);
    ASSERT_EQ(d.stats.collectives.size(), 4u);
    // Every rank's three links carried its messages: 12 first links.
    EXPECT_EQ(d.stats.links.size(), 12u);
    std::vector<double> dev;
    for (const fd::DpdkStats::Collective& c : d.stats.collectives) {
      EXPECT_EQ(c.messages, 12u);
      EXPECT_EQ(c.bytes, uint64_t{12} << 20);
      dev.push_back(c.deviation);
    }
    std::sort(dev.begin(), dev.end());
    const double median = (dev[1] + dev[2]) / 2;
    std::printf(
        "attempt %d: deviation median %+.3f%%, worst %+.3f%%; %llu late of %llu; %llu stalls, longest %llu ns; "
        "%.0f%% of a core\n",
        attempt, 100 * median, 100 * dev.back(), static_cast<unsigned long long>(d.stats.late),
        static_cast<unsigned long long>(d.stats.late + d.stats.on_time), static_cast<unsigned long long>(d.stats.poll_stalls),
        static_cast<unsigned long long>(d.stats.poll_gap_max_ns), 100 * share);
    // A run disturbed by the host (the polling thread descheduled for milliseconds: +6-18% with a CPU hog
    // alongside, +185-197% sharing a core with another test) is run again; the head-of-line bug this
    // guards against gives +445% in every run, at a full core. Under AddressSanitizer the polling thread
    // itself is slower (+11-12% in all five runs of a CI run at a full core, 84-95 stalls of up to 6 ms):
    // the bound there is +50%, still far below the bug's.
    const double bound = FABEMU_ASAN ? 0.5 : 0.1;
    if (median > bound && attempt < 5) continue;
    if (median > bound && share < 0.8) {
      GTEST_SKIP() << "the host gave the polling thread " << std::lround(100 * share) << "% of a core in the last of "
                   << attempt << " runs (deviation +" << std::lround(100 * median)
                   << "%): too loaded to time the links; the exact times and counts were checked";
    }
    EXPECT_LT(median, bound) << fd::format_dpdk_stats(d.stats);
    break;
  }
}

// A pair whose window is full holds back its own later messages only. Window 1, dilation 1, 1 Gb/s links
// of FullyConnected(4): rank 0 sends 4000 zero-byte messages to rank 1 (collective 0), all due at once
// (ser(0) = 0), each waiting for the ACK of the one before: 4000 round trips. Rank 2 sends 1000 bytes to
// rank 3 (collective 1), due at the same time, on a link of its own and handed over last. Modelled, it
// arrives within 10 us. It used to wait behind the whole backlog of the first pair (every later message of
// every pair waited once one pair's window was full), so both collectives took the round trips (7.8 ms
// for 2000 of them; collective 1 measured 1.0004 times collective 0); now it leaves at once, behind only
// the run's start (the first frames leave 1-2 ms late when the machine is busy). A polling stall delays
// both collectives alike, so the bound compares them: collective 1 within half of collective 0.
TEST(DpdkFabric, AFullWindowHoldsBackOnlyItsOwnPair) {
  REQUIRE_EAL();
  struct Arrivals : DeliveryListener {
    uint64_t n = 0;
    void on_delivered(uint64_t, Time) override { ++n; }
  } got;
  auto ports = fd::DpdkPorts::ring("fabwin", port_config());
  fd::DpdkFabricOptions opt;
  opt.dilation = 1;
  opt.window = 1;
  opt.model_mtu = 4096;
  fd::DpdkFabric f(Topology(network({dim_at(DimTopology::kFullyConnected, 4, 125'000'000)})),
                   fd::AddressPlan::make_default(4), ports, opt);
  f.set_listener(&got);
  constexpr uint64_t kBacklog = 4000;
  for (uint64_t id = 0; id < kBacklog; ++id) f.send(Message{id, 0, 1, 0, 0, 0}, Time::zero());
  f.send(Message{kBacklog, 2, 3, 1000, 0, 1}, Time::zero());
  f.engine().run();
  f.drain();
  const fd::DpdkStats& s = f.stats();
  EXPECT_EQ(got.n, kBacklog + 1);
  EXPECT_EQ(s.messages_completed, kBacklog + 1);
  ASSERT_EQ(s.collectives.size(), 2u);
  EXPECT_LT(s.collectives[1].modelled, Duration::from_us(10));
  EXPECT_LT(s.collectives[1].measured.ps() * 2, s.collectives[0].measured.ps()) << fd::format_dpdk_stats(s);
}

TEST(DpdkFabric, MultiHopTopologiesMatchTheSoftwareModel) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  Workload w = generated_all_reduce(dir);
  int n = 0;
  for (const DimTopology kind : {DimTopology::kSwitch, DimTopology::kFullyConnected}) {
    w.net = network({dim(kind, 8)});
    const RunResult sw = run_software(w);
    auto ports = fd::DpdkPorts::ring("fabt" + std::to_string(n++), port_config());
    expect_exact(sw, run_dpdk(w, ports, fd::DpdkFabricOptions{}));
  }
}

TEST(DpdkFabric, ForeignFramesAreCountedNotTakenForOurs) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  auto ports = fd::DpdkPorts::ring("fab8", port_config());
  // Already waiting on the receive port when the run starts: an ARP-like frame, and one of our frames
  // with a corrupted header byte.
  rte_mbuf* m[2] = {rte_pktmbuf_alloc(ports.a().pool()), rte_pktmbuf_alloc(ports.a().pool())};
  ASSERT_NE(m[0], nullptr);
  ASSERT_NE(m[1], nullptr);
  auto* arp = rte_pktmbuf_mtod(m[0], uint8_t*);
  std::memset(arp, 0, 60);
  arp[12] = 0x08;
  arp[13] = 0x06;
  m[0]->data_len = 60;
  m[0]->pkt_len = 60;
  fd::FrameSpec spec;
  spec.src = fd::default_endpoint(0);
  spec.dst = fd::default_endpoint(1);
  spec.hdr.dst_rank = 1;
  spec.hdr.count = 1;
  spec.payload_bytes = 16;
  ASSERT_GT(fd::fill_mbuf(m[1], spec), 0);
  rte_pktmbuf_mtod(m[1], uint8_t*)[60] ^= 0x01;  // inside the fabemu header
  ASSERT_EQ(ports.a().tx_burst(m, 2), 2);
  const DpdkRun d = run_dpdk(w, ports, fd::DpdkFabricOptions{});
  ASSERT_TRUE(d.result.stuck.empty());
  EXPECT_EQ(d.result.total.ps(), sw.total.ps());
  EXPECT_EQ(d.stats.not_ours, 2u);
  EXPECT_EQ(d.stats.not_ours_by_verdict[static_cast<size_t>(fd::Verdict::kNotIpv4)], 1u);
  // The breakdown under "not ours": each reason, a colon, its count (the longest reason fits).
  const std::string text = fd::format_dpdk_stats(d.stats);
  EXPECT_NE(text.find("\n    not IPv4 (EtherType):                            1\n"), std::string::npos) << text;
  EXPECT_EQ(d.stats.frames_rx, d.stats.frames_tx + 2);
  EXPECT_EQ(d.stats.bytes_completed, d.stats.message_bytes);
}

// A device that brings none of our frames back but receives frames of its own without end (net_null's
// receive side: frames of zeros, as fast as it is polled): the run stops after the stall timeout, and its
// `stall` says that frames not fabemu's were arriving. Those frames counted as progress once, and the run
// waited forever. It stops as SIGINT stops it: the walker's result holds the unfinished ranks, the stats
// what was sent.
TEST(DpdkFabric, ADeviceThatBringsNothingBackStopsAfterTheStallTimeout) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  auto ports = fd::DpdkPorts::devargs("net_null_stall0", "", port_config());
  fd::DpdkFabricOptions opt;
  opt.stall_timeout = Duration::from_ms(300);
  const auto start = std::chrono::steady_clock::now();
  const DpdkRun d = run_dpdk(w, ports, opt);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_NE(d.stats.stall.find("nothing of ours arrived on net_null_stall0"), std::string::npos) << d.stats.stall;
  EXPECT_NE(d.stats.stall.find("frames that are not fabemu's arrived"), std::string::npos) << d.stats.stall;
  EXPECT_NE(d.stats.stall.find("for 300 ms"), std::string::npos) << d.stats.stall;
  EXPECT_EQ(d.stats.stall.find("--drop-rate"), std::string::npos) << d.stats.stall;
  EXPECT_FALSE(d.drained);
  EXPECT_EQ(d.result.stuck.size(), 8u + 1u);  // every rank, and the collective
  EXPECT_GT(d.stats.data_frames, 0u);
  EXPECT_EQ(d.stats.messages_completed, 0u);
  EXPECT_GT(d.stats.not_ours, 0u);
  EXPECT_NE(fd::format_dpdk_stats(d.stats).find("  stalled             the run stopped: message "), std::string::npos);
  EXPECT_NE(fd::dpdk_stats_to_json(d.stats).find("\"stall\": \"message "), std::string::npos);
}

// The fault injection drops every data frame (drop_rate 1). With the receive side on the main lcore each
// dropped frame counted as progress, so the run retransmitted for ever (17.7 million retransmissions in
// two minutes of `fabemu run --drop-rate 1 -- -l 0`); a frame the fault injection drops is now no
// progress, and the run stops after the stall timeout with a `stall` that says why. A run that completes
// has `stall` null in the JSON.
// A device that always drops some frames: between two ring pairs, a thread that passes every frame but
// drops those longer than 1000 bytes (a device whose MTU is smaller than the wire's). A 10,000-byte
// message is 7 full frames (dropped) and a short last one (passed): the receiver NACKs the holes, each
// retransmission is dropped again, and the NACKs keep coming, frames of ours. They used to count as
// progress, so the run waited for ever; now only completions and ACKs do, and the run stops after the
// stall timeout, naming the NACKs and the wire MTU. A watchdog interrupts the run after 20 s, so the test
// fails instead of hanging when the stall is missed.
TEST(DpdkFabric, ADeviceThatDropsSomeFramesForGoodStopsAfterTheStallTimeout) {
  REQUIRE_EAL();
  fd::RingPair left("mtudrop_l"), right("mtudrop_r");
  fd::Port in(left.b(), port_config()), out(right.a(), port_config());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> dropped{0};
  std::thread device([&] {
    rte_mbuf* b[32];
    while (!stop.load(std::memory_order_relaxed)) {
      uint16_t n = in.rx_burst(b, 32), k = 0;
      for (uint16_t i = 0; i < n; ++i) {
        if (rte_pktmbuf_pkt_len(b[i]) > 1000) {
          rte_pktmbuf_free(b[i]);
          dropped.fetch_add(1, std::memory_order_relaxed);
        } else {
          b[k++] = b[i];
        }
      }
      uint16_t sent = out.tx_burst(b, k);
      if (sent < k) rte_pktmbuf_free_bulk(b + sent, k - sent);
      n = out.rx_burst(b, 32);  // ACKs and NACKs, back
      sent = in.tx_burst(b, n);
      if (sent < n) rte_pktmbuf_free_bulk(b + sent, n - sent);
    }
  });
  std::thread watchdog([&] {
    for (int i = 0; i < 200 && !stop.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!stop.load()) fd::Eal::request_stop();
  });
  {
    auto ports = fd::DpdkPorts::devargs("net_ring_mtudrop_l_a", "net_ring_mtudrop_r_b", port_config());
    fd::DpdkFabricOptions opt;
    opt.stall_timeout = Duration::from_ms(300);
    opt.rto = Duration::from_ms(1);
    fd::DpdkFabric f(Topology(network({dim_at(DimTopology::kFullyConnected, 2, 125'000'000)})),
                     fd::AddressPlan::make_default(2), ports, opt);
    f.send(Message{1, 0, 1, 10'000, 0}, Time::zero());
    f.engine().run();
    const fd::DpdkStats& s = f.stats();
    EXPECT_FALSE(f.interrupted()) << "the watchdog stopped a run that did not stall";
    EXPECT_NE(s.stall.find("no message completed and no ACK came back"), std::string::npos) << s.stall;
    EXPECT_NE(s.stall.find("NACKs asked for packets that never arrived"), std::string::npos) << s.stall;
    EXPECT_NE(s.stall.find("--wire-mtu is 1500"), std::string::npos) << s.stall;
    EXPECT_NE(s.stall.find("for 300 ms"), std::string::npos) << s.stall;
    EXPECT_GT(s.nacks, 0u);
    EXPECT_GT(s.retransmissions, 0u);
    EXPECT_EQ(s.messages_completed, 0u);
  }
  stop = true;
  device.join();
  watchdog.join();
  fd::Eal::clear_stop();
  EXPECT_GT(dropped.load(), 7u);
}

TEST(DpdkFabric, EveryFrameDroppedStopsTheRunAfterTheStallTimeout) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  auto ports = fd::DpdkPorts::ring("fabstall1", port_config());
  fd::DpdkFabricOptions opt;
  opt.rx_lcore = fd::DpdkFabricOptions::kRxLcoreOff;
  opt.stall_timeout = Duration::from_ms(300);
  opt.faults.drop_rate = 1.0;
  const auto start = std::chrono::steady_clock::now();
  const DpdkRun d = run_dpdk(w, ports, opt);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(d.stats.rx_lcore, -1);
  EXPECT_NE(d.stats.stall.find("nothing of ours arrived on ring pair"), std::string::npos) << d.stats.stall;
  EXPECT_NE(d.stats.stall.find("(--drop-rate 1: the fault injection drops all of the data frames that arrive)"),
            std::string::npos)
      << d.stats.stall;
  EXPECT_FALSE(d.drained);
  EXPECT_FALSE(d.result.stuck.empty());
  EXPECT_EQ(d.stats.messages_completed, 0u);
  EXPECT_EQ(d.stats.acks, 0u);
  EXPECT_GT(d.stats.timeout_retransmissions, 0u);
  EXPECT_EQ(d.stats.injected_drops, d.stats.frames_rx);

  auto ok_ports = fd::DpdkPorts::ring("fabstall2", port_config());
  const DpdkRun ok = run_dpdk(w, ok_ports, fd::DpdkFabricOptions{});
  EXPECT_TRUE(ok.stats.stall.empty());
  EXPECT_NE(fd::dpdk_stats_to_json(ok.stats).find("\"stall\": null"), std::string::npos);
  EXPECT_EQ(fd::format_dpdk_stats(ok.stats).find("stalled"), std::string::npos);
}

// The receive side does not NACK while it is behind: a round that came back full (every burst full)
// leaves frames in the port, and a message that looks idle may have its next frames waiting there. The
// check runs once the port is drained, or after 4 NACK delays if it never is. Message 0 of 0 -> 1 has an
// old hole (seq 1); 300 frames of message 1 then wait in the port: the first poll takes 256 of them and
// sends no NACK, the second drains the port and NACKs message 0. Before, the first poll NACKed it.
TEST(RxPath, NoNackScanWhileThePortHoldsABacklog) {
  REQUIRE_EAL();
  auto ports = fd::DpdkPorts::ring("rxbehind", port_config());
  const auto plan = fd::AddressPlan::make_default(2);
  fd::RxPathConfig rc;
  rc.npus = 2;
  rc.plan = &plan;
  rc.rules = plan.decode_rules(fd::WireMode::kFabemu);
  rc.rules.verify_udp_checksum = false;
  rc.nack_delay = Duration::from_ms(20);  // the fallback (4 delays after the last check) far off
  fd::RxPath path(rc, ports.b(), nullptr);
  struct Sink final : fd::RxSink {
    void completed(const fd::RxCompletion&) override {}
    void feedback(const fd::DecodedFrame&) override {}
  } sink;
  const auto send = [&](uint64_t id, uint32_t seq, uint32_t count) {
    fd::FrameSpec spec;
    spec.src = plan.at(0);
    spec.dst = plan.at(1);
    spec.hdr = fd::FabemuHeader{fd::PacketKind::kData, 0, 0, 1, id, seq, count, uint64_t{count} * 16, uint64_t{seq} * 16, 0};
    spec.payload_bytes = 16;
    rte_mbuf* m = rte_pktmbuf_alloc(ports.a().pool());
    ASSERT_NE(m, nullptr);
    ASSERT_GT(fd::fill_mbuf(m, spec), 0);
    ASSERT_EQ(ports.a().tx_burst(&m, 1), 1);
  };
  const auto drain_a = [&] {
    rte_mbuf* rx[32];
    uint32_t n = 0;
    for (uint16_t k; (k = ports.a().rx_burst(rx, 32)) > 0;) {
      n += k;
      rte_pktmbuf_free_bulk(rx, k);
    }
    return n;
  };
  send(0, 0, 4);
  send(0, 2, 4);  // hole at 1
  path.poll(sink, fd::RxPath::kStampWall);
  EXPECT_EQ(path.stats().nacks, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the hole is older than the NACK delay
  for (uint32_t seq = 0; seq < 300; ++seq) send(1, seq, 400);
  path.poll(sink, fd::RxPath::kStampWall);
  EXPECT_EQ(path.stats().frames_rx, 2u + 256u);
  EXPECT_EQ(path.stats().nacks, 0u);  // behind: no NACK yet
  path.poll(sink, fd::RxPath::kStampWall);
  EXPECT_EQ(path.stats().frames_rx, 2u + 300u);
  EXPECT_EQ(path.stats().nacks, 1u);  // drained: message 0 NACKed (message 1 is not: no hole, not idle)
  drain_a();
}

// The payload checks (DpdkFabricOptions::checksums): on an in-process ring pair the receiver reads the
// sender's own mbufs, so by default it does not sum their payloads again (the report says "skipped");
// with Checksums::kOn it does, and a frame of ours whose payload changed on the way is then refused. The
// all-reduce gives the software model's times either way.
TEST(DpdkFabric, RingPairSkipsPayloadChecksUnlessAsked) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  for (const fd::WireMode mode : {fd::WireMode::kFabemu, fd::WireMode::kRoceV2}) {
    SCOPED_TRACE(mode == fd::WireMode::kFabemu ? "fabemu mode" : "RoCEv2 mode");
    fd::DpdkFabricOptions opt;
    opt.mode = mode;
    {
      auto ports = fd::DpdkPorts::ring(mode == fd::WireMode::kFabemu ? "fabvc1" : "fabvc2", port_config());
      EXPECT_TRUE(ports.in_process());
      const DpdkRun d = run_dpdk(w, ports, opt);
      expect_exact(sw, d);
      ASSERT_EQ(d.stats.rx_clocks.size(), 2u);
      EXPECT_EQ(d.stats.rx_clocks[0].checksums, "skipped");
      EXPECT_EQ(d.stats.rx_clocks[1].checksums, "skipped");
    }
    opt.checksums = fd::DpdkFabricOptions::Checksums::kOn;
    auto ports = fd::DpdkPorts::ring(mode == fd::WireMode::kFabemu ? "fabvc3" : "fabvc4", port_config());
    // Waiting on the receive port: one of our frames with a payload byte changed (its headers intact).
    rte_mbuf* m = rte_pktmbuf_alloc(ports.a().pool());
    ASSERT_NE(m, nullptr);
    fd::FrameSpec spec;
    spec.mode = mode;
    spec.src = fd::default_endpoint(0);
    spec.dst = fd::default_endpoint(1);
    spec.hdr.dst_rank = 1;
    spec.hdr.count = 1;
    spec.hdr.message_length = 64;
    spec.payload_bytes = 64;
    const uint16_t len = fd::fill_mbuf(m, spec);
    ASSERT_GT(len, 0);
    rte_pktmbuf_mtod(m, uint8_t*)[len - 12] ^= 0x01;  // in the payload (before a RoCEv2 frame's ICRC)
    ASSERT_EQ(ports.a().tx_burst(&m, 1), 1);
    const DpdkRun d = run_dpdk(w, ports, opt);
    ASSERT_TRUE(d.result.stuck.empty());
    EXPECT_EQ(d.result.total.ps(), sw.total.ps());
    EXPECT_EQ(d.stats.bytes_completed, d.stats.message_bytes);
    EXPECT_EQ(d.stats.frames_rx, d.stats.frames_tx + 1);
    EXPECT_EQ(d.stats.rx_clocks[0].checksums, "fabemu");
    EXPECT_EQ(d.stats.not_ours, 1u);
    // (RoCEv2 frames carry a UDP checksum too, and it is checked before the ICRC.)
    EXPECT_EQ(d.stats.not_ours_by_verdict[static_cast<size_t>(fd::Verdict::kBadUdpChecksum)], 1u);
  }
}

// NIC hardware timestamps without a NIC that has them: both ports act as NICs whose clock runs at 2/5 of
// the TSC's rate from 2^40 (PortConfig::simulated_nic_clock: every received frame stamped by an RX
// callback, read_clock reading the same clock). The receive side then times arrivals by the NIC's clock
// through ClockFit: every data frame carries a hardware timestamp, every message's arrival is the NIC's,
// the fit finds the clock's rate (5/2 TSC ticks per NIC tick), and the times are still the model's.
// The report's line of a NIC clock's fit, as format_dpdk_stats writes it (slope to 9 places).
std::string fmt_fit_line(const fd::DpdkStats::PortClock& c) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "NIC clock fit       %.9f TSC ticks per NIC tick over the last %zu samples",
                c.fit_tsc_per_nic_tick, c.fit_samples);
  return buf;
}

TEST(DpdkFabric, ArrivalsTimedByASimulatedNicClock) {
  REQUIRE_EAL();
  fabemu::test::ScratchDir dir;
  const Workload w = generated_all_reduce(dir);
  const RunResult sw = run_software(w);
  fd::PortConfig cfg = port_config();
  cfg.simulated_nic_clock = {2, 5, uint64_t{1} << 40};
  auto ports = fd::DpdkPorts::ring("fabnic", cfg);
  ASSERT_TRUE(ports.b().rx_timestamp_offload());
  uint64_t c0 = 0, c1 = 0;
  ASSERT_TRUE(ports.b().read_clock(c0));
  ASSERT_TRUE(ports.b().read_clock(c1));
  EXPECT_GE(c0, uint64_t{1} << 40);
  EXPECT_GE(c1, c0);
  const DpdkRun d = run_dpdk(w, ports, fd::DpdkFabricOptions{});
  expect_exact(sw, d);
  ASSERT_EQ(d.stats.rx_clocks.size(), 2u);
  const fd::DpdkStats::PortClock& b = d.stats.rx_clocks[0];
  EXPECT_EQ(b.clock, "nic");
  EXPECT_TRUE(b.offload);
  EXPECT_GT(b.frames, 0u);
  EXPECT_EQ(b.hw_timestamped, b.frames);
  EXPECT_GT(d.stats.messages, 0u);
  EXPECT_EQ(d.stats.nic_arrivals, d.stats.messages);
  EXPECT_EQ(d.stats.latency_ns.count(), d.stats.messages);
  EXPECT_GT(d.stats.latency_ns.min(), 0u);
  EXPECT_GE(b.fit_samples, 8u);
  EXPECT_NEAR(b.fit_tsc_per_nic_tick, 2.5, 2.5e-4);  // 100 ppm: 8 samples over 0.7 ms were 140 ppm off under ASan
  EXPECT_GE(b.fit_max_residual_ns, 0.0);
  // Feedback arrivals on port A are never timed, by any clock but the TSC.
  EXPECT_EQ(d.stats.rx_clocks[1].clock, "tsc");
  EXPECT_EQ(d.stats.rx_clocks[1].fit_samples, 0u);
  const std::string text = fd::format_dpdk_stats(d.stats);
  EXPECT_NE(text.find(fmt_fit_line(b)), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(d.stats.messages) + " by the NIC's clock, 0 by the TSC"), std::string::npos) << text;
  const nlohmann::json json = nlohmann::json::parse("{\"dpdk\": " + fd::dpdk_stats_to_json(d.stats) + "}").at("dpdk");
  ASSERT_EQ(json.at("rx_clocks").size(), 2u);
  EXPECT_EQ(json["rx_clocks"][0].at("clock"), "nic");
  EXPECT_EQ(json["rx_clocks"][0].at("fit_samples"), b.fit_samples);
  EXPECT_NEAR(json["rx_clocks"][0].at("fit_tsc_per_nic_tick").get<double>(), b.fit_tsc_per_nic_tick, 1e-9);
  EXPECT_NEAR(json["rx_clocks"][0].at("fit_max_residual_ns").get<double>(), b.fit_max_residual_ns, 0.05);
}

// The clocks keep D as D * 2^16: a positive D below kMinDilation (0.00763) would be more than 0.1% off,
// and the report and the clock would disagree (1e-5 ran at 1.526e-5, 53% off). Refused, naming the value;
// from kMinDilation up every D is kept within 0.1%.
TEST(TscClock, DilationsTheClockCannotKeepAreRefused) {
  EXPECT_EQ(dilation_q16(0), 0u);
  EXPECT_EQ(dilation_q16(1), 65536u);
  EXPECT_EQ(dilation_q16(1000), 65'536'000u);
  for (const double d : {kMinDilation, 0.008, 0.01, 0.3, 3.3, 1e6}) {
    const double kept = static_cast<double>(dilation_q16(d)) / 65536.0;
    EXPECT_LE(std::abs(kept / d - 1), 1e-3) << d;
    EXPECT_EQ(fd::TscClock(d).dilation_q16(), dilation_q16(d));
  }
  for (const double d : {1e-9, 1e-5, 1e-4, 0.0076, -1.0, 2e6, std::nan("")}) {
    EXPECT_THROW(dilation_q16(d), std::invalid_argument) << d;
    EXPECT_THROW(fd::TscClock{d}, std::invalid_argument) << d;
  }
  try {
    dilation_q16(1e-4);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--dilation 0.0001: the real-time clocks run a dilation in steps of 1/65536"),
              std::string::npos)
        << e.what();
  }
}

TEST(TscClock, DilationMapsWallToEmulatedTime) {
  REQUIRE_EAL();
  fd::TscClock afap(0);
  EXPECT_TRUE(afap.as_fast_as_possible());
  EXPECT_EQ(afap.emulated(), Time::max());
  fd::TscClock slow(1000);
  EXPECT_TRUE(slow.uses_tsc());
  EXPECT_EQ(slow.to_wall(Duration::from_ns(3)).ps(), 3'000'000u);
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) {
  }
  const Time wall = slow.wall();
  const Time emulated = slow.emulated();
  EXPECT_GE(wall.ps(), 19'000'000'000u);  // rte_get_tsc_hz() is an estimate
  EXPECT_LT(wall.ps(), 2'000'000'000'000u);
  // 1000 times slower: about wall / 1000 (read just after the wall clock).
  EXPECT_GE(emulated.ps(), wall.ps() / 1000);
  EXPECT_LE(emulated.ps(), wall.ps() / 1000 + 1'000'000'000u);
  EXPECT_THROW(fd::TscClock(-1), std::invalid_argument);
}

// The polling round's one reading: the wall and emulated times of its ticks, as wall_at and emulated_at
// give them; as fast as possible, every emulated time has come.
TEST(TscClock, AReadingIsTheWallAndEmulatedTimeOfItsTicks) {
  REQUIRE_EAL();
  fd::TscClock slow(7.5);
  for (const uint64_t later : {uint64_t{0}, uint64_t{1}, uint64_t{123'457}, uint64_t{9'876'543'210}}) {
    const uint64_t t = slow.start_ticks() + later;
    const fd::TscClock::Reading r = slow.at(t);
    EXPECT_EQ(r.ticks, t);
    EXPECT_EQ(r.wall, slow.wall_at(t)) << later;
    EXPECT_EQ(r.emulated, slow.emulated_at(t)) << later;
    // 7.5 times slower: floor(wall * 2 / 15), within one picosecond of the double's quotient.
    EXPECT_EQ(r.emulated.ps(), r.wall.ps() * 2 / 15) << later;
  }
  EXPECT_EQ(slow.at(slow.start_ticks() - 1).wall.ps(), 0u);  // before the start: zero, as wall_at
  const fd::TscClock::Reading now = slow.read();
  EXPECT_GE(now.ticks, slow.start_ticks());
  EXPECT_EQ(now.wall, slow.wall_at(now.ticks));
  fd::TscClock afap(0);
  EXPECT_EQ(afap.read().emulated, Time::max());
  EXPECT_EQ(afap.at(afap.start_ticks() + 1000).emulated, Time::max());
}

// pace_frames' due frames one by one (PacedRun::frame) into out[0..): how many.
template <class Pace>
uint32_t frames_of(const fd::TscClock& clock, uint32_t n, fd::PacedFrame* out, Pace&& pace) {
  std::vector<fd::PacedRun> runs(std::max<uint32_t>(n, 1));
  const fd::Paced got = pace(runs.data());
  uint32_t f = 0;
  for (uint32_t i = 0; i < got.runs; ++i) {
    for (uint32_t k = 0; k < runs[i].n; ++k) out[f++] = runs[i].frame(clock, k);
  }
  EXPECT_EQ(f, got.frames);
  return got.frames;
}
uint32_t pace_each(const fd::TscClock& clock, uint32_t link, Time depart, Rate rate, const fd::TxRun& r,
                   uint64_t burst_ps, fd::LinkSlot& slot, uint64_t& now, bool read_each, fd::PacedFrame* out) {
  return frames_of(clock, r.n, out, [&](fd::PacedRun* runs) {
    return fd::pace_frames(clock, link, depart, rate, r, burst_ps, slot, now, read_each, runs);
  });
}

// A message's send time (wire latency's start) is read when the device takes its first frame: the
// fabric builds up to 256 frames before its first tx_burst, and a stamp taken at build time counted that
// batching as wire latency (the 8-rank one-packet all_to_all of bench/run_dpdk_e2e.sh: median 6.6 us,
// 0.45 us with both ends stamped at their bursts). A queue that messages of 1-5 frames join each poll,
// flushed in bursts of up to 32 into a device that takes a random number of frames and then is full:
// each message is stamped exactly once, by the burst that took its first frame, however the frames
// waited across polls.
TEST(FirstFrames, EachMessageIsStampedByTheBurstThatTookItsFirstFrame) {
  struct Msg {
    size_t first_frame = 0;  // in the order frames entered the queue
    int stamped = 0;
    uint64_t stamp = 0;
  };
  std::mt19937_64 rng(7);
  std::deque<Msg> msgs;  // stable addresses
  fd::FirstFrames<Msg> firsts;
  std::vector<size_t> queue;  // frames waiting, by their number
  std::vector<uint64_t> taken_by;  // frame number -> burst stamp
  size_t frames = 0;
  uint64_t burst_no = 0;
  for (int poll = 0; poll < 2000; ++poll) {
    const int joining = poll < 1900 ? static_cast<int>(rng() % 12) : 0;
    for (int m = 0; m < joining; ++m) {
      Msg& msg = msgs.emplace_back();
      msg.first_frame = frames;
      firsts.add(queue.size(), &msg);
      const size_t n = 1 + rng() % 5;
      for (size_t f = 0; f < n; ++f) queue.push_back(frames++);
    }
    taken_by.resize(frames, 0);
    // The device takes up to `room` frames this poll, in bursts of up to 32 (send_bursts).
    size_t room = rng() % 3 == 0 ? 0 : rng() % 80, sent = 0;
    while (sent < queue.size()) {
      const size_t n = std::min<size_t>(32, queue.size() - sent);
      const size_t took = std::min(n, room);
      room -= took;
      if (took > 0) {
        ++burst_no;
        for (size_t k = sent; k < sent + took; ++k) taken_by[queue[k]] = burst_no;
        firsts.taken(sent, took, [&](Msg& m) {
          ++m.stamped;
          m.stamp = burst_no;
        });
      }
      sent += took;
      if (took < n) break;
    }
    queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(sent));
    firsts.erased(sent);
    size_t waiting = 0;
    for (const Msg& m : msgs) waiting += m.stamped == 0;
    ASSERT_EQ(firsts.waiting(), waiting) << "poll " << poll;
  }
  // The last polls add nothing, so the device drains the queue.
  for (int extra = 0; !queue.empty() && extra < 1000; ++extra) {
    const size_t took = std::min<size_t>(queue.size(), 32);
    ++burst_no;
    for (size_t k = 0; k < took; ++k) taken_by[queue[k]] = burst_no;
    firsts.taken(0, took, [&](Msg& m) {
      ++m.stamped;
      m.stamp = burst_no;
    });
    queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(took));
    firsts.erased(took);
  }
  ASSERT_TRUE(queue.empty());
  ASSERT_GT(msgs.size(), 10000u);
  EXPECT_EQ(firsts.waiting(), 0u);
  for (size_t i = 0; i < msgs.size(); ++i) {
    ASSERT_EQ(msgs[i].stamped, 1) << "message " << i;
    ASSERT_EQ(msgs[i].stamp, taken_by[msgs[i].first_frame]) << "message " << i;
  }
}

// pace_frames against closed-form schedules. 8 Gb/s is 1000 ps a byte; at dilation 2 a 100-byte frame
// is 200 ns of wall time and a 40-byte one 80 ns. Messages depart 500 s (emulated) after the clock
// started, so frame i of a run from offset 0 is due at 1000 s + 200 ns * i on the wall clock, and the
// clock itself (read when a frame is not due by the reading given) is always far behind: only the
// readings given decide.
TEST(LinkPacer, DueFramesFollowTheScheduleTheSlotAndTheBurstAllowance) {
  const fd::TscClock clock(2);
  const Rate rate = Rate::from_gbps(8);
  const Time depart = Time::from_ps(500'000'000'000'000);
  constexpr uint64_t kBase = 1'000'000'000'000'000;
  fd::TxRun run;
  run.n = 4;
  run.count = 4;
  run.bytes = 100;
  run.last_bytes = 40;
  std::array<fd::PacedFrame, 4> out{};
  const auto pace = [&](uint32_t from, uint64_t burst_ps, fd::LinkSlot& slot, uint64_t& now, bool read_each) {
    out.fill(fd::PacedFrame{});
    return pace_each(clock, 3, depart, rate, run.from(from), burst_ps, slot, now, read_each, out.data());
  };

  // On time: frames 0..2 are due at the reading (frame 2 exactly), frame 3 is not; back to back after the
  // first. The slot is then frame 2's due time plus its 200 ns.
  fd::LinkSlot slot;
  uint64_t now = kBase + 400'000;
  EXPECT_EQ(pace(0, 1'000'000'000, slot, now, false), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].scheduled_ps, kBase + 200'000 * i) << i;
    EXPECT_EQ(out[i].paced_ps, kBase + 200'000 * i) << i;
    EXPECT_EQ(out[i].bytes, 100u);
    EXPECT_EQ(out[i].link, 3u);
    EXPECT_EQ(out[i].extends, i > 0) << i;
  }
  EXPECT_EQ(out[3].bytes, 0u);  // not written
  EXPECT_EQ(slot.next_ps, kBase + 600'000);
  EXPECT_LT(now, kBase);  // the clock was read for frame 3
  // The rest of the run (frame 3, 40 bytes), a microsecond later: due, back to back, the slot 80 ns on.
  now = kBase + 1'600'000;
  EXPECT_EQ(pace(3, 1'000'000'000, slot, now, false), 1u);
  EXPECT_EQ(out[0].scheduled_ps, kBase + 600'000);
  EXPECT_EQ(out[0].paced_ps, kBase + 600'000);
  EXPECT_EQ(out[0].bytes, 40u);
  EXPECT_TRUE(out[0].extends);
  EXPECT_EQ(slot.next_ps, kBase + 680'000);

  // A burst allowance of 100 ns, one frame due per reading:
  // - late by 10 us: frame 0 is anchored at now - 100 ns, which puts the slot 100 ns after now, so frame
  //   1 waits; it starts a busy period (not back to back);
  // - 5 us later the slot (not the schedule) sets frame 1's due time; 4.9 us late, more than the
  //   allowance: anchored at now - 100 ns, a new period;
  // - frame 2 50 ns after the slot (within the allowance): at the slot, back to back with frame 1;
  // - frame 3 (40 bytes) exactly at its slot, back to back; the slot then 80 ns on.
  struct Step {
    uint32_t frame;
    uint64_t now, scheduled, paced;
    bool extends;
    uint64_t slot;
  };
  slot = fd::LinkSlot{};
  for (const Step& st : {Step{0, 10'000'000, 0, 9'900'000, false, 10'100'000},
                         Step{1, 15'000'000, 200'000, 14'900'000, false, 15'100'000},
                         Step{2, 15'150'000, 400'000, 15'100'000, true, 15'300'000},
                         Step{3, 15'300'000, 600'000, 15'300'000, true, 15'380'000}}) {
    now = kBase + st.now;
    EXPECT_EQ(pace(st.frame, 100'000, slot, now, false), 1u) << "frame " << st.frame;
    EXPECT_EQ(out[0].scheduled_ps, kBase + st.scheduled) << "frame " << st.frame;
    EXPECT_EQ(out[0].paced_ps, kBase + st.paced) << "frame " << st.frame;
    EXPECT_EQ(out[0].bytes, st.frame == 3 ? 40u : 100u) << "frame " << st.frame;
    EXPECT_EQ(out[0].extends, st.extends) << "frame " << st.frame;
    EXPECT_EQ(slot.next_ps, kBase + st.slot) << "frame " << st.frame;
  }
  // A reading before every frame (read_each) takes the clock, which is far behind: nothing is due.
  now = kBase + 20'000'000;
  EXPECT_EQ(pace(0, 100'000, slot, now, true), 0u);
  EXPECT_EQ(slot.next_ps, kBase + 15'380'000);
}

// A run of 1-64 frames of 1-9000 bytes (the last one shorter or not) at a random offset below 2^offset_bits
// frames.
fd::TxRun random_run(std::mt19937_64& rng, int offset_bits) {
  fd::TxRun run;
  run.n = 1 + static_cast<uint32_t>(rng() % 64);
  run.bytes = 1 + static_cast<uint32_t>(rng() % 9000);
  run.last_bytes = 1 + static_cast<uint32_t>(rng() % run.bytes);
  run.offset = uint64_t{run.bytes} * (rng() % (uint64_t{1} << offset_bits));
  run.count = run.n;
  return run;
}

// pace_frames with every frame due by `now` (and a burst allowance as long, so no frame is re-anchored):
// each frame's modelled departure is Rate::ser's (to wall time) and its bytes the run's.
void expect_rate_ser_departures(const fd::TscClock& clock, Rate rate, const fd::TxRun& run, Time depart,
                                uint64_t now) {
  std::array<fd::PacedFrame, 64> out{};
  fd::LinkSlot slot;
  ASSERT_EQ(pace_each(clock, 0, depart, rate, run, now, slot, now, false, out.data()), run.n);
  for (uint32_t i = 0; i < run.n; ++i) {
    const uint64_t want = clock.to_wall((depart + rate.ser(run.offset + uint64_t{i} * run.bytes)).since_start()).ps();
    ASSERT_EQ(out[i].scheduled_ps, want) << "frame " << i;
    ASSERT_EQ(out[i].bytes, i + 1 == run.n ? run.last_bytes : run.bytes) << "frame " << i;
  }
}

// The modelled departures pace_frames steps through a run are Rate::ser's, frame by frame, for rates
// that are not whole picoseconds a byte, long offsets, and dilations.
TEST(LinkPacer, SteppedDeparturesEqualRateSer) {
  std::mt19937_64 rng(7);
  for (const double dilation : {1.0, 3.7, 1000.0}) {
    const fd::TscClock clock(dilation);
    for (int trial = 0; trial < 300; ++trial) {
      SCOPED_TRACE(testing::Message() << "dilation " << dilation << " trial " << trial);
      const Rate rate = Rate::from_gbps(1.0 + static_cast<double>(rng() % 800'000) / 1000.0);
      const fd::TxRun run = random_run(rng, 24);
      expect_rate_ser_departures(clock, rate, run, Time::from_ps(rng() % (uint64_t{1} << 40)), ~uint64_t{0} >> 2);
      if (HasFatalFailure()) return;
    }
  }
}

// Runs whose serialization times reach 2^64 ps (slow rates, offsets of terabytes) are not stepped: each
// frame takes Rate::ser and its saturation. Their modelled departures are still Rate::ser's.
TEST(LinkPacer, SaturatingDeparturesEqualRateSer) {
  std::mt19937_64 rng(5);
  int unstepped = 0;
  for (const double dilation : {1.0, 3.7}) {
    const fd::TscClock clock(dilation);
    for (int trial = 0; trial < 200; ++trial) {
      SCOPED_TRACE(testing::Message() << "dilation " << dilation << " trial " << trial);
      const Rate rate = Rate::from_bytes_per_sec(233 + rng() % 1000);  // the slowest rate a Rate holds: 233 B/s
      const fd::TxRun run = random_run(rng, 36);
      const fabemu::emu::detail::u128 last_num =
          fabemu::emu::detail::u128{run.offset + uint64_t{run.n - 1} * run.bytes} * rate.ps_per_byte_q32() + 0xFFFFFFFFu;
      unstepped += (last_num >> 96) != 0;
      // Every frame is due, however late its schedule.
      expect_rate_ser_departures(clock, rate, run, Time::from_ps(rng() % (uint64_t{1} << 40)), ~uint64_t{0});
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(unstepped, 100);  // most runs take the unstepped path
}

// Frames due on schedule are back to back at any dilation: ser() rounds up (and ceil(a + b) <= ceil(a) +
// ceil(b)), the wall mapping rounds down, so a frame's due time comes at most a picosecond after the end of
// the one before, within the back-to-back test's slack (with no slack this fails at dilation 999.5). Odd
// rates, dilations up to 10^6, every frame due at once.
TEST(LinkPacer, OnScheduleFramesAreBackToBackAtAnyDilation) {
  std::mt19937_64 rng(11);
  std::array<fd::PacedFrame, 64> out{};
  for (const double dilation : {1.0, 999.5, 4321.7, 65536.3, 1e6}) {
    const fd::TscClock clock(dilation);
    for (int trial = 0; trial < 200; ++trial) {
      const Rate rate = Rate::from_gbps(0.5 + static_cast<double>(rng() % 400'000) / 1000.0);
      fd::TxRun run;
      run.n = 64;
      run.bytes = 1 + static_cast<uint32_t>(rng() % 4000);
      run.last_bytes = run.bytes;
      run.offset = uint64_t{run.bytes} * (rng() % 1000);
      run.count = 1100;
      fd::LinkSlot slot;
      uint64_t now = ~uint64_t{0} >> 2;
      ASSERT_EQ(pace_each(clock, 0, Time::from_ps(rng() % (uint64_t{1} << 30)), rate, run, now, slot, now,
                                false, out.data()),
                64u);
      for (uint32_t i = 1; i < 64; ++i) {
        ASSERT_TRUE(out[i].extends) << "dilation " << dilation << " trial " << trial << " frame " << i << ": due "
                                    << out[i].paced_ps << ", the frame before " << out[i - 1].paced_ps;
      }
    }
  }
}

// A link's departures (LinkBusy): frames back to back make one busy period, closed by the next frame that
// is not; its scheduled span runs from the first frame's due time to the last one's, its actual span to
// the last one's departure, and only the bytes of all but its last frame count. A period of one frame has
// no span.
TEST(LinkPacer, BusyPeriodsSpanBackToBackFrames) {
  fd::LinkBusy link;
  std::vector<std::pair<double, double>> closed;
  int singles = 0;
  const auto close = [&](fd::LinkBusy& l) {
    double s = 0, a = 0;
    if (l.close(s, a)) {
      closed.emplace_back(s, a);
    } else {
      ++singles;
    }
  };
  const auto frame = [](uint64_t paced, uint32_t bytes, bool extends) {
    return fd::PacedFrame{paced, paced, bytes, 0, extends};
  };
  link.depart(frame(1'000'000, 100, false), 1'500'000, close);  // period 1: three frames
  link.depart(frame(1'200'000, 100, true), 1'500'000, close);
  link.depart(frame(1'400'000, 40, true), 2'100'000, close);
  link.depart(frame(5'000'000, 100, false), 5'000'000, close);  // period 2: one frame
  link.depart(frame(9'000'000, 100, false), 9'300'000, close);  // period 3: open
  link.depart(frame(9'200'000, 100, true), 9'400'000, close);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_DOUBLE_EQ(closed[0].first, 400.0);    // ns: 1.0 us to 1.4 us
  EXPECT_DOUBLE_EQ(closed[0].second, 1100.0);  // 1.0 us to 2.1 us
  EXPECT_EQ(singles, 1);
  EXPECT_EQ(link.busy_periods, 1u);
  EXPECT_EQ(link.spanned_bytes, 200u);
  EXPECT_EQ(link.frames, 6u);
  EXPECT_EQ(link.bytes, 540u);
  EXPECT_TRUE(link.open);
  double s = 0, a = 0;
  ASSERT_TRUE(link.close(s, a));  // period 3
  EXPECT_DOUBLE_EQ(s, 200.0);
  EXPECT_DOUBLE_EQ(a, 400.0);
  EXPECT_EQ(link.busy_periods, 2u);
  EXPECT_EQ(link.spanned_bytes, 300u);
  EXPECT_DOUBLE_EQ(link.scheduled_ns, 600.0);
  EXPECT_DOUBLE_EQ(link.actual_ns, 1500.0);
}

// Frames of zero-byte messages back to back (ser(0) = 0, so each is due at the end of the one before):
// no bytes, so no rate to compare. Their period spans nothing; counted, it said the link carried 0 of its
// target rate, and a run of zero-byte messages got the verdict "fell behind" (raise --dilation), which
// no dilation could change.
TEST(LinkPacer, ZeroByteFramesSpanNoPeriod) {
  fd::LinkBusy link;
  int closed = 0;
  const auto close = [&](fd::LinkBusy&) { ++closed; };
  link.depart(fd::PacedFrame{1000, 1000, 0, 0, false}, 5000, close);
  link.depart(fd::PacedFrame{1000, 1000, 0, 0, true}, 9000, close);
  link.depart(fd::PacedFrame{1000, 1000, 0, 0, true}, 9000, close);
  double scheduled = 0, actual = 0;
  EXPECT_FALSE(link.close(scheduled, actual));
  EXPECT_EQ(closed, 0);
  EXPECT_EQ(link.busy_periods, 0u);
  EXPECT_EQ(link.frames, 3u);
  EXPECT_DOUBLE_EQ(link.actual_ns, 0.0);
  // A period with bytes after zero-byte frames still spans them.
  link.depart(fd::PacedFrame{20'000, 20'000, 0, 0, false}, 21'000, close);
  link.depart(fd::PacedFrame{20'000, 20'000, 100, 0, true}, 21'000, close);
  link.depart(fd::PacedFrame{20'800, 20'800, 100, 0, true}, 22'000, close);
  ASSERT_TRUE(link.close(scheduled, actual));
  EXPECT_DOUBLE_EQ(scheduled, 0.8);
  EXPECT_DOUBLE_EQ(actual, 2.0);
  EXPECT_EQ(link.spanned_bytes, 100u);
}

// record_departures through a PacedQueue (what the fabric and the benchmark run after each tx_burst) keeps
// every link's account, busy periods and the jitter histogram exactly as LinkBusy::depart and
// LogHistogram::record one frame at a time (PacedRun::frame): random runs of three links, unpaced frames
// among them, the device taking all, some or none of the queue (runs split anywhere), periods opening and
// closing within a burst, at its first frame and across bursts.
TEST(LinkPacer, BurstDeparturesEqualFrameByFrame) {
  // At dilation 3.7 (emulated = wall * 10 / 37) and at 1 (record_departures' own path for it).
  for (const auto& [dilation, num, den] : {std::tuple{3.7, 10u, 37u}, std::tuple{1.0, 1u, 1u}}) {
  SCOPED_TRACE(dilation);
  std::mt19937_64 rng(11);
  const fd::TscClock clock(dilation);
  constexpr uint32_t kLinks = 3;
  std::array<fd::LinkBusy, kLinks> one{}, all{};
  std::array<std::vector<std::pair<double, double>>, kLinks> closed_one, closed_all;
  fabemu::emu::LogHistogram jitter_one, jitter_all;
  std::array<uint64_t, kLinks> paced_at{};  // the end of each link's last frame
  fd::PacedQueue queue;
  std::deque<fd::PacedFrame> frames;  // the queue's, one by one
  uint64_t now = 1'000'000;
  uint64_t unpaced = 0, splits = 0;
  for (int burst = 0; burst < 600; ++burst) {
    while (frames.size() < 64 && rng() % 8 != 0) {  // runs of one link, or retransmissions
      if (rng() % 6 == 0) {
        const auto n = static_cast<uint32_t>(1 + rng() % 3);
        queue.push_unpaced(n);
        for (uint32_t k = 0; k < n; ++k) frames.push_back(fd::PacedFrame{0, 0, 64, fd::kUnpacedLink, false});
        unpaced += n;
        continue;
      }
      fd::PacedRun r;
      r.link = static_cast<uint32_t>(rng() % kLinks);
      r.n = static_cast<uint32_t>(1 + rng() % 12);
      r.bytes = static_cast<uint32_t>(64 + rng() % 1500);
      r.last_bytes = static_cast<uint32_t>(1 + rng() % r.bytes);
      r.frame_ps = 1000 + rng() % 5000;
      r.extends = rng() % 5 != 0;
      r.paced_ps = paced_at[r.link] + (r.extends ? 0 : rng() % 50'000);
      paced_at[r.link] = r.paced_ps + r.n * r.frame_ps;
      // Modelled departures up to about 3 us (wall) before the pacing, stepped at about the frame time.
      r.depart_ps = r.paced_ps * num / den - std::min<uint64_t>(r.paced_ps * num / den, rng() % 800'000);
      r.num = fabemu::emu::detail::u128{rng() % 1000} << 32 | (rng() & 0xFFFFFFFFu);
      r.step = fabemu::emu::detail::u128{r.frame_ps * num / den} << 32 | (rng() & 0xFFFFFFFFu);
      r.scheduled_ps = r.wall_of(clock, r.num);
      queue.push(r);
      for (uint32_t k = 0; k < r.n; ++k) frames.push_back(r.frame(clock, k));
    }
    now += rng() % 40'000;
    // The device takes the whole queue, a part (splitting a run anywhere), or nothing.
    size_t took = frames.size();
    if (rng() % 3 == 0 && !frames.empty()) {
      took = rng() % frames.size();
      ++splits;
    }
    for (size_t k = 0; k < took; ++k) {
      const fd::PacedFrame g = frames.front();
      frames.pop_front();
      if (g.link == fd::kUnpacedLink) continue;
      jitter_one.record((now > g.scheduled_ps ? now - g.scheduled_ps : g.scheduled_ps - now) / 1000);
      one[g.link].depart(g, now, [&](fd::LinkBusy& l) {
        double s = 0, a = 0;
        if (l.close(s, a)) closed_one[g.link].emplace_back(s, a);
      });
    }
    queue.departed(
        clock, took, now, jitter_all, [&](uint32_t link) -> fd::LinkBusy& { return all[link]; },
        [&](fd::LinkBusy& l) {
          double s = 0, a = 0;
          if (l.close(s, a)) closed_all[static_cast<size_t>(&l - all.data())].emplace_back(s, a);
        });
    if (rng() % 2 == 0) queue.compact();
    ASSERT_EQ(queue.frames(), frames.size()) << "burst " << burst;
  }
  ASSERT_GT(unpaced, 0u);
  ASSERT_GT(splits, 100u);
  uint64_t periods = 0;
  for (uint32_t l = 0; l < kLinks; ++l) {
    SCOPED_TRACE(l);
    EXPECT_EQ(closed_one[l], closed_all[l]);
    EXPECT_EQ(one[l].frames, all[l].frames);
    EXPECT_EQ(one[l].bytes, all[l].bytes);
    EXPECT_EQ(one[l].busy_periods, all[l].busy_periods);
    EXPECT_EQ(one[l].spanned_bytes, all[l].spanned_bytes);
    EXPECT_EQ(one[l].open, all[l].open);
    EXPECT_EQ(one[l].start_ps, all[l].start_ps);
    EXPECT_EQ(one[l].last_paced_ps, all[l].last_paced_ps);
    EXPECT_EQ(one[l].last_actual_ps, all[l].last_actual_ps);
    EXPECT_EQ(one[l].period_bytes, all[l].period_bytes);
    EXPECT_EQ(one[l].period_frames, all[l].period_frames);
    EXPECT_EQ(one[l].last_bytes, all[l].last_bytes);
    periods += one[l].busy_periods;
  }
  EXPECT_GT(periods, 100u);
  EXPECT_EQ(jitter_one.count(), jitter_all.count());
  EXPECT_EQ(jitter_one.min(), jitter_all.min());
  EXPECT_EQ(jitter_one.max(), jitter_all.max());
  EXPECT_NEAR(jitter_one.mean(), jitter_all.mean(), jitter_one.mean() * 1e-12);
  std::vector<std::array<uint64_t, 3>> buckets_one, buckets_all;  // every bucket's count
  jitter_one.for_each_bucket([&](uint64_t lo, uint64_t hi, uint64_t n) { buckets_one.push_back({lo, hi, n}); });
  jitter_all.for_each_bucket([&](uint64_t lo, uint64_t hi, uint64_t n) { buckets_all.push_back({lo, hi, n}); });
  EXPECT_GT(buckets_one.size(), 100u);
  EXPECT_EQ(buckets_one, buckets_all);
  }
}

// A run whose frames all follow its first back to back and are due is let go whole (pace_frames' kWhole),
// with the same PacedRuns, slot and reading as frame by frame: random runs, rates, dilations, slots just
// behind, at or ahead of the schedule (within a run's length in ps of the bound the shortcut rests on:
// with half of it the test fails),
// readings and burst allowances. Messages depart 500 s (emulated) after the clock started, so the clock
// (read when a frame is not due) is far behind: only the readings given decide.
TEST(LinkPacer, WholeRunsEqualFrameByFrame) {
  std::mt19937_64 rng(13);
  int whole = 0, partial = 0, near_bound = 0;
  // Rates of whole picoseconds a byte step every frame by ser(bytes) exactly; with a dilation whose
  // product with it has a fraction near 1, frame i's modelled departure comes close to the bound.
  constexpr std::array<uint64_t, 8> kWholePs{1, 2, 5, 8, 25, 40, 125, 1000};
  for (const double dilation : {1.0, 3.7, 2.999, 1000.0}) {
    const fd::TscClock clock(dilation);
    for (int trial = 0; trial < 3000; ++trial) {
      SCOPED_TRACE(testing::Message() << "dilation " << dilation << " trial " << trial);
      const Rate rate = rng() % 2 == 0 ? Rate::from_gbps(1.0 + static_cast<double>(rng() % 800'000) / 1000.0)
                                       : Rate::from_bytes_per_sec(1'000'000'000'000 / kWholePs[rng() % kWholePs.size()]);
      const fd::TxRun run = random_run(rng, 24);
      const Time depart = Time::from_ps(500'000'000'000'000 + rng() % (uint64_t{1} << 40));
      const uint64_t first = clock.to_wall((depart + rate.ser(run.offset)).since_start()).ps();
      const uint64_t span = clock.to_wall(rate.ser(run.bytes)).ps() * run.n + 1;
      fd::LinkSlot slot;
      switch (rng() % 4) {
        case 0: break;                                              // an idle link
        case 1: slot.next_ps = first + rng() % (2 * run.n); break;  // near the bound
        case 2: slot.next_ps = first + rng() % span; break;
        default: slot.next_ps = first - rng() % span; break;
      }
      uint64_t now = first - span / 4 + rng() % (2 * span);
      const uint64_t burst_ps = rng() % 3 == 0 ? 0 : rng() % (2 * span);
      fd::LinkSlot slot_each = slot;
      const uint64_t given = now;
      uint64_t now_each = now;
      std::vector<fd::PacedRun> got(run.n), each(run.n);
      // Build-ahead (frames due within `ahead` of now let go too) in two thirds of the cases.
      const uint64_t ahead = rng() % 3 == 0 ? 0 : rng() % span;
      const fd::Paced a =
          fd::detail::pace_frames<false, true>(clock, 7, depart, rate, run, burst_ps, slot, now, got.data(), ahead);
      const fd::Paced b = fd::detail::pace_frames<false, false>(clock, 7, depart, rate, run, burst_ps, slot_each,
                                                               now_each, each.data(), ahead);
      ASSERT_EQ(a.frames, b.frames);
      ASSERT_EQ(a.runs, b.runs);
      ASSERT_EQ(slot.next_ps, slot_each.next_ps);
      // Both read the clock (when a frame was not due by the reading given), or neither did.
      ASSERT_EQ(now == given, now_each == given);
      if (now != given) {
        ASSERT_LT(std::max(now, now_each), first / 2);
      }
      for (uint32_t i = 0; i < a.runs; ++i) {
        ASSERT_TRUE(got[i] == each[i]) << "run " << i << ": " << got[i].n << " frames paced from " << got[i].paced_ps
                                        << ", frame by frame " << each[i].n << " from " << each[i].paced_ps;
        ASSERT_EQ(got[i].link, 7u);
      }
      if (a.runs == 1 && a.frames == run.n && run.n > 1) {
        ++whole;
        const uint64_t margin = got[0].paced_ps - got[0].scheduled_ps;
        near_bound += margin < 2 * uint64_t{run.n};
      } else if (a.frames > 0) {
        ++partial;
      }
    }
  }
  EXPECT_GT(whole, 1000);
  EXPECT_GT(partial, 1000);
  EXPECT_GT(near_bound, 100);
}

// Mempools sized from the workload: what the fabric holds outside the rings grows with the rank count.
// No allocation per message in steady state (host/dpdk/README.md, "Reliability"): the second of two equal
// waves of messages allocates nothing. Before 2026-12-03 the fabric's records of messages were nodes of
// unordered_maps: two allocations and two frees per message (1,131 in the second wave).
TEST(DpdkFabric, NoAllocationPerMessageInSteadyState) {
  REQUIRE_EAL();
  if (!counting_allocations()) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  auto ports = fd::DpdkPorts::ring("fabnoalloc", port_config());
  fd::DpdkFabricOptions opt;
  opt.rx_lcore = fd::DpdkFabricOptions::kRxLcoreOff;
  expect_second_wave_allocates_nothing(ports, opt);
}

TEST(DpdkFabric, PoolSizeFollowsTheRankCount) {
  EXPECT_EQ(fd::DpdkFabric::frames_in_flight(8), 256u + 8u + 256u + 256u);
  fd::PortConfig cfg;  // 1024 + 1024 descriptors, cache 256
  EXPECT_EQ(cfg.mbufs_for(fd::DpdkFabric::frames_in_flight(8), 32), 4095u);
  EXPECT_EQ(cfg.mbufs_for(fd::DpdkFabric::frames_in_flight(991), 32), 4095u);
  EXPECT_EQ(cfg.mbufs_for(fd::DpdkFabric::frames_in_flight(992), 32), 8191u);
  EXPECT_EQ(cfg.mbufs_for(fd::DpdkFabric::frames_in_flight(16384), 32), 32767u);
}

TEST(DpdkFabric, BadOptionsAreRejected) {
  REQUIRE_EAL();
  const NetworkConfig net = network({dim(DimTopology::kRing, 4)});
  auto ports = fd::DpdkPorts::ring("fab7", port_config());
  fd::DpdkFabricOptions opt;
  opt.wire_mtu = 9000;  // default mbufs hold ~2 KB frames
  EXPECT_THROW(fd::DpdkFabric(Topology(net), fd::AddressPlan::make_default(4), ports, opt), std::invalid_argument);
  EXPECT_THROW(fd::DpdkFabric(Topology(net), fd::AddressPlan::make_default(2), ports, fd::DpdkFabricOptions{}),
               std::invalid_argument);
  opt = fd::DpdkFabricOptions{};
  opt.dilation = -1;
  EXPECT_THROW(fd::DpdkFabric(Topology(net), fd::AddressPlan::make_default(4), ports, opt), std::invalid_argument);
}

}  // namespace
