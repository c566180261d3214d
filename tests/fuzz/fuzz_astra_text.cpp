// Fuzz target: the ASTRA-sim 1.0 text converter (traces/astra_text.h), 2 NPUs and 2 passes, and the traces it
// writes read back whole. Contract: traces::TraceError for the input (options are valid here).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "traces/astra_text.h"
#include "traces/error.h"
#include "traces/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  fuzz::clear_scratch();
  const std::string input = fuzz::write_scratch("workload.txt", data, size);
  std::vector<std::string> written;
  fuzz::expect_only<traces::TraceError>([&] {
    written = traces::convert_astra_text(input, fuzz::scratch_dir() + "/out/w", {.num_npus = 2, .num_passes = 2});
  });
  for (const std::string& path : written) {
    // What the converter wrote must read back: a TraceError here is a finding too.
    fuzz::expect_only<>([&] {
      traces::TraceReader reader(path);
      traces::Node node;
      while (reader.next(node)) {
      }
    });
  }
  return 0;
}
