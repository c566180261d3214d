// Attribute access by name, tolerant of the ways real writers encode the same attribute (any integer
// oneof slot, "1.0"-style process-group names, NodeType numbers in comm_type on SEND/RECV).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/reader.h"

namespace fabemu::traces {

using Attribute = ChakraProtoMsg::AttributeProto;
using NodeType = ChakraProtoMsg::NodeType;
using CollectiveType = ChakraProtoMsg::CollectiveCommType;

// First attribute called `name`, or nullptr.
const Attribute* find_attr(const Node& node, std::string_view name);

// Value of an integer-like attribute from whichever slot holds it: any of the ten integer kinds,
// bool, an integral float/double, or a decimal string ("1", "1.0"). nullopt if absent or not integral.
std::optional<int64_t> attr_int(const Node& node, std::string_view name);
std::optional<int64_t> attr_int(const Attribute& attr);
std::optional<bool> attr_bool(const Node& node, std::string_view name);
std::optional<std::string> attr_string(const Node& node, std::string_view name);
// A list of flags from bool_list or any integer list (non-zero = true); nullopt if absent.
std::optional<std::vector<bool>> attr_bool_list(const Node& node, std::string_view name);

// Canonical process-group name: numeric names lose a zero fraction ("1.0" -> "1", "0.0" -> "0"); other
// names are kept as they are. "" is the default group of all ranks; "0" is too (PyTorch's WORLD, and
// ASTRA-sim's rule) unless a comm-group file or METADATA_NODE defines a group "0" of fewer ranks.
std::string normalize_pg_name(std::string_view raw);
// True for the names that mean the default group when no group "0" is defined: "" and "0" (any form).
bool is_default_pg_name(std::string_view raw);

bool is_comm(NodeType type);
const char* node_type_name(NodeType type);           // "COMP_NODE", ...
const char* collective_name(CollectiveType type);    // "ALL_REDUCE", ...
std::optional<CollectiveType> collective_from_name(std::string_view name);  // "all_reduce", "ALL_REDUCE"

// What the emulator needs of a communication node, read with the quirks above.
struct CommInfo {
  std::optional<CollectiveType> collective;  // COMM_COLL_NODE only (comm_type is ignored on SEND/RECV)
  std::optional<int64_t> raw_comm_type;      // comm_type as written, for diagnostics
  std::optional<uint64_t> size;              // comm_size in bytes
  std::optional<int64_t> src;                // RECV: peer that sends
  std::optional<int64_t> dst;                // SEND: peer that receives
  std::optional<int64_t> tag;
  std::string pg;                            // normalized pg_name; "" = default group of all ranks
  std::optional<std::vector<bool>> involved_dim;  // absent = all dimensions
  bool is_cpu_op = false;
  std::optional<int64_t> priority;
};
CommInfo comm_info(const Node& node);

}  // namespace fabemu::traces
