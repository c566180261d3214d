#include "tests/support/test_support.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "traces/writer.h"

namespace fabemu::test {
namespace fs = std::filesystem;

std::optional<fs::path> shared_traces_dir() {
  if (const char* env = std::getenv("FABEMU_SHARED_DIR"); env != nullptr && *env != '\0') {
    const fs::path p = fs::path(env) / "traces";
    if (fs::is_directory(p)) return p;
    return std::nullopt;
  }
  const fs::path p = fs::path(FABEMU_SOURCE_DIR).parent_path() / "shared" / "traces";
  if (fs::is_directory(p)) return p;
  return std::nullopt;
}

ScratchDir::ScratchDir() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "scratch";
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  path_ = fs::path(FABEMU_BINARY_DIR) / "test-scratch" /
          (name + "." + std::to_string(::getpid()) + "." + std::to_string(counter++));
  fs::remove_all(path_);
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

traces::Node make_node(uint64_t id, ChakraProtoMsg::NodeType type, std::vector<uint64_t> data_deps,
                       std::vector<uint64_t> ctrl_deps) {
  traces::Node n;
  n.set_id(id);
  n.set_name("node_" + std::to_string(id));
  n.set_type(type);
  for (const auto d : data_deps) n.add_data_deps(d);
  for (const auto d : ctrl_deps) n.add_ctrl_deps(d);
  return n;
}

std::vector<traces::Node> read_nodes(const std::string& path) {
  traces::TraceReader reader(path);
  std::vector<traces::Node> nodes;
  traces::Node n;
  while (reader.next(n)) nodes.push_back(n);
  return nodes;
}

void write_trace(const std::string& path, const std::vector<traces::Node>& nodes, bool gzip) {
  traces::TraceWriter w(path, {}, gzip);
  for (const auto& n : nodes) w.write(n);
  w.close();
}

}  // namespace fabemu::test
