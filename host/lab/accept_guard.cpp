#include "host/lab/accept_guard.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>

namespace fabemu::lab {

namespace asio = boost::asio;

void RateLimitedLog::warn(const std::string& line) {
  const auto now = std::chrono::steady_clock::now();
  if (written_ && now - last_ < interval_) {
    ++suppressed_;
    ++suppressed_total_;
    return;
  }
  if (suppressed_ > 0) {
    spdlog::warn("{} ({} similar line(s) suppressed in the last {} ms)", line, suppressed_,
                 std::chrono::duration_cast<std::chrono::milliseconds>(now - last_).count());
  } else {
    spdlog::warn("{}", line);
  }
  written_ = true;
  last_ = now;
  suppressed_ = 0;
}

std::size_t fd_connection_budget(std::size_t cap, std::size_t share, std::size_t floor) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return cap;
  const auto soft = static_cast<std::size_t>(limit.rlim_cur);
  const std::size_t free = soft > kReservedFds ? soft - kReservedFds : 0;
  return std::min(cap, std::max(floor, free / std::max<std::size_t>(share, 1)));
}

void AcceptLoop::close() {
  boost::system::error_code ignored;
  acceptor.close(ignored);
  timer.cancel();
}

namespace {

void on_accept_error(const std::shared_ptr<AcceptLoop>& loop, boost::system::error_code ec) {
  ++loop->failures;
  loop->backoff = loop->backoff.count() == 0 ? kAcceptBackoffMin : std::min(loop->backoff * 2, kAcceptBackoffMax);
  loop->log.warn(fmt::format("{}: accept failed: {}; next attempt in {} ms", loop->what, ec.message(),
                             loop->backoff.count()));
  loop->timer.expires_after(loop->backoff);
  loop->timer.async_wait([loop](boost::system::error_code wait_ec) {
    if (wait_ec || loop->stopped() || !loop->acceptor.is_open()) return;
    accept_loop(loop);
  });
}

}  // namespace

void accept_loop(const std::shared_ptr<AcceptLoop>& loop) {
  loop->acceptor.async_accept([loop](boost::system::error_code ec, asio::ip::tcp::socket socket) {
    if (loop->stopped() || ec == asio::error::operation_aborted || !loop->acceptor.is_open()) return;
    if (ec) return on_accept_error(loop, ec);
    loop->backoff = std::chrono::milliseconds(0);
    loop->on_socket(std::move(socket));
    accept_loop(loop);
  });
}

}  // namespace fabemu::lab
