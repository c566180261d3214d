#include "host/dpdk/rx_worker.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>

namespace fabemu::host::dpdk {

namespace {
constexpr uint16_t kFeedbackBurst = 32;  // tx burst of ACK/NACK frames
constexpr uint32_t kAckEvery = 32;   // a partial ACK every this many packets of a message (a power of two)
constexpr unsigned kRingSize = 65536;  // completions in flight worker -> main (2 MiB)
// The NIC clock is sampled 8 times at start (100 us apart), then 1 ms later, the interval doubling to
// every kClockSampleMs: the line's span grows fast at first (8 samples over 0.7 ms extrapolated to the end
// of a 30 ms run were 4 us off), then the samples only follow the oscillators' drift.
constexpr uint64_t kClockSampleMs = 100;
constexpr uint64_t kClockFirstSampleUs = 1000;
constexpr int kClockReads = 4;  // reads per sample: the shortest is kept (one the OS interrupted is not)
}  // namespace

// --- RxPath ----------------------------------------------------------------------------------------------

RxPath::RxPath(const RxPathConfig& config, Port& port, PcapWriter* pcap, uint16_t queue)
    : cfg_(config), port_(port), queue_(queue), pcap_(pcap), clock_(0), faults_(config.faults) {
  receivers_.resize(cfg_.npus);
  active_of_.assign(cfg_.npus, 0);
  templates_ = FlowTemplates(cfg_.npus);
  scratch_.resize(16384);
  tx_.reserve(kRxBurst * kRxBursts * 2);
  reorder_.reserve(kRxBurst * kRxBursts);
  release_.reserve(kRxBurst * kRxBursts);
  acks_.reserve(kRxBurst * kRxBursts * 2);  // a round's data frames, and as many released duplicates
  stall_ticks_ = clock_.hz() / 1'000'000 * (kPollStallNs / 1000);
  stalls_.reserve(1024);
  // The NIC's receive times are used when the offload is on and its clock can be read (to map it to the
  // TSC); otherwise arrivals are TSC times (frames with a timestamp are still counted).
  uint64_t probe = 0;
  if (port_.rx_timestamp_offload() && port_.read_clock(probe)) {
    nic_ = true;
    sample_every_max_ = rte_get_tsc_hz() / 1000 * kClockSampleMs;
    sample_every_ = rte_get_tsc_hz() / 1'000'000 * kClockFirstSampleUs;
    for (int i = 0; i < 8; ++i) {
      sample_clock();
      rte_delay_us_block(100);
    }
    next_sample_ = rte_rdtsc() + sample_every_;
  }
}

RxPath::~RxPath() {
  for (rte_mbuf* m : tx_) rte_pktmbuf_free(m);
  for (const Held& h : reorder_) rte_pktmbuf_free(h.m);
  free_done();
}

void RxPath::free_done() noexcept {
  if (done_n_ > 0) rte_pktmbuf_free_bulk(done_.data(), done_n_);
  done_n_ = 0;
}

void RxPath::sample_clock() noexcept {
  // The pair is (NIC clock, the TSC midway through reading it), from the shortest of kClockReads reads:
  // the midpoint of a read is off by up to half its length, and a read the OS interrupted (or a slow bus
  // transaction) is long, so it would put a sample far from the line.
  uint64_t best_nic = 0, best_mid = 0, best_len = UINT64_MAX;
  for (int i = 0; i < kClockReads; ++i) {
    const uint64_t t0 = rte_rdtsc();
    uint64_t nic = 0;
    if (!port_.read_clock(nic)) return;
    const uint64_t t1 = rte_rdtsc();
    if (t1 - t0 < best_len) {
      best_len = t1 - t0;
      best_nic = nic;
      best_mid = t0 + (t1 - t0) / 2;
    }
  }
  fit_.add(best_nic, best_mid);
}

Receiver& RxPath::receiver(uint32_t dst) {
  return endpoint_of(receivers_, active_receivers_, dst, [&] {
    ReceiverConfig c;
    c.sources = cfg_.npus;
    c.window = cfg_.window;
    c.nack_delay = cfg_.nack_delay;
    return c;
  });
}

ReceiverStats RxPath::receiver_totals() const noexcept {
  ReceiverStats t;
  for (const uint32_t r : active_receivers_) {
    const ReceiverStats& s = receivers_[r]->stats();
    t.packets += s.packets;
    t.accepted += s.accepted;
    t.duplicates += s.duplicates;
    t.stale += s.stale;
    t.reordered += s.reordered;
    t.out_of_window += s.out_of_window;
    t.invalid += s.invalid;
    t.completed += s.completed;
    t.bytes_completed += s.bytes_completed;
    t.nacks += s.nacks;
  }
  return t;
}

bool RxPath::poll(RxSink& sink, uint64_t stamp_ps, uint64_t ticks) {
  ++stats_.polls;
  // One reading of the clock per round (the caller's): the Receivers' timers (NACK delay, 200 us) need no
  // finer.
  now_ = clock_.wall_at(ticks);
  if (last_poll_ticks_ != 0 && ticks - last_poll_ticks_ > stall_ticks_) [[unlikely]] {
    ++stats_.poll_stalls;
    stats_.poll_gap_max_ns = std::max(stats_.poll_gap_max_ns, clock_.ticks_to_ns(ticks - last_poll_ticks_));
    if (stalls_.size() < kMaxStalls) stalls_.push_back(TickSpan{last_poll_ticks_, ticks});
  }
  last_poll_ticks_ = ticks;
  stamp_ps_ = stamp_ps == kStampWall ? now_.ps() : stamp_ps;
  if (nic_ && rte_rdtsc() >= next_sample_) {
    sample_clock();
    sample_every_ = std::min(sample_every_ * 2, sample_every_max_);
    next_sample_ = rte_rdtsc() + sample_every_;
  }
  data_seen_ = false;
  free_done();  // left by a round that threw
  // Progress: a frame of ours that the fault injection kept. One it drops is as if it never came, so a
  // run whose every frame it drops (--drop-rate 1) stalls and stops after the stall timeout instead of
  // retransmitting forever, with the receive side inline as on its own lcore (where only ACKs and NACKs
  // are the main lcore's progress).
  bool kept = false;
  const uint64_t frames_before = stats_.frames_rx;
  receive_round(port_, queue_, cfg_.rules, scratch_, stats_, stats_.hw_timestamped,
                [&](rte_mbuf* m, const DecodedFrame& f, bool has_ts, uint64_t ts, uint64_t arrived) {
    if (f.hdr.kind != PacketKind::kData) {
      kept = true;
      sink.feedback(f);
      done_[done_n_++] = m;
      return;
    }
    data_seen_ = true;
    const FaultDecision d = faults_.next();
    if (d.drop) {
      rte_pktmbuf_free(m);
      return;
    }
    kept = true;
    if (d.reorder) {
      reorder_.push_back(Held{m, 1 + static_cast<uint32_t>(faults_.uniform(8))});
      return;
    }
    handle(f, sink, has_ts, ts, arrived);
    if (d.duplicate) handle(f, sink, has_ts, ts, arrived);
    done_[done_n_++] = m;
    // Frames held back are released behind `after` later data frames.
    for (size_t j = 0; j < reorder_.size();) {
      if (--reorder_[j].after == 0) {
        rte_mbuf* h = reorder_[j].m;
        reorder_.erase(reorder_.begin() + static_cast<ptrdiff_t>(j));
        process_held(h, sink);
      } else {
        ++j;
      }
    }
  });
  free_done();
  if (!data_seen_ && !reorder_.empty()) {
    // Nothing newer came: what was held back is released (it was overtaken by what arrived meanwhile).
    release_.swap(reorder_);
    for (const Held& h : release_) process_held(h.m, sink);
    release_.clear();
  }
  // The round's ACKs, built now that every completion of the round has gone to the sink (they leave
  // with the round's flush either way).
  for (const Ack& a : acks_) feedback(a.from, a.to, a.id, PacketKind::kAck, a.count, a.cumulative, a.cumulative, {});
  acks_.clear();
  // A full round (every burst full) leaves frames in the port: this side is behind, and a message that
  // looks idle may have its next frames waiting there. Its NACK would be a guess: the check waits until
  // the port is drained, or at most 4 NACK delays (a port that never drains still gets NACKs).
  const bool behind = stats_.frames_rx - frames_before >= uint64_t{kRxBurst} * kRxBursts;
  if (now_.ps() >= next_nack_scan_ps_ &&
      (!behind || now_.ps() >= last_nack_scan_ps_ + 4 * cfg_.nack_delay.ps())) {
    nack_scan();
  }
  flush();
  return kept;
}

void RxPath::nack_scan() {
  last_nack_scan_ps_ = now_.ps();
  next_nack_scan_ps_ = now_.ps() + std::max<uint64_t>(cfg_.nack_delay.ps() / kNackScansPerDelay, 1);
  for (const uint32_t dst : active_receivers_) {
    if (active_of_[dst] == 0) continue;
    Receiver& rx = *receivers_[dst];
    nacks_.clear();
    rx.poll_nacks(now_, nacks_);
    for (const Nack& n : nacks_.nacks) {
      feedback(dst, n.src, n.message_id, PacketKind::kNack, n.count, n.cumulative, n.covered,
               std::span<const uint32_t>(nacks_.seqs).subspan(n.first, n.missing));
    }
  }
}

void RxPath::process_held(rte_mbuf* m, RxSink& sink) {
  DecodedFrame f;
  uint64_t ts = 0;
  const bool has_ts = port_.rx_timestamp(m, ts);
  // Held back by the fault injection (--reorder-rate): it arrives now, as if the path had delayed it.
  if (decode_mbuf(m, cfg_.rules, f, scratch_) == Verdict::kOurs) handle(f, sink, has_ts, ts, rte_rdtsc());
  rte_pktmbuf_free(m);
}

void RxPath::handle(const DecodedFrame& f, RxSink& sink, bool has_ts, uint64_t ts, uint64_t arrived) {
  const FabemuHeader& h = f.hdr;
  if (h.src_rank >= cfg_.npus || h.dst_rank >= cfg_.npus) {
    ++stats_.rx_invalid;
    return;
  }
  ++stats_.data_by_ecn[static_cast<uint8_t>(f.ecn) & 3];
  stats_.dscp_changed += f.dscp != cfg_.dscp ? 1 : 0;
  const RxPacket p{h.src_rank, h.message_id, h.seq, h.count, h.message_length, f.payload_bytes,
                   (h.flags & kFlagRetransmit) != 0, f.ecn == Ecn::kCe};
  Receiver& rx = receiver(h.dst_rank);
  const RxEvent e = rx.on_packet(p, now_);
  active_of_[h.dst_rank] = static_cast<uint32_t>(rx.active_messages());
  if (e == RxEvent::kCompleted) {
    RxCompletion c;
    c.src = h.src_rank;
    c.dst = h.dst_rank;
    c.wire_id = h.message_id;
    c.rx_ticks = arrived;
    c.ce = rx.completed_ce();
    if (nic_ && has_ts && fit_.ready()) {
      // The NIC's receive time of the frame that completed the message, on the TSC (never after its burst
      // came back: the fit's error must not make a frame arrive after fabemu had it).
      const uint64_t t = fit_.to_tsc(ts);
      c.rx_ticks = t < arrived ? t : arrived;
      c.nic = 1;
      ++stats_.nic_arrivals;
    }
    ++stats_.completions;
    sink.completed(c);
  }
  if (e == RxEvent::kCompleted || e == RxEvent::kStale) {
    acks_.push_back(Ack{h.dst_rank, h.src_rank, h.message_id, h.count, h.count});
  } else if (e == RxEvent::kAccepted && (h.seq & (kAckEvery - 1)) == kAckEvery - 1) {
    // A partial ACK: everything below the first gap (or up to this packet) has arrived.
    uint32_t gap = 0;
    const size_t n = rx.missing(h.src_rank, h.message_id, std::span<uint32_t>(&gap, 1));
    const uint32_t cumulative = n > 0 ? gap : h.seq + 1;
    if (cumulative > 0) acks_.push_back(Ack{h.dst_rank, h.src_rank, h.message_id, h.count, cumulative});
  }
}

void RxPath::feedback(uint32_t from, uint32_t to, uint64_t id, PacketKind kind, uint32_t count,
                      uint32_t cumulative, uint32_t covered, std::span<const uint32_t> missing) {
  FrameSpec spec;
  spec.mode = cfg_.mode;
  spec.src = cfg_.plan->at(from);
  spec.dst = cfg_.plan->at(to);
  if (cfg_.mode == WireMode::kRoceV2) spec.src.port = flow_source_port(uint64_t{from} << 32 | to);
  spec.ip_id = static_cast<uint16_t>(ip_id_++);
  spec.dscp = cfg_.dscp;
  spec.ecn = cfg_.ecn;
  spec.hdr = FabemuHeader{kind, 0, from, to, id, cumulative, count, 0, covered, stamp_ps_};
  spec.bth.opcode = kRcSendOnly;
  spec.bth.dest_qp = to + 1;
  spec.missing = missing;
  rte_mbuf* m = rte_pktmbuf_alloc(port_.pool());
  if (m == nullptr) return;  // pool empty: the sender's timeout covers a lost ACK / NACK
  const uint16_t len = fill_mbuf(m, templates_.of(spec), spec);  // a prebuilt header per flow
  if (len == 0) {
    rte_pktmbuf_free(m);
    throw std::logic_error("DpdkFabric: an ACK/NACK frame does not fit its mbuf");
  }
  if (pcap_ != nullptr) pcap_->write(mbuf_bytes(m), clock_.wall().ps() / 1000);
  ++stats_.frames_tx;
  stats_.frame_bytes_tx += len;
  if (kind == PacketKind::kAck) {
    ++stats_.acks;
  } else {
    ++stats_.nacks;
  }
  tx_.push_back(m);
}

void RxPath::flush() { send_bursts(port_, queue_, tx_, kFeedbackBurst, [](size_t, uint16_t) {}); }

// --- RxWorker --------------------------------------------------------------------------------------------

RxWorker::RxWorker(RxPath& path, unsigned lcore) : path_(path), lcore_(lcore) {
  static std::atomic<unsigned> counter{0};
  const std::string name = fmt::format("fe_rxc{}", counter.fetch_add(1));
  ring_ = rte_ring_create_elem(name.c_str(), sizeof(RxCompletion), kRingSize, rte_lcore_to_socket_id(lcore),
                               RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (ring_ == nullptr) {
    throw std::runtime_error(fmt::format("RX lcore {}: rte_ring_create_elem: {}", lcore, rte_strerror(rte_errno)));
  }
  pending_.reserve(4096);
  const int rc = rte_eal_remote_launch(&RxWorker::entry, this, lcore);
  if (rc != 0) {
    rte_ring_free(ring_);
    throw std::runtime_error(fmt::format("RX lcore {}: rte_eal_remote_launch: {}", lcore, rte_strerror(-rc)));
  }
}

RxWorker::~RxWorker() {
  if (!joined_) {
    request_stop(0, 0);
    rte_eal_wait_lcore(lcore_);
  }
  rte_ring_free(ring_);
}

int RxWorker::entry(void* self) { return static_cast<RxWorker*>(self)->run(); }

void RxWorker::RingSink::completed(const RxCompletion& c) {
  RxCompletion copy = c;  // the ring's API takes a non-const pointer
  if (!w_.pending_.empty() || rte_ring_sp_enqueue_elem(w_.ring_, &copy, sizeof(RxCompletion)) != 0) {
    w_.pending_.push_back(c);  // the ring is full: passed on in order by the next rounds
  }
}

void RxWorker::RingSink::feedback(const DecodedFrame& /*f*/) {
  // ACKs/NACKs are the main lcore's (port A): one on the receive port is not for this fabric's senders.
  w_.path_.count_invalid();
}

int RxWorker::run() noexcept {
  run_capturing_failure("RX", lcore_, failure_, [this] {
    TscClock clock(0);
    uint64_t last_rx = rte_rdtsc();
    for (;;) {
      // Read before polling: every frame the main lcore sent before it asked to stop is in the port's
      // queue by then, so the poll below sees it (checked after the poll, a frame sent between the two
      // would be left behind for the next run on these ports).
      const bool stopping = stop_.load(std::memory_order_acquire);
      const bool got = path_.poll(sink_, RxPath::kStampWall);
      const uint64_t now = rte_rdtsc();
      if (got) last_rx = now;
      if (!pending_.empty()) {
        const unsigned n = rte_ring_sp_enqueue_burst_elem(ring_, pending_.data(), sizeof(RxCompletion),
                                                          static_cast<unsigned>(pending_.size()), nullptr);
        pending_.erase(pending_.begin(), pending_.begin() + n);
      }
      if (stopping) {
        const bool quiet = clock.ticks_to_ns(now - last_rx) >= quiet_ns_ && path_.idle() && pending_.empty();
        if (quiet || now >= deadline_tsc_ || Eal::stop_requested()) break;
      }
    }
  });
  done_.store(true, std::memory_order_release);
  return 0;
}

unsigned RxWorker::take(RxCompletion* out, unsigned n) noexcept {
  return rte_ring_sc_dequeue_burst_elem(ring_, out, sizeof(RxCompletion), n, nullptr);
}

void RxWorker::request_stop(uint64_t quiet_ns, uint64_t deadline_tsc) noexcept {
  quiet_ns_ = quiet_ns;
  deadline_tsc_ = deadline_tsc;
  stop_.store(true, std::memory_order_release);
}

void RxWorker::join() { join_lcore(lcore_, joined_, failure_); }

}  // namespace fabemu::host::dpdk
