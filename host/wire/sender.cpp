// Sender: selective repeat with one retransmission timer per message (reassembly.h), and LinkSenders.
#include <fmt/core.h>

#include <algorithm>
#include <string>

#include "host/wire/reassembly.h"
#include "host/wire/window_bits.h"

namespace fabemu::host::dpdk {

using namespace window;  // words_for, set_bit, clear_bit, get_bit, make_room, bit_count, check_window (window_bits.h)

// --- Sender -----------------------------------------------------------------------------------------

Sender::Sender(const SenderConfig& config) : config_(config) {
  check_window(config.window, "Sender");
  if (config.destinations == 0) throw std::invalid_argument("Sender: zero destinations");
  if (config.payload_per_packet == 0) throw std::invalid_argument("Sender: payload_per_packet is 0");
  dests_.resize(config.destinations);
}

LinkSenders::LinkSenders(uint32_t npus, size_t links, const SenderConfig& config)
    : npus_(npus), config_(config), by_link_(links, 0) {
  config_.destinations = 1;
  if (uint64_t{npus} * npus <= 65536) dense_.resize(uint64_t{npus} * npus);
}

LinkSenders::Pair LinkSenders::of(uint32_t src, uint32_t dst, uint32_t first_link) {
  const uint64_t key = uint64_t{src} * npus_ + dst;
  Pair& p = dense_.empty() ? sparse_[key] : dense_[key];
  if (p.sender != ~0u) return p;
  uint32_t& by_link = by_link_.at(first_link);
  if (by_link == 0) {
    senders_.push_back(std::make_unique<Sender>(config_));  // its destination 0: dst
    src_.push_back(src);
    dsts_.push_back({dst});
    by_link = static_cast<uint32_t>(senders_.size());
    p = Pair{by_link - 1, 0};
  } else {
    const uint32_t i = by_link - 1;
    p = Pair{i, senders_[i]->add_destination()};
    dsts_[i].push_back(dst);
  }
  return p;
}

void LinkSenders::set_rto(Duration rto) noexcept {
  config_.rto = rto;
  for (const auto& s : senders_) s->set_rto(rto);
}

void LinkSenders::set_tail_age(Duration age) noexcept {
  config_.tail_age = age;
  for (const auto& s : senders_) s->set_tail_age(age);
}

uint32_t Sender::add_destination() {
  if (dests_.size() >= UINT32_MAX) throw std::out_of_range("Sender::add_destination: 2^32 destinations");
  dests_.emplace_back();
  return static_cast<uint32_t>(dests_.size() - 1);
}

bool Sender::can_submit(uint32_t dst) const noexcept {
  return dst < dests_.size() && dests_[dst].next_id - dests_[dst].base < config_.window;
}

uint64_t Sender::submit(uint32_t dst, uint64_t bytes, uint64_t cookie) {
  if (!can_submit(dst)) {
    throw std::out_of_range("Sender::submit: destination " + std::to_string(dst) +
                            (dst < dests_.size() ? " has a full window" : " is out of range"));
  }
  // Single-packet messages (the common small case) skip the division.
  const uint64_t count64 =
      bytes <= config_.payload_per_packet ? 1 : (bytes + config_.payload_per_packet - 1) / config_.payload_per_packet;
  if (count64 > UINT32_MAX) throw std::out_of_range("Sender::submit: message needs more than 2^32 packets");
  Dest& d = dests_[dst];
  // Everything that may allocate (and so throw) comes before any state changes: a submit that throws
  // uses up no id and no slot, and the pair's window stays whole.
  if (d.next_id - d.base >= d.slot_of.size()) [[unlikely]] make_room(d, d.base, d.next_id, kNone);
  if (free_slots_.empty()) [[unlikely]] {
    free_slots_.reserve(free_slots_.size() + 1);
    slots_.emplace_back();
    free_slots_.push_back(static_cast<uint32_t>(slots_.size() - 1));
  }
  const uint32_t si = free_slots_.back();
  Slot& s = slots_[si];
  // The per-packet arrays keep their largest size across reuse; only the message's words are cleared.
  // sent_at needs no clearing: an entry is read only for a packet sent, after emit() has written it.
  // Whole words of packets, as the bit arrays: any message of up to 64 packets (92 KB at a 1500-byte MTU)
  // then fits every slot that ever held one, and a slot reused for another such message allocates
  // nothing (DpdkFabric.NoAllocationPerMessageInSteadyState).
  const size_t words = words_for(static_cast<uint32_t>(count64));
  if (s.acked.size() < words) [[unlikely]] s.acked.resize(words);
  if (s.pending.size() < words) [[unlikely]] s.pending.resize(words);  // apart: either may be the one that threw
  if (s.sent_at.size() < count64) [[unlikely]] s.sent_at.resize(words * 64);
  fresh_.reserve(fresh_.size() + 1);
  free_slots_.pop_back();
  s.dst = dst;
  s.id = d.next_id++;
  s.count = static_cast<uint32_t>(count64);
  s.length = bytes;
  s.next_new = 0;
  s.unacked = s.count;
  s.low_word = 0;
  s.armed = false;
  s.in_order = true;
  ++s.gen;
  s.cookie = cookie;
  if (words == 1) {
    s.acked[0] = 0;
    s.pending[0] = 0;
  } else {
    std::fill_n(s.acked.begin(), words, 0);
    std::fill_n(s.pending.begin(), words, 0);
  }
  d.slot_of[s.id & d.mask] = si;
  fresh_.push(si);
  ++live_;
  ++stats_.messages;
  return s.id;
}

[[gnu::always_inline]] inline void Sender::emit(Slot& s, uint32_t slot, uint32_t seq, Time now, bool retransmit,
                                                TxPacket& out) {
  out.dst = s.dst;
  out.message_id = s.id;
  out.seq = seq;
  out.count = s.count;
  out.message_length = s.length;
  out.offset = uint64_t{seq} * config_.payload_per_packet;
  out.bytes = static_cast<uint32_t>(std::min<uint64_t>(config_.payload_per_packet, s.length - out.offset));
  out.retransmit = retransmit;
  out.cookie = s.cookie;
  s.sent_at[seq] = now;
  if (retransmit) s.in_order = false;
  // The message's timer runs from its first transmission, or from this one when the last check found
  // nothing left to time (every packet sent so far was acknowledged).
  if (!s.armed) {
    timers_.push(Timer{slot, s.gen, now});
    s.armed = true;
  }
}

void Sender::check_message(uint32_t si, Time now) {
  Slot& s = slots_[si];
  ++stats_.timer_checks;
  s.armed = false;
  const Duration rto = config_.rto;
  Time earliest = Time::max();
  const uint32_t words = static_cast<uint32_t>(words_for(s.next_new));
  skip_acked_words(s, s.next_new);
  for (uint32_t w = s.low_word; w < words; ++w) {
    const uint32_t sent_bits = std::min<uint32_t>(64, s.next_new - w * 64);
    const uint64_t sent = sent_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << sent_bits) - 1;
    uint64_t open = sent & ~s.acked[w];
    if (open == 0) continue;
    // Queued for a retransmission: it goes out at `now` or later, and is timed from then.
    if ((open & s.pending[w]) != 0) earliest = std::min(earliest, now);
    open &= ~s.pending[w];
    while (open != 0) {
      const uint32_t seq = w * 64 + static_cast<uint32_t>(std::countr_zero(open));
      open &= open - 1;
      const Time at = s.sent_at[seq];
      if (at + rto <= now) {
        set_bit(s.pending, seq);
        expired_.push(Ref{si, seq, s.gen});
        earliest = std::min(earliest, now);
      } else {
        earliest = std::min(earliest, at);
        // Never resent: send times grow with seq, so nothing after this one has expired either.
        if (s.in_order) {
          w = words;  // ends the scan
          break;
        }
      }
    }
  }
  if (earliest != Time::max()) {
    rearmed_.push_back(Timer{si, s.gen, earliest});
    std::push_heap(rearmed_.begin(), rearmed_.end(), Later{});
    s.armed = true;
  }
}

