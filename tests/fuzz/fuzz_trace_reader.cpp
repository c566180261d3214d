// Fuzz target: the Chakra trace reader (traces/reader.h) on a file of arbitrary bytes, plain or gzip (the
// reader tells them apart by content): GlobalMetadata, then every node with next(), then again with
// next_id(). Contract: traces::TraceError for input it cannot use, nothing else.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/read_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  fuzz::read_trace_both_ways(fuzz::write_scratch("trace.0.et", data, size));
  return 0;
}
