// JSON report writer and reader (schema "fabemu.report/2", reads /1 too). The writer formats every value itself so
// that the text is byte-stable: integers as integers, derived doubles with 6 fixed decimals.
#include "emulator/report_json.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "emulator/summary.h"
#include "traces/error.h"

namespace fabemu::emu {

double busbw_factor(const std::string& type, int32_t members) {
  if (members <= 0) return 1.0;
  const double n = members;
  if (type == "ALL_REDUCE") return 2.0 * (n - 1.0) / n;
  if (type == "ALL_GATHER" || type == "REDUCE_SCATTER" || type == "REDUCE_SCATTER_BLOCK" || type == "ALL_TO_ALL") {
    return (n - 1.0) / n;
  }
  return 1.0;
}

void compute_bandwidths(CollectiveResult& c) {
  c.algbw_bytes_per_s = 0;
  c.busbw_bytes_per_s = 0;
  if (c.finished <= c.issued_last) return;
  const uint64_t dur_ps = (c.finished - c.issued_last).ps();
  double size = static_cast<double>(c.bytes);
  if (c.type == "ALL_GATHER" && c.members > 0) size *= c.members;
  c.algbw_bytes_per_s = size * 1e12 / static_cast<double>(dur_ps);
  c.busbw_bytes_per_s = c.algbw_bytes_per_s * busbw_factor(c.type, c.members);
}

namespace {
constexpr std::pair<RunStatus, const char*> kStatusNames[] = {{RunStatus::kComplete, "complete"},
                                                             {RunStatus::kDeadlocked, "deadlocked"},
                                                             {RunStatus::kInterrupted, "interrupted"},
                                                             {RunStatus::kStalled, "stalled"},
                                                             {RunStatus::kIncomplete, "incomplete"}};
}  // namespace

const char* run_status_name(RunStatus status) {
  for (const auto& [s, name] : kStatusNames) {
    if (s == status) return name;
  }
  return "unknown";
}

std::optional<RunStatus> run_status_from_name(std::string_view name) {
  for (const auto& [s, n] : kStatusNames) {
    if (name == n) return s;
  }
  return std::nullopt;
}

namespace {

using nlohmann::json;

std::string fixed6(double v) { return std::isfinite(v) ? fmt::format("{:.6f}", v) : "null"; }

std::string shortest(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

double gbps(double bytes_per_s) { return bytes_per_s / 1e9; }

// ---- reader ----------------------------------------------------------------------------------------

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw traces::TraceError({.file = source_}, fmt::format("{}: {}", pointer.empty() ? "/" : pointer, what));
  }

  const json& member(const json& obj, const std::string& ptr, const char* key) const {
    if (!obj.is_object()) fail(ptr, "expected an object");
    const auto it = obj.find(key);
    if (it == obj.end()) fail(ptr + "/" + key, "missing");
    return *it;
  }
  const json& array(const json& obj, const std::string& ptr, const char* key) const {
    const json& v = member(obj, ptr, key);
    if (!v.is_array()) fail(ptr + "/" + key, "expected an array");
    return v;
  }
  uint64_t u64(const json& obj, const std::string& ptr, const char* key) const {
    const json& v = member(obj, ptr, key);
    if (!v.is_number_unsigned()) fail(ptr + "/" + key, "expected a non-negative integer");
    return v.get<uint64_t>();
  }
  int32_t i32(const json& obj, const std::string& ptr, const char* key) const {
    const json& v = member(obj, ptr, key);
    if (!v.is_number_integer()) fail(ptr + "/" + key, "expected an integer");
    const auto x = v.get<int64_t>();
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{std::numeric_limits<int32_t>::max()}) {
      fail(ptr + "/" + key, "out of range (32-bit integer)");
    }
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
      fail(ptr + "/" + key, "out of range (32-bit integer)");
    }
    return static_cast<int32_t>(x);
  }
  uint32_t u32(const json& obj, const std::string& ptr, const char* key) const {
    const uint64_t x = u64(obj, ptr, key);
    if (x > std::numeric_limits<uint32_t>::max()) fail(ptr + "/" + key, "out of range (32-bit unsigned integer)");
    return static_cast<uint32_t>(x);
  }
  double number(const json& obj, const std::string& ptr, const char* key) const {
    const json& v = member(obj, ptr, key);
    if (!v.is_number()) fail(ptr + "/" + key, "expected a number");
    return v.get<double>();
  }
  std::string str(const json& obj, const std::string& ptr, const char* key) const {
    const json& v = member(obj, ptr, key);
    if (!v.is_string()) fail(ptr + "/" + key, "expected a string");
    return v.get<std::string>();
  }

 private:
  const std::string& source_;
};

