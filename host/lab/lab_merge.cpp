// The merged report of a lab run (merge_lab_run, replay_timeline; coordinator.h): ranks from their agents,
// the replicated model's parts from one agent, the "lab" section and the lab part of the text summary.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <string_view>

#include "emulator/report_json.h"
#include "host/lab/coordinator.h"
#include "host/lab/lab_config.h"

namespace fabemu::lab {

namespace {

bool same_collectives(const emu::RunResult& a, const emu::RunResult& b) {
  if (a.collectives.size() != b.collectives.size()) return false;
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    const auto& x = a.collectives[i];
    const auto& y = b.collectives[i];
    if (x.index != y.index || x.type != y.type || x.issued_first != y.issued_first || x.issued_last != y.issued_last ||
        x.finished != y.finished || x.messages != y.messages || x.message_bytes != y.message_bytes) {
      return false;
    }
  }
  return true;
}

bool same_links(const emu::RunResult& a, const emu::RunResult& b) {
  if (a.links.size() != b.links.size()) return false;
  for (size_t i = 0; i < a.links.size(); ++i) {
    if (a.links[i].id != b.links[i].id || a.links[i].bytes != b.links[i].bytes ||
        a.links[i].packets != b.links[i].packets) {
      return false;
    }
  }
  return true;
}

// Fabric socket or dpdk: what the agent received of the packets' traffic class (its socket section's
// frames_by_ecn, frames_dscp_changed), for its line of the summary; "" when there is nothing to say.
std::string traffic_class_note(const LabRunOutcome& o, const AgentReport& a) {
  if (o.fabric == "model" || a.socket_json.empty()) return {};
  const nlohmann::json j = nlohmann::json::parse(a.socket_json, nullptr, false);
  if (j.is_discarded() || !j.contains("frames_by_ecn")) return {};
  const nlohmann::json& by = j["frames_by_ecn"];
  const auto count = [&](const char* key) { return by.value(key, uint64_t{0}); };
  const uint64_t ce = count("ce");
  const uint64_t frames = count("not_ect") + count("ect0") + count("ect1") + ce;
  const uint64_t changed = j.value("frames_dscp_changed", uint64_t{0});
  if (o.ecn == "not-ect" && ce == 0 && changed == 0) return {};
  return fmt::format(", CE on {} of {} {} received{}", ce, frames, o.fabric == "dpdk" ? "frames" : "datagrams",
                     changed == 0 ? std::string() : fmt::format(", DSCP rewritten on {}", changed));
}

// Each line of `text` indented by `indent`.
std::string indented(const std::string& text, const char* indent) {
  std::string out;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    const size_t stop = end == std::string::npos ? text.size() : end;
    out += fmt::format("{}{}\n", indent, std::string_view(text).substr(begin, stop - begin));
    begin = stop + 1;
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The ranks' own results (each from its agent), in rank order; the run's total is the last rank's finish.
void add_rank_results(const LabRunOutcome& o, emu::RunResult& r) {
  for (const auto& [rank, json] : o.rank_reports) {
    emu::RunResult one = emu::report_from_json(json, fmt::format("rank {}'s result", rank));
    for (const auto& k : one.ranks) {
      r.ranks.push_back(k);
      if (k.finish > r.total) r.total = k.finish;
    }
  }
  r.reached = std::max(r.reached, r.total);
  std::sort(r.ranks.begin(), r.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
}

// The replicated model's parts of the report, from the first agent with a result (the base).
void take_model_parts(emu::RunResult& r, const emu::RunResult& base_run) {
  r.npus = base_run.npus;
  r.collectives = base_run.collectives;
  r.p2p = base_run.p2p;
  r.links = base_run.links;
  r.messages = base_run.messages;
  r.message_bytes = base_run.message_bytes;
  r.events = base_run.events;
  r.collectives_closed_form = base_run.collectives_closed_form;
  r.warnings = base_run.warnings;
  r.stuck = base_run.stuck;
  r.reached = base_run.reached;
}

// The model from the agents' reports: the base agent's parts, every agent's warnings once, a warning when an
// agent that ran to the end disagrees with the base; stalled and stopped agents named.
void merge_agent_reports(const LabRunOutcome& o, MergedLabRun& m) {
  emu::RunResult& r = m.result;
  const AgentReport* base = nullptr;
  emu::RunResult base_run;
  bool any_interrupted = false;
  std::vector<std::string> stall_warnings;  // after the model's warnings (the base agent's replace r.warnings)
  for (const AgentReport& a : o.agents) {
    if (!a.done || a.lost) continue;
    any_interrupted = any_interrupted || a.interrupted || !a.stall.empty();
    if (!a.stall.empty()) {
      m.stalled.push_back(fmt::format("agent {} ({}): {}", a.name, a.control, a.stall));
      stall_warnings.push_back(fmt::format("lab: agent {}'s wire stalled: {}", a.name, a.stall));
    }
    emu::RunResult run = emu::report_from_json(a.report_json, fmt::format("agent {}'s report", a.name));
    if (base == nullptr) {
      base = &a;
      base_run = std::move(run);
      take_model_parts(r, base_run);
      continue;
    }
    r.reached = std::max(r.reached, run.reached);  // an agent stopped early reached less
    for (const auto& w : run.warnings) {
      if (std::find(r.warnings.begin(), r.warnings.end(), w) == r.warnings.end()) r.warnings.push_back(w);
    }
    if (!a.interrupted && !base->interrupted && a.stall.empty() && base->stall.empty()) {
      if (!same_collectives(base_run, run)) {
        r.warnings.push_back(fmt::format("lab: agent {}'s collectives differ from agent {}'s (the replicated model "
                                         "should be identical)", a.name, base->name));
      }
      if (!same_links(base_run, run)) {
        r.warnings.push_back(fmt::format("lab: agent {}'s link statistics differ from agent {}'s", a.name, base->name));
      }
    }
  }
  add_rank_results(o, r);
  r.warnings.insert(r.warnings.end(), stall_warnings.begin(), stall_warnings.end());
  if (any_interrupted) r.warnings.push_back("lab: the run was stopped before the end: the report is partial");
}

// The agents as the "lab" section and the summary see them.
struct AgentsSummary {
  std::string json;       // the section's "agents" entries
  std::string wire_text;  // each agent's socket statistics, indented
  int64_t earliest = 0, latest = 0;  // start skews of the agents that ran
  bool any_started = false;
};

// The walk's actual start on the agent, in the coordinator's clock, minus the agreed start (0: no result).
int64_t start_skew(const LabRunOutcome& o, const AgentReport& a, bool has_result) {
  return has_result ? a.started_ns - a.clock.offset_ns - o.start_at_ns : 0;
}

// One "agents" entry of the "lab" section.
std::string agent_json(const AgentReport& a, const char* status, int64_t skew) {
  const std::string drift = a.after ? fmt::format("{}", a.after->offset_ns - a.clock.offset_ns) : "null";
  return fmt::format(
      "\n      {{\"name\": {}, \"host\": {}, \"control\": {}, \"ranks\": {}, \"status\": \"{}\", \"lost_reason\": {}, "
      "\"clock_offset_ns\": {}, \"clock_rtt_ns\": {}, \"clock_residual_bound_ns\": {}, \"clock_drift_ns\": {}, "
      "\"start_skew_ns\": {}, \"wall_ns\": {}, \"mac\": {}, \"stall\": {}{}}}",
      json_string(a.name), json_string(a.agent_id), json_string(a.control), json_string(format_ranks(a.ranks)), status,
      json_string(a.lost_reason), a.clock.offset_ns, a.clock.delay_ns, a.clock.delay_ns / 2, drift, skew, a.wall_ns,
      json_string(a.mac), a.stall.empty() ? std::string("null") : json_string(a.stall),
      a.socket_json.empty() ? std::string() : ", \"socket\": " + a.socket_json);
}

// One agent's line of the summary.
std::string agent_line(const LabRunOutcome& o, const AgentReport& a, const char* status, bool has_result,
                       int64_t skew) {
  return fmt::format("  agent {:<8} {:<21} ranks {:<10} {:<11} offset {} ns (rtt {} ns, residual <= {} ns){}{}{}{}\n",
                     a.name, a.control, format_ranks(a.ranks), status, a.clock.offset_ns, a.clock.delay_ns,
                     a.clock.delay_ns / 2,
                     a.after ? fmt::format(", drift {} ns", a.after->offset_ns - a.clock.offset_ns) : "",
                     has_result ? fmt::format(", started {} ns off", skew) : "",
                     a.mac.empty() ? "" : ", port " + a.mac, traffic_class_note(o, a));
}

// Every agent's line of the summary and entry of the section; a lost agent's ranks are named in a warning.
AgentsSummary describe_agents(const LabRunOutcome& o, MergedLabRun& m) {
  AgentsSummary sum;
  for (const AgentReport& a : o.agents) {
    const bool has_result = a.done && !a.lost;
    if (!has_result) {
      m.lost_ranks.insert(m.lost_ranks.end(), a.ranks.begin(), a.ranks.end());
      m.result.warnings.push_back(fmt::format("lab: agent {} ({}) lost: {}; ranks {} have no result", a.name,
                                              a.control, a.lost_reason.empty() ? "no results" : a.lost_reason,
                                              format_ranks(a.ranks)));
    }
    const char* status = !has_result ? "lost" : a.interrupted ? "interrupted" : !a.stall.empty() ? "stalled" : "done";
    const int64_t skew = start_skew(o, a, has_result);
    if (has_result) {
      sum.earliest = sum.any_started ? std::min(sum.earliest, skew) : skew;
      sum.latest = sum.any_started ? std::max(sum.latest, skew) : skew;
      sum.any_started = true;
      // What a single-host socket run prints, for this agent's ranks (lateness, retransmissions...).
      if (!a.socket_text.empty()) {
        sum.wire_text += fmt::format("  agent {}: {}", a.name, indented(a.socket_text, "  ").substr(2));
      }
    }
    sum.json += (sum.json.empty() ? "" : ",") + agent_json(a, status, skew);
    m.text += agent_line(o, a, status, has_result, skew);
  }
  std::sort(m.lost_ranks.begin(), m.lost_ranks.end());
  return sum;
}

}  // namespace

MergedLabRun merge_lab_run(const LabRunOutcome& o) {
  MergedLabRun m;
  merge_agent_reports(o, m);

  const bool dpdk = o.fabric == "dpdk", wire = o.fabric != "model";
  m.text = fmt::format("Lab ({} agents, fabric {}{}{}, run {})\n", o.agents.size(), o.fabric,
                       dpdk ? fmt::format(", {} frames", o.wire) : std::string(),
                       wire ? fmt::format(", DSCP {} ECN {}", o.dscp, o.ecn) : std::string(), o.run_id);
  const AgentsSummary agents = describe_agents(o, m);
  const int64_t setup = o.start_sent_ns > 0 ? o.start_sent_ns - o.began_ns : 0;
  const int64_t ready = o.ready_ns > 0 ? o.ready_ns - o.began_ns : 0;
  m.text += fmt::format("  control plane       {:.3f} ms to prepare every agent, Start sent after {:.3f} ms "
                        "({} trace bytes per agent)\n",
                        static_cast<double>(ready) / 1e6, static_cast<double>(setup) / 1e6, o.trace_bytes);
  const int64_t spread = agents.latest - agents.earliest;
  if (agents.any_started) {
    m.text += fmt::format("  start               the agents' walks began {:.3f} ms apart ({:.3f} to {:.3f} ms after the "
                          "agreed instant)\n",
                          static_cast<double>(spread) / 1e6, static_cast<double>(agents.earliest) / 1e6,
                          static_cast<double>(agents.latest) / 1e6);
  }
  m.text += agents.wire_text;
  if (!m.lost_ranks.empty()) m.text += fmt::format("  lost ranks          {}\n", format_ranks(m.lost_ranks));
  m.result.sections.emplace_back(
      "lab", fmt::format("{{\n    \"run_id\": {}, \"fabric\": {}, \"wire\": {}, \"dscp\": {}, \"ecn\": {}, \"setup_ns\": {}, "
                         "\"ready_ns\": {}, \"start_margin_ns\": {}, \"start_spread_ns\": {}, \"trace_bytes\": {}, \"lost_ranks\": {},\n    "
                         "\"agents\": [{}\n    ]\n  }}",
                         json_string(o.run_id), json_string(o.fabric), dpdk ? json_string(o.wire) : "null",
                         wire ? fmt::format("{}", o.dscp) : "null", wire ? json_string(o.ecn) : "null", setup, ready,
                         o.start_at_ns > 0 ? o.start_at_ns - o.ready_ns : 0,
                         agents.any_started ? fmt::format("{}", spread) : "null", o.trace_bytes,
                         json_string(format_ranks(m.lost_ranks)), agents.json));
  return m;
}

void replay_timeline(const LabRunOutcome& o, emu::TimelineSink& sink) {
  for (const proto::TimelineSlice& s : o.slices) {
    if (s.message()) {
      sink.message_slice(s.rank(), s.track(), s.bytes(), emu::Time::from_ps(s.start_ps()),
                         emu::Time::from_ps(s.end_ps()), s.node_id());
    } else {
      sink.node_slice(s.rank(), s.track(), s.name(), s.kind().c_str(), s.node_id(), emu::Time::from_ps(s.start_ps()),
                      emu::Time::from_ps(s.end_ps()), s.bytes());
    }
  }
}

}  // namespace fabemu::lab
