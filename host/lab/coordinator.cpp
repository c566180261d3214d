#include "host/lab/coordinator.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

#include "emulator/report_json.h"
#include "host/wire/address_plan.h"
#include "host/lab/address.h"
#include "host/lab/auth.h"
#include "host/lab/digest.h"
#include "host/lab/error.h"
#include "host/lab/metrics.h"

namespace fabemu::lab {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LabError(proto::ERROR_RUN_FAILED, fmt::format("{}: cannot open", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw LabError(proto::ERROR_RUN_FAILED, fmt::format("{}: cannot read", path));
  return ss.str();
}

enum class Phase {
  kConnecting,
  kChallenge,    // Hello sent
  kAuthResult,   // AuthResponse sent
  kProbing,      // clock probes
  kPreparing,    // AssignRanks and shards sent, waiting for Prepared
  kReady,        // prepared, waiting for the others
  kRunning,      // Start sent, collecting results
  kReprobing,    // RunDone received, re-probing the clock
  kFinished,     // results and drift in; Stop once every agent is here (a wire keeps serving till then)
  kClosed        // done, lost or failed
};

struct Peer {
  Peer(asio::io_context& io, const LabAgentConfig& c) : config(c), socket(io), timer(io) {}
  const LabAgentConfig& config;
  tcp::socket socket;
  asio::steady_timer timer;
  std::array<std::uint8_t, kHeaderBytes> header{};
  std::string body;
  std::deque<std::string> out;
  bool close_after_write = false;
  Phase phase = Phase::kConnecting;
  bool authenticated = false;
  std::string coordinator_nonce;
  std::vector<ClockSample> samples;
  std::uint64_t seq = 0;
  std::int64_t probe_t1 = 0;
  AgentReport report;
  std::map<uint32_t, std::string> rank_reports;
  std::vector<proto::TimelineSlice> slices;
  // The agent's counters before the run (Prepared) and lately (its heartbeats, RunDone): the metrics.
  std::optional<proto::RunProgress> baseline;
  proto::RunProgress progress;
};

class Coordinator {
 public:
  Coordinator(const LabRunRequest& request, const CoordinatorOptions& options)
      : request_(request), options_(options), grace_(io_), signals_(io_) {
    outcome_.began_ns = realtime_ns();
    outcome_.run_id = to_hex(random_nonce()).substr(0, 12);
    outcome_.fabric = request.lab.fabric;
    outcome_.wire = request.lab.wire;
    outcome_.dscp = request.lab.dscp;
    outcome_.ecn = request.lab.ecn;
    for (const auto& a : request.lab.agents) {
      auto p = std::make_unique<Peer>(io_, a);
      p->report.name = a.name;
      p->report.control = to_string(a.control);
      p->report.ranks = a.ranks;
      peers_.push_back(std::move(p));
    }
    prepare_shards();
  }

  LabRunOutcome run() {
    if (options_.metrics) {
      metrics_ = std::make_unique<MetricsServer>(io_, *options_.metrics, [this] { return render_metrics_text(); });
      spdlog::info("lab: metrics on {}", to_string(metrics_->local_endpoint()));
    }
    // SIGINT/SIGTERM: stop the agents and still gather what they have (a partial report), as for a lost agent.
    if (options_.handle_signals) {
      signals_.add(SIGINT);
      signals_.add(SIGTERM);
      signals_.async_wait([this](boost::system::error_code ec, int signo) {
        if (ec) return;
        outcome_.interrupted = true;
        const std::string why = fmt::format("interrupted by {}", signo == SIGINT ? "SIGINT" : "SIGTERM");
        if (std::any_of(peers_.begin(), peers_.end(), [](const auto& q) { return q->phase == Phase::kRunning; })) {
          abort_run(why);
        } else {
          fatal(why + " before the run started");
        }
      });
    }
    for (auto& p : peers_) connect(*p);
    io_.run();
    outcome_.ended_ns = realtime_ns();
    for (auto& p : peers_) {
      if (p->report.done && !p->report.lost) {
        for (auto& [rank, json] : p->rank_reports) outcome_.rank_reports[rank] = std::move(json);
        for (auto& s : p->slices) outcome_.slices.push_back(std::move(s));
      }
      outcome_.agents.push_back(std::move(p->report));
    }
    std::stable_sort(outcome_.slices.begin(), outcome_.slices.end(),
                     [](const proto::TimelineSlice& a, const proto::TimelineSlice& b) { return a.seq() < b.seq(); });
    return std::move(outcome_);
  }

 private:
  // The shards, read and hashed once, sent to every agent.
  void prepare_shards() {
    const bool shared = request_.lab.shared_storage;
    for (uint32_t r = 0; r < request_.trace_paths.size(); ++r) {
      const std::string& path = request_.trace_paths[r];
      proto::Envelope e;
      proto::TraceShard* s = e.mutable_trace_shard();
      s->set_rank(r);
      s->set_name(path);  // the user's file, as given: the agents name it in warnings and errors
      if (shared) {
        s->set_path(std::filesystem::absolute(path).string());
        s->set_sha256(sha256_file(path));
        outcome_.trace_bytes += std::filesystem::file_size(path);
      } else {
        std::string bytes = read_file(path);
        if (bytes.size() + 1024 > options_.max_frame_bytes) {
          throw LabError(proto::ERROR_FRAME_TOO_LARGE,
                         fmt::format("{}: {} bytes do not fit a frame of {} bytes: use shared_storage: true in the "
                                     "lab file", path, bytes.size(), options_.max_frame_bytes));
        }
        s->set_sha256(sha256(bytes));
        outcome_.trace_bytes += bytes.size();
        s->set_bytes(std::move(bytes));
      }
      shards_.push_back(encode_frame(e, options_.max_frame_bytes));
    }
  }

  std::string who(const Peer& p) const { return fmt::format("agent {} ({})", p.config.name, p.report.control); }

  void connect(Peer& p) {
    arm_timer(p, "no connection");
    p.socket.async_connect(p.config.control, [this, &p](boost::system::error_code ec) {
      if (p.phase == Phase::kClosed) return;
      if (ec) return lose(p, fmt::format("connect failed: {}", ec.message()));
      boost::system::error_code ignored;
      p.socket.set_option(tcp::no_delay(true), ignored);
      p.coordinator_nonce = random_nonce();
      proto::Envelope hello;
      hello.mutable_hello()->set_version(proto::PROTOCOL_VERSION_CURRENT);
      hello.mutable_hello()->set_role(proto::ROLE_COORDINATOR);
      hello.mutable_hello()->set_nonce(p.coordinator_nonce);
      p.phase = Phase::kChallenge;
      send(p, hello);
      arm_timer(p, "no answer");
      read_header(p);
    });
  }

  void arm_timer(Peer& p, const char* what) {
    p.timer.expires_after(options_.timeout);
    p.timer.async_wait([this, &p, what](boost::system::error_code ec) {
      if (ec || p.phase == Phase::kClosed) return;
      lose(p, fmt::format("{} within {} ms", what, options_.timeout.count()));
    });
  }

  void read_header(Peer& p) {
    asio::async_read(p.socket, asio::buffer(p.header), [this, &p](boost::system::error_code ec, std::size_t) {
      if (p.phase == Phase::kClosed) return;
      if (ec) return lose(p, ec == asio::error::eof ? std::string("connection closed") : ec.message());
      const std::uint32_t length = decode_header(p.header);
      if (length > options_.max_frame_bytes) {
        return fail_agent(p, fmt::format("frame of {} bytes exceeds the limit of {}", length, options_.max_frame_bytes));
      }
      p.body.resize(length);
      asio::async_read(p.socket, asio::buffer(p.body), [this, &p](boost::system::error_code body_ec, std::size_t) {
        if (p.phase == Phase::kClosed) return;
        const std::int64_t received = realtime_ns();
        if (body_ec) return lose(p, body_ec == asio::error::eof ? std::string("connection closed mid-frame") : body_ec.message());
        proto::Envelope e;
        if (!e.ParseFromArray(p.body.data(), static_cast<int>(p.body.size()))) {
          return fail_agent(p, fmt::format("a frame of {} bytes is not a valid message", p.body.size()));
        }
        arm_timer(p, "nothing received");
        on_frame(p, e, received);
        if (p.phase != Phase::kClosed) read_header(p);
      });
    });
  }

  void send(Peer& p, const proto::Envelope& e) {
    try {
      send_frame(p, encode_frame(e, options_.max_frame_bytes));
    } catch (const LabError& err) {
      fail_agent(p, err.what());
    }
  }
  void send_frame(Peer& p, std::string frame) {
    if (p.phase == Phase::kClosed) return;
    p.out.push_back(std::move(frame));
    if (p.out.size() == 1) write_next(p);
  }
  void write_next(Peer& p) {
    asio::async_write(p.socket, asio::buffer(p.out.front()), [this, &p](boost::system::error_code ec, std::size_t) {
      if (p.phase == Phase::kClosed) return;
      if (ec) return lose(p, fmt::format("write failed: {}", ec.message()));
      p.out.pop_front();
      if (!p.out.empty()) return write_next(p);
      if (p.close_after_write) close(p);
    });
  }

  void close(Peer& p) {
    if (p.phase == Phase::kClosed) return;
    p.phase = Phase::kClosed;
    boost::system::error_code ignored;
    p.timer.cancel();
    p.socket.shutdown(tcp::socket::shutdown_both, ignored);
    p.socket.close(ignored);
    if (std::all_of(peers_.begin(), peers_.end(), [](const auto& q) { return q->phase == Phase::kClosed; })) {
      grace_.cancel();
      boost::system::error_code ignored_signals;
      signals_.cancel(ignored_signals);
      if (metrics_) metrics_->close();
    }
  }

  std::string render_metrics_text() const {
    live_.running.store(started_ && std::any_of(peers_.begin(), peers_.end(), [](const auto& q) {
      return q->phase == Phase::kRunning;
    }));
    // The traffic is the agents': what each counted since it was prepared, summed (links: the model's).
    reset_metrics(live_);
    for (const auto& q : peers_) {
      if (q->baseline) add_progress(live_, *q->baseline, q->progress);
    }
    std::string out = render_metrics(live_, {{"role", "coordinator"}});
    out += "# HELP fabemu_lab_agents Agents of the run by state.\n# TYPE fabemu_lab_agents gauge\n";
    const std::pair<const char*, std::function<bool(const Peer&)>> states[] = {
        {"connecting", [](const Peer& q) { return q.phase < Phase::kPreparing && q.phase != Phase::kClosed; }},
        {"preparing", [](const Peer& q) { return q.phase == Phase::kPreparing || q.phase == Phase::kReady; }},
        {"running", [](const Peer& q) { return q.phase == Phase::kRunning; }},
        {"finished", [](const Peer& q) { return q.report.done && !q.report.lost; }},
        {"lost", [](const Peer& q) { return q.report.lost; }}};
    for (const auto& state : states) {
      // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
      const auto& test = state.second;
      out += fmt::format("fabemu_lab_agents{{role=\"coordinator\",state=\"{}\"}} {}\n", state.first,
                         std::count_if(peers_.begin(), peers_.end(), [&](const auto& q) { return test(*q); }));
    }
    size_t lost = 0;
    for (const auto& q : peers_) lost += q->report.lost ? q->config.ranks.size() : 0;
    out += fmt::format("# HELP fabemu_lab_ranks_lost Ranks whose agent was lost.\n# TYPE fabemu_lab_ranks_lost gauge\n"
                       "fabemu_lab_ranks_lost{{role=\"coordinator\"}} {}\n", lost);
    return out;
  }

  // Stop (when it knows us), then close once written.
  void stop_and_close(Peer& p, const std::string& reason) {
    if (p.phase == Phase::kClosed) return;
    if (!p.authenticated) return close(p);
    proto::Envelope stop;
    stop.mutable_stop()->set_run_id(outcome_.run_id);
    stop.mutable_stop()->set_reason(reason);
    p.close_after_write = true;
    send(p, stop);
  }

  // The connection is gone (or silent): before the start the run cannot happen; during it, the run stops.
  void lose(Peer& p, const std::string& reason) {
    if (p.phase == Phase::kClosed) return;
    const Phase was = p.phase;
    p.report.lost = true;
    p.report.lost_reason = reason;
    close(p);
    if (was == Phase::kReprobing || was == Phase::kFinished) {  // its results are in
      p.report.lost = false;
      return finish_if_all_done();
    }
    spdlog::error("lab: {}: {}", who(p), reason);
    if (was < Phase::kRunning && !started_) {
      return fatal(fmt::format("{}: {}", who(p), reason));
    }
    abort_run(fmt::format("{} lost: {}", who(p), reason));
  }

  // The agent broke the protocol or reported an Error: the run is over for everyone.
  void fail_agent(Peer& p, const std::string& text) {
    if (p.phase == Phase::kClosed) return;
    p.report.lost = true;
    p.report.lost_reason = text;
    close(p);
    fatal(fmt::format("{}: {}", who(p), text));
  }

  void fatal(const std::string& text) {
    if (outcome_.fatal.empty()) outcome_.fatal = text;
    for (auto& q : peers_) stop_and_close(*q, "the run failed: " + text);
  }

  // Stop every running agent; whoever has not sent its results within the grace period is lost too.
  void abort_run(const std::string& reason) {
    if (aborting_) return;
    aborting_ = true;
    spdlog::warn("lab: stopping the run: {}", reason);
    for (auto& q : peers_) {
      if (q->phase == Phase::kRunning) {
        proto::Envelope stop;
        stop.mutable_stop()->set_run_id(outcome_.run_id);
        stop.mutable_stop()->set_reason(reason);
        send(*q, stop);
      } else if (q->phase != Phase::kClosed && q->phase != Phase::kReprobing && q->phase != Phase::kFinished) {
        stop_and_close(*q, reason);
      }
    }
    if (std::all_of(peers_.begin(), peers_.end(), [](const auto& q) { return q->phase == Phase::kClosed; })) return;
    grace_.expires_after(options_.stop_grace);
    grace_.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      for (auto& q : peers_) {
        if (q->phase != Phase::kClosed && !q->report.done) {
          lose(*q, fmt::format("no results within {} ms of the stop", options_.stop_grace.count()));
        } else if (q->phase != Phase::kClosed) {
          stop_and_close(*q, "run over");
        }
      }
    });
    finish_if_all_done();
  }

