// Human-readable run summary and the comparison of two reports.
#include "emulator/summary.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace fabemu::emu {

std::string format_ps(uint64_t ps) {
  if (ps < 1'000) return fmt::format("{} ps", ps);
  struct Unit {
    uint64_t ps_per_thousandth;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1, "ns"}, {1'000, "us"}, {1'000'000, "ms"}, {1'000'000'000, "s"}};
  size_t u = 0;
  if (ps >= 1'000'000) u = 1;
  if (ps >= 1'000'000'000) u = 2;
  if (ps >= 1'000'000'000'000) u = 3;
  const uint64_t div = kUnits[u].ps_per_thousandth;
  __extension__ using u128 = unsigned __int128;
  const auto thousandths = static_cast<uint64_t>((u128{ps} + div / 2) / div);
  return fmt::format("{}.{:03} {}", thousandths / 1000, thousandths % 1000, kUnits[u].name);
}

std::string format_signed_ps(int64_t ps) {
  if (ps == 0) return "0 ps";
  const uint64_t mag = ps < 0 ? uint64_t{0} - static_cast<uint64_t>(ps) : static_cast<uint64_t>(ps);
  return (ps < 0 ? "-" : "+") + format_ps(mag);
}

std::string format_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  size_t u = 0;
  uint64_t scale = 1;
  while (u < 4 && bytes >= scale * 1024) {
    scale *= 1024;
    ++u;
  }
  if (bytes % scale == 0) return fmt::format("{} {}", bytes / scale, kUnits[u]);
  return fmt::format("{:.2f} {}", static_cast<double>(bytes) / static_cast<double>(scale), kUnits[u]);
}

namespace {

std::string pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : std::string("-");
}

// The straggler among the ranks: the latest finish; among ranks that finish together (a final collective
// ends them all at once), the one that computed longest, which the others waited for.
bool slower(const RankResult& a, const RankResult& b) {
  if (a.finish != b.finish) return a.finish > b.finish;
  if (a.compute_busy != b.compute_busy) return a.compute_busy > b.compute_busy;
  return a.rank < b.rank;
}

std::string time_and_ps(uint64_t ps) { return fmt::format("{} ({} ps)", format_ps(ps), ps); }

int64_t signed_delta(uint64_t a, uint64_t b) {
  return b >= a ? static_cast<int64_t>(std::min<uint64_t>(b - a, INT64_MAX))
                : -static_cast<int64_t>(std::min<uint64_t>(a - b, INT64_MAX));
}

// Percent change from a to b; nullopt when a is 0.
std::optional<double> delta_pct(uint64_t a, uint64_t b) {
  if (a == 0) return std::nullopt;
  return 100.0 * static_cast<double>(signed_delta(a, b)) / static_cast<double>(a);
}

std::string pct_text(std::optional<double> p) { return p ? fmt::format("{:+.2f}%", *p) : std::string("n/a"); }

uint64_t duration_ps(const CollectiveResult& c) { return c.finished > c.issued_last ? c.duration().ps() : 0; }

using Out = std::back_insert_iterator<std::string>;

void write_header(Out it, const RunResult& r) {
  fmt::format_to(it, "Workload      {}\n", r.workload);
  fmt::format_to(it, "Emulation     {} NPUs, {} model, {} fabric\n", r.npus, r.model, r.fabric);
  fmt::format_to(it, "Topology      {}\n", r.topology);
  if (r.status == RunStatus::kComplete) {
    fmt::format_to(it, "Total time    {}\n", time_and_ps(r.total.ps()));
  } else {
    // A partial report: the latest finish is not the run's time; say how far it got and why it stopped.
    const auto unfinished = std::count_if(r.ranks.begin(), r.ranks.end(), [](const RankResult& k) { return !k.finished; });
    fmt::format_to(it, "Total time    none: the run is {} ({} of {} ranks did not finish); it reached {}\n",
                   run_status_name(r.status), unfinished, r.ranks.size(), time_and_ps(r.reached.ps()));
  }
}

