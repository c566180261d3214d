#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "traces/llm_graph.h"

namespace fabemu::traces::llm {
namespace {

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
  // Calls f(name, elements, group size, group) for each part of a bucket that one DP collective carries: with
  // expert parallelism, the dense weights over dp x ep and the experts over their expert-data-parallel group;
  // else the experts are replicated like dense weights, and the bucket is one part.
  template <class F>
  void for_each_share(const Bucket& b, const F& f) const {
    if (edp() || s_.ep > 1) {
      f(b.name, b.dense, dp_n(), Patch::kDp);
      if (edp()) f(b.name + ".experts", b.expert, edp_n(), Patch::kEdp);
    } else {
      f(b.name, b.dense + b.expert, dp_n(), Patch::kDp);
    }
  }
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
    for_each_share(b, red);
  }
  // ZeRO-3: gather a bucket's weights before use.
  uint64_t gather_params(const Bucket& b, const std::string& why, uint64_t after) {
    if (spec_.plan.zero != 3) return 0;
    uint64_t last = 0;
    const auto ag = [&](const std::string& name, uint64_t elems, uint64_t n, Patch pg) {
      if (elems == 0 || n == 1) return;
      last = g_out_.coll(name + why, ChakraProtoMsg::ALL_GATHER, ceil_div(elems, n) * s_.dtype, pg, {after});
    };
    for_each_share(b, ag);
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
        for_each_share(b, ag);
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

}  // namespace

StageGraph build_stage(const LlmSpec& spec, const Shape& s, const Groups& g, int64_t stage) {
  return StageBuilder(spec, s, g, stage).build();
}

}  // namespace fabemu::traces::llm
