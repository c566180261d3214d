// The test bench of sched_rx (the card's receive path) under Verilator: a C++ reference of everything
// it counts, made with host/wire's decode() (RxRef); a driver that clocks Vsched_rx / Vsched_rx64, puts
// frames on its stream with random tvalid gaps and reads its counters, histogram and records
// (RxBench); and the loopback: Vsched_fg -> a C++ stand-in device under test (latency, rate limit,
// drops, ECN CE marks, a reordered pair, back-pressure) -> sched_rx, all on one clock (Loopback).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <type_traits>
#include <vector>

#include "emulator/histogram.h"
#include "host/wire/frame.h"
#include "rtl_models/rx_model.h"
#include "tests/fpga/fg_bench.h"
#include "verilated.h"

namespace fabemu::rx_test {

namespace dp = fabemu::host::dpdk;
using fg_test::Departure;

inline constexpr int kFlowAw = rtl::kRxFlowAw;   // sched_rx's FLOW_AW default
inline constexpr int kHistCw = 48;      // HIST_CW default
inline constexpr int kGlobals = rtl::kRxGlobals;
inline constexpr int kRecFifo = 32;     // REC_AW 5
// Global counters after the verdicts (0..13, host/wire's Verdict).
enum Global : int { kFramesAll = rtl::kRxFramesAll, kFeedback = rtl::kRxFeedback, kOutOfRange = rtl::kRxOutOfRange,
                    kEarly = rtl::kRxEarly, kRecords = rtl::kRxRecords, kRecordsDropped = rtl::kRxRecordsDropped };
// Host port spaces.
enum Space : uint8_t { kSpaceFlow = 0, kSpaceHist = 1, kSpaceGlobal = 2 };

struct RxConfig : rtl::RxConfig {
  RxConfig() {
    port_lo = fg_test::kPortLo;
    port_hi = fg_test::kPortHi;
  }
};
using FlowCounters = rtl::RxFlowCounters;
using Record = rtl::RxRecord;
inline uint64_t arrival_ps(uint64_t cycle, uint64_t q) { return rtl::rx_arrival_ps(cycle, q); }

// What sched_rx counts (rtl::RxModel), with the flows that counted a frame as a map and every latency kept.
class RxRef {
 public:
  explicit RxRef(const RxConfig& c) : m_(c) {}
  RxRef(const RxRef&) = delete;
  RxRef& operator=(const RxRef&) = delete;

  dp::Verdict frame(std::span<const uint8_t> f, uint64_t cycle) {
    const dp::Verdict v = m_.frame(f, cycle);
    if (m_.last_latency()) latencies.push_back(*m_.last_latency());
    if (m_.last_flow()) flows[*m_.last_flow()] = m_.flow(*m_.last_flow());
    return v;
  }

 private:
  rtl::RxModel m_;

 public:
  std::array<uint64_t, kGlobals>& g = m_.g;
  std::map<uint32_t, FlowCounters> flows;
  std::vector<Record>& records = m_.records;
  emu::LogHistogram& hist = m_.hist;
  std::vector<uint64_t> latencies;
};

// One stream beat: `keep` bytes (1..lanes), tlast.
struct Beat {
  std::array<uint8_t, 64> bytes{};
  int keep = 0;
  bool last = false;
};

inline std::vector<Beat> beats_of(std::span<const uint8_t> f, int lanes) {
  std::vector<Beat> out;
  for (size_t at = 0; at < f.size(); at += static_cast<size_t>(lanes)) {
    Beat b;
    b.keep = static_cast<int>(std::min(f.size() - at, static_cast<size_t>(lanes)));
    std::copy_n(f.data() + at, b.keep, b.bytes.begin());
    b.last = at + static_cast<size_t>(lanes) >= f.size();
    out.push_back(b);
  }
  return out;
}

// Verilator's view of a port: a 64-bit integer or an array of 32-bit words.
inline void set_bytes(uint64_t& d, const uint8_t* b, int n) {
  d = 0;
  for (int i = 0; i < n; ++i) d |= uint64_t{b[i]} << (8 * i);
}
template <class W>
void set_bytes(W& w, const uint8_t* b, int n) {
  for (int i = 0; i < n / 4; ++i) {
    w[i] = uint32_t{b[4 * i]} | uint32_t{b[4 * i + 1]} << 8 | uint32_t{b[4 * i + 2]} << 16 | uint32_t{b[4 * i + 3]} << 24;
  }
}
template <class W>
uint64_t word64(const W& w, int k) {
  return uint64_t{w[2 * k]} | uint64_t{w[2 * k + 1]} << 32;
}

// V: Vsched_rx (DATA_W 512) or Vsched_rx64. The bench drives `cycle` itself (step(beat)) or takes it
// from the caller (step(beat, cycle): the loopback's transmit counter).
template <class V, int kDataW>
class RxBench {
 public:
  static constexpr int kLanes = kDataW / 8;

