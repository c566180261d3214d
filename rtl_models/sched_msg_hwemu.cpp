#include "rtl_models/sched_msg_hwemu.h"

#include <string>

#include "Vsched_msg_tx.h"
#include "rtl_models/msg_card_bench_impl.h"
#include "rtl_models/msg_sched_model.h"
#include "verilated.h"

namespace fabemu::rtl {

template class MsgCardBench<SchedMsgHwEmu, Vsched_msg_tx>;

SchedMsgHwEmu::SchedMsgHwEmu(std::span<const hw::sched::LinkEntry> links, uint32_t mtu, MsgHwEmuOptions options)
    : MsgCardBench("sched_msg hw-emu", links.size(),
                   options.pool_slots == 0 || options.pool_slots > (1u << kPktAw) ? 1u << kPktAw : options.pool_slots),
      ctx_(std::make_unique<VerilatedContext>()),
      opt_(options),
      rng_(options.seed) {
  check_msg_card(links, mtu);
  top_ = std::make_unique<Vsched_msg_tx>(ctx_.get(), "sched_msg_tx");
  Vsched_msg_tx& t = *top_;
  t.cfg_mtu = mtu;
  t.cfg_pool_slots = static_cast<uint16_t>(pool_slots());
  t.rst = 1;
  t.clk = 0;
  t.eval();
  for (int i = 0; i < 4; ++i) tick();
  t.rst = 0;
  load_links(links);
  tick();
}

SchedMsgHwEmu::~SchedMsgHwEmu() {
  if (top_) top_->final();
}

bool SchedMsgHwEmu::stall(uint32_t per_256) { return per_256 != 0 && (rng_() & 0xff) < per_256; }

void SchedMsgHwEmu::tick() {
  Vsched_msg_tx& t = *top_;
  const bool show_rt = !stall(opt_.in_stall_per_256);
  drive(show_rt, !stall(opt_.in_stall_per_256));
  t.r_ready = !stall(opt_.out_stall_per_256);
  t.o_ready = !stall(opt_.out_stall_per_256);
  t.clk = 0;
  t.eval();
  if (!t.idle) ++busy_cycles_;
  observe();
  if (t.o_valid && t.o_ready) {
    deps_.push_back(PacketDeparture{t.o_time, t.o_id, t.o_src, t.o_dst, t.o_seq, t.o_count, t.o_bytes, t.o_msg_len,
                                    t.o_offset});
  }
  t.clk = 1;
  t.eval();
  ++cycles_;
}

bool SchedMsgHwEmu::settled() const { return top_->dep_idle && !top_->o_valid; }

void SchedMsgHwEmu::advance(uint64_t w) {
  if (set_watermark(w)) sync();
}

std::size_t SchedMsgHwEmu::take_departures(std::vector<PacketDeparture>& out) {
  sync();
  const std::size_t n = deps_.size();
  out.insert(out.end(), deps_.begin(), deps_.end());
  deps_.clear();
  return n;
}

uint64_t SchedMsgHwEmu::runs() {
  sync();
  return top_->n_runs;
}

uint64_t SchedMsgHwEmu::scan_cycles() const { return top_->n_scan; }

bool SchedMsgHwEmu::pool_error() const { return top_->err_pool != 0; }

}  // namespace fabemu::rtl
