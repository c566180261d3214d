// The metrics endpoint: a LiveMetrics rendered in the Prometheus text exposition format (version 0.0.4),
// served over HTTP (Boost.Beast) on the caller's io_context. host/lab/README.md, "Metrics".
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "host/lab/live_metrics.h"

namespace fabemu::lab {

// Labels put on every sample, in this order, e.g. {{"role", "agent"}, {"agent", "lab-07"}}. Names must
// be Prometheus label names ([a-zA-Z_][a-zA-Z0-9_]*, std::invalid_argument otherwise); values are escaped.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// HELP and TYPE lines then one sample per metric: counters end in _total, the emulated clock is a gauge
// in seconds (exact decimal of the integer picoseconds), per link fabemu_link_bytes_total{link="N"}.
std::string render_metrics(const LiveMetrics& m, const MetricLabels& labels = {});

// GET /metrics (or /metrics?anything) -> 200, "text/plain; version=0.0.4; charset=utf-8", the body of
// `render()`; any other target or method -> 404; a request that does not parse, or exceeds 8 KiB of
// header (1 KiB of body), is dropped and its connection closed. Keep-alive is honoured; a connection
// silent for 10 s is closed. Everything runs on `io` (asynchronous accept/read/write, no thread per
// connection); `render` is called there, on each scrape.
class MetricsServer {
 public:
  // Binds and listens at once (boost::system::system_error when it cannot); port 0 picks a free port.
  MetricsServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint,
                std::function<std::string()> render);
  // Closes the listener and every connection. Call it (and close()) on io's thread or while io is not
  // running.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void close();
  uint64_t requests() const noexcept;  // answered (200 or 404)

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace fabemu::lab