  // Every agent has its results in (or is gone): release them all.
  void finish_if_all_done() {
    if (!std::all_of(peers_.begin(), peers_.end(), [](const auto& q) {
          return q->phase == Phase::kFinished || q->phase == Phase::kClosed;
        })) {
      return;
    }
    for (auto& q : peers_) {
      if (q->phase == Phase::kFinished) stop_and_close(*q, "run over");
    }
  }

  void send_probe(Peer& p) {
    proto::Envelope probe;
    probe.mutable_clock_probe()->set_seq(++p.seq);
    p.probe_t1 = realtime_ns();
    probe.mutable_clock_probe()->set_t1(p.probe_t1);
    send(p, probe);
  }

  void on_frame(Peer& p, const proto::Envelope& e, std::int64_t received) {
    if (e.has_error()) {
      const std::string text =
          fmt::format("{} ({})", e.error().text(), proto::ErrorCode_Name(e.error().code()));
      if (p.phase >= Phase::kRunning &&
          (e.error().code() == proto::ERROR_SHUTTING_DOWN || e.error().code() == proto::ERROR_IDLE_TIMEOUT)) {
        return lose(p, text);
      }
      return fail_agent(p, text);
    }
    if (e.has_heartbeat()) {
      if (e.heartbeat().has_progress()) p.progress = e.heartbeat().progress();
      if (e.heartbeat().reply()) return;
      proto::Envelope echo;
      echo.mutable_heartbeat()->set_seq(e.heartbeat().seq());
      echo.mutable_heartbeat()->set_reply(true);
      return send(p, echo);
    }
    switch (p.phase) {
      case Phase::kChallenge: return on_challenge(p, e);
      case Phase::kAuthResult: return on_auth_result(p, e);
      case Phase::kProbing:
      case Phase::kReprobing: return on_clock_reply(p, e, received);
      case Phase::kPreparing:
        if (!e.has_prepared() || e.prepared().run_id() != outcome_.run_id) break;
        if (request_.lab.fabric == "dpdk" && !take_mac(p, e.prepared().mac())) return;
        p.phase = Phase::kReady;
        p.baseline = e.prepared().progress();
        p.progress = *p.baseline;
        spdlog::info("lab: {}: prepared ({} trace bytes{})", who(p), e.prepared().trace_bytes(),
                     p.report.mac.empty() ? "" : ", DPDK port " + p.report.mac);
        return maybe_start();
      case Phase::kRunning: return on_result(p, e);
      default: break;
    }
    fail_agent(p, fmt::format("unexpected {} message", body_name(e)));
  }

