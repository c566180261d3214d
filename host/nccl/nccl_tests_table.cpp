// The two entry points: the bounds of the whole input, and the choice of reader (nccl_tests_output.cpp,
// nccl_tests_tsv.cpp).
#include "host/nccl/nccl_tests_table.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "host/config/config_util.h"
#include "host/nccl/nccl_tests_text.h"
#include "traces/error.h"

namespace fabemu::nccl {

using host::config::fail;

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
    tsv = detail::is_tsv_header(text.substr(pos, end - pos));
    pos = end + 1;
  }
  if (tsv) {
    detail::parse_tsv(table, text);
  } else {
    detail::parse_output(table, text);
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
