#include "host/config/astra_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/config/config_util.h"
#include "traces/error.h"

namespace fabemu::host {
namespace {

using namespace config;  // NOLINT(google-build-using-namespace): the shared helpers of host/config
using traces::Location;
using traces::TraceError;
using json = nlohmann::json;

// --- network.yml ----------------------------------------------------------------------------------------
// Read as ASTRA-sim's analytical backend reads it (astra-network-analytical,
// common/network-parser/NetworkParser.cc): four lists of one entry per dimension; names Ring,
// FullyConnected, Switch; npus_count > 1; bandwidth > 0; latency >= 0. Unlike it, an unknown key is
// an error (it ignores one, so a misspelt key silently left a default).

constexpr std::string_view kTopology = "topology";
constexpr std::string_view kNpusCount = "npus_count";
constexpr std::string_view kBandwidth = "bandwidth";
constexpr std::string_view kLatency = "latency";
const std::vector<std::string_view> kNetworkKeys = {kTopology, kNpusCount, kBandwidth, kLatency};

std::string network_key_form(std::string_view key) {
  if (key == kTopology) return "a list of Ring, FullyConnected or Switch, one per dimension, e.g. topology: [ Ring ]";
  if (key == kNpusCount) {
    return "a list of NPU counts (integers >= 2, at most 2^24 links in all), one per dimension, e.g. npus_count: [ 8 ]";
  }
  if (key == kBandwidth) {
    return "a list of positive link bandwidths in ASTRA-sim GB/s (2^30 bytes/s), one per dimension, "
           "e.g. bandwidth: [ 50.0 ]";
  }
  return "a list of link latencies in ns (>= 0, a whole number of ps: at most 3 decimals), one per dimension, "
         "e.g. latency: [ 500.0 ]";
}

emu::DimTopology parse_topology(const std::string& path, const YAML::Node& entry, size_t dim) {
  static const std::vector<std::string_view> names = {"Ring", "FullyConnected", "Switch"};
  const std::string& name = entry.Scalar();
  if (name == "Ring") return emu::DimTopology::kRing;
  if (name == "FullyConnected") return emu::DimTopology::kFullyConnected;
  if (name == "Switch") return emu::DimTopology::kSwitch;
  fail(path, yaml_line(entry),
       fmt::format("key \"topology\", dimension {}: unknown topology \"{}\"{}; expected {} (names are case-sensitive)",
                   dim, name, did_you_mean(name, names), join(names)));
}

}  // namespace

emu::NetworkConfig load_network_yml(const std::string& path) {
  const YAML::Node root = load_yaml(path);
  if (!root || root.IsNull()) {
    fail(path, std::nullopt, fmt::format("empty file: expected the keys {}", join(kNetworkKeys, " and ")));
  }
  if (!root.IsMap()) {
    fail(path, yaml_line(root), fmt::format("expected a mapping with the keys {}", join(kNetworkKeys, " and ")));
  }

  // Every key once, known, holding a sequence of scalars.
  const YamlKeys found = yaml_keys(path, root, kNetworkKeys, "", "a network file");
  for (const auto& kv : root) {  // in file order
    const std::string& key = kv.first.Scalar();
    if (!kv.second.IsSequence()) {
      fail(path, yaml_line(kv.first), fmt::format("key \"{}\": expected {}", key, network_key_form(key)));
    }
    for (const auto& item : kv.second) {
      if (!item.IsScalar()) {
        fail(path, yaml_line(item), fmt::format("key \"{}\": expected {}", key, network_key_form(key)));
      }
    }
  }
  for (const auto key : kNetworkKeys) {
    if (found.find(key) == found.end()) {
      fail(path, std::nullopt, fmt::format("missing key \"{}\": expected {}", key, network_key_form(key)));
    }
  }

  const auto& [topologies, topology_line] = found.find(kTopology)->second;
  const size_t dims = topologies.size();
  if (dims == 0) fail(path, topology_line, fmt::format("key \"topology\": expected {}", network_key_form(kTopology)));
  for (const auto key : kNetworkKeys) {
    const auto& [value, line] = found.find(key)->second;
    if (value.size() != dims) {
      fail(path, line,
           fmt::format("key \"{}\" has {} entries but \"topology\" has {}: every list holds one entry per dimension",
                       key, value.size(), dims));
    }
  }

  emu::NetworkConfig config;
  config.source = path;
  config.dims.resize(dims);
  const YAML::Node& npus = found.find(kNpusCount)->second.value;
  const YAML::Node& bandwidths = found.find(kBandwidth)->second.value;
  const YAML::Node& latencies = found.find(kLatency)->second.value;
  int64_t total_npus = 1;
  for (size_t d = 0; d < dims; ++d) {
    emu::NetworkDim& dim = config.dims[d];
    dim.topology = parse_topology(path, topologies[d], d);

    const YAML::Node n = npus[d];
    const auto count = parse_int(n.Scalar());
    if (!count || !in_range(*count, kDimNpusRange)) {
      fail(path, yaml_line(n),
           fmt::format("key \"npus_count\", dimension {}: \"{}\" is not {} (ASTRA-sim requires more than one NPU "
                       "per dimension); expected {}",
                       d, n.Scalar(), range_text(kDimNpusRange), network_key_form(kNpusCount)));
    }
    dim.npus = *count;
    if (total_npus > std::numeric_limits<int32_t>::max() / dim.npus) {
      fail(path, yaml_line(n), "key \"npus_count\": the network holds more than 2^31-1 NPUs (ASTRA-sim's limit)");
    }
    total_npus *= dim.npus;

    const YAML::Node b = bandwidths[d];
    const auto gbps = parse_double(b.Scalar());
    if (!gbps || *gbps <= 0) {
      fail(path, yaml_line(b),
           fmt::format("key \"bandwidth\", dimension {}: \"{}\" is not a positive number; expected {}", d, b.Scalar(),
                       network_key_form(kBandwidth)));
    }
    try {
      dim.bandwidth = emu::Rate::from_astra_gbps(*gbps);
    } catch (const std::invalid_argument& e) {
      fail(path, yaml_line(b), fmt::format("key \"bandwidth\", dimension {}: {}", d, e.what()));
    }
    dim.bandwidth_gbps = *gbps;

    const YAML::Node l = latencies[d];
    dim.latency = ns_to_duration(path, yaml_line(l), fmt::format("key \"latency\", dimension {}", d), l.Scalar(),
                                 network_key_form(kLatency));
  }
  check_network_size(path, found.find(kNpusCount)->second.line, "key \"npus_count\"", config);
  return config;
}

namespace {

// --- system.json ----------------------------------------------------------------------------------------
// Read as ASTRA-sim 2.x reads it (astra-sim/system/Sys.cc: Sys::Sys and Sys::initialize_sys;
// astra-sim/system/astraccl/CollectiveImplLookup.cc: setup_collective_impl_from_config,
// generate_collective_impl_from_input; topology/GeneralComplexTopology.cc for the per-dimension
// lists). ASTRA-sim reads only the keys it knows and ignores every other one; here an unknown key
// is an error, and the keys of other ASTRA-sim versions that change nothing are accepted and listed
// in SystemConfig::ignored_keys.

// One top-level key of the file and where it is.
struct JsonKey {
  std::string name;
  uint64_t line = 1;
};

// The top-level object's keys with their lines, in file order (nlohmann::json keeps neither order nor
// positions, nor duplicates). Also called on text the parser refused (a number beyond a double stops it
// before the rest is read): a key that does not parse as a JSON string is left out, never thrown.
std::vector<JsonKey> top_level_keys(const std::string& text) {
  std::vector<JsonKey> keys;
  int depth = 0;
  uint64_t line = 1;
  bool want_key = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      const size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (depth == 1 && want_key) {
        const json key = json::parse(text.substr(start, i - start + 1), nullptr, /*allow_exceptions=*/false);
        if (key.is_string()) keys.push_back({key.get<std::string>(), line});
        want_key = false;
      }
    } else if (c == '{' || c == '[') {
      want_key = ++depth == 1;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 1) {
      want_key = true;
    }
  }
  return keys;
}

