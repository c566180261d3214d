// Reliability of the DPDK fabric, independent of the I/O: the receiver reassembles messages from
// packets (duplicates dropped, reordering counted, each message completed exactly once, gaps NACKed),
// the sender keeps what is unacknowledged and retransmits it on NACK (selective repeat) or timeout.
// Deterministic: time is injected (emu::Time), there are no threads. A seeded fault filter drops,
// duplicates and reorders packets for tests and for `--drop-rate` / `--reorder-rate`.
//
// Message ids on the wire are per (sender, receiver) pair and consecutive from 0: the sender assigns
// them, so both sides track a window of ids with a ring instead of a hash table. Feedback semantics
// (wire form in README.md): an ACK says packets [0, cumulative) arrived (cumulative == count: the
// message is complete); a NACK says packets [0, cumulative) arrived and so did every packet of
// [cumulative, covered) that it does not list as missing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "emulator/time.h"
#include "host/wire/fifo.h"

namespace fabemu::host::dpdk {

using emu::Duration;
using emu::Time;

// --- receiver ---

// A decoded data packet, as the receiver needs it.
struct RxPacket {
  uint32_t src = 0;
  uint64_t message_id = 0;
  uint32_t seq = 0;
  uint32_t count = 0;
  uint64_t message_length = 0;
  uint32_t bytes = 0;
  bool retransmit = false;  // the header's kFlagRetransmit: not counted as reordering
  bool ce = false;          // it arrived marked CE (ECN: a switch on the way saw its queue build)
};

enum class RxEvent : uint8_t {
  kAccepted,     // new packet, message still incomplete
  kCompleted,    // new packet that completed its message (happens once per message): send an ACK
  kDuplicate,    // packet already held: dropped
  kStale,        // packet of an already completed message: dropped; re-ACK (the ACK may have been lost)
  kOutOfWindow,  // message id beyond the receive window: dropped (the sender will retransmit)
  kInvalid,      // inconsistent with the message's other packets or the configuration: dropped
};

struct ReceiverConfig {
  uint32_t sources = 1;        // ranks that may send to this receiver: 0 .. sources-1
  uint32_t window = 1024;      // messages in flight per source; a power of two
  // A message idle this long with packets missing, or one still receiving whose first hole below its
  // highest packet is this old, is NACKed (at most once per nack_delay). Must exceed the path's
  // reordering, or packets merely late are retransmitted.
  Duration nack_delay = Duration::from_us(100);
  uint32_t max_missing_per_nack = 256;
};

struct ReceiverStats {
  uint64_t packets = 0;
  uint64_t accepted = 0;      // kAccepted + kCompleted
  uint64_t duplicates = 0;
  uint64_t stale = 0;
  uint64_t reordered = 0;     // new packets below the highest seq seen of their message
  uint64_t out_of_window = 0;
  uint64_t invalid = 0;
  uint64_t completed = 0;     // messages
  uint64_t bytes_completed = 0;
  uint64_t nacks = 0;
};

struct Nack {
  uint32_t src = 0;  // the sender the NACK goes back to
  uint64_t message_id = 0;
  uint32_t count = 0;
  uint32_t cumulative = 0;
  uint32_t covered = 0;
  uint32_t first = 0;  // missing seqs are NackBatch::seqs[first, first + missing)
  uint32_t missing = 0;
};
// Output of Receiver::poll_nacks; reuse one across calls (clear() keeps the capacity).
struct NackBatch {
  std::vector<Nack> nacks;
  std::vector<uint32_t> seqs;
  void clear() noexcept {
    nacks.clear();
    seqs.clear();
  }
};

class Receiver {
 public:
  // std::invalid_argument on a window that is not a power of two, or zero sources.
  explicit Receiver(const ReceiverConfig& config);

