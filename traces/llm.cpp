// The LLM generator's public side: presets, the --order parser, the closed-form figures, and generate_llm's
// steps. The parts: llm_shape (checking a spec), llm_graph and llm_stage (groups and one stage's graph),
// llm_writer (rank, comm-group and plan files).
#include "traces/llm.h"

#include <fmt/format.h>


#include "traces/llm_graph.h"
#include "traces/llm_shape.h"
#include "traces/llm_writer.h"
#include "traces/trace_set.h"

namespace fabemu::traces {
namespace {

using llm::bad;

struct Preset {
  const char* key;
  TransformerSpec model;
  int64_t global_batch;
};

// Shapes from the papers and model cards cited in docs/workloads.md.
const std::vector<Preset>& presets() {
  static const std::vector<Preset> kPresets = {
      {"gpt3-175b",
       {.name = "gpt3-175b", .layers = 96, .hidden = 12288, .ffn = 49152, .heads = 96, .kv_heads = 96,
        .vocab = 50257, .seq = 2048, .gated_ffn = false},
       1536},
      {"llama3-8b",
       {.name = "llama3-8b", .layers = 32, .hidden = 4096, .ffn = 14336, .heads = 32, .kv_heads = 8,
        .vocab = 128256, .seq = 8192},
       512},
      {"llama3-70b",
       {.name = "llama3-70b", .layers = 80, .hidden = 8192, .ffn = 28672, .heads = 64, .kv_heads = 8,
        .vocab = 128256, .seq = 8192},
       512},
      {"llama3-405b",
       {.name = "llama3-405b", .layers = 126, .hidden = 16384, .ffn = 53248, .heads = 128, .kv_heads = 8,
        .vocab = 128256, .seq = 8192},
       2048},
      {"mixtral-8x7b",
       {.name = "mixtral-8x7b", .layers = 32, .hidden = 4096, .ffn = 14336, .heads = 32, .kv_heads = 8,
        .vocab = 32000, .seq = 32768, .experts = 8, .top_k = 2},
       0},
  };
  return kPresets;
}

// One graph per pipeline stage; every rank of the stage shares it.
std::vector<llm::StageGraph> build_stages(const LlmSpec& spec, const llm::Shape& s, const llm::Groups& groups) {
  std::vector<llm::StageGraph> stages;
  stages.reserve(static_cast<size_t>(s.pp));
  for (int64_t st = 0; st < s.pp; ++st) stages.push_back(llm::build_stage(spec, s, groups, st));
  return stages;
}

}  // namespace


std::optional<TransformerSpec> llm_preset(std::string_view name) {
  for (const auto& p : presets()) {
    if (name == p.key) return p.model;
  }
  return std::nullopt;
}

std::vector<std::string> llm_preset_names() {
  std::vector<std::string> out;
  for (const auto& p : presets()) out.emplace_back(p.key);
  return out;
}

int64_t llm_preset_global_batch(std::string_view name) {
  for (const auto& p : presets()) {
    if (name == p.key) return p.global_batch;
  }
  return 0;
}

std::string axis_name(Axis a) {
  switch (a) {
    case Axis::kTp: return "tp";
    case Axis::kEp: return "ep";
    case Axis::kDp: return "dp";
    case Axis::kPp: return "pp";
  }
  return "?";
}

std::array<Axis, kAxes> parse_axis_order(std::string_view text) {
  std::array<Axis, kAxes> out{};
  std::array<bool, kAxes> seen{};
  size_t n = 0;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    std::optional<Axis> a;
    for (const Axis c : {Axis::kTp, Axis::kEp, Axis::kDp, Axis::kPp}) {
      if (item == axis_name(c)) a = c;
    }
    if (!a) {
      bad(fmt::format("--order \"{}\": unknown axis \"{}\" (expected a permutation of tp,ep,dp,pp)", text, item));
    }
    if (n == kAxes || seen[static_cast<size_t>(*a)]) {
      bad(fmt::format("--order \"{}\": axis \"{}\" is given twice", text, item));
    }
    seen[static_cast<size_t>(*a)] = true;
    out[n++] = *a;
    at = comma + 1;
  }
  if (n != kAxes) bad(fmt::format("--order \"{}\": name all four axes tp, ep, dp, pp (innermost first)", text));
  return out;
}

LlmFigures llm_figures(const LlmSpec& spec) {
  const llm::Shape s = llm::check(spec);
  const auto& M = spec.model;
  LlmFigures f;
  f.world = s.world;
  f.dp = s.dp;
  f.microbatches = s.m;
  f.tokens = spec.train.global_batch * M.seq;
  const uint64_t emb = M.embedding ? static_cast<uint64_t>(M.vocab) * s.h : 0;
  const auto L = static_cast<uint64_t>(M.layers);
  const uint64_t all_experts = s.moe ? static_cast<uint64_t>(M.experts) * s.expert_w : s.expert_w;
  const uint64_t active_ffn = static_cast<uint64_t>(s.top_k) * s.expert_w;
  f.params = L * (s.attn_w + s.router_w + all_experts) + 2 * emb;
  f.active_params = L * (s.attn_w + s.router_w + active_ffn) + 2 * emb;
  f.flops_per_token = 3 * (L * (2 * (s.attn_w + s.router_w + active_ffn) + 4 * s.s * s.h) + 2 * emb);
  f.optimizer_ops_per_param = llm::kAdamOpsPerParam;
  for (int64_t st = 0; st < s.pp; ++st) {
    uint64_t dense = static_cast<uint64_t>(s.lps) * s.dense_layer_local;
    if (M.embedding && st == 0) dense += s.vocab_local * s.h;
    if (M.embedding && st == s.pp - 1) dense += s.vocab_local * s.h;
    f.stage_dense_params.push_back(dense);
    f.stage_expert_params.push_back(static_cast<uint64_t>(s.lps) * s.expert_layer_local);
  }
  return f;
}

LlmOutput generate_llm(const LlmSpec& spec, const std::string& output_prefix) {
  const llm::Shape s = llm::check(spec);
  const LlmFigures figures = llm_figures(spec);
  const llm::Groups groups = llm::make_groups(s, spec.plan);
  make_parent_dir(output_prefix);
  const std::vector<llm::StageGraph> stages = build_stages(spec, s, groups);

  LlmOutput out;
  out.distinct_graphs = s.pp;
  out.paths.resize(static_cast<size_t>(s.world));
  for (int64_t r = 0; r < s.world; ++r) out.paths[static_cast<size_t>(r)] = rank_file_path(output_prefix, r, spec.gzip);
  const llm::WrittenRanks written = llm::write_rank_files(spec, s, groups, stages, out.paths);

  out.comm_groups_path = output_prefix + ".comm_groups.json";
  out.plan_path = output_prefix + ".plan.json";
  try {
    if (written.error) std::rethrow_exception(written.error);
    llm::write_comm_groups(groups, out.comm_groups_path);
    llm::write_plan(spec, s, figures, groups, written, out.plan_path);
  } catch (...) {
    remove_files(out.paths);
    remove_files({out.comm_groups_path, out.plan_path});
    throw;
  }
  out.bytes = written.bytes;
  out.nodes = written.nodes;
  return out;
}

}  // namespace fabemu::traces
