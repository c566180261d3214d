// `fabemu run --metrics ADDR:PORT` on a single-host run (--fabric socket or dpdk): the run's live counters served in
// Prometheus' text format (GET /metrics) while it runs, by a thread of the endpoint's own, with the families
// the lab's agents and coordinator serve (host/lab/metrics.h, host/lab/README.md "Metrics").
#pragma once

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "host/lab/live_metrics.h"
#include "host/lab/metrics.h"

namespace fabemu::run {

class LiveEndpoint {
 public:
  // Binds `endpoint` ("ADDR:PORT"; port 0 picks a free one) at once and starts serving. An error naming the
  // text when it does not parse (lab::parse_endpoint's), std::runtime_error naming it when it cannot be bound. Every sample
  // has the labels role="run" and fabric=`fabric`.
  LiveEndpoint(const std::string& endpoint, std::size_t links, std::string fabric);
  ~LiveEndpoint();
  LiveEndpoint(const LiveEndpoint&) = delete;
  LiveEndpoint& operator=(const LiveEndpoint&) = delete;

  // The counters the fabric keeps current (link_bytes sized to the topology's links).
  lab::LiveMetrics& live() noexcept { return live_; }
  // "http://127.0.0.1:9464/metrics".
  std::string url() const;

 private:
  boost::asio::io_context io_;
  lab::LiveMetrics live_;
  std::string fabric_;
  std::unique_ptr<lab::MetricsServer> server_;
  std::thread thread_;
};

}  // namespace fabemu::run
