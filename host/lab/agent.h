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
  // A run is assigned (preparing, running, or sending its results).
  bool busy() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace fabemu::lab
