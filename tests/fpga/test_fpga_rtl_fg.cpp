// sched_fg (the line-rate frame generator: build pipeline in the core clock, async FIFO, pacing gate
// in the transmit clock) under Verilator with two unrelated clocks: every frame's first beat in exactly
// its scheduled transmit cycle when the stream is free, never before, as soon as possible under
// back-pressure with late frames counted; every frame (fabemu and RoCEv2 mode) byte-identical to
// host/wire's encode() and decoded as ours; throughput limits and departure precision at 95% of line
// rate, printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "Vsched_fg.h"
#include "Vsched_fg64.h"
#include "host/wire/checksum.h"
#include "tests/fpga/fg_bench.h"

namespace {

using namespace fabemu::fg_test;

using Bench512 = FgBench<Vsched_fg, 512>;
using Bench64 = FgBench<Vsched_fg64, 64>;

constexpr int kFifoDepth = 16;   // sched_fg's FIFO_AW = 4
constexpr int kBuildStages = 13; // sched_fg_build: descriptor accepted -> frame written to the FIFO

uint64_t beats(const dp::FrameSpec& s, int data_w) { return (frame_len(s) + data_w / 8 - 1) / (data_w / 8); }

// Every frame is the encoder's frame for the same fields and decodes as ours with those fields.
void check_frames(const std::vector<Departure>& deps, const std::vector<Observed>& got) {
  ASSERT_EQ(got.size(), deps.size());
  std::vector<uint8_t> want(70000);
  for (std::size_t i = 0; i < deps.size(); ++i) {
    SCOPED_TRACE(i);
    const dp::FrameSpec& s = deps[i].spec;
    const size_t n = dp::encode(s, want);
    ASSERT_GT(n, 0u);
    ASSERT_EQ(got[i].bytes.size(), n);
    ASSERT_TRUE(std::equal(got[i].bytes.begin(), got[i].bytes.end(), want.begin()))
        << "differs from encode() (" << (s.mode == dp::WireMode::kRoceV2 ? "RoCEv2" : "fabemu") << ", payload "
        << s.payload_bytes << ")";
    dp::DecodeRules rules;
    rules.mode = s.mode;
    rules.port_lo = kPortLo;
    rules.port_hi = kPortHi;
    dp::DecodedFrame f;
    ASSERT_EQ(dp::decode(got[i].bytes, rules, f), dp::Verdict::kOurs);
    EXPECT_EQ(dp::ones_complement_sum({got[i].bytes.data() + dp::kEthHeaderBytes, dp::kIpv4HeaderBytes}), 0xFFFF);
    EXPECT_EQ(f.src, s.src);
    EXPECT_EQ(f.dst, s.dst);
    EXPECT_EQ(f.ip_id, s.ip_id);
    EXPECT_EQ(f.dscp, s.dscp);
    EXPECT_EQ(f.ecn, s.ecn);
    EXPECT_EQ(f.hdr, s.hdr);
    if (s.mode == dp::WireMode::kRoceV2) {
      EXPECT_EQ(f.bth, s.bth);
    }
    EXPECT_EQ(f.payload_bytes, s.hdr.kind == dp::PacketKind::kData ? s.payload_bytes : 0u);
  }
}

// Schedules that never overlap (40% exactly back to back), tready always high.
std::vector<Departure> free_stream(std::mt19937_64& rng, std::size_t n, int data_w, uint64_t start) {
  std::vector<Departure> deps(n);
  uint64_t sched = start;
  for (Departure& d : deps) {
    d.spec = random_spec(rng);
    d.sched = sched;
    const unsigned r = static_cast<unsigned>(rng() % 10);
    sched += beats(d.spec, data_w) + (r < 4 ? 0 : r < 7 ? rng() % 4 : rng() % 300);
  }
  return deps;
}

template <class B>
void expect_exact(B& b, const std::vector<Departure>& deps, const std::vector<Observed>& got, int data_w) {
  ASSERT_EQ(got.size(), deps.size());
  for (std::size_t i = 0; i < deps.size(); ++i) {
    ASSERT_EQ(got[i].first_cycle, deps[i].sched) << "frame " << i;
    ASSERT_EQ(got[i].end_cycle, deps[i].sched + beats(deps[i].spec, data_w) - 1) << "frame " << i;
  }
  EXPECT_EQ(b.top().frames, deps.size());
  EXPECT_EQ(b.top().late_frames, 0u);
}

// Under back-pressure: never early, first beat at max(schedule, cycle after the previous frame's last
// beat), late frames counted exactly.
template <class B>
void expect_asap(B& b, const std::vector<Departure>& deps, const std::vector<Observed>& got) {
  ASSERT_EQ(got.size(), deps.size());
  uint64_t late = 0;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    ASSERT_GE(got[i].first_cycle, deps[i].sched) << "frame " << i << " left early";
    const uint64_t asap = i == 0 ? deps[i].sched : std::max(deps[i].sched, got[i - 1].end_cycle + 1);
    ASSERT_EQ(got[i].first_cycle, asap) << "frame " << i;
    late += got[i].first_cycle > deps[i].sched;
  }
  EXPECT_EQ(b.top().frames, deps.size());
  EXPECT_EQ(b.top().late_frames, late);
}

}  // namespace