bool Sender::expire(Time now) {
  const Duration rto = config_.rto;
  const size_t queued = expired_.size();
  for (;;) {
    while (!timers_.empty() && !valid(timers_.front().slot, timers_.front().gen)) timers_.pop();
    while (!rearmed_.empty() && !valid(rearmed_.front().slot, rearmed_.front().gen)) {
      std::pop_heap(rearmed_.begin(), rearmed_.end(), Later{});
      rearmed_.pop_back();
    }
    const bool ring = !timers_.empty() && timers_.front().from + rto <= now;
    const bool heap = !rearmed_.empty() && rearmed_.front().from + rto <= now;
    if (!ring && !heap) break;
    uint32_t si;
    if (ring && (!heap || timers_.front().from <= rearmed_.front().from)) {
      si = timers_.front().slot;
      timers_.pop();
    } else {
      si = rearmed_.front().slot;
      std::pop_heap(rearmed_.begin(), rearmed_.end(), Later{});
      rearmed_.pop_back();
    }
    check_message(si, now);
    if (expired_.size() > queued) return true;
  }
  return expired_.size() > queued;
}

bool Sender::resend_queued(detail::Ring<Ref>& queue, uint64_t& reason_count, Time now, TxPacket& out) {
  while (!queue.empty()) {
    const Ref r = queue.front();
    queue.pop();
    if (!valid(r.slot, r.gen)) continue;
    Slot& s = slots_[r.slot];
    if (!get_bit(s.pending, r.seq)) continue;
    clear_bit(s.pending, r.seq);
    if (get_bit(s.acked, r.seq)) continue;
    ++stats_.retransmissions;
    ++reason_count;
    emit(s, r.slot, r.seq, now, true, out);
    return true;
  }
  return false;
}

