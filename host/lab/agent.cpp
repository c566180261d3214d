// The lab agent (agent.h): the listener, the connection caps, and the agent's start and stop; one
// coordinator's connection is an AgentSession (agent_session.h).
#include "host/lab/agent.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/ip/host_name.hpp>

#include "host/lab/agent_session.h"
#include "host/lab/error.h"

namespace fabemu::lab {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// Makes room for a new connection under the caps (AgentOptions): the oldest unauthenticated connection
// goes when the unauthenticated cap, or the total one, is reached; with every slot authenticated the new
// connection is refused. False: refused.
bool make_room(Agent::State& state, const std::string& peer) {
  const AgentOptions& o = state.options;
  std::size_t unauthenticated = 0;
  std::shared_ptr<AgentSession> oldest;
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
  auto session = std::make_shared<AgentSession>(state, std::move(socket));
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
