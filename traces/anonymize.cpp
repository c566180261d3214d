#include "traces/anonymize.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "traces/attrs.h"
#include "traces/error.h"
#include "traces/process_groups.h"
#include "traces/writer.h"

namespace fabemu::traces {
namespace {

bool is_text(const Attribute& a) {
  switch (a.value_case()) {
    case Attribute::kStringVal:
    case Attribute::kStringList:
    case Attribute::kBytesVal:
    case Attribute::kBytesList: return true;
    default: return false;
  }
}

bool keep_node_attr(const Attribute& a) {
  if (a.name() == "op_schema") return false;
  return !is_text(a) || a.name() == "pg_name";
}

// Keeps the attributes for which `keep` holds, in order; returns how many were removed.
template <typename Keep>
uint64_t filter_attrs(google::protobuf::RepeatedPtrField<Attribute>& attrs, Keep keep) {
  int kept = 0;
  for (int i = 0; i < attrs.size(); ++i) {
    if (!keep(attrs.Get(i))) continue;
    if (i != kept) attrs.SwapElements(i, kept);
    attrs.Mutable(kept)->clear_doc_string();
    ++kept;
  }
  const int removed = attrs.size() - kept;
  if (removed > 0) attrs.DeleteSubrange(kept, removed);
  return static_cast<uint64_t>(removed);
}

// The process groups of a METADATA_NODE's inputs.values reduced to pg_name, ranks and group_size, as
// JSON; nullopt when the text is not a readable process-group list (then it is cleared like any value).
std::optional<std::string> process_groups_only(const std::string& values) {
  if (values.find("pg_name") == std::string::npos) return std::nullopt;
  nlohmann::json doc;
  try {
    doc = parse_python_literal(values);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  if (doc.is_object()) doc = nlohmann::json::array({doc});
  if (!doc.is_array()) return std::nullopt;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& pg : doc) {
    if (!pg.is_object() || !pg.contains("pg_name")) continue;
    const auto& name = pg["pg_name"];
    if (!name.is_string() && !name.is_number_integer()) continue;
    nlohmann::json kept = {{"pg_name", name}};
    if (pg.contains("ranks")) {
      const auto& ranks = pg["ranks"];
      if (ranks.is_array()) {  // anything else means all ranks to the reader, as does leaving it out
        for (const auto& r : ranks) {
          if (!r.is_number_integer()) return std::nullopt;
        }
        kept["ranks"] = ranks;
      }
    }
    if (pg.contains("group_size") && pg["group_size"].is_number_integer()) kept["group_size"] = pg["group_size"];
    out.push_back(std::move(kept));
  }
  if (out.empty()) return std::nullopt;
  return out.dump();
}

void clear_values(ChakraProtoMsg::IOInfo& io, AnonymizeStats& stats, bool metadata_node) {
  if (io.values().empty()) return;
  if (metadata_node) {
    if (auto groups = process_groups_only(io.values())) {
      if (*groups != io.values()) {
        io.set_values(std::move(*groups));
        ++stats.values_cleared;
      }
      return;
    }
  }
  io.clear_values();
  ++stats.values_cleared;
}

}  // namespace

void anonymize_metadata(GlobalMetadata& md) {
  filter_attrs(*md.mutable_attr(), [](const Attribute& a) { return a.name() == "schema"; });
}

void anonymize_node(Node& node, AnonymizeStats& stats) {
  ++stats.nodes;
  std::string name = fmt::format("{}_{}", node_type_name(node.type()), node.id());
  if (name != node.name()) {
    node.set_name(std::move(name));
    ++stats.names_replaced;
  }
  const bool metadata_node = node.type() == ChakraProtoMsg::METADATA_NODE;
  if (node.has_inputs()) clear_values(*node.mutable_inputs(), stats, metadata_node);
  if (node.has_outputs()) clear_values(*node.mutable_outputs(), stats, false);
  stats.attrs_removed += filter_attrs(*node.mutable_attr(), keep_node_attr);
}

AnonymizeStats anonymize_file(const std::string& input_path, const std::string& output_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(output_path, ec) && fs::equivalent(input_path, output_path, ec)) {
    throw TraceError({.file = output_path}, "the output is the input file; write the anonymized trace elsewhere");
  }
  TraceReader in(input_path);
  AnonymizeStats stats;
  GlobalMetadata md = in.metadata();
  const int metadata_attrs = md.attr_size();
  anonymize_metadata(md);
  stats.attrs_removed += static_cast<uint64_t>(metadata_attrs - md.attr_size());

  const bool gzip = output_path.size() >= 3 && output_path.compare(output_path.size() - 3, 3, ".gz") == 0;
  std::optional<TraceWriter> out;
  out.emplace(output_path, std::move(md), gzip);
  try {
    Node node;
    while (in.next(node)) {
      anonymize_node(node, stats);
      out->write(node);
    }
    out->close();
  } catch (...) {
    out.reset();  // closes the file before it is removed
    fs::remove(output_path, ec);
    throw;
  }
  return stats;
}

}  // namespace fabemu::traces
