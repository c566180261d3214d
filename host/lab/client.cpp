#include "host/lab/client.h"

#include <fmt/core.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <vector>

#include "host/lab/auth.h"
#include "host/lab/error.h"

namespace fabemu::lab {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

LabClient::LabClient(ClientOptions options) : options_(options), socket_(io_) {}

LabClient::~LabClient() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

// Runs the started operation until it completes or the timeout passes (then the socket is closed).
void LabClient::run(const char* what) {
  io_.restart();
  io_.run_for(options_.timeout);
  if (!io_.stopped()) {
    boost::system::error_code ignored;
    socket_.close(ignored);
    io_.restart();
    io_.run();  // let the aborted handler run
    throw LabError(proto::ERROR_IDLE_TIMEOUT, fmt::format("agent {}: no {} within {} ms", peer_, what,
                                                          options_.timeout.count()));
  }
}

void LabClient::fail_io(boost::system::error_code ec, const char* what) {
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (ec == asio::error::eof) {
    throw LabError(proto::ERROR_UNSPECIFIED, fmt::format("agent {}: connection closed during {}", peer_, what));
  }
  throw LabError(proto::ERROR_UNSPECIFIED, fmt::format("agent {}: {} failed: {}", peer_, what, ec.message()));
}

void LabClient::connect(const tcp::endpoint& agent) {
  peer_ = fmt::format("{}:{}", agent.address().to_string(), agent.port());
  authenticated_ = false;
  boost::system::error_code result = asio::error::would_block;
  socket_.async_connect(agent, [&](boost::system::error_code ec) { result = ec; });
  run("connection");
  if (result) fail_io(result, "connect");
  socket_.set_option(tcp::no_delay(true));
}

void LabClient::send_bytes(std::string_view bytes) {
  boost::system::error_code result = asio::error::would_block;
  asio::async_write(socket_, asio::buffer(bytes.data(), bytes.size()),
                    [&](boost::system::error_code ec, std::size_t) { result = ec; });
  run("send");
  if (result) fail_io(result, "send");
}

void LabClient::send(const proto::Envelope& envelope) { send_bytes(encode_frame(envelope, options_.max_frame_bytes)); }

void LabClient::shutdown_send() {
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
}

proto::Envelope LabClient::receive() {
  for (;;) {
    std::array<std::uint8_t, kHeaderBytes> header{};
    boost::system::error_code result = asio::error::would_block;
    asio::async_read(socket_, asio::buffer(header), [&](boost::system::error_code ec, std::size_t) { result = ec; });
    run("message");
    if (result) fail_io(result, "receive");
    const std::uint32_t length = decode_header(header);
    if (length > options_.max_frame_bytes) {
      boost::system::error_code ignored;
      socket_.close(ignored);
      throw LabError(proto::ERROR_FRAME_TOO_LARGE, fmt::format("agent {}: frame of {} bytes exceeds the limit of {}",
                                                               peer_, length, options_.max_frame_bytes));
    }
    std::string body(length, '\0');
    result = asio::error::would_block;
    asio::async_read(socket_, asio::buffer(body), [&](boost::system::error_code ec, std::size_t) { result = ec; });
    run("message");
    if (result) fail_io(result, "receive");
    proto::Envelope envelope;
    if (!envelope.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      boost::system::error_code ignored;
      socket_.close(ignored);
      throw LabError(proto::ERROR_MALFORMED, fmt::format("agent {}: a frame of {} bytes is not a valid message",
                                                         peer_, length));
    }
    if (envelope.has_error()) {
      boost::system::error_code ignored;
      socket_.close(ignored);
      throw LabError(envelope.error().code(), fmt::format("agent {}: {} ({})", peer_, envelope.error().text(),
                                                          proto::ErrorCode_Name(envelope.error().code())));
    }
    if (envelope.has_heartbeat() && !envelope.heartbeat().reply()) {
      proto::Envelope echo;
      echo.mutable_heartbeat()->set_seq(envelope.heartbeat().seq());
      echo.mutable_heartbeat()->set_reply(true);
      send(echo);
      ++heartbeats_answered_;
      continue;
    }
    return envelope;
  }
}

std::string LabClient::authenticate(std::string_view token) {
  const std::string coordinator_nonce = random_nonce();
  proto::Envelope hello;
  hello.mutable_hello()->set_version(options_.protocol_version);
  hello.mutable_hello()->set_role(proto::ROLE_COORDINATOR);
  hello.mutable_hello()->set_nonce(coordinator_nonce);
  send(hello);

  const proto::Envelope challenge = receive();
  if (!challenge.has_challenge()) {
    close();
    throw LabError(proto::ERROR_PROTOCOL, fmt::format("agent {}: expected challenge, got {}", peer_,
                                                      body_name(challenge)));
  }
  if (challenge.challenge().version() != proto::PROTOCOL_VERSION_CURRENT) {
    close();
    throw LabError(proto::ERROR_VERSION_MISMATCH,
                   fmt::format("agent {}: protocol version mismatch: the agent speaks version {}, we speak {}",
                               peer_, challenge.challenge().version(),
                               static_cast<int>(proto::PROTOCOL_VERSION_CURRENT)));
  }
  const std::string& agent_nonce = challenge.challenge().nonce();
  if (agent_nonce.size() != kNonceBytes) {
    close();
    throw LabError(proto::ERROR_MALFORMED, fmt::format("agent {}: challenge nonce of {} bytes", peer_,
                                                       agent_nonce.size()));
  }
  proto::Envelope response;
  response.mutable_auth_response()->set_mac(auth_mac(token, coordinator_nonce, agent_nonce, proto::ROLE_COORDINATOR));
  send(response);

  const proto::Envelope result = receive();
  if (!result.has_auth_result() || !result.auth_result().ok()) {
    close();
    throw LabError(proto::ERROR_PROTOCOL, fmt::format("agent {}: expected auth_result, got {}", peer_,
                                                      body_name(result)));
  }
  if (!macs_equal(result.auth_result().mac(), auth_mac(token, coordinator_nonce, agent_nonce, proto::ROLE_AGENT))) {
    close();
    throw LabError(proto::ERROR_AUTH_FAILED,
                   fmt::format("agent {}: the agent could not prove it knows the shared token", peer_));
  }
  authenticated_ = true;
  return result.auth_result().agent_id();
}

ClockEstimate LabClient::probe_clock(unsigned count) {
  std::vector<ClockSample> samples;
  samples.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    proto::Envelope probe;
    const std::uint64_t seq = ++seq_;
    probe.mutable_clock_probe()->set_seq(seq);
    const std::int64_t t1 = realtime_ns();
    probe.mutable_clock_probe()->set_t1(t1);
    send(probe);
    for (;;) {
      const proto::Envelope reply = receive();
      const std::int64_t t4 = realtime_ns();
      if (!reply.has_clock_reply() || reply.clock_reply().seq() != seq) continue;  // e.g. a late heartbeat echo
      if (reply.clock_reply().t1() != t1) {
        throw LabError(proto::ERROR_PROTOCOL, fmt::format("agent {}: clock reply {} does not echo t1", peer_, seq));
      }
      samples.push_back(ClockSample{t1, reply.clock_reply().t2(), reply.clock_reply().t3(), t4});
      break;
    }
  }
  return estimate_clock(samples);
}

void LabClient::heartbeat() {
  proto::Envelope beat;
  const std::uint64_t seq = ++seq_;
  beat.mutable_heartbeat()->set_seq(seq);
  send(beat);
  for (;;) {
    const proto::Envelope reply = receive();
    if (reply.has_heartbeat() && reply.heartbeat().reply() && reply.heartbeat().seq() == seq) return;
  }
}

void LabClient::close() {
  if (!socket_.is_open()) return;
  if (authenticated_) {
    proto::Envelope stop;
    stop.mutable_stop()->set_reason("coordinator closes the connection");
    try {
      send(stop);
    } catch (const LabError&) {
      // the agent is gone already: nothing to tell it
    }
  }
  authenticated_ = false;
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

bool LabClient::is_open() const { return socket_.is_open(); }

}  // namespace fabemu::lab
