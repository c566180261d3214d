#include "host/dpdk/dpdk_env.h"

#include <rte_launch.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "emulator/time.h"
#include "host/wire/frame.h"

namespace fabemu::host::dpdk {

std::atomic<bool> Eal::stop_flag_{false};

namespace {

// Writes a zero byte into every page of every mbuf's buffer in `pool`, so that no page of it is first
// written during a run. Without hugepages (--no-huge) the EAL's memory is plain anonymous memory whose
// pages are mapped on their first write; the pool's mbuf headers are written when it is made, but a data
// room larger than the rest of its first page is not. A path that writes whole frames into the pool's
// buffers (RoCEv2's shorter last frames, their payloads written) then took a page fault on each buffer's
// first use, in the middle of a run, and such a run took several times as long (fabemu mode, whose short
// frames come from the zero pool, did not: PERFORMANCE.md, "Buffers written before the run"). The
// buffers' contents are unspecified before a frame is written, so the zeros change nothing.
void prefault_buffers(rte_mempool* pool) {
  static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096);
  rte_mempool_obj_iter(
      pool,
      [](rte_mempool*, void*, void* obj, unsigned) {
        const auto* m = static_cast<rte_mbuf*>(obj);
        auto* buf = static_cast<volatile uint8_t*>(m->buf_addr);
        const size_t len = m->buf_len;
        if (len == 0) return;
        for (size_t off = 0; off < len; off += page) buf[off] = 0;
        buf[len - 1] = 0;
      },
      nullptr);
}

std::mutex g_eal_mutex;
Eal* g_eal = nullptr;                      // the instance after a successful start
std::optional<std::string> g_eal_failure;  // the first start's error, rethrown by later calls
bool g_eal_shut_down = false;
struct sigaction g_old_int {};
struct sigaction g_old_term {};
bool g_handlers_installed = false;

extern "C" void fabemu_eal_on_signal(int /*sig*/) { Eal::request_stop(); }

void install_handlers() {
  struct sigaction sa {};
  sa.sa_handler = fabemu_eal_on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  // A signal the parent has us ignore stays ignored (a script's background job starts with SIGINT
  // ignored, so that the terminal's ^C does not reach it; nohup ignores SIGHUP alike).
  for (const auto& [sig, old] : {std::pair{SIGINT, &g_old_int}, std::pair{SIGTERM, &g_old_term}}) {
    sigaction(sig, nullptr, old);
    if (old->sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
  }
  g_handlers_installed = true;
}

void restore_handlers() {
  if (!g_handlers_installed) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_handlers_installed = false;
}

std::string errstr(int err) { return rte_strerror(err < 0 ? -err : err); }

}  // namespace

std::string join_args(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

Eal& Eal::start(const std::vector<std::string>& args) {
  std::lock_guard lock(g_eal_mutex);
  if (g_eal != nullptr) return *g_eal;
  if (g_eal_shut_down) throw std::runtime_error("EAL: already shut down in this process (DPDK cannot restart it)");
  if (g_eal_failure) throw std::runtime_error(*g_eal_failure);

  // rte_eal_init parses with getopt and may permute argv: give it its own copies.
  std::vector<std::string> storage;
  storage.reserve(args.size() + 1);
  storage.emplace_back("fabemu");
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(storage.size() + 1);
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int saved_optind = optind;
  optind = 1;
  // The handlers before rte_eal_init: with hugepages EAL takes seconds to map them, and a SIGINT then
  // killed the process with them mapped (their files left in hugetlbfs for the next run to find). Now it
  // only sets the flag, EAL finishes, and the run that follows stops at once (stop_requested()) with its
  // report and a clean shutdown (rte_eal_cleanup).
  clear_stop();
  install_handlers();
  const int rc = rte_eal_init(static_cast<int>(storage.size()), argv.data());
  optind = saved_optind;
  if (rc < 0) {
    restore_handlers();
    const int err = rte_errno;
    // Some failures leave rte_errno at 0 ("Cannot init config": another process holds the prefix's lock).
    g_eal_failure = "EAL: rte_eal_init failed: " + (err != 0 ? errstr(err) : std::string("see EAL's messages above")) +
                    " (EAL arguments: " + join_args(args) + ")";
    const auto has = [&](const char* opt) {
      return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.rfind(opt, 0) == 0; });
    };
    if (err == 0 && !has("--file-prefix") && !has("--in-memory")) {
      *g_eal_failure +=
          ": another DPDK process (another fabemu run?) may hold the same --file-prefix (default rte): give each "
          "run its own (--file-prefix fabemu-$$), or --in-memory";
    }
    // EAL says EACCES when it finds no hugepage information (no hugetlbfs mounted, or none it may use):
    // the one failure every first run on a fresh host meets, so the way out is named.
    if (err == EACCES && std::find(args.begin(), args.end(), "--no-huge") == args.end()) {
      *g_eal_failure +=
          ": no usable hugepages? Reserve some and mount hugetlbfs (as root: echo 1024 > "
          "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; mount -t hugetlbfs nodev /dev/hugepages), "
          "or run without them: -- --no-huge -m 512 (with --no-pci too unless you use PCI NICs: EAL then probes "
          "none of the host's)";
    }
    throw std::runtime_error(*g_eal_failure);
  }
  static Eal instance;
  instance.args_ = args;
  g_eal = &instance;
  return instance;
}

