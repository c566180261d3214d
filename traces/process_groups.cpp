#include "traces/process_groups.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "traces/attrs.h"

namespace fabemu::traces {

std::string python_literal_to_json(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  auto ident = [&](size_t at) {
    return at < text.size() && (std::isalnum(static_cast<unsigned char>(text[at])) != 0 || text[at] == '_');
  };
  // A bare Python word (True/False/None) only when it stands alone, not inside a longer name.
  auto word = [&](size_t at, std::string_view w) {
    return text.compare(at, w.size(), w) == 0 && (at == 0 || !ident(at - 1)) && !ident(at + w.size());
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\'' || c == '"') {  // copy a string literal, re-quoted with "
      out.push_back('"');
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          if (text[i + 1] == '\'') {
            out.push_back('\'');
          } else {
            out.push_back('\\');
            out.push_back(text[i + 1]);
          }
          ++i;
        } else if (text[i] == '"') {
          out += "\\\"";
        } else {
          out.push_back(text[i]);
        }
      }
      out.push_back('"');
    } else if (word(i, "True")) {
      out += "true";
      i += 3;
    } else if (word(i, "False")) {
      out += "false";
      i += 4;
    } else if (word(i, "None")) {
      out += "null";
      i += 3;
    } else if (c == '(' || c == ')') {  // tuples become lists
      out.push_back(c == '(' ? '[' : ']');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

ProcessGroups::ProcessGroups(int64_t world_size) : world_size_(world_size) {
  for (int64_t r = 0; r < world_size_; ++r) default_group_.ranks.push_back(r);
}

nlohmann::json parse_python_literal(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(python_literal_to_json(text));
  if (doc.is_string()) doc = nlohmann::json::parse(python_literal_to_json(doc.get<std::string>()));
  return doc;
}

void ProcessGroups::add(const std::string& raw_name, std::vector<int64_t> ranks, const Location& where) {
  const std::string name = normalize_pg_name(raw_name);
  if (ranks.empty()) {
    for (int64_t r = 0; r < world_size_; ++r) ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (const int64_t r : ranks) {
    if (r < 0 || r >= world_size_) {
      throw TraceError(where, fmt::format("process group \"{}\" names rank {}, but the workload has ranks "
                                          "0..{}",
                                          raw_name, r, world_size_ - 1));
    }
  }
  if (name.empty()) {
    if (ranks == default_group_.ranks) return;
    throw TraceError(where, fmt::format("the process group named \"\" is the default group of all ranks (0..{}); "
                                        "give ranks [{}] a name of their own",
                                        world_size_ - 1, fmt::join(ranks, ", ")));
  }
  auto [it, inserted] = groups_.try_emplace(name, ProcessGroup{name, ranks, where});
  if (!inserted && it->second.ranks != ranks) {
    throw TraceError(where, fmt::format("process group \"{}\" is defined as ranks [{}] here but as [{}] at {}",
                                        raw_name, fmt::join(ranks, ", "), fmt::join(it->second.ranks, ", "),
                                        to_string(it->second.defined_at)));
  }
}

void ProcessGroups::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceError({.file = path}, "cannot open the comm-group file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw TraceError({.file = path, .offset = e.byte}, fmt::format("not valid JSON: {}", e.what()));
  } catch (const nlohmann::json::exception& e) {  // a number past a double ("1e400") has no position
    throw TraceError({.file = path}, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!doc.is_object()) {
    throw TraceError({.file = path}, "a comm-group file is a JSON object {\"<pg_name>\": [ranks...]}");
  }
  for (const auto& [key, value] : doc.items()) {
    if (!value.is_array() || !std::all_of(value.begin(), value.end(), [](const auto& v) {
          return v.is_number_integer();
        })) {
      throw TraceError({.file = path}, fmt::format("key \"{}\": expected a list of integer ranks", key));
    }
    add(key, value.get<std::vector<int64_t>>(), {.file = path});
  }
}

size_t ProcessGroups::add_from_metadata_node(const Node& node, const Location& where) {
  if (node.type() != ChakraProtoMsg::METADATA_NODE || !node.has_inputs()) return 0;
  const std::string& values = node.inputs().values();
  if (values.find("pg_name") == std::string::npos) return 0;
  nlohmann::json doc;
  try {
    doc = parse_python_literal(values);
  } catch (const nlohmann::json::exception& e) {
    throw TraceError(where, fmt::format("METADATA_NODE process-group list is not readable: {}", e.what()));
  }
  if (doc.is_object()) doc = nlohmann::json::array({doc});
  size_t added = 0;
  for (const auto& pg : doc) {
    if (!pg.is_object() || !pg.contains("pg_name")) continue;
    std::string name = pg["pg_name"].is_string() ? pg["pg_name"].get<std::string>() : pg["pg_name"].dump();
    std::vector<int64_t> ranks;
    if (pg.contains("ranks") && pg["ranks"].is_array()) {
      for (const auto& r : pg["ranks"]) {
        if (!r.is_number_integer()) {
          throw TraceError(where, fmt::format("process group \"{}\": rank {} is not an integer", name, r.dump()));
        }
        ranks.push_back(r.get<int64_t>());
      }
    }
    add(name, std::move(ranks), where);
    ++added;
  }
  return added;
}

const ProcessGroup* ProcessGroups::find(const std::string& raw_name) const {
  const std::string name = normalize_pg_name(raw_name);
  const auto it = groups_.find(name);
  // "0" is the default group (PyTorch's WORLD, one issue order with pg_name "") unless defined as fewer ranks.
  if (is_default_pg_name(name) && (it == groups_.end() || it->second.ranks == default_group_.ranks)) {
    return &default_group_;
  }
  return it != groups_.end() ? &it->second : nullptr;
}

}  // namespace fabemu::traces
