// NCCL's tuning model, written from its public description and constants (NVIDIA/nccl src/graph/tuning.cc,
// tuner constants of NCCL 2.2x; Apache-2.0). docs/nccl.md lists each rule with the one here that follows it.
#include "emulator/nccl_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fabemu::emu::nccl {
namespace {

constexpr size_t A(Algo a) { return static_cast<size_t>(a); }
constexpr size_t P(Proto p) { return static_cast<size_t>(p); }
constexpr size_t G(Gpu g) { return static_cast<size_t>(g); }

// Base latency per call, microseconds [proto] (the other algorithms have none).
constexpr double kBaseLatTree[kProtos] = {6.8, 14.0, 8.4};
constexpr double kBaseLatRing[kProtos] = {6.6, 14.0, 8.4};
// Per-hop latency, microseconds [link class: NVLink, PCI, network][algo][proto], in NCCL's algo order
// (tree, ring, collnet direct, collnet chain, NVLS, NVLS tree).
constexpr double kHopLat[3][kAlgos][kProtos] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}}};
enum NcclAlgoIdx { kTreeI, kRingI, kCollNetDirectI, kCollNetChainI, kNvlsI, kNvlsTreeI };
constexpr int kNetHw = 2;

// Per-generation caps, GB/s [gpu][nodes: 1, 2, more].
constexpr double kLLMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
// Between nodes NCCL takes LL's cap from the CPU's row; fabemu takes the x86 Intel one.
constexpr double kLLMaxBwMultiNode[3] = {39.0, 39.0, 20.4};
constexpr double kPerChRingLL128[4] = {20.0, 20.0, 36.7, 40.0};
constexpr double kPerChTreeLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[4] = {0, 0, 0.85, 0.74};
// Trees' bandwidth at medium sizes, by log2(bytes / 64) [proto][0..23].
constexpr double kTreeCorrection[kProtos][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// Network post overhead per ring step between nodes (x86 Intel), microseconds; Simple pays it three times.
constexpr double kNetOverheadUs = 1.0;

int nccl_index(Algo a) {
  switch (a) {
    case Algo::kRing: return kRingI;
    case Algo::kTree: return kTreeI;
    case Algo::kNvls: return kNvlsI;
    case Algo::kNvlsTree: return kNvlsTreeI;
    case Algo::kCollNetDirect: return kCollNetDirectI;
    case Algo::kCollNetChain: return kCollNetChainI;
  }
  return kRingI;
}

double base_latency(Algo a, Proto p) {
  if (a == Algo::kRing) return kBaseLatRing[P(p)];
  if (a == Algo::kTree) return kBaseLatTree[P(p)];
  return 0;
}

int log2i(uint64_t v) {
  int l = -1;
  while (v != 0) {
    v >>= 1;
    ++l;
  }
  return l;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out.erase(std::remove(out.begin(), out.end(), '_'), out.end());
  return out;
}

// Whether NCCL runs `f` with `a`/`p` on `s` at all (before the user's lists).
bool supported(const System& s, Func f, Algo a, Proto p) {
  const bool nvls_family = a == Algo::kNvls || a == Algo::kNvlsTree;
  const bool collnet = a == Algo::kCollNetDirect || a == Algo::kCollNetChain;
  if ((nvls_family || collnet) && p != Proto::kSimple) return false;
  if (p == Proto::kLL128 && s.intra != Link::kNvlink) return false;  // NCCL enables LL128 on NVLink only
  if (nvls_family && (!s.nvls || s.nvls_channels < 2)) return false;
  if (a == Algo::kNvlsTree && s.nodes == 1) return false;
  if (a == Algo::kNvls && s.nodes > 1 && !s.collnet) return false;
  if (collnet && (!s.collnet || s.nodes == 1)) return false;
  switch (f) {
    case Func::kAllReduce: return true;
    case Func::kAllGather:
    case Func::kReduceScatter: return a == Algo::kRing || (a == Algo::kNvls && s.nodes == 1);
    case Func::kBroadcast:
    case Func::kReduce: return a == Algo::kRing;
  }
  return false;
}

int32_t steps_of(Func f, int32_t ranks) {
  if (f == Func::kAllReduce) return 2 * (ranks - 1);
  if (f == Func::kAllGather || f == Func::kReduceScatter) return ranks - 1;
  return ranks;
}

// Bus bandwidth of one option, GB/s, before the conversion to algorithm bandwidth.
double bus_bandwidth(const System& s, Func f, Algo a, Proto p) {
  const size_t g = G(s.gpu);
  const size_t n2 = static_cast<size_t>(std::min(s.nodes, 3) - 1);
  const double ll_max = s.nodes == 1 ? kLLMaxBw[g][0] : kLLMaxBwMultiNode[n2];
  const double ppn = s.gpus_per_node;
  // A channel between nodes runs at the slower of its NVLink/PCIe share and its NIC share; on two nodes a
  // tree's network link carries half of what a ring's does (NCCL reads bwIntra there).
  double bw = s.nodes == 1 ? s.channel_gbps : std::min(s.channel_gbps, s.net_channel_gbps);
  if (a == Algo::kTree && s.nodes == 2) bw = std::min(s.channel_gbps, 2 * s.net_channel_gbps);
  int32_t channels = s.channels;
  if (a == Algo::kCollNetDirect || a == Algo::kCollNetChain) bw = s.channel_gbps;
  if (a == Algo::kNvls || a == Algo::kNvlsTree) {
    channels = s.nvls_channels;
    double intra = s.channel_gbps * kNvlsEfficiency[g] * (channels - 1) / channels;
    intra *= f == Func::kAllReduce ? 2.0 : (ppn - 1) / ppn;  // an all-reduce pipelines its two halves
    const double inter = s.nodes == 1 ? std::numeric_limits<double>::infinity()
                                      : s.net_channel_gbps * ((s.nodes <= 2 && a == Algo::kNvlsTree) ? 2 : 1);
    bw = std::min(intra, inter);
    if (a == Algo::kNvlsTree) bw = std::min(bw, kPerChNvlsTree[g][n2]);
  }
  double bus = channels * bw;
  if (a == Algo::kRing && p == Proto::kLL) bus = std::min(ll_max, bus * 0.5);
  if (a == Algo::kRing && p == Proto::kLL128) bus = std::min(bus * 0.92, channels * kPerChRingLL128[g]);
  if (a == Algo::kTree) bus = std::min(bus * 0.92, channels * kPerChTree[g][n2]);
  if (a == Algo::kTree && p == Proto::kLL) bus = std::min(bus / 3.8, ll_max);
  if (a == Algo::kTree && p == Proto::kLL128) {
    bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * kPerChTreeLL128[g][n2]);
  }
  if (a == Algo::kCollNetDirect) {
    double factor = ppn / channels;  // GPUs per NIC
    factor -= (factor - 1) / 2;
    bus /= factor;
    if (s.gpu >= Gpu::kHopper) bus *= 0.85;
  }
  return bus;
}

