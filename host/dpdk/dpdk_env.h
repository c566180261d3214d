// The DPDK environment of the DPDK fabric: EAL start-up (once per process, errors as exceptions, never
// exit()), SIGINT/SIGTERM as a stop flag, ports (physical or virtual devices, ring pairs) with their
// mempools, and frames of host/wire/frame.h in mbufs. README.md, "DPDK environment".
#pragma once

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/wire/frame.h"

struct rte_ring;

namespace fabemu::host::dpdk {

// The Environment Abstraction Layer. DPDK allows one rte_eal_init() per process, so this is a
// process-wide singleton: the first start() initializes EAL, later calls return the same instance (their
// arguments are ignored) or rethrow the first failure. start() installs SIGINT/SIGTERM handlers that
// only set the stop flag; shutdown() restores the previous handlers and calls rte_eal_cleanup(), after
// which EAL cannot be started again in this process.
class Eal {
 public:
  // `args` are EAL arguments exactly as a user gives them (without a program name), e.g.
  // {"-l", "0-1", "--vdev", "net_null0"}. std::runtime_error with rte_strerror(rte_errno) and the
  // arguments when rte_eal_init fails.
  static Eal& start(const std::vector<std::string>& args);
  // True after a successful start() and before shutdown().
  static bool running() noexcept;
  // Stops EAL (rte_eal_cleanup) and restores the signal handlers. Ports must be closed first.
  static void shutdown() noexcept;

  // Arguments for tests and CI: no hugepages, no PCI, no shared config, no telemetry, lcore `lcore`,
  // 512 MB of memory and a --file-prefix unique to this process and call (pid + counter).
  static std::vector<std::string> no_huge_args(unsigned lcore = 0, unsigned memory_mb = 512);
  // The worker lcores (not the main one) waiting for work, in id order: what the receive side may take.
  static std::vector<unsigned> idle_worker_lcores();
  // The CPUs no lcore of EAL's runs on (0 .. the configured count - 1), or every CPU when each one has an
  // lcore: where a helper thread should run (the pcap capture's writer), off the polling lcores' CPUs.
  static std::vector<unsigned> cpus_without_lcores();
  // True when every CPU has an lcore of EAL's: a helper thread then shares a CPU with a polling lcore.
  static bool every_cpu_has_an_lcore();

  // Set by SIGINT/SIGTERM (and request_stop()); polled by run loops. clear_stop() resets it.
  static bool stop_requested() noexcept { return stop_flag_.load(std::memory_order_relaxed); }
  static void request_stop() noexcept { stop_flag_.store(true, std::memory_order_relaxed); }
  static void clear_stop() noexcept { stop_flag_.store(false, std::memory_order_relaxed); }

  const std::vector<std::string>& args() const noexcept { return args_; }

  Eal(const Eal&) = delete;
  Eal& operator=(const Eal&) = delete;

 private:
  Eal() = default;
  std::vector<std::string> args_;
  static std::atomic<bool> stop_flag_;
};

// Joins arguments with spaces, for messages.
std::string join_args(const std::vector<std::string>& args);

// Queue, descriptor and mempool sizes of a port.
struct PortConfig {
  uint16_t rx_queues = 1;
  uint16_t tx_queues = 1;
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint32_t mbufs = 8191;          // in the port's mempool (2^n - 1 is the mempool's optimum)
  uint32_t mbuf_cache = 256;      // per-lcore cache of the mempool
  uint16_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE;  // bytes per mbuf, headroom included
  uint16_t mtu = 1500;            // set when the device supports it (ENOTSUP ignored)
  bool promiscuous = true;        // receive frames for the address plan's MACs, not only the port's
  int socket = SOCKET_ID_ANY;     // NUMA node of the mempool and rings
  // Enable the NIC's RX timestamps (RTE_ETH_RX_OFFLOAD_TIMESTAMP) when the device offers them.
  bool rx_timestamps = true;
  // Enable the NIC's RX checksum checks (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM and UDP_CKSUM) when the device
  // offers both: a frame whose UDP checksum the NIC found good is not summed again (decode_mbuf).
  bool rx_checksums = true;
  // For tests on devices without NIC timestamps (all of this machine's): the port acts as a NIC whose
  // clock runs `num / den` ticks per TSC tick from `offset`. An RX callback stamps every frame the port
  // receives with that clock (the dynamic field and flag, as such a NIC's driver does), the offload reads
  // as on and read_clock() reads the same clock, so the receive side's whole NIC-timestamp path (ClockFit,
  // arrivals by the NIC) runs. `num` 0: off (the default). host/dpdk/README.md, "NIC hardware timestamps".
  struct SimulatedNicClock {
    uint32_t num = 0, den = 1;
    uint64_t offset = 0;
  };
  SimulatedNicClock simulated_nic_clock;

