// Errors of the nccl-tests reader: every one names the file, the line (but for the file as a whole) and what
// was expected; the bounds (host/nccl/README.md).
#include <gtest/gtest.h>

#include <string>

#include "host/nccl/nccl_tests_table.h"
#include "tests/support/test_support.h"
#include "traces/error.h"

namespace fabemu::nccl {
namespace {

using traces::TraceError;

using test::error_of;

TraceError parse_error(const std::string& text, const std::string& source = "run.txt") {
  return error_of([&] { parse_nccl_tests(text, source); });
}

constexpr const char* kHeader = "# Collective test starting: all_reduce_perf\n";
constexpr const char* kRow = "           8             2     float     sum      -1    36.06    0.00    0.00      0    35.79    0.00    0.00      0\n";

TEST(NcclTestsErrors, MalformedRow) {
  const TraceError e = parse_error(std::string(kHeader) + kRow +
                                   "          16             4     float     sum      -1     fast    0.00    0.00      0    35.79    0.00    0.00      0\n");
  EXPECT_STREQ(e.what(), "run.txt: line 3: field 6 (out of place time (us)): expected a number >= 0; got \"fast\"");
  EXPECT_EQ(e.where().file, "run.txt");
  EXPECT_EQ(e.where().line, 3u);
  EXPECT_STREQ(parse_error("8 2 float sum -1 1 2 3 0 4 5 6 zero\n").what(),
               "run.txt: line 1: field 13 (in place #wrong): expected a number or N/A; got \"zero\"");
  EXPECT_STREQ(parse_error("8 2 float sum -1 1 -2 3 0 4 5 6 0\n").what(),
               "run.txt: line 1: field 7 (out of place algbw (GB/s)): expected a number >= 0; got \"-2\"");
  EXPECT_STREQ(parse_error("8 2 7 sum -1 1 2 3 0 4 5 6 0\n").what(),
               "run.txt: line 1: field 3 (type): expected a name; got \"7\"");
  EXPECT_STREQ(parse_error("99999999999999999999 2 float sum -1 1 2 3 0 4 5 6 0\n").what(),
               "run.txt: line 1: field 1 (size (B)): expected a whole number from 0 to 9223372036854775807; got "
               "\"99999999999999999999\"");
  // A line that starts with a number but has a field count no nccl-tests version printed.
  EXPECT_STREQ(parse_error("# Avg bus bandwidth : 1\n2 total processes killed (some possibly by mpirun during cleanup)\n").what(),
               "run.txt: line 2: expected an nccl-tests result row: \"size count type redop root\", then \"time algbw "
               "busbw #wrong\" out of place and in place (13 fields; 12 or 11 before nccl-tests 2.13, without root or "
               "redop; 9, 8 or 7 with the out-of-place half only); got 10 fields");
}

TEST(NcclTestsErrors, TwoCollectivesInOneFile) {
  EXPECT_STREQ(parse_error(std::string(kHeader) + kRow + "# Collective test starting: all_gather_perf\n").what(),
               "run.txt: line 3: names all_gather_perf, but line 1 named all_reduce_perf: one nccl-tests table per "
               "file");
}

TEST(NcclTestsErrors, TooManyRows) {
  std::string text = kHeader;
  for (uint64_t i = 0; i < kMaxNcclTestsRows; ++i) text += kRow;
  EXPECT_EQ(parse_nccl_tests(text, "max.txt").rows.size(), kMaxNcclTestsRows);
  text += kRow;
  const TraceError e = parse_error(text);
  EXPECT_STREQ(e.what(), "run.txt: line 100002: more than 100000 result rows");
  // The calibration TSV has the same bound.
  std::string tsv = "size_bytes\tcount\ttype\tredop\ttime_us_oop\talgbw_oop\tbusbw_oop\ttime_us_ip\talgbw_ip\tbusbw_ip\n";
  for (uint64_t i = 0; i <= kMaxNcclTestsRows; ++i) tsv += "8\t2\tfloat\tsum\t1\t0\t0\t1\t0\t0\n";
  EXPECT_STREQ(parse_error(tsv, "t.tsv").what(), "t.tsv: line 100002: more than 100000 result rows");
}

TEST(NcclTestsErrors, TooLongLine) {
  const std::string longest = "#" + std::string(kMaxNcclTestsLineBytes - 1, 'x') + "\n";
  EXPECT_EQ(parse_nccl_tests(std::string(kHeader) + longest + kRow, "ok.txt").rows.size(), 1u);
  const TraceError e = parse_error(std::string(kHeader) + "#" + std::string(kMaxNcclTestsLineBytes, 'x') + "\n" + kRow);
  EXPECT_STREQ(e.what(), "run.txt: line 2: the line is 65537 bytes long; a line of an nccl-tests table is at most "
                         "65536 bytes");
}

TEST(NcclTestsErrors, NoRows) {
  test::ScratchDir dir;
  const std::string empty = dir.file("empty.txt");
  test::write_bytes(empty, "");
  const TraceError e = error_of([&] { read_nccl_tests(empty); });
  EXPECT_EQ(std::string(e.what()),
            empty + ": no result rows: 0 lines without a row; expected nccl-tests output (an nccl-tests result row: "
                    "\"size count type redop root\", then \"time algbw busbw #wrong\" out of place and in place (13 "
                    "fields; 12 or 11 before nccl-tests 2.13, without root or redop; 9, 8 or 7 with the out-of-place "
                    "half only)) or a calibration TSV (a \"size_bytes<TAB>count<TAB>...\" column header, then rows)");
  EXPECT_EQ(e.where().file, empty);
  EXPECT_EQ(e.where().line, std::nullopt);
  // Headers and NCCL's log, but no row (the run failed before its first size).
  const std::string text = std::string(kHeader) + "h:1:1 [0] NCCL WARN Cuda failure 'out of memory'\n";
  EXPECT_EQ(std::string(parse_error(text).what()).substr(0, 52), "run.txt: no result rows: 2 lines without a row; expe");
  EXPECT_STREQ(parse_error("# collective: all_reduce\nsize_bytes\tcount\ttype\tredop\ttime_us_oop\talgbw_oop\tbusbw_oop"
                           "\ttime_us_ip\talgbw_ip\tbusbw_ip\n",
                           "t.tsv")
                   .what(),
               "t.tsv: no result rows: nothing after the column header at line 2");
}

TEST(NcclTestsErrors, FileBounds) {
  test::ScratchDir dir;
  EXPECT_EQ(std::string(error_of([&] { read_nccl_tests(dir.file("missing.txt")); }).what()),
            dir.file("missing.txt") + ": cannot open: No such file or directory");
  EXPECT_EQ(std::string(error_of([&] { read_nccl_tests(dir.path().string()); }).what()),
            dir.path().string() + ": is a directory; expected a file of nccl-tests output or a calibration TSV");
  const std::string big = dir.file("big.txt");
  std::string text(kMaxNcclTestsFileBytes + 1, '#');
  text[0] = '\n';
  EXPECT_STREQ(parse_error(text).what(), "run.txt: 16777217 bytes; an nccl-tests table is at most 16777216 bytes (16 MiB)");
  test::write_bytes(big, text);
  EXPECT_EQ(std::string(error_of([&] { read_nccl_tests(big); }).what()),
            big + ": 16777217 bytes; an nccl-tests table is at most 16777216 bytes (16 MiB)");
}

TEST(NcclTestsErrors, CalibrationTsv) {
  const std::string header =
      "size_bytes\tcount\ttype\tredop\ttime_us_oop\talgbw_oop\tbusbw_oop\ttime_us_ip\talgbw_ip\tbusbw_ip\n";
  EXPECT_STREQ(parse_error(header + "8\t2\tfloat\tsum\t1\t0\t0\t1\t0\n", "t.tsv").what(),
               "t.tsv: line 2: expected 10 tab-separated fields (size_bytes, count, type, redop, time_us_oop, "
               "algbw_oop, busbw_oop, time_us_ip, algbw_ip, busbw_ip); got 9");
  EXPECT_STREQ(parse_error(header + "8\t2\tfloat\tsum\t1\tN/A\t0\t1\t0\t0\n", "t.tsv").what(),
               "t.tsv: line 2: field 6 (algbw_oop): expected a number >= 0; got \"N/A\"");
  EXPECT_STREQ(parse_error(header + "\t2\tfloat\tsum\t1\t0\t0\t1\t0\t0\n", "t.tsv").what(),
               "t.tsv: line 2: field 1 (size_bytes): expected a whole number from 0 to 9223372036854775807; got \"\"");
  EXPECT_STREQ(parse_error("# collective: allreduce\n" + header, "t.tsv").what(),
               "t.tsv: line 1: \"# collective:\" names \"allreduce\"; expected all_reduce, all_gather, reduce_scatter, "
               "broadcast, reduce or alltoall");
  EXPECT_STREQ(parse_error("8\t2\n" + header, "t.tsv").what(),
               "t.tsv: line 1: expected a \"# key: value\" line or the column header \"size_bytes\tcount\ttype\tredop\t"
               "time_us_oop\talgbw_oop\tbusbw_oop\ttime_us_ip\talgbw_ip\tbusbw_ip\" before the rows");
  EXPECT_STREQ(parse_error(header + header, "t.tsv").what(),
               "t.tsv: line 2: a second column header (the first is at line 1)");
  EXPECT_STREQ(parse_error("size_bytes\tcount\ttype\n", "t.tsv").what(),
               "t.tsv: line 1: expected the column header \"size_bytes\tcount\ttype\tredop\ttime_us_oop\talgbw_oop\t"
               "busbw_oop\ttime_us_ip\talgbw_ip\tbusbw_ip\" (tab-separated)");
}

}  // namespace
}  // namespace fabemu::nccl
