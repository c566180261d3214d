#include "rtl_models/sched_hwemu.h"

#include <stdexcept>
#include <string>

#include "Vsched_kernel.h"
#include "hw/sched/include/fabemu_sched_map.h"
#include "verilated.h"

namespace fabemu::rtl {

namespace hs = hw::sched;

SchedHwEmu::SchedHwEmu(DeviceMemory& memory, HwEmuOptions options)
    : mem_(memory), opt_(options), ctx_(std::make_unique<VerilatedContext>()), rng_(options.seed) {
  top_ = std::make_unique<Vsched_kernel>(ctx_.get(), "sched_kernel");
  top_->ap_rst_n = 0;
  top_->ap_clk = 0;
  top_->eval();
  for (int i = 0; i < 4; ++i) tick();
  top_->ap_rst_n = 1;
  tick();
}

SchedHwEmu::~SchedHwEmu() {
  if (top_) top_->final();
}

bool SchedHwEmu::stall() {
  return opt_.stall_per_256 != 0 && (rng_() & 0xff) < opt_.stall_per_256;
}

void SchedHwEmu::tick() {
  Vsched_kernel& t = *top_;
  // Slave outputs for this cycle: functions of the slave's state and this cycle's stall draws only. A
  // VALID shown stays high until its handshake (AXI), so a stall only delays showing the next one.
  t.m00_axi_arready = !stall();
  const bool r_have = !rd_bursts_.empty() && rd_bursts_.front().ready_at <= cycles_;
  t.m00_axi_rvalid = r_have && (r_held_ || !stall());
  if (r_have) {
    const Burst& b = rd_bursts_.front();
    const uint8_t* src = mem_.at(b.addr + uint64_t{rd_beat_} * hs::RECORD_BYTES, hs::RECORD_BYTES);
    for (int w = 0; w < 8; ++w) {
      uint32_t v = 0;
      for (int k = 0; k < 4; ++k) v |= uint32_t{src[4 * w + k]} << (8 * k);
      t.m00_axi_rdata[w] = v;
    }
    t.m00_axi_rlast = rd_beat_ + 1 == b.beats;
  }
  t.m00_axi_rresp = r_beats_ == opt_.rresp_error_beat ? 2 : 0;  // SLVERR
  t.m01_axi_awready = !stall();
  // W is accepted only once its burst's address is known.
  t.m01_axi_wready = !wr_bursts_.empty() && !stall();
  t.m01_axi_bvalid = b_pending_ != 0 && (b_held_ || !stall());
  t.m01_axi_bresp = b_sent_ == opt_.bresp_error_burst ? 2 : 0;
  t.m00_axi_awready = 0;
  t.m00_axi_wready = 0;
  t.m00_axi_bvalid = 0;
  t.m01_axi_arready = 0;
  t.m01_axi_rvalid = 0;

  t.ap_clk = 0;
  t.eval();

  // Handshakes of this cycle, as the RTL sees them at the coming edge.
  if (t.m00_axi_arvalid && t.m00_axi_arready) {
    rd_bursts_.push_back(Burst{t.m00_axi_araddr, uint32_t{t.m00_axi_arlen} + 1, cycles_ + opt_.read_latency});
  }
  r_held_ = t.m00_axi_rvalid && !t.m00_axi_rready;
  b_held_ = t.m01_axi_bvalid && !t.m01_axi_bready;
  if (t.m00_axi_rvalid && t.m00_axi_rready) {
    ++r_beats_;
    if (++rd_beat_ == rd_bursts_.front().beats) {
      rd_bursts_.pop_front();
      rd_beat_ = 0;
    }
  }
  if (t.m01_axi_bvalid && t.m01_axi_bready) {
    --b_pending_;
    ++b_sent_;
  }
  if (t.m01_axi_wvalid && t.m01_axi_wready) {
    const Burst& b = wr_bursts_.front();
    uint8_t* dst = mem_.at(b.addr + uint64_t{wr_beat_} * hs::RECORD_BYTES, hs::RECORD_BYTES);
    for (int w = 0; w < 8; ++w) {
      for (int k = 0; k < 4; ++k) dst[4 * w + k] = static_cast<uint8_t>(t.m01_axi_wdata[w] >> (8 * k));
    }
    const bool last = ++wr_beat_ == b.beats;
    if (last != static_cast<bool>(t.m01_axi_wlast)) throw std::runtime_error("hw-emu: WLAST on the wrong beat");
    if (last) {
      wr_bursts_.pop_front();
      wr_beat_ = 0;
      ++b_pending_;
    }
  }
  if (t.m01_axi_awvalid && t.m01_axi_awready) wr_bursts_.push_back(Burst{t.m01_axi_awaddr, uint32_t{t.m01_axi_awlen} + 1});

  t.ap_clk = 1;
  t.eval();
  ++cycles_;
}

void SchedHwEmu::write_reg(uint32_t offset, uint32_t value) {
  Vsched_kernel& t = *top_;
  t.s_axi_control_awaddr = static_cast<uint16_t>(offset & 0xfff);
  t.s_axi_control_awvalid = 1;
  t.s_axi_control_wdata = value;
  t.s_axi_control_wstrb = 0xf;
  t.s_axi_control_wvalid = 1;
  t.s_axi_control_bready = 1;
  bool aw = false;
  bool w = false;
  bool b = false;
  for (int i = 0; i < 64 && !b; ++i) {
    t.ap_clk = 0;
    t.eval();
    const bool aw_now = t.s_axi_control_awvalid && t.s_axi_control_awready;
    const bool w_now = t.s_axi_control_wvalid && t.s_axi_control_wready;
    b = t.s_axi_control_bvalid;
    tick();
    aw = aw || aw_now;
    w = w || w_now;
    t.s_axi_control_awvalid = !aw;
    t.s_axi_control_wvalid = !w;
  }
  t.s_axi_control_awvalid = 0;
  t.s_axi_control_wvalid = 0;
  if (!b) throw std::runtime_error("hw-emu: AXI4-Lite write to 0x" + std::to_string(offset) + " got no response");
}

uint32_t SchedHwEmu::read_reg(uint32_t offset) {
  Vsched_kernel& t = *top_;
  t.s_axi_control_araddr = static_cast<uint16_t>(offset & 0xfff);
  t.s_axi_control_arvalid = 1;
  t.s_axi_control_rready = 1;
  for (int i = 0; i < 64; ++i) {
    t.ap_clk = 0;
    t.eval();
    const bool ar_now = t.s_axi_control_arvalid && t.s_axi_control_arready;
    const bool r_now = t.s_axi_control_rvalid;
    const uint32_t data = t.s_axi_control_rdata;
    tick();
    if (ar_now) t.s_axi_control_arvalid = 0;
    if (r_now) {
      t.s_axi_control_rready = 0;
      return data;
    }
  }
  throw std::runtime_error("hw-emu: AXI4-Lite read of 0x" + std::to_string(offset) + " got no response");
}

void SchedHwEmu::start() {
  run_begin_ = cycles_;
  write_reg(hs::REG_CTRL, 1u << hs::CTRL_AP_START);
}

void SchedHwEmu::wait_done() {
  const uint64_t begin = run_begin_;
  while (((read_reg(hs::REG_CTRL) >> hs::CTRL_AP_DONE) & 1) == 0) {
    // Poll every 64 cycles, as a host would not hammer the register file.
    for (int i = 0; i < 64; ++i) tick();
    if (cycles_ - begin > opt_.max_cycles_per_run) {
      throw std::runtime_error("hw-emu: the kernel did not finish within " + std::to_string(opt_.max_cycles_per_run) +
                               " cycles");
    }
  }
}

}  // namespace fabemu::rtl
