#include "traces/llm_graph.h"

#include <algorithm>
#include <limits>

namespace fabemu::traces::llm {
namespace {

void add_int(Node& n, const char* name, int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void add_bool(Node& n, const char* name, bool v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_bool_val(v);
}
int64_t i64(uint64_t v) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) bad("a size or FLOP count overflows int64");
  return static_cast<int64_t>(v);
}

}  // namespace

Groups make_groups(const Shape& s, const ParallelPlan& plan) {
  Groups g;
  g.size = {s.tp, s.ep, s.dp, s.pp};
  int64_t stride = 1;
  for (const Axis a : plan.order) {
    g.stride[static_cast<size_t>(a)] = stride;
    stride *= g.size[static_cast<size_t>(a)];
  }
  const std::array<std::vector<Axis>, kKinds> axes = {
      std::vector<Axis>{Axis::kTp}, {Axis::kDp, Axis::kEp}, {Axis::kDp}, {Axis::kEp}};
  g.exists = {s.tp > 1, s.dp * s.ep > 1, s.moe && s.ep > 1 && s.dp > 1, s.ep > 1};
  for (int k = 0; k < kKinds; ++k) {
    if (!g.exists[static_cast<size_t>(k)]) continue;
    auto& of = g.of_rank[static_cast<size_t>(k)];
    of.assign(static_cast<size_t>(s.world), -1);
    std::vector<int32_t> by_key(static_cast<size_t>(s.world), -1);
    for (int64_t r = 0; r < s.world; ++r) {
      int64_t key = r;
      for (const Axis a : axes[static_cast<size_t>(k)]) key -= g.coord(r, a) * g.stride[static_cast<size_t>(a)];
      auto& id = by_key[static_cast<size_t>(key)];
      if (id < 0) {
        id = static_cast<int32_t>(g.names.size());
        g.names.push_back(std::to_string(g.names.size() + 1));
        g.kinds.push_back(static_cast<Kind>(k));
        g.members.emplace_back();
      }
      g.members[static_cast<size_t>(id)].push_back(r);
      of[static_cast<size_t>(r)] = id;
    }
  }
  return g;
}

uint64_t StageGraph::comp(const std::string& name, uint64_t ops, uint64_t bytes, std::vector<uint64_t> deps) {
  Node n = start(name, ChakraProtoMsg::COMP_NODE, std::move(deps));
  add_bool(n, "is_cpu_op", false);
  add_int(n, "num_ops", i64(ops));
  add_int(n, "tensor_size", i64(bytes));
  return finish(n, Patch::kNone);
}

uint64_t StageGraph::coll(const std::string& name, CollectiveType type, uint64_t bytes, Patch group,
                          std::vector<uint64_t> deps) {
  Node n = start(name, ChakraProtoMsg::COMM_COLL_NODE, std::move(deps));
  add_bool(n, "is_cpu_op", false);
  add_int(n, "comm_type", type);
  add_int(n, "comm_size", i64(bytes));
  return finish(n, group);
}

uint64_t StageGraph::p2p(const std::string& name, bool send, uint64_t bytes, int64_t tag, Patch peer,
                         std::vector<uint64_t> deps) {
  Node n = start(name, send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE, std::move(deps));
  add_bool(n, "is_cpu_op", false);
  add_int(n, "comm_size", i64(bytes));
  auto* a = n.add_attr();
  a->set_name("comm_tag");
  a->set_int32_val(static_cast<int32_t>(tag));
  return finish(n, peer);
}

Node StageGraph::start(const std::string& name, NodeType type, std::vector<uint64_t> deps) {
  Node n;
  n.set_id(next_id_);
  n.set_name(name);
  n.set_type(type);
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  for (const uint64_t d : deps) {
    if (d != 0) n.add_data_deps(d);  // 0 = "nothing yet" (id 0 is the metadata node)
  }
  return n;
}

uint64_t StageGraph::finish(const Node& n, Patch patch) {
  nodes.push_back({n.SerializeAsString(), patch});
  return next_id_++;
}

}  // namespace fabemu::traces::llm