bool Eal::running() noexcept {
  std::lock_guard lock(g_eal_mutex);
  return g_eal != nullptr;
}

void Eal::shutdown() noexcept {
  std::lock_guard lock(g_eal_mutex);
  if (g_eal == nullptr) return;
  // EAL makes /var/run/dpdk/<prefix> (or $XDG_RUNTIME_DIR/dpdk/<prefix>) and rte_eal_cleanup leaves it:
  // with a prefix of its own per process (no_huge_args) every run left one. Removed when empty only (a
  // shared config or a telemetry socket in it: left as it is).
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  if (!runtime_dir.empty()) ::rmdir(runtime_dir.c_str());
  restore_handlers();
  g_eal = nullptr;
  g_eal_shut_down = true;
}

std::vector<unsigned> Eal::idle_worker_lcores() {
  std::vector<unsigned> ids;
  for (unsigned id = rte_get_next_lcore(~0u, 1, 0); id < RTE_MAX_LCORE; id = rte_get_next_lcore(id, 1, 0)) {
    if (rte_eal_get_lcore_state(id) == WAIT) ids.push_back(id);
  }
  return ids;
}

namespace {
// The CPUs no lcore of EAL's runs on (0 .. the configured count - 1), and all of them.
void split_cpus(std::vector<unsigned>& free_cpus, std::vector<unsigned>& all) {
  const long configured = ::sysconf(_SC_NPROCESSORS_CONF);
  const unsigned n = configured > 0 ? static_cast<unsigned>(std::min<long>(configured, CPU_SETSIZE)) : 1;
  std::vector<bool> used(n, false);
  unsigned id = 0;
  RTE_LCORE_FOREACH(id) {
    const rte_cpuset_t set = rte_lcore_cpuset(id);
    for (unsigned c = 0; c < n; ++c) {
      if (CPU_ISSET(c, &set)) used[c] = true;
    }
  }
  for (unsigned c = 0; c < n; ++c) {
    all.push_back(c);
    if (!used[c]) free_cpus.push_back(c);
  }
}
}  // namespace

std::vector<unsigned> Eal::cpus_without_lcores() {
  std::vector<unsigned> free_cpus, all;
  split_cpus(free_cpus, all);
  return free_cpus.empty() ? all : free_cpus;
}

bool Eal::every_cpu_has_an_lcore() {
  std::vector<unsigned> free_cpus, all;
  split_cpus(free_cpus, all);
  return free_cpus.empty();
}

std::vector<std::string> Eal::no_huge_args(unsigned lcore, unsigned memory_mb) {
  static std::atomic<unsigned> counter{0};
  const std::string prefix =
      "fabemu-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  return {"--no-huge",    "-m", std::to_string(memory_mb), "--no-pci",          "--no-shconf",
          "--file-prefix", prefix, "--no-telemetry",       "-l", std::to_string(lcore)};
}

// --- PortConfig ---

uint32_t PortConfig::mbufs_for(uint32_t in_flight, uint16_t rx_queues, uint16_t rx_desc, uint16_t tx_queues,
                               uint16_t tx_desc, uint16_t burst, uint32_t cache, uint32_t lcores) {
  uint64_t n = uint64_t{in_flight} + uint64_t{rx_queues} * rx_desc + uint64_t{tx_queues} * tx_desc +
               uint64_t{lcores} * (uint64_t{burst} + cache);
  uint64_t p = 1;
  while (p - 1 < n) p <<= 1;
  if (p - 1 > UINT32_MAX) throw std::invalid_argument("PortConfig::mbufs_for: more than 2^32 mbufs");
  return static_cast<uint32_t>(p - 1);
}

