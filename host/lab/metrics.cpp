#include "host/lab/metrics.h"

#include "host/lab/accept_guard.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <list>
#include <optional>
#include <stdexcept>

namespace fabemu::lab {

namespace http = boost::beast::http;
using boost::asio::ip::tcp;

namespace {

constexpr uint32_t kHeaderLimit = 8 * 1024;
constexpr uint64_t kBodyLimit = 1024;
constexpr auto kIdle = std::chrono::seconds(10);

bool valid_label_name(const std::string& n) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string escape(const std::string& v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// Picoseconds as exact decimal seconds ("0.000001234567", "2", "-0.5").
std::string seconds_of_ps(int64_t ps) {
  const bool neg = ps < 0;
  const uint64_t v = neg ? uint64_t{0} - static_cast<uint64_t>(ps) : static_cast<uint64_t>(ps);
  std::string out = fmt::format("{}{}", neg ? "-" : "", v / 1'000'000'000'000ULL);
  uint64_t frac = v % 1'000'000'000'000ULL;
  if (frac != 0) {
    std::string f = fmt::format("{:012}", frac);
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

}  // namespace

std::string render_metrics(const LiveMetrics& m, const MetricLabels& labels) {
  std::string base;
  for (const auto& [k, v] : labels) {
    if (!valid_label_name(k)) throw std::invalid_argument(fmt::format("metric label name \"{}\" is not valid", k));
    base += fmt::format("{}{}=\"{}\"", base.empty() ? "" : ",", k, escape(v));
  }
  const std::string braces = base.empty() ? std::string() : "{" + base + "}";
  std::string out;
  const auto metric = [&](const char* name, const char* type, const char* help, const std::string& value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{} {}\n", name, help, name, type, name, braces, value);
  };
  const auto counter = [&](const char* name, const char* help, const std::atomic<uint64_t>& c) {
    metric(name, "counter", help, fmt::format("{}", c.load(std::memory_order_relaxed)));
  };
  metric("fabemu_running", "gauge", "1 while a run is in progress, else 0.",
         m.running.load(std::memory_order_relaxed) ? "1" : "0");
  metric("fabemu_emulated_time_seconds", "gauge", "The run's emulated clock.",
         seconds_of_ps(m.emulated_ps.load(std::memory_order_relaxed)));
  counter("fabemu_messages_sent_total", "Messages whose source is a rank of this process.", m.messages_sent);
  counter("fabemu_bytes_sent_total", "Message bytes of those messages.", m.bytes_sent);
  counter("fabemu_messages_received_total", "Messages reassembled for a rank of this process.", m.messages_received);
  counter("fabemu_bytes_received_total", "Message bytes of those messages.", m.bytes_received);
  counter("fabemu_frames_sent_total", "Datagrams or frames sent, retransmissions included.", m.frames_sent);
  counter("fabemu_frames_received_total", "Datagrams or frames received.", m.frames_received);
  counter("fabemu_retransmissions_total", "Data packets sent again.", m.retransmissions);
  counter("fabemu_not_ours_total", "Frames received and dropped as not ours.", m.not_ours);
  // A family without samples is left out (a run that has no links yet, or the model fabric).
  const size_t links = std::min(m.link_bytes.size(), m.link_count.load(std::memory_order_relaxed));
  if (links == 0) return out;
  out += "# HELP fabemu_link_bytes_total Message bytes the model carried on each link of the topology.\n"
         "# TYPE fabemu_link_bytes_total counter\n";
  for (size_t l = 0; l < links; ++l) {
    out += fmt::format("fabemu_link_bytes_total{{{}{}link=\"{}\"}} {}\n", base, base.empty() ? "" : ",", l,
                       m.link_bytes[l].load(std::memory_order_relaxed));
  }
  return out;
}

proto::RunProgress progress_of(const LiveMetrics& m) {
  constexpr auto r = std::memory_order_relaxed;
  proto::RunProgress p;
  p.set_messages_sent(m.messages_sent.load(r));
  p.set_bytes_sent(m.bytes_sent.load(r));
  p.set_messages_received(m.messages_received.load(r));
  p.set_bytes_received(m.bytes_received.load(r));
  p.set_frames_sent(m.frames_sent.load(r));
  p.set_frames_received(m.frames_received.load(r));
  p.set_retransmissions(m.retransmissions.load(r));
  p.set_not_ours(m.not_ours.load(r));
  p.set_emulated_ps(m.emulated_ps.load(r));
  const size_t links = std::min(m.link_bytes.size(), m.link_count.load(r));
  for (size_t l = 0; l < links; ++l) p.add_link_bytes(m.link_bytes[l].load(r));
  return p;
}

void add_progress(LiveMetrics& sum, const proto::RunProgress& before, const proto::RunProgress& now) {
  const auto since = [](uint64_t b, uint64_t n) { return n > b ? n - b : uint64_t{0}; };
  LiveMetrics::add(sum.messages_sent, since(before.messages_sent(), now.messages_sent()));
  LiveMetrics::add(sum.bytes_sent, since(before.bytes_sent(), now.bytes_sent()));
  LiveMetrics::add(sum.messages_received, since(before.messages_received(), now.messages_received()));
  LiveMetrics::add(sum.bytes_received, since(before.bytes_received(), now.bytes_received()));
  LiveMetrics::add(sum.frames_sent, since(before.frames_sent(), now.frames_sent()));
  LiveMetrics::add(sum.frames_received, since(before.frames_received(), now.frames_received()));
  LiveMetrics::add(sum.retransmissions, since(before.retransmissions(), now.retransmissions()));
  LiveMetrics::add(sum.not_ours, since(before.not_ours(), now.not_ours()));
  if (now.emulated_ps() > sum.emulated_ps.load(std::memory_order_relaxed)) sum.emulated_ps.store(now.emulated_ps());
  const size_t links = std::min(sum.link_bytes.size(), static_cast<size_t>(now.link_bytes_size()));
  for (size_t l = 0; l < links; ++l) {
    const int i = static_cast<int>(l);
    const uint64_t bytes = since(i < before.link_bytes_size() ? before.link_bytes(i) : 0, now.link_bytes(i));
    if (bytes > sum.link_bytes[l].load(std::memory_order_relaxed)) sum.link_bytes[l].store(bytes);
  }
  if (links > sum.link_count.load(std::memory_order_relaxed)) sum.link_count.store(links);
}

void reset_metrics(LiveMetrics& m) {
  for (auto* c : {&m.messages_sent, &m.bytes_sent, &m.messages_received, &m.bytes_received, &m.frames_sent,
                  &m.frames_received, &m.retransmissions, &m.not_ours}) {
    c->store(0);
  }
  m.emulated_ps.store(0);
  for (auto& l : m.link_bytes) l.store(0);
  m.link_count.store(0);
}

// --- the server ----------------------------------------------------------------------------------------

class MetricsSession;  // one HTTP connection (below)

struct MetricsServer::State {
  State(boost::asio::io_context& io, std::function<std::string()> r)
      : accept(std::make_shared<AcceptLoop>(tcp::acceptor(io), "metrics")), render(std::move(r)) {}
  std::shared_ptr<AcceptLoop> accept;
  std::function<std::string()> render;
  std::list<std::weak_ptr<MetricsSession>> sessions;  // oldest first
  std::size_t max_connections = 0;
  RateLimitedLog limit_log;
  bool closed = false;
  std::atomic<uint64_t> requests{0};
};

class MetricsSession : public std::enable_shared_from_this<MetricsSession> {
 public:
  MetricsSession(tcp::socket socket, std::shared_ptr<MetricsServer::State> state)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), state_(std::move(state)) {}

  void start() { read(); }
  void close() {
    boost::system::error_code ec;
    timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    timer_.expires_after(kIdle);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->close();  // silent too long
    });
    http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](boost::system::error_code ec, size_t) {
      self->timer_.cancel();
      if (ec || self->state_->closed) {
        self->close();  // closed by the peer, a request that does not parse or is too large, or shutdown
        return;
      }
      self->respond(self->parser_->release());
    });
  }

  void respond(const http::request<http::string_body>& req) {
    const std::string_view target(req.target().data(), req.target().size());
    const bool metrics = (req.method() == http::verb::get || req.method() == http::verb::head) &&
                         (target == "/metrics" || target.starts_with("/metrics?"));
    res_ = {};
    res_.version(req.version());
    res_.keep_alive(req.keep_alive());
    res_.set(http::field::server, "fabemu");
    if (metrics) {
      res_.result(http::status::ok);
      res_.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res_.body() = state_->render();
    } else {
      res_.result(http::status::not_found);
      res_.set(http::field::content_type, "text/plain; charset=utf-8");
      res_.body() = "not found: try GET /metrics\n";
    }
    res_.prepare_payload();
    if (req.method() == http::verb::head) res_.body().clear();
    state_->requests.fetch_add(1, std::memory_order_relaxed);
    http::async_write(socket_, res_, [self = shared_from_this()](boost::system::error_code ec, size_t) {
      if (ec || !self->res_.keep_alive() || self->state_->closed) {
        self->close();
        return;
      }
      self->read();
    });
  }

  tcp::socket socket_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<MetricsServer::State> state_;
  boost::beast::flat_buffer buffer_{kHeaderLimit + kBodyLimit};
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
};

