// `fabric: dpdk` on ports that record what they are asked to open (no DPDK needed): replay() addresses every
// rank at its agent's port MAC, IP 198.18.0.1 + rank, UDP 47000, with the local ranks and the largest
// datagram; a run without a port or without a rank's MAC is an error naming it. And the whole protocol with
// three in-process agents: each agent's MAC reaches every other one through Prepared and Start; two agents
// on one MAC are refused before the start.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "host/wire/address_plan.h"
#include "host/lab/agent.h"
#include "host/lab/coordinator.h"
#include "host/lab/datagram_transport.h"
#include "host/lab/replay.h"
#include "tests/support/test_support.h"

namespace fabemu::lab {
namespace {

namespace fs = std::filesystem;

// Ports of several agents that throw only once all of them have recorded (or after 10 s): the first
// agent's failure stops the run, and an agent whose Stop came before its open() would record nothing.
struct OpenBarrier {
  explicit OpenBarrier(int n) : expected(n) {}
  void arrive() {
    std::unique_lock lock(m);
    ++opened;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(10), [this] { return opened >= expected; });
  }
  std::mutex m;
  std::condition_variable cv;
  int opened = 0;
  const int expected;
};

class RecordingPort final : public LabDataPort {
 public:
  explicit RecordingPort(uint8_t last = 0x0a, OpenBarrier* barrier = nullptr)
      : mac_{0x02, 0, 0, 0, 0, last}, barrier_(barrier) {}
  host::dpdk::MacAddr mac() const override { return mac_; }
  std::string describe() const override { return "recording port"; }
  std::unique_ptr<DatagramTransport> open(std::vector<host::dpdk::Endpoint> endpoints, std::vector<bool> local,
                                          uint32_t max_datagram, const LabWire& wire) override {
    endpoints_ = std::move(endpoints);
    local_ = std::move(local);
    max_datagram_ = max_datagram;
    mode_ = wire.mode;
    dscp_ = wire.dscp;
    ecn_ = wire.ecn;
    if (barrier_ != nullptr) barrier_->arrive();
    throw std::invalid_argument("recorded, not opened");
  }
  host::dpdk::MacAddr mac_;
  OpenBarrier* barrier_;
  std::vector<host::dpdk::Endpoint> endpoints_;
  std::vector<bool> local_;
  uint32_t max_datagram_ = 0;
  host::dpdk::WireMode mode_ = host::dpdk::WireMode::kFabemu;
  uint8_t dscp_ = 0xFF;
  host::dpdk::Ecn ecn_ = host::dpdk::Ecn::kCe;
};

std::optional<fs::path> workload_prefix() {
  const auto traces = test::shared_traces_dir();
  if (!traces) return std::nullopt;
  return *traces / "astra-sim/examples/workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce";
}
fs::path configs_dir() { return test::shared_traces_dir()->parent_path() / "configs" / "astra-sim"; }

class LabReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto prefix = workload_prefix();
    if (!prefix) GTEST_SKIP() << "../shared/traces is absent: replay test skipped";
    const fs::path configs = configs_dir();
    assign_.set_run_id("r1");
    assign_.set_world_size(8);
    assign_.set_fabric_config("dpdk");
    assign_.mutable_spec()->set_model("packet");
    for (uint32_t r = 0; r < 8; ++r) {
      proto::RankAssignment* ra = assign_.add_ranks();
      ra->set_rank(r);
      ra->set_fabric("dpdk");
      ra->set_agent(r < 3 ? "a" : r < 6 ? "b" : "c");
      input_.trace_paths.push_back(prefix->string() + "." + std::to_string(r) + ".et");
    }
    for (const uint32_t r : {3u, 4u, 5u}) assign_.add_local_ranks(r);
    input_.assign = &assign_;
    input_.config_paths = {{"network", (configs / "Ring_8npus.yml").string()},
                           {"system", (configs / "system_ring_4chunks.json").string()}};
    input_.stop = &stop_;
    input_.data_port = &port_;
    input_.agent_macs = {{"a", std::string("\x02\x00\x00\x00\x00\x0a", 6)},
                         {"b", std::string("\x02\x00\x00\x00\x00\x0b", 6)},
                         {"c", std::string("\x02\x00\x00\x00\x00\x0c", 6)}};
  }

  // replay()'s error; "" when it returned (it must not: the port refuses to open).
  std::string error_of_replay() {
    bool delivered = false;
    try {
      replay(input_, [&](ReplayOutput&&) { delivered = true; });
    } catch (const std::exception& e) {
      EXPECT_FALSE(delivered);
      return e.what();
    }
    return "";
  }

  proto::AssignRanks assign_;
  ReplayInput input_;
  RecordingPort port_;
  std::atomic<bool> stop_{false};
};