uint16_t PortConfig::data_room_for_mtu(uint32_t mtu) {
  const uint32_t room = RTE_PKTMBUF_HEADROOM + mtu + RTE_ETHER_HDR_LEN + 2 * RTE_VLAN_HLEN + RTE_ETHER_CRC_LEN;
  if (room > UINT16_MAX)
    throw std::invalid_argument("PortConfig::data_room_for_mtu: MTU " + std::to_string(mtu) +
                                " needs more than 65535 bytes per mbuf");
  return static_cast<uint16_t>(room);
}

// --- Port ---

Port::Port(uint16_t port_id, const PortConfig& cfg) : Port(port_id, cfg, std::string{}) {}

Port::Port(uint16_t port_id, const PortConfig& cfg, std::string probed_devargs)
    : id_(port_id), cfg_(cfg), probed_(std::move(probed_devargs)) {
  try {
    setup();
  } catch (...) {
    close();
    throw;
  }
}

Port Port::open(const std::string& devargs, const PortConfig& cfg) {
  if (!Eal::running()) throw std::runtime_error("Port::open(\"" + devargs + "\"): EAL is not running");
  const std::string name = devargs.substr(0, devargs.find(','));
  uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &id) == 0)
    throw std::runtime_error("Port::open(\"" + devargs + "\"): a port named " + name + " already exists");
  const int rc = rte_dev_probe(devargs.c_str());
  if (rc < 0 && rc != -EFAULT && rc != -ENODEV && rc != -ENOENT) {
    // A driver took the name and its probe failed (most return -1, which is no errno): its own message,
    // printed above, says why.
    throw std::runtime_error("device \"" + devargs + "\": its driver could not open it" +
                             (rc == -1 ? std::string() : " (" + errstr(rc) + ")") +
                             "; the driver's message above says why (an interface or file that does not exist, a "
                             "memif socket another process already serves, missing permissions)");
  }
  if (rc < 0) {
    throw std::runtime_error("device \"" + devargs + "\": no DPDK driver took it (rte_dev_probe: " + errstr(rc) +
                             "): a virtual device's name starts with its driver's (net_ring0, net_null0, "
                             "net_af_packet0,iface=..., net_pcap0,...), a PCI device is its address (0000:3b:00.0), "
                             "bound to vfio-pci or uio");
  }
  if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0) {
    rte_eal_hotplug_remove("vdev", name.c_str());
    throw std::runtime_error("Port::open(\"" + devargs + "\"): probed, but no ethdev named " + name);
  }
  return Port(id, cfg, devargs);
}

