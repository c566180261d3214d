// The lab agent's run protocol (host/lab/README.md, "Run protocol"): AssignRanks makes the run's folder and
// configuration files, TraceShards are checked and stored, Prepared is sent once all are, Start walks the
// ranks on a run thread, and its results (or its error) go back to the coordinator on the io thread.
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cctype>
#include <fstream>

#include <unistd.h>

#include "host/lab/agent_session.h"
#include "host/lab/clock.h"
#include "host/lab/digest.h"
#include "host/lab/error.h"

namespace fabemu::lab {

namespace asio = boost::asio;

namespace {

std::string safe_name(std::string_view name) {
  std::string out;
  for (const char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return out.empty() ? std::string("file") : out;
}

}  // namespace

AgentRun::~AgentRun() {
  stop = true;
  if (thread.joinable()) {
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();
    } else {
      thread.join();
    }
  }
  remove_dir();
}

void AgentRun::remove_dir() {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) {
    spdlog::warn("lab agent: run {}: cannot remove {}: {}", run_id, dir.string(), ec.message());
  } else {
    spdlog::info("lab agent: run {}: removed {}", run_id, dir.string());
  }
  dir.clear();
}

void AgentSession::abandon_run(const char* why) {
  if (!run_) return;
  auto run = std::move(run_);
  run_.reset();
  if (run->started) {
    if (!run->stop.exchange(true)) spdlog::warn("lab agent: run {}: {}: stopping the run", run->run_id, why);
    return;  // on_run_finished cleans up
  }
  run->stop = true;  // a shared-storage file still being hashed: give up
  spdlog::info("lab agent: run {}: {} before the start", run->run_id, why);
  if (state_->run == run) state_->run.reset();
}

void AgentSession::on_assign(const proto::AssignRanks& assign) {
  if (run_ || state_->run) {
    return fail(proto::ERROR_BUSY, fmt::format("busy: this agent already has run {}",
                                               (run_ ? run_ : state_->run)->run_id));
  }
  const std::uint32_t world = assign.world_size();
  if (assign.run_id().empty() || world == 0 || assign.ranks_size() != static_cast<int>(world) ||
      assign.local_ranks_size() == 0) {
    return fail(proto::ERROR_MALFORMED, fmt::format("assign_ranks: run id \"{}\", {} ranks listed for a world of {}, "
                                                    "{} local", assign.run_id(), assign.ranks_size(), world,
                                                    assign.local_ranks_size()));
  }
  for (const std::uint32_t r : assign.local_ranks()) {
    if (r >= world) return fail(proto::ERROR_MALFORMED, fmt::format("assign_ranks: local rank {} >= {}", r, world));
  }
  if (assign.fabric_config() != "model" && assign.fabric_config() != "socket" && assign.fabric_config() != "dpdk") {
    return fail(proto::ERROR_RUN_FAILED, fmt::format("assign_ranks: unknown lab fabric \"{}\"", assign.fabric_config()));
  }
  if (assign.fabric_config() == "dpdk" && state_->options.data_port == nullptr) {
    // Refused before any shard is shipped: the coordinator names this agent and the run does not start.
    const std::uint32_t first = assign.local_ranks(0);
    const auto named = std::find_if(assign.ranks().begin(), assign.ranks().end(),
                                    [first](const proto::RankAssignment& ra) { return ra.rank() == first; });
    return fail(proto::ERROR_RUN_FAILED,
                fmt::format("agent {} ({}) has no DPDK port for lab fabric dpdk: start it with --dpdk-device DEVARGS",
                            named == assign.ranks().end() ? std::string("?") : named->agent(),
                            state_->options.agent_id));
  }
  auto run = std::make_shared<AgentRun>();
  run->run_id = assign.run_id();
  run->assign = assign;
  run->trace_paths.assign(world, "");
  run->trace_names.assign(world, "");
  const std::filesystem::path base =
      state_->options.work_dir.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(state_->options.work_dir);
  run->dir = base / fmt::format("fabemu-run-{}-{}", safe_name(run->run_id), ::getpid());
  std::error_code ec;
  std::filesystem::create_directories(run->dir, ec);
  if (ec) {
    const std::string where = run->dir.string();
    run->dir.clear();
    return fail(proto::ERROR_RUN_FAILED, fmt::format("cannot create the run folder {}: {}", where, ec.message()));
  }
  for (const proto::ConfigFile& f : assign.spec().files()) {
    const auto path = run->dir / fmt::format("{}-{}", safe_name(f.role()), safe_name(std::filesystem::path(f.name()).filename().string()));
    std::ofstream out(path, std::ios::binary);
    out << f.content();
    out.close();
    if (!out) return fail(proto::ERROR_RUN_FAILED, fmt::format("cannot write {}", path.string()));
    run->config_paths[f.role()] = path.string();
  }
  run_ = run;
  state_->run = run;
  spdlog::info("lab agent: {}: run {}: {} of {} ranks here, fabric {}, folder {}", peer_, run->run_id,
               assign.local_ranks_size(), world, assign.fabric_config(), run->dir.string());
}

