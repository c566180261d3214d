#include "host/lab/agent.h"

#include <fmt/core.h>
#include <fmt/ostream.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/host_name.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <atomic>
#include <cctype>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <unistd.h>

#include "host/lab/accept_guard.h"
#include "host/lab/auth.h"
#include "host/lab/clock.h"
#include "host/lab/datagram_transport.h"
#include "host/lab/digest.h"
#include "host/lab/error.h"
#include "host/lab/metrics.h"
#include "host/lab/replay.h"

namespace fabemu::lab {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// How long a failing connection may take to read our Error before we close it.
constexpr std::chrono::milliseconds kLinger{1000};

std::string endpoint_text(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return fmt::format("{}:{}", remote.address().to_string(), remote.port());
}

std::string address_text(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  return ec ? std::string("unknown peer") : remote.address().to_string();
}

class Session;

// One assigned run: its folder (configs and shards, removed at the end), the run thread and its stop flag.
struct AgentRun {
  std::string run_id;
  proto::AssignRanks assign;
  std::filesystem::path dir;
  std::vector<std::string> trace_paths;  // per rank; "" until its shard came
  std::vector<std::string> trace_names;  // per rank: the user's file (TraceShard.name), for messages
  std::size_t shards = 0;
  std::uint64_t trace_bytes = 0;
  std::map<std::string, std::string> config_paths;
  bool prepared = false;
  bool started = false;
  std::unique_ptr<DatagramTransport> bound;  // fabric socket: the local ranks' sockets, bound when prepared
  std::atomic<bool> stop{false};
  std::thread thread;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;  // while the thread runs

  ~AgentRun() {
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
  void remove_dir() {
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
};

std::string safe_name(std::string_view name) {
  std::string out;
  for (const char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return out.empty() ? std::string("file") : out;
}

}  // namespace

struct Agent::State {
  State(asio::io_context& io_context, AgentOptions agent_options)
      : io(io_context),
        options(std::move(agent_options)),
        accept(std::make_shared<AcceptLoop>(tcp::acceptor(io_context, options.listen), "lab agent")),
        auth_failures(options.auth_failure_delay) {
    own_live.link_count.store(0);  // room for any topology; none used yet
  }
  asio::io_context& io;
  AgentOptions options;
  std::shared_ptr<AcceptLoop> accept;  // the listener (accept_guard.h)
  std::set<std::shared_ptr<Session>> sessions;
  std::uint64_t accepted = 0;      // connections so far: each session's serial number
  RateLimitedLog evict_log;        // connections closed at the unauthenticated cap
  RateLimitedLog refuse_log;       // connections refused at the total cap
  AuthFailureDelay auth_failures;  // per peer address
  LiveMetrics own_live{kLiveMetricsLinks};  // the run's counters when the caller gave none (options.live)
  LiveMetrics& live() { return options.live != nullptr ? *options.live : own_live; }
  std::shared_ptr<AgentRun> run;  // at most one at a time
  bool stopped = false;
  // Checks trace files on shared storage (SHA-256 of files of any size) off the io thread, so that
  // heartbeats and clock probes are still answered meanwhile. Last: joined before the rest goes.
  asio::thread_pool hasher{1};
};

namespace {

// One connection: reads frames one at a time, writes from a queue, two timers (idle, heartbeat).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<Agent::State> state, tcp::socket socket)
      : state_(std::move(state)),
        socket_(std::move(socket)),
        peer_(endpoint_text(socket_)),
        address_(address_text(socket_)),
        serial_(++state_->accepted),
        idle_timer_(state_->io),
        heartbeat_timer_(state_->io) {}

  void start() {
    spdlog::debug("lab agent: {}: connected", peer_);
    arm_idle();
    read_header();
  }

  // Closes at once (no Error to the peer); safe to call twice.
  void close_now() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    idle_timer_.cancel();
    heartbeat_timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    abandon_run("the coordinator's connection closed");
    state_->sessions.erase(shared_from_this());
  }

  bool authenticated() const { return phase_ == Phase::kReady; }
  std::uint64_t serial() const { return serial_; }
  const std::string& peer() const { return peer_; }

  // The connection is gone: the run stops; its folder goes now, or when its thread ends.
  void abandon_run(const char* why) {
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

  // Tells the peer why, logs it with the peer's address, and closes once the Error is written.
  void fail(proto::ErrorCode code, const std::string& text) {
    if (closing_ || closed_) return;
    spdlog::warn("lab agent: {}: {}; closing the connection", peer_, text);
    proto::Envelope envelope;
    envelope.mutable_error()->set_code(code);
    envelope.mutable_error()->set_text(text);
    send(envelope);
    closing_ = true;
    heartbeat_timer_.cancel();
    idle_timer_.expires_after(kLinger);  // the linger deadline; its handler closes
    idle_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->close_now();
    });
  }