void Port::setup() {
  if (!rte_eth_dev_is_valid_port(id_)) throw std::runtime_error("port " + std::to_string(id_) + ": no such port");
  open_ = true;
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(id_, name);
  name_ = name;
  const std::string what = "port " + std::to_string(id_) + " (" + name_ + ")";

  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(id_, &info);
  if (rc != 0) throw std::runtime_error(what + ": rte_eth_dev_info_get: " + errstr(rc));
  device_ = info.device;
  if (cfg_.rx_queues > info.max_rx_queues || cfg_.tx_queues > info.max_tx_queues)
    throw std::runtime_error(what + ": asked for " + std::to_string(cfg_.rx_queues) + " RX / " +
                             std::to_string(cfg_.tx_queues) + " TX queues, the device has at most " +
                             std::to_string(info.max_rx_queues) + " / " + std::to_string(info.max_tx_queues) +
                             " (a receive lcore each takes a queue of each port: give the device more, e.g. "
                             "net_af_packet's qpairs=N, or list fewer lcores in --dpdk-rx-lcore)");

  // One pool per port, named uniquely (mempool names are global and at most 25 characters).
  static std::atomic<unsigned> pool_counter{0};
  const std::string pool_name = "fe_p" + std::to_string(id_) + "_" + std::to_string(pool_counter.fetch_add(1));
  const int socket = cfg_.socket == SOCKET_ID_ANY ? rte_eth_dev_socket_id(id_) : cfg_.socket;
  const unsigned cache = std::min<unsigned>(cfg_.mbuf_cache, RTE_MEMPOOL_CACHE_MAX_SIZE);
  pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), cfg_.mbufs, std::min(cache, cfg_.mbufs / 2), 0,
                                  cfg_.data_room, socket < 0 ? SOCKET_ID_ANY : socket);
  if (pool_ == nullptr)
    throw std::runtime_error(what + ": rte_pktmbuf_pool_create(" + std::to_string(cfg_.mbufs) + " mbufs of " +
                             std::to_string(cfg_.data_room) + " bytes): " + errstr(rte_errno));
  prefault_buffers(pool_);

  rte_eth_conf conf{};
  const PortConfig::SimulatedNicClock& sim = cfg_.simulated_nic_clock;
  if (sim.num != 0) {
    if (sim.den == 0) throw std::invalid_argument(what + ": a simulated NIC clock with a denominator of 0");
    int offset = -1;
    uint64_t flag = 0;
    rc = rte_mbuf_dyn_rx_timestamp_register(&offset, &flag);
    if (rc != 0) throw std::runtime_error(what + ": rte_mbuf_dyn_rx_timestamp_register: " + errstr(rte_errno));
    nic_sim_ = std::make_unique<NicClockSim>(NicClockSim{sim, offset, flag});
    ts_offload_ = true;
  } else if (cfg_.rx_timestamps && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP) != 0) {
    // The timestamp lives in a dynamic mbuf field the application registers; the driver fills it.
    int offset = -1;
    uint64_t flag = 0;
    rc = rte_mbuf_dyn_rx_timestamp_register(&offset, &flag);
    if (rc != 0) throw std::runtime_error(what + ": rte_mbuf_dyn_rx_timestamp_register: " + errstr(rte_errno));
    conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
    ts_offload_ = true;
  }
  constexpr uint64_t kRxChecksums = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
  if (cfg_.rx_checksums && (info.rx_offload_capa & kRxChecksums) == kRxChecksums) {
    conf.rxmode.offloads |= kRxChecksums;
    csum_offload_ = true;
  }
  // Several receive queues: RSS on the IPv4 addresses and UDP ports where the device hashes them (a NIC),
  // so that every frame of a flow lands on one queue. Devices without RSS hand a frame to the receive
  // queue of its transmit queue's number (ring pair, memif): the sender steers.
  constexpr uint64_t kRssFields = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_UDP;
  if (cfg_.rx_queues > 1 && (info.flow_type_rss_offloads & kRssFields) != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_key = nullptr;  // the driver's default key
    conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads & kRssFields;
    rss_ = true;
  }
  rc = rte_eth_dev_configure(id_, cfg_.rx_queues, cfg_.tx_queues, &conf);
  if (rc != 0) throw std::runtime_error(what + ": rte_eth_dev_configure: " + errstr(rc));
  uint16_t rx_desc = cfg_.rx_desc, tx_desc = cfg_.tx_desc;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(id_, &rx_desc, &tx_desc);
  if (rc != 0) throw std::runtime_error(what + ": rte_eth_dev_adjust_nb_rx_tx_desc: " + errstr(rc));
  if (cfg_.mtu != RTE_ETHER_MTU) {
    rc = rte_eth_dev_set_mtu(id_, cfg_.mtu);
    if (rc != 0 && rc != -ENOTSUP)
      throw std::runtime_error(what + ": rte_eth_dev_set_mtu(" + std::to_string(cfg_.mtu) + "): " + errstr(rc));
  }
  const unsigned q_socket = socket < 0 ? static_cast<unsigned>(SOCKET_ID_ANY) : static_cast<unsigned>(socket);
  for (uint16_t q = 0; q < cfg_.rx_queues; ++q) {
    rc = rte_eth_rx_queue_setup(id_, q, rx_desc, q_socket, nullptr, pool_);
    if (rc != 0) throw std::runtime_error(what + ": rte_eth_rx_queue_setup(" + std::to_string(q) + "): " + errstr(rc));
  }
  for (uint16_t q = 0; q < cfg_.tx_queues; ++q) {
    rc = rte_eth_tx_queue_setup(id_, q, tx_desc, q_socket, nullptr);
    if (rc != 0) throw std::runtime_error(what + ": rte_eth_tx_queue_setup(" + std::to_string(q) + "): " + errstr(rc));
  }
  if (nic_sim_) {
    for (uint16_t q = 0; q < cfg_.rx_queues; ++q) {
      const rte_eth_rxtx_callback* cb = rte_eth_add_rx_callback(id_, q, &stamp_rx, nic_sim_.get());
      if (cb == nullptr) throw std::runtime_error(what + ": rte_eth_add_rx_callback: " + errstr(rte_errno));
      rx_callbacks_.push_back(cb);
    }
  }
  rc = rte_eth_dev_start(id_);
  if (rc != 0) throw std::runtime_error(what + ": rte_eth_dev_start: " + errstr(rc));
  started_ = true;
  if (cfg_.promiscuous && rte_eth_promiscuous_get(id_) == 0) {
    rc = rte_eth_promiscuous_enable(id_);
    if (rc != 0 && rc != -ENOTSUP)
      throw std::runtime_error(what + ": rte_eth_promiscuous_enable: " + errstr(rc));
    // Turned off again on close: on net_af_packet (and net_tap) it is the kernel interface's IFF_PROMISC,
    // which outlives the process.
    promisc_set_ = rc == 0;
  }
  rte_eth_stats_reset(id_);
  // Registered by us (the offload) or by a driver that timestamps anyway (net_pcap registers at probe).
  const int field = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
  const int bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, nullptr);
  if (field >= 0 && bit >= 0) {
    ts_offset_ = field;
    ts_flag_ = uint64_t{1} << bit;
  }
}

