// nccl-tests' own stdout (all_reduce_perf and the others, every version since 2017): rows among headers,
// NCCL's log lines and launcher tags; the collective and the ranks from the headers.
#include <fmt/format.h>

#include <set>

#include "host/config/config_util.h"
#include "host/nccl/nccl_tests_text.h"

namespace fabemu::nccl::detail {
namespace {

using host::config::fail;

constexpr std::string_view kOutputRowForm =
    "an nccl-tests result row: \"size count type redop root\", then \"time algbw busbw #wrong\" out of place and "
    "in place (13 fields; 12 or 11 before nccl-tests 2.13, without root or redop; 9, 8 or 7 with the out-of-place "
    "half only)";

// What the non-row lines say: the device list ("#  Rank  3 Group  0 Pid ..."), "# nThread 1 nGpus 8 ...",
// NCCL INFO "... nranks 16 ...", the binary's name.
struct OutputHints {
  std::set<int64_t> rank_ids;
  int64_t nranks = 0;  // the largest "nranks N" of NCCL's INFO lines
  int64_t gpus = 0;    // nThread x nGpus: the ranks of one process
  uint64_t collective_line = 0;
};

// A launcher's tag in front of a line: srun --label "12: ", Open MPI --tag-output "[1,0]<stdout>:", MPICH and
// Intel MPI -prepend-rank "[0] ".
std::string_view strip_launcher_prefix(std::string_view line) {
  line = trim(line);
  size_t i = 0;
  while (i < line.size() && is_digit(line[i])) ++i;
  if (i > 0 && i < line.size() && line[i] == ':' && (i + 1 == line.size() || is_blank(line[i + 1]))) {
    return trim(line.substr(i + 1));
  }
  if (line.starts_with('[')) {
    const size_t close = line.find(']');
    if (close == std::string_view::npos) return line;
    const std::string_view inside = line.substr(1, close - 1);
    std::string_view rest = line.substr(close + 1);
    const size_t comma = inside.find(',');
    if (comma != std::string_view::npos && all_digits(inside.substr(0, comma)) && all_digits(inside.substr(comma + 1))) {
      for (const std::string_view tag : {"<stdout>:", "<stderr>:"}) {
        if (rest.starts_with(tag)) return trim(rest.substr(tag.size()));
      }
    }
    if (all_digits(inside) && (rest.empty() || is_blank(rest.front()))) return trim(rest);
  }
  return line;
}

std::optional<int64_t> small_count(std::string_view s) {
  const auto v = all_digits(s) && s.size() <= 10 ? host::config::parse_int(s) : std::nullopt;
  return v && *v <= INT32_MAX ? v : std::nullopt;
}

// Every "<collective>_perf" named on the line (the header's "# Collective test starting: all_reduce_perf", a
// command line); two different collectives in one file are an error.
void find_binaries(NcclTestsTable& table, OutputHints& hints, std::string_view line, uint64_t number) {
  constexpr std::string_view kSuffix = "_perf";
  for (size_t at = line.find(kSuffix); at != std::string_view::npos; at = line.find(kSuffix, at + kSuffix.size())) {
    size_t begin = at;
    while (begin > 0 && ((line[begin - 1] >= 'a' && line[begin - 1] <= 'z') || line[begin - 1] == '_')) --begin;
    const std::string_view name = line.substr(begin, at - begin);
    if (!is_collective(name)) continue;
    if (!table.collective.empty() && table.collective != name) {
      fail(table.source, number,
           fmt::format("names {}_perf, but line {} named {}_perf: one nccl-tests table per file", name,
                       hints.collective_line, table.collective));
    }
    if (table.collective.empty()) hints.collective_line = number;
    table.collective = std::string(name);
  }
}

void read_hints(OutputHints& hints, const std::vector<std::string_view>& t) {
  if (t.size() >= 3 && t[0] == "#" && t[1] == "Rank") {
    if (const auto r = small_count(t[2])) hints.rank_ids.insert(*r);
  }
  if (t.size() >= 5 && t[0] == "#" && t[1] == "nThread" && t[3] == "nGpus") {
    const auto threads = small_count(t[2]);
    const auto gpus = small_count(t[4]);
    if (threads && gpus) hints.gpus = *threads * *gpus;
  }
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i] != "nranks") continue;
    if (const auto n = small_count(t[i + 1])) hints.nranks = std::max(hints.nranks, *n);
  }
}

