#include "emulator/closed_form.h"

#include <algorithm>

namespace fabemu::emu {

ClosedForm::Totals ClosedForm::run(const PhaseSchedule& S, const Phase& P, uint64_t flow, uint64_t coll,
                                   MessageLog& log) {
  if (P.algo == CollectiveAlgo::kRing && !log.wanted(static_cast<uint64_t>(P.n) * S.steps())) {
    const Totals totals = ring(S, P, flow);
    log.delivered_ring(rank_of_, P.steps, S.send(0, 0, 0).bytes);
    return totals;
  }
  return general(S, P, flow, coll, log);
}

// The ring (every step: position x sends the same size to x+1 and receives from x-1) in a tight
// loop: the message delays of the n ring edges are computed once, not once per step.
ClosedForm::Totals ClosedForm::ring(const PhaseSchedule& S, const Phase& P, uint64_t flow) {
  const size_t n = static_cast<size_t>(P.n);
  const uint64_t msg = S.send(0, 0, 0).bytes;
  edge_ps_.resize(n);
  for (size_t x = 0; x < n; ++x) {
    edge_ps_[x] = fabric_.delay(Message{0, rank_of_[x], rank_of_[(x + 1) % n], msg, flow}).ps();
  }
  begin_ps_.resize(n);
  for (size_t x = 0; x < n; ++x) begin_ps_[x] = begin_[x].ps();
  uint64_t* b = begin_ps_.data();
  const uint64_t* d = edge_ps_.data();
  Totals totals;
  totals.messages = static_cast<uint64_t>(P.steps) * n;
  totals.bytes = totals.messages * msg;
  if (std::all_of(edge_ps_.begin(), edge_ps_.end(), [&](uint64_t v) { return v == edge_ps_[0]; })) {
    ring_uniform(S, P.steps);
    return totals;
  }
  for (uint32_t s = 0; s < P.steps; ++s) {
    const uint64_t after = costs_.after_step(S.reduce_bytes(0, s)).ps();
    // new b[x] = max(b[x], b[x-1] + d[x-1]) + after, from the old b[x-1]: walk downwards.
    const uint64_t last_arrival = b[n - 1] + d[n - 1];
    for (size_t x = n - 1; x > 0; --x) b[x] = std::max(b[x], b[x - 1] + d[x - 1]) + after;
    b[0] = std::max(b[0], last_arrival) + after;
  }
  for (size_t x = 0; x < n; ++x) begin_[x] = Time::from_ps(b[x]);
  return totals;
}

// The same recurrence when every ring edge has the same delay d, in O(n) instead of O(n x steps).
// Unrolling b_x(s+1) = max(b_x(s), b_{x-1}(s) + d) + a_s (a_s added to every position alike) gives
//   b_x(S) = sum_{s<S} a_s + max_{0 <= j <= S} (b_{x-j}(0) + j d)    (positions mod n);
// j and j + n name the same start, the larger j adding a whole lap (n d >= 0), so only the last n
// values of j count: j in [max(0, S-n+1), S]. With y = x - j (not reduced mod n) the term is
// x d + f(y), f(y) = b_{y mod n}(0) - y d, and as x goes 0..n-1 the window of y slides by one: a
// sliding-window maximum (monotonic deque). Exact integer arithmetic, so the result equals the
// step-by-step loop to the picosecond.
void ClosedForm::ring_uniform(const PhaseSchedule& S, uint32_t steps) {
  const auto n = static_cast<int64_t>(begin_ps_.size());
  const auto d = static_cast<i128>(edge_ps_[0]);
  uint64_t total_after = 0;
  for (uint32_t s = 0; s < steps; ++s) total_after += costs_.after_step(S.reduce_bytes(0, s)).ps();
  const auto st = static_cast<int64_t>(steps);
  const int64_t lo = std::max<int64_t>(0, st - n + 1);
  auto f = [&](int64_t y) {
    const int64_t k = ((y % n) + n) % n;
    return static_cast<i128>(begin_ps_[static_cast<size_t>(k)]) - static_cast<i128>(y) * d;
  };
  // window for x: y in [x - st, x - lo]
  window_.clear();
  window_head_ = 0;
  auto push = [&](int64_t y) {
    const i128 v = f(y);
    while (window_.size() > window_head_ && window_.back().second <= v) window_.pop_back();
    window_.emplace_back(y, v);
  };
  for (int64_t y = -st; y <= -lo; ++y) push(y);
  for (int64_t x = 0; x < n; ++x) {
    if (x > 0) push(x - lo);
    while (window_[window_head_].first < x - st) ++window_head_;
    const i128 best = window_[window_head_].second + static_cast<i128>(x) * d;
    begin_[static_cast<size_t>(x)] = Time::from_ps(static_cast<uint64_t>(best) + total_after);
  }
}

ClosedForm::Totals ClosedForm::general(const PhaseSchedule& S, const Phase& P, uint64_t flow, uint64_t coll,
                                       MessageLog& log) {
  const auto n = static_cast<size_t>(P.n);
  Totals totals;
  for (uint32_t s = 0; s < P.steps; ++s) {
    for (size_t x = 0; x < n; ++x) arrive_[x] = begin_[x];
    for (size_t x = 0; x < n; ++x) {
      const auto xi = static_cast<int32_t>(x);
      const uint32_t ns = S.num_sends(xi, s);
      for (uint32_t k = 0; k < ns; ++k) {
        const ScheduledSend sd = S.send(xi, s, k);
        const auto peer = static_cast<size_t>(sd.peer);
        const Time at = begin_[x] + fabric_.delay(Message{0, rank_of_[x], rank_of_[peer], sd.bytes, flow});
        log.delivered(rank_of_[x], rank_of_[peer], sd.bytes, begin_[x], at, coll);
        arrive_[peer] = std::max(arrive_[peer], at);
        ++totals.messages;
        totals.bytes += sd.bytes;
      }
    }
    for (size_t x = 0; x < n; ++x) {
      const auto xi = static_cast<int32_t>(x);
      if (S.num_recvs(xi, s) > 0) begin_[x] = arrive_[x] + costs_.after_step(S.reduce_bytes(xi, s));
    }
  }
  return totals;
}

}  // namespace fabemu::emu