// Every rank's finish time; above 16 ranks, the min, median and max and the ranks that did not finish.
void write_rank_finish(Out it, const RunResult& r) {
  fmt::format_to(it, "\nRank finish\n");
  if (r.ranks.size() <= 16) {
    for (const RankResult& k : r.ranks) {
      fmt::format_to(it, "  rank {:<4} {:>12}  ({} ps){}\n", k.rank, format_ps(k.finish.ps()), k.finish.ps(),
                     k.finished ? "" : "  did not finish (its last node ended then)");
    }
    return;
  }
  std::vector<const RankResult*> sorted;
  sorted.reserve(r.ranks.size());
  for (const RankResult& k : r.ranks) sorted.push_back(&k);
  std::sort(sorted.begin(), sorted.end(), [](const RankResult* x, const RankResult* y) {
    return x->finish != y->finish ? x->finish < y->finish : x->rank < y->rank;
  });
  const auto row = [&](const char* what, const RankResult* k) {
    fmt::format_to(it, "  {:<7} {:>12}  ({} ps)  rank {}\n", what, format_ps(k->finish.ps()), k->finish.ps(),
                   k->rank);
  };
  row("min", sorted.front());
  row("median", sorted[(sorted.size() - 1) / 2]);
  row("max", sorted.back());
  std::vector<int32_t> unfinished;
  for (const RankResult& k : r.ranks) {
    if (!k.finished) unfinished.push_back(k.rank);
  }
  if (!unfinished.empty()) {
    fmt::format_to(it, "  {} ranks did not finish: {}{}\n", unfinished.size(),
                   fmt::join(unfinished.begin(), unfinished.begin() + std::min<ptrdiff_t>(16, std::ssize(unfinished)),
                             ", "),
                   unfinished.size() > 16 ? ", ..." : "");
  }
}

// Compute / communication alone / idle, and ASTRA-sim's "exposed communication" (finish - compute): the
// average over the ranks and the slowest rank.
void write_time_breakdown(Out it, const RunResult& r) {
  double compute = 0, exposed = 0, idle = 0, astra = 0;
  const RankResult* slowest = &r.ranks.front();
  for (const RankResult& k : r.ranks) {
    compute += static_cast<double>(k.compute_busy.ps());
    exposed += static_cast<double>(k.exposed_comm.ps());
    idle += static_cast<double>(k.idle.ps());
    astra += static_cast<double>(k.finish_minus_compute().ps());
    if (slower(k, *slowest)) slowest = &k;
  }
  const auto n = static_cast<double>(r.ranks.size());
  compute /= n;
  exposed /= n;
  idle /= n;
  astra /= n;
  const auto tot = static_cast<double>(r.total.ps());
  const auto cell = [&](double ps) {
    return fmt::format("{:>12} {:>6}", format_ps(static_cast<uint64_t>(std::llround(ps))), pct(ps, tot));
  };
  fmt::format_to(it, "\n{:<34} {:>19} {:>19} {:>19} {:>19}\n", "Time breakdown (% of total time)", "compute",
                 "comm, no compute", "idle", "finish - compute");
  fmt::format_to(it, "  {:<32} {} {} {} {}\n", "average over ranks", cell(compute), cell(exposed), cell(idle),
                 cell(astra));
  fmt::format_to(it, "  {:<32} {} {} {} {}\n", fmt::format("slowest rank (rank {})", slowest->rank),
                 cell(static_cast<double>(slowest->compute_busy.ps())),
                 cell(static_cast<double>(slowest->exposed_comm.ps())), cell(static_cast<double>(slowest->idle.ps())),
                 cell(static_cast<double>(slowest->finish_minus_compute().ps())));
  fmt::format_to(it, "  (comm, no compute: communication while no compute ran; finish - compute: ASTRA-sim's exposed "
                     "communication, waits included)\n");
}

void write_slowest_collectives(Out it, const RunResult& r, size_t top_collectives) {
  std::vector<const CollectiveResult*> sorted;
  sorted.reserve(r.collectives.size());
  for (const CollectiveResult& c : r.collectives) sorted.push_back(&c);
  const size_t shown = std::min(top_collectives, sorted.size());
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(shown), sorted.end(),
                    [](const CollectiveResult* x, const CollectiveResult* y) {
                      const uint64_t dx = duration_ps(*x), dy = duration_ps(*y);
                      return dx != dy ? dx > dy : x->index < y->index;
                    });
  fmt::format_to(it, "\nSlowest collectives ({} of {})\n", shown, r.collectives.size());
  fmt::format_to(it, "  {:>6} {:<16} {:>10} {:>7} {:<14} {:>12} {:>12}\n", "#", "type", "bytes", "members",
                 "algorithm", "duration", "busbw");
  for (size_t i = 0; i < shown; ++i) {
    const CollectiveResult& c = *sorted[i];
    fmt::format_to(it, "  {:>6} {:<16} {:>10} {:>7} {:<14} {:>12} {:>7.2f} GB/s\n", c.index, c.type,
                   format_size(c.bytes), c.members, c.algorithm.empty() ? "-" : c.algorithm,
                   format_ps(duration_ps(c)), c.busbw_bytes_per_s / 1e9);
  }
}