  // Mbufs for `in_flight` packets held by the application (delay lines, retransmit buffers) on top of
  // every RX/TX descriptor, one burst per lcore in flight and the lcores' mempool caches; rounded up
  // to 2^n - 1.
  static uint32_t mbufs_for(uint32_t in_flight, uint16_t rx_queues, uint16_t rx_desc, uint16_t tx_queues,
                            uint16_t tx_desc, uint16_t burst, uint32_t cache, uint32_t lcores = 1);
  uint32_t mbufs_for(uint32_t in_flight, uint16_t burst, uint32_t lcores = 1) const {
    return mbufs_for(in_flight, rx_queues, rx_desc, tx_queues, tx_desc, burst, mbuf_cache, lcores);
  }
  // Mbuf data room (headroom included) for a whole frame of `mtu` in one segment: headroom + MTU +
  // Ethernet header + two VLAN tags + FCS. std::invalid_argument beyond 65535.
  static uint16_t data_room_for_mtu(uint32_t mtu);
};

struct PortStats {
  uint64_t ipackets = 0, opackets = 0, ibytes = 0, obytes = 0;
  uint64_t imissed = 0, ierrors = 0, oerrors = 0, rx_nombuf = 0;
};

// A configured and started ethdev with its own mempool. Not copyable; movable. The destructor stops and
// closes the port, and removes the device when this Port probed it (open()).
class Port {
 public:
  // An existing port (PCI device, --vdev, make_ring_pair). std::runtime_error naming the port.
  Port(uint16_t port_id, const PortConfig& cfg);
  // Probes `devargs` (e.g. "net_null0", "net_memif0,role=server,socket=/tmp/x.sock",
  // "net_pcap0,tx_pcap=/tmp/y.pcap" or a PCI address) with rte_dev_probe, then configures and starts it.
  static Port open(const std::string& devargs, const PortConfig& cfg);
  // A device EAL already probed (a PCI device it found or was given with -a, a --vdev) is used as it is,
  // by the name before the first comma of `devargs`; anything else is probed from `devargs` (open()).
  static Port attach_or_open(const std::string& devargs, const PortConfig& cfg);
  ~Port();
  Port(Port&& other) noexcept;
  Port& operator=(Port&&) = delete;
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  uint16_t id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }
  rte_mempool* pool() const noexcept { return pool_; }
  // A second pool for transmitting only, of `mbufs` (at most pool()'s size; 63 at least) with pool()'s
  // data room, every data room zeroed when it is created (on the first call, whose size holds; later
  // calls return it; std::runtime_error when it cannot be created). Frames whose bytes after their
  // headers are zeros (the fabric's data frames) are written into its mbufs without writing those bytes
  // (encode_run's payload_zero), so nothing may write more than such headers into them: frames of one
  // header length only, and never a receive queue's pool. Nothing but the lengths of its mbufs may change
  // either (fill_run with zero_pool sets them and resets nothing else; a device's free restores next and
  // nb_segs): no offload flags, no data offset. Freed with the port.
  // `recycle`: which lcore frees the mbufs once sent, and so which of two such pools (each made on its
  // first call). kSameLcore (a device's transmit clean-up, net_null, a receive side run inline): the
  // lcores' mempool caches, so a freed mbuf comes back first (LIFO) with its lines warm. kOtherLcore (an
  // in-process ring pair whose receive side runs on another lcore and frees there): no lcore cache, so
  // the pool's ring hands the mbufs back oldest first (FIFO). Cached, the receive lcore's frees went
  // back to the sender within a few hundred frames, while the lines it had just read were still in its
  // cache: the sender's first store into every frame head then waited for the line to come over from
  // the other core (host/dpdk/README.md, "End to end").
  enum class Recycle { kSameLcore, kOtherLcore };
  rte_mempool* zero_pool(uint32_t mbufs = UINT32_MAX, Recycle recycle = Recycle::kSameLcore);
  const PortConfig& config() const noexcept { return cfg_; }
  rte_ether_addr mac() const;
  // RSS is on: the device spreads received frames over its receive queues by a hash of their IPv4
  // addresses and UDP ports (enabled when PortConfig::rx_queues > 1 and the device offers it). Devices
  // without it hand a frame to the receive queue of the number it was sent on (the in-process ring pair,
  // memif), or spread it their own way (net_af_packet with qpairs: the kernel's flow hash,
  // PACKET_FANOUT_HASH).
  bool rss() const noexcept { return rss_; }

