// The DPDK environment on virtual devices (no NIC needed): ring pair, net_null, net_pcap, net_memif.
// One EAL per test process, started by a gtest Environment without hugepages; every test skips with the
// reason when EAL cannot start. Traffic goes only to rings, files and memif sockets in a temp dir.
#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "host/dpdk/dpdk_env.h"
#include "host/wire/frame.h"
#include "host/wire/pcap_writer.h"
#include "host/wire/roce.h"
#include "tests/dpdk/dpdk_test_support.h"

namespace fd = fabemu::host::dpdk;
namespace fs = std::filesystem;

namespace {


// Frames from rank 0 (198.18.0.1) to rank 1 (198.18.0.2), the default address plan's first two ranks.
fd::FrameSpec spec_for(uint32_t seq, uint32_t payload) {
  fd::FrameSpec s;
  s.src = {{0x02, 0xfe, 0, 0, 0, 0}, 0xC6120001, 47000};
  s.dst = {{0x02, 0xfe, 0, 0, 0, 1}, 0xC6120002, 47000};
  s.ip_id = static_cast<uint16_t>(seq);
  s.hdr.src_rank = 0;
  s.hdr.dst_rank = 1;
  s.hdr.message_id = 7;
  s.hdr.seq = seq;
  s.hdr.count = UINT32_MAX;
  s.hdr.message_length = uint64_t{UINT32_MAX} * 2000;
  s.hdr.offset = uint64_t{seq} * 2000;
  s.payload_bytes = payload;
  return s;
}

fd::DecodeRules rules() {
  fd::DecodeRules r;
  r.port_lo = r.port_hi = 47000;
  return r;
}

// Random payload so that frames are 102 (the smallest fabemu frame) .. 1514 bytes.
uint32_t random_payload(std::mt19937& rng) {
  const size_t lo = fd::frame_bytes(fd::WireMode::kFabemu, 0);
  std::uniform_int_distribution<size_t> d(0, 1514 - lo);
  return static_cast<uint32_t>(d(rng));
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "fabemu-dpdk-XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Sends `total` frames A -> B with random sizes and checks that B decodes all of them, in order, as ours.
// Stops early after `timeout` without progress. Returns the number received.
struct Transfer {
  uint32_t sent = 0, received = 0, not_ours = 0, out_of_order = 0, bad_length = 0;
};
Transfer transfer(fd::Port& a, fd::Port& b, uint32_t total, std::chrono::milliseconds timeout) {
  Transfer t;
  std::mt19937 tx_rng(42), rx_rng(42);  // the receiver replays the sizes to check lengths
  constexpr uint16_t kBurst = 32;
  rte_mbuf* tx[kBurst];
  rte_mbuf* rx[kBurst];
  const auto r = rules();
  auto last_progress = std::chrono::steady_clock::now();
  while (t.received < total) {
    if (t.sent < total) {
      const auto n = static_cast<uint16_t>(std::min<uint32_t>(kBurst, total - t.sent));
      if (rte_pktmbuf_alloc_bulk(a.pool(), tx, n) == 0) {
        std::mt19937 save = tx_rng;
        for (uint16_t i = 0; i < n; ++i) {
          if (fd::fill_mbuf(tx[i], spec_for(t.sent + i, random_payload(tx_rng))) == 0) std::abort();
        }
        const uint16_t ok = a.tx_burst(tx, n);
        // Unsent frames are dropped here and sent again (same seqs and sizes) next time round.
        for (uint16_t i = ok; i < n; ++i) rte_pktmbuf_free(tx[i]);
        tx_rng = save;
        for (uint16_t i = 0; i < ok; ++i) random_payload(tx_rng);
        t.sent += ok;
      }
    }
    const uint16_t got = b.rx_burst(rx, kBurst);
    for (uint16_t i = 0; i < got; ++i) {
      fd::DecodedFrame f;
      if (fd::decode_mbuf(rx[i], r, f) != fd::Verdict::kOurs) {
        ++t.not_ours;
      } else {
        if (f.hdr.seq != t.received) ++t.out_of_order;
        if (f.payload_bytes != random_payload(rx_rng)) ++t.bad_length;
        // Decoded in place: the payload points into the mbuf.
        if (f.payload.data() != rte_pktmbuf_mtod(rx[i], const uint8_t*) + (rx[i]->data_len - f.payload_bytes))
          ++t.bad_length;
        ++t.received;
      }
      rte_pktmbuf_free(rx[i]);
    }
    const auto now = std::chrono::steady_clock::now();
    if (got > 0) last_progress = now;
    if (now - last_progress > timeout) break;
  }
  return t;
}

}  // namespace

TEST(Eal, StartsOnceAndArgsAreUnique) {
  REQUIRE_EAL();
  auto& e1 = fd::Eal::start({"--this-is-ignored-after-the-first-start"});
  auto& e2 = fd::Eal::start({});
  EXPECT_EQ(&e1, &e2);
  EXPECT_NE(fd::join_args(fd::Eal::no_huge_args()), fd::join_args(fd::Eal::no_huge_args()));
  EXPECT_NE(fd::join_args(e1.args()).find("--file-prefix fabemu-" + std::to_string(::getpid())), std::string::npos);
}

TEST(Eal, SignalsOnlySetTheStopFlag) {
  REQUIRE_EAL();
  fd::Eal::clear_stop();
  ASSERT_FALSE(fd::Eal::stop_requested());
  std::raise(SIGTERM);  // would kill the process without our handler
  EXPECT_TRUE(fd::Eal::stop_requested());
  fd::Eal::clear_stop();
  std::raise(SIGINT);
  EXPECT_TRUE(fd::Eal::stop_requested());
  fd::Eal::clear_stop();
}

TEST(PortConfig, MbufsAndDataRoom) {
  // 1000 in flight + 1024 RX + 1024 TX + (32 + 256) per lcore = 3336 -> 4095.
  EXPECT_EQ(fd::PortConfig::mbufs_for(1000, 1, 1024, 1, 1024, 32, 256, 1), 4095u);
  EXPECT_EQ(fd::PortConfig::mbufs_for(0, 1, 1024, 1, 1024, 32, 256, 2), 4095u);   // 2624
  EXPECT_EQ(fd::PortConfig::mbufs_for(5000, 1, 1024, 1, 1024, 32, 256, 1), 8191u);
  EXPECT_EQ(fd::PortConfig::mbufs_for(0, 0, 0, 0, 0, 0, 0, 0), 0u);
  EXPECT_GE(fd::PortConfig::data_room_for_mtu(1500), RTE_PKTMBUF_HEADROOM + 1518);
  EXPECT_GE(fd::PortConfig::data_room_for_mtu(9000), RTE_PKTMBUF_HEADROOM + 9018);
  EXPECT_THROW(fd::PortConfig::data_room_for_mtu(65500), std::invalid_argument);
}

// Without hugepages a page of EAL memory is mapped on its first write. A port's pool has every page of its
// buffers written when it is made (prefault_buffers), so that writing whole frames into them during a run
// (RoCEv2's shorter last frames) takes no page fault: before, each 9 KB buffer's first use took two.
TEST(Port, PoolBuffersAreMappedWhenThePoolIsMade) {
  REQUIRE_EAL();
  fd::RingPair pair("tfault");
  fd::PortConfig cfg;
  cfg.mbufs = 2047;
  cfg.data_room = fd::PortConfig::data_room_for_mtu(9000);
  fd::Port a(pair.a(), cfg);
  const auto minor_faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<uint64_t>(u.ru_minflt);
  };
  const uint64_t before = minor_faults();
  uint64_t bytes = 0;
  rte_mempool_obj_iter(
      a.pool(),
      [](rte_mempool*, void* arg, void* obj, unsigned) {
        auto* m = static_cast<rte_mbuf*>(obj);
        std::memset(m->buf_addr, 0x5A, m->buf_len);
        *static_cast<uint64_t*>(arg) += m->buf_len;
      },
      &bytes);
  const uint64_t faults = minor_faults() - before;
  EXPECT_GE(bytes, uint64_t{cfg.mbufs} * 9018);  // about 4,600 pages written
  // A few for whatever else the process touches meanwhile; one per buffer would be 2,047 or more.
  EXPECT_LT(faults, 64u) << "pages of the pool's buffers first written after the pool was made";
}

