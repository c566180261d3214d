#include "host/cli/trace_tools.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <memory>
#include <sstream>

#include "host/cli/commands.h"
#include "traces/anonymize.h"
#include "traces/astra_text.h"
#include "traces/attrs.h"
#include "traces/generate.h"
#include "traces/msccl_xml.h"
#include "traces/writer.h"
#include "traces/trace_set.h"

namespace fabemu::cli {
namespace {
namespace fs = std::filesystem;
using namespace fabemu::traces;

// "1,0,1" -> {true,false,true}; "true,false" accepted too.
std::vector<bool> parse_flags(const std::string& text) {
  std::vector<bool> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "1" || item == "true") {
      out.push_back(true);
    } else if (item == "0" || item == "false") {
      out.push_back(false);
    } else {
      throw CLI::ValidationError("--involved-dim", "expected a comma list of 1/0 (or true/false), got '" + item + "'");
    }
  }
  return out;
}

std::vector<int64_t> parse_ranks(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto dash = item.find('-');
    try {
      if (dash != std::string::npos && dash > 0) {
        const int64_t lo = std::stoll(item.substr(0, dash));
        const int64_t hi = std::stoll(item.substr(dash + 1));
        for (int64_t r = lo; r <= hi; ++r) out.push_back(r);
      } else {
        out.push_back(std::stoll(item));
      }
    } catch (const std::exception&) {
      throw CLI::ValidationError("--pg-ranks", "expected ranks like 0,1,2,3 or 0-3, got '" + item + "'");
    }
  }
  return out;
}

}  // namespace

int run_convert_astra_text(const std::string& input, const std::string& output_prefix, const AstraTextArgs& args) {
  if (args.ranks < 1) throw CLI::ValidationError("--ranks", "astra-text conversion needs --ranks N (N >= 1)");
  if (args.passes < 1) throw CLI::ValidationError("--passes", "must be at least 1");
  const auto paths = convert_astra_text(input, output_prefix, {.num_npus = args.ranks, .num_passes = args.passes});
  fmt::print("{} -> {}.<rank>.et: {} rank files\n", input, output_prefix, paths.size());
  return kExitOk;
}

int run_convert_msccl_xml(const std::string& input, const std::string& output_prefix, const std::string& bytes) {
  if (bytes.empty()) {
    throw CLI::ValidationError("--bytes", "msccl-xml conversion needs --bytes SIZE: the collective's comm_size (e.g. 1MiB)");
  }
  const uint64_t size = parse_size(bytes);
  const MscclAlgo algo = read_msccl_xml(input);
  const CustomGraphs graphs = msccl_to_graphs(algo, size);  // checked: every SEND has its RECV
  if (const fs::path dir = fs::path(output_prefix).parent_path(); !dir.empty()) fs::create_directories(dir);
  for (size_t g = 0; g < graphs.size(); ++g) {
    TraceWriter w(rank_file_path(output_prefix, static_cast<int64_t>(g)), msccl_metadata(algo));
    for (const Node& node : graphs[g].nodes) w.write(node);
    w.close();
  }
  fmt::print("{} -> {}.<rank>.et: {} rank files ({} of {} bytes)\n", input, output_prefix, graphs.size(), algo.coll, size);
  return kExitOk;
}

