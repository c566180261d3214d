#include "host/run/backend.h"

#include <fmt/core.h>

#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "emulator/link_results.h"
#include "emulator/walker.h"
#include "host/run/exit_status.h"

namespace fabemu::run {

// Each backend's file defines its make function; a backend is one file and one line of table() below.
std::unique_ptr<Backend> make_software_backend(const BackendContext& context);
std::unique_ptr<Backend> make_fpga_backend(const BackendContext& context);
std::unique_ptr<Backend> make_socket_backend(const BackendContext& context);
std::unique_ptr<Backend> make_agents_backend(const BackendContext& context);
#ifdef FABEMU_HAVE_DPDK
std::unique_ptr<Backend> make_dpdk_backend(const BackendContext& context);
#else
constexpr std::nullptr_t make_dpdk_backend = nullptr;  // dpdk_backend.cpp is built with DPDK only
#endif

namespace {

std::vector<BackendEntry>& table() {
  static std::vector<BackendEntry> entries = {
      {"software", false, make_software_backend},
      {"dpdk", true, make_dpdk_backend, "DPDK"},
      {"socket", true, make_socket_backend},
      {"fpga", true, make_fpga_backend},
      {"agents", true, make_agents_backend},
  };
  return entries;
}

}  // namespace

std::span<const BackendEntry> backends() { return table(); }

void add_backend(const BackendEntry& entry) {
  for (const BackendEntry& e : table()) {
    if (e.name == entry.name) throw std::invalid_argument(fmt::format("a backend named {} exists", entry.name));
  }
  table().push_back(entry);
}

const BackendEntry* find_backend(std::string_view name) {
  for (const BackendEntry& e : table()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::unique_ptr<Backend> make_backend(const BackendContext& context) {
  const std::string_view name = context.args.agents.empty() ? std::string_view(context.args.fabric) : "agents";
  const BackendEntry* entry = find_backend(name);
  if (entry == nullptr) throw std::invalid_argument(fmt::format("--fabric {}: no such backend in this fabemu", name));
  if (entry->make == nullptr) {
    throw std::invalid_argument(fmt::format("--fabric {}: this fabemu was built without {}", name, entry->built_without));
  }
  return entry->make(context);
}

emu::RunResult LocalBackend::walk(const RunPlan& plan, emu::ChromeTimeline* timeline) {
  emu::PacketFabric* model = packet_model();
  series_in_result_ = model != nullptr && (plan.link_series != 0 || plan.html);
  if (model != nullptr && (plan.link_series != 0 || plan.html || timeline != nullptr)) {
    model->record_link_series(plan.link_series != 0 ? plan.link_series : kDefaultBins);
  }
  emu::WalkerOptions options = plan.walker;
  if (timeline != nullptr) {
    options.timeline = timeline;
    options.timeline_message_limit = plan.timeline_messages;
  }
  emu::Walker walker(fabric(), plan.network, plan.paths, plan.groups, options);
  emu::RunResult result = walker.run();
  result.warnings.insert(result.warnings.begin(), plan.option_warnings.begin(), plan.option_warnings.end());
  if (timeline != nullptr) {
    if (model != nullptr) emu::write_link_counters(*model, model->link_series(), kTimelineLinks, *timeline);
    timeline->finish();
  }
  return result;
}

void LocalBackend::add_link_results(emu::RunResult& result) {
  const emu::PacketFabric* model = packet_model();
  if (model == nullptr) return;
  result.links = emu::link_results(*model, result.total);
  if (series_in_result_) result.link_series = emu::link_series(*model, model->link_series());
}

void stopped_early(emu::RunResult& result, std::string headline, emu::RunStatus status) {
  result.status = status;
  const std::string_view prefix = status == emu::RunStatus::kInterrupted ? "interrupted" : "stopped";
  result.warnings.push_back(std::move(headline));
  for (auto& s : result.stuck) result.warnings.push_back(fmt::format("{}: {}", prefix, s));
  result.stuck.clear();
}

int interrupted_exit() {
  fmt::print(stderr, "fabemu: interrupted (SIGINT/SIGTERM): the report holds the run up to that point\n");
  return kExitFindings;
}

namespace {

// The state of a real-time fabric's run: a signal or a stalled wire stopped it at `now`, or it ran to the
// end.
struct RealtimeEnd {
  bool interrupted = false;
  bool stalled = false;
  emu::Time now;
};
RealtimeEnd end_of(host::dpdk::RealtimeFabric& f) { return RealtimeEnd{f.interrupted(), f.stalled(), f.engine().now()}; }

void stopped_early_if(emu::RunResult& result, const RealtimeEnd& end) {
  if (end.interrupted) {
    stopped_early(result, fmt::format("run interrupted (SIGINT/SIGTERM) at {} ps of emulated time", end.now.ps()),
                  emu::RunStatus::kInterrupted);
  } else if (end.stalled) {  // a dead device or peer: the report shows how far the run got
    stopped_early(result, fmt::format("run stopped at {} ps of emulated time: the wire stalled", end.now.ps()),
                  emu::RunStatus::kStalled);
  }
}

std::optional<int> realtime_exit(const RealtimeEnd& end, std::string_view fabric, const std::string& stall) {
  if (end.interrupted) return interrupted_exit();
  if (end.stalled) {
    fmt::print(stderr, "fabemu: error: {}: {}; the report holds the run up to that point\n", fabric, stall);
    return kExitError;
  }
  return std::nullopt;
}

}  // namespace

void RealtimeBackend::finish(emu::RunResult& result) {
  host::dpdk::RealtimeFabric& f = realtime();
  stopped_early_if(result, end_of(f));
  // After a stall the reason above says why messages were not acknowledged: no second warning.
  if (!f.drain(host::dpdk::RealtimeFabric::kDrainLimit) && !f.stalled()) {
    result.warnings.push_back(fmt::format("{}: some messages were not acknowledged at the end", f.name()));
  }
  host::dpdk::RealtimeFabric::ReportSection section = f.report_section();
  section_ = std::move(section.text);
  add_to(result, section_);
  result.sections.emplace_back(std::move(section.key), std::move(section.json));
  add_link_results(result);
}

std::optional<int> RealtimeBackend::exit_status() {
  host::dpdk::RealtimeFabric& f = realtime();
  if (const auto status = realtime_exit(end_of(f), f.name(), f.stall_reason())) return status;
  return own_exit_status();
}

}  // namespace fabemu::run
