// Helpers shared by the test suite: where the shared traces are, scratch directories, small traces.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "traces/error.h"
#include "traces/reader.h"

namespace fabemu::test {

// ../shared/traces next to the source tree (or $FABEMU_SHARED_DIR/traces); nullopt when absent.
std::optional<std::filesystem::path> shared_traces_dir();
// Skips the calling test with a clear message when the shared traces are absent.
#define FABEMU_REQUIRE_SHARED(var)                                                   \
  auto var##_opt = ::fabemu::test::shared_traces_dir();                              \
  if (!var##_opt) GTEST_SKIP() << "../shared/traces is absent: shared-trace test skipped"; \
  const std::filesystem::path var = *var##_opt

// Runs `f`, which must throw traces::TraceError; returns it (a test failure, and an empty error, if not).
template <class F>
traces::TraceError error_of(F&& f) {
  try {
    f();
  } catch (const traces::TraceError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a TraceError";
  return traces::TraceError({}, "(none)");
}

// A fresh empty directory under the build tree, removed by the destructor.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Whole file as bytes, and writing bytes to a file.
std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

// A node with the given id, type and data deps.
traces::Node make_node(uint64_t id, ChakraProtoMsg::NodeType type, std::vector<uint64_t> data_deps = {},
                       std::vector<uint64_t> ctrl_deps = {});
// Every node of a trace file, in file order.
std::vector<traces::Node> read_nodes(const std::string& path);
// Writes a trace file with default metadata and these nodes.
void write_trace(const std::string& path, const std::vector<traces::Node>& nodes, bool gzip = false);

}  // namespace fabemu::test