// What a key reader needs: the value and where to point when it is wrong.
struct Field {
  const std::string& file;
  const std::string& key;
  uint64_t line;
  const json& value;
  size_t dims;

  [[noreturn]] void bad(const std::string& expected) const {
    fail(file, line, fmt::format("key \"{}\": expected {}; got {}", key, expected, value.dump()));
  }

  // A whole number in `range` (10 and 10.0 alike; ASTRA-sim truncates 10.5, which is refused here).
  // `what` says what it counts; the message shows the range.
  int64_t integer(IntRange range, std::string_view what) const {
    const std::string expected = fmt::format("{} ({})", range_text(range), what);
    int64_t v = 0;
    if (value.is_number_unsigned()) {
      if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) bad(expected);
      v = static_cast<int64_t>(value.get<uint64_t>());
    } else if (value.is_number_integer()) {
      v = value.get<int64_t>();
    } else if (value.is_number_float()) {
      const double d = value.get<double>();
      if (!std::isfinite(d) || std::trunc(d) != d || d < -9.2e18 || d > 9.2e18) bad(expected);
      v = static_cast<int64_t>(d);
    } else {
      bad(expected);
    }
    if (!in_range(v, range)) bad(expected);
    return v;
  }

  // Whole nanoseconds, at most 2^64-1 ps.
  emu::Duration nanoseconds() const {
    const int64_t ns = integer(kWholeNsRange, fmt::format("a whole number of nanoseconds, e.g. \"{}\": 10", key));
    return emu::Duration::from_ns(static_cast<uint64_t>(ns));
  }

  // A finite number; > 0 when `positive`, else >= 0.
  double number(bool positive, const std::string& expected) const {
    if (!value.is_number()) bad(expected);
    const double v = value.get<double>();
    if (!std::isfinite(v) || v < 0 || (positive && v == 0)) bad(expected);
    return v;
  }

  // A number in `range`, in `unit`.
  double number(RealRange range, std::string_view unit) const {
    const std::string expected = fmt::format("{} ({})", range_text(range), unit);
    if (!value.is_number()) bad(expected);
    const double v = value.get<double>();
    if (!in_range(v, range)) bad(expected);
    return v;
  }

  // 0/1 or false/true. (ASTRA-sim tests `value != 0`, under which JSON false counts as on.)
  bool flag() const {
    if (value.is_boolean()) return value.get<bool>();
    return integer({0, 1}, fmt::format("or false/true, e.g. \"{}\": 0", key)) == 1;
  }

  std::string string(const std::string& expected) const {
    if (!value.is_string()) bad(expected);
    return value.get<std::string>();
  }

  // One of `allowed`, as written.
  std::string choice(const std::vector<std::string_view>& allowed) const {
    const std::string s = string(fmt::format("one of {} (a string)", join(allowed)));
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      fail(file, line,
           fmt::format("key \"{}\": unknown value \"{}\"{}; expected {} (case-sensitive)", key, s,
                       did_you_mean(s, allowed), join(allowed)));
    }
    return s;
  }

  std::vector<emu::CollectiveImpl> implementations() const;

  // "*-implementation-custom": ASTRA-sim takes a list of exactly one ET prefix (one file covers every
  // dimension) and throws otherwise.
  std::string custom_prefix() const {
    const std::string expected =
        fmt::format("a list of exactly one Chakra ET prefix (one file set covers every dimension), e.g. "
                    "\"{}\": [\"path/custom_allreduce\"]",
                    key);
    if (!value.is_array() || value.size() != 1 || !value[0].is_string() || value[0].get<std::string>().empty()) {
      bad(expected);
    }
    return resolve_custom(value[0].get<std::string>());
  }

  // A custom implementation's path: relative to the system file's folder first, then as written (ASTRA-sim's
  // form: relative to the working directory). It resolves when PREFIX.0.et (or .et.gz) or the .xml exists.
  std::string resolve_custom(const std::string& written) const {
    namespace fs = std::filesystem;
    const auto found = [](const fs::path& p) {
      std::error_code ec;
      if (p.extension() == ".xml") return fs::is_regular_file(p, ec);
      return fs::is_regular_file(p.string() + ".0.et", ec) || fs::is_regular_file(p.string() + ".0.et.gz", ec);
    };
    const fs::path path(written);
    std::vector<std::string> tried;
    if (path.is_relative()) {
      const fs::path beside = (fs::path(file).parent_path() / path).lexically_normal();
      if (found(beside)) return beside.string();
      tried.push_back(fmt::format("{} (relative to the system file's folder)", beside.string()));
    }
    if (found(path)) return written;
    tried.push_back(fmt::format("{} ({})", written, path.is_relative() ? "relative to the working directory, as ASTRA-sim "
                                                                         "reads it"
                                                                       : "absolute"));
    const std::string what = path.extension() == ".xml" ? "the MSCCL-IR file" : "PREFIX.0.et of the Chakra ET prefix";
    fail(file, line, fmt::format("key \"{}\": custom implementation \"{}\" not found: looked for {} at {}", key, written,
                                 what, tried.size() == 1 ? tried[0] : tried[0] + " and " + tried[1]));
  }
};


