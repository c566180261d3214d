#include "traces/llm.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "traces/attrs.h"
#include "traces/error.h"
#include "traces/trace_set.h"
#include "traces/writer.h"

namespace fabemu::traces {
namespace {

// Adam: moments, bias correction, sqrt, division, weight decay and update per weight.
constexpr uint64_t kAdamOpsPerParam = 12;
// Adam reads and writes the fp32 master weight and both fp32 moments (24 bytes), reads the gradient and
// writes the model-precision weight (2 x dtype).
constexpr uint64_t kAdamStateBytes = 24;

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

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

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

Shape check(const LlmSpec& spec) {
  const TransformerSpec& M = spec.model;
  const TrainingSpec& T = spec.train;
  const ParallelPlan& P = spec.plan;
  auto positive = [](int64_t v, const char* opt) {
    if (v < 1) bad(fmt::format("{} must be at least 1 (got {})", opt, v));
  };
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
  const int64_t kv = M.kv_heads == 0 ? M.heads : M.kv_heads;
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

  constexpr int64_t kMaxRanks = int64_t{1} << 22;
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
  s.lps = M.layers / P.pp;
  s.h = static_cast<uint64_t>(M.hidden);
  s.s = static_cast<uint64_t>(M.seq);
  s.dtype = static_cast<uint64_t>(T.dtype_bytes);
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  const std::pair<int64_t, const char*> dims[] = {{M.hidden, "--hidden"},   {M.ffn, "--ffn"},
                                                  {M.seq, "--seq"},         {M.vocab, "--vocab"},
                                                  {M.layers, "--layers"},   {M.experts, "--experts"},
                                                  {T.micro_batch, "--micro-batch"}};
  for (const auto& [v, opt] : dims) {
    if (v > kMaxDim) bad(fmt::format("{} {} is larger than {} (the FLOP counts would overflow)", opt, v, kMaxDim));
  }
  s.tokens_mb = static_cast<uint64_t>(T.micro_batch) * s.s;
  if (s.tokens_mb > (uint64_t{1} << 26)) bad("--micro-batch x --seq is larger than 2^26 tokens");
  const uint64_t kvdim = static_cast<uint64_t>(kv) * (s.h / static_cast<uint64_t>(M.heads));
  s.attn_w = 2 * s.h * s.h + 2 * s.h * kvdim;
  s.expert_w = (M.gated_ffn ? 3 : 2) * s.h * static_cast<uint64_t>(M.ffn);
  s.moe = moe;
  s.experts = M.experts;
  s.top_k = moe ? M.top_k : 1;
  s.router_w = moe ? s.h * static_cast<uint64_t>(M.experts) : 0;
  const auto t = static_cast<uint64_t>(s.tp);
  s.vocab_local = M.embedding ? ceil_div(static_cast<uint64_t>(M.vocab), t) : 0;
  s.dense_layer_local = s.attn_w / t + s.router_w + (moe ? 0 : s.expert_w / t);
  s.expert_layer_local = moe ? static_cast<uint64_t>(M.experts / P.ep) * (s.expert_w / t) : 0;
  return s;
}

// ---- process groups and placement -----------------------------------------------------------------
enum Kind : uint8_t { kTpGroup, kDpGroup, kEdpGroup, kEpGroup, kKinds };
constexpr const char* kKindNames[kKinds] = {"tp", "dp", "edp", "ep"};

struct Groups {
  std::array<bool, kKinds> exists{};
  std::array<std::vector<int32_t>, kKinds> of_rank;  // group number (index into names/members)
  std::vector<std::string> names;                    // "1", "2", ...
  std::vector<Kind> kinds;
  std::vector<std::vector<int64_t>> members;
  std::array<int64_t, kAxes> stride{};
  std::array<int64_t, kAxes> size{};
  int64_t coord(int64_t rank, Axis a) const {
    const auto i = static_cast<size_t>(a);
    return rank / stride[i] % size[i];
  }
};

Groups make_groups(const Shape& s, const ParallelPlan& plan) {
  Groups g;
  g.size = {s.tp, s.ep, s.dp, s.pp};
  int64_t stride = 1;
  for (const Axis a : plan.order) {
    g.stride[static_cast<size_t>(a)] = stride;
    stride *= g.size[static_cast<size_t>(a)];
  }
  const std::array<std::vector<Axis>, kKinds> axes = {
      std::vector<Axis>{Axis::kTp}, {Axis::kDp, Axis::kEp}, {Axis::kDp}, {Axis::kEp}};
  g.exists = {s.tp > 1, s.dp * s.ep > 1, s.moe && s.ep > 1 && s.dp > 1, s.ep > 1};
  for (int k = 0; k < kKinds; ++k) {
    if (!g.exists[static_cast<size_t>(k)]) continue;
    auto& of = g.of_rank[static_cast<size_t>(k)];
    of.assign(static_cast<size_t>(s.world), -1);
    std::vector<int32_t> by_key(static_cast<size_t>(s.world), -1);
    for (int64_t r = 0; r < s.world; ++r) {
      int64_t key = r;
      for (const Axis a : axes[static_cast<size_t>(k)]) key -= g.coord(r, a) * g.stride[static_cast<size_t>(a)];
      auto& id = by_key[static_cast<size_t>(key)];
      if (id < 0) {
        id = static_cast<int32_t>(g.names.size());
        g.names.push_back(std::to_string(g.names.size() + 1));
        g.kinds.push_back(static_cast<Kind>(k));
        g.members.emplace_back();
      }
      g.members[static_cast<size_t>(id)].push_back(r);
      of[static_cast<size_t>(r)] = id;
    }
  }
  return g;
}

// ---- one stage's graph, shared by every rank of the stage ------------------------------------------
// Per-rank parts (pg_name, peers) are appended to the serialized node as one more `attr` field: protobuf
// concatenation of fields is a valid message, so a rank's file is the stage's bytes plus short suffixes.
enum class Patch : uint8_t { kNone, kTp, kDp, kEdp, kEp, kSendPrev, kSendNext, kRecvPrev, kRecvNext, kCount };

struct TNode {
  std::string body;
  Patch patch = Patch::kNone;
};

void add_int(Node& n, const char* name, int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void add_bool(Node& n, const char* name, bool v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_bool_val(v);
}
int64_t i64(uint64_t v) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) bad("a size or FLOP count overflows int64");
  return static_cast<int64_t>(v);
}

class StageGraph {
 public:
  std::vector<TNode> nodes;

