// Frames per second one core injects into a DPDK device, the "Speed" target (>= 70% of
// dpdk-testpmd's txonly rate with full framing and accounting). bench/run_dpdk_tx.sh runs it interleaved
// with testpmd and prints the ratios; README.md, "DPDK transmit".
//
// txonly_ref/<dev>/<bytes>B: what testpmd's txonly engine does per burst, in this process: take 32 mbufs
//   from the pool (rte_mempool_get_bulk), set their fields and copy a prebuilt Ethernet/IPv4/UDP header
//   into each (pkt_burst_prepare), tx_burst, free what was not taken. The yardstick on the ring pair,
//   where testpmd itself cannot run txonly (below).
// txonly_alloc/<dev>/<bytes>B: the same with rte_pktmbuf_alloc_bulk, which resets every field of every
//   mbuf: why the fabric takes its mbufs with alloc_frames() (dpdk_env.h), testpmd's way.
// floor/<dev>/<bytes>B: the least any sender of this wire format does per frame (at floor_ref below): a
//   bound on the ratio to testpmd that the fabric's loop could reach.
// <mode>/<dev>/<bytes>B/pace_<p>: the DPDK fabric's transmit loop, a run at a time (at fabric_tx_runs).
// <mode>/<dev>/<bytes>B/pace_<p>/msg_<n>pkt (n = 2, 4, 8, 16; pace_off and pace_lazy; 64 B and 1 KiB
//   payloads): the same loop with messages of n full frames instead of 64: how the rate falls with the
//   message size, the per-message cost (submit, ACK, the run's set-up) shared by fewer frames.
// <mode>_packets/<dev>/<bytes>B/pace_<p> (pace_off, pace_frame, pace_lazy): the DPDK fabric's transmit
//   loop a packet at a time, as it was before runs: Sender::next_burst (selective repeat
//   state, timers; the packets a burst at a time, those not yet due kept for the next burst), the frame
//   from the flow's FrameTemplate (every checksum, the header CRC, RoCEv2 ICRC), tx_burst, and per-frame
//   accounting like DpdkFabric::transmit keeps (frames, bytes, data frames, the message's first-frame TSC
//   found by the packet's cookie, per-link bytes and first/last times). Rank 0 sends to ranks 1..7; every
//   message is acknowledged as soon as its last packet is built, and the destination gets its next
//   message (so the window never stalls). Payload 0: one-packet messages of 0
//   bytes (102 B frames in fabemu mode, 118 B in RoCEv2); payload 64: 4 KiB messages of 64 small frames
//   (166 B, 182 B), the frame size of one-packet messages' order without their per-message cost; payload
//   1024: 64 KiB messages (64 packets).
//   pace_off: no pacing. pace_frame: before each frame, rte_rdtsc() and a check of its departure time
//   against a schedule of 100 Mpps (above what one core builds, so no frame ever waits: the cost of the
//   check alone). pace_lazy: the same schedule, the TSC read again only when a frame is not yet due by
//   the last reading (once per burst otherwise): the same departures, fewer rdtsc.
// <mode>_encode/...: the same loop with fill_mbuf(m, spec) (full encode() per frame), the path before
//   FrameTemplate, for the speed-up.
// <mode>_nosender/...: the same loop with the packets from counters instead of the Sender (a burst at a
//   time, no selective-repeat state, no ACKs): what the Sender costs.
// encode/..., encode_run/..., encode_one/..., decode/... and sender/...: framing (a frame, a run, a run of
//   one), the receive side's decode and the Sender alone, no mbufs, no device: in bench_wire_framing.cpp
//   (the same executable; register_cases() registers them first).
// dev null: net_null (frees every frame it is given). dev ring: a ring pair (rte_eth_from_rings); the
//   loop drains the far end (rx_burst + free) in the same thread after each burst, for every case alike.
//
// EAL: Eal::no_huge_args(FABEMU_BENCH_LCORE, default 0), or FABEMU_BENCH_EAL_ARGS (space separated).
// items_per_second is frames taken by the device per wall-clock second (testpmd reports wall-clock pps).
#include <benchmark/benchmark.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_dpdk_tx.h"
#include "emulator/histogram.h"
#include "emulator/time.h"
#include "host/dpdk/dpdk_env.h"
#include "host/dpdk/link_pacer.h"
#include "host/dpdk/realtime.h"
#include "host/wire/checksum.h"
#include "host/wire/crc.h"
#include "host/wire/fabemu_header.h"
#include "host/wire/first_frames.h"
#include "host/wire/frame.h"
#include "host/wire/reassembly.h"
#include "host/wire/roce.h"

namespace fd = fabemu::host::dpdk;

