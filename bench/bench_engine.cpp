// Events per second of the event engine (emulator/event_queue.h), the cost every fabric model pays
// per packet or message. Target from the issue: >= 20 million events/s on one core.
//   cmake --build build --target fabemu_bench_engine && build/bench/fabemu_bench_engine
// BM_Hold/N: the classic hold model. N events pending; each event schedules one more at now + an
//   exponentially distributed delay (mean 1 us), so the queue stays at N (1k, 64k, 1M = 2^20).
// BM_EqualTimeChain/W: W chains of events that all reschedule at the current time (delay 0), the
//   tie-breaking path: every event is equal in time to all pending ones and runs in FIFO order.
// items_per_second is events per CPU second, handler dispatch (one virtual call) included.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "emulator/event_queue.h"

namespace fabemu::bench {
namespace {

using emu::Duration;
using emu::Engine;
using emu::EventTarget;
using emu::Time;

constexpr uint64_t kBatch = uint64_t{1} << 16;  // events per benchmark iteration
constexpr uint64_t kDelayTableSize = uint64_t{1} << 16;

// Drawn once, so the benchmark measures the engine and not the random number generator.
const std::vector<uint64_t>& exponential_delays_ps() {
  static const std::vector<uint64_t> table = [] {
    std::mt19937_64 rng(12345);
    std::exponential_distribution<double> exp(1.0 / 1e6);  // mean 1 us in ps
    std::vector<uint64_t> t(kDelayTableSize);
    for (auto& d : t) d = static_cast<uint64_t>(std::llround(exp(rng)));
    return t;
  }();
  return table;
}

class Rescheduler final : public EventTarget {
 public:
  Rescheduler(Engine& engine, const std::vector<uint64_t>* delays) : engine_(engine), delays_(delays) {}
  void run_events(uint64_t n) {
    remaining_ = n;
    engine_.run();
  }
  void on_event(uint64_t arg) override {
    const uint64_t delay = delays_ == nullptr ? 0 : (*delays_)[next_++ & (kDelayTableSize - 1)];
    engine_.after(Duration::from_ps(delay), *this, arg);
    if (--remaining_ == 0) engine_.stop();
  }

 private:
  Engine& engine_;
  const std::vector<uint64_t>* delays_;
  uint64_t next_ = 0;
  uint64_t remaining_ = 0;
};

void BM_Hold(benchmark::State& state) {
  const auto pending = static_cast<uint64_t>(state.range(0));
  const auto& delays = exponential_delays_ps();
  Engine engine(pending);
  Rescheduler target(engine, &delays);
  for (uint64_t i = 0; i < pending; ++i) {
    engine.at(Time::zero() + Duration::from_ps(delays[(i * 7919) & (kDelayTableSize - 1)]), target, i);
  }
  target.run_events(2 * pending + kBatch);  // reach the steady-state time distribution first
  for (auto _ : state) target.run_events(kBatch);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
  state.counters["pending"] = static_cast<double>(engine.pending());
}
BENCHMARK(BM_Hold)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

void BM_EqualTimeChain(benchmark::State& state) {
  const auto chains = static_cast<uint64_t>(state.range(0));
  Engine engine(chains);
  Rescheduler target(engine, nullptr);
  for (uint64_t i = 0; i < chains; ++i) engine.at(Time::from_ns(1), target, i);
  target.run_events(kBatch);
  for (auto _ : state) target.run_events(kBatch);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
}
BENCHMARK(BM_EqualTimeChain)->Arg(1)->Arg(1 << 10);

}  // namespace
}  // namespace fabemu::bench

BENCHMARK_MAIN();
