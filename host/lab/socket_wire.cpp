// The socket fabric's rounds of I/O (socket_fabric_impl.h): pacing and submitting, transmitting the
// senders' datagrams in batches, receiving and reassembling, the feedback (ACK/NACK), the live metrics and
// the stats.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "host/lab/socket_fabric_impl.h"

namespace fabemu::lab {

// --- I/O -----------------------------------------------------------------------------------------------

bool SocketFabric::Impl::poll() {
  const int64_t now_ns = clock_.since_start_ns();
  if (last_poll_ns_ != 0 && now_ns > last_poll_ns_) {
    const auto gap = static_cast<uint64_t>(now_ns - last_poll_ns_);
    stats_.poll_gap_max_ns = std::max(stats_.poll_gap_max_ns, gap);
    if (gap > kStallNs) ++stats_.poll_stalls;
  }
  last_poll_ns_ = now_ns;
  // Receive first: after a stall of this thread (preemption), the ACKs that came meanwhile must reach the
  // senders before their timers are looked at, or everything sent before the stall goes out again.
  rx_any_ = false;
  data_seen_ = false;
  transport_->receive(*this);
  if (local_feedback_) {
    // ACKs and NACKs to local senders go out now and are read back at once (loopback delivers within
    // the send call), so that those senders see them before their timers.
    local_feedback_ = false;
    for (auto& so : socks_) flush(*so, so->feedback);
    transport_->receive(*this);
  }
  if (!data_seen_ && !reorder_.empty()) {
    // Nothing newer came: what was held back is released (it was overtaken by what arrived meanwhile).
    for (size_t i = 0; i < reorder_.size(); ++i) handle_data(reorder_[i].h, reorder_[i].bytes);
    reorder_.clear();
  }
  if (pacing_.waiting()) {
    const emu::Time emulated = clock_.emulated();
    for (uint64_t id; pacing_.pop_due(emulated, id);) backlog_.push_back(id);
  }
  if (!backlog_.empty()) {
    // In order: once one waits, later ones wait too (a pair's wire ids must reach its Sender in order).
    size_t kept = 0;
    for (const uint64_t id : backlog_) {
      if (kept > 0 || !try_submit(id, records_.at(id))) backlog_[kept++] = id;
    }
    backlog_.resize(kept);
  }
  transmit();
  const emu::Time wall = clock_.wall();
  for (const uint32_t dst : active_receivers_) {
    hd::Receiver& rx = *receivers_[dst];
    if (rx.active_messages() == 0) continue;
    nacks_.clear();
    rx.poll_nacks(wall, nacks_);
    for (const hd::Nack& n : nacks_.nacks) {
      feedback(dst, n.src, n.message_id, hd::PacketKind::kNack, n.count, n.cumulative, n.covered,
               std::span<const uint32_t>(nacks_.seqs).subspan(n.first, n.missing));
    }
  }
  for (auto& so : socks_) {
    flush(*so, so->feedback);
    flush(*so, so->data);
  }
  if (opt_.live != nullptr && now_ns - last_publish_ns_ >= kPublishNs) publish();
  return rx_any_;
}

void SocketFabric::Impl::transmit() {
  const emu::Time wall = clock_.wall();
  const emu::Time ts = stamp();
  const bool paced_run = !clock_.as_fast_as_possible();
  for (uint32_t si = 0; si < senders_.size(); ++si) {
    hd::Sender& s = senders_[si];
    const uint32_t src = senders_.src(si);
    Sock& so = *socks_[static_cast<size_t>(sock_of_[src])];
    Queue& q = so.data;
    for (uint32_t k = 0; k < kFramesPerSender; ++k) {
      if (q.n == opt_.batch) {
        flush(so, q);
        if (q.n == opt_.batch) break;  // the socket is full: next round
      }
      hd::TxPacket p;
      if (held_[si]) {
        p = *held_[si];
      } else if (!s.next(wall, p)) {
        break;
      }
      const uint32_t dst = senders_.dst(si, p.dst);  // p.dst is the destination's number in this sender
      Record* rec = nullptr;
      if (const auto w = records_.find(p.cookie); w != records_.end()) {
        if (!p.retransmit) {
          rec = &w->second;
        } else {
          w->second.retransmitted = true;  // Karn's rule: no RTT sample from this message
        }
      }
      // Pacing: a first transmission leaves no earlier than the modelled departure of its bytes on the
      // dilated clock, nor earlier than its link's rate allows after the datagram before.
      uint64_t scheduled_ps = 0;
      if (rec != nullptr && paced_run) {
        scheduled_ps = clock_.to_wall((rec->depart + rec->rate.ser(p.offset)).since_start()).ps();
        const uint64_t due = std::max(scheduled_ps, pace_next_ps_[rec->first_link]);
        const uint64_t now_ps = clock_.wall().ps();
        if (due > now_ps) {
          held_[si] = p;
          break;
        }
        const uint64_t burst_ps = clock_.to_wall(rec->rate.ser(uint64_t{opt_.payload} * kPacingBurstFrames)).ps();
        const uint64_t anchor = now_ps > due + burst_ps ? now_ps - burst_ps : due;
        pace_next_ps_[rec->first_link] = anchor + clock_.to_wall(rec->rate.ser(p.bytes)).ps();
      }
      held_[si].reset();
      const hd::FabemuHeader h{hd::PacketKind::kData, p.retransmit ? hd::kFlagRetransmit : uint16_t{0}, src, dst,
                               p.message_id, p.seq, p.count, p.message_length, p.offset, ts.ps()};
      write_datagram_header(h, slot(q, q.n));
      q.entries[q.n] = TxEntry{static_cast<uint32_t>(kDatagramHeaderBytes + p.bytes), dst,
                               rec != nullptr && paced_run ? rec->first_link : kNoLink, scheduled_ps};
      ++q.n;
      if (rec != nullptr) {
        ++stats_.data_datagrams;
        if (rec->tx_first_ns < 0) rec->tx_first_ns = clock_.since_start_ns();
      }
    }
    flush(so, q);
  }
}

void SocketFabric::Impl::flush(Sock& so, Queue& q) {
  if (q.n == 0) return;
  for (uint32_t i = 0; i < q.n; ++i) tx_batch_[i] = TxDatagram{slot(q, i), q.entries[i].len, q.entries[i].to};
  const uint32_t sent = transport_->send(so.rank, std::span<const TxDatagram>(tx_batch_.data(), q.n));
  if (sent == 0) return;
  const uint64_t now_ps = clock_.wall().ps();
  for (uint32_t i = 0; i < sent; ++i) {
    const TxEntry& e = q.entries[i];
    ++stats_.datagrams_tx;
    stats_.datagram_bytes_tx += e.len;
    if (e.link != kNoLink) {
      stats_.jitter_ns.record((now_ps > e.scheduled_ps ? now_ps - e.scheduled_ps : e.scheduled_ps - now_ps) / 1000);
    }
  }
  if (sent < q.n) {  // the kernel took part of them: the rest moves to the front
    std::memmove(slot(q, 0), slot(q, sent), size_t{q.n - sent} * slot_bytes_);
    std::copy(q.entries.begin() + sent, q.entries.begin() + q.n, q.entries.begin());
  }
  q.n -= sent;
}

void SocketFabric::Impl::datagram(uint32_t rank, std::span<const uint8_t> d, bool truncated) {
  ++stats_.datagrams_rx;
  stats_.datagram_bytes_rx += d.size();
  DecodedDatagram dd;
  const DatagramVerdict v =
      truncated ? DatagramVerdict::kTruncated : decode_datagram(d, DatagramRules{npus_, opt_.payload, rank}, dd);
  if (v != DatagramVerdict::kOurs) {
    ++stats_.not_ours;
    ++stats_.not_ours_by_verdict[static_cast<size_t>(v)];
    return;
  }
  if (dd.hdr.kind != hd::PacketKind::kData) {
    rx_any_ = true;
    handle_feedback(dd);
    return;
  }
  data_seen_ = true;
  const hd::FaultDecision f = faults_.next();
  if (f.drop) return;  // lost on the way: not progress (the stall timeout counts from the last that got through)
  rx_any_ = true;
  if (f.reorder) {
    reorder_.push_back(HeldRx{dd.hdr, dd.payload_bytes, 1 + static_cast<uint32_t>(faults_.uniform(8))});
    return;
  }
  handle_data(dd.hdr, dd.payload_bytes);
  if (f.duplicate) handle_data(dd.hdr, dd.payload_bytes);
  // Packets held back are released behind `after` later data packets.
  for (size_t j = 0; j < reorder_.size();) {
    if (--reorder_[j].after == 0) {
      const HeldRx h = reorder_[j];
      reorder_.erase(reorder_.begin() + static_cast<ptrdiff_t>(j));
      handle_data(h.h, h.bytes);
    } else {
      ++j;
    }
  }
}

void SocketFabric::Impl::handle_data(const hd::FabemuHeader& h, uint32_t bytes) {
  const hd::RxPacket p{h.src_rank, h.message_id, h.seq, h.count, h.message_length, bytes,
                       (h.flags & hd::kFlagRetransmit) != 0};
  hd::Receiver& rx = receiver(h.dst_rank);
  const hd::RxEvent e = rx.on_packet(p, clock_.wall());
  if (e == hd::RxEvent::kInvalid || e == hd::RxEvent::kOutOfWindow) ++stats_.rx_invalid;
  if (e == hd::RxEvent::kCompleted) {
    ++stats_.messages_received;
    stats_.bytes_received += h.message_length;
    const WireKey key{pair(h.src_rank, h.dst_rank), h.message_id};
    const auto w = rx_wait_.find(key);
    if (w != rx_wait_.end()) {
      Record& r = records_.at(w->second);
      r.arrived = true;
      r.arrived_emulated = clock_.emulated();
      rx_wait_.erase(w);
    } else {
      early_.insert(key);  // the sender's process is ahead of this one's replay
    }
  }
  if (e == hd::RxEvent::kCompleted || e == hd::RxEvent::kStale) {
    feedback(h.dst_rank, h.src_rank, h.message_id, hd::PacketKind::kAck, h.count, h.count, h.count, {});
  } else if (e == hd::RxEvent::kAccepted && (h.seq & (kAckEvery - 1)) == kAckEvery - 1) {
    // A partial ACK: everything below the first gap (or up to this packet) has arrived.
    uint32_t gap = 0;
    const size_t n = rx.missing(h.src_rank, h.message_id, std::span<uint32_t>(&gap, 1));
    const uint32_t cumulative = n > 0 ? gap : h.seq + 1;
    if (cumulative > 0) {
      feedback(h.dst_rank, h.src_rank, h.message_id, hd::PacketKind::kAck, h.count, cumulative, cumulative, {});
    }
  }
}

void SocketFabric::Impl::handle_feedback(const DecodedDatagram& d) {
  const hd::FabemuHeader& h = d.hdr;  // from receiver h.src_rank to sender h.dst_rank
  const hd::LinkSenders::Pair ps = senders_.find(h.dst_rank, h.src_rank);
  if (ps.sender == ~0u) {
    ++stats_.rx_invalid;
    return;
  }
  hd::Sender& s = senders_[ps.sender];
  bool done = false;
  if (h.kind == hd::PacketKind::kAck) {
    ++stats_.acks;
    done = s.on_ack(ps.dst, h.message_id, h.seq);
  } else {
    ++stats_.nacks;
    missing_.resize(d.missing_count());
    for (size_t i = 0; i < missing_.size(); ++i) missing_[i] = d.missing(i);
    done = s.on_nack(ps.dst, h.message_id, h.seq, static_cast<uint32_t>(h.offset), missing_, clock_.wall());
  }
  if (!done) return;
  const auto w = tx_wait_.find(WireKey{pair(h.dst_rank, h.src_rank), h.message_id});
  if (w == tx_wait_.end()) return;
  const auto it = records_.find(w->second);
  tx_wait_.erase(w);
  if (it == records_.end()) return;
  Record& r = it->second;
  r.acked = true;
  if (r.tx_first_ns >= 0) {
    const auto ns = static_cast<uint64_t>(std::max<int64_t>(0, clock_.since_start_ns() - r.tx_first_ns));
    stats_.latency_ns.record(ns);
    if (!r.retransmitted) {  // Karn's rule: a retransmission makes the sample ambiguous
      if (rto_.sample(ns)) {
        senders_.set_rto(rto_.rto());
        stats_.rto_max = rto_.max();
      }
      // Tail-loss probes on NACK (Sender::on_nack with `now`), as the DPDK fabric's.
      if (const auto tail = rto_.next_tail_age(opt_.nack_delay)) senders_.set_tail_age(*tail);
    }
  }
  finish_if_done(it);
}

void SocketFabric::Impl::feedback(uint32_t from, uint32_t to, uint64_t id, hd::PacketKind kind, uint32_t count,
                                  uint32_t cumulative, uint32_t covered, std::span<const uint32_t> missing) {
  Sock& so = *socks_[static_cast<size_t>(sock_of_[from])];
  Queue& q = so.feedback;
  if (q.n == opt_.batch) flush(so, q);
  if (q.n == opt_.batch) {
    ++stats_.feedback_dropped;  // the sender's timeout covers it
    return;
  }
  const hd::FabemuHeader h{kind, 0, from, to, id, cumulative, count, 0, covered, stamp().ps()};
  local_feedback_ = local_feedback_ || local_[to];
  const size_t len = encode_datagram(h, 0, missing, {slot(q, q.n), slot_bytes_});
  q.entries[q.n] = TxEntry{static_cast<uint32_t>(len), to, kNoLink, 0};
  ++q.n;
}

void SocketFabric::Impl::publish() {
  LiveMetrics& m = *opt_.live;
  last_publish_ns_ = clock_.since_start_ns();
  stats();
  const auto bump = [](std::atomic<uint64_t>& c, uint64_t& last, uint64_t now) {
    if (now > last) LiveMetrics::add(c, now - last);
    last = now;
  };
  Published& p = published_;
  bump(m.messages_sent, p.messages_sent, stats_.messages_sent);
  bump(m.bytes_sent, p.bytes_sent, stats_.bytes_sent);
  bump(m.messages_received, p.messages_received, stats_.messages_received);
  bump(m.bytes_received, p.bytes_received, stats_.bytes_received);
  bump(m.frames_sent, p.frames_sent, stats_.datagrams_tx);
  bump(m.frames_received, p.frames_received, stats_.datagrams_rx);
  bump(m.retransmissions, p.retransmissions, stats_.retransmissions);
  bump(m.not_ours, p.not_ours, stats_.not_ours);
  // The model's per-link bytes (every process replays the whole model: the same in each).
  const size_t links = std::min(m.link_bytes.size(), p.link_bytes.size());
  for (size_t l = 0; l < links; ++l) {
    bump(m.link_bytes[l], p.link_bytes[l], model_.link_stats(static_cast<emu::LinkId>(l)).bytes);
  }
  m.link_count.store(links, std::memory_order_relaxed);
  m.emulated_ps.store(static_cast<int64_t>(engine_.now().ps()), std::memory_order_relaxed);
}

const SocketStats& SocketFabric::Impl::stats() {
  SocketStats& s = stats_;
  s.wall = emu::Duration::from_ps(clock_.wall().ps());
  s.stall = stall_;
  hd::WireCounters sums;
  for (size_t i = 0; i < senders_.size(); ++i) sums.add_sent(senders_[i].stats());
  for (const uint32_t r : active_receivers_) sums.add_received(receivers_[r]->stats());
  sums.add_faults(faults_);
  s.clear_sums();
  s += sums;
  const TransportStats t = transport_->stats();
  s.send_errors = t.send_errors;
  s.frames_not_ours = t.frames_not_ours;
  std::copy(std::begin(t.frames_by_ecn), std::end(t.frames_by_ecn), std::begin(s.frames_by_ecn));
  s.frames_dscp_changed = t.frames_dscp_changed;
  s.rcvbuf_bytes = t.rcvbuf_bytes;
  s.sndbuf_bytes = t.sndbuf_bytes;
  s.collectives = coll_spans_.spans();
  return s;
}

}  // namespace fabemu::lab
