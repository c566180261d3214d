// lab.yaml: the agents, their addresses and ranks; every mistake named with the file and the line.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <fstream>

#include "host/lab/lab_config.h"
#include "tests/support/test_support.h"
#include "traces/error.h"

namespace fabemu::lab {
namespace {

std::string write(const test::ScratchDir& dir, const std::string& text) {
  const std::string path = dir.file("lab.yaml");
  std::ofstream(path) << text;
  return path;
}

// The TraceError's message, or "" when loading (and validating for `world` ranks) succeeds.
std::string error_of(const std::string& path, uint32_t world) {
  try {
    LabConfig c = load_lab_config(path);
    validate_ranks(c, world);
  } catch (const traces::TraceError& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kGood = R"(token_file: lab.token
fabric: model
agents:
  - name: a
    control: 127.0.0.1:7401
    data: 127.0.0.1:47000
    ranks: 0-2,5
  - name: b
    control: "[::1]:7402"
    data: "[::1]:47000"
    ranks: [3, 4, 6-7]
)";

TEST(LabConfig, ReadsAgentsRanksAndDataEndpoints) {
  test::ScratchDir dir;
  const std::string path = write(dir, kGood);
  LabConfig c = load_lab_config(path);
  EXPECT_EQ(c.token_file, dir.file("lab.token"));
  EXPECT_EQ(c.fabric, "model");
  EXPECT_FALSE(c.shared_storage);
  ASSERT_EQ(c.agents.size(), 2u);
  EXPECT_EQ(c.agents[0].ranks, (std::vector<uint32_t>{0, 1, 2, 5}));
  EXPECT_EQ(c.agents[1].ranks, (std::vector<uint32_t>{3, 4, 6, 7}));
  EXPECT_EQ(c.agents[1].control.port(), 7402);
  EXPECT_TRUE(c.agents[1].control.address().is_v6());
  validate_ranks(c, 8);
  EXPECT_EQ(c.owner, (std::vector<uint32_t>{0, 0, 0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(c.endpoints[5].port(), 47003);  // a's fourth rank
  EXPECT_EQ(c.endpoints[6].port(), 47002);  // b's third rank
  EXPECT_EQ(format_ranks(c.agents[0].ranks), "0-2,5");
}

TEST(LabConfig, DpdkIsALabFabric) {
  test::ScratchDir dir;
  std::string text = kGood;
  text.replace(text.find("fabric: model"), 13, "fabric: dpdk");
  const std::string path = write(dir, text);
  LabConfig c = load_lab_config(path);
  EXPECT_EQ(c.fabric, "dpdk");
  EXPECT_EQ(c.wire, "fabemu");
  validate_ranks(c, 8);
  EXPECT_EQ(c.owner, (std::vector<uint32_t>{0, 0, 0, 1, 1, 0, 1, 1}));
  // RoCEv2 frames: only over DPDK ports; an unknown wire named with its line.
  text.replace(text.find("fabric: dpdk"), 12, "fabric: dpdk\nwire: roce");
  EXPECT_EQ(load_lab_config(write(dir, text)).wire, "roce");
  std::string socket = text;
  socket.replace(socket.find("fabric: dpdk"), 12, "fabric: socket");
  const std::string e1 = error_of(write(dir, socket), 8);
  EXPECT_NE(e1.find("line 3"), std::string::npos) << e1;
  EXPECT_NE(e1.find("key \"wire\": roce frames need fabric dpdk (the fabric is socket)"), std::string::npos) << e1;
  std::string bad = text;
  bad.replace(bad.find("wire: roce"), 10, "wire: rocev3");
  const std::string e2 = error_of(write(dir, bad), 8);
  EXPECT_NE(e2.find("line 3"), std::string::npos) << e2;
  EXPECT_NE(e2.find("\"rocev3\""), std::string::npos) << e2;
  EXPECT_NE(e2.find("is not a wire format; expected fabemu or roce"), std::string::npos) << e2;
}

// dscp and ecn: every packet's traffic class, over sockets or DPDK ports; bad values named with their line.
TEST(LabConfig, TrafficClassOfTheDpdkFrames) {
  test::ScratchDir dir;
  std::string text = kGood;
  text.replace(text.find("fabric: model"), 13, "fabric: dpdk\ndscp: 26\necn: ect0");
  LabConfig c = load_lab_config(write(dir, text));
  EXPECT_EQ(c.dscp, 26u);
  EXPECT_EQ(c.ecn, "ect0");
  text.replace(text.find("ecn: ect0"), 9, "ecn: ect1");
  EXPECT_EQ(load_lab_config(write(dir, text)).ecn, "ect1");
  c = load_lab_config(write(dir, kGood));
  EXPECT_EQ(c.dscp, 0u);
  EXPECT_EQ(c.ecn, "not-ect");
  const auto error_with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return error_of(write(dir, t), 8);
  };
  for (const char* v : {"64", "-1", "af41", "2.5"}) {
    const std::string e = error_with("dscp: 26", std::string("dscp: ") + v);
    EXPECT_NE(e.find("line 3"), std::string::npos) << e;
    EXPECT_NE(e.find(fmt::format("key \"dscp\": \"{}\" is not a DSCP (0 to 63)", v)), std::string::npos) << e;
  }
  const std::string ce = error_with("ecn: ect1", "ecn: ce");
  EXPECT_NE(ce.find("line 4"), std::string::npos) << ce;
  EXPECT_NE(ce.find("key \"ecn\": \"ce\" is not an ECN codepoint a sender sets; expected not-ect, ect0 or ect1"),
            std::string::npos)
      << ce;
  const std::string typo = error_with("ecn: ect1", "ecn: etc1");
  EXPECT_NE(typo.find("did you mean"), std::string::npos) << typo;
  // Over kernel UDP sockets too (IP_TOS); the model alone has no wire.
  std::string socket = text;
  socket.replace(socket.find("fabric: dpdk"), 12, "fabric: socket");
  c = load_lab_config(write(dir, socket));
  EXPECT_EQ(c.dscp, 26u);
  EXPECT_EQ(c.ecn, "ect1");
  const std::string model = error_with("fabric: dpdk", "fabric: model");
  EXPECT_NE(model.find("line 3"), std::string::npos) << model;
  EXPECT_NE(model.find("key \"dscp\": the traffic class needs a wire, fabric socket or dpdk (the fabric is model)"),
            std::string::npos)
      << model;
}

TEST(LabConfig, MistakesNameTheFileAndLine) {
  test::ScratchDir dir;
  std::string text = kGood;
  EXPECT_NE(error_of(write(dir, text), 9).find("no agent hosts rank(s) 8"), std::string::npos);
  EXPECT_NE(error_of(write(dir, text), 7).find("rank 7 is not a rank of the workload (0..6)"), std::string::npos);

  std::string twice = text;
  twice.replace(twice.find("6-7"), 3, "5-7");
  const std::string e1 = error_of(write(dir, twice), 8);
  EXPECT_NE(e1.find("line 8"), std::string::npos) << e1;
  EXPECT_NE(e1.find("rank 5 is agent a's already"), std::string::npos) << e1;

  std::string bad_addr = text;
  bad_addr.replace(bad_addr.find("127.0.0.1:7401"), 14, "localhost:7401");
  const std::string e2 = error_of(write(dir, bad_addr), 8);
  EXPECT_NE(e2.find("line 5"), std::string::npos) << e2;
  EXPECT_NE(e2.find("agent a: key \"control\""), std::string::npos) << e2;

  std::string unknown = text;
  unknown.replace(unknown.find("fabric: model"), 13, "fabrik: model");
  const std::string e3 = error_of(write(dir, unknown), 8);
  EXPECT_NE(e3.find("line 2"), std::string::npos) << e3;
  EXPECT_NE(e3.find("did you mean \"fabric\""), std::string::npos) << e3;

  std::string fabric = text;
  fabric.replace(fabric.find("fabric: model"), 13, "fabric: foo");
  const std::string e5 = error_of(write(dir, fabric), 8);
  EXPECT_NE(e5.find("line 2"), std::string::npos) << e5;
  EXPECT_NE(e5.find("\"foo\" is not a lab fabric; expected socket, model or dpdk"), std::string::npos) << e5;

  std::string range = text;
  range.replace(range.find("0-2,5"), 5, "2-0");
  const std::string e4 = error_of(write(dir, range), 8);
  EXPECT_NE(e4.find("line 7"), std::string::npos) << e4;
  EXPECT_NE(e4.find("\"2-0\" is not a rank or a range"), std::string::npos) << e4;

  // Found by fuzz_lab_yaml: a range repeated 600 times pushed 600 million ranks (2.4 GB) before duplicates
  // were looked for. One agent's ranks are bounded while they are read.
  std::string repeated = text;
  std::string many;
  for (int i = 0; i < 600; ++i) many += (i == 0 ? "" : ",") + std::string("0-1000000");
  repeated.replace(repeated.find("0-2,5"), 5, many);
  const std::string e6 = error_of(write(dir, repeated), 8);
  EXPECT_NE(e6.find("line 7"), std::string::npos) << e6;
  EXPECT_NE(e6.find("more than 65536 ranks for one agent"), std::string::npos) << e6;
}

}  // namespace
}  // namespace fabemu::lab
