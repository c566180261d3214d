// The lab agent: serves the control plane on one TCP port, one Boost.Asio io_context, no thread per
// connection. After the handshake it answers heartbeats and clock probes and serves the run protocol
// (README "Run protocol"): one run at a time, walked on a run thread while the io_context keeps serving.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "host/lab/framing.h"
#include "host/lab/live_metrics.h"

namespace fabemu::lab {

class LabDataPort;

struct AgentOptions {
  boost::asio::ip::tcp::endpoint listen;                 // port 0 = an ephemeral port (see local_endpoint)
  std::string token;                                     // the shared secret (read_token_file)
  std::chrono::milliseconds heartbeat{1000};             // our heartbeat period once a peer is authenticated
  std::chrono::milliseconds idle_timeout{10000};         // close a connection silent for this long
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;   // limit after authentication
  std::size_t pre_auth_max_frame_bytes = kPreAuthMaxFrameBytes;  // limit before it
  std::string agent_id;                                  // reported in AuthResult; default: host name
  std::string work_dir;                                  // runs' temporary folders go here; default: TMPDIR
  LiveMetrics* live = nullptr;                           // the run thread keeps it current (metrics endpoint)
  // The host's DPDK port (`--dpdk-device`, opened before the agent and outliving it): lab runs with
  // `fabric: dpdk` put their datagrams on it. Without one such runs are refused at AssignRanks.
  LabDataPort* data_port = nullptr;
  // Connection caps (host/lab/README.md, "Connection limits"); 0 derives them from RLIMIT_NOFILE:
  // max_connections = min(256, (soft limit - 32) / 2), max_unauthenticated = max_connections / 4 (at least 1).
  // At the unauthenticated cap a new connection closes the oldest unauthenticated one; at the total cap
  // with every connection authenticated, the new one is closed.
  std::size_t max_connections = 0;
  std::size_t max_unauthenticated = 0;
  // A failed authentication is answered after this delay, doubled per failure of the same peer address
  // (at most 32x; forgotten after 60 s without one, or on a success from that address).
  std::chrono::milliseconds auth_failure_delay{100};
};

class Agent {
 public:
  // Binds and listens at once (throws boost::system::system_error when the address is unusable);
  // accepts once start() is called and the io_context runs.
  Agent(boost::asio::io_context& io, AgentOptions options);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  void start();
  // Stops accepting and closes every connection; io_context::run returns once their handlers drain.
  // Call from the io_context's thread (or post it there).
  void stop();

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Connections currently open (for tests and metrics).
  std::size_t connection_count() const;
  // The caps in force (AgentOptions, resolved).
  std::size_t max_connections() const;
  std::size_t max_unauthenticated() const;
  // A run is assigned (preparing, running, or sending its results).
  bool busy() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace fabemu::lab
