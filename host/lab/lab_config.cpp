#include "host/lab/lab_config.h"

#include <fmt/core.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "host/config/config_util.h"
#include "host/lab/address.h"
#include "host/lab/error.h"

namespace fabemu::lab {

namespace cfg = host::config;
namespace asio = boost::asio;

namespace {

const std::vector<std::string_view> kTopKeys = {"token_file", "fabric", "wire", "dscp", "ecn", "shared_storage", "agents"};
const std::vector<std::string_view> kWires = {"fabemu", "roce"};
const std::vector<std::string_view> kEcns = {"not-ect", "ect0", "ect1"};
const std::vector<std::string_view> kAgentKeys = {"name", "control", "data", "ranks"};
const std::vector<std::string_view> kFabrics = {"socket", "model", "dpdk"};

std::string scalar(const std::string& file, const cfg::YamlEntry& e, std::string_view key) {
  if (!e.value.IsScalar()) cfg::fail(file, e.line, fmt::format("key \"{}\": expected a single value", key));
  return e.value.Scalar();
}

// "3", "0-2", "0,3,5-7" appended to `out`.
constexpr uint64_t kMaxRanksPerAgent = 65536;

void parse_rank_text(const std::string& file, uint64_t line, const std::string& text, std::vector<uint32_t>& out) {
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const auto dash = item.find('-');
    const auto lo = cfg::parse_int(item.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : cfg::parse_int(item.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi > 1'000'000) {
      cfg::fail(file, line,
                fmt::format("key \"ranks\": \"{}\" is not a rank or a range (expected e.g. 3, 0-2 or 0,3,5-7)", item));
    }
    // An agent's ranks each take a UDP port above its data port: more than 65,536 can never run, and a list
    // that repeats a range must not grow without bound before its duplicates are found.
    if (out.size() + static_cast<uint64_t>(*hi - *lo + 1) > kMaxRanksPerAgent) {
      cfg::fail(file, line, fmt::format("key \"ranks\": more than {} ranks for one agent (one UDP port each)",
                                        kMaxRanksPerAgent));
    }
    for (int64_t r = *lo; r <= *hi; ++r) out.push_back(static_cast<uint32_t>(r));
  }
}

asio::ip::udp::endpoint to_udp(const asio::ip::tcp::endpoint& e) { return {e.address(), e.port()}; }

const cfg::YamlEntry& required(const std::string& path, const cfg::YamlKeys& top, const char* key) {
  const auto it = top.find(key);
  if (it == top.end()) cfg::fail(path, std::nullopt, fmt::format("missing key \"{}\"", key));
  return it->second;
}

// `fabric` (socket, model or dpdk) and `wire` (fabemu, or roce with fabric dpdk).
void read_fabric_and_wire(const std::string& path, const cfg::YamlKeys& top, LabConfig& c) {
  if (const auto it = top.find("fabric"); it != top.end()) {
    c.fabric = scalar(path, it->second, "fabric");
    if (std::find(kFabrics.begin(), kFabrics.end(), c.fabric) == kFabrics.end()) {
      cfg::fail(path, it->second.line,
                fmt::format("key \"fabric\": \"{}\"{} is not a lab fabric; expected socket, model or dpdk", c.fabric,
                            cfg::did_you_mean(c.fabric, kFabrics)));
    }
  }
  if (const auto it = top.find("wire"); it != top.end()) {
    c.wire = scalar(path, it->second, "wire");
    if (std::find(kWires.begin(), kWires.end(), c.wire) == kWires.end()) {
      cfg::fail(path, it->second.line,
                fmt::format("key \"wire\": \"{}\"{} is not a wire format; expected fabemu or roce", c.wire,
                            cfg::did_you_mean(c.wire, kWires)));
    }
    if (c.wire == "roce" && c.fabric != "dpdk") {
      cfg::fail(path, it->second.line,
                fmt::format("key \"wire\": roce frames need fabric dpdk (the fabric is {})", c.fabric));
    }
  }
}

// `dscp` and `ecn`: the packets' traffic class, for a fabric with a wire.
void read_traffic_class(const std::string& path, const cfg::YamlKeys& top, LabConfig& c) {
  if (const auto it = top.find("dscp"); it != top.end()) {
    const std::string v = scalar(path, it->second, "dscp");
    const auto d = cfg::parse_int(v);
    if (!d || *d < 0 || *d > 63) {
      cfg::fail(path, it->second.line, fmt::format("key \"dscp\": \"{}\" is not a DSCP (0 to 63)", v));
    }
    c.dscp = static_cast<uint32_t>(*d);
  }
  if (const auto it = top.find("ecn"); it != top.end()) {
    c.ecn = scalar(path, it->second, "ecn");
    if (std::find(kEcns.begin(), kEcns.end(), c.ecn) == kEcns.end()) {
      cfg::fail(path, it->second.line,
                fmt::format("key \"ecn\": \"{}\"{} is not an ECN codepoint a sender sets; expected not-ect, ect0 or "
                            "ect1",
                            c.ecn, cfg::did_you_mean(c.ecn, kEcns)));
    }
  }
  for (const char* key : {"dscp", "ecn"}) {
    if (const auto it = top.find(key); it != top.end() && c.fabric == "model") {
      cfg::fail(path, it->second.line,
                fmt::format("key \"{}\": the traffic class needs a wire, fabric socket or dpdk (the fabric is model)", key));
    }
  }
}

void read_shared_storage(const std::string& path, const cfg::YamlKeys& top, LabConfig& c) {
  if (const auto it = top.find("shared_storage"); it != top.end()) {
    const std::string v = scalar(path, it->second, "shared_storage");
    if (v != "true" && v != "false") {
      cfg::fail(path, it->second.line, fmt::format("key \"shared_storage\": \"{}\" is not true or false", v));
    }
    c.shared_storage = v == "true";
  }
}

// An agent's `ranks`: one text ("0-2", "0,3,5-7") or a list of them; sorted, none twice, one UDP port each
// from its data port.
void read_agent_ranks(const std::string& path, const cfg::YamlKeys& keys, LabAgentConfig& a) {
  const cfg::YamlEntry& ranks = keys.at("ranks");
  if (ranks.value.IsSequence()) {
    for (const auto& r : ranks.value) {
      if (!r.IsScalar()) cfg::fail(path, cfg::yaml_line(r), "key \"ranks\": expected numbers or ranges");
      parse_rank_text(path, cfg::yaml_line(r), r.Scalar(), a.ranks);
    }
  } else {
    parse_rank_text(path, ranks.line, scalar(path, ranks, "ranks"), a.ranks);
  }
  if (a.ranks.empty()) cfg::fail(path, ranks.line, fmt::format("agent {}: no ranks", a.name));
  std::sort(a.ranks.begin(), a.ranks.end());
  if (const auto dup = std::adjacent_find(a.ranks.begin(), a.ranks.end()); dup != a.ranks.end()) {
    cfg::fail(path, ranks.line, fmt::format("agent {}: rank {} listed twice", a.name, *dup));
  }
  if (uint32_t{a.data.port()} + a.ranks.size() - 1 > 65535) {
    cfg::fail(path, keys.at("data").line,
              fmt::format("agent {}: {} ranks from UDP port {} run past port 65535", a.name, a.ranks.size(),
                          a.data.port()));
  }
}

// One entry of `agents`: its name and control address unique among the agents read so far.
LabAgentConfig read_agent(const std::string& path, const YAML::Node& node, std::set<std::string>& names,
                          std::set<asio::ip::tcp::endpoint>& controls) {
  const uint64_t line = cfg::yaml_line(node);
  if (!node.IsMap()) cfg::fail(path, line, "an agent is a mapping with the keys name, control, data and ranks");
  const cfg::YamlKeys keys = cfg::yaml_keys(path, node, kAgentKeys, "agents.", "an agent");
  LabAgentConfig a;
  a.line = line;
  for (const char* key : {"name", "control", "data", "ranks"}) {
    if (!keys.contains(key)) cfg::fail(path, line, fmt::format("agent: missing key \"{}\"", key));
  }
  a.name = scalar(path, keys.at("name"), "name");
  if (a.name.empty()) cfg::fail(path, keys.at("name").line, "key \"name\": empty");
  if (!names.insert(a.name).second) {
    cfg::fail(path, keys.at("name").line, fmt::format("agent name \"{}\" appears twice", a.name));
  }
  const auto endpoint = [&](const char* key) {
    const std::string text = scalar(path, keys.at(key), key);
    try {
      return parse_endpoint(text);
    } catch (const LabError& e) {
      cfg::fail(path, keys.at(key).line, fmt::format("agent {}: key \"{}\": {}", a.name, key, e.what()));
    }
  };
  a.control = endpoint("control");
  if (a.control.port() == 0) cfg::fail(path, keys.at("control").line, fmt::format("agent {}: control port 0", a.name));
  if (!controls.insert(a.control).second) {
    cfg::fail(path, keys.at("control").line,
              fmt::format("agent {}: control address {} is another agent's too", a.name, to_string(a.control)));
  }
  a.data = to_udp(endpoint("data"));
  if (a.data.port() == 0) cfg::fail(path, keys.at("data").line, fmt::format("agent {}: data port 0", a.name));
  read_agent_ranks(path, keys, a);
  return a;
}

}  // namespace

LabConfig load_lab_config(const std::string& path) {
  const YAML::Node root = cfg::load_yaml(path);
  if (!root.IsMap()) cfg::fail(path, cfg::yaml_line(root), "expected a mapping with the keys token_file, fabric, agents");
  LabConfig c;
  c.source = path;
  const cfg::YamlKeys top = cfg::yaml_keys(path, root, kTopKeys, "", "a lab file");
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  const std::string token = scalar(path, required(path, top, "token_file"), "token_file");
  c.token_file = std::filesystem::path(token).is_absolute() || folder.empty() ? token : (folder / token).string();
  read_fabric_and_wire(path, top, c);
  read_traffic_class(path, top, c);
  read_shared_storage(path, top, c);
  const cfg::YamlEntry& agents = required(path, top, "agents");
  if (!agents.value.IsSequence() || agents.value.size() == 0) {
    cfg::fail(path, agents.line, "key \"agents\": expected a non-empty list of agents");
  }
  std::set<std::string> names;
  std::set<asio::ip::tcp::endpoint> controls;
  for (const auto& node : agents.value) c.agents.push_back(read_agent(path, node, names, controls));
  return c;
}

void validate_ranks(LabConfig& c, uint32_t world_size) {
  constexpr uint32_t kNone = ~uint32_t{0};
  c.owner.assign(world_size, kNone);
  c.endpoints.assign(world_size, {});
  std::set<asio::ip::udp::endpoint> data;
  for (uint32_t i = 0; i < c.agents.size(); ++i) {
    const LabAgentConfig& a = c.agents[i];
    for (uint32_t k = 0; k < a.ranks.size(); ++k) {
      const uint32_t r = a.ranks[k];
      if (r >= world_size) {
        cfg::fail(c.source, a.line,
                  fmt::format("agent {}: rank {} is not a rank of the workload (0..{})", a.name, r, world_size - 1));
      }
      if (c.owner[r] != kNone) {
        cfg::fail(c.source, a.line,
                  fmt::format("agent {}: rank {} is agent {}'s already", a.name, r, c.agents[c.owner[r]].name));
      }
      c.owner[r] = i;
      c.endpoints[r] = asio::ip::udp::endpoint(a.data.address(), static_cast<uint16_t>(a.data.port() + k));
      if (!data.insert(c.endpoints[r]).second) {
        cfg::fail(c.source, a.line,
                  fmt::format("agent {}: rank {}'s data endpoint {}:{} is another rank's too", a.name, r,
                              c.endpoints[r].address().to_string(), c.endpoints[r].port()));
      }
    }
  }
  std::vector<uint32_t> missing;
  for (uint32_t r = 0; r < world_size; ++r) {
    if (c.owner[r] == kNone) missing.push_back(r);
  }
  if (!missing.empty()) {
    cfg::fail(c.source, std::nullopt,
              fmt::format("no agent hosts rank(s) {} of the workload's {}", format_ranks(missing), world_size));
  }
}

std::string format_ranks(const std::vector<uint32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace fabemu::lab