bool Sender::next_retransmission(Time now, TxPacket& out) {
  for (;;) {
    if (resend_queued(nacked_, stats_.nack_retransmissions, now, out)) return true;
    if (resend_queued(expired_, stats_.timeout_retransmissions, now, out)) return true;
    if (!expire(now)) return false;
  }
}

bool Sender::next(Time now, TxPacket& out) { return next_burst(now, {&out, 1}) == 1; }

[[gnu::always_inline]] inline void Sender::describe_run(const Slot& s, uint32_t seq, uint32_t n,
                                                        TxRun& out) const noexcept {
  out.dst = s.dst;
  out.message_id = s.id;
  out.seq = seq;
  out.n = n;
  out.count = s.count;
  out.message_length = s.length;
  out.offset = uint64_t{seq} * config_.payload_per_packet;
  const uint64_t last_offset = uint64_t{seq + n - 1} * config_.payload_per_packet;
  out.last_bytes = static_cast<uint32_t>(std::min<uint64_t>(config_.payload_per_packet, s.length - last_offset));
  out.bytes = n > 1 ? config_.payload_per_packet : out.last_bytes;
  out.retransmit = false;
  out.cookie = s.cookie;
}

[[gnu::always_inline]] inline void Sender::commit_run(Slot& s, uint32_t slot, uint32_t seq, uint32_t n, Time now) {
  std::fill_n(s.sent_at.begin() + seq, n, now);
  // As n calls of emit(): the first one arms the message's timer if it has none.
  if (!s.armed) {
    timers_.push(Timer{slot, s.gen, now});
    s.armed = true;
  }
}