// "link_series": {"bin_ps": W, "bins": B, "links": [{"id": L, "busy_ps": [...]}, ...]} (written, not read
// back).
void write_link_series(const LinkSeries& s, std::string& out) {
  auto it = std::back_inserter(out);
  const size_t bins = s.busy_ps.empty() ? 0 : s.busy_ps.front().size();
  fmt::format_to(it, "  \"link_series\": {{\"bin_ps\": {}, \"bins\": {}, \"links\": [", s.bin_ps, bins);
  for (size_t i = 0; i < s.links.size(); ++i) {
    fmt::format_to(it, "{}\n    {{\"id\": {}, \"busy_ps\": [{}]}}", i == 0 ? "" : ",", s.links[i],
                   fmt::join(s.busy_ps[i], ", "));
  }
  out += s.links.empty() ? "]},\n" : "\n  ]},\n";
}

}  // namespace

std::string report_to_json(const RunResult& r) {
  std::string out;
  out.reserve(1024 + 256 * (r.ranks.size() + r.collectives.size() + r.links.size()));
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\n  \"schema\": {},\n", json_quoted(kReportSchema));
  fmt::format_to(it, "  \"workload\": {},\n  \"fabric\": {},\n  \"model\": {},\n  \"topology\": {},\n", json_quoted(r.workload),
                 json_quoted(r.fabric), json_quoted(r.model), json_quoted(r.topology));
  fmt::format_to(it, "  \"npus\": {},\n  \"total_time_ps\": {},\n  \"total_time\": {},\n", r.npus, r.total.ps(),
                 json_quoted(format_ps(r.total.ps())));
  fmt::format_to(it, "  \"status\": {},\n  \"time_reached_ps\": {},\n", json_quoted(run_status_name(r.status)),
                 r.reached.ps());

  out += "  \"ranks\": [";
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankResult& k = r.ranks[i];
    fmt::format_to(it,
                   "{}\n    {{\"rank\": {}, \"finish_time_ps\": {}, \"compute_ps\": {}, \"comm_busy_ps\": {}, "
                   "\"exposed_comm_ps\": {}, \"idle_ps\": {}, \"device_compute_ps\": {}, \"finish_minus_compute_ps\": {}, "
                   "\"nodes\": {}, \"comp_nodes\": {}, \"comm_nodes\": {}, \"sent_messages\": {}, \"sent_bytes\": {}, "
                   "\"received_messages\": {}, \"received_bytes\": {}, \"compute_scale\": {}, \"finished\": {}}}",
                   i == 0 ? "" : ",", k.rank, k.finish.ps(), k.compute_busy.ps(), k.comm_busy.ps(),
                   k.exposed_comm.ps(), k.idle.ps(), k.device_compute.ps(), k.finish_minus_compute().ps(), k.nodes,
                   k.comp_nodes, k.comm_nodes, k.sent_messages, k.sent_bytes, k.received_messages, k.received_bytes,
                   shortest(k.compute_scale), k.finished ? "true" : "false");
  }
  out += r.ranks.empty() ? "],\n" : "\n  ],\n";

  out += "  \"collectives\": [";
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const CollectiveResult& c = r.collectives[i];
    const uint64_t dur = c.finished > c.issued_last ? (c.finished - c.issued_last).ps() : 0;
    fmt::format_to(it,
                   "{}\n    {{\"index\": {}, \"type\": {}, \"group\": {}, \"name\": {}, \"node_id\": {}, \"bytes\": {}, "
                   "\"members\": {}, \"algorithm\": {}, \"chunks\": {}, \"messages\": {}, \"message_bytes\": {}, "
                   "\"issued_first_ps\": {}, \"issued_last_ps\": {}, \"finished_ps\": {}, \"duration_ps\": {}, "
                   "\"algbw_GBps\": {}, \"busbw_GBps\": {}}}",
                   i == 0 ? "" : ",", c.index, json_quoted(c.type), json_quoted(c.group), json_quoted(c.name), c.node_id, c.bytes,
                   c.members, json_quoted(c.algorithm), c.chunks, c.messages, c.message_bytes, c.issued_first.ps(),
                   c.issued_last.ps(), c.finished.ps(), dur, fixed6(gbps(c.algbw_bytes_per_s)),
                   fixed6(gbps(c.busbw_bytes_per_s)));
  }
  out += r.collectives.empty() ? "],\n" : "\n  ],\n";

  fmt::format_to(it, "  \"p2p\": {{\"sends\": {}, \"bytes\": {}}},\n", r.p2p.sends, r.p2p.bytes);

  out += "  \"links\": [";
  for (size_t i = 0; i < r.links.size(); ++i) {
    const LinkResult& l = r.links[i];
    // "tier" only on a fat-tree's links: the reports of other networks are as they were.
    const std::string tier = l.tier.empty() ? std::string() : fmt::format(", \"tier\": \"{}\"", l.tier);
    fmt::format_to(it,
                   "{}\n    {{\"id\": {}, \"from\": {}, \"to\": {}, \"dim\": {}{}, \"bytes\": {}, \"packets\": {}, "
                   "\"busy_ps\": {}, \"utilization\": {}}}",
                   i == 0 ? "" : ",", l.id, l.from, l.to, l.dim, tier, l.bytes, l.packets, l.busy.ps(),
                   fixed6(l.utilization));
  }
  out += r.links.empty() ? "],\n" : "\n  ],\n";
  if (!r.link_series.empty()) write_link_series(r.link_series, out);

  fmt::format_to(it,
                 "  \"totals\": {{\"messages\": {}, \"message_bytes\": {}, \"events\": {}, "
                 "\"collectives_closed_form\": {}}},\n",
                 r.messages, r.message_bytes, r.events, r.collectives_closed_form);

  out += "  \"warnings\": [";
  for (size_t i = 0; i < r.warnings.size(); ++i) fmt::format_to(it, "{}\n    {}", i == 0 ? "" : ",", json_quoted(r.warnings[i]));
  out += r.warnings.empty() ? "],\n" : "\n  ],\n";
  out += "  \"stuck\": [";
  for (size_t i = 0; i < r.stuck.size(); ++i) fmt::format_to(it, "{}\n    {}", i == 0 ? "" : ",", json_quoted(r.stuck[i]));
  out += r.stuck.empty() ? "]" : "\n  ]";
  for (const auto& [key, value] : r.sections) fmt::format_to(it, ",\n  {}: {}", json_quoted(key), value);
  out += "\n}\n";
  return out;
}

