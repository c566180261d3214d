// sched_frame_gen under Verilator: every frame's first beat is presented exactly at its scheduled cycle
// when the stream is free (never before it, and as soon as the stream frees up when it is not), late
// frames are counted, and every frame collected from the AXI4-Stream is byte-identical to what the DPDK
// backend's encode() writes for the same fields and decodes as ours with the right fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "Vsched_frame_gen.h"
#include "host/wire/checksum.h"
#include "host/wire/frame.h"
#include "verilated.h"

namespace dp = fabemu::host::dpdk;

namespace {

constexpr uint16_t kPortLo = 47000;
constexpr uint16_t kPortHi = 47015;

struct Departure {
  uint64_t sched = 0;
  dp::FrameSpec spec;
};

uint64_t mac_bits(const dp::MacAddr& m) {
  uint64_t v = 0;
  for (uint8_t b : m) v = v << 8 | b;
  return v;
}

uint64_t frame_beats(const Departure& d) {
  return (dp::frame_bytes(dp::WireMode::kFabemu, d.spec.payload_bytes) + 7) / 8;
}

// Random departures in fabemu mode: data packets (payload 0..1500, some jumbo) and some ACKs.
dp::FrameSpec random_spec(std::mt19937_64& rng) {
  dp::FrameSpec s;
  s.mode = dp::WireMode::kFabemu;
  for (auto& b : s.src.mac) b = static_cast<uint8_t>(rng());
  for (auto& b : s.dst.mac) b = static_cast<uint8_t>(rng());
  s.src.ip = static_cast<uint32_t>(rng());
  s.dst.ip = static_cast<uint32_t>(rng());
  s.src.port = static_cast<uint16_t>(rng());
  s.dst.port = static_cast<uint16_t>(kPortLo + rng() % (kPortHi - kPortLo + 1));
  s.ip_id = static_cast<uint16_t>(rng());
  s.dscp = static_cast<uint8_t>(rng() & 0x3F);
  dp::FabemuHeader& h = s.hdr;
  h.src_rank = static_cast<uint32_t>(rng());
  h.dst_rank = static_cast<uint32_t>(rng());
  h.message_id = rng();
  h.tx_time_ps = rng();
  h.flags = rng() % 8 == 0 ? dp::kFlagRetransmit : 0;
  h.count = 1 + static_cast<uint32_t>(rng() % 1000);
  const unsigned pick = static_cast<unsigned>(rng() % 20);
  if (pick == 0) {
    h.kind = dp::PacketKind::kAck;
    h.seq = static_cast<uint32_t>(rng() % (uint64_t{h.count} + 1));
    h.message_length = rng() >> 20;
    h.offset = 0;
    s.payload_bytes = 0;
  } else {
    h.kind = dp::PacketKind::kData;
    s.payload_bytes = pick == 1   ? 0
                      : pick == 2 ? static_cast<uint32_t>(8000 + rng() % 1001)
                                  : static_cast<uint32_t>(rng() % 1501);
    h.seq = static_cast<uint32_t>(rng() % h.count);
    h.offset = rng() >> 24;
    h.message_length = h.offset + s.payload_bytes + (rng() >> 30);
  }
  return s;
}

struct Observed {
  uint64_t first_cycle = 0;  // cycle the first beat was presented (tvalid)
  uint64_t end_cycle = 0;    // cycle the last beat was transferred
  std::vector<uint8_t> bytes;
};

class FrameGenBench {
 public:
  FrameGenBench() : top_(std::make_unique<Vsched_frame_gen>(&ctx_, "fg")) {
    top_->rst = 1;
    top_->s_valid = 0;
    top_->m_axis_tready = 1;
    for (int i = 0; i < 3; ++i) {
      top_->clk = 0;
      top_->eval();
      top_->clk = 1;
      top_->eval();
    }
    top_->rst = 0;
  }
  ~FrameGenBench() { top_->final(); }
  Vsched_frame_gen& top() { return *top_; }
  // Cycle at which each descriptor was accepted (s_valid && s_ready), over every run().
  const std::vector<uint64_t>& accepted() const { return accepted_; }

