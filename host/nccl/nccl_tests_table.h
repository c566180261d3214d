// Result tables of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, ...): the published runs a
// collective model is checked against. Reads the benchmarks' own stdout and fabemu's calibration TSV
// (../shared/calibration/nccl-tests); host/nccl/README.md describes both formats and the bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabemu::nccl {

// One row of an nccl-tests table: nccl-tests' conventions (time in microseconds, algbw/busbw in GB/s = 1e9 B/s).
struct NcclTestsRow {
  uint64_t size_bytes = 0;
  std::optional<uint64_t> count;  // elements
  std::string type, redop;        // "float", "sum" / "none"; redop "" when the row has none (pre-2022 all_gather)
  std::optional<int64_t> root;    // absent in older nccl-tests versions and in the calibration files
  std::optional<double> time_us_oop, algbw_oop, busbw_oop, time_us_ip, algbw_ip, busbw_ip;
  uint64_t line = 0;  // 1-based line in the file
};

enum class NcclTestsFormat { kNcclTestsOutput, kCalibrationTsv };

struct NcclTestsTable {
  std::string source;      // the path (or the name given)
  std::string collective;  // "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall" or ""
                           // if the file does not say
  int64_t ranks = 0;       // from the file if it says ("#  Rank  N Group ..." device lines of nccl-tests, or the
                           // nGpus/nranks hint), else 0
  std::vector<NcclTestsRow> rows;
  NcclTestsFormat format = NcclTestsFormat::kNcclTestsOutput;
};

// Bounds of the input (each breach is an error naming the file and, but for the size, the line).
inline constexpr uint64_t kMaxNcclTestsFileBytes = uint64_t{16} << 20;  // 16 MiB
inline constexpr uint64_t kMaxNcclTestsRows = 100'000;
inline constexpr uint64_t kMaxNcclTestsLineBytes = uint64_t{64} << 10;  // 64 KiB, the end of line excluded

// Parses text in either format (detected by a "size_bytes<TAB>count" header line): real nccl-tests stdout, or
// fabemu's calibration TSV. Throws traces::TraceError naming `source`, the line and what was expected.
NcclTestsTable parse_nccl_tests(std::string_view text, const std::string& source);
// Reads the file (bounded size) then parses.
NcclTestsTable read_nccl_tests(const std::string& path);

}  // namespace fabemu::nccl
