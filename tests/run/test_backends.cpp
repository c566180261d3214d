// host/run's backend table: adding a fabric backend is one new file (here, this test's FixedDelayBackend)
// and one line that registers it (here, run::add_backend; in fabemu, a line of the table in
// host/run/backend.cpp). The pipeline (run_workload) then runs a workload over it like any other backend:
// the report names it, its summary section is printed, its exit status is the run's.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "emulator/fabric.h"
#include "emulator/report_json.h"
#include "host/run/backend.h"
#include "host/run/exit_status.h"
#include "host/run/run.h"
#include "tests/support/test_support.h"
#include "traces/generate.h"

namespace fabemu::run {
namespace {

// Every message arrives 1 us after it is sent, whatever its size and path.
class FixedDelayFabric final : public emu::Fabric, private emu::EventTarget {
 public:
  explicit FixedDelayFabric(emu::Engine& engine) : engine_(engine) {}
  void send(const emu::Message& m, emu::Time ready) override {
    engine_.at(ready + emu::Duration::from_us(1), *this, m.id);
    ++messages_;
  }
  using emu::Fabric::send;
  emu::Engine& engine() override { return engine_; }
  void set_listener(emu::DeliveryListener* listener) override { listener_ = listener; }
  uint64_t messages() const { return messages_; }

 private:
  void on_event(uint64_t id) override {
    if (listener_ != nullptr) listener_->on_delivered(id, engine_.now());
  }
  emu::Engine& engine_;
  emu::DeliveryListener* listener_ = nullptr;
  uint64_t messages_ = 0;
};

class FixedDelayBackend final : public LocalBackend {
 public:
  explicit FixedDelayBackend(const BackendContext& c) : fabric_(c.engine) {}
  void finish(emu::RunResult& result) override {
    result.sections.emplace_back("fixed_delay", "{\"messages\": " + std::to_string(fabric_.messages()) + "}");
  }
  std::string summary_section() const override {
    return "Fixed delay\n  messages            " + std::to_string(fabric_.messages()) + "\n";
  }
  std::optional<int> exit_status() override { return fabric_.messages() == 0 ? std::optional<int>(kExitError) : std::nullopt; }

 protected:
  emu::Fabric& fabric() override { return fabric_; }

 private:
  FixedDelayFabric fabric_;
};

std::unique_ptr<Backend> make_fixed_delay(const BackendContext& c) { return std::make_unique<FixedDelayBackend>(c); }

TEST(RunBackends, ANewBackendIsOneFileAndOneRegistryLine) {
  add_backend({"fixed-delay", false, make_fixed_delay});  // the one registry line
  ASSERT_NE(find_backend("fixed-delay"), nullptr);
  EXPECT_THROW(add_backend({"fixed-delay", false, make_fixed_delay}), std::invalid_argument);

  test::ScratchDir dir;
  traces::CollectiveSpec spec;
  spec.type = ChakraProtoMsg::ALL_GATHER;
  spec.ranks = 4;
  spec.size_bytes = 4096;
  traces::generate_collective(spec, dir.file("ag"));
  {
    std::ofstream out(dir.file("ring4.yml"));
    out << "topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n";
  }
  RunArgs a;
  a.workload = dir.file("ag");
  a.network = dir.file("ring4.yml");
  a.fabric = "fixed-delay";
  a.report = dir.file("report.json");
  testing::internal::CaptureStdout();
  const int status = run_workload(a);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, kExitOk);
  const emu::RunResult r = emu::report_from_json(test::read_bytes(a.report), a.report);
  EXPECT_EQ(r.fabric, "fixed-delay");
  // A ring all-gather of 4 ranks, one chunk: 3 steps, each one message per rank of 1 us, one after the other,
  // and the endpoint delay (SystemConfig's default, 10 ns) before the first step and after each arrival.
  EXPECT_EQ(r.total.ps(), 3 * 1'000'000u + 4 * 10'000u);
  EXPECT_EQ(r.messages, 12u);
  EXPECT_NE(out.find("Fixed delay\n  messages            12\n"), std::string::npos) << out;
  EXPECT_NE(test::read_bytes(a.report).find("\"fixed_delay\": {\"messages\": 12}"), std::string::npos);
}

TEST(RunBackends, EveryBuiltInBackendIsInTheTable) {
  for (const char* name : {"software", "dpdk", "socket", "fpga", "agents"}) {
    EXPECT_NE(find_backend(name), nullptr) << name;
  }
  EXPECT_FALSE(find_backend("software")->packet_model_only);
  EXPECT_TRUE(find_backend("dpdk")->packet_model_only);
  EXPECT_EQ(find_backend("no-such"), nullptr);
}

}  // namespace
}  // namespace fabemu::run
