#include "host/nccl/nccl_tests_text.h"

#include <fmt/format.h>

#include "host/config/config_util.h"

namespace fabemu::nccl::detail {

using host::config::fail;

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


bool Lines::next(std::string_view& line) {
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

void Field::bad(std::string_view expected) const {
  fail(source, line, fmt::format("field {} ({}): expected {}; got {}", index + 1, column, expected, quoted(text)));
}

uint64_t Field::whole() const {
  const auto v = all_digits(text) ? host::config::parse_int(text) : std::nullopt;
  if (!v) bad(fmt::format("a whole number from 0 to {}", INT64_MAX));
  return static_cast<uint64_t>(*v);
}

int64_t Field::integer() const {
  const auto v = host::config::parse_int(text);
  if (!v || text.front() == '+') bad("an integer");
  return *v;
}

double Field::number() const {
  const auto v = host::config::parse_double(text);
  if (!v || *v < 0 || text.front() == '+') bad("a number >= 0");
  return *v;
}

std::string Field::name() const {
  if (text.empty() || is_digit(text.front()) || text.front() == '-' || text.front() == '+') bad("a name");
  return std::string(text);
}

void add_row(NcclTestsTable& table, NcclTestsRow row) {
  if (table.rows.size() == kMaxNcclTestsRows) {
    fail(table.source, row.line, fmt::format("more than {} result rows", kMaxNcclTestsRows));
  }
  table.rows.push_back(std::move(row));
}

[[noreturn]] void no_rows(const std::string& source, std::string_view detail) {
  fail(source, std::nullopt, fmt::format("no result rows: {}", detail));
}

}  // namespace fabemu::nccl::detail