double algorithm_bandwidth(const System& s, Func f, Algo a, Proto p) {
  const double bus = bus_bandwidth(s, f, a, p) * s.bandwidth_efficiency[P(p)];
  const bool ag_rs = f == Func::kAllGather || f == Func::kReduceScatter;
  if (a != Algo::kRing && ag_rs) return bus;
  if (a == Algo::kRing || a == Algo::kNvls || a == Algo::kNvlsTree) {
    return bus * s.ranks() / steps_of(f, s.ranks());
  }
  return bus * 0.5;
}

double latency(const System& s, Func f, Algo a, Proto p) {
  const int ai = nccl_index(a);
  const int intra_hw = s.intra == Link::kNvlink ? 0 : 1;
  const int32_t ppn = s.gpus_per_node;
  const double k = s.hop_latency_scale[P(p)];
  double intra = kHopLat[intra_hw][ai][P(p)] * k;
  double inter = (ppn == 1 ? kHopLat[kNetHw][kTreeI][P(p)] : kHopLat[kNetHw][ai][P(p)]) * k + s.net_latency_us;
  if (p == Proto::kSimple) inter += s.net_latency_us;  // the flush
  double lat = base_latency(a, p);
  const int log_nodes = log2i(static_cast<uint64_t>(s.nodes));
  switch (a) {
    case Algo::kRing:
      if (f == Func::kBroadcast || f == Func::kReduce) {
        lat += (s.nodes == 1 ? intra : kHopLat[kNetHw][kRingI][P(p)] * k);
      } else {
        const double overhead = s.nodes > 1 ? kNetOverheadUs * (p == Proto::kSimple ? 3 : 1) : 0;
        intra = std::max(intra, overhead);
        const int32_t inter_steps = s.nodes == 1 ? 0 : (f == Func::kAllReduce ? 2 : 1) * (s.nodes - 1);
        lat += (steps_of(f, s.ranks()) - inter_steps) * intra + inter_steps * inter;
      }
      break;
    case Algo::kTree: lat += 2 * ((ppn - 1) * intra + log_nodes * inter); break;
    case Algo::kCollNetDirect: lat += 2 * (std::min(1, ppn - 1) * intra + (ppn - 1) * 0.4) + inter; break;
    case Algo::kCollNetChain: lat += 2 * (ppn - 1) * intra + inter; break;
    case Algo::kNvls: lat = intra + (s.nodes > 1 ? inter : 0); break;
    case Algo::kNvlsTree: lat += intra + 2 * log_nodes * inter; break;
  }
  return lat + s.call_overhead_us;
}