namespace {

// The parsed document, or a TraceError naming the line and nlohmann's reason.
json parse_report(const std::string& text, const std::string& source_name) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const size_t upto = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    traces::Location where{.file = source_name};
    where.line = 1 + static_cast<uint64_t>(std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(upto), '\n'));
    std::string msg = e.what();
    // nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> keep the reason.
    if (const auto p = msg.find(": "); p != std::string::npos && msg.compare(0, 15, "[json.exception") == 0) {
      msg = msg.substr(p + 2);
    }
    throw traces::TraceError(where, "not a JSON report: " + msg);
  } catch (const json::out_of_range& e) {
    // A number beyond a double's range (nlohmann's out_of_range.406 while parsing): no position is given.
    std::string msg = e.what();
    if (const auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    throw traces::TraceError(traces::Location{.file = source_name}, "not a JSON report: " + msg);
  }
}

// The schema, the run's description, its total time and status.
void read_head(const Reader& rd, const json& doc, RunResult& r) {
  if (!doc.is_object()) rd.fail("", "expected a JSON object (a fabemu report)");
  const std::string schema = rd.str(doc, "", "schema");
  if (schema != kReportSchema && schema != kReportSchemaV1) {
    rd.fail("/schema", fmt::format("unsupported report schema \"{}\" (expected \"{}\" or \"{}\")", schema, kReportSchema,
                                   kReportSchemaV1));
  }
  r.workload = rd.str(doc, "", "workload");
  r.fabric = rd.str(doc, "", "fabric");
  r.model = rd.str(doc, "", "model");
  r.topology = rd.str(doc, "", "topology");
  r.npus = rd.i32(doc, "", "npus");
  r.total = Time::from_ps(rd.u64(doc, "", "total_time_ps"));
  // status and time_reached_ps are newer than the schema: a report without them is read as a complete run
  // (or a deadlocked one, when it has `stuck` lines) that ended at its total time.
  r.reached = doc.contains("time_reached_ps") ? Time::from_ps(rd.u64(doc, "", "time_reached_ps")) : r.total;
  if (doc.contains("status")) {
    const auto status = run_status_from_name(rd.str(doc, "", "status"));
    if (!status) rd.fail("/status", "expected complete, deadlocked, interrupted, stalled or incomplete");
    r.status = *status;
  }
}