 private:
  std::size_t frame_limit() const {
    return phase_ == Phase::kReady ? state_->options.max_frame_bytes : state_->options.pre_auth_max_frame_bytes;
  }

  void read_header() {
    reading_ = true;
    asio::async_read(socket_, asio::buffer(header_),
                     [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                       self->reading_ = false;
                       self->on_header(ec, n);
                     });
  }

  void on_header(boost::system::error_code ec, std::size_t n) {
    if (closed_) return;
    if (ec) return on_read_error(ec, n, kHeaderBytes, "a frame header");
    if (closing_) return drain();
    const std::uint32_t length = decode_header(header_);
    if (length > frame_limit()) {
      return fail(proto::ERROR_FRAME_TOO_LARGE,
                  fmt::format("frame of {} bytes exceeds the {} limit of {} bytes", length,
                              phase_ == Phase::kReady ? "frame" : "pre-authentication", frame_limit()));
    }
    body_.resize(length);
    reading_ = true;
    asio::async_read(socket_, asio::buffer(body_),
                     [self = shared_from_this()](boost::system::error_code read_ec, std::size_t got) {
                       self->reading_ = false;
                       self->on_body(read_ec, got, realtime_ns());
                     });
  }

  void on_body(boost::system::error_code ec, std::size_t n, std::int64_t received_ns) {
    if (closed_) return;
    if (ec) return on_read_error(ec, n, body_.size(), "a frame body");
    if (closing_) return drain();
    proto::Envelope envelope;
    if (!envelope.ParseFromArray(body_.data(), static_cast<int>(body_.size()))) {
      return fail(proto::ERROR_MALFORMED, fmt::format("a frame of {} bytes is not a valid message", body_.size()));
    }
    arm_idle();
    on_frame(envelope, received_ns);
    if (!closing_ && !closed_ && !delaying_) read_header();
  }

  void on_read_error(boost::system::error_code ec, std::size_t got, std::size_t wanted, const char* what) {
    if (closing_ || ec == asio::error::operation_aborted) {
      close_now();
    } else if (ec == asio::error::eof && got == 0 && wanted == kHeaderBytes) {
      spdlog::info("lab agent: {}: disconnected", peer_);
      close_now();
    } else if (ec == asio::error::eof) {
      spdlog::warn("lab agent: {}: truncated frame: the peer closed after {} of {} bytes of {}; connection closed",
                   peer_, got, wanted, what);
      close_now();
    } else {
      spdlog::warn("lab agent: {}: read error: {}; connection closed", peer_, ec.message());
      close_now();
    }
  }

  // After an Error: discard what the peer still sends until it closes (or the linger deadline), so our
  // close does not reset the connection before the peer reads the Error.
  void drain() {
    if (reading_ || closed_) return;
    reading_ = true;
    socket_.async_read_some(asio::buffer(drain_buffer_),
                            [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                              self->reading_ = false;
                              if (ec || self->closed_) return self->close_now();
                              self->drain();
                            });
  }

  void on_frame(const proto::Envelope& envelope, std::int64_t received_ns) {
    if (envelope.has_error()) {
      spdlog::warn("lab agent: {}: peer reports error {} ({}); closing", peer_,
                   proto::ErrorCode_Name(envelope.error().code()), envelope.error().text());
      return close_now();
    }
    if (envelope.body_case() == proto::Envelope::BODY_NOT_SET) {
      return fail(proto::ERROR_MALFORMED, "empty or unknown message");
    }
    switch (phase_) {
      case Phase::kHello: return on_hello(envelope);
      case Phase::kAuthResponse: return on_auth_response(envelope);
      case Phase::kReady: return on_ready(envelope, received_ns);
    }
  }

