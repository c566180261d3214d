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
#include <deque>
#include <set>

#include "host/lab/auth.h"
#include "host/lab/clock.h"
#include "host/lab/error.h"

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

class Session;

}  // namespace

struct Agent::State {
  State(asio::io_context& io_context, AgentOptions agent_options)
      : io(io_context), options(std::move(agent_options)), acceptor(io_context, options.listen) {}
  asio::io_context& io;
  AgentOptions options;
  tcp::acceptor acceptor;
  std::set<std::shared_ptr<Session>> sessions;
  bool stopped = false;
};

namespace {

// One connection: reads frames one at a time, writes from a queue, two timers (idle, heartbeat).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<Agent::State> state, tcp::socket socket)
      : state_(std::move(state)),
        socket_(std::move(socket)),
        peer_(endpoint_text(socket_)),
        idle_timer_(state_->io),
        heartbeat_timer_(state_->io) {}

  void start() {
    spdlog::info("lab agent: {}: connected", peer_);
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
    state_->sessions.erase(shared_from_this());
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
    if (!closing_ && !closed_) read_header();
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
    if (!macs_equal(envelope.auth_response().mac(), expected)) {
      return fail(proto::ERROR_AUTH_FAILED, "authentication failed: the peer does not know the shared token");
    }
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
        spdlog::info("lab agent: {}: stop ({}); closing", peer_, envelope.stop().reason());
        return close_now();
      default:
        return fail(proto::ERROR_PROTOCOL,
                    fmt::format("{} is not served by this agent (protocol version {})", body_name(envelope),
                                static_cast<int>(proto::PROTOCOL_VERSION_CURRENT)));
    }
  }

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
      self->send(beat);
      self->arm_heartbeat();
    });
  }

  enum class Phase { kHello, kAuthResponse, kReady };

  std::shared_ptr<Agent::State> state_;
  tcp::socket socket_;
  std::string peer_;
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
  bool closed_ = false;
  std::string coordinator_nonce_;
  std::string agent_nonce_;
  std::uint64_t heartbeat_seq_ = 0;
};

void accept_next(const std::shared_ptr<Agent::State>& state) {
  state->acceptor.async_accept([state](boost::system::error_code ec, tcp::socket socket) {
    if (state->stopped) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      spdlog::warn("lab agent: accept failed: {}", ec.message());
    } else {
      auto session = std::make_shared<Session>(state, std::move(socket));
      state->sessions.insert(session);
      session->start();
    }
    accept_next(state);
  });
}

}  // namespace

Agent::Agent(asio::io_context& io, AgentOptions options) {
  if (options.token.empty()) throw LabError(proto::ERROR_AUTH_FAILED, "the agent needs a non-empty token");
  if (options.agent_id.empty()) options.agent_id = asio::ip::host_name();
  state_ = std::make_shared<State>(io, std::move(options));
}

// Destroy the agent on its io_context's thread or after that thread stopped: closing the sessions here
// breaks their references to the shared state, so nothing leaks.
Agent::~Agent() {
  state_->stopped = true;
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
  const auto sessions = state_->sessions;
  for (const auto& session : sessions) session->close_now();
}

void Agent::start() { accept_next(state_); }

void Agent::stop() {
  if (state_->stopped && !state_->acceptor.is_open()) return;
  state_->stopped = true;
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
  // Each peer is told why (it may be a coordinator mid-run); a session closes once its Error is read or
  // after the linger deadline, so io_context::run returns within about a second.
  const auto sessions = state_->sessions;  // fail/close_now may erase from the set
  for (const auto& session : sessions) session->fail(proto::ERROR_SHUTTING_DOWN, "the agent is shutting down");
  spdlog::info("lab agent: stopped accepting; closing {} connection(s)", sessions.size());
}

tcp::endpoint Agent::local_endpoint() const { return state_->acceptor.local_endpoint(); }

std::size_t Agent::connection_count() const { return state_->sessions.size(); }

}  // namespace fabemu::lab