RankResult read_rank(const Reader& rd, const json& o, const std::string& p) {
  RankResult k;
  k.rank = rd.i32(o, p, "rank");
  k.finish = Time::from_ps(rd.u64(o, p, "finish_time_ps"));
  k.compute_busy = Duration::from_ps(rd.u64(o, p, "compute_ps"));
  k.comm_busy = Duration::from_ps(rd.u64(o, p, "comm_busy_ps"));
  k.exposed_comm = Duration::from_ps(rd.u64(o, p, "exposed_comm_ps"));
  k.idle = Duration::from_ps(rd.u64(o, p, "idle_ps"));
  // Reports written before device_compute_ps existed read back with 0 (finish_minus_compute_ps is derived).
  if (o.contains("device_compute_ps")) k.device_compute = Duration::from_ps(rd.u64(o, p, "device_compute_ps"));
  k.nodes = rd.u64(o, p, "nodes");
  k.comp_nodes = rd.u64(o, p, "comp_nodes");
  k.comm_nodes = rd.u64(o, p, "comm_nodes");
  // Reports written before the per-rank traffic existed read back with 0.
  if (o.contains("sent_messages")) {
    k.sent_messages = rd.u64(o, p, "sent_messages");
    k.sent_bytes = rd.u64(o, p, "sent_bytes");
    k.received_messages = rd.u64(o, p, "received_messages");
    k.received_bytes = rd.u64(o, p, "received_bytes");
  }
  k.compute_scale = rd.number(o, p, "compute_scale");
  if (o.contains("finished")) {
    if (!o["finished"].is_boolean()) rd.fail(p + "/finished", "expected true or false");
    k.finished = o["finished"].get<bool>();
  }
  return k;
}

