// The whole kernel (sched_kernel.sv) under Verilator behind AXI4-Lite and AXI4 memory models: the
// three-way equality RTL == C++ model == software PacketFabric on randomized workloads, one hop per
// clock end to end when memory keeps up, and the control registers.
#include <gtest/gtest.h>

#include <ctime>
#include <cstdio>

#include "host/fpga/sched_device.h"
#include "rtl_models/sched_hwemu.h"
#include "rtl_models/sched_kernel_model.h"
#include "tests/fpga/fpga_test_util.h"

namespace ft = fabemu::fpga_test;
namespace hs = fabemu::hw::sched;
namespace fpga = fabemu::host::fpga;
using fabemu::rtl::DeviceMemory;
using fabemu::rtl::SchedHwEmu;

namespace {

// Loads `links`, runs `hops` once on the RTL, returns the completions and the REG_CYCLES count.
// *seconds (optional): wall time of the run alone, for the simulated-cycles-per-second figure.
std::vector<hs::Completion> run_once(SchedHwEmu& k, DeviceMemory& mem, const std::vector<hs::LinkEntry>& links,
                                     const std::vector<hs::HopDesc>& hops, uint64_t* cycles, double* seconds = nullptr) {
  mem.clear();
  const uint64_t la = mem.allocate(links.size() * hs::RECORD_BYTES);
  const uint64_t da = mem.allocate(hops.size() * hs::RECORD_BYTES);
  const uint64_t ca = mem.allocate(hops.size() * hs::RECORD_BYTES);
  for (std::size_t i = 0; i < links.size(); ++i) mem.write(la + i * 32, hs::encode(links[i]).data(), 32);
  for (std::size_t i = 0; i < hops.size(); ++i) mem.write(da + i * 32, hs::encode(hops[i]).data(), 32);
  const auto put64 = [&](uint32_t lo, uint64_t v) {
    k.write_reg(lo, static_cast<uint32_t>(v));
    k.write_reg(lo + 4, static_cast<uint32_t>(v >> 32));
  };
  put64(hs::REG_LINKS_ADDR_LO, la);
  put64(hs::REG_DESC_ADDR_LO, da);
  put64(hs::REG_CMPL_ADDR_LO, ca);
  k.write_reg(hs::REG_NUM_LINKS, static_cast<uint32_t>(links.size()));
  k.write_reg(hs::REG_NUM_DESC, static_cast<uint32_t>(hops.size()));
  const uint64_t c0 = k.cycles();
  const std::clock_t t0 = std::clock();  // CPU time: the machine is shared
  k.start_and_wait();
  if (seconds != nullptr) {
    *seconds = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
    std::printf("hw-emu: %llu cycles simulated in %.3f s of CPU: %.2f M cycles/s\n",
                static_cast<unsigned long long>(k.cycles() - c0), *seconds,
                static_cast<double>(k.cycles() - c0) / *seconds / 1e6);
  }
  *cycles = uint64_t{k.read_reg(hs::REG_CYCLES_LO)} | uint64_t{k.read_reg(hs::REG_CYCLES_HI)} << 32;
  std::vector<hs::Completion> out(hops.size());
  hs::Record r;
  for (std::size_t i = 0; i < hops.size(); ++i) {
    mem.read(ca + i * 32, r.data(), 32);
    out[i] = hs::decode_completion(r);
  }
  return out;
}

}  // namespace

