// The pacing of a run of first transmissions on its first link, frame by frame, and the accounting of
// their departures: what DpdkFabric runs (pace_run as the Sender's RunGate, record_departures after
// tx_burst), and what the transmit benchmark (bench/bench_dpdk_tx.cpp) runs alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "emulator/histogram.h"
#include "emulator/time.h"
#include "host/dpdk/realtime.h"
#include "host/wire/reassembly.h"

namespace fabemu::host::dpdk {

// A link's pacer state, wall ps: the earliest departure of its next frame at the link's rate (a token
// bucket one burst deep). 0: no frame paced yet.
struct LinkSlot {
  uint64_t next_ps = 0;
};

// A frame the pacer let go, until it has left (LinkBusy::depart): one frame of a PacedRun
// (PacedRun::frame), the pacer's frame-by-frame view.
struct PacedFrame {
  uint64_t scheduled_ps;  // its modelled departure (wall)
  uint64_t paced_ps;      // when the pacer let it go (wall): its due time, or later when it was late
  uint32_t bytes;         // its payload bytes
  uint32_t link;          // the caller's (pace_frames sets it from its argument)
  bool extends;           // due no later than the end of the link's frame before it (+ 1 ns): back to back
                          // (a link's first frame starts a period whatever it says: LinkBusy::open)
};

// PacedRun::link of frames that were not paced (a retransmission): record_departures skips them.
inline constexpr uint32_t kUnpacedLink = ~0u;

// A paced frame due within this much of the end of the frame before it on its link continues that
// frame's busy period (the ceiling of ser() may put a frame's due time a picosecond or so after it).
inline constexpr uint64_t kBackToBackSlackPs = 1000;

// The modelled departure (wall ps) of a stepped frame: a message departing at `depart_ps` (emulated),
// the frame's ser(offset) numerator `at` (Rate::ser: its upper bits are the ps), at D * 2^16 =
// `dilation_q16` (TscClock::dilation_q16). What pace_frames steps and PacedRun gives again.
inline uint64_t stepped_departure_ps(uint64_t depart_ps, emu::detail::u128 at, uint64_t dilation_q16) noexcept {
  return TscClock::to_wall_ps(depart_ps + static_cast<uint64_t>(at >> 32), dilation_q16);
}

// stepped_departure_ps of `at`, at + step, at + 2 step, ...: the numerator's ps part (plus the message's
// departure) and its 32 bits of fraction in a word each, so a step is an addition and an addition with
// carry. `at` and every numerator stepped to must stay below 2^96 (pace_frames' `stepped`).
class SteppedDepartures {
 public:
  SteppedDepartures(uint64_t depart_ps, emu::detail::u128 at, emu::detail::u128 step, uint64_t dilation_q16) noexcept
      : ps_(depart_ps + static_cast<uint64_t>(at >> 32)),
        frac_(static_cast<uint64_t>(at) << 32),
        step_ps_(static_cast<uint64_t>(step >> 32)),
        step_frac_(static_cast<uint64_t>(step) << 32),
        q16_(dilation_q16) {}
  // The next frame's modelled departure (wall ps). kUnit: at dilation 1 (q16 = 2^16), where the wall
  // time is the emulated one (to_wall_ps(ps, 2^16) == ps) and the product is left out.
  template <bool kUnit = false>
  uint64_t next() noexcept {
    const uint64_t s = kUnit ? ps_ : TscClock::to_wall_ps(ps_, q16_);
    frac_ += step_frac_;
    ps_ += step_ps_ + (frac_ < step_frac_ ? 1 : 0);
    return s;
  }

 private:
  uint64_t ps_, frac_, step_ps_, step_frac_, q16_;
};

// Consecutive frames of one run that the pacer let go on one link, each after the first due exactly at
// the end of the one before (the link's slot): frame i (i < n) is paced at paced_ps + i * frame_ps, is
// `bytes` long but for the last (`last_bytes`), and is modelled to depart at scheduled(i). Frames 1.. are
// back to back; frame 0 as `extends` says. A run the pacer did not step (serialization beyond 2^64 ps)
// gives a PacedRun per frame.
struct PacedRun {
  emu::detail::u128 num = 0, step = 0;  // frame i's modelled departure, i >= 1: to_wall(depart_ps + (num + i * step) >> 32)
  uint64_t depart_ps = 0;               // the message's departure (emulated ps)
  uint64_t scheduled_ps = 0;            // frame 0's modelled departure (wall)
  uint64_t paced_ps = 0;                // frame 0's
  uint64_t frame_ps = 0;                // a full frame's wall time at the link's rate
  uint32_t n = 0, bytes = 0, last_bytes = 0;
  uint32_t link = kUnpacedLink;
  bool extends = false;