  explicit RxBench(const RxConfig& cfg, uint64_t cycle0 = 0) : top_(std::make_unique<V>(&ctx_, "rx")), cycle_(cycle0) {
    V& t = *top_;
    t.rst = 1;
    t.s_axis_tvalid = 0;
    t.m_rec_ready = 1;
    t.h_valid = 0;
    t.cfg_roce = cfg.roce;
    t.cfg_port_lo = cfg.port_lo;
    t.cfg_port_hi = cfg.port_hi;
    t.cfg_npus = cfg.npus;
    t.cfg_ps_per_cycle_q32 = cfg.q32;
    t.cfg_flow_seq = cfg.flow_seq;
    for (int i = 0; i < 4; ++i) step(nullptr);
    t.rst = 0;
    int n = 0;
    while (!t.s_axis_tready && n < 20000) {
      step(nullptr);
      ++n;
    }
    EXPECT_TRUE(t.s_axis_tready) << "the RAMs were not cleared";
  }
  ~RxBench() { top_->final(); }
  V& top() { return *top_; }
  // The loopback's generator shares this context (a model's destructor uses the thread's current one).
  VerilatedContext& context() { return ctx_; }
  uint64_t cycle() const { return cycle_; }
  const std::vector<Record>& records() const { return records_; }
  // The `cycle` value of the clock in which each record was taken.
  const std::vector<uint64_t>& record_cycles() const { return record_cycles_; }
  void set_record_ready(unsigned pct) { rec_ready_pct_ = pct; }

  // One clock with `beat` on the stream (nullptr: tvalid low) and `cycle` on the cycle input; true when
  // the beat was accepted.
  bool step(const Beat* beat, uint64_t cycle) {
    V& t = *top_;
    t.s_axis_tvalid = beat != nullptr;
    if (beat != nullptr) {
      set_bytes(t.s_axis_tdata, beat->bytes.data(), kLanes);
      const uint64_t keep = beat->keep >= 64 ? ~uint64_t{0} : (uint64_t{1} << beat->keep) - 1;
      t.s_axis_tkeep = static_cast<std::remove_reference_t<decltype(t.s_axis_tkeep)>>(keep);
      t.s_axis_tlast = beat->last;
    }
    t.cycle = cycle;
    t.m_rec_ready = rng_() % 100 < rec_ready_pct_;
    t.eval();
    const bool accepted = beat != nullptr && t.s_axis_tready;
    if (!t.rst && t.m_rec_valid && t.m_rec_ready) {
      records_.push_back(Record{t.m_rec_src, t.m_rec_dst, t.m_rec_frames, t.m_rec_msg_id, t.m_rec_bytes,
                                t.m_rec_first_cycle, t.m_rec_last_cycle});
      record_cycles_.push_back(cycle);
    }
    if (t.h_valid && t.h_ready) h_accepted_ = true;
    if (!t.rst && t.h_rsp_valid) {
      h_got_ = true;
      for (int k = 0; k < 6; ++k) h_rsp_[static_cast<size_t>(k)] = word64(t.h_rsp_data, k);
    }
    t.clk = 1;
    t.eval();
    t.clk = 0;
    t.eval();
    return accepted;
  }
  bool step(const Beat* beat) { return step(beat, cycle_++); }
  void idle(int n) {
    for (int i = 0; i < n; ++i) step(nullptr);
  }

  // Sends `frames` back to back, tvalid high with probability valid_pct/100 each cycle; returns the
  // cycle at which each frame's first beat was accepted.
  std::vector<uint64_t> send(const std::vector<std::vector<uint8_t>>& frames, unsigned valid_pct, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> first;
    for (const auto& f : frames) {
      const std::vector<Beat> beats = beats_of(f, kLanes);
      for (size_t i = 0; i < beats.size();) {
        const uint64_t c = cycle_;
        const bool offer = rng() % 100 < valid_pct;
        if (step(offer ? &beats[i] : nullptr)) {
          if (i == 0) first.push_back(c);
          ++i;
        }
      }
    }
    return first;
  }

