// DpdkFabric's transmit side (dpdk_fabric.h): the senders' packets built into frames from their flows'
// templates (build_run), paced per first link (pace_run, link_pacer.h), held when built ahead
// (send_due_held), and handed to port A's transmit queues (flush), where their departures are timed.
#include <rte_cycles.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <utility>

#include "host/dpdk/dpdk_fabric.h"

namespace fabemu::host::dpdk {

namespace {
constexpr uint16_t kDataBurst = 32;  // tx burst of data frames
}  // namespace

uint64_t DpdkFabric::build_run(TxLane& lane, rte_mbuf* const* ms, uint32_t n, const FrameSpec& spec,
                               uint32_t last_bytes, bool payload_zero) {
  const uint64_t bytes = fill_run(ms, n, lane.templates.of(spec), spec, last_bytes, payload_zero);
  if (bytes == 0) {
    rte_pktmbuf_free_bulk(const_cast<rte_mbuf**>(ms), n);
    throw std::logic_error("DpdkFabric: a frame does not fit its mbuf");
  }
  if (pcap_ && n > 1) {  // (no capture with transmit lcores)
    // A run is captured by its description, encoded again by the writing thread (PcapWriter::write_run):
    // the lcore writes about 160 bytes for the run instead of each frame's head.
    pcap_->write_run(spec, n, last_bytes, clock_.wall().ps() / 1000);
  } else if (pcap_) {
    // A data frame's payload (and RoCEv2 pad) is zeros: captured as such, not read back (PcapWriter).
    const uint64_t ns = clock_.wall().ps() / 1000;
    const bool roce = spec.mode == WireMode::kRoceV2;
    const size_t head = kEthHeaderBytes + kIpv4HeaderBytes + kUdpHeaderBytes + (roce ? kBthBytes : 0) +
                        kFabemuHeaderBytes;
    const size_t tail = roce ? kIcrcBytes : 0;
    for (uint32_t i = 0; i < n; ++i) {
      const std::span<const uint8_t> f = mbuf_bytes(ms[i]);
      const size_t body = f.size() > head + tail ? f.size() - head - tail : 0;
      pcap_->write_zero_body(f, std::min(head, f.size()), body, ns);
    }
  }
  lane.st->frames_tx += n;
  lane.st->frame_bytes_tx += bytes;
  return bytes;
}

bool DpdkFabric::refill_stash(TxLane& lane) {
  lane.stash_next = lane.stash_n = 0;
  if (take_frames(data_pool_, lane.stash, TxLane::kStash)) {
    lane.stash_n = TxLane::kStash;
    return true;
  }
  // Fewer than a stash left in the pool (and the lcore cache): one at a time.
  rte_mbuf* m = rte_pktmbuf_alloc(data_pool_);
  if (m == nullptr) return false;
  lane.stash[0] = m;
  lane.stash_n = 1;
  return true;
}

bool DpdkFabric::refill_short(TxLane& lane) {
  const unsigned want = TxLane::kShortStash - lane.short_n;
  if (want == 0) return true;
  if (take_frames(ports_.a().pool(), lane.short_stash + lane.short_n, want)) {
    lane.short_n = TxLane::kShortStash;
    return true;
  }
  return false;  // port A's pool is (nearly) empty: next poll
}

void DpdkFabric::retransmitted(TxLane& lane, uint32_t src, uint32_t dst, uint64_t wire_id) {
  if (lane.notices == nullptr) {
    retransmitted(src, dst, wire_id);
    return;
  }
  // On a transmit lcore: the main lcore owns the records (take_notices).
  const TxRetransmitted n{wire_id, src, dst};
  if (!lane.pending_notices.empty() || rte_ring_sp_enqueue_elem(lane.notices, const_cast<TxRetransmitted*>(&n),
                                                                 sizeof(TxRetransmitted)) != 0) {
    lane.pending_notices.push_back(n);  // the ring is full: passed on in order by the next rounds
  }
}

void DpdkFabric::retransmitted(uint32_t src, uint32_t dst, uint64_t wire_id) {
  // Karn's rule: the message's round trip is no RTT sample any more (until reassembled).
  const auto w = by_wire_.find(pair_key(src, dst, wire_id, npus_));
  if (w != by_wire_.end()) records_.at(w->second).retransmitted = true;
}

void DpdkFabric::set_destination(FrameSpec& spec, uint32_t src, uint32_t dst) const {
  spec.dst = plan_.at(dst);
  if (opt_.mode == WireMode::kRoceV2) spec.src.port = flow_source_port(uint64_t{src} << 32 | dst);
  spec.bth.dest_qp = dst + 1;
}

// Pacing (pace_frames, link_pacer.h): a first transmission leaves no earlier than the modelled departure of
// its bytes, and no earlier than its link's rate allows after the frame before. The frames of a run that
// are due by now leave in this poll; the rest of the run is not taken from the Sender: it stays there,
// unsent and untimed, until it is due (RunGate).
uint32_t DpdkFabric::pace_run(TxLane& lane, const TxRun& r) {
  const Record& rec = *reinterpret_cast<const Record*>(static_cast<uintptr_t>(r.cookie));
  const uint32_t link = rec.first_link;
  const Paced got = pace_frames(clock_, link, rec.depart, rec.rate, r, burst_ps_[link], lane.pace_slot[link],
                                lane.pace_now_ps, false, lane.paced.data() + lane.paced_n, lane.pace_ahead_ps);
  lane.paced_n += got.runs;
  return got.frames;
}

void DpdkFabric::transmit(TxLane& lane, const TscClock::Reading& now) {
  // With pacing (dilation > 0) the Sender gives only the new packets that are due (pace_run); without
  // it, all of them. Either way a run of one message at a time (Sender::next_runs, fill_run).
  TxRound round;
  round.lane = &lane;
  round.paced = !clock_.as_fast_as_possible();
  // The round's clock reading for the pacing's now and the frames' stamp (the emulated time of the same
  // instant).
  round.wall = now.wall;
  // (A transmit lcore cannot read the engine: the latest hand-over's engine time.)
  round.stamp = round.paced ? now.emulated : lane.notices == nullptr ? engine_.now() : emu::Time::from_ps(lane.stamp_ps);
  lane.pace_now_ps = round.wall.ps();
  round.fabric = this;
  round.gate = round.paced ? RunGate{[](void* rd, const TxRun& r) {
                                       const TxRound& tr = *static_cast<const TxRound*>(rd);
                                       return tr.fabric->pace_run(*tr.lane, r);
                                     },
                                     &round}
                           : RunGate{};
  round.spec.mode = opt_.mode;
  round.spec.dscp = opt_.dscp;
  round.spec.ecn = opt_.ecn;
  // Frames built ahead that are due now leave first, before this round builds any (build-ahead).
  if (!lane.holding.empty()) send_due_held(lane, round.wall.ps());
  if (lane.held.size() < lane.senders.size()) lane.held.resize(lane.senders.size());
  round.built = lane.built();
  for (uint32_t si = 0; si < lane.senders.size(); ++si) {
    // Nothing before its next work (Sender::next_work): most senders, most polls. Their own lines stay
    // untouched (an idle sender's next_runs read its timers and queues, cold in a polling loop).
    if (lane.next_work[si] > round.wall.ps()) continue;
    transmit_sender(si, round);
  }
  // Frames held that came due while this round built (it may have built for a while).
  if (!lane.holding.empty()) send_due_held(lane, clock_.wall().ps());
  flush_all(lane, round.paced);
}

[[gnu::always_inline]] inline void DpdkFabric::transmit_sender(uint32_t si, TxRound& round) {
  TxLane& lane = *round.lane;
  Sender& s = lane.senders[si];
  round.src = lane.senders.src(si);
  const size_t txq = txq_of(lane, si);
  round.spec.src = plan_.at(round.src);
  round.spec_dst = ~0u;
  std::array<TxRun, TxLane::kShortStash>& runs = lane.runs;
  const Held& held = lane.held[si];
  // Build-ahead while this sender and all hold fewer than their limits; else only frames due now.
  lane.pace_ahead_ps =
      !lane.behind && held.frames() < kHeldMax && lane.held_frames < kHeldTotalMax ? ahead_wall_ps_ : 0;
  uint32_t budget = kFramesPerSender;  // per poll, so that one sender cannot starve the others
  // The stash's mbufs count in kTxQueueLimit (frames_in_flight) with the frames built. The sender is
  // asked for no more packets than the stash has mbufs for: every packet taken leaves in this poll.
  while (budget > 0 && round.built + TxLane::kStash < kTxQueueLimit) {
    if (lane.stash_next == lane.stash_n && !refill_stash(lane)) break;  // pool empty: next poll
    // A shorter frame for each run that may end in one (split_short_).
    if (split_short_ && !refill_short(lane)) break;
    const size_t room = std::min<size_t>(
        {budget, kTxQueueLimit - TxLane::kStash - round.built, size_t{lane.stash_n} - lane.stash_next});
    lane.paced_n = 0;
    const Sender::Runs got = s.next_runs(round.wall, runs, room, round.gate);
    size_t paced_next = 0;  // paced_ holds the PacedRuns of the first transmissions' frames, in order
    for (size_t ri = 0; ri < got.runs; ++ri) budget -= place_run(runs[ri], si, txq, round, paced_next);
    // Fewer than asked for and room for more runs: the sender has nothing more to send now.
    if (got.packets < room && got.runs < runs.size()) break;
  }
  lane.next_work[si] = s.next_work(round.wall).ps();
}

[[gnu::always_inline]] inline uint32_t DpdkFabric::place_run(const TxRun& r, uint32_t si, size_t txq, TxRound& round,
                                                             size_t& paced_next) {
  TxLane& lane = *round.lane;
  FrameSpec& spec = round.spec;
  Held& held = lane.held[si];
  const uint32_t k = r.n;
  const uint32_t dst = lane.senders.dst(si, r.dst);  // r.dst is the destination's number in this sender
  // A first transmission's cookie is its record (retransmissions are neither paced nor counted as
  // data frames).
  Record* rec = r.retransmit ? nullptr : reinterpret_cast<Record*>(static_cast<uintptr_t>(r.cookie));
  if (r.retransmit) [[unlikely]] retransmitted(lane, round.src, dst, r.message_id);
  if (dst != round.spec_dst) set_destination(spec, round.src, round.spec_dst = dst);
  spec.ip_id = static_cast<uint16_t>(lane.ip_id);
  spec.hdr = FabemuHeader{PacketKind::kData, r.retransmit ? kFlagRetransmit : uint16_t{0}, round.src, dst,
                          r.message_id, r.seq, r.count, r.message_length, r.offset, round.stamp.ps()};
  spec.payload_bytes = r.bytes;
  const uint32_t last = r.last_bytes;
  // The run's full frames from the stash (the zero pool); a shorter last frame too, unless it must
  // not be written there (split_short_: from short_stash_, its payload written).
  const uint32_t full = split_short_ && last != payload_ ? k - 1 : k;
  // A first transmission waits in the sender's hold when it is not due yet, or when frames built
  // before it wait there (its link's order); a retransmission leaves at once.
  size_t run_paced = paced_next;  // this run's PacedRuns: paced_[paced_next, run_paced)
  bool hold = false;
  if (round.paced && rec != nullptr) {
    for (uint32_t f = 0; f < k; ++run_paced) {
      const PacedRun& pr = lane.paced[run_paced];
      hold = hold || pr.paced_ps + uint64_t{pr.n - 1} * pr.frame_ps > lane.pace_now_ps;
      f += pr.n;
    }
    hold = hold || held.frames() > 0;
    if (hold) {
      // Its header's transmit time is its departure, not the time it was built. (A capture records
      // it when built, so that the file stays in time order: up to opt_.ahead early.)
      spec.hdr.tx_time_ps = std::max(round.stamp.ps(), wall_to_emulated_ps(lane.paced[paced_next].paced_ps));
    }
  }
  std::vector<rte_mbuf*>& dest = hold ? held.mbufs : lane.data[txq];
  const size_t first_index = dest.size();
  rte_mbuf* const* ms = lane.stash + lane.stash_next;
  lane.stash_next = static_cast<uint16_t>(lane.stash_next + full);  // taken: build_run frees them if it throws
  if (full > 0) build_run(lane, ms, full, spec, full == k ? last : r.bytes, true);
  dest.insert(dest.end(), ms, ms + full);
  if (full < k) {
    rte_mbuf* m = lane.short_stash[--lane.short_n];
    build_run(lane, &m, 1, run_frame(spec, k - 1, k, last), last, false);
    dest.push_back(m);
  }
  lane.ip_id += k;
  round.built += k;
  if (hold) {
    if (held.frames() == k) {  // it held none before
      lane.holding.push_back(si);
      lane.next_release_ps = std::min(lane.next_release_ps, lane.paced[paced_next].paced_ps);
    }
    lane.held_frames += k;
    lane.st->frames_ahead += k;
    if (r.seq == 0) held.firsts.emplace_back(first_index, rec);
    held.runs.insert(held.runs.end(), lane.paced.begin() + static_cast<std::ptrdiff_t>(paced_next),
                     lane.paced.begin() + static_cast<std::ptrdiff_t>(run_paced));
    paced_next = run_paced;
    lane.st->data_frames += k;
    return k;
  }
  if (rec != nullptr) {
    lane.st->data_frames += k;
    if (r.seq == 0) lane.firsts[txq].add(first_index, rec);  // stamped as it leaves (flush)
    if (round.paced) {  // the link's frames and bytes are counted as they leave (flush)
      // Behind the schedule by more than the ahead time: no more building ahead (the lcore has no
      // time to spare: the holds would only cost it) until a run leaves within a quarter of it.
      const uint64_t sched = lane.paced[paced_next].scheduled_ps;
      if (lane.pace_now_ps > sched + ahead_wall_ps_) {
        lane.behind = ahead_wall_ps_ > 0;
      } else if (lane.pace_now_ps < sched + ahead_wall_ps_ / 4) {
        lane.behind = false;
      }
      for (uint32_t f = 0; f < k; ++paced_next) {  // the run's PacedRuns: k frames
        f += lane.paced[paced_next].n;
        lane.paced_q[txq].push(lane.paced[paced_next]);
      }
    } else {
      // Nothing is scheduled without pacing: a link's frames and bytes are counted as they are
      // built, as frames_tx is (every frame built leaves before the run ends).
      LinkPace& lp = lane.link_pace[rec->first_link];
      lp.frames += k;
      lp.bytes += uint64_t{k - 1} * r.bytes + last;
    }
  } else if (round.paced) {
    lane.paced_q[txq].push_unpaced(k);  // a retransmission
  }
  return k;
}

void DpdkFabric::flush_all(TxLane& lane, bool paced) {
  for (size_t q = 0; q < lane.data.size(); ++q) {
    flush(lane, static_cast<uint16_t>(lane.txq_base + q), lane.data[q], lane.firsts[q],
          paced ? &lane.paced_q[q] : nullptr);
  }
}

void DpdkFabric::send_due_held(TxLane& lane, uint64_t now_ps) {
  bool any = false;
  size_t kept = 0;
  lane.next_release_ps = ~uint64_t{0};
  for (const uint32_t si : lane.holding) {
    Held& h = lane.held[si];
    const size_t txq = txq_of(lane, si);
    std::vector<rte_mbuf*>& out = lane.data[txq];
    PacedQueue& out_paced = lane.paced_q[txq];
    FirstFrames<Record>& firsts = lane.firsts[txq];
    // The due frames: whole runs, then the due front of the next one.
    size_t frames = 0;
    while (h.run_head < h.runs.size()) {
      PacedRun& pr = h.runs[h.run_head];
      if (pr.paced_ps > now_ps) break;
      const uint64_t due = (now_ps - pr.paced_ps) / std::max<uint64_t>(pr.frame_ps, 1) + 1;
      if (due < pr.n) {
        out_paced.push(pr.take_front(clock_, static_cast<uint32_t>(due)));
        frames += due;
        break;
      }
      out_paced.push(pr);
      frames += pr.n;
      ++h.run_head;
    }
    if (frames > 0) {
      any = true;
      const size_t base = out.size();
      const auto from = h.mbufs.begin() + static_cast<std::ptrdiff_t>(h.mbuf_head);
      out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(frames));
      const size_t end = h.mbuf_head + frames;
      for (; h.first_head < h.firsts.size() && h.firsts[h.first_head].first < end; ++h.first_head) {
        firsts.add(base + (h.firsts[h.first_head].first - h.mbuf_head), h.firsts[h.first_head].second);
      }
      h.mbuf_head = end;
      lane.held_frames -= frames;
    }
    if (h.frames() == 0) {  // emptied: its room is reused from the start
      h.mbufs.clear();
      h.runs.clear();
      h.firsts.clear();
      h.mbuf_head = h.run_head = h.first_head = 0;
    } else {
      lane.holding[kept++] = si;
      lane.next_release_ps = std::min(lane.next_release_ps, h.runs[h.run_head].paced_ps);
    }
  }
  lane.holding.resize(kept);
  if (any) flush_all(lane, true);
}

