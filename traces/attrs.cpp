#include "traces/attrs.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace fabemu::traces {
namespace {

std::optional<int64_t> integral(double v) {
  if (!std::isfinite(v) || std::trunc(v) != v || std::fabs(v) > 9.0e18) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<int64_t> parse_decimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t whole = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, whole);
  if (ec != std::errc()) return std::nullopt;
  if (p == end) return whole;
  if (*p != '.') return std::nullopt;
  for (++p; p != end; ++p) {
    if (*p != '0') return std::nullopt;  // "1.0", "1.00" are integral; "1.5" is not
  }
  return whole;
}

template <typename List>
std::vector<bool> flags(const List& list) {
  std::vector<bool> out;
  out.reserve(static_cast<size_t>(list.values_size()));
  for (const auto& v : list.values()) out.push_back(v != 0);
  return out;
}

}  // namespace

const Attribute* find_attr(const Node& node, std::string_view name) {
  for (const auto& a : node.attr()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::optional<int64_t> attr_int(const Attribute& a) {
  switch (a.value_case()) {
    case Attribute::kInt32Val: return a.int32_val();
    case Attribute::kInt64Val: return a.int64_val();
    case Attribute::kUint32Val: return a.uint32_val();
    case Attribute::kUint64Val:
      if (a.uint64_val() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(a.uint64_val());
    case Attribute::kSint32Val: return a.sint32_val();
    case Attribute::kSint64Val: return a.sint64_val();
    case Attribute::kFixed32Val: return a.fixed32_val();
    case Attribute::kFixed64Val:
      if (a.fixed64_val() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(a.fixed64_val());
    case Attribute::kSfixed32Val: return a.sfixed32_val();
    case Attribute::kSfixed64Val: return a.sfixed64_val();
    case Attribute::kBoolVal: return a.bool_val() ? 1 : 0;
    case Attribute::kDoubleVal: return integral(a.double_val());
    case Attribute::kFloatVal: return integral(a.float_val());
    case Attribute::kStringVal: return parse_decimal(a.string_val());
    default: return std::nullopt;
  }
}

std::optional<int64_t> attr_int(const Node& node, std::string_view name) {
  const Attribute* a = find_attr(node, name);
  return a == nullptr ? std::nullopt : attr_int(*a);
}

std::optional<bool> attr_bool(const Node& node, std::string_view name) {
  const auto v = attr_int(node, name);
  if (!v) return std::nullopt;
  return *v != 0;
}

std::optional<std::string> attr_string(const Node& node, std::string_view name) {
  const Attribute* a = find_attr(node, name);
  if (a == nullptr) return std::nullopt;
  if (a->value_case() == Attribute::kStringVal) return a->string_val();
  if (a->value_case() == Attribute::kBytesVal) return a->bytes_val();
  if (const auto v = attr_int(*a)) return std::to_string(*v);
  return std::nullopt;
}

std::optional<std::vector<bool>> attr_bool_list(const Node& node, std::string_view name) {
  const Attribute* a = find_attr(node, name);
  if (a == nullptr) return std::nullopt;
  switch (a->value_case()) {
    case Attribute::kBoolList: return flags(a->bool_list());
    case Attribute::kInt32List: return flags(a->int32_list());
    case Attribute::kInt64List: return flags(a->int64_list());
    case Attribute::kUint32List: return flags(a->uint32_list());
    case Attribute::kUint64List: return flags(a->uint64_list());
    case Attribute::kSint32List: return flags(a->sint32_list());
    case Attribute::kSint64List: return flags(a->sint64_list());
    default: return std::nullopt;
  }
}

std::string normalize_pg_name(std::string_view raw) {
  if (const auto v = parse_decimal(raw)) return std::to_string(*v);
  return std::string(raw);
}

bool is_default_pg_name(std::string_view raw) {
  const std::string name = normalize_pg_name(raw);
  return name.empty() || name == "0";
}

bool is_comm(NodeType type) {
  return type == ChakraProtoMsg::COMM_SEND_NODE || type == ChakraProtoMsg::COMM_RECV_NODE ||
         type == ChakraProtoMsg::COMM_COLL_NODE;
}

const char* node_type_name(NodeType type) {
  static constexpr const char* kNames[] = {"INVALID_NODE",   "METADATA_NODE",  "MEM_LOAD_NODE",
                                           "MEM_STORE_NODE", "COMP_NODE",      "COMM_SEND_NODE",
                                           "COMM_RECV_NODE", "COMM_COLL_NODE"};
  const auto i = static_cast<int>(type);
  return i >= 0 && i < 8 ? kNames[i] : "UNKNOWN_NODE";
}

const char* collective_name(CollectiveType type) {
  static constexpr const char* kNames[] = {"ALL_REDUCE", "REDUCE",         "ALL_GATHER",
                                           "GATHER",     "SCATTER",        "BROADCAST",
                                           "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK",
                                           "BARRIER"};
  const auto i = static_cast<int>(type);
  return i >= 0 && i < 10 ? kNames[i] : "UNKNOWN_COLLECTIVE";
}

std::optional<CollectiveType> collective_from_name(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CollectiveType type{};
  if (ChakraProtoMsg::CollectiveCommType_Parse(upper, &type)) return type;
  return std::nullopt;
}

CommInfo comm_info(const Node& node) {
  CommInfo info;
  info.raw_comm_type = attr_int(node, "comm_type");
  if (node.type() == ChakraProtoMsg::COMM_COLL_NODE && info.raw_comm_type &&
      ChakraProtoMsg::CollectiveCommType_IsValid(static_cast<int>(*info.raw_comm_type))) {
    info.collective = static_cast<CollectiveType>(*info.raw_comm_type);
  }
  if (const auto size = attr_int(node, "comm_size"); size && *size >= 0) {
    info.size = static_cast<uint64_t>(*size);
  } else if (const Attribute* a = find_attr(node, "comm_size");
             a != nullptr && a->value_case() == Attribute::kUint64Val) {
    info.size = a->uint64_val();
  }
  info.src = attr_int(node, "comm_src");
  info.dst = attr_int(node, "comm_dst");
  info.tag = attr_int(node, "comm_tag");
  if (const auto pg = attr_string(node, "pg_name")) info.pg = normalize_pg_name(*pg);
  info.involved_dim = attr_bool_list(node, "involved_dim");
  info.is_cpu_op = attr_bool(node, "is_cpu_op").value_or(false);
  info.priority = attr_int(node, "comm_priority");
  return info;
}

}  // namespace fabemu::traces
