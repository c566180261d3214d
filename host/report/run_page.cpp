#include "host/report/run_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "emulator/summary.h"
#include "host/report/html_page.h"

namespace fabemu::report {
namespace {

constexpr size_t kProblemRows = 100;  // stuck lines and warnings listed at most

// A unit for a chart's times: the largest of ns, us, ms, s that the largest value reaches.
struct TimeUnit {
  double ps;
  const char* name;
};
TimeUnit time_unit(uint64_t max_ps) {
  static constexpr TimeUnit kUnits[] = {{1e12, "s"}, {1e9, "ms"}, {1e6, "us"}, {1e3, "ns"}};
  for (const TimeUnit& u : kUnits) {
    if (static_cast<double>(max_ps) >= u.ps) return u;
  }
  return {1, "ps"};
}

double in(const TimeUnit& u, uint64_t ps) { return static_cast<double>(ps) / u.ps; }

std::string gbps(double bytes_per_s) { return fmt::format("{:.2f}", bytes_per_s / 1e9); }

void summary_numbers(HtmlPage& page, const emu::RunResult& r) {
  uint64_t collective_ps = 0;
  for (const auto& c : r.collectives) collective_ps += c.duration().ps();
  std::vector<std::pair<std::string, std::string>> items = {
      {"total time", r.status == emu::RunStatus::kComplete ? emu::format_ps(r.total.ps())
                                                          : fmt::format("{} (reached {})", emu::run_status_name(r.status),
                                                                        emu::format_ps(r.reached.ps()))},
      {"ranks", fmt::format("{} of {} NPUs", r.ranks.size(), r.npus)},
      {"collectives", fmt::format("{}", r.collectives.size())},
      {"time in collectives (sum)", emu::format_ps(collective_ps)},
      {"SEND/RECV pairs", fmt::format("{}", r.p2p.sends)},
      {"messages", fmt::format("{}", r.messages)},
      {"message bytes", human_bytes(static_cast<double>(r.message_bytes))},
      {"engine events", fmt::format("{}", r.events)}};
  if (!r.warnings.empty()) items.emplace_back("warnings", fmt::format("{}", r.warnings.size()));
  page.numbers(items);
  page.paragraph(fmt::format("Fabric {}, model {}, topology {}.", r.fabric, r.model, r.topology));
}

// Consecutive items (ranks, collectives) drawn as one bar when there are more than `bars`; label() names ranks.
struct Blocks {
  size_t block, count;
  Blocks(size_t items, size_t bars) : block(std::max<size_t>(1, (items + bars - 1) / bars)) {
    count = (items + block - 1) / block;
  }
  std::string label(size_t b, size_t ranks) const {
    const size_t lo = b * block, hi = std::min(ranks, lo + block) - 1;
    return block == 1 ? fmt::format("rank {}", lo) : fmt::format("ranks {}-{}", lo, hi);
  }
};

void rank_charts(HtmlPage& page, const emu::RunResult& r, const RunPageLimits& limits) {
  page.section("Ranks");
  const size_t n = r.ranks.size();
  if (n == 0) {
    page.paragraph("No ranks.");
    return;
  }
  const Blocks blocks(n, limits.rank_bars);
  uint64_t max_finish = 0;
  for (const auto& rank : r.ranks) max_finish = std::max(max_finish, rank.finish.ps());
  const TimeUnit u = time_unit(max_finish);
  BarChart finish{.title = blocks.block == 1 ? std::string("Finish time per rank (the latest in the warning colour)")
                                             : fmt::format("Finish time per block of {} ranks: the block's latest",
                                                           blocks.block),
                  .unit = u.name};
  StackedBarChart split{.title = blocks.block == 1 ? std::string("Where each rank's time went")
                                                   : fmt::format("Where the time went, mean of each block of {} ranks",
                                                                 blocks.block),
                        .unit = u.name};
  std::vector<double> compute(blocks.count), comm(blocks.count), idle(blocks.count);
  for (size_t b = 0; b < blocks.count; ++b) {
    uint64_t latest = 0;
    const size_t lo = b * blocks.block, hi = std::min(n, lo + blocks.block);
    for (size_t i = lo; i < hi; ++i) {
      const emu::RankResult& rank = r.ranks[i];
      latest = std::max(latest, rank.finish.ps());
      compute[b] += in(u, rank.compute_busy.ps()) / static_cast<double>(hi - lo);
      comm[b] += in(u, rank.exposed_comm.ps()) / static_cast<double>(hi - lo);
      idle[b] += in(u, rank.idle.ps()) / static_cast<double>(hi - lo);
    }
    finish.labels.push_back(blocks.label(b, n));
    finish.values.push_back(in(u, latest));
    if (latest == max_finish) finish.highlight.push_back(b);
  }
  split.labels = finish.labels;
  split.series = {{"compute", compute}, {"comm, no compute", comm}, {"idle (waiting)", idle}};
  page.bar_chart(finish);
  page.stacked_bars(split);
  StackedBarChart bytes{.title = blocks.block == 1 ? std::string("Bytes each rank sent and received")
                                                   : fmt::format("Bytes sent and received, sum of each block of {} ranks",
                                                                 blocks.block),
                        .labels = split.labels,
                        .unit = "bytes"};
  std::vector<double> sent(blocks.count), received(blocks.count);
  for (size_t i = 0; i < n; ++i) {
    sent[i / blocks.block] += static_cast<double>(r.ranks[i].sent_bytes);
    received[i / blocks.block] += static_cast<double>(r.ranks[i].received_bytes);
  }
  bytes.series = {{"sent", sent}, {"received", received}};
  page.stacked_bars(bytes);
}

std::string collective_label(const emu::CollectiveResult& c) { return fmt::format("#{} {}", c.index, c.type); }

void slowest_collectives(HtmlPage& page, const emu::RunResult& r, const RunPageLimits& limits) {
  std::vector<size_t> order(r.collectives.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return r.collectives[a].duration() > r.collectives[b].duration();
  });
  order.resize(std::min(order.size(), limits.slowest));
  const TimeUnit u = time_unit(order.empty() ? 0 : r.collectives[order.front()].duration().ps());
  BarChart bars{.title = fmt::format("The {} slowest collectives: duration once every member had issued it",
                                     order.size()),
                .unit = u.name};
  std::vector<TableRow> rows;
  for (const size_t i : order) {
    const emu::CollectiveResult& c = r.collectives[i];
    bars.labels.push_back(collective_label(c));
    bars.values.push_back(in(u, c.duration().ps()));
    rows.push_back({{fmt::format("{}", c.index), c.type, c.group.empty() ? "all" : c.group, c.name,
                     fmt::format("{}", c.node_id), emu::format_size(c.bytes), fmt::format("{}", c.members), c.algorithm,
                     emu::format_ps(c.duration().ps()), gbps(c.algbw_bytes_per_s), gbps(c.busbw_bytes_per_s)}});
  }
  page.bar_chart(bars);
  page.table({"#", "type", "group", "name", "node id", "bytes", "members", "algorithm", "duration", "algbw GB/s",
              "busbw GB/s"},
             rows);
}

// Per type: instances, time, bytes and the bus bandwidth's range.
void collectives_by_type(HtmlPage& page, const emu::RunResult& r) {
  struct Type {
    std::string name;
    uint64_t count = 0, ps = 0, bytes = 0;
    double min_busbw = 0, max_busbw = 0;
  };
  std::vector<Type> types;
  for (const auto& c : r.collectives) {
    auto it = std::find_if(types.begin(), types.end(), [&](const Type& t) { return t.name == c.type; });
    if (it == types.end()) it = types.insert(types.end(), Type{.name = c.type, .min_busbw = c.busbw_bytes_per_s});
    ++it->count;
    it->ps += c.duration().ps();
    it->bytes += c.bytes;
    it->min_busbw = std::min(it->min_busbw, c.busbw_bytes_per_s);
    it->max_busbw = std::max(it->max_busbw, c.busbw_bytes_per_s);
  }
  std::vector<TableRow> rows;
  for (const Type& t : types) {
    rows.push_back({{t.name, fmt::format("{}", t.count), emu::format_ps(t.ps), human_bytes(static_cast<double>(t.bytes)),
                     gbps(t.min_busbw), gbps(t.max_busbw)}});
  }
  page.table({"type", "instances", "time (sum of durations)", "bytes (comm_size, sum)", "busbw min GB/s",
              "busbw max GB/s"},
             rows);
}

void collective_sections(HtmlPage& page, const emu::RunResult& r, const RunPageLimits& limits) {
  page.section("Collectives");
  if (r.collectives.empty()) {
    page.paragraph("The workload has no collectives.");
    return;
  }
  slowest_collectives(page, r, limits);
  collectives_by_type(page, r);
  const Blocks blocks(r.collectives.size(), limits.rank_bars);
  BarChart busbw{.title = blocks.block == 1 ? std::string("Bus bandwidth of every collective, in issue order")
                                            : fmt::format("Bus bandwidth in issue order, the lowest of each {} "
                                                          "collectives",
                                                          blocks.block),
                 .unit = "GB/s"};
  for (size_t b = 0; b < blocks.count; ++b) {
    const size_t lo = b * blocks.block, hi = std::min(r.collectives.size(), lo + blocks.block);
    double lowest = r.collectives[lo].busbw_bytes_per_s;
    for (size_t i = lo; i < hi; ++i) lowest = std::min(lowest, r.collectives[i].busbw_bytes_per_s);
    busbw.labels.push_back(blocks.block == 1 ? fmt::format("#{}", lo) : fmt::format("#{}-{}", lo, hi - 1));
    busbw.values.push_back(lowest / 1e9);
  }
  page.bar_chart(busbw);
}

const emu::LinkResult* find_link(const emu::RunResult& r, uint32_t id) {
  const auto it = std::lower_bound(r.links.begin(), r.links.end(), id,
                                   [](const emu::LinkResult& l, uint32_t v) { return l.id < v; });
  return it != r.links.end() && it->id == id ? &*it : nullptr;
}

std::string link_label(const emu::RunResult& r, uint32_t id) {
  const emu::LinkResult* l = find_link(r, id);
  if (l == nullptr) return fmt::format("link {}", id);
  return fmt::format("link {} ({}->{}{}{})", id, l->from, l->to, l->tier.empty() ? "" : ", ", l->tier);
}

void link_heatmap(HtmlPage& page, const emu::RunResult& r, const RunPageLimits& limits) {
  const emu::LinkSeries& s = r.link_series;
  std::vector<size_t> rows(s.links.size());
  std::iota(rows.begin(), rows.end(), size_t{0});
  std::vector<uint64_t> busy(s.links.size(), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const uint64_t v : s.busy_ps[i]) busy[i] += v;
  }
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return busy[a] > busy[b]; });
  rows.resize(std::min(rows.size(), limits.heatmap_links));
  const size_t bins = s.busy_ps.empty() ? 0 : s.busy_ps.front().size();
  const size_t merge = std::max<size_t>(1, (bins + limits.heatmap_bins - 1) / limits.heatmap_bins);
  const size_t cols = (bins + merge - 1) / merge;
  const uint64_t width_ps = s.bin_ps * merge;
  const TimeUnit u = time_unit(width_ps * cols);
  Heatmap h{.title = fmt::format("Link utilization over time: the {} busiest links, bins of {}", rows.size(),
                                 emu::format_ps(width_ps)),
            .row_axis = "link",
            .col_axis = fmt::format("time ({})", u.name),
            .unit = "%",
            .cell_width = std::clamp(900.0 / static_cast<double>(std::max<size_t>(cols, 1)), 2.0, 28.0),
            .cell_height = std::clamp(640.0 / static_cast<double>(std::max<size_t>(rows.size(), 1)), 4.0, 14.0)};
  for (size_t c = 0; c < cols; ++c) h.col_labels.push_back(fmt::format("{:.4g}", in(u, c * width_ps)));
  for (const size_t i : rows) {
    h.row_labels.push_back(link_label(r, s.links[i]));
    std::vector<double> cells(cols, 0);
    for (size_t b = 0; b < bins; ++b) cells[b / merge] += static_cast<double>(s.busy_ps[i][b]);
    for (double& v : cells) v = 100.0 * v / static_cast<double>(width_ps);
    h.values.push_back(std::move(cells));
  }
  page.heatmap(h);
}

