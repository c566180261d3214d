#include "traces/msccl_xml.h"

#include <fmt/format.h>
#include <tinyxml2.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "traces/error.h"

namespace fabemu::traces {

namespace {

using tinyxml2::XMLElement;

// What a step type does, in order: receive, reduce, send (msccl-tools' instruction names).
struct StepKind {
  std::string_view name;
  bool recv, reduce, send;
};
constexpr StepKind kKinds[] = {
    {"s", false, false, true},    {"r", true, false, false},   {"rrc", true, true, false},
    {"rcs", true, false, true},   {"rrs", true, true, true},   {"rrcs", true, true, true},
    {"re", false, true, false},   {"cpy", false, false, false}, {"nop", false, false, false},
};

const StepKind* kind_of(std::string_view type) {
  for (const StepKind& k : kKinds) {
    if (k.name == type) return &k;
  }
  return nullptr;
}

class Parser {
 public:
  explicit Parser(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const XMLElement& e, const std::string& what) const {
    throw TraceError({.file = path_, .line = static_cast<uint64_t>(e.GetLineNum())},
                     fmt::format("element <{}>: {}", e.Name(), what));
  }

  // An integer attribute in [lo, hi]; `fallback` when absent (nullopt: required).
  int64_t integer(const XMLElement& e, const char* name, int64_t lo, int64_t hi,
                  std::optional<int64_t> fallback = std::nullopt) const {
    const char* raw = e.Attribute(name);
    if (raw == nullptr) {
      if (fallback) return *fallback;
      fail(e, fmt::format("attribute \"{}\" is missing: expected an integer in {}..{}", name, lo, hi));
    }
    int64_t v = 0;
    if (e.QueryInt64Attribute(name, &v) != tinyxml2::XML_SUCCESS || v < lo || v > hi) {
      fail(e, fmt::format("attribute \"{}\" is \"{}\": expected an integer in {}..{}", name, raw, lo, hi));
    }
    return v;
  }

  std::string text(const XMLElement& e, const char* name, bool required) const {
    const char* raw = e.Attribute(name);
    if (raw == nullptr) {
      if (required) fail(e, fmt::format("attribute \"{}\" is missing", name));
      return {};
    }
    return raw;
  }

  // Children named `name`, in order; any other child element is an error.
  std::vector<const XMLElement*> children(const XMLElement& e, const char* name) const {
    std::vector<const XMLElement*> out;
    for (const XMLElement* c = e.FirstChildElement(); c != nullptr; c = c->NextSiblingElement()) {
      if (std::string_view(c->Name()) != name) {
        fail(*c, fmt::format("unexpected inside <{}>: expected <{}> elements", e.Name(), name));
      }
      out.push_back(c);
    }
    return out;
  }

  MscclAlgo algo(const XMLElement& root) {
    if (std::string_view(root.Name()) != "algo") fail(root, "expected <algo> as the document's element");
    MscclAlgo a;
    a.path = path_;
    a.name = text(root, "name", false);
    a.coll = text(root, "coll", true);
    a.ngpus = static_cast<int32_t>(integer(root, "ngpus", 1, kMaxMscclGpus));
    a.nchunksperloop = integer(root, "nchunksperloop", 1, kMaxMscclChunks, 1);
    a.nchannels = static_cast<int32_t>(integer(root, "nchannels", 1, kMaxMscclTbs, 1));
    const auto gpus = children(root, "gpu");
    if (gpus.size() != static_cast<size_t>(a.ngpus)) {
      fail(root, fmt::format("ngpus=\"{}\" but {} <gpu> elements", a.ngpus, gpus.size()));
    }
    a.gpus.resize(gpus.size());
    std::vector<bool> seen(gpus.size(), false);
    for (const XMLElement* g : gpus) {
      const auto id = static_cast<size_t>(integer(*g, "id", 0, a.ngpus - 1));
      if (seen[id]) fail(*g, fmt::format("a second <gpu> with id {}", id));
      seen[id] = true;
      a.gpus[id] = gpu(*g, a);
    }
    check_dependencies(a);
    return a;
  }

