// The metrics endpoint: a LiveMetrics rendered in the Prometheus text exposition format (version 0.0.4),
// served over HTTP (Boost.Beast) on the caller's io_context. host/lab/README.md, "Metrics".
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "host/lab/lab.pb.h"
#include "host/lab/live_metrics.h"

namespace fabemu::lab {

// Labels put on every sample, in this order, e.g. {{"role", "agent"}, {"agent", "lab-07"}}. Names must
// be Prometheus label names ([a-zA-Z_][a-zA-Z0-9_]*, std::invalid_argument otherwise); values are escaped.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// HELP and TYPE lines then one sample per metric: counters end in _total, the emulated clock is a gauge
// in seconds (exact decimal of the integer picoseconds), per link fabemu_link_bytes_total{link="N"}.
std::string render_metrics(const LiveMetrics& m, const MetricLabels& labels = {});

// The counters of `m` now, for the coordinator (an agent's heartbeats during a run, Prepared, RunDone).
proto::RunProgress progress_of(const LiveMetrics& m);
// Adds what an agent counted since `before` (its Prepared) up to `now` to `sum`; the emulated clock and
// each link's bytes (the model's, the same on every agent) take the largest value instead.
void add_progress(LiveMetrics& sum, const proto::RunProgress& before, const proto::RunProgress& now);
// Every counter, the clock and the link count back to 0.
void reset_metrics(LiveMetrics& m);

// GET /metrics (or /metrics?anything) -> 200, "text/plain; version=0.0.4; charset=utf-8", the body of
// `render()`; any other target or method -> 404; a request that does not parse, or exceeds 8 KiB of
// header (1 KiB of body), is dropped and its connection closed. Keep-alive is honoured; a connection
// silent for 10 s is closed. Everything runs on `io` (asynchronous accept/read/write, no thread per
// connection); `render` is called there, on each scrape. At most `max_connections` are open (0: min(64,
// (RLIMIT_NOFILE - 32) / 8), at least 2): a new one closes the oldest. A failed accept (EMFILE...) backs
// off (accept_guard.h).
class MetricsServer {
 public:
  // Binds and listens at once (boost::system::system_error when it cannot); port 0 picks a free port.
  MetricsServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint,
                std::function<std::string()> render, std::size_t max_connections = 0);
  // Closes the listener and every connection. Call it (and close()) on io's thread or while io is not
  // running.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void close();
  uint64_t requests() const noexcept;  // answered (200 or 404)
  std::size_t connection_count() const;  // open now
  std::size_t max_connections() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace fabemu::lab
