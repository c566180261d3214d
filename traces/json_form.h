// A readable, lossless JSON form of a trace file: JSON Lines, the GlobalMetadata on the first line
// and one Node per line, in protobuf's canonical JSON mapping (field names as in the schema, enum
// names, 64-bit integers as strings). Converting .et -> JSON -> .et reproduces the file byte for byte.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace fabemu::traces {

// Writes the JSON form of `et_path` to `out`; returns the number of nodes. Throws TraceError.
uint64_t write_json(const std::string& et_path, std::ostream& out);
// Reads the JSON form from `json_path` and writes the trace to `et_path` (gzip when it ends in .gz).
// Throws TraceError naming the JSON file and line on bad input. Returns the number of nodes.
uint64_t write_et_from_json(const std::string& json_path, const std::string& et_path);

}  // namespace fabemu::traces
