// The register/record map is defined twice, once per language (fabemu_sched_pkg.sv for the RTL,
// fabemu_sched_map.h for C++): every localparam of the package must exist in the header with the same
// value, and the record codecs must put each field at its documented bits.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "hw/sched/include/fabemu_sched_map.h"

namespace hs = fabemu::hw::sched;

namespace {

std::map<std::string, long long> sv_localparams() {
  std::ifstream in(std::string(FABEMU_SOURCE_DIR) + "/hw/sched/rtl/fabemu_sched_pkg.sv");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::map<std::string, long long> out;
  const std::regex re(R"(localparam\s+int\s+(\w+)\s*=\s*('h([0-9A-Fa-f_]+)|(\d+))\s*;)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    std::string digits = m[3].matched ? m[3].str() : m[4].str();
    std::erase(digits, '_');
    out[m[1].str()] = std::stoll(digits, nullptr, m[3].matched ? 16 : 10);
  }
  return out;
}

}  // namespace

TEST(FpgaMap, PackageAndHeaderAgree) {
  const std::map<std::string, long long> cpp = {
#define E(name) {#name, static_cast<long long>(hs::name)}
      E(REG_CTRL), E(REG_GIE), E(REG_IER), E(REG_ISR), E(REG_LINKS_ADDR_LO), E(REG_LINKS_ADDR_HI),
      E(REG_DESC_ADDR_LO), E(REG_DESC_ADDR_HI), E(REG_CMPL_ADDR_LO), E(REG_CMPL_ADDR_HI), E(REG_NUM_LINKS),
      E(REG_NUM_DESC), E(REG_CYCLES_LO), E(REG_CYCLES_HI), E(REG_LINK_CAP), E(REG_VERSION), E(REG_STATUS), E(MAP_VERSION),
      E(CTRL_AP_START), E(CTRL_AP_DONE), E(CTRL_AP_IDLE), E(CTRL_AP_READY), E(STATUS_RD_ERR), E(STATUS_WR_ERR), E(RECORD_BYTES), E(RECORD_BITS),
      E(BURST_BEATS), E(BUFFER_ALIGN), E(LINK_RATE_LSB), E(LINK_LATENCY_LSB), E(LINK_FREE_LSB), E(DESC_TIME_LSB),
      E(DESC_BYTES_LSB), E(DESC_LINK_LSB), E(DESC_TAG_LSB), E(CMPL_DEPART_LSB), E(CMPL_ARRIVE_LSB),
      E(CMPL_TAG_LSB), E(CMPL_LINK_LSB), E(CMPL_BYTES_LSB),
#undef E
  };
  const auto sv = sv_localparams();
  ASSERT_EQ(sv.size(), cpp.size()) << "the package and the header list different names";
  for (const auto& [name, value] : cpp) {
    const auto it = sv.find(name);
    ASSERT_NE(it, sv.end()) << name << " is missing from fabemu_sched_pkg.sv";
    EXPECT_EQ(it->second, value) << name;
  }
}

TEST(FpgaMap, RecordsRoundTripAtTheirBits) {
  const hs::HopDesc d{0x0102030405060708, 0x11223344, 0x55, 0xa1a2a3a4a5a6a7a8};
  const hs::Record r = hs::encode(d);
  EXPECT_EQ(r[hs::DESC_TIME_LSB / 8], 0x08);
  EXPECT_EQ(r[hs::DESC_BYTES_LSB / 8], 0x44);
  EXPECT_EQ(r[hs::DESC_LINK_LSB / 8], 0x55);
  EXPECT_EQ(r[hs::DESC_TAG_LSB / 8 + 7], 0xa1);
  EXPECT_EQ(hs::decode_desc(r), d);
  const hs::Completion c{1, 2, 3, 4, 5};
  EXPECT_EQ(hs::decode_completion(hs::encode(c)), c);
  const hs::LinkEntry e{uint64_t{80} << 32, 1234, 99};
  EXPECT_EQ(hs::decode_link(hs::encode(e)), e);
  static_assert(hs::RECORD_BITS == 8 * hs::RECORD_BYTES);
  static_assert(hs::BUFFER_ALIGN == hs::BURST_BEATS * hs::RECORD_BYTES);
}

TEST(FpgaMap, KernelXmlArgumentsSitAtTheMapOffsets) {
  std::ifstream in(std::string(FABEMU_SOURCE_DIR) + "/hw/sched/vitis/kernel.xml");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string xml = ss.str();
  const std::regex re(R"re(<arg name="(\w+)"[^>]*\bid="(\d+)"[^>]*\boffset="0x([0-9A-Fa-f]+)")re");
  std::map<std::string, std::pair<int, uint32_t>> args;
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), re); it != std::sregex_iterator(); ++it) {
    args[(*it)[1].str()] = {std::stoi((*it)[2].str()), static_cast<uint32_t>(std::stoul((*it)[3].str(), nullptr, 16))};
  }
  // Argument ids are the XRT host's set_arg indices (host/fpga/xrt_sched_device.cpp).
  const std::map<std::string, std::pair<int, uint32_t>> want = {
      {"links", {0, hs::REG_LINKS_ADDR_LO}}, {"desc", {1, hs::REG_DESC_ADDR_LO}}, {"cmpl", {2, hs::REG_CMPL_ADDR_LO}},
      {"num_links", {3, hs::REG_NUM_LINKS}}, {"num_desc", {4, hs::REG_NUM_DESC}}};
  EXPECT_EQ(args, want);
}
