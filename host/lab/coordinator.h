// The coordinator of a multi-host run (`fabemu run --agents lab.yaml`): one Boost.Asio io_context talking
// to every agent at once (no thread per connection). It authenticates each agent, estimates its clock
// offset, ships the run (configuration, trace shards with SHA-256), starts every agent at one agreed
// instant, gathers per-rank results and timeline slices, and merges them into the report a single-host
// run writes. Agents lost mid-run stop the run within a bounded time; the partial report names their
// ranks. host/lab/README.md, "Run protocol".
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "emulator/report.h"
#include "host/lab/clock.h"
#include "host/lab/framing.h"
#include "host/lab/lab_config.h"

namespace fabemu::lab {

struct CoordinatorOptions {
  std::string token;
  std::chrono::milliseconds timeout{5000};       // connect, each handshake step, and an agent's silence
  std::chrono::milliseconds start_margin{500};   // agreed start = when every agent is ready + this
  std::chrono::milliseconds stop_grace{3000};    // after a Stop, how long the others have to send results
  unsigned clock_probes = 8;                     // before the start (minimum-delay filter)
  unsigned reprobes = 4;                         // after the run: the drift over the run
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;
  // `--metrics`: a Prometheus endpoint on the coordinator's io_context for the run's duration (agents
  // connected / prepared / running / finished / lost, lost ranks).
  std::optional<boost::asio::ip::tcp::endpoint> metrics;
  // SIGINT/SIGTERM stop the run like a lost agent does (Stop to all, partial results gathered within
  // stop_grace) and set LabRunOutcome::interrupted; before the start they end it (fatal). The CLI sets it.
  bool handle_signals = false;
};

struct LabRunRequest {
  LabConfig lab;                       // validate_ranks() done
  proto::RunSpec spec;
  std::vector<std::string> trace_paths;  // per rank, on this host
};

// What one agent did.
struct AgentReport {
  std::string name;
  std::string agent_id;                // its host name (AuthResult)
  std::string control;
  std::vector<uint32_t> ranks;
  ClockEstimate clock;                 // before the start
  std::optional<ClockEstimate> after;  // re-probed after the run
  int64_t started_ns = 0;              // the walk's start, agent clock (RunDone)
  int64_t wall_ns = 0;
  bool done = false;                   // RunDone received
  bool interrupted = false;
  std::string stall;                   // RunDone.stall: its wire stalled and its walk stopped there
  bool lost = false;
  std::string lost_reason;
  std::string report_json;             // RunDone.report_json
  std::string socket_json;
  std::string socket_text;             // RunDone.socket_text: the socket fabric's summary, as a single-host run prints it
  std::string mac;                     // fabric dpdk: its port's MAC (Prepared.mac), "02:00:00:00:00:01"; else ""
};

struct LabRunOutcome {
  std::string run_id;
  std::string fabric;
  std::string wire;           // fabric dpdk: fabemu | roce; fabric socket/dpdk: every packet's traffic class
  uint32_t dscp = 0;
  std::string ecn;
  std::vector<AgentReport> agents;
  std::map<uint32_t, std::string> rank_reports;  // rank -> RankResult.report_json
  std::vector<proto::TimelineSlice> slices;      // of agents that finished, in seq order
  // Set when the run could not start or an agent failed (its Error text, naming the agent): no report.
  std::string fatal;
  int64_t began_ns = 0;       // coordinator clock: run_lab called
  int64_t ready_ns = 0;       // every agent prepared
  int64_t start_sent_ns = 0;  // Start sent to every agent
  int64_t start_at_ns = 0;    // the agreed start
  int64_t ended_ns = 0;
  bool interrupted = false;   // SIGINT/SIGTERM stopped the run (CoordinatorOptions::handle_signals)
  uint64_t trace_bytes = 0;   // shipped (or checked on shared storage) per agent
};

// Runs the whole protocol; returns when every agent finished, was lost or the run failed. Never throws
// for agent trouble (see `fatal` and `lost`); throws LabError for an unreadable trace file.
LabRunOutcome run_lab(const LabRunRequest& request, const CoordinatorOptions& options);

struct MergedLabRun {
  emu::RunResult result;              // the single-host report's content (+ the "lab" section)
  std::vector<uint32_t> lost_ranks;   // ranks without a result
  std::vector<std::string> stalled;   // "agent NAME (CONTROL): reason" of each agent whose wire stalled
  std::string text;                   // the lab part of the text summary
};

// Ranks from their agents, collectives / links / totals from the replicated model (checked equal across
// agents: a warning when they differ), lost ranks named in the warnings.
MergedLabRun merge_lab_run(const LabRunOutcome& outcome);

// Replays the gathered slices into `sink` in the single-host order.
void replay_timeline(const LabRunOutcome& outcome, emu::TimelineSink& sink);

}  // namespace fabemu::lab
