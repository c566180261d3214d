// Fuzz target: lab.yaml (host/lab/lab_config.h): load_lab_config, then validate_ranks for the world the file
// describes (its highest rank + 1, at most 4096) and for a world of 8. Contract: traces::TraceError.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "host/lab/lab_config.h"
#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string path = fuzz::write_scratch("lab.yaml", data, size);
  lab::LabConfig config;
  bool loaded = false;
  fuzz::expect_only<traces::TraceError>([&] {
    config = lab::load_lab_config(path);
    loaded = true;
  });
  if (!loaded) return 0;
  uint32_t highest = 0;
  for (const auto& agent : config.agents) {
    if (!agent.ranks.empty()) highest = std::max(highest, agent.ranks.back());
    lab::format_ranks(agent.ranks);
  }
  for (const uint32_t world : {std::min<uint32_t>(highest, 4095) + 1, 8u}) {
    lab::LabConfig copy = config;
    fuzz::expect_only<traces::TraceError>([&] { lab::validate_ranks(copy, world); });
  }
  return 0;
}
