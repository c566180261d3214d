// The pacing of a run of first transmissions on its first link, frame by frame, and the accounting of
// their departures: what DpdkFabric runs (pace_run as the Sender's RunGate, record_departures after
// tx_burst), and what the transmit benchmark (bench/bench_dpdk_tx.cpp) runs alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "emulator/histogram.h"
#include "emulator/time.h"
#include "host/dpdk/realtime.h"
#include "host/dpdk/reassembly.h"

namespace fabemu::host::dpdk {

// A link's pacer state, wall ps: the earliest departure of its next frame at the link's rate (a token
// bucket one burst deep). 0: no frame paced yet.
struct LinkSlot {
  uint64_t next_ps = 0;
};

// A frame the pacer let go, until it has left (LinkBusy::depart).
struct PacedFrame {
  uint64_t scheduled_ps;  // its modelled departure (wall)
  uint64_t paced_ps;      // when the pacer let it go (wall): its due time, or later when it was late
  uint32_t bytes;         // its payload bytes
  uint32_t link;          // the caller's (pace_frames sets it from its argument)
  bool extends;           // due no later than the end of the link's frame before it (+ 1 ns): back to back
                          // (a link's first frame starts a period whatever it says: LinkBusy::open)
};

// PacedFrame::link of a frame that was not paced (a retransmission): record_departures skips it.
inline constexpr uint32_t kUnpacedLink = ~0u;

// A paced frame due within this much of the end of the frame before it on its link continues that
// frame's busy period (the ceiling of ser() may put a frame's due time a picosecond or so after it).
inline constexpr uint64_t kBackToBackSlackPs = 1000;

namespace detail {
// pace_frames for one reading policy (the clock read before every frame, or only when a frame is not due
// by the last reading): its own loop each, with no per-frame test of the policy.
template <bool kReadEach>
inline uint32_t pace_frames(const TscClock& clock, uint32_t link, emu::Time depart, emu::Rate rate, const TxRun& r,
                            uint64_t burst_ps, LinkSlot& slot, uint64_t& now_ps, PacedFrame* out) {
  using u128 = emu::detail::u128;
  if (r.n == 0) return 0;
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
  uint32_t due = 0;
  // Frame `due` of `bytes` and wall time `wall_ps` on the link, modelled to depart at `scheduled_ps`:
  // false when it is not due yet.
  const auto pace = [&](uint64_t scheduled_ps, uint32_t bytes, uint64_t wall_ps) {
    const uint64_t target_ps = std::max(scheduled_ps, next_ps);
    if constexpr (kReadEach) floor_ps = floor_of(now = clock.wall().ps());
    if (target_ps > now) [[unlikely]] {
      if (target_ps > (now = clock.wall().ps())) return false;
      floor_ps = floor_of(now);
    }
    const uint64_t anchor = std::max(target_ps, floor_ps);
    out[due] = PacedFrame{scheduled_ps, anchor, bytes, link, anchor <= next_ps + kBackToBackSlackPs};
    next_ps = anchor + wall_ps;
    return true;
  };
  if (stepped) [[likely]] {
    // All but the last frame, then the last: frame_ps and the bytes fixed in the loop.
    const uint32_t bytes = r.bytes;
    for (; due + 1 < r.n; ++due, num += step) {
      const emu::Time at = depart + emu::Duration::from_ps(static_cast<uint64_t>(num >> 32));
      if (!pace(clock.to_wall(at.since_start()).ps(), bytes, frame_ps)) break;
    }
    if (due + 1 == r.n) {
      const emu::Time at = depart + emu::Duration::from_ps(static_cast<uint64_t>(num >> 32));
      if (pace(clock.to_wall(at.since_start()).ps(), r.last_bytes, last_ps)) ++due;
    }
  } else {
    for (; due < r.n; ++due) {
      const emu::Time at = depart + rate.ser(r.offset + uint64_t{due} * r.bytes);
      const bool last = due + 1 == r.n;
      if (!pace(clock.to_wall(at.since_start()).ps(), last ? r.last_bytes : r.bytes, last ? last_ps : frame_ps)) break;
    }
  }
  slot.next_ps = next_ps;
  now_ps = now;
  return due;
}
}  // namespace detail

// How many of run r's frames are due now, on link `link` of `rate` whose messages depart at `depart`
// (emulated): frame i is due at max(its modelled departure, depart + ser(its offset) on the wall clock,
// the link's next slot). Once due it leaves; the link's next slot is then its due time plus its
// serialization (wall), or, when it leaves later than its due time by more than `burst_ps`, now less
// `burst_ps` plus that: a late frame never makes the link burst above its rate for longer than that.
// `now_ps` is the last reading of the clock, read again only when a frame is not due by it (or before
// every frame with `read_each`). The due frames' PacedFrames into out[0..due) (room for r.n).
inline uint32_t pace_frames(const TscClock& clock, uint32_t link, emu::Time depart, emu::Rate rate, const TxRun& r,
                            uint64_t burst_ps, LinkSlot& slot, uint64_t& now_ps, bool read_each, PacedFrame* out) {
  return read_each ? detail::pace_frames<true>(clock, link, depart, rate, r, burst_ps, slot, now_ps, out)
                   : detail::pace_frames<false>(clock, link, depart, rate, r, burst_ps, slot, now_ps, out);
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
    depart_all(&f, 1, actual_ps, close);
  }
  // depart(f[i], actual_ps, close) for i in [0, n): consecutive frames of this link that left together,
  // the state in registers until a period closes (the frames' fields could alias it in memory).
  template <class Close>
  void depart_all(const PacedFrame* f, size_t n, uint64_t actual_ps, Close&& close) {
    uint64_t fr = frames, by = bytes, pb = period_bytes, lp = last_paced_ps;
    uint32_t lb = last_bytes, pf = period_frames;
    bool op = open;
    for (size_t i = 0; i < n; ++i) {
      const PacedFrame& g = f[i];
      if (op && g.extends) [[likely]] {
        pb += lb;
        ++pf;
      } else {
        if (op) {
          frames = fr, bytes = by, period_bytes = pb, last_paced_ps = lp, last_bytes = lb, period_frames = pf;
          if (i > 0) last_actual_ps = actual_ps;  // the frame before left with this one
          close(*this);
        }
        op = true;
        start_ps = g.paced_ps;
        pb = 0;
        pf = 1;
      }
      ++fr;
      by += g.bytes;
      lp = std::max(lp, g.paced_ps);
      lb = g.bytes;
    }
    if (n > 0) last_actual_ps = actual_ps;
    frames = fr, bytes = by, period_bytes = pb, last_paced_ps = lp, last_bytes = lb, period_frames = pf;
    open = op;
  }
  // Closes the open period; its spans (ns) are added to the link's. False for a period of one frame,
  // which has no span (nothing added).
  bool close(double& scheduled, double& actual) {
    open = false;
    if (period_frames < 2) return false;
    ++busy_periods;
    spanned_bytes += period_bytes;
    scheduled = static_cast<double>(last_paced_ps - start_ps) / 1000.0;
    actual = (static_cast<double>(last_actual_ps) - static_cast<double>(start_ps)) / 1000.0;
    scheduled_ns += scheduled;
    actual_ns += actual;
    return true;
  }
};

// The frames f[0..n) left at actual_ps (one tx_burst): each one's departure jitter, |actual - scheduled|
// in ns, into `jitter_ns`, and each run of consecutive frames of one link into that link's account
// (link_of(link): a LinkBusy or a type derived from it; close(that) closes its open period, as
// LinkBusy::depart's callback). Frames of kUnpacedLink are skipped.
template <class LinkOf, class Close>
inline void record_departures(const PacedFrame* f, size_t n, uint64_t actual_ps, emu::LogHistogram& jitter_ns,
                              LinkOf&& link_of, Close&& close) {
  for (size_t i = 0; i < n;) {
    const uint32_t link = f[i].link;
    size_t j = i + 1;
    while (j < n && f[j].link == link) ++j;
    if (link != kUnpacedLink) {
      const PacedFrame* g = f + i;
      jitter_ns.record_each(j - i, [g, actual_ps](size_t k) {
        const uint64_t s = g[k].scheduled_ps;
        return (actual_ps > s ? actual_ps - s : s - actual_ps) / 1000;
      });
      auto& account = link_of(link);
      account.depart_all(g, j - i, actual_ps, [&](LinkBusy&) { close(account); });
    }
    i = j;
  }
}

}  // namespace fabemu::host::dpdk
