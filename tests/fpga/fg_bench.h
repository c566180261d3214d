// The test bench of sched_fg (the line-rate frame generator) under Verilator: two unrelated clocks
// (core and transmit, integer picosecond periods), descriptors offered in the core domain, frames
// collected from the AXI4-Stream in the transmit domain with the transmit cycle of their first and
// last beats, and the random FrameSpecs (fabemu and RoCEv2 mode) the tests send.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "host/wire/frame.h"
#include "verilated.h"

namespace fabemu::fg_test {

namespace dp = fabemu::host::dpdk;

inline constexpr uint16_t kPortLo = 47000;
inline constexpr uint16_t kPortHi = 47015;
// 300 MHz core, 322.27 MHz transmit (a 100 GbE CMAC's 512-bit stream): coprime periods, so the edges'
// phase walks through every value.
inline constexpr uint64_t kCorePs = 3333;
inline constexpr uint64_t kTxPs = 3103;

struct Departure {
  uint64_t sched = 0;  // transmit cycle of the first beat
  dp::FrameSpec spec;
};

struct Observed {
  uint64_t first_cycle = 0;  // transmit cycle the first beat was presented (tvalid)
  uint64_t end_cycle = 0;    // transmit cycle the last beat was transferred
  uint64_t first_ps = 0;     // time of the transmit edge after which the first beat was presented
  std::vector<uint8_t> bytes;
};

inline uint64_t mac_bits(const dp::MacAddr& m) {
  uint64_t v = 0;
  for (uint8_t b : m) v = v << 8 | b;
  return v;
}

inline uint64_t frame_len(const dp::FrameSpec& s) {
  return dp::frame_bytes(s.mode, s.hdr.kind == dp::PacketKind::kData ? s.payload_bytes : 0);
}

// A random frame of `mode` with `payload` bytes (an ACK, without payload, one time in 20 when payload
// is 0): every field random within what decode() accepts as ours.
inline dp::FrameSpec random_spec(std::mt19937_64& rng, dp::WireMode mode, uint32_t payload) {
  dp::FrameSpec s;
  s.mode = mode;
  for (auto& b : s.src.mac) b = static_cast<uint8_t>(rng());
  for (auto& b : s.dst.mac) b = static_cast<uint8_t>(rng());
  s.src.ip = static_cast<uint32_t>(rng());
  s.dst.ip = static_cast<uint32_t>(rng());
  s.src.port = static_cast<uint16_t>(rng());
  s.dst.port = mode == dp::WireMode::kRoceV2 ? dp::kRoceV2Port
                                             : static_cast<uint16_t>(kPortLo + rng() % (kPortHi - kPortLo + 1));
  s.ip_id = static_cast<uint16_t>(rng());
  s.dscp = static_cast<uint8_t>(rng() & 0x3F);
  s.ecn = static_cast<dp::Ecn>(rng() & 3);
  dp::FabemuHeader& h = s.hdr;
  h.src_rank = static_cast<uint32_t>(rng());
  h.dst_rank = static_cast<uint32_t>(rng());
  h.message_id = rng();
  h.tx_time_ps = rng();
  h.flags = rng() % 8 == 0 ? dp::kFlagRetransmit : 0;
  h.count = 1 + static_cast<uint32_t>(rng() % 1000);
  if (payload == 0 && rng() % 20 == 0) {
    h.kind = dp::PacketKind::kAck;
    h.seq = static_cast<uint32_t>(rng() % (uint64_t{h.count} + 1));
    h.message_length = rng() >> 20;
    h.offset = 0;
    s.payload_bytes = 0;
  } else {
    h.kind = dp::PacketKind::kData;
    s.payload_bytes = payload;
    h.seq = static_cast<uint32_t>(rng() % h.count);
    h.offset = rng() >> 24;
    h.message_length = h.offset + payload + (rng() >> 30);
  }
  static constexpr uint8_t kOps[4] = {dp::kRcSendFirst, dp::kRcSendMiddle, dp::kRcSendLast, dp::kRcSendOnly};
  s.bth.opcode = kOps[rng() % 4];
  s.bth.solicited = rng() & 1;
  s.bth.mig_req = rng() & 1;
  s.bth.tver = 0;
  s.bth.pkey = static_cast<uint16_t>(rng());
  s.bth.dest_qp = static_cast<uint32_t>(rng() & 0xFFFFFF);
  s.bth.ack_req = rng() & 1;
  s.bth.psn = static_cast<uint32_t>(rng() & 0xFFFFFF);
  return s;
}

// Either mode; payload 0..1500 mostly, some 0, some jumbo (8000..9000).
inline dp::FrameSpec random_spec(std::mt19937_64& rng) {
  const auto mode = rng() % 2 ? dp::WireMode::kRoceV2 : dp::WireMode::kFabemu;
  const unsigned pick = static_cast<unsigned>(rng() % 20);
  const uint32_t payload = pick < 2   ? 0
                           : pick == 2 ? static_cast<uint32_t>(8000 + rng() % 1001)
                                       : static_cast<uint32_t>(rng() % 1501);
  return random_spec(rng, mode, payload);
}

// Verilator's view of a stream port: a 64-bit integer or an array of 32-bit words.
inline uint8_t byte_at(uint64_t v, int i) { return static_cast<uint8_t>(v >> (8 * i)); }
template <class W>
uint8_t byte_at(const W& w, int i) {
  return static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
}
inline bool bit_at(uint64_t v, int i) { return (v >> i) & 1; }

// Drives sched_fg's descriptor inputs (V: Vsched_fg or Vsched_fg64) with departure `d` (s_valid untouched).
template <class V>
void drive_descriptor(V& t, const Departure& d) {
  const dp::FrameSpec& s = d.spec;
  t.s_sched = d.sched;
  t.s_roce = s.mode == dp::WireMode::kRoceV2;
  t.s_dst_mac = mac_bits(s.dst.mac);
  t.s_src_mac = mac_bits(s.src.mac);
  t.s_src_ip = s.src.ip;
  t.s_dst_ip = s.dst.ip;
  t.s_src_port = s.src.port;
  t.s_dst_port = s.dst.port;
  t.s_ip_id = s.ip_id;
  t.s_dscp = s.dscp;
  t.s_ecn = static_cast<uint8_t>(s.ecn);
  t.s_kind = static_cast<uint8_t>(s.hdr.kind);
  t.s_flags = s.hdr.flags;
  t.s_src_rank = s.hdr.src_rank;
  t.s_dst_rank = s.hdr.dst_rank;
  t.s_msg_id = s.hdr.message_id;
  t.s_seq = s.hdr.seq;
  t.s_count = s.hdr.count;
  t.s_msg_len = s.hdr.message_length;
  t.s_offset = s.hdr.offset;
  t.s_tx_time = s.hdr.tx_time_ps;
  t.s_payload_bytes = static_cast<uint16_t>(s.hdr.kind == dp::PacketKind::kData ? s.payload_bytes : 0);
  t.s_bth_opcode = s.bth.opcode;
  t.s_bth_se = s.bth.solicited;
  t.s_bth_m = s.bth.mig_req;
  t.s_bth_a = s.bth.ack_req;
  t.s_bth_tver = s.bth.tver;
  t.s_bth_pkey = s.bth.pkey;
  t.s_bth_qp = s.bth.dest_qp;
  t.s_bth_psn = s.bth.psn;
}

// V: Vsched_fg (DATA_W 512) or Vsched_fg64.
template <class V, int kDataW>
class FgBench {
 public:
  static constexpr int kLanes = kDataW / 8;

