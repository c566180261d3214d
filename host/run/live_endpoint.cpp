#include "host/run/live_endpoint.h"

#include <fmt/core.h>

#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>
#include <stdexcept>
#include <utility>

#include "host/lab/address.h"

namespace fabemu::run {

LiveEndpoint::LiveEndpoint(const std::string& endpoint, std::size_t links, std::string fabric)
    : live_(links), fabric_(std::move(fabric)) {
  const auto where = lab::parse_endpoint(endpoint);
  try {
    server_ = std::make_unique<lab::MetricsServer>(io_, where, [this] {
      return lab::render_metrics(live_, {{"role", "run"}, {"fabric", fabric_}});
    });
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error(fmt::format("--metrics {}: cannot serve there: {}", endpoint, e.code().message()));
  }
  live_.link_count.store(links);
  thread_ = std::thread([this] { io_.run(); });
}

LiveEndpoint::~LiveEndpoint() {
  // The server closes on io_'s thread; then run() has nothing left and returns.
  boost::asio::post(io_, [this] { server_->close(); });
  thread_.join();
  server_.reset();
}

std::string LiveEndpoint::url() const { return "http://" + lab::to_string(server_->local_endpoint()) + "/metrics"; }

}  // namespace fabemu::run
