// fabemu's fabric file: one YAML file for the network, the fabric model and the system layer. Keys,
// units and defaults: host/config/README.md, section "fabemu fabric file".
#include "host/config/fabric_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "host/config/config_util.h"

namespace fabemu::host {
namespace {

using namespace config;  // NOLINT(google-build-using-namespace): the shared helpers of host/config
using emu::DimTopology;
using emu::Rate;

constexpr int64_t kMaxNpus = std::numeric_limits<int32_t>::max();

const std::vector<std::string_view> kTopKeys = {
    "topology", "model", "mtu", "collectives", "chunks", "active_chunks", "endpoint_delay_ns", "local_mem_bw_GBps",
    "scheduling", "collective_optimization", "roofline", "nccl", "collective_semantics"};
const std::vector<std::string_view> kDimKeys = {"type", "npus", "bandwidth_gbps", "latency_ns"};
const std::vector<std::string_view> kFatTreeKeys = {
    "type", "hosts_per_leaf", "leaves", "spines", "oversubscription", "host_bandwidth_gbps", "host_latency_ns",
    "spine_bandwidth_gbps", "spine_latency_ns"};
const std::vector<std::string_view> kTypes = {"Ring", "FullyConnected", "Switch", "FatTree"};
const std::vector<std::string_view> kCollectiveKeys = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
const std::vector<std::string_view> kRooflineKeys = {"enabled", "peak_tflops"};
const std::vector<std::string_view> kNcclKeys = {
    "gpu", "intra", "channels", "channel_GBps", "net_channel_GBps", "net_latency_us", "nvls", "nvls_channels",
    "collnet", "call_overhead_us", "hop_latency_scale", "bandwidth_efficiency", "ramp_bytes", "algorithms",
    "protocols", "validated"};

constexpr std::string_view kTopologyForm =
    "a list of dimensions, e.g. [{type: Switch, npus: 8, bandwidth_gbps: 3600, latency_ns: 250}, {type: FatTree, "
    "hosts_per_leaf: 16, leaves: 8, spines: 4, host_bandwidth_gbps: 400, host_latency_ns: 500}], or one fat-tree, "
    "e.g. {type: FatTree, hosts_per_leaf: 16, leaves: 8, spines: 4, host_bandwidth_gbps: 400, host_latency_ns: 500}";

// One value of the file: its full key name ("topology[1].npus") and where it is.
struct Value {
  const std::string& file;
  std::string key;
  YAML::Node node;
  uint64_t line;

  std::string shown() const {
    if (node.IsScalar()) return fmt::format("\"{}\"", node.Scalar());
    if (node.IsMap()) return "a mapping";
    if (node.IsSequence()) return "a list";
    return "nothing";
  }

  [[noreturn]] void bad(std::string_view expected) const {
    fail(file, line, fmt::format("key \"{}\": expected {}; got {}", key, expected, shown()));
  }

  [[noreturn]] void wrong(std::string_view why) const { fail(file, line, fmt::format("key \"{}\": {}", key, why)); }

  const std::string& scalar(std::string_view expected) const {
    if (!node.IsScalar()) bad(expected);
    return node.Scalar();
  }

  // An integer in `range`; `what` says what it counts, and the message shows the range.
  int64_t integer(IntRange range, std::string_view what) const {
    const std::string expected = fmt::format("{} ({})", range_text(range), what);
    const auto v = parse_int(scalar(expected));
    if (!v || !in_range(*v, range)) bad(expected);
    return *v;
  }

  // A number in `range`, in `unit`.
  double number(RealRange range, std::string_view unit) const {
    const std::string expected = fmt::format("{} ({})", range_text(range), unit);
    const auto v = parse_double(scalar(expected));
    if (!v || !in_range(*v, range)) bad(expected);
    return *v;
  }

  // A finite number, > 0 when `positive`, else >= 0.
  double number(bool positive, std::string_view expected) const {
    const auto v = parse_double(scalar(expected));
    if (!v || *v < 0 || (positive && *v == 0)) bad(expected);
    return *v;
  }