  // core_ps, tx_ps: the two clock periods (picoseconds).
  explicit FgBench(uint64_t core_ps = kCorePs, uint64_t tx_ps = kTxPs)
      : top_(std::make_unique<V>(&ctx_, "fg")), core_ps_(core_ps), tx_ps_(tx_ps) {
    V& t = *top_;
    t.rst = 1;
    t.tx_rst = 1;
    t.s_valid = 0;
    t.m_axis_tready = 1;
    for (int i = 0; i < 4; ++i) step();
    t.rst = 0;
    t.tx_rst = 0;
  }
  ~FgBench() { top_->final(); }
  V& top() { return *top_; }
  uint64_t now_ps() const { return now_; }
  uint64_t next_core_ps() const { return next_core_; }
  // Picosecond time of each accepted descriptor's core edge, over every run().
  const std::vector<uint64_t>& accepted_ps() const { return accepted_; }
  // Core cycles (edges since the bench started) at which descriptors were accepted.
  const std::vector<uint64_t>& accepted_core() const { return accepted_core_; }

  // Offers `deps` in order (s_valid with probability valid_pct/100, each core cycle) with tready high
  // with probability ready_pct/100 (each transmit cycle); returns the frames as they left.
  std::vector<Observed> run(const std::vector<Departure>& deps, unsigned valid_pct, unsigned ready_pct, uint64_t seed) {
    rng_.seed(seed);
    deps_ = &deps;
    next_ = 0;
    valid_pct_ = valid_pct;
    ready_pct_ = ready_pct;
    out_.clear();
    in_frame_ = false;
    const uint64_t limit = top_->cycle + (deps.empty() ? 100 : deps.back().sched + 2000 * deps.size() + 10000);
    while (out_.size() < deps.size() || in_frame_) {
      if (top_->cycle > limit) {
        ADD_FAILURE() << "no progress: " << out_.size() << " of " << deps.size() << " frames";
        break;
      }
      step();
    }
    return out_;
  }

