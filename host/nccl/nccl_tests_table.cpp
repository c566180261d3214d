#include "host/nccl/nccl_tests_table.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "host/config/config_util.h"
#include "traces/error.h"

namespace fabemu::nccl {
namespace {

using host::config::fail;

constexpr std::array<std::string_view, 6> kCollectives{"all_reduce", "all_gather", "reduce_scatter",
                                                       "broadcast",  "reduce",     "alltoall"};
constexpr std::string_view kTsvHeader =
    "size_bytes\tcount\ttype\tredop\ttime_us_oop\talgbw_oop\tbusbw_oop\ttime_us_ip\talgbw_ip\tbusbw_ip";
constexpr size_t kTsvFields = 10;
constexpr std::string_view kOutputRowForm =
    "an nccl-tests result row: \"size count type redop root\", then \"time algbw busbw #wrong\" out of place and "
    "in place (13 fields; 12 or 11 before nccl-tests 2.13, without root or redop; 9, 8 or 7 with the out-of-place "
    "half only)";

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_digit); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_blanks(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_blank(s[i])) ++i;
    const size_t begin = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    if (i > begin) out.push_back(s.substr(begin, i - begin));
  }
  return out;
}

std::vector<std::string_view> split_tabs(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t begin = 0;;) {
    const size_t tab = s.find('\t', begin);
    out.push_back(s.substr(begin, tab == std::string_view::npos ? std::string_view::npos : tab - begin));
    if (tab == std::string_view::npos) return out;
    begin = tab + 1;
  }
}

// A field as quoted in a message: at most 40 bytes of it.
std::string quoted(std::string_view s) {
  return s.size() <= 40 ? fmt::format("\"{}\"", s) : fmt::format("\"{}...\"", s.substr(0, 40));
}

// The lines of the text, 1-based, without their "\n" or "\r\n"; a line longer than the bound is an error.
class Lines {
 public:
  Lines(std::string_view text, const std::string& source) : text_(text), source_(source) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const size_t end = std::min(text_.find('\n', pos_), text_.size());
    line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++number_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > kMaxNcclTestsLineBytes) {
      fail(source_, number_, fmt::format("the line is {} bytes long; a line of an nccl-tests table is at most {} bytes",
                                         line.size(), kMaxNcclTestsLineBytes));
    }
    return true;
  }
  uint64_t number() const { return number_; }

 private:
  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  uint64_t number_ = 0;
};

// Where a field is, for its error: "line L: field F (column): expected ...; got "x"".
struct Field {
  const std::string& source;
  uint64_t line;
  size_t index;  // 0-based
  std::string_view column;
  std::string_view text;

  [[noreturn]] void bad(std::string_view expected) const {
    fail(source, line, fmt::format("field {} ({}): expected {}; got {}", index + 1, column, expected, quoted(text)));
  }
  uint64_t whole() const {
    const auto v = all_digits(text) ? host::config::parse_int(text) : std::nullopt;
    if (!v) bad(fmt::format("a whole number from 0 to {}", INT64_MAX));
    return static_cast<uint64_t>(*v);
  }
  int64_t integer() const {
    const auto v = host::config::parse_int(text);
    if (!v || text.front() == '+') bad("an integer");
    return *v;
  }
  double number() const {
    const auto v = host::config::parse_double(text);
    if (!v || *v < 0 || text.front() == '+') bad("a number >= 0");
    return *v;
  }
  std::optional<uint64_t> optional_whole() const { return text.empty() ? std::nullopt : std::optional(whole()); }
  std::optional<double> optional_number() const { return text.empty() ? std::nullopt : std::optional(number()); }
  // type and redop: "float", "sum", "none"; a number here means the columns are not the ones expected.
  std::string name() const {
    if (text.empty() || is_digit(text.front()) || text.front() == '-' || text.front() == '+') bad("a name");
    return std::string(text);
  }
};

void add_row(NcclTestsTable& table, NcclTestsRow row) {
  if (table.rows.size() == kMaxNcclTestsRows) {
    fail(table.source, row.line, fmt::format("more than {} result rows", kMaxNcclTestsRows));
  }
  table.rows.push_back(std::move(row));
}

[[noreturn]] void no_rows(const std::string& source, std::string_view detail) {
  fail(source, std::nullopt, fmt::format("no result rows: {}", detail));
}

// --- fabemu's calibration TSV ---------------------------------------------------------------------

bool is_tsv_header(std::string_view line) { return line.starts_with("size_bytes\tcount"); }