  // One host request; returns the response's six 64-bit words.
  std::array<uint64_t, 6> host(Space space, uint32_t addr, bool write = false, const std::array<uint64_t, 6>& w = {}) {
    V& t = *top_;
    t.h_valid = 1;
    t.h_write = write;
    t.h_space = space;
    t.h_addr = static_cast<uint16_t>(addr);
    for (int k = 0; k < 6; ++k) {
      t.h_wdata[2 * k] = static_cast<uint32_t>(w[static_cast<size_t>(k)]);
      t.h_wdata[2 * k + 1] = static_cast<uint32_t>(w[static_cast<size_t>(k)] >> 32);
    }
    h_accepted_ = false;
    h_got_ = false;
    for (int n = 0; !h_accepted_; ++n) {
      step(nullptr);
      if (n > 100) {
        ADD_FAILURE() << "host request not accepted";
        break;
      }
    }
    t.h_valid = 0;
    for (int n = 0; !h_got_; ++n) {
      step(nullptr);
      if (n > 100) {
        ADD_FAILURE() << "no host response";
        break;
      }
    }
    return h_rsp_;
  }
  FlowCounters read_flow(uint32_t idx) {
    const auto r = host(kSpaceFlow, idx);
    return FlowCounters{r[0], r[1], r[2], r[3], r[4], r[5]};
  }
  void write_flow(uint32_t idx, const FlowCounters& c) {
    host(kSpaceFlow, idx, true, {c.frames, c.payload, c.wire, c.lost, c.reordered, c.ce});
  }
  uint64_t read_hist(uint32_t b) { return host(kSpaceHist, b)[0]; }
  void write_hist(uint32_t b, uint64_t v) { host(kSpaceHist, b, true, {v}); }
  uint64_t read_global(uint32_t i) { return host(kSpaceGlobal, i)[0]; }

 private:
  VerilatedContext ctx_;
  std::unique_ptr<V> top_;
  uint64_t cycle_ = 0;
  std::mt19937_64 rng_{1};
  unsigned rec_ready_pct_ = 100;
  std::vector<Record> records_;
  std::vector<uint64_t> record_cycles_;
  bool h_accepted_ = false, h_got_ = false;
  std::array<uint64_t, 6> h_rsp_{};
};

// Every counter, record and histogram bucket of the RTL equals the reference's (flows 0..flows-1;
// histogram counts modulo 2^kHistCw).
template <class B>
void expect_equal(B& b, const RxRef& ref, uint32_t flows, const std::map<uint32_t, FlowCounters>& preset = {},
                  const std::map<uint32_t, uint64_t>& hist_preset = {}) {
  for (int i = 0; i < kGlobals; ++i) EXPECT_EQ(b.read_global(static_cast<uint32_t>(i)), ref.g[static_cast<size_t>(i)]) << "global " << i;
  for (uint32_t f = 0; f < flows; ++f) {
    FlowCounters want;
    if (auto it = ref.flows.find(f); it != ref.flows.end()) want = it->second;
    if (auto it = preset.find(f); it != preset.end()) {
      want.frames += it->second.frames;
      want.payload += it->second.payload;
      want.wire += it->second.wire;
      want.lost += it->second.lost;
      want.reordered += it->second.reordered;
      want.ce += it->second.ce;
    }
    const FlowCounters got = b.read_flow(f);
    EXPECT_EQ(got, want) << "flow " << f << ": frames " << got.frames << "/" << want.frames << " payload " << got.payload
                         << "/" << want.payload << " wire " << got.wire << "/" << want.wire << " lost " << got.lost << "/"
                         << want.lost << " reordered " << got.reordered << "/" << want.reordered << " ce " << got.ce
                         << "/" << want.ce;
  }
  std::vector<uint64_t> want(emu::LogHistogram::kBuckets, 0);
  ref.hist.for_each_bucket([&](uint64_t lo, uint64_t, uint64_t n) { want[emu::LogHistogram::bucket_of(lo)] = n; });
  for (const auto& [bk, v] : hist_preset) want[bk] += v;
  int bad = 0;
  for (uint32_t bk = 0; bk < emu::LogHistogram::kBuckets && bad < 5; ++bk) {
    const uint64_t got = b.read_hist(bk);
    const uint64_t w = want[bk] & ((uint64_t{1} << kHistCw) - 1);
    if (got != w) {
      ADD_FAILURE() << "histogram bucket " << bk << " [" << emu::LogHistogram::lowest(bk) << ", "
                    << emu::LogHistogram::highest(bk) << "]: " << got << ", want " << w;
      ++bad;
    }
  }
  ASSERT_EQ(b.records().size(), ref.records.size());
  for (size_t i = 0; i < ref.records.size(); ++i) {
    const Record& g = b.records()[i];
    const Record& r = ref.records[i];
    EXPECT_EQ(g, r) << "record " << i << ": src " << g.src << "/" << r.src << " dst " << g.dst << "/" << r.dst << " msg "
                    << g.msg << "/" << r.msg << " frames " << g.frames << "/" << r.frames << " bytes " << g.bytes << "/"
                    << r.bytes << " first " << g.first << "/" << r.first << " last " << g.last << "/" << r.last;
  }
}

// The stand-in device under test between the frame generator and the receive path.
struct DutOptions {
  uint64_t latency = 8;            // a beat taken from the generator in cycle c is offered at c + latency at the earliest
  double rate = 0;                 // bytes per cycle it sends at most (0: no limit)
  uint64_t drop_every = 0;         // drops frame k when (k + 1) % drop_every == 0
  unsigned drop_per_1000 = 0;      // drops each frame with this probability (seeded)
  std::set<size_t> ce;             // frames it marks CE (mark_ce: ECT frames, IPv4 checksum fixed up)
  int64_t reorder = -1;            // frame it holds back and sends after the next one
  size_t protect_from = SIZE_MAX;  // frames from this index on are never dropped
  unsigned ready_pct = 100;        // tready towards the generator, percent of the cycles
  uint64_t seed = 1;
};

// sched_fg (VF, kDataW bits) -> device (C++) -> sched_rx (VR), one clock. The receive side's `cycle` is
// the generator's plus rx_offset.
template <class VF, class VR, int kDataW>
class Loopback {
 public:
  static constexpr int kLanes = kDataW / 8;
  struct Seen {
    uint64_t depart = 0;           // generator cycle its first beat was taken by the device
    uint64_t present = 0;          // receive-side cycle its first beat was accepted by sched_rx
    bool dropped = false, marked = false, forwarded = false;
    std::vector<uint8_t> bytes;    // as forwarded
  };

