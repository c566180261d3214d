// `fabemu trace info | validate | convert`: look inside Chakra traces, check them, and turn them into
// a readable JSON form and back.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "host/cli/commands.h"
#include "host/run/output_file.h"
#include "host/cli/trace_tools.h"
#include "traces/attrs.h"
#include "traces/info.h"
#include "traces/json_form.h"
#include "traces/llm.h"
#include "traces/trace_set.h"
#include "traces/validate.h"

namespace fabemu::cli {
namespace {
namespace fs = std::filesystem;
using namespace fabemu::traces;

// "0-7" / "0, 2, 5" for a sorted list of ranks.
std::string rank_list(const std::vector<int64_t>& ranks) {
  if (ranks.empty()) return "none";
  bool contiguous = true;
  for (size_t i = 1; i < ranks.size(); ++i) contiguous = contiguous && ranks[i] == ranks[i - 1] + 1;
  if (contiguous && ranks.size() > 2) return fmt::format("{}-{}", ranks.front(), ranks.back());
  return fmt::format("{}", fmt::join(ranks, ", "));
}

std::string pg_label(const std::string& pg) { return pg.empty() ? "default" : "\"" + pg + "\""; }

nlohmann::json info_json(const WorkloadSummary& w) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : w.ranks) {
    nlohmann::json by_type = nlohmann::json::object();
    for (int t = 0; t < 8; ++t) {
      if (r.by_type[static_cast<size_t>(t)] != 0) {
        by_type[node_type_name(static_cast<NodeType>(t))] = r.by_type[static_cast<size_t>(t)];
      }
    }
    nlohmann::json colls = nlohmann::json::array();
    for (const auto& [key, count] : r.collectives) {
      colls.push_back({{"type", collective_name(key.first)}, {"comm_size", key.second}, {"count", count}});
    }
    ranks.push_back({{"rank", r.rank},
                     {"file", r.path},
                     {"gzip", r.gzip},
                     {"trace_bytes", r.trace_bytes},
                     {"version", r.version},
                     {"schema", r.schema},
                     {"nodes", r.nodes},
                     {"nodes_by_type", by_type},
                     {"data_deps", r.data_edges},
                     {"ctrl_deps", r.ctrl_edges},
                     {"max_data_deps_per_node", r.max_parents},
                     {"collectives", colls},
                     {"collective_bytes", r.collective_bytes},
                     {"untyped_collectives", r.untyped_collectives},
                     {"sends", r.sends},
                     {"send_bytes", r.send_bytes},
                     {"recvs", r.recvs},
                     {"recv_bytes", r.recv_bytes},
                     {"compute_micros", r.compute_micros},
                     {"cpu_ops", r.cpu_ops}});
  }
  nlohmann::json groups = nlohmann::json::array();
  groups.push_back({{"pg_name", ""}, {"ranks", w.groups.find("")->ranks}, {"source", "default (all ranks)"}});
  for (const auto& [name, pg] : w.groups.groups()) {
    if (name.empty()) continue;
    groups.push_back({{"pg_name", name}, {"ranks", pg.ranks}, {"source", to_string(pg.defined_at)}});
  }
  return {{"ranks", w.ranks.size()}, {"per_rank", ranks}, {"process_groups", groups}};
}

