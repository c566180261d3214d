// DpdkFabric's transmit lanes (dpdk_fabric.h, tx_lane.h; README.md, "Several transmit lcores"): their making,
// the walker's hand-overs to the transmit lcores, a transmit lcore's round, the main lcore's side of the rings,
// and the end of the lanes' run.
#include <rte_lcore.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "host/dpdk/dpdk_fabric.h"

namespace fabemu::host::dpdk {

namespace {
// Elements of each lane's rings: hand-overs and feedback frames in, retransmission notices out.
constexpr unsigned kLaneRing = 65536;
constexpr unsigned kFeedbackBurst = 32;
}  // namespace

std::vector<unsigned> DpdkFabric::choose_tx_lcores(const std::vector<unsigned>& rx_lcores) const {
  if (opt_.tx_lcores.empty()) return {};
  if (&ports_.a() == &ports_.b()) {
    throw std::invalid_argument(fmt::format("--dpdk-tx-lcore: transmit lcores need two ports (data A -> B); {} loops "
                                            "frames back",
                                            ports_.describe()));
  }
  if (!opt_.pcap.empty()) {
    throw std::invalid_argument("--dpdk-tx-lcore with --pcap: the capture of transmit lcores is not supported; use "
                                "--dpdk-tx-lcore off to capture");
  }
  std::vector<unsigned> ids;
  for (const unsigned id : opt_.tx_lcores) {
    if (id >= RTE_MAX_LCORE || !rte_lcore_is_enabled(id) || id == rte_get_main_lcore() ||
        rte_eal_get_lcore_state(id) != WAIT) {
      throw std::invalid_argument(fmt::format("--dpdk-tx-lcore {}: not an idle worker lcore of EAL (main lcore {}, {} "
                                              "lcores enabled; give EAL e.g. -l 0-2, or --lcores 0@0,1@1,2@1 for more "
                                              "lcores than cores)",
                                              id, rte_get_main_lcore(), rte_lcore_count()));
    }
    if (std::find(rx_lcores.begin(), rx_lcores.end(), id) != rx_lcores.end()) {
      throw std::invalid_argument(fmt::format("--dpdk-tx-lcore {}: lcore {} is a receive lcore (--dpdk-rx-lcore); an "
                                              "lcore sends or receives, not both",
                                              id, id));
    }
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
      throw std::invalid_argument(fmt::format("--dpdk-tx-lcore: lcore {} is listed twice", id));
    }
    ids.push_back(id);
  }
  return ids;
}

void DpdkFabric::make_lanes(const std::vector<unsigned>& tx_lcores, uint16_t rx_queues, const SenderConfig& senders) {
  const size_t lanes = std::max<size_t>(1, tx_lcores.size());
  handed_.assign(lanes, 0);
  lane_senders_ = senders;
  lane_queues_ = rx_queues;
  for (size_t i = 0; i < lanes; ++i) {
    auto lane = std::make_unique<TxLane>();
    lane->lcore = tx_lcores.empty() ? rte_get_main_lcore() : tx_lcores[i];
    lane->txq_base = static_cast<uint16_t>(i * rx_queues);
    if (tx_lcores.empty()) {
      lane->st = &stats_;  // the inline lane counts as the main lcore did
      lane->stalls = &stalls_;
      tx_lane_start(*lane);
    } else {
      lane->st = &lane->own_stats;
      lane->stalls = &lane->own_stalls;
      lane->make_rings(kLaneRing);  // its state: on its lcore (tx_lane_start)
    }
    lanes_.push_back(std::move(lane));
  }
}

void DpdkFabric::tx_lane_start(TxLane& lane) {
  // Made by the lcore that runs the lane: from its own malloc arena, so that no cache line of its hot state
  // lies next to another lane's (measured: one-frame messages on two lcores 0.71 of two processes when
  // the main lcore made both lanes' state, 1.00 when each made its own; PERFORMANCE.md, 2026-12-07).
  const size_t links = model_.topology().links().size();
  lane.senders = LinkSenders(npus_, links, lane_senders_);
  lane.templates = FlowTemplates(npus_);
  lane.data.resize(lane_queues_);
  lane.paced_q.resize(lane_queues_);
  lane.firsts.resize(lane_queues_);
  lane.paced.resize(kFramesPerSender);  // a next_runs call gives at most that many (its room)
  lane.pace_slot.assign(links, LinkSlot{});
  lane.link_pace.resize(links);
  if (lane.handovers != nullptr) {
    lane.own_stalls.reserve(1024);
    lane.backlog.reserve(kLaneRing);
    lane.pending_notices.reserve(4096);
    lane.scratch.resize(16384);
  }
}

