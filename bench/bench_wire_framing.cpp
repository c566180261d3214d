// The framing-only cases of fabemu_bench_dpdk_tx (bench_dpdk_tx.cpp has the transmit loops on a device,
// EAL and main; what both use: bench_dpdk_tx.h): the wire format's own cost per frame, no mbufs, no device.
// encode/..., encode_run/..., encode_one/... (framing: a frame, a run, a run of one), decode/... (the receive
// side's decode) and sender/... (the Sender alone), each at its function below; bench/README.md, "DPDK
// transmit", has the table of every case.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "bench/bench_dpdk_tx.h"
#include "host/wire/checksum.h"
#include "host/wire/crc.h"
#include "host/wire/fabemu_header.h"
#include "host/wire/frame.h"
#include "host/wire/reassembly.h"
#include "host/wire/roce.h"

namespace fd = fabemu::host::dpdk;

namespace fabemu::bench::dpdk_tx {
namespace {

// encode/<mode>/<bytes>B/<engine>: encode(FrameTemplate&) alone, 32 frames of one flow per iteration into
// a buffer in cache (no mbufs, no device): the framing's own cost per CRC engine. The fields change per
// frame as in the fabric's loop (seq, offset, time, ip id); one message size, so the caches hit.
// The data frame spec of encode_only, encode_run_only and decode_only: rank 0 to rank 1, 64-packet messages.
fd::FrameSpec encode_spec(fd::WireMode mode, uint32_t payload) {
  fd::FrameSpec s;
  s.mode = mode;
  s.src = endpoint(0);
  s.dst = endpoint(1);
  s.bth.dest_qp = 2;
  s.hdr = fd::FabemuHeader{fd::PacketKind::kData, 0, 0, 1, 0, 0, 64, uint64_t{payload} * 64, 0, 0};
  s.payload_bytes = payload;
  return s;
}
// s's fields for the frame with this number (0, 1, ...: 64 to a message), sent at time_ps.
void step_spec(fd::FrameSpec& s, uint64_t frame, uint32_t payload, uint64_t time_ps) {
  s.ip_id = static_cast<uint16_t>(frame);
  s.hdr.message_id = frame >> 6;
  s.hdr.seq = static_cast<uint32_t>(frame & 63);
  s.hdr.offset = uint64_t{s.hdr.seq} * payload;
  s.hdr.tx_time_ps = time_ps;
  s.bth.opcode = fd::rc_send_opcode(s.hdr.seq, 64);
  s.bth.psn = s.hdr.seq;
}

void encode_only(benchmark::State& state, fd::WireMode mode, uint32_t payload, fd::CrcEngine engine) {
  fd::FrameSpec s = encode_spec(mode, payload);
  fd::FrameTemplate t(s);
  if (!t.set_crc_engine(engine)) {
    state.SkipWithError("this CPU cannot run the engine");
    return;
  }
  alignas(64) static uint8_t buf[kBurst][2048];
  uint64_t frames = 0, time_ps = 1'000'000;
  for (auto _ : state) {
    for (uint16_t i = 0; i < kBurst; ++i) {
      step_spec(s, frames, payload, time_ps += 8000);
      benchmark::DoNotOptimize(fd::encode(t, s, buf[i]));
      ++frames;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(frames));
}

// encode_run/<mode>/<bytes>B/<crc>: encode_run alone, a run of 32 frames (half a 64-packet message: its
// Middle packets, and its First or Last) per iteration into zeroed buffers in cache (payload_zero: the
// fabric's zero pool), no mbufs, no device: the run framing's own cost per CRC engine and batch width.
// crc: table, clmul (frame by frame), clmul_x2 and clmul_x4 (run_crc_batch() 2 or 4; skipped where the
// CPU does not run that width).
void encode_run_only(benchmark::State& state, fd::WireMode mode, uint32_t payload, fd::CrcEngine engine,
                     unsigned lanes) {
  fd::FrameSpec s = encode_spec(mode, payload);
  fd::FrameTemplate t(s);
  if (!t.set_crc_engine(engine) || !fd::run_crc_batch_runs(lanes)) {
    state.SkipWithError("this CPU cannot run the engine or batch width");
    return;
  }
  const unsigned lanes_before = fd::run_crc_batch();
  fd::set_run_crc_batch(lanes);
  alignas(64) static uint8_t buf[kBurst][2048];
  std::memset(buf, 0, sizeof buf);
  uint8_t* frames[kBurst];
  for (uint16_t i = 0; i < kBurst; ++i) frames[i] = buf[i];
  uint16_t lens[kBurst];
  uint64_t n = 0, time_ps = 1'000'000;
  for (auto _ : state) {
    step_spec(s, n, payload, time_ps += 8000);
    benchmark::DoNotOptimize(fd::encode_run(t, s, kBurst, payload, frames, sizeof buf[0], lens, true));
    benchmark::ClobberMemory();
    n += kBurst;
  }
  fd::set_run_crc_batch(lanes_before);
  state.SetItemsProcessed(static_cast<int64_t>(n));
}

// encode_one/<mode>/<bytes>B/<crc>: encode_run of runs of one frame, 32 per iteration, each a one-packet
// message of its own (message id, time and IP id moving on) into zeroed buffers in cache (payload_zero):
// the framing of one-packet messages as the fabric's loop runs it (fill_run of a run of one), per CRC
// engine (table, clmul).
void encode_one_only(benchmark::State& state, fd::WireMode mode, uint32_t payload, fd::CrcEngine engine) {
  fd::FrameSpec s = encode_spec(mode, payload);
  s.hdr.count = 1;
  s.hdr.message_length = payload;
  s.bth.opcode = fd::rc_send_opcode(0, 1);
  s.bth.ack_req = true;
  fd::FrameTemplate t(s);
  if (!t.set_crc_engine(engine)) {
    state.SkipWithError("this CPU cannot run the engine");
    return;
  }
  alignas(64) static uint8_t buf[kBurst][2048];
  std::memset(buf, 0, sizeof buf);
  uint16_t len = 0;
  uint64_t n = 0, time_ps = 1'000'000;
  for (auto _ : state) {
    for (uint16_t i = 0; i < kBurst; ++i) {
      s.ip_id = static_cast<uint16_t>(n);
      s.hdr.message_id = n++;
      s.hdr.tx_time_ps = time_ps += 8000;
      uint8_t* frame = buf[i];
      benchmark::DoNotOptimize(fd::encode_run(t, s, 1, payload, &frame, sizeof buf[0], &len, true));
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
}

// decode/<mode>/<bytes>B/<sum>: decode() of 32 data frames in cache (the receive side's per-frame
// classification: every checksum, the header CRC, and in RoCEv2 mode the UDP checksum in place of the
// ICRC, as the fabric's receive path runs it), per ones'-complement sum engine (portable, sse2, avx2).
// decode/roce/<bytes>B/icrc_<engine>: the same with the ICRC verified, by byte tables or folded (clmul),
// the UDP sum by the best engine: what the receive side runs on a RoCEv2 frame.
void decode_only(benchmark::State& state, fd::WireMode mode, uint32_t payload, fd::SumEngine engine,
                 std::optional<fd::CrcEngine> icrc = std::nullopt) {
  if (icrc && *icrc == fd::CrcEngine::kClmul && fd::best_crc_engine() != fd::CrcEngine::kClmul) {
    state.SkipWithError("this CPU cannot run the engine");
    return;
  }
  const fd::SumEngine best = fd::sum_engine();
  if (!fd::set_sum_engine(engine)) {
    state.SkipWithError("this CPU cannot run the engine");
    return;
  }
  fd::FrameSpec s = encode_spec(mode, payload);
  s.hdr.message_id = 7;
  s.hdr.tx_time_ps = 123456789;
  alignas(64) static uint8_t buf[kBurst][2048];
  size_t len = 0;
  for (uint16_t i = 0; i < kBurst; ++i) {
    s.hdr.seq = i;
    s.hdr.offset = uint64_t{i} * payload;
    s.ip_id = i;
    len = fd::encode(s, buf[i]);
  }
  const fd::DecodeRules rules{.mode = mode, .port_lo = endpoint(1).port, .port_hi = endpoint(1).port,
                              .verify_udp_checksum = true, .verify_icrc = icrc.has_value(),
                              .icrc_engine = icrc.value_or(fd::best_crc_engine())};
  fd::DecodedFrame out;
  uint64_t frames = 0, ours = 0;
  for (auto _ : state) {
    for (uint16_t i = 0; i < kBurst; ++i) {
      ours += fd::decode({buf[i], len}, rules, out) == fd::Verdict::kOurs;
      benchmark::DoNotOptimize(out.hdr.seq);
    }
    frames += kBurst;
  }
  fd::set_sum_engine(best);
  if (ours != frames) state.SkipWithError("a frame did not decode as ours");
  state.SetItemsProcessed(static_cast<int64_t>(frames));
}

// sender/<packets>pkt/<bytes>B: the Sender alone, as the fabric's loop drives it (no frames, no device):
// rank 0 sends messages of 1 or 64 packets to ranks 1..7, next_burst(32), each message acknowledged when
// its last packet is taken and the destination given its next one. CPU time / 32 is the Sender's cost
// per packet, submit() and on_ack() included. <bytes>: the frame of the fabemu-mode case alike.
void sender_only(benchmark::State& state, uint32_t packets) {
  constexpr uint32_t kPayload = 1024;
  const uint64_t message_bytes = packets == 1 ? 0 : uint64_t{kPayload} * packets;
  fd::Sender sender(fd::SenderConfig{.destinations = kRanks, .payload_per_packet = kPayload, .window = 1024,
                                     .rto = fd::Duration::from_ms(1000)});
  for (uint32_t r = 1; r < kRanks; ++r) sender.submit(r, message_bytes, r);
  std::array<fd::TxPacket, kBurst> got;
  uint64_t now_ps = 1'000'000, frames = 0;
  for (auto _ : state) {
    const fd::Time now = fd::Time::from_ps(now_ps += 100'000);
    for (size_t n = 0; n < kBurst;) {
      const size_t k = sender.next_burst(now, std::span(got.data(), kBurst - n));
      if (k == 0) break;
      for (size_t i = 0; i < k; ++i) {
        const fd::TxPacket& p = got[i];
        if (p.seq + 1 == p.count && !p.retransmit) {
          sender.on_ack(p.dst, p.message_id, p.count);
          sender.submit(p.dst, message_bytes, p.cookie);
        }
      }
      n += k;
      frames += k;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(frames));
  if (sender.stats().retransmissions != 0) state.SkipWithError("unexpected retransmissions");
}

}  // namespace

void register_framing_cases() {
  const struct {
    fd::WireMode mode;
    const char* name;
  } modes[] = {{fd::WireMode::kFabemu, "fabemu"}, {fd::WireMode::kRoceV2, "roce"}};
  for (const uint32_t packets : {1u, 64u}) {
    // The frame size of the fabemu-mode case with these messages is the third part of the name, as in
    // every other case (run_dpdk_tx.sh reads it there).
    const std::string frame = std::to_string(fd::frame_bytes(fd::WireMode::kFabemu, packets == 1 ? 0 : 1024));
    benchmark::RegisterBenchmark(("sender/" + std::to_string(packets) + "pkt/" + frame + "B").c_str(), sender_only,
                                 packets);
  }
  for (const auto& m : modes) {
    for (const uint32_t payload : {0u, 1024u}) {
      const std::string size = "/" + std::to_string(fd::frame_bytes(m.mode, payload)) + "B";
      for (const auto e : {fd::CrcEngine::kTable, fd::CrcEngine::kClmul}) {
        benchmark::RegisterBenchmark(
            ("encode/" + std::string(m.name) + size + (e == fd::CrcEngine::kClmul ? "/clmul" : "/table")).c_str(),
            encode_only, m.mode, payload, e);
      }
      const struct {
        fd::CrcEngine e;
        unsigned lanes;
        const char* name;
      } runs[] = {{fd::CrcEngine::kTable, 0, "table"},
                  {fd::CrcEngine::kClmul, 0, "clmul"},
                  {fd::CrcEngine::kClmul, 2, "clmul_x2"},
                  {fd::CrcEngine::kClmul, 4, "clmul_x4"}};
      for (const auto& r : runs) {
        benchmark::RegisterBenchmark(("encode_run/" + std::string(m.name) + size + "/" + r.name).c_str(),
                                     encode_run_only, m.mode, payload, r.e, r.lanes);
      }
      if (payload == 0) {
        for (const auto e : {fd::CrcEngine::kTable, fd::CrcEngine::kClmul}) {
          benchmark::RegisterBenchmark(
              ("encode_one/" + std::string(m.name) + size + (e == fd::CrcEngine::kClmul ? "/clmul" : "/table")).c_str(),
              encode_one_only, m.mode, payload, e);
        }
      }
    }
  }
  for (const auto& m : modes) {
    for (const uint32_t payload : {0u, 1024u}) {
      const std::string size = "/" + std::to_string(fd::frame_bytes(m.mode, payload)) + "B";
      const struct {
        fd::SumEngine e;
        const char* name;
      } sums[] = {{fd::SumEngine::kPortable, "portable"}, {fd::SumEngine::kSse2, "sse2"}, {fd::SumEngine::kAvx2, "avx2"}};
      for (const auto& e : sums) {
        benchmark::RegisterBenchmark(("decode/" + std::string(m.name) + size + "/" + e.name).c_str(), decode_only,
                                     m.mode, payload, e.e, std::nullopt);
      }
      if (m.mode == fd::WireMode::kRoceV2) {
        for (const auto& [engine, name] : {std::pair{fd::CrcEngine::kTable, "icrc_table"},
                                           std::pair{fd::CrcEngine::kClmul, "icrc_clmul"}}) {
          benchmark::RegisterBenchmark(("decode/" + std::string(m.name) + size + "/" + name).c_str(), decode_only,
                                       m.mode, payload, fd::best_sum_engine(), std::optional{engine});
        }
      }
    }
  }
}

}  // namespace fabemu::bench::dpdk_tx