  uint64_t comp(const std::string& name, uint64_t ops, uint64_t bytes, std::vector<uint64_t> deps) {
    Node n = start(name, ChakraProtoMsg::COMP_NODE, std::move(deps));
    add_bool(n, "is_cpu_op", false);
    add_int(n, "num_ops", i64(ops));
    add_int(n, "tensor_size", i64(bytes));
    return finish(n, Patch::kNone);
  }
  uint64_t coll(const std::string& name, CollectiveType type, uint64_t bytes, Patch group, std::vector<uint64_t> deps) {
    Node n = start(name, ChakraProtoMsg::COMM_COLL_NODE, std::move(deps));
    add_bool(n, "is_cpu_op", false);
    add_int(n, "comm_type", type);
    add_int(n, "comm_size", i64(bytes));
    return finish(n, group);
  }
  uint64_t p2p(const std::string& name, bool send, uint64_t bytes, int64_t tag, Patch peer,
               std::vector<uint64_t> deps) {
    Node n = start(name, send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE, std::move(deps));
    add_bool(n, "is_cpu_op", false);
    add_int(n, "comm_size", i64(bytes));
    auto* a = n.add_attr();
    a->set_name("comm_tag");
    a->set_int32_val(static_cast<int32_t>(tag));
    return finish(n, peer);
  }