TEST_F(LabReplay, DpdkRanksAreAddressedAtTheirAgentsPorts) {
  const std::string error = error_of_replay();
  EXPECT_NE(error.find("dpdk fabric: cannot open the data plane on recording port (rank 3 at 02:00:00:00:00:0b/"
                       "198.18.0.4, rank 4 at 02:00:00:00:00:0b/198.18.0.5, rank 5 at 02:00:00:00:00:0b/198.18.0.6): "
                       "recorded, not opened"),
            std::string::npos)
      << error;
  ASSERT_EQ(port_.endpoints_.size(), 8u);
  const host::dpdk::MacAddr macs[3] = {{0x02, 0, 0, 0, 0, 0x0a}, {0x02, 0, 0, 0, 0, 0x0b}, {0x02, 0, 0, 0, 0, 0x0c}};
  for (uint32_t r = 0; r < 8; ++r) {
    EXPECT_EQ(port_.endpoints_[r].mac, macs[r < 3 ? 0 : r < 6 ? 1 : 2]) << "rank " << r;
    EXPECT_EQ(port_.endpoints_[r].ip, 0xC6120001u + r) << "rank " << r;
    EXPECT_EQ(port_.endpoints_[r].port, 47000) << "rank " << r;
  }
  EXPECT_EQ(port_.local_, (std::vector<bool>{false, false, false, true, true, true, false, false}));
  EXPECT_EQ(port_.max_datagram_, 60u + 1400u);  // header + payload: 1488 bytes with IPv4/UDP, a 1500 MTU
  EXPECT_EQ(port_.mode_, host::dpdk::WireMode::kFabemu);
  EXPECT_EQ(port_.dscp_, 0);
  EXPECT_EQ(port_.ecn_, host::dpdk::Ecn::kNotEct);
}

// lab.yaml `dscp: 46`, `ecn: ect1`: the port opened for frames of that traffic class; a codepoint the
// coordinator cannot have sent is refused before the port is opened.
TEST_F(LabReplay, TrafficClassOpensThePortForIt) {
  assign_.set_dscp(46);
  assign_.set_ecn("ect1");
  (void)error_of_replay();
  EXPECT_EQ(port_.dscp_, 46);
  EXPECT_EQ(port_.ecn_, host::dpdk::Ecn::kEct1);
  assign_.set_ecn("ect0");
  (void)error_of_replay();
  EXPECT_EQ(port_.ecn_, host::dpdk::Ecn::kEct0);
  port_.endpoints_.clear();
  assign_.set_ecn("ce");
  EXPECT_NE(error_of_replay().find("AssignRanks: \"ce\" is not an ECN codepoint a sender sets (not-ect, ect0, ect1)"),
            std::string::npos);
  assign_.set_ecn("");
  assign_.set_dscp(64);
  EXPECT_NE(error_of_replay().find("AssignRanks: DSCP 64 does not fit the field's 6 bits (0..63)"), std::string::npos);
  EXPECT_TRUE(port_.endpoints_.empty());  // never asked to open
}