 private:
  MscclGpu gpu(const XMLElement& e, const MscclAlgo& a) {
    MscclGpu g;
    g.id = static_cast<int32_t>(integer(e, "id", 0, a.ngpus - 1));
    g.line = static_cast<uint64_t>(e.GetLineNum());
    g.i_chunks = integer(e, "i_chunks", 0, kMaxMscclChunks, 0);
    g.o_chunks = integer(e, "o_chunks", 0, kMaxMscclChunks, 0);
    g.s_chunks = integer(e, "s_chunks", 0, kMaxMscclChunks, 0);
    const auto tbs = children(e, "tb");
    if (tbs.size() > static_cast<size_t>(kMaxMscclTbs)) fail(e, fmt::format("more than {} <tb>", kMaxMscclTbs));
    for (const XMLElement* t : tbs) g.tbs.push_back(tb(*t, a, g));
    return g;
  }

  MscclTb tb(const XMLElement& e, const MscclAlgo& a, const MscclGpu& g) {
    MscclTb t;
    t.id = static_cast<int32_t>(integer(e, "id", 0, kMaxMscclTbs - 1));
    if (t.id != static_cast<int32_t>(g.tbs.size())) {
      fail(e, fmt::format("attribute \"id\" is {}: expected {} (thread blocks numbered 0, 1, ... in order)", t.id,
                          g.tbs.size()));
    }
    t.line = static_cast<uint64_t>(e.GetLineNum());
    t.send = static_cast<int32_t>(integer(e, "send", -1, a.ngpus - 1, -1));
    t.recv = static_cast<int32_t>(integer(e, "recv", -1, a.ngpus - 1, -1));
    t.chan = static_cast<int32_t>(integer(e, "chan", 0, kMaxMscclTbs - 1, 0));
    if (t.send == g.id || t.recv == g.id) fail(e, fmt::format("a peer (send or recv) is the GPU itself ({})", g.id));
    for (const XMLElement* s : children(e, "step")) {
      if (++steps_ > kMaxMscclSteps) fail(*s, fmt::format("more than {} steps in all", kMaxMscclSteps));
      t.steps.push_back(step(*s, t));
    }
    return t;
  }

  MscclStep step(const XMLElement& e, const MscclTb& t) {
    MscclStep s;
    s.line = static_cast<uint64_t>(e.GetLineNum());
    s.s = static_cast<int32_t>(integer(e, "s", 0, static_cast<int64_t>(kMaxMscclSteps)));
    if (s.s != static_cast<int32_t>(t.steps.size())) {
      fail(e, fmt::format("attribute \"s\" is {}: expected {} (steps numbered 0, 1, ... in order)", s.s,
                          t.steps.size()));
    }
    s.type = text(e, "type", true);
    const StepKind* k = kind_of(s.type);
    if (k == nullptr) {
      fail(e, fmt::format("attribute \"type\" is \"{}\": expected one of s, r, rrc, rcs, rrs, rrcs, re, cpy, nop",
                          s.type));
    }
    if (k->send && t.send < 0) fail(e, fmt::format("a \"{}\" step in a <tb> without a send peer", s.type));
    if (k->recv && t.recv < 0) fail(e, fmt::format("a \"{}\" step in a <tb> without a recv peer", s.type));
    s.cnt = integer(e, "cnt", 1, kMaxMscclChunks, 1);
    s.depid = static_cast<int32_t>(integer(e, "depid", -1, kMaxMscclTbs - 1, -1));
    s.deps = static_cast<int32_t>(integer(e, "deps", -1, static_cast<int64_t>(kMaxMscclSteps), -1));
    integer(e, "hasdep", 0, 1, 0);
    if ((s.depid < 0) != (s.deps < 0)) fail(e, "attributes \"depid\" and \"deps\": both -1 or both a step");
    return s;
  }

  void check_dependencies(const MscclAlgo& a) const {
    for (const MscclGpu& g : a.gpus) {
      for (const MscclTb& t : g.tbs) {
        for (const MscclStep& s : t.steps) {
          if (s.depid < 0) continue;
          const auto tbs = g.tbs.size();
          if (static_cast<size_t>(s.depid) >= tbs ||
              static_cast<size_t>(s.deps) >= g.tbs[static_cast<size_t>(s.depid)].steps.size()) {
            throw TraceError({.file = path_, .line = s.line},
                             fmt::format("element <step> (gpu {}, tb {}, step {}): depid=\"{}\" deps=\"{}\" names no "
                                         "step of this GPU",
                                         g.id, t.id, s.s, s.depid, s.deps));
          }
        }
      }
    }
  }

