// Throughput and memory of the trace library on a synthetic training step: TraceReader alone, and
// TraceReader + DependencyResolver, on plain and gzip files of 10M and 1M nodes. README.md says how
// to run it and what each counter means.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>

#include "bench/bench_util.h"
#include "traces/reader.h"
#include "traces/resolver.h"
#include "traces/writer.h"

namespace fabemu::bench {
namespace {
using fabemu::bench::peak_rss_mib;
using fabemu::bench::reset_peak_rss;
namespace fs = std::filesystem;
using traces::Node;

// Bump when the shape of the generated trace changes, so cached files are made anew.
constexpr int64_t kGeneratorVersion = 1;
constexpr std::string_view kNodesAttr = "fabemu_bench_nodes";
constexpr std::string_view kVersionAttr = "fabemu_bench_generator";

struct TraceSpec {
  uint64_t nodes;
  bool gzip;
  uint64_t id_stride = 1;  // ids 0, s, 2s, ...: real converters leave gaps between ids
};

std::string trace_path(const TraceSpec& spec) {
  return std::string(FABEMU_BENCH_DATA_DIR) + "/synthetic_" + std::to_string(spec.nodes) +
         (spec.id_stride == 1 ? "" : "_stride" + std::to_string(spec.id_stride)) + ".et" + (spec.gzip ? ".gz" : "");
}

std::optional<int64_t> int_attr(const traces::GlobalMetadata& md, std::string_view name) {
  for (const auto& a : md.attr()) {
    if (a.name() == name) return a.int64_val();
  }
  return std::nullopt;
}

// Whether `path` is a complete trace of this generator with `nodes` nodes (files are renamed into
// place only when complete, so the metadata is enough).
bool cached(const std::string& path, uint64_t nodes) {
  try {
    traces::TraceReader reader(path);
    return int_attr(reader.metadata(), kNodesAttr) == static_cast<int64_t>(nodes) &&
           int_attr(reader.metadata(), kVersionAttr) == kGeneratorVersion;
  } catch (const traces::TraceError&) {
    return false;
  }
}

void add_int_attr(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>* attrs, std::string_view name,
                  int64_t value) {
  auto* a = attrs->Add();
  a->set_name(std::string(name));
  a->set_int64_val(value);
}

// One step of a training loop as a converter would emit it: mostly kernels that depend on the one
// or two nodes just before them, a control edge now and then, and a collective every ~50 nodes.
void generate(const TraceSpec& spec, const std::string& path) {
  static constexpr const char* kNames[] = {"aten::mm", "aten::addmm", "aten::gelu", "aten::add_",
                                           "aten::layer_norm", "aten::softmax", "aten::bmm", "aten::copy_"};
  static constexpr const char* kGroups[] = {"0", "1.0", "2.0"};
  const std::string tmp = path + ".tmp";
  traces::GlobalMetadata md;
  md.set_version(traces::kSchemaVersion);
  add_int_attr(md.mutable_attr(), kNodesAttr, static_cast<int64_t>(spec.nodes));
  add_int_attr(md.mutable_attr(), kVersionAttr, kGeneratorVersion);
  traces::TraceWriter writer(tmp, md, spec.gzip);
  std::mt19937_64 rng(42);
  Node n;
  const uint64_t stride = spec.id_stride;
  for (uint64_t id = 0; id < spec.nodes; ++id) {
    n.Clear();
    n.set_id(id * stride);
    const uint64_t r = rng();
    if (id % 50 == 49) {
      n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
      n.set_name("nccl:all_reduce");
      auto* t = n.add_attr();
      t->set_name("comm_type");
      t->set_int64_val(r % 3 == 0 ? ChakraProtoMsg::ALL_GATHER : ChakraProtoMsg::ALL_REDUCE);
      auto* s = n.add_attr();
      s->set_name("comm_size");
      s->set_int64_val(int64_t{1} << (16 + (r >> 8) % 12));
      auto* g = n.add_attr();
      g->set_name("pg_name");
      g->set_string_val(kGroups[(r >> 16) % 3]);
    } else {
      n.set_type(ChakraProtoMsg::COMP_NODE);
      n.set_name(kNames[r % 8]);
    }
    n.set_duration_micros(1 + (r >> 24) % 500);
    if (id > 0) n.add_data_deps((id - 1) * stride);
    if (id > 16 && (r >> 40) % 3 == 0) n.add_data_deps((id - 2 - (r >> 44) % 15) * stride);
    if (id > 64 && (r >> 50) % 16 == 0) n.add_ctrl_deps((id - 17 - (r >> 54) % 48) * stride);
    writer.write(n);
  }
  writer.close();
  fs::rename(tmp, path);
}

// The trace file for `spec`, generated on first use in this build tree and reused afterwards;
// nullopt (and the benchmark skipped with the reason) when it cannot be made.
std::optional<std::string> ensure_trace(benchmark::State& state, const TraceSpec& spec) {
  static std::set<std::string> checked;
  const std::string path = trace_path(spec);
  try {
    if (checked.insert(path).second && !cached(path, spec.nodes)) {
      fs::create_directories(fs::path(path).parent_path());
      std::fprintf(stderr, "generating %s (%llu nodes, once)...\n", path.c_str(),
                   static_cast<unsigned long long>(spec.nodes));
      generate(spec, path);
    }
  } catch (const std::exception& e) {
    checked.erase(path);
    state.SkipWithError(e.what());
    return std::nullopt;
  }
  return path;
}

void report(benchmark::State& state, uint64_t nodes, uint64_t bytes) {
  // Rates: the console shows them as "nodes=9.1M/s", "MB=290/s".
  state.counters["nodes"] = benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsRate);
  state.counters["MB"] = benchmark::Counter(static_cast<double>(bytes) / 1e6, benchmark::Counter::kIsRate);
  state.counters["peak_RSS_MiB"] = peak_rss_mib();
}

// TraceReader::next over the whole file.
void BM_Read(benchmark::State& state, TraceSpec spec) {
  const std::optional<std::string> path = ensure_trace(state, spec);
  if (!path) return;
  reset_peak_rss();
  uint64_t nodes = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    traces::TraceReader reader(*path);
    Node node;
    while (reader.next(node)) benchmark::DoNotOptimize(node.id());
    nodes += reader.nodes_read();
    bytes += reader.bytes_read();
  }
  report(state, nodes, bytes);
}