// The loop of next_burst and next_runs: `fresh(i, s, si, seq, n)` is offered n new packets of slot si from
// seq on (n == 1 each time when per_packet) and returns how many it takes (the first k; fewer than n ends
// the call), `resent(i, p)` takes a retransmission; at most max_packets packets and max_takes calls.
// Returns {calls, packets}.
template <class Fresh, class Resent>
[[gnu::always_inline]] inline Sender::Runs Sender::take(Time now, size_t max_packets, size_t max_takes, bool per_packet,
                                                        Fresh fresh, Resent resent) {
  Runs got;
  // With a positive RTO, once nothing is due at `now` (no retransmission given, or none left), nothing
  // falls due while new packets go out at `now` either: their timers run from `now`, and no feedback
  // arrives within a call. So the checks run once per burst, not per packet, and the packets are those
  // of as many next() calls. With an RTO of 0 a packet is due again as soon as sent: the checks then
  // run before each packet, as next() would.
  const size_t fresh_per_check = config_.rto > Duration::zero() ? max_packets : 1;
  bool held_back = false;  // `fresh` took less than offered: nothing after it goes in this call
  while (got.packets < max_packets && got.runs < max_takes) {
    // Timers of messages acknowledged since (the usual case) are dropped on the way.
    while (!timers_.empty() && !valid(timers_.front().slot, timers_.front().gen)) timers_.pop();
    if (!nacked_.empty() || !expired_.empty() || !rearmed_.empty() ||
        (!timers_.empty() && timers_.front().from + config_.rto <= now)) [[unlikely]] {
      TxPacket p;
      if (next_retransmission(now, p)) {
        resent(got.runs++, p);
        ++got.packets;
        continue;
      }
    }
    const size_t before = got.packets;
    const size_t end = std::min(max_packets, got.packets + fresh_per_check);
    while (got.packets < end && got.runs < max_takes && !fresh_.empty()) {
      const uint32_t si = fresh_.front();
      Slot& s = slots_[si];
      if (s.next_new >= s.count) [[unlikely]] {  // released (acknowledged) before it was all sent
        fresh_.pop();
        continue;
      }
      const auto n =
          per_packet ? 1u : static_cast<uint32_t>(std::min<size_t>(s.count - s.next_new, end - got.packets));
      const uint32_t seq = s.next_new;
      const uint32_t k = fresh(got.runs, s, si, seq, n);
      if (k == 0) [[unlikely]] {
        held_back = true;
        break;
      }
      s.next_new += k;
      if (s.next_new == s.count) fresh_.pop();
      stats_.packets += k;
      ++got.runs;
      got.packets += k;
      if (k < n) [[unlikely]] {
        held_back = true;
        break;
      }
    }
    if (got.packets == before || held_back) break;  // nothing (more) to send now
  }
  return got;
}

Sender::Runs Sender::next_runs(Time now, std::span<TxRun> out, size_t max_packets, RunGate gate) {
  return take(
      now, max_packets, out.size(), false,
      [&](size_t i, Slot& s, uint32_t si, uint32_t seq, uint32_t n) -> uint32_t {
        TxRun& r = out[i];
        describe_run(s, seq, n, r);
        if (gate.allow != nullptr) {
          const uint32_t k = std::min(gate.allow(gate.ctx, r), n);
          if (k == 0) return 0;
          if (k < n) {
            r.n = k;
            r.last_bytes = r.bytes;  // a packet before the message's last: the full payload per packet
          }
          n = k;
        }
        commit_run(s, si, seq, n, now);
        return n;
      },
      [&](size_t i, const TxPacket& p) {
        out[i] = TxRun{p.dst, p.message_id, p.seq, 1, p.count, p.message_length, p.offset, p.bytes, p.bytes,
                       p.retransmit, p.cookie};
      });
}

size_t Sender::next_burst(Time now, std::span<TxPacket> out) {
  return take(
             now, out.size(), out.size(), true,
             [&](size_t i, Slot& s, uint32_t si, uint32_t seq, uint32_t) -> uint32_t {
               emit(s, si, seq, now, false, out[i]);
               return 1;
             },
             [&](size_t i, const TxPacket& p) { out[i] = p; })
      .packets;
}