void print_info(const std::string& prefix, const WorkloadSummary& w) {
  uint64_t total_nodes = 0, total_bytes = 0;
  for (const auto& r : w.ranks) {
    total_nodes += r.nodes;
    total_bytes += r.trace_bytes;
  }
  const auto& first = w.ranks.front();
  fmt::print("Workload      {}\n", prefix);
  fmt::print("Ranks         {} ({}; {} nodes, {} bytes of trace{})\n", w.ranks.size(),
             w.ranks.size() == 1 ? first.path : "one file per rank", total_nodes, total_bytes,
             first.gzip ? ", gzip" : "");
  fmt::print("Schema        version \"{}\"{}\n", first.version,
             first.schema.empty() ? "" : fmt::format(", schema \"{}\"", first.schema));

  fmt::print("\nNodes by type (per rank: min / max; all ranks)\n");
  for (int t = 0; t < 8; ++t) {
    uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
    for (const auto& r : w.ranks) {
      const uint64_t v = r.by_type[static_cast<size_t>(t)];
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    if (sum == 0) continue;
    fmt::print("  {:<16} {:>10} / {:<10} {:>12}\n", node_type_name(static_cast<NodeType>(t)), lo, hi, sum);
  }
  uint64_t data = 0, ctrl = 0, max_parents = 0, compute_max = 0;
  for (const auto& r : w.ranks) {
    data += r.data_edges;
    ctrl += r.ctrl_edges;
    max_parents = std::max(max_parents, r.max_parents);
    compute_max = std::max(compute_max, r.compute_micros);
  }
  fmt::print("\nDependencies  {} data_deps, {} ctrl_deps (at most {} data_deps on one node)\n", data, ctrl,
             max_parents);
  fmt::print("Compute       {} us of COMP_NODE duration on the busiest rank\n", compute_max);

  // Collectives: identical on all ranks in the common case; show per-rank counts otherwise.
  std::map<std::pair<CollectiveType, uint64_t>, std::pair<uint64_t, uint64_t>> colls;  // -> (ranks, total)
  uint64_t untyped = 0;
  for (const auto& r : w.ranks) {
    untyped += r.untyped_collectives;
    for (const auto& [key, count] : r.collectives) {
      auto& c = colls[key];
      ++c.first;
      c.second += count;
    }
  }
  fmt::print("\nCollectives    type, comm_size (bytes per rank), how many in all and on how many ranks\n");
  if (colls.empty()) fmt::print("  none\n");
  for (const auto& [key, c] : colls) {
    fmt::print("  {:<20} {:>10}  {} in all, on {} rank{}\n", collective_name(key.first), format_bytes(key.second),
               c.second, c.first, c.first == 1 ? "" : "s");
  }
  if (untyped != 0) fmt::print("  {} CPU-side COMM_COLL_NODEs without comm_type (host records)\n", untyped);
  uint64_t sends = 0, send_bytes = 0, recvs = 0, recv_bytes = 0;
  for (const auto& r : w.ranks) {
    sends += r.sends;
    send_bytes += r.send_bytes;
    recvs += r.recvs;
    recv_bytes += r.recv_bytes;
  }
  if (sends + recvs != 0) {
    fmt::print("Point-to-point {} SEND ({} bytes), {} RECV ({} bytes)\n", sends, send_bytes, recvs, recv_bytes);
  }
  fmt::print("\nProcess groups\n");
  fmt::print("  {:<10} ranks {} (default group: all ranks)\n", "default", rank_list(w.groups.find("")->ranks));
  for (const auto& [name, pg] : w.groups.groups()) {
    if (name.empty()) continue;
    fmt::print("  {:<10} ranks {} (from {})\n", pg_label(name), rank_list(pg.ranks), to_string(pg.defined_at));
  }
  if (w.ranks.size() > 1 && w.ranks.size() <= 16) {
    fmt::print("\nPer rank\n  {:>4} {:>10} {:>6} {:>6} {:>6} {:>6} {:>12} {:>12}\n", "rank", "nodes", "COMP", "COLL",
               "SEND", "RECV", "data_deps", "compute_us");
    for (const auto& r : w.ranks) {
      fmt::print("  {:>4} {:>10} {:>6} {:>6} {:>6} {:>6} {:>12} {:>12}\n", r.rank, r.nodes,
                 r.by_type[ChakraProtoMsg::COMP_NODE], r.by_type[ChakraProtoMsg::COMM_COLL_NODE],
                 r.by_type[ChakraProtoMsg::COMM_SEND_NODE], r.by_type[ChakraProtoMsg::COMM_RECV_NODE], r.data_edges,
                 r.compute_micros);
    }
  }
}

int run_validate(const std::string& prefix, const ValidateOptions& options, bool as_json) {
  const auto files = find_rank_files(prefix);
  const ValidationReport report = validate_workload(files, options);
  if (as_json) {
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : report.findings) {
      nlohmann::json j = {{"severity", f.severity == Severity::kError ? "error" : "warning"},
                          {"file", f.where.file},
                          {"message", f.what},
                          {"text", to_string(f)}};
      if (f.where.rank) j["rank"] = *f.where.rank;
      if (f.where.node_id) j["node_id"] = *f.where.node_id;
      if (f.where.offset) j["offset"] = *f.where.offset;
      findings.push_back(j);
    }
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& r : report.ranks) {
      ranks.push_back({{"rank", r.rank},
                       {"file", r.path},
                       {"nodes", r.nodes},
                       {"dangling_deps", r.dangling_deps},
                       {"first_issuable", r.first_issuable},
                       {"dependency_walk_complete", r.walked}});
    }
    std::cout << nlohmann::json({{"ok", report.ok()},
                                 {"errors", report.errors},
                                 {"warnings", report.warnings},
                                 {"ranks", ranks},
                                 {"findings", findings}})
                     .dump(2)
              << '\n';
  } else {
    for (const auto& f : report.findings) fmt::print("{}\n", to_string(f));
    uint64_t nodes = 0, dangling = 0;
    for (const auto& r : report.ranks) {
      nodes += r.nodes;
      dangling += r.dangling_deps;
    }
    fmt::print("{}: {} ranks, {} nodes: {} error{}, {} warning{}{}\n", prefix, report.ranks.size(), nodes,
               report.errors, report.errors == 1 ? "" : "s", report.warnings, report.warnings == 1 ? "" : "s",
               dangling ? fmt::format(" ({} dangling dependencies)", dangling) : "");
    if (report.ranks.size() == 1 && !report.ranks[0].first_issuable.empty()) {
      const auto& ids = report.ranks[0].first_issuable;
      fmt::print("first issuable node ids: {}{}\n",
                 fmt::join(ids.begin(), ids.begin() + static_cast<long>(std::min<size_t>(ids.size(), 16)), ", "),
                 ids.size() > 16 ? fmt::format(" ... ({} in all)", ids.size()) : "");
    }
    fmt::print("{}\n", report.ok() ? "VALID" : "INVALID");
  }
  return report.ok() ? kExitOk : kExitFindings;
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool is_json_path(const std::string& p) { return has_suffix(p, ".json") || has_suffix(p, ".jsonl"); }