  // Thin wrappers: no allocation, no checks. tx_burst returns how many were taken (the caller still owns
  // the rest); rx_burst how many were written to `pkts`.
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n, uint16_t queue = 0) noexcept {
    return rte_eth_tx_burst(id_, queue, pkts, n);
  }
  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n, uint16_t queue = 0) noexcept {
    return rte_eth_rx_burst(id_, queue, pkts, n);
  }
  // Sends all `n` (retrying while the queue is full, until the stop flag); frees what it could not send.
  // Returns how many were sent.
  uint32_t tx_all(rte_mbuf** pkts, uint32_t n, uint16_t queue = 0) noexcept;

  // RX timestamps (README.md, "NIC hardware timestamps"). True when the device offered
  // RTE_ETH_RX_OFFLOAD_TIMESTAMP and it was enabled.
  bool rx_timestamp_offload() const noexcept { return ts_offload_; }
  // The NIC checks received IPv4 and UDP checksums (PortConfig::rx_checksums and the device offers it).
  bool rx_checksum_offload() const noexcept { return csum_offload_; }
  // The frame's RX timestamp (the mbuf dynamic field, in the device's clock) when the driver set one:
  // with the offload, or drivers that always do (net_pcap: the pcap record's time in microseconds).
  bool rx_timestamp(const rte_mbuf* m, uint64_t& out) const noexcept {
    if ((m->ol_flags & ts_flag_) == 0) return false;
    out = *RTE_MBUF_DYNFIELD(m, ts_offset_, const rte_mbuf_timestamp_t*);
    return true;
  }
  // The device clock now (rte_eth_read_clock); false when the driver cannot read it.
  bool read_clock(uint64_t& out) const noexcept;

  bool link_up() const noexcept;
  uint32_t link_speed_mbps() const noexcept;  // 0 when unknown
  PortStats stats() const;                    // rte_eth_stats_get; std::runtime_error on failure
  void reset_stats() noexcept;

 private:
  Port(uint16_t port_id, const PortConfig& cfg, std::string probed_devargs);
  void setup();
  void close() noexcept;
  // The RX callback of a simulated NIC clock: every frame received stamped with it.
  static uint16_t stamp_rx(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n, uint16_t max,
                           void* arg) noexcept;

  uint16_t id_ = 0;
  PortConfig cfg_;
  std::string name_;
  std::string probed_;        // devargs we probed (non-empty: remove the device on close)
  rte_mempool* pool_ = nullptr;
  rte_mempool* zero_pools_[2] = {nullptr, nullptr};  // by Recycle
  rte_device* device_ = nullptr;
  bool started_ = false;
  bool open_ = false;
  bool ts_offload_ = false;
  bool csum_offload_ = false;
  bool rss_ = false;
  bool promisc_set_ = false;  // promiscuous mode was off and this Port turned it on (off again on close)
  // The simulated NIC clock (PortConfig::simulated_nic_clock): on the heap, since the RX callbacks hold
  // its address and a Port moves.
  struct NicClockSim {
    PortConfig::SimulatedNicClock clock;
    int field = 0;
    uint64_t flag = 0;
    uint64_t at(uint64_t tsc) const noexcept;  // the clock at TSC `tsc`
  };
  std::unique_ptr<NicClockSim> nic_sim_;
  std::vector<const rte_eth_rxtx_callback*> rx_callbacks_;
  int ts_offset_ = 0;      // of the timestamp dynamic field (valid when ts_flag_ != 0)
  uint64_t ts_flag_ = 0;   // the RX timestamp dynamic flag; 0: never set by anyone here
};

