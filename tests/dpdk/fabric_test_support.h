// Helpers of the fabrics' end-to-end tests that need no DPDK (test_dpdk_fabric, test_dpdk_lcores and
// test_socket_fabric, which also builds without DPDK): workloads, a walker run over a fabric, the
// standard injected faults and what they must have caused.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/report.h"
#include "host/dpdk/reassembly.h"
#include "tests/emulator/walker_test_util.h"
#include "tests/support/test_support.h"

namespace fabemu::test {

inline constexpr uint32_t kModelMtu = 4096;

// A workload, its network and walker options.
struct Workload {
  emu::NetworkConfig net;
  emu::SystemConfig sys;
  std::vector<std::string> files;
  emu::WalkerOptions options() const;
};

// The workload's walker over `fabric`.
emu::RunResult walk(emu::Fabric& fabric, const Workload& w);

// 8-rank ring all-reduce of `bytes` (generate_collective), 4 chunks.
Workload generated_all_reduce(const ScratchDir& dir, uint64_t bytes = uint64_t{1} << 20);

// One of the 12 shared microbenchmarks (coll: all_reduce, all_gather, reduce_scatter, all_to_all; n: 4, 8,
// 16) on Ring_<n>npus.yml with system_ring_4chunks.json, or nullopt when ../shared is absent.
std::optional<Workload> shared_microbenchmark(const std::string& coll, int n);

// The loss, reordering and duplication the fault tests inject (seed 7).
host::dpdk::FaultConfig injected_faults();

// What injected_faults() must have caused, in a fabric's stats (DpdkStats, SocketStats): drops, reorders,
// every drop retransmitted, reordered and duplicate arrivals seen.
template <class Stats>
void expect_faults_recovered(const Stats& s) {
  EXPECT_GT(s.injected_drops, 0u);
  EXPECT_GT(s.injected_reorders, 0u);
  EXPECT_GE(s.retransmissions, s.injected_drops);
  EXPECT_GT(s.rx_reordered, 0u);
  EXPECT_GT(s.rx_duplicates + s.rx_stale, 0u);
}

}  // namespace fabemu::test