// The timings of one half (out of place or in place) from field `first` on.
void read_half(const std::vector<Field>& f, size_t first, std::optional<double>& time, std::optional<double>& algbw,
               std::optional<double>& busbw) {
  time = f[first].number();
  algbw = f[first + 1].number();
  busbw = f[first + 2].number();
  // #wrong (a count, or N/A without the check) or, before 2.13, the largest error ("0e+00", "N/A"; nan when
  // the check itself failed): the result of the check, not a measurement.
  const std::string_view wrong = f[first + 3].text;
  constexpr std::array<std::string_view, 5> kNotNumbers{"N/A", "nan", "-nan", "inf", "-inf"};
  if (!host::config::parse_double(wrong) && std::find(kNotNumbers.begin(), kNotNumbers.end(), wrong) == kNotNumbers.end()) {
    f[first + 3].bad("a number or N/A");
  }
}

NcclTestsRow parse_output_row(const std::string& source, const std::vector<std::string_view>& t, uint64_t number) {
  const size_t n = t.size();
  if (n != 7 && n != 8 && n != 9 && n != 11 && n != 12 && n != 13) {
    fail(source, number, fmt::format("expected {}; got {} fields", kOutputRowForm, n));
  }
  const size_t halves = n >= 11 ? 2 : 1;
  const size_t lead = n - 4 * halves;  // 3: size count type; 4: + redop (or root: broadcast); 5: + redop root
  static constexpr std::array<std::string_view, 4> kHalf{"time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong"};
  std::vector<std::string> columns{"size (B)", "count (elements)", "type"};
  if (lead >= 4) columns.emplace_back(lead == 5 ? "redop" : "redop or root");
  if (lead == 5) columns.emplace_back("root");
  for (const std::string_view half : {"out of place", "in place"}) {
    for (const std::string_view c : kHalf) columns.push_back(fmt::format("{} {}", half, c));
  }
  std::vector<Field> f;
  for (size_t i = 0; i < n; ++i) f.push_back(Field{source, number, i, columns[i], t[i]});

  NcclTestsRow row;
  row.line = number;
  row.size_bytes = f[0].whole();
  row.count = f[1].whole();
  row.type = f[2].name();
  if (lead == 4 && host::config::parse_int(t[3])) {
    row.root = f[3].integer();  // broadcast before 2.13: "size count type root"
  } else if (lead >= 4) {
    row.redop = f[3].name();
  }
  if (lead == 5) row.root = f[4].integer();
  read_half(f, lead, row.time_us_oop, row.algbw_oop, row.busbw_oop);
  if (halves == 2) read_half(f, lead + 4, row.time_us_ip, row.algbw_ip, row.busbw_ip);
  return row;
}

}  // namespace

void parse_output(NcclTestsTable& table, std::string_view text) {
  table.format = NcclTestsFormat::kNcclTestsOutput;
  OutputHints hints;
  Lines lines(text, table.source);
  std::string_view line;
  while (lines.next(line)) {
    const auto t = split_blanks(strip_launcher_prefix(line));
    if (t.empty()) continue;
    if (all_digits(t[0])) {
      add_row(table, parse_output_row(table.source, t, lines.number()));
      continue;
    }
    read_hints(hints, t);
    find_binaries(table, hints, line, lines.number());
  }
  if (!hints.rank_ids.empty()) {
    table.ranks = static_cast<int64_t>(hints.rank_ids.size());
  } else {
    table.ranks = hints.nranks > 0 ? hints.nranks : hints.gpus;
  }
  if (table.rows.empty()) {
    no_rows(table.source, fmt::format("{} lines without a row; expected nccl-tests output ({}) or a calibration TSV "
                                      "(a \"size_bytes<TAB>count<TAB>...\" column header, then rows)",
                                      lines.number(), kOutputRowForm));
  }
}

}  // namespace fabemu::nccl::detail
