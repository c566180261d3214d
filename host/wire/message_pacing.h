// The wire's pacing of whole messages, the same in the DPDK and the socket fabric (no DPDK): a message's
// modelled departure on its first link, a FIFO per link (for the pacing only: the model's own queues
// decide the deliveries), and at D > 0 the messages waiting for that departure, a min-heap of (departure,
// sequence), so that a sender's retransmission timers start when a message really goes out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "emulator/time.h"
#include "emulator/topology.h"

namespace fabemu::host::dpdk {

class MessagePacing {
 public:
  struct FirstHop {
    emu::LinkId link;
    emu::Time depart;  // modelled departure of the message's first byte on `link`
    emu::Rate rate;    // of `link`
  };

  // Sizes for `topo` (before the first book()).
  void size_for(const emu::Topology& topo) {
    route_.resize(std::max<size_t>(1, topo.max_hops()));
    link_free_.assign(topo.links().size(), emu::Time());
  }
  // Books a message of `bytes` from `src` to `dst` (`flow`), handed over at `now`, on its first link.
  FirstHop book(const emu::Topology& topo, uint32_t src, uint32_t dst, uint64_t flow, uint64_t bytes, emu::Time now) {
    const auto route = topo.route(static_cast<int32_t>(src), static_cast<int32_t>(dst), flow, route_);
    const emu::Link& link = topo.link(route[0]);
    emu::Time& free = link_free_[route[0]];
    const FirstHop h{route[0], std::max(now, free), link.rate};
    free = h.depart + link.rate.ser(bytes);
    return h;
  }
  // Message `id` waits for its departure `depart` (emulated).
  void wait(emu::Time depart, uint64_t id) {
    waiting_.push_back(Waiting{depart.ps(), seq_++, id});
    std::push_heap(waiting_.begin(), waiting_.end(), std::greater<>());
  }
  bool waiting() const noexcept { return !waiting_.empty(); }
  // The next waiting message whose departure has come at `emulated` (in departure, then wait() order);
  // false when none.
  bool pop_due(emu::Time emulated, uint64_t& id) {
    if (waiting_.empty() || waiting_.front().depart_ps > emulated.ps()) return false;
    id = waiting_.front().id;
    std::pop_heap(waiting_.begin(), waiting_.end(), std::greater<>());
    waiting_.pop_back();
    return true;
  }

 private:
  struct Waiting {
    uint64_t depart_ps, seq, id;
    bool operator>(const Waiting& o) const noexcept {
      return depart_ps != o.depart_ps ? depart_ps > o.depart_ps : seq > o.seq;
    }
  };
  std::vector<emu::LinkId> route_;
  std::vector<emu::Time> link_free_;  // per link: modelled FIFO of first hops (emulated)
  std::vector<Waiting> waiting_;
  uint64_t seq_ = 0;
};

}  // namespace fabemu::host::dpdk
