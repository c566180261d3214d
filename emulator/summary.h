// What a person reads about a run (format_summary) and about two runs side by side (compare_reports),
// plus the unit formatting they share with the JSON report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/report.h"

namespace fabemu::emu {

// "850 ps", "1.250 ns", "12.000 us", "3.142 ms", "1.000 s": auto-scaled, 3 decimals (rounded half up).
std::string format_ps(uint64_t ps);
// format_ps with a sign: "+1.250 us", "-3.000 ns", "0 ps".
std::string format_signed_ps(int64_t ps);
// "512 B", "64 KiB", "1.50 MiB": exact when the size is a whole number of the unit, else 2 decimals.
std::string format_size(uint64_t bytes);

// The text printed after a run: total time, per-rank finish, compute / exposed communication / idle
// breakdown, the `top_collectives` slowest collectives, the busiest links, counters and warnings.
std::string format_summary(const RunResult& result, size_t top_collectives = 5);

// Two reports compared (A = baseline, B = candidate).
struct CompareOptions {
  std::optional<double> max_regression_pct;  // gate: B slower than A by more than this -> regression
  bool per_rank = false;                     // also compare each rank's finish time
};

// True when B's total time exceeds A's by more than max_regression_pct percent (A = 0: when B > 0).
bool is_regression(const RunResult& a, const RunResult& b, double max_regression_pct);
// Why no gate can pass on these reports whatever their times (either is a partial run: deadlocked,
// interrupted, stalled, ranks lost or unfinished; or B has fewer ranks than A), or nullopt.
std::optional<std::string> gate_refusal(const RunResult& a, const RunResult& b);
// The regression gate: B fails it when the gate is refused or B regressed.
bool fails_gate(const RunResult& a, const RunResult& b, double max_regression_pct);
// What makes the two reports doubtful to compare: different workloads, rank counts, NPUs, models or fabrics.
std::vector<std::string> comparison_warnings(const RunResult& a, const RunResult& b);

// The comparison as text (name_a / name_b label the inputs, usually their paths) ...
std::string format_comparison(const RunResult& a, const RunResult& b, const std::string& name_a,
                              const std::string& name_b, const CompareOptions& options);
// ... or as JSON (pretty, deterministic; see docs/report.md).
std::string comparison_to_json(const RunResult& a, const RunResult& b, const std::string& name_a,
                               const std::string& name_b, const CompareOptions& options);

}  // namespace fabemu::emu
