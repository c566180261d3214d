// MSCCL-IR XML import (traces/msccl_xml.h): the shared example's XML gives, node for node, the .et files
// ASTRA-sim's converter wrote from it; bad input is refused with file, line, element and attribute.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "traces/attrs.h"
#include "traces/custom_graph.h"
#include "traces/msccl_xml.h"

namespace fabemu::traces {
namespace {

namespace fs = std::filesystem;

const fs::path kDirectXml = fs::path(FABEMU_SOURCE_DIR) / "tests/emulator/custom/direct_allreduce_4gpus.xml";

TEST(MscclXml, SharedExampleEqualsTheConvertersEtFiles) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const fs::path dir = traces_dir / "astra-sim/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB";
  const MscclAlgo algo = read_msccl_xml((dir / "custom_allreduce.xml").string());
  EXPECT_EQ(algo.ngpus, 8);
  EXPECT_EQ(msccl_collective(algo), ChakraProtoMsg::ALL_REDUCE);
  const CustomGraphs ours = msccl_to_graphs(algo, 1 << 20);
  CustomGraphs theirs = read_custom_graphs((dir / "custom_allreduce").string(), 8);
  check_custom_graphs(theirs);
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t g = 0; g < ours.size(); ++g) {
    ASSERT_EQ(ours[g].nodes.size(), theirs[g].nodes.size()) << "gpu " << g;
    EXPECT_EQ(ours[g].sent, theirs[g].sent);
    EXPECT_EQ(ours[g].received, theirs[g].received);
    for (size_t i = 0; i < ours[g].nodes.size(); ++i) {
      const Node& a = ours[g].nodes[i];
      const Node& b = theirs[g].nodes[i];
      const std::string at = "gpu " + std::to_string(g) + " node " + std::to_string(i);
      EXPECT_EQ(a.id(), b.id()) << at;
      EXPECT_EQ(a.name(), b.name()) << at;
      EXPECT_EQ(a.type(), b.type()) << at;
      EXPECT_EQ(a.duration_micros(), b.duration_micros()) << at;
      EXPECT_EQ(std::vector<uint64_t>(a.data_deps().begin(), a.data_deps().end()),
                std::vector<uint64_t>(b.data_deps().begin(), b.data_deps().end()))
          << at;
      const CommInfo x = comm_info(a), y = comm_info(b);
      EXPECT_EQ(x.size, y.size) << at;
      EXPECT_EQ(x.src, y.src) << at;
      EXPECT_EQ(x.dst, y.dst) << at;
      EXPECT_EQ(x.tag, y.tag) << at;
    }
  }
}

TEST(MscclXml, OwnDirectAllReduce) {
  const MscclAlgo algo = read_msccl_xml(kDirectXml.string());
  const CustomGraphs g = msccl_to_graphs(algo, 4u << 20);
  ASSERT_EQ(g.size(), 4u);
  for (const CustomGraph& x : g) {
    // 3 thread blocks x (send, recv + reduce, send, recv); 6 messages of 1 MiB each way.
    EXPECT_EQ(x.nodes.size(), 15u);
    EXPECT_EQ(x.sent, 6u << 20);
    EXPECT_EQ(x.received, 6u << 20);
  }
}

std::string error(const std::string& xml) {
  return test::error_of([&] { msccl_to_graphs(parse_msccl_xml(xml, "t.xml"), 1024); }).what();
}

constexpr const char* kHead = "<algo name=\"a\" coll=\"allreduce\" ngpus=\"2\" nchunksperloop=\"2\">\n";
std::string two_gpus(const std::string& gpu0_steps, const std::string& gpu1_steps) {
  return std::string(kHead) + "<gpu id=\"0\" i_chunks=\"2\">\n<tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n" +
         gpu0_steps + "</tb>\n</gpu>\n<gpu id=\"1\" i_chunks=\"2\">\n<tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n" +
         gpu1_steps + "</tb>\n</gpu>\n</algo>\n";
}
const std::string kSend = "<step s=\"0\" type=\"s\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n";
const std::string kRecv1 = "<step s=\"1\" type=\"r\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n";

TEST(MscclXml, ValidPairConverts) {
  const CustomGraphs g = msccl_to_graphs(parse_msccl_xml(two_gpus(kSend + kRecv1, kSend + kRecv1), "t.xml"), 1024);
  EXPECT_EQ(g[0].sent, 512u);
  EXPECT_EQ(g[1].received, 512u);
}

TEST(MscclXml, ErrorsNameFileLineElementAndAttribute) {
  EXPECT_NE(error("<algo ngpus=\"2\"").find("t.xml: line 1: not well-formed XML"), std::string::npos);
  EXPECT_NE(error("<graph/>").find("t.xml: line 1: element <graph>: expected <algo>"), std::string::npos);
  EXPECT_NE(error("<algo coll=\"allreduce\"/>").find("element <algo>: attribute \"ngpus\" is missing"),
            std::string::npos);
  const std::string type = error(two_gpus("<step s=\"0\" type=\"xyz\"/>\n", kSend));
  EXPECT_NE(type.find("t.xml: line 4: element <step>: attribute \"type\" is \"xyz\": expected one of"),
            std::string::npos) << type;
  const std::string cnt = error(two_gpus("<step s=\"0\" type=\"s\" cnt=\"-3\"/>\n", kSend));
  EXPECT_NE(cnt.find("line 4: element <step>: attribute \"cnt\" is \"-3\": expected an integer in 1..1048576"),
            std::string::npos) << cnt;
  const std::string order = error(two_gpus("<step s=\"1\" type=\"s\"/>\n", kSend));
  EXPECT_NE(order.find("attribute \"s\" is 1: expected 0"), std::string::npos) << order;
  const std::string dep = error(two_gpus(kSend + "<step s=\"1\" type=\"r\" depid=\"0\" deps=\"7\"/>\n", kSend));
  EXPECT_NE(dep.find("line 5: element <step> (gpu 0, tb 0, step 1): depid=\"0\" deps=\"7\" names no step"),
            std::string::npos) << dep;
  const std::string peer = error(std::string(kHead) + "<gpu id=\"0\"><tb id=\"0\" recv=\"1\"><step s=\"0\" "
                                 "type=\"s\"/></tb></gpu><gpu id=\"1\"/></algo>");
  EXPECT_NE(peer.find("element <step>: a \"s\" step in a <tb> without a send peer"), std::string::npos) << peer;
  const std::string gpus = error(std::string(kHead) + "<gpu id=\"0\"/></algo>");
  EXPECT_NE(gpus.find("ngpus=\"2\" but 1 <gpu> elements"), std::string::npos) << gpus;
  // A send whose receive is missing on the peer: the graphs' check names the .xml and the GPU.
  const std::string unmatched =
      error(two_gpus(kSend + kRecv1, "<step s=\"0\" type=\"r\" cnt=\"1\" depid=\"-1\" deps=\"-1\"/>\n"));
  EXPECT_NE(unmatched.find("t.xml (gpu 0): rank 0: node id 1: RECV from position 1 tag 0 (512 bytes) has no SEND"),
            std::string::npos) << unmatched;
}

}  // namespace
}  // namespace fabemu::traces
