// `fabemu trace analyze` (balance of collectives, traffic matrices, compute spread, longest chains: text,
// --json, --html) and `fabemu trace graph` (a window of one rank's dependency graph as DOT or SVG).
#include <fmt/core.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "host/analyze/analysis_output.h"
#include "host/analyze/graph_view.h"
#include "host/cli/commands.h"
#include "host/cli/trace_tools.h"
#include "host/config/run_config.h"
#include "host/run/output_file.h"
#include "traces/trace_set.h"

extern char** environ;

namespace fabemu::cli {
namespace {
namespace fs = std::filesystem;

struct AnalyzeArgs {
  std::string prefix;
  std::string comm_groups;
  std::string fabric_config, network, system;
  std::string html;
  bool json = false;
  size_t max_listed = 10;
};

int run_analyze(const AnalyzeArgs& a) {
  const auto files = traces::find_rank_files(a.prefix);
  analyze::AnalyzeOptions options;
  if (!a.comm_groups.empty()) options.comm_group_file = a.comm_groups;
  const analyze::TraceAnalysis analysis = analyze::analyze_workload(a.prefix, files, options);
  std::optional<analyze::ImpliedTraffic> implied;
  analyze::AnalysisInputs inputs;
  if (!a.fabric_config.empty() || !a.network.empty()) {
    const host::RunConfig config = host::load_run_config(a.fabric_config, a.network, a.system);
    implied = analyze::implied_traffic(analysis, config.network, config.system);
    inputs.implied = &*implied;
    inputs.network = a.fabric_config.empty() ? a.network : a.fabric_config;
  }
  if (!a.html.empty()) {
    const std::string page = analyze::analysis_html(analysis, inputs);
    run::write_via_temporary(a.html, [&](const std::string& temp) { traces::write_text(temp, page); });
  }
  if (a.json) {
    std::cout << analyze::analysis_json(analysis, inputs).dump(2) << '\n';
  } else {
    analyze::print_analysis(stdout, analysis, inputs, a.max_listed);
    if (!a.html.empty()) fmt::print("\nwrote {}\n", a.html);
  }
  return kExitOk;
}

// Runs graphviz's `dot -Tsvg` on `dot_file`, writing `svg_file`; a clear error naming `output` when dot is absent
// or fails.
void run_graphviz(const std::string& dot_file, const std::string& svg_file, const std::string& output) {
  const char* argv[] = {"dot", "-Tsvg", "-o", svg_file.c_str(), dot_file.c_str(), nullptr};
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, "dot", nullptr, nullptr, const_cast<char* const*>(argv), environ);
  if (err == ENOENT) {
    throw std::runtime_error(fmt::format("{}: an SVG needs graphviz's `dot`, which is not installed (Debian package "
                                         "graphviz; host/tools/install-deps.sh installs it), or write DOT: -o FILE.dot",
                                         output));
  }
  if (err != 0) throw std::runtime_error(fmt::format("cannot run graphviz's dot: {}", std::strerror(err)));
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    throw std::runtime_error(fmt::format("{}: graphviz's dot failed (exit status {})", output,
                                         WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1));
  }
}

struct GraphArgs {
  std::string prefix;
  int64_t rank = -1;
  std::string nodes;
  std::optional<uint64_t> around;
  uint32_t depth = 2;
  size_t max_nodes = 500;
  std::string out;
};

