// Shared by the rank-walker tests: networks, system configs, small traces and
// one-call runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emulator/config.h"
#include "emulator/event_queue.h"
#include "emulator/packet_fabric.h"
#include "emulator/report.h"
#include "emulator/topology.h"
#include "emulator/walker.h"
#include "tests/support/test_support.h"
#include "traces/attrs.h"
#include "traces/process_groups.h"

namespace fabemu::emu::walker_test {

using traces::Node;

inline NetworkDim dim(DimTopology kind, int64_t npus, double astra_gbps = 50, uint64_t latency_ns = 500) {
  NetworkDim d;
  d.topology = kind;
  d.npus = npus;
  d.bandwidth = Rate::from_astra_gbps(astra_gbps);
  d.bandwidth_gbps = astra_gbps;
  d.latency = Duration::from_ns(latency_ns);
  return d;
}

inline NetworkConfig network(std::vector<NetworkDim> dims) {
  NetworkConfig c;
  c.dims = std::move(dims);
  return c;
}

inline SystemConfig system_config(CollectiveAlgo algo, int64_t splits, int64_t active, size_t dims = 1,
                                  uint64_t ep_ns = 10, double mem_gbps = 1600) {
  SystemConfig s;
  s.endpoint_delay = Duration::from_ns(ep_ns);
  s.preferred_dataset_splits = splits;
  s.active_chunks_per_dimension = active;
  s.local_mem_bw_gbps = mem_gbps;
  for (auto *list : {&s.all_reduce, &s.all_gather, &s.reduce_scatter, &s.all_to_all}) {
    list->assign(dims, CollectiveImpl{algo, false, -1});
  }
  return s;
}

inline Rate mem_rate(double gbps) { return Rate::from_bytes_per_sec(static_cast<uint64_t>(gbps * 1e9 + 0.5)); }

// ---- nodes
// ----------------------------------------------------------------------------------------
inline void set_int(Node &n, const char *name, int64_t v) {
  auto *a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
inline void set_string(Node &n, const char *name, const std::string &v) {
  auto *a = n.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}

inline Node comp(uint64_t id, uint64_t micros, std::vector<uint64_t> deps = {}) {
  Node n = test::make_node(id, ChakraProtoMsg::COMP_NODE, std::move(deps));
  n.set_duration_micros(micros);
  return n;
}

inline Node coll(uint64_t id, traces::CollectiveType type, uint64_t bytes, std::vector<uint64_t> deps = {},
                 const std::string &pg = "") {
  Node n = test::make_node(id, ChakraProtoMsg::COMM_COLL_NODE, std::move(deps));
  auto *cpu = n.add_attr();
  cpu->set_name("is_cpu_op");
  cpu->set_bool_val(false);
  set_int(n, "comm_type", type);
  set_int(n, "comm_size", static_cast<int64_t>(bytes));
  if (!pg.empty()) set_string(n, "pg_name", pg);
  return n;
}

inline Node send(uint64_t id, int64_t dst, int64_t tag, uint64_t bytes, std::vector<uint64_t> deps = {}) {
  Node n = test::make_node(id, ChakraProtoMsg::COMM_SEND_NODE, std::move(deps));
  set_int(n, "comm_dst", dst);
  set_int(n, "comm_tag", tag);
  set_int(n, "comm_size", static_cast<int64_t>(bytes));
  return n;
}

inline Node recv(uint64_t id, int64_t src, int64_t tag, uint64_t bytes, std::vector<uint64_t> deps = {}) {
  Node n = test::make_node(id, ChakraProtoMsg::COMM_RECV_NODE, std::move(deps));
  set_int(n, "comm_src", src);
  set_int(n, "comm_tag", tag);
  set_int(n, "comm_size", static_cast<int64_t>(bytes));
  return n;
}

// Writes one trace per rank: `<dir>/<name>.<r>.et`.
inline std::vector<std::string> write_ranks(const test::ScratchDir &dir, const std::string &name,
                                            const std::vector<std::vector<Node>> &per_rank) {
  std::vector<std::string> files;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    files.push_back(dir.file(name + "." + std::to_string(r) + ".et"));
    test::write_trace(files.back(), per_rank[r]);
  }
  return files;
}

// ---- runs
// -----------------------------------------------------------------------------------------
enum class Model { kAnalytical, kPacket };

struct Run {
  RunResult result;
  uint64_t delivered = 0;  // the fabric's messages_delivered()
};

inline Run run_walker(const NetworkConfig &net, WalkerOptions opt, const std::vector<std::string> &files,
                      Model model = Model::kAnalytical, uint32_t mtu = ~uint32_t{0},
                      const traces::ProcessGroups *groups = nullptr) {
  Engine engine(1 << 12);
  Topology topo(net);
  traces::ProcessGroups default_groups(static_cast<int64_t>(files.size()));
  const traces::ProcessGroups &g = groups != nullptr ? *groups : default_groups;
  Run out;
  if (model == Model::kPacket) {
    PacketFabric fabric(engine, topo, mtu);
    Walker w(fabric, net, files, g, std::move(opt));
    out.result = w.run();
    out.delivered = fabric.messages_delivered();
  } else {
    AnalyticalFabric fabric(engine, topo);
    Walker w(fabric, net, files, g, std::move(opt));
    out.result = w.run();
    out.delivered = fabric.messages_delivered();
  }
  return out;
}

// Report lines (stuck, warnings) one per line, for failure messages and searches.
inline std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &x : v) s += x + "\n";
  return s;
}

// Runs f on another thread; a run that does not return within `limit` ends the
// test binary (a hang must never pass silently).
template <class F>
auto within(std::chrono::seconds limit, F f) {
  auto fut = std::async(std::launch::async, std::move(f));
  if (fut.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: the walker did not return within %lld s (hang)\n",
                 static_cast<long long>(limit.count()));
    std::_Exit(3);
  }
  return fut.get();
}

}  // namespace fabemu::emu::walker_test