// Every output of a conversion goes through a temporary renamed into place, and a failure removes what this
// conversion wrote before it: a failed conversion leaves nothing behind.
class ConversionOutputs {
 public:
  ConversionOutputs() = default;
  ~ConversionOutputs() {
    if (!done_) remove_files(written_);
  }
  void write(const std::string& from, const std::string& out, const std::function<uint64_t(const std::string&)>& fn) {
    uint64_t nodes = 0;
    run::write_via_temporary(out, [&](const std::string& temp) { nodes = fn(temp); });
    written_.push_back(out);
    fmt::print(log_, "{} -> {}: {} nodes\n", from, out, nodes);
  }
  void done() { done_ = true; }

 private:
  std::FILE* log_ = stdout;
  std::vector<std::string> written_;
  bool done_ = false;
};

uint64_t json_to_file(const std::string& et_path, const std::string& out) {
  std::ofstream os(out, std::ios::binary);
  if (!os) throw TraceError({.file = out}, "cannot create the output file");
  const uint64_t n = write_json(et_path, os);
  os.close();
  if (!os) throw TraceError({.file = out}, "cannot write the output file");
  return n;
}

// JSON -> .et: one .json/.jsonl file, or a prefix of rank files PREFIX.<rank>.json(l) (--from json).
int run_convert_from_json(const std::string& input, const std::string& output) {
  if (output == "-") throw std::invalid_argument("output \"-\" (stdout) is for JSON output; .et files are binary");
  ConversionOutputs outs;
  if (fs::is_regular_file(input)) {
    outs.write(input, output, [&](const std::string& temp) { return write_et_from_json(input, temp); });
  } else {
    // An output prefix ending in .gz writes PREFIX.<rank>.et.gz.
    const bool gzip = has_suffix(output, ".gz");
    const std::string prefix = gzip ? output.substr(0, output.size() - 3) : output;
    int64_t rank = 0;
    for (;; ++rank) {
      std::string in = fmt::format("{}.{}.json", input, rank);
      if (!fs::is_regular_file(in)) in += "l";
      if (!fs::is_regular_file(in)) break;
      const std::string out = rank_file_path(prefix, rank, gzip);
      outs.write(in, out, [&](const std::string& temp) { return write_et_from_json(in, temp); });
    }
    if (rank == 0) {
      throw TraceError({.file = input}, fmt::format("neither a JSON file nor a prefix of JSON rank files (looked for "
                                                    "{0}.0.json and {0}.0.jsonl)",
                                                    input));
    }
  }
  outs.done();
  return kExitOk;
}

