// RingPair (dpdk_env.h): two in-process ports joined by rte_rings, and DelayLine, the thread of its RingDevice
// (a device of known latency and rate between them). The rest of the DPDK environment: dpdk_env.cpp.
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "emulator/time.h"
#include "host/dpdk/dpdk_env.h"
#include "host/wire/frame.h"

namespace fabemu::host::dpdk {

namespace {
std::string ring_errstr(int err) { return rte_strerror(err < 0 ? -err : err); }
}  // namespace

// The thread of a ring pair's device (RingPair's RingDevice): per queue, the frames it took off a's TX ring
// with the TSC at which each is due at b, in order (a FIFO device: each is due no earlier than the one
// before, so the first held is the first due).
class DelayLine {
 public:
  DelayLine(std::vector<rte_ring*> in, std::vector<rte_ring*> out, RingDevice device, unsigned capacity)
      : in_(std::move(in)), out_(std::move(out)) {
    const uint64_t hz = rte_get_tsc_hz();
    delay_ticks_ = static_cast<uint64_t>(static_cast<emu::detail::u128>(device.delay_ns) * hz / 1'000'000'000u);
    // TSC ticks a byte takes through the device, 32 fractional bits (0: no rate).
    if (device.bytes_per_sec > 0) {
      ticks_per_byte_q32_ = static_cast<uint64_t>((static_cast<emu::detail::u128>(hz) << 32) / device.bytes_per_sec);
      ecn_q32_ = u128{device.ecn_bytes} * ticks_per_byte_q32_;  // the queue ahead, in the rate's units
    }
    unsigned cap = 1;
    while (cap < capacity) cap <<= 1;
    held_.resize(in_.size());
    for (Held& h : held_) {
      h.frames.assign(cap, nullptr);
      h.due.assign(cap, 0);
      h.mask = cap - 1;
    }
    // Off the polling lcores' CPUs when there is one: the main thread that makes the pair is pinned to the
    // main lcore's CPU and a thread inherits that, so both would poll one CPU and take turns (milliseconds).
    const std::vector<unsigned> cpus = Eal::cpus_without_lcores();
    thread_ = std::thread([this, cpus] {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (const unsigned c : cpus) {
        if (c < CPU_SETSIZE) CPU_SET(c, &set);
      }
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      run();
    });
  }
  ~DelayLine() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
    for (Held& h : held_) {
      for (; h.head != h.tail; ++h.head) rte_pktmbuf_free(h.frames[h.head & h.mask]);
    }
  }
  DelayLine(const DelayLine&) = delete;
  DelayLine& operator=(const DelayLine&) = delete;
  uint64_t forwarded() const noexcept { return forwarded_.load(std::memory_order_relaxed); }
  uint64_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
  uint64_t marked() const noexcept { return marked_.load(std::memory_order_relaxed); }

 private:
  using u128 = emu::detail::u128;
  struct Held {
    std::vector<rte_mbuf*> frames;
    std::vector<uint64_t> due;
    uint64_t head = 0, tail = 0, mask = 0;  // [head, tail): held, oldest first
    u128 free_q32 = 0;  // with a rate: when the device has let the last frame through (TSC ticks, q32)
  };
  static constexpr unsigned kBurst = 32;