// Two ring-based ethdevs cross-connected with rte_eth_from_rings: what `a` transmits `b` receives and
// vice versa, queue by queue (`queues` rings each way: a's TX queue q is b's RX queue q, and back). The
// ethdevs are named "net_ring_<name>_a" and "net_ring_<name>_b" (name: 1..20 characters, unique among
// live pairs). Owns the rings and the vdevs; destroy the Ports built on a and b first.
//
// A device between a and b (`device`: a latency, a rate, or both): a thread of the pair's own takes each
// frame off a's TX ring, stamps it with the TSC, and hands it to b's RX ring when the device is done with
// it: at its stamp plus the latency, and with a rate, after its bytes (pkt_len) have crossed the device at
// that rate behind the frames before it (a FIFO link of that rate: it starts when it is taken or when the
// frame before has crossed, whichever is later). In order, queue by queue (each queue a device of its own);
// up to 2 x ring_size frames held (when that is full, a's TX ring fills and a's tx_burst takes fewer).
// Frames from b to a pass at once. A stand-in device under test whose effect is known, for the
// measurements of the DPDK fabric (README.md, "A device of known latency and rate"). The thread polls
// without sleeping, on the CPUs no lcore polls (Eal::cpus_without_lcores).
// With a rate and `ecn_bytes`, the device marks ECN as a switch's egress queue does (step marking, as
// DCQCN's RED with Kmin = Kmax): an ECT IPv4 frame that finds at least ecn_bytes still to cross the device
// ahead of it (the bytes of the frames before it that the rate has not let through when it is taken) leaves
// marked CE, its IPv4 checksum updated (mark_ce, host/wire/frame.h); a Not-ECT frame is never marked.
struct RingDevice {
  uint64_t delay_ns = 0;        // latency (wall ns); 0: none
  uint64_t bytes_per_sec = 0;   // rate; 0: none (infinitely fast)
  uint64_t ecn_bytes = 0;       // CE threshold of the queue ahead (needs a rate); 0: never marks
  bool any() const noexcept { return delay_ns > 0 || bytes_per_sec > 0; }
};
class DelayLine;
// Waits for a worker lcore launched with rte_eal_remote_launch (rte_eal_wait_lcore) once: `joined` set;
// std::runtime_error(`failure`) when the worker wrote one (RxWorker, TxWorker).
void join_lcore(unsigned lcore, bool& joined, const std::string& failure);
// The worker's side of that: runs `body` on the worker lcore, and an exception it throws becomes `failure`,
// "<role> lcore <lcore>: <what()>" ("...: unknown exception" for one that is no std::exception), which
// join_lcore then throws on the main lcore (RxWorker::run, TxWorker::run).
template <class Body>
void run_capturing_failure(const char* role, unsigned lcore, std::string& failure, Body&& body) noexcept {
  try {
    body();
  } catch (const std::exception& e) {
    failure = std::string(role) + " lcore " + std::to_string(lcore) + ": " + e.what();
  } catch (...) {
    failure = std::string(role) + " lcore " + std::to_string(lcore) + ": unknown exception";
  }
}

