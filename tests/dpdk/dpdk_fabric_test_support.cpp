#include "tests/dpdk/dpdk_fabric_test_support.h"

#include <rte_mbuf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "tests/emulator/fabric_test_util.h"
#include "tests/support/alloc_counter.h"

namespace fabemu::test {

namespace fs = std::filesystem;
using namespace emu;
using namespace emu::walker_test;
namespace fd = host::dpdk;

TempDir::TempDir() {
  std::string t = (fs::temp_directory_path() / "fabemu-dpdkfab-XXXXXX").string();
  if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path = t;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

RunResult run_software(const Workload& w) {
  Engine engine(1 << 12);
  Topology topo(w.net);
  PacketFabric fabric(engine, topo, kModelMtu);
  return walk(fabric, w);
}

DpdkRun run_dpdk(const Workload& w, fd::DpdkPorts& ports, fd::DpdkFabricOptions opt) {
  opt.model_mtu = kModelMtu;
  Topology topo(w.net);
  const auto plan = fd::AddressPlan::make_default(static_cast<uint32_t>(topo.npus()));
  fd::DpdkFabric fabric(topo, plan, ports, opt);
  return run_through(fabric, w, fd::format_dpdk_stats);
}

fd::PortConfig port_config() {
  fd::PortConfig cfg;
  cfg.mbufs = cfg.mbufs_for(4096, 32, 2);
  return cfg;
}

fd::PortConfig port_config(uint16_t rx_queues, uint16_t tx_queues) {
  fd::PortConfig cfg = port_config();
  cfg.rx_queues = rx_queues;
  cfg.tx_queues = tx_queues;
  return cfg;
}

std::unique_ptr<fd::DpdkFabric> ring4_fabric(fd::DpdkPorts& ports, const fd::DpdkFabricOptions& opt) {
  const NetworkConfig net = walker_test::network({walker_test::dim(DimTopology::kRing, 4)});
  return std::make_unique<fd::DpdkFabric>(Topology(net), fd::AddressPlan::make_default(4), ports, opt);
}

std::string refusal(fd::DpdkPorts& ports, const fd::DpdkFabricOptions& opt) {
  try {
    ring4_fabric(ports, opt);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

std::vector<uint16_t> frames_per_rx_queue(fd::Port& from, uint16_t tx_queue, uint16_t frames, fd::Port& to,
                                          uint16_t rx_queues) {
  constexpr uint16_t kMax = 32;
  rte_mbuf* m[kMax] = {};
  if (frames == 0 || frames > kMax || rte_pktmbuf_alloc_bulk(from.pool(), m, frames) != 0) {
    ADD_FAILURE() << "could not allocate " << frames << " mbufs";
    return {};
  }
  if (const uint16_t sent = from.tx_burst(m, frames, tx_queue); sent != frames) {
    rte_pktmbuf_free_bulk(m + sent, frames - sent);
    ADD_FAILURE() << "transmit queue " << tx_queue << " took " << sent << " of " << frames << " frames";
    return {};
  }
  std::vector<uint16_t> got(rx_queues);
  for (uint16_t r = 0; r < rx_queues; ++r) {
    rte_mbuf* rx[2 * kMax];
    got[r] = to.rx_burst(rx, 2 * kMax, r);
    rte_pktmbuf_free_bulk(rx, got[r]);
  }
  return got;
}

void expect_exact(const RunResult& sw, const DpdkRun& d) {
  ASSERT_TRUE(sw.stuck.empty());
  ASSERT_TRUE(d.result.stuck.empty()) << d.result.stuck.front();
  EXPECT_GT(sw.total.ps(), 0u);
  EXPECT_EQ(d.result.total.ps(), sw.total.ps());
  ASSERT_EQ(d.result.ranks.size(), sw.ranks.size());
  for (size_t r = 0; r < sw.ranks.size(); ++r) {
    EXPECT_EQ(d.result.ranks[r].finish.ps(), sw.ranks[r].finish.ps()) << "rank " << r;
    EXPECT_EQ(d.result.ranks[r].exposed_comm.ps(), sw.ranks[r].exposed_comm.ps()) << "rank " << r;
  }
  const fd::DpdkStats& s = d.stats;
  EXPECT_TRUE(d.drained);
  EXPECT_GT(s.messages, 0u);
  EXPECT_EQ(s.deliveries, s.messages + s.local_messages);
  EXPECT_EQ(s.messages_completed, s.messages);
  EXPECT_EQ(s.bytes_completed, s.message_bytes);
  EXPECT_EQ(s.latency_ns.count(), s.messages);
  EXPECT_EQ(s.not_ours, 0u);
  EXPECT_EQ(s.rx_invalid + s.rx_receiver_invalid, 0u);
  // Every frame sent arrived on the other port (the fault filter drops after receiving); drain() polls
  // until the ports are quiet.
  EXPECT_EQ(s.frames_rx, s.frames_tx);
}

Capture read_capture(const std::string& path, const host::dpdk::DecodeRules& rules) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Capture c;
  if (bytes.size() < 24) {
    c.whole = false;
    return c;
  }
  size_t pos = 24;
  uint64_t last_ns = 0;
  while (pos + 16 <= bytes.size()) {
    uint32_t sec = 0, nsec = 0, incl = 0;
    std::memcpy(&sec, &bytes[pos], 4);
    std::memcpy(&nsec, &bytes[pos + 4], 4);
    std::memcpy(&incl, &bytes[pos + 8], 4);
    pos += 16;
    if (pos + incl > bytes.size()) break;
    const uint64_t ns = uint64_t{sec} * 1'000'000'000 + nsec;
    if (ns < last_ns) ++c.out_of_order;
    if (c.frames == 0) c.first_ns = ns;
    c.last_ns = last_ns = ns;
    host::dpdk::DecodedFrame f;
    if (host::dpdk::decode(std::span<const uint8_t>(&bytes[pos], incl), rules, f) != host::dpdk::Verdict::kOurs) {
      ++c.not_ours;
    } else if (f.hdr.kind == host::dpdk::PacketKind::kData) {
      ++c.data;
    } else {
      ++c.feedback;
    }
    ++c.frames;
    pos += incl;
  }
  c.whole = pos == bytes.size();
  return c;
}

void expect_capture_of(const std::string& path, host::dpdk::WireMode mode, const host::dpdk::DpdkStats& s) {
  const Capture c = read_capture(path, host::dpdk::AddressPlan::make_default(8).decode_rules(mode));
  EXPECT_TRUE(c.whole);
  EXPECT_EQ(c.not_ours, 0u);
  EXPECT_EQ(c.out_of_order, 0u);
  EXPECT_EQ(c.frames, s.frames_tx);
  EXPECT_EQ(c.data, s.data_frames + s.retransmissions);
  EXPECT_EQ(c.feedback, s.acks + s.nacks);
  EXPECT_GT(c.feedback, 0u);
  EXPECT_EQ(s.pcap, path);  // the report's capture line
  EXPECT_EQ(s.pcap_frames, c.frames);
  const auto now_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  EXPECT_GE(c.first_ns, now_ns - uint64_t{120'000'000'000}) << "the capture's timestamps are not wall-clock dates";
  EXPECT_LE(c.last_ns, now_ns);
}

void expect_second_wave_allocates_nothing(fd::DpdkPorts& ports, const fd::DpdkFabricOptions& options,
                                          uint64_t slack) {
  const NetworkConfig net = network({dim(DimTopology::kRing, 4), dim(DimTopology::kSwitch, 2)});
  fd::DpdkFabricOptions opt = options;
  opt.model_mtu = 4096;
  // Nothing is lost on a ring pair: no NACK or timeout may fire just because the machine stalled the
  // test, which would take the recovery paths (and their first allocations) in one wave only.
  opt.nack_delay = Duration::from_ms(10'000);
  opt.rto = Duration::from_ms(10'000);
  fd::DpdkFabric fabric(Topology(net), fd::AddressPlan::make_default(8), ports, opt);
  emu::testing::Recorder got;
  fabric.set_listener(&got);
  emu::testing::Injector inj(fabric);
  // 600 messages of 1 byte to 40 KB between every pair (local ones too), a few hundred ns apart.
  std::mt19937_64 rng(42);
  std::vector<std::pair<Duration, Message>> wave;
  constexpr uint64_t kSizes[] = {1, 100, 1442, 1443, 4096, 9000, 40'000};
  for (uint64_t i = 0; i < 600; ++i) {
    Message m{i, static_cast<int32_t>(rng() % 8), static_cast<int32_t>(rng() % 8), kSizes[rng() % 7], rng() % 4};
    wave.emplace_back(Duration::from_ns(i * 300), m);
  }
  inj.reserve(2 * wave.size());
  got.log.reserve(2 * wave.size());
  const uint64_t first_wave = allocations();
  for (const auto& [at, m] : wave) inj.add(Time::zero() + at, m);
  fabric.engine().run();
  ASSERT_EQ(got.log.size(), wave.size());
  EXPECT_GT(allocations(), first_wave) << "the counter counts (the first wave fills the pools)";
  const Time second = fabric.engine().now() + Duration::from_us(1);
  const uint64_t before = allocations();
  for (auto [at, m] : wave) {
    m.id += wave.size();
    inj.add(second + at, m);
  }
  fabric.engine().run();
  EXPECT_LE(allocations() - before, slack) << "allocations in the second wave of " << wave.size() << " messages";
  ASSERT_EQ(got.log.size(), 2 * wave.size());
  EXPECT_TRUE(fabric.drain());
  const fd::DpdkStats& s = fabric.stats();
  EXPECT_EQ(s.deliveries, 2 * wave.size());
  EXPECT_EQ(s.messages_completed, s.messages);
  // The second wave's deliveries are the first's, shifted.
  for (size_t i = 0; i < wave.size(); ++i) {
    EXPECT_EQ(got.log[wave.size() + i].first, got.log[i].first + wave.size());
    EXPECT_EQ(got.log[wave.size() + i].second - second, got.log[i].second - Time::zero()) << i;
  }
}

}  // namespace fabemu::test
