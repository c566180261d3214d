// The event engine: a queue of pending events ordered by (time, insertion sequence) and the virtual
// clock that follows it. Equal-time events run in the order they were scheduled, so runs are repeatable.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "emulator/time.h"

namespace fabemu::emu {

// What an event is delivered to: a component (link, NIC, rank walker...) implements on_event and
// schedules itself, with `arg` telling its own event kinds or sub-units apart.
//
// Why an interface and not {void (*fn)(void*, uint64_t); void* ctx; uint64_t arg}: the call costs the
// same (one indirect call), but there is no void* to cast back and get wrong (STYLE.md). And as in
// htsim (EventSource::doNextEvent) a component keeps only its head-of-line event pending, so one
// target per component with a 64-bit argument is all the payload an event needs: {target, arg} is
// 16 bytes, pooled by the queue. Anything larger lives in the component, not in the event.
class EventTarget {
 public:
  virtual void on_event(uint64_t arg) = 0;

 protected:
  EventTarget() = default;
  EventTarget(const EventTarget&) = default;
  EventTarget& operator=(const EventTarget&) = default;
  // Protected and non-virtual: the queue never owns or deletes a target.
  ~EventTarget() = default;
};

// Pending events ordered by (time, sequence); the sequence is a counter of schedule() calls, so events
// at equal times come out in insertion order (SST's TimeVortex order, without priorities).
//
// No allocation per event: a 4-ary heap of 16-byte entries {time, sequence:40 | slot:24} in one
// cache-line-aligned array (each node's four children share one 64-byte line), and the payloads
// {target, arg} in a slot arena recycled through an intrusive free list. Memory grows only when the
// number of pending events exceeds its previous peak. A popped event's slot is freed before its
// handler runs, so the handler's own schedule() reuses it while it is still in cache.
//
// Sequence numbers have 40 bits (~1.1e12 schedule() calls, about 15 hours at 20M events/s); when
// they run out the pending events are renumbered 0..n-1 in their current order, which keeps every
// comparison, hence the heap and the run, unchanged.
//
// In front of the heap, kLanes FIFO lanes: an event no earlier than the last one of some lane is
// appended to the first such lane (a ring buffer) instead of the heap. Sequences grow, so each lane is
// sorted by (time, sequence), and pop() takes the smallest of the heap's top and the lanes' fronts: the
// same order as a heap of everything. Components that schedule at now + a constant (a step's endpoint
// delay, a link's latency) fill lanes in order, and a lane costs O(1) where the heap costs a sift-down
// (the packet model's events: 39% of a 256-rank ResNet-50 run in the heap before the lanes).
class EventQueue {
 public:
  struct Fired {
    Time at;
    EventTarget* target;
    uint64_t arg;
  };

  // Slot indexes have 24 bits.
  static constexpr std::size_t kMaxPending = std::size_t{1} << 24;

  // Memory for `expected_pending` events is reserved up front.
  explicit EventQueue(std::size_t expected_pending = 1024);
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // Precondition (asserted in debug builds): at >= now(). Throws std::length_error past kMaxPending
  // pending events (and std::bad_alloc), leaving the queue unchanged.
  void schedule(Time at, EventTarget& target, uint64_t arg = 0);
  // Removes the earliest event and sets now() to its time; the caller delivers it.
  // Precondition: !empty().
  Fired pop() noexcept;

  bool empty() const noexcept { return pending_ == 0; }
  std::size_t size() const noexcept { return pending_; }
  // The time of the last event popped (zero before the first).
  Time now() const noexcept { return now_; }
  // Precondition: !empty().
  Time next_time() const noexcept {
    assert(pending_ > 0);
    return Time::from_ps(earliest()->time);
  }
  void reserve(std::size_t pending);

 private:
  struct Entry {
    uint64_t time;  // ps
    uint64_t key;   // sequence << kSlotBits | payload slot; the sequence alone decides among equal times
  };
  static_assert(sizeof(Entry) == 16);
  struct Payload {
    EventTarget* target;
    uint64_t arg;  // on the free list: the next free slot
  };

  static constexpr unsigned kSlotBits = 24;
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
  static constexpr uint64_t kSequenceLimit = uint64_t{1} << (64 - kSlotBits);
  static constexpr uint32_t kNoSlot = ~uint32_t{0};
  // Leading unused entries so that the children 4i+1..4i+4 of node i start on a cache line.
  static constexpr std::size_t kHeapOffset = 3;
  static constexpr std::size_t kLine = 64;
  // Heap size (entries) from which sift_down prefetches: 256 KiB of entries.
  static constexpr std::size_t kPrefetchFrom = std::size_t{1} << 14;