  // Offers `deps` in order (s_valid with probability valid_pct/100) with tready high with probability
  // ready_pct/100; returns the frames as they left, with the cycles they left at.
  std::vector<Observed> run(const std::vector<Departure>& deps, unsigned valid_pct, unsigned ready_pct, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Vsched_frame_gen& t = *top_;
    std::vector<Observed> out;
    std::size_t next = 0;
    bool in_frame = false;
    const uint64_t limit = deps.empty() ? 100 : deps.back().sched + 100 * deps.size() * 1200;
    while (out.size() < deps.size() || in_frame) {
      t.clk = 0;
      t.s_valid = next < deps.size() && rng() % 100 < valid_pct;
      if (next < deps.size()) drive(deps[next]);
      t.m_axis_tready = rng() % 100 < ready_pct;
      t.eval();
      const uint64_t cycle = t.cycle;
      if (cycle > limit) {
        ADD_FAILURE() << "no progress: " << out.size() << " of " << deps.size() << " frames";
        break;
      }
      if (t.m_axis_tvalid) {
        if (!in_frame) {
          in_frame = true;
          out.emplace_back();
          out.back().first_cycle = cycle;
        }
        if (t.m_axis_tready) {
          Observed& o = out.back();
          const uint64_t data = t.m_axis_tdata;
          const unsigned keep = t.m_axis_tkeep;
          EXPECT_TRUE(t.m_axis_tlast || keep == 0xFF) << "partial beat before tlast";
          for (int i = 0; i < 8; ++i) {
            if (keep >> i & 1) o.bytes.push_back(static_cast<uint8_t>(data >> (8 * i)));
          }
          if (t.m_axis_tlast) {
            o.end_cycle = cycle;
            in_frame = false;
          }
        }
      } else {
        EXPECT_FALSE(in_frame) << "tvalid dropped inside a frame at cycle " << cycle;
      }
      if (t.s_valid && t.s_ready) {
        accepted_.push_back(cycle);
        ++next;
      }
      t.clk = 1;
      t.eval();
    }
    return out;
  }

 private:
  void drive(const Departure& d) {
    Vsched_frame_gen& t = *top_;
    const dp::FrameSpec& s = d.spec;
    t.s_sched = d.sched;
    t.s_dst_mac = mac_bits(s.dst.mac);
    t.s_src_mac = mac_bits(s.src.mac);
    t.s_src_ip = s.src.ip;
    t.s_dst_ip = s.dst.ip;
    t.s_src_port = s.src.port;
    t.s_dst_port = s.dst.port;
    t.s_ip_id = s.ip_id;
    t.s_dscp = s.dscp;
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
    t.s_payload_bytes = static_cast<uint16_t>(s.payload_bytes);
  }

  VerilatedContext ctx_;
  std::unique_ptr<Vsched_frame_gen> top_;
  std::vector<uint64_t> accepted_;
};

// Every frame is the encoder's frame for the same fields and decodes as ours with those fields.
void check_frames(const std::vector<Departure>& deps, const std::vector<Observed>& got) {
  ASSERT_EQ(got.size(), deps.size());
  dp::DecodeRules rules;
  rules.port_lo = kPortLo;
  rules.port_hi = kPortHi;
  std::vector<uint8_t> want(70000);
  for (std::size_t i = 0; i < deps.size(); ++i) {
    SCOPED_TRACE(i);
    const dp::FrameSpec& s = deps[i].spec;
    const size_t n = dp::encode(s, want);
    ASSERT_GT(n, 0u);
    ASSERT_EQ(got[i].bytes.size(), n);
    ASSERT_TRUE(std::equal(got[i].bytes.begin(), got[i].bytes.end(), want.begin())) << "differs from encode()";
    dp::DecodedFrame f;
    ASSERT_EQ(dp::decode(got[i].bytes, rules, f), dp::Verdict::kOurs);
    EXPECT_EQ(dp::ones_complement_sum({got[i].bytes.data() + dp::kEthHeaderBytes, dp::kIpv4HeaderBytes}), 0xFFFF);
    EXPECT_EQ(f.src, s.src);
    EXPECT_EQ(f.dst, s.dst);
    EXPECT_EQ(f.ip_id, s.ip_id);
    EXPECT_EQ(f.dscp, s.dscp);
    EXPECT_EQ(f.hdr, s.hdr);
    EXPECT_EQ(f.payload_bytes, s.hdr.kind == dp::PacketKind::kData ? s.payload_bytes : 0u);
    EXPECT_TRUE(std::all_of(f.payload.begin(), f.payload.end(), [](uint8_t b) { return b == 0; }));
  }
}

}  // namespace