  void on_hello(const proto::Envelope& envelope) {
    if (!envelope.has_hello()) {
      return fail(proto::ERROR_PROTOCOL, fmt::format("expected hello, got {}", body_name(envelope)));
    }
    const proto::Hello& hello = envelope.hello();
    if (hello.version() != proto::PROTOCOL_VERSION_CURRENT) {
      return fail(proto::ERROR_VERSION_MISMATCH,
                  fmt::format("protocol version mismatch: the peer speaks version {}, this agent version {}",
                              hello.version(), static_cast<int>(proto::PROTOCOL_VERSION_CURRENT)));
    }
    if (hello.role() != proto::ROLE_COORDINATOR) {
      return fail(proto::ERROR_PROTOCOL, fmt::format("hello from role {}, expected a coordinator",
                                                     proto::Role_Name(hello.role())));
    }
    if (hello.nonce().size() != kNonceBytes) {
      return fail(proto::ERROR_MALFORMED,
                  fmt::format("hello nonce of {} bytes, expected {}", hello.nonce().size(), kNonceBytes));
    }
    coordinator_nonce_ = hello.nonce();
    agent_nonce_ = random_nonce();
    proto::Envelope reply;
    auto* challenge = reply.mutable_challenge();
    challenge->set_version(proto::PROTOCOL_VERSION_CURRENT);
    challenge->set_role(proto::ROLE_AGENT);
    challenge->set_nonce(agent_nonce_);
    send(reply);
    phase_ = Phase::kAuthResponse;
  }

  void on_auth_response(const proto::Envelope& envelope) {
    if (!envelope.has_auth_response()) {
      return fail(proto::ERROR_PROTOCOL, fmt::format("expected auth_response, got {}", body_name(envelope)));
    }
    const std::string expected =
        auth_mac(state_->options.token, coordinator_nonce_, agent_nonce_, proto::ROLE_COORDINATOR);
    if (!macs_equal(envelope.auth_response().mac(), expected)) return reject_authentication();
    state_->auth_failures.succeed(address_);
    proto::Envelope reply;
    auto* result = reply.mutable_auth_result();
    result->set_ok(true);
    result->set_mac(auth_mac(state_->options.token, coordinator_nonce_, agent_nonce_, proto::ROLE_AGENT));
    result->set_agent_id(state_->options.agent_id);
    send(reply);
    phase_ = Phase::kReady;
    spdlog::info("lab agent: {}: coordinator authenticated", peer_);
    arm_heartbeat();
  }

  // The Error goes out after a delay that grows with this address's failures (AuthFailureDelay), so a
  // peer guessing the token gets few answers; meanwhile nothing more of it is read.
  void reject_authentication() {
    const auto delay = state_->auth_failures.fail(address_);
    delaying_ = true;
    heartbeat_timer_.expires_after(delay);
    heartbeat_timer_.async_wait([self = shared_from_this(), delay](boost::system::error_code ec) {
      if (ec || self->closed_ || self->closing_) return;
      self->fail(proto::ERROR_AUTH_FAILED,
                 fmt::format("authentication failed: the peer does not know the shared token (answered after {} ms)",
                             delay.count()));
    });
  }

  void on_ready(const proto::Envelope& envelope, std::int64_t received_ns) {
    proto::Envelope reply;
    switch (envelope.body_case()) {
      case proto::Envelope::kHeartbeat:
        if (envelope.heartbeat().reply()) return;  // the echo of ours: it reset the idle timer, nothing else
        reply.mutable_heartbeat()->set_seq(envelope.heartbeat().seq());
        reply.mutable_heartbeat()->set_reply(true);
        return send(reply);
      case proto::Envelope::kClockProbe: {
        auto* clock = reply.mutable_clock_reply();
        clock->set_seq(envelope.clock_probe().seq());
        clock->set_t1(envelope.clock_probe().t1());
        clock->set_t2(received_ns);
        clock->set_t3(realtime_ns());
        return send(reply);
      }
      case proto::Envelope::kStop:
        if (run_ && run_->started) {
          // Stop the walk; its (partial) results are sent, then the coordinator closes.
          spdlog::info("lab agent: {}: stop ({}): stopping run {}", peer_, envelope.stop().reason(), run_->run_id);
          run_->stop = true;
          return;
        }
        spdlog::info("lab agent: {}: stop ({}); closing", peer_, envelope.stop().reason());
        return close_now();
      case proto::Envelope::kAssignRanks: return on_assign(envelope.assign_ranks());
      case proto::Envelope::kTraceShard: return on_shard(envelope.trace_shard());
      case proto::Envelope::kStart: return on_start(envelope.start());
      default:
        return fail(proto::ERROR_PROTOCOL,
                    fmt::format("{} is not served by this agent (protocol version {})", body_name(envelope),
                                static_cast<int>(proto::PROTOCOL_VERSION_CURRENT)));
    }
  }

