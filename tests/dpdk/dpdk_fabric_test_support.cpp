#include "tests/dpdk/dpdk_fabric_test_support.h"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <system_error>


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

}  // namespace fabemu::test