// A fat-tree's links by tier (leaf, spine): how many carried traffic, their busiest and mean utilization.
void write_fat_tree_tiers(Out it, const RunResult& r) {
  for (const char* tier : {"leaf", "spine"}) {
    size_t n = 0;
    double max = 0, sum = 0;
    for (const LinkResult& l : r.links) {
      if (l.tier != tier) continue;
      ++n;
      max = std::max(max, l.utilization);
      sum += l.utilization;
    }
    if (n == 0) continue;
    fmt::format_to(it, "  {:<28} {:>6.1f}% busy at most, {:.1f}% on average, over {} links\n",
                   fmt::format("fat-tree {} links", tier), 100.0 * max, 100.0 * sum / static_cast<double>(n), n);
  }
}

void write_busiest_links(Out it, const RunResult& r) {
  std::vector<const LinkResult*> sorted;
  for (const LinkResult& l : r.links) sorted.push_back(&l);
  const size_t shown = std::min<size_t>(5, sorted.size());
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(shown), sorted.end(),
                    [](const LinkResult* x, const LinkResult* y) {
                      return x->utilization != y->utilization ? x->utilization > y->utilization : x->id < y->id;
                    });
  fmt::format_to(it, "\nBusiest links ({} of {} that carried traffic)\n", shown, r.links.size());
  for (size_t i = 0; i < shown; ++i) {
    const LinkResult& l = *sorted[i];
    const std::string name =
        fmt::format("link {} ({} -> {}, dim {}{}{})", l.id, l.from, l.to, l.dim, l.tier.empty() ? "" : ", ", l.tier);
    fmt::format_to(it, "  {:<28} {:>6.1f}% busy  {:>12}  {} packets\n", name, 100.0 * l.utilization,
                   format_size(l.bytes), l.packets);
  }
  write_fat_tree_tiers(it, r);
}

void write_totals(Out it, const RunResult& r) {
  fmt::format_to(it, "\nCollectives   {} ({} chunk phases evaluated in closed form)\n", r.collectives.size(),
                 r.collectives_closed_form);
  if (r.p2p.sends != 0) fmt::format_to(it, "Send/recv     {} ({})\n", r.p2p.sends, format_size(r.p2p.bytes));
  fmt::format_to(it, "Messages      {} ({})\n", r.messages, format_size(r.message_bytes));
  fmt::format_to(it, "Events        {}\n", r.events);
}

// A heading and the first 20 lines, then how many more the JSON report holds.
void write_first_lines(Out it, const std::string& heading, const std::vector<std::string>& lines) {
  fmt::format_to(it, "{}", heading);
  constexpr size_t kMaxShown = 20;
  for (size_t i = 0; i < std::min(kMaxShown, lines.size()); ++i) fmt::format_to(it, "  {}\n", lines[i]);
  if (lines.size() > kMaxShown) {
    fmt::format_to(it, "  ... and {} more (all in the JSON report)\n", lines.size() - kMaxShown);
  }
}

}  // namespace

std::string format_summary(const RunResult& r, size_t top_collectives) {
  std::string out;
  const Out it = std::back_inserter(out);
  write_header(it, r);
  if (!r.ranks.empty()) {
    write_rank_finish(it, r);
    write_time_breakdown(it, r);
  }
  if (!r.collectives.empty() && top_collectives > 0) write_slowest_collectives(it, r, top_collectives);
  if (!r.links.empty()) write_busiest_links(it, r);
  write_totals(it, r);
  if (!r.warnings.empty()) write_first_lines(it, fmt::format("\nWarnings ({})\n", r.warnings.size()), r.warnings);
  if (!r.stuck.empty()) {
    write_first_lines(it, fmt::format("\nDEADLOCK: the workload cannot finish ({} waiting)\n", r.stuck.size()),
                      r.stuck);
  }
  return out;
}

// ---- comparison ----------------------------------------------------------------------------------------