void DpdkFabric::start_tx_workers() {
  if (lanes_[0]->handovers == nullptr) return;  // the inline lane
  TxLaneLoop& loop = *this;  // (a private base: converted here, where it is accessible)
  for (const auto& lane : lanes_) tx_workers_.push_back(std::make_unique<TxWorker>(loop, *lane, lane->lcore));
}

bool DpdkFabric::lanes_readable() const noexcept {
  for (const auto& w : tx_workers_) {
    if (!w->joined()) return false;
  }
  return true;
}

// --- the main lcore's side -------------------------------------------------------------------------------

bool DpdkFabric::hand_over(uint64_t id, Record& r) {
  const size_t li = lanes_.size() == 1 ? 0 : r.src % lanes_.size();
  TxLane& lane = *lanes_[li];
  const uint64_t pair = uint64_t{r.src} * npus_ + r.dst;
  uint64_t& next_id = pair_ids_[pair];
  TxHandOver h{&r, next_id, engine_.now().ps(), r.src, r.dst};
  if (rte_ring_sp_enqueue_elem(lane.handovers, &h, sizeof(TxHandOver)) != 0) return false;  // full: later
  ++next_id;
  ++handed_[li];
  r.wire_id = h.wire_id;
  r.submitted = true;
  by_wire_[pair_key(r.src, r.dst, r.wire_id, npus_)] = id;
  return true;
}

void DpdkFabric::take_notices() {
  std::array<TxRetransmitted, 32> got{};
  for (size_t i = 0; i < lanes_.size(); ++i) {
    TxLane& lane = *lanes_[i];
    for (unsigned n; (n = rte_ring_sc_dequeue_burst_elem(lane.notices, got.data(), sizeof(TxRetransmitted),
                                                         static_cast<unsigned>(got.size()), nullptr)) > 0;) {
      for (unsigned k = 0; k < n; ++k) retransmitted(got[k].src, got[k].dst, got[k].wire_id);
    }
    if (tx_workers_[i]->done() && !tx_workers_[i]->joined()) tx_workers_[i]->join();  // rethrows its failure
  }
}

bool DpdkFabric::lanes_settled() {
  bool settled = true;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    TxLane& lane = *lanes_[i];
    lane.draining.store(true, std::memory_order_relaxed);
    if (lane.settled.load(std::memory_order_acquire) != handed_[i] && !tx_workers_[i]->done()) settled = false;
  }
  return settled;
}

void DpdkFabric::join_tx_workers() {
  for (const auto& w : tx_workers_) w->request_stop();
  for (const auto& w : tx_workers_) w->join();
  if (!tx_workers_.empty()) take_notices();
}

// --- a transmit lcore's round ----------------------------------------------------------------------------