namespace {

using fabemu::bench::dpdk_tx::endpoint;
using fabemu::bench::dpdk_tx::kBurst;
using fabemu::bench::dpdk_tx::kRanks;
using fabemu::bench::dpdk_tx::register_framing_cases;

constexpr uint64_t kPacingRatePps = 100'000'000;
constexpr uint32_t kRecords = 1024;         // message records, indexed by the packet's cookie

enum class Dev { kNull, kRing };
enum class Pacing { kOff, kPerFrame, kLazy };

// The devices, opened once for all cases.
struct Devices {
  std::unique_ptr<fd::Port> null;
  std::unique_ptr<fd::Port> null_queues;  // net_null with a transmit queue per aggregate lcore
  std::vector<std::unique_ptr<fd::Port>> null_each;  // a net_null per aggregate lcore
  std::unique_ptr<fd::RingPair> pair;
  std::unique_ptr<fd::Port> a, b;
};
Devices& devices() {
  static Devices d;
  return d;
}

struct Target {
  fd::Port* tx = nullptr;
  fd::Port* drain = nullptr;  // the far end of a ring pair
  uint16_t txq = 0;           // the transmit queue (aggregate/...: one per lcore)
};
Target target(Dev dev) {
  Devices& d = devices();
  return dev == Dev::kNull ? Target{d.null.get(), nullptr} : Target{d.a.get(), d.b.get()};
}

inline void drain(fd::Port* p) {
  if (p == nullptr) return;
  rte_mbuf* rx[kBurst];
  for (uint16_t n; (n = p->rx_burst(rx, kBurst)) > 0;) rte_pktmbuf_free_bulk(rx, n);
}

// testpmd's txonly loop (app/test-pmd/txonly.c, single segment, no multi-flow, no timestamps), with
// `write(frame_bytes)` writing each frame's headers: take 32 mbufs, set their fields, write, tx_burst,
// free what was not taken.
template <class Write>
void txonly_loop(benchmark::State& state, Dev dev, uint16_t frame_len, bool alloc_bulk, Write write) {
  const Target t = target(dev);
  rte_mbuf* pkts[kBurst];
  uint64_t sent = 0;
  t.tx->reset_stats();
  for (auto _ : state) {
    if ((alloc_bulk ? rte_pktmbuf_alloc_bulk(t.tx->pool(), pkts, kBurst)
                    : rte_mempool_get_bulk(t.tx->pool(), reinterpret_cast<void**>(pkts), kBurst)) != 0) {
      drain(t.drain);
      continue;
    }
    for (rte_mbuf* m : pkts) {  // pkt_burst_prepare()
      rte_pktmbuf_reset_headroom(m);
      m->data_len = frame_len;
      m->ol_flags &= RTE_MBUF_F_EXTERNAL;
      m->vlan_tci = 0;
      m->vlan_tci_outer = 0;
      m->l2_len = sizeof(rte_ether_hdr);
      m->l3_len = sizeof(rte_ipv4_hdr);
      m->next = nullptr;
      write(rte_pktmbuf_mtod(m, uint8_t*));
      m->nb_segs = 1;
      m->pkt_len = frame_len;
    }
    const uint16_t took = t.tx->tx_burst(pkts, kBurst);
    if (took < kBurst) rte_pktmbuf_free_bulk(pkts + took, kBurst - took);
    sent += took;
    drain(t.drain);
  }
  state.SetItemsProcessed(static_cast<int64_t>(sent));
  state.counters["frame_B"] = frame_len;
  state.counters["dev_opackets"] = static_cast<double>(t.tx->stats().opackets);
}

// txonly_ref and txonly_alloc: testpmd's loop with its prebuilt Ethernet/IPv4/UDP header copied.
void txonly_ref(benchmark::State& state, Dev dev, uint16_t frame_len, bool alloc_bulk) {
  fd::FrameSpec spec;
  spec.src = endpoint(0);
  spec.dst = endpoint(1);
  uint8_t frame[256];
  if (fd::encode(spec, frame) == 0) state.SkipWithError("encode failed");
  constexpr size_t kHeader = fd::kEthHeaderBytes + fd::kIpv4HeaderBytes + fd::kUdpHeaderBytes;
  txonly_loop(state, dev, frame_len, alloc_bulk, [&](uint8_t* f) { std::memcpy(f, frame, kHeader); });
}

uint32_t be16(const uint8_t* p) { return uint32_t{p[0]} << 8 | p[1]; }

// floor/<dev>/<bytes>B: a lower bound on any loop that sends this wire format: testpmd's loop, each frame
// the whole prebuilt fabemu-mode frame head (Ethernet through the fabemu header, 102 bytes) copied instead
// of testpmd's 42, then only what must change per packet patched in: IP id and checksum, the header's
// low message id, seq, offset and time, and the UDP checksum from the changed words (RFC 1624). No header
// CRC, no Sender, no accounting; payloads are left as they are (not zeroed). Whatever the fabric does more
// than this is cost on top of it, so floor / testpmd bounds what the speed target can reach here.
void floor_ref(benchmark::State& state, Dev dev, uint16_t frame_len) {
  fd::FrameSpec spec;
  spec.src = endpoint(0);
  spec.dst = endpoint(1);
  spec.hdr.count = 64;
  spec.hdr.message_length = 64 * 1024;
  alignas(64) uint8_t image[256];
  const size_t n = fd::encode(spec, image);
  constexpr size_t kIp = fd::kEthHeaderBytes, kUdp = kIp + fd::kIpv4HeaderBytes, kHdr = kUdp + fd::kUdpHeaderBytes;
  constexpr size_t kHead = kHdr + fd::kFabemuHeaderBytes;
  if (n < kHead) state.SkipWithError("encode failed");
  const uint32_t ip_sum = ~be16(image + kIp + 10) & 0xFFFFu;  // the image's sums (its id and fields are 0)
  const uint32_t udp_sum = ~be16(image + kUdp + 6) & 0xFFFFu;
  uint64_t frames = 0;
  txonly_loop(state, dev, frame_len, false, [&](uint8_t* f) {
    std::memcpy(f, image, kHead);
    const auto id = static_cast<uint16_t>(frames);
    const auto seq = static_cast<uint32_t>(frames & 63), msg = static_cast<uint32_t>(frames >> 6);
    const auto offset = seq * 1024u, time = static_cast<uint32_t>(frames * 8000);
    fd::store_be16(f + kIp + 4, id);
    uint32_t s = ip_sum + id;
    s = (s & 0xFFFF) + (s >> 16);
    fd::store_be16(f + kIp + 10, static_cast<uint16_t>(~((s & 0xFFFF) + (s >> 16))));
    fd::store_be32(f + kHdr + fd::kHeaderIdAt + 4, msg);
    fd::store_be32(f + kHdr + fd::kHeaderSeqAt, seq);
    fd::store_be32(f + kHdr + fd::kHeaderOffsetAt + 4, offset);
    fd::store_be32(f + kHdr + fd::kHeaderTimeAt + 4, time);
    uint64_t u = uint64_t{udp_sum} + msg + seq + offset + time;
    u = (u & 0xFFFFFFFF) + (u >> 32);
    u = (u & 0xFFFF) + (u >> 16);
    u = (u & 0xFFFF) + (u >> 16);
    u = (u & 0xFFFF) + (u >> 16);
    fd::store_be16(f + kUdp + 6, static_cast<uint16_t>(~u));
    ++frames;
  });
}

// FABEMU_BENCH_CRC=table: the fabric loop's templates use the portable CRC engine (the default is the
// best this CPU runs, as in the fabric), to compare the engines in the whole loop. FABEMU_BENCH_CRC=single:
// the clmul engine with run_crc_batch() off (a run's CRCs one frame at a time; host/wire/frame.h);
// FABEMU_BENCH_CRC=lanes2: two frames at a time where the CPU runs four (the default is the widest).
bool table_crc() {
  static const bool table = [] {
    const char* e = std::getenv("FABEMU_BENCH_CRC");
    return e != nullptr && std::string(e) == "table";
  }();
  return table;
}

// The fabric's per-frame bookkeeping (DpdkFabric::transmit).
struct Record {
  uint64_t tx_ticks = 0;
  fd::Time depart;  // the message's modelled departure (the paced run loop's): when it was submitted
};
struct LinkTx {
  uint64_t bytes = 0, first = 0, last = 0;
};
struct Accounting {
  uint64_t frames_tx = 0, frame_bytes_tx = 0, data_frames = 0, tx_dropped = 0, retransmissions = 0;
};

// What the fabric loops share: rank 0's Sender to ranks 1..7 with each destination's first message
// submitted, one FrameSpec (flow fields set once) and FrameTemplate per destination, the message records
// (by cookie), per-link counters and the loop's accounting. Messages of 0 bytes (one packet, no payload)
// or 64 packets of `payload` bytes.
struct Loop {
  uint64_t message_bytes;
  fd::Sender sender;
  std::array<fd::FrameSpec, kRanks> specs;
  std::vector<fd::FrameTemplate> flows;
  std::vector<Record> records;
  std::array<LinkTx, kRanks> links{};
  Accounting acc;
  fd::FirstFrames<Record> firsts;  // the run loop's: the burst's messages whose first frame it holds
  uint64_t next_cookie = 0;

