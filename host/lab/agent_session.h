// Internal to the lab agent (agent.cpp, agent_session.cpp, agent_run.cpp): the agent's shared state, one
// assigned run, and one coordinator's connection. The connection's transport and handshake are in
// agent_session.cpp, its run protocol (AssignRanks, TraceShard, Start, the results) in agent_run.cpp.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "host/lab/accept_guard.h"
#include "host/lab/agent.h"
#include "host/lab/auth.h"
#include "host/lab/datagram_transport.h"
#include "host/lab/framing.h"
#include "host/lab/metrics.h"
#include "host/lab/replay.h"

namespace fabemu::lab {

class AgentSession;

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
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;  // while the thread runs

  ~AgentRun();  // stops and joins the thread (detaches it when it is the caller), removes the folder
  void remove_dir();
};

struct Agent::State {
  State(boost::asio::io_context& io_context, AgentOptions agent_options)
      : io(io_context),
        options(std::move(agent_options)),
        accept(std::make_shared<AcceptLoop>(boost::asio::ip::tcp::acceptor(io_context, options.listen), "lab agent")),
        auth_failures(options.auth_failure_delay) {
    own_live.link_count.store(0);  // room for any topology; none used yet
  }
  boost::asio::io_context& io;
  AgentOptions options;
  std::shared_ptr<AcceptLoop> accept;  // the listener (accept_guard.h)
  std::set<std::shared_ptr<AgentSession>> sessions;
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
  boost::asio::thread_pool hasher{1};
};

// "address:port" of the socket's peer, or "unknown peer".
std::string endpoint_text(const boost::asio::ip::tcp::socket& socket);

// One connection: reads frames one at a time, writes from a queue, two timers (idle, heartbeat).
class AgentSession : public std::enable_shared_from_this<AgentSession> {
 public:
  AgentSession(std::shared_ptr<Agent::State> state, boost::asio::ip::tcp::socket socket);

  void start();
  // Closes at once (no Error to the peer); safe to call twice.
  void close_now();

  bool authenticated() const { return phase_ == Phase::kReady; }
  std::uint64_t serial() const { return serial_; }
  const std::string& peer() const { return peer_; }

  // The connection is gone: the run stops; its folder goes now, or when its thread ends.
  void abandon_run(const char* why);
  // Tells the peer why, logs it with the peer's address, and closes once the Error is written.
  void fail(proto::ErrorCode code, const std::string& text);

  // Run completions, posted to the io thread by the run thread (agent_run.cpp).
  static std::shared_ptr<AgentSession> owner(const std::shared_ptr<AgentRun>& run,
                                             const std::weak_ptr<AgentSession>& weak);
  static void send_results(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<AgentSession>& weak,
                           ReplayOutput& output);
  static void send_error(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<AgentSession>& weak,
                         const std::string& error);
  // The run thread is over: join it, forget the run, remove its folder.
  static void on_run_finished(const std::shared_ptr<AgentRun>& run, const std::weak_ptr<Agent::State>& state);

 private:
  // The connection: frames in and out, the timers, the handshake (agent_session.cpp).
  std::size_t frame_limit() const;
  void read_header();
  void on_header(boost::system::error_code ec, std::size_t n);
  void on_body(boost::system::error_code ec, std::size_t n, std::int64_t received_ns);
  void on_read_error(boost::system::error_code ec, std::size_t got, std::size_t wanted, const char* what);
  void drain();
  void on_frame(const proto::Envelope& envelope, std::int64_t received_ns);
  void on_hello(const proto::Envelope& envelope);
  void on_auth_response(const proto::Envelope& envelope);
  void reject_authentication();
  void on_ready(const proto::Envelope& envelope, std::int64_t received_ns);
  void send(const proto::Envelope& envelope);
  void write_next();
  void arm_idle();
  void arm_heartbeat();

  // The run protocol (agent_run.cpp).
  void on_assign(const proto::AssignRanks& assign);
  void on_shard(const proto::TraceShard& shard);
  // One more shard checked (`bytes` of trace); after the last, the configuration is loaded and Prepared sent.
  void shard_ready(uint64_t bytes);
  void on_start(const proto::Start& start);

  enum class Phase { kHello, kAuthResponse, kReady };

  std::shared_ptr<Agent::State> state_;
  boost::asio::ip::tcp::socket socket_;
  std::string peer_;
  std::string address_;  // the peer's address without its port (AuthFailureDelay's key)
  std::uint64_t serial_;
  boost::asio::steady_timer idle_timer_;
  boost::asio::steady_timer heartbeat_timer_;
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

}  // namespace fabemu::lab