bool Port::read_clock(uint64_t& out) const noexcept {
  if (nic_sim_) {
    out = nic_sim_->at(rte_rdtsc());
    return true;
  }
  return rte_eth_read_clock(id_, &out) == 0;
}

uint64_t Port::NicClockSim::at(uint64_t tsc) const noexcept {
  __extension__ using U128 = emu::detail::u128;
  return clock.offset + static_cast<uint64_t>(U128{tsc} * clock.num / clock.den);
}

uint16_t Port::stamp_rx(uint16_t, uint16_t, rte_mbuf** pkts, uint16_t n, uint16_t, void* arg) noexcept {
  const NicClockSim& c = *static_cast<const NicClockSim*>(arg);
  const uint64_t now = c.at(rte_rdtsc());
  for (uint16_t i = 0; i < n; ++i) {
    *RTE_MBUF_DYNFIELD(pkts[i], c.field, rte_mbuf_timestamp_t*) = now;
    pkts[i]->ol_flags |= c.flag;
  }
  return n;
}

Port::Port(Port&& o) noexcept
    : id_(o.id_), cfg_(o.cfg_), name_(std::move(o.name_)), probed_(std::move(o.probed_)), pool_(o.pool_),
      device_(o.device_), started_(o.started_), open_(o.open_), ts_offload_(o.ts_offload_),
      csum_offload_(o.csum_offload_), rss_(o.rss_), promisc_set_(o.promisc_set_), nic_sim_(std::move(o.nic_sim_)),
      rx_callbacks_(std::move(o.rx_callbacks_)), ts_offset_(o.ts_offset_), ts_flag_(o.ts_flag_) {
  o.pool_ = nullptr;
  for (int i = 0; i < 2; ++i) {
    zero_pools_[i] = o.zero_pools_[i];
    o.zero_pools_[i] = nullptr;
  }
  o.started_ = false;
  o.open_ = false;
  o.probed_.clear();
}

Port::~Port() { close(); }

void Port::close() noexcept {
  if (open_) {
    if (promisc_set_) rte_eth_promiscuous_disable(id_);
    if (started_) rte_eth_dev_stop(id_);
    // Stopped: no receive burst runs the callbacks any more (nic_sim_ goes with this Port).
    for (size_t q = 0; q < rx_callbacks_.size(); ++q) {
      rte_eth_remove_rx_callback(id_, static_cast<uint16_t>(q), rx_callbacks_[q]);
    }
    rx_callbacks_.clear();
    rte_eth_dev_close(id_);
    if (!probed_.empty() && device_ != nullptr) rte_dev_remove(device_);
  }
  started_ = false;
  open_ = false;
  // After close: the driver has given back every mbuf it held.
  if (pool_ != nullptr) rte_mempool_free(pool_);
  pool_ = nullptr;
  for (rte_mempool*& z : zero_pools_) {
    if (z != nullptr) rte_mempool_free(z);
    z = nullptr;
  }
}

