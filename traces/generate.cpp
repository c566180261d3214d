#include "traces/generate.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "traces/error.h"
#include "traces/trace_set.h"
#include "traces/writer.h"

namespace fabemu::traces {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;

void validate(const CollectiveSpec& spec) {
  if (!ChakraProtoMsg::CollectiveCommType_IsValid(spec.type)) {
    throw std::invalid_argument(
        fmt::format("unknown collective type {} (known: 0..9, ALL_REDUCE..BARRIER)", static_cast<int>(spec.type)));
  }
  if (spec.ranks < 1) throw std::invalid_argument(fmt::format("ranks must be at least 1 (got {})", spec.ranks));
  if (spec.count < 1) {
    throw std::invalid_argument(fmt::format("count must be at least 1 (got {})", spec.count));
  }
  if (spec.count > std::numeric_limits<int64_t>::max() / spec.ranks) {
    throw std::invalid_argument(
        fmt::format("{} collectives on {} ranks need more node ids than fit in 63 bits", spec.count, spec.ranks));
  }
  if (spec.size_bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw std::invalid_argument(fmt::format(
        "size {} bytes does not fit comm_size (an int64 attribute; at most {})", spec.size_bytes,
        std::numeric_limits<int64_t>::max()));
  }
  if (spec.involved_dim && spec.involved_dim->empty()) {
    throw std::invalid_argument(
        "involved_dim is empty: give one flag per network dimension, or leave it out for all dimensions");
  }
  if (spec.pg_ranks) {
    if (spec.pg_ranks->empty()) {
      throw std::invalid_argument("pg_ranks is empty: a process group needs at least one rank");
    }
    if (is_default_pg_name(spec.pg_name)) {
      throw std::invalid_argument(fmt::format(
          "pg_name \"{}\" names the default group of all ranks; choose another name (e.g. \"1\") for "
          "pg_ranks",
          spec.pg_name));
    }
    std::set<int64_t> seen;
    for (const int64_t r : *spec.pg_ranks) {
      if (r < 0 || r >= spec.ranks) {
        throw std::invalid_argument(
            fmt::format("pg_ranks: rank {} is outside 0..{} (ranks = {})", r, spec.ranks - 1, spec.ranks));
      }
      if (!seen.insert(r).second) throw std::invalid_argument(fmt::format("pg_ranks: rank {} is listed twice", r));
    }
  }
}


}  // namespace

std::string collective_folder_name(CollectiveType type) {
  std::string name = collective_name(type);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string size_label(uint64_t bytes) {
  if (bytes == 0) return "0B";
  if (bytes % kGiB == 0) return fmt::format("{}GB", bytes / kGiB);
  if (bytes % kMiB == 0) return fmt::format("{}MB", bytes / kMiB);
  if (bytes % kKiB == 0) return fmt::format("{}KB", bytes / kKiB);
  return fmt::format("{}B", bytes);
}

uint64_t parse_size(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return std::invalid_argument(
        fmt::format("invalid size \"{}\": {} (expected e.g. 1MB, 64KiB, 2GB, 512B or 1048576)", text, why));
  };
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) throw bad("empty");
  size_t i = 0;
  uint64_t value = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    const auto digit = static_cast<uint64_t>(s[i] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) throw bad("too large");
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) {
    throw bad(s.front() == '-' ? "negative" : "it does not start with a number");
  }
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) throw bad("only whole numbers are accepted");
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  std::string unit;
  for (; i < s.size(); ++i) unit.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(s[i]))));
  uint64_t scale = 0;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KB" || unit == "KIB") {
    scale = kKiB;
  } else if (unit == "M" || unit == "MB" || unit == "MIB") {
    scale = kMiB;
  } else if (unit == "G" || unit == "GB" || unit == "GIB") {
    scale = kGiB;
  } else if (unit == "T" || unit == "TB" || unit == "TIB") {
    scale = kTiB;
  } else {
    throw bad(fmt::format("unknown unit \"{}\" (B, KB/KiB, MB/MiB, GB/GiB, TB/TiB)", s.substr(s.size() - unit.size())));
  }
  if (value > std::numeric_limits<uint64_t>::max() / scale) throw bad("too large");
  return value * scale;
}

std::string microbenchmark_prefix(const CollectiveSpec& spec) {
  const std::string coll = collective_folder_name(spec.type);
  return fmt::format("{}/{}npus_{}/{}", coll, spec.ranks, size_label(spec.size_bytes), coll);
}

std::vector<std::string> generate_collective(const CollectiveSpec& spec, const std::string& output_prefix) {
  validate(spec);
  make_parent_dir(output_prefix);

  const std::string base_name =
      !spec.name.empty() ? spec.name
                         : fmt::format("{}_{}npus_{}", collective_folder_name(spec.type), spec.ranks,
                                       size_label(spec.size_bytes));
  std::vector<bool> member(static_cast<size_t>(spec.ranks), !spec.pg_ranks.has_value());
  if (spec.pg_ranks) {
    for (const int64_t r : *spec.pg_ranks) member[static_cast<size_t>(r)] = true;
  }

  GlobalMetadata md;
  md.set_version(kSchemaVersion);

  // One template node; only id, name and data_deps change.
  Node node;
  node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  auto* cpu = node.add_attr();
  cpu->set_name("is_cpu_op");
  cpu->set_bool_val(false);
  auto* type = node.add_attr();
  type->set_name("comm_type");
  type->set_int64_val(static_cast<int64_t>(spec.type));
  auto* size = node.add_attr();
  size->set_name("comm_size");
  size->set_int64_val(static_cast<int64_t>(spec.size_bytes));
  if (spec.involved_dim) {
    auto* dims = node.add_attr();
    dims->set_name("involved_dim");
    for (const bool d : *spec.involved_dim) dims->mutable_bool_list()->add_values(d);
  }
  if (spec.pg_ranks) {
    auto* pg = node.add_attr();
    pg->set_name("pg_name");
    pg->set_string_val(spec.pg_name);
  }

  std::vector<std::string> paths;
  try {
    for (int64_t rank = 0; rank < spec.ranks; ++rank) {
      const std::string path = rank_file_path(output_prefix, rank);
      TraceWriter out(path, md);
      paths.push_back(path);
      if (member[static_cast<size_t>(rank)]) {
        for (int64_t k = 0; k < spec.count; ++k) {
          const auto id = static_cast<uint64_t>(rank + k * spec.ranks);
          node.set_id(id);
          node.set_name(spec.count == 1 ? base_name : fmt::format("{}_{}", base_name, k));
          node.clear_data_deps();
          if (k > 0) node.add_data_deps(id - static_cast<uint64_t>(spec.ranks));
          out.write(node);
        }
      }
      out.close();
    }
    if (spec.pg_ranks) {
      nlohmann::json groups = nlohmann::json::object();
      groups[spec.pg_name] = *spec.pg_ranks;
      write_text(output_prefix + ".comm_groups.json", groups.dump() + "\n");
    }
  } catch (...) {
    remove_files(paths);  // no partial workload is left behind
    throw;
  }
  return paths;
}

}  // namespace fabemu::traces
