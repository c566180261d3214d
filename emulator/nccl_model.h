// NCCL's collective semantics as a cost model: for one collective of `bytes` on a described system, every
// algorithm (ring, tree, NVLS, NVLS-tree, CollNet direct/chain) with every protocol (LL, LL128, Simple) that
// NCCL would consider, each with a latency and a bandwidth, and the one NCCL's tuner picks (the fastest, or
// the fastest of those an override allows). The structure and the published constants are NCCL's own
// public tuning model (src/graph/tuning.cc: per-algorithm/protocol base latency, per-hop latency by link
// class, per-channel bandwidth caps by GPU generation, protocol efficiencies); the system's numbers come
// from its fabric file's `nccl:` section (host/config/README.md) and docs/nccl.md says where each comes from.
// Pure: no I/O, no allocation after construction.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "emulator/time.h"

namespace fabemu::emu::nccl {

enum class Algo : uint8_t { kRing, kTree, kNvls, kNvlsTree, kCollNetDirect, kCollNetChain };
enum class Proto : uint8_t { kLL, kLL128, kSimple };
inline constexpr int kAlgos = 6;
inline constexpr int kProtos = 3;

// The collectives nccl-tests measures. `bytes` is always nccl-tests' "size": the whole buffer of an
// all-reduce, broadcast or reduce; the gathered (all-gather) or scattered (reduce-scatter) whole; an
// (NCCL has no all-to-all collective: it is point-to-point, not modelled here.)
enum class Func : uint8_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce };
inline constexpr int kFuncs = 5;

// What the tuner may choose from, per collective (NCCL_ALGO / NCCL_PROTO apply per function).
using AlgoEnables = std::array<std::array<bool, kAlgos>, kFuncs>;
using ProtoEnables = std::array<std::array<bool, kProtos>, kFuncs>;
template <class Enables>
constexpr Enables all_enabled() {
  Enables e{};
  for (auto& f : e) f.fill(true);
  return e;
}

// GPU generation: NCCL's per-generation bandwidth caps (LL, LL128, trees, NVLS efficiency).
enum class Gpu : uint8_t { kVolta, kAmpere, kHopper, kBlackwell };
// The link class inside a node: NCCL's NVLINK or PCI hop latencies.
enum class Link : uint8_t { kNvlink, kPcie };

// The calibration's fitted values (System's defaults), LL, LL128, Simple.
inline constexpr std::array<double, kProtos> kFittedHopLatencyScale{1.733, 1.714, 1.158};
inline constexpr std::array<double, kProtos> kFittedBandwidthEfficiency{0.756, 0.462, 0.9};
inline constexpr std::array<double, kProtos> kFittedRampBytes{0, 671387, 3484800};

struct System {
  int32_t gpus_per_node = 1;
  int32_t nodes = 1;
  Gpu gpu = Gpu::kHopper;
  Link intra = Link::kNvlink;
  // Rings/trees NCCL builds (its nChannels), and the bandwidth of one channel inside a node and between
  // nodes (its graph's bwIntra / bwInter), GB/s = 1e9 bytes/s.
  int32_t channels = 1;
  double channel_gbps = 0;
  double net_channel_gbps = 0;
  // Extra latency of a network hop (the graph's latencyInter), microseconds.
  double net_latency_us = 0;
  // NVLink SHARP (NVSwitch 3rd generation and later): NVLS and NVLS-tree, with their own channel count.
  bool nvls = false;
  int32_t nvls_channels = 0;
  // In-network reduction (SHARP) between nodes: CollNet direct and chain.
  bool collnet = false;
  // Fixed cost of every call that NCCL's model leaves out (kernel launch, the benchmark's own per-iteration
  // work), microseconds: fitted per class of system (its small-size times), in the system's file.
  double call_overhead_us = 0;
  // fabemu's calibration of NCCL's model, per protocol (LL, LL128, Simple), fitted once across every validated
  // class of system together (docs/nccl.md; bench/nccl_fit.py), never per table: a factor on every hop
  // latency, a factor on the algorithm bandwidth, and the bytes a pipeline needs in flight before it runs at
  // that bandwidth (time = latency + (bytes + ramp) / bandwidth). pure_nccl() sets NCCL's own (1, 1, 0).
  std::array<double, kProtos> hop_latency_scale = kFittedHopLatencyScale;
  std::array<double, kProtos> bandwidth_efficiency = kFittedBandwidthEfficiency;
  std::array<double, kProtos> ramp_bytes = kFittedRampBytes;
  // What the tuner may choose from, per collective (NCCL_ALGO / NCCL_PROTO, [func][algo or proto]); all by
  // default (LL128 as NCCL enables it).
  AlgoEnables algos = all_enabled<AlgoEnables>();
  ProtoEnables protos = all_enabled<ProtoEnables>();

