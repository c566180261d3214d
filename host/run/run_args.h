// The options of one `fabemu run`, as the command line gave them (host/cli/run_command.cpp declares and checks
// them; docs: README.md, "fabemu run"). Every backend reads the ones it uses from here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabemu::run {

struct RunArgs {
  std::string workload;
  std::string fabric_config;
  std::string collective_semantics;  // --collective-semantics astra|nccl; "" = the fabric file's (else astra)
  std::string nccl_algo, nccl_proto;  // --nccl-algo / --nccl-proto: NCCL_ALGO / NCCL_PROTO on top of the file's
  std::string network;
  std::string system;
  std::string fabric = "software";
  std::string model;
  uint32_t mtu = 0;
  std::string comm_groups;
  int64_t comm_streams = 0;
  std::string compute_model = "auto";
  double peak_tflops = 0;
  double mem_bw_gbps = 0;
  std::vector<std::string> compute_scale;
  bool no_closed_form = false;
  std::string group_collectives = "hierarchical";  // --group-collectives hierarchical | flat
  bool strict = false;
  std::string report;
  std::string timeline;
  uint64_t timeline_messages = 1'000'000;
  uint32_t link_series = 0;  // --link-series BINS (0: none)
  std::string html;          // --html FILE: the run page (host/report/run_page.h)
  size_t top = 5;
  bool quiet = false;
  // --fabric fpga
  std::string device;
  std::string xclbin;
  std::string fpga_interface = "hops";
  // --fabric fpga --dilation D (hardware in the loop): the stand-in device under test on the card's wire
  double fpga_device_delay_us = 0;
  double fpga_device_rate_gbps = 0;
  uint64_t fpga_device_ecn_bytes = 0;
  uint64_t fpga_device_drop = 0;
  // --fabric dpdk
  std::string dpdk_port = "ring";
  double dpdk_ring_delay_us = 0;
  double dpdk_ring_rate_gbps = 0;
  uint64_t dpdk_ring_ecn_bytes = 0;
  std::vector<std::string> dpdk_devargs;
  std::string dpdk_rx_lcore = "auto";
  std::string dpdk_tx_lcore = "off";
  std::string dpdk_verify_checksums = "auto";
  uint32_t dpdk_stall_timeout_ms = 10'000;
  uint32_t dpdk_ahead_us = 20;
  uint32_t dpdk_rto_us = 10'000;
  uint32_t dpdk_nack_delay_us = 200;
  uint32_t dpdk_window = 1024;
  double dilation = 1;
  bool as_fast_as_possible = false;
  bool roce = false;
  uint32_t wire_mtu = 1500;
  uint32_t wire_dscp = 0;
  std::string wire_ecn = "not-ect";
  std::string address_plan;
  double drop_rate = 0;
  double reorder_rate = 0;
  double duplicate_rate = 0;
  uint64_t fault_seed = 1;
  std::string pcap;
  std::vector<std::string> eal_args;  // after `--`
  // --agents: a multi-host lab run (host/lab/README.md)
  std::string agents;
  std::string metrics;
  // --fabric socket
  uint16_t socket_base_port = 0;
  uint32_t socket_stall_timeout_ms = 10'000;
  std::vector<std::string> given;  // the options on the command line (check_options)

  // Whether `option` ("--mtu") was on the command line.
  bool was_given(std::string_view option) const {
    for (const std::string& g : given) {
      if (g == option) return true;
    }
    return false;
  }
};

}  // namespace fabemu::run
