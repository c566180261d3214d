// lab.yaml: which agent hosts which ranks of a multi-host run, where its control plane listens and where
// its ranks receive data (host/lab/README.md, "lab.yaml").
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace fabemu::lab {

struct LabAgentConfig {
  std::string name;                            // unique in the file
  boost::asio::ip::tcp::endpoint control;      // the agent's --listen address
  // Its first rank's UDP endpoint; rank i of the agent: port + i. Socket fabric only: with `fabric: dpdk`
  // the ranks' addresses come from the agents' ports (lab_dpdk_endpoint), the key is still required.
  boost::asio::ip::udp::endpoint data;
  std::vector<uint32_t> ranks;                 // ascending
  uint64_t line = 0;                           // of the entry in the file, for messages
};

struct LabConfig {
  std::string source;                          // the file
  std::string token_file;                      // resolved against the file's folder
  std::string fabric = "socket";               // socket | model | dpdk
  std::string wire = "fabemu";                 // fabric dpdk: the frames, fabemu (UDP) | roce (RoCEv2)
  uint32_t dscp = 0;                           // fabric socket/dpdk: every packet's IPv4 DSCP, 0-63
  std::string ecn = "not-ect";                 // fabric socket/dpdk: every packet's ECN codepoint, not-ect | ect0 | ect1
  bool shared_storage = false;
  std::vector<LabAgentConfig> agents;
  // rank -> index into agents, and rank -> data endpoint (after validate_ranks)
  std::vector<uint32_t> owner;
  std::vector<boost::asio::ip::udp::endpoint> endpoints;
};

// Reads and checks the file: known keys only, addresses that parse, rank lists ("0-2", "0,3,5-7", a
// YAML list of numbers or ranges), unique names and control addresses. Throws traces::TraceError naming
// the file and the line.
LabConfig load_lab_config(const std::string& path);

// Checks that every rank 0..world_size-1 is hosted exactly once and fills owner/endpoints; TraceError
// naming the file (and the agent's line) otherwise.
void validate_ranks(LabConfig& config, uint32_t world_size);

// "0-2,5" for {0,1,2,5}.
std::string format_ranks(const std::vector<uint32_t>& ranks);

}  // namespace fabemu::lab
