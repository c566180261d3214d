// Rank-to-address plans: the default one in 198.18.0.0/15 and explicit ones from YAML.
#include "host/wire/address_plan.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "traces/error.h"

namespace fabemu::host::dpdk {

namespace {

[[noreturn]] void fail(const std::string& file, std::optional<uint64_t> line, const std::string& detail) {
  throw traces::TraceError(traces::Location{.file = file, .line = line}, detail);
}

uint64_t line_of(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return m.line >= 0 ? static_cast<uint64_t>(m.line) + 1 : 1;
}

std::optional<uint64_t> parse_uint(std::string_view s, uint64_t max) {
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || v > max) return std::nullopt;
  return v;
}

struct Entry {
  YAML::Node value;
  uint64_t line;
};

// The keys of mapping `map`, each one of `known` and at most once.
std::map<std::string, Entry, std::less<>> keys_of(const std::string& file, const YAML::Node& map,
                                                  std::initializer_list<std::string_view> known,
                                                  const std::string& where) {
  if (!map.IsMap()) fail(file, line_of(map), fmt::format("{} must be a mapping", where));
  std::map<std::string, Entry, std::less<>> out;
  for (const auto& kv : map) {
    const uint64_t line = line_of(kv.first);
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail(file, line, fmt::format("unknown key \"{}\" in {}; the keys are {}", key, where, fmt::join(known, ", ")));
    }
    if (const auto it = out.find(key); it != out.end()) {
      fail(file, line, fmt::format("key \"{}\" appears twice in {} (first on line {})", key, where, it->second.line));
    }
    out.emplace(key, Entry{kv.second, line});
  }
  return out;
}

std::string scalar(const std::string& file, const Entry& e, const std::string& key) {
  if (!e.value.IsScalar()) fail(file, e.line, fmt::format("key \"{}\" must be a single value", key));
  return e.value.Scalar();
}

}  // namespace

Endpoint default_endpoint(uint32_t rank, uint16_t base_port) {
  if (rank >= kMaxDefaultRanks) {
    throw std::out_of_range(fmt::format("rank {} has no default address: 198.18.0.0/15 holds ranks 0 to {}", rank,
                                        kMaxDefaultRanks - 1));
  }
  Endpoint e;
  e.ip = kBenchNet + 1 + rank;
  e.mac = {0x02, 0xfe, 0x00, static_cast<uint8_t>(rank >> 16), static_cast<uint8_t>(rank >> 8),
           static_cast<uint8_t>(rank)};
  e.port = base_port;
  return e;
}

std::string format_ip(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xFF, (ip >> 8) & 0xFF, ip & 0xFF);
}

