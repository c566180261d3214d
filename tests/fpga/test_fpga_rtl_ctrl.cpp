// sched_axil_ctrl under Verilator with a randomized AXI4-Lite master (address and data presented in
// either order with random delays, random bready/rready): every argument register reads back, byte
// strobes apply, ap_start is held until ap_ready, ap_done is sticky until REG_CTRL is read, and the
// interrupt follows GIE/IER/ISR (Verilator renames the port, a C++ keyword-like name, to __SYM__interrupt).
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "Vsched_axil_ctrl.h"
#include "hw/sched/include/fabemu_sched_map.h"
#include "verilated.h"

namespace hs = fabemu::hw::sched;

namespace {

class CtrlBench {
 public:
  CtrlBench() : top_(std::make_unique<Vsched_axil_ctrl>(&ctx_, "ctrl")), rng_(3) {
    top_->rst = 1;
    clock();
    clock();
    top_->rst = 0;
    top_->ap_idle = 1;
  }
  ~CtrlBench() { top_->final(); }

  void clock() {
    top_->clk = 0;
    top_->eval();
    top_->clk = 1;
    top_->eval();
  }

  void write(uint32_t addr, uint32_t data, uint8_t strb = 0xf) {
    Vsched_axil_ctrl& t = *top_;
    // AW and W each start after a random delay of 0..3 cycles.
    int aw_wait = static_cast<int>(rng_() % 4);
    int w_wait = static_cast<int>(rng_() % 4);
    bool aw_done = false;
    bool w_done = false;
    for (int i = 0; i < 100; ++i) {
      t.s_axi_awvalid = !aw_done && aw_wait <= 0;
      t.s_axi_awaddr = static_cast<uint16_t>(addr);
      t.s_axi_wvalid = !w_done && w_wait <= 0;
      t.s_axi_wdata = data;
      t.s_axi_wstrb = strb;
      t.s_axi_bready = rng_() % 2;
      t.clk = 0;
      t.eval();
      const bool aw_hs = t.s_axi_awvalid && t.s_axi_awready;
      const bool w_hs = t.s_axi_wvalid && t.s_axi_wready;
      const bool b_hs = t.s_axi_bvalid && t.s_axi_bready;
      clock();
      aw_done = aw_done || aw_hs;
      w_done = w_done || w_hs;
      --aw_wait;
      --w_wait;
      if (b_hs) {
        EXPECT_TRUE(aw_done && w_done);
        t.s_axi_awvalid = 0;
        t.s_axi_wvalid = 0;
        return;
      }
    }
    ADD_FAILURE() << "no write response";
  }

  uint32_t read(uint32_t addr) {
    Vsched_axil_ctrl& t = *top_;
    bool ar_done = false;
    for (int i = 0; i < 100; ++i) {
      t.s_axi_arvalid = !ar_done;
      t.s_axi_araddr = static_cast<uint16_t>(addr);
      t.s_axi_rready = rng_() % 2;
      t.clk = 0;
      t.eval();
      const bool ar_hs = t.s_axi_arvalid && t.s_axi_arready;
      const bool r_hs = t.s_axi_rvalid && t.s_axi_rready;
      const uint32_t data = t.s_axi_rdata;
      clock();
      ar_done = ar_done || ar_hs;
      if (r_hs) {
        t.s_axi_arvalid = 0;
        return data;
      }
    }
    ADD_FAILURE() << "no read response";
    return 0;
  }

  Vsched_axil_ctrl& top() { return *top_; }

 private:
  VerilatedContext ctx_;
  std::unique_ptr<Vsched_axil_ctrl> top_;
  std::mt19937_64 rng_;
};

}  // namespace