  bool flag() const {
    const std::string& s = scalar("true or false");
    if (s == "true") return true;
    if (s == "false") return false;
    bad("true or false");
  }

  // Decimal nanoseconds, exact to the picosecond.
  emu::Duration ns() const {
    return ns_to_duration(file, line, fmt::format("key \"{}\"", key), scalar("a decimal number of ns >= 0"),
                          "a decimal number of ns >= 0 with at most 3 decimals, e.g. 500 or 936.25");
  }

  // Gigabits per second (10^9 bits/s), as written and as a Rate.
  Rate gbps(double& as_written) const {
    as_written = number(true, "a positive number of gigabits per second (10^9 bits/s), e.g. 400");
    try {
      return Rate::from_gbps(as_written);
    } catch (const std::invalid_argument& e) {
      wrong(e.what());
    }
  }

  std::string choice(const std::vector<std::string_view>& allowed) const {
    const std::string& s = scalar(fmt::format("one of {}", join(allowed)));
    for (const auto a : allowed) {
      if (s == a) return s;
    }
    fail(file, line,
         fmt::format("key \"{}\": unknown value \"{}\"{}; expected {} (case-sensitive)", key, s,
                     did_you_mean(s, allowed), join(allowed)));
  }
};

// A checked mapping: its keys (known, each once) and the mapping's own line, for missing keys.
struct Map {
  const std::string& file;
  std::string prefix;  // "topology." etc.; "" at the top
  YamlKeys keys;
  uint64_t line;

  std::optional<Value> get(std::string_view name) const {
    const auto it = keys.find(name);
    if (it == keys.end()) return std::nullopt;
    const YAML::Node& v = it->second.value;
    return Value{file, prefix + std::string(name), v, v.IsNull() ? it->second.line : yaml_line(v)};
  }

