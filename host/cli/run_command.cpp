// `fabemu run`: replay a workload over a target fabric and report how long it takes and why.
#include <fmt/core.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "emulator/dilation.h"
#include "emulator/link_results.h"
#include "emulator/packet_fabric.h"
#include "emulator/report_json.h"
#include "emulator/summary.h"
#include "emulator/timeline.h"
#include "emulator/topology.h"
#include "emulator/walker.h"
#include "host/cli/commands.h"
#include "host/cli/output_file.h"
#include "host/config/config_util.h"
#include "host/config/astra_config.h"
#include "host/config/fabric_config.h"
#include "host/fpga/fpga_fabric.h"
#include "host/lab/address.h"
#include "host/lab/auth.h"
#include "host/lab/coordinator.h"
#include "host/lab/lab_config.h"
#include "host/lab/socket_fabric.h"
#include "traces/process_groups.h"
#include "traces/trace_set.h"

#ifdef FABEMU_HAVE_DPDK
#include <unistd.h>

#include <filesystem>

#include "host/dpdk/address_plan.h"
#include "host/dpdk/dpdk_env.h"
#include "host/dpdk/dpdk_fabric.h"
#endif

namespace fabemu::cli {
namespace {

// SIGINT/SIGTERM as a stop flag for a run that polls (the socket fabric), while the guard lives; the
// previous handlers come back when it goes. (EAL installs its own for the DPDK fabric.)
class StopSignals {
 public:
  StopSignals() {
    flag_.store(false, std::memory_order_relaxed);
    prev_int_ = std::signal(SIGINT, on_signal);
    prev_term_ = std::signal(SIGTERM, on_signal);
  }
  ~StopSignals() {
    std::signal(SIGINT, prev_int_);
    std::signal(SIGTERM, prev_term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  static bool requested() noexcept { return flag_.load(std::memory_order_relaxed); }

 private:
  static void on_signal(int) { flag_.store(true, std::memory_order_relaxed); }
  static inline std::atomic<bool> flag_{false};
  void (*prev_int_)(int) = SIG_DFL;
  void (*prev_term_)(int) = SIG_DFL;
};

struct RunArgs {
  std::string workload;
  std::string fabric_config;
  std::string network;
  std::string system;
  std::string fabric = "software";
  std::string model;
  uint32_t mtu = 0;
  std::string comm_groups;
  int64_t comm_streams = 0;
  std::string compute_model = "auto";
  double peak_tflops = 0;
  double mem_bw_gbps = 0;
  std::vector<std::string> compute_scale;
  bool no_closed_form = false;
  bool strict = false;
  std::string report;
  std::string timeline;
  uint64_t timeline_messages = 1'000'000;
  size_t top = 5;
  bool quiet = false;
  // --fabric fpga
  std::string device;
  std::string xclbin;
  // --fabric dpdk
  std::string dpdk_port = "ring";
  double dpdk_ring_delay_us = 0;
  double dpdk_ring_rate_gbps = 0;
  uint64_t dpdk_ring_ecn_bytes = 0;
  std::vector<std::string> dpdk_devargs;
  std::string dpdk_rx_lcore = "auto";
  std::string dpdk_verify_checksums = "auto";
  uint32_t dpdk_stall_timeout_ms = 10'000;
  uint32_t dpdk_ahead_us = 20;
  uint32_t dpdk_rto_us = 10'000;
  uint32_t dpdk_nack_delay_us = 200;
  uint32_t dpdk_window = 1024;
  double dilation = 1;
  bool as_fast_as_possible = false;
  bool roce = false;
  uint32_t wire_mtu = 1500;
  uint32_t wire_dscp = 0;
  std::string wire_ecn = "not-ect";
  std::string address_plan;
  double drop_rate = 0;
  double reorder_rate = 0;
  double duplicate_rate = 0;
  uint64_t fault_seed = 1;
  std::string pcap;
  std::vector<std::string> eal_args;  // after `--`
  // --agents: a multi-host lab run (host/lab/README.md)
  std::string agents;
  std::string metrics;
  // --fabric socket
  uint16_t socket_base_port = 0;
  uint32_t socket_stall_timeout_ms = 10'000;
  std::vector<std::string> given;  // the options on the command line (check_options)
};

// Options given for a fabric that does not use them, or together with one they contradict: an error
// naming both, never silently ignored. Without --agents (a lab run takes its wire from the lab file).
void check_options(const RunArgs& a) {
  const auto given = [&](std::string_view name) {
    return std::find(a.given.begin(), a.given.end(), name) != a.given.end();
  };
  if (given("--dilation") && given("--as-fast-as-possible")) {
    throw std::invalid_argument("--as-fast-as-possible is --dilation 0: give one of them, not both");
  }
  if (given("--dilation")) emu::dilation_q16(a.dilation);  // too small for the clocks: refused before any set-up
  if (given("--dpdk-port") && given("--dpdk-devargs")) {
    throw std::invalid_argument(
        "--dpdk-port picks fabemu's own in-process devices, --dpdk-devargs devices of yours: give one of them, not both");
  }
  for (const char* device : {"--dpdk-ring-delay", "--dpdk-ring-rate", "--dpdk-ring-ecn"}) {
    if (given(device) && (a.dpdk_port != "ring" || given("--dpdk-devargs"))) {
      throw std::invalid_argument(fmt::format(
          "{} sets a device inside fabemu's in-process ring pair (--dpdk-port ring, the default): it does not apply "
          "to {}",
          device, given("--dpdk-devargs") ? "--dpdk-devargs" : "--dpdk-port memif"));
    }
  }
  if (given("--dpdk-ring-ecn") && a.dpdk_ring_ecn_bytes > 0 && a.dpdk_ring_rate_gbps <= 0) {
    throw std::invalid_argument("--dpdk-ring-ecn marks frames by the queue that builds behind the device's rate: give "
                                "--dpdk-ring-rate too");
  }
  struct Rule {
    const char* option;
    std::initializer_list<std::string_view> fabrics;
  };
  const auto check = [&](std::span<const Rule> rules) {
    for (const Rule& r : rules) {
      if (!given(r.option) || std::find(r.fabrics.begin(), r.fabrics.end(), a.fabric) != r.fabrics.end()) continue;
      std::string which;
      for (const std::string_view f : r.fabrics) which += (which.empty() ? "--fabric " : " or --fabric ") + std::string(f);
      throw std::invalid_argument(fmt::format("{} needs {}; this run is on --fabric {}, which does not use it",
                                              r.option, which, a.fabric));
    }
  };
  static const Rule fpga[] = {{"--device", {"fpga"}}, {"--xclbin", {"fpga"}}};
  check(fpga);
  static const Rule wire[] = {
      {"--dpdk-port", {"dpdk"}},          {"--dpdk-devargs", {"dpdk"}},          {"--dpdk-rx-lcore", {"dpdk"}},
      {"--dpdk-ring-delay", {"dpdk"}},   {"--dpdk-ring-rate", {"dpdk"}},       {"--dpdk-ring-ecn", {"dpdk"}},
      {"--wire-dscp", {"dpdk", "socket"}}, {"--wire-ecn", {"dpdk", "socket"}},
      {"--dpdk-verify-checksums", {"dpdk"}}, {"--dpdk-stall-timeout", {"dpdk"}}, {"--dpdk-rto", {"dpdk"}},
      {"--dpdk-ahead", {"dpdk"}},
      {"--dpdk-nack-delay", {"dpdk"}},    {"--dpdk-window", {"dpdk"}},           {"--roce", {"dpdk"}},
      {"--wire-mtu", {"dpdk"}},           {"--address-plan", {"dpdk"}},          {"--pcap", {"dpdk"}},
      {"--drop-rate", {"dpdk", "socket"}}, {"--reorder-rate", {"dpdk", "socket"}},
      {"--duplicate-rate", {"dpdk", "socket"}}, {"--fault-seed", {"dpdk", "socket"}},
      {"--dilation", {"dpdk", "socket"}}, {"--as-fast-as-possible", {"dpdk", "socket"}},
      {"--socket-base-port", {"socket"}}, {"--socket-stall-timeout", {"socket"}},
  };
  if (a.agents.empty()) {
    check(wire);
    return;
  }
  // A lab run takes its wire from the lab file and its pacing from these; every other option of the table
  // above has no effect there (and so does any added to it later): an error, naming what does it instead.
  static const std::string_view lab_takes[] = {"--dilation", "--as-fast-as-possible", "--socket-stall-timeout"};
  static const std::pair<std::string_view, const char*> instead[] = {
      {"--roce", "the lab file's \"wire: roce\" chooses RoCEv2 frames"},
      {"--wire-dscp", "the lab file's \"dscp\" sets the frames' DSCP"},
      {"--wire-ecn", "the lab file's \"ecn\" sets the frames' ECN codepoint"},
      {"--socket-base-port", "the lab file's \"data\" addresses set the agents' ports"},
      {"--dpdk-port", "each agent's --dpdk-device is its port"},
      {"--dpdk-devargs", "each agent's --dpdk-device is its port"},
  };
  for (const Rule& r : wire) {
    if (!given(r.option) || std::find(std::begin(lab_takes), std::end(lab_takes), r.option) != std::end(lab_takes)) {
      continue;
    }
    for (const auto& [option, text] : instead) {
      if (option == r.option) {
        throw std::invalid_argument(fmt::format("{} does not apply to a lab run (--agents): {}", r.option, text));
      }
    }
    throw std::invalid_argument(fmt::format(
        "{} does not apply to a lab run (--agents), whose agents' socket fabric does not take it; a lab run "
        "takes --dilation, --as-fast-as-possible and --socket-stall-timeout",
        r.option));
  }
}

#ifdef FABEMU_HAVE_DPDK
// Stops EAL when the run is over (after the fabric and the ports, which are destroyed first).
struct EalSession {
  bool started = false;
  ~EalSession() {
    if (started) host::dpdk::Eal::shutdown();
  }
};
#endif

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

// --dpdk-rx-lcore's id form: 1 to 4 decimal digits (EAL's lcore ids are far below 10,000); nullopt else.
std::optional<unsigned> lcore_id(std::string_view v) {
  if (v.empty() || v.size() > 4 || v.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  unsigned id = 0;
  for (const char c : v) id = id * 10 + static_cast<unsigned>(c - '0');
  return id;
}

// --dpdk-rx-lcore's list form: two or more lcore ids separated by commas; nullopt for anything else.
std::optional<std::vector<unsigned>> lcore_list(const std::string& v) {
  std::vector<unsigned> ids;
  std::stringstream list(v);
  for (std::string id; std::getline(list, id, ',');) {
    const auto one = lcore_id(id);
    if (!one) return std::nullopt;
    ids.push_back(*one);
  }
  if (ids.size() < 2 || v.back() == ',') return std::nullopt;
  return ids;
}

// A run that stopped early (a signal, a stalled wire) did not deadlock: `headline`, then what was still
// running, become warnings (each prefixed "interrupted" or "stopped"), and nothing is left stuck; the
// report's status says which.
void stopped_early(emu::RunResult& result, std::string headline, emu::RunStatus status) {
  result.status = status;
  const std::string_view prefix = status == emu::RunStatus::kInterrupted ? "interrupted" : "stopped";
  result.warnings.push_back(std::move(headline));
  for (auto& s : result.stuck) result.warnings.push_back(fmt::format("{}: {}", prefix, s));
  result.stuck.clear();
}

std::string describe_network(const emu::NetworkConfig& net) {
  if (net.fat_tree) {
    const auto& f = *net.fat_tree;
    return fmt::format("FatTree({} leaves x {} hosts, {} spines, {:g}:1 oversubscribed) hosts {:g} Gb/s {}, spines {:g} "
                       "Gb/s {}",
                       f.leaves, f.hosts_per_leaf, f.spines, f.oversubscription(), f.host_gbps,
                       describe_latency(f.host_link_latency), f.spine_gbps, describe_latency(f.spine_link_latency));
  }
  std::string out;
  for (const auto& d : net.dims) {
    if (!out.empty()) out += " x ";
    const bool gbit = d.bandwidth_unit == emu::NetworkDim::BandwidthUnit::kGbps;
    // ASTRA-sim's "GB/s" is 2^30 bytes/s: GiB/s in fabemu's units (README, Units).
    out += fmt::format("{}({}) {:g} {} {}", dim_name(d.topology), d.npus, d.bandwidth_gbps, gbit ? "Gb/s" : "GiB/s",
                       describe_latency(d.latency));
  }
  return out;
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

// ASTRA-sim needs a system.json; without one fabemu uses ring everywhere (and otherwise the defaults
// of SystemConfig), so a network file alone is enough to run.
void default_algorithms(emu::SystemConfig& s, size_t dims) {
  for (auto* list : {&s.all_reduce, &s.all_gather, &s.reduce_scatter, &s.all_to_all}) {
    if (list->empty()) list->assign(dims, emu::CollectiveImpl{});
  }
}

// `--agents lab.yaml`: the agents replay the workload (each the whole model, its own ranks on the wire);
// this process coordinates and writes the same report and timeline a single-host run writes.
int run_on_agents(const RunArgs& a, const emu::NetworkConfig& network, const std::vector<std::string>& paths,
                  const emu::WalkerOptions& opt, uint32_t mtu, emu::ChromeTimeline* timeline, OutputFile* report) {
  // Logs go to stderr: stdout carries the summary.
  spdlog::set_default_logger(spdlog::stderr_color_mt("fabemu-lab"));
  lab::LabRunRequest request;
  request.lab = lab::load_lab_config(a.agents);
  lab::validate_ranks(request.lab, static_cast<uint32_t>(paths.size()));
  request.trace_paths = paths;
  lab::CoordinatorOptions options;
  options.token = lab::read_token_file(request.lab.token_file);
  if (!a.metrics.empty()) options.metrics = lab::parse_endpoint(a.metrics);
  options.handle_signals = true;
  auto& spec = request.spec;
  const auto ship = [&spec](const char* role, const std::string& path) {
    if (path.empty()) return;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in) throw std::runtime_error(fmt::format("{}: cannot read", path));
    auto* f = spec.add_files();
    f->set_role(role);
    f->set_name(path);
    f->set_content(ss.str());
  };
  ship("fabric", a.fabric_config);
  ship("network", a.fabric_config.empty() ? a.network : "");
  ship("system", a.fabric_config.empty() ? a.system : "");
  ship("comm_groups", a.comm_groups);
  spec.set_model("packet");
  spec.set_mtu(mtu);
  spec.set_comm_streams(a.comm_streams);
  spec.set_compute_model(a.compute_model);
  spec.set_peak_tflops(a.peak_tflops);
  spec.set_mem_bw_gbps(a.mem_bw_gbps);
  for (const double f : opt.compute_scale) spec.add_compute_scale(f);
  spec.set_closed_form(opt.closed_form);
  spec.set_strict(opt.strict);
  spec.set_timeline(timeline != nullptr);
  spec.set_timeline_messages(a.timeline_messages);
  spec.set_dilation(a.as_fast_as_possible ? 0.0 : a.dilation);
  spec.set_stall_timeout_ms(a.socket_stall_timeout_ms);

  const lab::LabRunOutcome outcome = lab::run_lab(request, options);
  if (!outcome.fatal.empty()) {
    throw std::runtime_error(fmt::format("lab run (agents from {}): {}", a.agents, outcome.fatal));
  }
  lab::MergedLabRun merged = lab::merge_lab_run(outcome);
  emu::RunResult& result = merged.result;
  if (timeline != nullptr) {
    lab::replay_timeline(outcome, *timeline);
    timeline->finish();
  }
  if (outcome.interrupted) {
    stopped_early(result, "lab run interrupted (SIGINT/SIGTERM): the agents were stopped", emu::RunStatus::kInterrupted);
  } else if (!merged.lost_ranks.empty()) {
    result.status = emu::RunStatus::kIncomplete;
  } else if (!merged.stalled.empty()) {
    result.status = emu::RunStatus::kStalled;
  }
  result.workload = a.workload;
  result.fabric = "lab:" + request.lab.fabric;
  result.model = fmt::format("packet (mtu {})", mtu == 0 ? std::string("whole messages") : std::to_string(mtu));
  result.topology = describe_network(network);
  if (report != nullptr) report->commit(emu::report_to_json(result));
  if (!a.quiet) std::cout << emu::format_summary(result, a.top) << "\n" << merged.text;
  if (!merged.lost_ranks.empty()) {
    fmt::print(stderr, "fabemu: lab run incomplete: rank(s) {} lost; the report holds the rest\n",
               lab::format_ranks(merged.lost_ranks));
    for (const auto& ag : outcome.agents) {
      if (ag.lost) fmt::print(stderr, "  agent {} ({}): {}\n", ag.name, ag.control, ag.lost_reason);
    }
    return kExitFindings;
  }
  if (outcome.interrupted) {
    fmt::print(stderr, "fabemu: interrupted (SIGINT/SIGTERM): the report holds the run up to that point\n");
    return kExitFindings;
  }
  if (!merged.stalled.empty()) {
    fmt::print(stderr, "fabemu: error: lab run: the wire stalled on {} agent(s); the report holds the run up to that "
                       "point\n", merged.stalled.size());
    for (const auto& s : merged.stalled) fmt::print(stderr, "  {}\n", s);
    return kExitError;
  }
  if (!result.stuck.empty()) {
    fmt::print(stderr, "fabemu: the workload deadlocked; {} thing(s) wait forever:\n", result.stuck.size());
    for (const auto& s : result.stuck) fmt::print(stderr, "  {}\n", s);
    return kExitFindings;
  }
  return kExitOk;
}

int run(const RunArgs& a) {
  check_options(a);
  // Output paths are checked before the run: a long run is not lost to a report that cannot be written.
  std::unique_ptr<OutputFile> report;
  if (!a.report.empty()) report = std::make_unique<OutputFile>(a.report, "--report");
  emu::NetworkConfig network;
  emu::SystemConfig system;
  std::string model = a.model;
  uint32_t mtu = a.mtu;
  if (!a.fabric_config.empty()) {
    host::FabricFile f = host::load_fabric_yaml(a.fabric_config);
    network = std::move(f.network);
    system = std::move(f.system);
    if (model.empty()) model = f.model;
    if (mtu == 0) mtu = f.mtu;
  } else {
    network = host::load_network_yml(a.network);
    if (!a.system.empty()) {
      system = host::load_system_json(a.system, network.dims.size());
    } else {
      default_algorithms(system, network.dims.size());
    }
  }
  if (!a.metrics.empty() && a.agents.empty()) throw std::invalid_argument("--metrics needs --agents");
  if (!a.agents.empty()) {
    // The agents replay the packet model (FIFO links), as the DPDK fabric does.
    if (a.fabric != "software") throw std::invalid_argument("--agents: the lab file's \"fabric\" chooses the fabric, not --fabric");
    if (!a.model.empty() && a.model != "packet") {
      throw std::invalid_argument("--agents runs the packet model (FIFO links); --model analytical does not apply");
    }
    model = "packet";
  }
  if (a.fabric == "dpdk" || a.fabric == "fpga" || a.fabric == "socket") {
    // The DPDK and socket fabrics delivers at the times of the packet model, the FPGA kernel computes them: FIFO links
    // either way, no analytical mode.
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
  const bool mtu_given = std::find(a.given.begin(), a.given.end(), "--mtu") != a.given.end();
  std::vector<std::string> option_warnings;
  if (model == "analytical" && mtu_given) {
    throw std::invalid_argument("--mtu sets the packet model's packet size; the analytical model sends whole messages: "
                                "add --model packet, or leave --mtu out");
  }
  if (model == "analytical" && mtu != 0 && !a.fabric_config.empty()) {
    option_warnings.push_back(fmt::format("{}: mtu {} is not used: the analytical model sends whole messages "
                                          "(--model packet uses it)",
                                          a.fabric_config, mtu));
  }
  if (model == "packet" && a.no_closed_form) {
    throw std::invalid_argument("--no-closed-form turns off the analytical model's closed form; the packet model has "
                                "none: leave it out, or add --model analytical");
  }

  const auto files = traces::find_rank_files(a.workload);
  std::vector<std::string> paths;
  for (const auto& f : files) paths.push_back(f.path);
  traces::ProcessGroups groups(static_cast<int64_t>(paths.size()));
  if (!a.comm_groups.empty()) groups.load_file(a.comm_groups);

  emu::WalkerOptions opt;
  opt.system = system;
  opt.comm_streams = a.comm_streams;
  if (a.compute_model == "duration") {
    opt.compute_model = emu::ComputeModel::kDuration;
  } else if (a.compute_model == "roofline") {
    opt.compute_model = emu::ComputeModel::kRoofline;
  } else if (a.compute_model != "auto") {
    throw std::invalid_argument(fmt::format("--compute-model {}: expected auto, duration or roofline", a.compute_model));
  }
  opt.peak_tflops = a.peak_tflops;
  opt.mem_bw_gbps = a.mem_bw_gbps;
  opt.compute_scale = parse_compute_scale(a.compute_scale, paths.size());
  opt.closed_form = !a.no_closed_form;
  opt.strict = a.strict;
  std::unique_ptr<emu::ChromeTimeline> timeline;
  if (!a.timeline.empty()) {
    timeline = std::make_unique<emu::ChromeTimeline>(a.timeline);
    opt.timeline = timeline.get();
    opt.timeline_message_limit = a.timeline_messages;
  }

  if (!a.agents.empty()) return run_on_agents(a, network, paths, opt, mtu, timeline.get(), report.get());

  emu::Engine engine(1 << 16);
  emu::Topology topology(network);
#ifdef FABEMU_HAVE_DPDK
  EalSession eal_session;
  std::unique_ptr<host::dpdk::DpdkPorts> dpdk_ports;
  std::string memif_socket;
#endif
  std::unique_ptr<emu::Fabric> fabric;
  const emu::PacketFabric* packet = nullptr;
#ifdef FABEMU_HAVE_DPDK
  host::dpdk::DpdkFabric* dpdk = nullptr;
#endif
  host::fpga::FpgaFabric* fpga = nullptr;
  lab::SocketFabric* socket = nullptr;
  std::optional<StopSignals> stop_signals;
  if (a.fabric == "fpga") {
    auto f = host::fpga::make_fpga_fabric(engine, topology, mtu, a.device.empty() ? "hwemu" : a.device, a.xclbin);
    fpga = f.get();
    fabric = std::move(f);
  } else if (a.fabric == "dpdk") {
#ifdef FABEMU_HAVE_DPDK
    namespace hd = host::dpdk;
    hd::Eal::start(a.eal_args.empty() ? hd::Eal::no_huge_args() : a.eal_args);
    eal_session.started = true;
    // --dpdk-rx-lcore: auto, off, all, an lcore id, or a list of them (several receive lcores, a queue each).
    std::vector<unsigned> rx_lcores = lcore_list(a.dpdk_rx_lcore).value_or(std::vector<unsigned>{});
    if (a.dpdk_rx_lcore == "all" && a.dpdk_devargs.size() != 1) {
      // Every worker lcore EAL has; one of them is `auto`'s choice, none leaves the receive side on the main
      // lcore (as auto; so does one device looping frames back).
      rx_lcores = hd::Eal::idle_worker_lcores();
      if (rx_lcores.size() < 2) rx_lcores.clear();
    }
    const auto queues = static_cast<uint16_t>(std::max<size_t>(1, rx_lcores.size()));
    hd::PortConfig cfg;
    cfg.rx_queues = cfg.tx_queues = queues;
    // Sized from the workload: its rank count sets what the fabric holds outside the device rings.
    // (one mempool cache per lcore that touches the pools: the main one and the receive side's).
    cfg.mbufs = cfg.mbufs_for(hd::DpdkFabric::frames_in_flight(static_cast<uint32_t>(topology.npus()), queues), 32,
                              std::min(queues + 1u, rte_lcore_count()));
    cfg.mtu = static_cast<uint16_t>(std::min<uint32_t>(a.wire_mtu, 65535));
    if (a.wire_mtu > 1500) cfg.data_room = hd::PortConfig::data_room_for_mtu(a.wire_mtu);
    if (!a.dpdk_devargs.empty()) {
      if (a.dpdk_devargs.size() > 2) throw std::invalid_argument("--dpdk-devargs: at most two devices (A, then B)");
      dpdk_ports = std::make_unique<hd::DpdkPorts>(
          hd::DpdkPorts::devargs(a.dpdk_devargs[0], a.dpdk_devargs.size() > 1 ? a.dpdk_devargs[1] : "", cfg));
    } else if (a.dpdk_port == "memif") {
      memif_socket = (std::filesystem::temp_directory_path() / fmt::format("fabemu-memif-{}.sock", ::getpid())).string();
      dpdk_ports = std::make_unique<hd::DpdkPorts>(hd::DpdkPorts::memif(memif_socket, cfg));
    } else {
      hd::RingDevice device;
      device.delay_ns = static_cast<uint64_t>(std::llround(a.dpdk_ring_delay_us * 1000.0));
      device.bytes_per_sec = static_cast<uint64_t>(std::llround(a.dpdk_ring_rate_gbps * 1e9 / 8));
      device.ecn_bytes = a.dpdk_ring_ecn_bytes;
      if (device.any()) cfg.mbufs += hd::DpdkPorts::kRingDelayFrames;  // the frames the device holds
      dpdk_ports = std::make_unique<hd::DpdkPorts>(hd::DpdkPorts::ring("run", cfg, queues, device));
    }
    hd::DpdkFabricOptions o;
    o.model_mtu = mtu == 0 ? ~uint32_t{0} : mtu;
    o.mode = a.roce ? hd::WireMode::kRoceV2 : hd::WireMode::kFabemu;
    o.wire_mtu = a.wire_mtu;
    o.dscp = static_cast<uint8_t>(a.wire_dscp);
    o.ecn = hd::sender_ecn(a.wire_ecn).value_or(hd::Ecn::kNotEct);  // CLI::IsMember took only those three
    o.dilation = a.as_fast_as_possible ? 0.0 : a.dilation;
    o.faults.drop_rate = a.drop_rate;
    o.faults.reorder_rate = a.reorder_rate;
    o.faults.duplicate_rate = a.duplicate_rate;
    o.faults.seed = a.fault_seed;
    o.pcap = a.pcap;
    if (!rx_lcores.empty()) {
      o.rx_lcores = rx_lcores;
    } else if (a.dpdk_rx_lcore == "off") {
      o.rx_lcore = hd::DpdkFabricOptions::kRxLcoreOff;
    } else if (a.dpdk_rx_lcore != "auto" && a.dpdk_rx_lcore != "all") {
      o.rx_lcore = static_cast<int>(lcore_id(a.dpdk_rx_lcore).value());  // checked by the option's validator
    }
    if (a.dpdk_verify_checksums == "on") o.checksums = hd::DpdkFabricOptions::Checksums::kOn;
    o.stall_timeout = emu::Duration::from_ms(a.dpdk_stall_timeout_ms);
    o.ahead = emu::Duration::from_us(a.dpdk_ahead_us);
    if (a.dpdk_rto_us <= a.dpdk_nack_delay_us) {
      throw std::invalid_argument(fmt::format(
          "--dpdk-rto {} us must exceed --dpdk-nack-delay {} us: a packet would time out before its NACK could come",
          a.dpdk_rto_us, a.dpdk_nack_delay_us));
    }
    o.rto = emu::Duration::from_us(a.dpdk_rto_us);
    o.nack_delay = emu::Duration::from_us(a.dpdk_nack_delay_us);
    o.window = a.dpdk_window;
    auto plan = a.address_plan.empty() ? hd::AddressPlan::make_default(static_cast<uint32_t>(topology.npus()))
                                       : hd::AddressPlan::load_yaml(a.address_plan);
    if (plan.size() < static_cast<uint32_t>(topology.npus())) {
      throw std::invalid_argument(fmt::format("{}: the address plan has ranks 0 to {}, the topology {} NPUs: every NPU "
                                              "needs an address (ranks beyond the topology's are not used)",
                                              a.address_plan, plan.size() - 1, topology.npus()));
    }
    auto f = std::make_unique<hd::DpdkFabric>(topology, std::move(plan), *dpdk_ports, o);
    dpdk = f.get();
    packet = &f->model();
    fabric = std::move(f);
#else
    throw std::invalid_argument("--fabric dpdk: this fabemu was built without DPDK");
#endif
  } else if (a.fabric == "socket") {
    // Every rank local, one UDP socket each on 127.0.0.1 (--socket-base-port P: P + rank; 0: any free port).
    const auto npus = static_cast<uint32_t>(topology.npus());
    if (a.socket_base_port != 0 && uint32_t{a.socket_base_port} + npus - 1 > 65535) {
      throw std::invalid_argument(fmt::format("--socket-base-port {}: {} ranks do not fit below port 65536",
                                              a.socket_base_port, npus));
    }
    std::vector<boost::asio::ip::udp::endpoint> eps;
    for (uint32_t r = 0; r < npus; ++r) {
      eps.emplace_back(boost::asio::ip::make_address("127.0.0.1"),
                       static_cast<uint16_t>(a.socket_base_port == 0 ? 0 : a.socket_base_port + r));
    }
    lab::SocketFabricOptions o;
    o.model_mtu = mtu == 0 ? ~uint32_t{0} : mtu;
    o.dilation = a.as_fast_as_possible ? 0.0 : a.dilation;
    o.faults.drop_rate = a.drop_rate;
    o.faults.reorder_rate = a.reorder_rate;
    o.faults.duplicate_rate = a.duplicate_rate;
    o.faults.seed = a.fault_seed;
    o.stall_timeout = emu::Duration::from_ms(a.socket_stall_timeout_ms);
    o.dscp = static_cast<uint8_t>(a.wire_dscp);
    o.ecn = host::dpdk::sender_ecn(a.wire_ecn).value_or(host::dpdk::Ecn::kNotEct);
    stop_signals.emplace();
    o.stop_requested = [] { return StopSignals::requested(); };
    auto f = std::make_unique<lab::SocketFabric>(topology, std::move(eps), std::vector<bool>(npus, true), o);
    socket = f.get();
    packet = &f->model();
    fabric = std::move(f);
  } else if (model == "packet") {
    auto p = std::make_unique<emu::PacketFabric>(engine, topology, mtu == 0 ? ~uint32_t{0} : mtu);
    packet = p.get();
    fabric = std::move(p);
  } else {
    fabric = std::make_unique<emu::AnalyticalFabric>(engine, topology);
  }
  emu::Walker walker(*fabric, network, paths, groups, opt);
  emu::RunResult result = walker.run();
  result.warnings.insert(result.warnings.begin(), option_warnings.begin(), option_warnings.end());
  if (timeline) timeline->finish();
#ifdef FABEMU_HAVE_DPDK
  std::string dpdk_section;
  bool interrupted = false;
  if (dpdk != nullptr) {
    interrupted = dpdk->interrupted();
    if (interrupted) {
      stopped_early(result,
                    fmt::format("run interrupted (SIGINT/SIGTERM) at {} ps of emulated time", dpdk->engine().now().ps()),
                    emu::RunStatus::kInterrupted);
    } else if (dpdk->stalled()) {  // a dead device: the report shows how far the run got
      stopped_early(result,
                    fmt::format("run stopped at {} ps of emulated time: the wire stalled", dpdk->engine().now().ps()),
                    emu::RunStatus::kStalled);
    }
    // After a stall the reason above says why messages were not acknowledged: no second warning.
    if (!dpdk->drain() && !dpdk->stalled()) {
      result.warnings.push_back("DPDK fabric: some messages were not acknowledged at the end");
    }
    const host::dpdk::DpdkStats& st = dpdk->stats();
    if (!st.pcap_error.empty()) result.warnings.push_back("DPDK fabric: the --pcap capture failed: " + st.pcap_error);
    if (a.dpdk_rx_lcore == "all" && st.rx_lcore < 0) {
      result.warnings.push_back(
          "DPDK fabric: --dpdk-rx-lcore all found no worker lcore of EAL's (or one device looping frames back): the "
          "main lcore polled everything; give EAL more lcores, e.g. -- -l 0-2");
    }
    if (st.settings.ring_device.any() && host::dpdk::Eal::every_cpu_has_an_lcore()) {
      result.warnings.push_back(
          "DPDK fabric: every CPU has an lcore, so the thread of the ring pair's device (--dpdk-ring-delay, "
          "--dpdk-ring-rate) shared a CPU with a polling lcore and may have held frames longer than the device "
          "says (a scheduler time slice, milliseconds): leave a CPU without an lcore for it");
    }
    dpdk_section = host::dpdk::format_dpdk_stats(st) + "  ports               " + dpdk_ports->describe() + "\n";
    const std::string mvm = host::dpdk::format_measured_vs_modelled(st, result, a.top);
    if (!mvm.empty()) dpdk_section += "\n" + mvm;
    result.sections.emplace_back("dpdk", host::dpdk::dpdk_stats_to_json(st));
  }
#endif
  std::string socket_section;
  bool socket_interrupted = false;
  if (socket != nullptr) {
    socket_interrupted = socket->interrupted();
    if (socket_interrupted) {
      stopped_early(result,
                    fmt::format("run interrupted (SIGINT/SIGTERM) at {} ps of emulated time", socket->engine().now().ps()),
                    emu::RunStatus::kInterrupted);
    } else if (socket->stalled()) {  // a dead peer: the report shows how far the run got
      stopped_early(result,
                    fmt::format("run stopped at {} ps of emulated time: the wire stalled", socket->engine().now().ps()),
                    emu::RunStatus::kStalled);
    }
    if (!socket->drain() && !socket->stalled()) {
      result.warnings.push_back("socket fabric: some messages were not acknowledged at the end");
    }
    const lab::SocketStats& st = socket->stats();
    socket_section = lab::format_socket_stats(st);
    result.sections.emplace_back("socket", lab::socket_stats_to_json(st));
  }
  result.workload = a.workload;
  result.fabric = a.fabric;
  result.model = model == "packet" ? fmt::format("packet (mtu {})", mtu == 0 ? std::string("whole messages")
                                                                             : std::to_string(mtu))
                                   : model;
  result.topology = describe_network(network);
  if (packet != nullptr || fpga != nullptr) {
    result.links = packet != nullptr ? emu::link_results(*packet, result.total) : emu::link_results(*fpga, result.total);
  }
  std::string fpga_section;
  if (fpga != nullptr) {
    fpga_section = fmt::format(
        "FPGA\n  device              {}\n  kernel runs         {} (conservative windows of the smallest link "
        "latency)\n  packet-hops         {} in {} kernel cycles\n",
        fpga->device().describe(), fpga->device_runs(), fpga->device_hops(), fpga->device_cycles());
    result.sections.emplace_back(
        "fpga", fmt::format("{{\"device\": \"{}\", \"runs\": {}, \"hops\": {}, \"cycles\": {}}}",
                            fpga->device().describe(), fpga->device_runs(), fpga->device_hops(),
                            fpga->device_cycles()));
  }
  if (report != nullptr) report->commit(emu::report_to_json(result));
  if (!a.quiet) std::cout << emu::format_summary(result, a.top);
  if (!a.quiet && !fpga_section.empty()) std::cout << "\n" << fpga_section;
  if (!a.quiet && !socket_section.empty()) std::cout << "\n" << socket_section;
  if (socket_interrupted) {
    fmt::print(stderr, "fabemu: interrupted (SIGINT/SIGTERM): the report holds the run up to that point\n");
    return kExitFindings;
  }
  if (socket != nullptr && socket->stalled()) {
    fmt::print(stderr, "fabemu: error: socket fabric: {}; the report holds the run up to that point\n",
               socket->stats().stall);
    return kExitError;
  }
#ifdef FABEMU_HAVE_DPDK
  if (!a.quiet && !dpdk_section.empty()) std::cout << "\n" << dpdk_section;
  if (!memif_socket.empty()) {
    std::error_code ec;
    std::filesystem::remove(memif_socket, ec);
  }
  if (interrupted) {
    fmt::print(stderr, "fabemu: interrupted (SIGINT/SIGTERM): the report holds the run up to that point\n");
    return kExitFindings;
  }
  if (dpdk != nullptr && dpdk->stalled()) {
    fmt::print(stderr, "fabemu: error: DPDK fabric: {}; the report holds the run up to that point\n",
               dpdk->stats().stall);
    return kExitError;
  }
  if (dpdk != nullptr && !dpdk->stats().pcap_error.empty()) {
    fmt::print(stderr, "fabemu: error: the --pcap capture failed: {}; the run went on and its summary and report are "
                       "whole, the capture is not\n",
               dpdk->stats().pcap_error);
    return kExitError;
  }
#endif
  if (!result.stuck.empty()) {
    fmt::print(stderr, "fabemu: the workload deadlocked; {} thing(s) wait forever:\n", result.stuck.size());
    for (const auto& s : result.stuck) fmt::print(stderr, "  {}\n", s);
    return kExitFindings;
  }
  return kExitOk;
}

}  // namespace

void add_run_command(CLI::App& app, int& status, const std::vector<std::string>& passthrough) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run_cmd = app.add_subcommand("run", "Replay a Chakra workload over a target fabric and report its time");
  run_cmd->add_option("--workload,-w", args->workload,
                      "Trace prefix (PREFIX.<rank>.et), a single .et file, or a folder holding one workload")
      ->required();
  auto* fc = run_cmd->add_option("--fabric-config,-f", args->fabric_config,
                                 "fabemu fabric file (YAML): topology, model, collectives, chunking");
  auto* net = run_cmd->add_option("--network,-n", args->network, "ASTRA-sim network.yml");
  run_cmd->add_option("--system,-s", args->system, "ASTRA-sim system.json (with --network)")->needs(net);
  fc->excludes(net);
  run_cmd->add_option("--fabric", args->fabric,
                      "Fabric backend: software (the model), dpdk (real frames, delivered at the packet model's "
                      "times; EAL arguments after --), socket (UDP datagrams between one loopback socket per rank, delivered at "
                      "the packet model's times) or fpga (the FPGA kernel computes every packet-hop of the "
                      "packet model: --device)")
      ->check(CLI::IsMember({"software", "dpdk", "socket", "fpga"}));
  run_cmd->add_option("--device", args->device,
                      "FPGA: the device computing the packet model's link times: hwemu (the RTL under Verilator, "
                      "default), model (the C++ cycle model) or xrt:N (board N, with --xclbin)");
  run_cmd->add_option("--xclbin", args->xclbin, "FPGA: the kernel's .xclbin for --device xrt:N (hw/sched/vitis)");
  run_cmd->add_option("--dpdk-port", args->dpdk_port,
                      "DPDK: ring (in-process ring pair, default) or memif (in-process memif server and client)")
      ->check(CLI::IsMember({"ring", "memif"}));
  run_cmd->add_option("--dpdk-ring-delay", args->dpdk_ring_delay_us,
                      "DPDK: with --dpdk-port ring, a device between the ring pair's ports that holds every data frame "
                      "this many microseconds (wall time): a stand-in device under test of known latency, to see how "
                      "the DPDK section and the measured vs modelled table report a device slower than the target. "
                      "A thread polls for it: it takes a CPU of its own")
      ->check(CLI::Range(0.0, 1'000'000.0));
  run_cmd->add_option("--dpdk-ring-rate", args->dpdk_ring_rate_gbps,
                      "DPDK: with --dpdk-port ring, the rate of that device in Gb/s (wall time; each frame's bytes "
                      "cross it behind the frames before it, then the --dpdk-ring-delay): a device slower than the "
                      "target's links. 0 (default): no rate")
      ->check(CLI::Range(0.0, 100'000.0));
  run_cmd->add_option("--dpdk-ring-ecn", args->dpdk_ring_ecn_bytes,
                      "DPDK: with --dpdk-ring-rate, that device marks ECN as a switch queue does: an ECN-capable frame "
                      "(--wire-ecn ect0 or ect1) that finds at least this many bytes queued ahead of it leaves marked "
                      "CE. 0 (default): never marks")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
  run_cmd->add_option("--dpdk-devargs", args->dpdk_devargs,
                      "DPDK: a device to use instead of --dpdk-port (rte_dev_probe devargs); once: A loops frames back, "
                      "twice: data A -> B, ACK/NACK B -> A. Traffic only to devices you own (198.18.0.0/15 addresses)");
  run_cmd->add_option("--dpdk-rx-lcore", args->dpdk_rx_lcore,
                      "DPDK: the lcore of the receive side (port B, reassembly, ACK/NACK): auto (default: the first "
                      "worker lcore of EAL's -l, when there are two ports), off (the main lcore), an id, a list "
                      "of ids (e.g. 1,2: a receive lcore on each, a queue of each port per lcore), or all (every "
                      "worker lcore of EAL's)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v == "auto" || v == "off" || v == "all" || lcore_id(v) || lcore_list(v)
                       ? std::string()
                       : "expected auto, off, all, an lcore id (0-9999) or a comma list of lcore ids, got " + v;
          },
          "auto|off|all|ID|ID,ID,..."));
  run_cmd->add_option("--dpdk-verify-checksums", args->dpdk_verify_checksums,
                      "DPDK: the receive side's checks of data frames' UDP checksums (and RoCEv2 ICRCs): auto (default: "
                      "checked, but on an in-process ring pair, which hands over the sender's own mbufs) or on")
      ->check(CLI::IsMember({"auto", "on"}));
  run_cmd->add_option("--dpdk-stall-timeout", args->dpdk_stall_timeout_ms,
                      "DPDK: stop the run (report written, exit status 2) when a message the model has delivered "
                      "waits this many ms of wall time with no progress: no message completed and no ACK came back "
                      "(default 10000)")
      ->check(CLI::Range(1u, 86'400'000u));
  run_cmd->add_option("--dpdk-ahead", args->dpdk_ahead_us,
                      "DPDK, with --dilation: us of wall time the fabric works ahead of the dilated clock (default "
                      "20): messages handed to their senders and frames built that long before they are due, held "
                      "until then, so a transmit round hands the device frames already built; 0: at the time")
      ->check(CLI::Range(0u, 1'000'000u));
  run_cmd->add_option("--dpdk-rto", args->dpdk_rto_us,
                      "DPDK: the senders' retransmission timeout in us of wall time, the floor of the adaptive RTO "
                      "(default 10000); raise it above the queueing of a device with deep buffers")
      ->check(CLI::Range(10u, 10'000'000u));
  run_cmd->add_option("--dpdk-nack-delay", args->dpdk_nack_delay_us,
                      "DPDK: us of wall time a message's hole (or an idle incomplete message) waits before the "
                      "receiver NACKs it (default 200); above the path's reordering, below --dpdk-rto")
      ->check(CLI::Range(1u, 10'000'000u));
  run_cmd->add_option("--dpdk-window", args->dpdk_window,
                      "DPDK: messages in flight per (sender, receiver) pair, a power of two (default 1024)")
      ->check(CLI::Range(1u, 65536u))
      ->check([](const std::string& v) {
        const unsigned long n = std::stoul(v);
        return (n & (n - 1)) == 0 ? std::string() : std::string("not a power of two");
      });
  run_cmd->add_option("--dilation", args->dilation,
                      "DPDK, socket and lab runs: run D times slower than the target fabric (default 1); 0 = as fast "
                      "as possible; otherwise at least 0.0077")
      ->type_name("D")
      ->check(CLI::Number)
      ->check(CLI::Range(0.0, 1e6));
  run_cmd->add_flag("--as-fast-as-possible", args->as_fast_as_possible,
                    "DPDK, socket and lab runs: do not follow the wall clock (the same as --dilation 0)");
  run_cmd->add_flag("--roce", args->roce, "DPDK: RoCEv2 frames (UDP 4791, BTH) instead of fabemu UDP frames");
  run_cmd->add_option("--wire-mtu", args->wire_mtu, "DPDK: IP MTU of the frames (default 1500)")
      ->check(CLI::Range(256u, 9000u));
  run_cmd->add_option("--wire-dscp", args->wire_dscp,
                      "DPDK and socket: the DSCP of every frame (0..63, default 0): the traffic class a switch queues "
                      "them in (e.g. 26, a common lossless class for RoCE)")
      ->check(CLI::Range(0u, 63u));
  run_cmd->add_option("--wire-ecn", args->wire_ecn,
                      "DPDK and socket: the ECN codepoint of every frame: not-ect (default), ect0 or ect1 (ECN-capable: "
                      "a switch that marks ECN marks them CE when its queue builds, and the report counts them)")
      ->check(CLI::IsMember({"not-ect", "ect0", "ect1"}));
  run_cmd->add_option("--address-plan", args->address_plan,
                      "DPDK: YAML rank -> MAC/IP/port plan (default: 198.18.0.1 + rank)");
  run_cmd->add_option("--drop-rate", args->drop_rate, "DPDK and socket: drop this fraction of data frames on receive")
      ->check(CLI::Range(0.0, 1.0));
  run_cmd->add_option("--reorder-rate", args->reorder_rate, "DPDK and socket: hold back this fraction of data frames on receive")
      ->check(CLI::Range(0.0, 1.0));
  run_cmd->add_option("--duplicate-rate", args->duplicate_rate, "DPDK and socket: duplicate this fraction of data frames on receive")
      ->check(CLI::Range(0.0, 1.0));
  run_cmd->add_option("--fault-seed", args->fault_seed, "DPDK and socket: seed of the fault injection (default 1)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            uint64_t seed = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
            return !v.empty() && v.front() != '-' && ec == std::errc{} && end == v.data() + v.size()
                       ? std::string()
                       : "expected a whole number from 0 to 18446744073709551615, got " + v;
          },
          "0..2^64-1"));
  run_cmd->add_option("--pcap", args->pcap, "DPDK: capture every frame sent to this pcap file");
  run_cmd->add_option("--socket-base-port", args->socket_base_port,
                      "socket: rank r receives on 127.0.0.1 UDP port P + r (default 0: a free port per rank)");
  run_cmd->add_option("--socket-stall-timeout", args->socket_stall_timeout_ms,
                      "socket (and --agents over socket/dpdk): stop the run (report written, exit status 2) when a "
                      "message the model has delivered waits this many ms of wall time with nothing arriving for it "
                      "(default 10000)")
      ->check(CLI::Range(1u, 86'400'000u));