bool is_regression(const RunResult& a, const RunResult& b, double max_regression_pct) {
  const uint64_t ta = a.total.ps(), tb = b.total.ps();
  if (tb <= ta) return false;
  if (ta == 0) return true;
  return static_cast<double>(tb - ta) * 100.0 > max_regression_pct * static_cast<double>(ta);
}

namespace {

std::optional<std::string> partial_report(const RunResult& r, const char* which) {
  const auto unfinished = std::count_if(r.ranks.begin(), r.ranks.end(), [](const RankResult& k) { return !k.finished; });
  if (r.status == RunStatus::kComplete && unfinished == 0 && !r.ranks.empty()) return std::nullopt;
  if (r.ranks.empty()) return fmt::format("{} has no ranks", which);
  return fmt::format("{} is a partial report: the run is {} ({} of {} ranks did not finish; it reached {})", which,
                     run_status_name(r.status == RunStatus::kComplete ? RunStatus::kIncomplete : r.status), unfinished,
                     r.ranks.size(), format_ps(r.reached.ps()));
}

}  // namespace

std::optional<std::string> gate_refusal(const RunResult& a, const RunResult& b) {
  if (auto why = partial_report(b, "B (the candidate)")) return why;
  if (auto why = partial_report(a, "A (the baseline)")) return why;
  if (b.ranks.size() < a.ranks.size()) {
    return fmt::format("B (the candidate) has {} ranks, A {}: ranks are missing", b.ranks.size(), a.ranks.size());
  }
  return std::nullopt;
}

bool fails_gate(const RunResult& a, const RunResult& b, double max_regression_pct) {
  return gate_refusal(a, b).has_value() || is_regression(a, b, max_regression_pct);
}

std::vector<std::string> comparison_warnings(const RunResult& a, const RunResult& b) {
  std::vector<std::string> out;
  auto differ = [&](const char* what, const auto& x, const auto& y) {
    if (x != y) out.push_back(fmt::format("A and B have different {}: {} / {}", what, x, y));
  };
  differ("workloads", a.workload, b.workload);
  differ("rank counts", a.ranks.size(), b.ranks.size());
  differ("NPU counts", a.npus, b.npus);
  differ("models", a.model, b.model);
  differ("fabrics", a.fabric, b.fabric);
  return out;
}

namespace {

struct TypeTotals {
  uint64_t count_a = 0, count_b = 0, dur_a = 0, dur_b = 0;
};

std::map<std::string, TypeTotals> by_type(const RunResult& a, const RunResult& b) {
  std::map<std::string, TypeTotals> m;
  for (const auto& c : a.collectives) {
    auto& t = m[c.type];
    ++t.count_a;
    t.dur_a += duration_ps(c);
  }
  for (const auto& c : b.collectives) {
    auto& t = m[c.type];
    ++t.count_b;
    t.dur_b += duration_ps(c);
  }
  return m;
}

struct RankPair {
  std::optional<uint64_t> a, b;
};

std::map<int32_t, RankPair> by_rank(const RunResult& a, const RunResult& b) {
  std::map<int32_t, RankPair> m;
  for (const auto& k : a.ranks) m[k.rank].a = k.finish.ps();
  for (const auto& k : b.ranks) m[k.rank].b = k.finish.ps();
  return m;
}

}  // namespace