  Loop(fd::WireMode mode, uint32_t payload, uint32_t packets = 64)
      : message_bytes(payload == 0 ? 0 : uint64_t{payload} * packets),
        sender(fd::SenderConfig{.destinations = kRanks,
                                .payload_per_packet = payload == 0 ? 1024 : payload,
                                .window = 1024,
                                .rto = fd::Duration::from_ms(1000)}),
        records(kRecords),
        mode_(mode),
        payload_(payload) {
    flows.reserve(kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
      fd::FrameSpec& s = specs[r];
      s.mode = mode;
      s.src = endpoint(0);
      s.dst = endpoint(r);
      if (mode == fd::WireMode::kRoceV2) {
        s.src.port = fd::flow_source_port(uint64_t{0} << 32 | r);
        s.dst.port = fd::kRoceV2Port;
      }
      s.bth.dest_qp = r + 1;
      flows.emplace_back(s);
      if (table_crc()) flows.back().set_crc_engine(fd::CrcEngine::kTable);
    }
    for (uint32_t r = 1; r < kRanks; ++r) sender.submit(r, message_bytes, next_cookie++ % kRecords);
  }
  // A message's last packet is built: the receiver's ACK, at once, and the destination's next message.
  void next_message(uint32_t dst, uint64_t id, uint32_t count, fd::Time now = {}) {
    sender.on_ack(dst, id, count);
    records[next_cookie % kRecords].depart = now;
    sender.submit(dst, message_bytes, next_cookie++ % kRecords);
  }
  // The burst's n frames to the device (the rest of pkts back to the pool), the far end drained; returns
  // how many the device took (the others are counted as dropped).
  uint16_t send(const Target& t, rte_mbuf** pkts, uint16_t n) {
    if (n < kBurst) rte_pktmbuf_free_bulk(pkts + n, kBurst - n);
    const uint16_t took = t.tx->tx_burst(pkts, n, t.txq);
    // As the fabric (DpdkFabric::flush): the messages whose first frame the device took are stamped now
    // (the run loop's; the per-packet loops stamp at build time, as the fabric did then).
    if (firsts.waiting() > 0) {
      const uint64_t ticks = rte_rdtsc();
      firsts.taken(0, took, [ticks](Record& r) { r.tx_ticks = ticks; });
      firsts.clear();  // the frames the device did not take were freed
    }
    if (took < n) {
      rte_pktmbuf_free_bulk(pkts + took, n - took);
      acc.tx_dropped += n - took;
    }
    drain(t.drain);
    return took;
  }
  // The counters of the case; `check_sender`: the frames counted must be the Sender's packets.
  void finish(benchmark::State& state, const Target& t, uint64_t sent, bool check_sender) {
    state.SetItemsProcessed(static_cast<int64_t>(sent));
    state.counters["frame_B"] = static_cast<double>(fd::frame_bytes(mode_, payload_));
    state.counters["dev_opackets"] = static_cast<double>(t.tx->stats().opackets);
    state.counters["dropped"] = static_cast<double>(acc.tx_dropped);
    uint64_t link_bytes = 0;
    for (const LinkTx& l : links) link_bytes += l.bytes;
    benchmark::DoNotOptimize(link_bytes);
    benchmark::DoNotOptimize(records.data());
    if (check_sender && acc.frames_tx != sender.stats().packets + sender.stats().retransmissions)
      state.SkipWithError("accounting does not match the sender's counts");
  }