CollectiveResult read_collective(const Reader& rd, const json& o, const std::string& p) {
  CollectiveResult c;
  c.index = rd.u64(o, p, "index");
  c.type = rd.str(o, p, "type");
  c.group = rd.str(o, p, "group");
  c.name = rd.str(o, p, "name");
  c.node_id = rd.u64(o, p, "node_id");
  c.bytes = rd.u64(o, p, "bytes");
  c.members = rd.i32(o, p, "members");
  c.algorithm = rd.str(o, p, "algorithm");
  c.chunks = rd.u64(o, p, "chunks");
  c.messages = rd.u64(o, p, "messages");
  c.message_bytes = rd.u64(o, p, "message_bytes");
  c.issued_first = Time::from_ps(rd.u64(o, p, "issued_first_ps"));
  c.issued_last = Time::from_ps(rd.u64(o, p, "issued_last_ps"));
  c.finished = Time::from_ps(rd.u64(o, p, "finished_ps"));
  if (c.issued_last < c.issued_first) rd.fail(p + "/issued_last_ps", "is before issued_first_ps");
  if (c.finished < c.issued_last) rd.fail(p + "/finished_ps", "is before issued_last_ps");
  compute_bandwidths(c);
  return c;
}

LinkResult read_link(const Reader& rd, const json& o, const std::string& p) {
  LinkResult l;
  l.id = rd.u32(o, p, "id");
  l.from = rd.i32(o, p, "from");
  l.to = rd.i32(o, p, "to");
  l.dim = rd.i32(o, p, "dim");
  if (o.contains("tier")) {
    l.tier = rd.str(o, p, "tier");
    if (l.tier != "leaf" && l.tier != "spine") rd.fail(p + "/tier", "expected \"leaf\" or \"spine\"");
  }
  l.bytes = rd.u64(o, p, "bytes");
  l.packets = rd.u64(o, p, "packets");
  l.busy = Duration::from_ps(rd.u64(o, p, "busy_ps"));
  l.utilization = rd.number(o, p, "utilization");
  return l;
}

// Each element of the array `key` read by read_one(reader, element, "/key/i"), in order.
template <class T, class ReadOne>
void read_each(const Reader& rd, const json& doc, const char* key, std::vector<T>& out, ReadOne read_one) {
  const json& items = rd.array(doc, "", key);
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) out.push_back(read_one(rd, items[i], fmt::format("/{}/{}", key, i)));
}

// The array `key` of strings.
void read_strings(const Reader& rd, const json& doc, const char* key, std::vector<std::string>& out) {
  const json& items = rd.array(doc, "", key);
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) rd.fail(fmt::format("/{}/{}", key, i), "expected a string");
    out.push_back(items[i].get<std::string>());
  }
}

}  // namespace

RunResult report_from_json(const std::string& text, const std::string& source_name) {
  const json doc = parse_report(text, source_name);
  const Reader rd(source_name);
  RunResult r;
  read_head(rd, doc, r);
  read_each(rd, doc, "ranks", r.ranks, read_rank);
  read_each(rd, doc, "collectives", r.collectives, read_collective);
  const json& p2p = rd.member(doc, "", "p2p");
  r.p2p.sends = rd.u64(p2p, "/p2p", "sends");
  r.p2p.bytes = rd.u64(p2p, "/p2p", "bytes");
  read_each(rd, doc, "links", r.links, read_link);
  const json& totals = rd.member(doc, "", "totals");
  r.messages = rd.u64(totals, "/totals", "messages");
  r.message_bytes = rd.u64(totals, "/totals", "message_bytes");
  r.events = rd.u64(totals, "/totals", "events");
  r.collectives_closed_form = rd.u64(totals, "/totals", "collectives_closed_form");
  read_strings(rd, doc, "warnings", r.warnings);
  if (doc.contains("stuck")) {
    read_strings(rd, doc, "stuck", r.stuck);
    if (!doc.contains("status") && !r.stuck.empty()) r.status = RunStatus::kDeadlocked;
  }
  return r;
}

RunResult read_report_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw traces::TraceError({.file = path}, "cannot open the report");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw traces::TraceError({.file = path}, "cannot read the report");
  return report_from_json(ss.str(), path);
}

std::string json_quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace fabemu::emu