  std::string path_;
  size_t steps_ = 0;
};

void add_int(Node& node, const char* name, int64_t v, bool int32) {
  Attribute* a = node.add_attr();
  a->set_name(name);
  if (int32) {
    a->set_int32_val(static_cast<int32_t>(v));
  } else {
    a->set_int64_val(v);
  }
}

// ASTRA-sim's converter: a reduction of n bytes takes 3 * floor(n / 50) / 1000 us (50 GB/s), floored.
uint64_t reduce_micros(uint64_t bytes) { return 3 * (bytes / 50) / 1000; }

// One GPU's graph: its steps' nodes, then each step's dependencies (data: depid/deps; control: the step
// before it in its thread block), through steps without nodes (nop, cpy) to the nodes they wait for.
class GpuGraph {
 public:
  GpuGraph(const MscclAlgo& a, const MscclGpu& g, uint64_t chunk) : a_(a), g_(g), chunk_(chunk) {}

  CustomGraph build() {
    CustomGraph out;
    out.path = fmt::format("{} (gpu {})", a_.path, g_.id);
    first_.resize(g_.tbs.size());
    last_.resize(g_.tbs.size());
    for (const MscclTb& t : g_.tbs) {
      for (const MscclStep& s : t.steps) add_step(out, t, s);
    }
    for (const MscclTb& t : g_.tbs) {
      for (const MscclStep& s : t.steps) {
        const int64_t first = first_[static_cast<size_t>(t.id)][static_cast<size_t>(s.s)];
        if (first < 0) continue;
        Node& node = out.nodes[static_cast<size_t>(first)];
        for (const uint64_t p : parents(t, s)) node.add_data_deps(p);
      }
    }
    return out;
  }

 private:
  struct Unit {
    int32_t tb, step;
  };

  void add_step(CustomGraph& out, const MscclTb& t, const MscclStep& s) {
    const StepKind& k = *kind_of(s.type);
    if (chunk_ > (uint64_t{1} << 56) / static_cast<uint64_t>(s.cnt)) {
      throw TraceError({.file = a_.path, .line = s.line},
                       fmt::format("element <step> (gpu {}, tb {}, step {}): {} chunks of {} bytes: more than 2^56 bytes",
                                   g_.id, t.id, s.s, s.cnt, chunk_));
    }
    const uint64_t bytes = chunk_ * static_cast<uint64_t>(s.cnt);
    int64_t first = -1, prev = -1;
    auto add = [&](const char* kind, ChakraProtoMsg::NodeType type) -> Node& {
      Node& n = out.nodes.emplace_back();
      n.set_id(out.nodes.size() - 1);
      n.set_name(fmt::format("{}_tb{}_step{}", kind, t.id, s.s));
      n.set_type(type);
      if (prev >= 0) n.add_data_deps(static_cast<uint64_t>(prev));
      prev = static_cast<int64_t>(n.id());
      if (first < 0) first = prev;
      return n;
    };
    // The converter's attributes: comm_type holds the node type's number.
    auto comm = [&](const char* kind, ChakraProtoMsg::NodeType type, const char* peer_key, int32_t peer) {
      Node& n = add(kind, type);
      add_int(n, "comm_type", type, false);
      add_int(n, "comm_size", static_cast<int64_t>(bytes), false);
      add_int(n, peer_key, peer, true);
      add_int(n, "comm_tag", t.chan, true);
    };
    if (k.recv) comm("COMM_RECV_NODE", ChakraProtoMsg::COMM_RECV_NODE, "comm_src", t.recv);
    if (k.reduce) add("COMP_NODE", ChakraProtoMsg::COMP_NODE).set_duration_micros(reduce_micros(bytes));
    if (k.send) comm("COMM_SEND_NODE", ChakraProtoMsg::COMM_SEND_NODE, "comm_dst", t.send);
    first_[static_cast<size_t>(t.id)].push_back(first);
    last_[static_cast<size_t>(t.id)].push_back(prev);
  }

