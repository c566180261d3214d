// The one seam between the rank walker and every backend (software model, DPDK, FPGA): send a message,
// be told when it is delivered, and schedule everything else on the backend's engine.
#pragma once

#include <cstdint>

#include "emulator/event_queue.h"
#include "emulator/time.h"

namespace fabemu::emu {

class AnalyticalFabric;

// A point-to-point message. `id` is the caller's, echoed back on delivery; `flow` is the tag / ECMP key,
// so that messages of one flow take one path where a topology has several.
struct Message {
  static constexpr uint32_t kNoCollective = ~uint32_t{0};
  uint64_t id;
  int32_t src;
  int32_t dst;
  uint64_t bytes;
  uint64_t flow;
  // The collective the message belongs to: its position in RunResult::collectives (kNoCollective for a
  // SEND/RECV). Backends that measure (DPDK) report per collective with it; the models ignore it.
  uint32_t coll = kNoCollective;
};

// Told when a message's last byte reaches its destination. Not owned by the fabric.
class DeliveryListener {
 public:
  virtual void on_delivered(uint64_t message_id, Time at) = 0;

 protected:
  DeliveryListener() = default;
  DeliveryListener(const DeliveryListener&) = default;
  DeliveryListener& operator=(const DeliveryListener&) = default;
  ~DeliveryListener() = default;
};

// A fabric backend. The walker does not know which one it drives: it sends, listens, and schedules
// its own callbacks through engine(), whose clock is the fabric's (virtual or dilated wall clock).
class Fabric {
 public:
  Fabric() = default;
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;
  virtual ~Fabric() = default;

  // Injects `m` at `ready` (>= engine().now(); std::invalid_argument otherwise): a sender that knows
  // when its next message leaves hands it over early and needs no event of its own to send it.
  // on_delivered may be called from within a later event, never from within send() itself, so a
  // listener may send again from on_delivered.
  virtual void send(const Message& m, Time ready) = 0;
  // Injects `m` now.
  void send(const Message& m) { send(m, engine().now()); }
  virtual Engine& engine() = 0;
  // nullptr: deliveries are not reported.
  virtual void set_listener(DeliveryListener* listener) = 0;
  // The closed-form capability: a fabric whose delivery times depend on the message alone (no
  // congestion) offers its delay function, and the walker may evaluate a collective's phase at once.
  virtual const AnalyticalFabric* analytical() const { return nullptr; }
};

}  // namespace fabemu::emu
