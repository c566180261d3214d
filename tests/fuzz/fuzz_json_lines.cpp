// Fuzz target: the JSON Lines converter (traces/json_form.h). The input is a JSON form; it is converted to a
// .et file (write_et_from_json), and when that succeeds the .et is converted back to JSON (write_json) and
// again to .et, which must give the same bytes (the documented round trip .et -> JSON -> .et). Contract:
// traces::TraceError only.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"
#include "traces/json_form.h"

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  const std::string json = fuzz::write_scratch("in.jsonl", data, size);
  const std::string et1 = fuzz::scratch_dir() + "/out1.0.et";
  bool converted = false;
  fuzz::expect_only<traces::TraceError>([&] {
    traces::write_et_from_json(json, et1);
    converted = true;
  });
  if (!converted) return 0;
  std::ostringstream again;
  fuzz::expect_only<>([&] { traces::write_json(et1, again); });
  const std::string json2 = fuzz::write_scratch("again.jsonl", again.str());
  const std::string et2 = fuzz::scratch_dir() + "/out2.0.et";
  fuzz::expect_only<>([&] { traces::write_et_from_json(json2, et2); });
  if (slurp(et1) != slurp(et2)) fuzz::finding("round trip", ".et -> JSON -> .et changed the bytes");
  return 0;
}