  void on_challenge(Peer& p, const proto::Envelope& e) {
    if (!e.has_challenge()) return fail_agent(p, fmt::format("expected challenge, got {}", body_name(e)));
    if (e.challenge().version() != proto::PROTOCOL_VERSION_CURRENT) {
      return fail_agent(p, fmt::format("protocol version mismatch: the agent speaks version {}, we speak {}",
                                       e.challenge().version(), static_cast<int>(proto::PROTOCOL_VERSION_CURRENT)));
    }
    if (e.challenge().nonce().size() != kNonceBytes) return fail_agent(p, "challenge nonce of the wrong size");
    agent_nonce_[&p] = e.challenge().nonce();
    proto::Envelope response;
    response.mutable_auth_response()->set_mac(
        auth_mac(options_.token, p.coordinator_nonce, e.challenge().nonce(), proto::ROLE_COORDINATOR));
    p.phase = Phase::kAuthResult;
    send(p, response);
  }

  void on_auth_result(Peer& p, const proto::Envelope& e) {
    if (!e.has_auth_result() || !e.auth_result().ok()) {
      return fail_agent(p, fmt::format("expected auth_result, got {}", body_name(e)));
    }
    if (!macs_equal(e.auth_result().mac(),
                    auth_mac(options_.token, p.coordinator_nonce, agent_nonce_[&p], proto::ROLE_AGENT))) {
      return fail_agent(p, "the agent could not prove it knows the shared token");
    }
    p.authenticated = true;
    p.report.agent_id = e.auth_result().agent_id();
    p.phase = Phase::kProbing;
    send_probe(p);
  }

