// Synthesizes per-rank Chakra traces of one training iteration of a transformer LLM under a
// parallelism plan (data with ZeRO 0-3, tensor with optional sequence parallelism, 1F1B pipeline,
// expert), so fabemu and ASTRA-sim can replay jobs nobody has traced. See docs/workloads.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabemu::traces {

// The model: a stack of identical decoder layers plus an input embedding and an output (logits) layer.
struct TransformerSpec {
  std::string name = "custom";
  int64_t layers = 0;
  int64_t hidden = 0;     // model width h
  int64_t ffn = 0;        // FFN inner width (per expert for MoE)
  int64_t heads = 0;      // query heads
  int64_t kv_heads = 0;   // key/value heads (grouped-query attention); 0 = heads
  int64_t vocab = 0;
  int64_t seq = 0;        // sequence length in tokens
  bool gated_ffn = true;  // SwiGLU (3 matrices) rather than GELU (2 matrices)
  int64_t experts = 1;    // > 1: every layer's FFN is a mixture of this many experts
  int64_t top_k = 1;      // experts each token is routed to (MoE only)
  bool embedding = true;  // false leaves out embedding and output layer (equal pipeline stages)
};

struct TrainingSpec {
  int64_t micro_batch = 1;   // sequences per micro-batch per data-parallel replica
  int64_t global_batch = 0;  // sequences per iteration over all replicas
  int64_t dtype_bytes = 2;   // bytes per activation, weight and gradient element (bf16 = 2)
};

enum class Axis : uint8_t { kTp, kEp, kDp, kPp };
inline constexpr int kAxes = 4;

struct ParallelPlan {
  int64_t tp = 1;  // tensor (Megatron) parallel degree
  int64_t pp = 1;  // pipeline stages
  int64_t dp = 1;  // data-parallel replicas (besides expert parallelism); 0 = world / (tp x pp x ep)
  int64_t world = 0;  // ranks; 0 = tp x pp x dp x ep, else it must equal that product
  int64_t ep = 1;  // expert parallel degree; dense weights are replicated over dp x ep
  int zero = 0;    // 0: all-reduce gradients; 1/2/3: ZeRO stage (reduce-scatter + all-gather)
  bool sequence_parallel = false;  // TP collectives become reduce-scatter + all-gather
  // Placement, innermost (consecutive ranks) first; a permutation of the four axes.
  std::array<Axis, kAxes> order = {Axis::kTp, Axis::kEp, Axis::kDp, Axis::kPp};
};

struct LlmSpec {
  TransformerSpec model;
  TrainingSpec train;
  ParallelPlan plan;
  int jobs = 0;       // writer threads; 0 = hardware concurrency
  bool gzip = false;  // write `<prefix>.<rank>.et.gz` (gzip level 1)
};

// Presets with published shapes (sources in docs/workloads.md). Names: gpt3-175b, llama3-8b, llama3-70b,
// llama3-405b, mixtral-8x7b.
std::optional<TransformerSpec> llm_preset(std::string_view name);
std::vector<std::string> llm_preset_names();
// The default global batch (sequences) of a preset, from its source; 0 when the source gives none.
int64_t llm_preset_global_batch(std::string_view name);

// "tp,ep,dp,pp" -> order (innermost first). Throws std::invalid_argument naming --order.
std::array<Axis, kAxes> parse_axis_order(std::string_view text);
std::string axis_name(Axis a);

// Closed-form figures of a spec, with the same arithmetic the generator uses.
struct LlmFigures {
  int64_t world = 0;
  int64_t microbatches = 0;   // per pipeline per iteration (m)
  int64_t tokens = 0;         // per iteration, all replicas
  uint64_t params = 0;        // all weights (every expert), embedding and output layer included
  uint64_t active_params = 0; // weights one token uses (top_k experts)
  // Model FLOPs per token of one iteration (forward + backward, optimizer excluded):
  // 3 x (layers x (2 x active layer weights + 4 x seq x hidden) + 2 x vocab x hidden); the iteration's
  // FLOPs are this times `tokens` (kept apart: the product exceeds 64 bits for the largest presets).
  uint64_t flops_per_token = 0;
  int64_t dp = 0;             // data-parallel degree after deriving it from world
  // Per rank of stage s: weights held (before ZeRO sharding), dense and expert, in elements.
  std::vector<uint64_t> stage_dense_params;
  std::vector<uint64_t> stage_expert_params;
  uint64_t optimizer_ops_per_param = 0;
};
// Throws std::invalid_argument naming the option for an invalid spec.
LlmFigures llm_figures(const LlmSpec& spec);

struct LlmOutput {
  std::vector<std::string> paths;  // rank files in rank order
  std::string comm_groups_path;    // "<prefix>.comm_groups.json" (ASTRA-sim --comm-group-configuration)
  std::string plan_path;           // "<prefix>.plan.json": the spec, figures and groups by kind
  uint64_t bytes = 0;              // all rank files (as stored: compressed with gzip)
  uint64_t nodes = 0;              // all rank files
  int64_t distinct_graphs = 0;     // rank graphs built (one per pipeline stage); the rest are patched copies
};

// Writes `<prefix>.<rank>.et` for every rank, the comm-group file and the plan file. Throws
// std::invalid_argument (message names the option) for an invalid spec, TraceError for I/O errors; no
// partial workload is left behind.
LlmOutput generate_llm(const LlmSpec& spec, const std::string& output_prefix);

}  // namespace fabemu::traces