 private:
  Node start(const std::string& name, NodeType type, std::vector<uint64_t> deps) {
    Node n;
    n.set_id(next_id_);
    n.set_name(name);
    n.set_type(type);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (const uint64_t d : deps) {
      if (d != 0) n.add_data_deps(d);  // 0 = "nothing yet" (id 0 is the metadata node)
    }
    return n;
  }
  uint64_t finish(const Node& n, Patch patch) {
    nodes.push_back({n.SerializeAsString(), patch});
    return next_id_++;
  }
  uint64_t next_id_ = 1;
};

// Builds the graph of pipeline stage `stage` (identical for all ranks of that stage).
class StageBuilder {
 public:
  StageBuilder(const LlmSpec& spec, const Shape& s, const Groups& g, int64_t stage)
      : spec_(spec), s_(s), g_(g), stage_(stage) {}

  StageGraph build() {
    const int64_t p = s_.pp, m = s_.m;
    const int64_t warmup = std::min(p - stage_ - 1, m);
    for (int64_t i = 0; i < warmup; ++i) forward(i);
    for (int64_t i = 0; i < m - warmup; ++i) {
      forward(warmup + i);
      backward(i);
    }
    for (int64_t i = m - warmup; i < m; ++i) backward(i);
    optimizer();
    return std::move(g_out_);
  }

 private:
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ == s_.pp - 1; }
  bool sp() const { return spec_.plan.sequence_parallel && s_.tp > 1; }
  uint64_t t() const { return static_cast<uint64_t>(s_.tp); }
  uint64_t act_bytes() const { return s_.tokens_mb * s_.h * s_.dtype; }
  uint64_t act_io(uint64_t weights) const { return s_.dtype * (weights + 2 * s_.tokens_mb * s_.h); }
  std::string layer_name(int64_t l) const { return fmt::format("layer{}", stage_ * s_.lps + l); }
  bool edp() const { return g_.exists[kEdpGroup]; }

  uint64_t comp(const std::string& name, uint64_t ops, uint64_t bytes, std::vector<uint64_t> deps) {
    deps.push_back(stream_);
    stream_ = g_out_.comp(name, ops, bytes, std::move(deps));
    return stream_;
  }
  // TP collective after a partial-sum producer: all-reduce, or reduce-scatter with sequence parallelism.
  uint64_t tp_out(const std::string& name, uint64_t producer) {
    if (s_.tp == 1) return producer;
    return sp() ? g_out_.coll(name + ".tp_reduce_scatter", ChakraProtoMsg::REDUCE_SCATTER, act_bytes(), Patch::kTp,
                              {producer})
                : g_out_.coll(name + ".tp_all_reduce", ChakraProtoMsg::ALL_REDUCE, act_bytes(), Patch::kTp, {producer});
  }
  // With sequence parallelism, the sequence-sharded input is gathered before a TP block.
  uint64_t tp_in(const std::string& name, uint64_t input) {
    if (!sp()) return input;
    return g_out_.coll(name + ".tp_all_gather", ChakraProtoMsg::ALL_GATHER, act_bytes() / t(), Patch::kTp, {input});
  }