rte_mempool* Port::zero_pool(uint32_t mbufs, Recycle recycle) {
  rte_mempool*& slot = zero_pools_[recycle == Recycle::kSameLcore ? 0 : 1];
  if (slot != nullptr) return slot;
  static std::atomic<unsigned> counter{0};
  const std::string name = "fe_z" + std::to_string(id_) + "_" + std::to_string(counter.fetch_add(1));
  const uint32_t n = std::clamp<uint32_t>(mbufs, 63, pool_->size);
  const uint32_t cache = recycle == Recycle::kSameLcore ? std::min<uint32_t>(pool_->cache_size, n / 8) : 0;
  rte_mempool* z = rte_pktmbuf_pool_create(name.c_str(), n, cache, 0, rte_pktmbuf_data_room_size(pool_),
                                           pool_->socket_id);
  if (z == nullptr)
    throw std::runtime_error("port " + name_ + ": rte_pktmbuf_pool_create(" + std::to_string(n) +
                             " mbufs, zeroed for transmit): " + errstr(rte_errno));
  rte_mempool_obj_iter(
      z,
      [](rte_mempool*, void*, void* obj, unsigned) {
        auto* m = static_cast<rte_mbuf*>(obj);
        std::memset(m->buf_addr, 0, m->buf_len);
      },
      nullptr);
  slot = z;
  return z;
}

Port Port::attach_or_open(const std::string& devargs, const PortConfig& cfg) {
  const std::string name = devargs.substr(0, devargs.find(','));
  uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &id) == 0) return Port(id, cfg);
  return open(devargs, cfg);
}

rte_ether_addr Port::mac() const {
  rte_ether_addr a{};
  const int rc = rte_eth_macaddr_get(id_, &a);
  if (rc != 0) throw std::runtime_error("port " + name_ + ": rte_eth_macaddr_get: " + errstr(rc));
  return a;
}

uint32_t Port::tx_all(rte_mbuf** pkts, uint32_t n, uint16_t queue) noexcept {
  uint32_t sent = 0;
  while (sent < n && !Eal::stop_requested()) {
    const uint16_t chunk = static_cast<uint16_t>(std::min<uint32_t>(n - sent, UINT16_MAX));
    sent += rte_eth_tx_burst(id_, queue, pkts + sent, chunk);
  }
  for (uint32_t i = sent; i < n; ++i) rte_pktmbuf_free(pkts[i]);
  return sent;
}

bool Port::link_up() const noexcept {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(id_, &link) != 0) return false;
  return link.link_status == RTE_ETH_LINK_UP;
}

uint32_t Port::link_speed_mbps() const noexcept {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(id_, &link) != 0) return 0;
  return link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
}

PortStats Port::stats() const {
  rte_eth_stats s{};
  const int rc = rte_eth_stats_get(id_, &s);
  if (rc != 0) throw std::runtime_error("port " + name_ + ": rte_eth_stats_get: " + errstr(rc));
  PortStats p;
  p.ipackets = s.ipackets;
  p.opackets = s.opackets;
  p.ibytes = s.ibytes;
  p.obytes = s.obytes;
  p.imissed = s.imissed;
  p.ierrors = s.ierrors;
  p.oerrors = s.oerrors;
  p.rx_nombuf = s.rx_nombuf;
  return p;
}

void Port::reset_stats() noexcept { rte_eth_stats_reset(id_); }

// --- lcores ---

void join_lcore(unsigned lcore, bool& joined, const std::string& failure) {
  if (joined) return;
  rte_eal_wait_lcore(lcore);
  joined = true;
  if (!failure.empty()) throw std::runtime_error(failure);
}

// --- frames ---

uint16_t fill_mbuf(rte_mbuf* m, const FrameSpec& spec) noexcept {
  const size_t room = rte_pktmbuf_tailroom(m) + m->data_len;
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t n = encode(spec, std::span<uint8_t>(data, room));
  if (n == 0 || n > UINT16_MAX) return 0;
  m->data_len = static_cast<uint16_t>(n);
  m->pkt_len = static_cast<uint32_t>(n);
  return static_cast<uint16_t>(n);
}

Verdict decode_mbuf(const rte_mbuf* m, const DecodeRules& rules, DecodedFrame& out,
                    std::span<uint8_t> scratch) noexcept {
  if ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD && rules.verify_udp_checksum)
      [[unlikely]] {
    DecodeRules checked = rules;
    checked.verify_udp_checksum = false;  // the NIC summed it
    return decode_mbuf(m, checked, out, scratch);
  }
  if (m->nb_segs == 1 && m->data_len == m->pkt_len) return decode(mbuf_bytes(m), rules, out);
  if (m->pkt_len > scratch.size()) return Verdict::kTruncated;
  const void* p = rte_pktmbuf_read(m, 0, m->pkt_len, scratch.data());
  if (p == nullptr) return Verdict::kTruncated;
  return decode(std::span<const uint8_t>(static_cast<const uint8_t*>(p), m->pkt_len), rules, out);
}

}  // namespace fabemu::host::dpdk