  RxEvent on_packet(const RxPacket& p, Time now);
  // NACKs for incomplete messages idle for nack_delay since their last new packet, or whose first hole
  // below their highest packet has been there for nack_delay (a long message that keeps arriving: its
  // NACK acknowledges what arrived beyond the hole, which the sender's timeout would resend otherwise),
  // and not NACKed within nack_delay; appended to `out`. An incomplete message with no gap below its
  // highest packet still gets one when idle (an empty list acknowledges what arrived, so the sender's
  // timeout resends only the tail).
  void poll_nacks(Time now, NackBatch& out);
  // The missing seqs below the highest received of message (src, id), up to out.size(); returns how many.
  // 0 for an unknown or completed message.
  size_t missing(uint32_t src, uint64_t message_id, std::span<uint32_t> out) const noexcept;
  // Every message below this id from `src` is complete.
  uint64_t completed_below(uint32_t src) const noexcept;
  // Of the packets of the message the last kCompleted of on_packet completed, how many arrived marked CE
  // (their first copies: RxPacket::ce of the packets it accepted).
  uint32_t completed_ce() const noexcept { return completed_ce_; }
  size_t active_messages() const noexcept { return active_.size(); }
  // Entries of `src`'s window ring (0 before its first packet): a power of two from 16 up to what its
  // messages in flight have needed, at most max(16, window).
  size_t window_ring(uint32_t src) const noexcept { return src < sources_.size() ? sources_[src].slot_of.size() : 0; }
  const ReceiverStats& stats() const noexcept { return stats_; }

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFF;
  struct Slot {
    uint32_t src = 0;
    uint64_t id = 0;
    uint32_t count = 0;
    uint32_t received = 0;
    uint32_t highest = 0;     // 1 + the highest seq received
    uint32_t cumulative = 0;  // first seq not received
    uint64_t length = 0;
    uint64_t bytes = 0;
    uint32_t ce = 0;          // accepted packets that arrived marked CE
    Time last_activity;
    Time last_nack;
    Time hole_since;          // when the first hole (at `cumulative`, below `highest`) was first seen
    bool nacked = false;
    uint32_t active_pos = 0;
    std::vector<uint64_t> bits;  // kept across reuse: the pool's storage
  };
  struct Source {
    uint64_t base = 0;                 // every id below is complete
    std::vector<uint32_t> slot_of;     // window ring: slot index or kNone (grown as needed: make_room)
    std::vector<uint64_t> done;        // window ring: completed-id bits
    uint64_t mask = 0;                 // slot_of.size() - 1
  };
  uint32_t alloc_slot();
  void release_slot(uint32_t s);
  bool has(const Slot& s, uint32_t seq) const noexcept { return (s.bits[seq >> 6] >> (seq & 63)) & 1; }
  size_t collect_missing(const Slot& s, uint32_t limit, uint32_t* out) const noexcept;