namespace {

// A new connection at the cap closes the oldest one (scrapers reconnect; a flood of idle connections
// cannot lock them out).
void admit(const std::shared_ptr<MetricsServer::State>& state, tcp::socket socket) {
  MetricsServer::State& st = *state;
  st.sessions.remove_if([](const std::weak_ptr<MetricsSession>& w) { return w.expired(); });
  if (st.sessions.size() >= st.max_connections) {
    st.limit_log.warn(fmt::format("metrics: {} connections open (the limit): closing the oldest", st.sessions.size()));
    if (auto oldest = st.sessions.front().lock()) oldest->close();
    st.sessions.pop_front();
  }
  auto s = std::make_shared<MetricsSession>(std::move(socket), state);
  st.sessions.push_back(s);
  s->start();
}

}  // namespace

MetricsServer::MetricsServer(boost::asio::io_context& io, const tcp::endpoint& endpoint,
                             std::function<std::string()> render, std::size_t max_connections)
    : state_(std::make_shared<State>(io, std::move(render))) {
  state_->max_connections = max_connections > 0 ? max_connections : fd_connection_budget(64, 8);
  tcp::acceptor& a = state_->accept->acceptor;
  a.open(endpoint.protocol());
  a.set_option(tcp::acceptor::reuse_address(true));
  a.bind(endpoint);
  a.listen();
  std::weak_ptr<State> weak = state_;
  state_->accept->stopped = [weak] {
    const auto st = weak.lock();
    return !st || st->closed;
  };
  state_->accept->on_socket = [weak](tcp::socket socket) {
    if (const auto st = weak.lock()) admit(st, std::move(socket));
  };
  accept_loop(state_->accept);
}

MetricsServer::~MetricsServer() { close(); }

void MetricsServer::close() {
  if (state_->closed) return;
  state_->closed = true;
  state_->accept->close();
  for (auto& w : state_->sessions) {
    if (auto s = w.lock()) s->close();
  }
  state_->sessions.clear();
}

tcp::endpoint MetricsServer::local_endpoint() const { return state_->accept->acceptor.local_endpoint(); }

std::size_t MetricsServer::connection_count() const {
  return static_cast<std::size_t>(std::count_if(state_->sessions.begin(), state_->sessions.end(),
                                                [](const std::weak_ptr<MetricsSession>& w) { return !w.expired(); }));
}

std::size_t MetricsServer::max_connections() const { return state_->max_connections; }

uint64_t MetricsServer::requests() const noexcept { return state_->requests.load(std::memory_order_relaxed); }

}  // namespace fabemu::lab
