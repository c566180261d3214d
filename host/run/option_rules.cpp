#include "host/run/option_rules.h"

#include <fmt/core.h>

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "emulator/dilation.h"

namespace fabemu::run {

// `--fabric fpga --dilation D`: the card's whole path in real time (hardware in the loop, over the
// message-level interface); its device options need it, and it needs a card with a wire.
namespace {
void check_fpga_wire(const RunArgs& a) {
  const auto given = [&a](std::string_view name) { return a.was_given(name); };
  if (a.fabric != "fpga") return;
  for (const char* o : {"--fpga-device-delay", "--fpga-device-rate", "--fpga-device-ecn", "--fpga-device-drop"}) {
    if (given(o) && !given("--dilation")) {
      throw std::invalid_argument(fmt::format(
          "{} sets the stand-in device on the card's wire, which runs with --dilation (hardware in the loop): give "
          "--dilation too",
          o));
    }
  }
  if (!given("--dilation")) return;
  if (given("--fpga-interface") && a.fpga_interface != "messages") {
    throw std::invalid_argument(
        "--dilation with --fabric fpga runs the card's whole path in real time over the message-level interface: "
        "--fpga-interface hops does not take it");
  }
  if (!a.device.empty() && a.device != "hwemu" && a.device != "model") {
    throw std::invalid_argument(fmt::format(
        "--dilation with --fabric fpga (hardware in the loop) runs on --device hwemu or model; --device {} has no "
        "wire yet",
        a.device));
  }
  if (given("--fpga-device-ecn") && a.fpga_device_ecn_bytes > 0 && a.fpga_device_rate_gbps <= 0) {
    throw std::invalid_argument("--fpga-device-ecn marks frames by the queue that builds behind the device's rate: "
                                "give --fpga-device-rate too");
  }
  if (given("--fpga-device-drop") && a.fpga_device_drop == 1) {
    throw std::invalid_argument("--fpga-device-drop 1 would drop every frame: give 0 (none) or N >= 2");
  }
  if (given("--fpga-device-rate") && a.fpga_device_rate_gbps > 0 && a.fpga_device_rate_gbps < 0.001) {
    throw std::invalid_argument("--fpga-device-rate: at least 0.001 Gb/s (the device counts in Mb/s), or 0 for none");
  }
  if (a.dilation <= 0) {
    throw std::invalid_argument("--dilation 0 (as fast as possible) with --fabric fpga: the card's wire paces frames "
                                "on its clock; give a dilation above 0");
  }
  if (a.dilation >= 65536) {
    throw std::invalid_argument(fmt::format("--dilation {} with --fabric fpga: below 65536 (the card's scaling)", a.dilation));
  }
}
}  // namespace

// Options given for a fabric that does not use them, or together with one they contradict: an error
// naming both, never silently ignored. Without --agents (a lab run takes its wire from the lab file).
void check_options(const RunArgs& a) {
  const auto given = [&a](std::string_view name) { return a.was_given(name); };
  if (given("--dilation") && given("--as-fast-as-possible")) {
    throw std::invalid_argument("--as-fast-as-possible is --dilation 0: give one of them, not both");
  }
  if (given("--dilation")) emu::dilation_q16(a.dilation);  // too small for the clocks: refused before any set-up
  if (given("--dpdk-port") && given("--dpdk-devargs")) {
    throw std::invalid_argument(
        "--dpdk-port picks fabemu's own in-process devices, --dpdk-devargs devices of yours: give one of them, not both");
  }
  for (const char* device : {"--dpdk-ring-delay", "--dpdk-ring-rate", "--dpdk-ring-ecn"}) {
    if (given(device) && (a.dpdk_port != "ring" || given("--dpdk-devargs"))) {
      throw std::invalid_argument(fmt::format(
          "{} sets a device inside fabemu's in-process ring pair (--dpdk-port ring, the default): it does not apply "
          "to {}",
          device, given("--dpdk-devargs") ? "--dpdk-devargs" : "--dpdk-port memif"));
    }
  }
  if (given("--dpdk-ring-ecn") && a.dpdk_ring_ecn_bytes > 0 && a.dpdk_ring_rate_gbps <= 0) {
    throw std::invalid_argument("--dpdk-ring-ecn marks frames by the queue that builds behind the device's rate: give "
                                "--dpdk-ring-rate too");
  }
  struct Rule {
    const char* option;
    std::initializer_list<std::string_view> fabrics;
  };
  const auto check = [&](std::span<const Rule> rules) {
    for (const Rule& r : rules) {
      if (!given(r.option) || std::find(r.fabrics.begin(), r.fabrics.end(), a.fabric) != r.fabrics.end()) continue;
      std::string which;
      for (const std::string_view f : r.fabrics) which += (which.empty() ? "--fabric " : " or --fabric ") + std::string(f);
      throw std::invalid_argument(fmt::format("{} needs {}; this run is on --fabric {}, which does not use it",
                                              r.option, which, a.fabric));
    }
  };
  static const Rule fpga[] = {{"--device", {"fpga"}},
                              {"--xclbin", {"fpga"}},
                              {"--fpga-interface", {"fpga"}},
                              {"--fpga-device-delay", {"fpga"}},
                              {"--fpga-device-rate", {"fpga"}},
                              {"--fpga-device-ecn", {"fpga"}},
                              {"--fpga-device-drop", {"fpga"}}};
  check(fpga);
  check_fpga_wire(a);
  static const Rule wire[] = {
      {"--dpdk-port", {"dpdk"}},          {"--dpdk-devargs", {"dpdk"}},          {"--dpdk-rx-lcore", {"dpdk"}},
      {"--dpdk-tx-lcore", {"dpdk"}},
      {"--dpdk-ring-delay", {"dpdk"}},   {"--dpdk-ring-rate", {"dpdk"}},       {"--dpdk-ring-ecn", {"dpdk"}},
      {"--wire-dscp", {"dpdk", "socket"}}, {"--wire-ecn", {"dpdk", "socket"}},
      {"--dpdk-verify-checksums", {"dpdk"}}, {"--dpdk-stall-timeout", {"dpdk"}}, {"--dpdk-rto", {"dpdk"}},
      {"--dpdk-ahead", {"dpdk"}},
      {"--dpdk-nack-delay", {"dpdk"}},    {"--dpdk-window", {"dpdk"}},           {"--roce", {"dpdk"}},
      {"--wire-mtu", {"dpdk"}},           {"--address-plan", {"dpdk"}},          {"--pcap", {"dpdk"}},
      {"--drop-rate", {"dpdk", "socket"}}, {"--reorder-rate", {"dpdk", "socket"}},
      {"--duplicate-rate", {"dpdk", "socket"}}, {"--fault-seed", {"dpdk", "socket"}},
      {"--dilation", {"dpdk", "socket", "fpga"}}, {"--as-fast-as-possible", {"dpdk", "socket"}},
      {"--socket-base-port", {"socket"}}, {"--socket-stall-timeout", {"socket"}},
  };
  if (a.agents.empty()) {
    check(wire);
    return;
  }
  // A lab run takes its wire from the lab file and its pacing from these; every other option of the table
  // above has no effect there (and so does any added to it later): an error, naming what does it instead.
  static const std::string_view lab_takes[] = {"--dilation", "--as-fast-as-possible", "--socket-stall-timeout"};
  static const std::pair<std::string_view, const char*> instead[] = {
      {"--roce", "the lab file's \"wire: roce\" chooses RoCEv2 frames"},
      {"--wire-dscp", "the lab file's \"dscp\" sets the frames' DSCP"},
      {"--wire-ecn", "the lab file's \"ecn\" sets the frames' ECN codepoint"},
      {"--socket-base-port", "the lab file's \"data\" addresses set the agents' ports"},
      {"--dpdk-port", "each agent's --dpdk-device is its port"},
      {"--dpdk-devargs", "each agent's --dpdk-device is its port"},
  };
  for (const Rule& r : wire) {
    if (!given(r.option) || std::find(std::begin(lab_takes), std::end(lab_takes), r.option) != std::end(lab_takes)) {
      continue;
    }
    for (const auto& [option, text] : instead) {
      if (option == r.option) {
        throw std::invalid_argument(fmt::format("{} does not apply to a lab run (--agents): {}", r.option, text));
      }
    }
    throw std::invalid_argument(fmt::format(
        "{} does not apply to a lab run (--agents), whose agents' socket fabric does not take it; a lab run "
        "takes --dilation, --as-fast-as-possible and --socket-stall-timeout",
        r.option));
  }
}

}  // namespace fabemu::run