  void on_assign(const proto::AssignRanks& assign) {
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

  void on_shard(const proto::TraceShard& shard) {
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
      std::weak_ptr<Session> weak = shared_from_this();
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

  // One more shard checked (`bytes` of trace); after the last, the configuration is loaded and Prepared sent.
  void shard_ready(uint64_t bytes) {
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

  void on_start(const proto::Start& start) {
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
    std::weak_ptr<Session> weak = shared_from_this();
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

 public:
  static std::shared_ptr<Session> owner(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<Session>& weak) {
    auto session = weak.lock();
    if (session && !session->closed_ && !session->closing_ && session->run_ == run) return session;
    return nullptr;
  }

  static void send_results(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<Session>& weak,
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

  static void send_error(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<Session>& weak,
                         const std::string& error) {
    const auto session = owner(run, weak);
    if (!session) {
      spdlog::warn("lab agent: run {}: failed: {}; its coordinator is gone, results dropped", run->run_id, error);
      return;
    }
    session->fail(proto::ERROR_RUN_FAILED, fmt::format("run {}: {}", run->run_id, error));
  }

  // The run thread is over: join it, forget the run, remove its folder.
  static void on_run_finished(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<Agent::State>& state) {
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

 private:
  void send(const proto::Envelope& envelope) {
    if (closed_) return;
    try {
      out_.push_back(encode_frame(envelope, state_->options.max_frame_bytes));
    } catch (const LabError& e) {
      spdlog::error("lab agent: {}: {}", peer_, e.what());
      return close_now();
    }
    out_bytes_ += out_.back().size();
    // A peer that sends but never reads would grow the queue without bound.
    if (out_bytes_ > 2 * state_->options.max_frame_bytes + kPreAuthMaxFrameBytes) {
      spdlog::warn("lab agent: {}: the peer does not read ({} bytes queued); connection closed", peer_, out_bytes_);
      return close_now();
    }
    if (out_.size() == 1) write_next();
  }

  void write_next() {
    asio::async_write(socket_, asio::buffer(out_.front()),
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                        if (self->closed_) return;
                        if (ec) {
                          spdlog::warn("lab agent: {}: write error: {}; connection closed", self->peer_,
                                       ec.message());
                          return self->close_now();
                        }
                        self->out_bytes_ -= self->out_.front().size();
                        self->out_.pop_front();
                        if (!self->out_.empty()) return self->write_next();
                        if (self->closing_) {
                          boost::system::error_code ignored;
                          self->socket_.shutdown(tcp::socket::shutdown_send, ignored);
                          self->drain();
                        }
                      });
  }

  void arm_idle() {
    idle_timer_.expires_after(state_->options.idle_timeout);
    idle_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->closed_ || self->closing_) return;
      self->fail(proto::ERROR_IDLE_TIMEOUT,
                 fmt::format("idle timeout: nothing received for {} ms", self->state_->options.idle_timeout.count()));
    });
  }

  void arm_heartbeat() {
    heartbeat_timer_.expires_after(state_->options.heartbeat);
    heartbeat_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->closed_ || self->closing_) return;
      proto::Envelope beat;
      beat.mutable_heartbeat()->set_seq(++self->heartbeat_seq_);
      // During a run the coordinator's metrics follow ours (README "Metrics").
      if (self->run_ && self->run_->started) {
        *beat.mutable_heartbeat()->mutable_progress() = progress_of(self->state_->live());
      }
      self->send(beat);
      self->arm_heartbeat();
    });
  }

  enum class Phase { kHello, kAuthResponse, kReady };

  std::shared_ptr<Agent::State> state_;
  tcp::socket socket_;
  std::string peer_;
  std::string address_;  // the peer's address without its port (AuthFailureDelay's key)
  std::uint64_t serial_;
  asio::steady_timer idle_timer_;
  asio::steady_timer heartbeat_timer_;
  std::array<std::uint8_t, kHeaderBytes> header_{};
  std::string body_;
  std::array<char, 4096> drain_buffer_{};
  std::deque<std::string> out_;
  std::size_t out_bytes_ = 0;
  Phase phase_ = Phase::kHello;
  bool reading_ = false;
  bool closing_ = false;  // an Error is queued: no more frames are served
  bool delaying_ = false;  // a failed authentication waits for its answer: nothing more is read
  bool closed_ = false;
  std::string coordinator_nonce_;
  std::string agent_nonce_;
  std::uint64_t heartbeat_seq_ = 0;
  std::shared_ptr<AgentRun> run_;  // the run this coordinator assigned
};

