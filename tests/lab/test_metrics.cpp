// The Prometheus endpoint: exact text of a LiveMetrics with known values, GET /metrics over loopback,
// 404s, and garbage or oversized requests that must not hurt the server.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "host/lab/metrics.h"

namespace lab = fabemu::lab;
using boost::asio::ip::tcp;

namespace {

void fill(lab::LiveMetrics& m) {
  m.running = true;
  m.emulated_ps = 1'234'567'890'123;  // 1.234567890123 s
  m.messages_sent = 10;
  m.bytes_sent = 10240;
  m.messages_received = 9;
  m.bytes_received = 9216;
  m.frames_sent = 31;
  m.frames_received = 29;
  m.retransmissions = 2;
  m.not_ours = 1;
  m.link_bytes[0] = 4096;
  m.link_bytes[1] = 0;
  m.link_bytes[2] = 6144;
}

const char* const kGolden =
    "# HELP fabemu_running 1 while a run is in progress, else 0.\n"
    "# TYPE fabemu_running gauge\n"
    "fabemu_running{role=\"agent\",agent=\"lab \\\"7\\\"\"} 1\n"
    "# HELP fabemu_emulated_time_seconds The run's emulated clock.\n"
    "# TYPE fabemu_emulated_time_seconds gauge\n"
    "fabemu_emulated_time_seconds{role=\"agent\",agent=\"lab \\\"7\\\"\"} 1.234567890123\n"
    "# HELP fabemu_messages_sent_total Messages whose source is a rank of this process.\n"
    "# TYPE fabemu_messages_sent_total counter\n"
    "fabemu_messages_sent_total{role=\"agent\",agent=\"lab \\\"7\\\"\"} 10\n"
    "# HELP fabemu_bytes_sent_total Message bytes of those messages.\n"
    "# TYPE fabemu_bytes_sent_total counter\n"
    "fabemu_bytes_sent_total{role=\"agent\",agent=\"lab \\\"7\\\"\"} 10240\n"
    "# HELP fabemu_messages_received_total Messages reassembled for a rank of this process.\n"
    "# TYPE fabemu_messages_received_total counter\n"
    "fabemu_messages_received_total{role=\"agent\",agent=\"lab \\\"7\\\"\"} 9\n"
    "# HELP fabemu_bytes_received_total Message bytes of those messages.\n"
    "# TYPE fabemu_bytes_received_total counter\n"
    "fabemu_bytes_received_total{role=\"agent\",agent=\"lab \\\"7\\\"\"} 9216\n"
    "# HELP fabemu_frames_sent_total Datagrams or frames sent, retransmissions included.\n"
    "# TYPE fabemu_frames_sent_total counter\n"
    "fabemu_frames_sent_total{role=\"agent\",agent=\"lab \\\"7\\\"\"} 31\n"
    "# HELP fabemu_frames_received_total Datagrams or frames received.\n"
    "# TYPE fabemu_frames_received_total counter\n"
    "fabemu_frames_received_total{role=\"agent\",agent=\"lab \\\"7\\\"\"} 29\n"
    "# HELP fabemu_retransmissions_total Data packets sent again.\n"
    "# TYPE fabemu_retransmissions_total counter\n"
    "fabemu_retransmissions_total{role=\"agent\",agent=\"lab \\\"7\\\"\"} 2\n"
    "# HELP fabemu_not_ours_total Frames received and dropped as not ours.\n"
    "# TYPE fabemu_not_ours_total counter\n"
    "fabemu_not_ours_total{role=\"agent\",agent=\"lab \\\"7\\\"\"} 1\n"
    "# HELP fabemu_link_bytes_total Message bytes the model carried on each link of the topology.\n"
    "# TYPE fabemu_link_bytes_total counter\n"
    "fabemu_link_bytes_total{role=\"agent\",agent=\"lab \\\"7\\\"\",link=\"0\"} 4096\n"
    "fabemu_link_bytes_total{role=\"agent\",agent=\"lab \\\"7\\\"\",link=\"1\"} 0\n"
    "fabemu_link_bytes_total{role=\"agent\",agent=\"lab \\\"7\\\"\",link=\"2\"} 6144\n";

TEST(Metrics, RenderingIsExact) {
  lab::LiveMetrics m(3);
  fill(m);
  EXPECT_EQ(lab::render_metrics(m, {{"role", "agent"}, {"agent", "lab \"7\""}}), kGolden);
  // No labels: bare names; whole and tiny emulated times are exact decimals.
  lab::LiveMetrics z(1);
  z.emulated_ps = 2'000'000'000'000;
  std::string text = lab::render_metrics(z);
  EXPECT_NE(text.find("\nfabemu_emulated_time_seconds 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nfabemu_running 0\n"), std::string::npos);
  EXPECT_NE(text.find("\nfabemu_link_bytes_total{link=\"0\"} 0\n"), std::string::npos);
  z.emulated_ps = 1;
  text = lab::render_metrics(z);
  EXPECT_NE(text.find("\nfabemu_emulated_time_seconds 0.000000000001\n"), std::string::npos) << text;
  EXPECT_THROW(lab::render_metrics(z, {{"bad-name", "x"}}), std::invalid_argument);
  EXPECT_THROW(lab::render_metrics(z, {{"9lives", "x"}}), std::invalid_argument);
}

// A raw HTTP exchange: writes `request`, reads until the server closes (or 5 s).
std::string http_exchange(const tcp::endpoint& ep, const std::string& request) {
  boost::asio::io_context io;
  tcp::socket s(io);
  s.connect(ep);
  boost::system::error_code ec;
  boost::asio::write(s, boost::asio::buffer(request), ec);  // the server may close before it has read all
  std::string out;
  char buf[4096];
  for (;;) {
    const size_t n = s.read_some(boost::asio::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  return out;
}

struct Served {
  lab::LiveMetrics m{3};
  boost::asio::io_context io;
  std::unique_ptr<lab::MetricsServer> server;
  std::thread thread;
  Served() {
    fill(m);
    server = std::make_unique<lab::MetricsServer>(
        io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0),
        [this] { return lab::render_metrics(m, {{"role", "agent"}, {"agent", "lab \"7\""}}); });
    thread = std::thread([this] { io.run(); });
  }
  ~Served() {
    boost::asio::post(io, [this] { server->close(); });
    thread.join();
  }
};

TEST(Metrics, HttpGetReturnsTheTextAnd404Otherwise) {
  Served s;
  const tcp::endpoint ep = s.server->local_endpoint();
  EXPECT_NE(ep.port(), 0);
  const std::string r = http_exchange(ep, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Length: " + std::to_string(std::string(kGolden).size()) + "\r\n"), std::string::npos) << r;
  ASSERT_GE(r.size(), std::string(kGolden).size());
  EXPECT_EQ(r.substr(r.size() - std::string(kGolden).size()), kGolden);
  const std::string nf = http_exchange(ep, "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(nf.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << nf;
  const std::string post = http_exchange(ep, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(post.rfind("HTTP/1.1 404", 0), 0u) << post;
  // Keep-alive: two requests on one connection, then close.
  const std::string two = http_exchange(ep, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(two.find("HTTP/1.1 200 OK"), 0u);
  EXPECT_NE(two.find("HTTP/1.1 200 OK", 10), std::string::npos);
}

TEST(Metrics, GarbageAndOversizedRequestsAreClosedAndTheServerLives) {
  Served s;
  const tcp::endpoint ep = s.server->local_endpoint();
  EXPECT_EQ(http_exchange(ep, std::string("\x16\x03\x01\x02 garbage\r\n\r\n")), "");
  EXPECT_EQ(http_exchange(ep, "NOT HTTP AT ALL\r\n\r\n"), "");
  EXPECT_EQ(http_exchange(ep, "GET /metrics HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n"), "");
  EXPECT_EQ(http_exchange(ep, "POST /metrics HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" + std::string(100000, 'b')), "");
  // A client that connects and goes away, one that sends half a request and goes away.
  {
    boost::asio::io_context io;
    tcp::socket c(io);
    c.connect(ep);
  }
  {
    boost::asio::io_context io;
    tcp::socket c(io);
    c.connect(ep);
    boost::asio::write(c, boost::asio::buffer(std::string("GET /metr")));
  }
  const std::string r = http_exchange(ep, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r;
  EXPECT_EQ(r.substr(r.size() - std::string(kGolden).size()), kGolden);
  EXPECT_EQ(s.server->requests(), 1u);
}

}  // namespace
