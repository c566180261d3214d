// `fabemu agent --listen ADDR:PORT --token-file F [--dpdk-device DEVARGS [-- EAL args]]`: serve the lab control
// plane on this host until SIGINT or SIGTERM. Compiled into the fabemu executable (host/CMakeLists.txt), not
// into fabemu_lab: only the executable knows whether DPDK is there (FABEMU_HAVE_DPDK).
#include <fmt/core.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/host_name.hpp>
#include <boost/asio/signal_set.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/cli/commands.h"
#include "host/wire/address_plan.h"
#include "host/lab/address.h"
#include "host/lab/agent.h"
#include "host/lab/auth.h"
#include "host/lab/datagram_transport.h"
#include "host/lab/live_metrics.h"
#include "host/lab/metrics.h"
#ifdef FABEMU_HAVE_DPDK
#include "host/lab/dpdk_transport.h"
#endif

namespace fabemu::cli {

namespace {

struct AgentCommandOptions {
  std::string listen;
  std::string token_file;
  unsigned heartbeat_ms = 1000;
  unsigned idle_timeout_ms = 10000;
  std::size_t max_frame_bytes = lab::kDefaultMaxFrameBytes;
  std::string work_dir;
  std::string metrics;
  std::string dpdk_device;
  std::vector<std::string> eal_args;  // after `--`
};

// `--dpdk-device`: the host's DPDK port for `fabric: dpdk` runs, opened once for the agent's lifetime.
// Before the io_context and the signal_set exist: EAL start-up spawns its threads and installs SIGINT/SIGTERM
// handlers of its own (host/dpdk/dpdk_env.h), which the agent's signal_set must replace, not be replaced by;
// and a device that cannot be opened ends the agent (exit 2) before it listens.
std::unique_ptr<lab::LabDataPort> open_data_port(const AgentCommandOptions& o) {
  if (o.dpdk_device.empty()) {
    if (!o.eal_args.empty()) throw std::invalid_argument("arguments after -- are EAL arguments: they need --dpdk-device");
    return nullptr;
  }
#ifdef FABEMU_HAVE_DPDK
  std::unique_ptr<lab::LabDataPort> port;
  try {
    port = lab::open_lab_data_port(o.dpdk_device, o.eal_args);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("--dpdk-device {}: cannot open the DPDK port: {}", o.dpdk_device, e.what()));
  }
  spdlog::info("lab agent: data port {} (MAC {}) for fabric dpdk runs", port->describe(),
               host::dpdk::format_mac(port->mac()));
  return port;
#else
  throw std::invalid_argument(fmt::format(
      "--dpdk-device {}: this fabemu was built without DPDK (FABEMU_WITH_DPDK); lab runs here can use fabric socket "
      "or model", o.dpdk_device));
#endif
}

int run_agent(const AgentCommandOptions& o) {
  // Logs go to stderr: stdout carries only the "listening on" line scripts wait for.
  spdlog::set_default_logger(spdlog::stderr_color_mt("fabemu-agent"));
  lab::AgentOptions options;
  options.listen = lab::parse_endpoint(o.listen);
  options.token = lab::read_token_file(o.token_file);
  options.heartbeat = std::chrono::milliseconds(o.heartbeat_ms);
  options.idle_timeout = std::chrono::milliseconds(o.idle_timeout_ms);
  options.max_frame_bytes = o.max_frame_bytes;
  options.pre_auth_max_frame_bytes = std::min(options.pre_auth_max_frame_bytes, o.max_frame_bytes);
  options.work_dir = o.work_dir;
  if (o.heartbeat_ms >= o.idle_timeout_ms) {
    spdlog::warn("--heartbeat-ms {} is not below --idle-timeout-ms {}: quiet peers will be timed out",
                 o.heartbeat_ms, o.idle_timeout_ms);
  }
  // Declared before the io_context and the agent, so it outlives them (and the run thread they join).
  const std::unique_ptr<lab::LabDataPort> data_port = open_data_port(o);
  options.data_port = data_port.get();

  boost::asio::io_context io;
  // The run thread keeps `live` current; the endpoint renders it on the io_context's thread.
  lab::LiveMetrics live(lab::kLiveMetricsLinks);
  live.link_count.store(0);
  if (!o.metrics.empty()) options.live = &live;
  const std::string id = options.agent_id.empty() ? boost::asio::ip::host_name() : options.agent_id;
  lab::Agent agent(io, std::move(options));
  std::unique_ptr<lab::MetricsServer> metrics;
  if (!o.metrics.empty()) {
    // `listen` tells apart the agents of one host (same host name).
    const std::string listen = lab::to_string(agent.local_endpoint());
    metrics = std::make_unique<lab::MetricsServer>(io, lab::parse_endpoint(o.metrics), [&live, id, listen] {
      return lab::render_metrics(live, {{"role", "agent"}, {"agent", id}, {"listen", listen}});
    });
    spdlog::info("lab agent: metrics on http://{}/metrics", lab::to_string(metrics->local_endpoint()));
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&agent, &metrics](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    spdlog::info("lab agent: signal {}: stopping", signal);
    agent.stop();
    if (metrics) metrics->close();
  });
  agent.start();
  fmt::print("listening on {}\n", lab::to_string(agent.local_endpoint()));
  std::fflush(stdout);
  io.run();
  return kExitOk;
}

}  // namespace

void add_agent_command(CLI::App& app, int& status, const std::vector<std::string>& passthrough) {
  auto* cmd = app.add_subcommand(
      "agent", "Serve the multi-host lab control plane on this host (until SIGINT/SIGTERM); see host/lab/README.md");
  auto o = std::make_shared<AgentCommandOptions>();
  cmd->add_option("--listen", o->listen, "Address and TCP port to listen on; port 0 picks a free port")
      ->type_name("ADDR:PORT")
      ->required();
  cmd->add_option("--token-file", o->token_file,
                  "File holding the shared token (not empty, not accessible by other users: chmod 600)")
      ->type_name("FILE")
      ->required();
  cmd->add_option("--heartbeat-ms", o->heartbeat_ms, "Heartbeat period towards an authenticated coordinator")
      ->capture_default_str()
      ->check(CLI::Range(1u, 3600000u));
  cmd->add_option("--idle-timeout-ms", o->idle_timeout_ms, "Close a connection that sends nothing for this long")
      ->capture_default_str()
      ->check(CLI::Range(1u, 3600000u));
  cmd->add_option("--max-frame-bytes", o->max_frame_bytes,
                  "Largest frame accepted after authentication (64 KiB before it)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 31));
  cmd->add_option("--work-dir", o->work_dir,
                  "Folder for each run's shards and configuration (removed when the run ends); default: TMPDIR")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--metrics", o->metrics,
                  "Serve Prometheus metrics (GET /metrics) of this agent's runs at this address; port 0 picks one")
      ->type_name("ADDR:PORT");
  cmd->add_option("--dpdk-device", o->dpdk_device,
                  "DPDK port for lab runs with `fabric: dpdk` (a PCI address or vdev devargs, e.g. "
                  "net_af_packet0,iface=eth1); needs a build with DPDK")
      ->type_name("DEVARGS");
  cmd->footer("Arguments after `--` are EAL arguments (with --dpdk-device).");
  cmd->callback([o, &status, &passthrough] {
    o->eal_args = passthrough;
    status = run_agent(*o);
  });
}

}  // namespace fabemu::cli