Time Sender::next_timeout() noexcept {
  while (!timers_.empty() && !valid(timers_.front().slot, timers_.front().gen)) timers_.pop();
  while (!rearmed_.empty() && !valid(rearmed_.front().slot, rearmed_.front().gen)) {
    std::pop_heap(rearmed_.begin(), rearmed_.end(), Later{});
    rearmed_.pop_back();
  }
  Time from = Time::max();
  if (!timers_.empty()) from = timers_.front().from;
  if (!rearmed_.empty()) from = std::min(from, rearmed_.front().from);
  return from == Time::max() ? from : from + config_.rto;
}

[[gnu::always_inline]] inline Sender::Slot* Sender::find(uint32_t dst, uint64_t id) noexcept {
  if (dst >= dests_.size()) return nullptr;
  const Dest& d = dests_[dst];
  if (id < d.base || id >= d.next_id) return nullptr;  // [base, next_id) is within the ring
  const uint32_t si = d.slot_of[id & d.mask];
  if (si == kNone || slots_[si].id != id || slots_[si].dst != dst) return nullptr;
  return &slots_[si];
}

bool Sender::ack_packet(Slot& s, uint32_t seq) noexcept {
  // Only packets already sent can have arrived; anything else is a confused peer.
  if (seq >= s.next_new || get_bit(s.acked, seq)) return false;
  set_bit(s.acked, seq);
  --s.unacked;
  return true;
}

[[gnu::always_inline]] inline bool Sender::finish_if_done(uint32_t si) {
  Slot& s = slots_[si];
  if (s.unacked != 0) return false;
  Dest& d = dests_[s.dst];
  const uint64_t ring = s.id & d.mask;
  d.slot_of[ring] = kNone;
  // In-order completion (the usual case) moves the base without a round trip through the bitmap.
  if (s.id == d.base) {
    ++d.base;
  } else {
    set_bit(d.done, ring);
  }
  while (d.base < d.next_id && get_bit(d.done, d.base & d.mask)) {
    clear_bit(d.done, d.base & d.mask);
    ++d.base;
  }
  ++s.gen;  // its timer entry and queued retransmissions go stale
  s.armed = false;
  free_slots_.push_back(si);
  --live_;
  ++stats_.messages_acked;
  return true;
}

bool Sender::on_ack(uint32_t dst, uint64_t message_id, uint32_t cumulative) {
  Slot* s = find(dst, message_id);
  if (s == nullptr) return false;  // already complete: a repeated ACK
  const uint32_t upto = std::min({cumulative, s->count, s->next_new});
  // ack_packet for every seq below min(cumulative, count) that was sent, a word at a time, from the first
  // word not yet all acknowledged (low_word): a receiver ACKs a long message every kAckEvery packets, and
  // from word 0 each partial ACK walked the whole acknowledged part again, a hot spot of messages of many
  // packets (host/dpdk/PERFORMANCE.md, "Partial ACKs from the first open word").
  skip_acked_words(*s, upto);
  for (uint32_t w = s->low_word; uint64_t{w} * 64 < upto; ++w) {
    const uint32_t bits = std::min<uint32_t>(64, upto - w * 64);
    const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    const uint64_t before = s->acked[w];
    const uint64_t fresh = mask & ~before;
    s->acked[w] = before | fresh;
    s->unacked -= before == 0 ? bits : bit_count(fresh);
  }
  return finish_if_done(static_cast<uint32_t>(s - slots_.data()));
}

bool Sender::on_nack(uint32_t dst, uint64_t message_id, uint32_t cumulative, uint32_t covered,
                     std::span<const uint32_t> missing, Time now) {
  return nack(dst, message_id, cumulative, covered, missing, &now);
}

bool Sender::on_nack(uint32_t dst, uint64_t message_id, uint32_t cumulative, uint32_t covered,
                     std::span<const uint32_t> missing) {
  return nack(dst, message_id, cumulative, covered, missing, nullptr);
}

