#include "traces/astra_text.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "traces/error.h"
#include "traces/trace_set.h"
#include "traces/writer.h"

namespace fabemu::traces {
namespace {

// The schema string Chakra's text converter put into the files behind the shared reference traces.
constexpr const char* kTextSchema = "1.0.2-chakra.0.0.4";
constexpr size_t kLayerColumns = 12;

struct Line {
  uint64_t number = 0;  // 1-based
  std::string_view text;
};

// Python's str.split() / str.strip() whitespace (ASCII part).
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
         (c >= '\x1c' && c <= '\x1f');
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// Python's text-mode reading: "\r\n" and a lone "\r" both become "\n".
std::string universal_newlines(const std::string& raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else {
      out.push_back(raw[i]);
    }
  }
  return out;
}

// Lines as Python iterates them (the last one may lack its "\n"; no empty line after a final "\n").
std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  uint64_t number = 1;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    lines.push_back({number++, text.substr(start, end - start)});
    start = end + 1;
  }
  return lines;
}

// Byte length of the valid UTF-8 sequence at s[i], or 0.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1fu;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0fu;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0u) != 0x80u) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return n;
}

// Integer as Python's int() reads a token: optional sign, decimal digits, single '_' between digits.
std::optional<int64_t> parse_python_int(std::string_view token) {
  size_t i = 0;
  bool negative = false;
  if (i < token.size() && (token[i] == '+' || token[i] == '-')) negative = token[i++] == '-';
  if (i == token.size()) return std::nullopt;
  // Accumulate as a negative number so that INT64_MIN is representable.
  int64_t value = 0;
  bool last_digit = false;
  for (; i < token.size(); ++i) {
    const char c = token[i];
    if (c == '_') {
      if (!last_digit || i + 1 == token.size()) return std::nullopt;
      last_digit = false;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    const int digit = c - '0';
    if (value < (std::numeric_limits<int64_t>::min() + digit) / 10) return std::nullopt;
    value = value * 10 - digit;
    last_digit = true;
  }
  if (!negative) {
    if (value == std::numeric_limits<int64_t>::min()) return std::nullopt;
    value = -value;
  }
  return value;
}

struct LayerSpec {
  uint64_t line = 0;
  std::string name;
  uint64_t fwd_comp_time = 0;
  std::string fwd_comm_type;
  int64_t fwd_comm_size = 0;
  uint64_t ig_comp_time = 0;
  std::string ig_comm_type;
  int64_t ig_comm_size = 0;
  uint64_t wg_comp_time = 0;
  std::string wg_comm_type;
  int64_t wg_comm_size = 0;
};

// The nodes of a layer that later nodes depend on (the Python converter's Layer.*_node fields).
struct LayerNodes {
  std::optional<uint64_t> fwd_comp, fwd_comm, ig_comp, ig_comm, wg_comp, wg_comm;
};

struct Workload {
  std::string text;  // whole input, newlines normalised
  std::string parallelism;
  uint64_t parallelism_line = 1;
  int64_t last_bottom_layer = 0;  // HYBRID_DLRM*
  std::vector<LayerSpec> layers;
};

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  Workload parse() {
    Workload w;
    w.text = universal_newlines(read_all());
    check_utf8(w.text);
    const std::vector<Line> lines = split_lines(w.text);

    if (lines.empty()) fail(1, "empty file: line 1 must name the parallelism type (e.g. DATA)");
    const auto first = split_ws(lines[0].text);
    if (first.empty()) fail(1, "line 1 must name the parallelism type (e.g. DATA), but it is blank");
    w.parallelism = std::string(first[0]);
    if (w.parallelism == "HYBRID_DLRM" || w.parallelism == "HYBRID_DLRM_ENHANCED") {
      if (first.size() < 2) {
        fail(1, fmt::format("{} needs the index of the last bottom-MLP layer after it (e.g. \"{} 3\")",
                            w.parallelism, w.parallelism));
      }
      w.last_bottom_layer = number(first[1], 1, "the last bottom-MLP layer index");
    } else if (!is_astra_text_parallelism(w.parallelism)) {
      fail(1, fmt::format("unsupported parallelism type \"{}\" (Chakra's text converter supports MICRO, "
                          "DATA, MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_DLRM, "
                          "HYBRID_DLRM_ENHANCED)",
                          w.parallelism));
    }

    if (lines.size() < 2) fail(2, "missing line 2: the number of layers");
    const auto count_tokens = split_ws(lines[1].text);
    if (count_tokens.size() != 1) {
      fail(2, fmt::format("line 2 must hold only the number of layers, found \"{}\"", lines[1].text));
    }
    const int64_t declared = number(count_tokens[0], 2, "the number of layers");
    if (declared < 0) fail(2, fmt::format("the number of layers is negative ({})", declared));

    for (size_t i = 2; i < lines.size(); ++i) {
      const auto cols = split_ws(lines[i].text);
      if (cols.empty()) continue;  // blank lines carry no layer
      if (w.layers.size() == static_cast<size_t>(declared)) {
        fail(lines[i].number, fmt::format("line 2 declares {} layers but there are more layer lines, "
                                          "starting with this one",
                                          declared));
      }
      w.layers.push_back(layer(lines[i].number, cols));
    }
    if (w.layers.size() != static_cast<size_t>(declared)) {
      fail(2, fmt::format("line 2 declares {} layers but the file has {} layer lines", declared,
                          w.layers.size()));
    }
    return w;
  }

  [[noreturn]] void fail(uint64_t line, const std::string& what) const {
    throw TraceError({.file = path_, .line = line}, what);
  }

 private:
  std::string read_all() const {
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw TraceError({.file = path_}, fmt::format("cannot open: {}", std::strerror(errno)));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw TraceError({.file = path_}, "read error");
    return ss.str();
  }

  void check_utf8(std::string_view text) const {
    uint64_t line = 1;
    for (size_t i = 0; i < text.size();) {
      const size_t n = utf8_sequence(text, i);
      if (n == 0) {
        fail(line, fmt::format("byte 0x{:02x} is not valid UTF-8 (a text workload is UTF-8 text)",
                               static_cast<unsigned char>(text[i])));
      }
      if (text[i] == '\n') ++line;
      i += n;
    }
  }

  int64_t number(std::string_view token, uint64_t line, std::string_view what) const {
    const auto v = parse_python_int(token);
    if (!v) {
      const bool digits = token.find_first_not_of("+-_0123456789") == std::string_view::npos;
      fail(line, fmt::format("{}: \"{}\" is {}", what, token,
                             digits ? "out of range (more than 63 bits)" : "not an integer"));
    }
    return *v;
  }

  uint64_t time(std::string_view token, uint64_t line, std::string_view what) const {
    const int64_t v = number(token, line, what);
    if (v < 0) fail(line, fmt::format("{}: {} is negative", what, v));
    return static_cast<uint64_t>(v);
  }

  int64_t size(std::string_view token, uint64_t line, std::string_view what) const {
    const int64_t v = number(token, line, what);
    if (v < 0) fail(line, fmt::format("{}: {} bytes is negative", what, v));
    return v;
  }

  LayerSpec layer(uint64_t line, const std::vector<std::string_view>& cols) const {
    if (cols.size() < kLayerColumns) {
      fail(line, fmt::format("a layer line has {} columns (name, reserved, fwd compute, fwd comm type, fwd "
                             "comm size, ig compute, ig comm type, ig comm size, wg compute, wg comm type, "
                             "wg comm size, update time), found {}",
                             kLayerColumns, cols.size()));
    }
    LayerSpec l;
    l.line = line;
    l.name = std::string(cols[0]);
    l.fwd_comp_time = time(cols[2], line, "column 3 (forward compute time)");
    l.fwd_comm_type = std::string(cols[3]);
    l.fwd_comm_size = size(cols[4], line, "column 5 (forward comm size)");
    l.ig_comp_time = time(cols[5], line, "column 6 (input-gradient compute time)");
    l.ig_comm_type = std::string(cols[6]);
    l.ig_comm_size = size(cols[7], line, "column 8 (input-gradient comm size)");
    l.wg_comp_time = time(cols[8], line, "column 9 (weight-gradient compute time)");
    l.wg_comm_type = std::string(cols[9]);
    l.wg_comm_size = size(cols[10], line, "column 11 (weight-gradient comm size)");
    // Column 12 (update time) is kept as text and unused, as by Chakra's converter.
    return l;
  }

  std::string path_;
};

