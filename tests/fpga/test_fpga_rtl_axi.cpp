// sched_axi_rd and sched_axi_wr under Verilator against a clocked AXI4 slave with random stalls on
// every channel and random back-pressure on the stream side: every beat lands in order at its address,
// bursts are INCR of at most BURST_BEATS beats that never cross 4 KiB, and idle comes only at the end.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "Vsched_axi_rd.h"
#include "Vsched_axi_wr.h"
#include "hw/sched/include/fabemu_sched_map.h"
#include "verilated.h"

namespace hs = fabemu::hw::sched;

namespace {

constexpr uint64_t kBase = uint64_t{0x3} << 32;

// Beat i of the test pattern, word w.
uint32_t pattern(uint64_t i, int w) { return static_cast<uint32_t>(i * 0x9e37'79b9u + static_cast<uint64_t>(w) * 0x85eb'ca6bu); }

struct Burst {
  uint64_t addr;
  uint32_t beats;
};

void check_burst(uint64_t addr, uint32_t len, uint32_t size, uint32_t burst) {
  EXPECT_EQ(size, 5u);   // 32-byte beats
  EXPECT_EQ(burst, 1u);  // INCR
  EXPECT_LE(len + 1, hs::BURST_BEATS);
  EXPECT_EQ(addr / 4096, (addr + (uint64_t{len} + 1) * 32 - 1) / 4096) << "burst crosses a 4 KiB page";
}

}  // namespace

TEST(FpgaRtlAxi, ReaderStreamsEveryBeatInOrderUnderStalls) {
  VerilatedContext ctx;
  auto top = std::make_unique<Vsched_axi_rd>(&ctx, "rd");
  Vsched_axi_rd& t = *top;
  std::mt19937_64 rng(4);
  auto clock = [&] { t.clk = 0; t.eval(); t.clk = 1; t.eval(); };
  t.rst = 1;
  clock();
  clock();
  t.rst = 0;
  for (const uint32_t count : {1u, 16u, 17u, 0u, 15u, 1000u, 4097u}) {
    SCOPED_TRACE(count);
    const uint64_t start = kBase + 512 * (rng() % 64);
    std::deque<Burst> bursts;
    uint32_t beat = 0;
    uint64_t got = 0;
    uint64_t requested = 0;
    t.cmd_valid = 1;
    t.cmd_addr = start;
    t.cmd_count = count;
    clock();
    t.cmd_valid = 0;
    for (uint64_t cyc = 0; cyc < 20 * uint64_t{count} + 100 && !(got == count && t.idle); ++cyc) {
      t.m_axi_arready = rng() % 4 != 0;
      t.m_axi_rvalid = !bursts.empty() && rng() % 3 != 0;
      if (!bursts.empty()) {
        const uint64_t index = (bursts.front().addr - start) / 32 + beat;
        for (int w = 0; w < 8; ++w) t.m_axi_rdata[w] = pattern(index, w);
        t.m_axi_rlast = beat + 1 == bursts.front().beats;
      }
      t.m_ready = rng() % 5 != 0;
      t.clk = 0;
      t.eval();
      if (t.m_axi_arvalid && t.m_axi_arready) {
        check_burst(t.m_axi_araddr, t.m_axi_arlen, t.m_axi_arsize, t.m_axi_arburst);
        EXPECT_EQ(t.m_axi_araddr, start + requested * 32);
        requested += uint64_t{t.m_axi_arlen} + 1;
        bursts.push_back(Burst{t.m_axi_araddr, uint32_t{t.m_axi_arlen} + 1});
      }
      if (t.m_axi_rvalid && t.m_axi_rready) {
        EXPECT_TRUE(t.m_valid);
        for (int w = 0; w < 8; ++w) ASSERT_EQ(t.m_data[w], pattern(got, w)) << "beat " << got;
        ++got;
        if (++beat == bursts.front().beats) {
          bursts.pop_front();
          beat = 0;
        }
      }
      t.clk = 1;
      t.eval();
    }
    EXPECT_EQ(requested, count);
    EXPECT_EQ(got, count);
    EXPECT_TRUE(t.idle);
  }
  t.final();
}

TEST(FpgaRtlAxi, WriterLandsEveryBeatAtItsAddressUnderStalls) {
  VerilatedContext ctx;
  auto top = std::make_unique<Vsched_axi_wr>(&ctx, "wr");
  Vsched_axi_wr& t = *top;
  std::mt19937_64 rng(8);
  auto clock = [&] { t.clk = 0; t.eval(); t.clk = 1; t.eval(); };
  t.rst = 1;
  clock();
  clock();
  t.rst = 0;
  for (const uint32_t count : {1u, 16u, 17u, 0u, 31u, 1000u, 4097u}) {
    SCOPED_TRACE(count);
    const uint64_t start = kBase + 512 * (rng() % 64);
    std::vector<int64_t> written(count, -1);  // beat index stored at each slot
    std::deque<Burst> bursts;
    uint32_t beat = 0;
    uint32_t b_owed = 0;
    uint64_t sent = 0;
    uint64_t bursts_total = 0;
    t.cmd_valid = 1;
    t.cmd_addr = start;
    t.cmd_count = count;
    clock();
    t.cmd_valid = 0;
    EXPECT_EQ(static_cast<bool>(t.idle), count == 0);
    for (uint64_t cyc = 0; cyc < 20 * uint64_t{count} + 100 && !(sent == count && t.idle); ++cyc) {
      t.s_valid = sent < count && rng() % 4 != 0;
      for (int w = 0; w < 8; ++w) t.s_data[w] = pattern(sent, w);
      t.m_axi_awready = rng() % 3 != 0;
      t.m_axi_wready = !bursts.empty() && rng() % 4 != 0;
      t.m_axi_bvalid = b_owed != 0 && rng() % 2 != 0;
      t.m_axi_bresp = 0;
      t.clk = 0;
      t.eval();
      if (t.m_axi_bvalid && t.m_axi_bready) --b_owed;
      if (t.m_axi_wvalid && t.m_axi_wready) {
        EXPECT_TRUE(t.s_valid && t.s_ready);
        const uint64_t slot = (bursts.front().addr - start) / 32 + beat;
        ASSERT_LT(slot, count);
        EXPECT_EQ(t.m_axi_wstrb, 0xffff'ffffu);
        EXPECT_EQ(t.m_axi_wdata[0], pattern(sent, 0));
        written[slot] = static_cast<int64_t>(sent);
        ++sent;
        const bool last = ++beat == bursts.front().beats;
        EXPECT_EQ(static_cast<bool>(t.m_axi_wlast), last);
        if (last) {
          bursts.pop_front();
          beat = 0;
          ++b_owed;
        }
      } else {
        EXPECT_FALSE(t.s_valid && t.s_ready);
      }
      if (t.m_axi_awvalid && t.m_axi_awready) {
        check_burst(t.m_axi_awaddr, t.m_axi_awlen, t.m_axi_awsize, t.m_axi_awburst);
        bursts.push_back(Burst{t.m_axi_awaddr, uint32_t{t.m_axi_awlen} + 1});
        ++bursts_total;
      }
      // idle only once every burst is acknowledged
      if (t.idle) {
        EXPECT_TRUE(b_owed == 0 && sent == count);
      }
      t.clk = 1;
      t.eval();
    }
    EXPECT_EQ(sent, count);
    EXPECT_TRUE(t.idle);
    EXPECT_EQ(bursts_total, (count + hs::BURST_BEATS - 1) / hs::BURST_BEATS);
    for (uint32_t i = 0; i < count; ++i) EXPECT_EQ(written[i], int64_t{i});
  }
  t.final();
}