 private:
  fd::WireMode mode_;
  uint32_t payload_;
};

enum class Variant {
  kFull,      // Sender + FrameTemplate + accounting
  kEncode,    // Sender + fill_mbuf(spec) (full encode()) + accounting
  kNoSender,  // packets from a counter instead of the Sender + FrameTemplate + accounting
};

template <Variant kVariant>
void fabric_tx(benchmark::State& state, Dev dev, fd::WireMode mode, uint32_t payload, Pacing pacing) {
  const Target t = target(dev);
  Loop loop(mode, payload);

  const uint64_t hz = rte_get_tsc_hz();
  // Departures in 32.32 fixed-point TSC ticks: frame k at start + k * interval.
  const uint64_t interval_fp = (hz << 32) / kPacingRatePps;
  uint64_t departure_fp = rte_rdtsc() << 32;
  const double ps_per_tick = 1e12 / static_cast<double>(hz);
  uint16_t ip_id = 0;
  // The Sender's packets, taken a burst at a time (next_burst); those not sent yet (pacing) wait here.
  std::array<fd::TxPacket, kBurst> got;
  size_t got_n = 0, got_next = 0;
  rte_mbuf* pkts[kBurst];
  t.tx->reset_stats();
  uint64_t sent = 0;

  // kNoSender: the packets the Sender would give, from counters (per destination: id, seq).
  const uint32_t count = payload == 0 ? 1 : 64;
  std::array<uint64_t, kRanks> gen_id{};
  std::array<uint32_t, kRanks> gen_seq{};
  uint32_t gen_dst = 1;

  for (auto _ : state) {
    uint64_t tsc = rte_rdtsc();
    const fd::Time now = fd::Time::from_ps(static_cast<uint64_t>(static_cast<double>(tsc) * ps_per_tick));
    if (!fd::alloc_frames(t.tx->pool(), pkts, kBurst)) {
      drain(t.drain);
      continue;
    }
    uint16_t n = 0;
    while (n < kBurst) {
      if (got_next == got_n) {
        got_next = got_n = 0;
        if constexpr (kVariant == Variant::kNoSender) {
          // A burst from the counters too, as next_burst gives them.
          for (; got_n < size_t{kBurst} - n; ++got_n) {
            fd::TxPacket& p = got[got_n];
            p.dst = gen_dst;
            p.message_id = gen_id[gen_dst];
            p.seq = gen_seq[gen_dst];
            p.count = count;
            p.message_length = loop.message_bytes;
            p.offset = uint64_t{p.seq} * payload;
            p.bytes = payload;
            p.cookie = gen_id[gen_dst] % kRecords;
            if (++gen_seq[gen_dst] == count) {
              gen_seq[gen_dst] = 0;
              ++gen_id[gen_dst];
              gen_dst = gen_dst + 1 == kRanks ? 1 : gen_dst + 1;
            }
          }
        } else if ((got_n = loop.sender.next_burst(now, std::span(got.data(), kBurst - n))) == 0) {
          break;
        }
      }
      const fd::TxPacket& p = got[got_next];
      if (pacing != Pacing::kOff) {
        if (pacing == Pacing::kPerFrame) tsc = rte_rdtsc();
        const uint64_t due = departure_fp >> 32;
        if (due > tsc) {
          if (pacing == Pacing::kLazy) tsc = rte_rdtsc();
          if (due > tsc) break;  // not yet: the packet waits for the next burst
        }
        departure_fp += interval_fp;
      }
      fd::FrameSpec& s = loop.specs[p.dst];
      s.ip_id = ip_id++;
      s.hdr = fd::FabemuHeader{fd::PacketKind::kData, p.retransmit ? fd::kFlagRetransmit : uint16_t{0}, 0, p.dst,
                               p.message_id, p.seq, p.count, p.message_length, p.offset, now.ps()};
      fd::set_data_bth(s.bth, p.seq, p.count);
      s.payload_bytes = p.bytes;
      uint16_t len;
      if constexpr (kVariant == Variant::kEncode) {
        len = fd::fill_mbuf(pkts[n], s);
      } else {
        len = fd::fill_mbuf(pkts[n], loop.flows[p.dst], s);
      }
      if (len == 0) {
        state.SkipWithError("a frame does not fit its mbuf");
        break;
      }
      ++got_next;
      ++n;
      // Accounting, as the fabric keeps it.
      ++loop.acc.frames_tx;
      loop.acc.frame_bytes_tx += len;
      ++loop.acc.data_frames;
      loop.acc.retransmissions += p.retransmit;
      if (p.seq == 0) loop.records[p.cookie].tx_ticks = tsc;
      LinkTx& lt = loop.links[p.dst];
      if (lt.bytes == 0) lt.first = tsc;
      lt.last = tsc;
      lt.bytes += p.bytes;
      if (kVariant != Variant::kNoSender && p.seq + 1 == p.count && !p.retransmit) loop.next_message(p.dst, p.message_id, p.count);
    }
    sent += loop.send(t, pkts, n);
  }
  loop.finish(state, t, sent, kVariant != Variant::kNoSender);
}

// The fabric's pacer (DpdkFabric::pace_run, PacedQueue::departed) for the run loop below. Per run the
// Sender offers (a RunGate): the fabric's pace_frames (link_pacer.h: the modelled departure, the link's
// next slot, the burst allowance; the clock read again per frame with pace_frame, with pace_lazy as the
// fabric only when a frame is not due by the last reading) and its PacedRuns queued. After tx_burst:
// each frame's departure jitter into a histogram and each PacedRun into the link's busy period
// (LinkBusy), as the fabric keeps them. The link carries 100 Mpps of the case's payloads and each message
// departs when it is submitted, so no frame waits: the pacer's cost.
struct Pacer {
  Pacer(Pacing p, uint32_t payload, const std::vector<Record>& recs)
      : pacing(p),
        rate(fabemu::emu::Rate::from_bytes_per_sec(uint64_t{std::max<uint32_t>(payload, 1)} * kPacingRatePps)),
        burst_ps(clock.to_wall(rate.ser(uint64_t{payload} * 64)).ps()),  // the fabric's kPacingBurstFrames
        records(&recs) {}
  static uint32_t gate(void* self, const fd::TxRun& r) { return static_cast<Pacer*>(self)->allow(r); }
  // As the fabric (DpdkFabric::pace_run): the burst's PacedRuns into `runs` as the Sender offers its runs,
  // into the queue once the burst is built (queue_burst). Pushed at once, each copy's loads would wait for
  // the stores pace_frames has just made (16-byte loads of smaller stores are not forwarded): about 3% of
  // the paced one-packet case's time here (perf: Pacer::gate 6.9% -> 1.8%, the loop 12.8% -> 15.1%), a
  // cost the fabric, which queues them after building the run's frames, does not have.
  uint32_t allow(const fd::TxRun& r) {
    const fd::Paced got = fd::pace_frames(clock, 0, (*records)[r.cookie].depart, rate, r, burst_ps, slot, now_ps,
                                          pacing == Pacing::kPerFrame, runs.data() + pending);
    pending += got.runs;
    return got.frames;
  }
  void queue_burst() {
    for (uint32_t i = 0; i < pending; ++i) queue.push(runs[i]);
    pending = 0;
  }
  // The first `took` frames kept left now (the rest, not taken by the device, are forgotten).
  void departed(uint16_t took) {
    queue.departed(
        clock, took, clock.wall().ps(), jitter_ns, [this](uint32_t) -> fd::LinkBusy& { return link; },
        [this](fd::LinkBusy& l) {
          double scheduled = 0, actual = 0;
          if (l.close(scheduled, actual) && actual > 0) ratio_sum += scheduled / actual;
        });
    queue.clear();
  }
  Pacing pacing;
  fd::TscClock clock{1.0};
  fabemu::emu::Rate rate;
  uint64_t burst_ps;
  const std::vector<Record>* records;
  fd::LinkSlot slot;
  uint64_t now_ps = 0;
  fd::LinkBusy link;
  double ratio_sum = 0;
  std::array<fd::PacedRun, kBurst> runs;  // pace_frames' of a burst (at most a frame each)
  uint32_t pending = 0;                   // in runs, not yet queued
  fd::PacedQueue queue;                   // a burst's
  fabemu::emu::LogHistogram jitter_ns;
};

// <mode>/<dev>/<bytes>B/pace_<p>: the fabric's transmit loop (DpdkFabric::transmit), a run at a time: the
// Sender's packets as runs of one message (next_runs; with pacing, through the Pacer above as its gate),
// mbufs straight from the pool (take_frames; fill_run resets them in its pass), each run's frames by
// fill_run (encode_run: one key check per run; in fabemu mode from the device's zero pool, payloads not
// written) and the accounting per run (frames, bytes, data frames, the first frame's TSC; without pacing
// the link's bytes and times, with it the Pacer's per-frame departures).
// The loop's bursts while more() (once before each burst), on t's queue; returns the frames the device took,
// or 0 with `error` set.
template <class More>
uint64_t runs_loop(More&& more, const Target& t, Loop& loop, Pacer& pacer, fd::WireMode mode, uint32_t payload,
                   Pacing pacing, const char*& error) {
  const fd::RunGate gate = pacing == Pacing::kOff ? fd::RunGate{} : fd::RunGate{&Pacer::gate, &pacer};

  uint16_t ip_id = 0;
  std::array<fd::TxRun, kBurst> runs;
  // As the fabric: data frames from the device's zero pool, their payloads never written, but for RoCEv2
  // frames shorter than a full one (their ICRC would lie in a full frame's payload): here every frame of
  // a RoCEv2 case is full (64 KiB messages) or shorter (0-byte messages).
  const bool zero = mode == fd::WireMode::kFabemu || payload > 0;
  rte_mempool* pool = zero ? t.tx->zero_pool() : t.tx->pool();
  rte_mbuf* pkts[kBurst];
  uint64_t sent = 0;

  while (more()) {
    const uint64_t tsc = rte_rdtsc();
    const fd::Time now = pacer.clock.wall_at(tsc);
    pacer.now_ps = now.ps();
    if (!fd::take_frames(pool, pkts, kBurst)) {  // fill_run resets them
      drain(t.drain);
      continue;
    }
    uint16_t n = 0;
    while (n < kBurst) {
      const fd::Sender::Runs got = loop.sender.next_runs(now, runs, kBurst - n, gate);
      for (size_t ri = 0; ri < got.runs; ++ri) {
        const fd::TxRun& r = runs[ri];
        const uint32_t k = r.n;
        fd::FrameSpec& s = loop.specs[r.dst];
        s.ip_id = ip_id;
        s.hdr = fd::FabemuHeader{fd::PacketKind::kData, r.retransmit ? fd::kFlagRetransmit : uint16_t{0}, 0, r.dst,
                                 r.message_id, r.seq, r.count, r.message_length, r.offset, now.ps()};
        s.payload_bytes = r.bytes;
        const uint64_t bytes = fd::fill_run(pkts + n, k, loop.flows[r.dst], s, r.last_bytes, zero);
        if (bytes == 0) {
          error = "a run does not fit its mbufs";
          return 0;
        }
        n = static_cast<uint16_t>(n + k);
        ip_id = static_cast<uint16_t>(ip_id + k);
        // Accounting, as the fabric keeps it, once per run.
        loop.acc.frames_tx += k;
        loop.acc.frame_bytes_tx += bytes;
        loop.acc.data_frames += k;
        loop.acc.retransmissions += r.retransmit ? k : 0;
        if (r.seq == 0) loop.firsts.add(n - k, &loop.records[r.cookie]);  // stamped as it leaves (send)
        if (pacing == Pacing::kOff) {
          LinkTx& lt = loop.links[r.dst];
          if (lt.bytes == 0) lt.first = tsc;
          lt.last = tsc;
          lt.bytes += uint64_t{k - 1} * r.bytes + r.last_bytes;
        }
        if (r.seq + r.n == r.count && !r.retransmit) loop.next_message(r.dst, r.message_id, r.count, now);
      }
      // Nothing (due) now. (The fabric also stops when a call gives fewer runs and packets than it could:
      // nothing is submitted while it transmits. Here each message's successor is submitted as its last
      // packet is built, so the next call may find more.)
      if (got.packets == 0) break;
    }
    if (pacing != Pacing::kOff) pacer.queue_burst();
    const uint16_t took = loop.send(t, pkts, n);
    if (pacing != Pacing::kOff) pacer.departed(took);
    sent += took;
  }
  benchmark::DoNotOptimize(pacer.jitter_ns);
  benchmark::DoNotOptimize(pacer.link);
  benchmark::DoNotOptimize(pacer.ratio_sum);
  return sent;
}

void fabric_tx_runs(benchmark::State& state, Dev dev, fd::WireMode mode, uint32_t payload, Pacing pacing,
                    uint32_t packets) {
  const Target t = target(dev);
  Loop loop(mode, payload, packets);
  Pacer pacer(pacing, payload, loop.records);
  t.tx->reset_stats();
  // The benchmark's own iteration (for (auto _ : state)), one step per burst.
  // (As a range for does it: begin(), then end() once, which starts the timing.)
  auto it = state.begin();
  const auto end = state.end();
  bool first = true;
  const auto more = [&] {
    if (!first) ++it;
    first = false;
    return it != end;
  };
  const char* error = nullptr;
  const uint64_t sent = runs_loop(more, t, loop, pacer, mode, payload, pacing, error);
  if (error != nullptr) {
    state.SkipWithError(error);
    return;
  }
  loop.finish(state, t, sent, true);
}

// aggregate/<mode>/null/<bytes>B/lcores_<n>: the same loop (pace_off) on n lcores at once (EAL worker lcores
// 1..n, FABEMU_BENCH_EAL_ARGS), each with its own state as a transmit lcore of the fabric has it (Sender,
// templates, records, accounting, its mempool cache) and its own transmit queue of one net_null port, for
// FABEMU_BENCH_AGG_MS (default 500) of wall time: the frames of all of them per second. The main lcore
// sleeps meanwhile (rte_eal_wait_lcore would spin on a core a worker needs).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One lcore's state, made on that lcore (its own malloc arena: no cache line of it next to another lcore's,
// as the fabric's lanes fill their own queues and tables on their lcores).
struct AggregateLane {
  std::optional<Loop> loop;
  std::optional<Pacer> pacer;
  Target target;
  uint64_t end_tsc = 0, sent = 0;
  double cpu_seconds = 0;  // the CPU time its thread got (the machine is shared: the wall rate depends on it)
  const char* error = nullptr;
  fd::WireMode mode;
  uint32_t payload, packets;
  alignas(64) std::atomic<bool> ready{false}, go{false};
  alignas(64) std::atomic<bool> done{false};
  AggregateLane(fd::WireMode m, uint32_t p, uint32_t n, Target t) : target(t), mode(m), payload(p), packets(n) {}
  static int run(void* self) {
    auto& a = *static_cast<AggregateLane*>(self);
    a.loop.emplace(a.mode, a.payload, a.packets);
    a.pacer.emplace(Pacing::kOff, a.payload, a.loop->records);
    a.ready.store(true, std::memory_order_release);
    while (!a.go.load(std::memory_order_acquire)) rte_pause();
    const double cpu0 = thread_cpu_seconds();
    a.sent = runs_loop([&a] { return rte_rdtsc() < a.end_tsc; }, a.target, *a.loop, *a.pacer, a.mode, a.payload,
                       Pacing::kOff, a.error);
    a.cpu_seconds = thread_cpu_seconds() - cpu0;
    a.loop.reset();  // freed on its own lcore too
    a.pacer.reset();
    a.done.store(true, std::memory_order_release);
    return 0;
  }
};

// `port_each`: lcore i on a net_null of its own (queue 0), else on queue i of one net_null. net_null's
// queues are one array of 40-byte structs, each with a transmit counter it adds every burst to: queues
// 0 and 1 share a cache line, which the two lcores then pass back and forth every burst (a device
// artifact: a NIC's queues are rings of their own).
void aggregate_tx(benchmark::State& state, fd::WireMode mode, uint32_t payload, uint32_t packets, unsigned lcores,
                  bool port_each) {
  Devices& d = devices();
  if (!d.null_queues || rte_lcore_count() < lcores + 1 || d.null_each.size() < lcores) {
    state.SkipWithError("needs EAL worker lcores 1..n (FABEMU_BENCH_EAL_ARGS=\"... --lcores 0@0,1@0,2@1\")");
    return;
  }
  const char* ms_env = std::getenv("FABEMU_BENCH_AGG_MS");
  const uint64_t ms = ms_env != nullptr ? std::strtoull(ms_env, nullptr, 10) : 500;
  d.null_queues->zero_pool();  // made once, before the lcores take from it
  for (const auto& p : d.null_each) p->zero_pool();
  for (auto _ : state) {
    std::vector<std::unique_ptr<AggregateLane>> lanes;
    for (unsigned i = 0; i < lcores; ++i) {
      const Target t = port_each ? Target{d.null_each[i].get(), nullptr, 0}
                                 : Target{d.null_queues.get(), nullptr, static_cast<uint16_t>(i)};
      lanes.push_back(std::make_unique<AggregateLane>(mode, payload, packets, t));
    }
    for (unsigned i = 0; i < lcores; ++i) {
      if (rte_eal_remote_launch(&AggregateLane::run, lanes[i].get(), i + 1) != 0) {
        state.SkipWithError("rte_eal_remote_launch failed");
        return;
      }
    }
    for (const auto& l : lanes) {
      while (!l->ready.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const uint64_t start = rte_rdtsc();
    const uint64_t end = start + rte_get_tsc_hz() / 1000 * ms;
    for (const auto& l : lanes) {
      l->end_tsc = end;
      l->go.store(true, std::memory_order_release);
    }
    for (const auto& l : lanes) {
      while (!l->done.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rte_eal_mp_wait_lcore();
    const double seconds = static_cast<double>(rte_rdtsc() - start) / static_cast<double>(rte_get_tsc_hz());
    uint64_t sent = 0;
    double per_cpu_second = 0;  // the aggregate had every lcore had its core to itself
    for (const auto& l : lanes) {
      if (l->error != nullptr) {
        state.SkipWithError(l->error);
        return;
      }
      sent += l->sent;
      const std::string lc = "lcore" + std::to_string(&l - &lanes[0] + 1);
      state.counters[lc + "_fps"] = static_cast<double>(l->sent) / seconds;
      state.counters[lc + "_cpu"] = l->cpu_seconds / seconds;  // its share of a core
      if (l->cpu_seconds > 0) per_cpu_second += static_cast<double>(l->sent) / l->cpu_seconds;
    }
    state.counters["fps_full_cores"] = per_cpu_second;
    state.SetIterationTime(seconds);
    state.SetItemsProcessed(static_cast<int64_t>(sent));
  }
  state.counters["frame_B"] = static_cast<double>(fd::frame_bytes(mode, payload));
}

std::vector<std::string> eal_args() {
  if (const char* env = std::getenv("FABEMU_BENCH_EAL_ARGS"); env != nullptr) {
    std::vector<std::string> args;
    std::istringstream words(env);
    for (std::string w; words >> w;) args.push_back(w);
    return args;
  }
  const char* lcore = std::getenv("FABEMU_BENCH_LCORE");
  return fd::Eal::no_huge_args(lcore != nullptr ? static_cast<unsigned>(std::strtoul(lcore, nullptr, 10)) : 0);
}

void register_cases() {
  const struct {
    Dev dev;
    const char* name;
  } devs[] = {{Dev::kNull, "null"}, {Dev::kRing, "ring"}};
  const struct {
    fd::WireMode mode;
    const char* name;
  } modes[] = {{fd::WireMode::kFabemu, "fabemu"}, {fd::WireMode::kRoceV2, "roce"}};
  const struct {
    Pacing pacing;
    const char* name;
  } pacings[] = {{Pacing::kOff, "off"}, {Pacing::kPerFrame, "frame"}, {Pacing::kLazy, "lazy"}};
  // The framing-only cases first (bench_wire_framing.cpp), then those on a device.
  register_framing_cases();
  // The aggregate over transmit lcores: 1 and 2, one after the other in the same run.
  for (const auto& m : modes) {
    for (const uint32_t payload : {0u, 1024u}) {
      const std::string size = "/" + std::to_string(fd::frame_bytes(m.mode, payload)) + "B";
      for (const bool each : {true, false}) {
        for (const unsigned lcores : {1u, 2u}) {
          benchmark::RegisterBenchmark(("aggregate/" + std::string(m.name) + (each ? "/nulls" : "/null") + size +
                                        "/lcores_" + std::to_string(lcores)).c_str(),
                                       aggregate_tx, m.mode, payload, payload == 0 ? 1u : 64u, lcores, each)
              ->UseManualTime()
              ->Iterations(1);
        }
      }
    }
  }
  for (const auto& d : devs) {
    for (const auto& m : modes) {
      for (const uint32_t payload : {0u, 64u, 1024u}) {
        const auto bytes = static_cast<uint16_t>(fd::frame_bytes(m.mode, payload));
        const std::string size = "/" + std::to_string(bytes) + "B";
        const std::string dev = std::string("/") + d.name;
        benchmark::RegisterBenchmark(("txonly_ref" + dev + size).c_str(), txonly_ref, d.dev, bytes, false)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("txonly_alloc" + dev + size).c_str(), txonly_ref, d.dev, bytes, true)
            ->UseRealTime();
        if (m.mode == fd::WireMode::kFabemu) {
          benchmark::RegisterBenchmark(("floor" + dev + size).c_str(), floor_ref, d.dev, bytes)->UseRealTime();
        }
        // The fabric's loop (a run at a time) and the loop before runs (a packet at a time).
        for (const auto& pc : pacings) {
          const std::string pace = std::string("/pace_") + pc.name;
          benchmark::RegisterBenchmark((m.name + dev + size + pace).c_str(), fabric_tx_runs, d.dev, m.mode, payload,
                                       pc.pacing, 64u)
              ->UseRealTime();
          // Shorter messages of full frames: where the per-message cost starts to tell.
          for (const uint32_t packets : {2u, 4u, 8u, 16u}) {
            if (payload == 0 || pc.pacing == Pacing::kPerFrame) continue;
            benchmark::RegisterBenchmark((m.name + dev + size + pace + "/msg_" + std::to_string(packets) + "pkt").c_str(),
                                         fabric_tx_runs, d.dev, m.mode, payload, pc.pacing, packets)
                ->UseRealTime();
          }
          benchmark::RegisterBenchmark((std::string(m.name) + "_packets" + dev + size + pace).c_str(),
                                       fabric_tx<Variant::kFull>, d.dev, m.mode, payload, pc.pacing)
              ->UseRealTime();
        }
        benchmark::RegisterBenchmark((std::string(m.name) + "_encode" + dev + size + "/pace_off").c_str(),
                                     fabric_tx<Variant::kEncode>, d.dev, m.mode, payload, Pacing::kOff)
            ->UseRealTime();
        benchmark::RegisterBenchmark((std::string(m.name) + "_nosender" + dev + size + "/pace_off").c_str(),
                                     fabric_tx<Variant::kNoSender>, d.dev, m.mode, payload, Pacing::kOff)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  try {
    fd::Eal::start(eal_args());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dpdk_tx: %s\n", e.what());
    return 2;
  }
  if (const char* e = std::getenv("FABEMU_BENCH_CRC"); e != nullptr) {
    if (std::string(e) == "single") fd::set_run_crc_batch(0);
    if (std::string(e) == "lanes2" && fd::set_run_crc_batch(2) != 2) {
      std::fprintf(stderr, "bench_dpdk_tx: FABEMU_BENCH_CRC=lanes2: this CPU has no AVX2 VPCLMULQDQ\n");
      return 2;
    }
  }
  if (fd::run_crc_batch() == 0) {
    std::fprintf(stderr, "bench_dpdk_tx: run CRCs frame by frame\n");
  } else {
    std::fprintf(stderr, "bench_dpdk_tx: run CRCs %u frames at a time\n", fd::run_crc_batch());
  }
  int rc = 0;
  try {
    fd::PortConfig cfg;
    cfg.mbufs = cfg.mbufs_for(2 * 4096, kBurst);
    Devices& d = devices();
    d.null = std::make_unique<fd::Port>(fd::Port::open("net_null_bench0", cfg));
    if (rte_lcore_count() >= 2) {
      fd::PortConfig qc = cfg;
      qc.tx_queues = static_cast<uint16_t>(rte_lcore_count() - 1);
      qc.mbufs = qc.mbufs_for(2 * 4096, kBurst, rte_lcore_count());
      d.null_queues = std::make_unique<fd::Port>(fd::Port::open("net_null_bench1", qc));
      for (unsigned i = 1; i < rte_lcore_count(); ++i) {
        d.null_each.push_back(std::make_unique<fd::Port>(fd::Port::open("net_null_bench_l" + std::to_string(i), cfg)));
      }
    }
    d.pair = std::make_unique<fd::RingPair>("bench");
    d.a = std::make_unique<fd::Port>(d.pair->a(), cfg);
    d.b = std::make_unique<fd::Port>(d.pair->b(), cfg);
    register_cases();
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dpdk_tx: %s\n", e.what());
    rc = 1;
  }
  Devices& d = devices();
  d.a.reset();
  d.b.reset();
  d.pair.reset();
  d.null.reset();
  d.null_queues.reset();
  d.null_each.clear();
  benchmark::Shutdown();
  fd::Eal::shutdown();
  return rc;
}