// lab.yaml `wire: roce`: the port opened for RoCEv2 frames, whose BTH and ICRC leave 1396 message bytes
// per packet in a 1500-byte MTU (20 + 8 + 12 + 60 + 1396 + 4 = 1500).
TEST_F(LabReplay, RoceWireOpensThePortForRoceFrames) {
  assign_.set_wire("roce");
  (void)error_of_replay();
  EXPECT_EQ(port_.mode_, host::dpdk::WireMode::kRoceV2);
  EXPECT_EQ(port_.max_datagram_, 60u + 1396u);
}

TEST_F(LabReplay, DpdkWithoutAPortOrAMacIsAnError) {
  input_.agent_macs.erase("c");
  EXPECT_NE(error_of_replay().find("rank 6: Start carries no 6-byte MAC for its agent \"c\""), std::string::npos);
  input_.agent_macs["c"] = "\x02\x00";
  EXPECT_NE(error_of_replay().find("rank 6: Start carries no 6-byte MAC for its agent \"c\""), std::string::npos);
  EXPECT_TRUE(port_.endpoints_.empty());  // never asked to open
  input_.data_port = nullptr;
  EXPECT_NE(error_of_replay().find("lab fabric dpdk: this agent has no DPDK port (start it with --dpdk-device)"),
            std::string::npos);
}

// Three agents in this process, each on its own io_context thread and recording port (MACs ...:0a, 0b, 0c
// unless a test says otherwise), and the coordinator: run_lab() over the 8-rank all-reduce split 3/3/2.
class LabDpdkRun : public ::testing::Test {
 protected:
  static constexpr const char* kToken = "lab-dpdk-run-token";

  void SetUp() override {
    prefix_ = workload_prefix();
    if (!prefix_) GTEST_SKIP() << "../shared/traces is absent: lab dpdk run test skipped";
  }
  void TearDown() override { stop_agents(); }

  void start_agents(const std::array<uint8_t, 3>& macs) {
    for (int i = 0; i < 3; ++i) {
      ports_[i] = std::make_unique<RecordingPort>(macs[i], &barrier_);
      AgentOptions o;
      o.listen = {boost::asio::ip::make_address("127.0.0.1"), 0};
      o.token = kToken;
      o.agent_id = "host" + std::to_string(i);
      // One folder each: the run folders are named by run id and pid, the same for the three.
      const fs::path work = scratch_.path() / ("work" + std::to_string(i));
      fs::create_directories(work);
      o.work_dir = work.string();
      o.data_port = ports_[i].get();
      agents_[i] = std::make_unique<Agent>(io_[i], std::move(o));
      agents_[i]->start();
      threads_[i] = std::thread([this, i] { io_[i].run(); });
    }
  }
  // Stops the agents and joins their run threads: the ports' records are then complete.
  void stop_agents() {
    for (int i = 0; i < 3; ++i) {
      if (!agents_[i]) continue;
      boost::asio::post(io_[i], [this, i] { agents_[i]->stop(); });
      threads_[i].join();
      agents_[i].reset();
    }
  }

  LabRunOutcome run() {
    const std::string lab = scratch_.file("lab.yaml");
    {
      std::ofstream out(lab);
      out << "token_file: lab.token\nfabric: dpdk\ndscp: 10\necn: ect1\nagents:\n";
      const char* ranks[3] = {"0-2", "3-5", "6-7"};
      for (int i = 0; i < 3; ++i) {
        out << "  - name: " << static_cast<char>('a' + i) << "\n    control: 127.0.0.1:"
            << agents_[i]->local_endpoint().port() << "\n    data: 127.0.0.1:" << 47000 + 100 * i
            << "\n    ranks: " << ranks[i] << "\n";
      }
    }
    LabRunRequest request;
    request.lab = load_lab_config(lab);
    validate_ranks(request.lab, 8);
    for (const auto& [role, name] : {std::pair{"network", "Ring_8npus.yml"}, {"system", "system_ring_4chunks.json"}}) {
      std::ifstream in(configs_dir() / name);
      std::ostringstream content;
      content << in.rdbuf();
      proto::ConfigFile* f = request.spec.add_files();
      f->set_role(role);
      f->set_name(name);
      f->set_content(content.str());
    }
    request.spec.set_model("packet");
    for (int r = 0; r < 8; ++r) request.trace_paths.push_back(prefix_->string() + "." + std::to_string(r) + ".et");
    CoordinatorOptions options;
    options.token = kToken;
    LabRunOutcome outcome = run_lab(request, options);
    stop_agents();
    return outcome;
  }

