// `fabemu trace analyze --html FILE`: the analysis as one self-contained page (host/report/html_page.h).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "host/analyze/analysis_output.h"
#include "host/report/html_page.h"
#include "traces/info.h"

namespace fabemu::analyze {
namespace {

using report::TableRow;

// Imbalanced instances listed in the table at most; heatmap rows and columns at most (ranks are binned above).
constexpr size_t kTableRows = 50;
constexpr size_t kHeatmapSide = 128;

std::vector<std::string> rank_labels(size_t ranks) {
  std::vector<std::string> labels;
  for (size_t r = 0; r < ranks; ++r) labels.push_back(fmt::format("rank {}", r));
  return labels;
}

// The matrix as a heatmap of bytes; more than kHeatmapSide ranks are summed into blocks of ranks.
report::Heatmap traffic_heatmap(const std::string& title, const TrafficMatrix& m, size_t ranks) {
  const size_t block = (ranks + kHeatmapSide - 1) / kHeatmapSide;
  const size_t side = (ranks + block - 1) / block;
  report::Heatmap h;
  h.title = block == 1 ? title : fmt::format("{} (blocks of {} ranks)", title, block);
  h.row_axis = "sender";
  h.col_axis = "receiver";
  h.unit = "bytes";
  for (size_t i = 0; i < side; ++i) {
    const size_t lo = i * block, hi = std::min(ranks, lo + block) - 1;
    h.row_labels.push_back(block == 1 ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi));
  }
  h.col_labels = h.row_labels;
  h.values.assign(side, std::vector<double>(side, 0));
  for (const auto& [pair, cell] : m) {
    h.values[static_cast<size_t>(pair.first) / block][static_cast<size_t>(pair.second) / block] +=
        static_cast<double>(cell.bytes);
  }
  return h;
}

void imbalance_table(report::HtmlPage& page, const TraceAnalysis& a) {
  page.section("Imbalanced collectives, worst first");
  if (a.worst_first.empty()) {
    page.paragraph(a.collectives.empty() ? "The workload has no collectives."
                                         : "Every member of every collective instance has the same comm_size: "
                                           "perfect balance (CV 0).");
    return;
  }
  std::vector<TableRow> rows;
  for (size_t k = 0; k < a.worst_first.size() && k < kTableRows; ++k) {
    const CollectiveInstance& I = a.collectives[a.worst_first[k]];
    std::string who;
    for (const auto& m : I.deviating) {
      who += fmt::format("{}rank {} node {}: {}", who.empty() ? "" : "; ", m.rank, m.node_id,
                         traces::format_bytes(m.bytes));
    }
    const auto missing = missing_ranks(I, a);
    if (!missing.empty()) who += fmt::format("{}{} ranks never issue it", who.empty() ? "" : "; ", missing.size());
    rows.push_back({{group_label(I.pg), fmt::format("{}", I.seq), traces::collective_name(I.type), I.name,
                     traces::format_bytes(I.typical_bytes), fmt::format("{}/{}", I.members.size(), I.group_size),
                     fmt::format("{:.3g}", I.max_over_mean()), cv_text(I.bytes.cv), who},
                    k == 0});
  }
  page.table({"group", "#", "type", "name", "typical", "members", "max/mean", "CV", "deviating (rank, node id, bytes)"},
             rows);
  if (a.worst_first.size() > kTableRows) {
    page.paragraph(fmt::format("... and {} more (--json lists all).", a.worst_first.size() - kTableRows));
  }
  const CollectiveInstance& worst = a.collectives[a.worst_first.front()];
  report::BarChart bars{.title = fmt::format("Bytes per member of the worst: {}", instance_label(worst)), .unit = "bytes"};
  for (size_t i = 0; i < worst.members.size(); ++i) {
    bars.labels.push_back(fmt::format("rank {}", worst.members[i].rank));
    bars.values.push_back(static_cast<double>(worst.members[i].bytes));
    if (worst.members[i].bytes != worst.typical_bytes) bars.highlight.push_back(i);
  }
  page.bar_chart(bars);
}

void summary_tables(report::HtmlPage& page, const TraceAnalysis& a) {
  for (const bool groups : {true, false}) {
    const auto& summaries = groups ? a.by_group : a.by_type;
    if (summaries.empty()) continue;
    page.section(groups ? "By process group" : "By collective type");
    std::vector<TableRow> rows;
    for (const auto& s : summaries) {
      rows.push_back({{groups ? group_label(s.key) : s.key, groups ? fmt::format("{}", s.ranks) : "",
                       fmt::format("{}", s.instances), fmt::format("{}", s.imbalanced), traces::format_bytes(s.bytes),
                       cv_text(s.worst_cv)},
                      s.imbalanced != 0});
    }
    page.table({groups ? "group" : "type", groups ? "ranks" : "", "instances", "imbalanced", "bytes", "worst CV"}, rows);
  }
}

// Compute and the longest chain per rank, by duration; a trace without durations (generated ones time compute by
// the roofline) by num_ops and by the chain's nodes instead, so that no chart is empty.
void compute_charts(report::HtmlPage& page, const TraceAnalysis& a) {
  const bool durations = a.compute_us.max > 0;
  std::vector<double> compute, chain;
  for (const auto& r : a.ranks) {
    compute.push_back(static_cast<double>(durations ? r.compute_us : r.num_ops));
    chain.push_back(static_cast<double>(a.chain_us.max > 0 ? r.chain_us : r.chain_ids.size()));
  }
  page.bar_chart({.title = durations ? fmt::format("Compute per rank: COMP_NODE duration (CV {})", cv_text(a.compute_us.cv))
                                     : fmt::format("Compute per rank: COMP_NODE num_ops (no durations; CV {})",
                                                   cv_text(a.num_ops.cv)),
                  .labels = rank_labels(a.ranks.size()), .values = compute, .unit = durations ? "us" : "ops"});
  page.bar_chart({.title = a.chain_us.max > 0
                               ? fmt::format("Longest dependency chain per rank (CV {})", cv_text(a.chain_us.cv))
                               : std::string("Longest dependency chain per rank, in nodes (no durations)"),
                  .labels = rank_labels(a.ranks.size()), .values = chain, .unit = a.chain_us.max > 0 ? "us" : "nodes"});
}

void per_rank_charts(report::HtmlPage& page, const TraceAnalysis& a) {
  std::set<int32_t> deviating;
  for (const size_t i : a.worst_first) {
    for (const auto& m : a.collectives[i].deviating) deviating.insert(m.rank);
  }
  page.section("Per rank");
  report::StackedBarChart bytes{.title = "Bytes sent per rank: collectives (comm_size) and SENDs", .unit = "bytes"};
  bytes.labels = rank_labels(a.ranks.size());
  std::vector<double> coll, sends;
  for (const auto& r : a.ranks) {
    coll.push_back(static_cast<double>(r.collective_bytes));
    sends.push_back(static_cast<double>(r.send_bytes));
  }
  bytes.series = {{"collectives", coll}, {"SEND", sends}};
  page.stacked_bars(bytes);
  report::BarChart coll_bars{.title = fmt::format("Collective bytes per rank (CV {}; ranks that deviate in red)",
                                                  cv_text(a.collective_bytes.cv)),
                             .labels = rank_labels(a.ranks.size()), .values = coll, .unit = "bytes"};
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    if (deviating.count(a.ranks[r].rank) != 0) coll_bars.highlight.push_back(r);
  }
  page.bar_chart(coll_bars);
  compute_charts(page, a);
}

}  // namespace