  Loopback(const RxConfig& cfg, const DutOptions& o, uint64_t rx_offset)
      : rx_(cfg, 0), fg_(std::make_unique<VF>(&rx_.context(), "fg")), o_(o), off_(rx_offset), rng_(o.seed) {
    VF& f = *fg_;
    f.rst = 1;
    f.tx_rst = 1;
    f.s_valid = 0;
    f.m_axis_tready = 0;
    for (int i = 0; i < 4; ++i) edge();
    f.rst = 0;
    f.tx_rst = 0;
  }
  ~Loopback() { fg_->final(); }
  RxBench<VR, kDataW>& rx() { return rx_; }
  VF& fg() { return *fg_; }
  const std::vector<Seen>& seen() const { return seen_; }
  const std::vector<size_t>& order() const { return order_; }

  // Sends `deps` (schedules in generator cycles) through the device; returns when every frame has
  // arrived or been dropped and sched_rx's pipeline is empty.
  void run(const std::vector<Departure>& deps) {
    deps_ = &deps;
    next_ = 0;
    const uint64_t limit = (deps.empty() ? 0 : deps.back().sched) + 4000 * deps.size() + 20000;
    while (true) {
      const bool done = next_ == deps.size() && seen_.size() == deps.size() && !in_frame_ && q_.empty() &&
                        hold_.empty() && fg_->frames == deps.size() && !fg_->m_axis_tvalid;
      if (done) break;
      if (fg_->cycle > limit) {
        ADD_FAILURE() << "no progress: " << seen_.size() << " of " << deps.size() << " frames";
        return;
      }
      cycle_step();
    }
    for (int i = 0; i < 64; ++i) cycle_step();
  }

  // The reference fed with the frames in the order, and at the cycles, sched_rx received them.
  void feed(RxRef& ref) const {
    for (size_t k : order_) ref.frame(seen_[k].bytes, seen_[k].present);
  }

 private:
  struct OutBeat {
    Beat beat;
    uint64_t earliest = 0;
    size_t frame = 0, offset = 0;
  };

  void edge() {
    VF& f = *fg_;
    f.clk = 1;
    f.tx_clk = 1;
    f.eval();
    f.clk = 0;
    f.tx_clk = 0;
    f.eval();
  }

