// sched_rx (the card's receive path) under Verilator at 512 and 64 bits: frames from host/wire's
// encode() straight in (both modes, payloads 0/1/64/1500/9000 and random), corrupt frames counted by
// decode()'s reason, back-to-back minimum frames, counters and cycles past 2^32; and the loopback
// sched_fg -> stand-in device -> sched_rx on one clock: a device latency of L cycles measured as exactly
// L for every frame, injected drops, a reordered pair and ECN CE marks counted exactly. Every global
// counter, flow counter, arrival record and histogram bucket is compared with RxRef, a count made in
// C++ with decode() (tests/fpga/rx_bench.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "Vsched_fg.h"
#include "Vsched_fg64.h"
#include "Vsched_rx.h"
#include "Vsched_rx64.h"
#include "Vsched_rx_rmw.h"
#include "host/wire/checksum.h"
#include "tests/fpga/rx_bench.h"

namespace {

using namespace fabemu::rx_test;
using fabemu::emu::LogHistogram;
using fabemu::fg_test::random_spec;

using Rx512 = RxBench<Vsched_rx, 512>;
using Rx64 = RxBench<Vsched_rx64, 64>;

// 3103.37 ps per cycle (a 322.27 MHz MAC clock), a fraction in every bit pattern.
constexpr uint64_t kQ = (uint64_t{3103} << 32) + 0x5EB851EB;
constexpr uint64_t kPast32 = (uint64_t{1} << 32) - 3000;   // cycles cross 2^32 early in a test

dp::WireMode mode_of(bool roce) { return roce ? dp::WireMode::kRoceV2 : dp::WireMode::kFabemu; }

std::vector<uint8_t> encode(const dp::FrameSpec& s) {
  std::vector<uint8_t> f(70000);
  f.resize(dp::encode(s, f));
  EXPECT_GT(f.size(), 0u);
  return f;
}

// The frames of a message of `count` data frames of `payload` bytes from src to dst, seq 0..count-1.
std::vector<dp::FrameSpec> message(std::mt19937_64& rng, bool roce, uint32_t src, uint32_t dst, uint64_t id,
                                   uint32_t count, uint32_t payload) {
  std::vector<dp::FrameSpec> out;
  for (uint32_t i = 0; i < count; ++i) {
    dp::FrameSpec s = random_spec(rng, mode_of(roce), payload);
    s.hdr.kind = dp::PacketKind::kData;
    s.hdr.src_rank = src;
    s.hdr.dst_rank = dst;
    s.hdr.message_id = id;
    s.hdr.count = count;
    s.hdr.seq = i;
    s.hdr.message_length = uint64_t{count} * payload;
    s.hdr.offset = uint64_t{i} * payload;
    s.payload_bytes = payload;
    s.ecn = dp::Ecn::kEct0;
    out.push_back(s);
  }
  return out;
}

// A log-uniform latency in [0, 2^40) ps, for tx_time = arrival estimate - latency.
uint64_t random_latency(std::mt19937_64& rng) { return (rng() >> 24) >> (rng() % 40); }

// Traffic straight into sched_rx: messages on npus^2 flows with payloads from `sizes`, some frames
// reordered or missing, ACKs, ranks out of range, tx_times before and (a few) after arrival.
std::vector<std::vector<uint8_t>> mixed_traffic(std::mt19937_64& rng, const RxConfig& cfg, size_t messages,
                                               const std::vector<uint32_t>& sizes, uint64_t cycle0) {
  std::vector<dp::FrameSpec> specs;
  uint64_t id = 1000;
  for (size_t m = 0; m < messages; ++m) {
    const uint32_t src = static_cast<uint32_t>(rng() % cfg.npus), dst = static_cast<uint32_t>(rng() % cfg.npus);
    auto msg = message(rng, cfg.roce, m % 17 == 16 ? cfg.npus + 3 : src, dst, id++, 1 + static_cast<uint32_t>(rng() % 5),
                       sizes[rng() % sizes.size()]);
    if (msg.size() > 2 && rng() % 4 == 0) std::swap(msg[0], msg[1]);   // reordered
    if (msg.size() > 2 && rng() % 4 == 0) msg.erase(msg.begin() + 1);  // lost
    specs.insert(specs.end(), msg.begin(), msg.end());
    if (rng() % 6 == 0) specs.push_back(random_spec(rng, mode_of(cfg.roce), 0));   // an ACK one time in 20
  }
  std::vector<std::vector<uint8_t>> frames;
  for (dp::FrameSpec& s : specs) {
    if (!cfg.roce) s.dst.port = static_cast<uint16_t>(cfg.port_lo + rng() % (cfg.port_hi - cfg.port_lo + 1));
    const uint64_t est = arrival_ps(cycle0, cfg.q32);
    s.hdr.tx_time_ps = rng() % 50 == 0 ? est + (uint64_t{1} << 40) : est - random_latency(rng);
    if (rng() % 3 == 0) s.ecn = dp::Ecn::kCe;
    frames.push_back(encode(s));
  }
  return frames;
}

template <class B>
void run_direct(B& b, const RxConfig& cfg, const std::vector<std::vector<uint8_t>>& frames, unsigned valid_pct) {
  RxRef ref(cfg);
  const std::vector<uint64_t> first = b.send(frames, valid_pct, 7);
  ASSERT_EQ(first.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) ref.frame(frames[i], first[i]);
  b.idle(60);
  EXPECT_EQ(ref.g[0] + ref.g[1], ref.g[kFramesAll]) << "only ours and truncated expected here";
  expect_equal(b, ref, uint32_t{cfg.npus} * cfg.npus + 2);
}

// Both modes, payloads 0, 1, 64, 1500, 9000 (and two others at 512 bits), random tvalid gaps, cycles
// from 2^32 - 3000.
template <class B>
void encoded_frames(size_t messages, const std::vector<uint32_t>& sizes, unsigned valid_pct, uint64_t seed) {
  for (const bool roce : {false, true}) {
    SCOPED_TRACE(roce ? "RoCEv2" : "fabemu");
    RxConfig cfg;
    cfg.roce = roce;
    cfg.q32 = kQ;
    std::mt19937_64 rng(seed + roce);
    B b(cfg, kPast32);
    run_direct(b, cfg, mixed_traffic(rng, cfg, messages, sizes, kPast32), valid_pct);
    EXPECT_GT(b.cycle(), uint64_t{1} << 32);
  }
}

}  // namespace