int run_convert(const std::string& input, const std::string& output) {
  if (is_json_path(input)) return run_convert_from_json(input, output);
  const auto files = find_rank_files(input);
  const bool one_file = files.size() == 1 && fs::is_regular_file(input);
  if (output == "-") {
    if (!one_file) throw std::invalid_argument("output \"-\" (stdout) takes one .et file, not a prefix of several");
    const uint64_t n = write_json(files.front().path, std::cout);
    std::cout.flush();
    fmt::print(stderr, "{} -> stdout: {} nodes\n", files.front().path, n);
    return kExitOk;
  }
  ConversionOutputs outs;
  for (const auto& f : files) {
    const std::string out = one_file ? output : fmt::format("{}.{}.json", output, f.rank);
    outs.write(f.path, out, [&](const std::string& temp) { return json_to_file(f.path, temp); });
  }
  outs.done();
  return kExitOk;
}

// `fabemu trace generate llm`: a model (preset and/or shape options) and a parallelism plan.
void add_generate_llm(CLI::App& generate, int& status) {
  auto* cmd = generate.add_subcommand(
      "llm", "LLM training iteration: per-rank traces for a transformer under a DP/TP/PP/EP plan (docs/workloads.md)");
  struct Args {
    std::string preset;
    std::optional<int64_t> layers, hidden, ffn, heads, kv_heads, vocab, seq, experts, top_k, dp;
    bool gelu = false;
    bool no_embedding = false;
    LlmSpec spec;
    std::string order = "tp,ep,dp,pp";
    std::string out;
    std::string out_dir = ".";
    bool quiet = false;
  };
  auto a = std::make_shared<Args>();
  std::string presets;
  for (const auto& p : llm_preset_names()) presets += (presets.empty() ? "" : ", ") + p;
  cmd->add_option("--preset", a->preset, "Model preset: " + presets)->check(CLI::IsMember(llm_preset_names()));
  cmd->add_option("--layers", a->layers, "Transformer layers");
  cmd->add_option("--hidden", a->hidden, "Hidden size (model width)");
  cmd->add_option("--ffn", a->ffn, "FFN inner size (per expert)");
  cmd->add_option("--heads", a->heads, "Attention (query) heads");
  cmd->add_option("--kv-heads", a->kv_heads, "Key/value heads (grouped-query attention; default = --heads)");
  cmd->add_option("--vocab", a->vocab, "Vocabulary size");
  cmd->add_option("--seq", a->seq, "Sequence length (tokens)");
  cmd->add_option("--experts", a->experts, "Experts per MoE layer (1 = dense)");
  cmd->add_option("--top-k", a->top_k, "Experts per token (MoE)");
  cmd->add_flag("--gelu", a->gelu, "Two-matrix GELU FFN instead of SwiGLU's three (GPT-3 preset: implied)");
  cmd->add_flag("--no-embedding", a->no_embedding, "Leave out embedding and output layer (equal pipeline stages)");
  cmd->add_option("--micro-batch", a->spec.train.micro_batch, "Sequences per micro-batch (default 1)");
  cmd->add_option("--global-batch", a->spec.train.global_batch,
                  "Sequences per iteration over all replicas (default: the preset's)");
  cmd->add_option("--dtype-bytes", a->spec.train.dtype_bytes, "Bytes per element: 2 = bf16/fp16 (default), 4 = fp32");
  cmd->add_option("--tp", a->spec.plan.tp, "Tensor-parallel degree (default 1)");
  cmd->add_option("--pp", a->spec.plan.pp, "Pipeline stages (1F1B schedule; default 1)");
  cmd->add_option("--dp", a->dp, "Data-parallel degree (default: --ranks / (tp x pp x ep), else 1)");
  cmd->add_option("--ep", a->spec.plan.ep, "Expert-parallel degree (default 1)");
  cmd->add_option("--ranks,-n", a->spec.plan.world, "World size; must equal tp x pp x dp x ep");
  cmd->add_option("--zero", a->spec.plan.zero, "ZeRO stage 0-3 (0: gradient all-reduce; default 0)");
  cmd->add_flag("--sequence-parallel", a->spec.plan.sequence_parallel,
                "TP all-reduces become reduce-scatter + all-gather (Megatron sequence parallelism)");
  cmd->add_option("--order", a->order, "Rank placement, innermost first (default tp,ep,dp,pp)");
  cmd->add_option("--jobs,-j", a->spec.jobs, "Writer threads (default: all cores)");
  cmd->add_flag("--gzip", a->spec.gzip, "Write PREFIX.<rank>.et.gz (gzip level 1)");
  cmd->add_option("--out,-o", a->out, "Output prefix (files PREFIX.<rank>.et); default OUT_DIR/<model>_<plan>/llm");
  cmd->add_option("--out-dir", a->out_dir, "Directory for the default layout (default .)");
  cmd->add_flag("--quiet,-q", a->quiet, "Print only the one-line summary");
  cmd->callback([a, &status] {
    LlmSpec spec = a->spec;
    if (!a->preset.empty()) {
      spec.model = *llm_preset(a->preset);
      if (spec.train.global_batch == 0) spec.train.global_batch = llm_preset_global_batch(a->preset);
    }
    auto set = [](const std::optional<int64_t>& v, int64_t& field) {
      if (v) field = *v;
    };
    set(a->layers, spec.model.layers);
    set(a->hidden, spec.model.hidden);
    set(a->ffn, spec.model.ffn);
    set(a->heads, spec.model.heads);
    set(a->kv_heads, spec.model.kv_heads);
    set(a->vocab, spec.model.vocab);
    set(a->seq, spec.model.seq);
    set(a->experts, spec.model.experts);
    set(a->top_k, spec.model.top_k);
    if (a->gelu) spec.model.gated_ffn = false;
    if (a->no_embedding) spec.model.embedding = false;
    if (a->preset.empty() || a->layers || a->hidden || a->ffn || a->heads || a->kv_heads || a->vocab || a->seq ||
        a->experts || a->top_k || a->gelu || a->no_embedding) {
      spec.model.name = a->preset.empty() ? "custom" : a->preset + "-custom";
    }
    if (a->preset.empty() && spec.train.global_batch == 0) {
      throw CLI::ValidationError("--global-batch", "give --global-batch (sequences per iteration) or a --preset");
    }
    if (spec.train.global_batch == 0) {
      throw CLI::ValidationError("--global-batch", "preset " + a->preset + " names no batch size: give --global-batch");
    }
    spec.plan.dp = a->dp ? *a->dp : (spec.plan.world != 0 ? 0 : 1);  // 0: derived from --ranks
    LlmFigures figures;
    try {
      spec.plan.order = parse_axis_order(a->order);
      figures = llm_figures(spec);
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError("generate llm", e.what());
    }
    const std::string folder = fmt::format("{}_tp{}_pp{}_dp{}_ep{}{}{}", spec.model.name, spec.plan.tp,
                                           spec.plan.pp, figures.dp, spec.plan.ep,
                                           spec.plan.zero ? fmt::format("_zero{}", spec.plan.zero) : "",
                                           spec.plan.sequence_parallel ? "_sp" : "");
    const std::string prefix = !a->out.empty() ? a->out : (fs::path(a->out_dir) / folder / "llm").string();
    const auto t0 = std::chrono::steady_clock::now();
    LlmOutput out;
    try {
      out = generate_llm(spec, prefix);
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError("generate llm", e.what());
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!a->quiet) {
      fmt::print("model   {}: {} layers, hidden {}, ffn {}, {} heads, seq {}, {:.4g} parameters ({:.4g} active)\n",
                 spec.model.name, spec.model.layers, spec.model.hidden, spec.model.ffn, spec.model.heads,
                 spec.model.seq, static_cast<double>(figures.params),
                 static_cast<double>(figures.active_params));
      fmt::print("plan    tp {} x pp {} x dp {} x ep {} = {} ranks, ZeRO-{}{}, {} micro-batches of {} per pipeline\n",
                 spec.plan.tp, spec.plan.pp, figures.dp, spec.plan.ep, figures.world, spec.plan.zero,
                 spec.plan.sequence_parallel ? ", sequence parallel" : "", figures.microbatches,
                 spec.train.micro_batch);
      fmt::print("work    {:.4g} FLOP per iteration ({} tokens)\n",
                 static_cast<double>(figures.flops_per_token) * static_cast<double>(figures.tokens), figures.tokens);
    }
    fmt::print("wrote {} rank files: {}.<0..{}>.et{} ({} nodes, {} bytes, {} distinct graphs, {:.2f} s); "
               "groups in {}\n",
               out.paths.size(), prefix, out.paths.size() - 1, spec.gzip ? ".gz" : "", out.nodes, out.bytes,
               out.distinct_graphs, secs,
               out.comm_groups_path);
    status = kExitOk;
  });
}

}  // namespace