  int32_t ranks() const { return gpus_per_node * nodes; }
  // NCCL's model as published: no hop latency scale, full bandwidth, no ramp.
  void pure_nccl() {
    hop_latency_scale = {1, 1, 1};
    bandwidth_efficiency = {1, 1, 1};
    ramp_bytes = {0, 0, 0};
  }
};

// One algorithm/protocol of one collective on one system, before the size is known: NCCL's latency (the
// call overhead included) and algorithm bandwidth. Doubles, as NCCL's model: they become integer time only
// in Model::evaluate.
struct Option {
  double latency_us = 0;
  double algbw_gbps = 0;  // 0: not available
};

// What a collective of a given size costs with one algorithm/protocol.
struct Choice {
  Algo algo = Algo::kRing;
  Proto proto = Proto::kSimple;
  Duration time;            // the whole call, integer picoseconds
  double latency_us = 0;    // the latency part of `time` (size corrections applied)
  double algbw_gbps = 0;    // the bandwidth part's rate (size corrections applied)
};

// The model of one system: its options per collective, computed once.
class Model {
 public:
  // Throws std::invalid_argument naming the field for a system NCCL could not run (no ranks, no channels,
  // a bandwidth of 0 where one is needed).
  explicit Model(const System& system);

  // What the tuner picks for `bytes` of `func`: the fastest available option (ties: NCCL's order, ring
  // before tree ..., LL before LL128 before Simple). nullopt when every option is disabled or unavailable.
  std::optional<Choice> choose(Func func, uint64_t bytes) const;
  // One option at one size; nullopt when NCCL does not run `func` that way here (or it is disabled).
  std::optional<Choice> evaluate(Func func, Algo algo, Proto proto, uint64_t bytes) const;
  // The size-independent part of an option (algbw 0: unavailable).
  const Option& option(Func func, Algo algo, Proto proto) const {
    return opts_[static_cast<size_t>(func)][static_cast<size_t>(algo)][static_cast<size_t>(proto)];
  }

  const System& system() const { return sys_; }

 private:
  System sys_;
  std::array<std::array<std::array<Option, kProtos>, kAlgos>, kFuncs> opts_{};
};

// nccl-tests' bus bandwidth factor: busbw = algbw * factor (all-reduce 2(n-1)/n; all-gather and
// reduce-scatter (n-1)/n; broadcast and reduce 1).
double bus_factor(Func func, int32_t ranks);

std::string_view algo_name(Algo a);    // "ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain"
std::string_view proto_name(Proto p);  // "LL", "LL128", "Simple"
std::string_view func_name(Func f);    // "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"
// Case-insensitive, NCCL's spellings accepted too ("Ring", "NVLSTree", "CollnetDirect", "simple").
std::optional<Algo> algo_named(std::string_view s);
std::optional<Proto> proto_named(std::string_view s);
std::optional<Func> func_named(std::string_view s);  // also "allreduce", "all_reduce_perf" ...

// Applies an NCCL_ALGO / NCCL_PROTO value as NCCL 2.24 reads it: lists separated by ';', each "func:list"
// for one collective (func as func_named: allreduce, AllGather, reduce_scatter ...), the first may lack the
// prefix and then applies to every collective. A list "ring,tree" enables exactly those, "^LL128" removes
// those from what was enabled. "ring;allreduce:tree": ring everywhere, tree for all-reduce. Throws
// std::invalid_argument naming the unknown element or collective, an empty list, or a second list without
// a collective.
void apply_algo_list(std::string_view value, AlgoEnables& enabled);
void apply_proto_list(std::string_view value, ProtoEnables& enabled);
// The user's NCCL_ALGO / NCCL_PROTO values on top of `s`'s lists (an empty value changes nothing); an error
// starts with where the value came from (`algo_from` / `proto_from`, e.g. "--algo: ").
void apply_lists(System& s, std::string_view algos, std::string_view protos, std::string_view algo_from,
                 std::string_view proto_from);

}  // namespace fabemu::emu::nccl
