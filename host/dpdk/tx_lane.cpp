// TxLane's resources and TxWorker (tx_lane.h): a transmit lane on an lcore of its own.
#include "host/dpdk/tx_lane.h"

#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <fmt/core.h>

#include <stdexcept>

#include "host/dpdk/dpdk_env.h"

namespace fabemu::host::dpdk {

TxLane::~TxLane() {
  for (const auto& q : data) {
    for (rte_mbuf* m : q) rte_pktmbuf_free(m);
  }
  for (const HeldFrames& h : held) {
    for (size_t i = h.mbuf_head; i < h.mbufs.size(); ++i) rte_pktmbuf_free(h.mbufs[i]);
  }
  if (stash_next < stash_n) rte_pktmbuf_free_bulk(stash + stash_next, stash_n - stash_next);
  if (short_n > 0) rte_pktmbuf_free_bulk(short_stash, short_n);
  if (feedback != nullptr) {
    void* m = nullptr;
    while (rte_ring_sc_dequeue(feedback, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
  }
  rte_ring_free(handovers);
  rte_ring_free(feedback);
  rte_ring_free(notices);
}

void TxLane::make_rings(unsigned ring_size) {
  static std::atomic<unsigned> counter{0};
  const unsigned n = counter.fetch_add(1);
  const int socket = static_cast<int>(rte_lcore_to_socket_id(lcore));
  const unsigned flags = RING_F_SP_ENQ | RING_F_SC_DEQ;
  const auto fail = [&](const char* what) {
    return std::runtime_error(fmt::format("TX lcore {}: {}: {}", lcore, what, rte_strerror(rte_errno)));
  };
  handovers = rte_ring_create_elem(fmt::format("fe_txh{}", n).c_str(), sizeof(TxHandOver), ring_size, socket, flags);
  if (handovers == nullptr) throw fail("rte_ring_create_elem (hand-overs)");
  feedback = rte_ring_create(fmt::format("fe_txf{}", n).c_str(), ring_size, socket, flags);
  if (feedback == nullptr) throw fail("rte_ring_create (feedback)");
  notices = rte_ring_create_elem(fmt::format("fe_txn{}", n).c_str(), sizeof(TxRetransmitted), ring_size, socket, flags);
  if (notices == nullptr) throw fail("rte_ring_create_elem (notices)");
}

TxWorker::TxWorker(TxLaneLoop& loop, TxLane& lane, unsigned lcore) : loop_(loop), lane_(lane), lcore_(lcore) {
  const int rc = rte_eal_remote_launch(&TxWorker::entry, this, lcore);
  if (rc != 0) throw std::runtime_error(fmt::format("TX lcore {}: rte_eal_remote_launch: {}", lcore, rte_strerror(-rc)));
}

TxWorker::~TxWorker() {
  if (!joined_) {
    request_stop();
    rte_eal_wait_lcore(lcore_);
  }
}

int TxWorker::entry(void* self) { return static_cast<TxWorker*>(self)->run(); }

int TxWorker::run() noexcept {
  run_capturing_failure("TX", lcore_, failure_, [this] {
    loop_.tx_lane_start(lane_);  // its state made here, on its own lcore
    while (!stop_.load(std::memory_order_acquire) && !Eal::stop_requested()) loop_.tx_lane_round(lane_);
  });
  done_.store(true, std::memory_order_release);
  return 0;
}

void TxWorker::join() { join_lcore(lcore_, joined_, failure_); }

}  // namespace fabemu::host::dpdk