// Non-overlapping schedules (some exactly back to back) and tready always high: every first beat at
// exactly its scheduled cycle, none late.
TEST(FpgaRtlFrameGen, FirstBeatAtItsScheduledCycle) {
  std::mt19937_64 rng(51);
  std::vector<Departure> deps(1500);
  uint64_t sched = 20;
  for (Departure& d : deps) {
    d.spec = random_spec(rng);
    d.sched = sched;
    const unsigned r = static_cast<unsigned>(rng() % 10);
    sched += frame_beats(d) + (r < 4 ? 0 : r < 7 ? rng() % 4 : rng() % 300);
  }
  FrameGenBench b;
  const auto got = b.run(deps, 100, 100, 1);
  ASSERT_EQ(got.size(), deps.size());
  for (std::size_t i = 0; i < deps.size(); ++i) {
    ASSERT_EQ(got[i].first_cycle, deps[i].sched) << "frame " << i;
    ASSERT_EQ(got[i].end_cycle, deps[i].sched + frame_beats(deps[i]) - 1) << "frame " << i;
  }
  EXPECT_EQ(b.top().frames, deps.size());
  EXPECT_EQ(b.top().late_frames, 0u);
  check_frames(deps, got);
}

// Overlapping schedules (frames queue) and random tready: never before the scheduled cycle; a frame is
// presented at max(scheduled cycle, cycle after the previous frame's last beat); late ones are counted.
TEST(FpgaRtlFrameGen, QueuedFramesLeaveAsSoonAsPossibleUnderBackPressure) {
  std::mt19937_64 rng(52);
  std::vector<Departure> deps(1500);
  uint64_t sched = 20;
  for (Departure& d : deps) {
    d.spec = random_spec(rng);
    d.sched = sched;
    const unsigned r = static_cast<unsigned>(rng() % 10);
    sched += r < 3 ? 0 : r < 6 ? rng() % frame_beats(d) : r < 8 ? frame_beats(d) : rng() % 400;
  }
  FrameGenBench b;
  const auto got = b.run(deps, 100, 70, 2);
  ASSERT_EQ(got.size(), deps.size());
  uint64_t late = 0;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    ASSERT_GE(got[i].first_cycle, deps[i].sched) << "frame " << i << " left early";
    const uint64_t asap = i == 0 ? deps[i].sched : std::max(deps[i].sched, got[i - 1].end_cycle + 1);
    ASSERT_EQ(got[i].first_cycle, asap) << "frame " << i;
    late += got[i].first_cycle > deps[i].sched;
  }
  EXPECT_GT(late, deps.size() / 4);
  EXPECT_EQ(b.top().frames, deps.size());
  EXPECT_EQ(b.top().late_frames, late);
  check_frames(deps, got);
}

// Descriptors offered with gaps (some only after their cycle has passed) and random tready: never early,
// late ones counted, every frame still the encoder's.
TEST(FpgaRtlFrameGen, LateDescriptorsAndRandomValidReady) {
  std::mt19937_64 rng(53);
  std::vector<Departure> deps(800);
  uint64_t sched = 20;
  for (Departure& d : deps) {
    d.spec = random_spec(rng);
    d.sched = sched;
    sched += rng() % (2 * frame_beats(d));
  }
  FrameGenBench b;
  const auto got = b.run(deps, 10, 60, 3);
  ASSERT_EQ(got.size(), deps.size());
  uint64_t late = 0;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    ASSERT_GE(got[i].first_cycle, deps[i].sched) << "frame " << i << " left early";
    if (i > 0) {
      ASSERT_GT(got[i].first_cycle, got[i - 1].end_cycle);
    }
    late += got[i].first_cycle > deps[i].sched;
  }
  EXPECT_EQ(b.top().late_frames, late);
  check_frames(deps, got);
}

// The build latency: a descriptor accepted at cycle a can be presented at a + kLead at the earliest
// (documented in hw/sched/doc/sched_frame_gen.md); one scheduled exactly then is on time, one scheduled
// earlier (here: cycle 0, long past) leaves then and is counted late.
TEST(FpgaRtlFrameGen, LeadTimeFromDescriptorToFirstBeat) {
  constexpr uint64_t kLead = 5;
  std::mt19937_64 rng(54);
  FrameGenBench b;
  Departure past;
  past.spec = random_spec(rng);
  past.sched = 0;
  auto got = b.run({past}, 100, 100, 4);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(b.accepted().size(), 1u);
  EXPECT_EQ(got[0].first_cycle, b.accepted()[0] + kLead);
  EXPECT_EQ(b.top().late_frames, 1u);
  check_frames({past}, got);
  // The next descriptor is offered in the cycle after the last run's final beat.
  Departure exact;
  exact.spec = random_spec(rng);
  exact.sched = got[0].end_cycle + 1 + kLead;
  got = b.run({exact}, 100, 100, 5);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(b.accepted().size(), 2u);
  EXPECT_EQ(b.accepted()[1], exact.sched - kLead);
  EXPECT_EQ(got[0].first_cycle, exact.sched);
  EXPECT_EQ(b.top().late_frames, 1u);
  EXPECT_EQ(b.top().frames, 2u);
  check_frames({exact}, got);
}