void DpdkFabric::tx_lane_round(TxLane& lane) {
  // Nothing before wall time zero (the first send() restarts the clock, then hands its message over): a
  // reading taken before the restart is later than every reading after it until the run has lasted as long
  // as its set-up, and frames paced with it would have left "early" and held their link that long.
  if (!clock_zero_set_.load(std::memory_order_acquire)) [[unlikely]] {
    if (lane.draining.load(std::memory_order_relaxed)) lane.settled.store(lane.counters.handed, std::memory_order_release);
    return;
  }
  const TscClock::Reading now = clock_.read();
  {
    // Its stalls (more than 100 us between two rounds): frames due meanwhile leave late.
    const uint64_t ps = now.wall.ps();
    if (lane.last_poll_ps != 0 && ps > lane.last_poll_ps) {
      const uint64_t gap_ns = (ps - lane.last_poll_ps) / 1000;
      lane.counters.poll_gap_max_ns = std::max(lane.counters.poll_gap_max_ns, gap_ns);
      if (gap_ns > kPollStallNs) {
        ++lane.counters.poll_stalls;
        if (lane.own_stalls.size() < RxPath::kMaxStalls) lane.own_stalls.push_back(PollStall{lane.last_poll_ps, ps});
      }
    }
    lane.last_poll_ps = ps;
  }
  ++lane.counters.polls;
  // The walker's messages, in the order it handed them over (while the backlog has room: it never grows,
  // the rest wait in the ring).
  const unsigned n = lane.backlog.size() + lane.taken.size() > lane.backlog.capacity()
                         ? 0
                         : rte_ring_sc_dequeue_burst_elem(lane.handovers, lane.taken.data(), sizeof(TxHandOver),
                                                          static_cast<unsigned>(lane.taken.size()), nullptr);
  lane.backlog.insert(lane.backlog.end(), lane.taken.begin(), lane.taken.begin() + n);
  lane.counters.handed += n;
  if (!lane.backlog.empty()) submit_backlog(lane);
  // The feedback for its senders.
  void* fb[kFeedbackBurst];
  const unsigned nf = rte_ring_sc_dequeue_burst(lane.feedback, fb, kFeedbackBurst, nullptr);
  DecodedFrame f;
  for (unsigned i = 0; i < nf; ++i) {
    auto* m = static_cast<rte_mbuf*>(fb[i]);
    if (decode_mbuf(m, rules_, f, lane.scratch) == Verdict::kOurs) handle_in(lane, f);
  }
  if (nf > 0) rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(fb), nf);
  lane.counters.feedback += nf;
  // The adaptive RTO and tail age, when the main lcore changed them.
  if (const uint64_t g = rto_generation_.load(std::memory_order_acquire); g != lane.rto_generation) {
    lane.rto_generation = g;
    lane.senders.set_rto(emu::Duration::from_ps(rto_ps_.load(std::memory_order_relaxed)));
    if (const uint64_t tail = tail_age_ps_.load(std::memory_order_relaxed); tail != 0) {
      lane.senders.set_tail_age(emu::Duration::from_ps(tail));
    }
    std::fill(lane.next_work.begin(), lane.next_work.end(), 0);  // a shorter RTO brings timers forward
  }
  transmit(lane, now);
  if (!lane.pending_notices.empty()) {
    const unsigned k = rte_ring_sp_enqueue_burst_elem(lane.notices, lane.pending_notices.data(), sizeof(TxRetransmitted),
                                                      static_cast<unsigned>(lane.pending_notices.size()), nullptr);
    lane.pending_notices.erase(lane.pending_notices.begin(), lane.pending_notices.begin() + k);
  }
  if (lane.draining.load(std::memory_order_relaxed)) {
    // Settled: everything taken was submitted, sent and acknowledged.
    bool idle = lane.backlog.empty() && lane.built() == 0 && lane.pending_notices.empty();
    for (size_t i = 0; idle && i < lane.senders.size(); ++i) idle = lane.senders[i].unacked_messages() == 0;
    lane.settled.store(idle ? lane.counters.handed : ~uint64_t{0}, std::memory_order_release);
  }
}

void DpdkFabric::submit_backlog(TxLane& lane) {
  size_t kept = 0;
  for (size_t i = 0; i < lane.backlog.size(); ++i) {
    const TxHandOver& h = lane.backlog[i];
    Record& r = *h.record;
    const LinkSenders::Pair ps = lane.senders.of(h.src, h.dst, r.first_link);
    if (ps.sender >= lane.next_work.size()) lane.next_work.resize(lane.senders.size(), 0);
    Sender& s = lane.senders[ps.sender];
    // A pair whose window is full waits, and the other pairs go on; the pair's order holds (its window
    // fills only within this loop).
    if (!s.can_submit(ps.dst)) {
      lane.backlog[kept++] = h;
      continue;
    }
    lane.next_work[ps.sender] = 0;
    lane.stamp_ps = std::max(lane.stamp_ps, h.stamp_ps);
    const uint64_t id = s.submit(ps.dst, r.bytes, reinterpret_cast<uintptr_t>(&r));
    if (id != h.wire_id) {
      throw std::logic_error(fmt::format("message {} -> {}: the Sender gave wire id {}, the main lcore expected {}", h.src,
                                         h.dst, id, h.wire_id));
    }
  }
  lane.backlog.resize(kept);
}

}  // namespace fabemu::host::dpdk