void AgentSession::on_shard(const proto::TraceShard& shard) {
  if (!run_ || run_->prepared) return fail(proto::ERROR_PROTOCOL, "trace_shard outside of a run's preparation");
  AgentRun& run = *run_;
  if (shard.rank() >= run.trace_paths.size() || !run.trace_paths[shard.rank()].empty()) {
    return fail(proto::ERROR_MALFORMED, fmt::format("trace_shard for rank {}: not a rank of run {} or sent twice",
                                                    shard.rank(), run.run_id));
  }
  const std::string what = fmt::format("rank {} ({})", shard.rank(), shard.name());
  run.trace_names[shard.rank()] = shard.name();
  if (!shard.path().empty()) {
    // A file on shared storage may be large: hashed on the hasher thread, the result back on the io
    // thread. The rank's path is taken now, so that a second shard for it is refused meanwhile.
    run.trace_paths[shard.rank()] = shard.path();
    std::weak_ptr<AgentSession> weak = shared_from_this();
    asio::post(state_->hasher, [weak, run = run_, path = shard.path(), want = shard.sha256(), what,
                                &io = state_->io] {
      std::string digest, error;
      uint64_t size = 0;
      try {
        digest = sha256_file(path, &run->stop, &size);  // stop: the run was abandoned, or the agent stops
      } catch (const std::exception& e) {
        error = e.what();
      }
      asio::post(io, [weak, run, path, want, what, digest, size, error] {
        const auto self = weak.lock();
        if (!self || self->closed_ || self->run_ != run) {  // the run is gone meanwhile
          if (!error.empty()) spdlog::info("lab agent: run {}: {}: {}", run->run_id, what, error);
          return;
        }
        if (!error.empty()) return self->fail(proto::ERROR_RUN_FAILED, fmt::format("{}: {}", what, error));
        if (digest != want) {
          return self->fail(proto::ERROR_RUN_FAILED,
                            fmt::format("{}: {} on this host is not the coordinator's file (sha256 {} here, {} "
                                        "there)", what, path, to_hex(digest), to_hex(want)));
        }
        self->shard_ready(size);
      });
    });
    return;
  }
  std::string path;
  try {
    const std::string digest = sha256(shard.bytes());
    if (digest != shard.sha256()) {
      return fail(proto::ERROR_RUN_FAILED, fmt::format("{}: sha256 mismatch: {} received, {} announced", what,
                                                       to_hex(digest), to_hex(shard.sha256())));
    }
    // Cached by content: ranks with identical traces share a file.
    path = (run.dir / fmt::format("{}-{}", to_hex(digest).substr(0, 16),
                                  safe_name(std::filesystem::path(shard.name()).filename().string())))
               .string();
    if (!std::filesystem::exists(path)) {
      std::ofstream out(path, std::ios::binary);
      out << shard.bytes();
      out.close();
      if (!out) return fail(proto::ERROR_RUN_FAILED, fmt::format("{}: cannot write {}", what, path));
    }
  } catch (const LabError& e) {
    return fail(proto::ERROR_RUN_FAILED, fmt::format("{}: {}", what, e.what()));
  }
  run.trace_paths[shard.rank()] = path;
  shard_ready(shard.bytes().size());
}

void AgentSession::shard_ready(uint64_t bytes) {
  AgentRun& run = *run_;
  run.trace_bytes += bytes;
  if (++run.shards < run.trace_paths.size()) return;
  try {
    (void)load_replay_config(run.assign.spec(), run.config_paths);
  } catch (const std::exception& e) {
    return fail(proto::ERROR_RUN_FAILED, fmt::format("run {}: configuration: {}", run.run_id, e.what()));
  }
  if (run.assign.fabric_config() == "socket") {
    // Bound now: an address in use fails the preparation, before any agent starts.
    try {
      run.bound = bind_udp_data_plane(run.assign);
    } catch (const std::exception& e) {
      return fail(proto::ERROR_RUN_FAILED, fmt::format("run {}: {}", run.run_id, e.what()));
    }
  }
  run.prepared = true;
  proto::Envelope reply;
  reply.mutable_prepared()->set_run_id(run.run_id);
  reply.mutable_prepared()->set_trace_bytes(run.trace_bytes);
  *reply.mutable_prepared()->mutable_progress() = progress_of(state_->live());  // the coordinator's baseline
  if (run.assign.fabric_config() == "dpdk") {
    // The coordinator hands every agent's MAC to all of them in Start: a rank's frames go to its host's port.
    const host::dpdk::MacAddr mac = state_->options.data_port->mac();
    reply.mutable_prepared()->set_mac(std::string(mac.begin(), mac.end()));
  }
  send(reply);
  spdlog::info("lab agent: {}: run {}: {} traces checked ({} bytes), ready", peer_, run.run_id, run.shards,
               run.trace_bytes);
}