TEST(FpgaRtlFg, FirstBeatAtItsScheduledCycle512) {
  std::mt19937_64 rng(61);
  const auto deps = free_stream(rng, 1500, 512, 200);
  Bench512 b;
  const auto got = b.run(deps, 100, 100, 1);
  expect_exact(b, deps, got, 512);
  check_frames(deps, got);
}

TEST(FpgaRtlFg, FirstBeatAtItsScheduledCycle64) {
  std::mt19937_64 rng(62);
  const auto deps = free_stream(rng, 400, 64, 200);
  Bench64 b;
  const auto got = b.run(deps, 100, 100, 2);
  expect_exact(b, deps, got, 64);
  check_frames(deps, got);
}

// Other clock pairs: a core clock faster than the transmit clock (500 MHz), and one just fast enough for
// back-to-back two-beat frames (200 MHz: one frame per 4999 ps, the stream takes one per 6206 ps).
TEST(FpgaRtlFg, FirstBeatAtItsScheduledCycleOtherClockRatios) {
  for (const uint64_t core_ps : {2000u, 4999u}) {
    SCOPED_TRACE(core_ps);
    std::mt19937_64 rng(70 + core_ps);
    const auto deps = free_stream(rng, 500, 512, 200);
    Bench512 b(core_ps, kTxPs);
    const auto got = b.run(deps, 100, 100, 9);
    expect_exact(b, deps, got, 512);
    check_frames(deps, got);
  }
}

// Frames up to the IPv4 limit (payload 65447 in fabemu mode, 65428 in RoCEv2 mode: total length 65535
// and 65532): the ICRC's x^(8n) ROMs over their whole range (n up to 65428: high byte 255), beat
// counts up to 1024 (512 bits) and 8192 (64 bits).
TEST(FpgaRtlFg, FramesUpToTheIpv4Limit) {
  std::mt19937_64 rng(72);
  for (const int width : {512, 64}) {
    SCOPED_TRACE(width);
    std::vector<Departure> deps(width == 512 ? 60 : 12);
    uint64_t sched = 200;
    for (std::size_t i = 0; i < deps.size(); ++i) {
      const bool roce = i % 2;
      const uint32_t limit = roce ? 65428 : 65447;
      const uint32_t payload = i < 2 ? limit : 9001 + static_cast<uint32_t>(rng() % (limit - 9000));
      deps[i].spec = random_spec(rng, roce ? dp::WireMode::kRoceV2 : dp::WireMode::kFabemu, payload);
      deps[i].sched = sched;
      sched += beats(deps[i].spec, width) + rng() % 3;
    }
    ASSERT_EQ(frame_len(deps[0].spec), 14u + 65535u);
    ASSERT_EQ(frame_len(deps[1].spec), 14u + 65532u);
    if (width == 512) {
      Bench512 b;
      const auto got = b.run(deps, 100, 100, 10);
      expect_exact(b, deps, got, 512);
      check_frames(deps, got);
    } else {
      Bench64 b;
      const auto got = b.run(deps, 100, 100, 11);
      expect_exact(b, deps, got, 64);
      check_frames(deps, got);
    }
  }
}