TEST(FpgaKernel, ControlRegisters) {
  DeviceMemory mem;
  SchedHwEmu k(mem);
  EXPECT_EQ(k.read_reg(hs::REG_LINK_CAP), 1u << fabemu::rtl::kLinkAddrW);
  EXPECT_EQ(k.read_reg(hs::REG_VERSION), hs::MAP_VERSION);
  EXPECT_EQ(k.read_reg(hs::REG_CTRL), 1u << hs::CTRL_AP_IDLE);
  k.write_reg(hs::REG_DESC_ADDR_HI, 0xdead'beef);
  k.write_reg(hs::REG_NUM_DESC, 12345);
  EXPECT_EQ(k.read_reg(hs::REG_DESC_ADDR_HI), 0xdead'beefu);
  EXPECT_EQ(k.read_reg(hs::REG_NUM_DESC), 12345u);
  // An empty run still completes (ap_done, then idle again).
  k.write_reg(hs::REG_NUM_DESC, 0);
  k.write_reg(hs::REG_NUM_LINKS, 0);
  k.start_and_wait();
  EXPECT_EQ(k.read_reg(hs::REG_CTRL), 1u << hs::CTRL_AP_IDLE);
}

TEST(FpgaKernel, OneHopPerClockEndToEnd) {
  // Memory that never stalls: a run of N hops takes N + links + a constant, whatever N, on one link.
  std::vector<hs::LinkEntry> links(16, hs::LinkEntry{(uint64_t{80} << 32) / 3, 2'000, 0});
  uint64_t overhead = 0;
  for (const std::size_t n : {1'000u, 200'000u}) {
    std::vector<hs::HopDesc> hops;
    for (uint64_t i = 0; i < n; ++i) hops.push_back(hs::HopDesc{i, static_cast<uint32_t>(100 + i % 1400), 7, i});
    DeviceMemory mem;
    SchedHwEmu k(mem);
    uint64_t cycles = 0;
    double secs = 0;
    EXPECT_EQ(run_once(k, mem, links, hops, &cycles, &secs), fabemu::rtl::schedule_hops(links, hops));
    std::printf("hw-emu: %zu hops in %llu kernel cycles (%.4f hops/clock)\n", n, static_cast<unsigned long long>(cycles),
                static_cast<double>(n) / static_cast<double>(cycles - links.size()));
    const uint64_t o = cycles - n - links.size();
    if (overhead == 0) overhead = o;
    EXPECT_EQ(o, overhead) << "cycles grow by exactly one per hop";
    EXPECT_EQ(cycles, fabemu::rtl::SchedKernelModel::run_cycles(links.size(), n));
  }
}

TEST(FpgaKernel, ThreeWayEqualityOnRandomWorkloads) {
  struct Case {
    const char* name;
    fabemu::emu::NetworkConfig (*config)();
    uint32_t mtu;
    std::size_t messages;
    uint64_t horizon_ps;
    bool incast;
    uint32_t stall_per_256;
    uint32_t read_latency;  // cycles from AR to the first R beat
  };
  const Case cases[] = {
      {"ring8", ft::ring8, 1024, 27'000, 180'000'000, false, 0, 1},
      {"switch16_incast", ft::switch16, 512, 24'000, 90'000'000, true, 40, 9},
      {"ring4_fc4", ft::ring4_fc4, 4096, 18'000, 600'000'000, false, 0, 1},
      {"fat_tree", ft::fat_tree_4x3x2, 1500, 27'000, 120'000'000, false, 90, 40},
  };
  std::size_t total = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto config = c.config();
    ft::HopRecorder rec(config, c.mtu);
    const auto msgs = ft::random_messages(rec.topology(), 99, c.messages, c.horizon_ps, 4 * c.mtu, c.incast);
    rec.run(msgs);
    const auto pf = ft::packet_fabric_deliveries(config, c.mtu, msgs);
    ASSERT_EQ(rec.deliveries, pf);
    const auto links = ft::link_table(rec.topology());

    DeviceMemory mem;
    SchedHwEmu k(mem, fabemu::rtl::HwEmuOptions{c.stall_per_256, 7, uint64_t{1} << 34, c.read_latency});
    uint64_t cycles = 0;
    const auto rtl = run_once(k, mem, links, rec.hops, &cycles);
    EXPECT_EQ(rtl, rec.expected);
    EXPECT_EQ(fabemu::rtl::schedule_hops(links, rec.hops), rec.expected);
    const auto from_rtl = ft::deliveries_from(rec.info, rtl);
    ASSERT_EQ(from_rtl.size(), pf.size());
    for (const auto& [id, at] : pf) ASSERT_EQ(from_rtl.at(id), at.ps()) << "message " << id;
    if (c.stall_per_256 == 0) {
      EXPECT_EQ(cycles, fabemu::rtl::SchedKernelModel::run_cycles(links.size(), rec.hops.size()));
    }
    total += rec.hops.size();
  }
  std::printf("three-way equality over %zu packet-hops\n", total);
  EXPECT_GT(total, 550'000u);
}

TEST(FpgaKernel, ErrorResponsesSetTheStatusRegisterForOneRun) {
  // SLVERR on one R beat (a descriptor) and, on another kernel, on one B response: the run still ends
  // (ap_done) with its STATUS bit set; the next run starts with the bits cleared.
  std::vector<hs::LinkEntry> links(4, hs::LinkEntry{uint64_t{80} << 32, 1'000, 0});
  std::vector<hs::HopDesc> hops;
  for (uint64_t i = 0; i < 100; ++i) hops.push_back(hs::HopDesc{i * 10, 500, static_cast<uint32_t>(i % 4), i});
  struct Case {
    uint64_t rresp_error_beat;
    uint64_t bresp_error_burst;
    uint32_t status;
  };
  const Case cases[] = {{3 + 50, fabemu::rtl::HwEmuOptions::kNoError, 1u << hs::STATUS_RD_ERR},
                        {1, fabemu::rtl::HwEmuOptions::kNoError, 1u << hs::STATUS_RD_ERR},  // in the link table
                        {fabemu::rtl::HwEmuOptions::kNoError, 6, 1u << hs::STATUS_WR_ERR}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.status);
    DeviceMemory mem;
    fabemu::rtl::HwEmuOptions opt;
    opt.stall_per_256 = 30;
    opt.rresp_error_beat = c.rresp_error_beat;
    opt.bresp_error_burst = c.bresp_error_burst;
    SchedHwEmu k(mem, opt);
    EXPECT_EQ(k.read_reg(hs::REG_STATUS), 0u);
    uint64_t cycles = 0;
    run_once(k, mem, links, hops, &cycles);
    EXPECT_EQ(k.read_reg(hs::REG_STATUS), c.status);
    EXPECT_EQ(run_once(k, mem, links, hops, &cycles), fabemu::rtl::schedule_hops(links, hops));
    EXPECT_EQ(k.read_reg(hs::REG_STATUS), 0u) << "cleared when the next run starts";
  }
}

TEST(FpgaKernel, DeviceLayerHwEmuMatchesModelInWindows) {
  ft::HopRecorder rec(ft::fat_tree_4x3x2(), 1000);
  rec.run(ft::random_messages(rec.topology(), 5, 3'000, 10'000'000, 5'000, false));
  const auto links = ft::link_table(rec.topology());
  auto hw = fpga::open_sched_device("hwemu");
  auto model = fpga::open_sched_device("model");
  // Odd windows: link state must carry over between runs.
  EXPECT_EQ(fpga::schedule(*hw, links, rec.hops, 777), rec.expected);
  EXPECT_EQ(fpga::schedule(*model, links, rec.hops, 1'001), rec.expected);
  // A run that keeps the link state: the model's cycle count is the RTL's.
  EXPECT_EQ(fpga::schedule(*hw, {}, {}, 1), std::vector<hs::Completion>{});
  EXPECT_EQ(fpga::schedule(*model, {}, {}, 1), std::vector<hs::Completion>{});
  EXPECT_EQ(hw->last_run_cycles(), model->last_run_cycles());
  EXPECT_EQ(fpga::schedule(*hw, links, {}, 1), std::vector<hs::Completion>{});
  EXPECT_EQ(fpga::schedule(*model, links, {}, 1), std::vector<hs::Completion>{});
  EXPECT_EQ(hw->last_run_cycles(), model->last_run_cycles()) << "a link load alone";
  EXPECT_EQ(fpga::schedule(*hw, links, rec.hops, 777), rec.expected);
  EXPECT_EQ(fpga::schedule(*model, links, rec.hops, 777), rec.expected);
  EXPECT_EQ(hw->last_run_cycles(), model->last_run_cycles()) << "last window (no link load): same cycle count";
}