void AgentSession::on_start(const proto::Start& start) {
  if (!run_ || !run_->prepared || run_->started || start.run_id() != run_->run_id) {
    return fail(proto::ERROR_PROTOCOL, fmt::format("start of run \"{}\": not a prepared run of this connection",
                                                   start.run_id()));
  }
  auto run = run_;
  run->started = true;
  run->work.emplace(state_->io.get_executor());
  const std::int64_t now = realtime_ns();
  spdlog::info("lab agent: {}: run {}: starts in {:.3f} ms", peer_, run->run_id,
               static_cast<double>(start.at() - now) / 1e6);
  std::weak_ptr<AgentSession> weak = shared_from_this();
  std::weak_ptr<Agent::State> state = state_;
  asio::io_context& io = state_->io;
  LiveMetrics* live = &state_->live();
  LabDataPort* data_port = state_->options.data_port;
  const std::int64_t at = start.at();
  std::map<std::string, std::string> macs(start.agent_macs().begin(), start.agent_macs().end());
  run->thread = std::thread([run, weak, state, &io, live, data_port, at, macs = std::move(macs)] {
    ReplayInput input;
    input.assign = &run->assign;
    input.trace_paths = run->trace_paths;
    input.trace_names = run->trace_names;
    input.config_paths = run->config_paths;
    input.start_realtime_ns = at;
    input.stop = &run->stop;
    input.live = live;
    input.data_port = data_port;
    input.agent_macs = macs;
    input.bound = &run->bound;
    // The results go out as soon as they exist; the thread may keep serving its peers (socket fabric)
    // until the coordinator's Stop.
    bool delivered = false;
    try {
      replay(input, [&](ReplayOutput&& result) {
        auto output = std::make_shared<ReplayOutput>(std::move(result));
        delivered = true;
        asio::post(io, [run, weak, output] { send_results(run, weak, *output); });
      });
    } catch (const std::exception& e) {
      if (delivered) {
        spdlog::warn("lab agent: run {}: after the results: {}", run->run_id, e.what());
      } else {
        asio::post(io, [run, weak, error = name_user_files(e.what(), run->trace_paths, run->trace_names)] {
          send_error(run, weak, error);
        });
      }
    }
    asio::post(io, [run, state] { on_run_finished(run, state); });
  });
}

std::shared_ptr<AgentSession> AgentSession::owner(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<AgentSession>& weak) {
  auto session = weak.lock();
  if (session && !session->closed_ && !session->closing_ && session->run_ == run) return session;
  return nullptr;
}

void AgentSession::send_results(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<AgentSession>& weak,
                         ReplayOutput& output) {
  const auto session = owner(run, weak);
  if (!session) {
    spdlog::warn("lab agent: run {}: ended; its coordinator is gone, results dropped", run->run_id);
    return;
  }
  for (auto& rank : output.ranks) {
    proto::Envelope e;
    *e.mutable_rank_result() = std::move(rank);
    session->send(e);
  }
  proto::Envelope done;
  *done.mutable_run_done() = std::move(output.done);
  *done.mutable_run_done()->mutable_progress() = progress_of(session->state_->live());
  session->send(done);
  spdlog::info("lab agent: {}: run {}: {}; results sent", session->peer_, run->run_id,
               done.run_done().interrupted() ? "stopped" : "finished");
}

void AgentSession::send_error(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<AgentSession>& weak,
                       const std::string& error) {
  const auto session = owner(run, weak);
  if (!session) {
    spdlog::warn("lab agent: run {}: failed: {}; its coordinator is gone, results dropped", run->run_id, error);
    return;
  }
  session->fail(proto::ERROR_RUN_FAILED, fmt::format("run {}: {}", run->run_id, error));
}

void AgentSession::on_run_finished(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<Agent::State>& state) {
  if (run->thread.joinable()) run->thread.join();
  if (const auto s = state.lock(); s) {
    if (s->run == run) s->run.reset();
    for (const auto& session : s->sessions) {
      if (session->run_ == run) session->run_.reset();
    }
  }
  run->remove_dir();
  run->work.reset();
}

}  // namespace fabemu::lab
