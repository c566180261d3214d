#include "traces/trace_set.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "traces/error.h"

namespace fabemu::traces {
namespace fs = std::filesystem;

namespace {
// Rank of a name `<base>.<rank>.et[.gz]`, or -1.
int64_t rank_of(const std::string& name, const std::string& base) {
  std::string_view rest(name);
  if (!base.empty()) {
    if (rest.substr(0, base.size()) != base || rest.size() <= base.size() || rest[base.size()] != '.') return -1;
    rest.remove_prefix(base.size() + 1);
  }
  for (std::string_view ext : {".et.gz", ".et"}) {
    if (rest.size() > ext.size() && rest.substr(rest.size() - ext.size()) == ext) {
      rest.remove_suffix(ext.size());
      if (base.empty()) {  // single-file form: take the digits after the last dot
        const auto dot = rest.rfind('.');
        if (dot == std::string_view::npos) return -1;
        rest.remove_prefix(dot + 1);
      }
      int64_t rank = -1;
      auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), rank);
      if (ec != std::errc() || p != rest.data() + rest.size() || rest.empty()) return -1;
      return rank;
    }
  }
  return -1;
}
}  // namespace

std::string rank_file_path(const std::string& prefix, int64_t rank, bool gzip) {
  return fmt::format("{}.{}.et{}", prefix, rank, gzip ? ".gz" : "");
}

void remove_files(const std::vector<std::string>& paths) noexcept {
  for (const auto& p : paths) {
    std::error_code ec;
    fs::remove(p, ec);
  }
}

std::vector<RankFile> find_rank_files(const std::string& prefix) {
  std::error_code ec;
  if (fs::is_regular_file(prefix, ec)) {
    const int64_t rank = rank_of(fs::path(prefix).filename().string(), "");
    return {RankFile{rank < 0 ? 0 : rank, prefix}};
  }
  if (fs::is_directory(prefix, ec)) {
    // A folder holding one workload stands for it: find the one base name of its rank files.
    std::set<std::string> bases;
    for (const auto& entry : fs::directory_iterator(prefix, ec)) {
      const std::string name = entry.path().filename().string();
      if (rank_of(name, "") < 0) continue;
      const auto rank_dot = name.rfind('.', name.rfind(".et") - 1);
      bases.insert(name.substr(0, rank_dot));
    }
    if (bases.size() == 1) return find_rank_files((fs::path(prefix) / *bases.begin()).string());
    throw TraceError({.file = prefix},
                     bases.empty() ? "is a folder with no trace files (<name>.<rank>.et) in it"
                                   : fmt::format("is a folder with several workloads ({}); give the prefix of one, "
                                                 "e.g. {}",
                                                 fmt::join(bases, ", "), (fs::path(prefix) / *bases.begin()).string()));
  }
  const fs::path p(prefix);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string base = p.filename().string();
  std::vector<RankFile> files;
  if (fs::is_directory(dir, ec) && !base.empty()) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const int64_t rank = rank_of(entry.path().filename().string(), base);
      if (rank >= 0) files.push_back({rank, entry.path().string()});
    }
  }
  if (files.empty()) {
    throw TraceError({.file = prefix},
                     fmt::format("no trace files found: expected {} (one file per rank)",
                                 rank_file_path(prefix, 0)));
  }
  std::sort(files.begin(), files.end(), [](const RankFile& a, const RankFile& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.path < b.path;
  });
  for (size_t i = 0; i < files.size(); ++i) {
    if (i > 0 && files[i].rank == files[i - 1].rank) {
      throw TraceError({.file = files[i].path, .rank = files[i].rank},
                       fmt::format("rank {} has two files: {} and {}", files[i].rank,
                                   files[i - 1].path, files[i].path));
    }
    if (files[i].rank != static_cast<int64_t>(i)) {
      throw TraceError({.file = rank_file_path(prefix, static_cast<int64_t>(i)),
                        .rank = static_cast<int64_t>(i)},
                       fmt::format("missing rank file: found ranks up to {} but not rank {}",
                                   files.back().rank, i));
    }
  }
  return files;
}

void make_parent_dir(const std::string& prefix) {
  const std::filesystem::path dir = std::filesystem::path(prefix).parent_path();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw TraceError({.file = dir.string()}, "cannot create the output directory: " + ec.message());
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw TraceError({.file = path}, std::string("cannot create: ") + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw TraceError({.file = path}, "write failed (disk full?)");
}

}  // namespace fabemu::traces
