// Internal to the LLM generator (traces/llm*.cpp): writes the rank files (each the stage's graph with the rank's
// groups and peers patched in), the comm-group file and the plan file.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "traces/llm.h"
#include "traces/llm_graph.h"
#include "traces/llm_shape.h"

namespace fabemu::traces::llm {

struct WrittenRanks {
  uint64_t bytes = 0;  // as stored (compressed with gzip)
  uint64_t nodes = 0;
  std::exception_ptr error;  // the first failure of a writer thread; the others stopped at their next rank
};

// Writes paths[r] for every rank r, on spec.jobs threads (0: all cores).
WrittenRanks write_rank_files(const LlmSpec& spec, const Shape& s, const Groups& groups,
                              const std::vector<StageGraph>& stages, const std::vector<std::string>& paths);

// `<prefix>.comm_groups.json`: {"<pg_name>": [ranks...]} (ASTRA-sim's --comm-group-configuration).
void write_comm_groups(const Groups& groups, const std::string& path);

// `<prefix>.plan.json`: the spec, its figures, the groups by kind and what was written.
void write_plan(const LlmSpec& spec, const Shape& s, const LlmFigures& figures, const Groups& groups,
                const WrittenRanks& written, const std::string& path);

}  // namespace fabemu::traces::llm
