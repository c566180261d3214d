// `--agents LAB.yaml`: a multi-host lab run. The agents replay the workload (each the whole model, its own
// ranks on the wire); this process coordinates and writes the same report and timeline a single-host run
// writes, plus a `lab` section (host/lab/README.md).
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "host/lab/address.h"
#include "host/lab/auth.h"
#include "host/lab/coordinator.h"
#include "host/lab/lab_config.h"
#include "host/run/backend.h"
#include "host/run/exit_status.h"

namespace fabemu::run {
namespace {

// The run's files travel to the agents in the spec (their contents, under the user's names).
void ship(lab::proto::RunSpec& spec, const char* role, const std::string& path) {
  if (path.empty()) return;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read", path));
  auto* f = spec.add_files();
  f->set_role(role);
  f->set_name(path);
  f->set_content(ss.str());
}

// The files of a custom implementation at `prefix` (resolved by the system file's reader): the .xml, or
// PREFIX.0.et ... (or .et.gz) up to the first missing member.
std::vector<std::string> custom_files(const std::string& prefix) {
  if (prefix.size() > 4 && prefix.compare(prefix.size() - 4, 4, ".xml") == 0) return {prefix};
  std::vector<std::string> files;
  for (size_t m = 0;; ++m) {
    const std::string et = fmt::format("{}.{}.et", prefix, m);
    if (std::filesystem::exists(et)) {
      files.push_back(et);
    } else if (std::filesystem::exists(et + ".gz")) {
      files.push_back(et + ".gz");
    } else {
      return files;
    }
  }
}

// The system file, with its custom implementations (docs/custom_collectives.md): each key's files travel
// under the role "custom_<key>", which the agent writes as "custom_<key>-<file name>" beside its copy of the
// system file, and the copy names them so (a path relative to its folder). Without such keys the file
// travels as it is.
void ship_system(lab::proto::RunSpec& spec, const std::string& path, const emu::SystemConfig& sys) {
  if (path.empty()) return;
  const std::pair<const char*, const std::string*> keys[] = {
      {"all-reduce-implementation-custom", &sys.all_reduce_custom},
      {"all-gather-implementation-custom", &sys.all_gather_custom},
      {"reduce-scatter-implementation-custom", &sys.reduce_scatter_custom},
      {"all-to-all-implementation-custom", &sys.all_to_all_custom}};
  std::ifstream in(path, std::ios::binary);
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  bool custom = false;
  for (const auto& [key, prefix] : keys) {
    if (prefix->empty() || !doc.is_object() || !doc.contains(key)) continue;
    custom = true;
    const std::string role = fmt::format("custom_{}", key);
    for (const std::string& f : custom_files(*prefix)) ship(spec, role.c_str(), f);
    doc[key] = nlohmann::json::array({role + "-" + std::filesystem::path(*prefix).filename().string()});
  }
  if (!custom) {
    ship(spec, "system", path);
    return;
  }
  auto* f = spec.add_files();
  f->set_role("system");
  f->set_name(path);
  f->set_content(doc.dump(2));
}

void fill_spec(const RunArgs& a, const RunPlan& plan, bool timeline, lab::proto::RunSpec& spec) {
  ship(spec, "fabric", a.fabric_config);
  ship(spec, "network", a.fabric_config.empty() ? a.network : "");
  ship_system(spec, a.fabric_config.empty() ? a.system : "", plan.walker.system);
  ship(spec, "comm_groups", a.comm_groups);
  spec.set_model("packet");
  spec.set_mtu(plan.mtu);
  spec.set_comm_streams(a.comm_streams);
  spec.set_compute_model(a.compute_model);
  spec.set_peak_tflops(a.peak_tflops);
  spec.set_mem_bw_gbps(a.mem_bw_gbps);
  for (const double f : plan.walker.compute_scale) spec.add_compute_scale(f);
  spec.set_closed_form(plan.walker.closed_form);
  spec.set_strict(plan.walker.strict);
  spec.set_flat_groups(!plan.walker.hierarchical_groups);
  spec.set_timeline(timeline);
  spec.set_timeline_messages(a.timeline_messages);
  spec.set_dilation(a.as_fast_as_possible ? 0.0 : a.dilation);
  spec.set_stall_timeout_ms(a.socket_stall_timeout_ms);
}

class AgentsBackend final : public Backend {
 public:
  explicit AgentsBackend(const BackendContext& c) : args_(c.args) {}

  emu::RunResult walk(const RunPlan& plan, emu::ChromeTimeline* timeline) override {
    // Logs go to stderr: stdout carries the summary.
    spdlog::set_default_logger(spdlog::stderr_color_mt("fabemu-lab"));
    lab::LabRunRequest request;
    request.lab = lab::load_lab_config(args_.agents);
    lab::validate_ranks(request.lab, static_cast<uint32_t>(plan.paths.size()));
    request.trace_paths = plan.paths;
    lab::CoordinatorOptions options;
    options.token = lab::read_token_file(request.lab.token_file);
    if (!args_.metrics.empty()) options.metrics = lab::parse_endpoint(args_.metrics);
    options.handle_signals = true;
    fill_spec(args_, plan, timeline != nullptr, request.spec);
    fabric_ = "lab:" + request.lab.fabric;

    outcome_ = lab::run_lab(request, options);
    if (!outcome_.fatal.empty()) {
      throw std::runtime_error(fmt::format("lab run (agents from {}): {}", args_.agents, outcome_.fatal));
    }
    merged_ = lab::merge_lab_run(outcome_);
    if (timeline != nullptr) {
      lab::replay_timeline(outcome_, *timeline);
      timeline->finish();
    }
    return std::move(merged_.result);
  }

  void finish(emu::RunResult& result) override {
    if (outcome_.interrupted) {
      stopped_early(result, "lab run interrupted (SIGINT/SIGTERM): the agents were stopped", emu::RunStatus::kInterrupted);
    } else if (!merged_.lost_ranks.empty()) {
      result.status = emu::RunStatus::kIncomplete;
    } else if (!merged_.stalled.empty()) {
      result.status = emu::RunStatus::kStalled;
    }
  }

  std::string report_fabric() const override { return fabric_; }
  std::string summary_section() const override { return merged_.text; }

  std::optional<int> exit_status() override {
    if (!merged_.lost_ranks.empty()) {
      fmt::print(stderr, "fabemu: lab run incomplete: rank(s) {} lost; the report holds the rest\n",
                 lab::format_ranks(merged_.lost_ranks));
      for (const auto& ag : outcome_.agents) {
        if (ag.lost) fmt::print(stderr, "  agent {} ({}): {}\n", ag.name, ag.control, ag.lost_reason);
      }
      return kExitFindings;
    }
    if (outcome_.interrupted) return interrupted_exit();
    if (!merged_.stalled.empty()) {
      fmt::print(stderr, "fabemu: error: lab run: the wire stalled on {} agent(s); the report holds the run up to that "
                         "point\n", merged_.stalled.size());
      for (const auto& s : merged_.stalled) fmt::print(stderr, "  {}\n", s);
      return kExitError;
    }
    return std::nullopt;
  }

 private:
  const RunArgs& args_;
  std::string fabric_;
  lab::LabRunOutcome outcome_;
  lab::MergedLabRun merged_;
};

}  // namespace

std::unique_ptr<Backend> make_agents_backend(const BackendContext& context) {
  return std::make_unique<AgentsBackend>(context);
}

}  // namespace fabemu::run