  void run() {
    std::array<void*, kBurst> burst{};
    uint64_t forwarded = 0, peak = 0, marked = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      bool moved = false;
      for (size_t q = 0; q < in_.size(); ++q) {
        Held& h = held_[q];
        // Take what a has sent, as far as there is room: each is due when it has crossed the device (at
        // its rate, behind the frames before it) and then the latency.
        const auto room = static_cast<unsigned>(std::min<uint64_t>(kBurst, h.mask + 1 - (h.tail - h.head)));
        const unsigned n = room == 0 ? 0 : rte_ring_sc_dequeue_burst(in_[q], burst.data(), room, nullptr);
        if (n > 0) {
          const uint64_t taken = rte_rdtsc();
          for (unsigned i = 0; i < n; ++i, ++h.tail) {
            auto* m = static_cast<rte_mbuf*>(burst[i]);
            uint64_t done = taken;
            if (ticks_per_byte_q32_ != 0) {
              // Through the device at its rate, behind the frames before it.
              const u128 start = std::max(u128{taken} << 32, h.free_q32);
              // ECN: the bytes ahead of it that have not crossed yet, as time at the rate. Only a frame
              // this device alone holds (refcnt 1), in one segment.
              if (ecn_q32_ != 0 && start - (u128{taken} << 32) >= ecn_q32_ && rte_mbuf_refcnt_read(m) == 1 &&
                  mark_ce({rte_pktmbuf_mtod(m, uint8_t*), m->data_len})) {
                ++marked;
              }
              const u128 end = start + u128{m->pkt_len} * ticks_per_byte_q32_;
              h.free_q32 = end;
              done = static_cast<uint64_t>((end + 0xFFFFFFFFu) >> 32);
            }
            h.frames[h.tail & h.mask] = m;
            h.due[h.tail & h.mask] = done + delay_ticks_;
          }
          peak = std::max(peak, h.tail - h.head);
          moved = true;
        }
        // Hand b those that are due, oldest first.
        if (h.head == h.tail) continue;
        const uint64_t now = rte_rdtsc();
        unsigned k = 0;
        while (k < kBurst && h.head + k != h.tail && h.due[(h.head + k) & h.mask] <= now) {
          burst[k] = h.frames[(h.head + k) & h.mask];
          ++k;
        }
        if (k == 0) continue;
        const unsigned sent = rte_ring_sp_enqueue_burst(out_[q], burst.data(), k, nullptr);
        h.head += sent;
        forwarded += sent;
        moved = moved || sent > 0;
      }
      if (moved) {
        forwarded_.store(forwarded, std::memory_order_relaxed);
        peak_.store(peak, std::memory_order_relaxed);
        marked_.store(marked, std::memory_order_relaxed);
      } else {
        rte_pause();
      }
    }
  }

  std::vector<rte_ring*> in_, out_;
  std::vector<Held> held_;
  uint64_t delay_ticks_ = 0;
  uint64_t ticks_per_byte_q32_ = 0;
  u128 ecn_q32_ = 0;  // RingDevice::ecn_bytes at the rate (0: no marking)
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> forwarded_{0}, peak_{0}, marked_{0};
  std::thread thread_;
};