  void on_clock_reply(Peer& p, const proto::Envelope& e, std::int64_t received) {
    if (!e.has_clock_reply()) return fail_agent(p, fmt::format("expected clock_reply, got {}", body_name(e)));
    const auto& r = e.clock_reply();
    if (r.seq() != p.seq || r.t1() != p.probe_t1) return fail_agent(p, "a clock reply that does not echo the probe");
    p.samples.push_back(ClockSample{r.t1(), r.t2(), r.t3(), received});
    const unsigned wanted = p.phase == Phase::kProbing ? options_.clock_probes : options_.reprobes;
    if (p.samples.size() < wanted) return send_probe(p);
    const ClockEstimate estimate = estimate_clock(p.samples);
    p.samples.clear();
    if (p.phase == Phase::kReprobing) {
      p.report.after = estimate;
      p.phase = Phase::kFinished;
      return finish_if_all_done();
    }
    p.report.clock = estimate;
    spdlog::info("lab: {}: authenticated ({}), clock offset {} ns, round trip {} ns", who(p), p.report.agent_id,
                 estimate.offset_ns, estimate.delay_ns);
    assign(p);
  }

  void assign(Peer& p) {
    proto::Envelope e;
    proto::AssignRanks* a = e.mutable_assign_ranks();
    a->set_run_id(outcome_.run_id);
    a->set_world_size(static_cast<uint32_t>(request_.trace_paths.size()));
    for (uint32_t r = 0; r < request_.trace_paths.size(); ++r) {
      proto::RankAssignment* ra = a->add_ranks();
      ra->set_rank(r);
      ra->set_fabric(request_.lab.fabric);
      const auto& ep = request_.lab.endpoints[r];
      ra->set_endpoint(ep.address().is_v6() ? fmt::format("[{}]:{}", ep.address().to_string(), ep.port())
                                            : fmt::format("{}:{}", ep.address().to_string(), ep.port()));
      ra->set_agent(request_.lab.agents[request_.lab.owner[r]].name);
    }
    a->set_fabric_config(request_.lab.fabric);
    a->set_wire(request_.lab.wire);
    a->set_dscp(request_.lab.dscp);
    a->set_ecn(request_.lab.ecn);
    *a->mutable_spec() = request_.spec;
    for (const uint32_t r : p.config.ranks) a->add_local_ranks(r);
    a->set_shared_storage(request_.lab.shared_storage);
    p.phase = Phase::kPreparing;
    send(p, e);
    for (const std::string& frame : shards_) send_frame(p, frame);
  }

