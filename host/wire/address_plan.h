// Which Ethernet/IPv4/UDP endpoint each rank uses on the wire, and the way back from an IP to a rank.
// The default plan lives in 198.18.0.0/15 (RFC 2544 benchmarking space), so emulated traffic can never
// be taken for production addresses; an explicit plan comes from a small YAML file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "host/wire/frame.h"

namespace fabemu::host::dpdk {

inline constexpr uint32_t kBenchNet = 0xC6120000;      // 198.18.0.0
inline constexpr uint32_t kBenchNetMask = 0xFFFE0000;  // /15
inline constexpr uint16_t kDefaultBasePort = 47000;
// 198.18.0.1 .. 198.19.255.254: the /15 without its network and broadcast addresses.
inline constexpr uint32_t kMaxDefaultRanks = (~kBenchNetMask) - 1;

constexpr bool in_bench_net(uint32_t ip) noexcept { return (ip & kBenchNetMask) == kBenchNet; }

// Rank `rank`'s default endpoint: IP 198.18.0.1 + rank, MAC 02:fe:00 followed by the rank's low 24 bits
// (locally administered, unicast), UDP port `base_port`. std::out_of_range past the /15.
Endpoint default_endpoint(uint32_t rank, uint16_t base_port = kDefaultBasePort);

// "198.18.0.1" <-> 0xC6120001, "02:fe:00:00:00:01" <-> bytes. parse_* return nullopt on anything else.
std::string format_ip(uint32_t ip);
std::string format_mac(const MacAddr& mac);
std::optional<uint32_t> parse_ip(const std::string& text);
std::optional<MacAddr> parse_mac(const std::string& text);

class AddressPlan {
 public:
  // The default plan for `ranks` ranks; std::out_of_range when they do not fit the /15.
  static AddressPlan make_default(uint32_t ranks, uint16_t base_port = kDefaultBasePort);
  // One endpoint per rank, in rank order. std::invalid_argument on a repeated IP, or an IP outside
  // 198.18.0.0/15 unless allow_any_address.
  static AddressPlan from_endpoints(std::vector<Endpoint> endpoints, bool allow_any_address = false);
  // A YAML plan (format in README.md); traces::TraceError naming the file, the line and the key.
  static AddressPlan load_yaml(const std::string& path);

  uint32_t size() const noexcept { return static_cast<uint32_t>(endpoints_.size()); }
  const Endpoint& at(uint32_t rank) const { return endpoints_.at(rank); }
  // The rank owning `ip`, O(1): arithmetic for the default plan, a hash lookup otherwise.
  std::optional<uint32_t> rank_of_ip(uint32_t ip) const noexcept;
  // The ports a receiver accepts in `mode` (fabemu: the smallest to the largest rank port).
  DecodeRules decode_rules(WireMode mode) const noexcept;

 private:
  AddressPlan() = default;
  std::vector<Endpoint> endpoints_;
  bool is_default_ = false;
  std::unordered_map<uint32_t, uint32_t> rank_by_ip_;  // explicit plans only
  uint16_t port_lo_ = 0;
  uint16_t port_hi_ = 0;
};

}  // namespace fabemu::host::dpdk