  ReceiverConfig config_;
  std::vector<Source> sources_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint32_t> active_;
  ReceiverStats stats_;
  uint32_t completed_ce_ = 0;
};

// --- sender ---

struct SenderConfig {
  uint32_t destinations = 1;        // ranks this sender may send to: 0 .. destinations-1
  uint32_t payload_per_packet = 1024;  // message bytes per packet (max_payload_for_mtu)
  uint32_t window = 1024;           // unacknowledged messages per destination; the receiver's window
  Duration rto = Duration::from_us(1000);  // a packet unacknowledged this long is sent again
  // A NACK (the receiver heard nothing new of the message for its NACK delay) that does not cover the
  // message's last packet sent, last sent at least this long ago, sends that packet again (a tail-loss
  // probe, Sender::on_nack): a lost tail recovered without waiting for the RTO. Duration::max(): never.
  Duration tail_age = Duration::max();
};

struct SenderStats {
  uint64_t messages = 0;
  uint64_t messages_acked = 0;
  uint64_t packets = 0;              // first transmissions
  uint64_t retransmissions = 0;      // nack_retransmissions + timeout_retransmissions
  uint64_t nack_retransmissions = 0;
  uint64_t timeout_retransmissions = 0;
  uint64_t tail_retransmissions = 0;  // of the NACK retransmissions, tail-loss probes (on_nack with `now`)
  uint64_t nacks_in_flight = 0;       // NACKed packets not resent: last sent after what the NACK says arrived
  uint64_t timer_checks = 0;         // message timers that expired and had their packets checked
};

// One packet to put on the wire.
struct TxPacket {
  uint32_t dst = 0;
  uint64_t message_id = 0;
  uint32_t seq = 0;
  uint32_t count = 0;
  uint64_t message_length = 0;
  uint64_t offset = 0;
  uint32_t bytes = 0;
  bool retransmit = false;
  uint64_t cookie = 0;  // submit()'s cookie: the caller's id of the message, on each of its packets
};

// Consecutive packets of one message as the sender gives them (Sender::next_runs): packets seq .. seq + n - 1,
// packet i at offset + i * bytes. Every packet but a message's last carries the sender's payload per packet,
// so `bytes` is that for all but the run's last packet, which carries last_bytes (the same unless the run
// ends the message). A retransmission is a run of one.
struct TxRun {
  uint32_t dst = 0;
  uint64_t message_id = 0;
  uint32_t seq = 0;
  uint32_t n = 0;
  uint32_t count = 0;
  uint64_t message_length = 0;
  uint64_t offset = 0;
  uint32_t bytes = 0;
  uint32_t last_bytes = 0;
  bool retransmit = false;
  uint64_t cookie = 0;
  // Packet i (< n) of the run.
  TxPacket packet(uint32_t i) const noexcept {
    return TxPacket{dst, message_id, seq + i, count, message_length, offset + uint64_t{i} * bytes,
                    i + 1 == n ? last_bytes : bytes, retransmit, cookie};
  }
  // The rest of the run from packet i (< n) on.
  TxRun from(uint32_t i) const noexcept {
    TxRun r = *this;
    r.seq += i;
    r.offset += uint64_t{i} * bytes;
    r.n -= i;
    return r;
  }
};

// A pacer's say over a sender's new packets (Sender::next_runs): `allow(ctx, run)` is given each run of new
// packets before the sender commits to it and returns how many of its first packets leave now (at most
// run.n). The sender gives that many and stops there: the rest of the message and every message queued
// behind it wait for a later call (a FIFO link), and packets not given are not sent (no send time, no
// timer). Retransmissions are not gated. A default RunGate lets everything through.
struct RunGate {
  uint32_t (*allow)(void* ctx, const TxRun& run) = nullptr;
  void* ctx = nullptr;
};

// Selective repeat with one retransmission timer per message in flight (not per packet): a packet is
// sent again once it has been unacknowledged for the RTO since its last transmission, exactly as with a
// timer per packet, but the per-packet cost of a first transmission is one store of its send time. The
// message's timer runs from a time no later than the last transmission of any of its sent,
// unacknowledged packets; when it expires, the message's packets are checked (only then), the expired
// ones are queued for retransmission and the timer restarts from the earliest remaining one.
class Sender {
 public:
  // std::invalid_argument on zero payload_per_packet or destinations, or a window not a power of two.
  explicit Sender(const SenderConfig& config);