  bool operator==(const PacedRun&) const = default;

  // Frame i's modelled departure (wall ps).
  uint64_t scheduled(const TscClock& clock, uint32_t i) const noexcept {
    if (i == 0) return scheduled_ps;
    return wall_of(clock, num + step * i);
  }
  PacedFrame frame(const TscClock& clock, uint32_t i) const noexcept {
    return PacedFrame{scheduled(clock, i), paced_ps + uint64_t{i} * frame_ps, i + 1 == n ? last_bytes : bytes, link,
                      i == 0 ? extends : true};
  }
  // Removes the first k (0 < k < n) frames from this run and returns them as a run of their own.
  PacedRun take_front(const TscClock& clock, uint32_t k) noexcept {
    PacedRun head = *this;
    head.n = k;
    head.last_bytes = bytes;
    num += step * k;
    scheduled_ps = wall_of(clock, num);
    paced_ps += uint64_t{k} * frame_ps;
    n -= k;
    extends = true;
    return head;
  }
  // The modelled departure (wall) of the frame whose stepped numerator is `at`.
  uint64_t wall_of(const TscClock& clock, emu::detail::u128 at) const noexcept {
    return stepped_departure_ps(depart_ps, at, clock.dilation_q16());
  }
};

// What pace_frames let go of a run: its first `frames` frames, as `runs` PacedRuns.
struct Paced {
  uint32_t frames = 0, runs = 0;
};

namespace detail {
// pace_frames for one reading policy (the clock read before every frame, or only when a frame is not due
// by the last reading): its own loop each, with no per-frame test of the policy. kWhole (with the lazy
// policy): a run whose frames all follow its first back to back and are due by the reading is let go
// whole, without the loop (the loop gives the same: LinkPacer.WholeRunsEqualFrameByFrame).
template <bool kReadEach, bool kWhole = !kReadEach>
inline Paced pace_frames(const TscClock& clock, uint32_t link, emu::Time depart, emu::Rate rate, const TxRun& r,
                         uint64_t burst_ps, LinkSlot& slot, uint64_t& now_ps, PacedRun* out, uint64_t ahead_ps) {
  using u128 = emu::detail::u128;
  Paced got;
  if (r.n == 0) return got;
  // A frame's wall time on the link: the same for all but a shorter last frame.
  const uint64_t last_ps = clock.to_wall(rate.ser(r.last_bytes)).ps();
  const uint64_t frame_ps = r.n > 1 ? clock.to_wall(rate.ser(r.bytes)).ps() : last_ps;
  // ser(offset) = ceil(offset * raw / 2^32) (Rate::ser), its numerator stepped by a frame's bytes: one
  // addition a frame instead of a product, the same values. A run whose last numerator would not fit
  // (serialization times of 2^64 ps and more) takes Rate::ser and its saturation frame by frame.
  const uint64_t raw = rate.ps_per_byte_q32();
  const u128 step = u128{r.bytes} * raw;
  u128 num = u128{r.offset} * raw + 0xFFFFFFFFu;
  const bool stepped = ((num + step * (r.n - 1)) >> 96) == 0;
  // A frame due by now_ps leaves at its due time, or at now_ps - burst_ps when that is later.
  const auto floor_of = [burst_ps](uint64_t now) { return now > burst_ps ? now - burst_ps : 0; };
  uint64_t now = now_ps;
  uint64_t floor_ps = floor_of(now);
  uint64_t next_ps = slot.next_ps;
  uint32_t& due = got.frames;
  PacedRun* cur = nullptr;
  // Frame `due` of `bytes` and wall time `wall_ps` on the link, modelled to depart at `scheduled_ps` (its
  // stepped numerator `at`): false when it is not due yet. A stepped frame at the end of the frame before
  // joins that one's PacedRun.
  const auto pace = [&](uint64_t scheduled_ps, u128 at, uint32_t bytes, uint64_t wall_ps) {
    const uint64_t target_ps = std::max(scheduled_ps, next_ps);
    if constexpr (kReadEach) floor_ps = floor_of(now = clock.wall().ps());
    if (target_ps > now + ahead_ps) [[unlikely]] {
      if (target_ps > (now = clock.wall().ps()) + ahead_ps) return false;
      floor_ps = floor_of(now);
    }
    const uint64_t anchor = std::max(target_ps, floor_ps);
    if (cur != nullptr && anchor == next_ps) [[likely]] {
      ++cur->n;
      cur->last_bytes = bytes;
    } else {
      cur = out + got.runs++;
      *cur = PacedRun{at, step, depart.ps(), scheduled_ps, anchor, frame_ps, 1, r.bytes, bytes, link,
                      anchor <= next_ps + kBackToBackSlackPs};
      if (!stepped) cur = nullptr;  // frame by frame (PacedRun::scheduled cannot step)
    }
    next_ps = anchor + wall_ps;
    return true;
  };
  const auto scheduled_at = [&](u128 at) { return stepped_departure_ps(depart.ps(), at, clock.dilation_q16()); };
  if (stepped) [[likely]] {
    const uint32_t bytes = r.bytes;
    bool more = true;  // false: frame 0 is not due
    if constexpr (kWhole) {
      // Frame 0, then the rest at once when frame 0 left at least n - 1 ps after its modelled departure
      // and the run's last frame is due by now at the end of the one before. Frame i's modelled departure
      // is at most frame 0's + i * (frame_ps + 1) (ser() rounds up: the steps add at most i ser(bytes);
      // to_wall rounds down), so none is later than the end of the frame before: every frame is due at
      // that end (the floor is at most frame 0's time; the clock is not read again).
      if (r.n > 1) {
        more = pace(scheduled_at(num), num, bytes, frame_ps);
        if (more) {
          due = 1;
          const uint64_t first_ps = cur->paced_ps;
          const u128 last_at = u128{first_ps} + u128{frame_ps} * (r.n - 1);
          if (first_ps - cur->scheduled_ps >= r.n - 1 && last_at <= now + ahead_ps) {
            cur->n = r.n;
            cur->last_bytes = r.last_bytes;
            due = r.n;
            slot.next_ps = static_cast<uint64_t>(last_at) + last_ps;
            now_ps = now;
            return got;
          }
          num += step;
        }
      }
    }
    // All but the last frame, then the last: frame_ps and the bytes fixed in the loop.
    for (; more && due + 1 < r.n; ++due, num += step) {
      if (!pace(scheduled_at(num), num, bytes, frame_ps)) {
        more = false;
        break;
      }
    }
    if (more && due + 1 == r.n && pace(scheduled_at(num), num, r.last_bytes, last_ps)) ++due;
  } else {
    for (; due < r.n; ++due) {
      const emu::Time at = depart + rate.ser(r.offset + uint64_t{due} * r.bytes);
      const bool last = due + 1 == r.n;
      if (!pace(clock.to_wall(at.since_start()).ps(), 0, last ? r.last_bytes : r.bytes, last ? last_ps : frame_ps)) break;
    }
  }
  slot.next_ps = next_ps;
  now_ps = now;
  return got;
}
}  // namespace detail

// How many of run r's frames are due now, on link `link` of `rate` whose messages depart at `depart`
// (emulated): frame i is due at max(its modelled departure, depart + ser(its offset) on the wall clock,
// the link's next slot). Once due it leaves; the link's next slot is then its due time plus its
// serialization (wall), or, when it leaves later than its due time by more than `burst_ps`, now less
// `burst_ps` plus that: a late frame never makes the link burst above its rate for longer than that.
// `now_ps` is the last reading of the clock, read again only when a frame is not due by it (or before
// every frame with `read_each`). The due frames as PacedRuns into out[0..runs) (room for r.n).
// With `ahead_ps`, frames due within that much of now are let go too, at their due time (PacedRun::paced_ps
// in the future: the caller holds them until then, DpdkFabric's build-ahead); the burst allowance still
// counts from now.
inline Paced pace_frames(const TscClock& clock, uint32_t link, emu::Time depart, emu::Rate rate, const TxRun& r,
                         uint64_t burst_ps, LinkSlot& slot, uint64_t& now_ps, bool read_each, PacedRun* out,
                         uint64_t ahead_ps = 0) {
  return read_each ? detail::pace_frames<true>(clock, link, depart, rate, r, burst_ps, slot, now_ps, out, ahead_ps)
                   : detail::pace_frames<false>(clock, link, depart, rate, r, burst_ps, slot, now_ps, out, ahead_ps);
}

// A link's paced frames as they leave (depart, in the order the pacer let them go): its frames and bytes,
// and its busy periods, each a run of frames back to back in the pacer's schedule (PacedFrame::extends).
// A closed period of two frames or more has spans: scheduled, from its first frame's due time to its
// last one's (the time the link at its target rate takes for all but the last frame's bytes), and
// actual, from that same start to the last frame's actual departure. scheduled / actual is the rate the
// link achieved against its target (at most 1: a frame never leaves before it is due).
struct LinkBusy {
  uint64_t bytes = 0, frames = 0;
  bool open = false;
  uint64_t start_ps = 0, last_paced_ps = 0, last_actual_ps = 0, period_bytes = 0;
  uint32_t last_bytes = 0, period_frames = 0;
  uint64_t busy_periods = 0, spanned_bytes = 0;
  double scheduled_ns = 0, actual_ns = 0;