void check(const System& s) {
  auto bad = [](const std::string& why) { throw std::invalid_argument("nccl system: " + why); };
  if (s.gpus_per_node < 1 || s.nodes < 1) bad("gpus_per_node and nodes must be at least 1");
  if (static_cast<int64_t>(s.gpus_per_node) * s.nodes > (1 << 20)) bad("more than 2^20 ranks");
  if (s.channels < 1 || s.channels > 64) bad("channels must be 1..64");
  if (!(s.channel_gbps > 0) || !std::isfinite(s.channel_gbps)) bad("channel_GBps must be a positive number");
  if (s.nodes > 1 && (!(s.net_channel_gbps > 0) || !std::isfinite(s.net_channel_gbps))) {
    bad("net_channel_GBps must be a positive number on more than one node");
  }
  if (s.nvls && (s.nvls_channels < 2 || s.nvls_channels > 64)) bad("nvls_channels must be 2..64 with nvls");
  if (s.nvls && s.gpu < Gpu::kHopper) bad("nvls needs a hopper or blackwell GPU (NVSwitch 3rd generation)");
  if (!(s.call_overhead_us >= 0) || !std::isfinite(s.call_overhead_us)) bad("call_overhead_us must be >= 0");
  for (size_t p = 0; p < kProtos; ++p) {
    const auto ok = [](double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; };
    if (!ok(s.hop_latency_scale[p], 1e-3, 1e3)) bad("hop_latency_scale must be 0.001..1000");
    if (!ok(s.bandwidth_efficiency[p], 1e-3, 1)) bad("bandwidth_efficiency must be 0.001..1");
    if (!ok(s.ramp_bytes[p], 0, 1e12)) bad("ramp_bytes must be 0..1e12");
  }
  if (!(s.net_latency_us >= 0) || !std::isfinite(s.net_latency_us)) bad("net_latency_us must be >= 0");
}

Duration us_to_duration(double us) { return Duration::from_ps(static_cast<uint64_t>(std::llround(us * 1e6))); }

}  // namespace

Model::Model(const System& system) : sys_(system) {
  check(sys_);
  if (sys_.ranks() < 2) return;  // one rank: nothing to move (every option unavailable)
  for (size_t f = 0; f < opts_.size(); ++f) {
    for (size_t a = 0; a < kAlgos; ++a) {
      for (size_t p = 0; p < kProtos; ++p) {
        const auto F = static_cast<Func>(f);
        const auto Al = static_cast<Algo>(a);
        const auto Pr = static_cast<Proto>(p);
        if (!sys_.algos[f][a] || !sys_.protos[f][p] || !supported(sys_, F, Al, Pr)) continue;
        const double bw = algorithm_bandwidth(sys_, F, Al, Pr);
        if (!(bw > 0)) continue;
        opts_[f][a][p] = Option{latency(sys_, F, Al, Pr), bw};
      }
    }
  }
}

std::optional<Choice> Model::evaluate(Func func, Algo algo, Proto proto, uint64_t bytes) const {
  const Option& o = option(func, algo, proto);
  if (!(o.algbw_gbps > 0)) return std::nullopt;
  double bw = o.algbw_gbps;
  double lat = o.latency_us;
  const int log_size = log2i(bytes >> 6);
  if (algo == Algo::kTree && func == Func::kAllReduce && log_size >= 0 && log_size < 23) {
    bw *= kTreeCorrection[P(proto)][log_size];
  }
  if (algo == Algo::kRing && proto == Proto::kSimple && sys_.nodes > 1 && func == Func::kAllReduce &&
      bytes / (static_cast<uint64_t>(sys_.channels) * static_cast<uint64_t>(sys_.ranks())) >= 64) {
    // "Plateau effect of ring": the base and hop latencies grow (not the call overhead).
    lat = (lat - sys_.call_overhead_us) * (sys_.gpu < Gpu::kAmpere ? 1.9 : 1.4) + sys_.call_overhead_us;
  }
  Choice c{algo, proto, Duration::zero(), lat, bw};
  const Rate per_byte = Rate::from_bytes_per_sec(static_cast<uint64_t>(std::llround(bw * 1e9)));
  // The ramp: a pipeline runs at `bw` once ramp_bytes are in flight (whole bytes).
  const auto ramp = static_cast<uint64_t>(std::llround(sys_.ramp_bytes[P(proto)]));
  c.time = us_to_duration(lat) + per_byte.ser(bytes) + per_byte.ser(ramp);
  return c;
}

std::optional<Choice> Model::choose(Func func, uint64_t bytes) const {
  std::optional<Choice> best;
  for (size_t a = 0; a < kAlgos; ++a) {
    for (size_t p = 0; p < kProtos; ++p) {
      const auto c = evaluate(func, static_cast<Algo>(a), static_cast<Proto>(p), bytes);
      if (c && (!best || c->time < best->time)) best = c;
    }
  }
  return best;
}