// Makes room for a new connection under the caps (AgentOptions): the oldest unauthenticated connection
// goes when the unauthenticated cap, or the total one, is reached; with every slot authenticated the new
// connection is refused. False: refused.
bool make_room(Agent::State& state, const std::string& peer) {
  const AgentOptions& o = state.options;
  std::size_t unauthenticated = 0;
  std::shared_ptr<Session> oldest;
  for (const auto& s : state.sessions) {
    if (s->authenticated()) continue;
    ++unauthenticated;
    if (!oldest || s->serial() < oldest->serial()) oldest = s;
  }
  if (unauthenticated < o.max_unauthenticated && state.sessions.size() < o.max_connections) return true;
  if (!oldest) {
    state.refuse_log.warn(
        fmt::format("lab agent: {} connections open (the limit): refusing {}", o.max_connections, peer));
    return false;
  }
  state.evict_log.warn(fmt::format("lab agent: {} unauthenticated and {} connections open (limits {} and {}): "
                                   "closing the oldest unauthenticated one, {}, for {}", unauthenticated,
                                   state.sessions.size(), o.max_unauthenticated, o.max_connections, oldest->peer(),
                                   peer));
  oldest->close_now();
  return true;
}

void admit(const std::shared_ptr<Agent::State>& state, tcp::socket socket) {
  if (!make_room(*state, endpoint_text(socket))) {
    boost::system::error_code ignored;
    socket.close(ignored);
    return;
  }
  auto session = std::make_shared<Session>(state, std::move(socket));
  state->sessions.insert(session);
  session->start();
}

}  // namespace

Agent::Agent(asio::io_context& io, AgentOptions options) {
  if (options.token.empty()) throw LabError(proto::ERROR_AUTH_FAILED, "the agent needs a non-empty token");
  if (options.agent_id.empty()) options.agent_id = asio::ip::host_name();
  if (options.max_connections == 0) options.max_connections = fd_connection_budget(256, 2);
  if (options.max_unauthenticated == 0) {
    options.max_unauthenticated = std::max<std::size_t>(1, options.max_connections / 4);
  }
  options.max_unauthenticated = std::min(options.max_unauthenticated, options.max_connections);
  state_ = std::make_shared<State>(io, std::move(options));
  std::weak_ptr<State> weak = state_;
  state_->accept->stopped = [weak] {
    const auto state = weak.lock();
    return !state || state->stopped;
  };
  state_->accept->on_socket = [weak](tcp::socket socket) {
    if (const auto state = weak.lock()) admit(state, std::move(socket));
  };
}

// Destroy the agent on its io_context's thread or after that thread stopped: closing the sessions here
// breaks their references to the shared state, so nothing leaks.
Agent::~Agent() {
  state_->stopped = true;
  state_->accept->close();
  const auto sessions = state_->sessions;
  for (const auto& session : sessions) session->close_now();
  if (auto run = state_->run) {
    // The run thread ends at its next poll of the flag; its completion (if ever run) finds it joined.
    run->stop = true;
    if (run->thread.joinable()) run->thread.join();
    run->remove_dir();
    state_->run.reset();
  }
}

void Agent::start() { accept_loop(state_->accept); }

void Agent::stop() {
  if (state_->stopped && !state_->accept->acceptor.is_open()) return;
  state_->stopped = true;
  state_->accept->close();
  if (state_->run && !state_->run->started) state_->run->stop = true;  // ends a hash in progress
  // Each peer is told why (it may be a coordinator mid-run); a session closes once its Error is read or
  // after the linger deadline, so io_context::run returns within about a second.
  const auto sessions = state_->sessions;  // fail/close_now may erase from the set
  for (const auto& session : sessions) session->fail(proto::ERROR_SHUTTING_DOWN, "the agent is shutting down");
  spdlog::info("lab agent: stopped accepting; closing {} connection(s)", sessions.size());
}

tcp::endpoint Agent::local_endpoint() const { return state_->accept->acceptor.local_endpoint(); }

std::size_t Agent::connection_count() const { return state_->sessions.size(); }

std::size_t Agent::max_connections() const { return state_->options.max_connections; }

std::size_t Agent::max_unauthenticated() const { return state_->options.max_unauthenticated; }

bool Agent::busy() const { return state_->run != nullptr; }

}  // namespace fabemu::lab
