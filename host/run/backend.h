// A fabric backend of `fabemu run` (`--fabric software|fpga|dpdk|socket`, and `--agents`): what makes the
// fabric, walks the workload over it, and after the walk adds its part to the result (warnings, link
// statistics, its report section), its text after the summary, and its exit status. One file a backend, one
// line each in the table of backend.cpp (table()). run_workload() (host/run/run.cpp) drives them in phases.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/packet_fabric.h"
#include "emulator/report.h"
#include "emulator/timeline.h"
#include "emulator/topology.h"
#include "host/run/run_args.h"
#include "host/run/run_plan.h"
#include "host/wire/realtime_fabric.h"

namespace fabemu::run {

// What every backend is made from: the options, the plan, and (for the backends that walk here) the
// engine and topology that outlive it.
struct BackendContext {
  const RunArgs& args;
  const RunPlan& plan;
  emu::Engine& engine;
  const emu::Topology& topology;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The walk: the workload over this backend's fabric (or the agents'), writing `timeline` when not null.
  virtual emu::RunResult walk(const RunPlan& plan, emu::ChromeTimeline* timeline) = 0;
  // After the walk: why it stopped early, warnings, link statistics, the report section.
  virtual void finish(emu::RunResult& result) = 0;
  // The report's `fabric` when it is not --fabric's value (a lab run's "lab:socket"); "" else.
  virtual std::string report_fabric() const { return {}; }
  // Printed after the summary (unless --quiet); "" for none.
  virtual std::string summary_section() const { return {}; }
  // Once the summary and report are written: an exit status of its own (it prints why to stderr), or
  // nullopt to let the run's own (a deadlock: 1; else 0).
  virtual std::optional<int> exit_status() { return std::nullopt; }
};

// A backend whose fabric is in this process: the walker runs here.
class LocalBackend : public Backend {
 public:
  emu::RunResult walk(const RunPlan& plan, emu::ChromeTimeline* timeline) override;

 protected:
  virtual emu::Fabric& fabric() = 0;
  // The packet model the walker's times come from (the software packet model, or the one a real-time
  // fabric replays); nullptr for the analytical model. walk() records its link series into it
  // (--link-series, and for the timeline's link counters).
  virtual emu::PacketFabric* packet_model() { return nullptr; }
  // The report's links from packet_model(), and link_series with --link-series or --html.
  void add_link_results(emu::RunResult& result);

 private:
  static constexpr uint32_t kDefaultBins = 256;  // the series for --html and the timeline without --link-series
  static constexpr size_t kTimelineLinks = 32;    // the busiest links get a counter track each
  bool series_in_result_ = false;  // --link-series or --html
};

struct BackendEntry {
  std::string_view name;   // --fabric's value ("agents" for a lab run)
  bool packet_model_only;  // it replays the packet model (FIFO links): --model analytical is refused
  // nullptr: a backend this fabemu was built without ("--fabric dpdk: this fabemu was built without DPDK")
  std::unique_ptr<Backend> (*make)(const BackendContext& context);
  std::string_view built_without = {};  // with make == nullptr: what it needs ("DPDK")
};

// The backends this fabemu was built with.
std::span<const BackendEntry> backends();

// The entry of that name, or nullptr.
const BackendEntry* find_backend(std::string_view name);

// Adds a backend to the table (tests; a backend built into fabemu is a line of the table in backend.cpp).
// Throws std::invalid_argument when one of that name exists.
void add_backend(const BackendEntry& entry);

// The backend of a run: --agents makes it "agents", else --fabric's. Throws std::invalid_argument for a
// backend this fabemu was built without ("--fabric dpdk: this fabemu was built without DPDK").
std::unique_ptr<Backend> make_backend(const BackendContext& context);

// A real-time fabric's run that stopped early (a signal, a stalled wire) did not deadlock: `headline`, then
// what was still running, become warnings (each prefixed "interrupted" or "stopped"), and nothing is left
// stuck; the report's status says which.
void stopped_early(emu::RunResult& result, std::string headline, emu::RunStatus status);

// The exit status and stderr line of a run a signal stopped (1: the report holds the run up to there).
int interrupted_exit();

// A backend whose fabric is a real-time one (host/wire/realtime_fabric.h: the DPDK and socket fabrics): the
// end of its run, written once. finish(): a run a signal or a stalled wire stopped is said so
// (stopped_early), the drain (a warning when not every message was acknowledged, unless the wire stalled:
// the stall says why), the fabric's report section, the links' statistics. exit_status(), from the
// fabric's state after the drain (it may stall): 1 after a signal, 2 with "fabemu: error: <fabric>:
// <stall>" after a stalled wire, else the backend's own.
class RealtimeBackend : public LocalBackend {
 public:
  void finish(emu::RunResult& result) override;
  std::string summary_section() const override { return section_; }
  std::optional<int> exit_status() override;

 protected:
  virtual host::dpdk::RealtimeFabric& realtime() = 0;
  emu::Fabric& fabric() override { return realtime(); }
  emu::PacketFabric* packet_model() override { return &realtime().mutable_model(); }
  // After the drain: the backend's own warnings, and its lines after the fabric's section (none by default).
  virtual void add_to(emu::RunResult& /*result*/, std::string& /*section*/) const {}
  // The exit status of the backend's own when the run ran to its end (none by default).
  virtual std::optional<int> own_exit_status() { return std::nullopt; }

 private:
  std::string section_;
};

}  // namespace fabemu::run
