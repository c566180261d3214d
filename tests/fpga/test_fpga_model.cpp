// The C++ models against the software PacketFabric, no RTL: HopRecorder reproduces PacketFabric's
// deliveries exactly; the functional model, the cycle model of the hop core and the kernel model behind
// its register map give the contract's departure and arrival for every recorded packet-hop.
#include <gtest/gtest.h>

#include <random>

#include "rtl_models/sched_core_model.h"
#include "rtl_models/sched_kernel_model.h"
#include "tests/fpga/fpga_test_util.h"

namespace ft = fabemu::fpga_test;
namespace hs = fabemu::hw::sched;
using fabemu::rtl::SchedCoreModel;

namespace {

struct Case {
  const char* name;
  fabemu::emu::NetworkConfig (*config)();
  uint32_t mtu;
  std::size_t messages;
  uint64_t horizon_ps;
  bool incast;
};

const Case kCases[] = {
    {"ring8", ft::ring8, 1024, 4000, 20'000'000, false},
    {"switch16_incast", ft::switch16, 512, 3000, 5'000'000, true},
    {"ring4_fc4", ft::ring4_fc4, 4096, 3000, 50'000'000, false},
    {"fat_tree", ft::fat_tree_4x3x2, 1500, 4000, 10'000'000, false},
};

// Runs the hop stream through the cycle model with random valid/ready and returns its completions.
std::vector<hs::Completion> run_cycle_model(const std::vector<hs::LinkEntry>& links,
                                            const std::vector<hs::HopDesc>& hops, uint64_t seed, uint64_t* cycles) {
  SchedCoreModel m(8);
  for (uint32_t i = 0; i < links.size(); ++i) {
    fabemu::rtl::CoreInputs in;
    in.cfg_wr_en = true;
    in.cfg_wr_link = i;
    in.cfg = links[i];
    m.tick(in);
  }
  std::mt19937_64 rng(seed);
  std::vector<hs::Completion> out;
  std::size_t next = 0;
  uint64_t n = 0;
  while (out.size() < hops.size()) {
    fabemu::rtl::CoreInputs in;
    in.s_valid = next < hops.size() && (seed == 0 || rng() % 4 != 0);
    if (next < hops.size()) in.hop = hops[next];
    in.m_ready = seed == 0 || rng() % 3 != 0;
    const auto o = m.outputs();
    if (o.m_valid && in.m_ready) out.push_back(o.m);
    if (in.s_valid && o.s_ready) ++next;
    m.tick(in);
    ++n;
  }
  *cycles = n;
  return out;
}

}  // namespace

TEST(FpgaModel, ThreeWayAgreementWithPacketFabric) {
  std::size_t total_hops = 0;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto config = c.config();
    ft::HopRecorder rec(config, c.mtu);
    const auto msgs = ft::random_messages(rec.topology(), 7, c.messages, c.horizon_ps, 3 * c.mtu, c.incast);
    rec.run(msgs);
    // The recorder is PacketFabric, event for event.
    ASSERT_EQ(rec.deliveries, ft::packet_fabric_deliveries(config, c.mtu, msgs));

    const auto links = ft::link_table(rec.topology());
    EXPECT_EQ(fabemu::rtl::schedule_hops(links, rec.hops), rec.expected);
    uint64_t cycles = 0;
    EXPECT_EQ(run_cycle_model(links, rec.hops, 11, &cycles), rec.expected);
    // Deliveries from the completions alone are PacketFabric's.
    const auto from_kernel = ft::deliveries_from(rec.info, rec.expected);
    ASSERT_EQ(from_kernel.size(), rec.deliveries.size());
    for (const auto& [id, at] : rec.deliveries) EXPECT_EQ(from_kernel.at(id), at.ps()) << "message " << id;
    total_hops += rec.hops.size();
  }
  EXPECT_GT(total_hops, 30'000u);
}

TEST(FpgaModel, CycleModelSustainsOneHopPerClockOnOneLink) {
  // Every hop on link 3, back to back, arriving together: the worst hazard; N hops take N + latency.
  std::vector<hs::LinkEntry> links(8, hs::LinkEntry{(uint64_t{26} << 32) + 0x9999'9999, 1'000, 0});
  std::vector<hs::HopDesc> hops;
  for (uint64_t i = 0; i < 10'000; ++i) hops.push_back(hs::HopDesc{0, static_cast<uint32_t>(64 + i % 1400), 3, i});
  uint64_t cycles = 0;
  EXPECT_EQ(run_cycle_model(links, hops, 0, &cycles), fabemu::rtl::schedule_hops(links, hops));
  EXPECT_EQ(cycles, hops.size() + SchedCoreModel::kLatency);
}

TEST(FpgaModel, KernelModelRunsInWindowsAndKeepsLinkState) {
  fabemu::rtl::DeviceMemory mem;
  fabemu::rtl::SchedKernelModel k(mem);
  ft::HopRecorder rec(ft::ring8(), 1024);
  rec.run(ft::random_messages(rec.topology(), 3, 2000, 10'000'000, 5000, false));
  const auto links = ft::link_table(rec.topology());
  const std::size_t window = 1000;
  const uint64_t la = mem.allocate(links.size() * hs::RECORD_BYTES);
  const uint64_t da = mem.allocate(window * hs::RECORD_BYTES);
  const uint64_t ca = mem.allocate(window * hs::RECORD_BYTES);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const auto r = hs::encode(links[i]);
    mem.write(la + i * hs::RECORD_BYTES, r.data(), r.size());
  }
  std::vector<hs::Completion> got;
  for (std::size_t b = 0; b < rec.hops.size(); b += window) {
    const std::size_t n = std::min(window, rec.hops.size() - b);
    for (std::size_t i = 0; i < n; ++i) {
      const auto r = hs::encode(rec.hops[b + i]);
      mem.write(da + i * hs::RECORD_BYTES, r.data(), r.size());
    }
    k.write_reg(hs::REG_LINKS_ADDR_LO, static_cast<uint32_t>(la));
    k.write_reg(hs::REG_LINKS_ADDR_HI, static_cast<uint32_t>(la >> 32));
    k.write_reg(hs::REG_DESC_ADDR_LO, static_cast<uint32_t>(da));
    k.write_reg(hs::REG_DESC_ADDR_HI, static_cast<uint32_t>(da >> 32));
    k.write_reg(hs::REG_CMPL_ADDR_LO, static_cast<uint32_t>(ca));
    k.write_reg(hs::REG_CMPL_ADDR_HI, static_cast<uint32_t>(ca >> 32));
    k.write_reg(hs::REG_NUM_LINKS, b == 0 ? static_cast<uint32_t>(links.size()) : 0);
    k.write_reg(hs::REG_NUM_DESC, static_cast<uint32_t>(n));
    k.write_reg(hs::REG_CTRL, 1);
    ASSERT_TRUE((k.read_reg(hs::REG_CTRL) >> hs::CTRL_AP_DONE) & 1);
    for (std::size_t i = 0; i < n; ++i) {
      hs::Record r;
      mem.read(ca + i * hs::RECORD_BYTES, r.data(), r.size());
      got.push_back(hs::decode_completion(r));
    }
  }
  EXPECT_EQ(got, rec.expected);
  EXPECT_EQ(k.read_reg(hs::REG_LINK_CAP), 1u << fabemu::rtl::kLinkAddrW);
  EXPECT_EQ(k.read_reg(hs::REG_VERSION), hs::MAP_VERSION);
}