void link_sections(HtmlPage& page, const emu::RunResult& r, const RunPageLimits& limits) {
  page.section("Links");
  if (r.links.empty()) {
    page.paragraph(r.model == "analytical"
                       ? "The analytical model keeps no per-link state: run with --model packet for link utilization."
                       : "No per-link results in this run.");
    return;
  }
  if (!r.link_series.empty() && r.link_series.bin_ps > 0) {
    link_heatmap(page, r, limits);
  } else {
    page.paragraph("Link utilization over time was not recorded in this run (a lab run's agents send no series).");
  }
  std::vector<const emu::LinkResult*> busiest;
  for (const auto& l : r.links) busiest.push_back(&l);
  std::stable_sort(busiest.begin(), busiest.end(),
                   [](const emu::LinkResult* a, const emu::LinkResult* b) { return a->busy > b->busy; });
  busiest.resize(std::min(busiest.size(), limits.heatmap_links));
  BarChart bars{.title = fmt::format("Utilization over the whole run: the {} busiest links", busiest.size()), .unit = "%"};
  for (const emu::LinkResult* l : busiest) {
    bars.labels.push_back(fmt::format("{}->{}", l->from, l->to));
    bars.values.push_back(100.0 * l->utilization);
  }
  page.bar_chart(bars);
}

