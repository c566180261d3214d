// `fabemu bench collective`: nccl-tests' sweep (-b -e -f / -i) on the NCCL model of a system, printed in
// nccl-tests' own table layout so it diffs against a real run, written as CSV or JSON, and compared size by
// size with a real nccl-tests output (NcclTestsTable).
#pragma once

#include <cstdint>
#include <string>
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
  emu::nccl::Choice choice;
  double time_us = 0, algbw = 0, busbw = 0;
};

// Bytes of one element of nccl-tests' -d type ("float", "half", "bfloat16", "double", "int8", "int32", ...);
// throws std::invalid_argument naming the type for one it does not know.
uint64_t datatype_bytes(const std::string& type);

// Throws std::invalid_argument for an empty or endless sweep (min > max, factor < 2 without step bytes, more
// than 10,000 sizes) or a collective the model's options cannot run at all.
std::vector<SweepRow> run_sweep(const emu::nccl::Model& model, const SweepOptions& o);
// The model at one size (nccl-tests' rounding applied). Throws like run_sweep.
SweepRow model_row(const emu::nccl::Model& model, const SweepOptions& o, uint64_t size_bytes);

// nccl-tests' table: header, one row per size (out-of-place and in-place columns equal, #wrong N/A), the
// average bus bandwidth; `title` goes in the first comment line; the algorithm/protocol per size range at
// the end as comments.
std::string format_table(const std::vector<SweepRow>& rows, const SweepOptions& o, const std::string& title);
std::string sweep_csv(const std::vector<SweepRow>& rows, const SweepOptions& o);
std::string sweep_json(const std::vector<SweepRow>& rows, const SweepOptions& o, const emu::nccl::System& s,
                       const std::string& system_file);

// One size of a real table next to the model.
struct CompareRow {
  uint64_t size_bytes = 0;
  double real_time_us = 0, model_time_us = 0;  // real: out-of-place if published, else in-place, else from busbw
  double real_busbw = 0, model_busbw = 0;      // 0 when the real table has no bandwidth for this size
  double time_error = 0, busbw_error = 0;      // model / real - 1
  emu::nccl::Algo algo = emu::nccl::Algo::kRing;
  emu::nccl::Proto proto = emu::nccl::Proto::kSimple;
};
struct Comparison {
  std::vector<CompareRow> rows;
  // |error| of busbw over sizes >= 64 KiB, and of time below 64 KiB: median and maximum (0 when none).
  double busbw_median = 0, busbw_max = 0, time_median = 0, time_max = 0;
  size_t busbw_sizes = 0, time_sizes = 0;
};
// Rows of size 0 are skipped. Throws std::invalid_argument when the real table names another collective.
Comparison compare_with(const emu::nccl::Model& model, const SweepOptions& o, const NcclTestsTable& real);
std::string format_comparison(const Comparison& c, const NcclTestsTable& real);

}  // namespace fabemu::nccl
