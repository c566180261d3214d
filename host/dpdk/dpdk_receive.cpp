// DpdkFabric's receive side on the main lcore and its delay line (dpdk_fabric.h): a delivery of the model
// waits for the wire (on_delivered), reassembled messages (completed, from the receive path inline or the
// receive lcores' completions), the feedback for the senders (receive, handle) and the adaptive RTO.
#include <rte_ring.h>

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "host/dpdk/dpdk_fabric.h"

namespace fabemu::host::dpdk {

void DpdkFabric::on_delivered(uint64_t id, emu::Time at) {
  const auto it = records_.find(id);
  if (it == records_.end()) throw std::logic_error(fmt::format("DpdkFabric: unknown message {} delivered", id));
  Record& r = it->second;
  // The delay line: the wire must have brought every packet, and (dilated) the wall clock must have
  // reached the modelled time.
  // Progress: a message completed or an ACK came back (ACKs also acknowledge a long message's packets as
  // they arrive, every kAckEvery of them). NACKs alone are not: a device that always drops some frames
  // (frames longer than its MTU, a flow it blocks) makes the receiver ask for them again and again, and
  // the run would wait for ever.
  // One clock reading a round: the wait's test, the stall timeout and the next round's poll (a TSC read
  // is not free on a virtual machine, and the round read it six times before: PERFORMANCE.md, "One clock
  // reading a round").
  TscClock::Reading reading = clock_.read();
  emu::Time last_progress = reading.wall;
  uint64_t progress = progress_;
  const uint64_t nacks_before = nacks_in_;
  // Build-ahead: the walker goes on once the wire has brought the message and the dilated clock is within
  // opt_.ahead of the modelled delivery, so that what it hands over next is booked before it is due.
  const emu::Time until = emu::Time::from_ps(at.ps() > ahead_emulated_ps_ ? at.ps() - ahead_emulated_ps_ : 0);
  while (!r.arrived || reading.emulated < until) {  // emulated: Time::max() as fast as possible
    if (Eal::stop_requested()) {
      interrupted_ = true;
      engine_.stop();
      return;
    }
    poll(reading);
    reading = clock_.read();
    // A held frame due within kSpinPs: wait for it here and send it then, rather than a poll round later
    // (the inline lane's; a transmit lcore waits for its own).
    if (TxLane& lane = *lanes_[0];
        !tx_lcores_on() && !lane.holding.empty() && reading.wall.ps() + kSpinPs >= lane.next_release_ps) {
      while (reading.wall.ps() < lane.next_release_ps) reading = clock_.read();
      send_due_held(lane, reading.wall.ps());
    }
    const emu::Time now = reading.wall;
    if (progress_ != progress || r.arrived) {
      progress = progress_;
      last_progress = now;
    } else if (now - last_progress > opt_.stall_timeout) {
      // The run stops here, as on SIGINT: the walker reports what had finished and what had not, and
      // the DPDK section what went on the wire, then the CLI fails with this reason. Frames that are not
      // ours kept arriving meanwhile (the main lcore's counts; the receive lcore's are its own until it
      // stops): a device that makes frames of its own, or someone else's traffic.
      const uint64_t foreign = stats_.not_ours + (workers_.empty() ? rx_paths_[0]->stats().not_ours : 0);
      const uint64_t nacks = nacks_in_ - nacks_before;
      stall_ = fmt::format(
          "message {} ({} bytes, rank {} -> {}) was due at {} ps but {} on {} for {} ms{}{}",
          id, r.bytes, r.src, r.dst, at.ps(),
          nacks == 0 ? std::string("nothing of ours arrived")
                     : fmt::format("no message completed and no ACK came back ({} NACKs asked for packets that never "
                                   "arrived: does the device drop some frames, e.g. frames longer than its MTU? "
                                   "--wire-mtu is {})",
                                   nacks, opt_.wire_mtu),
          ports_.describe(), opt_.stall_timeout.ps() / 1'000'000'000,
          foreign == 0 ? std::string()
                       : fmt::format(" ({} frames that are not fabemu's arrived in this run: does the device "
                                     "bring back the frames sent to it?)",
                                     foreign),
          describe_drops(opt_.faults, "frames"));
      engine_.stop();
      return;
    }
  }
  if (!r.local && !clock_.as_fast_as_possible()) {
    if (r.arrived_emulated > at) {
      ++stats_.late;
      stats_.lateness_ns.record((r.arrived_emulated - at).ps() / 1000);
    } else {
      ++stats_.on_time;
    }
    if (r.coll != emu::Message::kNoCollective) {
      coll_spans_.add(r.coll, r.bytes, r.ready, r.handed, at, r.arrived_emulated);
      if (r.coll >= coll_extra_.size()) coll_extra_.resize(std::max<size_t>(r.coll + 1, coll_extra_.size() * 2));
      CollExtra& c = coll_extra_[r.coll];
      c.ce += r.ce;
      if (const uint64_t tx_ticks = r.tx_ticks.load(std::memory_order_relaxed); tx_ticks != 0) {
        // Late against what the message could do: not before its modelled departure, nor before the
        // walker handed it over (a walker that waited for the wire is the wire's delay, not fabemu's).
        const emu::Time left = clock_.emulated_at(tx_ticks);
        const emu::Time from = std::max(r.depart, r.handed);
        if (left > from) c.late_start_ps = std::max(c.late_start_ps, (left - from).ps());
      }
    }
  }
  records_.erase(it);
  ++stats_.deliveries;
  if (listener_ != nullptr) listener_->on_delivered(id, at);
}

void DpdkFabric::take_completions() {
  RxCompletion* const c = completions_.data();
  const auto max = static_cast<unsigned>(completions_.size());
  for (const auto& w : workers_) {
    for (;;) {
      const unsigned n = w->take(c, max);
      for (unsigned i = 0; i < n; ++i) completed(c[i]);
      if (n > 0) rx_any_ = true;
      if (n < max) break;
    }
  }
}

void DpdkFabric::completed(const RxCompletion& c) {
  const auto w = by_wire_.find(pair_key(c.src, c.dst, c.wire_id, npus_));
  if (w == by_wire_.end()) return;
  ++progress_;
  Record& r = records_.at(w->second);
  r.arrived = true;
  r.rx_ticks = c.rx_ticks;
  r.ce = c.ce;
  r.arrived_emulated = clock_.emulated_at(c.rx_ticks);
  const uint64_t tx_ticks = r.tx_ticks.load(std::memory_order_relaxed);
  const uint64_t lat_ns = c.rx_ticks > tx_ticks ? clock_.ticks_to_ns(c.rx_ticks - tx_ticks) : 0;
  stats_.latency_ns.record(lat_ns);
  if (!r.retransmitted) adapt_rto(lat_ns);  // Karn's rule: a retransmission makes the sample ambiguous
  ++completed_messages_;
  completed_bytes_ += r.bytes;
  by_wire_.erase(w);
  // A wave of arrivals keeps this lcore for microseconds (the receive side inline, or many completions
  // taken at once): every 4 completions, frames built ahead that came due meanwhile leave.
  if (!tx_lcores_on() && !lanes_[0]->holding.empty() && (completed_messages_ & 3) == 0) {
    send_due_held(*lanes_[0], clock_.wall().ps());
  }
}

// RFC 6298's estimator (RtoEstimator) on the wire latency of whole messages (first frame sent to
// reassembled: it covers the device queues and the kernel path of af_packet, where a fixed RTO gives
// spurious retransmissions): the senders' RTO follows SRTT + 4 RTTVAR, never below the configured (or
// pacing-scaled) floor nor above one second.
void DpdkFabric::adapt_rto(uint64_t sample_ns) {
  bool changed = false;
  if (rto_.sample(sample_ns)) {  // only a change of more than 1/8 reaches the senders
    changed = true;
    stats_.rto_max = rto_.max();
    if (!tx_lcores_on()) {
      lanes_[0]->senders.set_rto(rto_.rto());
      std::fill(lanes_[0]->next_work.begin(), lanes_[0]->next_work.end(), 0);  // a shorter RTO brings timers forward
    }
  }
  // Tail-loss recovery (Sender::on_nack): a packet beyond what a NACK covers is lost once it is older
  // than whole messages take, first frame sent to reassembled (SRTT + 4 RTTVAR, without the RTO's floor:
  // that floor is there for queues no message of this run has met), at least the NACK delay, at most the
  // RTO. A whole message takes at least as long as its last packet, so a packet older than that has not
  // just been slow in a queue.
  if (const auto tail = rto_.next_tail_age(opt_.nack_delay)) {
    changed = true;
    if (!tx_lcores_on()) lanes_[0]->senders.set_tail_age(*tail);
    tail_age_ps_.store(tail->ps(), std::memory_order_relaxed);
    stats_.tail_age_min = rto_.tail_age_min();
  }
  if (changed && tx_lcores_on()) {
    // The transmit lcores take both at their next round (tx_lane_round).
    rto_ps_.store(rto_.rto().ps(), std::memory_order_relaxed);
    rto_generation_.fetch_add(1, std::memory_order_release);
  }
}

void DpdkFabric::receive(Port& port) {
  // Port A carries the feedback only: a data frame there is invalid (data frames are port B's). Each of
  // its queues (one per receive path).
  for (uint16_t q = 0; q < port.config().rx_queues; ++q) {
    const bool any = receive_round(port, q, rules_, scratch_, stats_, a_hw_timestamped_,
                                   [&](rte_mbuf* m, const DecodedFrame& f, bool, uint64_t, uint64_t) {
      if (f.hdr.kind == PacketKind::kData) {
        ++stats_.rx_invalid;
      } else if (handle(f, m)) {
        return;  // passed on to its transmit lcore, which frees it
      }
      rte_pktmbuf_free(m);
    });
    if (any) rx_any_ = true;
  }
}

bool DpdkFabric::handle(const DecodedFrame& f, rte_mbuf* m) {
  const FabemuHeader& h = f.hdr;
  if (h.src_rank >= npus_ || h.dst_rank >= npus_) {
    ++stats_.rx_invalid;
    return false;
  }
  // Feedback from receiver h.src_rank to sender h.dst_rank: progress (an ACK) or a NACK taken.
  if (h.kind == PacketKind::kAck) {
    ++progress_;
  } else {
    ++nacks_in_;
  }
  TxLane& lane = lane_of(h.dst_rank);
  if (!tx_lcores_on() || m == nullptr) {
    if (!tx_lcores_on()) handle_in(lane, f);
    return false;
  }
  // The sender's lcore takes it (its senders are its own): the frame itself, decoded again there (ACKs
  // and NACKs are a frame in 32 and more; a copy of the decoded NACK list would not have a fixed size).
  // A full ring (65,536 frames behind): the frame is dropped here, as a lost ACK/NACK; a later ACK, NACK or
  // the RTO recovers.
  return rte_ring_sp_enqueue(lane.feedback, m) == 0;
}

void DpdkFabric::handle_in(TxLane& lane, const DecodedFrame& f) {
  const FabemuHeader& h = f.hdr;
  const LinkSenders::Pair ps = lane.senders.find(h.dst_rank, h.src_rank);
  if (ps.sender == ~0u) {
    ++lane.st->rx_invalid;
    return;
  }
  Sender& s = lane.senders[ps.sender];
  if (h.kind == PacketKind::kAck) {
    s.on_ack(ps.dst, h.message_id, h.seq);
  } else {
    lane.missing.resize(f.missing_count());
    for (size_t i = 0; i < lane.missing.size(); ++i) lane.missing[i] = f.missing(i);
    s.on_nack(ps.dst, h.message_id, h.seq, static_cast<uint32_t>(h.offset), lane.missing, clock_.wall());
    lane.next_work[ps.sender] = 0;  // retransmissions queued
  }
}

}  // namespace fabemu::host::dpdk