std::string format_mac(const MacAddr& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

std::optional<uint32_t> parse_ip(const std::string& text) {
  uint32_t ip = 0;
  std::string_view s = text;
  for (int i = 0; i < 4; ++i) {
    const size_t dot = i < 3 ? s.find('.') : s.size();
    if (dot == std::string_view::npos || dot == 0 || dot > 3) return std::nullopt;
    const auto v = parse_uint(s.substr(0, dot), 255);
    if (!v) return std::nullopt;
    ip = ip << 8 | static_cast<uint32_t>(*v);
    s = i < 3 ? s.substr(dot + 1) : std::string_view();
  }
  return ip;
}

std::optional<MacAddr> parse_mac(const std::string& text) {
  if (text.size() != 17) return std::nullopt;
  MacAddr m{};
  for (size_t i = 0; i < 6; ++i) {
    if (i < 5 && text[3 * i + 2] != ':') return std::nullopt;
    uint8_t b = 0;
    const char* p = text.data() + 3 * i;
    const auto [end, ec] = std::from_chars(p, p + 2, b, 16);
    if (ec != std::errc() || end != p + 2) return std::nullopt;
    m[i] = b;
  }
  return m;
}

AddressPlan AddressPlan::make_default(uint32_t ranks, uint16_t base_port) {
  if (ranks > kMaxDefaultRanks) {
    throw std::out_of_range(
        fmt::format("{} ranks do not fit the default address plan (198.18.0.0/15 holds {})", ranks, kMaxDefaultRanks));
  }
  AddressPlan plan;
  plan.endpoints_.reserve(ranks);
  for (uint32_t r = 0; r < ranks; ++r) plan.endpoints_.push_back(default_endpoint(r, base_port));
  plan.is_default_ = true;
  plan.port_lo_ = plan.port_hi_ = base_port;
  return plan;
}

AddressPlan AddressPlan::from_endpoints(std::vector<Endpoint> endpoints, bool allow_any_address) {
  AddressPlan plan;
  plan.rank_by_ip_.reserve(endpoints.size());
  plan.port_lo_ = 0xFFFF;
  for (uint32_t r = 0; r < endpoints.size(); ++r) {
    const Endpoint& e = endpoints[r];
    if (!allow_any_address && !in_bench_net(e.ip)) {
      throw std::invalid_argument(fmt::format(
          "rank {}: IP {} is outside 198.18.0.0/15 (set allow_any_address to use it)", r, format_ip(e.ip)));
    }
    if (const auto [it, fresh] = plan.rank_by_ip_.emplace(e.ip, r); !fresh) {
      throw std::invalid_argument(fmt::format("rank {}: IP {} is already rank {}'s", r, format_ip(e.ip), it->second));
    }
    plan.port_lo_ = std::min(plan.port_lo_, e.port);
    plan.port_hi_ = std::max(plan.port_hi_, e.port);
  }
  if (endpoints.empty()) plan.port_lo_ = 0;
  plan.endpoints_ = std::move(endpoints);
  return plan;
}

AddressPlan AddressPlan::load_yaml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::nullopt, fmt::format("cannot open: {}", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    fail(path, e.mark.is_null() ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(e.mark.line) + 1),
         fmt::format("invalid YAML: {}", e.msg));
  }
  if (!root || root.IsNull()) fail(path, std::nullopt, "empty address plan (expected a mapping with key \"ranks\")");
  const auto top = keys_of(path, root, {"allow_any_address", "base_port", "ranks"}, "the address plan");

  bool allow_any = false;
  if (const auto it = top.find("allow_any_address"); it != top.end()) {
    const std::string v = scalar(path, it->second, "allow_any_address");
    if (v != "true" && v != "false") {
      fail(path, it->second.line, fmt::format("key \"allow_any_address\" must be true or false, not \"{}\"", v));
    }
    allow_any = v == "true";
  }
  uint16_t base_port = kDefaultBasePort;
  const auto port_value = [&](const Entry& e, const std::string& key) {
    const std::string v = scalar(path, e, key);
    const auto p = parse_uint(v, 65535);
    if (!p || *p == 0) fail(path, e.line, fmt::format("key \"{}\" must be a UDP port 1 to 65535, not \"{}\"", key, v));
    return static_cast<uint16_t>(*p);
  };
  if (const auto it = top.find("base_port"); it != top.end()) base_port = port_value(it->second, "base_port");

  const auto ranks_it = top.find("ranks");
  if (ranks_it == top.end()) fail(path, std::nullopt, "missing key \"ranks\" (a list of {rank, mac, ip[, port]})");
  const Entry& ranks = ranks_it->second;
  if (!ranks.value.IsSequence() || ranks.value.size() == 0) {
    fail(path, ranks.line, "key \"ranks\" must be a non-empty list of {rank, mac, ip[, port]}");
  }

  std::vector<Endpoint> endpoints(ranks.value.size());
  std::vector<uint64_t> defined_on(ranks.value.size(), 0);
  std::unordered_map<uint32_t, uint64_t> ip_line;
  for (size_t i = 0; i < ranks.value.size(); ++i) {
    const YAML::Node item = ranks.value[i];
    const std::string where = fmt::format("ranks[{}]", i);
    const auto k = keys_of(path, item, {"rank", "mac", "ip", "port"}, where);
    for (const char* need : {"rank", "mac", "ip"}) {
      if (!k.contains(need)) fail(path, line_of(item), fmt::format("{}: missing key \"{}\"", where, need));
    }
    const Entry& re = k.at("rank");
    const std::string rank_text = scalar(path, re, where + ".rank");
    const auto rank = parse_uint(rank_text, endpoints.size() - 1);
    if (!rank) {
      fail(path, re.line,
           fmt::format("key \"{}.rank\" must be 0 to {} (one entry per rank), not \"{}\"", where, endpoints.size() - 1,
                       rank_text));
    }
    if (defined_on[*rank] != 0) {
      fail(path, re.line, fmt::format("key \"{}.rank\": rank {} is already defined on line {}", where, *rank,
                                      defined_on[*rank]));
    }
    defined_on[*rank] = re.line;
    Endpoint& e = endpoints[*rank];

    const Entry& me = k.at("mac");
    const std::string mac_text = scalar(path, me, where + ".mac");
    const auto mac = parse_mac(mac_text);
    if (!mac) fail(path, me.line, fmt::format("key \"{}.mac\" must look like 02:fe:00:00:00:01, not \"{}\"", where, mac_text));
    if ((*mac)[0] & 1) fail(path, me.line, fmt::format("key \"{}.mac\": {} is a multicast address", where, mac_text));
    if (std::all_of(mac->begin(), mac->end(), [](uint8_t b) { return b == 0; })) {
      fail(path, me.line, fmt::format("key \"{}.mac\": {} is the null address, no NIC's", where, mac_text));
    }
    e.mac = *mac;

    const Entry& ie = k.at("ip");
    const std::string ip_text = scalar(path, ie, where + ".ip");
    const auto ip = parse_ip(ip_text);
    if (!ip) fail(path, ie.line, fmt::format("key \"{}.ip\" must be a dotted IPv4 address, not \"{}\"", where, ip_text));
    if (!allow_any && !in_bench_net(*ip)) {
      fail(path, ie.line,
           fmt::format("key \"{}.ip\": {} is outside 198.18.0.0/15; set \"allow_any_address: true\" to use it", where,
                       ip_text));
    }
    if (!allow_any && (*ip == kBenchNet || *ip == (kBenchNet | ~kBenchNetMask))) {
      fail(path, ie.line,
           fmt::format("key \"{}.ip\": {} is the {} address of 198.18.0.0/15, no host's; set \"allow_any_address: "
                       "true\" to use it",
                       where, ip_text, *ip == kBenchNet ? "network" : "broadcast"));
    }
    if (const auto [it, fresh] = ip_line.emplace(*ip, ie.line); !fresh) {
      fail(path, ie.line, fmt::format("key \"{}.ip\": {} is already used on line {}", where, ip_text, it->second));
    }
    e.ip = *ip;
    const auto pe = k.find("port");
    e.port = pe == k.end() ? base_port : port_value(pe->second, where + ".port");
  }
  return from_endpoints(std::move(endpoints), allow_any);
}

std::optional<uint32_t> AddressPlan::rank_of_ip(uint32_t ip) const noexcept {
  if (is_default_) {
    const uint32_t r = ip - (kBenchNet + 1);
    if (r < endpoints_.size()) return r;
    return std::nullopt;
  }
  const auto it = rank_by_ip_.find(ip);
  if (it == rank_by_ip_.end()) return std::nullopt;
  return it->second;
}

DecodeRules AddressPlan::decode_rules(WireMode mode) const noexcept {
  return DecodeRules{.mode = mode, .port_lo = port_lo_, .port_hi = port_hi_};
}

}  // namespace fabemu::host::dpdk
