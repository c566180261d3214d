// The point-to-point traffic the workload's collectives become on a network: each collective planned and
// cut into chunks as `fabemu run` does (emulator/collective_plan.h) and its schedules' messages
// (emulator/collective.h) summed per (sender, receiver) rank pair.
#pragma once

#include <set>
#include <string>

#include "emulator/config.h"
#include "host/analyze/trace_analysis.h"

namespace fabemu::analyze {

struct ImpliedTraffic {
  TrafficMatrix matrix;
  std::set<std::string> warnings;  // algorithms replaced or missing, placements run flat (as `run` warns)
  std::string algorithms;          // e.g. "ALL_REDUCE: ring; ALL_GATHER: ring", per collective type seen
};

// Throws std::invalid_argument when the workload has more ranks than the network has NPUs (as `run` does).
ImpliedTraffic implied_traffic(const TraceAnalysis& analysis, const emu::NetworkConfig& network,
                               const emu::SystemConfig& system);

}  // namespace fabemu::analyze