void add_trace_tool_commands(CLI::App& trace, int& status) {
  {  // generate collective
    auto* gen = trace.add_subcommand("generate", "Generate workloads");
    gen->require_subcommand(1);
    auto* cmd = gen->add_subcommand(
        "collective", "Microbenchmark traces: one collective per rank, laid out like ASTRA-sim's microbenchmarks");
    struct Args {
      std::string type;
      int64_t ranks = 0;
      std::string size;
      std::string involved_dim;
      std::string pg_ranks;
      std::string pg_name = "1";
      int64_t count = 1;
      std::string out;
      std::string out_dir = ".";
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--type", a->type,
                    "all_reduce, reduce, all_gather, gather, scatter, broadcast, all_to_all, reduce_scatter, "
                    "reduce_scatter_block or barrier")
        ->required();
    cmd->add_option("--ranks,-n", a->ranks, "Number of ranks (NPUs)")->required()->check(CLI::PositiveNumber);
    cmd->add_option("--size", a->size, "Bytes per rank (comm_size): 1048576, 1MB, 64KiB, ...")->required();
    cmd->add_option("--involved-dim", a->involved_dim, "Network dimensions used, e.g. 1,0 (default: all)");
    cmd->add_option("--pg-ranks", a->pg_ranks, "Run in a process group of these ranks, e.g. 0-3 or 0,2,4,6");
    cmd->add_option("--pg-name", a->pg_name, "Name of that process group (default \"1\")");
    cmd->add_option("--count", a->count, "Collectives per rank, chained one after another (default 1)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--out,-o", a->out,
                    "Output prefix (files PREFIX.<rank>.et); default OUT_DIR/<type>/<N>npus_<size>/<type>");
    cmd->add_option("--out-dir", a->out_dir, "Directory for the default ASTRA-sim layout (default .)");
    cmd->callback([a, &status] {
      CollectiveSpec spec;
      const auto type = collective_from_name(a->type);
      if (!type) throw CLI::ValidationError("--type", "unknown collective '" + a->type + "'");
      spec.type = *type;
      spec.ranks = a->ranks;
      try {
        spec.size_bytes = parse_size(a->size);
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--size", e.what());
      }
      if (!a->involved_dim.empty()) spec.involved_dim = parse_flags(a->involved_dim);
      if (!a->pg_ranks.empty()) spec.pg_ranks = parse_ranks(a->pg_ranks);
      spec.pg_name = a->pg_name;
      spec.count = a->count;
      const std::string prefix = a->out.empty() ? (fs::path(a->out_dir) / microbenchmark_prefix(spec)).string() : a->out;
      if (const auto dir = fs::path(prefix).parent_path(); !dir.empty()) fs::create_directories(dir);
      std::vector<std::string> paths;
      try {
        paths = generate_collective(spec, prefix);
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("generate collective", e.what());
      }
      fmt::print("wrote {} rank files: {}.<0..{}>.et ({} x {} of {} bytes per rank)\n", paths.size(), prefix,
                 paths.size() - 1, spec.count, collective_name(spec.type), spec.size_bytes);
      status = kExitOk;
    });
  }
  {  // anonymize
    auto* cmd = trace.add_subcommand(
        "anonymize", "Strip names, op schemas and tensor values; keep structure, types, sizes and timing");
    auto input = std::make_shared<std::string>();
    auto output = std::make_shared<std::string>();
    cmd->add_option("input", *input, "A .et file or a trace prefix")->required();
    cmd->add_option("output", *output,
                    "Output .et or .et.gz file (for one file), or output prefix (ending in .gz: gzip rank files)")
        ->required();
    cmd->callback([input, output, &status] {
      const auto files = find_rank_files(*input);
      const bool one_file = files.size() == 1 && fs::is_regular_file(*input);
      // An output prefix ending in .gz writes PREFIX.<rank>.et.gz (gzip), as a single output file's .gz does.
      const bool gzip = !one_file && output->size() > 3 && output->ends_with(".gz");
      const std::string prefix = gzip ? output->substr(0, output->size() - 3) : *output;
      AnonymizeStats total;
      for (const auto& f : files) {
        const std::string out = one_file ? *output : rank_file_path(prefix, f.rank, gzip);
        const AnonymizeStats s = anonymize_file(f.path, out);
        total.nodes += s.nodes;
        total.names_replaced += s.names_replaced;
        total.attrs_removed += s.attrs_removed;
        total.values_cleared += s.values_cleared;
      }
      fmt::print("anonymized {} file{}: {} nodes, {} names replaced, {} attributes removed, {} tensor value "
                 "lists cleared\n",
                 files.size(), files.size() == 1 ? "" : "s", total.nodes, total.names_replaced, total.attrs_removed,
                 total.values_cleared);
      status = kExitOk;
    });
  }
}

}  // namespace fabemu::cli
