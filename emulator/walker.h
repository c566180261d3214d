// The rank walker: replays a multi-rank Chakra workload over a Fabric. Per rank it streams the trace
// through the dependency resolver, runs COMP nodes on the rank's compute stream, matches SEND/RECV by
// (src, dst, tag) and collectives by (process group, issue order), turns collectives into the point-
// to-point schedules of collective.h (or, for a type with a custom implementation, the graphs of
// system.json's "*-implementation-custom") and hands their messages to the fabric. The walker does not
// know which fabric it drives; when the fabric offers the closed-form capability (Fabric::analytical(),
// the congestion-unaware AnalyticalFabric) it may evaluate a collective in closed form instead (a
// max-plus recurrence over the members' start times), with exactly the times the message-by-message
// walk gives. Its parts, one job each, are listed in walker_impl.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/config.h"
#include "emulator/fabric.h"
#include "emulator/nccl_model.h"
#include "emulator/report.h"

namespace fabemu::traces {
class ProcessGroups;
}

namespace fabemu::emu {

// How COMP nodes are timed.
enum class ComputeModel {
  kAuto,      // duration_micros when > 0, else the roofline when a device is given, else 0
  kDuration,  // duration_micros only
  kRoofline,  // the roofline for every COMP node that has num_ops or tensor_size
};

// How far a walk got, for a progress line: handed to a ProgressListener between events.
struct WalkProgress {
  Time now;                   // emulated time reached
  uint64_t nodes_done = 0;    // nodes walked, all ranks
  size_t ranks_finished = 0;  // ranks whose every node finished
  size_t ranks = 0;
  uint64_t events = 0;        // engine events run
};

class ProgressListener {
 public:
  virtual ~ProgressListener() = default;
  // Called every Walker::kProgressEvents events (and nothing else between them): it decides itself
  // whether to show anything (e.g. by the wall clock).
  virtual void progress(const WalkProgress& p) = 0;
};

struct WalkerOptions {
  // Collective algorithms per dimension, chunking (preferred-dataset-splits), active chunks per
  // dimension, endpoint delay, local memory bandwidth (reductions), scheduling policy.
  SystemConfig system;
  // Chunks in flight at once per rank and dimension; 0 = system.active_chunks_per_dimension.
  int64_t comm_streams = 0;
  ComputeModel compute_model = ComputeModel::kAuto;
  double peak_tflops = 0;    // roofline: 10^12 ops/s; 0 = system.peak_perf_tflops
  double mem_bw_gbps = 0;    // roofline: 10^9 bytes/s; 0 = system.local_mem_bw_gbps
  std::vector<double> compute_scale;  // per rank (missing ranks: 1.0); COMP times are multiplied by it
  bool closed_form = true;   // on a fabric with Fabric::analytical(), evaluate regular collectives in closed form
  bool strict = false;       // dependency problems in traces are errors (see traces/resolver.h)
  // A process group smaller than all ranks that spreads along several dimensions (group_grid() in
  // collective_plan.h): true, its collectives run dimension by dimension like the default group's; false,
  // flat over its members (one ring, as ASTRA-sim 2.x runs every group smaller than all ranks).
  bool hierarchical_groups = true;
  // Nodes each rank's resolver holds at most (traces/resolver.h); 0 = automatic: 2^20 / ranks, between
  // 64 and 16384, so that thousands of ranks do not each hold a whole trace.
  size_t resolver_window = 0;
  TimelineSink* timeline = nullptr;
  // Point-to-point message slices written to the timeline at most (node slices are always written).
  uint64_t timeline_message_limit = 1'000'000;
  ProgressListener* progress = nullptr;  // told how far the walk got every kProgressEvents events
  bool traffic_matrix = false;  // keep RunResult::traffic (sender x receiver messages and bytes)
  // NCCL's semantics (a fabric file's `collective_semantics: nccl`): every collective NCCL has (all-reduce,
  // all-gather, reduce-scatter, broadcast, reduce, barrier) ends on all its members at the last member's issue
  // + the NCCL model's time for its group's shape on this machine (nccl_semantics.h), without messages, one
  // after another per group (a communicator's stream);
  // the others (all-to-all, ...) run in ASTRA-sim's semantics. Absent: ASTRA-sim's semantics for all.
  std::optional<nccl::System> nccl;
};

class Walker {
 public:
  static constexpr uint64_t kProgressEvents = 1 << 14;

  // `rank_files[r]` is rank r's trace. `network` gives the dimensions of hierarchical collectives.
  // `groups` holds comm groups known up front (a --comm-group-configuration file); METADATA_NODEs add
  // to them as they are walked. Throws std::invalid_argument for more ranks than the network has NPUs.
  Walker(Fabric& fabric, const NetworkConfig& network, std::vector<std::string> rank_files,
         const traces::ProcessGroups& groups, WalkerOptions options);
  ~Walker();
  Walker(const Walker&) = delete;
  Walker& operator=(const Walker&) = delete;

  // Walks every rank to the end. Throws traces::TraceError for bad input (naming file, rank and node).
  // A workload that cannot finish (a RECV without SEND, a collective some members never issue, a
  // dependency cycle across ranks) returns with `stuck` describing which rank waits on what.
  RunResult run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabemu::emu