// "# collective: all_reduce (sum, float)" -> "all_reduce"; other "# key: value" lines say nothing we read.
void read_tsv_comment(NcclTestsTable& table, std::string_view line, uint64_t number) {
  constexpr std::string_view kKey = "collective:";
  std::string_view rest = trim(line.substr(1));
  if (!rest.starts_with(kKey)) return;
  rest = trim(rest.substr(kKey.size()));
  const size_t end = std::min(rest.find_first_of(" \t(;,"), rest.size());
  const std::string_view name = rest.substr(0, end);
  if (std::find(kCollectives.begin(), kCollectives.end(), name) == kCollectives.end()) {
    fail(table.source, number,
         fmt::format("\"# collective:\" names {}; expected all_reduce, all_gather, reduce_scatter, broadcast, reduce or "
                     "alltoall",
                     quoted(name)));
  }
  if (!table.collective.empty() && table.collective != name) {
    fail(table.source, number,
         fmt::format("a second collective \"{}\" (an earlier line says \"{}\")", name, table.collective));
  }
  table.collective = std::string(name);
}

NcclTestsRow parse_tsv_row(const std::string& source, std::string_view line, uint64_t number) {
  const auto f = split_tabs(line);
  if (f.size() != kTsvFields) {
    fail(source, number,
         fmt::format("expected {} tab-separated fields ({}); got {}", kTsvFields, "size_bytes, count, type, redop, "
                     "time_us_oop, algbw_oop, busbw_oop, time_us_ip, algbw_ip, busbw_ip", f.size()));
  }
  auto field = [&](size_t i, std::string_view column) { return Field{source, number, i, column, f[i]}; };
  NcclTestsRow row;
  row.line = number;
  row.size_bytes = field(0, "size_bytes").whole();
  row.count = field(1, "count").optional_whole();
  row.type = std::string(f[2]);
  row.redop = std::string(f[3]);
  row.time_us_oop = field(4, "time_us_oop").optional_number();
  row.algbw_oop = field(5, "algbw_oop").optional_number();
  row.busbw_oop = field(6, "busbw_oop").optional_number();
  row.time_us_ip = field(7, "time_us_ip").optional_number();
  row.algbw_ip = field(8, "algbw_ip").optional_number();
  row.busbw_ip = field(9, "busbw_ip").optional_number();
  return row;
}

void parse_tsv(NcclTestsTable& table, std::string_view text) {
  table.format = NcclTestsFormat::kCalibrationTsv;
  Lines lines(text, table.source);
  std::string_view line;
  uint64_t header = 0;
  while (lines.next(line)) {
    const uint64_t n = lines.number();
    if (trim(line).empty()) continue;
    if (line.front() == '#') {
      read_tsv_comment(table, line, n);
    } else if (is_tsv_header(line)) {
      if (header != 0) fail(table.source, n, fmt::format("a second column header (the first is at line {})", header));
      if (line != kTsvHeader) {
        fail(table.source, n, fmt::format("expected the column header \"{}\" (tab-separated)", kTsvHeader));
      }
      header = n;
    } else if (header == 0) {
      fail(table.source, n,
           fmt::format("expected a \"# key: value\" line or the column header \"{}\" before the rows", kTsvHeader));
    } else {
      add_row(table, parse_tsv_row(table.source, line, n));
    }
  }
  if (table.rows.empty()) no_rows(table.source, fmt::format("nothing after the column header at line {}", header));
}

// --- nccl-tests' own output -------------------------------------------------------------------------

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
    if (std::find(kCollectives.begin(), kCollectives.end(), name) == kCollectives.end()) continue;
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

}  // namespace

NcclTestsTable parse_nccl_tests(std::string_view text, const std::string& source) {
  if (text.size() > kMaxNcclTestsFileBytes) {
    fail(source, std::nullopt, fmt::format("{} bytes; an nccl-tests table is at most {} bytes (16 MiB)", text.size(),
                                           kMaxNcclTestsFileBytes));
  }
  NcclTestsTable table;
  table.source = source;
  bool tsv = false;
  for (size_t pos = 0; pos < text.size() && !tsv;) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    tsv = is_tsv_header(text.substr(pos, end - pos));
    pos = end + 1;
  }
  if (tsv) {
    parse_tsv(table, text);
  } else {
    parse_output(table, text);
  }
  return table;
}

NcclTestsTable read_nccl_tests(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, std::nullopt, fmt::format("cannot open: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    fail(path, std::nullopt,
         fmt::format("is {}; expected a file of nccl-tests output or a calibration TSV",
                     host::config::file_type_name(st.st_mode)));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > kMaxNcclTestsFileBytes) {
    fail(path, std::nullopt,
         fmt::format("{} bytes; an nccl-tests table is at most {} bytes (16 MiB)", size, kMaxNcclTestsFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::nullopt, fmt::format("cannot open: {}", std::strerror(errno)));
  // One byte more than stat said: a file that grew since is still caught by the bound in parse_nccl_tests.
  std::string text(static_cast<size_t>(size) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) fail(path, std::nullopt, "read error");
  text.resize(static_cast<size_t>(in.gcount()));
  return parse_nccl_tests(text, path);
}

}  // namespace fabemu::nccl