std::string format_comparison(const RunResult& a, const RunResult& b, const std::string& name_a,
                              const std::string& name_b, const CompareOptions& options) {
  std::string out;
  auto it = std::back_inserter(out);
  const uint64_t ta = a.total.ps(), tb = b.total.ps();
  fmt::format_to(it, "A  {}: {}, {} NPUs, {} model\n", name_a, time_and_ps(ta), a.npus, a.model);
  fmt::format_to(it, "B  {}: {}, {} NPUs, {} model\n", name_b, time_and_ps(tb), b.npus, b.model);
  fmt::format_to(it, "Delta (B - A)  {} ({} ps, {})\n", format_signed_ps(signed_delta(ta, tb)), signed_delta(ta, tb),
                 pct_text(delta_pct(ta, tb)));

  const auto types = by_type(a, b);
  if (!types.empty()) {
    fmt::format_to(it, "\nCollectives by type (summed durations)\n  {:<22} {:>13} {:>14} {:>14} {:>14} {:>9}\n",
                   "type", "count A / B", "A", "B", "delta", "");
    for (const auto& [type, t] : types) {
      fmt::format_to(it, "  {:<22} {:>13} {:>14} {:>14} {:>14} {:>9}\n", type,
                     fmt::format("{} / {}", t.count_a, t.count_b), format_ps(t.dur_a), format_ps(t.dur_b),
                     format_signed_ps(signed_delta(t.dur_a, t.dur_b)), pct_text(delta_pct(t.dur_a, t.dur_b)));
    }
  }
  if (options.per_rank) {
    fmt::format_to(it, "\nRank finish\n  {:<6} {:>14} {:>14} {:>14} {:>9}\n", "rank", "A", "B", "delta", "");
    for (const auto& [rank, p] : by_rank(a, b)) {
      if (p.a && p.b) {
        fmt::format_to(it, "  {:<6} {:>14} {:>14} {:>14} {:>9}\n", rank, format_ps(*p.a), format_ps(*p.b),
                       format_signed_ps(signed_delta(*p.a, *p.b)), pct_text(delta_pct(*p.a, *p.b)));
      } else {
        fmt::format_to(it, "  {:<6} {:>14} {:>14}\n", rank, p.a ? format_ps(*p.a) : "-", p.b ? format_ps(*p.b) : "-");
      }
    }
  }
  const auto warnings = comparison_warnings(a, b);
  for (const auto& w : warnings) fmt::format_to(it, "{}warning: {}\n", &w == &warnings.front() ? "\n" : "", w);
  if (options.max_regression_pct) {
    const double limit = *options.max_regression_pct;
    if (const auto why = gate_refusal(a, b)) {
      fmt::format_to(it, "\nFAIL: {}: no gate passes on it\n", *why);
    } else if (is_regression(a, b, limit)) {
      fmt::format_to(it, "\nREGRESSION: B is {} slower than A (limit {:.2f}%)\n", pct_text(delta_pct(ta, tb)), limit);
    } else {
      fmt::format_to(it, "\nOK: B is within {:.2f}% of A\n", limit);
    }
  }
  return out;
}

std::string comparison_to_json(const RunResult& a, const RunResult& b, const std::string& name_a,
                               const std::string& name_b, const CompareOptions& options) {
  using oj = nlohmann::ordered_json;
  const auto opt = [](std::optional<double> v) { return v ? oj(std::round(*v * 1e6) / 1e6) : oj(nullptr); };
  const uint64_t ta = a.total.ps(), tb = b.total.ps();
  oj j;
  j["schema"] = "fabemu.compare/1";
  j["a"] = {{"file", name_a}, {"total_time_ps", ta}, {"npus", a.npus}, {"model", a.model},
            {"status", run_status_name(a.status)}};
  j["b"] = {{"file", name_b}, {"total_time_ps", tb}, {"npus", b.npus}, {"model", b.model},
            {"status", run_status_name(b.status)}};
  j["warnings"] = comparison_warnings(a, b);
  j["delta_ps"] = signed_delta(ta, tb);
  j["delta_pct"] = opt(delta_pct(ta, tb));
  oj types = oj::array();
  for (const auto& [type, t] : by_type(a, b)) {
    types.push_back({{"type", type},
                     {"count_a", t.count_a},
                     {"count_b", t.count_b},
                     {"duration_a_ps", t.dur_a},
                     {"duration_b_ps", t.dur_b},
                     {"delta_ps", signed_delta(t.dur_a, t.dur_b)},
                     {"delta_pct", opt(delta_pct(t.dur_a, t.dur_b))}});
  }
  j["collective_types"] = types;
  if (options.per_rank) {
    oj ranks = oj::array();
    for (const auto& [rank, p] : by_rank(a, b)) {
      oj row = {{"rank", rank},
                {"finish_a_ps", p.a ? oj(*p.a) : oj(nullptr)},
                {"finish_b_ps", p.b ? oj(*p.b) : oj(nullptr)}};
      row["delta_ps"] = p.a && p.b ? oj(signed_delta(*p.a, *p.b)) : oj(nullptr);
      row["delta_pct"] = p.a && p.b ? opt(delta_pct(*p.a, *p.b)) : oj(nullptr);
      ranks.push_back(row);
    }
    j["ranks"] = ranks;
  }
  j["max_regression_pct"] = options.max_regression_pct ? oj(*options.max_regression_pct) : oj(nullptr);
  j["regression"] = options.max_regression_pct ? fails_gate(a, b, *options.max_regression_pct) : false;
  const auto refusal = gate_refusal(a, b);
  j["gate_refused"] = refusal ? oj(*refusal) : oj(nullptr);
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace fabemu::emu
