#include "traces/llm_shape.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <utility>

namespace fabemu::traces::llm {
namespace {

constexpr int64_t kMaxRanks = int64_t{1} << 22;
constexpr int64_t kMaxDim = int64_t{1} << 24;

int64_t kv_heads(const TransformerSpec& m) { return m.kv_heads == 0 ? m.heads : m.kv_heads; }

void positive(int64_t v, const char* opt) {
  if (v < 1) bad(fmt::format("{} must be at least 1 (got {})", opt, v));
}

// Every count is at least 1 (dp and world may be 0: derived), the element size is a machine size.
void check_ranges(const LlmSpec& spec) {
  const TransformerSpec& M = spec.model;
  const TrainingSpec& T = spec.train;
  const ParallelPlan& P = spec.plan;
  positive(M.layers, "--layers");
  positive(M.hidden, "--hidden");
  positive(M.ffn, "--ffn");
  positive(M.heads, "--heads");
  positive(M.seq, "--seq");
  if (M.embedding) positive(M.vocab, "--vocab");
  positive(M.experts, "--experts");
  positive(T.micro_batch, "--micro-batch");
  positive(T.global_batch, "--global-batch");
  if (T.dtype_bytes != 1 && T.dtype_bytes != 2 && T.dtype_bytes != 4 && T.dtype_bytes != 8) {
    bad(fmt::format("--dtype-bytes must be 1, 2, 4 or 8 (got {})", T.dtype_bytes));
  }
  positive(P.tp, "--tp");
  positive(P.pp, "--pp");
  positive(P.ep, "--ep");
  if (P.dp < 0) bad(fmt::format("--dp must be at least 1 (got {})", P.dp));
  if (P.world < 0) bad(fmt::format("--ranks must be at least 1 (got {})", P.world));
}

// Heads, FFN and layers split evenly over the tensor-parallel ranks and the pipeline stages.
void check_divisibility(const LlmSpec& spec) {
  const TransformerSpec& M = spec.model;
  const ParallelPlan& P = spec.plan;
  const int64_t kv = kv_heads(M);
  if (kv < 1) bad(fmt::format("--kv-heads must be at least 1 (got {})", M.kv_heads));
  if (M.hidden % M.heads != 0) bad(fmt::format("--hidden {} is not divisible by --heads {}", M.hidden, M.heads));
  if (M.heads % kv != 0) bad(fmt::format("--heads {} is not a multiple of --kv-heads {}", M.heads, kv));
  if (M.heads % P.tp != 0) {
    bad(fmt::format("--heads {} is not divisible by --tp {} (each tensor-parallel rank takes whole heads)", M.heads,
                    P.tp));
  }
  if (kv % P.tp != 0) {
    bad(fmt::format("--kv-heads {} is not divisible by --tp {} (each tensor-parallel rank takes whole key/value "
                    "heads)",
                    kv, P.tp));
  }
  if (M.ffn % P.tp != 0) bad(fmt::format("--ffn {} is not divisible by --tp {}", M.ffn, P.tp));
  if (M.layers % P.pp != 0) {
    bad(fmt::format("--layers {} is not divisible by --pp {} (every stage holds the same number of layers)", M.layers,
                    P.pp));
  }
}

// Experts, expert parallelism, the ZeRO stage and the placement order.
void check_experts_zero_and_order(const LlmSpec& spec) {
  const TransformerSpec& M = spec.model;
  const ParallelPlan& P = spec.plan;
  const bool moe = M.experts > 1;
  if (moe && (M.top_k < 1 || M.top_k > M.experts)) {
    bad(fmt::format("--top-k {} must be between 1 and --experts {}", M.top_k, M.experts));
  }
  if (P.ep > 1 && !moe) bad(fmt::format("--ep {} needs a mixture-of-experts model (--experts > 1)", P.ep));
  if (moe && M.experts % P.ep != 0) bad(fmt::format("--experts {} is not divisible by --ep {}", M.experts, P.ep));
  if (P.zero < 0 || P.zero > 3) bad(fmt::format("--zero must be 0, 1, 2 or 3 (got {})", P.zero));
  if (P.zero == 3 && P.pp > 1) {
    bad(fmt::format("--zero 3 cannot be combined with --pp {} (weights gathered per layer and pipeline stages do not "
                    "mix; DeepSpeed rejects it too): use --zero 1 or 2",
                    P.pp));
  }
  std::array<bool, kAxes> seen{};
  for (const Axis a : P.order) {
    const auto i = static_cast<size_t>(a);
    if (i >= kAxes || seen[i]) bad("--order must name each of tp, ep, dp, pp exactly once");
    seen[i] = true;
  }
}

// The degrees (dp derived from --ranks when not given), the world and the micro-batches per pipeline.
Shape derive_parallelism(const LlmSpec& spec) {
  const TrainingSpec& T = spec.train;
  const ParallelPlan& P = spec.plan;
  const int64_t model_ranks = P.tp * P.pp * P.ep;
  if (model_ranks > kMaxRanks) bad(fmt::format("tp x pp x ep = {} ranks is more than {}", model_ranks, kMaxRanks));
  Shape s;
  s.tp = P.tp;
  s.pp = P.pp;
  s.ep = P.ep;
  s.dp = P.dp;
  if (s.dp == 0) {
    if (P.world == 0) bad("give --dp or --ranks (the data-parallel degree is --ranks / (tp x pp x ep))");
    if (P.world % model_ranks != 0) {
      bad(fmt::format("--ranks {} is not a multiple of tp x pp x ep = {} x {} x {} = {}", P.world, P.tp, P.pp, P.ep,
                      model_ranks));
    }
    s.dp = P.world / model_ranks;
  }
  if (s.dp > kMaxRanks / model_ranks) bad(fmt::format("more than {} ranks", kMaxRanks));
  s.world = model_ranks * s.dp;
  if (P.world != 0 && P.world != s.world) {
    bad(fmt::format("--ranks {} is not tp x pp x dp x ep = {} x {} x {} x {} = {}", P.world, P.tp, P.pp, s.dp, P.ep,
                    s.world));
  }
  const int64_t replicas = s.dp * s.ep;
  if (T.global_batch % T.micro_batch != 0 || (T.global_batch / T.micro_batch) % replicas != 0) {
    bad(fmt::format("--global-batch {} is not a multiple of --micro-batch x dp x ep = {} x {} x {} = {}",
                    T.global_batch, T.micro_batch, s.dp, s.ep, T.micro_batch * replicas));
  }
  s.m = T.global_batch / T.micro_batch / replicas;
  if (s.m > (int64_t{1} << 29)) bad(fmt::format("{} micro-batches per pipeline is too many", s.m));
  return s;
}

// Dimensions small enough that the FLOP counts fit, then the weights per layer and per rank.
void derive_sizes(const LlmSpec& spec, Shape& s) {
  const TransformerSpec& M = spec.model;
  const TrainingSpec& T = spec.train;
  s.lps = M.layers / spec.plan.pp;
  s.h = static_cast<uint64_t>(M.hidden);
  s.s = static_cast<uint64_t>(M.seq);
  s.dtype = static_cast<uint64_t>(T.dtype_bytes);
  const std::pair<int64_t, const char*> dims[] = {{M.hidden, "--hidden"},   {M.ffn, "--ffn"},
                                                  {M.seq, "--seq"},         {M.vocab, "--vocab"},
                                                  {M.layers, "--layers"},   {M.experts, "--experts"},
                                                  {T.micro_batch, "--micro-batch"}};
  for (const auto& [v, opt] : dims) {
    if (v > kMaxDim) bad(fmt::format("{} {} is larger than {} (the FLOP counts would overflow)", opt, v, kMaxDim));
  }
  s.tokens_mb = static_cast<uint64_t>(T.micro_batch) * s.s;
  if (s.tokens_mb > (uint64_t{1} << 26)) bad("--micro-batch x --seq is larger than 2^26 tokens");
  const bool moe = M.experts > 1;
  const uint64_t kvdim = static_cast<uint64_t>(kv_heads(M)) * (s.h / static_cast<uint64_t>(M.heads));
  s.attn_w = 2 * s.h * s.h + 2 * s.h * kvdim;
  s.expert_w = (M.gated_ffn ? 3 : 2) * s.h * static_cast<uint64_t>(M.ffn);
  s.moe = moe;
  s.experts = M.experts;
  s.top_k = moe ? M.top_k : 1;
  s.router_w = moe ? s.h * static_cast<uint64_t>(M.experts) : 0;
  const auto t = static_cast<uint64_t>(s.tp);
  s.vocab_local = M.embedding ? ceil_div(static_cast<uint64_t>(M.vocab), t) : 0;
  s.dense_layer_local = s.attn_w / t + s.router_w + (moe ? 0 : s.expert_w / t);
  s.expert_layer_local = moe ? static_cast<uint64_t>(M.experts / spec.plan.ep) * (s.expert_w / t) : 0;
}

}  // namespace

void bad(const std::string& what) { throw std::invalid_argument(what); }

Shape check(const LlmSpec& spec) {
  check_ranges(spec);
  check_divisibility(spec);
  check_experts_zero_and_order(spec);
  Shape s = derive_parallelism(spec);
  derive_sizes(spec, s);
  return s;
}

}  // namespace fabemu::traces::llm
