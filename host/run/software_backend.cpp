// `--fabric software` (the default): the software model of the fabric, analytical or packet (--model).
#include <memory>

#include "emulator/packet_fabric.h"
#include "host/run/backend.h"

namespace fabemu::run {
namespace {

class AnalyticalBackend final : public LocalBackend {
 public:
  explicit AnalyticalBackend(const BackendContext& c) : fabric_(c.engine, c.topology) {}
  void finish(emu::RunResult&) override {}

 protected:
  emu::Fabric& fabric() override { return fabric_; }

 private:
  emu::AnalyticalFabric fabric_;
};

class PacketBackend final : public LocalBackend {
 public:
  explicit PacketBackend(const BackendContext& c)
      : fabric_(c.engine, c.topology, c.plan.mtu == 0 ? ~uint32_t{0} : c.plan.mtu) {}
  void finish(emu::RunResult& result) override { add_link_results(result); }

 protected:
  emu::Fabric& fabric() override { return fabric_; }
  emu::PacketFabric* packet_model() override { return &fabric_; }

 private:
  emu::PacketFabric fabric_;
};

}  // namespace

std::unique_ptr<Backend> make_software_backend(const BackendContext& context) {
  if (context.plan.model == "packet") return std::make_unique<PacketBackend>(context);
  return std::make_unique<AnalyticalBackend>(context);
}

}  // namespace fabemu::run