std::string analysis_html(const TraceAnalysis& a, const AnalysisInputs& inputs) {
  report::HtmlPage page(fmt::format("fabemu trace analyze: {}", a.prefix));
  uint64_t p2p_bytes = 0, p2p_messages = 0;
  for (const auto& [pair, cell] : a.p2p) {
    p2p_bytes += cell.bytes;
    p2p_messages += cell.messages;
  }
  double worst_cv = 0;
  for (const auto& s : a.by_type) worst_cv = std::max(worst_cv, s.worst_cv);
  page.numbers({{"ranks", fmt::format("{}", a.ranks.size())},
                {"collective instances", fmt::format("{}", a.collectives.size())},
                {"imbalanced", fmt::format("{}", a.worst_first.size())},
                {"worst CV", cv_text(worst_cv)},
                {"SEND messages", fmt::format("{}", p2p_messages)},
                {"SEND bytes", report::human_bytes(static_cast<double>(p2p_bytes))},
                {"compute CV", cv_text(a.compute_us.cv)},
                {"longest chain", fmt::format("{} us", a.chain_us.max)}});
  imbalance_table(page, a);
  per_rank_charts(page, a);
  page.section("Traffic matrix");
  if (a.p2p.empty()) {
    page.paragraph("No SEND nodes: no point-to-point traffic.");
  } else {
    page.heatmap(traffic_heatmap("Point-to-point bytes (SEND nodes)", a.p2p, a.ranks.size()));
  }
  if (inputs.implied != nullptr) {
    page.paragraph(fmt::format("Collectives as messages on {} ({}).", inputs.network, inputs.implied->algorithms));
    page.heatmap(traffic_heatmap("Collective bytes under the network's algorithms", inputs.implied->matrix,
                                 a.ranks.size()));
  }
  summary_tables(page, a);
  return page.html();
}

}  // namespace fabemu::analyze
