// Receiver reassembly (reassembly.h); the Sender is in sender.cpp, the fault filter in fault_filter.cpp.
#include "host/wire/reassembly.h"

#include <fmt/core.h>

#include <algorithm>
#include <string>

#include "host/wire/window_bits.h"

namespace fabemu::host::dpdk {

using namespace window;  // words_for, set_bit, clear_bit, get_bit, make_room, bit_count, check_window (window_bits.h)

// --- Receiver ---------------------------------------------------------------------------------------

Receiver::Receiver(const ReceiverConfig& config) : config_(config) {
  check_window(config.window, "Receiver");
  if (config.sources == 0) throw std::invalid_argument("Receiver: zero sources");
  if (config.max_missing_per_nack == 0) throw std::invalid_argument("Receiver: max_missing_per_nack is 0");
  sources_.resize(config.sources);
}

uint32_t Receiver::alloc_slot() {
  if (free_slots_.empty()) {
    slots_.emplace_back();
    return static_cast<uint32_t>(slots_.size() - 1);
  }
  const uint32_t s = free_slots_.back();
  free_slots_.pop_back();
  return s;
}

void Receiver::release_slot(uint32_t s) {
  // Swap-remove from the active list; the bitmap keeps its capacity for the next message.
  const uint32_t pos = slots_[s].active_pos;
  active_[pos] = active_.back();
  slots_[active_[pos]].active_pos = pos;
  active_.pop_back();
  free_slots_.push_back(s);
}

RxEvent Receiver::on_packet(const RxPacket& p, Time now) {
  ++stats_.packets;
  if (p.src >= sources_.size() || p.count == 0 || p.seq >= p.count) {
    ++stats_.invalid;
    return RxEvent::kInvalid;
  }
  Source& src = sources_[p.src];
  if (p.message_id < src.base) {
    ++stats_.stale;
    return RxEvent::kStale;
  }
  if (p.message_id - src.base >= config_.window) {
    ++stats_.out_of_window;
    return RxEvent::kOutOfWindow;
  }
  if (p.message_id - src.base >= src.slot_of.size()) [[unlikely]] make_room(src, src.base, p.message_id, kNone);
  const uint64_t ring = p.message_id & src.mask;
  if (get_bit(src.done, ring)) {
    ++stats_.stale;
    return RxEvent::kStale;
  }
  uint32_t si = src.slot_of[ring];
  if (si == kNone) {
    si = alloc_slot();
    Slot& s = slots_[si];
    s.src = p.src;
    s.id = p.message_id;
    s.count = p.count;
    s.received = s.highest = s.cumulative = 0;
    s.length = p.message_length;
    s.bytes = 0;
    s.ce = 0;
    s.last_activity = s.last_nack = now;
    s.nacked = false;
    s.bits.assign(words_for(p.count), 0);
    s.active_pos = static_cast<uint32_t>(active_.size());
    active_.push_back(si);
    src.slot_of[ring] = si;
  }
  Slot& s = slots_[si];
  if (p.count != s.count || p.message_length != s.length) {
    ++stats_.invalid;
    return RxEvent::kInvalid;
  }
  if (has(s, p.seq)) {
    ++stats_.duplicates;
    return RxEvent::kDuplicate;
  }
  set_bit(s.bits, p.seq);
  ++stats_.accepted;
  if (p.seq < s.highest && !p.retransmit) ++stats_.reordered;
  const uint32_t cumulative_before = s.cumulative;
  const bool hole_before = s.cumulative < s.highest;
  if (p.seq + 1 > s.highest) s.highest = p.seq + 1;
  while (s.cumulative < s.count && has(s, s.cumulative)) ++s.cumulative;
  // A new first hole (none before, or the old one filled and another behind it) starts its age now.
  if (s.cumulative < s.highest && (!hole_before || s.cumulative != cumulative_before)) s.hole_since = now;
  s.bytes += p.bytes;
  s.ce += p.ce ? 1 : 0;
  s.last_activity = now;
  if (++s.received < s.count) return RxEvent::kAccepted;

  // Complete: exactly once, since the done bit now turns every later copy into kStale.
  ++stats_.completed;
  completed_ce_ = s.ce;
  stats_.bytes_completed += s.bytes;
  set_bit(src.done, ring);
  src.slot_of[ring] = kNone;
  release_slot(si);
  while (get_bit(src.done, src.base & src.mask)) {
    clear_bit(src.done, src.base & src.mask);
    ++src.base;
  }
  return RxEvent::kCompleted;
}

size_t Receiver::collect_missing(const Slot& s, uint32_t limit, uint32_t* out) const noexcept {
  size_t n = 0;
  for (uint32_t w = s.cumulative >> 6; n < limit && uint64_t{w} * 64 < s.highest; ++w) {
    uint64_t holes = ~s.bits[w];
    while (holes != 0 && n < limit) {
      const uint32_t seq = w * 64 + static_cast<uint32_t>(std::countr_zero(holes));
      if (seq >= s.highest) break;
      out[n++] = seq;
      holes &= holes - 1;
    }
  }
  return n;
}

void Receiver::poll_nacks(Time now, NackBatch& out) {
  for (const uint32_t si : active_) {
    Slot& s = slots_[si];
    if (now - s.last_activity < config_.nack_delay &&
        (s.cumulative >= s.highest || now - s.hole_since < config_.nack_delay)) {
      continue;
    }
    if (s.nacked && now - s.last_nack < config_.nack_delay) continue;
    Nack n;
    n.src = s.src;
    n.message_id = s.id;
    n.count = s.count;
    n.cumulative = s.cumulative;
    n.first = static_cast<uint32_t>(out.seqs.size());
    out.seqs.resize(out.seqs.size() + config_.max_missing_per_nack);
    n.missing = static_cast<uint32_t>(collect_missing(s, config_.max_missing_per_nack, out.seqs.data() + n.first));
    out.seqs.resize(n.first + n.missing);
    // A truncated list covers only up to its last entry, so nothing it leaves out reads as received.
    n.covered = n.missing == config_.max_missing_per_nack ? out.seqs.back() + 1 : s.highest;
    out.nacks.push_back(n);
    s.nacked = true;
    s.last_nack = now;
    ++stats_.nacks;
  }
}

size_t Receiver::missing(uint32_t src, uint64_t message_id, std::span<uint32_t> out) const noexcept {
  if (src >= sources_.size()) return 0;
  const Source& so = sources_[src];
  if (message_id < so.base || message_id - so.base >= so.slot_of.size()) return 0;  // no state beyond the ring
  const uint32_t si = so.slot_of[message_id & so.mask];
  if (si == kNone) return 0;
  return collect_missing(slots_[si], static_cast<uint32_t>(std::min<size_t>(out.size(), UINT32_MAX)), out.data());
}

uint64_t Receiver::completed_below(uint32_t src) const noexcept {
  return src < sources_.size() ? sources_[src].base : 0;
}

}  // namespace fabemu::host::dpdk
