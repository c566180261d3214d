// What a run needs before any fabric exists, built once from the command line's options: the target
// fabric's configuration, the model, the workload's rank files and process groups, and the walker's options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/config.h"
#include "emulator/walker.h"
#include "host/run/run_args.h"
#include "traces/process_groups.h"

namespace fabemu::run {

struct RunPlan {
  emu::NetworkConfig network;
  emu::SystemConfig system;
  std::string model;        // "analytical" | "packet"
  uint32_t mtu = 0;         // the packet model's packet size; 0 = whole messages
  std::vector<std::string> option_warnings;  // options the run does not use (first among the report's warnings)
  std::vector<std::string> paths;            // the rank files, rank order
  traces::ProcessGroups groups{0};
  emu::WalkerOptions walker;                 // without a timeline (the run's outputs add it)
  uint64_t timeline_messages = 0;            // --timeline-messages: the walker's limit with a timeline
  uint32_t link_series = 0;                  // --link-series: bins of the link utilization series (0: none)
  // --html: the link series is recorded for the page (link_series bins, else 256) and the walker keeps the
  // traffic matrix.
  bool html = false;
};

// Reads the fabric (fabric file, or network.yml + system.json), chooses the model (the real-time fabrics and
// lab runs run the packet model; refusals name the option), finds the rank files and reads the process
// groups. Throws std::invalid_argument (an option) or the reader's located error (a file).
RunPlan load_run_plan(const RunArgs& a);

// "packet (mtu 4096)", "packet (mtu whole messages)" or "analytical": the report's `model`.
std::string model_name(const RunPlan& plan);

// The report's `topology`: "Ring(8) 50 GiB/s 500 ns x Switch(4) ...", or the fat-tree's shape.
std::string describe_network(const emu::NetworkConfig& net);

}  // namespace fabemu::run
