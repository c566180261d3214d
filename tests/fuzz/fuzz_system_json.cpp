// Fuzz target: ASTRA-sim's system.json reader (host/config/astra_config.h) for networks of 1, 2 and 3
// dimensions. Contract: traces::TraceError (std::invalid_argument only for dims 0, never passed here).
#include <cstddef>
#include <cstdint>

#include "host/config/astra_config.h"
#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string path = fuzz::write_scratch("system.json", data, size);
  for (size_t dims = 1; dims <= 3; ++dims) {
    fuzz::expect_only<traces::TraceError>([&] { host::load_system_json(path, dims); });
  }
  return 0;
}
