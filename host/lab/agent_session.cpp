// The lab agent's connection to one coordinator: frames in and out, the idle and heartbeat timers, the
// handshake, heartbeats and clock probes; the run protocol's messages go on to agent_run.cpp.
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "host/lab/agent_session.h"
#include "host/lab/clock.h"
#include "host/lab/error.h"

namespace fabemu::lab {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// How long a failing connection may take to read our Error before we close it.
constexpr std::chrono::milliseconds kLinger{1000};

std::string address_text(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  return ec ? std::string("unknown peer") : remote.address().to_string();
}

}  // namespace

std::string endpoint_text(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return fmt::format("{}:{}", remote.address().to_string(), remote.port());
}

AgentSession::AgentSession(std::shared_ptr<Agent::State> state, tcp::socket socket)
    : state_(std::move(state)),
      socket_(std::move(socket)),
      peer_(endpoint_text(socket_)),
      address_(address_text(socket_)),
      serial_(++state_->accepted),
      idle_timer_(state_->io),
      heartbeat_timer_(state_->io) {}

void AgentSession::start() {
  spdlog::debug("lab agent: {}: connected", peer_);
  arm_idle();
  read_header();
}

void AgentSession::close_now() {
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

void AgentSession::fail(proto::ErrorCode code, const std::string& text) {
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

std::size_t AgentSession::frame_limit() const {
  return phase_ == Phase::kReady ? state_->options.max_frame_bytes : state_->options.pre_auth_max_frame_bytes;
}

void AgentSession::read_header() {
  reading_ = true;
  asio::async_read(socket_, asio::buffer(header_),
                   [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                     self->reading_ = false;
                     self->on_header(ec, n);
                   });
}

void AgentSession::on_header(boost::system::error_code ec, std::size_t n) {
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

void AgentSession::on_body(boost::system::error_code ec, std::size_t n, std::int64_t received_ns) {
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

void AgentSession::on_read_error(boost::system::error_code ec, std::size_t got, std::size_t wanted, const char* what) {
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
void AgentSession::drain() {
  if (reading_ || closed_) return;
  reading_ = true;
  socket_.async_read_some(asio::buffer(drain_buffer_),
                          [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                            self->reading_ = false;
                            if (ec || self->closed_) return self->close_now();
                            self->drain();
                          });
}

void AgentSession::on_frame(const proto::Envelope& envelope, std::int64_t received_ns) {
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

void AgentSession::on_hello(const proto::Envelope& envelope) {
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

void AgentSession::on_auth_response(const proto::Envelope& envelope) {
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
void AgentSession::reject_authentication() {
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

void AgentSession::on_ready(const proto::Envelope& envelope, std::int64_t received_ns) {
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

void AgentSession::send(const proto::Envelope& envelope) {
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

void AgentSession::write_next() {
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

void AgentSession::arm_idle() {
  idle_timer_.expires_after(state_->options.idle_timeout);
  idle_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closed_ || self->closing_) return;
    self->fail(proto::ERROR_IDLE_TIMEOUT,
               fmt::format("idle timeout: nothing received for {} ms", self->state_->options.idle_timeout.count()));
  });
}

void AgentSession::arm_heartbeat() {
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

}  // namespace fabemu::lab