  // DP bucket of one set of weights (elements per rank): the reduction issued when its gradients are
  // final; ZeRO >= 1 keeps a 1/N shard, so sizes are padded to a multiple of N.
  struct Bucket {
    std::string name;
    uint64_t dense = 0, expert = 0;
  };
  uint64_t dp_n() const { return static_cast<uint64_t>(s_.dp * s_.ep); }
  uint64_t edp_n() const { return static_cast<uint64_t>(s_.dp); }
  void reduce_grads(const Bucket& b, uint64_t after) {
    const int zero = spec_.plan.zero;
    const auto red = [&](const std::string& name, uint64_t elems, uint64_t n, Patch pg) {
      if (elems == 0 || n == 1) return;
      if (zero == 0) {
        dp_reductions_.push_back(
            g_out_.coll(name + ".dp_all_reduce", ChakraProtoMsg::ALL_REDUCE, elems * s_.dtype, pg, {after}));
      } else {
        dp_reductions_.push_back(g_out_.coll(name + ".dp_reduce_scatter", ChakraProtoMsg::REDUCE_SCATTER,
                                             ceil_div(elems, n) * n * s_.dtype, pg, {after}));
      }
    };
    if (edp() || s_.ep > 1) {
      red(b.name, b.dense, dp_n(), Patch::kDp);
      if (edp()) red(b.name + ".experts", b.expert, edp_n(), Patch::kEdp);
    } else {
      red(b.name, b.dense + b.expert, dp_n(), Patch::kDp);  // experts replicated like dense weights
    }
  }
  // ZeRO-3: gather a bucket's weights before use.
  uint64_t gather_params(const Bucket& b, const std::string& why, uint64_t after) {
    if (spec_.plan.zero != 3) return 0;
    uint64_t last = 0;
    const auto ag = [&](const std::string& name, uint64_t elems, uint64_t n, Patch pg) {
      if (elems == 0 || n == 1) return;
      last = g_out_.coll(name + why, ChakraProtoMsg::ALL_GATHER, ceil_div(elems, n) * s_.dtype, pg, {after});
    };
    if (edp() || s_.ep > 1) {
      ag(b.name, b.dense, dp_n(), Patch::kDp);
      if (edp()) ag(b.name + ".experts", b.expert, edp_n(), Patch::kEdp);
    } else {
      ag(b.name, b.dense + b.expert, dp_n(), Patch::kDp);
    }
    return last;
  }
  Bucket layer_bucket(int64_t l) const { return {layer_name(l), s_.dense_layer_local, s_.expert_layer_local}; }
  Bucket embedding_bucket() const { return {"embedding", s_.vocab_local * s_.h, 0}; }
  Bucket output_bucket() const { return {"output", s_.vocab_local * s_.h, 0}; }
  bool reduce_now(int64_t mb) const { return spec_.plan.zero >= 2 || mb == s_.m - 1; }

  // ---- forward of micro-batch mb
  void forward(int64_t mb) {
    const std::string p = fmt::format("mb{}.", mb);
    uint64_t x = 0;  // the activation flowing through the stage
    if (!first()) {
      x = g_out_.p2p(p + "recv_activation", false, act_bytes() / (sp() ? t() : 1), 2 * mb, Patch::kRecvPrev,
                     {stream_});
    } else if (spec_.model.embedding) {
      const uint64_t ew = gather_params(embedding_bucket(), ".zero3_all_gather.fwd", stream_);
      x = comp(p + "embedding.fwd", 0, act_io(0), {ew});
    }
    uint64_t prefetched = gather_params(layer_bucket(0), ".zero3_all_gather.fwd", stream_);
    for (int64_t l = 0; l < s_.lps; ++l) {
      const std::string n = p + layer_name(l);
      const uint64_t weights = prefetched;
      prefetched = l + 1 < s_.lps ? gather_params(layer_bucket(l + 1), ".zero3_all_gather.fwd", stream_) : 0;
      // attention
      x = tp_in(n + ".attn", x);
      const uint64_t w_attn = s_.attn_w / t();
      uint64_t c = comp(n + ".attn.fwd", s_.tokens_mb * (2 * w_attn + 4 * s_.s * (s_.h / t())), act_io(w_attn),
                        {x, weights});
      x = tp_out(n + ".attn", c);
      // feed-forward
      x = tp_in(n + ".ffn", x);
      if (!s_.moe) {
        const uint64_t w = s_.expert_w / t();
        c = comp(n + ".ffn.fwd", s_.tokens_mb * 2 * w, act_io(w), {x});
        x = tp_out(n + ".ffn", c);
      } else {
        c = comp(n + ".router.fwd", s_.tokens_mb * 2 * (s_.h / t()) * static_cast<uint64_t>(s_.experts),
                 act_io(s_.router_w), {x});
        x = dispatch(n + ".moe_dispatch", c);
        const uint64_t w = s_.expert_w / t();
        const auto k = static_cast<uint64_t>(s_.top_k);
        c = comp(n + ".experts.fwd", s_.tokens_mb * k * 2 * w,
                 s_.expert_layer_local * s_.dtype + 2 * s_.tokens_mb * k * s_.h * s_.dtype, {x});
        x = dispatch(n + ".moe_combine", c);
        x = tp_out(n + ".ffn", x);
      }
    }
    if (last() && spec_.model.embedding) {
      x = tp_in(p + "output", x);
      const uint64_t ow = gather_params(output_bucket(), ".zero3_all_gather.fwd", stream_);
      const uint64_t w = s_.vocab_local * s_.h;
      x = comp(p + "output.fwd", s_.tokens_mb * 2 * w, act_io(w), {x, ow});  // logits and loss
    }
    if (!last()) {
      g_out_.p2p(p + "send_activation", true, act_bytes() / (sp() ? t() : 1), 2 * mb, Patch::kSendNext, {x});
    } else {
      loss_[mb] = x;  // the last stage's backward starts from the forward's output
    }
  }
  uint64_t dispatch(const std::string& name, uint64_t after) {
    if (s_.ep == 1) return after;
    const uint64_t bytes = s_.tokens_mb * static_cast<uint64_t>(s_.top_k) * (s_.h / t()) * s_.dtype;
    return g_out_.coll(name + ".ep_all_to_all", ChakraProtoMsg::ALL_TO_ALL, bytes, Patch::kEp, {after});
  }