RingPair::RingPair(const std::string& name, unsigned ring_size, int socket, uint16_t queues, RingDevice device,
                   uint16_t a_tx_queues)
    : device_(device) {
  if (!Eal::running()) throw std::runtime_error("RingPair(\"" + name + "\"): EAL is not running");
  // rte_eth_from_rings names the vdev (and the ethdev) "net_ring_<name>", at most 31 characters.
  if (name.empty() || name.size() > 20)
    throw std::invalid_argument("RingPair(\"" + name + "\"): the name must have 1 to 20 characters");
  if (device.ecn_bytes > 0 && device.bytes_per_sec == 0) {
    throw std::invalid_argument("RingPair(\"" + name + "\"): ECN marking needs a device rate (a queue to mark by)");
  }
  if (queues == 0 || queues > RTE_MAX_QUEUES_PER_PORT)
    throw std::invalid_argument("RingPair(\"" + name + "\"): " + std::to_string(queues) + " queues");
  if (a_tx_queues == 0) a_tx_queues = queues;
  if (a_tx_queues % queues != 0 || a_tx_queues > RTE_MAX_QUEUES_PER_PORT) {
    throw std::invalid_argument("RingPair(\"" + name + "\"): " + std::to_string(a_tx_queues) +
                                " transmit queues of a for " + std::to_string(queues) + " queues");
  }
  name_a_ = name + "_a";
  name_b_ = name + "_b";
  const unsigned flags = RING_F_SP_ENQ | RING_F_SC_DEQ;
  // a -> b rings several of a's transmit queues (lcores) feed take multi-producer enqueues.
  const unsigned ab_flags = a_tx_queues == queues ? flags : RING_F_SC_DEQ;
  const auto make = [&](const std::string& ring_name, unsigned f = RING_F_SP_ENQ | RING_F_SC_DEQ) {
    rte_ring* r = rte_ring_create(ring_name.c_str(), ring_size, socket, f);
    if (r == nullptr) {
      const std::string err = ring_errstr(rte_errno);
      free_all();
      throw std::runtime_error("RingPair(\"" + name + "\"): rte_ring_create: " + err);
    }
    return r;
  };
  for (uint16_t q = 0; q < queues; ++q) {
    // Queue 0 keeps the names of a pair of one queue.
    const std::string suffix = q == 0 ? "" : "_" + std::to_string(q);
    ab_.push_back(make("fe_" + name + "_ab" + suffix, device.any() ? flags : ab_flags));
    ba_.push_back(make("fe_" + name + "_ba" + suffix));
    if (device.any()) ab_in_.push_back(make("fe_" + name + "_ad" + suffix, ab_flags));
  }
  std::vector<rte_ring*> a_tx;  // a's transmit queue t: the ring of b's receive queue t mod queues
  for (uint16_t t = 0; t < a_tx_queues; ++t) a_tx.push_back((device.any() ? ab_in_ : ab_)[t % queues]);
  const unsigned numa = socket < 0 ? 0 : static_cast<unsigned>(socket);
  const int a = rte_eth_from_rings(name_a_.c_str(), ba_.data(), queues, a_tx.data(), a_tx_queues, numa);
  const int b = a < 0 ? -1 : rte_eth_from_rings(name_b_.c_str(), ab_.data(), queues, ba_.data(), queues, numa);
  if (a < 0 || b < 0) {
    const std::string err = ring_errstr(rte_errno);
    if (a >= 0) rte_eal_hotplug_remove("vdev", ("net_ring_" + name_a_).c_str());
    free_all();
    throw std::runtime_error("RingPair(\"" + name + "\"): rte_eth_from_rings: " + err);
  }
  a_ = static_cast<uint16_t>(a);
  b_ = static_cast<uint16_t>(b);
  if (device.any()) {
    try {
      delay_ = std::make_unique<DelayLine>(ab_in_, ab_, device, 2 * ring_size);
    } catch (...) {
      rte_eal_hotplug_remove("vdev", ("net_ring_" + name_a_).c_str());
      rte_eal_hotplug_remove("vdev", ("net_ring_" + name_b_).c_str());
      free_all();
      throw;
    }
  }
}

RingPair::~RingPair() {
  delay_.reset();  // the thread stops before the rings go; the frames it held go back to their pools
  rte_eal_hotplug_remove("vdev", ("net_ring_" + name_a_).c_str());
  rte_eal_hotplug_remove("vdev", ("net_ring_" + name_b_).c_str());
  free_all();
}

uint64_t RingPair::delayed_frames() const noexcept { return delay_ ? delay_->forwarded() : 0; }
uint64_t RingPair::delay_peak_held() const noexcept { return delay_ ? delay_->peak() : 0; }
uint64_t RingPair::ce_marked() const noexcept { return delay_ ? delay_->marked() : 0; }

// Frames still in the rings go back to their pools; then the rings go.
void RingPair::free_all() noexcept {
  void* obj = nullptr;
  for (auto* rings : {&ab_, &ba_, &ab_in_}) {
    for (rte_ring* r : *rings) {
      while (rte_ring_dequeue(r, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
      rte_ring_free(r);
    }
    rings->clear();
  }
}

}  // namespace fabemu::host::dpdk
