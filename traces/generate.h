// Generates collective microbenchmark traces in ASTRA-sim's layout (one COMM_COLL_NODE chain per rank).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/attrs.h"

namespace fabemu::traces {

struct CollectiveSpec {
  CollectiveType type = ChakraProtoMsg::ALL_REDUCE;
  int64_t ranks = 1;       // world size; files are written for ranks 0..ranks-1
  uint64_t size_bytes = 0;  // comm_size of every collective (at most INT64_MAX: it is an int64 attribute)
  // One flag per network dimension (attr "involved_dim"); absent = all dimensions.
  std::optional<std::vector<bool>> involved_dim;
  // Members of the process group running the collectives; absent = all ranks (no pg_name attr).
  std::optional<std::vector<int64_t>> pg_ranks;
  std::string pg_name = "1";  // only used with pg_ranks; must not name the default group ("" / "0")
  int64_t count = 1;          // collectives per rank, each waiting for the previous one
  std::string name;           // node name; empty = ASTRA-sim's "<coll>_<N>npus_<size label>"
};

// Writes `<output_prefix>.<rank>.et` for every rank (creating directories as needed) and returns the
// paths in rank order. Each file: GlobalMetadata version "0.0.4", then `count` COMM_COLL_NODEs (attrs
// is_cpu_op=false, comm_type, comm_size, [involved_dim], [pg_name]) chained by data_deps. Node k of rank r
// has id r + k*ranks (so rank r's first node has id r, exactly as ASTRA-sim's microbenchmarks) and, when
// count > 1, the name "<name>_<k>". With pg_ranks, ranks outside the group get a metadata-only file and
// `<output_prefix>.comm_groups.json` = {"<pg_name>": [ranks]} is written as well (not returned).
// Throws std::invalid_argument for an invalid spec (message says which field), TraceError for I/O errors.
std::vector<std::string> generate_collective(const CollectiveSpec& spec, const std::string& output_prefix);

// ASTRA-sim's layout for a spec: "<coll>/<N>npus_<label>/<coll>", e.g. "all_reduce/8npus_1MB/all_reduce".
std::string microbenchmark_prefix(const CollectiveSpec& spec);

// Size label as ASTRA-sim names its folders: 1048576 -> "1MB", 65536 -> "64KB", 1073741824 -> "1GB";
// values that are not a whole number of KiB in bytes ("1000B", "0B").
std::string size_label(uint64_t bytes);

// Parses "1MB", "1MiB", "64KB", "64KiB", "2GB", "1048576", "512B" (units case-insensitive, K/M/G/T are
// powers of 1024 as ASTRA-sim uses them; "K", "KB" and "KiB" are the same). Throws std::invalid_argument
// with a message naming the text for anything else (empty, negative, fractional, unknown unit, overflow).
uint64_t parse_size(std::string_view text);

// "all_reduce", "reduce_scatter_block", ...: the collective's name as ASTRA-sim spells its folders.
std::string collective_folder_name(CollectiveType type);

}  // namespace fabemu::traces
