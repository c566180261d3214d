// A workload: the per-rank files `<prefix>.<rank>.et` (or `.et.gz`) that make up one trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabemu::traces {

struct RankFile {
  int64_t rank;
  std::string path;
};

// Finds the rank files of `prefix` (a path without `.<rank>.et`), sorted by rank. `prefix` may also
// name one `.et` file, which is then the whole workload. Throws TraceError when none is found or a
// rank in 0..max is missing, naming the missing file.
std::vector<RankFile> find_rank_files(const std::string& prefix);

// `<prefix>.<rank>.et`
std::string rank_file_path(const std::string& prefix, int64_t rank, bool gzip = false);

}  // namespace fabemu::traces