  run_cmd->add_option("--model,-m", args->model, "analytical (congestion-unaware, default) or packet (FIFO links)")
      ->check(CLI::IsMember({"analytical", "packet"}));
  run_cmd->add_option("--mtu", args->mtu, "Packet model: bytes per packet (default: whole messages, as ASTRA-sim)")
      ->check(CLI::Range(1u, ~0u));
  run_cmd->add_option("--comm-group-configuration,--comm-groups", args->comm_groups,
                      "JSON file {\"<pg_name>\": [ranks...]} naming process groups");
  run_cmd->add_option("--comm-streams", args->comm_streams,
                      "Chunks in flight per rank and dimension, 1 to 65536 as the chunk keys (default: "
                      "active-chunks-per-dimension)")
      ->check(CLI::Range(host::config::kChunkRange.min, host::config::kChunkRange.max));
  run_cmd->add_option("--compute-model", args->compute_model, "auto | duration | roofline")
      ->check(CLI::IsMember({"auto", "duration", "roofline"}));
  // The same ranges as the files' peak-perf and local-mem-bw (host/config/README.md, Bounds): a rate outside
  // them is refused here, naming the option, not later by the rate arithmetic.
  run_cmd->add_option("--peak-tflops", args->peak_tflops,
                      "Roofline: device peak, 10^12 ops/s, 0.001 to 10^6 (default: peak-perf)")
      ->check(CLI::Range(host::config::kPeakTflopsRange.min, host::config::kPeakTflopsRange.max));
  run_cmd->add_option("--mem-bw-GBps,--mem-bw-gbps", args->mem_bw_gbps,
                      "Roofline and reductions: memory bandwidth in GB/s, 10^9 bytes/s, 0.001 to 10^6 (default: "
                      "local-mem-bw; --mem-bw-gbps is the older spelling)")
      ->check(CLI::Range(host::config::kMemBwRange.min, host::config::kMemBwRange.max));
  run_cmd->add_option("--compute-scale", args->compute_scale,
                      "RANK=FACTOR or all=FACTOR: multiply that rank's compute times (stragglers); repeatable")
      ->take_all();
  run_cmd->add_flag("--no-closed-form", args->no_closed_form,
                    "Analytical model: walk every collective message by message (same result, slower)");
  run_cmd->add_flag("--strict", args->strict, "Dependency problems in the traces are errors, not warnings");
  run_cmd->add_option("--report,-r", args->report, "Write the JSON report (docs/report.md) to this file");
  run_cmd->add_option("--timeline,-t", args->timeline, "Write a Chrome/Perfetto trace timeline to this file");
  run_cmd->add_option("--timeline-messages", args->timeline_messages,
                      "Timeline: message slices written at most (default 1000000; collectives are always there)");
  run_cmd->add_option("--top", args->top, "Slowest collectives listed in the summary (default 5)")->check(CLI::Range(0, 1000));
  run_cmd->add_flag("--quiet,-q", args->quiet, "Print nothing but errors (use with --report)");
  run_cmd->add_option("--agents", args->agents,
                      "Lab file (YAML): run on `fabemu agent`s on several hosts, this process coordinating "
                      "(host/lab/README.md); the packet model, --dilation paces it")
      ->type_name("LAB.yaml");
  run_cmd->add_option("--metrics", args->metrics,
                      "With --agents: serve the coordinator's Prometheus metrics (GET /metrics) here during the run")
      ->type_name("ADDR:PORT");
  run_cmd->footer("Arguments after `--` are EAL arguments (--fabric dpdk); without them: no hugepages, lcore 0.");
  run_cmd->callback([args, run_cmd, &status, &passthrough]() {
    if (args->fabric_config.empty() && args->network.empty()) {
      throw CLI::RequiredError("--fabric-config or --network");
    }
    for (const CLI::Option* o : run_cmd->get_options()) {
      if (o->count() > 0 && !o->get_lnames().empty()) args->given.push_back("--" + o->get_lnames().front());
    }
    args->eal_args = passthrough;
    if (!args->eal_args.empty() && args->fabric != "dpdk") {
      throw std::invalid_argument("arguments after -- are EAL arguments: they need --fabric dpdk");
    }
    status = run(*args);
  });
}

}  // namespace fabemu::cli
