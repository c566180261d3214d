#include "host/run/run.h"

#include <fmt/core.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "emulator/report_json.h"
#include "emulator/summary.h"
#include "emulator/timeline.h"
#include "host/report/run_page.h"
#include "host/run/backend.h"
#include "host/run/exit_status.h"
#include "host/run/option_rules.h"
#include "host/run/output_file.h"
#include "host/run/progress_line.h"
#include "host/run/run_plan.h"

namespace fabemu::run {
namespace {

// Output paths are checked before the run: a long run is not lost to a report that cannot be written.
std::unique_ptr<OutputFile> open_report(const RunArgs& a) {
  if (a.report.empty()) return nullptr;
  return std::make_unique<OutputFile>(a.report, "--report");
}

std::unique_ptr<OutputFile> open_page(const RunArgs& a) {
  if (a.html.empty()) return nullptr;
  return std::make_unique<OutputFile>(a.html, "--html");
}

std::unique_ptr<emu::ChromeTimeline> open_timeline(const RunArgs& a) {
  if (a.timeline.empty()) return nullptr;
  return std::make_unique<emu::ChromeTimeline>(a.timeline);
}

// The report's description of the run: workload, fabric, model, topology.
void describe_run(const RunArgs& a, const RunPlan& plan, const Backend& backend, emu::RunResult& result) {
  result.workload = a.workload;
  const std::string fabric = backend.report_fabric();
  result.fabric = fabric.empty() ? a.fabric : fabric;
  result.model = model_name(plan);
  result.topology = describe_network(plan.network);
}

// The page first: the link series it needs is in the JSON report only with --link-series.
void write_outputs(const RunArgs& a, const Backend& backend, emu::RunResult& result, OutputFile* page,
                   OutputFile* report) {
  if (page != nullptr) page->commit(report::run_page(result));
  if (a.link_series == 0) result.link_series = {};
  if (report != nullptr) report->commit(emu::report_to_json(result));
  if (a.quiet) return;
  std::cout << emu::format_summary(result, a.top);
  const std::string section = backend.summary_section();
  if (!section.empty()) std::cout << "\n" << section;
}

// The backend's own status first (a stalled wire, lost ranks, a signal), then a deadlock's.
int exit_status(Backend& backend, const emu::RunResult& result) {
  if (const auto status = backend.exit_status()) return *status;
  if (!result.stuck.empty()) {
    fmt::print(stderr, "fabemu: the workload deadlocked; {} thing(s) wait forever:\n", result.stuck.size());
    for (const auto& s : result.stuck) fmt::print(stderr, "  {}\n", s);
    return kExitFindings;
  }
  return kExitOk;
}

}  // namespace

int run_workload(const RunArgs& a) {
  check_options(a);
  const std::unique_ptr<OutputFile> report = open_report(a);
  const std::unique_ptr<OutputFile> page = open_page(a);
  RunPlan plan = load_run_plan(a);
  const std::unique_ptr<emu::ChromeTimeline> timeline = open_timeline(a);
  emu::Engine engine(1 << 16);
  const emu::Topology topology(plan.network);
  const std::unique_ptr<Backend> backend = make_backend(BackendContext{a, plan, engine, topology});
  std::optional<ProgressLine> progress;
  if (progress_wanted(a.quiet)) plan.walker.progress = &progress.emplace(stderr);
  emu::RunResult result = backend->walk(plan, timeline.get());
  if (progress) progress->erase();
  backend->finish(result);
  describe_run(a, plan, *backend, result);
  write_outputs(a, *backend, result, page.get(), report.get());
  return exit_status(*backend, result);
}

}  // namespace fabemu::run
