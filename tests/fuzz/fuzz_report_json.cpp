// Fuzz target: the JSON report reader (emulator/report_json.h: report_from_json, what `fabemu compare` reads).
// Contract: traces::TraceError for any bad input; a report it accepts writes back (report_to_json) to text
// that reads back without error to the same report, so writing that again gives the same text.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "emulator/report_json.h"
#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<emu::RunResult> report;
  fuzz::expect_only<traces::TraceError>([&] { report = emu::report_from_json(text, "fuzz.json"); });
  if (!report) return 0;
  try {
    const std::string once = emu::report_to_json(*report);
    const std::string twice = emu::report_to_json(emu::report_from_json(once, "once.json"));
    if (once != twice) fuzz::finding("a report read back and written again changed", once);
  } catch (...) {
    fuzz::unexpected_exception(std::current_exception());
  }
  return 0;
}