int run_graph(const GraphArgs& a) {
  const auto files = traces::find_rank_files(a.prefix);
  if (a.rank < 0 || a.rank >= static_cast<int64_t>(files.size())) {
    throw std::invalid_argument(fmt::format("--rank {}: workload {} has ranks 0..{}", a.rank, a.prefix,
                                            files.size() - 1));
  }
  const std::string& path = files[static_cast<size_t>(a.rank)].path;
  analyze::GraphWindow window{.around = a.around, .depth = a.depth, .max_nodes = a.max_nodes};
  if (!a.nodes.empty()) window.id_range = analyze::parse_id_range(a.nodes);
  const analyze::RankGraph graph = analyze::load_rank_graph(path, a.rank, true);
  const analyze::GraphDot g = analyze::graph_dot(graph, a.rank, path, window);
  if (a.out.empty() || a.out == "-") {
    std::cout << g.dot;
    return kExitOk;
  }
  if (a.out.ends_with(".svg")) {
    const std::string dot_file = a.out + ".dot.tmp";
    traces::write_text(dot_file, g.dot);
    try {
      run::write_via_temporary(a.out, [&](const std::string& temp) { run_graphviz(dot_file, temp, a.out); });
    } catch (...) {
      traces::remove_files({dot_file});
      throw;
    }
    traces::remove_files({dot_file});
  } else {
    run::write_via_temporary(a.out, [&](const std::string& temp) { traces::write_text(temp, g.dot); });
  }
  fmt::print("wrote {}: rank {}, {} nodes and {} edges of {} nodes ({} on the longest chain)\n", a.out, a.rank, g.nodes,
             g.edges, graph.nodes().size(), g.chain_nodes_drawn);
  return kExitOk;
}

}  // namespace

void add_trace_analyze_commands(CLI::App& trace, int& status) {
  {  // analyze
    auto* cmd = trace.add_subcommand(
        "analyze", "Balance of collectives across ranks, traffic matrices, compute spread, longest chains");
    auto a = std::make_shared<AnalyzeArgs>();
    cmd->add_option("prefix", a->prefix, "Trace prefix (files PREFIX.<rank>.et) or one .et file")->required();
    cmd->add_option("--comm-groups", a->comm_groups, "Process groups file {\"<pg_name>\": [ranks...]}")
        ->check(CLI::ExistingFile);
    auto* fc = cmd->add_option("--fabric-config,-f", a->fabric_config,
                               "fabemu fabric file: also the traffic matrix the collectives make under its algorithms");
    auto* net = cmd->add_option("--network,-n", a->network, "ASTRA-sim network.yml (as for fabemu run): the same");
    cmd->add_option("--system,-s", a->system, "ASTRA-sim system.json (with --network): the collective algorithms")
        ->needs(net);
    fc->excludes(net);
    cmd->add_flag("--json", a->json, "Print JSON instead of text");
    cmd->add_option("--html", a->html, "Also write a self-contained HTML page with charts to this file");
    cmd->add_option("--max-listed", a->max_listed, "Imbalanced collectives and busiest pairs listed (default 10)")
        ->check(CLI::Range(size_t{1}, size_t{1} << 20));
    cmd->callback([a, &status] { status = run_analyze(*a); });
  }
  {  // graph
    auto* cmd = trace.add_subcommand("graph", "A rank's dependency graph (or a window of it) as Graphviz DOT or SVG");
    auto a = std::make_shared<GraphArgs>();
    cmd->add_option("prefix", a->prefix, "Trace prefix (files PREFIX.<rank>.et) or one .et file")->required();
    cmd->add_option("--rank,-r", a->rank, "The rank whose graph to draw")->required();
    auto* nodes = cmd->add_option("--nodes", a->nodes, "Only nodes with ids A..B (inclusive)");
    auto* around = cmd->add_option("--around", a->around, "Only node ID and its neighbours up to --depth edges away");
    cmd->add_option("--depth", a->depth, "With --around: edges away, either way (default 2)")
        ->check(CLI::Range(0u, 1000u))
        ->needs(around);
    nodes->excludes(around);
    cmd->add_option("--max-nodes", a->max_nodes, "Largest picture, in nodes (default 500)")
        ->check(CLI::Range(size_t{1}, size_t{100000}));
    cmd->add_option("--out,-o", a->out, "Output: FILE.dot (DOT), FILE.svg (runs graphviz's dot); default DOT on stdout");
    cmd->callback([a, &status] { status = run_graph(*a); });
  }
}

}  // namespace fabemu::cli
