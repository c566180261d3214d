// The host device layer without hardware: the model device, argument checks, and the XRT device
// failing with a clear message (never a crash) when there is no board.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "host/fpga/sched_device.h"
#include "tests/fpga/fpga_test_util.h"

namespace ft = fabemu::fpga_test;
namespace fpga = fabemu::host::fpga;
namespace hs = fabemu::hw::sched;

TEST(FpgaDevice, ModelSchedulesLikePacketFabric) {
  ft::HopRecorder rec(ft::switch16(), 700);
  rec.run(ft::random_messages(rec.topology(), 1, 2'000, 5'000'000, 3'000, true));
  auto dev = fpga::open_sched_device("model");
  EXPECT_EQ(dev->describe(), "model");
  EXPECT_EQ(dev->link_capacity(), 4096u);
  EXPECT_EQ(fpga::schedule(*dev, ft::link_table(rec.topology()), rec.hops, 500), rec.expected);
}

TEST(FpgaDevice, RejectsBadInput) {
  auto dev = fpga::open_sched_device("model");
  std::vector<fpga::LinkEntry> links(4);
  std::vector<fpga::HopDesc> hops = {{0, 10, 4, 0}};
  EXPECT_THROW(fpga::schedule(*dev, links, hops), std::invalid_argument);
  EXPECT_THROW(fpga::schedule(*dev, std::vector<fpga::LinkEntry>(4097), {}), std::invalid_argument);
  EXPECT_THROW(fpga::open_sched_device("gpu"), std::invalid_argument);
  EXPECT_THROW(fpga::open_sched_device("xrt:"), std::invalid_argument);
}

TEST(FpgaDevice, ErrorStatusOfARunIsAClearError) {
  EXPECT_NO_THROW(fpga::check_run_status(0, "hwemu", 1));
  const auto message = [](uint32_t status) {
    try {
      fpga::check_run_status(status, "xrt:0 (k.xclbin)", 3);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  const std::string rd = message(1u << hs::STATUS_RD_ERR);
  EXPECT_NE(rd.find("run 3 on xrt:0 (k.xclbin)"), std::string::npos) << rd;
  EXPECT_NE(rd.find("m00_axi"), std::string::npos) << rd;
  EXPECT_EQ(rd.find("m01_axi"), std::string::npos) << rd;
  const std::string wr = message(1u << hs::STATUS_WR_ERR);
  EXPECT_NE(wr.find("BRESP"), std::string::npos) << wr;
  EXPECT_EQ(wr.find("m00_axi"), std::string::npos) << wr;
  const std::string both = message(3);
  EXPECT_NE(both.find("m00_axi"), std::string::npos) << both;
  EXPECT_NE(both.find("m01_axi"), std::string::npos) << both;
}

TEST(FpgaDevice, XrtWithoutABoardFailsWithAClearMessage) {
  try {
    fpga::open_sched_device("xrt:0", "sched_kernel.xclbin");
    GTEST_SKIP() << "an XRT device 0 is present: this test is for machines without a board";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    std::printf("%s\n", what.c_str());
    if (fpga::has_backend("xrt")) {
      EXPECT_NE(what.find("cannot open Xilinx FPGA device 0"), std::string::npos) << what;
    } else {
      EXPECT_NE(what.find("built without XRT"), std::string::npos) << what;
    }
    EXPECT_NE(what.find("--device hwemu"), std::string::npos) << what;
  }
  try {
    fpga::open_sched_device("xrt:0");
    FAIL() << "xrt:0 without an xclbin must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fpga::has_backend("xrt") ? "--xclbin" : "built without XRT"), std::string::npos);
  }
}