  Value need(std::string_view name, std::string_view expected) const {
    auto v = get(name);
    if (!v) fail(file, line, fmt::format("missing key \"{}{}\": expected {}", prefix, name, expected));
    return *v;
  }
};

Map checked_map(const std::string& file, const YAML::Node& node, uint64_t line, std::string_view key,
                const std::vector<std::string_view>& known, std::string_view owner, std::string_view expected) {
  if (!node.IsMap()) {
    fail(file, line, fmt::format("key \"{}\": expected {}; got {}", key, expected,
                                 Value{file, std::string(key), node, line}.shown()));
  }
  const std::string prefix = key.empty() ? std::string() : std::string(key) + ".";
  return Map{file, prefix, yaml_keys(file, node, known, prefix, owner), line};
}

// The value of key "type" of a mapping, if any (before its other keys are checked against the type's).
std::optional<std::pair<std::string, uint64_t>> type_of(const YAML::Node& map) {
  for (const auto& kv : map) {
    if (kv.first.IsScalar() && kv.first.Scalar() == "type" && kv.second.IsScalar()) {
      return std::make_pair(kv.second.Scalar(), yaml_line(kv.second));
    }
  }
  return std::nullopt;
}

emu::NetworkDim parse_dimension(const std::string& file, const YAML::Node& node, size_t index) {
  const std::string key = fmt::format("topology[{}]", index);
  const std::string_view form = "a mapping {type: Ring, npus: 8, bandwidth_gbps: 400, latency_ns: 500}";
  const Map m = checked_map(file, node, yaml_line(node), key, kDimKeys, "a dimension", form);
  emu::NetworkDim d;
  const std::string type = m.need("type", "Ring, FullyConnected or Switch").choice(kTypes);
  d.topology = type == "Ring" ? DimTopology::kRing : type == "Switch" ? DimTopology::kSwitch
                                                                       : DimTopology::kFullyConnected;
  d.npus = m.need("npus", range_text(kDimNpusRange)).integer(kDimNpusRange, "NPUs along the dimension");
  d.bandwidth = m.need("bandwidth_gbps", "a positive number of gigabits per second").gbps(d.bandwidth_gbps);
  d.bandwidth_unit = emu::NetworkDim::BandwidthUnit::kGbps;
  d.latency = m.need("latency_ns", "a decimal number of ns >= 0").ns();
  return d;
}

emu::NetworkDim parse_fat_tree(const std::string& file, const YAML::Node& node, std::string_view key) {
  const Map m = checked_map(file, node, yaml_line(node), key, kFatTreeKeys, "a fat-tree", kTopologyForm);
  emu::FatTreeConfig ft;
  const auto count = [&](std::string_view name, std::string_view what) {
    return static_cast<int32_t>(m.need(name, range_text(kFatTreeCountRange)).integer(kFatTreeCountRange, what));
  };
  ft.hosts_per_leaf = count("hosts_per_leaf", "NPUs per leaf switch");
  ft.leaves = count("leaves", "leaf switches");
  const int64_t npus = int64_t{ft.hosts_per_leaf} * ft.leaves;
  if (npus < 2 || npus > kMaxNpus) {
    m.need("leaves", "").wrong(fmt::format("hosts_per_leaf * leaves = {} NPUs; expected 2 to 2^31-1", npus));
  }
  ft.host_link_rate = m.need("host_bandwidth_gbps", "a positive number of gigabits per second").gbps(ft.host_gbps);
  ft.host_link_latency = m.need("host_latency_ns", "a decimal number of ns >= 0").ns();
  if (const auto v = m.get("spine_bandwidth_gbps")) {
    ft.spine_link_rate = v->gbps(ft.spine_gbps);
  } else {
    ft.spine_link_rate = ft.host_link_rate;
    ft.spine_gbps = ft.host_gbps;
  }
  const auto spine_latency = m.get("spine_latency_ns");
  ft.spine_link_latency = spine_latency ? spine_latency->ns() : ft.host_link_latency;

  const auto spines = m.get("spines");
  const auto over = m.get("oversubscription");
  if (spines && over) over->wrong("give either \"spines\" or \"oversubscription\", not both");
  if (spines) {
    ft.spines = static_cast<int32_t>(spines->integer(kFatTreeCountRange, "spine switches"));
  } else if (over) {
    // spines = hosts_per_leaf * host bandwidth / (oversubscription * spine bandwidth), a whole number.
    const double o = over->number(true, "a positive number (leaf down-link over up-link bandwidth), e.g. 2");
    const double s = static_cast<double>(ft.hosts_per_leaf) * ft.host_gbps / (o * ft.spine_gbps);
    const double whole = std::round(s);
    if (!(whole >= 1) || whole > static_cast<double>(kMaxNpus) || std::fabs(s - whole) > 1e-9 * whole) {
      over->wrong(fmt::format("{} gives {} spines (hosts_per_leaf * host_bandwidth_gbps / (oversubscription * "
                              "spine_bandwidth_gbps)), not a whole number >= 1; give \"spines\" instead",
                              over->node.Scalar(), s));
    }
    ft.spines = static_cast<int32_t>(whole);
  } else {
    fail(file, m.line,
         fmt::format("missing key \"{}spines\": expected an integer >= 1 (spine switches), or give "
                     "\"oversubscription\" instead",
                     m.prefix));
  }
  if (npus + ft.leaves + ft.spines > kMaxNpus ||
      2 * npus + 2 * int64_t{ft.leaves} * ft.spines > int64_t{std::numeric_limits<uint32_t>::max()}) {
    fail(file, m.line, fmt::format("key \"{}\": too many NPUs, switches or links for 32-bit ids", key));
  }
  emu::NetworkDim d;
  d.topology = DimTopology::kFatTree;
  d.npus = npus;
  d.bandwidth = ft.host_link_rate;
  d.bandwidth_gbps = ft.host_gbps;
  d.bandwidth_unit = emu::NetworkDim::BandwidthUnit::kGbps;
  d.latency = ft.host_link_latency;
  d.fat_tree = ft;
  return d;
}

// The keys that make a network's size, for the error that it is too large.
std::string_view network_size_keys(const emu::NetworkConfig& net) {
  const bool fat_tree = std::any_of(net.dims.begin(), net.dims.end(), [](const auto& d) { return d.fat_tree.has_value(); });
  if (!fat_tree) return "key \"npus\" of the dimensions of \"topology\"";
  if (net.dims.size() == 1) return "keys \"hosts_per_leaf\", \"leaves\" and \"spines\" of \"topology\"";
  return "keys \"npus\" (\"hosts_per_leaf\", \"leaves\" and \"spines\" of a fat-tree) of the dimensions of \"topology\"";
}

void parse_topology(const std::string& file, const Value& v, emu::NetworkConfig& net) {
  if (v.node.IsMap()) {
    const auto type = type_of(v.node);
    if (!type || type->first != "FatTree") {
      fail(file, type ? type->second : v.line,
           fmt::format("key \"topology.type\": a mapping describes a fat-tree (type: FatTree); write dimensions as a "
                       "list, e.g. topology: [{{type: Ring, npus: 8, bandwidth_gbps: 400, latency_ns: 500}}]"));
    }
    net.dims = {parse_fat_tree(file, v.node, "topology")};
    return;
  }
  if (!v.node.IsSequence() || v.node.size() == 0) v.bad(kTopologyForm);
  const size_t dims = v.node.size();
  for (size_t i = 0; i < dims; ++i) {
    const YAML::Node entry = v.node[i];
    const auto type = entry.IsMap() ? type_of(entry) : std::nullopt;
    if (type && type->first == "FatTree") {
      net.dims.push_back(parse_fat_tree(file, entry, fmt::format("topology[{}]", i)));
    } else {
      net.dims.push_back(parse_dimension(file, entry, i));
    }
  }
  int64_t total = 1;
  for (size_t i = 0; i < dims; ++i) {
    total *= net.dims[i].npus;
    if (total > kMaxNpus) {
      fail(file, yaml_line(v.node[i]), fmt::format("key \"topology[{}].npus\": the network holds more than 2^31-1 NPUs", i));
    }
  }
}

std::vector<emu::CollectiveImpl> parse_impls(const Value& v, size_t dims) {
  const std::string expected =
      fmt::format("a list of 1 to {} implementation names (one per dimension), each one of {}, e.g. [ring]", dims,
                  join(kCollectiveImplNames));
  if (!v.node.IsSequence() || v.node.size() == 0) v.bad(expected);
  if (v.node.size() > dims) {
    v.wrong(fmt::format("lists {} implementations but the network has {} dimension{}: at most one per dimension",
                        v.node.size(), dims, dims == 1 ? "" : "s"));
  }
  std::vector<emu::CollectiveImpl> out;
  for (size_t d = 0; d < v.node.size(); ++d) {
    const YAML::Node n = v.node[d];
    if (!n.IsScalar()) v.bad(expected);
    std::string why;
    const auto impl = parse_collective_impl(n.Scalar(), why);
    if (!impl) fail(v.file, yaml_line(n), fmt::format("key \"{}\", dimension {}: {}", v.key, d, why));
    out.push_back(*impl);
  }
  return out;
}

// [LL, LL128, Simple]: three numbers in `range`.
std::array<double, emu::nccl::kProtos> per_protocol(const Value& v, RealRange range, std::string_view unit) {
  const std::string form = fmt::format("a list of 3 numbers [LL, LL128, Simple], {} ({})", range_text(range), unit);
  if (!v.node.IsSequence() || v.node.size() != emu::nccl::kProtos) v.bad(form);
  std::array<double, emu::nccl::kProtos> out{};
  for (size_t i = 0; i < out.size(); ++i) {
    const Value e{v.file, fmt::format("{}[{}]", v.key, i), v.node[i], yaml_line(v.node[i])};
    out[i] = e.number(range, unit);
  }
  return out;
}

// The `nccl:` section; the node is topology[0].
void parse_nccl(const std::string& path, const Value& v, FabricFile& f) {
  const Map m = checked_map(path, v.node, v.line, "nccl", kNcclKeys, "\"nccl\"",
                            "a mapping, e.g. {gpu: hopper, intra: nvlink, channels: 16, channel_GBps: 20.6}");
  if (f.network.dims[0].fat_tree) v.wrong("needs a topology whose first dimension is the node, not a fat-tree");
  emu::nccl::System s;
  s.gpus_per_node = static_cast<int32_t>(f.network.dims[0].npus);
  s.nodes = static_cast<int32_t>(f.network.total_npus() / f.network.dims[0].npus);
  const std::string gpu = m.need("gpu", "volta, ampere, hopper or blackwell").choice({"volta", "ampere", "hopper", "blackwell"});
  s.gpu = gpu == "volta" ? emu::nccl::Gpu::kVolta
          : gpu == "ampere" ? emu::nccl::Gpu::kAmpere
          : gpu == "hopper" ? emu::nccl::Gpu::kHopper : emu::nccl::Gpu::kBlackwell;
  s.intra = m.need("intra", "nvlink or pcie").choice({"nvlink", "pcie"}) == "nvlink" ? emu::nccl::Link::kNvlink
                                                                                       : emu::nccl::Link::kPcie;
  s.channels = static_cast<int32_t>(m.need("channels", "1..64").integer({1, 64}, "NCCL channels"));
  s.channel_gbps = m.need("channel_GBps", "GB/s").number({1e-3, 1e5}, "GB/s per channel, 10^9 bytes/s");
  if (const auto x = m.get("net_channel_GBps")) s.net_channel_gbps = x->number({1e-3, 1e5}, "GB/s per channel");
  if (s.nodes > 1 && s.net_channel_gbps == 0) {
    fail(path, v.line, "missing key \"nccl.net_channel_GBps\": the system has more than one node");
  }
  if (const auto x = m.get("net_latency_us")) s.net_latency_us = x->number({0, 1e6}, "microseconds");
  if (const auto x = m.get("nvls")) s.nvls = x->flag();
  if (const auto x = m.get("nvls_channels")) s.nvls_channels = static_cast<int32_t>(x->integer({2, 64}, "NVLS channels"));
  if (s.nvls && s.nvls_channels == 0) fail(path, v.line, "missing key \"nccl.nvls_channels\": nvls is true");
  if (s.nvls && s.gpu < emu::nccl::Gpu::kHopper) {
    m.need("nvls", "").wrong("NVLS needs NVSwitch 3rd generation: gpu hopper or blackwell");
  }
  if (const auto x = m.get("collnet")) s.collnet = x->flag();
  if (const auto x = m.get("call_overhead_us")) s.call_overhead_us = x->number({0, 1e6}, "microseconds");
  if (const auto x = m.get("hop_latency_scale")) s.hop_latency_scale = per_protocol(*x, {1e-3, 1e3}, "a factor");
  if (const auto x = m.get("bandwidth_efficiency")) s.bandwidth_efficiency = per_protocol(*x, {1e-3, 1}, "a factor");
  if (const auto x = m.get("ramp_bytes")) s.ramp_bytes = per_protocol(*x, {0, 1e12}, "bytes");
  try {
    if (const auto x = m.get("algorithms")) emu::nccl::apply_algo_list(x->scalar("a list like ring,tree"), s.algos);
  } catch (const std::invalid_argument& e) {
    m.need("algorithms", "").wrong(e.what());
  }
  try {
    if (const auto x = m.get("protocols")) emu::nccl::apply_proto_list(x->scalar("a list like LL,Simple"), s.protos);
  } catch (const std::invalid_argument& e) {
    m.need("protocols", "").wrong(e.what());
  }
  if (const auto x = m.get("validated")) f.nccl_validated = x->flag();
  f.nccl = s;
}

}  // namespace

FabricFile load_fabric_yaml(const std::string& path) {
  const YAML::Node root = load_yaml(path);
  if (!root || root.IsNull()) fail(path, std::nullopt, "empty file: expected at least the key \"topology\"");
  FabricFile f;
  f.source = path;
  f.network.source = path;
  f.system.source = path;
  const Map top = checked_map(path, root, yaml_line(root), "", kTopKeys, "a fabemu fabric file",
                              "a mapping of fabric keys, e.g. topology: [...]");

  const Value topology = top.need("topology", kTopologyForm);
  parse_topology(path, topology, f.network);
  check_network_size(path, topology.line,
                     network_size_keys(f.network),
                     f.network);
  const size_t dims = f.network.dims.size();

  if (const auto v = top.get("model")) f.model = v->choice({"analytical", "packet"});
  if (const auto v = top.get("mtu")) {
    f.mtu = static_cast<uint32_t>(v->integer({1, std::numeric_limits<uint32_t>::max()}, "bytes per packet, e.g. 4096"));
    if (f.model == "analytical") {
      v->wrong("the analytical model sends whole messages; mtu applies to model: packet only");
    }
  }
  emu::SystemConfig& sys = f.system;
  if (const auto v = top.get("collectives")) {
    const Map m = checked_map(path, v->node, v->line, "collectives", kCollectiveKeys, "\"collectives\"",
                              "a mapping, e.g. {all_reduce: [ring], all_gather: [ring]}");
    if (const auto c = m.get("all_reduce")) sys.all_reduce = parse_impls(*c, dims);
    if (const auto c = m.get("all_gather")) sys.all_gather = parse_impls(*c, dims);
    if (const auto c = m.get("reduce_scatter")) sys.reduce_scatter = parse_impls(*c, dims);
    if (const auto c = m.get("all_to_all")) sys.all_to_all = parse_impls(*c, dims);
  }
  if (const auto v = top.get("chunks")) {
    sys.preferred_dataset_splits = v->integer(kChunkRange, "chunks per collective");
  }
  if (const auto v = top.get("active_chunks")) {
    sys.active_chunks_per_dimension = v->integer(kChunkRange, "chunks in flight per dimension");
  }
  if (const auto v = top.get("endpoint_delay_ns")) sys.endpoint_delay = v->ns();
  if (const auto v = top.get("local_mem_bw_GBps")) {
    sys.local_mem_bw_gbps = v->number(kMemBwRange, "gigabytes per second, 10^9 bytes/s, e.g. 1600");
  }
  if (const auto v = top.get("scheduling")) sys.scheduling_policy = emu::scheduling_policy_named(v->choice({"LIFO", "FIFO", "EXPLICIT"}));
  if (const auto v = top.get("collective_optimization")) {
    sys.collective_optimization = emu::collective_optimization_named(v->choice({"baseline", "localBWAware"}));
  }
  if (const auto v = top.get("roofline")) {
    const Map m = checked_map(path, v->node, v->line, "roofline", kRooflineKeys, "\"roofline\"",
                              "a mapping, e.g. {enabled: true, peak_tflops: 900}");
    if (const auto e = m.get("enabled")) sys.roofline_enabled = e->flag();
    if (const auto p = m.get("peak_tflops")) {
      sys.peak_perf_tflops = p->number(kPeakTflopsRange, "TFLOPS, 10^12 FLOP/s, e.g. 900");
    }
    if (sys.roofline_enabled && (sys.peak_perf_tflops == 0 || sys.local_mem_bw_gbps == 0)) {
      fail(path, v->line,
           "key \"roofline.enabled\": the roofline needs \"roofline.peak_tflops\" (TFLOPS) and \"local_mem_bw_GBps\" "
           "(10^9 bytes/s) too");
    }
  }
  if (const auto v = top.get("nccl")) parse_nccl(path, *v, f);
  if (const auto v = top.get("collective_semantics")) {
    f.collective_semantics = v->choice({"astra", "nccl"});
    if (f.collective_semantics == "nccl" && !f.nccl) v->wrong("nccl needs the \"nccl:\" section (the system as NCCL sees it)");
  }
  return f;
}

}  // namespace fabemu::host
