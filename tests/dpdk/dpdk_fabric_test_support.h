// Helpers of the DPDK fabric's end-to-end tests (test_dpdk_fabric, test_dpdk_lcores): the software packet
// model's run to compare with, a run through DpdkFabric, and the exactness check (the workloads and what
// needs no DPDK: fabric_test_support.h).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/report.h"
#include "host/dpdk/dpdk_fabric.h"
#include "tests/dpdk/fabric_test_support.h"

namespace fabemu::test {

// A temporary directory, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir();
  ~TempDir();
};

emu::RunResult run_software(const Workload& w);

using DpdkRun = FabricRun<host::dpdk::DpdkStats>;
// The workload through a DpdkFabric on `ports` (MTU kModelMtu); prints the DPDK summary.
DpdkRun run_dpdk(const Workload& w, host::dpdk::DpdkPorts& ports, host::dpdk::DpdkFabricOptions opt);

host::dpdk::PortConfig port_config();
// The same with `rx_queues` receive and `tx_queues` transmit queues.
host::dpdk::PortConfig port_config(uint16_t rx_queues, uint16_t tx_queues);

// The generated all-reduce (generated_all_reduce) in a scratch folder of its own, and the software packet
// model's result of it: what the lcore tests (test_dpdk_lcores, test_dpdk_rx_queues, test_dpdk_tx_lcores)
// compare their DPDK runs with.
struct GeneratedAllReduce {
  ScratchDir dir;
  Workload w = generated_all_reduce(dir);
  emu::RunResult sw = run_software(w);
};

// A DpdkFabric on a ring of 4 ranks (default address plan) over `ports` with `opt`: the tests of which lcores
// and ports a fabric accepts. std::invalid_argument when it refuses them.
std::unique_ptr<host::dpdk::DpdkFabric> ring4_fabric(host::dpdk::DpdkPorts& ports,
                                                     const host::dpdk::DpdkFabricOptions& opt);
// Why ring4_fabric refuses `opt` on `ports` (the std::invalid_argument's message); "(accepted)" when it does not.
std::string refusal(host::dpdk::DpdkPorts& ports, const host::dpdk::DpdkFabricOptions& opt);

// Sends `frames` (1 to 32) fresh mbufs on `from`'s transmit queue `tx_queue`, then reads (and frees) what
// each of `to`'s receive queues 0 .. rx_queues - 1 got: how many each, in queue order (empty, with a test
// failure, when the frames could not be sent). How a device maps its transmit queues to receive queues.
std::vector<uint16_t> frames_per_rx_queue(host::dpdk::Port& from, uint16_t tx_queue, uint16_t frames,
                                          host::dpdk::Port& to, uint16_t rx_queues);

// A capture the fabric wrote (--pcap), read back: every record decoded with `rules`.
struct Capture {
  uint64_t frames = 0, data = 0, feedback = 0;  // records; data frames; ACK and NACK frames
  uint64_t not_ours = 0;                        // records decode() refused
  uint64_t out_of_order = 0;                    // records earlier than the one before
  bool whole = true;                            // no truncated record at the end
  uint64_t first_ns = 0, last_ns = 0;           // the first and last records' timestamps
};
Capture read_capture(const std::string& path, const host::dpdk::DecodeRules& rules);
// The capture of a run over the default plan of 8 ranks in `mode` holds every frame the stats say were
// sent, in time order, each one ours: data frames (first transmissions and retransmissions), ACKs/NACKs;
// its timestamps are wall-clock dates (Unix time), within the two minutes before the call.
void expect_capture_of(const std::string& path, host::dpdk::WireMode mode, const host::dpdk::DpdkStats& s);

// The same times as the software model, every message once, every byte once.
void expect_exact(const emu::RunResult& sw, const DpdkRun& d);

// 600 messages of 1 B to 40 KB between every pair of 8 ranks of a 2D fabric (local ones too), a few hundred
// ns apart, through a DpdkFabric on `ports` (as fast as possible), and then the same 600 again: the second
// wave (the first grew every table, pool and queue to its peak: the model, the senders and receivers,
// framing, the ports, the deliveries at modelled times) must allocate nothing, and deliver each message at
// the first wave's time, shifted. Call only where allocations are counted (tests/support/alloc_counter.h).
// `slack`: allocations allowed in the second wave anyway, for a run whose timing varies (see the callers).
void expect_second_wave_allocates_nothing(host::dpdk::DpdkPorts& ports, const host::dpdk::DpdkFabricOptions& opt,
                                          uint64_t slack = 0);

}  // namespace fabemu::test
