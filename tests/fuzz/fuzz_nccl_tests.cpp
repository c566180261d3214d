// Fuzz target: the nccl-tests table reader (host/nccl/nccl_tests_table.h), either format. Contract:
// traces::TraceError; an accepted table has 1 to kMaxNcclTestsRows rows at increasing lines of the input, a
// collective of the six or "", and ranks >= 0.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "host/nccl/nccl_tests_table.h"
#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_only<traces::TraceError>([&] {
    const nccl::NcclTestsTable t = nccl::parse_nccl_tests(text, "fuzz.txt");
    const auto lines = static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    if (t.rows.empty() || t.rows.size() > nccl::kMaxNcclTestsRows) fuzz::finding("row count", std::to_string(t.rows.size()));
    uint64_t previous = 0;
    for (const auto& r : t.rows) {
      if (r.line <= previous || r.line > lines) fuzz::finding("row line", std::to_string(r.line));
      previous = r.line;
    }
    constexpr std::string_view kCollectives[] = {"", "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"};
    if (std::find(std::begin(kCollectives), std::end(kCollectives), t.collective) == std::end(kCollectives)) {
      fuzz::finding("collective", t.collective);
    }
    if (t.ranks < 0) fuzz::finding("ranks", std::to_string(t.ranks));
  });
  return 0;
}
