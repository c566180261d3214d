// sched_hop_core under Verilator: cycle for cycle the same outputs as SchedCoreModel under random
// valid/ready back-pressure, the contract's times for every hop, and one hop per clock under the worst
// contention (every hop on one link).
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "Vsched_hop_core.h"
#include "rtl_models/sched_core_model.h"
#include "tests/fpga/fpga_test_util.h"
#include "verilated.h"

namespace ft = fabemu::fpga_test;
namespace hs = fabemu::hw::sched;
using fabemu::rtl::CoreInputs;
using fabemu::rtl::SchedCoreModel;

namespace {

class CoreBench {
 public:
  CoreBench() : top_(std::make_unique<Vsched_hop_core>(&ctx_, "core")), model_(8) {
    top_->rst = 1;
    for (int i = 0; i < 3; ++i) clock();
    top_->rst = 0;
    model_.reset();
  }
  ~CoreBench() { top_->final(); }

  void load(const std::vector<hs::LinkEntry>& links) {
    for (uint32_t i = 0; i < links.size(); ++i) {
      CoreInputs in;
      in.cfg_wr_en = true;
      in.cfg_wr_link = i;
      in.cfg = links[i];
      step(in);
    }
  }

  // Streams `hops` with valid high with probability valid_pct/100 and ready with ready_pct/100.
  // Returns the completions; *cycles = cycles from the first offered hop to the last completion.
  std::vector<hs::Completion> stream(const std::vector<hs::HopDesc>& hops, unsigned valid_pct, unsigned ready_pct,
                                     uint64_t seed, uint64_t* cycles) {
    std::mt19937_64 rng(seed);
    std::vector<hs::Completion> out;
    std::size_t next = 0;
    uint64_t n = 0;
    while (out.size() < hops.size()) {
      CoreInputs in;
      in.s_valid = next < hops.size() && rng() % 100 < valid_pct;
      if (next < hops.size()) in.hop = hops[next];
      in.m_ready = rng() % 100 < ready_pct;
      const auto o = step(in);
      if (o.m_valid && in.m_ready) out.push_back(o.m);
      if (in.s_valid && o.s_ready) ++next;
      ++n;
      if (n > 100 * hops.size() + 1000) {
        ADD_FAILURE() << "the core stopped making progress";
        break;
      }
    }
    *cycles = n;
    return out;
  }

 private:
  // One cycle: drive the inputs, compare RTL and model outputs, clock both.
  fabemu::rtl::CoreOutputs step(const CoreInputs& in) {
    Vsched_hop_core& t = *top_;
    t.cfg_wr_en = in.cfg_wr_en;
    t.cfg_wr_link = static_cast<uint8_t>(in.cfg_wr_link);
    t.cfg_wr_rate = in.cfg.rate_q32;
    t.cfg_wr_latency = in.cfg.latency_ps;
    t.cfg_wr_free = in.cfg.free_ps;
    t.s_valid = in.s_valid;
    t.s_time = in.hop.time_ps;
    t.s_bytes = in.hop.bytes;
    t.s_link = static_cast<uint8_t>(in.hop.link);
    t.s_tag = in.hop.tag;
    t.m_ready = in.m_ready;
    t.clk = 0;
    t.eval();
    const auto m = model_.outputs();
    fabemu::rtl::CoreOutputs r;
    r.s_ready = t.s_ready;
    r.m_valid = t.m_valid;
    r.m = hs::Completion{t.m_depart, t.m_arrive, t.m_tag, t.m_link, t.m_bytes};
    r.busy = t.busy;
    EXPECT_EQ(r.s_ready, m.s_ready);
    EXPECT_EQ(r.m_valid, m.m_valid);
    EXPECT_EQ(r.busy, m.busy);
    if (r.m_valid) {
      EXPECT_EQ(r.m, m.m);
    }
    model_.tick(in);
    clock();
    return r;
  }

  void clock() {
    top_->clk = 0;
    top_->eval();
    top_->clk = 1;
    top_->eval();
  }

  VerilatedContext ctx_;
  std::unique_ptr<Vsched_hop_core> top_;
  SchedCoreModel model_;
};

}  // namespace