TEST(FpgaRtlRx, EncodedFramesCountedExactly512) { encoded_frames<Rx512>(250, {0, 1, 64, 1500, 9000, 333, 4097}, 70, 11); }

TEST(FpgaRtlRx, EncodedFramesCountedExactly64) { encoded_frames<Rx64>(60, {0, 1, 64, 1500, 9000}, 80, 13); }

namespace {

// cfg_flow_seq (sched_hil's frames): each flow's frames numbered in departure order in the IPv4 id, its
// messages in any id order (here a random permutation per flow), flows interleaved; some frames dropped
// (never a flow's last), some adjacent pairs of a flow swapped. Flow 0 carries 70,000 one-frame messages, so
// that its numbers wrap past 2^16. Every flow's lost is its drops and its reordered its swaps, exactly; the
// RTL equals the reference; every message without a drop completes.
template <class B>
void flow_sequence(uint64_t seed, uint32_t big) {
  RxConfig cfg;
  cfg.npus = 3;
  cfg.q32 = kQ;
  cfg.flow_seq = true;
  std::mt19937_64 rng(seed);
  struct Flow {
    std::vector<std::vector<uint8_t>> frames;  // in arrival order
    uint64_t drops = 0, swaps = 0, complete = 0;
  };
  std::vector<Flow> flows(9);
  uint64_t messages = 0;
  for (uint32_t f = 0; f < 9; ++f) {
    const uint32_t n_msgs = f == 0 ? big : 40;
    std::vector<uint64_t> ids(n_msgs);
    for (uint32_t i = 0; i < n_msgs; ++i) ids[i] = 5000 + 100 * f + i;
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<dp::FrameSpec> specs;
    std::vector<std::size_t> first_of;  // each message's first frame in specs
    for (const uint64_t id : ids) {
      first_of.push_back(specs.size());
      auto m = message(rng, false, f / 3, f % 3, id, f == 0 ? 1 : 1 + static_cast<uint32_t>(rng() % 5), f == 0 ? 0 : 64);
      specs.insert(specs.end(), m.begin(), m.end());
    }
    messages += n_msgs;
    for (std::size_t k = 0; k < specs.size(); ++k) {
      specs[k].ip_id = static_cast<uint16_t>(k);
      specs[k].dst.port = cfg.port_lo;
      specs[k].hdr.tx_time_ps = arrival_ps(kPast32, cfg.q32) - random_latency(rng);
    }
    // Drops (not the last frame), then swaps of adjacent survivors.
    std::vector<bool> dropped(specs.size(), false);
    for (std::size_t k = 0; k + 1 < specs.size(); ++k) {
      if (f != 0 && rng() % 9 == 0) dropped[k] = true;
    }
    std::vector<dp::FrameSpec> kept;
    for (std::size_t k = 0; k < specs.size(); ++k) {
      if (dropped[k]) {
        ++flows[f].drops;
      } else {
        kept.push_back(specs[k]);
      }
    }
    // Flow 0: one-frame messages swapped (the later message arrives first and completes; the earlier one's
    // frame then comes behind, of another message than the flow's current one: reordered, and its message
    // never completes). The others: pairs inside a message (it still completes).
    uint64_t orphaned = 0;
    for (std::size_t k = 0; k + 1 < kept.size(); ++k) {
      const bool same = kept[k].hdr.message_id == kept[k + 1].hdr.message_id;
      if ((f == 0 && k % 37 == 0) || (f != 0 && same && rng() % 5 == 0)) {
        std::swap(kept[k], kept[k + 1]);
        ++flows[f].swaps;
        orphaned += f == 0;
        ++k;
      }
    }
    // A message completes when none of its frames was dropped (and it was not orphaned).
    for (std::size_t i = 0; i < first_of.size(); ++i) {
      const std::size_t end = i + 1 < first_of.size() ? first_of[i + 1] : specs.size();
      bool whole = true;
      for (std::size_t k = first_of[i]; k < end; ++k) whole = whole && !dropped[k];
      flows[f].complete += whole;
    }
    flows[f].complete -= orphaned;
    for (const dp::FrameSpec& s : kept) flows[f].frames.push_back(encode(s));
  }
  // Interleave the flows, each in its own order.
  std::vector<std::vector<uint8_t>> frames;
  std::vector<std::size_t> at(9, 0);
  for (;;) {
    std::vector<uint32_t> left;
    for (uint32_t f = 0; f < 9; ++f) {
      if (at[f] < flows[f].frames.size()) left.push_back(f);
    }
    if (left.empty()) break;
    const uint32_t f = left[rng() % left.size()];
    frames.push_back(std::move(flows[f].frames[at[f]++]));
  }
  B b(cfg, kPast32);
  RxRef ref(cfg);
  const std::vector<uint64_t> first = b.send(frames, 90, seed);
  ASSERT_EQ(first.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) ref.frame(frames[i], first[i]);
  b.idle(60);
  expect_equal(b, ref, 9);
  uint64_t complete = 0;
  for (uint32_t f = 0; f < 9; ++f) {
    const FlowCounters c = b.read_flow(f);
    EXPECT_EQ(c.lost, flows[f].drops) << "flow " << f;
    EXPECT_EQ(c.reordered, flows[f].swaps) << "flow " << f;
    complete += flows[f].complete;
  }
  EXPECT_GT(flows[0].swaps, 10u);
  EXPECT_EQ(b.read_global(kRecords) + b.read_global(kRecordsDropped), complete);
  EXPECT_LT(complete, messages);
}

}  // namespace

