// The JSON report of a run (schema "fabemu.report/2", docs/report.md) and the bandwidth figures of a
// collective. The text is deterministic: an identical RunResult gives byte-identical JSON.
#pragma once

#include <string>

#include "emulator/report.h"

namespace fabemu::emu {

inline constexpr const char* kReportSchema = "fabemu.report/2";
// Read too: /1 differs in names only (algbw_gbps, busbw_gbps: not read back) and lacks keys /2 added.
inline constexpr const char* kReportSchemaV1 = "fabemu.report/1";

// Fills algbw_bytes_per_s / busbw_bytes_per_s of `c` from its type, bytes, members, issued_last and
// finished, with the nccl-tests conventions documented on CollectiveResult (0 when the duration is 0).
void compute_bandwidths(CollectiveResult& c);

// nccl-tests bus-bandwidth factor of a collective type over n ranks: 2(n-1)/n for ALL_REDUCE, (n-1)/n
// for ALL_GATHER, REDUCE_SCATTER(_BLOCK) and ALL_TO_ALL, 1 for anything else (and for n <= 1 -> 0 or 1
// as the formula gives).
double busbw_factor(const std::string& type, int32_t members);

// The report as pretty-printed JSON (2-space indent, one line per rank / collective / link entry),
// keys in schema order, ending in a newline. Times are integer picoseconds (*_ps); bandwidths are GB/s
// (1 GB/s = 1e9 bytes/s) and utilization a fraction, both printed with 6 fixed decimals;
// compute_scale is printed in the shortest form that reads back to the same double.
std::string report_to_json(const RunResult& result);

// `s` as a JSON string literal, quotes included; invalid UTF-8 (a trace's node name) becomes U+FFFD rather
// than failing the output. The report and the Chrome timeline write their strings with it.
std::string json_quoted(const std::string& s);

// Reads a report written by report_to_json. `source_name` (usually the file path) names the input in
// errors. Human-friendly fields (total_time, duration_ps, *_gbps) are not read back: algbw/busbw are
// recomputed with compute_bandwidths. Throws traces::TraceError "FILE: line L: ..." for malformed JSON
// and "FILE: /json/pointer: what is wrong" for a missing or mistyped field or an unknown schema.
RunResult report_from_json(const std::string& text, const std::string& source_name);

// Reads the file at `path` and parses it with report_from_json; TraceError naming the path if it
// cannot be read.
RunResult read_report_file(const std::string& path);

}  // namespace fabemu::emu
