// Fuzz target: ASTRA-sim's network.yml reader (host/config/astra_config.h). Contract: traces::TraceError.
#include <cstddef>
#include <cstdint>

#include "host/config/astra_config.h"
#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string path = fuzz::write_scratch("network.yml", data, size);
  fuzz::expect_only<traces::TraceError>([&] { host::load_network_yml(path); });
  return 0;
}