TEST(FpgaRtlRx, FlowSequenceCountsDropsAndSwapsWhateverTheMessageIds512) { flow_sequence<Rx512>(21, 70'000); }

TEST(FpgaRtlRx, FlowSequenceCountsDropsAndSwapsWhateverTheMessageIds64) { flow_sequence<Rx64>(22, 400); }

namespace {

void fix_ip_checksum(std::vector<uint8_t>& f) {
  f[24] = 0;
  f[25] = 0;
  const uint16_t c = static_cast<uint16_t>(~dp::ones_complement_sum({f.data() + 14, 20}));
  f[24] = static_cast<uint8_t>(c >> 8);
  f[25] = static_cast<uint8_t>(c);
}

// The UDP checksum recomputed after a change, so that the change is what decode() finds.
void fix_udp_checksum(std::vector<uint8_t>& f) {
  const auto be16 = [&](size_t i) { return static_cast<uint32_t>(f[i] << 8 | f[i + 1]); };
  const size_t len = be16(38);
  f[40] = 0;
  f[41] = 0;
  const uint32_t pseudo = be16(26) + be16(28) + be16(30) + be16(32) + 17 + static_cast<uint32_t>(len);
  uint16_t c = static_cast<uint16_t>(~dp::ones_complement_sum({f.data() + 34, len}, pseudo));
  if (c == 0) c = 0xFFFF;
  f[40] = static_cast<uint8_t>(c >> 8);
  f[41] = static_cast<uint8_t>(c);
}

// Frames that are not ours for every reason sched_rx checks, each made from a good frame and then
// classified by decode() (the reference counts decode()'s verdict, and the test checks every reason
// was made).
std::vector<std::vector<uint8_t>> corrupt_frames(std::mt19937_64& rng, const RxConfig& cfg, std::set<dp::Verdict>& made) {
  std::vector<std::vector<uint8_t>> out;
  const size_t fh = cfg.roce ? 54 : 42;   // the fabemu header's offset
  RxRef probe(cfg);
  for (int round = 0; round < 6; ++round) {
    for (int kind = 0; kind < 20; ++kind) {
      auto msg = message(rng, cfg.roce, 1, 2, 77 + static_cast<uint64_t>(round), 3, static_cast<uint32_t>(rng() % 300));
      dp::FrameSpec& s = msg[1];
      if (!cfg.roce) s.dst.port = cfg.port_lo;
      std::vector<uint8_t> f = encode(s);
      switch (kind) {
        case 0: f.resize(1 + rng() % 13); break;                                  // runt: < 14
        case 1: f[12] = 0x86; f[13] = 0xDD; break;                                 // IPv6 EtherType
        case 2: f.resize(14 + rng() % 20); break;                                  // < 34
        case 3: f[14] = 0x46; break;                                               // IHL 6
        case 4: f[20] |= 0x20; fix_ip_checksum(f); break;                          // more fragments
        case 5: f.resize(f.size() - 1 - rng() % 40); break;                       // shorter than its IP length
        case 6: f[26] ^= 0x10; break;                                              // IPv4 checksum
        case 7: f[23] = 6; fix_ip_checksum(f); break;                              // TCP
        case 8: f[38] ^= 0x01; break;                                              // UDP length != IP length - 20
        case 9: f[37] ^= 0x40; fix_udp_checksum(f); break;                         // destination port
        case 10: f[fh + 1] ^= 0x01; fix_udp_checksum(f); break;                    // magic
        case 11: f[fh + 4] = 2; fix_udp_checksum(f); break;                        // version
        case 12: f[fh + 20] ^= 0x80; fix_udp_checksum(f); break;                   // a field under the CRC
        case 13: {                                                                 // seq >= count, CRC right
          s.hdr.seq = s.hdr.count;
          f = encode(s);
          break;
        }
        case 14: {                                                                 // payload beyond the message
          s.hdr.offset = s.hdr.message_length;
          if (s.payload_bytes == 0) s.hdr.kind = static_cast<dp::PacketKind>(9);   // unknown kind then
          f = encode(s);
          break;
        }
        case 15:                                                                   // trailing bytes: still ours
          f.resize(f.size() + 1 + rng() % 70, 0xA5);
          break;
        case 16:                                                                   // RoCEv2: TVer / opcode
          if (cfg.roce && round % 2 == 0) f[42] = 0x64;
          else if (cfg.roce) f[43] |= 0x01;
          else f[fh + 8] ^= 1;
          fix_udp_checksum(f);
          break;
        case 17:                                                                   // RoCEv2: pad past the length
          if (cfg.roce) {
            s.payload_bytes = 0;
            s.hdr.message_length = 0;
            s.hdr.offset = 0;
            f = encode(s);
            f[43] = static_cast<uint8_t>((f[43] & 0xCF) | 0x30);
          } else {
            f[fh + 6] ^= 0x40;
          }
          fix_udp_checksum(f);
          break;
        case 18:                                                                   // a byte the UDP checksum covers
          f[34 + rng() % (f.size() - 34)] ^= static_cast<uint8_t>(1 + rng() % 255);
          break;
        case 19:                                                                   // no UDP checksum (0)
          f[40] = 0;
          f[41] = 0;
          break;
      }
      made.insert(probe.frame(f, 0));
      out.push_back(std::move(f));
      // Good frames between the bad ones keep the flow's state moving.
      out.push_back(encode(msg[2]));
    }
  }
  return out;
}

template <class B>
void run_corrupt(bool roce, uint64_t seed) {
  RxConfig cfg;
  cfg.roce = roce;
  cfg.q32 = kQ;
  std::mt19937_64 rng(seed);
  std::set<dp::Verdict> made;
  const auto frames = corrupt_frames(rng, cfg, made);
  std::set<dp::Verdict> want = {dp::Verdict::kOurs,        dp::Verdict::kTruncated,    dp::Verdict::kNotIpv4,
                                dp::Verdict::kBadIpHeader, dp::Verdict::kBadIpChecksum, dp::Verdict::kNotUdp,
                                dp::Verdict::kBadUdpChecksum,
                                dp::Verdict::kWrongPort,   dp::Verdict::kBadMagic,      dp::Verdict::kBadVersion,
                                dp::Verdict::kBadHeaderCrc, dp::Verdict::kBadFields};
  if (roce) want.insert(dp::Verdict::kBadBth);
  EXPECT_EQ(made, want);
  B b(cfg, 5000);
  RxRef ref(cfg);
  const auto first = b.send(frames, 75, 3);
  for (size_t i = 0; i < frames.size(); ++i) ref.frame(frames[i], first[i]);
  b.idle(60);
  expect_equal(b, ref, 64);
}

}  // namespace

TEST(FpgaRtlRx, CorruptFramesCountedByReason) {
  run_corrupt<Rx512>(false, 21);
  run_corrupt<Rx512>(true, 22);
  run_corrupt<Rx64>(false, 23);
  run_corrupt<Rx64>(true, 24);
}

// The limits: two-beat frames (102..128 bytes) back to back at 512 bits, one frame per two cycles, on one
// flow (every update forwarded from the one before) and alternating two flows; and one-beat runts
// back to back (one frame per cycle). Nothing is lost; every count exact.
TEST(FpgaRtlRx, BackToBackMinimumFrames512) {
  for (const bool roce : {false, true}) {
    SCOPED_TRACE(roce ? "RoCEv2" : "fabemu");
    RxConfig cfg;
    cfg.roce = roce;
    cfg.q32 = kQ;
    std::mt19937_64 rng(31);
    std::vector<std::vector<uint8_t>> frames;
    uint64_t id = 1;
    for (int m = 0; m < 120; ++m) {
      const uint32_t count = 1 + static_cast<uint32_t>(rng() % 12);
      for (const dp::FrameSpec& s0 : message(rng, roce, m % 3 == 0 ? 1 : 2, 3, id++, count,
                                             static_cast<uint32_t>(rng() % (roce ? 9 : 27)))) {
        dp::FrameSpec s = s0;
        if (!roce) s.dst.port = cfg.port_lo;
        s.hdr.tx_time_ps = arrival_ps(5000, kQ) - random_latency(rng);
        frames.push_back(encode(s));
        EXPECT_LE(frames.back().size(), 128u);
        if (rng() % 8 == 0) frames.push_back(std::vector<uint8_t>(60, 0x11));   // a one-beat runt
      }
    }
    Rx512 b(cfg, 5000);
    const uint64_t c0 = b.cycle();
    RxRef ref(cfg);
    const auto first = b.send(frames, 100, 1);
    for (size_t i = 1; i < first.size(); ++i) {
      ASSERT_EQ(first[i] - first[i - 1], (frames[i - 1].size() + 63) / 64) << "frame " << i << " not back to back";
    }
    for (size_t i = 0; i < frames.size(); ++i) ref.frame(frames[i], first[i]);
    b.idle(60);
    EXPECT_GT(frames.size(), 500u);
    EXPECT_LT(b.cycle() - c0, 2 * frames.size() + 100);
    expect_equal(b, ref, 64);
  }
}

// Counters preset near 2^32 (and a histogram bucket near 2^32) by the host port pass it exactly; cycles
// and arrival times past 2^32 (cycles start at 2^32 - 3000; with 1 ps per cycle the arrival time in ps
// crosses 2^32 too).
TEST(FpgaRtlRx, CountersAndCyclesPast2To32) {
  RxConfig cfg;
  cfg.q32 = uint64_t{1} << 32;
  std::mt19937_64 rng(41);
  Rx512 b(cfg, kPast32);
  std::map<uint32_t, FlowCounters> preset;
  const uint64_t near = (uint64_t{1} << 32) - 3;
  for (uint32_t f = 0; f < 64; ++f) {
    preset[f] = FlowCounters{near, near - 1000, near - 5000, near, near - 1, near - 2};
    b.write_flow(f, preset[f]);
  }
  std::map<uint32_t, uint64_t> hist_preset;
  for (uint32_t bk = 0; bk < LogHistogram::kBuckets; bk += 7) {
    hist_preset[bk] = near;
    b.write_hist(bk, near);
  }
  std::vector<std::vector<uint8_t>> frames;
  uint64_t id = 1;
  for (int m = 0; m < 200; ++m) {
    for (dp::FrameSpec s : message(rng, false, static_cast<uint32_t>(rng() % 8), static_cast<uint32_t>(rng() % 8), id++,
                                   1 + static_cast<uint32_t>(rng() % 4), static_cast<uint32_t>(rng() % 2000))) {
      s.dst.port = cfg.port_lo;
      s.hdr.tx_time_ps = kPast32 - (rng() % 2 ? rng() % 300 : rng() % 100000);
      if (rng() % 2) s.ecn = dp::Ecn::kCe;
      if (m % 5 == 0 && s.hdr.seq == 0) continue;   // lost
      frames.push_back(encode(s));
    }
  }
  RxRef ref(cfg);
  const auto first = b.send(frames, 90, 2);
  for (size_t i = 0; i < frames.size(); ++i) ref.frame(frames[i], first[i]);
  b.idle(60);
  EXPECT_GT(first.back(), uint64_t{1} << 32);
  expect_equal(b, ref, 64, preset, hist_preset);
}

namespace {

struct Traffic {
  std::vector<Departure> deps;
  size_t protect_from = 0;          // the final round: one message per flow, never dropped
  std::vector<std::pair<size_t, size_t>> messages;   // [first, end) frame indices
};

// Messages of 2..6 frames on the flows of `npus` ranks, one after another, scheduled `gap` cycles
// apart at most (0: back to back), then a final round of one two-frame message per flow.
template <int kDataW>
Traffic loop_traffic(std::mt19937_64& rng, const RxConfig& cfg, size_t messages, uint64_t max_gap, uint64_t offset) {
  Traffic t;
  uint64_t sched = 300, id = 1;
  const auto add = [&](uint32_t src, uint32_t dst, uint32_t count) {
    const size_t begin = t.deps.size();
    for (dp::FrameSpec s : message(rng, cfg.roce, src, dst, id++, count, static_cast<uint32_t>(rng() % 1600))) {
      if (!cfg.roce) s.dst.port = cfg.port_lo;
      s.hdr.tx_time_ps = arrival_ps(sched + offset, cfg.q32);
      t.deps.push_back(Departure{sched, s});
      const uint64_t beats = (fabemu::fg_test::frame_len(s) + kDataW / 8 - 1) / (kDataW / 8);
      sched += beats + (max_gap == 0 || rng() % 3 == 0 ? 0 : rng() % max_gap);
    }
    t.messages.emplace_back(begin, t.deps.size());
  };
  for (size_t m = 0; m < messages; ++m) {
    add(static_cast<uint32_t>(rng() % cfg.npus), static_cast<uint32_t>(rng() % cfg.npus), 2 + static_cast<uint32_t>(rng() % 5));
  }
  t.protect_from = t.deps.size();
  for (uint32_t src = 0; src < cfg.npus; ++src) {
    for (uint32_t dst = 0; dst < cfg.npus; ++dst) add(src, dst, 2);
  }
  return t;
}

// A device of latency L and nothing else: every frame arrives exactly L cycles after it left
// (presented == departure + L, departure == its schedule), so with 1 ps per cycle and tx_time the
// scheduled departure every latency is L ps; with 3103.37 ps per cycle the histogram equals the one
// filled in C++ from the same cycles.
template <class VF, class VR, int kDataW>
void loopback_latency(bool roce, uint64_t latency, uint64_t q, uint64_t seed) {
  SCOPED_TRACE(std::string(roce ? "RoCEv2" : "fabemu") + " L=" + std::to_string(latency) + " width " + std::to_string(kDataW));
  RxConfig cfg;
  cfg.roce = roce;
  cfg.npus = 4;
  cfg.q32 = q;
  const uint64_t offset = (uint64_t{1} << 32) - 2000;
  std::mt19937_64 rng(seed);
  const Traffic t = loop_traffic<kDataW>(rng, cfg, kDataW == 512 ? 120 : 30, kDataW == 512 ? 6 : 3, offset);
  DutOptions o;
  o.latency = latency;
  Loopback<VF, VR, kDataW> lb(cfg, o, offset);
  lb.run(t.deps);
  ASSERT_EQ(lb.seen().size(), t.deps.size());
  for (size_t k = 0; k < t.deps.size(); ++k) {
    const auto& s = lb.seen()[k];
    ASSERT_EQ(s.depart, t.deps[k].sched) << "frame " << k << " left late";
    ASSERT_EQ(s.present - offset - t.deps[k].sched, latency) << "frame " << k;
  }
  EXPECT_EQ(lb.fg().late_frames, 0u);
  RxRef ref(cfg);
  lb.feed(ref);
  ASSERT_EQ(ref.latencies.size(), t.deps.size());
  if (q == uint64_t{1} << 32) {
    for (uint64_t l : ref.latencies) ASSERT_EQ(l, latency);
    EXPECT_EQ(lb.rx().read_hist(static_cast<uint32_t>(LogHistogram::bucket_of(latency))), t.deps.size());
  }
  EXPECT_EQ(ref.records.size(), t.messages.size());
  uint64_t rec_min = UINT64_MAX, rec_max = 0;   // cycles from a message's last beat to its record
  for (size_t i = 0; i < t.messages.size() && i < lb.rx().records().size(); ++i) {
    const Record& r = lb.rx().records()[i];
    EXPECT_EQ(r.first, t.deps[t.messages[i].first].sched + latency + offset) << "message " << i;
    EXPECT_EQ(r.last, t.deps[t.messages[i].second - 1].sched + latency + offset) << "message " << i;
    const uint64_t beats = (fabemu::fg_test::frame_len(t.deps[t.messages[i].second - 1].spec) + kDataW / 8 - 1) / (kDataW / 8);
    const uint64_t d = lb.rx().record_cycles()[i] - (r.last + beats - 1);
    rec_min = std::min(rec_min, d);
    rec_max = std::max(rec_max, d);
  }
  std::printf("[ figures  ] %d bits: %zu frames, %zu records, each taken %llu to %llu cycles after its message's last beat\n",
              kDataW, t.deps.size(), lb.rx().records().size(), static_cast<unsigned long long>(rec_min),
              static_cast<unsigned long long>(rec_max));
  expect_equal(lb.rx(), ref, 16);
}

// Drops (every k-th frame, or seeded random), a reordered pair inside a message, CE marks, a rate limit
// and back-pressure on the generator: the counts equal the injections exactly, and everything equals
// the reference.
template <class VF, class VR, int kDataW>
void loopback_faults(bool roce, const DutOptions& o0, uint64_t seed, bool exact_injections) {
  RxConfig cfg;
  cfg.roce = roce;
  cfg.npus = 4;
  cfg.q32 = kQ;
  const uint64_t offset = 12345;
  std::mt19937_64 rng(seed);
  const Traffic t = loop_traffic<kDataW>(rng, cfg, kDataW == 512 ? 150 : 40, 4, offset);
  DutOptions o = o0;
  o.protect_from = t.protect_from;
  // A reordered pair inside a message whose frames are not dropped.
  for (const auto& [b, e] : t.messages) {
    if (e - b >= 3 && b > t.deps.size() / 3 && (o.drop_every == 0 || ((b + 1) % o.drop_every != 0 &&
                                                                      (b + 2) % o.drop_every != 0))) {
      o.reorder = static_cast<int64_t>(b);
      break;
    }
  }
  ASSERT_GE(o.reorder, 0);
  for (size_t k = 5; k < t.deps.size(); k += 7) o.ce.insert(k);
  Loopback<VF, VR, kDataW> lb(cfg, o, offset);
  lb.run(t.deps);
  ASSERT_EQ(lb.seen().size(), t.deps.size());
  size_t drops = 0, marked = 0;
  std::set<size_t> broken;   // messages with a dropped frame
  for (size_t m = 0; m < t.messages.size(); ++m) {
    for (size_t k = t.messages[m].first; k < t.messages[m].second; ++k) {
      const auto& s = lb.seen()[k];
      drops += s.dropped;
      marked += s.marked;
      if (s.dropped) broken.insert(m);
      if (!s.dropped) {
        EXPECT_GE(s.present - offset, s.depart + o.latency) << "frame " << k;
      }
      // Exact before the reordered pair (the held frame may delay the ones after it by its length).
      if (!s.dropped && o.rate == 0 && static_cast<int64_t>(k) < o.reorder) {
        EXPECT_EQ(s.present - offset, s.depart + o.latency) << "frame " << k;
      }
    }
  }
  EXPECT_GT(drops, 0u);
  EXPECT_GT(marked, 0u);
  RxRef ref(cfg);
  lb.feed(ref);
  expect_equal(lb.rx(), ref, 16);
  FlowCounters sum;
  for (uint32_t f = 0; f < 16; ++f) {
    const FlowCounters c = lb.rx().read_flow(f);
    sum.frames += c.frames;
    sum.lost += c.lost;
    sum.reordered += c.reordered;
    sum.ce += c.ce;
  }
  EXPECT_EQ(sum.frames, t.deps.size() - drops);
  EXPECT_EQ(sum.ce, marked);
  if (exact_injections) {
    // A drop is a gap (or a missing tail, counted when the flow's next message starts); the reordered
    // pair is one gap and one frame below the next expected.
    EXPECT_EQ(sum.lost, drops + 1);
    EXPECT_EQ(sum.reordered, 1u);
    EXPECT_EQ(lb.rx().records().size(), t.messages.size() - broken.size());
  }
}

}  // namespace

TEST(FpgaRtlRx, LoopbackFixedLatency512) {
  loopback_latency<Vsched_fg, Vsched_rx, 512>(false, 8, uint64_t{1} << 32, 51);
  loopback_latency<Vsched_fg, Vsched_rx, 512>(true, 1, uint64_t{1} << 32, 52);
  loopback_latency<Vsched_fg, Vsched_rx, 512>(true, 40, kQ, 53);
}

TEST(FpgaRtlRx, LoopbackFixedLatency64) {
  loopback_latency<Vsched_fg64, Vsched_rx64, 64>(false, 8, uint64_t{1} << 32, 54);
  loopback_latency<Vsched_fg64, Vsched_rx64, 64>(true, 3, kQ, 55);
}

TEST(FpgaRtlRx, LoopbackDropsReorderAndCeMarks512) {
  DutOptions o;
  o.latency = 12;
  o.drop_every = 9;
  loopback_faults<Vsched_fg, Vsched_rx, 512>(false, o, 61, true);
  loopback_faults<Vsched_fg, Vsched_rx, 512>(true, o, 62, true);
  // Back-pressure on the generator, a rate limit of 20 bytes per cycle, seeded random drops.
  DutOptions r;
  r.latency = 10;
  r.drop_per_1000 = 40;
  r.rate = 20;
  r.ready_pct = 70;
  r.seed = 5;
  loopback_faults<Vsched_fg, Vsched_rx, 512>(true, r, 63, false);
}

TEST(FpgaRtlRx, LoopbackDropsReorderAndCeMarks64) {
  DutOptions o;
  // The device marks CE once it holds a frame's IPv4 header (34 bytes: 5 beats at 64 bits); with the
  // generator back-pressured (80% ready) those beats can take longer than a short latency, and byte 15 (the
  // TOS) would have left before it could be marked. 9 cycles failed so in the clang build (its random draws
  // differ from gcc's); 40 cycles needs 36 idle cycles inside a header, about 0.2^36.
  o.latency = 40;
  o.drop_every = 7;
  o.ready_pct = 80;
  loopback_faults<Vsched_fg64, Vsched_rx64, 64>(false, o, 64, true);
  loopback_faults<Vsched_fg64, Vsched_rx64, 64>(true, o, 65, true);
}

// The record stream: under random m_rec_ready (40%) every record arrives, in order; with m_rec_ready
// low through a burst of one-frame messages the FIFO fills, the records that found no room are counted
// dropped, and the ones kept are the first, in order.
TEST(FpgaRtlRx, RecordStreamBackPressureAndOverflow) {
  RxConfig cfg;
  cfg.q32 = kQ;
  std::mt19937_64 rng(71);
  for (const unsigned ready : {40u, 0u}) {
    SCOPED_TRACE(ready);
    std::vector<std::vector<uint8_t>> frames;
    for (uint64_t id = 1; id <= 120; ++id) {
      for (dp::FrameSpec s : message(rng, false, static_cast<uint32_t>(id % 8), 1, id, ready == 0 ? 1 : 3,
                                     static_cast<uint32_t>(rng() % 200))) {
        s.dst.port = cfg.port_lo;
        s.hdr.tx_time_ps = 0;
        frames.push_back(encode(s));
      }
    }
    Rx512 b(cfg, 100);
    b.set_record_ready(ready);
    RxRef ref(cfg);
    const auto first = b.send(frames, 100, 4);
    for (size_t i = 0; i < frames.size(); ++i) ref.frame(frames[i], first[i]);
    b.idle(60);
    b.set_record_ready(100);
    b.idle(100);
    if (ready != 0) {
      EXPECT_EQ(b.records(), ref.records);
      EXPECT_EQ(b.read_global(kRecordsDropped), 0u);
      continue;
    }
    const size_t kept = b.records().size();
    EXPECT_GE(kept, static_cast<size_t>(kRecFifo) - 4);
    EXPECT_LE(kept, static_cast<size_t>(kRecFifo));
    EXPECT_TRUE(std::equal(b.records().begin(), b.records().end(), ref.records.begin()));
    EXPECT_EQ(b.read_global(kRecords), kept);
    EXPECT_EQ(b.read_global(kRecordsDropped), ref.records.size() - kept);
  }
}

// sched_rx_rmw alone (64-bit words, 16 addresses): a request every cycle (90%), to random addresses and
// runs of one address, each adding its own delta to its word; host reads and writes in the gaps. Every
// `cur` equals the word as every earlier request left it, so both forwards (one and two cycles) are
// exercised; sched_rx itself never sends one update per cycle at DATA_W <= 512.
TEST(FpgaRtlRx, RmwOneUpdatePerCycleForwarded) {
  VerilatedContext ctx;
  Vsched_rx_rmw m(&ctx, "rmw");
  const auto edge = [&] {
    m.clk = 1;
    m.eval();
    m.clk = 0;
    m.eval();
  };
  m.rst = 1;
  m.in_valid = 0;
  m.h_valid = 0;
  edge();
  m.rst = 0;
  for (int i = 0; i < 40 && m.init_busy; ++i) edge();
  ASSERT_FALSE(m.init_busy);
  std::mt19937_64 rng(81);
  std::array<uint64_t, 16> word{};
  std::deque<std::pair<uint32_t, uint64_t>> flight;   // (address, delta) of the requests in R0..R2
  uint64_t checked = 0, same_as_last = 0, host_reads = 0;
  uint32_t last = 0;
  bool host_pending = false, host_write = false;
  uint32_t host_addr = 0;
  uint64_t host_value = 0;
  for (int cycle = 0; cycle < 20000; ++cycle) {
    const bool req = rng() % 10 != 0;
    const uint32_t addr = rng() % 3 == 0 ? last : static_cast<uint32_t>(rng() % 16);
    const uint64_t delta = rng();
    m.in_valid = req;
    m.in_addr = static_cast<uint8_t>(addr);
    if (!host_pending && rng() % 8 == 0) {
      host_pending = true;
      host_write = rng() % 2;
      host_addr = static_cast<uint32_t>(rng() % 16);
      host_value = rng();
    }
    m.h_valid = host_pending;
    m.h_write = host_write;
    m.h_addr = static_cast<uint8_t>(host_addr);
    m.h_wdata = host_value;
    m.nxt = 0;
    m.eval();
    if (m.cur_valid) {
      ASSERT_FALSE(flight.empty());
      const auto [a, d] = flight.front();
      flight.pop_front();
      ASSERT_EQ(m.cur_addr, a);
      ASSERT_EQ(m.cur, word[a]) << "cycle " << cycle;
      word[a] += d;
      m.nxt = word[a];
      m.eval();
      ++checked;
    }
    if (m.h_take) {
      host_pending = false;
      if (host_write) word[host_addr] = host_value;
      else ++host_reads;
    }
    if (req) {
      same_as_last += addr == last;
      flight.emplace_back(addr, delta);
      last = addr;
    }
    edge();
  }
  EXPECT_GT(checked, 17000u);
  EXPECT_GT(same_as_last, 5000u);
  EXPECT_GT(host_reads, 5u);   // writes wait for three cycles without a request: rare at 90%
}
