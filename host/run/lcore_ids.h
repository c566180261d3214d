// --dpdk-rx-lcore's forms: an lcore id, or a list of them (the CLI's validator and the DPDK backend).
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace fabemu::run {

// --dpdk-rx-lcore's id form: 1 to 4 decimal digits (EAL's lcore ids are far below 10,000); nullopt else.
inline std::optional<unsigned> lcore_id(std::string_view v) {
  if (v.empty() || v.size() > 4 || v.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  unsigned id = 0;
  for (const char c : v) id = id * 10 + static_cast<unsigned>(c - '0');
  return id;
}

// --dpdk-rx-lcore's list form: two or more lcore ids separated by commas; nullopt for anything else.
inline std::optional<std::vector<unsigned>> lcore_list(const std::string& v) {
  std::vector<unsigned> ids;
  std::stringstream list(v);
  for (std::string id; std::getline(list, id, ',');) {
    const auto one = lcore_id(id);
    if (!one) return std::nullopt;
    ids.push_back(*one);
  }
  if (ids.size() < 2 || v.back() == ',') return std::nullopt;
  return ids;
}

}  // namespace fabemu::run