class RingPair {
 public:
  // `a_tx_queues` (0: `queues`): a's transmit queues, a multiple of `queues`; a's transmit queue t feeds b's
  // receive queue t mod `queues` (several transmit lcores, each with a queue per receive path: README.md,
  // "Several transmit lcores"). Those rings are then multi-producer.
  explicit RingPair(const std::string& name, unsigned ring_size = 4096, int socket = SOCKET_ID_ANY,
                    uint16_t queues = 1, RingDevice device = {}, uint16_t a_tx_queues = 0);
  ~RingPair();
  RingPair(const RingPair&) = delete;
  RingPair& operator=(const RingPair&) = delete;
  uint16_t a() const noexcept { return a_; }
  uint16_t b() const noexcept { return b_; }
  uint16_t queues() const noexcept { return static_cast<uint16_t>(ab_.size()); }
  const RingDevice& device() const noexcept { return device_; }
  // With a device: frames it has handed to b so far, the most it held at once, and the frames it marked CE.
  uint64_t delayed_frames() const noexcept;
  uint64_t delay_peak_held() const noexcept;
  uint64_t ce_marked() const noexcept;

 private:
  void free_all() noexcept;
  std::string name_a_, name_b_;
  std::vector<rte_ring*> ab_;     // by queue: b's RX (and a's TX without a device)
  std::vector<rte_ring*> ba_;     // by queue: b's TX, a's RX
  std::vector<rte_ring*> ab_in_;  // with a device, by queue: a's TX, taken by the device's thread
  RingDevice device_;
  std::unique_ptr<DelayLine> delay_;
  uint16_t a_ = 0, b_ = 0;
};
inline RingPair make_ring_pair(const std::string& name) { return RingPair(name); }

// --- frames of host/wire/frame.h in mbufs ---

// `n` mbufs of `pool` ready for a frame, as rte_pktmbuf_alloc_bulk gives them, the way testpmd's txonly
// engine takes them: rte_mempool_get_bulk, then only the fields a pooled mbuf may have changed reset.
// A mbuf in its pool has refcnt 1, nb_segs 1 and next nullptr (rte_pktmbuf_prefree_seg restores them
// before it goes back); what a receive path or a user may have left is the data offset, the flags, the
// packet type, VLAN tags and offload lengths, and those are reset here. rte_pktmbuf_alloc_bulk resets
// every field of every mbuf and cost here about 10 ns a frame more in testpmd's loop (bench_dpdk_tx,
// txonly_ref against txonly_alloc). Returns false (nothing taken) when the pool and the lcore's cache
// have fewer than n.
inline void reset_frame(rte_mbuf* m) noexcept {
  m->data_off = static_cast<uint16_t>(std::min<uint16_t>(RTE_PKTMBUF_HEADROOM, m->buf_len));
  m->ol_flags &= RTE_MBUF_F_EXTERNAL;
  m->packet_type = 0;
  m->vlan_tci = 0;
  m->vlan_tci_outer = 0;
  m->port = RTE_MBUF_PORT_INVALID;
  m->data_len = 0;
  m->pkt_len = 0;
  m->tx_offload = 0;
}
inline bool alloc_frames(rte_mempool* pool, rte_mbuf** out, unsigned n) noexcept {
  if (rte_mempool_get_bulk(pool, reinterpret_cast<void**>(out), n) != 0) return false;
  for (unsigned i = 0; i < n; ++i) reset_frame(out[i]);
  return true;
}
// n mbufs straight from the pool (rte_mempool_get_bulk), not reset: for fill_run, which resets them as
// it writes them (a zero pool's need no reset). A separate pass of resets over a burst cost more than
// resetting them in fill_run's one pass over the mbufs: its stores waited behind the frames' in the store
// buffer (PERFORMANCE.md, "Transmit rate").
inline bool take_frames(rte_mempool* pool, rte_mbuf** out, unsigned n) noexcept {
  return rte_mempool_get_bulk(pool, reinterpret_cast<void**>(out), n) == 0;
}

// Encodes `spec` into the (empty, single-segment) `m`: data_len = pkt_len = frame length. Returns the
// length, or 0 (m unchanged) when the frame does not fit the mbuf's tailroom.
uint16_t fill_mbuf(rte_mbuf* m, const FrameSpec& spec) noexcept;