  std::optional<fs::path> prefix_;
  test::ScratchDir scratch_;
  std::array<boost::asio::io_context, 3> io_;
  OpenBarrier barrier_{3};
  std::array<std::unique_ptr<RecordingPort>, 3> ports_;
  std::array<std::unique_ptr<Agent>, 3> agents_;
  std::array<std::thread, 3> threads_;
};

TEST_F(LabDpdkRun, EveryAgentLearnsEveryAgentsMac) {
  start_agents({0x0a, 0x0b, 0x0c});
  const LabRunOutcome outcome = run();
  // The recording ports refuse to open: the run fails after Start, naming the port and the agent's ranks.
  EXPECT_TRUE(std::regex_search(outcome.fatal, std::regex(R"(agent [abc] \(127\.0\.0\.1:\d+\): run \w+: dpdk fabric: )"
                                                          R"(cannot open the data plane on recording port \(rank \d at )")))
      << outcome.fatal;
  const uint8_t owner_mac[8] = {0x0a, 0x0a, 0x0a, 0x0b, 0x0b, 0x0b, 0x0c, 0x0c};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(ports_[i]->endpoints_.size(), 8u) << "agent " << i;
    for (uint32_t r = 0; r < 8; ++r) {
      EXPECT_EQ(ports_[i]->endpoints_[r].mac, (host::dpdk::MacAddr{0x02, 0, 0, 0, 0, owner_mac[r]})) << i << " " << r;
      EXPECT_EQ(ports_[i]->endpoints_[r].ip, 0xC6120001u + r);
    }
    for (uint32_t r = 0; r < 8; ++r) EXPECT_EQ(ports_[i]->local_[r], owner_mac[r] == 0x0a + i) << i << " " << r;
    // lab.yaml's traffic class, through AssignRanks to every agent's port.
    EXPECT_EQ(ports_[i]->dscp_, 10) << "agent " << i;
    EXPECT_EQ(ports_[i]->ecn_, host::dpdk::Ecn::kEct1) << "agent " << i;
  }
  ASSERT_EQ(outcome.agents.size(), 3u);
  EXPECT_EQ(outcome.agents[0].mac, "02:00:00:00:00:0a");
  EXPECT_EQ(outcome.agents[1].mac, "02:00:00:00:00:0b");
  EXPECT_EQ(outcome.agents[2].mac, "02:00:00:00:00:0c");
}

TEST_F(LabDpdkRun, TwoAgentsOnOneMacAreRefusedBeforeTheStart) {
  start_agents({0x0a, 0x0b, 0x0b});
  const LabRunOutcome outcome = run();
  EXPECT_TRUE(std::regex_search(outcome.fatal, std::regex(R"(agent ([bc]) \(127\.0\.0\.1:\d+\): its DPDK port has MAC )"
                                                          R"(02:00:00:00:00:0b, as agent ([bc])'s has: every agent )"
                                                          R"(needs a port of its own)")))
      << outcome.fatal;
  EXPECT_EQ(outcome.start_sent_ns, 0);  // no Start
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(ports_[i]->endpoints_.empty()) << "agent " << i << " was started";
}

}  // namespace
}  // namespace fabemu::lab
