// Fuzz target: the trace reader's gzip path. The input is the uncompressed trace; it is written as gzip,
// split into 1 to 4 gzip members one after the other (byte 0 chooses how many and where the cuts are), so
// the mutations reach the reader's framing through valid compressed data and multi-member streams. Then
// read as fuzz_trace_reader does. Contract: traces::TraceError only.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/read_trace.h"
#include "traces/error.h"
#include "traces/reader.h"

namespace {

// One gzip member of `in` (deflate level 1: the fuzzer's throughput matters, not the ratio). One deflate state
// for the process, reset per member: a fresh one per member costs ~400 KiB of allocations, slow under ASan.
std::string gzip_member(const uint8_t* in, size_t size) {
  static z_stream* const z = [] {
    auto* s = new z_stream{};
    if (deflateInit2(s, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      fabemu::fuzz::finding("harness", "deflateInit2 failed");
    }
    return s;
  }();
  if (deflateReset(z) != Z_OK) fabemu::fuzz::finding("harness", "deflateReset failed");
  std::string out(deflateBound(z, static_cast<uLong>(size)) + 32, '\0');
  z->next_in = const_cast<Bytef*>(in);
  z->avail_in = static_cast<uInt>(size);
  z->next_out = reinterpret_cast<Bytef*>(out.data());
  z->avail_out = static_cast<uInt>(out.size());
  if (deflate(z, Z_FINISH) != Z_STREAM_END) fabemu::fuzz::finding("harness", "deflate did not finish");
  out.resize(z->total_out);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  if (size == 0) return 0;
  const unsigned members = 1 + (data[0] & 3);
  const unsigned salt = data[0] >> 2;
  ++data;
  --size;
  std::string gz;
  size_t at = 0;
  for (unsigned m = 1; m <= members; ++m) {
    // Cut points spread evenly over the input, moved on by the salt; the last member takes the rest.
    const size_t end = m == members ? size : std::clamp<size_t>(size * m / members + salt, at, size);
    gz += gzip_member(data + at, end - at);
    at = end;
  }
  const std::string path = fuzz::write_scratch("trace.0.et.gz", gz);
  fuzz::expect_only<traces::TraceError>([&] {
    if (!traces::TraceReader(path, 0).compressed()) fuzz::finding("gzip", "a gzip file was not read as gzip");
  });
  fuzz::read_trace_both_ways(path);
  return 0;
}
