// An agent's share of a lab run: the whole workload replayed over the packet model (the replicated model
// of host/lab/socket_fabric.h), with the results and timeline slices of its own ranks packed for the
// coordinator. Runs on the agent's run thread; the coordinator merges what every agent returns
// (host/lab/coordinator.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "emulator/config.h"
#include "host/lab/lab.pb.h"
#include "host/lab/live_metrics.h"

namespace fabemu::lab {

class DatagramTransport;
class LabDataPort;

// The network and system a RunSpec describes, loaded from the agent's copies of the coordinator's files
// (`paths`: role -> file). Throws traces::TraceError naming the file for bad input.
struct ReplayConfig {
  emu::NetworkConfig network;
  emu::SystemConfig system;
};
ReplayConfig load_replay_config(const proto::RunSpec& spec, const std::map<std::string, std::string>& paths);

struct ReplayInput {
  const proto::AssignRanks* assign = nullptr;   // the run: spec, ranks, fabric
  std::vector<std::string> trace_paths;         // per rank, on this host
  std::vector<std::string> trace_names;         // per rank, the user's file (TraceShard.name): named instead
  std::map<std::string, std::string> config_paths;
  int64_t start_realtime_ns = 0;                // emulated time 0, this host's CLOCK_REALTIME
  const std::atomic<bool>* stop = nullptr;      // polled; true ends the run early (interrupted)
  LiveMetrics* live = nullptr;
  // fabric "dpdk": this host's port (the agent's --dpdk-device) and every agent's port MAC (Start.agent_macs,
  // 6 bytes, keyed by the lab.yaml name of RankAssignment.agent).
  LabDataPort* data_port = nullptr;
  std::map<std::string, std::string> agent_macs;
  // fabric "socket": the local ranks' sockets bound when the run was prepared (bind_udp_data_plane), taken
  // by the replay; null or empty: bound at the start.
  std::unique_ptr<DatagramTransport>* bound = nullptr;
};

// fabric "socket": binds the UDP sockets of the run's local ranks at their lab.yaml data addresses, so that
// an address already in use fails the preparation, before any agent starts. std::runtime_error naming the
// ranks and addresses.
std::unique_ptr<DatagramTransport> bind_udp_data_plane(const proto::AssignRanks& assign);

// `text` with each of `paths` (an agent's copies of the traces) replaced by the user's file of the same
// rank in `names` (empty names are left alone), so warnings and errors name what the user gave.
std::string name_user_files(std::string text, const std::vector<std::string>& paths,
                            const std::vector<std::string>& names);

struct ReplayOutput {
  std::vector<proto::RankResult> ranks;  // per local rank, several when its timeline is long (`more`)
  proto::RunDone done;
};

// Waits for the start time (or the stop flag), walks, packs and hands the results to `deliver`. A data
// plane with a wire then keeps answering its peers (retransmissions, ACKs) until the stop flag is set, so
// that agents still finishing are served; the model returns at once. Throws (traces::TraceError,
// std::invalid_argument, ...) for bad input before `deliver`; the message names the file / rank.
void replay(const ReplayInput& input, const std::function<void(ReplayOutput&&)>& deliver);

// Timeline slices per RankResult frame at most (keeps frames far below the 64 MiB limit).
inline constexpr std::size_t kSlicesPerFrame = 50'000;

}  // namespace fabemu::lab
