// LabClient: the coordinator's side of one agent connection: connect, authenticate (mutually), estimate the
// agent's clock offset, heartbeat, close. Synchronous, every operation bounded by a timeout; it runs its own
// io_context, so the coordinator may drive many clients from one thread, one operation at a time.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "host/lab/clock.h"
#include "host/lab/framing.h"

namespace fabemu::lab {

struct ClientOptions {
  std::chrono::milliseconds timeout{5000};              // bound of every connect / send / receive
  std::size_t max_frame_bytes = kDefaultMaxFrameBytes;  // largest frame accepted from the agent
  std::uint32_t protocol_version = proto::PROTOCOL_VERSION_CURRENT;  // other values only to test agents
};

class LabClient {
 public:
  explicit LabClient(ClientOptions options = {});
  ~LabClient();
  LabClient(const LabClient&) = delete;
  LabClient& operator=(const LabClient&) = delete;

  // All of these throw LabError: the agent's Error code when it sent one, ERROR_IDLE_TIMEOUT on a timeout,
  // ERROR_UNSPECIFIED when the connection failed or was closed.
  void connect(const boost::asio::ip::tcp::endpoint& agent);
  // Hello -> Challenge -> AuthResponse -> AuthResult; checks the agent's proof too. Returns the agent's id.
  std::string authenticate(std::string_view token);
  // `count` ClockProbe round trips; the offset of the least-delayed one.
  ClockEstimate probe_clock(unsigned count);
  // One Heartbeat round trip.
  void heartbeat();
  // Sends `Stop` when authenticated, then closes. Never throws.
  void close();

  void send(const proto::Envelope& envelope);
  // The next frame, answering the agent's heartbeats on the way.
  proto::Envelope receive();
  // Raw bytes on the connection, for tests of the agent's input checks.
  void send_bytes(std::string_view bytes);
  // Half-closes our sending side (the agent sees end of stream).
  void shutdown_send();

  bool is_open() const;
  // Heartbeats of the agent answered so far (inside receive).
  std::uint64_t heartbeats_answered() const { return heartbeats_answered_; }
  const std::string& peer() const { return peer_; }

 private:
  void run(const char* what);
  [[noreturn]] void fail_io(boost::system::error_code ec, const char* what);

  ClientOptions options_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  std::string peer_;
  bool authenticated_ = false;
  std::uint64_t seq_ = 0;
  std::uint64_t heartbeats_answered_ = 0;
};

}  // namespace fabemu::lab