  // Queues a message of `bytes` to `dst` and returns its wire id; std::out_of_range when `dst`'s
  // window is full (check can_submit) or dst is out of range. Every TxPacket of the message carries
  // `cookie`, so the caller finds its record of the message without a lookup per packet.
  uint64_t submit(uint32_t dst, uint64_t bytes, uint64_t cookie = 0);
  bool can_submit(uint32_t dst) const noexcept;
  // One more destination, numbered destinations() before the call (returned): a sender that learns its
  // destinations as it goes starts with one and adds the others.
  uint32_t add_destination();
  uint32_t destinations() const noexcept { return static_cast<uint32_t>(dests_.size()); }
  // The next packet to send at `now`: NACKed packets first, then timed-out ones, then new ones.
  // False when there is nothing to send now (see next_timeout()). `now` must not go backwards.
  bool next(Time now, TxPacket& out);
  // The packets of up to out.size() calls of next(now) (those calls' order and effects, timers
  // included), with the per-call checks once per burst; returns how many (0: nothing to send now).
  size_t next_burst(Time now, std::span<TxPacket> out);
  // The same packets as next_burst(now, max_packets of them) would give, in the same order and with the
  // same effects, as runs of consecutive packets of one message (a retransmission: a run of one), at
  // most out.size() runs: what a sender hands to encode_run (frame.h) a run at a time. With a gate, only
  // the new packets it lets through now (RunGate): the packets next_burst would give, cut at the first one
  // held back.
  struct Runs {
    size_t runs = 0, packets = 0;
  };
  Runs next_runs(Time now, std::span<TxRun> out, size_t max_packets, RunGate gate = {});
  // No later than the first time at or after `now` at which next_runs / next_burst could give a packet,
  // as things stand: `now` when a new packet or a retransmission is queued, else next_timeout() (at least
  // `now`). Only submit, on_nack and set_rto can make it earlier; a caller polling many senders keeps it
  // and skips the sender until then (DpdkFabric::transmit).
  Time next_work(Time now) noexcept {
    if (!fresh_.empty() || !nacked_.empty() || !expired_.empty()) return now;
    return std::max(next_timeout(), now);
  }
  // When the earliest message timer expires (Time::max() when none): no packet times out before it
  // (next() may find that a message acknowledged since needs nothing resent then).
  Time next_timeout() noexcept;
  // Changes the retransmission timeout (an adaptive RTO); it applies to every running timer.
  void set_rto(Duration rto) noexcept { config_.rto = rto; }
  Duration rto() const noexcept { return config_.rto; }
  // Feedback from `dst` about `message_id`. Returns true when this completed the message (freed).
  bool on_ack(uint32_t dst, uint64_t message_id, uint32_t cumulative);
  bool on_nack(uint32_t dst, uint64_t message_id, uint32_t cumulative, uint32_t covered,
               std::span<const uint32_t> missing);
  // The same, received at `now`, with a tail-loss probe (as TCP's TLP): when the last packet sent of the
  // message that is not acknowledged lies at or beyond `covered` (the receiver had not seen it after a
  // NACK delay of silence), is not queued already and was last sent at least tail_age before `now`, it is
  // queued for retransmission. Not when the NACK's list was cut short (its last entry is covered - 1: the
  // receiver may have packets beyond it). Counted as a NACK retransmission and in tail_retransmissions.
  // And a listed packet last sent after the highest packet the NACK says arrived, less than the tail age
  // (at most the RTO) ago, is not sent again (on a path that keeps a pair's order it is still on its way:
  // a retransmission NACKed once more while a long message streams, as RACK reasons); counted in
  // nacks_in_flight. A later NACK sends it once it is older.
  bool on_nack(uint32_t dst, uint64_t message_id, uint32_t cumulative, uint32_t covered,
               std::span<const uint32_t> missing, Time now);
  // Changes tail_age (SenderConfig).
  void set_tail_age(Duration age) noexcept { config_.tail_age = age; }
  Duration tail_age() const noexcept { return config_.tail_age; }
  size_t unacked_messages() const noexcept { return live_; }
  // Entries of `dst`'s window ring (0 before its first message): as Receiver::window_ring.
  size_t window_ring(uint32_t dst) const noexcept { return dst < dests_.size() ? dests_[dst].slot_of.size() : 0; }
  const SenderStats& stats() const noexcept { return stats_; }

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFF;
  struct Slot {
    uint32_t dst = 0;
    uint32_t count = 0;
    uint64_t id = 0;
    uint64_t length = 0;
    uint32_t next_new = 0;      // first seq never sent
    uint32_t unacked = 0;       // packets not acknowledged (sent or not)
    uint32_t low_word = 0;      // acked words below this one are all ones (where timer checks, ACKs, NACKs start)
    bool armed = false;         // the message has a timer entry (timers_ or rearmed_)
    bool in_order = true;       // nothing resent yet: sent_at grows with seq (a check stops early)
    // Bumped on every submit and release: references to an earlier message go stale (an entry outlives
    // its message by at most an RTO, far fewer than 2^32 reuses of the slot).
    uint32_t gen = 0;
    uint64_t cookie = 0;        // submit()'s
    std::vector<uint64_t> acked;    // per packet
    std::vector<uint64_t> pending;  // per packet: queued for a retransmission (NACK or timeout)
    std::vector<Time> sent_at;      // per packet: last transmission
  };
  struct Dest {
    uint64_t next_id = 0;
    uint64_t base = 0;              // every id below is acknowledged
    std::vector<uint32_t> slot_of;  // window ring (grown as needed: make_room)
    std::vector<uint64_t> done;     // window ring: acknowledged-id bits
    uint64_t mask = 0;              // slot_of.size() - 1
  };
  struct Ref {  // a packet queued for retransmission
    uint32_t slot;
    uint32_t seq;
    uint32_t gen;
  };
  struct Timer {  // a message's retransmission timer: expires at `from` + rto
    uint32_t slot;
    uint32_t gen;
    Time from;
  };
  struct Later {
    bool operator()(const Timer& a, const Timer& b) const noexcept { return a.from > b.from; }
  };
  Slot* find(uint32_t dst, uint64_t id) noexcept;
  // Moves s.low_word past the words all acknowledged, up to the word of packet `upto` - 1.
  static void skip_acked_words(Slot& s, uint32_t upto) noexcept {
    while (uint64_t{s.low_word} * 64 < upto && s.acked[s.low_word] == ~uint64_t{0}) ++s.low_word;
  }
  bool ack_packet(Slot& s, uint32_t seq) noexcept;
  bool nack(uint32_t dst, uint64_t message_id, uint32_t cumulative, uint32_t covered,
            std::span<const uint32_t> missing, const Time* now);
  bool finish_if_done(uint32_t slot);
  bool valid(uint32_t slot, uint32_t gen) const noexcept { return slots_[slot].gen == gen; }
  // Pops expired message timers and checks their messages; true when packets were queued in expired_.
  bool expire(Time now);
  bool next_retransmission(Time now, TxPacket& out);
  // The first packet of `queue` still to resend, sent (counted in `reason_count` too); false when none.
  bool resend_queued(detail::Ring<Ref>& queue, uint64_t& reason_count, Time now, TxPacket& out);
  void check_message(uint32_t slot, Time now);
  void emit(Slot& s, uint32_t slot, uint32_t seq, Time now, bool retransmit, TxPacket& out);
  void describe_run(const Slot& s, uint32_t seq, uint32_t n, TxRun& out) const noexcept;
  void commit_run(Slot& s, uint32_t slot, uint32_t seq, uint32_t n, Time now);
  template <class Fresh, class Resent>
  Runs take(Time now, size_t max_packets, size_t max_takes, bool per_packet, Fresh fresh, Resent resent);