std::vector<emu::CollectiveImpl> Field::implementations() const {
  const std::string expected = fmt::format(
      "a list of one implementation per dimension (at most {}), each one of {}, e.g. \"{}\": [\"ring\"]", dims,
      join(kCollectiveImplNames), key);
  if (!value.is_array() || value.empty()) bad(expected);
  // ASTRA-sim asserts at most one entry per dimension (GeneralComplexTopology); fewer entries build
  // the collective over the first dimensions only.
  if (value.size() > dims) {
    fail(file, line,
         fmt::format("key \"{}\" lists {} implementations but the network has {} dimension{}: at most one per "
                     "dimension",
                     key, value.size(), dims, dims == 1 ? "" : "s"));
  }
  std::vector<emu::CollectiveImpl> out;
  for (size_t d = 0; d < value.size(); ++d) {
    if (!value[d].is_string()) bad(expected);
    std::string why;
    const auto impl = parse_collective_impl(value[d].get<std::string>(), why);
    if (!impl) fail(file, line, fmt::format("key \"{}\", dimension {}: {}", key, d, why));
    out.push_back(*impl);
  }
  return out;
}

using Reader = void (*)(const Field&, emu::SystemConfig&);
struct SystemKey {
  std::string_view name;
  Reader read;
};

void ignore(const Field& f, emu::SystemConfig& c) { c.ignored_keys.push_back(f.key); }

