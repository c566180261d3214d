// The pacing of a run of first transmissions on its first link, frame by frame: what DpdkFabric::pace_run
// runs as the Sender's RunGate, and what the transmit benchmark (bench/bench_dpdk_tx.cpp) runs alike.
#pragma once

#include <algorithm>
#include <cstdint>

#include "emulator/time.h"
#include "host/dpdk/realtime.h"
#include "host/dpdk/reassembly.h"

namespace fabemu::host::dpdk {

// A link's pacer state, wall ps: the earliest departure of its next frame at the link's rate (a token
// bucket one burst deep).
struct LinkSlot {
  uint64_t next_ps = 0;
};

// How many of run r's frames are due now, on a link of `rate` whose messages depart at `depart`
// (emulated): frame i is due at max(its modelled departure, depart + ser(its offset) on the wall clock,
// the link's next slot). Once due it leaves; the link's next slot is then its due time plus its
// serialization (wall), or, when it leaves later than its due time by more than `burst_ps`, now less
// `burst_ps` plus that: a late frame never makes the link burst above its rate for longer than that.
// `now_ps` is the last reading of the clock, read again only when a frame is not due by it (or before
// every frame with `read_each`). `emit(bytes, scheduled_ps, paced_ps)` for each due frame, in order.
template <class Emit>
inline uint32_t pace_frames(const TscClock& clock, emu::Time depart, emu::Rate rate, const TxRun& r,
                            uint64_t burst_ps, LinkSlot& slot, uint64_t& now_ps, bool read_each, Emit&& emit) {
  // A frame's wall time on the link: the same for all but a shorter last frame.
  const uint64_t last_ps = clock.to_wall(rate.ser(r.last_bytes)).ps();
  const uint64_t frame_ps = r.n > 1 ? clock.to_wall(rate.ser(r.bytes)).ps() : last_ps;
  uint64_t next_ps = slot.next_ps;
  uint32_t due = 0;
  for (; due < r.n; ++due) {
    const uint64_t offset = r.offset + uint64_t{due} * r.bytes;
    const bool last = due + 1 == r.n;
    const uint64_t scheduled_ps = clock.to_wall((depart + rate.ser(offset)).since_start()).ps();
    const uint64_t target_ps = std::max(scheduled_ps, next_ps);
    if (read_each) now_ps = clock.wall().ps();
    if (target_ps > now_ps && target_ps > (now_ps = clock.wall().ps())) break;
    const uint64_t anchor = now_ps > target_ps + burst_ps ? now_ps - burst_ps : target_ps;
    next_ps = anchor + (last ? last_ps : frame_ps);
    emit(last ? r.last_bytes : r.bytes, scheduled_ps, anchor);
  }
  slot.next_ps = next_ps;
  return due;
}

}  // namespace fabemu::host::dpdk