  // fabric dpdk: the agent's port MAC, which every agent addresses its ranks' frames to; two agents on one
  // MAC would receive each other's frames (or none), so that is refused before the start.
  bool take_mac(Peer& p, const std::string& mac) {
    if (mac.size() != std::tuple_size_v<host::dpdk::MacAddr>) {
      fail_agent(p, fmt::format("fabric dpdk: its Prepared carries a MAC of {} bytes, not the 6 of its DPDK port "
                                "(an agent of another version?)", mac.size()));
      return false;
    }
    host::dpdk::MacAddr bytes{};
    std::copy(mac.begin(), mac.end(), bytes.begin());
    p.report.mac = host::dpdk::format_mac(bytes);
    for (const auto& q : peers_) {
      if (q.get() != &p && q->report.mac == p.report.mac) {
        fail_agent(p, fmt::format("its DPDK port has MAC {}, as agent {}'s has: every agent needs a port of its own",
                                  p.report.mac, q->config.name));
        return false;
      }
    }
    macs_[p.config.name] = mac;
    return true;
  }

  void maybe_start() {
    if (started_ || !outcome_.fatal.empty()) return;
    if (!std::all_of(peers_.begin(), peers_.end(), [](const auto& q) { return q->phase == Phase::kReady; })) return;
    started_ = true;
    outcome_.ready_ns = realtime_ns();
    outcome_.start_at_ns = outcome_.ready_ns + std::chrono::nanoseconds(options_.start_margin).count();
    for (auto& q : peers_) {
      proto::Envelope e;
      e.mutable_start()->set_run_id(outcome_.run_id);
      e.mutable_start()->set_at(outcome_.start_at_ns + q->report.clock.offset_ns);
      e.mutable_start()->mutable_agent_macs()->insert(macs_.begin(), macs_.end());
      q->phase = Phase::kRunning;
      send(*q, e);
    }
    outcome_.start_sent_ns = realtime_ns();
    spdlog::info("lab: run {} started: {} agents, {} ranks, start in {} ms", outcome_.run_id, peers_.size(),
                 request_.trace_paths.size(), options_.start_margin.count());
  }

