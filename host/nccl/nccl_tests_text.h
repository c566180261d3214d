// Shared by the two readers of host/nccl (nccl-tests' stdout, the calibration TSV): lines within the bounds,
// fields checked and quoted in located errors. Internal to fabemu_nccl_tests.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/nccl/nccl_tests_table.h"

namespace fabemu::nccl::detail {

inline constexpr std::array<std::string_view, 6> kCollectives{"all_reduce", "all_gather", "reduce_scatter",
                                                              "broadcast",  "reduce",     "alltoall"};
inline bool is_collective(std::string_view name) {
  return std::find(kCollectives.begin(), kCollectives.end(), name) != kCollectives.end();
}

inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_digit); }
std::string_view trim(std::string_view s);
std::vector<std::string_view> split_blanks(std::string_view s);  // at runs of blanks
std::vector<std::string_view> split_tabs(std::string_view s);    // at each tab: empty fields kept
// A field as quoted in a message: at most 40 bytes of it.
std::string quoted(std::string_view s);

// The lines of the text, 1-based, without their "\n" or "\r\n"; a line longer than the bound is an error.
class Lines {
 public:
  Lines(std::string_view text, const std::string& source) : text_(text), source_(source) {}
  bool next(std::string_view& line);
  uint64_t number() const { return number_; }

 private:
  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  uint64_t number_ = 0;
};

// One field of a row, read or refused with "line L: field F (column): expected ...; got "x"".
struct Field {
  const std::string& source;
  uint64_t line;
  size_t index;  // 0-based
  std::string_view column;
  std::string_view text;

  [[noreturn]] void bad(std::string_view expected) const;
  uint64_t whole() const;   // digits only, at most INT64_MAX
  int64_t integer() const;  // an optional '-', then digits
  double number() const;    // finite and >= 0 ("36.06", "1.2e+05")
  std::optional<uint64_t> optional_whole() const { return text.empty() ? std::nullopt : std::optional(whole()); }
  std::optional<double> optional_number() const { return text.empty() ? std::nullopt : std::optional(number()); }
  // type and redop ("float", "sum", "none"): a number here means the columns are not the ones expected.
  std::string name() const;
};

// Appends the row, or refuses the one past kMaxNcclTestsRows.
void add_row(NcclTestsTable& table, NcclTestsRow row);
[[noreturn]] void no_rows(const std::string& source, std::string_view detail);

inline bool is_tsv_header(std::string_view line) { return line.starts_with("size_bytes\tcount"); }
void parse_tsv(NcclTestsTable& table, std::string_view text);     // nccl_tests_tsv.cpp
void parse_output(NcclTestsTable& table, std::string_view text);  // nccl_tests_output.cpp

}  // namespace fabemu::nccl::detail
