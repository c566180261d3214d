// fabemu's calibration TSV (../shared/calibration/nccl-tests/README.md): "# key: value" lines, the column
// header, rows of exactly 10 tab-separated fields.
#include <fmt/format.h>

#include "host/config/config_util.h"
#include "host/nccl/nccl_tests_text.h"

namespace fabemu::nccl::detail {
namespace {

using host::config::fail;

constexpr std::string_view kTsvHeader =
    "size_bytes\tcount\ttype\tredop\ttime_us_oop\talgbw_oop\tbusbw_oop\ttime_us_ip\talgbw_ip\tbusbw_ip";
constexpr size_t kTsvFields = 10;

// "# collective: all_reduce (sum, float)" -> "all_reduce"; other "# key: value" lines say nothing we read.
void read_tsv_comment(NcclTestsTable& table, std::string_view line, uint64_t number) {
  constexpr std::string_view kKey = "collective:";
  std::string_view rest = trim(line.substr(1));
  if (!rest.starts_with(kKey)) return;
  rest = trim(rest.substr(kKey.size()));
  const size_t end = std::min(rest.find_first_of(" \t(;,"), rest.size());
  const std::string_view name = rest.substr(0, end);
  if (!is_collective(name)) {
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

}  // namespace

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

}  // namespace fabemu::nccl::detail
