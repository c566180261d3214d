// Shared by the topology and fabric tests: network configs in one line, and a listener that records.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "emulator/config.h"
#include "emulator/fabric.h"
#include "emulator/time.h"

namespace fabemu::emu::testing {

inline NetworkDim dim(DimTopology kind, int64_t npus, Rate rate = Rate::from_gbps(400),
                      Duration latency = Duration::from_ns(1)) {
  NetworkDim d;
  d.topology = kind;
  d.npus = npus;
  d.bandwidth = rate;
  d.latency = latency;
  return d;
}

inline NetworkConfig network(std::vector<NetworkDim> dims) {
  NetworkConfig c;
  c.dims = std::move(dims);
  return c;
}

class Recorder final : public DeliveryListener {
 public:
  void on_delivered(uint64_t message_id, Time at) override { log.emplace_back(message_id, at); }
  std::vector<std::pair<uint64_t, Time>> log;
};

// Sends message i at its time: injection at a chosen time through the fabric's engine, as the walker does.
class Injector final : public EventTarget {
 public:
  explicit Injector(Fabric& f) : fabric_(f) {}
  void add(Time at, const Message& m) {
    msgs_.push_back(m);
    fabric_.engine().at(at, *this, msgs_.size() - 1);
  }
  void on_event(uint64_t i) override { fabric_.send(msgs_[i]); }
  void reserve(std::size_t n) { msgs_.reserve(n); }

 private:
  Fabric& fabric_;
  std::vector<Message> msgs_;
};

}  // namespace fabemu::emu::testing
