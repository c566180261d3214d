// `fabemu run --html FILE`: a run's result as one self-contained page in the style of host/report/html_page.h
// (no scripts, no requests): the summary numbers; per rank the finish and compute / comm, no compute / idle;
// the slowest collectives with duration and bus bandwidth, and per type; link utilization over time as a
// heatmap (packet model, RunResult::link_series); the sender x receiver traffic matrix (RunResult::traffic);
// and for a real-time fabric whose report section has per-collective measurements, measured vs modelled.
// docs/report.md ("The run page") describes every section.
#pragma once

#include <cstddef>
#include <string>

#include "emulator/report.h"

namespace fabemu::report {

struct RunPageLimits {
  size_t rank_bars = 1024;      // more ranks are drawn in blocks of consecutive ranks (finish: the block's max)
  size_t slowest = 20;          // slowest collectives listed
  size_t heatmap_links = 64;    // busiest links in the utilization heatmap
  size_t heatmap_bins = 128;    // time columns at most (the series' bins are summed in pairs down to it)
  size_t measured_rows = 200;   // measured vs modelled: collectives drawn at most (the most deviating)
};

std::string run_page(const emu::RunResult& result, const RunPageLimits& limits = {});

}  // namespace fabemu::report