  // A FIFO of entries in (time, sequence) order: a ring buffer of a power-of-two capacity.
  struct Lane {
    std::vector<Entry> ring;
    std::size_t head = 0;
    std::size_t count = 0;
    const Entry& front() const noexcept { return ring[head]; }
    const Entry& back() const noexcept { return ring[(head + count - 1) & (ring.size() - 1)]; }
  };
  static constexpr std::size_t kLanes = 4;
  static constexpr std::size_t kHeapSource = kLanes;  // earliest_source(): the heap's top

  static bool before(const Entry& a, const Entry& b) noexcept {
    return ((detail::u128{a.time} << 64) | a.key) < ((detail::u128{b.time} << 64) | b.key);
  }
  // Where the earliest pending event is: a lane's index or kHeapSource. Precondition: pending_ > 0.
  std::size_t earliest_source() const noexcept;
  const Entry* earliest() const noexcept {
    const std::size_t s = earliest_source();
    return s == kHeapSource ? &heap_[0] : &lanes_[s].front();
  }
  // The lane a new entry at `time` is appended to, or kHeapSource when no lane takes it.
  std::size_t lane_for(uint64_t time) const noexcept {
    for (std::size_t i = 0; i < kLanes; ++i) {
      if (lanes_[i].count == 0 || lanes_[i].back().time <= time) return i;
    }
    return kHeapSource;
  }
  void grow_lane(Lane& lane);
  // Every lane's entries into the heap (before a renumbering, which works on the heap alone).
  void drain_lanes_into_heap();
  void sift_up(Entry e) noexcept;
  void sift_down(Entry e) noexcept;
  // Moves `e` up from the hole at `i` past later parents, and stores it.
  void rise(std::size_t i, Entry e) noexcept;
  uint32_t new_slot(EventTarget& target, uint64_t arg);  // when the free list is empty
  void grow_heap(std::size_t capacity);
  void renumber();

  struct LineFree {
    void operator()(Entry* p) const noexcept;
  };
  std::unique_ptr<Entry[], LineFree> storage_;
  Entry* heap_ = nullptr;  // storage_.get() + kHeapOffset
  std::size_t size_ = 0;     // entries in the heap
  std::size_t pending_ = 0;  // in the heap and the lanes
  Lane lanes_[kLanes];
  std::size_t capacity_ = 0;
  std::vector<Payload> payloads_;
  uint32_t free_slot_ = kNoSlot;
  uint64_t next_sequence_ = 0;
  Time now_;

  friend struct EventQueueTestAccess;  // tests drive the sequence to its limit
};

// The engine of the software and FPGA fabrics: the event queue and its virtual clock. A handler runs
// at its event's time and may schedule more events, at that time or later. Single-threaded; stop()
// is meant to be called from a handler (not from a signal handler or another thread).
class Engine {
 public:
  explicit Engine(std::size_t expected_pending = 1024) : queue_(expected_pending) {}
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The time of the event being (or last) run: the virtual clock.
  Time now() const noexcept { return queue_.now(); }
  // Precondition: when >= now().
  void at(Time when, EventTarget& target, uint64_t arg = 0) { queue_.schedule(when, target, arg); }
  void after(Duration delay, EventTarget& target, uint64_t arg = 0) { queue_.schedule(now() + delay, target, arg); }

  // Runs events until none is left or a handler calls stop(); returns now(), the time of the last
  // event run. Pending events stay pending after a stop, and a later run() resumes with them.
  Time run() { return run_until(Time::max()); }
  // The same, but only events at times <= limit. The clock is not moved to `limit`.
  Time run_until(Time limit);
  // As run(), but at most `max_events` events: true when it stopped at that count with events still
  // pending (call it again to go on), false when none is left or a handler called stop().
  bool run_some(uint64_t max_events);
  // The current run returns once the running handler returns. No effect outside a run.
  void stop() noexcept { stop_requested_ = true; }

  std::size_t pending() const noexcept { return queue_.size(); }
  // The time of the earliest pending event; Time::max() when none is pending.
  Time next_time() const noexcept { return queue_.empty() ? Time::max() : queue_.next_time(); }
  uint64_t events_run() const noexcept { return events_run_; }