  void cycle_step() {
    VF& f = *fg_;
    f.s_valid = next_ < deps_->size();
    if (f.s_valid) fg_test::drive_descriptor(f, (*deps_)[next_]);
    f.m_axis_tready = rng_() % 100 < o_.ready_pct;
    f.eval();
    const uint64_t c = f.cycle;
    if (o_.rate > 0) credit_ = std::min(credit_ + o_.rate, static_cast<double>(kLanes));
    const Beat* out = nullptr;
    if (!q_.empty() && q_.front().earliest <= c && (o_.rate == 0 || credit_ >= q_.front().beat.keep)) out = &q_.front().beat;
    if (rx_.step(out, c + off_)) {
      const OutBeat& ob = q_.front();
      Seen& s = seen_[ob.frame];
      if (ob.offset == 0) {
        s.present = c + off_;
        s.forwarded = true;
        order_.push_back(ob.frame);
      }
      s.bytes.insert(s.bytes.end(), ob.beat.bytes.begin(), ob.beat.bytes.begin() + ob.beat.keep);
      if (o_.rate > 0) credit_ -= ob.beat.keep;
      q_.pop_front();
    }
    if (f.s_valid && f.s_ready) ++next_;
    if (f.m_axis_tvalid && f.m_axis_tready) take(c);
    edge();
  }

  // A beat taken from the generator in cycle c.
  void take(uint64_t c) {
    VF& f = *fg_;
    if (!in_frame_) {
      in_frame_ = true;
      cur_ = seen_.size();
      seen_.emplace_back();
      Seen& s = seen_.back();
      s.depart = c;
      const bool pair = o_.reorder >= 0 && (cur_ == static_cast<size_t>(o_.reorder) || cur_ == static_cast<size_t>(o_.reorder) + 1);
      s.dropped = !pair && cur_ < o_.protect_from && ((o_.drop_every != 0 && (cur_ + 1) % o_.drop_every == 0) ||
                                            (o_.drop_per_1000 != 0 && rng_() % 1000 < o_.drop_per_1000));
      cur_bytes_.clear();
    }
    OutBeat ob;
    ob.frame = cur_;
    ob.offset = cur_bytes_.size();
    ob.earliest = c + o_.latency;
    for (int i = 0; i < kLanes; ++i) {
      if (fg_test::bit_at(f.m_axis_tkeep, i)) ob.beat.bytes[static_cast<size_t>(ob.beat.keep++)] = fg_test::byte_at(f.m_axis_tdata, i);
    }
    ob.beat.last = f.m_axis_tlast;
    cur_bytes_.insert(cur_bytes_.end(), ob.beat.bytes.begin(), ob.beat.bytes.begin() + ob.beat.keep);
    Seen& s = seen_[cur_];
    if (!s.dropped) {
      const bool held = static_cast<int64_t>(cur_) == o_.reorder;
      (held ? hold_ : q_).push_back(ob);
      // CE: once the IPv4 header is complete, mark a copy and patch the bytes that changed (TOS and
      // checksum) in the beats still queued.
      if (o_.ce.count(cur_) != 0 && ob.offset < 34 && cur_bytes_.size() >= 34) {
        std::vector<uint8_t> h(cur_bytes_.begin(), cur_bytes_.begin() + 34);
        if (dp::mark_ce(h)) {
          s.marked = true;
          for (size_t p : {size_t{15}, size_t{24}, size_t{25}}) patch(p, h[p]);
        }
      }
      if (ob.beat.last && o_.reorder >= 0 && cur_ == static_cast<size_t>(o_.reorder) + 1) {
        for (OutBeat& hb : hold_) {
          hb.earliest = std::max(hb.earliest, ob.earliest + 1);
          q_.push_back(hb);
        }
        hold_.clear();
      }
    }
    if (ob.beat.last) in_frame_ = false;
  }

  void patch(size_t p, uint8_t v) {
    for (auto* d : {&q_, &hold_}) {
      for (OutBeat& b : *d) {
        if (b.frame == cur_ && b.offset <= p && p < b.offset + static_cast<size_t>(b.beat.keep)) {
          b.beat.bytes[p - b.offset] = v;
          return;
        }
      }
    }
    ADD_FAILURE() << "frame " << cur_ << ": byte " << p << " left before it could be marked (latency too short)";
  }

  RxBench<VR, kDataW> rx_;
  std::unique_ptr<VF> fg_;
  DutOptions o_;
  uint64_t off_;
  std::mt19937_64 rng_;
  const std::vector<Departure>* deps_ = nullptr;
  size_t next_ = 0, cur_ = 0;
  bool in_frame_ = false;
  std::vector<uint8_t> cur_bytes_;
  std::deque<OutBeat> q_, hold_;
  double credit_ = 0;
  std::vector<Seen> seen_;
  std::vector<size_t> order_;
};

}  // namespace fabemu::rx_test