 private:
  // One clock edge: the core's, the transmit domain's, or both when they coincide.
  void step() {
    V& t = *top_;
    const bool core = next_core_ <= next_tx_;
    const bool tx = next_tx_ <= next_core_;
    now_ = std::min(next_core_, next_tx_);
    if (core) drive_core();
    if (tx) drive_tx();
    t.eval();
    if (core) sample_core();
    if (tx) sample_tx();
    t.clk = core;
    t.tx_clk = tx;
    t.eval();
    t.clk = 0;
    t.tx_clk = 0;
    t.eval();
    if (core) {
      next_core_ += core_ps_;
      ++core_cycles_;
    }
    if (tx) next_tx_ += tx_ps_;
  }

  void drive_core() {
    V& t = *top_;
    if (deps_ == nullptr || next_ >= deps_->size()) {
      t.s_valid = 0;
      return;
    }
    t.s_valid = rng_() % 100 < valid_pct_;
    drive_descriptor(t, (*deps_)[next_]);
  }
  void sample_core() {
    V& t = *top_;
    if (t.s_valid && t.s_ready) {
      accepted_.push_back(now_);
      accepted_core_.push_back(core_cycles_);
      ++next_;
    }
  }

  void drive_tx() { top_->m_axis_tready = deps_ == nullptr || rng_() % 100 < ready_pct_; }
  void sample_tx() {
    V& t = *top_;
    const uint64_t cycle = t.cycle;
    if (!t.m_axis_tvalid) {
      EXPECT_FALSE(in_frame_) << "tvalid dropped inside a frame at cycle " << cycle;
      return;
    }
    if (!in_frame_) {
      in_frame_ = true;
      out_.emplace_back();
      out_.back().first_cycle = cycle;
      out_.back().first_ps = now_ - tx_ps_;
    }
    if (!t.m_axis_tready) return;
    Observed& o = out_.back();
    bool all = true;
    for (int i = 0; i < kLanes; ++i) {
      if (bit_at(t.m_axis_tkeep, i)) {
        o.bytes.push_back(byte_at(t.m_axis_tdata, i));
      } else {
        all = false;
      }
    }
    EXPECT_TRUE(t.m_axis_tlast || all) << "partial beat before tlast at cycle " << cycle;
    if (t.m_axis_tlast) {
      o.end_cycle = cycle;
      in_frame_ = false;
    }
  }

  VerilatedContext ctx_;
  std::unique_ptr<V> top_;
  uint64_t core_ps_, tx_ps_;
  uint64_t now_ = 0, next_core_ = 0, next_tx_ = 0, core_cycles_ = 0;
  std::mt19937_64 rng_;
  const std::vector<Departure>* deps_ = nullptr;
  std::size_t next_ = 0;
  unsigned valid_pct_ = 100, ready_pct_ = 100;
  std::vector<Observed> out_;
  bool in_frame_ = false;
  std::vector<uint64_t> accepted_, accepted_core_;
};

}  // namespace fabemu::fg_test