  // ---- backward of micro-batch mb: input gradients, then weight gradients (which overlap the TP
  // collective of the input gradient), then the DP reduction of finished buckets.
  void backward(int64_t mb) {
    const std::string p = fmt::format("mb{}.", mb);
    uint64_t g = last() ? loss_.at(mb) : 0;
    if (!last()) {
      g = g_out_.p2p(p + "recv_gradient", false, act_bytes() / (sp() ? t() : 1), 2 * mb + 1, Patch::kRecvNext,
                     {stream_});
    } else if (spec_.model.embedding) {
      const uint64_t w = s_.vocab_local * s_.h;
      const uint64_t ow = gather_params(output_bucket(), ".zero3_all_gather.bwd", stream_);
      const uint64_t ig = comp(p + "output.bwd_input", s_.tokens_mb * 2 * w, act_io(w), {g, ow});
      comp(p + "output.bwd_weight", s_.tokens_mb * 2 * w, act_io(w), {ig});
      g = tp_out(p + "output.bwd", ig);
      if (reduce_now(mb)) reduce_grads(output_bucket(), stream_);
    }
    for (int64_t l = s_.lps - 1; l >= 0; --l) {
      const std::string n = p + layer_name(l);
      const uint64_t weights = gather_params(layer_bucket(l), ".zero3_all_gather.bwd", stream_);
      // feed-forward
      g = tp_in(n + ".ffn.bwd", g);
      if (!s_.moe) {
        const uint64_t w = s_.expert_w / t();
        const uint64_t ig = comp(n + ".ffn.bwd_input", s_.tokens_mb * 2 * w, act_io(w), {g, weights});
        comp(n + ".ffn.bwd_weight", s_.tokens_mb * 2 * w, act_io(w), {ig});
        g = tp_out(n + ".ffn.bwd", ig);
      } else {
        g = dispatch(n + ".moe_combine.bwd", g);
        const uint64_t w = s_.expert_w / t();
        const uint64_t ops = s_.tokens_mb * static_cast<uint64_t>(s_.top_k) * 2 * w;
        const uint64_t bytes =
            s_.expert_layer_local * s_.dtype + 2 * s_.tokens_mb * static_cast<uint64_t>(s_.top_k) * s_.h * s_.dtype;
        const uint64_t ig = comp(n + ".experts.bwd_input", ops, bytes, {g, weights});
        g = dispatch(n + ".moe_dispatch.bwd", ig);
        comp(n + ".experts.bwd_weight", ops, bytes, {ig});
        const uint64_t rops = s_.tokens_mb * 2 * (s_.h / t()) * static_cast<uint64_t>(s_.experts);
        const uint64_t rg = comp(n + ".router.bwd_input", rops, act_io(s_.router_w), {g});
        comp(n + ".router.bwd_weight", rops, act_io(s_.router_w), {rg});
        g = tp_out(n + ".ffn.bwd", rg);
      }
      // attention
      g = tp_in(n + ".attn.bwd", g);
      const uint64_t w_attn = s_.attn_w / t();
      const uint64_t ig = comp(n + ".attn.bwd_input", s_.tokens_mb * (2 * w_attn + 8 * s_.s * (s_.h / t())),
                               act_io(w_attn), {g, weights});
      comp(n + ".attn.bwd_weight", s_.tokens_mb * 2 * w_attn, act_io(w_attn), {ig});
      g = tp_out(n + ".attn.bwd", ig);
      if (reduce_now(mb)) reduce_grads(layer_bucket(l), stream_);
    }
    if (first() && spec_.model.embedding) {
      const uint64_t ew = gather_params(embedding_bucket(), ".zero3_all_gather.bwd", stream_);
      comp(p + "embedding.bwd_weight", 0, act_io(0), {g, ew});
      if (reduce_now(mb)) reduce_grads(embedding_bucket(), stream_);
    }
    if (!first()) {
      // After the whole backward step (input and weight gradients), as Megatron's 1F1B sends it.
      g_out_.p2p(p + "send_gradient", true, act_bytes() / (sp() ? t() : 1), 2 * mb + 1, Patch::kSendPrev,
                 {g, stream_});
    }
  }

