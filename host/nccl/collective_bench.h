// `fabemu bench collective`: nccl-tests' sweep (-b -e -f / -i) on a system, in NCCL's semantics (the NCCL
// model) or ASTRA-sim's (a fabemu run per size, host/cli/bench_command.cpp), printed in nccl-tests' own table
// layout so it diffs against a real run, written as CSV or JSON, and compared size by size with a real
// nccl-tests output (NcclTestsTable).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emulator/nccl_model.h"
#include "host/nccl/nccl_tests_table.h"

namespace fabemu::nccl {

struct SweepOptions {
  emu::nccl::Func func = emu::nccl::Func::kAllReduce;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = uint64_t{8} << 30;
  uint64_t step_factor = 2;  // used when step_bytes == 0
  uint64_t step_bytes = 0;
  std::string datatype = "float";
  std::string op = "sum";
};

struct SweepRow {
  uint64_t size_bytes = 0;  // nccl-tests' size after rounding to whole elements (and ranks)
  uint64_t count = 0;       // elements (per rank for all-gather and reduce-scatter, as nccl-tests prints)
  double time_us = 0, algbw = 0, busbw = 0;
  std::string how;  // what ran: "ring/LL" (the NCCL model's choice), "astra:ring" (a fabemu run's algorithm)
  std::optional<emu::nccl::Choice> choice;  // the NCCL model's option (its latency and bandwidth terms)
};

// One size of a sweep, already rounded (round_size): the NCCL model, or a run in ASTRA-sim's semantics.
using RowAt = std::function<SweepRow(uint64_t size_bytes, uint64_t count)>;

// Bytes of one element of nccl-tests' -d type ("float", "half", "bfloat16", "double", "int8", "int32", ...);
// throws std::invalid_argument naming the type for one it does not know.
uint64_t datatype_bytes(const std::string& type);
// nccl-tests' rounding of a requested size to whole elements (per rank for all-gather and reduce-scatter):
// {size_bytes, count}.
std::pair<uint64_t, uint64_t> round_size(const SweepOptions& o, int32_t ranks, uint64_t requested);

// Throws std::invalid_argument for an empty or endless sweep (min > max, factor < 2 without step bytes, more
// than 10,000 sizes); row_at's own exceptions pass through.
std::vector<SweepRow> run_sweep(const RowAt& row_at, const SweepOptions& o, int32_t ranks);
// The NCCL model at one (rounded) size. Throws std::invalid_argument when no option of the system runs it.
SweepRow model_row(const emu::nccl::Model& model, const SweepOptions& o, uint64_t size_bytes, uint64_t count);
// model_row for every size (the model and the options must outlive it).
RowAt model_rows(const emu::nccl::Model& model, const SweepOptions& o);
// A row from a duration, with nccl-tests' bandwidths.
SweepRow timed_row(const SweepOptions& o, int32_t ranks, uint64_t size_bytes, uint64_t count, double time_us,
                   std::string how);

// nccl-tests' table: header, one row per size (out-of-place and in-place columns equal, #wrong N/A), the
// average bus bandwidth; `title` goes in the first comment line; what ran per range of sizes at the end as
// comments.
std::string format_table(const std::vector<SweepRow>& rows, const SweepOptions& o, const std::string& title);
std::string sweep_csv(const std::vector<SweepRow>& rows, const SweepOptions& o);
std::string sweep_json(const std::vector<SweepRow>& rows, const SweepOptions& o, int32_t ranks,
                       const std::string& semantics, const std::string& system_file);

// One size of a real table next to the sweep's row at that size.
struct CompareRow {
  uint64_t size_bytes = 0;
  double real_time_us = 0, model_time_us = 0;  // real: out-of-place if published, else in-place, else from busbw
  double real_busbw = 0, model_busbw = 0;      // 0 when the real table has no bandwidth for this size
  double time_error = 0, busbw_error = 0;      // model / real - 1
  std::string how;
};
struct Comparison {
  std::vector<CompareRow> rows;
  // |error| of busbw over sizes >= 64 KiB, and of time below 64 KiB: median and maximum (0 when none).
  double busbw_median = 0, busbw_max = 0, time_median = 0, time_max = 0;
  size_t busbw_sizes = 0, time_sizes = 0;
};
// Rows of size 0 are skipped. Throws std::invalid_argument when the real table names another collective.
Comparison compare_with(const RowAt& row_at, const SweepOptions& o, int32_t ranks, const NcclTestsTable& real);
std::string format_comparison(const Comparison& c, const NcclTestsTable& real);

}  // namespace fabemu::nccl