// Overlapping schedules (frames queue) and tready high 70% of the cycles.
TEST(FpgaRtlFg, QueuedFramesLeaveAsSoonAsPossibleUnderBackPressure) {
  std::mt19937_64 rng(63);
  std::vector<Departure> deps(1500);
  uint64_t sched = 200;
  for (Departure& d : deps) {
    d.spec = random_spec(rng);
    d.sched = sched;
    const uint64_t n = beats(d.spec, 512);
    const unsigned r = static_cast<unsigned>(rng() % 10);
    sched += r < 3 ? 0 : r < 6 ? rng() % n : r < 8 ? n : rng() % 100;
  }
  Bench512 b;
  const auto got = b.run(deps, 100, 70, 3);
  expect_asap(b, deps, got);
  EXPECT_GT(b.top().late_frames, deps.size() / 4);
  check_frames(deps, got);
}

// Descriptors offered 10% of the core cycles (many after their schedule), tready 60%.
TEST(FpgaRtlFg, LateDescriptorsAndRandomValidReady) {
  std::mt19937_64 rng(64);
  std::vector<Departure> deps(600);
  uint64_t sched = 50;
  for (Departure& d : deps) {
    d.spec = random_spec(rng);
    d.sched = sched;
    sched += rng() % (2 * beats(d.spec, 512));
  }
  Bench512 b;
  const auto got = b.run(deps, 10, 60, 4);
  expect_asap(b, deps, got);
  check_frames(deps, got);
}

// The limits: descriptor intake one per core cycle until the FIFO and the build pipeline are full
// (16 + 13 descriptors back to back), and minimum-size frames (2 beats of 512 bits) back to back at
// one frame per 2 transmit cycles, every one on time.
TEST(FpgaRtlFg, ThroughputLimits) {
  std::mt19937_64 rng(65);
  std::vector<Departure> deps(3000);
  const uint64_t start = 2000;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    // At most 128 bytes: fabemu 102 + 0..26, RoCEv2 118 + 0..8 (and pad).
    const bool roce = i % 2;
    deps[i].spec = random_spec(rng, roce ? dp::WireMode::kRoceV2 : dp::WireMode::kFabemu,
                               static_cast<uint32_t>(rng() % (roce ? 9 : 27)));
    ASSERT_EQ(beats(deps[i].spec, 512), 2u);
    deps[i].sched = start + 2 * i;
  }
  Bench512 b;
  const auto got = b.run(deps, 100, 100, 5);
  expect_exact(b, deps, got, 512);
  check_frames(deps, got);
  // Intake: the first descriptors are taken in consecutive core cycles until s_ready falls.
  const auto& acc = b.accepted_core();
  std::size_t run = 1;
  while (run < acc.size() && acc[run] == acc[run - 1] + 1) ++run;
  EXPECT_GE(run, static_cast<std::size_t>(kFifoDepth + kBuildStages - 1));
  const double frames_per_cycle = static_cast<double>(deps.size()) /
                                  static_cast<double>(got.back().end_cycle + 1 - got.front().first_cycle);
  EXPECT_EQ(got.back().end_cycle + 1 - got.front().first_cycle, 2 * deps.size());
  std::printf("[ figures  ] intake: %zu descriptors in %zu consecutive core cycles (1 per cycle) before the FIFO "
              "filled; frames: %zu two-beat frames back to back at %.3f frames per transmit cycle, 0 late\n",
              run, run, deps.size(), frames_per_cycle);
}

namespace {

// A 64 B / 1500 B / 9000 B-class mix in both modes (smallest frames: 102 B fabemu, 118 B RoCEv2).
dp::FrameSpec mix_spec(std::mt19937_64& rng) {
  const auto mode = rng() % 2 ? dp::WireMode::kRoceV2 : dp::WireMode::kFabemu;
  const unsigned r = static_cast<unsigned>(rng() % 10);
  const uint32_t payload = r < 5 ? 0 : r < 9 ? 1500 - 102 - static_cast<uint32_t>(rng() % 17) : 9000 - 120;
  return random_spec(rng, mode, payload);
}

}  // namespace