void traffic_section(HtmlPage& page, const emu::RunResult& r) {
  page.section("Traffic matrix");
  const emu::TrafficMatrix& m = r.traffic;
  if (m.empty()) {
    page.paragraph("Not recorded in this run (a lab run's agents send per-rank totals only).");
    return;
  }
  Heatmap h{.title = m.block == 1 ? std::string("Bytes delivered from each sender to each receiver")
                                  : fmt::format("Bytes delivered between blocks of {} ranks", m.block),
            .row_axis = "sender",
            .col_axis = "receiver",
            .unit = "bytes"};
  for (uint32_t i = 0; i < m.side; ++i) {
    const uint32_t lo = i * m.block, hi = std::min(m.ranks, lo + m.block) - 1;
    h.row_labels.push_back(m.block == 1 ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi));
  }
  h.col_labels = h.row_labels;
  for (uint32_t i = 0; i < m.side; ++i) {
    std::vector<double> row(m.side);
    for (uint32_t j = 0; j < m.side; ++j) row[j] = static_cast<double>(m.bytes[static_cast<size_t>(i) * m.side + j]);
    h.values.push_back(std::move(row));
  }
  page.heatmap(h);
}

// A real-time fabric's report section with per-collective measurements (`collectives[]` with `modelled_ps`
// and `measured_ps`: the DPDK and socket fabrics' at the section's top, the FPGA fabric's in its `wire`
// object; docs/report.md): (section key, its entries).
struct Measured {
  uint64_t index, modelled_ps, measured_ps;
};
std::optional<std::pair<std::string, std::vector<Measured>>> measured_collectives(const emu::RunResult& r) {
  for (const auto& [key, text] : r.sections) {
    const nlohmann::json section = nlohmann::json::parse(text, nullptr, false);
    const bool nested = section.is_object() && section.contains("wire") && section["wire"].is_object();
    const nlohmann::json& j = nested ? section["wire"] : section;
    if (!j.is_object() || !j.contains("collectives") || !j["collectives"].is_array()) continue;
    std::vector<Measured> out;
    for (const auto& c : j["collectives"]) {
      if (!c.is_object() || !c.contains("modelled_ps") || !c.contains("measured_ps") || !c.contains("index")) continue;
      out.push_back({c["index"].get<uint64_t>(), c["modelled_ps"].get<uint64_t>(), c["measured_ps"].get<uint64_t>()});
    }
    return std::make_pair(key, std::move(out));
  }
  return std::nullopt;
}

