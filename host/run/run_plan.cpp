#include "host/run/run_plan.h"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "emulator/nccl_model.h"
#include "host/config/run_config.h"
#include "host/run/backend.h"
#include "traces/trace_set.h"

namespace fabemu::run {
namespace {

std::string dim_name(emu::DimTopology t) {
  switch (t) {
    case emu::DimTopology::kRing: return "Ring";
    case emu::DimTopology::kFullyConnected: return "FullyConnected";
    case emu::DimTopology::kSwitch: return "Switch";
    default: return "FatTree";
  }
}

std::string describe_latency(emu::Duration d) {
  const uint64_t ps = d.ps();
  return ps % 1000 == 0 ? fmt::format("{} ns", ps / 1000) : fmt::format("{} ps", ps);
}

// "3=1.5" or "all=1.2" -> per-rank factors.
std::vector<double> parse_compute_scale(const std::vector<std::string>& items, size_t ranks) {
  std::vector<double> scale(ranks, 1.0);
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument(fmt::format("--compute-scale {}: expected RANK=FACTOR or all=FACTOR", item));
    }
    const std::string who = item.substr(0, eq);
    double factor = 0;
    try {
      size_t used = 0;
      factor = std::stod(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      throw std::invalid_argument(fmt::format("--compute-scale {}: the factor is not a number", item));
    }
    if (!(factor >= 0) || factor > 1e6) {
      throw std::invalid_argument(fmt::format("--compute-scale {}: the factor must be between 0 and 1e6", item));
    }
    if (who == "all") {
      std::fill(scale.begin(), scale.end(), factor);
      continue;
    }
    size_t used = 0;
    long rank = -1;
    try {
      rank = std::stol(who, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != who.size() || rank < 0 || static_cast<size_t>(rank) >= ranks) {
      throw std::invalid_argument(
          fmt::format("--compute-scale {}: \"{}\" is not a rank of the workload (0..{}) or \"all\"", item, who, ranks - 1));
    }
    scale[static_cast<size_t>(rank)] = factor;
  }
  return scale;
}

// The model the run uses: a lab run and the real-time fabrics replay the packet model (FIFO links); else
// --model, the fabric file's, or analytical. Sets plan.model and the refusals and warnings of --mtu and
// --no-closed-form that depend on it.
void choose_model(const RunArgs& a, const std::string& file_model, RunPlan& plan) {
  std::string model = a.model.empty() ? file_model : a.model;
  if (!a.agents.empty()) {
    // The agents replay the packet model (FIFO links), as the DPDK fabric does.
    if (a.fabric != "software") throw std::invalid_argument("--agents: the lab file's \"fabric\" chooses the fabric, not --fabric");
    if (!a.model.empty() && a.model != "packet") {
      throw std::invalid_argument("--agents runs the packet model (FIFO links); --model analytical does not apply");
    }
    model = "packet";
  }
  const BackendEntry* backend = find_backend(a.fabric);
  if (a.agents.empty() && backend != nullptr && backend->packet_model_only) {
    // The DPDK and socket fabrics deliver at the times of the packet model, the FPGA kernel computes them: FIFO
    // links either way, no analytical mode.
    if (!a.model.empty() && a.model != "packet") {
      throw std::invalid_argument(fmt::format(
          "--fabric {} runs the packet model (FIFO links); --model analytical does not apply", a.fabric));
    }
    model = "packet";
  }
  if (model.empty()) model = "analytical";
  if (model != "analytical" && model != "packet") {
    throw std::invalid_argument(fmt::format("--model {}: expected analytical or packet", model));
  }
  if (model == "analytical" && a.was_given("--mtu")) {
    throw std::invalid_argument("--mtu sets the packet model's packet size; the analytical model sends whole messages: "
                                "add --model packet, or leave --mtu out");
  }
  if (model == "analytical" && plan.mtu != 0 && !a.fabric_config.empty()) {
    plan.option_warnings.push_back(fmt::format("{}: mtu {} is not used: the analytical model sends whole messages "
                                               "(--model packet uses it)",
                                               a.fabric_config, plan.mtu));
  }
  if (model == "packet" && a.no_closed_form) {
    throw std::invalid_argument("--no-closed-form turns off the analytical model's closed form; the packet model has "
                                "none: leave it out, or add --model analytical");
  }
  plan.model = std::move(model);
}

// --link-series BINS: an even count from 2 to 65536 (BinnedSeries), on the packet model of this process
// (--fabric software, socket or dpdk).
uint32_t link_series_bins(const RunArgs& a, const std::string& model) {
  if (a.link_series == 0) return 0;
  if (a.link_series < 2 || a.link_series > 65536 || a.link_series % 2 != 0) {
    throw std::invalid_argument(
        fmt::format("--link-series {}: the bins must be an even number from 2 to 65536", a.link_series));
  }
  const bool local_model = a.fabric == "software" || a.fabric == "socket" || a.fabric == "dpdk";
  if (model != "packet" || !local_model || !a.agents.empty()) {
    throw std::invalid_argument(fmt::format(
        "--link-series records the links of the packet model in this process (--model packet, or --fabric socket "
        "or dpdk); this run is on {}",
        !a.agents.empty() ? std::string("--agents") : !local_model ? "--fabric " + a.fabric : "the analytical model"));
  }
  return a.link_series;
}

emu::WalkerOptions walker_options(const RunArgs& a, const emu::SystemConfig& system, size_t ranks) {
  emu::WalkerOptions opt;
  opt.system = system;
  opt.comm_streams = a.comm_streams;
  opt.compute_model = host::parse_compute_model(a.compute_model, "--compute-model");
  opt.peak_tflops = a.peak_tflops;
  opt.mem_bw_gbps = a.mem_bw_gbps;
  opt.compute_scale = parse_compute_scale(a.compute_scale, ranks);
  opt.closed_form = !a.no_closed_form;
  opt.strict = a.strict;
  opt.hierarchical_groups = a.group_collectives != "flat";
  return opt;
}

}  // namespace

RunPlan load_run_plan(const RunArgs& a) {
  host::RunConfig config = host::load_run_config(a.fabric_config, a.network, a.system);
  RunPlan plan;
  plan.network = std::move(config.network);
  plan.system = std::move(config.system);
  plan.mtu = a.mtu != 0 ? a.mtu : config.mtu;
  if (!a.metrics.empty() && a.agents.empty() && a.fabric != "socket" && a.fabric != "dpdk") {
    throw std::invalid_argument(
        fmt::format("--metrics needs --agents, --fabric socket or --fabric dpdk; this run is on --fabric {}", a.fabric));
  }
  choose_model(a, config.model, plan);
  for (const auto& f : traces::find_rank_files(a.workload)) plan.paths.push_back(f.path);
  plan.groups = traces::ProcessGroups(static_cast<int64_t>(plan.paths.size()));
  if (!a.comm_groups.empty()) plan.groups.load_file(a.comm_groups);
  plan.walker = walker_options(a, plan.system, plan.paths.size());
  // --collective-semantics overrides the fabric file's.
  const bool nccl = a.collective_semantics.empty() ? config.nccl_semantics : a.collective_semantics == "nccl";
  if (nccl) {
    if (!config.nccl) {
      throw std::invalid_argument(fmt::format("--collective-semantics nccl: {} has no \"nccl:\" section (the system as "
                                              "NCCL sees it; presets in traces/systems)",
                                              a.fabric_config));
    }
    // The NCCL model gives each collective's time, not its messages: nothing for a packet model to carry.
    if (plan.model != "analytical" || a.fabric != "software") {
      throw std::invalid_argument(fmt::format(
          "{}: collective semantics nccl runs on the analytical model of --fabric software (the NCCL model times "
          "collectives without messages); this run is {}",
          a.fabric_config, a.fabric != "software" ? "on --fabric " + a.fabric : "on the packet model"));
    }
    // --nccl-algo / --nccl-proto on top of the nccl: section's lists.
    emu::nccl::apply_lists(*config.nccl, a.nccl_algo, a.nccl_proto, "--nccl-algo: ", "--nccl-proto: ");
    plan.walker.nccl = config.nccl;
  } else if (!a.nccl_algo.empty() || !a.nccl_proto.empty()) {
    throw std::invalid_argument(fmt::format("{} applies in NCCL's collective semantics only; this run is in "
                                            "ASTRA-sim's (--collective-semantics nccl, or the file's "
                                            "collective_semantics: nccl)",
                                            !a.nccl_algo.empty() ? "--nccl-algo" : "--nccl-proto"));
  }
  plan.timeline_messages = a.timeline_messages;
  plan.link_series = link_series_bins(a, plan.model);
  plan.html = !a.html.empty();
  plan.walker.traffic_matrix = plan.html;
  return plan;
}

std::string model_name(const RunPlan& plan) {
  if (plan.model != "packet") return plan.model;
  return fmt::format("packet (mtu {})", plan.mtu == 0 ? std::string("whole messages") : std::to_string(plan.mtu));
}

std::string describe_network(const emu::NetworkConfig& net) {
  std::string out;
  for (const auto& d : net.dims) {
    if (!out.empty()) out += " x ";
    if (d.fat_tree) {
      const auto& f = *d.fat_tree;
      out += fmt::format("FatTree({} leaves x {} hosts, {} spines, {:g}:1 oversubscribed) hosts {:g} Gb/s {}, spines "
                         "{:g} Gb/s {}",
                         f.leaves, f.hosts_per_leaf, f.spines, f.oversubscription(), f.host_gbps,
                         describe_latency(f.host_link_latency), f.spine_gbps, describe_latency(f.spine_link_latency));
      continue;
    }
    const bool gbit = d.bandwidth_unit == emu::NetworkDim::BandwidthUnit::kGbps;
    // ASTRA-sim's "GB/s" is 2^30 bytes/s: GiB/s in fabemu's units (README, Units).
    out += fmt::format("{}({}) {:g} {} {}", dim_name(d.topology), d.npus, d.bandwidth_gbps, gbit ? "Gb/s" : "GiB/s",
                       describe_latency(d.latency));
  }
  return out;
}

}  // namespace fabemu::run