int64_t comm_type_of(const std::string& type) {
  if (type == "ALLREDUCE") return ChakraProtoMsg::ALL_REDUCE;
  if (type == "ALLTOALL") return ChakraProtoMsg::ALL_TO_ALL;
  if (type == "ALLGATHER") return ChakraProtoMsg::ALL_GATHER;
  if (type == "REDUCESCATTER") return ChakraProtoMsg::REDUCE_SCATTER;
  return 0;  // "NONE" and anything else: Chakra's converter writes ALL_REDUCE (0)
}

// One conversion: the node-id counter runs on across ranks as in Chakra's converter.
class Converter {
 public:
  Converter(const Workload& w, const std::string& input_path, const AstraTextOptions& options)
      : w_(w), path_(input_path), options_(options), nodes_(w.layers.size()) {}

  // Appends each path to `paths` once created, so a caller can remove them after an error.
  void run(const std::string& output_prefix, std::vector<std::string>& paths) {
    GlobalMetadata md;
    auto* schema = md.add_attr();
    schema->set_name("schema");
    schema->set_string_val(kTextSchema);
    auto* input = md.add_attr();
    input->set_name("input_file");
    input->set_string_val(w_.text);

    for (int64_t rank = 0; rank < options_.num_npus; ++rank) {
      const std::string path = rank_file_path(output_prefix, rank);
      TraceWriter out(path, md);
      paths.push_back(path);
      out_ = &out;
      const std::string& p = w_.parallelism;
      if (p == "MICRO") {
        micro();
      } else if (p == "DATA") {
        data_parallel();
      } else if (p == "MODEL") {
        model_parallel();
      } else if (p == "HYBRID_DATA_MODEL") {
        hybrid(true);
      } else if (p == "HYBRID_MODEL_DATA") {
        hybrid(false);
      } else {
        hybrid_dlrm();
      }
      out_ = nullptr;
      out.close();
    }
  }