double deviation(const Measured& m) {
  return m.modelled_ps == 0 ? 0 : static_cast<double>(m.measured_ps) / static_cast<double>(m.modelled_ps) - 1;
}

void measured_section(HtmlPage& page, const emu::RunResult& r, const RunPageLimits& limits) {
  if (r.fabric == "software") return;
  page.section("Measured vs modelled");
  auto found = measured_collectives(r);
  if (!found) {
    page.paragraph(fmt::format("The {} fabric reports no per-collective measurement.", r.fabric));
    return;
  }
  auto& [key, measured] = *found;
  if (measured.empty()) {
    page.paragraph("No collective was measured: the run went as fast as possible (--dilation 0) or sent no "
                   "collective's messages on the wire.");
    return;
  }
  std::vector<Measured> shown = measured;
  std::stable_sort(shown.begin(), shown.end(),
                   [](const Measured& a, const Measured& b) { return std::fabs(deviation(a)) > std::fabs(deviation(b)); });
  shown.resize(std::min(shown.size(), limits.measured_rows));
  std::vector<TableRow> rows;
  for (size_t i = 0; i < shown.size() && i < limits.slowest; ++i) {
    const Measured& m = shown[i];
    const std::string type = m.index < r.collectives.size() ? r.collectives[m.index].type : "?";
    rows.push_back({{fmt::format("{}", m.index), type, emu::format_ps(m.modelled_ps), emu::format_ps(m.measured_ps),
                     fmt::format("{:+.2f}%", 100 * deviation(m))},
                    std::fabs(deviation(m)) > 0.01});
  }
  std::sort(shown.begin(), shown.end(), [](const Measured& a, const Measured& b) { return a.index < b.index; });
  BarChart bars{.title = fmt::format("Measured / modelled per collective ({} of {}; beyond 1% in the warning colour)",
                                     shown.size(), measured.size()),
                .unit = "x"};
  for (size_t i = 0; i < shown.size(); ++i) {
    bars.labels.push_back(fmt::format("#{}", shown[i].index));
    bars.values.push_back(1 + deviation(shown[i]));
    if (std::fabs(deviation(shown[i])) > 0.01) bars.highlight.push_back(i);
  }
  page.paragraph(fmt::format("From the report's \"{}\" section: each collective's span on the wire (real "
                             "hand-overs to real arrivals, in emulated time) against the model's.",
                             key));
  page.bar_chart(bars);
  page.table({"#", "type", "modelled", "measured", "deviation"}, rows);
}

void problems_section(HtmlPage& page, const emu::RunResult& r) {
  if (r.warnings.empty() && r.stuck.empty()) return;
  page.section("Warnings");
  std::vector<TableRow> rows;
  for (const auto& s : r.stuck) rows.push_back({{"stuck", s}, true});
  for (const auto& w : r.warnings) rows.push_back({{"warning", w}});
  const size_t all = rows.size();
  rows.resize(std::min(all, kProblemRows));
  page.table({"kind", "text"}, rows);
  if (all > kProblemRows) page.paragraph(fmt::format("... and {} more (the JSON report has them all).", all - kProblemRows));
}

}  // namespace

std::string run_page(const emu::RunResult& result, const RunPageLimits& limits) {
  HtmlPage page(fmt::format("fabemu run: {}", result.workload));
  summary_numbers(page, result);
  rank_charts(page, result, limits);
  collective_sections(page, result, limits);
  link_sections(page, result, limits);
  traffic_section(page, result);
  measured_section(page, result, limits);
  problems_section(page, result);
  return page.html();
}

}  // namespace fabemu::report
