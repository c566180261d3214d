// Internal to the LLM generator (traces/llm*.cpp): a checked spec's shape numbers, shared by the figures,
// the stage graphs and the writer.
#pragma once

#include <cstdint>
#include <string>

#include "traces/llm.h"

namespace fabemu::traces::llm {

// Adam: moments, bias correction, sqrt, division, weight decay and update per weight.
inline constexpr uint64_t kAdamOpsPerParam = 12;
// Adam reads and writes the fp32 master weight and both fp32 moments (24 bytes), reads the gradient and
// writes the model-precision weight (2 x dtype).
inline constexpr uint64_t kAdamStateBytes = 24;

[[noreturn]] void bad(const std::string& what);  // throws std::invalid_argument(what)

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Shape numbers shared by the figures and the generator (elements, per layer unless said).
struct Shape {
  int64_t tp = 1, pp = 1, dp = 1, ep = 1, world = 1, m = 1, lps = 1;  // lps: layers per stage
  uint64_t h = 0, s = 0, tokens_mb = 0, dtype = 2;
  uint64_t attn_w = 0;     // Wq, Wk, Wv, Wo
  uint64_t expert_w = 0;   // one FFN (one expert)
  uint64_t router_w = 0;   // MoE gate
  uint64_t vocab_local = 0;  // vocabulary rows per TP rank (padded to a multiple of tp)
  bool moe = false;
  int64_t experts = 1, top_k = 1;
  // Per rank and layer: weights held.
  uint64_t dense_layer_local = 0;   // attention (+ dense FFN) / tp, + router (replicated)
  uint64_t expert_layer_local = 0;  // local experts / tp
};

// Checks a spec (std::invalid_argument naming the option, first problem in option order) and derives its shape.
Shape check(const LlmSpec& spec);

}  // namespace fabemu::traces::llm