  // ---- optimizer step on this rank's (shard of the) weights, then ZeRO-1/2 re-gather the weights.
  void optimizer() {
    std::vector<Bucket> buckets;
    if (last() && spec_.model.embedding) buckets.push_back(output_bucket());
    for (int64_t l = s_.lps - 1; l >= 0; --l) buckets.push_back(layer_bucket(l));
    if (first() && spec_.model.embedding) buckets.push_back(embedding_bucket());
    const bool sharded = spec_.plan.zero >= 1;
    uint64_t params = 0;
    for (const auto& b : buckets) {
      if (edp() || s_.ep > 1) {
        params += sharded ? ceil_div(b.dense, dp_n()) : b.dense;
        params += sharded && edp() ? ceil_div(b.expert, edp_n()) : b.expert;
      } else {
        params += sharded ? ceil_div(b.dense + b.expert, dp_n()) : b.dense + b.expert;
      }
    }
    const uint64_t opt = comp("optimizer.step", params * kAdamOpsPerParam, params * (kAdamStateBytes + 2 * s_.dtype),
                              dp_reductions_);
    if (spec_.plan.zero == 1 || spec_.plan.zero == 2) {
      for (const auto& b : buckets) {
        const auto ag = [&](const std::string& name, uint64_t elems, uint64_t n, Patch pg) {
          if (elems == 0 || n == 1) return;
          g_out_.coll(name + ".dp_all_gather", ChakraProtoMsg::ALL_GATHER, ceil_div(elems, n) * s_.dtype, pg, {opt});
        };
        if (edp() || s_.ep > 1) {
          ag(b.name, b.dense, dp_n(), Patch::kDp);
          if (edp()) ag(b.name + ".experts", b.expert, edp_n(), Patch::kEdp);
        } else {
          ag(b.name, b.dense + b.expert, dp_n(), Patch::kDp);
        }
      }
    }
  }

  const LlmSpec& spec_;
  const Shape& s_;
  const Groups& g_;
  int64_t stage_;
  StageGraph g_out_;
  uint64_t stream_ = 0;  // the last COMP node: the compute stream runs in this order
  std::vector<uint64_t> dp_reductions_;
  std::map<int64_t, uint64_t> loss_;  // last stage: micro-batch -> its forward output
};