// DependencyResolver with default options: every issuable node is taken and finished at once.
void BM_ReadResolve(benchmark::State& state, TraceSpec spec) {
  const std::optional<std::string> path = ensure_trace(state, spec);
  if (!path) return;
  reset_peak_rss();
  uint64_t nodes = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    traces::TraceReader reader(*path);
    traces::DependencyResolver resolver(reader);
    while (const Node* n = resolver.next()) {
      benchmark::DoNotOptimize(n->id());
      resolver.finish(*n);
    }
    if (!resolver.done() || resolver.stats().nodes_finished != spec.nodes) {
      state.SkipWithError("the resolver did not finish every node");
      return;
    }
    nodes += resolver.stats().nodes_finished;
    bytes += reader.bytes_read();
  }
  report(state, nodes, bytes);
}

constexpr TraceSpec k10M{10'000'000, false};
constexpr TraceSpec k10MGzip{10'000'000, true};
constexpr TraceSpec k1M{1'000'000, false};
constexpr TraceSpec k1MGzip{1'000'000, true};
constexpr TraceSpec k10MStride3{10'000'000, false, 3};

BENCHMARK_CAPTURE(BM_Read, 10M, k10M)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadResolve, 10M, k10M)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Read, 10M_gzip, k10MGzip)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadResolve, 10M_gzip, k10MGzip)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadResolve, 10M_stride3, k10MStride3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Read, 1M, k1M)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadResolve, 1M, k1M)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Read, 1M_gzip, k1MGzip)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadResolve, 1M_gzip, k1MGzip)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fabemu::bench

BENCHMARK_MAIN();
