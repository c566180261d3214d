// `fabemu trace analyze`'s three outputs of one analysis: the text summary (worst imbalances first), the
// JSON document (docs/trace.md, "trace analyze --json") and the HTML page (host/report/html_page.h).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "host/analyze/implied_traffic.h"
#include "host/analyze/trace_analysis.h"

namespace fabemu::analyze {

// What was analysed besides the traces: the network a collective matrix was computed for (nullptr: none).
struct AnalysisInputs {
  const ImpliedTraffic* implied = nullptr;
  std::string network;  // the network's file
};

void print_analysis(std::FILE* out, const TraceAnalysis& a, const AnalysisInputs& inputs, size_t max_listed);
nlohmann::json analysis_json(const TraceAnalysis& a, const AnalysisInputs& inputs);
std::string analysis_html(const TraceAnalysis& a, const AnalysisInputs& inputs);

// Helpers shared by the three: "default" or "\"name\"" for a group; "group #seq TYPE" for an instance.
std::string group_label(const std::string& pg);
std::string instance_label(const CollectiveInstance& I);
// A coefficient of variation as shown: "0" when exactly 0, else 3 significant digits.
std::string cv_text(double cv);
// The group's ranks that did not issue the instance.
std::vector<int32_t> missing_ranks(const CollectiveInstance& I, const TraceAnalysis& a);

}  // namespace fabemu::analyze