 private:
  Node node(std::string name, ChakraProtoMsg::NodeType type) {
    Node n;
    n.set_id(next_id_++);
    n.set_name(std::move(name));
    n.set_type(type);
    return n;
  }

  Node comp(const std::string& layer, const char* phase, uint64_t time) {
    Node n = node(fmt::format("COMP_NODE_{}_{}", layer, phase), ChakraProtoMsg::COMP_NODE);
    n.set_duration_micros(time);
    return n;
  }

  Node comm(const std::string& layer, const std::string& type, int64_t size) {
    Node n = node(fmt::format("COMM_COLL_NODE_{}_{}", layer, type), ChakraProtoMsg::COMM_COLL_NODE);
    auto* t = n.add_attr();
    t->set_name("comm_type");
    t->set_int64_val(comm_type_of(type));
    auto* s = n.add_attr();
    s->set_name("comm_size");
    s->set_int64_val(size);
    return n;
  }

  static void parent(Node& child, const std::optional<uint64_t>& id) { child.add_data_deps(*id); }

  uint64_t emit(const Node& n) {
    out_->write(n);
    return n.id();
  }

  size_t count() const { return w_.layers.size(); }
  const LayerSpec& spec(size_t i) const { return w_.layers[i]; }

  void micro() {
    for (int64_t pass = 0; pass < options_.num_passes; ++pass) {
      for (const LayerSpec& l : w_.layers) emit(comm(l.name, l.wg_comm_type, l.wg_comm_size));
    }
  }

  void data_parallel() {
    const size_t n = count();
    for (int64_t pass = 0; pass < options_.num_passes; ++pass) {
      std::optional<uint64_t> last_fwd;
      for (size_t idx = 0; idx < n; ++idx) {
        Node c = comp(spec(idx).name, "FWD", spec(idx).fwd_comp_time);
        if (idx != 0) parent(c, nodes_[idx - 1].fwd_comp);
        if (nodes_[idx].wg_comm) parent(c, nodes_[idx].wg_comm);
        last_fwd = nodes_[idx].fwd_comp = emit(c);
      }
      for (size_t idx = 0; idx < n; ++idx) {
        const size_t li = n - 1 - idx;
        const LayerSpec& l = spec(li);
        Node wg = comp(l.name, "BWD_WG", l.wg_comp_time);
        parent(wg, idx == 0 ? last_fwd : nodes_[n - idx].ig_comp);
        const uint64_t wg_id = emit(wg);
        Node wc = comm(l.name, l.wg_comm_type, l.wg_comm_size);
        wc.add_data_deps(wg_id);
        nodes_[li].wg_comm = emit(wc);
        if (idx != n - 1) {
          Node ig = comp(l.name, "BWD_IG", l.ig_comp_time);
          ig.add_data_deps(wg_id);
          nodes_[li].ig_comp = emit(ig);
        }
      }
    }
    for (auto& ln : nodes_) ln.wg_comm.reset();
  }

