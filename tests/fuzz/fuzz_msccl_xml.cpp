// Fuzz target: the MSCCL-IR XML importer (traces/msccl_xml.h): parse, then convert to Chakra graphs for two
// collective sizes (which checks every SEND against its RECV). Contract: traces::TraceError for the input; an
// accepted algorithm gives one graph per GPU.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"
#include "traces/msccl_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_only<traces::TraceError>([&] {
    const traces::MscclAlgo algo = traces::parse_msccl_xml(text, "fuzz.xml");
    for (const uint64_t bytes : {uint64_t{1} << 20, uint64_t{1000}}) {
      const traces::CustomGraphs graphs = traces::msccl_to_graphs(algo, bytes);
      if (graphs.size() != static_cast<size_t>(algo.ngpus)) __builtin_trap();
    }
  });
  return 0;
}