 private:
  EventQueue queue_;
  uint64_t events_run_ = 0;
  bool stop_requested_ = false;
};

// --- hot paths, inline -------------------------------------------------------------------------------

inline void EventQueue::schedule(Time at, EventTarget& target, uint64_t arg) {
  assert(at >= now_ && "EventQueue::schedule: event in the past");
  if (next_sequence_ == kSequenceLimit) [[unlikely]] renumber();
  // Room first (growing may throw), then the slot: a throw leaves the queue unchanged.
  const std::size_t lane = lane_for(at.ps());
  if (lane == kHeapSource) {
    if (size_ == capacity_) [[unlikely]] grow_heap(2 * capacity_);
  } else if (lanes_[lane].count == lanes_[lane].ring.size()) [[unlikely]] {
    grow_lane(lanes_[lane]);
  }
  uint32_t slot = free_slot_;
  if (slot != kNoSlot) [[likely]] {
    free_slot_ = static_cast<uint32_t>(payloads_[slot].arg);
    payloads_[slot] = Payload{&target, arg};
  } else {
    slot = new_slot(target, arg);
  }
  const Entry e{at.ps(), (next_sequence_++ << kSlotBits) | slot};
  ++pending_;
  if (lane == kHeapSource) {
    sift_up(e);
  } else {
    Lane& l = lanes_[lane];
    l.ring[(l.head + l.count++) & (l.ring.size() - 1)] = e;
  }
}

inline std::size_t EventQueue::earliest_source() const noexcept {
  assert(pending_ > 0);
  std::size_t best = kHeapSource;
  const Entry* min = size_ > 0 ? &heap_[0] : nullptr;
  for (std::size_t i = 0; i < kLanes; ++i) {
    if (lanes_[i].count > 0 && (min == nullptr || before(lanes_[i].front(), *min))) {
      best = i;
      min = &lanes_[i].front();
    }
  }
  return best;
}

inline EventQueue::Fired EventQueue::pop() noexcept {
  assert(pending_ > 0);
  const std::size_t source = earliest_source();
  Entry top;
  if (source == kHeapSource) {
    top = heap_[0];
    --size_;
    if (size_ > 0) sift_down(heap_[size_]);
  } else {
    Lane& l = lanes_[source];
    top = l.front();
    l.head = (l.head + 1) & (l.ring.size() - 1);
    --l.count;
  }
  --pending_;
  const auto slot = static_cast<uint32_t>(top.key & kSlotMask);
  Payload& payload = payloads_[slot];
  const Fired fired{Time::from_ps(top.time), payload.target, payload.arg};
  payload.arg = free_slot_;
  free_slot_ = slot;
  now_ = fired.at;
  return fired;
}

inline void EventQueue::rise(std::size_t i, Entry e) noexcept {
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (!before(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

inline void EventQueue::sift_up(Entry e) noexcept { rise(size_++, e); }

// Refills the root hole with `e` (the former last entry). Bottom-up (Floyd): the hole walks down to a
// leaf along the smaller children without comparing against `e`, then `e` rises from there. `e` came
// from the bottom and nearly always belongs near it, so this saves a comparison and an unpredictable
// branch per level.
inline void EventQueue::sift_down(Entry e) noexcept {
  const std::size_t n = size_;
  std::size_t i = 0;
  for (;;) {
    const std::size_t c = 4 * i + 1;
    if (c + 3 >= n) break;
    // The children's children are 4 contiguous cache lines: fetch them one level early, which halves
    // the wait per level once the heap no longer fits in L1/L2 (in it, prefetching only costs).
    if (n >= kPrefetchFrom && 4 * c + 1 < n) {
      const char* g = reinterpret_cast<const char*>(heap_ + 4 * c + 1);
      __builtin_prefetch(g);
      __builtin_prefetch(g + kLine);
      __builtin_prefetch(g + 2 * kLine);
      __builtin_prefetch(g + 3 * kLine);
    }
    // Tournament of four, branch-free: two independent comparisons, then one.
    const std::size_t a = c + static_cast<std::size_t>(before(heap_[c + 1], heap_[c]));
    const std::size_t b = c + 2 + static_cast<std::size_t>(before(heap_[c + 3], heap_[c + 2]));
    const std::size_t m = before(heap_[b], heap_[a]) ? b : a;
    heap_[i] = heap_[m];
    i = m;
  }
  // A last, partial group of 1-3 children (whose own children cannot exist).
  if (const std::size_t c = 4 * i + 1; c < n) {
    std::size_t m = c;
    for (std::size_t j = c + 1; j < n; ++j) {
      if (before(heap_[j], heap_[m])) m = j;
    }
    heap_[i] = heap_[m];
    i = m;
  }
  rise(i, e);
}

inline Time Engine::run_until(Time limit) {
  stop_requested_ = false;
  // (run() asks for no limit: no need to find the earliest event twice per event.)
  while (!stop_requested_ && !queue_.empty() && (limit == Time::max() || queue_.next_time() <= limit)) {
    const EventQueue::Fired event = queue_.pop();
    ++events_run_;
    event.target->on_event(event.arg);
  }
  return now();
}

inline bool Engine::run_some(uint64_t max_events) {
  stop_requested_ = false;
  for (uint64_t n = 0; n < max_events; ++n) {
    if (stop_requested_ || queue_.empty()) return false;
    const EventQueue::Fired event = queue_.pop();
    ++events_run_;
    event.target->on_event(event.arg);
  }
  return !stop_requested_ && !queue_.empty();
}

}  // namespace fabemu::emu