  SenderConfig config_;
  // Not next to stats_: GCC merged `++live_; ++stats_.messages` into one 16-byte load and add, which the
  // CPU cannot forward from on_ack's 8-byte store to live_ (perf put 7% of the 1126 B transmit loop's
  // samples on that load; moving it changed the loop's rate by less than the noise).
  size_t live_ = 0;
  std::vector<Dest> dests_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  detail::Ring<uint32_t> fresh_;   // slots with packets never sent, in submission order
  detail::Ring<Ref> nacked_;       // NACKed packets to resend
  detail::Ring<Ref> expired_;      // timed-out packets to resend
  detail::Ring<Timer> timers_;     // armed at a transmission: in time order (now never goes back)
  std::vector<Timer> rearmed_;     // re-armed after a check, at an earlier time than timers_' back: a min-heap
  SenderStats stats_;
};

// A fabric's senders, one per first link: the outgoing link of the source's NPU that a message's route
// starts on. A frame waiting for its paced departure on one link then never holds back frames due on
// another link of the same rank (one sender per rank did: head of line, host/dpdk/README.md, "Pacing").
// A pair (src, dst) keeps the sender of its first message's first link, since its message ids and the
// receiver's window are per pair; each sender numbers the destinations it learns (add_destination).
class LinkSenders {
 public:
  struct Pair {
    uint32_t sender = ~0u;  // index of the pair's sender (~0u: the pair has sent nothing)
    uint32_t dst = 0;       // the destination's number in that sender
  };
  LinkSenders() = default;  // no links: assign a real one before use
  // `config` for every sender (its `destinations` is ignored); `links`: the topology's link count.
  LinkSenders(uint32_t npus, size_t links, const SenderConfig& config);
  // The sender of src -> dst, made (or given a destination) on the pair's first message.
  Pair of(uint32_t src, uint32_t dst, uint32_t first_link);
  // The pair's sender, {~0u, 0} when it has sent nothing.
  Pair find(uint32_t src, uint32_t dst) const noexcept {
    const uint64_t key = uint64_t{src} * npus_ + dst;
    if (!dense_.empty()) return dense_[key];
    const auto it = sparse_.find(key);
    return it == sparse_.end() ? Pair{} : it->second;
  }
  size_t size() const noexcept { return senders_.size(); }
  Sender& operator[](size_t i) noexcept { return *senders_[i]; }
  const Sender& operator[](size_t i) const noexcept { return *senders_[i]; }
  uint32_t src(size_t i) const noexcept { return src_[i]; }
  // The rank of destination number `d` of sender `i` (TxPacket::dst is that number).
  uint32_t dst(size_t i, uint32_t d) const noexcept { return dsts_[i][d]; }
  // Every sender's RTO, and that of the senders made from now on.
  void set_rto(Duration rto) noexcept;
  // Every sender's tail_age (SenderConfig), and that of the senders made from now on.
  void set_tail_age(Duration age) noexcept;