  void on_result(Peer& p, const proto::Envelope& e) {
    if (e.has_rank_result()) {
      const auto& rr = e.rank_result();
      if (std::find(p.config.ranks.begin(), p.config.ranks.end(), rr.rank()) == p.config.ranks.end()) {
        return fail_agent(p, fmt::format("a result for rank {}, which is not its own", rr.rank()));
      }
      if (!rr.report_json().empty()) p.rank_reports[rr.rank()] = rr.report_json();
      for (const auto& s : rr.slices()) p.slices.push_back(s);
      return;
    }
    if (e.has_run_done()) {
      const auto& d = e.run_done();
      p.report.done = true;
      p.report.interrupted = d.interrupted();
      p.report.stall = d.stall();
      p.report.started_ns = d.started_ns();
      p.report.wall_ns = d.wall_ns();
      p.report.report_json = d.report_json();
      p.report.socket_json = d.socket_json();
      p.report.socket_text = d.socket_text();
      if (d.has_progress()) p.progress = d.progress();
      for (const uint32_t r : p.config.ranks) {
        if (!p.rank_reports.contains(r)) return fail_agent(p, fmt::format("no result for its rank {}", r));
      }
      spdlog::info("lab: {}: results in ({} ranks{})", who(p), p.rank_reports.size(),
                   d.interrupted() ? ", interrupted" : !d.stall().empty() ? ", stalled" : "");
      if (!d.stall().empty()) spdlog::warn("lab: {}: the wire stalled: {}", who(p), d.stall());
      if (aborting_ || options_.reprobes == 0) {
        p.phase = Phase::kFinished;
        return finish_if_all_done();
      }
      p.phase = Phase::kReprobing;
      return send_probe(p);
    }
    fail_agent(p, fmt::format("unexpected {} message during the run", body_name(e)));
  }

  const LabRunRequest& request_;
  const CoordinatorOptions& options_;
  asio::io_context io_;
  asio::steady_timer grace_;
  asio::signal_set signals_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::map<const Peer*, std::string> agent_nonce_;
  std::vector<std::string> shards_;
  std::map<std::string, std::string> macs_;  // fabric dpdk: agent name -> its port's MAC (6 bytes)
  LabRunOutcome outcome_;
  mutable LiveMetrics live_{kLiveMetricsLinks};
  std::unique_ptr<MetricsServer> metrics_;
  bool started_ = false;
  bool aborting_ = false;
};

}  // namespace

LabRunOutcome run_lab(const LabRunRequest& request, const CoordinatorOptions& options) {
  Coordinator coordinator(request, options);
  return coordinator.run();
}

}  // namespace fabemu::lab