  void model_parallel() {
    const size_t n = count();
    for (int64_t pass = 0; pass < options_.num_passes; ++pass) {
      std::optional<uint64_t> last_fwd_comm;
      for (size_t idx = 0; idx < n; ++idx) {
        const LayerSpec& l = spec(idx);
        Node c = comp(l.name, "FWD", l.fwd_comp_time);
        if (idx != 0) parent(c, nodes_[idx - 1].fwd_comm);
        if (nodes_[idx].wg_comp) parent(c, nodes_[idx].wg_comp);
        const uint64_t c_id = emit(c);
        nodes_[idx].fwd_comp = c_id;
        Node m = comm(l.name, l.fwd_comm_type, l.fwd_comm_size);
        m.add_data_deps(c_id);
        last_fwd_comm = nodes_[idx].fwd_comm = emit(m);
      }
      for (size_t idx = 0; idx < n; ++idx) {
        const size_t li = n - 1 - idx;
        const LayerSpec& l = spec(li);
        Node ig = comp(l.name, "BWD_IG", l.ig_comp_time);
        if (idx == 0) {
          parent(ig, last_fwd_comm);
        } else {
          parent(ig, nodes_[n - idx].wg_comp);
          parent(ig, nodes_[n - idx].ig_comm);
        }
        const uint64_t ig_id = emit(ig);
        if (idx != n - 1) {
          Node m = comm(l.name, l.ig_comm_type, l.ig_comm_size);
          m.add_data_deps(ig_id);
          nodes_[li].ig_comm = emit(m);
        }
        Node wg = comp(l.name, "BWD_WG", l.wg_comp_time);
        wg.add_data_deps(ig_id);
        nodes_[li].wg_comp = emit(wg);
      }
    }
    for (auto& ln : nodes_) ln.wg_comp.reset();
  }

  // HYBRID_DATA_MODEL (ig comm nodes named "<layer>_IG_COMM_") and HYBRID_MODEL_DATA.
  void hybrid(bool data_model) {
    const size_t n = count();
    for (int64_t pass = 0; pass < options_.num_passes; ++pass) {
      std::optional<uint64_t> last_fwd_comm;
      for (size_t idx = 0; idx < n; ++idx) {
        const LayerSpec& l = spec(idx);
        Node c = comp(l.name, "FWD", l.fwd_comp_time);
        if (nodes_[idx].wg_comm) parent(c, nodes_[idx].wg_comm);
        if (idx != 0) parent(c, nodes_[idx - 1].fwd_comm);
        const uint64_t c_id = emit(c);
        Node m = comm(l.name, l.fwd_comm_type, l.fwd_comm_size);
        m.add_data_deps(c_id);
        last_fwd_comm = nodes_[idx].fwd_comm = emit(m);
      }
      for (size_t idx = 0; idx < n; ++idx) {
        const size_t li = n - 1 - idx;
        const LayerSpec& l = spec(li);
        Node ig = comp(l.name, "BWD_IG", l.ig_comp_time);
        if (idx == 0) {
          parent(ig, last_fwd_comm);
        } else {
          parent(ig, nodes_[n - idx].wg_comp);
          parent(ig, nodes_[n - idx].ig_comm);
        }
        const uint64_t ig_id = emit(ig);
        if (idx != n - 1) {
          Node m = comm(data_model ? l.name + "_IG_COMM_" : l.name, l.ig_comm_type, l.ig_comm_size);
          m.add_data_deps(ig_id);
          nodes_[li].ig_comm = emit(m);
        }
        Node wg = comp(l.name, "BWD_WG", l.wg_comp_time);
        wg.add_data_deps(ig_id);
        const uint64_t wg_id = emit(wg);
        nodes_[li].wg_comp = wg_id;
        Node wc = comm(l.name, l.wg_comm_type, l.wg_comm_size);
        wc.add_data_deps(wg_id);
        nodes_[li].wg_comm = emit(wc);
      }
    }
    for (auto& ln : nodes_) ln.wg_comm.reset();
  }