TEST(FpgaRtlCore, RandomBackPressureMatchesCycleModelAndContract) {
  const auto config = ft::switch16();
  ft::HopRecorder rec(config, 256);
  rec.run(ft::random_messages(rec.topology(), 21, 12'000, 4'000'000, 2000, true));
  const auto links = ft::link_table(rec.topology());
  CoreBench bench;
  bench.load(links);
  uint64_t cycles = 0;
  const auto got = bench.stream(rec.hops, 70, 60, 5, &cycles);
  EXPECT_EQ(got, rec.expected);
  EXPECT_GT(rec.hops.size(), 50'000u);
}

TEST(FpgaRtlCore, ArbitraryOrderAndFewLinks) {
  // Hops in no time order over 3 links of odd rates: the core applies the contract in input order.
  std::vector<hs::LinkEntry> links = {{0x1'2345'6789, 7, 0}, {0x1a'0000'0001, 0, 0}, {0xffff'ffff, 999, 5}};
  std::mt19937_64 rng(9);
  std::vector<hs::HopDesc> hops;
  for (uint64_t i = 0; i < 60'000; ++i) {
    hops.push_back(hs::HopDesc{rng() % 1'000'000, static_cast<uint32_t>(rng() % 9000), static_cast<uint32_t>(rng() % 3), i});
  }
  CoreBench bench;
  bench.load(links);
  uint64_t cycles = 0;
  EXPECT_EQ(bench.stream(hops, 90, 80, 17, &cycles), fabemu::rtl::schedule_hops(links, hops));
}

TEST(FpgaRtlCore, OneHopPerClockUnderContention) {
  // Every hop on link 5, all arriving at 0: each departs when the previous frees the link, the hazard
  // on every cycle. N hops with valid and ready always high: exactly N + 10 cycles (kLatency).
  std::vector<hs::LinkEntry> links(8, hs::LinkEntry{(uint64_t{26} << 32) + 0xaaaa'aaab, 1'000, 0});
  std::vector<hs::HopDesc> hops;
  for (uint64_t i = 0; i < 100'000; ++i) hops.push_back(hs::HopDesc{0, static_cast<uint32_t>(64 + i % 1437), 5, i});
  CoreBench bench;
  bench.load(links);
  uint64_t cycles = 0;
  EXPECT_EQ(bench.stream(hops, 100, 100, 1, &cycles), fabemu::rtl::schedule_hops(links, hops));
  EXPECT_EQ(cycles, hops.size() + SchedCoreModel::kLatency);
  // Alternating between two links hits the forwarding path and the RAM path on alternate cycles.
  for (auto& h : hops) h.link = static_cast<uint32_t>(h.tag % 2);
  CoreBench bench2;
  bench2.load(links);
  EXPECT_EQ(bench2.stream(hops, 100, 100, 1, &cycles), fabemu::rtl::schedule_hops(links, hops));
  EXPECT_EQ(cycles, hops.size() + SchedCoreModel::kLatency);
}

TEST(FpgaRtlCore, TimesPast2To32Picoseconds) {
  // Every 64-bit path above bit 31: arrival times and initial link_free past 2^32 ps (and past 2^48),
  // products bytes * rate past 2^32 (and past 2^64), sums that carry
  // across bit 32, under random back-pressure and on few links (so the forwarding is exercised).
  std::vector<hs::LinkEntry> links = {{uint64_t{1} << 40, uint64_t{3} << 32, (uint64_t{1} << 32) + 17},
                                      {(uint64_t{1} << 40) - 1, 0xffff'ffff, uint64_t{1} << 48},
                                      {(uint64_t{77} << 32) + 0x8000'0001, 12, 0xffff'fff0},
                                      {uint64_t{1} << 32, 0, 0}};
  std::mt19937_64 rng(33);
  std::vector<hs::HopDesc> hops;
  for (uint64_t i = 0; i < 40'000; ++i) {
    const uint64_t t = (uint64_t{1} << 32) + rng() % (uint64_t{1} << 44);
    hops.push_back(hs::HopDesc{t, static_cast<uint32_t>(rng() % 2 == 0 ? rng() % 9000 : rng()),
                               static_cast<uint32_t>(rng() % links.size()), i});
  }
  const auto want = fabemu::rtl::schedule_hops(links, hops);
  bool product_past_2_32 = false;
  bool free_past_2_48 = false;
  for (std::size_t i = 0; i < hops.size(); ++i) {
    product_past_2_32 = product_past_2_32 || fabemu::rtl::ser_ps(hops[i].bytes, links[hops[i].link].rate_q32) > 1;
    free_past_2_48 = free_past_2_48 || want[i].depart_ps > (uint64_t{1} << 48);
  }
  ASSERT_TRUE(product_past_2_32);
  ASSERT_TRUE(free_past_2_48);
  CoreBench bench;
  bench.load(links);
  uint64_t cycles = 0;
  EXPECT_EQ(bench.stream(hops, 85, 55, 3, &cycles), want);
  CoreBench bench2;
  bench2.load(links);
  EXPECT_EQ(bench2.stream(hops, 100, 100, 4, &cycles), want);
  EXPECT_EQ(cycles, hops.size() + SchedCoreModel::kLatency);
}