// Departures at 95% of line rate, two ways: (a) 95% of the stream's beats (one beat per transmit
// cycle), (b) 95% of 100 GbE (frame + FCS + preamble + gap, 24 bytes, at 100 Gb/s, on a 322.27 MHz
// clock as kTxPs). Every schedule leaves the stream free, so every frame must leave exactly on time.
TEST(FpgaRtlFg, DeparturePrecisionAt95PercentOfLineRate) {
  for (int kind = 0; kind < 2; ++kind) {
    SCOPED_TRACE(kind == 0 ? "95% of the stream's beats" : "95% of 100 GbE");
    std::mt19937_64 rng(66 + kind);
    std::vector<Departure> deps(2000);
    uint64_t sched = 2000, busy = 0;
    double credit = 0;
    uint64_t wire_num = 0;  // kind 1: departure time in units of 1/19 ps
    for (Departure& d : deps) {
      d.spec = mix_spec(rng);
      const uint64_t n = beats(d.spec, 512);
      busy += n;
      if (kind == 0) {
        d.sched = sched;
        credit += static_cast<double>(n) * (1.0 / 0.95 - 1.0);
        const auto gap = static_cast<uint64_t>(credit);
        credit -= static_cast<double>(gap);
        sched += n + gap;
      } else {
        // (L + 24) bytes * 8 bit / (0.95 * 100 Gb/s) = (L + 24) * 1600 / 19 ps.
        d.sched = 2000 + (wire_num / 19 + kTxPs - 1) / kTxPs;
        wire_num += (frame_len(d.spec) + 24) * 1600;
      }
    }
    for (std::size_t i = 1; i < deps.size(); ++i) {
      ASSERT_GE(deps[i].sched, deps[i - 1].sched + beats(deps[i - 1].spec, 512)) << "schedule overlaps";
    }
    Bench512 b;
    const auto got = b.run(deps, 100, 100, 7);
    uint64_t worst = 0;
    for (std::size_t i = 0; i < deps.size(); ++i) {
      const uint64_t dev = got[i].first_cycle > deps[i].sched ? got[i].first_cycle - deps[i].sched
                                                               : deps[i].sched - got[i].first_cycle;
      worst = std::max(worst, dev);
    }
    expect_exact(b, deps, got, 512);
    check_frames(deps, got);
    const uint64_t span = got.back().end_cycle + 1 - got.front().first_cycle;
    std::printf("[ figures  ] %s: %zu frames (64/1500/9000 B classes, both modes), beats busy %.1f%% of %llu "
                "transmit cycles, worst departure error %llu cycles, late %u\n",
                kind == 0 ? "95% of stream beats" : "95% of 100 GbE", deps.size(),
                100.0 * static_cast<double>(busy) / static_cast<double>(span), static_cast<unsigned long long>(span),
                static_cast<unsigned long long>(worst), static_cast<unsigned>(b.top().late_frames));
  }
}

// The lead time: a descriptor whose cycle has passed leaves as soon as it is built and crossed, and is
// counted late: written to the FIFO 13 core cycles after its acceptance, then 4 to 5 transmit cycles
// (the first transmit edge after the write, two synchronizer flops, the empty flag, the pending slot,
// the start edge). One scheduled at the first transmit cycle at least 13 core + 5 transmit cycles after
// its acceptance leaves exactly on time, whatever the phase of the two clocks.
TEST(FpgaRtlFg, LeadTimeFromDescriptorToFirstBeat) {
  std::mt19937_64 rng(68);
  Bench512 b;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < 40; ++i) {
    Departure past;
    past.spec = random_spec(rng);
    past.sched = 0;
    auto got = b.run({past}, 100, 100, 100 + static_cast<uint64_t>(i));
    ASSERT_EQ(got.size(), 1u);
    const uint64_t lead = got[0].first_ps - b.accepted_ps().back() - kBuildStages * kCorePs;
    EXPECT_GT(lead, 4 * kTxPs) << "iteration " << i;
    EXPECT_LE(lead, 5 * kTxPs) << "iteration " << i;
    lo = std::min(lo, lead);
    hi = std::max(hi, lead);
    // Transmit cycle c starts at the edge at t0 + c * kTxPs; the next descriptor is accepted at the
    // next core edge.
    const uint64_t t0 = got[0].first_ps - got[0].first_cycle * kTxPs;
    const uint64_t due = b.next_core_ps() + kBuildStages * kCorePs + 5 * kTxPs;
    Departure exact;
    exact.spec = random_spec(rng);
    exact.sched = (due - t0 + kTxPs - 1) / kTxPs;
    got = b.run({exact}, 100, 100, 200 + static_cast<uint64_t>(i));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].first_cycle, exact.sched) << "iteration " << i;
    check_frames({exact}, got);
  }
  EXPECT_EQ(b.top().late_frames, 40u);
  EXPECT_EQ(b.top().frames, 80u);
  std::printf("[ figures  ] lead: 13 core cycles + %.2f to %.2f transmit cycles from acceptance to the first beat "
              "of a late frame (40 phases)\n",
              static_cast<double>(lo) / kTxPs, static_cast<double>(hi) / kTxPs);
}