void DpdkFabric::flush(TxLane& lane, uint16_t txq, std::vector<rte_mbuf*>& queue, FirstFrames<Record>& firsts,
                       PacedQueue* paced) {
  if (queue.empty()) return;
  const size_t given = queue.size();
  const size_t sent = send_bursts(ports_.a(), txq, queue, kDataBurst, [&](size_t from, uint16_t took) {
    // Sent now: the actual departure of these frames (after tx_burst returned them as taken), one reading
    // for the messages' send times and the pacing's departures.
    const uint64_t ticks = clock_.ticks();
    firsts.taken(from, took, [ticks](Record& r) { r.tx_ticks.store(ticks, std::memory_order_relaxed); });
    if (paced == nullptr) return;
    paced->departed(
        clock_, took, clock_.wall_at(ticks).ps(), lane.st->jitter_ns,
        [&lane](uint32_t link) -> LinkPace& { return lane.link_pace[link]; },
        [&lane](LinkPace& lp) { close_period(lp, lane.period_ratios, *lane.stalls); });
  });
  firsts.erased(sent);
  if (paced != nullptr) paced->compact();
  ++lane.st->tx_flushes;
  lane.st->tx_full += sent < given;
}

void DpdkFabric::close_period(LinkPace& lp, std::vector<double>& ratios, const std::vector<PollStall>& stalls) {
  double sched = 0, act = 0;
  if (!lp.close(sched, act)) return;
  // Disturbed: the polling thread stalled within the period.
  const auto it = std::lower_bound(stalls.begin(), stalls.end(), lp.start_ps,
                                   [](const PollStall& st, uint64_t t) { return st.to_ps < t; });
  if (it != stalls.end() && it->from_ps <= lp.last_actual_ps) {
    ++lp.disturbed;
    return;
  }
  if (act > 0) ratios.push_back(sched / act);
}

}  // namespace fabemu::host::dpdk
