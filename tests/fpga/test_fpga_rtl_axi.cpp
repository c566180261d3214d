// sched_axi_rd, sched_axi_wr and sched_skid under Verilator against a clocked AXI4 slave with random
// stalls on every channel, read latencies above one cycle, error responses, and random back-pressure on
// the stream side: every beat lands in order at its address, bursts are INCR of at most BURST_BEATS
// beats that never cross 4 KiB, idle comes only at the end, RRESP/BRESP errors pulse resp_err, and no
// ready depends combinationally on the other side.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "Vsched_axi_rd.h"
#include "Vsched_axi_wr.h"
#include "Vsched_skid.h"
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

// The reader against a slave that serves each burst after a random read latency of 1 to 12 cycles
// (several bursts in flight), holds RVALID until RREADY (AXI), stalls R at random, and answers SLVERR
// on one beat; the stream side is back-pressured at random. rready is a register: changing m_ready
// within a cycle never changes it.
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
  uint64_t cyc = 0;
  uint64_t max_latency_seen = 0;
  for (const uint32_t count : {1u, 16u, 17u, 0u, 15u, 1000u, 4097u}) {
    SCOPED_TRACE(count);
    const uint64_t start = kBase + 512 * (rng() % 64);
    const uint64_t error_beat = count / 2;  // answered SLVERR
    std::deque<Burst> bursts;
    std::deque<uint64_t> ready_at;  // cycle each burst's data may start
    uint32_t beat = 0;
    uint64_t r_got = 0;      // beats taken on R
    uint64_t got = 0;        // beats delivered on the stream
    uint64_t requested = 0;
    uint64_t errors = 0;
    bool err_due = false;    // resp_err must pulse in the next cycle
    bool r_held = false;
    t.cmd_valid = 1;
    t.cmd_addr = start;
    t.cmd_count = count;
    clock();
    ++cyc;
    t.cmd_valid = 0;
    for (uint64_t n = 0; n < 40 * uint64_t{count} + 100 && !(got == count && t.idle); ++n, ++cyc) {
      const bool have = !bursts.empty() && ready_at.front() <= cyc;
      t.m_axi_arready = rng() % 4 != 0;
      t.m_axi_rvalid = have && (r_held || rng() % 3 != 0);
      if (have) {
        const uint64_t index = (bursts.front().addr - start) / 32 + beat;
        for (int w = 0; w < 8; ++w) t.m_axi_rdata[w] = pattern(index, w);
        t.m_axi_rlast = beat + 1 == bursts.front().beats;
        t.m_axi_rresp = index == error_beat ? 2 : 0;
      }
      t.m_ready = 0;
      t.clk = 0;
      t.eval();
      const bool rready_if_stalled = t.m_axi_rready;
      t.m_ready = rng() % 5 != 0;
      t.eval();
      EXPECT_EQ(static_cast<bool>(t.m_axi_rready), rready_if_stalled) << "rready depends on m_ready";
      EXPECT_EQ(static_cast<bool>(t.resp_err), err_due);
      errors += t.resp_err;
      if (t.m_axi_arvalid && t.m_axi_arready) {
        check_burst(t.m_axi_araddr, t.m_axi_arlen, t.m_axi_arsize, t.m_axi_arburst);
        EXPECT_EQ(t.m_axi_araddr, start + requested * 32);
        requested += uint64_t{t.m_axi_arlen} + 1;
        bursts.push_back(Burst{t.m_axi_araddr, uint32_t{t.m_axi_arlen} + 1});
        const uint64_t latency = 1 + rng() % 12;
        max_latency_seen = std::max(max_latency_seen, latency);
        ready_at.push_back(std::max(cyc + latency, ready_at.empty() ? 0 : ready_at.back()));
      }
      r_held = t.m_axi_rvalid && !t.m_axi_rready;
      err_due = t.m_axi_rvalid && t.m_axi_rready && t.m_axi_rresp != 0;
      if (t.m_axi_rvalid && t.m_axi_rready) {
        ++r_got;
        if (++beat == bursts.front().beats) {
          bursts.pop_front();
          ready_at.pop_front();
          beat = 0;
        }
      }
      if (t.m_valid && t.m_ready) {
        for (int w = 0; w < 8; ++w) ASSERT_EQ(t.m_data[w], pattern(got, w)) << "beat " << got;
        ++got;
      }
      EXPECT_LE(got, r_got);
      t.clk = 1;
      t.eval();
    }
    EXPECT_EQ(requested, count);
    EXPECT_EQ(got, count);
    EXPECT_TRUE(t.idle);
    EXPECT_EQ(errors + (err_due ? 1 : 0), count == 0 ? 0u : 1u) << "one SLVERR beat, one resp_err pulse";
    t.m_ready = 0;
    clock();  // let a last resp_err pulse pass
    ++cyc;
  }
  EXPECT_GT(max_latency_seen, 1u);
  t.final();
}