// The same frame from the flow's template (host/wire/frame.h, encode(FrameTemplate&, ...)): the fast path for every
// frame of a flow. Same contract as fill_mbuf(m, spec).
inline uint16_t fill_mbuf(rte_mbuf* m, FrameTemplate& flow, const FrameSpec& spec) noexcept {
  const std::span<uint8_t> room(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m) + m->data_len);
  const size_t n = encode(flow, spec, room);
  if (n == 0 || n > UINT16_MAX) return 0;
  m->data_len = static_cast<uint16_t>(n);
  m->pkt_len = static_cast<uint32_t>(n);
  return static_cast<uint16_t>(n);
}

// The frames of a run of one message's data packets (host/wire/frame.h, encode_run) into ms[0..n), n <= 64, mbufs of
// one segment as alloc_frames or take_frames gives them (reset here, in the same pass): frame i into
// ms[i], data_len = pkt_len = its length. Returns the run's bytes on the wire, or 0 (nothing usable)
// when a frame does not fit its mbuf or encode_run refuses the run.
// zero_pool: the mbufs are a Port::zero_pool()'s. Their data rooms are zero beyond the headers
// (encode_run's payload_zero), and their fields are as the pool made them but for the lengths, which
// this sets (the pool's contract): they are not reset. A store into a burst's mbuf headers besides the
// lengths cost 7-10 ns a frame here, before or after the frames' bytes (bench_dpdk_tx,
// fabemu/null/1126B/pace_off: 35 -> 47 M frames/s without the reset; host/dpdk/PERFORMANCE.md, "Mbufs not reset").
inline uint64_t fill_run(rte_mbuf* const* ms, uint32_t n, FrameTemplate& flow, const FrameSpec& first,
                         uint32_t last_bytes, bool zero_pool = false) noexcept {
  if (n == 0 || n > 64) return 0;
  uint8_t* frames[64];
  uint16_t lens[64];
  uint64_t had[64];  // each mbuf's (pkt_len << 16 | data_len) before: read with the rest of its first line
  size_t room = SIZE_MAX;
  for (uint32_t i = 0; i < n; ++i) {
    rte_mbuf* m = ms[i];
    if (!zero_pool) reset_frame(m);
    frames[i] = rte_pktmbuf_mtod(m, uint8_t*);
    room = std::min<size_t>(room, m->buf_len - m->data_off);  // the tailroom of an empty mbuf
    had[i] = uint64_t{m->pkt_len} << 16 | m->data_len;
  }
  if (!encode_run(flow, first, n, last_bytes, frames, room, lens, zero_pool)) return 0;
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < n; ++i) {
    // Stored only when they change (a zero pool's mbufs mostly carry frames of one length): an mbuf
    // header left unwritten stays shared between the cores that read it (a ring pair's receive lcore
    // reads the same mbufs; DPDK frees them without writing them). Compared with what the first pass
    // read: loading the mbuf's line again here, after the frames' bytes, cost about 1 ns a frame (perf).
    if (had[i] != (uint64_t{lens[i]} << 16 | lens[i])) [[unlikely]] {
      ms[i]->data_len = lens[i];
      ms[i]->pkt_len = lens[i];
    }
    bytes += lens[i];
  }
  return bytes;
}

// Decodes the frame in `m`. A contiguous frame (one segment) is decoded in place, so `out.payload`
// points into the mbuf; a chained one is first copied into `scratch` (kTruncated when it does not fit).
// A frame whose UDP checksum the NIC found good (RTE_MBUF_F_RX_L4_CKSUM_GOOD, RX checksum offload) is
// not summed again; every other (bad, unknown, none) is checked as `rules` say. Everything else (the
// IPv4 checksum, the ICRC when asked for, the header CRC) is checked as ever.
Verdict decode_mbuf(const rte_mbuf* m, const DecodeRules& rules, DecodedFrame& out,
                    std::span<uint8_t> scratch = {}) noexcept;

// The frame bytes of a single-segment mbuf.
inline std::span<const uint8_t> mbuf_bytes(const rte_mbuf* m) noexcept {
  return {rte_pktmbuf_mtod(m, const uint8_t*), m->data_len};
}

}  // namespace fabemu::host::dpdk