void add_trace_commands(CLI::App& app, int& status) {
  CLI::App* trace = app.add_subcommand("trace", "Inspect, check, convert and generate Chakra execution traces");
  trace->require_subcommand(1);

  {  // info
    auto* cmd = trace->add_subcommand("info", "Ranks, node counts by type, dependency edges, collectives, process groups");
    auto prefix = std::make_shared<std::string>();
    auto groups = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("prefix", *prefix, "Trace prefix (files PREFIX.<rank>.et) or one .et file")->required();
    cmd->add_option("--comm-groups", *groups, "Process groups file {\"<pg_name>\": [ranks...]}")->check(CLI::ExistingFile);
    cmd->add_flag("--json", *json, "Print JSON instead of text");
    cmd->callback([=, &status] {
      const auto files = find_rank_files(*prefix);
      const auto summary =
          summarize_workload(files, groups->empty() ? std::nullopt : std::optional<std::string>(*groups));
      if (*json) {
        std::cout << info_json(summary).dump(2) << '\n';
      } else {
        print_info(*prefix, summary);
      }
      status = kExitOk;
    });
  }
  {  // validate
    auto* cmd = trace->add_subcommand(
        "validate", "Check every rank (ids, dependencies, cycles, attributes) and ranks against each other");
    auto prefix = std::make_shared<std::string>();
    auto options = std::make_shared<ValidateOptions>();
    auto groups = std::make_shared<std::string>();
    auto no_ctrl = std::make_shared<bool>(false);
    auto json = std::make_shared<bool>(false);
    cmd->add_option("prefix", *prefix, "Trace prefix (files PREFIX.<rank>.et) or one .et file")->required();
    cmd->add_flag("--strict", options->strict, "Dependencies on node ids absent from the file are errors");
    cmd->add_flag("--no-ctrl-deps", *no_ctrl, "Ignore ctrl_deps (Chakra's first feeder honoured only data_deps)");
    cmd->add_option("--comm-groups", *groups, "Process groups file {\"<pg_name>\": [ranks...]}")->check(CLI::ExistingFile);
    cmd->add_option("--max-findings", options->max_findings_per_kind, "Findings shown per rank and kind (default 20)");
    cmd->add_flag("--json", *json, "Print the findings as JSON");
    cmd->callback([=, &status] {
      options->ctrl_deps = !*no_ctrl;
      if (!groups->empty()) options->comm_group_file = *groups;
      status = run_validate(*prefix, *options, *json);
    });
  }
  {  // convert
    auto* cmd = trace->add_subcommand(
        "convert",
        "Convert .et <-> JSON (lossless), or an ASTRA-sim 1.0 text workload or an MSCCL-IR XML algorithm to Chakra "
        "traces");
    auto input = std::make_shared<std::string>();
    auto output = std::make_shared<std::string>();
    auto from = std::make_shared<std::string>("auto");
    auto astra = std::make_shared<AstraTextArgs>();
    auto bytes = std::make_shared<std::string>();
    cmd->add_option("input", *input,
                    "Input: a .et file, a trace prefix, a .json/.jsonl file, a text workload or an MSCCL-IR .xml")
        ->required();
    cmd->add_option("output,-o,--output", *output,
                    "Output: a .json file (from one .et), an output prefix (from a prefix, a text workload or an "
                    "MSCCL-IR .xml), or a .et/.et.gz file (from JSON)")
        ->required();
    cmd->add_option("--from", *from, "Input format: auto (by extension), et, json, astra-text, msccl-xml")
        ->check(CLI::IsMember({"auto", "et", "json", "astra-text", "msccl-xml"}));
    cmd->add_option("--ranks", astra->ranks, "astra-text: number of NPUs (ranks) to write");
    cmd->add_option("--passes", astra->passes, "astra-text: training passes (default 1)");
    cmd->add_option("--bytes", *bytes,
                    "msccl-xml: the collective's size (comm_size: 1MiB, 1048576, ...); each step moves cnt chunks of "
                    "it / i_chunks");
    cmd->callback([=, &status] {
      if (*from == "msccl-xml" || (*from == "auto" && input->ends_with(".xml"))) {
        status = run_convert_msccl_xml(*input, *output, *bytes);
      } else if (*from == "astra-text") {
        status = run_convert_astra_text(*input, *output, *astra);
      } else if (*from == "json") {
        status = run_convert_from_json(*input, *output);
      } else {
        status = run_convert(*input, *output);
      }
    });
  }
  add_trace_tool_commands(*trace, status);
  add_trace_analyze_commands(*trace, status);
  add_generate_llm(*trace->get_subcommand("generate"), status);
}

}  // namespace fabemu::cli