// Every key accepted, in the order of host/config/README.md.
const std::vector<SystemKey>& system_keys() {
  static const std::vector<SystemKey> keys = {
      {"scheduling-policy",
       [](const Field& f, emu::SystemConfig& c) { c.scheduling_policy = emu::scheduling_policy_named(f.choice({"LIFO", "FIFO", "EXPLICIT"})); }},
      {"endpoint-delay", [](const Field& f, emu::SystemConfig& c) { c.endpoint_delay = f.nanoseconds(); }},
      {"active-chunks-per-dimension",
       [](const Field& f, emu::SystemConfig& c) {
         c.active_chunks_per_dimension = f.integer(kChunkRange, "chunks in flight per dimension");
       }},
      {"preferred-dataset-splits",
       [](const Field& f, emu::SystemConfig& c) {
         c.preferred_dataset_splits = f.integer(kChunkRange, "chunks per collective");
       }},
      {"all-reduce-implementation", [](const Field& f, emu::SystemConfig& c) { c.all_reduce = f.implementations(); }},
      {"all-gather-implementation", [](const Field& f, emu::SystemConfig& c) { c.all_gather = f.implementations(); }},
      {"reduce-scatter-implementation",
       [](const Field& f, emu::SystemConfig& c) { c.reduce_scatter = f.implementations(); }},
      {"all-to-all-implementation", [](const Field& f, emu::SystemConfig& c) { c.all_to_all = f.implementations(); }},
      {"all-reduce-implementation-custom",
       [](const Field& f, emu::SystemConfig& c) { c.all_reduce_custom = f.custom_prefix(); }},
      {"all-gather-implementation-custom",
       [](const Field& f, emu::SystemConfig& c) { c.all_gather_custom = f.custom_prefix(); }},
      {"reduce-scatter-implementation-custom",
       [](const Field& f, emu::SystemConfig& c) { c.reduce_scatter_custom = f.custom_prefix(); }},
      {"all-to-all-implementation-custom",
       [](const Field& f, emu::SystemConfig& c) { c.all_to_all_custom = f.custom_prefix(); }},
      {"per-node-custom-implementation",
       [](const Field& f, emu::SystemConfig&) {
         f.string("the path of a YAML file mapping node ids to ET prefixes");
         fail(f.file, f.line,
              "key \"per-node-custom-implementation\" is not supported by fabemu: name a custom implementation per "
              "collective type (\"all-reduce-implementation-custom\", ...; docs/custom_collectives.md)");
       }},
      {"collective-optimization",
       [](const Field& f, emu::SystemConfig& c) { c.collective_optimization = emu::collective_optimization_named(f.choice({"baseline", "localBWAware"})); }},
      {"local-mem-bw",
       [](const Field& f, emu::SystemConfig& c) {
         c.local_mem_bw_gbps = f.number(kMemBwRange, "GB/s, 10^9 bytes/s, e.g. \"local-mem-bw\": 1600");
       }},
      {"roofline-enabled", [](const Field& f, emu::SystemConfig& c) { c.roofline_enabled = f.flag(); }},
      {"peak-perf",
       [](const Field& f, emu::SystemConfig& c) {
         c.peak_perf_tflops = f.number(kPeakTflopsRange, "TFLOPS, 10^12 FLOP/s, e.g. \"peak-perf\": 900");
       }},
      {"replay-only", [](const Field& f, emu::SystemConfig& c) { c.replay_only = f.flag(); }},
      {"local-reduction-delay", [](const Field& f, emu::SystemConfig& c) { c.local_reduction_delay = f.nanoseconds(); }},
      {"model-shared-bus", [](const Field& f, emu::SystemConfig& c) { c.model_shared_bus = f.flag(); }},
      {"L", [](const Field& f, emu::SystemConfig& c) { c.loggp_L = f.number(false, "a number of ns >= 0"); }},
      {"o", [](const Field& f, emu::SystemConfig& c) { c.loggp_o = f.number(false, "a number of ns >= 0"); }},
      {"g", [](const Field& f, emu::SystemConfig& c) { c.loggp_g = f.number(false, "a number of ns >= 0"); }},
      {"G", [](const Field& f, emu::SystemConfig& c) { c.loggp_G = f.number(false, "a number of ns per byte >= 0"); }},
      // Outputs of ASTRA-sim only (logging, local-memory usage trace): validated, then ignored.
      {"trace-enabled",
       [](const Field& f, emu::SystemConfig& c) {
         f.flag();
         ignore(f, c);
       }},
      {"track-local-mem",
       [](const Field& f, emu::SystemConfig& c) {
         f.flag();
         ignore(f, c);
       }},
      {"local-mem-trace-filename",
       [](const Field& f, emu::SystemConfig& c) {
         f.string("a file name");
         ignore(f, c);
       }},
      // Keys of ASTRA-sim 1.x that 2.x no longer reads (its schedulers are fixed to FIFO within a
      // dimension and ascending across dimensions); recorded for reports, ignored.
      {"boost-mode",
       [](const Field& f, emu::SystemConfig& c) {
         c.boost_mode = f.integer(kBoostModeRange, "ASTRA-sim 1.x's boost mode");
         ignore(f, c);
       }},
      {"intra-dimension-scheduling",
       [](const Field& f, emu::SystemConfig& c) {
         c.intra_dimension_scheduling = f.string("a scheduler name");
         ignore(f, c);
       }},
      {"inter-dimension-scheduling",
       [](const Field& f, emu::SystemConfig& c) {
         c.inter_dimension_scheduling = f.string("a scheduler name");
         ignore(f, c);
       }},
      {"packet-routing",
       [](const Field& f, emu::SystemConfig& c) {
         f.string("a routing name");
         ignore(f, c);
       }},
      {"injection-policy",
       [](const Field& f, emu::SystemConfig& c) {
         f.string("a policy name");
         ignore(f, c);
       }},
  };
  return keys;
}

}  // namespace