  // The nodes a step's first node waits for: the last node of its dependency and of the step before it,
  // looking through steps without nodes to what they wait for (the converter's rule for nop).
  std::vector<uint64_t> parents(const MscclTb& t, const MscclStep& s) {
    std::vector<uint64_t> out;
    std::vector<Unit> stack;
    visited_.clear();
    push_waits(t.id, s, stack);
    while (!stack.empty()) {
      const Unit u = stack.back();
      stack.pop_back();
      if (!visited_.insert(static_cast<uint64_t>(u.tb) << 32 | static_cast<uint32_t>(u.step)).second) continue;
      const int64_t last = last_[static_cast<size_t>(u.tb)][static_cast<size_t>(u.step)];
      if (last >= 0) {
        if (std::find(out.begin(), out.end(), static_cast<uint64_t>(last)) == out.end()) {
          out.push_back(static_cast<uint64_t>(last));
        }
        continue;
      }
      push_waits(u.tb, g_.tbs[static_cast<size_t>(u.tb)].steps[static_cast<size_t>(u.step)], stack);
    }
    return out;
  }

  static void push_waits(int32_t tb, const MscclStep& s, std::vector<Unit>& stack) {
    if (s.s > 0) stack.push_back({tb, s.s - 1});
    if (s.depid >= 0) stack.push_back({s.depid, s.deps});
  }

  const MscclAlgo& a_;
  const MscclGpu& g_;
  uint64_t chunk_;
  std::vector<std::vector<int64_t>> first_, last_;  // [tb][step]: node id, -1 for none
  std::set<uint64_t> visited_;
};

}  // namespace

MscclAlgo parse_msccl_xml(std::string_view text, const std::string& path) {
  if (text.size() > kMaxMscclBytes) {
    throw TraceError({.file = path}, fmt::format("{} bytes: an MSCCL-IR file holds at most {}", text.size(),
                                                 kMaxMscclBytes));
  }
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) {
    throw TraceError({.file = path, .line = static_cast<uint64_t>(std::max(0, doc.ErrorLineNum()))},
                     fmt::format("not well-formed XML: {}", doc.ErrorStr() != nullptr ? doc.ErrorStr() : "?"));
  }
  const XMLElement* root = doc.RootElement();
  if (root == nullptr) throw TraceError({.file = path}, "no element: expected <algo>");
  return Parser(path).algo(*root);
}

MscclAlgo read_msccl_xml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError({.file = path}, "cannot open the file");
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxMscclBytes) break;  // parse_msccl_xml names the bound
  }
  return parse_msccl_xml(text, path);
}

std::optional<CollectiveType> msccl_collective(const MscclAlgo& algo) {
  const std::string& c = algo.coll;
  if (c == "allreduce") return ChakraProtoMsg::ALL_REDUCE;
  if (c == "allgather") return ChakraProtoMsg::ALL_GATHER;
  if (c == "reduce_scatter" || c == "reducescatter") return ChakraProtoMsg::REDUCE_SCATTER;
  if (c == "alltoall") return ChakraProtoMsg::ALL_TO_ALL;
  return std::nullopt;
}

CustomGraphs msccl_to_graphs(const MscclAlgo& algo, uint64_t bytes) {
  if (bytes > (uint64_t{1} << 48)) {
    throw TraceError({.file = algo.path}, fmt::format("collective of {} bytes: at most 2^48", bytes));
  }
  CustomGraphs graphs;
  for (const MscclGpu& g : algo.gpus) {
    const int64_t chunks = g.i_chunks != 0 ? g.i_chunks : g.o_chunks;
    const bool whole = algo.coll == "allgather" || algo.coll == "reduce";
    if (!whole && chunks == 0) {
      throw TraceError({.file = algo.path, .line = g.line},
                       fmt::format("element <gpu> (id {}): i_chunks and o_chunks are 0: the chunk size is the "
                                   "collective's bytes / i_chunks (o_chunks when 0)",
                                   g.id));
    }
    const uint64_t chunk = whole ? bytes : bytes / static_cast<uint64_t>(chunks);
    graphs.push_back(GpuGraph(algo, g, chunk).build());
  }
  check_custom_graphs(graphs);
  return graphs;
}

GlobalMetadata msccl_metadata(const MscclAlgo& algo) {
  GlobalMetadata m;
  m.set_version("0.0.4");
  auto add = [&](const char* name, const std::string& v) {
    Attribute* a = m.add_attr();
    a->set_name(name);
    a->set_string_val(v);
  };
  add("schema", "1.0.2-chakra.0.0.4");
  add("input_file", algo.path);
  add("collective", algo.coll);
  return m;
}

}  // namespace fabemu::traces
