// Accepting TCP connections without spinning or flooding the log: the agent's control port and the metrics
// endpoint share it (host/lab/README.md, "Connection limits").
//
// - `accept_loop` accepts one connection after another on the acceptor's executor. A failed accept (EMFILE,
//   ENFILE, ENOBUFS, ...: the connection stays in the kernel's backlog, so retrying at once fails again at
//   once) waits `kAcceptBackoffMin`, doubling up to `kAcceptBackoffMax`, before the next attempt.
// - `RateLimitedLog` writes a warning at most once per interval and says how many it held back.
// - `fd_connection_budget` derives a connection cap from RLIMIT_NOFILE, so that a process under a low
//   `ulimit -n` refuses connections before it runs out of descriptors.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace fabemu::lab {

inline constexpr std::chrono::milliseconds kAcceptBackoffMin{50};
inline constexpr std::chrono::milliseconds kAcceptBackoffMax{1000};
// Descriptors kept for everything but connections (run files, UDP sockets, the listeners, the DPDK port).
inline constexpr std::size_t kReservedFds = 32;

// One warning line per `interval` at most; the next one written says how many were suppressed meanwhile.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(std::chrono::milliseconds interval = std::chrono::seconds(1)) : interval_(interval) {}
  void warn(const std::string& line);
  std::uint64_t suppressed_total() const { return suppressed_total_; }

 private:
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
  bool written_ = false;
  std::uint64_t suppressed_ = 0;
  std::uint64_t suppressed_total_ = 0;
};

// min(cap, max(floor, (RLIMIT_NOFILE soft limit - kReservedFds) / share)).
std::size_t fd_connection_budget(std::size_t cap, std::size_t share, std::size_t floor = 2);

// Owns a listening acceptor and accepts on it until `stopped()` is true or the acceptor is closed; each
// connection goes to `on_socket`. `what` names the acceptor in the log ("lab agent", "metrics"). Errors
// back off (above). Pending handlers hold the loop, so the acceptor outlives them; the callbacks should
// hold their owner weakly.
struct AcceptLoop {
  AcceptLoop(boost::asio::ip::tcp::acceptor a, std::string name)
      : acceptor(std::move(a)), timer(acceptor.get_executor()), what(std::move(name)) {}
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::steady_timer timer;
  std::string what;
  std::function<void(boost::asio::ip::tcp::socket)> on_socket;
  std::function<bool()> stopped;
  std::chrono::milliseconds backoff{0};
  RateLimitedLog log;
  std::uint64_t failures = 0;  // failed accepts so far
  // Closes the acceptor and cancels a pending back-off.
  void close();
};
void accept_loop(const std::shared_ptr<AcceptLoop>& loop);

}  // namespace fabemu::lab
