// The end of a run on a real-time fabric (the DPDK fabric, host/dpdk/dpdk_fabric.h; the socket fabric,
// host/lab/socket_fabric.h): what fabemu run's backends (host/run/realtime_backend.h) and the lab agent ask
// of either once the walk is over. Not on the hot path: none of it is called per frame.
#pragma once

#include <string>
#include <string_view>

#include "emulator/fabric.h"
#include "emulator/packet_fabric.h"
#include "emulator/time.h"

namespace fabemu::host::dpdk {

class RealtimeFabric : public emu::Fabric {
 public:
  // drain()'s limit when none is given.
  static constexpr emu::Duration kDrainLimit = emu::Duration::from_ms(2'000);
  // After the walk: services the wire until every message (with a local source) is acknowledged or `limit`
  // of wall time has passed; true when all were.
  virtual bool drain(emu::Duration limit) = 0;
  // True when a signal (or the stop callback) ended the run early.
  virtual bool interrupted() const noexcept = 0;
  // True when the wire stalled (nothing arrived for the stall timeout) and the run stopped there.
  virtual bool stalled() const noexcept = 0;
  // Why it stalled: which message waited, for what ("" when it did not stall).
  virtual const std::string& stall_reason() const noexcept = 0;
  // "DPDK fabric", "socket fabric": how messages about it name it.
  virtual std::string_view name() const noexcept = 0;
  // Its stats as the report's section: the section's key, its JSON object, its text after the summary.
  struct ReportSection {
    std::string key, json, text;
  };
  virtual ReportSection report_section() = 0;
  // The packet model the walker's times come from (its links' statistics).
  virtual const emu::PacketFabric& model() const noexcept = 0;
  // The same, to set up what it records (its link series) before the run.
  virtual emu::PacketFabric& mutable_model() noexcept = 0;
};

}  // namespace fabemu::host::dpdk
