// Fuzz target: the lab control plane's handshake, both ends, over loopback TCP in one process.
// Byte 0 chooses the side (the rest of the input is the bytes the fuzzer sends):
//   0, 3: an Agent (host/lab/agent.h, its own io_context thread) gets the bytes from a fresh connection as
//         its first input (hello, challenge-response, frame limits before authentication);
//   1:    the same after a valid handshake (LabClient::authenticate): the bytes reach the authenticated
//         phase (heartbeats, clock probes, run protocol);
//   2:    a LabClient connecting to a fake agent that answers with the bytes: authenticate, probe_clock,
//         heartbeat must fail with LabError, never otherwise.
// Then the sender half-closes and reads until the peer closes. Findings: any exception but LabError, and an
// agent that stops accepting connections or does not close after its peer's end of stream (5 s).
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>

#include "host/lab/agent.h"
#include "host/lab/client.h"
#include "host/lab/error.h"
#include "tests/fuzz/fuzz_support.h"

namespace {
namespace asio = boost::asio;
using fabemu::lab::LabError;
using namespace std::chrono_literals;

constexpr const char* kToken = "fabemu-fuzz-token";

struct World {
  asio::io_context io;
  std::unique_ptr<fabemu::lab::Agent> agent;
  asio::ip::tcp::endpoint agent_endpoint;
  std::thread agent_thread;
  int fake_listener = -1;  // the fake agent's listening socket (side 2)
  asio::ip::tcp::endpoint fake_endpoint;

  World() {
    spdlog::set_level(spdlog::level::off);
    fabemu::lab::AgentOptions options;
    options.listen = {asio::ip::make_address("127.0.0.1"), 0};
    options.token = kToken;
    options.agent_id = "fuzz";
    options.idle_timeout = 5000ms;
    options.work_dir = fabemu::fuzz::scratch_dir();
    agent = std::make_unique<fabemu::lab::Agent>(io, options);
    agent->start();
    agent_endpoint = agent->local_endpoint();
    agent_thread = std::thread([this] { io.run(); });
    agent_thread.detach();  // runs until the process exits

    fake_listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fake_listener < 0 || bind(fake_listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(fake_listener, 4) != 0 || getsockname(fake_listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      fabemu::fuzz::finding("harness", "cannot listen on loopback");
    }
    fake_endpoint = {asio::ip::make_address("127.0.0.1"), ntohs(a.sin_port)};
  }
};

World& world() {
  static World* w = new World;  // never destroyed: the agent's thread runs until exit
  return *w;
}

// The client waits 30 s, six times the agent's idle timeout (5 s, which closes any connection that sends
// nothing): only an agent that never closes is a finding, not one a loaded machine kept from running for
// 5 s (a nice-19 run beside two builds, load 13, reported one; its input passes in 0.7 s alone).
fabemu::lab::ClientOptions client_options() {
  fabemu::lab::ClientOptions o;
  o.timeout = 30000ms;
  return o;
}

void to_agent(bool authenticate, std::string_view bytes) {
  fabemu::lab::LabClient client(client_options());
  try {
    client.connect(world().agent_endpoint);
    if (authenticate) client.authenticate(kToken);
  } catch (const LabError& e) {
    fabemu::fuzz::finding("agent", std::string("a valid connection or handshake failed: ") + e.what());
  }
  try {
    client.send_bytes(bytes);
    client.shutdown_send();
    for (int i = 0; i < 1000; ++i) client.receive();  // until the agent closes: LabError
  } catch (const LabError& e) {
    // receive() throws ERROR_IDLE_TIMEOUT when the agent neither sends nor closes for 30 s.
    if (e.code() == fabemu::lab::proto::ERROR_IDLE_TIMEOUT) {
      fabemu::fuzz::finding("agent", std::string("no close after the peer's end of stream: ") + e.what());
    }
  } catch (...) {
    fabemu::fuzz::unexpected_exception(std::current_exception());
  }
}

void to_client(std::string_view bytes) {
  World& w = world();
  std::thread fake([&] {
    const int s = accept(w.fake_listener, nullptr, nullptr);
    if (s < 0) return;
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = send(s, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    shutdown(s, SHUT_WR);
    char sink[4096];
    while (recv(s, sink, sizeof sink, 0) > 0) {
    }
    close(s);
  });
  {
    fabemu::lab::LabClient client(client_options());
    fabemu::fuzz::expect_only<LabError>([&] {
      client.connect(w.fake_endpoint);
      client.authenticate(kToken);
      client.probe_clock(2);
      client.heartbeat();
    });
    client.close();
  }
  fake.join();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] & 3) {
    case 1: to_agent(true, bytes); break;
    case 2: to_client(bytes); break;
    default: to_agent(false, bytes); break;
  }
  return 0;
}
