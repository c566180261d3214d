// The text summary of `fabemu trace analyze`: the worst imbalances first, then the summaries.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>

#include "host/analyze/analysis_output.h"
#include "traces/info.h"

namespace fabemu::analyze {
namespace {

using traces::format_bytes;

uint64_t total_bytes(const TrafficMatrix& m, uint64_t& messages) {
  uint64_t bytes = 0;
  messages = 0;
  for (const auto& [pair, cell] : m) {
    bytes += cell.bytes;
    messages += cell.messages;
  }
  return bytes;
}

void print_imbalances(std::FILE* out, const TraceAnalysis& a, size_t max_listed) {
  const size_t n = a.collectives.size();
  fmt::print(out, "Collectives  {} instance{} in {} process group{}: {} balanced, {} not{}\n", n, n == 1 ? "" : "s",
             a.by_group.size(), a.by_group.size() == 1 ? "" : "s", n - a.worst_first.size(), a.worst_first.size(),
             a.untyped_collectives ? fmt::format(" ({} COMM_COLL_NODEs without comm_type or group not matched)",
                                                 a.untyped_collectives)
                                   : "");
  if (a.worst_first.empty()) {
    if (n != 0) fmt::print(out, "  every member of every instance has the same comm_size: perfect balance (CV 0)\n");
    return;
  }
  fmt::print(out, "\nWorst imbalances first (group #seq type \"name\": typical size; max/mean, CV; who deviates)\n");
  for (size_t k = 0; k < a.worst_first.size() && k < max_listed; ++k) {
    const CollectiveInstance& I = a.collectives[a.worst_first[k]];
    std::vector<std::string> who;
    for (const auto& m : I.deviating) who.push_back(fmt::format("rank {} node {}: {}", m.rank, m.node_id, format_bytes(m.bytes)));
    const auto missing = missing_ranks(I, a);
    if (!missing.empty()) who.push_back(fmt::format("ranks {} never issue it", fmt::join(missing, ", ")));
    if (I.mixed_types) who.push_back("members disagree on the collective type");
    fmt::print(out, "  {} \"{}\": {} on {} of {} ranks; max/mean {:.3g}, CV {}; {}\n", instance_label(I), I.name,
               format_bytes(I.typical_bytes), I.members.size() - I.deviating.size(), I.group_size,
               I.max_over_mean(), cv_text(I.bytes.cv), fmt::join(who, "; "));
  }
  if (a.worst_first.size() > max_listed) {
    fmt::print(out, "  ... and {} more (--max-listed N, or --json for all)\n", a.worst_first.size() - max_listed);
  }
}

// The summaries, those with imbalanced instances first (most first, then the worst CV), at most `max_listed`.
void print_summaries(std::FILE* out, const std::string& title, std::vector<CollectiveSummary> rows, bool groups,
                     size_t max_listed) {
  if (rows.empty()) return;
  std::stable_sort(rows.begin(), rows.end(), [](const CollectiveSummary& x, const CollectiveSummary& y) {
    return std::tie(y.imbalanced, y.worst_cv) < std::tie(x.imbalanced, x.worst_cv);
  });
  fmt::print(out, "\n{}\n  {:<16} {:>6} {:>10} {:>11} {:>14} {:>9}\n", title, groups ? "group" : "type",
             groups ? "ranks" : "", "instances", "imbalanced", "bytes", "worst CV");
  for (size_t i = 0; i < rows.size() && i < max_listed; ++i) {
    const auto& s = rows[i];
    fmt::print(out, "  {:<16} {:>6} {:>10} {:>11} {:>14} {:>9}\n", groups ? group_label(s.key) : s.key,
               groups ? fmt::format("{}", s.ranks) : "", s.instances, s.imbalanced, s.bytes, cv_text(s.worst_cv));
  }
  if (rows.size() > max_listed) fmt::print(out, "  ... and {} more (--max-listed N, or --json)\n", rows.size() - max_listed);
}

void print_matrix(std::FILE* out, const std::string& title, const TrafficMatrix& m, size_t ranks, size_t max_listed) {
  uint64_t messages = 0;
  const uint64_t bytes = total_bytes(m, messages);
  fmt::print(out, "\n{}: {} messages, {} bytes over {} rank pairs\n", title, messages, bytes, m.size());
  if (m.empty()) return;
  if (ranks <= 16) {  // the whole matrix, bytes
    fmt::print(out, "  {:>8}", "src\\dst");
    for (size_t d = 0; d < ranks; ++d) fmt::print(out, " {:>10}", d);
    fmt::print(out, "\n");
    for (size_t s = 0; s < ranks; ++s) {
      fmt::print(out, "  {:>8}", s);
      for (size_t d = 0; d < ranks; ++d) {
        const auto it = m.find({static_cast<int32_t>(s), static_cast<int32_t>(d)});
        fmt::print(out, " {:>10}", it == m.end() ? std::string(".") : fmt::format("{}", it->second.bytes));
      }
      fmt::print(out, "\n");
    }
    return;
  }
  std::vector<std::pair<std::pair<int32_t, int32_t>, TrafficCell>> busiest(m.begin(), m.end());
  std::stable_sort(busiest.begin(), busiest.end(), [](const auto& x, const auto& y) { return x.second.bytes > y.second.bytes; });
  fmt::print(out, "  busiest pairs:");
  for (size_t i = 0; i < busiest.size() && i < max_listed; ++i) {
    fmt::print(out, " {}->{} {} ({} msgs){}", busiest[i].first.first, busiest[i].first.second,
               format_bytes(busiest[i].second.bytes), busiest[i].second.messages,
               i + 1 < std::min(busiest.size(), max_listed) ? "," : "");
  }
  fmt::print(out, "\n");
}

void print_ranks(std::FILE* out, const TraceAnalysis& a) {
  fmt::print(out, "\nPer rank          {:>14} {:>14} {:>14} {:>8} {:>6}\n", "min", "mean", "max", "CV", "max on");
  const auto row = [&](const char* name, const Spread& s) {
    fmt::print(out, "  {:<15} {:>14.0f} {:>14.1f} {:>14.0f} {:>8} {:>6}\n", name, s.min, s.mean, s.max, cv_text(s.cv),
               s.max_rank >= 0 ? fmt::format("{}", a.ranks[static_cast<size_t>(s.max_rank)].rank) : "-");
  };
  row("compute_us", a.compute_us);
  row("num_ops", a.num_ops);
  row("tensor_bytes", a.tensor_bytes);
  row("collective_B", a.collective_bytes);
  row("chain_us", a.chain_us);
  if (a.chain_us.max_rank < 0) return;
  const RankAnalysis& r = a.ranks[static_cast<size_t>(a.chain_us.max_rank)];
  const size_t show = 6;
  std::string ids = fmt::format("{}", fmt::join(r.chain_ids.begin(), r.chain_ids.begin() + static_cast<long>(std::min(show, r.chain_ids.size())), " -> "));
  if (r.chain_ids.size() > show) ids += fmt::format(" -> ... -> {}", r.chain_ids.back());
  fmt::print(out, "\nLongest dependency chain  rank {}: {} us over {} nodes: {}\n", r.rank, r.chain_us,
             r.chain_ids.size(), ids);
}

}  // namespace

std::string cv_text(double cv) { return cv == 0 ? "0" : fmt::format("{:.3g}", cv); }

std::string group_label(const std::string& pg) { return pg.empty() ? "default" : "\"" + pg + "\""; }

std::string instance_label(const CollectiveInstance& I) {
  return fmt::format("{} #{} {}", group_label(I.pg), I.seq, traces::collective_name(I.type));
}

std::vector<int32_t> missing_ranks(const CollectiveInstance& I, const TraceAnalysis& a) {
  std::vector<int32_t> missing;
  if (I.members.size() == I.group_size) return missing;
  const auto it = a.group_ranks.find(I.pg);
  if (it == a.group_ranks.end()) return missing;
  size_t k = 0;
  for (const int64_t r : it->second) {
    while (k < I.members.size() && I.members[k].rank < r) ++k;
    if (k == I.members.size() || I.members[k].rank != r) missing.push_back(static_cast<int32_t>(r));
  }
  return missing;
}

void print_analysis(std::FILE* out, const TraceAnalysis& a, const AnalysisInputs& inputs, size_t max_listed) {
  fmt::print(out, "Workload     {}: {} rank{}\n", a.prefix, a.ranks.size(), a.ranks.size() == 1 ? "" : "s");
  print_imbalances(out, a, max_listed);
  print_summaries(out, "By process group", a.by_group, true, max_listed);
  print_summaries(out, "By collective type", a.by_type, false, max_listed);
  print_matrix(out, "Point-to-point (SEND nodes; bytes, src rank x dst rank)", a.p2p, a.ranks.size(), max_listed);
  if (inputs.implied != nullptr) {
    print_matrix(out, fmt::format("Collectives on {} ({})", inputs.network, inputs.implied->algorithms),
                 inputs.implied->matrix, a.ranks.size(), max_listed);
    for (const auto& w : inputs.implied->warnings) fmt::print(out, "  note: {}\n", w);
  }
  print_ranks(out, a);
}

}  // namespace fabemu::analyze