TEST(FpgaRtlCtrl, ArgumentRegistersAndStrobes) {
  CtrlBench b;
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    const uint64_t links = rng(), desc = rng(), cmpl = rng();
    const auto nl = static_cast<uint32_t>(rng()), nd = static_cast<uint32_t>(rng());
    b.write(hs::REG_LINKS_ADDR_LO, static_cast<uint32_t>(links));
    b.write(hs::REG_LINKS_ADDR_HI, static_cast<uint32_t>(links >> 32));
    b.write(hs::REG_DESC_ADDR_LO, static_cast<uint32_t>(desc));
    b.write(hs::REG_DESC_ADDR_HI, static_cast<uint32_t>(desc >> 32));
    b.write(hs::REG_CMPL_ADDR_LO, static_cast<uint32_t>(cmpl));
    b.write(hs::REG_CMPL_ADDR_HI, static_cast<uint32_t>(cmpl >> 32));
    b.write(hs::REG_NUM_LINKS, nl);
    b.write(hs::REG_NUM_DESC, nd);
    EXPECT_EQ(b.top().links_addr, links);
    EXPECT_EQ(b.top().desc_addr, desc);
    EXPECT_EQ(b.top().cmpl_addr, cmpl);
    EXPECT_EQ(b.read(hs::REG_LINKS_ADDR_HI), static_cast<uint32_t>(links >> 32));
    EXPECT_EQ(b.read(hs::REG_DESC_ADDR_LO), static_cast<uint32_t>(desc));
    EXPECT_EQ(b.read(hs::REG_CMPL_ADDR_HI), static_cast<uint32_t>(cmpl >> 32));
    EXPECT_EQ(b.read(hs::REG_NUM_LINKS), nl);
    EXPECT_EQ(b.read(hs::REG_NUM_DESC), nd);
  }
  b.write(hs::REG_NUM_DESC, 0x1122'3344);
  b.write(hs::REG_NUM_DESC, 0xaabb'ccdd, 0b0101);  // bytes 0 and 2 only
  EXPECT_EQ(b.read(hs::REG_NUM_DESC), 0x11bb'33ddu);
  b.top().cycles = 0x0123'4567'89ab'cdefull;
  EXPECT_EQ(b.read(hs::REG_CYCLES_LO), 0x89ab'cdefu);
  EXPECT_EQ(b.read(hs::REG_CYCLES_HI), 0x0123'4567u);
  EXPECT_EQ(b.read(hs::REG_LINK_CAP), 256u);
  EXPECT_EQ(b.read(hs::REG_VERSION), hs::MAP_VERSION);
  EXPECT_EQ(b.read(hs::REG_STATUS), 0u);
  b.top().status = 1u << hs::STATUS_WR_ERR;
  EXPECT_EQ(b.read(hs::REG_STATUS), 1u << hs::STATUS_WR_ERR);
  b.write(hs::REG_STATUS, 0);  // read-only
  EXPECT_EQ(b.read(hs::REG_STATUS), 1u << hs::STATUS_WR_ERR);
  EXPECT_EQ(b.read(0x800), 0u);  // unmapped
}

TEST(FpgaRtlCtrl, ApCtrlHsHandshakeAndInterrupt) {
  CtrlBench b;
  Vsched_axil_ctrl& t = b.top();
  EXPECT_EQ(b.read(hs::REG_CTRL), 1u << hs::CTRL_AP_IDLE);
  b.write(hs::REG_GIE, 1);
  b.write(hs::REG_IER, 1);
  b.write(hs::REG_CTRL, 1u << hs::CTRL_AP_START);
  EXPECT_TRUE(t.ap_start);
  t.ap_idle = 0;
  for (int i = 0; i < 5; ++i) b.clock();
  EXPECT_TRUE(t.ap_start) << "held until ap_ready";
  EXPECT_EQ(b.read(hs::REG_CTRL), 1u << hs::CTRL_AP_START);
  // The kernel finishes: one-cycle ap_done + ap_ready pulse.
  t.ap_done = 1;
  t.ap_ready = 1;
  b.clock();
  t.ap_done = 0;
  t.ap_ready = 0;
  t.ap_idle = 1;
  b.clock();
  EXPECT_FALSE(t.ap_start);
  EXPECT_TRUE(t.__SYM__interrupt);
  const uint32_t done = (1u << hs::CTRL_AP_DONE) | (1u << hs::CTRL_AP_IDLE) | (1u << hs::CTRL_AP_READY);
  EXPECT_EQ(b.read(hs::REG_CTRL), done);
  EXPECT_EQ(b.read(hs::REG_CTRL), 1u << hs::CTRL_AP_IDLE) << "ap_done and ap_ready clear on read";
  EXPECT_EQ(b.read(hs::REG_ISR), 1u);
  b.write(hs::REG_ISR, 1);  // toggle: clear
  EXPECT_EQ(b.read(hs::REG_ISR), 0u);
  EXPECT_FALSE(t.__SYM__interrupt);
}
