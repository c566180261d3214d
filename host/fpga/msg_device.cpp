#include "host/fpga/msg_device.h"

#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <stdexcept>

#include "rtl_models/hil_model.h"
#include "rtl_models/msg_sched_model.h"
#ifdef FABEMU_HAVE_VERILATOR
#include "rtl_models/sched_hil_hwemu.h"
#include "rtl_models/sched_msg_hwemu.h"
#endif

namespace fabemu::host::fpga {

namespace {

using hw::sched::RECORD_BYTES;

// The card's status as the host reads it: known-until bound (8 bytes) and record count (8 bytes).
constexpr uint64_t kStatusBytes = 16;
// The doorbell: the queue's tail index (4 bytes, padded to 8) and the watermark (8 bytes).
constexpr uint64_t kDoorbellBytes = 16;
constexpr uint64_t kLinkCountBytes = 16;

// A card behind the protocol: `Card` is MsgSchedModel (the "model" device) or SchedMsgHwEmu (the Verilated
// RTL, "hwemu"): the same calls, so the same traffic is counted for both.
template <class Card>
class CardMsgDevice final : public MsgSchedDevice {
 public:
  explicit CardMsgDevice(std::string what, const rtl::HilOptions& hil = {}) : what_(std::move(what)), hil_(hil) {}
  std::string describe() const override { return what_; }

  void load(std::span<const hw::sched::LinkEntry> links, uint32_t mtu) override {
    if constexpr (std::is_constructible_v<Card, std::span<const hw::sched::LinkEntry>, uint32_t, const rtl::HilOptions&>) {
      card_.emplace(links, mtu, hil_);
    } else {
      card_.emplace(links, mtu);
    }
    links_ = links.size();
    count(links.size() * RECORD_BYTES + 4, 0, 2);  // the link table (one burst) and the MTU register
  }
  void append_route(std::span<const uint32_t> link_ids) override {
    card().append_route(link_ids);
    const uint64_t records = (link_ids.size() + hw::msg::ROUTE_LINKS_PER_RECORD - 1) / hw::msg::ROUTE_LINKS_PER_RECORD;
    count(records * RECORD_BYTES, 0, 1);
  }
  void push(std::span<const hw::msg::MsgDesc> msgs) override {
    if (msgs.empty()) return;
    for (const auto& d : msgs) card().push(d);
    count(msgs.size() * RECORD_BYTES, 0, 1);
  }
  void doorbell(uint64_t watermark) override {
    card().advance(watermark);
    count(kDoorbellBytes, 0, 1);
    ++traffic_.doorbells;
  }
  uint64_t poll(std::vector<hw::msg::Delivery>& out) override {
    const std::size_t n = card().take(out);
    count(0, kStatusBytes + n * RECORD_BYTES, n == 0 ? 1 : 2);
    ++traffic_.polls;
    return card().known_until();
  }
  std::vector<LinkCount> read_link_counters() override {
    std::vector<LinkCount> v(links_);
    for (uint32_t l = 0; l < links_; ++l) v[l] = LinkCount{card().link_counters(l).bytes, card().link_counters(l).packets};
    count(0, links_ * kLinkCountBytes, 1);
    return v;
  }
  std::size_t take_departures(std::vector<hw::msg::Departure>& out) override { return card().take_departures(out); }
  const rtl::HilReport* finish_wire() override {
    if constexpr (requires(Card& c) { c.drain(); }) {
      return &card().drain();
    } else {
      return nullptr;
    }
  }
  uint64_t card_events() override { return card().events(); }
  uint64_t card_packet_hops() override { return card().packet_hops(); }

 private:
  Card& card() {
    if (!card_) throw std::logic_error("message-level device: load() was not called");
    return *card_;
  }
  void count(uint64_t to_card, uint64_t from_card, uint64_t transfers) {
    traffic_.bytes_to_card += to_card;
    traffic_.bytes_from_card += from_card;
    traffic_.transfers += transfers;
  }

  std::string what_;
  rtl::HilOptions hil_;
  std::optional<Card> card_;
  std::size_t links_ = 0;
};

}  // namespace

std::unique_ptr<MsgSchedDevice> open_msg_device(const std::string& spec, const rtl::HilOptions& hil) {
#ifdef FABEMU_HAVE_VERILATOR
  if (spec == "hwemu") {
    return std::make_unique<CardMsgDevice<rtl::SchedHilHwEmu>>(
        "hwemu (Verilated sched_hil and sched_rx: the card's whole path, hardware in the loop)", hil);
  }
#endif
  if (spec == "model") {
    return std::make_unique<CardMsgDevice<rtl::HilModelCard>>(
        "model (C++: the message-level reference, the MAC, the device and the receive path, hardware in the loop)", hil);
  }
  if (spec == "hwemu" || spec.rfind("xrt:", 0) == 0) {
    throw std::runtime_error("--fabric fpga --dilation (hardware in the loop): device '" + spec + "' " +
                             (spec == "hwemu" ? "needs a build with Verilator" : "has no hardware-in-the-loop kernel yet") +
                             "; use --device model" + (spec == "hwemu" ? ", or hwemu in a Verilator build" : " or hwemu"));
  }
  throw std::invalid_argument("unknown FPGA device '" + spec + "' (expected model, hwemu or xrt:<index>)");
}

std::unique_ptr<MsgSchedDevice> open_msg_device(const std::string& spec) {
  if (spec == "model") return std::make_unique<CardMsgDevice<rtl::MsgSchedModel>>("model (message-level C++ reference)");
#ifdef FABEMU_HAVE_VERILATOR
  if (spec == "hwemu") {
    return std::make_unique<CardMsgDevice<rtl::SchedMsgHwEmu>>("hwemu (Verilated sched_msg, the message-level RTL core)");
  }
#endif
  if (spec == "hwemu" || spec.rfind("xrt:", 0) == 0) {
    throw std::runtime_error("--fpga-interface messages: device '" + spec + "' has no message-level kernel" +
                             (spec == "hwemu" ? std::string(" in this build (no Verilator)") : std::string(" yet")) +
                             "; run it with --fpga-interface hops, or use --device model" +
                             (spec == "hwemu" ? "" : " or hwemu"));
  }
  throw std::invalid_argument("unknown FPGA device '" + spec + "' (expected model, hwemu or xrt:<index>)");
}

}  // namespace fabemu::host::fpga
