// `fabemu run`: its options (README.md, "fabemu run"); the run itself is host/run's pipeline (host/run/run.h).
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "host/cli/commands.h"
#include "host/config/config_util.h"
#include "host/run/backend.h"
#include "host/run/lcore_ids.h"
#include "host/run/run.h"
#include "host/run/run_args.h"

namespace fabemu::cli {
namespace {

// --fabric's values: the backends of host/run's table (a lab run is --agents, not a --fabric).
std::vector<std::string> fabric_names() {
  std::vector<std::string> names;
  for (const run::BackendEntry& e : run::backends()) {
    if (e.name != "agents") names.emplace_back(e.name);
  }
  return names;
}

// --dpdk-rx-lcore's and --dpdk-tx-lcore's forms: `words` (auto, off, all), an lcore id or a comma list of ids.
CLI::Validator lcore_option(const char* words, const char* forms) {
  return CLI::Validator(
      [words](std::string& v) -> std::string {
        return v == "auto" || v == "off" || v == "all" || run::lcore_id(v) || run::lcore_list(v)
                   ? std::string()
                   : std::string("expected ") + words + ", an lcore id (0-9999) or a comma list of lcore ids, got " + v;
      },
      forms);
}

// The workload, the target fabric (a fabric file or ASTRA-sim's network.yml + system.json), the backend.
void add_input_options(CLI::App* cmd, run::RunArgs& a) {
  cmd->add_option("--workload,-w", a.workload,
                      "Trace prefix (PREFIX.<rank>.et), a single .et file, or a folder holding one workload")
      ->required();
  auto* fc = cmd->add_option("--fabric-config,-f", a.fabric_config,
                                 "fabemu fabric file (YAML): topology, model, collectives, chunking");
  auto* net = cmd->add_option("--network,-n", a.network, "ASTRA-sim network.yml");
  cmd->add_option("--system,-s", a.system, "ASTRA-sim system.json (with --network)")->needs(net);
  fc->excludes(net);
  cmd->add_option("--collective-semantics", a.collective_semantics,
                  "astra (ASTRA-sim's collectives) or nccl (the NCCL model times the collectives NCCL has; needs the "
                  "fabric file's nccl: section, analytical model; docs/nccl.md); default: the fabric file's, else astra")
      ->check(CLI::IsMember({"astra", "nccl"}))
      ->needs(fc);
  cmd->add_option("--nccl-algo", a.nccl_algo,
                  "In NCCL semantics: the algorithms NCCL's tuner may pick, as NCCL_ALGO (ring,tree; ^nvls; per "
                  "collective: ring;allreduce:tree), on top of the nccl: section's")
      ->needs(fc);
  cmd->add_option("--nccl-proto", a.nccl_proto,
                  "In NCCL semantics: the protocols, as NCCL_PROTO (LL,LL128,Simple; ^LL128; allreduce:Simple)")
      ->needs(fc);
  cmd->add_option("--fabric", a.fabric,
                      "Fabric backend: software (the model), dpdk (real frames, delivered at the packet model's "
                      "times; EAL arguments after --), socket (UDP datagrams between one loopback socket per rank, delivered at "
                      "the packet model's times) or fpga (the FPGA kernel computes every packet-hop of the "
                      "packet model: --device)")
      ->check(CLI::IsMember(fabric_names()));
  cmd->add_option("--device", a.device,
                      "FPGA: the device computing the packet model's link times: hwemu (the RTL under Verilator, "
                      "default), model (the C++ cycle model) or xrt:N (board N, with --xclbin)");
  cmd->add_option("--xclbin", a.xclbin, "FPGA: the kernel's .xclbin for --device xrt:N (hw/sched/vitis)");
  cmd->add_option("--fpga-interface", a.fpga_interface,
                      "FPGA: hops (the host keeps the packets and sends the card every packet-hop, in conservative "
                      "windows; default) or messages (the card keeps the packets: one descriptor in and one delivery "
                      "record out per message; --device model, the default here, or hwemu: the card's RTL under Verilator)")
      ->check(CLI::IsMember({"hops", "messages"}));
  cmd->add_option("--fpga-device-delay", a.fpga_device_delay_us,
                      "FPGA, with --dilation (hardware in the loop, --device hwemu or model): a stand-in device under test on "
                      "the card's wire, between its MAC and its receive path, that holds every frame this many "
                      "microseconds of wall time (rounded to 322.265625 MHz cycles; 0-1,000,000; default 0)")
      ->check(CLI::Range(0.0, 1'000'000.0));
  cmd->add_option("--fpga-device-rate", a.fpga_device_rate_gbps,
                      "FPGA, with --dilation: that device's rate in Gb/s of wall time (frame bytes; each frame behind "
                      "the frames before it; 0.001-100,000, in Mb/s steps; default 0: one 512-bit beat a cycle)")
      ->check(CLI::Range(0.0, 100'000.0));
  cmd->add_option("--fpga-device-ecn", a.fpga_device_ecn_bytes,
                      "FPGA, with --fpga-device-rate: that device marks CE on a frame (the card's frames are ECT(0)) "
                      "that finds at least this many bytes queued in it (default 0: never)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
  cmd->add_option("--fpga-device-drop", a.fpga_device_drop,
                      "FPGA, with --dilation: that device drops every Nth frame (N >= 2; default 0: none); the wire "
                      "section counts them lost per flow")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
}

// --fabric dpdk: the devices, the receive lcores, reliability.
void add_dpdk_options(CLI::App* cmd, run::RunArgs& a) {
  cmd->add_option("--dpdk-port", a.dpdk_port,
                      "DPDK: ring (in-process ring pair, default) or memif (in-process memif server and client)")
      ->check(CLI::IsMember({"ring", "memif"}));
  cmd->add_option("--dpdk-ring-delay", a.dpdk_ring_delay_us,
                      "DPDK: with --dpdk-port ring, a device between the ring pair's ports that holds every data frame "
                      "this many microseconds (wall time): a stand-in device under test of known latency, to see how "
                      "the DPDK section and the measured vs modelled table report a device slower than the target. "
                      "A thread polls for it: it takes a CPU of its own")
      ->check(CLI::Range(0.0, 1'000'000.0));
  cmd->add_option("--dpdk-ring-rate", a.dpdk_ring_rate_gbps,
                      "DPDK: with --dpdk-port ring, the rate of that device in Gb/s (wall time; each frame's bytes "
                      "cross it behind the frames before it, then the --dpdk-ring-delay): a device slower than the "
                      "target's links. 0 (default): no rate")
      ->check(CLI::Range(0.0, 100'000.0));
  cmd->add_option("--dpdk-ring-ecn", a.dpdk_ring_ecn_bytes,
                      "DPDK: with --dpdk-ring-rate, that device marks ECN as a switch queue does: an ECN-capable frame "
                      "(--wire-ecn ect0 or ect1) that finds at least this many bytes queued ahead of it leaves marked "
                      "CE. 0 (default): never marks")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
  cmd->add_option("--dpdk-devargs", a.dpdk_devargs,
                      "DPDK: a device to use instead of --dpdk-port (rte_dev_probe devargs); once: A loops frames back, "
                      "twice: data A -> B, ACK/NACK B -> A. Traffic only to devices you own (198.18.0.0/15 addresses)");
  cmd->add_option("--dpdk-rx-lcore", a.dpdk_rx_lcore,
                      "DPDK: the lcore of the receive side (port B, reassembly, ACK/NACK): auto (default: the first "
                      "worker lcore of EAL's -l, when there are two ports), off (the main lcore), an id, a list "
                      "of ids (e.g. 1,2: a receive lcore on each, a queue of each port per lcore), or all (every "
                      "worker lcore of EAL's)")
      ->check(lcore_option("auto, off, all", "auto|off|all|ID|ID,ID,..."));
  cmd->add_option("--dpdk-tx-lcore", a.dpdk_tx_lcore,
                      "DPDK: the transmit lcores (senders, pacing, frames on port A): off (default: the main lcore "
                      "sends), auto (the first worker lcore of EAL's not taken by the receive side), an id, a list of "
                      "ids (e.g. 2,3: links by source rank mod 2, a transmit queue of port A per lcore and receive "
                      "path), or all (every worker lcore the receive side leaves)")
      ->check(lcore_option("off, auto, all", "off|auto|all|ID|ID,ID,..."));
  cmd->add_option("--dpdk-verify-checksums", a.dpdk_verify_checksums,
                      "DPDK: the receive side's checks of data frames' UDP checksums (and RoCEv2 ICRCs): auto (default: "
                      "checked, but on an in-process ring pair, which hands over the sender's own mbufs) or on")
      ->check(CLI::IsMember({"auto", "on"}));
  cmd->add_option("--dpdk-stall-timeout", a.dpdk_stall_timeout_ms,
                      "DPDK: stop the run (report written, exit status 2) when a message the model has delivered "
                      "waits this many ms of wall time with no progress: no message completed and no ACK came back "
                      "(default 10000)")
      ->check(CLI::Range(1u, 86'400'000u));
  cmd->add_option("--dpdk-ahead", a.dpdk_ahead_us,
                      "DPDK, with --dilation: us of wall time the fabric works ahead of the dilated clock (default "
                      "20): messages handed to their senders and frames built that long before they are due, held "
                      "until then, so a transmit round hands the device frames already built; 0: at the time")
      ->check(CLI::Range(0u, 1'000'000u));
  cmd->add_option("--dpdk-rto", a.dpdk_rto_us,
                      "DPDK: the senders' retransmission timeout in us of wall time, the floor of the adaptive RTO "
                      "(default 10000); raise it above the queueing of a device with deep buffers")
      ->check(CLI::Range(10u, 10'000'000u));
  cmd->add_option("--dpdk-nack-delay", a.dpdk_nack_delay_us,
                      "DPDK: us of wall time a message's hole (or an idle incomplete message) waits before the "
                      "receiver NACKs it (default 200); above the path's reordering, below --dpdk-rto")
      ->check(CLI::Range(1u, 10'000'000u));
  cmd->add_option("--dpdk-window", a.dpdk_window,
                      "DPDK: messages in flight per (sender, receiver) pair, a power of two (default 1024)")
      ->check(CLI::Range(1u, 65536u))
      ->check([](const std::string& v) {
        const unsigned long n = std::stoul(v);
        return (n & (n - 1)) == 0 ? std::string() : std::string("not a power of two");
      });
}

// The real-time fabrics' pacing, frames, faults and capture (dpdk, socket; lab runs take the pacing).
void add_wire_options(CLI::App* cmd, run::RunArgs& a) {
  cmd->add_option("--dilation", a.dilation,
                      "DPDK, socket and lab runs: run D times slower than the target fabric (default 1); 0 = as fast "
                      "as possible; otherwise at least 0.0077. FPGA: hardware in the loop, the card's whole path in real "
                      "time at dilation D (0 < D < 65536; --device hwemu, the default, or model)")
      ->type_name("D")
      ->check(CLI::Number)
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_flag("--as-fast-as-possible", a.as_fast_as_possible,
                    "DPDK, socket and lab runs: do not follow the wall clock (the same as --dilation 0)");
  cmd->add_flag("--roce", a.roce, "DPDK: RoCEv2 frames (UDP 4791, BTH) instead of fabemu UDP frames");
  cmd->add_option("--wire-mtu", a.wire_mtu, "DPDK: IP MTU of the frames (default 1500)")
      ->check(CLI::Range(256u, 9000u));
  cmd->add_option("--wire-dscp", a.wire_dscp,
                      "DPDK and socket: the DSCP of every frame (0..63, default 0): the traffic class a switch queues "
                      "them in (e.g. 26, a common lossless class for RoCE)")
      ->check(CLI::Range(0u, 63u));
  cmd->add_option("--wire-ecn", a.wire_ecn,
                      "DPDK and socket: the ECN codepoint of every frame: not-ect (default), ect0 or ect1 (ECN-capable: "
                      "a switch that marks ECN marks them CE when its queue builds, and the report counts them)")
      ->check(CLI::IsMember({"not-ect", "ect0", "ect1"}));
  cmd->add_option("--address-plan", a.address_plan,
                      "DPDK: YAML rank -> MAC/IP/port plan (default: 198.18.0.1 + rank)");
  cmd->add_option("--drop-rate", a.drop_rate, "DPDK and socket: drop this fraction of data frames on receive")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--reorder-rate", a.reorder_rate, "DPDK and socket: hold back this fraction of data frames on receive")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--duplicate-rate", a.duplicate_rate, "DPDK and socket: duplicate this fraction of data frames on receive")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--fault-seed", a.fault_seed, "DPDK and socket: seed of the fault injection (default 1)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            uint64_t seed = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
            return !v.empty() && v.front() != '-' && ec == std::errc{} && end == v.data() + v.size()
                       ? std::string()
                       : "expected a whole number from 0 to 18446744073709551615, got " + v;
          },
          "0..2^64-1"));
  cmd->add_option("--pcap", a.pcap, "DPDK: capture every frame sent to this pcap file");
  cmd->add_option("--socket-base-port", a.socket_base_port,
                      "socket: rank r receives on 127.0.0.1 UDP port P + r (default 0: a free port per rank)");
  cmd->add_option("--socket-stall-timeout", a.socket_stall_timeout_ms,
                      "socket (and --agents over socket/dpdk): stop the run (report written, exit status 2) when a "
                      "message the model has delivered waits this many ms of wall time with nothing arriving for it "
                      "(default 10000)")
      ->check(CLI::Range(1u, 86'400'000u));
}

// The models: analytical or packet, process groups, chunks, compute.
void add_model_options(CLI::App* cmd, run::RunArgs& a) {
  cmd->add_option("--model,-m", a.model, "analytical (congestion-unaware, default) or packet (FIFO links)")
      ->check(CLI::IsMember({"analytical", "packet"}));
  cmd->add_option("--mtu", a.mtu, "Packet model: bytes per packet (default: whole messages, as ASTRA-sim)")
      ->check(CLI::Range(1u, ~0u));
  cmd->add_option("--comm-group-configuration,--comm-groups", a.comm_groups,
                      "JSON file {\"<pg_name>\": [ranks...]} naming process groups");
  cmd->add_option("--comm-streams", a.comm_streams,
                      "Chunks in flight per rank and dimension, 1 to 65536 as the chunk keys (default: "
                      "active-chunks-per-dimension)")
      ->check(CLI::Range(host::config::kChunkRange.min, host::config::kChunkRange.max));
  cmd->add_option("--compute-model", a.compute_model, "auto | duration | roofline")
      ->check(CLI::IsMember({"auto", "duration", "roofline"}));
  // The same ranges as the files' peak-perf and local-mem-bw (host/config/README.md, Bounds): a rate outside
  // them is refused here, naming the option, not later by the rate arithmetic.
  cmd->add_option("--peak-tflops", a.peak_tflops,
                      "Roofline: device peak, 10^12 ops/s, 0.001 to 10^6 (default: peak-perf)")
      ->check(CLI::Range(host::config::kPeakTflopsRange.min, host::config::kPeakTflopsRange.max));
  cmd->add_option("--mem-bw-GBps,--mem-bw-gbps", a.mem_bw_gbps,
                      "Roofline and reductions: memory bandwidth in GB/s, 10^9 bytes/s, 0.001 to 10^6 (default: "
                      "local-mem-bw; --mem-bw-gbps is the older spelling)")
      ->check(CLI::Range(host::config::kMemBwRange.min, host::config::kMemBwRange.max));
  cmd->add_option("--compute-scale", a.compute_scale,
                      "RANK=FACTOR or all=FACTOR: multiply that rank's compute times (stragglers); repeatable")
      ->take_all();
  cmd->add_flag("--no-closed-form", a.no_closed_form,
                    "Analytical model: walk every collective message by message (same result, slower)");
  cmd->add_option("--group-collectives", a.group_collectives,
                  "A process group over several network dimensions: hierarchical (dimension by dimension, "
                  "the default) | flat (one ring over its members, as ASTRA-sim 2.x)")
      ->check(CLI::IsMember({"hierarchical", "flat"}));
  cmd->add_flag("--strict", a.strict, "Dependency problems in the traces are errors, not warnings");
}

// The outputs (report, timeline, summary) and lab runs (--agents).
void add_output_options(CLI::App* cmd, run::RunArgs& a) {
  cmd->add_option("--report,-r", a.report, "Write the JSON report (docs/report.md) to this file");
  cmd->add_option("--timeline,-t", a.timeline, "Write a Chrome/Perfetto trace timeline to this file");
  cmd->add_option("--timeline-messages", a.timeline_messages,
                      "Timeline: message slices written at most (default 1000000; collectives are always there)");
  cmd->add_option("--link-series", a.link_series,
                      "Report: each link's busy time over the run in this many bins (even, 2-65536; packet model), "
                      "the report's link_series")
      ->type_name("BINS");
  cmd->add_option("--html", a.html,
                      "Write the run as one self-contained HTML page with charts: per-rank time, slowest collectives, "
                      "link utilization heatmap, traffic matrix, measured vs modelled (docs/report.md)")
      ->type_name("FILE");
  cmd->add_option("--top", a.top, "Slowest collectives listed in the summary (default 5)")->check(CLI::Range(0, 1000));
  cmd->add_flag("--quiet,-q", a.quiet, "Print nothing but errors (use with --report)");
  cmd->add_option("--agents", a.agents,
                      "Lab file (YAML): run on `fabemu agent`s on several hosts, this process coordinating "
                      "(host/lab/README.md); the packet model, --dilation paces it")
      ->type_name("LAB.yaml");
  cmd->add_option("--metrics", a.metrics,
                      "With --agents: serve the coordinator's Prometheus metrics (GET /metrics) here during the run; with --fabric socket or dpdk: the run's own")
      ->type_name("ADDR:PORT");
}
}  // namespace

void add_run_command(CLI::App& app, int& status, const std::vector<std::string>& passthrough) {
  auto args = std::make_shared<run::RunArgs>();
  CLI::App* run_cmd = app.add_subcommand("run", "Replay a Chakra workload over a target fabric and report its time");
  add_input_options(run_cmd, *args);
  add_dpdk_options(run_cmd, *args);
  add_wire_options(run_cmd, *args);
  add_model_options(run_cmd, *args);
  add_output_options(run_cmd, *args);
  run_cmd->footer("Arguments after `--` are EAL arguments (--fabric dpdk); without them: no hugepages, lcore 0.");
  run_cmd->callback([args, run_cmd, &status, &passthrough]() {
    if (args->fabric_config.empty() && args->network.empty()) {
      throw CLI::RequiredError("--fabric-config or --network");
    }
    for (const CLI::Option* o : run_cmd->get_options()) {
      if (o->count() > 0 && !o->get_lnames().empty()) args->given.push_back("--" + o->get_lnames().front());
    }
    args->eal_args = passthrough;
    if (!args->eal_args.empty() && args->fabric != "dpdk") {
      throw std::invalid_argument("arguments after -- are EAL arguments: they need --fabric dpdk");
    }
    status = run::run_workload(*args);
  });
}

}  // namespace fabemu::cli
