// Trace validation behind `fabemu trace validate`: per rank (duplicate ids, dangling dependencies,
// cycles, communication nodes lacking what they need) and across ranks (every SEND has its RECV;
// members of a process group issue the same collectives in the same order with the same sizes). The
// order is file order, the rule `fabemu run` matches collectives by (emulator/walker.cpp, loaded()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "traces/error.h"
#include "traces/trace_set.h"

namespace fabemu::traces {

struct ValidateOptions {
  bool strict = false;     // dependency problems (absent ids, self, forward ctrl_deps) are errors, every one found
  bool ctrl_deps = true;   // ctrl_deps are dependencies (ASTRA-sim's current reader waits on both)
  std::optional<std::string> comm_group_file;
  size_t max_findings_per_kind = 20;  // per rank and kind; the rest are counted in one line
};

struct RankValidation {
  int64_t rank = 0;
  std::string path;
  uint64_t nodes = 0;
  uint64_t dangling_deps = 0;
  std::vector<uint64_t> first_issuable;  // ids issuable before anything finishes, in file order
  bool walked = false;                   // the dependency walk completed (no cycle / fatal error)
};

struct ValidationReport {
  std::vector<Finding> findings;
  std::vector<RankValidation> ranks;
  uint64_t errors = 0;
  uint64_t warnings = 0;
  bool ok() const { return errors == 0; }
};

// Never throws for bad trace content: every problem becomes a finding.
ValidationReport validate_workload(const std::vector<RankFile>& files, const ValidateOptions& options = {});

}  // namespace fabemu::traces