 private:
  uint32_t npus_ = 0;
  SenderConfig config_;
  std::vector<std::unique_ptr<Sender>> senders_;
  std::vector<uint32_t> src_;
  std::vector<std::vector<uint32_t>> dsts_;
  std::vector<uint32_t> by_link_;  // sender index + 1, 0: none yet
  std::vector<Pair> dense_;        // by src * npus + dst when npus^2 <= 65,536
  std::unordered_map<uint64_t, Pair> sparse_;
};

// The endpoint (Sender, Receiver) of `rank` in `all`, made from `config()` on first use and then listed in
// `active` (in creation order).
template <class T, class MakeConfig>
T& endpoint_of(std::vector<std::unique_ptr<T>>& all, std::vector<uint32_t>& active, uint32_t rank,
               MakeConfig&& config) {
  if (!all[rank]) [[unlikely]] {
    all[rank] = std::make_unique<T>(config());
    active.push_back(rank);
  }
  return *all[rank];
}

// --- fault injection ---

struct FaultConfig {
  double drop_rate = 0;       // probability a packet is lost
  double duplicate_rate = 0;  // probability a packet that is not lost is delivered twice
  double reorder_rate = 0;    // probability a delivered packet is held back behind later ones
  uint64_t seed = 1;
};

// For a stall's reason: "" without injected drops, else " (--drop-rate R: the fault injection drops all of
// the data <what> that arrive)" ("that fraction of" below 1). `what`: "frames", "datagrams".
std::string describe_drops(const FaultConfig& config, std::string_view what);

struct FaultDecision {
  bool drop = false;
  bool duplicate = false;
  bool reorder = false;
};

// Decides, packet by packet, from a seeded generator: the same seed gives the same decisions on every
// platform. How far a reordered packet is held back is the caller's (its I/O knows what "later" is).
class FaultFilter {
 public:
  // std::invalid_argument for a rate outside [0, 1] (or NaN).
  explicit FaultFilter(const FaultConfig& config);
  // The next packet's faults. With every rate 0 (after rounding to 2^-32) nothing is drawn: no fault is
  // possible, and the generator stays where it is (uniform() then gives what it gives on a fresh filter).
  FaultDecision next() noexcept {
    if (!active_) [[likely]] {
      ++seen_;
      return {};
    }
    return draw_next();
  }
  // A deterministic draw in [0, n), for callers that choose a reorder distance.
  uint64_t uniform(uint64_t n) noexcept;
  uint64_t seen() const noexcept { return seen_; }
  uint64_t dropped() const noexcept { return dropped_; }
  uint64_t duplicated() const noexcept { return duplicated_; }
  uint64_t reordered() const noexcept { return reordered_; }

 private:
  uint64_t draw() noexcept;
  FaultDecision draw_next() noexcept;
  uint64_t state_;
  uint64_t drop_q32_, dup_q32_, reorder_q32_;  // probability * 2^32
  bool active_;                                // a rate is not 0
  uint64_t seen_ = 0, dropped_ = 0, duplicated_ = 0, reordered_ = 0;
};

}  // namespace fabemu::host::dpdk
