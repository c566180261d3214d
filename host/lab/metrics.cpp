#include "host/lab/metrics.h"

#include <fmt/core.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
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
  out += "# HELP fabemu_link_bytes_total Message bytes the model carried on each link of the topology.\n"
         "# TYPE fabemu_link_bytes_total counter\n";
  for (size_t l = 0; l < m.link_bytes.size(); ++l) {
    out += fmt::format("fabemu_link_bytes_total{{{}{}link=\"{}\"}} {}\n", base, base.empty() ? "" : ",", l,
                       m.link_bytes[l].load(std::memory_order_relaxed));
  }
  return out;
}

// --- the server ----------------------------------------------------------------------------------------

namespace {
class Session;
}

struct MetricsServer::State {
  State(boost::asio::io_context& io, std::function<std::string()> r) : acceptor(io), render(std::move(r)) {}
  tcp::acceptor acceptor;
  std::function<std::string()> render;
  std::list<std::weak_ptr<Session>> sessions;
  bool closed = false;
  std::atomic<uint64_t> requests{0};
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<MetricsServer::State> state)
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

void accept(const std::shared_ptr<MetricsServer::State>& st) {
  st->acceptor.async_accept([st](boost::system::error_code ec, tcp::socket socket) {
    if (st->closed) return;
    if (!ec) {
      auto s = std::make_shared<Session>(std::move(socket), st);
      // Forget sessions that ended, then remember this one (for close()).
      st->sessions.remove_if([](const std::weak_ptr<Session>& w) { return w.expired(); });
      st->sessions.push_back(s);
      s->start();
    }
    accept(st);
  });
}

}  // namespace

MetricsServer::MetricsServer(boost::asio::io_context& io, const tcp::endpoint& endpoint,
                             std::function<std::string()> render)
    : state_(std::make_shared<State>(io, std::move(render))) {
  tcp::acceptor& a = state_->acceptor;
  a.open(endpoint.protocol());
  a.set_option(tcp::acceptor::reuse_address(true));
  a.bind(endpoint);
  a.listen();
  accept(state_);
}

MetricsServer::~MetricsServer() { close(); }

void MetricsServer::close() {
  if (state_->closed) return;
  state_->closed = true;
  boost::system::error_code ec;
  state_->acceptor.close(ec);
  for (auto& w : state_->sessions) {
    if (auto s = w.lock()) s->close();
  }
  state_->sessions.clear();
}

tcp::endpoint MetricsServer::local_endpoint() const { return state_->acceptor.local_endpoint(); }

uint64_t MetricsServer::requests() const noexcept { return state_->requests.load(std::memory_order_relaxed); }

}  // namespace fabemu::lab
