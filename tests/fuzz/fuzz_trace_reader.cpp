// Fuzz target: the Chakra trace reader (traces/reader.h) on a file of arbitrary bytes, plain or gzip (the
// reader tells them apart by content): GlobalMetadata, then every node with next(), then again with
// next_id(). Contract: traces::TraceError for input it cannot use, nothing else.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"
#include "traces/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string path = fuzz::write_scratch("trace.0.et", data, size);
  fuzz::expect_only<traces::TraceError>([&] {
    traces::TraceReader reader(path, 0);
    traces::Node node;
    while (reader.next(node)) {
    }
  });
  fuzz::expect_only<traces::TraceError>([&] {
    traces::TraceReader reader(path);
    uint64_t id = 0;
    while (reader.next_id(id)) {
    }
  });
  return 0;
}