// The writer against a slave that accepts W only for a known burst, stalls AW/W/B at random, holds
// BVALID until BREADY and answers SLVERR on one burst; the stream side is offered at random. s_ready is
// a register: changing wready within a cycle never changes it.
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
    const uint64_t error_burst = count / 40;  // answered SLVERR
    std::vector<int64_t> written(count, -1);  // beat index stored at each slot
    std::deque<Burst> bursts;
    uint32_t beat = 0;
    uint32_t b_owed = 0;
    uint64_t b_sent = 0;
    uint64_t sent = 0;       // beats taken from the stream
    uint64_t landed = 0;     // beats written on W
    uint64_t bursts_total = 0;
    uint64_t errors = 0;
    bool err_due = false;
    bool b_held = false;
    t.cmd_valid = 1;
    t.cmd_addr = start;
    t.cmd_count = count;
    clock();
    t.cmd_valid = 0;
    EXPECT_EQ(static_cast<bool>(t.idle), count == 0);
    for (uint64_t cyc = 0; cyc < 20 * uint64_t{count} + 100 && !(landed == count && t.idle); ++cyc) {
      t.s_valid = sent < count && rng() % 4 != 0;
      for (int w = 0; w < 8; ++w) t.s_data[w] = pattern(sent, w);
      t.m_axi_awready = rng() % 3 != 0;
      t.m_axi_bvalid = b_owed != 0 && (b_held || rng() % 2 != 0);
      t.m_axi_bresp = b_sent == error_burst ? 2 : 0;
      t.m_axi_wready = 0;
      t.clk = 0;
      t.eval();
      const bool s_ready_if_stalled = t.s_ready;
      t.m_axi_wready = !bursts.empty() && rng() % 4 != 0;
      t.eval();
      EXPECT_EQ(static_cast<bool>(t.s_ready), s_ready_if_stalled) << "s_ready depends on wready";
      EXPECT_EQ(static_cast<bool>(t.resp_err), err_due);
      errors += t.resp_err;
      b_held = t.m_axi_bvalid && !t.m_axi_bready;
      err_due = t.m_axi_bvalid && t.m_axi_bready && t.m_axi_bresp != 0;
      if (t.m_axi_bvalid && t.m_axi_bready) {
        --b_owed;
        ++b_sent;
      }
      if (t.s_valid && t.s_ready) ++sent;
      if (t.m_axi_wvalid && t.m_axi_wready) {
        const uint64_t slot = (bursts.front().addr - start) / 32 + beat;
        ASSERT_LT(slot, count);
        EXPECT_EQ(t.m_axi_wstrb, 0xffff'ffffu);
        EXPECT_EQ(t.m_axi_wdata[0], pattern(landed, 0));
        EXPECT_EQ(t.m_axi_wdata[7], pattern(landed, 7));
        written[slot] = static_cast<int64_t>(landed);
        ++landed;
        const bool last = ++beat == bursts.front().beats;
        EXPECT_EQ(static_cast<bool>(t.m_axi_wlast), last);
        if (last) {
          bursts.pop_front();
          beat = 0;
          ++b_owed;
        }
      }
      EXPECT_LE(landed, sent);
      if (t.m_axi_awvalid && t.m_axi_awready) {
        check_burst(t.m_axi_awaddr, t.m_axi_awlen, t.m_axi_awsize, t.m_axi_awburst);
        bursts.push_back(Burst{t.m_axi_awaddr, uint32_t{t.m_axi_awlen} + 1});
        ++bursts_total;
      }
      // idle only once every burst is acknowledged
      if (t.idle) {
        EXPECT_TRUE(b_owed == 0 && landed == count);
      }
      t.clk = 1;
      t.eval();
    }
    EXPECT_EQ(sent, count);
    EXPECT_EQ(landed, count);
    EXPECT_TRUE(t.idle);
    EXPECT_EQ(bursts_total, (count + hs::BURST_BEATS - 1) / hs::BURST_BEATS);
    for (uint32_t i = 0; i < count; ++i) EXPECT_EQ(written[i], int64_t{i});
    EXPECT_EQ(errors + (err_due ? 1 : 0), count == 0 ? 0u : 1u) << "one SLVERR response, one resp_err pulse";
    t.m_axi_bvalid = 0;
    clock();  // let a last resp_err pulse pass
  }
  t.final();
}

// The skid buffer alone: under random valid and ready every word passes once, in order; s_ready and
// m_valid never depend on the same cycle's inputs; with ready always high it passes one word per clock.
TEST(FpgaRtlAxi, SkidBufferPassesEveryWordInOrder) {
  VerilatedContext ctx;
  auto top = std::make_unique<Vsched_skid>(&ctx, "skid");
  Vsched_skid& t = *top;
  std::mt19937_64 rng(12);
  auto clock = [&] { t.clk = 0; t.eval(); t.clk = 1; t.eval(); };
  t.rst = 1;
  clock();
  t.rst = 0;
  for (const unsigned pct : {100u, 70u, 30u}) {
    SCOPED_TRACE(pct);
    uint64_t in = 0;
    uint64_t out = 0;
    uint64_t cycles = 0;
    const uint64_t n = 20'000;
    while (out < n && cycles < 100 * n) {
      t.s_valid = 0;
      t.m_ready = 0;
      t.s_data = 0;
      t.clk = 0;
      t.eval();
      const bool s_ready = t.s_ready;
      const bool m_valid = t.m_valid;
      EXPECT_EQ(static_cast<bool>(t.busy), in != out) << "busy: a word accepted and not yet delivered";
      t.s_valid = in < n && rng() % 100 < pct;
      t.s_data = in * 0x9e37'79b9'7f4a'7c15u;
      t.m_ready = rng() % 100 < pct;
      t.eval();
      EXPECT_EQ(static_cast<bool>(t.s_ready), s_ready);
      EXPECT_EQ(static_cast<bool>(t.m_valid), m_valid);
      if (t.s_valid && t.s_ready) ++in;
      if (t.m_valid && t.m_ready) {
        ASSERT_EQ(t.m_data, out * 0x9e37'79b9'7f4a'7c15u) << "word " << out;
        ++out;
      }
      t.clk = 1;
      t.eval();
      ++cycles;
    }
    EXPECT_EQ(out, n);
    if (pct == 100) {
      EXPECT_EQ(cycles, n + 1) << "one word per clock, one cycle of latency";
    }
  }
  t.final();
}
