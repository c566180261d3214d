#include "rtl_models/sched_hil_hwemu.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "Vsched_hil.h"
#include "Vsched_rx.h"
#include "emulator/histogram.h"
#include "rtl_models/msg_card_bench_impl.h"
#include "rtl_models/msg_sched_model.h"
#include "verilated.h"

namespace fabemu::rtl {

namespace dp = host::dpdk;

template class MsgCardBench<SchedHilHwEmu, Vsched_hil>;

namespace {
constexpr uint16_t kPort = 47000;  // host/wire's default base port (hil_frame_spec)
constexpr uint32_t kSpaceFlow = 0, kSpaceHist = 1, kSpaceGlobal = 2;
constexpr uint32_t kMaxFlows = 1024;               // sched_rx's FLOW_AW = 10
constexpr uint64_t kStuckCycles = 50'000'000;      // drain(): no frame for this long is a hang
}  // namespace

SchedHilHwEmu::SchedHilHwEmu(std::span<const hw::sched::LinkEntry> links, uint32_t mtu, const HilOptions& options)
    : MsgCardBench("sched_hil hw-emu", links.size(), 1u << kPktAw),
      ctx_(std::make_unique<VerilatedContext>()),
      opt_(options),
      k_(hil_cycles_per_ps_q48(options.dilation_q16)),
      mtu_(mtu),
      dev_(options.device, options.device_beats) {
  check_msg_card(links, mtu);
  if (mtu > kHilMaxPayload) {
    throw std::invalid_argument("sched_hil hw-emu: MTU " + std::to_string(mtu) + " bytes, more than a frame carries (" +
                                std::to_string(kHilMaxPayload) + ")");
  }
  if (opt_.npus == 0 || uint64_t{opt_.npus} * opt_.npus > kMaxFlows) {
    throw std::invalid_argument("sched_hil hw-emu: " + std::to_string(opt_.npus) +
                                " ranks; the receive path counts 1024 flows (up to 32 ranks)");
  }
  sent_.assign(std::size_t{opt_.npus} * opt_.npus, 0);
  top_ = std::make_unique<Vsched_hil>(ctx_.get(), "sched_hil");
  rx_ = std::make_unique<Vsched_rx>(ctx_.get(), "sched_rx");
  Vsched_hil& t = *top_;
  t.cfg_mtu = mtu;
  t.cfg_pool_slots = static_cast<uint16_t>(1u << kPktAw);
  t.cfg_k = k_;
  t.cfg_c0 = ~uint64_t{0};
  t.cfg_dscp = opt_.dscp;
  t.cfg_ecn = static_cast<uint8_t>(dp::Ecn::kEct0);
  t.rst = t.tx_rst = 1;
  Vsched_rx& r = *rx_;
  r.rst = 1;
  r.cfg_roce = 0;
  r.cfg_port_lo = kPort;
  r.cfg_port_hi = kPort;
  r.cfg_npus = static_cast<uint16_t>(opt_.npus);
  r.cfg_ps_per_cycle_q32 = hil_ps_per_cycle_q32(opt_.dilation_q16);
  r.cfg_flow_seq = 1;  // the IPv4 id is the flow's departure sequence (sched_hil)
  for (int i = 0; i < 4; ++i) tick();
  t.rst = t.tx_rst = 0;
  r.rst = 0;
  load_links(links);
  for (int n = 0; !r.s_axis_tready; ++n) {  // sched_rx clears its RAMs after reset
    if (n > 20000) throw std::runtime_error("sched_hil hw-emu: sched_rx did not leave its reset");
    tick();
  }
  c0_ = cycle() + opt_.lead_cycles;  // emulated time 0
  t.cfg_c0 = c0_;
  tick();
}

SchedHilHwEmu::~SchedHilHwEmu() {
  if (rx_) rx_->final();
  if (top_) top_->final();
}

uint64_t SchedHilHwEmu::cycle() const noexcept { return top_->cycle; }

void SchedHilHwEmu::tick() {
  Vsched_hil& t = *top_;
  drive(true, true);
  t.r_ready = 1;
  t.clk = t.tx_clk = 0;
  t.eval();
  const uint64_t c = t.cycle;
  t.m_axis_tready = mac_.ready(c);
  t.eval();
  observe();
  if (t.m_axis_tvalid && t.m_axis_tready) on_beat(c);
  if (rx_step(dev_.offer(c), c - c0_)) dev_.pop();
  t.clk = t.tx_clk = 1;
  t.eval();
}

// A beat transferred from sched_fg to the MAC in cycle c: to the MAC and the device; a frame's last beat
// decodes it and measures its first beat against its schedule.
void SchedHilHwEmu::on_beat(uint64_t c) {
  const Vsched_hil& t = *top_;
  Beat b;
  for (uint32_t i = 0; i < kTxLanes; ++i) {
    if (((t.m_axis_tkeep >> i) & 1) == 0) break;
    b.bytes[b.keep++] = static_cast<uint8_t>(t.m_axis_tdata[i / 4] >> (8 * (i % 4)));
  }
  b.last = t.m_axis_tlast;
  if (cur_.empty()) cur_first_ = c;
  cur_.insert(cur_.end(), b.bytes.begin(), b.bytes.begin() + b.keep);
  mac_.take(c, b, 14 + (uint64_t{cur_[16]} << 8 | cur_[17]));
  dev_.take(c, b);
  if (!b.last) return;
  dp::DecodedFrame f;
  const dp::Verdict v = dp::decode(cur_, dp::DecodeRules{dp::WireMode::kFabemu, kPort, kPort}, f);
  if (v != dp::Verdict::kOurs) {
    throw std::runtime_error("sched_hil hw-emu: frame " + std::to_string(deps_.size()) +
                             " from sched_fg does not decode: " + std::string(dp::to_string(v)));
  }
  const dp::FabemuHeader& h = f.hdr;
  if (h.src_rank < opt_.npus && h.dst_rank < opt_.npus) ++sent_[h.src_rank * opt_.npus + h.dst_rank];
  deps_.push_back(hw::msg::Departure{h.tx_time_ps, h.message_id, h.src_rank, h.dst_rank, h.seq, h.count,
                                     f.payload_bytes, h.message_length, h.offset});
  const uint64_t sched = hil_tx_cycle(h.tx_time_ps, k_, c0_);
  if (cur_first_ < sched) ++report_.early;
  if (cur_first_ > sched && h.seq == 0) report_.late_starts.push_back(HilLateStart{h.message_id, cur_first_ - sched});
  if (cur_first_ > sched) {
    ++report_.late_measured;
    report_.worst_late_cycles = std::max(report_.worst_late_cycles, cur_first_ - sched);
  }
  if (opt_.keep_frames) frames_.push_back(HilFrame{sched, cur_first_, cur_});
  cur_.clear();
}

bool SchedHilHwEmu::rx_step(const Beat* beat, uint64_t cycle) {
  Vsched_rx& r = *rx_;
  r.s_axis_tvalid = beat != nullptr;
  if (beat != nullptr) {
    for (uint32_t w = 0; w < kTxLanes / 4; ++w) {
      uint32_t v = 0;
      for (uint32_t k = 0; k < 4; ++k) v |= uint32_t{beat->bytes[4 * w + k]} << (8 * k);
      r.s_axis_tdata[w] = v;
    }
    r.s_axis_tkeep = beat->keep >= 64 ? ~uint64_t{0} : (uint64_t{1} << beat->keep) - 1;
    r.s_axis_tlast = beat->last;
  }
  r.cycle = cycle;
  r.m_rec_ready = 1;
  r.clk = 0;
  r.eval();
  const bool accepted = beat != nullptr && r.s_axis_tready;
  if (accepted && opt_.keep_frames) {
    if (rx_cur_.empty()) rx_first_ = cycle;
    rx_cur_.insert(rx_cur_.end(), beat->bytes.begin(), beat->bytes.begin() + beat->keep);
    if (beat->last) {
      received_.push_back(HilFrame{0, rx_first_, rx_cur_});
      rx_cur_.clear();
    }
  }
  if (!r.rst && r.m_rec_valid) {
    arrivals_.push_back(HilArrival{r.m_rec_src, r.m_rec_dst, r.m_rec_msg_id, r.m_rec_frames, r.m_rec_bytes,
                                   r.m_rec_first_cycle, r.m_rec_last_cycle});
  }
  if (r.h_valid && r.h_ready) h_accepted_ = true;
  if (!r.rst && r.h_rsp_valid) {
    h_got_ = true;
    for (uint32_t k = 0; k < 6; ++k) h_rsp_[k] = uint64_t{r.h_rsp_data[2 * k]} | uint64_t{r.h_rsp_data[2 * k + 1]} << 32;
  }
  r.clk = 1;
  r.eval();
  return accepted;
}

std::array<uint64_t, 6> SchedHilHwEmu::rx_read(uint32_t space, uint32_t addr) {
  Vsched_rx& r = *rx_;
  r.h_valid = 1;
  r.h_write = 0;
  r.h_space = static_cast<uint8_t>(space);
  r.h_addr = static_cast<uint16_t>(addr);
  h_accepted_ = h_got_ = false;
  for (int n = 0; !h_accepted_; ++n) {
    if (n > 1000) throw std::runtime_error("sched_hil hw-emu: sched_rx's host port does not answer");
    tick();
  }
  r.h_valid = 0;
  for (int n = 0; !h_got_; ++n) {
    if (n > 1000) throw std::runtime_error("sched_hil hw-emu: sched_rx's host port does not answer");
    tick();
  }
  return h_rsp_;
}

void SchedHilHwEmu::run_to(uint64_t target) {
  while (cycle() < target) tick();
}

void SchedHilHwEmu::push(const hw::msg::MsgDesc& d) {
  if (drained_) throw std::logic_error("sched_hil hw-emu: push after drain()");
  if ((d.bytes + mtu_ - 1) / mtu_ >= (uint64_t{1} << 32)) {
    throw std::invalid_argument("sched_hil hw-emu: message " + std::to_string(d.id) + " of " + std::to_string(d.bytes) +
                                " bytes is 2^32 packets or more at MTU " + std::to_string(mtu_) +
                                " (a frame's count is 32 bits)");
  }
  MsgCardBench::push(d);
}

void SchedHilHwEmu::advance(uint64_t w) {
  if (drained_ || !set_watermark(w)) return;
  sync();
  // The real-time rule: the clock runs to W's cycle less the lead, and no further.
  if (w < (uint64_t{1} << 62)) {
    const uint64_t to = hil_tx_cycle(w, k_, c0_) - opt_.lead_cycles;
    run_to(to);
  }
}

std::size_t SchedHilHwEmu::take_departures(std::vector<hw::msg::Departure>& out) {
  return move_all(deps_, out);
}

const HilReport& SchedHilHwEmu::drain() {
  if (drained_) return report_;
  drained_ = true;
  set_watermark(~uint64_t{0});  // the host has nothing more: every event and departure may go
  sync();
  const Vsched_hil& t = *top_;
  uint64_t last_frames = t.frames, since = 0;
  while (!(t.dep_idle && !t.m_axis_tvalid && t.frames == static_cast<uint32_t>(t.n_deps) && dev_.empty())) {
    tick();
    since = t.frames != last_frames ? 0 : since + 1;
    last_frames = t.frames;
    if (since > kStuckCycles) throw std::runtime_error("sched_hil hw-emu: drain() made no progress");
  }
  for (int i = 0; i < 64; ++i) tick();  // sched_rx's pipeline: a frame's last update 24 cycles after it
  read_receive_side();
  return report_;
}

void SchedHilHwEmu::read_receive_side() {
  const Vsched_hil& t = *top_;
  report_.frames_sent = t.frames;
  report_.late_frames = t.late_frames;
  report_.device = dev_.counters();
  report_.rx_ours = rx_read(kSpaceGlobal, 0)[0];
  report_.rx_frames = rx_read(kSpaceGlobal, 14)[0];
  report_.rx_negative = rx_read(kSpaceGlobal, 17)[0];
  report_.rx_records = rx_read(kSpaceGlobal, 18)[0];
  report_.rx_records_dropped = rx_read(kSpaceGlobal, 19)[0];
  for (uint32_t f = 0; f < opt_.npus * opt_.npus; ++f) {
    const auto w = rx_read(kSpaceFlow, f);
    if (w[0] != 0 || sent_[f] != 0) report_.flows.push_back(hil_flow(f, sent_[f], RxFlowCounters{w[0], w[1], w[2], w[3], w[4], w[5]}));
  }
  report_.histogram.assign(emu::LogHistogram::kBuckets, 0);
  for (uint32_t b = 0; b < emu::LogHistogram::kBuckets; ++b) report_.histogram[b] = rx_read(kSpaceHist, b)[0];
  report_.cycles = cycle();
  report_.c0 = c0_;
  report_.arrivals = arrivals_;
}

}  // namespace fabemu::rtl