TEST(RingPair, HundredThousandRandomFramesArriveInOrder) {
  REQUIRE_EAL();
  fd::RingPair pair("t100k");
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(2 * 4096, 32);
  fd::Port a(pair.a(), cfg);
  fd::Port b(pair.b(), cfg);
  EXPECT_TRUE(a.link_up());
  const uint32_t kFrames = 100'000;
  const Transfer t = transfer(a, b, kFrames, std::chrono::milliseconds(2000));
  EXPECT_EQ(t.sent, kFrames);
  EXPECT_EQ(t.received, kFrames);
  EXPECT_EQ(t.not_ours, 0u);
  EXPECT_EQ(t.out_of_order, 0u);
  EXPECT_EQ(t.bad_length, 0u);
  EXPECT_EQ(a.stats().opackets, kFrames);
  EXPECT_EQ(b.stats().ipackets, kFrames);
  // Every mbuf went back to its pool.
  EXPECT_EQ(rte_mempool_avail_count(a.pool()), cfg.mbufs);
}

// A ring pair with a delay line (a stand-in device under test of known latency): every frame from a
// reaches b no earlier than the delay after it was handed to a's tx_burst (the TSC read before the call;
// the line stamps a frame when it takes it, which is later), in order, and b's frames reach a at once.
// Three bursts of 32 frames, 0.5 ms apart, through a 2 ms line: none may arrive before 2 ms; each is
// timed by the TSC read after the rx_burst that returned it.
TEST(RingPair, DelayLineHoldsEveryFrameForItsDelayInOrder) {
  REQUIRE_EAL();
  constexpr uint64_t kDelayNs = 2'000'000;
  fd::RingPair pair("tdelay", 4096, SOCKET_ID_ANY, 1, fd::RingDevice{kDelayNs, 0});
  EXPECT_EQ(pair.device().delay_ns, kDelayNs);
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(2 * 4096, 32);
  fd::Port a(pair.a(), cfg);
  fd::Port b(pair.b(), cfg);
  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t delay_ticks = kDelayNs * hz / 1'000'000'000u;
  constexpr uint32_t kBursts = 3, kPerBurst = 32, kFrames = kBursts * kPerBurst;
  std::vector<uint64_t> sent_at(kFrames), arrived_at(kFrames, 0);
  std::vector<uint32_t> order;
  rte_mbuf* rx[kPerBurst];
  const auto poll_b = [&] {
    const uint16_t got = b.rx_burst(rx, kPerBurst);
    const uint64_t now = rte_rdtsc();
    for (uint16_t i = 0; i < got; ++i) {
      fd::DecodedFrame f;
      ASSERT_EQ(fd::decode_mbuf(rx[i], rules(), f), fd::Verdict::kOurs);
      ASSERT_LT(f.hdr.seq, kFrames);
      arrived_at[f.hdr.seq] = now;
      order.push_back(f.hdr.seq);
      rte_pktmbuf_free(rx[i]);
    }
  };
  for (uint32_t burst = 0; burst < kBursts; ++burst) {
    rte_mbuf* tx[kPerBurst];
    for (uint32_t i = 0; i < kPerBurst; ++i) {
      tx[i] = rte_pktmbuf_alloc(a.pool());
      ASSERT_NE(tx[i], nullptr);
      ASSERT_GT(fd::fill_mbuf(tx[i], spec_for(burst * kPerBurst + i, 100)), 0);
    }
    const uint64_t before = rte_rdtsc();
    for (uint32_t i = 0; i < kPerBurst; ++i) sent_at[burst * kPerBurst + i] = before;
    ASSERT_EQ(a.tx_all(tx, kPerBurst), kPerBurst);
    // b -> a passes at once: the frame is in a's receive ring when b's tx_burst returns.
    rte_mbuf* back = rte_pktmbuf_alloc(b.pool());
    ASSERT_NE(back, nullptr);
    ASSERT_GT(fd::fill_mbuf(back, spec_for(1000 + burst, 10)), 0);
    ASSERT_EQ(b.tx_all(&back, 1), 1u);
    rte_mbuf* got_back = nullptr;
    ASSERT_EQ(a.rx_burst(&got_back, 1), 1);
    rte_pktmbuf_free(got_back);
    const uint64_t next = before + delay_ticks / 4;
    while (rte_rdtsc() < next) poll_b();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (order.size() < kFrames && std::chrono::steady_clock::now() < deadline) poll_b();
  ASSERT_EQ(order.size(), kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) {
    EXPECT_EQ(order[i], i) << "frames leave the line in the order they entered it";
    EXPECT_GE(arrived_at[i] - sent_at[i], delay_ticks) << "frame " << i << " arrived before the delay";
    // An upper bound only against a gross failure (a line that loses its CPU for long): 1 s.
    EXPECT_LT(arrived_at[i] - sent_at[i], delay_ticks + hz) << "frame " << i;
  }
  EXPECT_EQ(pair.delayed_frames(), kFrames);
  EXPECT_GE(pair.delay_peak_held(), uint64_t{kPerBurst});
  EXPECT_LE(pair.delay_peak_held(), uint64_t{kFrames});
  EXPECT_EQ(rte_mempool_avail_count(a.pool()), cfg.mbufs);
  EXPECT_EQ(rte_mempool_avail_count(b.pool()), cfg.mbufs);
}

// A device with a rate (800 Mb/s: 100 bytes a microsecond) and a latency (200 us): 64 frames of 1,102
// bytes handed to a at once cross it one behind the other, so frame i reaches b no earlier than the
// latency plus the time the device takes for frames 0..i (its bytes at the rate, each frame's time rounded
// up to a tick): the last one 905 us after they were handed over, at the earliest.
TEST(RingPair, DeviceRateSerializesFramesBehindEachOther) {
  REQUIRE_EAL();
  constexpr uint64_t kDelayNs = 200'000, kBytesPerSec = 100'000'000;
  fd::RingPair pair("trate", 4096, SOCKET_ID_ANY, 1, fd::RingDevice{kDelayNs, kBytesPerSec});
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(2 * 4096, 32);
  fd::Port a(pair.a(), cfg);
  fd::Port b(pair.b(), cfg);
  const uint64_t hz = rte_get_tsc_hz();
  constexpr uint32_t kFrames = 64;
  rte_mbuf* tx[kFrames];
  std::vector<uint64_t> bytes_before(kFrames + 1, 0);  // frame bytes up to and including frame i - 1
  for (uint32_t i = 0; i < kFrames; ++i) {
    tx[i] = rte_pktmbuf_alloc(a.pool());
    ASSERT_NE(tx[i], nullptr);
    ASSERT_GT(fd::fill_mbuf(tx[i], spec_for(i, 1000)), 0);
    bytes_before[i + 1] = bytes_before[i] + tx[i]->pkt_len;
  }
  const uint64_t before = rte_rdtsc();
  ASSERT_EQ(a.tx_all(tx, kFrames), kFrames);
  std::vector<uint64_t> arrived_at;
  rte_mbuf* rx[32];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (arrived_at.size() < kFrames && std::chrono::steady_clock::now() < deadline) {
    const uint16_t got = b.rx_burst(rx, 32);
    const uint64_t now = rte_rdtsc();
    for (uint16_t i = 0; i < got; ++i) {
      fd::DecodedFrame f;
      ASSERT_EQ(fd::decode_mbuf(rx[i], rules(), f), fd::Verdict::kOurs);
      EXPECT_EQ(f.hdr.seq, arrived_at.size()) << "in order";
      arrived_at.push_back(now);
      rte_pktmbuf_free(rx[i]);
    }
  }
  ASSERT_EQ(arrived_at.size(), kFrames);
  const auto ticks_of_ns = [hz](double ns) { return static_cast<uint64_t>(ns * static_cast<double>(hz) / 1e9); };
  for (uint32_t i = 0; i < kFrames; ++i) {
    // The device's time for frames 0..i at 100 bytes a microsecond (less a tick a frame for the rounding).
    const uint64_t device_ns = bytes_before[i + 1] * 1'000'000'000 / kBytesPerSec;
    EXPECT_GE(arrived_at[i] - before + i + 1, ticks_of_ns(static_cast<double>(kDelayNs + device_ns)))
        << "frame " << i << " arrived before the device let it through";
  }
  EXPECT_EQ(bytes_before[kFrames], uint64_t{kFrames} * fd::frame_bytes(fd::WireMode::kFabemu, 1000));  // 1,102 each
  EXPECT_LT(arrived_at[kFrames - 1] - before, hz) << "against a gross failure only";
  EXPECT_EQ(pair.delayed_frames(), kFrames);
}

// A device with an ECN threshold marks as a switch's egress queue does: 24 frames of 1,102 bytes given at
// once to a 10 MB/s device (110 us each) that marks what finds 2.5 frames' bytes queued ahead. Frame i is
// taken with i frames ahead of it (less the few bytes the device lets through meanwhile), so the ECT
// frames 3..15 leave CE-marked, 0..2 and the Not-ECT frames 16..23 as they came; every one still ours
// (its IPv4 checksum updated).
TEST(RingPair, DeviceMarksEcnCapableFramesBehindItsThreshold) {
  REQUIRE_EAL();
  constexpr uint32_t kFrames = 24, kEct = 16, kFrameBytes = 1102;
  fd::RingPair pair("tecn", 4096, SOCKET_ID_ANY, 1, fd::RingDevice{0, 10'000'000, kFrameBytes * 5 / 2});
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(2 * 4096, 32);
  fd::Port a(pair.a(), cfg);
  fd::Port b(pair.b(), cfg);
  rte_mbuf* tx[kFrames];
  for (uint32_t i = 0; i < kFrames; ++i) {
    tx[i] = rte_pktmbuf_alloc(a.pool());
    ASSERT_NE(tx[i], nullptr);
    fd::FrameSpec s = spec_for(i, 1000);
    s.dscp = 26;
    s.ecn = i < kEct ? fd::Ecn::kEct0 : fd::Ecn::kNotEct;
    ASSERT_EQ(fd::fill_mbuf(tx[i], s), kFrameBytes);
  }
  ASSERT_EQ(a.tx_all(tx, kFrames), kFrames);
  std::vector<fd::Ecn> arrived;
  rte_mbuf* rx[32];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (arrived.size() < kFrames && std::chrono::steady_clock::now() < deadline) {
    const uint16_t got = b.rx_burst(rx, 32);
    for (uint16_t i = 0; i < got; ++i) {
      fd::DecodedFrame f;
      ASSERT_EQ(fd::decode_mbuf(rx[i], rules(), f), fd::Verdict::kOurs);
      EXPECT_EQ(f.hdr.seq, arrived.size()) << "in order";
      EXPECT_EQ(f.dscp, 26);
      arrived.push_back(f.ecn);
      rte_pktmbuf_free(rx[i]);
    }
  }
  ASSERT_EQ(arrived.size(), kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) {
    const fd::Ecn want = i >= kEct ? fd::Ecn::kNotEct : i >= 3 ? fd::Ecn::kCe : fd::Ecn::kEct0;
    EXPECT_EQ(arrived[i], want) << "frame " << i;
  }
  EXPECT_EQ(pair.ce_marked(), kEct - 3);
  // A threshold needs a queue to mark by: a rate.
  EXPECT_THROW(fd::RingPair("tecn2", 4096, SOCKET_ID_ANY, 1, fd::RingDevice{1000, 0, 100}), std::invalid_argument);
}

// Frames still held by a line when its pair goes away go back to their pools.
TEST(RingPair, DelayLineReturnsWhatItHoldsWhenThePairGoes) {
  REQUIRE_EAL();
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(2 * 4096, 32);
  std::optional<fd::RingPair> pair(std::in_place, "tdelay2", 4096, SOCKET_ID_ANY, 1,
                                   fd::RingDevice{10'000'000'000, 0});
  fd::Port a(pair->a(), cfg);
  rte_mbuf* tx[16];
  for (auto*& m : tx) {
    m = rte_pktmbuf_alloc(a.pool());
    ASSERT_NE(m, nullptr);
    ASSERT_GT(fd::fill_mbuf(m, spec_for(1, 100)), 0);
  }
  ASSERT_EQ(a.tx_all(tx, 16), 16u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (pair->delay_peak_held() < 16 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(pair->delay_peak_held(), 16u);  // all taken off a's ring, none due for 10 s
  EXPECT_EQ(pair->delayed_frames(), 0u);
  EXPECT_EQ(rte_mempool_avail_count(a.pool()), cfg.mbufs - 16);
  pair.reset();
  EXPECT_EQ(rte_mempool_avail_count(a.pool()), cfg.mbufs);
}

// The template path in mbufs (reused mbufs full of old bytes) writes exactly fill_mbuf(spec)'s frame, in
// both modes, and the frames cross a ring pair and decode as ours.
TEST(Frames, TemplateFramesAreFillMbufsFramesAndCrossARingPair) {
  REQUIRE_EAL();
  fd::RingPair pair("tmpl");
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(2 * 4096, 32);
  fd::Port a(pair.a(), cfg);
  fd::Port b(pair.b(), cfg);
  std::mt19937 rng(9);
  for (const fd::WireMode mode : {fd::WireMode::kFabemu, fd::WireMode::kRoceV2}) {
    fd::FrameSpec flow = spec_for(0, 0);
    flow.mode = mode;
    if (mode == fd::WireMode::kRoceV2) flow.src.port = fd::flow_source_port(1);
    fd::FrameTemplate t(flow);
    fd::DecodeRules r = rules();
    r.mode = mode;
    for (uint32_t seq = 0; seq < 3000; ++seq) {
      fd::FrameSpec s = spec_for(seq, seq % 7 == 0 ? random_payload(rng) : 1024);
      s.mode = mode;
      s.src.port = flow.src.port;
      s.hdr.flags = seq % 11 == 0 ? fd::kFlagRetransmit : 0;
      s.bth.opcode = fd::kRcSendMiddle;
      s.bth.psn = seq;
      ASSERT_TRUE(t.matches(s));
      rte_mbuf* got = rte_pktmbuf_alloc(a.pool());
      rte_mbuf* want = rte_pktmbuf_alloc(a.pool());
      ASSERT_NE(got, nullptr);
      ASSERT_NE(want, nullptr);
      std::memset(rte_pktmbuf_mtod(got, uint8_t*), 0xA5, rte_pktmbuf_tailroom(got));
      const uint16_t n = fd::fill_mbuf(got, t, s);
      ASSERT_EQ(n, fd::fill_mbuf(want, s));
      ASSERT_EQ(got->pkt_len, n);
      ASSERT_EQ(got->data_len, n);
      ASSERT_EQ(std::memcmp(rte_pktmbuf_mtod(got, uint8_t*), rte_pktmbuf_mtod(want, uint8_t*), n), 0) << "seq " << seq;
      rte_pktmbuf_free(want);
      ASSERT_EQ(a.tx_all(&got, 1), 1u);
      rte_mbuf* rx = nullptr;
      ASSERT_EQ(b.rx_burst(&rx, 1), 1);
      fd::DecodedFrame d;
      ASSERT_EQ(fd::decode_mbuf(rx, r, d), fd::Verdict::kOurs) << "seq " << seq;
      EXPECT_EQ(d.hdr, s.hdr);
      EXPECT_EQ(d.payload_bytes, s.payload_bytes);
      rte_pktmbuf_free(rx);
    }
  }
  EXPECT_EQ(rte_mempool_avail_count(a.pool()), cfg.mbufs);
}

TEST(RingPair, ForeignFramesAreNotOurs) {
  REQUIRE_EAL();
  fd::RingPair pair("foreign");
  fd::PortConfig cfg;
  fd::Port a(pair.a(), cfg);
  fd::Port b(pair.b(), cfg);
  rte_mbuf* m = rte_pktmbuf_alloc(a.pool());
  ASSERT_NE(m, nullptr);
  ASSERT_GT(fd::fill_mbuf(m, spec_for(3, 100)), 0);
  rte_pktmbuf_mtod(m, uint8_t*)[60] ^= 1;  // one byte of the fabemu header
  ASSERT_EQ(a.tx_burst(&m, 1), 1);
  rte_mbuf* r = nullptr;
  uint16_t got = 0;
  for (int i = 0; i < 1000 && got == 0; ++i) got = b.rx_burst(&r, 1);
  ASSERT_EQ(got, 1);
  fd::DecodedFrame f;
  EXPECT_NE(fd::decode_mbuf(r, rules(), f), fd::Verdict::kOurs);
  rte_pktmbuf_free(r);
}

TEST(Frames, ChainedMbufIsDecodedThroughScratch) {
  REQUIRE_EAL();
  fd::PortConfig cfg;
  cfg.mbufs = 63;
  cfg.mbuf_cache = 0;
  rte_mempool* pool = rte_pktmbuf_pool_create("fe_chain", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr);
  rte_mbuf* whole = rte_pktmbuf_alloc(pool);
  const uint16_t len = fd::fill_mbuf(whole, spec_for(5, 900));
  ASSERT_GT(len, 0);
  // Split the frame over two segments.
  rte_mbuf* head = rte_pktmbuf_alloc(pool);
  rte_mbuf* tail = rte_pktmbuf_alloc(pool);
  const uint16_t cut = 300;
  std::memcpy(rte_pktmbuf_append(head, cut), rte_pktmbuf_mtod(whole, uint8_t*), cut);
  std::memcpy(rte_pktmbuf_append(tail, static_cast<uint16_t>(len - cut)), rte_pktmbuf_mtod(whole, uint8_t*) + cut,
              len - cut);
  ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
  fd::DecodedFrame f;
  EXPECT_EQ(fd::decode_mbuf(head, rules(), f), fd::Verdict::kTruncated);  // no scratch given
  std::vector<uint8_t> scratch(2048);
  ASSERT_EQ(fd::decode_mbuf(head, rules(), f, scratch), fd::Verdict::kOurs);
  EXPECT_EQ(f.hdr.seq, 5u);
  EXPECT_EQ(f.payload_bytes, 900u);
  rte_pktmbuf_free(head);
  rte_pktmbuf_free(whole);
  rte_mempool_free(pool);
}

// RX checksum offload: a frame whose UDP checksum the NIC found good is not summed again (a payload byte
// changed after the NIC's check goes unnoticed, which shows the sum was skipped); a bad, unknown or absent
// verdict of the NIC leaves the check to us; the IPv4 checksum is checked either way.
TEST(Frames, TheNicsGoodUdpChecksumIsNotSummedAgain) {
  REQUIRE_EAL();
  rte_mempool* pool = rte_pktmbuf_pool_create("fe_csum", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr);
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  const uint16_t len = fd::fill_mbuf(m, spec_for(3, 500));
  ASSERT_GT(len, 0);
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  fd::DecodedFrame d;
  ASSERT_EQ(fd::decode_mbuf(m, rules(), d), fd::Verdict::kOurs);
  f[len - 1] ^= 0x5A;  // a payload byte: only the UDP checksum covers it
  struct Case {
    uint64_t flags;
    fd::Verdict want;
  };
  for (const Case c : {Case{0, fd::Verdict::kBadUdpChecksum},  // RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN
                       Case{RTE_MBUF_F_RX_L4_CKSUM_BAD, fd::Verdict::kBadUdpChecksum},
                       Case{RTE_MBUF_F_RX_L4_CKSUM_NONE, fd::Verdict::kBadUdpChecksum},
                       Case{RTE_MBUF_F_RX_L4_CKSUM_GOOD, fd::Verdict::kOurs},
                       Case{RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_IP_CKSUM_GOOD, fd::Verdict::kOurs}}) {
    m->ol_flags = c.flags;
    EXPECT_EQ(fd::decode_mbuf(m, rules(), d), c.want) << "ol_flags " << std::hex << c.flags;
  }
  EXPECT_EQ(d.hdr.seq, 3u);
  EXPECT_EQ(d.payload_bytes, 500u);
  // The IPv4 header checksum is ours to check even when the NIC says good (TTL changed).
  m->ol_flags = RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_IP_CKSUM_GOOD;
  f[fd::kEthHeaderBytes + 8] ^= 1;
  EXPECT_EQ(fd::decode_mbuf(m, rules(), d), fd::Verdict::kBadIpChecksum);
  rte_pktmbuf_free(m);
  rte_mempool_free(pool);
}

// A port asks for RX checksum offload exactly when the device offers IPv4 and UDP checks and the config
// wants it (the virtual devices here do not offer them: the software check stays).
TEST(Port, RxChecksumOffloadWhenTheDeviceOffersIt) {
  REQUIRE_EAL();
  for (const bool want : {true, false}) {
    fd::PortConfig cfg;
    cfg.rx_checksums = want;
    fd::Port p = fd::Port::open(want ? "net_null_fecs1" : "net_null_fecs0", cfg);
    rte_eth_dev_info info{};
    ASSERT_EQ(rte_eth_dev_info_get(p.id(), &info), 0);
    constexpr uint64_t kBoth = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
    EXPECT_EQ(p.rx_checksum_offload(), want && (info.rx_offload_capa & kBoth) == kBoth);
  }
}

// alloc_frames (testpmd's way: rte_mempool_get_bulk and a partial reset) gives mbufs as
// rte_pktmbuf_alloc_bulk would, even after a receive path or a chain left fields changed.
// kN mbufs of `pool` left as an RX burst and its consumer may leave them, then freed.
constexpr unsigned kDirty = 16;
void dirty_pool(rte_mempool* pool) {
  constexpr unsigned kN = kDirty;
  rte_mbuf* m[kN];
  ASSERT_EQ(rte_pktmbuf_alloc_bulk(pool, m, kN), 0);
  for (unsigned i = 0; i < kN; ++i) {  // what an RX burst and its consumer may leave
    ASSERT_NE(rte_pktmbuf_append(m[i], 200), nullptr);
    ASSERT_NE(rte_pktmbuf_adj(m[i], 14), nullptr);
    m[i]->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_VLAN;
    m[i]->packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4;
    m[i]->vlan_tci = 7;
    m[i]->vlan_tci_outer = 9;
    m[i]->port = 3;
    m[i]->l2_len = 14;
    m[i]->l3_len = 20;
  }
  // Two of them as a chain: freeing it restores next and nb_segs, as the pool requires.
  ASSERT_EQ(rte_pktmbuf_chain(m[0], m[1]), 0);
  rte_pktmbuf_free(m[0]);
  for (unsigned i = 2; i < kN; ++i) rte_pktmbuf_free(m[i]);
}

// What alloc_frames and fill_run leave in an mbuf: everything dirty_pool() set reset, the lengths `len`.
void expect_reset(const rte_mbuf* g, uint16_t len) {
  EXPECT_EQ(g->data_off, RTE_PKTMBUF_HEADROOM);
  EXPECT_EQ(g->data_len, len);
  EXPECT_EQ(g->pkt_len, len);
  EXPECT_EQ(g->ol_flags, 0u);
  EXPECT_EQ(g->packet_type, 0u);
  EXPECT_EQ(g->vlan_tci, 0);
  EXPECT_EQ(g->vlan_tci_outer, 0);
  EXPECT_EQ(g->port, RTE_MBUF_PORT_INVALID);
  EXPECT_EQ(g->tx_offload, 0u);
  EXPECT_EQ(g->nb_segs, 1);
  EXPECT_EQ(g->next, nullptr);
  EXPECT_EQ(rte_mbuf_refcnt_read(g), 1);
}

TEST(Frames, AllocFramesResetsWhatAReceivePathLeaves) {
  REQUIRE_EAL();
  constexpr unsigned kN = kDirty;
  rte_mempool* pool = rte_pktmbuf_pool_create("fe_allocf", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr);
  dirty_pool(pool);
  rte_mbuf* got[kN];
  ASSERT_TRUE(fd::alloc_frames(pool, got, kN));
  for (rte_mbuf* g : got) {
    SCOPED_TRACE(testing::Message() << "mbuf " << static_cast<const void*>(g));
    expect_reset(g, 0);
    // And a frame fits and decodes.
    ASSERT_GT(fd::fill_mbuf(g, spec_for(1, 1000)), 0);
    fd::DecodedFrame f;
    EXPECT_EQ(fd::decode_mbuf(g, rules(), f), fd::Verdict::kOurs);
  }
  rte_pktmbuf_free_bulk(got, kN);
  // Fewer left than asked for: nothing taken.
  rte_mbuf* many[64];
  EXPECT_FALSE(fd::alloc_frames(pool, many, 64));
  EXPECT_EQ(rte_mempool_avail_count(pool), 63u);
  rte_mempool_free(pool);
}

// take_frames gives the pool's mbufs as they are; fill_run resets them as alloc_frames does while it writes
// a run's frames into them.
TEST(Frames, FillRunResetsWhatAReceivePathLeaves) {
  REQUIRE_EAL();
  constexpr unsigned kN = kDirty;
  rte_mempool* pool = rte_pktmbuf_pool_create("fe_takef", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr);
  dirty_pool(pool);
  rte_mbuf* got[kN];
  ASSERT_TRUE(fd::take_frames(pool, got, kN));
  fd::FrameSpec s = spec_for(0, 1000);
  s.hdr.count = 20;
  s.hdr.message_length = 19 * 1000 + 321;
  s.hdr.seq = 4;
  s.hdr.offset = 4000;
  fd::FrameTemplate t(s);
  // Packets 4..19 of the message: the last one carries 321 bytes.
  const uint64_t bytes = fd::fill_run(got, kN, t, s, 321);
  EXPECT_EQ(bytes, uint64_t{kN - 1} * fd::frame_bytes(s.mode, 1000) + fd::frame_bytes(s.mode, 321));
  for (unsigned i = 0; i < kN; ++i) {
    const rte_mbuf* g = got[i];
    SCOPED_TRACE(testing::Message() << "frame " << i);
    const uint16_t len = static_cast<uint16_t>(fd::frame_bytes(s.mode, i + 1 == kN ? 321 : 1000));
    expect_reset(g, len);
    fd::DecodedFrame f;
    ASSERT_EQ(fd::decode_mbuf(g, rules(), f), fd::Verdict::kOurs);
    EXPECT_EQ(f.hdr.seq, 4 + i);
    EXPECT_EQ(f.hdr.offset, uint64_t{4 + i} * 1000);
    EXPECT_EQ(f.payload.size(), i + 1 == kN ? 321u : 1000u);
  }
  rte_pktmbuf_free_bulk(got, kN);
  EXPECT_EQ(rte_mempool_avail_count(pool), 63u);
  rte_mempool_free(pool);
}

// A zero pool's mbufs are not reset by fill_run (zero_pool): their fields must stay as the pool made them
// but for the lengths, through a ring pair (the receiver gets the sender's mbuf itself, decodes and frees
// it) and through net_null (which frees it on transmit). Every frame decodes with its own length, and
// every mbuf of the pool is checked after 200 rounds of runs of random lengths.
TEST(Frames, ZeroPoolMbufsStayAsThePoolMadeThem) {
  REQUIRE_EAL();
  fd::RingPair pair("zpool");
  fd::PortConfig cfg;
  cfg.mbufs = 1023;
  fd::Port a(pair.a(), cfg);
  fd::Port b(pair.b(), cfg);
  fd::Port null = fd::Port::open("net_null_fez", cfg);
  std::mt19937 rng(21);
  for (fd::Port* tx : {&a, &null}) {
    rte_mempool* zero = tx->zero_pool(255);
    for (int round = 0; round < 200; ++round) {
      const auto n = static_cast<uint32_t>(1 + rng() % 40);
      const auto payload = static_cast<uint32_t>(1 + rng() % 1400);
      const auto last = static_cast<uint32_t>(1 + rng() % payload);
      fd::FrameSpec s = spec_for(static_cast<uint32_t>(round), payload);
      s.hdr.count = n;
      s.hdr.message_length = uint64_t{n - 1} * payload + last;
      s.hdr.seq = 0;
      s.hdr.offset = 0;
      fd::FrameTemplate t(s);
      rte_mbuf* m[40];
      ASSERT_TRUE(fd::take_frames(zero, m, n));
      ASSERT_GT(fd::fill_run(m, n, t, s, last, true), 0u) << "round " << round;
      for (uint32_t i = 0; i < n; ++i) {
        const auto len = static_cast<uint16_t>(fd::frame_bytes(s.mode, i + 1 == n ? last : payload));
        ASSERT_EQ(m[i]->data_len, len);
        ASSERT_EQ(m[i]->pkt_len, len);
      }
      ASSERT_EQ(tx->tx_all(m, n), n);
      if (tx == &a) {
        rte_mbuf* rx[40];
        ASSERT_EQ(b.rx_burst(rx, 40), n);
        for (uint32_t i = 0; i < n; ++i) {
          fd::DecodedFrame d;
          ASSERT_EQ(fd::decode_mbuf(rx[i], rules(), d), fd::Verdict::kOurs) << "round " << round << " frame " << i;
          EXPECT_EQ(d.payload.size(), i + 1 == n ? last : payload);
        }
        rte_pktmbuf_free_bulk(rx, n);
      }
    }
    // Every mbuf back in the pool, each as the pool made it but for its last lengths.
    ASSERT_EQ(rte_mempool_avail_count(zero), 255u);
    rte_mempool_obj_iter(
        zero,
        [](rte_mempool*, void*, void* obj, unsigned) {
          const auto* g = static_cast<const rte_mbuf*>(obj);
          expect_reset(g, g->data_len);
          EXPECT_EQ(g->pkt_len, g->data_len);
        },
        nullptr);
  }
}

TEST(NetNull, MillionFramesCountedByTheDevice) {
  REQUIRE_EAL();
  fd::PortConfig cfg;
  fd::Port p = fd::Port::open("net_null_fe0", cfg);
  constexpr uint16_t kBurst = 32;
  // FABEMU_NET_NULL_FRAMES raises the count for the README's rate measurement.
  const char* env = std::getenv("FABEMU_NET_NULL_FRAMES");
  const uint64_t kFrames = env != nullptr ? std::strtoull(env, nullptr, 10) / kBurst * kBurst : 1'000'000;
  // FABEMU_NET_NULL_PAYLOAD=n: every frame carries n payload bytes (default: 0..1412 in turn).
  const char* penv = std::getenv("FABEMU_NET_NULL_PAYLOAD");
  const long fixed_payload = penv != nullptr ? std::strtol(penv, nullptr, 10) : -1;
  rte_mbuf* tx[kBurst];
  uint64_t sent = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (sent < kFrames) {
    ASSERT_EQ(rte_pktmbuf_alloc_bulk(p.pool(), tx, kBurst), 0);
    for (uint16_t i = 0; i < kBurst; ++i)
      fd::fill_mbuf(tx[i], spec_for(static_cast<uint32_t>(sent + i),
                                    fixed_payload >= 0 ? static_cast<uint32_t>(fixed_payload)
                                                       : static_cast<uint32_t>((sent + i) % 1413)));
    sent += p.tx_all(tx, kBurst);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("net_null: %llu encoded frames (payload %s) in %.3f s = %.2f Mpps\n",
              static_cast<unsigned long long>(sent), penv != nullptr ? penv : "0..1412", s,
              static_cast<double>(sent) / s / 1e6);
  EXPECT_EQ(sent, kFrames);
  EXPECT_EQ(p.stats().opackets, kFrames);
  EXPECT_EQ(p.stats().oerrors, 0u);
}

// NIC hardware timestamps: net_pcap is the one virtual device here that sets the RX timestamp dynamic
// field (DPDK 22.11 registers it at probe and fills it on every frame from the pcap record's time, in
// microseconds: libpcap reads files at microsecond precision, truncating nanosecond records). It does
// not offer RTE_ETH_RX_OFFLOAD_TIMESTAMP and cannot read its clock (rte_eth_read_clock), so the fabric
// times its arrivals by the TSC; what is tested here is the reading of the field itself.
TEST(NetPcap, RxTimestampsAreThePcapRecordTimes) {
  REQUIRE_EAL();
  TempDir dir;
  const fs::path file = dir.path / "rx.pcap";
  const uint32_t kFrames = 500;
  std::vector<uint64_t> ns;
  {
    fd::PcapWriter w(file.string());
    std::vector<uint8_t> frame(2048);
    for (uint32_t seq = 0; seq < kFrames; ++seq) {
      const size_t n = fd::encode(spec_for(seq, 64 + seq), frame);
      ASSERT_GT(n, 0u);
      ns.push_back(1'764'470'000'000'000'000ull + uint64_t{seq} * 1'234'567 + seq % 7);
      w.write(std::span<const uint8_t>(frame.data(), n), ns.back());
    }
    w.close();
  }
  fd::PortConfig cfg;
  cfg.promiscuous = false;
  fd::Port p = fd::Port::open("net_pcap_ts0,rx_pcap=" + file.string(), cfg);
  EXPECT_FALSE(p.rx_timestamp_offload());
  uint64_t clock = 0;
  EXPECT_FALSE(p.read_clock(clock));
  uint32_t got = 0;
  rte_mbuf* pkts[32];
  for (int idle = 0; got < kFrames && idle < 1000;) {
    const uint16_t n = p.rx_burst(pkts, 32);
    idle = n == 0 ? idle + 1 : 0;
    for (uint16_t i = 0; i < n; ++i) {
      uint64_t ts = 0;
      ASSERT_TRUE(p.rx_timestamp(pkts[i], ts)) << "frame " << got;
      EXPECT_EQ(ts, ns[got] / 1000) << "frame " << got;
      fd::DecodedFrame f;
      EXPECT_EQ(fd::decode_mbuf(pkts[i], rules(), f), fd::Verdict::kOurs);
      EXPECT_EQ(f.hdr.seq, got);
      rte_pktmbuf_free(pkts[i]);
      ++got;
    }
  }
  EXPECT_EQ(got, kFrames);
}

TEST(NetPcap, TxPcapFileReadsBack) {
  REQUIRE_EAL();
  TempDir dir;
  const fs::path file = dir.path / "tx.pcap";
  const uint32_t kFrames = 2000;
  std::mt19937 rng(7);
  std::vector<uint32_t> sizes;
  {
    fd::PortConfig cfg;
    cfg.promiscuous = false;
    fd::Port p = fd::Port::open("net_pcap_fe0,tx_pcap=" + file.string(), cfg);
    for (uint32_t seq = 0; seq < kFrames; ++seq) {
      rte_mbuf* m = rte_pktmbuf_alloc(p.pool());
      ASSERT_NE(m, nullptr);
      sizes.push_back(random_payload(rng));
      ASSERT_GT(fd::fill_mbuf(m, spec_for(seq, sizes.back())), 0);
      ASSERT_EQ(p.tx_all(&m, 1), 1u);
    }
    EXPECT_EQ(p.stats().opackets, kFrames);
  }  // closing the port closes the file

  std::ifstream in(file, std::ios::binary);
  ASSERT_TRUE(in) << file;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 24u);
  auto u32 = [&](size_t off) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + off, 4);
    return v;
  };
  const uint32_t magic = u32(0);
  ASSERT_TRUE(magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) << std::hex << magic;  // native byte order
  EXPECT_EQ(u32(20), 1u);  // link type Ethernet
  size_t off = 24;
  uint32_t seq = 0;
  while (off + 16 <= bytes.size()) {
    const uint32_t incl = u32(off + 8), orig = u32(off + 12);
    ASSERT_EQ(incl, orig);
    ASSERT_LE(off + 16 + incl, bytes.size());
    fd::DecodedFrame f;
    ASSERT_EQ(fd::decode(std::span<const uint8_t>(bytes.data() + off + 16, incl), rules(), f), fd::Verdict::kOurs)
        << "record " << seq;
    ASSERT_LT(seq, kFrames);
    EXPECT_EQ(f.hdr.seq, seq);
    EXPECT_EQ(f.payload_bytes, sizes[seq]);
    ++seq;
    off += 16 + incl;
  }
  EXPECT_EQ(off, bytes.size());
  EXPECT_EQ(seq, kFrames);
}

TEST(Memif, ServerAndClientInOneProcess) {
  REQUIRE_EAL();
  TempDir dir;
  const std::string sock = (dir.path / "memif.sock").string();
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(4096, 32);
  fd::Port server = fd::Port::open("net_memif_fe0,role=server,id=0,socket=" + sock, cfg);
  // DPDK 22.11's memif crashes now and then in the EAL interrupt thread when the client is probed while
  // that thread still sets up the server's socket, or when both are torn down at once: let each settle
  // (DpdkPorts::memif does the same).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::optional<fd::Port> client_holder(fd::Port::open("net_memif_fe1,role=client,id=0,socket=" + sock, cfg));
  fd::Port& client = *client_holder;
  struct CloseClientFirst {
    std::optional<fd::Port>& c;
    ~CloseClientFirst() {
      c.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } close_first{client_holder};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!(server.link_up() && client.link_up()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!(server.link_up() && client.link_up()))
    GTEST_SKIP() << "net_memif server and client on one socket did not connect within 2 s in one process "
                 << "(server link " << server.link_up() << ", client link " << client.link_up() << ")";
  const uint32_t kFrames = 10'000;
  const Transfer t = transfer(client, server, kFrames, std::chrono::milliseconds(2000));
  EXPECT_EQ(t.sent, kFrames);
  EXPECT_EQ(t.received, kFrames);
  EXPECT_EQ(t.not_ours, 0u);
  EXPECT_EQ(t.out_of_order, 0u);
  EXPECT_EQ(t.bad_length, 0u);
  // And back.
  const Transfer back = transfer(server, client, kFrames, std::chrono::milliseconds(2000));
  EXPECT_EQ(back.received, kFrames);
  EXPECT_EQ(back.out_of_order, 0u);
}

TEST(Port, DevicesCanBeReopenedAfterClose) {
  REQUIRE_EAL();
  fd::PortConfig cfg;
  cfg.mbufs = 1023;
  for (int round = 0; round < 3; ++round) {
    fd::RingPair pair("again");
    fd::Port a(pair.a(), cfg);
    fd::Port b(pair.b(), cfg);
    fd::Port n = fd::Port::open("net_null_again", cfg);
    EXPECT_EQ(n.name(), "net_null_again");
    fd::Port moved(std::move(n));
    EXPECT_EQ(moved.name(), "net_null_again");
  }
  EXPECT_THROW(fd::Port::open("net_no_such_driver0", cfg), std::runtime_error);
}

// Real frames through the kernel: net_af_packet on both ends of a veth pair. Runs only inside the network
// namespace that tests/dpdk/netns_af_packet.sh creates, which names the two ends in
// FABEMU_AF_PACKET_IFACES ("vethA,vethB"); the script then checks its tcpdump capture of vethB.
TEST(AfPacket, VethPairInOurNamespace) {
  REQUIRE_EAL();
  const char* env = std::getenv("FABEMU_AF_PACKET_IFACES");
  if (env == nullptr)
    GTEST_SKIP() << "FABEMU_AF_PACKET_IFACES is not set: run through tests/dpdk/netns_af_packet.sh, which "
                    "creates the namespace and veth pair";
  const std::string ifaces = env;
  const size_t comma = ifaces.find(',');
  ASSERT_NE(comma, std::string::npos) << "FABEMU_AF_PACKET_IFACES must be \"ifaceA,ifaceB\"";
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(4096, 32);
  fd::Port a = fd::Port::open("net_af_packet_fe0,iface=" + ifaces.substr(0, comma), cfg);
  fd::Port b = fd::Port::open("net_af_packet_fe1,iface=" + ifaces.substr(comma + 1), cfg);
  const uint32_t kFrames = 2000;
  const Transfer t = transfer(a, b, kFrames, std::chrono::milliseconds(2000));
  std::printf("af_packet: sent %u, received %u of ours, %u not ours (kernel traffic)\n", t.sent, t.received,
              t.not_ours);
  EXPECT_EQ(t.sent, kFrames);
  EXPECT_EQ(t.received, kFrames);
  EXPECT_EQ(t.out_of_order, 0u);
  EXPECT_EQ(t.bad_length, 0u);
}
