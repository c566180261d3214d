// Helpers of the fabrics' end-to-end tests that need no DPDK (test_dpdk_fabric, test_dpdk_lcores and
// test_socket_fabric, which also builds without DPDK): workloads, a walker run over a fabric, the
// standard injected faults and what they must have caused.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "emulator/report.h"
#include "host/wire/reassembly.h"
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

// One of the 12 shared microbenchmarks (coll: all_reduce, all_gather, reduce_scatter, all_to_all; n: 4, 8,
// 16) on Ring_<n>npus.yml with system_ring_4chunks.json, or nullopt when ../shared is absent.
std::optional<Workload> shared_microbenchmark(const std::string& coll, int n);

// A workload's run through a fabric: the walker's result, then the fabric drained, and its stats.
template <class Stats>
struct FabricRun {
  emu::RunResult result;
  Stats stats;
  bool drained = false;
};
// Walks `w` over `fabric`, drains it and prints its summary (`format(stats)`).
template <class Fabric, class Format>
auto run_through(Fabric& fabric, const Workload& w, Format&& format) {
  FabricRun<std::decay_t<decltype(fabric.stats())>> out;
  out.result = walk(fabric, w);
  out.drained = fabric.drain();
  out.stats = fabric.stats();
  std::printf("%s", format(out.stats).c_str());
  return out;
}

// Calls `run(workload, n)` for each of the 12 shared microbenchmarks (n ranks; a failure when one is
// missing), under a SCOPED_TRACE of its name. The caller skips first when shared_traces_dir() is absent.
template <class Run>
void for_each_shared_microbenchmark(Run&& run) {
  for (const char* coll : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
    for (const int n : {4, 8, 16}) {
      const std::string name = std::string(coll) + " " + std::to_string(n);
      const std::optional<Workload> w = shared_microbenchmark(coll, n);
      if (!w || w->files.size() != static_cast<size_t>(n)) {
        ADD_FAILURE() << name << ": missing or incomplete";
        continue;
      }
      SCOPED_TRACE(name);
      run(*w, n);
    }
  }
}

// 8-rank ring all-reduce of `bytes` (generate_collective), 4 chunks.
Workload generated_all_reduce(const ScratchDir& dir, uint64_t bytes = uint64_t{1} << 20);

// A network dimension whose links carry `bytes_per_sec` (pacing tests: slow enough for this machine).
emu::NetworkDim dim_at(emu::DimTopology kind, int64_t npus, uint64_t bytes_per_sec);

// Direct all-to-alls (`collectives` of them) on FullyConnected(4) at 250 Mb/s per link, 1 MiB to each
// rank: every rank sends on its three links at once (the fabrics' senders per first link).
Workload parallel_links_all_to_all(const ScratchDir& dir, uint32_t collectives);

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
