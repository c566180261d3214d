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
// name one `.et` file, which is then the whole workload, or a folder holding one workload. Throws TraceError when none is found or a
// rank in 0..max is missing, naming the missing file.
std::vector<RankFile> find_rank_files(const std::string& prefix);

// `<prefix>.<rank>.et`
std::string rank_file_path(const std::string& prefix, int64_t rank, bool gzip = false);

// Creates the folder a prefix's files go into (TraceError naming it when that fails).
void make_parent_dir(const std::string& prefix);

// Writes `text` to `path`, replacing it (TraceError naming the file when that fails).
void write_text(const std::string& path, const std::string& text);

// Removes the files a failed write left behind, ignoring errors (there is already one to report).
void remove_files(const std::vector<std::string>& paths) noexcept;

}  // namespace fabemu::traces