  // Frame f left at actual_ps. `close(*this)` when it starts a new period and one is open: the caller
  // closes that one (close(), and whatever it keeps of the period) before f is counted.
  template <class Close>
  void depart(const PacedFrame& f, uint64_t actual_ps, Close&& close) {
    depart_one(f.paced_ps, f.bytes, f.extends, actual_ps, close);
  }
  // depart() of one frame given by its fields (a PacedRun of one: its pacing time, last_bytes, extends).
  template <class Close>
  void depart_one(uint64_t paced_ps, uint32_t frame_bytes, bool extends, uint64_t actual_ps, Close&& close) {
    if (open && extends) {
      period_bytes += last_bytes;
      ++period_frames;
    } else {
      if (open) close(*this);
      open = true;
      start_ps = paced_ps;
      period_bytes = 0;
      period_frames = 1;
    }
    ++frames;
    bytes += frame_bytes;
    last_paced_ps = std::max(last_paced_ps, paced_ps);
    last_bytes = frame_bytes;
    last_actual_ps = actual_ps;
  }
  // depart(r.frame(i), actual_ps, close) for every frame of r, at once: frames 1.. continue the period
  // (all but r's last frame are r.bytes long).
  template <class Close>
  void depart(const PacedRun& r, uint64_t actual_ps, Close&& close) {
    if (r.n == 0) return;
    if (r.n == 1) return depart_one(r.paced_ps, r.last_bytes, r.extends, actual_ps, close);
    depart_one(r.paced_ps, r.bytes, r.extends, actual_ps, close);  // frame 0 (full: the run goes on)
    // Frames 1..n-1: each continues the period with the bytes of the frame before.
    const uint64_t more = r.n - 1;
    period_bytes += more * r.bytes;
    period_frames += static_cast<uint32_t>(more);
    frames += more;
    bytes += (more - 1) * r.bytes + r.last_bytes;
    last_paced_ps = std::max(last_paced_ps, r.paced_ps + more * r.frame_ps);
    last_bytes = r.last_bytes;
  }
  // Closes the open period; its spans (ns) are added to the link's. False for a period of one frame,
  // which has no span, and for one whose spanned frames carry no bytes (zero-byte messages: ser(0) = 0,
  // so no rate to compare; counted, such a period said the link carried 0 of its rate): nothing added.
  bool close(double& scheduled, double& actual) {
    open = false;
    if (period_frames < 2 || period_bytes == 0) return false;
    ++busy_periods;
    spanned_bytes += period_bytes;
    scheduled = static_cast<double>(last_paced_ps - start_ps) / 1000.0;
    actual = (static_cast<double>(last_actual_ps) - static_cast<double>(start_ps)) / 1000.0;
    scheduled_ns += scheduled;
    actual_ns += actual;
    return true;
  }
};

// The frames of runs r[0..n) left at actual_ps (one tx_burst): each frame's departure jitter,
// |actual - scheduled| in ns, into `jitter_ns`, and each run into its link's account (link_of(link): a
// LinkBusy or a type derived from it; close(that) closes its open period, as LinkBusy::depart's callback).
// Runs of kUnpacedLink are skipped.
template <class LinkOf, class Close>
inline void record_departures(const TscClock& clock, const PacedRun* r, size_t n, uint64_t actual_ps,
                              emu::LogHistogram& jitter_ns, LinkOf&& link_of, Close&& close) {
  const auto jitter = [actual_ps](uint64_t s) { return (actual_ps > s ? actual_ps - s : s - actual_ps) / 1000; };
  for (size_t i = 0; i < n; ++i) {
    const PacedRun& g = r[i];
    if (g.link == kUnpacedLink) continue;
    if (g.n == 1) {
      // Runs of one frame in a row on this link (one-packet messages): their jitter at once, and each
      // into the account as a frame.
      size_t j = i + 1;
      while (j < n && r[j].n == 1 && r[j].link == g.link) ++j;
      jitter_ns.record_each(j - i, [&](size_t k) { return jitter(r[i + k].scheduled_ps); });
      auto& account = link_of(g.link);
      for (size_t k = i; k < j; ++k) {
        account.depart_one(r[k].paced_ps, r[k].last_bytes, r[k].extends, actual_ps,
                           [&](LinkBusy&) { close(account); });
      }
      i = j - 1;
      continue;
    }
    // A run of two or more is stepped: frame k's modelled departure from num + k * step, k in order
    // (record_each asks for each once, in order). The usual case: all of them by actual_ps (it is after
    // the pacing), so the jitter only falls along the run.
    SteppedDepartures at(g.depart_ps, g.num, g.step, clock.dilation_q16());
    if (actual_ps >= g.scheduled(clock, g.n - 1)) {
      if (clock.dilation_q16() == TscClock::kUnitQ16) {
        jitter_ns.record_falling(g.n, [&at, actual_ps](size_t) { return (actual_ps - at.next<true>()) / 1000; });
      } else {
        jitter_ns.record_falling(g.n, [&at, actual_ps](size_t) { return (actual_ps - at.next()) / 1000; });
      }
    } else {
      jitter_ns.record_each(g.n, [&at, &jitter](size_t) { return jitter(at.next()); });
    }
    auto& account = link_of(g.link);
    account.depart(g, actual_ps, [&](LinkBusy&) { close(account); });
  }
}

// The PacedRuns of a transmit queue's frames, in the queue's order: what record_departures needs once
// the device has taken some of them. A run partly taken stays at the front with the frames left.
class PacedQueue {
 public:
  void push(const PacedRun& r) { runs_.push_back(r); }
  // Frames not paced (retransmissions): n of them.
  void push_unpaced(uint32_t n) {
    PacedRun r;
    r.n = n;
    runs_.push_back(r);
  }
  // The first `took` frames of the queue left at actual_ps: record_departures of them, off the queue.
  template <class LinkOf, class Close>
  void departed(const TscClock& clock, size_t took, uint64_t actual_ps, emu::LogHistogram& jitter_ns,
                LinkOf&& link_of, Close&& close) {
    size_t end = head_;
    while (end < runs_.size() && took >= runs_[end].n) took -= runs_[end++].n;
    record_departures(clock, runs_.data() + head_, end - head_, actual_ps, jitter_ns, link_of, close);
    head_ = end;
    if (took > 0) {  // took < runs_[end].n: that run's first frames
      const PacedRun part = runs_[end].take_front(clock, static_cast<uint32_t>(took));
      record_departures(clock, &part, 1, actual_ps, jitter_ns, link_of, close);
    }
    if (head_ == runs_.size()) clear();
  }
  // Forgets every run (the frames were dropped).
  void clear() noexcept {
    runs_.clear();
    head_ = 0;
  }
  // Drops the runs already recorded from the vector (their room is reused).
  void compact() {
    runs_.erase(runs_.begin(), runs_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  size_t frames() const noexcept {
    size_t f = 0;
    for (size_t i = head_; i < runs_.size(); ++i) f += runs_[i].n;
    return f;
  }

 private:
  std::vector<PacedRun> runs_;
  size_t head_ = 0;
};

}  // namespace fabemu::host::dpdk