double bus_factor(Func func, int32_t ranks) {
  const double n = ranks;
  switch (func) {
    case Func::kAllReduce: return 2 * (n - 1) / n;
    case Func::kAllGather:
    case Func::kReduceScatter: return (n - 1) / n;
    case Func::kBroadcast:
    case Func::kReduce: return 1;
  }
  return 1;
}

std::string_view algo_name(Algo a) {
  constexpr std::string_view kNames[kAlgos] = {"ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain"};
  return kNames[A(a)];
}
std::string_view proto_name(Proto p) {
  constexpr std::string_view kNames[kProtos] = {"LL", "LL128", "Simple"};
  return kNames[P(p)];
}
std::string_view func_name(Func f) {
  constexpr std::string_view kNames[kFuncs] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"};
  return kNames[static_cast<size_t>(f)];
}

std::optional<Algo> algo_named(std::string_view s) {
  const std::string l = lower(s);
  for (size_t a = 0; a < kAlgos; ++a) {
    if (l == lower(algo_name(static_cast<Algo>(a)))) return static_cast<Algo>(a);
  }
  return std::nullopt;
}
std::optional<Proto> proto_named(std::string_view s) {
  const std::string l = lower(s);
  for (size_t p = 0; p < kProtos; ++p) {
    if (l == lower(proto_name(static_cast<Proto>(p)))) return static_cast<Proto>(p);
  }
  return std::nullopt;
}
std::optional<Func> func_named(std::string_view s) {
  std::string l = lower(s);
  if (l.size() > 4 && l.ends_with("perf")) l.resize(l.size() - 4);
  for (size_t f = 0; f < 5; ++f) {
    if (l == lower(func_name(static_cast<Func>(f)))) return static_cast<Func>(f);
  }
  return std::nullopt;
}

namespace {
// One list ("ring,tree" or "^LL128") onto one collective's enables.
template <size_t N, typename Named>
void apply_list(std::string_view list, std::array<bool, N>& enabled, Named named, std::string_view what) {
  const bool except = !list.empty() && list.front() == '^';
  if (except) list.remove_prefix(1);
  std::array<bool, N> chosen{};
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string_view item = list.substr(begin, end - begin);
    const auto v = named(item);
    if (!v) {
      throw std::invalid_argument(std::string(what) + " list: unknown element \"" + std::string(item) + "\"");
    }
    chosen[static_cast<size_t>(*v)] = true;
    begin = end + 1;
  }
  for (size_t i = 0; i < N; ++i) enabled[i] = except ? (enabled[i] && !chosen[i]) : chosen[i];
}

// NCCL's map of collectives to lists: "list;func:list;func:list", the first prefix optional.
template <size_t N, typename Named>
void apply_map(std::string_view value, std::array<std::array<bool, N>, kFuncs>& enabled, Named named,
               std::string_view what) {
  size_t begin = 0;
  for (bool first = true; begin <= value.size(); first = false) {
    const size_t end = std::min(value.find(';', begin), value.size());
    std::string_view entry = value.substr(begin, end - begin);
    begin = end + 1;
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      if (!first) {
        throw std::invalid_argument(std::string(what) + " list: \"" + std::string(entry) +
                                    "\" needs a collective (as allreduce:" + std::string(entry) +
                                    "): only the first list may lack one");
      }
      for (auto& f : enabled) apply_list(entry, f, named, what);
      continue;
    }
    const std::string_view func = entry.substr(0, colon);
    const auto f = func_named(func);
    if (!f) {
      throw std::invalid_argument(std::string(what) + " list: unknown collective \"" + std::string(func) +
                                  "\" (allreduce, allgather, reducescatter, broadcast, reduce)");
    }
    apply_list(entry.substr(colon + 1), enabled[static_cast<size_t>(*f)], named, what);
  }
}
}  // namespace

void apply_algo_list(std::string_view value, AlgoEnables& enabled) {
  apply_map(value, enabled, algo_named, "algorithm");
}
void apply_proto_list(std::string_view value, ProtoEnables& enabled) {
  apply_map(value, enabled, proto_named, "protocol");
}

void apply_lists(System& s, std::string_view algos, std::string_view protos, std::string_view algo_from,
                 std::string_view proto_from) {
  const auto located = [](std::string_view from, auto&& apply) {
    try {
      apply();
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(from) + e.what());
    }
  };
  if (!algos.empty()) located(algo_from, [&] { apply_algo_list(algos, s.algos); });
  if (!protos.empty()) located(proto_from, [&] { apply_proto_list(protos, s.protos); });
}

}  // namespace fabemu::emu::nccl