  void hybrid_dlrm() {
    const size_t n = count();
    const int64_t lbl = w_.last_bottom_layer;
    for (int64_t pass = 0; pass < options_.num_passes; ++pass) {
      std::optional<uint64_t> last_fwd;
      for (size_t idx = 0; idx < n; ++idx) {
        const LayerSpec& l = spec(idx);
        Node c = comp(l.name, "FWD", l.fwd_comp_time);
        if (nodes_[idx].wg_comm) {
          parent(c, nodes_[idx].wg_comm);
        } else if (nodes_[idx].wg_comp) {
          parent(c, nodes_[idx].wg_comp);
        }
        if (idx != 0) parent(c, nodes_[idx - 1].fwd_comp);
        if (static_cast<int64_t>(idx) == lbl) {
          if (!nodes_[0].fwd_comm) {
            throw TraceError(
                {.file = path_, .line = l.line},
                fmt::format("{}: layer {} (the last bottom-MLP layer) waits for the forward ALLTOALL of the "
                            "first layer \"{}\" (line {}), which {}; Chakra's converter fails here too",
                            w_.parallelism, idx, spec(0).name, spec(0).line,
                            lbl == 0 ? "comes after it"
                                     : fmt::format("has forward comm type \"{}\"", spec(0).fwd_comm_type)));
          }
          parent(c, nodes_[0].fwd_comm);
        }
        last_fwd = nodes_[idx].fwd_comp = emit(c);
        if (l.fwd_comm_type == "ALLTOALL") {
          Node m = comm(l.name, l.fwd_comm_type, l.fwd_comm_size);
          m.add_data_deps(*last_fwd);
          nodes_[idx].fwd_comm = emit(m);
        }
      }
      for (size_t idx = 0; idx < n; ++idx) {
        const size_t li = n - 1 - idx;
        const LayerSpec& l = spec(li);
        Node wg = comp(l.name, "BWD_WG", l.wg_comp_time);
        if (idx == 0) {
          parent(wg, last_fwd);
        } else {
          if (nodes_[n - idx].ig_comp) parent(wg, nodes_[n - idx].ig_comp);
          if (nodes_[li].ig_comm) parent(wg, nodes_[li].ig_comm);
        }
        const uint64_t wg_id = emit(wg);
        nodes_[li].wg_comp = wg_id;
        if (l.wg_comm_type != "NONE") {
          Node wc = comm(l.name, l.wg_comm_type, l.wg_comm_size);
          wc.add_data_deps(wg_id);
          nodes_[li].wg_comm = emit(wc);
        }
        std::optional<uint64_t> ig_id;
        if (idx != n - 1) {
          Node ig = comp(l.name, "BWD_IG", l.ig_comp_time);
          ig.add_data_deps(wg_id);
          ig_id = nodes_[li].ig_comp = emit(ig);
        }
        if (static_cast<int64_t>(li) - 1 == lbl) {
          if (!ig_id) {
            throw TraceError({.file = path_, .line = 1},
                             fmt::format("{}: last bottom-MLP layer {} leaves no layer for the input-gradient "
                                         "ALLTOALL; Chakra's converter fails here too",
                                         w_.parallelism, lbl));
          }
          const LayerSpec& first = spec(0);
          Node m = comm(first.name, first.ig_comm_type, first.ig_comm_size);
          m.add_data_deps(*ig_id);
          nodes_[0].ig_comm = emit(m);
        }
      }
    }
    for (auto& ln : nodes_) {
      ln.wg_comm.reset();
      ln.wg_comp.reset();
      ln.ig_comm.reset();
      ln.ig_comp.reset();
    }
  }

  const Workload& w_;
  std::string path_;
  AstraTextOptions options_;
  std::vector<LayerNodes> nodes_;
  uint64_t next_id_ = 0;
  TraceWriter* out_ = nullptr;
};

}  // namespace

bool is_astra_text_parallelism(std::string_view w) {
  return w == "MICRO" || w == "DATA" || w == "MODEL" || w == "HYBRID_DATA_MODEL" || w == "HYBRID_MODEL_DATA" ||
         w == "HYBRID_DLRM" || w == "HYBRID_DLRM_ENHANCED";
}

std::vector<std::string> convert_astra_text(const std::string& input_path, const std::string& output_prefix,
                                            const AstraTextOptions& options) {
  if (options.num_npus < 1) {
    throw std::invalid_argument(fmt::format("num_npus must be at least 1 (got {})", options.num_npus));
  }
  if (options.num_passes < 1) {
    throw std::invalid_argument(fmt::format("num_passes must be at least 1 (got {})", options.num_passes));
  }
  const Workload w = Parser(input_path).parse();
  const std::filesystem::path dir = std::filesystem::path(output_prefix).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw TraceError({.file = dir.string()}, "cannot create the output directory: " + ec.message());
  }
  std::vector<std::string> paths;
  try {
    Converter(w, input_path, options).run(output_prefix, paths);
  } catch (...) {
    remove_files(paths);  // no partial workload is left behind
    throw;
  }
  return paths;
}

}  // namespace fabemu::traces
