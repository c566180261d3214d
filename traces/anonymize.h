// Strips model-identifying text (names, tensor values, schemas, doc strings) from a trace; keeps what emulation needs.
#pragma once

#include <cstdint>
#include <string>

#include "traces/reader.h"

namespace fabemu::traces {

struct AnonymizeStats {
  uint64_t nodes = 0;           // nodes processed
  uint64_t names_replaced = 0;  // node names that changed
  uint64_t attrs_removed = 0;   // attributes dropped (node and metadata attributes)
  uint64_t values_cleared = 0;  // non-empty inputs/outputs `values` strings emptied or reduced
};

// Keeps `version` and the "schema" attribute (its doc_string cleared); drops every other attribute.
void anonymize_metadata(GlobalMetadata& md);

// Applies the rules to one node and counts what it changed:
// - name -> "<NODE_TYPE>_<id>" (e.g. "COMP_NODE_216");
// - inputs/outputs: `values` (tensor ids, devices, scalar arguments) cleared, `shapes` and `types` kept.
//   Exception: a METADATA_NODE whose inputs.values lists process groups keeps only each group's pg_name,
//   ranks and group_size (as JSON) so that collectives still find their groups;
// - attributes: string/bytes/string_list/bytes_list ones removed except "pg_name"; "op_schema" removed
//   whatever its type; every doc_string cleared; numeric and bool attributes kept;
// - id, type, data_deps, ctrl_deps, start_time_micros and duration_micros untouched.
void anonymize_node(Node& node, AnonymizeStats& stats);

// Streams `input_path` (plain or gzip) through the rules into `output_path`, gzip-compressed when it
// ends in ".gz". Throws TraceError for unreadable input, an output path that is the input, or a write
// error (the partial output is removed).
AnonymizeStats anonymize_file(const std::string& input_path, const std::string& output_path);

}  // namespace fabemu::traces
