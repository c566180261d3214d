// EventQueue and Engine: order by (time, insertion), against reference models; determinism; and no
// allocation per event in steady state (counted by replacing the global operator new in this binary).
#include "emulator/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <utility>
#include <vector>

#include "tests/emulator/print.h"
#include "tests/support/alloc_counter.h"

namespace fabemu::emu {

// Lets a test start the sequence counter just below its limit.
struct EventQueueTestAccess {
  static constexpr uint64_t kSequenceLimit = EventQueue::kSequenceLimit;
  static void set_next_sequence(EventQueue& q, uint64_t s) { q.next_sequence_ = s; }
  static uint64_t next_sequence(const EventQueue& q) { return q.next_sequence_; }
};

namespace {

using Record = std::pair<uint64_t, uint64_t>;  // (time ps, arg)

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Pops everything, checking that the clock never goes back.
std::vector<Record> drain(EventQueue& q, const EventTarget* expected_target) {
  std::vector<Record> out;
  out.reserve(q.size());
  Time last = q.now();
  while (!q.empty()) {
    const Time next = q.next_time();
    const EventQueue::Fired f = q.pop();
    EXPECT_EQ(f.at, next);
    EXPECT_EQ(q.now(), f.at);
    EXPECT_GE(f.at, last);
    EXPECT_EQ(f.target, expected_target);
    last = f.at;
    out.emplace_back(f.at.ps(), f.arg);
  }
  return out;
}

struct NullTarget final : EventTarget {
  void on_event(uint64_t) override {}
};

TEST(EventQueue, OrdersByTime) {
  EventQueue q;
  NullTarget t;
  EXPECT_TRUE(q.empty());
  q.schedule(Time::from_ns(5), t, 5);
  q.schedule(Time::from_ns(1), t, 1);
  q.schedule(Time::from_ns(3), t, 3);
  q.schedule(Time::from_ps(1), t, 0);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.next_time(), Time::from_ps(1));
  const std::vector<Record> want = {{1, 0}, {1'000, 1}, {3'000, 3}, {5'000, 5}};
  EXPECT_EQ(drain(q, &t), want);
  EXPECT_EQ(q.now(), Time::from_ns(5));
}

// 100k events over only 1000 distinct times, so most share a time with others: the queue must give
// exactly the order of a stable sort by time of the insertion order.
TEST(EventQueue, EqualTimesComeOutInInsertionOrder) {
  constexpr uint64_t kEvents = 100'000;
  std::mt19937_64 rng(20240601);
  std::uniform_int_distribution<uint64_t> time(0, 999);
  EventQueue q(16);  // grows from a small reservation
  NullTarget t;
  std::vector<Record> want;
  for (uint64_t i = 0; i < kEvents; ++i) {
    const uint64_t at = time(rng);
    q.schedule(Time::from_ps(at), t, i);
    want.emplace_back(at, i);
  }
  std::stable_sort(want.begin(), want.end(), [](const Record& a, const Record& b) { return a.first < b.first; });
  EXPECT_EQ(q.size(), kEvents);
  EXPECT_EQ(drain(q, &t), want);
}

// Interleaved pops and pushes (the hold pattern), FIFO among ties, against std::multimap, which keeps
// equal keys in insertion order.
TEST(EventQueue, InterleavedMatchesMultimap) {
  std::mt19937_64 rng(7);
  EventQueue q;
  NullTarget t;
  std::multimap<uint64_t, uint64_t> ref;
  uint64_t id = 0;
  for (int i = 0; i < 500; ++i) {
    const uint64_t at = rng() % 100;
    q.schedule(Time::from_ps(at), t, id);
    ref.emplace(at, id++);
  }
  for (int step = 0; step < 200'000; ++step) {
    ASSERT_FALSE(q.empty());
    const auto f = q.pop();
    const auto it = ref.begin();
    ASSERT_EQ(Record(f.at.ps(), f.arg), Record(it->first, it->second)) << "step " << step;
    ref.erase(it);
    const uint64_t pushes = rng() % 3;  // 0, 1 or 2: the queue breathes
    for (uint64_t k = 0; k < pushes && q.size() < 5'000; ++k) {
      const uint64_t at = f.at.ps() + rng() % 4;  // many ties with pending events
      q.schedule(Time::from_ps(at), t, id);
      ref.emplace(at, id++);
    }
    if (q.empty()) {
      q.schedule(f.at, t, id);
      ref.emplace(f.at.ps(), id++);
    }
  }
  EXPECT_EQ(q.size(), ref.size());
}

// The lanes (FIFOs in front of the heap): six streams, each rescheduling itself at now + its own delay
// (monotone within a stream, interleaved across them: more streams than lanes, so some go to the heap),
// lanes wrapping around and growing, and a renumbering with lanes full: the order stays the multimap's.
TEST(EventQueue, LanesKeepTheOrderOfOneHeap) {
  EventQueue q;
  NullTarget t;
  std::multimap<uint64_t, uint64_t> ref;
  static constexpr uint64_t kDelays[] = {10, 500, 510, 3, 0, 77};
  uint64_t id = 0;
  for (int burst = 0; burst < 40; ++burst) {  // a stream's events come in bursts: lanes grow
    for (uint64_t s = 0; s < 6; ++s) {
      q.schedule(Time::from_ps(kDelays[s] + static_cast<uint64_t>(burst)), t, id * 8 + s);
      ref.emplace(kDelays[s] + static_cast<uint64_t>(burst), id++ * 8 + s);
    }
  }
  for (int step = 0; step < 100'000; ++step) {
    if (step == 50'000) EventQueueTestAccess::set_next_sequence(q, EventQueueTestAccess::kSequenceLimit);
    ASSERT_FALSE(q.empty());
    const auto f = q.pop();
    const auto it = ref.begin();
    ASSERT_EQ(Record(f.at.ps(), f.arg), Record(it->first, it->second)) << "step " << step;
    ref.erase(it);
    const uint64_t s = f.arg % 8;
    const uint64_t at = f.at.ps() + kDelays[s];
    q.schedule(Time::from_ps(at), t, id * 8 + s);
    ref.emplace(at, id++ * 8 + s);
  }
  EXPECT_EQ(q.size(), ref.size());
}

// A branching process run by the Engine: each event spawns 0-2 children at now + {0, 0, 1, 7, 50} ps,
// drawn from a hash of its id so the process does not depend on the order it is run in.
struct Spawner final : EventTarget {
  explicit Spawner(Engine& e, Time origin) : engine(e), start(origin) {}
  void on_event(uint64_t id) override {
    fired.emplace_back((engine.now() - start).ps(), id);
    const uint64_t h = splitmix64(id);
    static constexpr uint64_t kDelays[] = {0, 0, 1, 7, 50};
    for (uint64_t k = 0; k < h % 3 && next_id < kBudget; ++k) {
      engine.after(Duration::from_ps(kDelays[(h >> (8 + 4 * k)) % 5]), *this, next_id++);
    }
  }
  static constexpr uint64_t kRoots = 1'000;
  static constexpr uint64_t kBudget = 300'000;
  Engine& engine;
  Time start;
  uint64_t next_id = kRoots;
  std::vector<Record> fired;
};

std::vector<Record> run_spawner(Engine& engine) {
  Spawner s(engine, engine.now());
  for (uint64_t id = 0; id < Spawner::kRoots; ++id) {
    engine.at(s.start + Duration::from_ps(splitmix64(id) % 64), s, id);
  }
  engine.run();
  EXPECT_EQ(engine.pending(), 0u);
  return s.fired;
}

// The same process with a (time, sequence)-keyed std::map as the queue.
std::vector<Record> reference_spawner() {
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> q;  // (time, sequence) -> id
  uint64_t seq = 0;
  for (uint64_t id = 0; id < Spawner::kRoots; ++id) q.emplace(std::pair(splitmix64(id) % 64, seq++), id);
  std::vector<Record> fired;
  uint64_t next_id = Spawner::kRoots;
  while (!q.empty()) {
    const auto [key, id] = *q.begin();
    q.erase(q.begin());
    fired.emplace_back(key.first, id);
    const uint64_t h = splitmix64(id);
    static constexpr uint64_t kDelays[] = {0, 0, 1, 7, 50};
    for (uint64_t k = 0; k < h % 3 && next_id < Spawner::kBudget; ++k) {
      q.emplace(std::pair(key.first + kDelays[(h >> (8 + 4 * k)) % 5], seq++), next_id++);
    }
  }
  return fired;
}

TEST(Engine, ScheduleDuringRunMatchesReference) {
  Engine engine;
  const std::vector<Record> got = run_spawner(engine);
  const std::vector<Record> want = reference_spawner();
  ASSERT_GT(want.size(), 100'000u);  // the process is large enough to mean something
  EXPECT_EQ(got, want);
  EXPECT_EQ(engine.events_run(), want.size());
  EXPECT_EQ(engine.now(), Time::from_ps(want.back().first));
}

// Two runs give the same sequence, including on an engine whose slot arena and sequence counter were
// left in a different state by an earlier, unrelated run.
TEST(Engine, Deterministic) {
  Engine first;
  Engine second;
  const std::vector<Record> a = run_spawner(first);
  const std::vector<Record> b = run_spawner(second);
  EXPECT_EQ(a, b);

  Engine used;
  NullTarget t;
  std::mt19937_64 rng(99);
  for (int i = 0; i < 10'000; ++i) used.at(Time::from_ps(rng() % 1'000'000), t, 0);
  used.run();
  const std::vector<Record> c = run_spawner(used);
  EXPECT_EQ(a, c);
}

struct Counter final : EventTarget {
  explicit Counter(Engine& e) : engine(e) {}
  void on_event(uint64_t arg) override {
    seen.push_back(arg);
    if (arg == stop_at) engine.stop();
  }
  Engine& engine;
  uint64_t stop_at = ~uint64_t{0};
  std::vector<uint64_t> seen;
};

TEST(Engine, RunStopAndRunUntil) {
  Engine engine;
  EXPECT_EQ(engine.run(), Time::zero());
  Counter c(engine);
  for (uint64_t i = 1; i <= 5; ++i) engine.at(Time::from_ns(10 * i), c, i);
  engine.stop();  // outside a run: no effect

  c.stop_at = 2;
  EXPECT_EQ(engine.run(), Time::from_ns(20));
  EXPECT_EQ(engine.pending(), 3u);
  EXPECT_EQ(engine.run_until(Time::from_ns(40)), Time::from_ns(40));
  EXPECT_EQ(engine.pending(), 1u);
  EXPECT_EQ(engine.run_until(Time::from_ns(45)), Time::from_ns(40));  // nothing due: clock stays
  engine.after(Duration::from_ns(1), c, 6);                             // relative to 40 ns
  EXPECT_EQ(engine.run(), Time::from_ns(50));
  EXPECT_EQ(c.seen, (std::vector<uint64_t>{1, 2, 3, 4, 6, 5}));
  EXPECT_EQ(engine.events_run(), 6u);
  EXPECT_EQ(engine.pending(), 0u);
}

#ifndef NDEBUG
TEST(EventQueueDeathTest, SchedulingIntoThePastAsserts) {
  EventQueue q;
  NullTarget t;
  q.schedule(Time::from_ns(10), t);
  (void)q.pop();
  EXPECT_DEATH(q.schedule(Time::from_ns(9), t), "in the past");
}
#endif

// When the 40-bit sequence runs out, pending events are renumbered in order: FIFO holds across it.
TEST(EventQueue, SequenceRenumberingKeepsOrder) {
  EventQueue q;
  NullTarget t;
  EventQueueTestAccess::set_next_sequence(q, EventQueueTestAccess::kSequenceLimit - 5);
  std::vector<Record> want;
  for (uint64_t i = 0; i < 20; ++i) {
    const uint64_t at = i % 2 == 0 ? 100 : 50;
    q.schedule(Time::from_ps(at), t, i);
    want.emplace_back(at, i);
  }
  EXPECT_EQ(EventQueueTestAccess::next_sequence(q), 20u);  // renumbered at the 6th, then 14 more
  std::stable_sort(want.begin(), want.end(), [](const Record& a, const Record& b) { return a.first < b.first; });
  EXPECT_EQ(drain(q, &t), want);
}

// Hold model on the Engine: every event reschedules its target at now + a pseudo-random delay (zero
// one time in eight, to exercise ties), so the number of pending events stays constant.
struct Holder final : EventTarget {
  explicit Holder(Engine& e) : engine(e) {}
  void on_event(uint64_t arg) override {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const uint64_t delay = (state & 7) == 0 ? 0 : state % 10'000;
    engine.after(Duration::from_ps(delay), *this, arg);
    if (--remaining == 0) engine.stop();
  }
  Engine& engine;
  uint64_t state = 88172645463325252ULL;
  uint64_t remaining = 0;
};

TEST(Engine, NoAllocationPerEventInSteadyState) {
  if (!test::counting_allocations()) {
    GTEST_SKIP() << "built with AddressSanitizer, which owns operator new: allocations are not counted";
  }
  constexpr uint64_t kPending = 4'096;
  constexpr uint64_t kEvents = 1'000'000;
  Engine engine;  // default reservation (1024), smaller than kPending: it grows during warm-up
  Holder h(engine);
  for (uint64_t i = 0; i < kPending; ++i) engine.at(Time::from_ps(i % 97), h, i);
  h.remaining = 100'000;  // warm-up
  engine.run();

  h.remaining = kEvents;
  const uint64_t before = test::allocations();
  const uint64_t run_before = engine.events_run();
  engine.run();
  const uint64_t allocations = test::allocations() - before;
  EXPECT_EQ(engine.events_run() - run_before, kEvents);
  EXPECT_EQ(engine.pending(), kPending);
  EXPECT_EQ(allocations, 0u) << "allocations during " << kEvents << " steady-state events";

  // The counter itself works (so a zero above means something).
  const uint64_t probe = test::allocations();
  void* p = ::operator new(64);  // a direct call, which the compiler may not elide
  ::operator delete(p);
  EXPECT_EQ(test::allocations() - probe, 1u);
}

}  // namespace
}  // namespace fabemu::emu