bool Sender::nack(uint32_t dst, uint64_t message_id, uint32_t cumulative, uint32_t covered,
                  std::span<const uint32_t> missing, const Time* now) {
  Slot* s = find(dst, message_id);
  if (s == nullptr) return false;
  const uint32_t si = static_cast<uint32_t>(s - slots_.data());
  const bool cut = !missing.empty() && missing.back() + 1 == covered;
  if (now != nullptr && config_.tail_age != Duration::max() && !cut && covered < s->next_new) {
    // The probe: the last packet sent, if the receiver has not seen it and it is old enough. Once it
    // arrives, the receiver's next NACK lists the holes before it (a NACK covers up to its highest packet),
    // and those go again as usual; a probe that was not lost after all costs one duplicate frame.
    const uint32_t from = std::max(covered, s->low_word * 64);
    for (uint32_t seq = s->next_new; seq-- > from;) {
      if (get_bit(s->acked, seq)) continue;
      if (!get_bit(s->pending, seq) && *now >= s->sent_at[seq] + config_.tail_age) {
        set_bit(s->pending, seq);
        nacked_.push(Ref{si, seq, s->gen});
        ++stats_.tail_retransmissions;
      }
      break;  // only the last one not acknowledged
    }
  }
  covered = std::min(covered, s->count);
  // The last transmission of the highest packet the receiver has (below `covered`, not listed): on a
  // path that keeps a pair's order, a listed packet last sent after it may still be on its way (a
  // retransmission NACKed again while a long message keeps streaming), and is not sent once more now.
  // Only with `now` (a fabric's senders), and only while it is younger than the tail age; Time::max():
  // no such packet known, every listed one goes.
  Time newest_arrived = Time::max();
  if (now != nullptr) {
    size_t m = missing.size();
    for (uint32_t seq = covered; seq-- > 0;) {
      if (m > 0 && missing[m - 1] == seq) {
        --m;
        continue;
      }
      if (seq < s->next_new) newest_arrived = s->sent_at[seq];
      break;
    }
  }
  // Everything in [0, covered) arrived except the listed seqs (sorted ascending by the receiver). Only
  // packets sent can be acknowledged (ack_packet), and a word of them already all acknowledged is passed
  // over whole: a receiver that NACKs a long message whenever it idles (a slow or preempted sender) made
  // this a walk over the whole message per NACK, which slowed the sender further (host/dpdk/README.md,
  // "End to end").
  const uint32_t upto = std::min(covered, s->next_new);
  size_t m = 0;
  // Words below low_word are all acknowledged: the walk starts after them.
  skip_acked_words(*s, upto);
  for (uint32_t seq = s->low_word * 64; seq < upto; ++seq) {
    if ((seq & 63) == 0 && s->acked[seq >> 6] == ~uint64_t{0}) {
      seq += 63;  // the loop's ++ moves to the next word; `m` catches up below when it must
      continue;
    }
    while (m < missing.size() && missing[m] < seq) ++m;
    if (seq >= cumulative && m < missing.size() && missing[m] == seq) continue;
    ack_packet(*s, seq);
  }
  for (const uint32_t seq : missing) {
    if (seq >= s->next_new || get_bit(s->acked, seq) || get_bit(s->pending, seq)) continue;
    // Still on its way: sent after what arrived, and not yet older than the tail age (or the RTO). Once
    // older, a later NACK sends it again: a retransmission lost too is not left to the RTO.
    if (now != nullptr && s->sent_at[seq] > newest_arrived &&
        *now < s->sent_at[seq] + std::min(config_.tail_age, config_.rto)) {
      ++stats_.nacks_in_flight;
      continue;
    }
    set_bit(s->pending, seq);
    nacked_.push(Ref{si, seq, s->gen});
  }
  return finish_if_done(si);
}

}  // namespace fabemu::host::dpdk