// ---- writing -----------------------------------------------------------------------------------------
void append_varint(uint64_t v, std::string& out) {
  while (v >= 0x80u) {
    out.push_back(static_cast<char>((v & 0x7fu) | 0x80u));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::string attr_suffix(const char* name, const std::string* sval, int64_t ival) {
  Node n;
  auto* a = n.add_attr();
  a->set_name(name);
  if (sval != nullptr) {
    a->set_string_val(*sval);
  } else {
    a->set_int32_val(static_cast<int32_t>(ival));
  }
  return n.SerializeAsString();
}

void write_gzip(const std::string& path, const std::string& data) {
  gzFile f = gzopen(path.c_str(), "wb1");
  if (f == nullptr) throw TraceError({.file = path}, std::string("cannot create: ") + std::strerror(errno));
  bool ok = true;
  for (size_t at = 0; ok && at < data.size();) {
    const auto n = static_cast<unsigned>(std::min<size_t>(data.size() - at, size_t{1} << 30));
    ok = gzwrite(f, data.data() + at, n) == static_cast<int>(n);
    at += n;
  }
  if (gzclose(f) != Z_OK || !ok) throw TraceError({.file = path}, "write failed (disk full?)");
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw TraceError({.file = path}, std::string("cannot create: ") + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw TraceError({.file = path}, "write failed (disk full?)");
}

nlohmann::json spec_json(const LlmSpec& spec, const Shape& s) {
  const auto& M = spec.model;
  std::vector<std::string> order;
  for (const Axis a : spec.plan.order) order.push_back(axis_name(a));
  return {{"model",
           {{"name", M.name},
            {"layers", M.layers},
            {"hidden", M.hidden},
            {"ffn", M.ffn},
            {"heads", M.heads},
            {"kv_heads", M.kv_heads == 0 ? M.heads : M.kv_heads},
            {"vocab", M.vocab},
            {"seq", M.seq},
            {"gated_ffn", M.gated_ffn},
            {"experts", M.experts},
            {"top_k", s.top_k},
            {"embedding", M.embedding}}},
          {"training",
           {{"micro_batch", spec.train.micro_batch},
            {"global_batch", spec.train.global_batch},
            {"dtype_bytes", spec.train.dtype_bytes}}},
          {"parallel",
           {{"tp", s.tp},
            {"pp", s.pp},
            {"dp", s.dp},
            {"ep", s.ep},
            {"world", s.world},
            {"zero", spec.plan.zero},
            {"sequence_parallel", spec.plan.sequence_parallel},
            {"order", order},
            {"microbatches", s.m}}}};
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
  const Shape s = check(spec);
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
  f.optimizer_ops_per_param = kAdamOpsPerParam;
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
  const Shape s = check(spec);
  const LlmFigures figures = llm_figures(spec);
  const Groups groups = make_groups(s, spec.plan);

  const std::filesystem::path dir = std::filesystem::path(output_prefix).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw TraceError({.file = dir.string()}, "cannot create the output directory: " + ec.message());
  }

  // One graph per pipeline stage; every rank of the stage shares it.
  std::vector<StageGraph> stages;
  stages.reserve(static_cast<size_t>(s.pp));
  for (int64_t st = 0; st < s.pp; ++st) stages.push_back(StageBuilder(spec, s, groups, st).build());

  GlobalMetadata md;
  md.set_version(kSchemaVersion);
  std::string md_frame;
  append_frame(md, md_frame);

  LlmOutput out;
  out.distinct_graphs = s.pp;
  out.paths.resize(static_cast<size_t>(s.world));
  for (int64_t r = 0; r < s.world; ++r) out.paths[static_cast<size_t>(r)] = rank_file_path(output_prefix, r, spec.gzip);

  std::atomic<int64_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> nodes{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  const auto worker = [&] {
    std::string buf;
    std::array<std::string, static_cast<size_t>(Patch::kCount)> suffix;
    try {
      for (int64_t r = next++; r < s.world; r = next++) {
        if (failed) return;
        const auto ru = static_cast<size_t>(r);
        const int64_t stage = groups.coord(r, Axis::kPp);
        const int64_t pp_stride = groups.stride[static_cast<size_t>(Axis::kPp)];
        // Per-rank attributes, serialized once per rank.
        nlohmann::json declared = nlohmann::json::array();
        for (int k = 0; k < kKinds; ++k) {
          if (!groups.exists[static_cast<size_t>(k)]) continue;
          const auto id = static_cast<size_t>(groups.of_rank[static_cast<size_t>(k)][ru]);
          suffix[static_cast<size_t>(k) + 1] = attr_suffix("pg_name", &groups.names[id], 0);
          declared.push_back({{"pg_name", groups.names[id]},
                              {"pg_desc", kKindNames[k]},
                              {"backend_config", "cuda:nccl"},
                              {"ranks", groups.members[id]},
                              {"group_size", groups.members[id].size()}});
        }
        if (stage > 0) {
          suffix[static_cast<size_t>(Patch::kSendPrev)] = attr_suffix("comm_dst", nullptr, r - pp_stride);
          suffix[static_cast<size_t>(Patch::kRecvPrev)] = attr_suffix("comm_src", nullptr, r - pp_stride);
        }
        if (stage < s.pp - 1) {
          suffix[static_cast<size_t>(Patch::kSendNext)] = attr_suffix("comm_dst", nullptr, r + pp_stride);
          suffix[static_cast<size_t>(Patch::kRecvNext)] = attr_suffix("comm_src", nullptr, r + pp_stride);
        }
        const StageGraph& graph = stages[static_cast<size_t>(stage)];
        buf.clear();
        buf += md_frame;
        uint64_t n = 0;
        if (!declared.empty()) {
          Node meta;
          meta.set_id(0);
          meta.set_name("process_groups");
          meta.set_type(ChakraProtoMsg::METADATA_NODE);
          meta.mutable_inputs()->set_values(declared.dump());
          append_frame(meta, buf);
          ++n;
        }
        for (const TNode& node : graph.nodes) {
          const std::string& tail = suffix[static_cast<size_t>(node.patch)];
          append_varint(node.body.size() + tail.size(), buf);
          buf += node.body;
          buf += tail;
        }
        n += graph.nodes.size();
        if (spec.gzip) {
          write_gzip(out.paths[ru], buf);
          bytes += static_cast<uint64_t>(std::filesystem::file_size(out.paths[ru]));
        } else {
          write_text(out.paths[ru], buf);
          bytes += buf.size();
        }
        nodes += n;
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const auto jobs = static_cast<unsigned>(std::clamp<int64_t>(spec.jobs > 0 ? spec.jobs : hw, 1, s.world));
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < jobs; ++i) threads.emplace_back(worker);
  worker();
  for (auto& th : threads) th.join();

  out.comm_groups_path = output_prefix + ".comm_groups.json";
  out.plan_path = output_prefix + ".plan.json";
  try {
    if (error) std::rethrow_exception(error);
    nlohmann::json cg = nlohmann::json::object();
    nlohmann::json by_kind = nlohmann::json::object();
    for (size_t i = 0; i < groups.names.size(); ++i) {
      cg[groups.names[i]] = groups.members[i];
      by_kind[kKindNames[groups.kinds[i]]].push_back(groups.names[i]);
    }
    write_text(out.comm_groups_path, cg.dump() + "\n");
    nlohmann::json plan = spec_json(spec, s);
    plan["figures"] = {{"params", figures.params},
                       {"active_params", figures.active_params},
                       {"tokens_per_iteration", figures.tokens},
                       {"flops_per_token", figures.flops_per_token},
                       {"flops_per_iteration", static_cast<double>(figures.flops_per_token) *
                                                   static_cast<double>(figures.tokens)},
                       {"stage_dense_params_per_rank", figures.stage_dense_params},
                       {"stage_expert_params_per_rank", figures.stage_expert_params}};
    plan["groups_by_kind"] = by_kind;
    plan["output"] = {{"rank_files", s.world}, {"nodes", nodes.load()}, {"bytes", bytes.load()}};
    write_text(out.plan_path, plan.dump(2) + "\n");
  } catch (...) {
    remove_files(out.paths);
    remove_files({out.comm_groups_path, out.plan_path});
    throw;
  }
  out.bytes = bytes.load();
  out.nodes = nodes.load();
  return out;
}

}  // namespace fabemu::traces