emu::SystemConfig load_system_json(const std::string& path, size_t dims) {
  if (dims == 0) throw std::invalid_argument("load_system_json: the network must have at least one dimension");
  const std::string text = read_text(path);
  json root;
  std::string last_key;  // the top-level key being read, for errors the parser gives without a position
  try {
    root = json::parse(text, [&last_key](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key && depth == 1) last_key = parsed.get<std::string>();
      return true;
    });
  } catch (const json::out_of_range& e) {
    // A number beyond a double ("1e400"): nlohmann says neither where nor which key.
    std::string why = e.what();
    if (const auto end = why.find("] "); end != std::string::npos) why = why.substr(end + 2);
    std::optional<uint64_t> line;
    for (const JsonKey& k : top_level_keys(text)) {
      if (k.name == last_key) line = k.line;
    }
    fail(path, line,
         fmt::format("{}{} (beyond the range of a number, about 1.8e308)",
                     last_key.empty() ? std::string() : fmt::format("key \"{}\": ", last_key), why));
  } catch (const json::parse_error& e) {
    // e.byte counts the bytes read, the offending one included.
    const uint64_t offset = e.byte > 0 ? e.byte - 1 : 0;
    const auto end = text.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(offset, text.size()));
    const uint64_t line = 1 + static_cast<uint64_t>(std::count(text.begin(), end, '\n'));
    std::string why = e.what();
    if (const auto at = why.find("column"); at != std::string::npos) {
      if (const auto colon = why.find(": ", at); colon != std::string::npos) why = why.substr(colon + 2);
    }
    throw TraceError(Location{.file = path, .line = line, .offset = offset}, "invalid JSON: " + why);
  }
  if (!root.is_object()) fail(path, 1, "expected a JSON object of system-layer keys, e.g. {\"endpoint-delay\": 10}");

  std::vector<std::string_view> known;
  for (const auto& k : system_keys()) known.push_back(k.name);

  emu::SystemConfig config;
  config.source = path;
  std::map<std::string, uint64_t, std::less<>> seen;  // key -> line
  for (const JsonKey& key : top_level_keys(text)) {
    if (const auto it = seen.find(key.name); it != seen.end()) {
      fail(path, key.line,
           fmt::format("key \"{}\" appears twice (first on line {}); ASTRA-sim would silently use the last", key.name,
                       it->second));
    }
    seen.emplace(key.name, key.line);
    const auto& keys = system_keys();
    const auto spec = std::find_if(keys.begin(), keys.end(), [&](const SystemKey& k) { return k.name == key.name; });
    if (spec == keys.end()) {
      fail(path, key.line,
           fmt::format("unknown key \"{}\"{} (ASTRA-sim would silently ignore it); the known keys are {} "
                       "(host/config/README.md)",
                       key.name, did_you_mean(key.name, known), join(known, " and ")));
    }
    spec->read(Field{path, key.name, key.line, root.at(key.name), dims}, config);
  }

  // ASTRA-sim builds its roofline from both numbers and divides by them.
  if (config.roofline_enabled && (config.peak_perf_tflops == 0 || config.local_mem_bw_gbps == 0)) {
    fail(path, seen.find("roofline-enabled")->second,
         "key \"roofline-enabled\": the roofline needs \"peak-perf\" (TFLOPS) and \"local-mem-bw\" (GB/s) too");
  }
  return config;
}

}  // namespace fabemu::host
