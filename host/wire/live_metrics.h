// Live counters of a run, written by the thread that runs the fabric and read by the metrics endpoint
// (another thread): relaxed atomics, no lock, nothing allocated after construction. The fabric (socket or
// DPDK) adds to them as it goes (or publishes a snapshot every millisecond or so); the endpoint renders them
// in the Prometheus text format (host/lab/metrics.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fabemu::host::dpdk {

// Links a process-wide LiveMetrics has room for (the agent's and the coordinator's: runs' topologies differ).
inline constexpr std::size_t kLiveMetricsLinks = 16384;

struct LiveMetrics {
  explicit LiveMetrics(std::size_t links = 0) : link_bytes(links), link_count(links) {}
  LiveMetrics(const LiveMetrics&) = delete;
  LiveMetrics& operator=(const LiveMetrics&) = delete;

  std::atomic<bool> running{false};        // a run is in progress
  std::atomic<int64_t> emulated_ps{0};     // the run's emulated clock
  std::atomic<uint64_t> messages_sent{0};  // messages whose source is a rank of this process
  std::atomic<uint64_t> bytes_sent{0};     // their message bytes
  std::atomic<uint64_t> messages_received{0};  // messages reassembled for a rank of this process
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> frames_sent{0};    // datagrams / frames, first transmissions and retransmissions
  std::atomic<uint64_t> frames_received{0};
  std::atomic<uint64_t> retransmissions{0};
  std::atomic<uint64_t> not_ours{0};       // frames received and dropped as not ours
  // Per link of the topology: message bytes the model carried on it (counters; Prometheus' rate() gives
  // the per-link rate). Sized at construction.
  std::vector<std::atomic<uint64_t>> link_bytes;
  // How many of them the current (or last) run uses: the samples rendered (none: no link family at all).
  std::atomic<std::size_t> link_count;

  static void add(std::atomic<uint64_t>& c, uint64_t v) noexcept { c.fetch_add(v, std::memory_order_relaxed); }
};

}  // namespace fabemu::host::dpdk
