// Fuzz target: fabemu's fabric file reader (host/config/fabric_config.h, YAML). Contract: traces::TraceError.
#include <cstddef>
#include <cstdint>

#include "host/config/fabric_config.h"
#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string path = fuzz::write_scratch("fabric.yaml", data, size);
  fuzz::expect_only<traces::TraceError>([&] { host::load_fabric_yaml(path); });
  return 0;
}
