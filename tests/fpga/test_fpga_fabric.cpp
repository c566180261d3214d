// FpgaFabric against PacketFabric: identical deliveries on randomized workloads (model and hw-emu
// devices, zero-latency links included), and identical walker reports on the shared ASTRA-sim
// microbenchmarks with the RTL under Verilator doing every packet-hop.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "emulator/report_json.h"
#include "host/config/astra_config.h"
#include "host/fpga/fpga_fabric.h"
#include "tests/emulator/walker_test_util.h"
#include "tests/fpga/fpga_test_util.h"
#include "tests/fpga/microbenchmarks.h"
#include "traces/trace_set.h"

namespace ft = fabemu::fpga_test;
namespace fpga = fabemu::host::fpga;
namespace emu = fabemu::emu;

namespace {

std::vector<std::pair<uint64_t, emu::Time>> fpga_deliveries(const emu::NetworkConfig& config, uint32_t mtu,
                                                             const std::vector<ft::TimedMessage>& msgs,
                                                             const std::string& device, uint64_t* runs = nullptr) {
  struct Log final : emu::DeliveryListener {
    void on_delivered(uint64_t id, emu::Time at) override { v.emplace_back(id, at); }
    std::vector<std::pair<uint64_t, emu::Time>> v;
  } log;
  emu::Engine engine;
  auto fabric = fpga::make_fpga_fabric(engine, emu::Topology(config), mtu, device);
  fabric->set_listener(&log);
  for (const auto& tm : msgs) fabric->send(tm.m, tm.ready);
  engine.run();
  EXPECT_EQ(fabric->messages_delivered(), msgs.size());
  if (runs != nullptr) *runs = fabric->device_runs();
  return log.v;
}

emu::NetworkConfig zero_latency_ring() {
  emu::NetworkConfig c;
  c.dims = {ft::dim(emu::DimTopology::kRing, 6, emu::Rate::from_gbps(250), emu::Duration::zero())};
  return c;
}

}  // namespace

TEST(FpgaFabric, SameDeliveriesAsPacketFabric) {
  std::vector<ft::WorkloadCase> cases(std::begin(ft::kWorkloadCases), std::end(ft::kWorkloadCases));
  cases.push_back({"zero_latency", zero_latency_ring, 2048, false});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto config = c.config();
    const auto msgs = ft::random_messages(emu::Topology(config), 31, 3'000, 20'000'000, 4 * c.mtu, c.incast);
    uint64_t runs = 0;
    EXPECT_EQ(fpga_deliveries(config, c.mtu, msgs, "model", &runs), ft::packet_fabric_deliveries(config, c.mtu, msgs));
    EXPECT_GT(runs, 0u);
  }
}

TEST(FpgaFabric, SameDeliveriesOnTheRtl) {
  const auto config = ft::fat_tree_4x3x2();
  const auto msgs = ft::random_messages(emu::Topology(config), 77, 2'000, 5'000'000, 6'000, false);
  EXPECT_EQ(fpga_deliveries(config, 1500, msgs, "hwemu"), ft::packet_fabric_deliveries(config, 1500, msgs));
}

// Times past 2^32 ps (4.3 ms of emulated time, reached by any longer workload): the same traffic 2^41 ps
// (about 2.2 s) later, through the RTL and the C++ model, against PacketFabric; every 64-bit time field of
// the descriptors, the link state and the completions carries its high word.
TEST(FpgaFabric, TimesPast2To32PsAreExact) {
  const auto config = ft::fat_tree_4x3x2();
  auto msgs = ft::random_messages(emu::Topology(config), 2024, 1'500, 5'000'000, 6'000, true);
  const emu::Duration late = emu::Duration::from_ps(uint64_t{1} << 41);
  for (auto& tm : msgs) tm.ready = tm.ready + late;
  const auto expected = ft::packet_fabric_deliveries(config, 1500, msgs);
  ASSERT_EQ(expected.size(), msgs.size());
  for (const auto& [id, at] : expected) ASSERT_GE(at.ps(), uint64_t{1} << 41) << "message " << id;
  EXPECT_EQ(fpga_deliveries(config, 1500, msgs, "model"), expected);
  EXPECT_EQ(fpga_deliveries(config, 1500, msgs, "hwemu"), expected);
}

TEST(FpgaFabric, RejectsATopologyLargerThanTheKernel) {
  emu::NetworkConfig c;
  c.dims = {ft::dim(emu::DimTopology::kFullyConnected, 65, emu::Rate::from_gbps(100), emu::Duration::from_ns(1))};
  emu::Engine engine;
  EXPECT_THROW(fpga::make_fpga_fabric(engine, emu::Topology(c), 0, "model"), std::invalid_argument);  // 4160 links
}

TEST(FpgaFabric, MicrobenchmarkReportsMatchSoftware) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  using namespace emu::walker_test;
  const emu::SystemConfig sys = ft::microbenchmark_system(traces_dir);
  double t_sw = 0;
  double t_hw = 0;
  uint64_t hops = 0;
  int n_runs = 0;
  for (const ft::Microbenchmark& mb : ft::shared_microbenchmarks(traces_dir)) {
    SCOPED_TRACE(mb.what);
    ASSERT_EQ(mb.files.size(), static_cast<std::size_t>(mb.npus)) << mb.what;
    const auto& files = mb.files;
    const auto& net = mb.network;
    const fabemu::traces::ProcessGroups groups(mb.npus);
    ++n_runs;
    uint64_t runs = 0;
    const auto run = [&](bool fpga_fabric) {
      emu::Engine engine(1 << 12);
      emu::Topology topology(net);
      emu::WalkerOptions o;
      o.system = sys;
      const auto t0 = std::chrono::steady_clock::now();
      emu::RunResult r;
      if (fpga_fabric) {
        auto fabric = fpga::make_fpga_fabric(engine, topology, 4096, "hwemu");
        emu::Walker w(*fabric, net, files, groups, std::move(o));
        r = w.run();
        hops += fabric->device_hops();
        runs = fabric->device_runs();
      } else {
        emu::PacketFabric fabric(engine, topology, 4096);
        emu::Walker w(fabric, net, files, groups, std::move(o));
        r = w.run();
      }
      (fpga_fabric ? t_hw : t_sw) += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return r;
    };
    const emu::RunResult sw = run(false);
    emu::RunResult hw = run(true);
    ASSERT_TRUE(sw.stuck.empty());
    // The engine ran one window-flush event per device run on top of PacketFabric's events; every
    // other number of the report is the same.
    EXPECT_EQ(hw.events, sw.events + runs);
    hw.events = sw.events;
    EXPECT_EQ(emu::report_to_json(hw), emu::report_to_json(sw));
  }
  std::printf("microbenchmarks (%d runs, mtu 4096): software %.3f s, hw-emu %.3f s, %llu packet-hops on the RTL\n",
              n_runs, t_sw, t_hw, static_cast<unsigned long long>(hops));
}
